/* SPDX-License-Identifier: MIT */
/* Settings as the library holds them, with their names: an enumerated value's
 * name comes from the library (llmem_*_value_name); a LoRA module mask is
 * spelled with the names of the command's list, each asked of the library on
 * a scratch object. */
#include "settings.h"

#include <stdio.h>
#include <string.h>

/* The value the library gives the name `name` of flag's field; 0 when it
 * rejects it (no enumeration uses 0). */
static int64_t value_of(llmem_ctx *ctx, const cli_flag *flag, const char *name)
{
    int64_t v = 0;
    if (flag->target == CLI_TARGET_MODEL) {
        llmem_model *m = NULL;
        if (llmem_model_new(ctx, LLMEM_FAMILY_LLAMA, &m) == LLMEM_OK &&
            llmem_model_set_str(m, flag->key, name) == LLMEM_OK)
            llmem_model_get_int(m, flag->key, &v);
        llmem_model_free(m);
    } else {
        llmem_train *t = NULL;
        if (llmem_train_new(ctx, &t) == LLMEM_OK &&
            llmem_train_set_str(t, flag->key, name) == LLMEM_OK)
            llmem_train_get_int(t, flag->key, &v);
        llmem_train_free(t);
    }
    return v;
}

/* "q_proj,v_proj" for a bitmask of choices: each name that adds bits not yet
 * named, so q|k|v reads "q_proj,k_proj,v_proj" rather than also "c_attn".
 * Bits no listed name covers are shown as a number rather than dropped. */
static void names_of(llmem_ctx *ctx, const cli_flag *flag, int64_t mask, char *buf, size_t cap)
{
    size_t used = 0;
    int64_t named = 0;
    int n;
    buf[0] = '\0';
    for (size_t i = 0; flag->choices[i] != NULL && used < cap; i++) {
        int64_t bits = value_of(ctx, flag, flag->choices[i]);
        if (bits == 0 || (mask & bits) != bits || (named & bits) == bits)
            continue;
        named |= bits;
        n = snprintf(buf + used, cap - used, "%s%s", used ? "," : "", flag->choices[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if ((mask & ~named) != 0 && used < cap)
        snprintf(buf + used, cap - used, "%s0x%llx", used ? "," : "",
                 (unsigned long long)(mask & ~named));
}

int cli_setting_read(llmem_ctx *ctx, const cli_request *req, const cli_flag *flag,
                     cli_setting *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (flag->target == CLI_TARGET_MODEL)
        rc = llmem_model_get_int(req->model, flag->key, &out->i);
    else if (flag->target != CLI_TARGET_TRAIN)
        rc = LLMEM_EINVAL;
    else if (flag->kind == CLI_KIND_REAL)
        rc = llmem_train_get_double(req->train, flag->key, &out->d);
    else
        rc = llmem_train_get_int(req->train, flag->key, &out->i);
    if (rc != LLMEM_OK)
        return rc;
    if (flag->kind == CLI_KIND_NAME) {
        /* A value newer than this command's list shows as its number. */
        const char *name = cli_value_name(flag, out->i);
        if (name != NULL)
            snprintf(out->text, sizeof out->text, "%s", name);
        else
            snprintf(out->text, sizeof out->text, "%lld", (long long)out->i);
    } else if (flag->kind == CLI_KIND_NAMES) {
        names_of(ctx, flag, out->i, out->text, sizeof out->text);
    }
    return LLMEM_OK;
}
