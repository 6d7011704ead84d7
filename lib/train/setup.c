/* SPDX-License-Identifier: MIT */
#include "train/setup.h"

#include "core/ctx.h"
#include "core/names.h"
#include "gpu/gpu.h"
#include "model/families.h"
#include "model/modules.h"
#include "train/precisions.h"
#include "train/train.h"

#include <string.h>

#define FAIL(ctx, key, status, ...) \
    llmem__fail_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_##key, status, __VA_ARGS__)

static int lora_targets_exist(const model_shape *m, unsigned targets)
{
    model_linear lin[MODEL_MAX_LINEARS];
    int n = llmem_model_layer_linears(m, lin);
    for (int i = 0; i < n; i++)
        if (lin[i].lora_target & targets)
            return 1;
    return 0;
}

static int fail_no_target(llmem_ctx *ctx, const model_shape *m)
{
    char modules[LLMEM_ERROR_CAP];
    llmem_lora_modules_list(m, modules, sizeof modules);
    return FAIL(ctx, LORA_TARGETS, LLMEM_EINCONSISTENT,
                "lora-targets: no module of this %s model matches (PEFT would fail: "
                "target modules not found); its modules: %s",
                llmem_family(m->family)->id.name, modules);
}

int llmem_setup_check_point(llmem_ctx *ctx, const model_shape *m, const setup *s)
{
    /* Learned position tables have max-positions rows: transformers cannot
     * run a longer sequence. */
    if (m->positions == LLMEM_POSITIONS_LEARNED && s->seq > m->max_positions)
        return FAIL(ctx, SEQ, LLMEM_EINCONSISTENT,
                    "seq: %llu exceeds the model's %llu learned positions (max-positions)",
                    (unsigned long long)s->seq, (unsigned long long)m->max_positions);
    /* From the window on, SDPA gets a full sliding-window mask (Gemma-2:
     * its even layers). */
    int masked = llmem_model_window_reached(m, s->attention, s->seq);
    /* With a mask SDPA runs the memory-efficient kernel, for head sizes it
     * takes (check_head_dim_size_mem_efficient); its math path is not modelled. */
    if (masked && m->head_dim % (s->compute_dt == 4 ? 4 : 8) != 0)
        return FAIL(ctx, SEQ, LLMEM_ENOTSUP,
                    "seq: %llu reaches the sliding window (%llu): sdpa with a mask and head-dim "
                    "%llu (SDPA's math path) is not modelled; use --attention eager or flash",
                    (unsigned long long)s->seq, (unsigned long long)m->sliding_window,
                    (unsigned long long)m->head_dim);
    return LLMEM_OK;
}

/* What FlashAttention-2 runs (Dao-AILab/flash-attention, README, "FlashAttention-2
 * currently supports"): Ampere, Ada or Hopper GPUs, fp16 and bf16 data, head
 * dimensions up to 256; flash-attn raises on anything else rather than
 * running. Newer NVIDIA GPUs and AMD's CDNA (its ROCm build) are taken as
 * running it. */
#define FLASH_MIN_CAPABILITY 80
#define FLASH_MAX_HEAD_DIM 256

static int check_flash(llmem_ctx *ctx, const llmem_train *t, const model_shape *m,
                       const setup *s, const arch_desc *arch)
{
    if (s->attention != LLMEM_ATTENTION_FLASH)
        return LLMEM_OK;
    /* fp32 weights without autocast: transformers hands flash-attn the
     * linears' dtype, fp32. */
    if (s->compute_dt == 4)
        return FAIL(ctx, ATTENTION, LLMEM_EINCONSISTENT,
                    "attention: flash (FlashAttention-2) takes fp16 or bf16 only, and under "
                    "precision fp32 nothing casts its inputs: use --attention sdpa, or a 16-bit "
                    "or mixed precision");
    if (m->head_dim > FLASH_MAX_HEAD_DIM)
        return FAIL(ctx, ATTENTION, LLMEM_EINCONSISTENT,
                    "attention: flash (FlashAttention-2) takes head dimensions up to %d, not "
                    "head-dim %llu: use --attention sdpa",
                    FLASH_MAX_HEAD_DIM, (unsigned long long)m->head_dim);
    int gpu = (int)t->i[LLMEM_TRAIN_GPU];
    if (gpu > 0 && arch->capability != 0 && arch->capability < FLASH_MIN_CAPABILITY)
        return FAIL(ctx, ATTENTION, LLMEM_EINCONSISTENT,
                    "attention: flash (FlashAttention-2) runs on Ampere or newer GPUs (sm_80 "
                    "and up), not the %s (%s): use --attention sdpa",
                    llmem_gpu_row((size_t)gpu - 1)->id.name, arch->name);
    return LLMEM_OK;
}

/* Under grouped_mm transformers 5.x stores a layer's routed experts as two
 * 3-D parameters: PEFT's target_modules match modules (its target_parameters
 * is not modelled) and bitsandbytes' 4-bit quantization replaces nn.Linear
 * modules, so neither reaches them. */
