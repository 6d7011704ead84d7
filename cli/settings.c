/* SPDX-License-Identifier: MIT */
/* Settings as the library holds them, with their names: an enumerated value's
 * name comes from the library (llmem_*_value_name), a LoRA module mask is
 * spelled with the module names of the model's family
 * (llmem_train_lora_modules), else with the names the library lists
 * (llmem_train_choice). */
#include "settings.h"

#include <stdio.h>
#include <string.h>

/* "q_proj,v_proj" for a bitmask of choices: each name that adds bits not yet
 * named, so q|k|v reads "q_proj,k_proj,v_proj" rather than also "c_attn".
 * Bits no listed name covers are shown as a number rather than dropped. */
static void names_of(const cli_flag *flag, int64_t mask, char *buf, size_t cap)
{
    size_t used = 0;
    int64_t named = 0;
    int n;
    buf[0] = '\0';
    const char *name;
    int64_t bits = 0;
    for (size_t i = 0; (name = cli_flag_choice(flag, i, &bits)) != NULL && used < cap; i++) {
        if (bits == 0 || (mask & bits) != bits || (named & bits) == bits)
            continue;
        named |= bits;
        n = snprintf(buf + used, cap - used, "%s%s", used ? "," : "", name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if ((mask & ~named) != 0 && used < cap)
        snprintf(buf + used, cap - used, "%s0x%llx", used ? "," : "",
                 (unsigned long long)(mask & ~named));
}

int cli_setting_read(const cli_request *req, const cli_flag *flag,
                     cli_setting *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (flag->target == CLI_TARGET_MODEL && flag->kind == CLI_KIND_REAL)
        rc = llmem_model_get_double(req->model, flag->key, &out->d);
    else if (flag->target == CLI_TARGET_MODEL)
        rc = llmem_model_get_int(req->model, flag->key, &out->i);
    else if (flag->target == CLI_TARGET_PARALLEL)
        rc = llmem_parallel_get_int(req->parallel, flag->key, &out->i);
    else if (flag->target != CLI_TARGET_TRAIN)
        rc = LLMEM_EINVAL;
    else if (flag->kind == CLI_KIND_REAL)
        rc = llmem_train_get_double(req->train, flag->key, &out->d);
    else
        rc = llmem_train_get_int(req->train, flag->key, &out->i);
    if (rc != LLMEM_OK)
        return rc;
    if (flag->kind == CLI_KIND_NAME || flag->kind == CLI_KIND_TEXT) {
        /* A value newer than this command's list shows as its number; a
         * named field's 0 is no value chosen (--gpu). */
        const char *name = cli_value_name(flag, out->i);
        if (name != NULL)
            snprintf(out->text, sizeof out->text, "%s", name);
        else if (flag->kind == CLI_KIND_TEXT && out->i == 0)
            snprintf(out->text, sizeof out->text, "none");
        else
            snprintf(out->text, sizeof out->text, "%lld", (long long)out->i);
    } else if (flag->kind == CLI_KIND_NAMES) {
        /* The LoRA targets as the model's family names its modules, which
         * read back give the same estimate ("c_attn" on GPT-2, not the
         * roles' "q_proj,v_proj"); role bits no names select exactly, or no
         * model, spelled by roles. */
        if (flag->target != CLI_TARGET_TRAIN || flag->key != LLMEM_TRAIN_LORA_TARGETS ||
            req->model == NULL ||
            llmem_train_lora_modules(req->train, req->model, out->text, sizeof out->text,
                                     NULL) != LLMEM_OK)
            names_of(flag, out->i, out->text, sizeof out->text);
    }
    return LLMEM_OK;
}