static int check_experts(llmem_ctx *ctx, const model_shape *m, const setup *s)
{
    if (m->experts == 0 || s->experts != LLMEM_EXPERTS_IMPL_GROUPED_MM)
        return LLMEM_OK;
    if (s->method == LLMEM_METHOD_QLORA)
        return FAIL(ctx, EXPERTS_IMPL, LLMEM_ENOTSUP,
                    "experts-impl: grouped-mm keeps the routed experts as 3-D parameters, which "
                    "QLoRA's 4-bit quantization of nn.Linear does not reach (not modelled); "
                    "use --experts-impl loop");
    unsigned mlp = LLMEM_LORA_GATE | LLMEM_LORA_UP | LLMEM_LORA_DOWN;
    if (s->method == LLMEM_METHOD_LORA && (s->lora_targets & mlp))
        return FAIL(ctx, EXPERTS_IMPL, LLMEM_ENOTSUP,
                    "experts-impl: grouped-mm keeps the routed experts as 3-D parameters, which "
                    "PEFT's target_modules do not adapt (its target_parameters is not "
                    "modelled); leave the MLP projections out of --lora-targets or use "
                    "--experts-impl loop");
    return LLMEM_OK;
}

int llmem_setup_lora_roles(llmem_ctx *ctx, const llmem_train *t, const model_shape *m,
                           unsigned *roles)
{
    /* Bits are roles, in every family. */
    if (t->lora_names == 0) {
        *roles = (unsigned)t->i[LLMEM_TRAIN_LORA_TARGETS];
        return LLMEM_OK;
    }
    /* Names select the modules of this family that bear them. */
    *roles = llmem_lora_modules_roles(m, t->lora_names);
    if (!llmem_lora_modules_all_linear(t->lora_names))
        return LLMEM_OK;
    unsigned all = llmem_lora_all_linear_roles(m, (int)t->i[LLMEM_TRAIN_EXPERTS_IMPL]);
    if (all == 0)
        return FAIL(ctx, LORA_TARGETS, LLMEM_ENOTSUP,
                    "lora-targets: all-linear under grouped-mm adapts the shared expert's and "
                    "the dense layers' MLP but not the routed experts (3-D parameters, not "
                    "nn.Linear), which is not modelled; use --experts-impl loop, or name the "
                    "modules");
    *roles |= all;
    return LLMEM_OK;
}

int llmem_setup_resolve(const llmem_train *t, const model_shape *m, llmem_ctx *ctx, setup *s)
{
    memset(s, 0, sizeof *s);
    s->batch = (uint64_t)t->i[LLMEM_TRAIN_BATCH];
    s->seq = (uint64_t)t->i[LLMEM_TRAIN_SEQ];
    s->precision = (int)t->i[LLMEM_TRAIN_PRECISION];
    s->optimizer = (int)t->i[LLMEM_TRAIN_OPTIMIZER];
    s->method = (int)t->i[LLMEM_TRAIN_METHOD];
    s->grad_ckpt = (int)t->i[LLMEM_TRAIN_GRAD_CKPT];
    /* transformers' gradient_checkpointing_enable() passes use_reentrant=False
     * unless told otherwise (huggingface/transformers PR #43203, transformers 5.x). */
    if (s->grad_ckpt == LLMEM_GRAD_CKPT_FULL)
        s->grad_ckpt = LLMEM_GRAD_CKPT_NON_REENTRANT;
    s->optimizer_impl = (int)t->i[LLMEM_TRAIN_OPTIMIZER_IMPL];
    s->experts = (int)t->i[LLMEM_TRAIN_EXPERTS_IMPL];
    s->lora_dropout = t->d[LLMEM_TRAIN_LORA_DROPOUT];
    s->attention = (int)t->i[LLMEM_TRAIN_ATTENTION];
    /* transformers runs eager attention by default where a model has no SDPA
     * (BLOOM: no _supports_sdpa). */
    if (s->attention == LLMEM_ATTENTION_SDPA && (m->traits & TRAIT_NO_SDPA))
        s->attention = LLMEM_ATTENTION_EAGER;
    s->loss = (int)t->i[LLMEM_TRAIN_LOSS];
    s->formula = (int)t->i[LLMEM_TRAIN_FORMULA];
    /* Unset, each site runs at the model's probability, as the Trainer's
     * train mode does; set, the one value replaces them all. */
    for (int site = 0; site < DROPOUT_SITES; site++)
        s->dropout[site] = t->d[LLMEM_TRAIN_DROPOUT] == TRAIN_DROPOUT_MODEL
                               ? m->dropout[site]
                               : t->d[LLMEM_TRAIN_DROPOUT];
    s->lora_rank = (uint64_t)t->i[LLMEM_TRAIN_LORA_RANK];
    s->frozen_layers = (uint64_t)t->i[LLMEM_TRAIN_FROZEN_LAYERS];
    s->grad_accum = (uint64_t)t->i[LLMEM_TRAIN_GRAD_ACCUM];
    int rc = llmem_train_check_unread(ctx, t);
    if (rc != LLMEM_OK)
        return rc;
    /* After the check: targets set by name are read (method lora or qlora). */
    rc = llmem_setup_lora_roles(ctx, t, m, &s->lora_targets);
    if (rc != LLMEM_OK)
        return rc;
    const precision_desc *p = llmem_precision(s->precision);
    s->param_dt = p->param_dt;
    s->compute_dt = p->compute_dt;
    s->autocast = p->autocast;
    const arch_desc *arch = llmem_gpu_id_arch((int)t->i[LLMEM_TRAIN_GPU]);
    s->cublas_workspace = arch->workspace;
    s->cuda_context = arch->context;
    if (s->method == LLMEM_METHOD_FREEZE && s->frozen_layers > m->layers)
        return FAIL(ctx, FROZEN_LAYERS, LLMEM_EINCONSISTENT, "freeze-layers: %llu exceeds layers %llu",
                    (unsigned long long)s->frozen_layers, (unsigned long long)m->layers);
    /* bitsandbytes' Linear4bit weights are frozen (no gradient flows into
     * them) and PEFT's LoRA over them is QLoRA. */
    if (m->bnb_4bit && s->method != LLMEM_METHOD_QLORA)
        return FAIL(ctx, METHOD, LLMEM_ENOTSUP,
                    "method: %s on linears stored in bitsandbytes 4-bit (bnb-4bit: a "
                    "pre-quantized checkpoint's quantization_config): %s; use --method qlora",
                    llmem_names_name(&llmem_names_method, s->method),
                    s->method == LLMEM_METHOD_LORA ? "LoRA over 4-bit linears is QLoRA"
                                                   : "4-bit linears do not train");
    if (s->method == LLMEM_METHOD_QLORA && s->precision == LLMEM_PRECISION_FP32)
        return FAIL(ctx, PRECISION, LLMEM_EINCONSISTENT,
                    "precision: qlora needs a 16-bit compute dtype (bf16-mixed, "
                    "fp16-mixed or bf16), not fp32");
    if ((s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA) &&
        !lora_targets_exist(m, s->lora_targets))
        return fail_no_target(ctx, m);
    rc = check_experts(ctx, m, s);
    if (rc != LLMEM_OK)
        return rc;
    rc = check_flash(ctx, t, m, s, arch);
    if (rc != LLMEM_OK)
        return rc;
    rc = llmem_setup_check_point(ctx, m, s);
    if (rc != LLMEM_OK)
        return rc;
    /* Falcon-RW hands SDPA its ALiBi as a float mask: the memory-efficient
     * kernel runs for head sizes it takes, the math path otherwise (not
     * modelled). */
    if (s->attention == LLMEM_ATTENTION_SDPA && m->positions == LLMEM_POSITIONS_ALIBI &&
        (m->traits & TRAIT_ALIBI_MASK) && m->head_dim % (s->compute_dt == 4 ? 4 : 8) != 0)
        return FAIL(ctx, ATTENTION, LLMEM_ENOTSUP,
                    "attention: sdpa with Falcon's ALiBi and head-dim %llu (SDPA's math path "
                    "with a mask) is not modelled; use --attention eager or flash",
                    (unsigned long long)m->head_dim);
    if (s->loss == LLMEM_LOSS_CHUNKED && m->head_bias)
        return FAIL(ctx, LOSS, LLMEM_EINCONSISTENT,
                    "loss: the chunked cross-entropy with an output-head bias (head-bias) is not "
                    "modelled; use --loss upcast");
    return LLMEM_OK;
}

/* The longest list of one family's module names, with margin (DeepSeek's
 * nine: about 90 bytes). */
#define LORA_NAMES_CAP 256

int llmem_train_lora_modules(const llmem_train *train, llmem_model *model, char *buf,
                             size_t cap, size_t *len_out)
{
    if (train == NULL)
        return LLMEM_EINVAL;
    llmem_ctx *ctx = train->ctx;
    if (model == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "llmem_train_lora_modules: model is NULL");
    model_shape m;
    model_params params;
    int rc = llmem_model_resolve(model, &m, &params);
    if (rc != LLMEM_OK)
        return llmem__fail_from(ctx, model->ctx, rc); /* the model's message and field */
    unsigned roles;
    if ((rc = llmem_setup_lora_roles(ctx, train, &m, &roles)) != LLMEM_OK)
        return rc;
    if (!lora_targets_exist(&m, roles))
        return fail_no_target(ctx, &m);
    char names[LORA_NAMES_CAP];
    int n = llmem_lora_modules_names(&m, roles, names, sizeof names);
    if (n < 0)
        return FAIL(ctx, LORA_TARGETS, LLMEM_ENOTSUP,
                    "lora-targets: no module names of this %s model select exactly the linears "
                    "of roles 0x%x (a module that bears several of them, as GPT-2's c_proj, "
                    "is named for them all)",
                    llmem_family(m.family)->id.name, roles);
    if (len_out != NULL)
        *len_out = (size_t)n;
    if (buf != NULL && cap <= (size_t)n)
        return llmem__fail(ctx, LLMEM_EBUFFER,
                           "llmem_train_lora_modules: %d bytes and a NUL do not fit in %zu", n,
                           cap);
    if (buf != NULL)
        memcpy(buf, names, (size_t)n + 1);
    llmem__ok(ctx);
    return LLMEM_OK;
}
