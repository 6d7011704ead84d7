/* SPDX-License-Identifier: MIT */
#include "args.h"

#include "cli.h"
#include "opts.h"

#include <llmem.h>
#include <stdio.h>
#include <string.h>

/* Enumerated and bitmask fields list their names from the library
 * (llmem_model_choice, llmem_train_choice): nothing here to keep in step. */

#define MODEL_INT(name, json, key, metavar, help) \
    { name, json, CLI_TARGET_MODEL, key, CLI_KIND_INT, metavar, help }
#define MODEL_NAME(name, json, key, help) \
    { name, json, CLI_TARGET_MODEL, key, CLI_KIND_NAME, NULL, help }
#define MODEL_REAL(name, json, key, metavar, help) \
    { name, json, CLI_TARGET_MODEL, key, CLI_KIND_REAL, metavar, help }
#define TRAIN(name, json, key, kind, metavar, help) \
    { name, json, CLI_TARGET_TRAIN, key, kind, metavar, help }
#define LAYOUT(name, json, key, kind, metavar, help) \
    { name, json, CLI_TARGET_PARALLEL, LLMEM_PARALLEL_##key, kind, metavar, help }

static const cli_flag flags[] = {
    { "model", NULL, CLI_TARGET_PRESET, 0, CLI_KIND_TEXT, "PRESET",
      "built-in preset: full id or the part after the slash (see `llmem models`)" },
    { "config", NULL, CLI_TARGET_CONFIG, 0, CLI_KIND_TEXT, "PATH",
      "a Hugging Face config.json (or its directory) instead of --model" },
    { "weights", NULL, CLI_TARGET_WEIGHTS, 0, CLI_KIND_TEXT, "PATH",
      "safetensors file, index or directory to check the model against" },
    MODEL_NAME("family", "family", LLMEM_MODEL_FAMILY,
               "code-path family; without --model or --config, a custom model of this family"),
    MODEL_INT("hidden", "hidden", LLMEM_MODEL_HIDDEN, "N", "hidden size"),
    MODEL_INT("layers", "layers", LLMEM_MODEL_LAYERS, "N", "decoder layers"),
    MODEL_INT("heads", "heads", LLMEM_MODEL_HEADS, "N", "attention (query) heads"),
    MODEL_INT("kv-heads", "kv_heads", LLMEM_MODEL_KV_HEADS, "N",
              "key/value heads (grouped-query); 0 = heads"),
    MODEL_INT("head-dim", "head_dim", LLMEM_MODEL_HEAD_DIM, "N", "per-head size; 0 = hidden / heads"),
    MODEL_INT("intermediate", "intermediate", LLMEM_MODEL_INTERMEDIATE, "N", "MLP inner size"),
    MODEL_INT("vocab", "vocab", LLMEM_MODEL_VOCAB, "N", "vocabulary size"),
    MODEL_INT("max-positions", "max_positions", LLMEM_MODEL_MAX_POSITIONS, "N",
              "context length of the position table"),
    MODEL_INT("tie-embeddings", "tie_embeddings", LLMEM_MODEL_TIE_EMBEDDINGS, "0|1",
              "output head shares the input embedding"),
    MODEL_INT("attn-bias", "attn_bias", LLMEM_MODEL_QKV_BIAS, "0|1",
              "biases on the q, k, v projections"),
    MODEL_INT("out-bias", "out_bias", LLMEM_MODEL_OUT_BIAS, "0|1",
              "bias on the attention output projection"),
    MODEL_INT("mlp-bias", "mlp_bias", LLMEM_MODEL_MLP_BIAS, "0|1", "biases on the MLP projections"),
    MODEL_NAME("norm", "norm", LLMEM_MODEL_NORM, "norm kind"),
    MODEL_NAME("mlp", "mlp", LLMEM_MODEL_MLP, "MLP kind"),
    MODEL_NAME("positions", "positions", LLMEM_MODEL_POSITIONS, "position encoding"),
    MODEL_INT("experts", "experts", LLMEM_MODEL_EXPERTS, "N",
              "routed experts per layer (mixture of experts); 0 = dense"),
    MODEL_INT("experts-per-token", "experts_per_token", LLMEM_MODEL_EXPERTS_PER_TOKEN, "K",
              "experts a token is routed to (top-k)"),
    MODEL_INT("expert-intermediate", "expert_intermediate", LLMEM_MODEL_EXPERT_INTERMEDIATE, "N",
              "inner size of one routed expert"),
    MODEL_INT("shared-expert-intermediate", "shared_expert_intermediate",
              LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, "N",
              "inner size of the shared expert(s); 0 = none"),
    MODEL_INT("shared-expert-gate", "shared_expert_gate", LLMEM_MODEL_SHARED_EXPERT_GATE, "0|1",
              "sigmoid gate Linear(hidden, 1) on the shared expert (Qwen2-MoE)"),
    MODEL_INT("dense-layers", "dense_layers", LLMEM_MODEL_DENSE_LAYERS, "N",
              "MoE model: layers with a dense MLP instead of experts"),
    MODEL_INT("router-bias", "router_bias", LLMEM_MODEL_ROUTER_BIAS, "0|1",
              "one router bias per expert (DeepSeek-V3)"),
    MODEL_INT("qk-norm", "qk_norm", LLMEM_MODEL_QK_NORM, "0|1",
              "a norm over head-dim on queries and keys (Qwen3)"),
    MODEL_INT("rotary-dim", "rotary_dim", LLMEM_MODEL_ROTARY_DIM, "N",
              "dimensions of a head with rotary positions; 0 = head-dim"),
    MODEL_INT("v-head-dim", "v_head_dim", LLMEM_MODEL_V_HEAD_DIM, "N",
              "per-head size of the values; 0 = head-dim"),
    MODEL_INT("q-lora-rank", "q_lora_rank", LLMEM_MODEL_Q_LORA_RANK, "N",
              "latent attention: query compression rank; 0 = full q projection"),
    MODEL_INT("kv-lora-rank", "kv_lora_rank", LLMEM_MODEL_KV_LORA_RANK, "N",
              "latent attention (DeepSeek): key/value compression rank; 0 = none"),
    MODEL_INT("parallel-block", "parallel_block", LLMEM_MODEL_PARALLEL_BLOCK, "0|1",
              "attention and MLP read the same input (GPT-NeoX, Falcon, Phi)"),
    MODEL_INT("head-bias", "head_bias", LLMEM_MODEL_HEAD_BIAS, "0|1", "bias on the output head"),
    MODEL_INT("norms-per-layer", "norms_per_layer", LLMEM_MODEL_NORMS_PER_LAYER, "N",
              "norms in each decoder layer"),
    MODEL_INT("final-norm", "final_norm", LLMEM_MODEL_FINAL_NORM, "0|1",
              "a norm after the last layer"),
    MODEL_INT("embed-dim", "embed_dim", LLMEM_MODEL_EMBED_DIM, "N",
              "embedding width projected to hidden (OPT-350m); 0 = hidden"),
    MODEL_INT("position-offset", "position_offset", LLMEM_MODEL_POSITION_OFFSET, "N",
              "extra learned position rows (OPT: 2)"),
    MODEL_NAME("activation", "activation", LLMEM_MODEL_ACTIVATION, "MLP activation"),
    MODEL_INT("post-norm", "post_norm", LLMEM_MODEL_POST_NORM, "0|1",
              "norms after the residual additions (OPT-350m)"),
    MODEL_INT("sliding-window", "sliding_window", LLMEM_MODEL_SLIDING_WINDOW, "N",
              "sliding-window attention span (sliding_window); 0 = none; under sdpa a "
              "[batch, 1, seq, seq] mask from seq >= N on"),
    MODEL_INT("bnb-4bit", "bnb_4bit", LLMEM_MODEL_BNB_4BIT, "0|1",
              "linears stored in bitsandbytes 4-bit (a pre-quantized checkpoint's "
              "quantization_config): only --method qlora trains on it"),
    MODEL_REAL("attention-dropout", "attention_dropout", LLMEM_MODEL_ATTENTION_DROPOUT, "P",
               "the model's dropout on the attention probabilities (attn_pdrop, "
               "attention_dropout); default: the config's (a family's: its config class's)"),
    MODEL_REAL("hidden-dropout", "hidden_dropout", LLMEM_MODEL_HIDDEN_DROPOUT, "P",
               "the model's dropout on the attention and MLP outputs (resid_pdrop, "
               "hidden_dropout, OPT's dropout, residual_dropout); default: the config's"),
    MODEL_REAL("embedding-dropout", "embedding_dropout", LLMEM_MODEL_EMBEDDING_DROPOUT, "P",
               "the model's dropout on the embedding output (embd_pdrop, embedding_dropout); "
               "default: the config's"),

    TRAIN("batch", "batch", LLMEM_TRAIN_BATCH, CLI_KIND_INT, "N",
          "micro-batch size; a list of distinct values (1,2,4) makes a grid of peaks "
          "with --seq's"),
    TRAIN("seq", "seq", LLMEM_TRAIN_SEQ, CLI_KIND_INT, "N",
          "sequence length in tokens; a list of distinct values (1024,4096) makes a grid"),
    TRAIN("precision", "precision", LLMEM_TRAIN_PRECISION, CLI_KIND_NAME, NULL,
          "precision recipe"),
    TRAIN("optimizer", "optimizer", LLMEM_TRAIN_OPTIMIZER, CLI_KIND_NAME, NULL,
          "optimizer, ours or the Trainer's optim name (adamw_torch sets --optimizer-impl "
          "foreach, adamw_torch_fused fused)"),
    TRAIN("optimizer-impl", "optimizer_impl", LLMEM_TRAIN_OPTIMIZER_IMPL, CLI_KIND_NAME, NULL,
          "how a torch optimizer steps: one fused kernel, foreach, or a loop over tensors"),
    TRAIN("grad-ckpt", "grad_ckpt", LLMEM_TRAIN_GRAD_CKPT, CLI_KIND_NAME, NULL,
          "gradient checkpointing"),
    TRAIN("attention", "attention", LLMEM_TRAIN_ATTENTION, CLI_KIND_NAME, NULL,
          "attention kernel"),
    TRAIN("experts-impl", "experts_impl", LLMEM_TRAIN_EXPERTS_IMPL, CLI_KIND_NAME, NULL,
          "how a mixture-of-experts layer runs its routed experts: transformers 5.x's "
          "grouped_mm on 3-D expert weights, or a loop over one module per expert (4.x); a "
          "model without routed experts refuses it"),
    TRAIN("dropout", "dropout", LLMEM_TRAIN_DROPOUT, CLI_KIND_REAL, "P|model",
          "dropout probability in [0, 1) at every dropout site, or model: each site at the "
          "model's own (its config's, or --attention-dropout, --hidden-dropout, "
          "--embedding-dropout), as the Trainer's train mode runs it"),
    TRAIN("method", "method", LLMEM_TRAIN_METHOD, CLI_KIND_NAME, NULL,
          "fine-tuning method"),
    TRAIN("lora-rank", "lora_rank", LLMEM_TRAIN_LORA_RANK, CLI_KIND_INT, "R",
          "LoRA rank, for --method lora or qlora"),
    TRAIN("lora-targets", "lora_targets", LLMEM_TRAIN_LORA_TARGETS, CLI_KIND_NAMES,
          "M[,M...]", "LoRA target modules by name, as PEFT's target_modules: resolved in the "
          "model's family (all-linear: every linear but the output head), for --method lora "
          "or qlora"),
    TRAIN("lora-dropout", "lora_dropout", LLMEM_TRAIN_LORA_DROPOUT, CLI_KIND_REAL, "P",
          "PEFT's lora_dropout in [0, 1): each adapter's own dropout on its input, for "
          "--method lora or qlora"),
    TRAIN("freeze-layers", "freeze_layers", LLMEM_TRAIN_FROZEN_LAYERS, CLI_KIND_INT, "N",
          "first N decoder layers frozen, for --method freeze (the embedding is frozen "
          "with them, a tied output head too)"),
    TRAIN("loss", "loss", LLMEM_TRAIN_LOSS, CLI_KIND_NAME, NULL,
          "loss: fp32-upcast logits or chunked cross-entropy"),
    TRAIN("grad-accum", "grad_accum", LLMEM_TRAIN_GRAD_ACCUM, CLI_KIND_INT, "N",
          "gradient accumulation steps"),
    TRAIN("formula", "formula", LLMEM_TRAIN_FORMULA, CLI_KIND_NAME, NULL,
          "peak over a step's phases, or the article's sum of terms (which reads only the "
          "model's parameter count, --batch, --seq, --optimizer, --gpu and --article-*)"),
    TRAIN("article-tmp-factor", "article_tmp_factor", LLMEM_TRAIN_ARTICLE_TMP_FACTOR,
          CLI_KIND_REAL, "F", "for --formula article: m_tmp = F x m_p"),
    TRAIN("article-param-bytes", "article_param_bytes", LLMEM_TRAIN_ARTICLE_PARAM_BYTES,
          CLI_KIND_INT, "N", "for --formula article: bytes per parameter"),
    /* Written as the "gpu" object of the JSON (report_json.c), not echoed as a string. */
    TRAIN("gpu", NULL, LLMEM_TRAIN_GPU, CLI_KIND_TEXT, "NAME",
          "the GPU (see `llmem gpus`): its CUDA context, workspace and usable memory"),

    LAYOUT("dp", "dp", DP, CLI_KIND_INT, "N", "data-parallel degree (replicas or shards)"),
    LAYOUT("tp", "tp", TP, CLI_KIND_INT, "N", "tensor-parallel degree (Megatron column/row split)"),
    LAYOUT("pp", "pp", PP, CLI_KIND_INT, "N", "pipeline stages"),
    LAYOUT("ep", "ep", EP, CLI_KIND_INT, "N", "expert-parallel degree (divides dp)"),
    LAYOUT("cp", "cp", CP, CLI_KIND_INT, "N", "context-parallel degree (sequence split)"),
    LAYOUT("sp", "sp", SP, CLI_KIND_INT, "0|1", "sequence parallelism over the tp ranks"),
    LAYOUT("sharding", "sharding", SHARDING, CLI_KIND_NAME, NULL,
           "data-parallel sharding engine"),
    { "zero", NULL, CLI_TARGET_ZERO, LLMEM_PARALLEL_SHARDING, CLI_KIND_TEXT, "1|2|3",
      "DeepSpeed ZeRO stage (the same as --sharding zeroN)" },
    { "fsdp", NULL, CLI_TARGET_FSDP, LLMEM_PARALLEL_SHARDING, CLI_KIND_TEXT,
      "full|grad-op|hybrid", "PyTorch FSDP (the same as --sharding fsdp-MODE)" },
    LAYOUT("shard-group", "shard_group", SHARD_GROUP, CLI_KIND_INT, "N",
           "fsdp-hybrid: ranks a shard spans; 0 = dp"),
    LAYOUT("offload", "offload", OFFLOAD, CLI_KIND_NAME, NULL, "what lives in host memory"),
    LAYOUT("micro-batches", "micro_batches", MICRO_BATCHES, CLI_KIND_INT, "N",
           "micro-batches per step and pipeline"),
    LAYOUT("schedule", "schedule", SCHEDULE, CLI_KIND_NAME, NULL, "pipeline schedule"),
    LAYOUT("virtual-stages", "virtual_stages", VIRTUAL_STAGES, CLI_KIND_INT, "N",
           "interleaved schedule: model chunks per stage"),
    LAYOUT("bucket-elements", "bucket_elements", BUCKET_ELEMENTS, CLI_KIND_INT, "N",
           "with --zero: ZeRO's gradient bucket (reduce_bucket_size); 0 = the engine's default"),

    { "gpus", "gpus", CLI_TARGET_PLAN, LLMEM_PLAN_GPUS, CLI_KIND_INT, "N",
      "plan: GPUs to lay the job on" },
    { "gpus-per-node", "gpus_per_node", CLI_TARGET_PLAN, LLMEM_PLAN_GPUS_PER_NODE, CLI_KIND_INT,
      "N", "plan: GPUs a node holds (tensor parallelism stays within one), 0 to 1024; "
      "divides --gpus unless at least --gpus; 0 = no node boundary, as pack's" },
    { "max-micro-batch", "max_micro_batch", CLI_TARGET_PLAN, LLMEM_PLAN_MAX_MICRO_BATCH,
      CLI_KIND_INT, "N", "plan: the largest micro-batch tried" },
    { "global-batch", "global_batch", CLI_TARGET_PLAN, LLMEM_PLAN_GLOBAL_BATCH, CLI_KIND_INT, "N",
      "plan: sequences per optimizer step; 0 = 2 x pp micro-batches" },
    { "allow-offload", "allow_offload", CLI_TARGET_PLAN, LLMEM_PLAN_OFFLOAD, CLI_KIND_INT, "0|1",
      "plan: also try offloading to host memory" },
    { "top", NULL, CLI_TARGET_TOP, 0, CLI_KIND_INT, "K",
      "plan: layouts to print, at least 1 (default 10)" },
    { "capacity", NULL, CLI_TARGET_CAPACITY, 0, CLI_KIND_TEXT, "SIZE",
      "usable memory of one GPU (bytes, or 80GiB or 80Gi binary, 79.6GB or 80G decimal, "
      "units in any case), wins over --gpu's: the fit "
      "(exit 3 if not), --max, a grid, plan, --svg's line" },
    { "margin", NULL, CLI_TARGET_MARGIN, 0, CLI_KIND_REAL, "P",
      "percent of the capacity to keep free, for the fit, --max, a grid and plan "
      "(default 5)" },
    { "max", NULL, CLI_TARGET_MAX, 0, CLI_KIND_TEXT, "batch|seq",
      "the largest batch (or seq) whose device peak fits --capacity (or --gpu)" },

    { "svg", NULL, CLI_TARGET_SVG, 0, CLI_KIND_TEXT, "FILE",
      "write the step's timeline (the four terms through the phases) as an SVG picture" },
    { "timeline", NULL, CLI_TARGET_TIMELINE, 0, CLI_KIND_SWITCH, NULL,
      "with --json: the timeline's points (the table has it as a sparkline)" },

    { "json", NULL, CLI_TARGET_JSON, 0, CLI_KIND_SWITCH, NULL,
      "print one JSON object instead of the table" },
    { "help", NULL, CLI_TARGET_HELP, 0, CLI_KIND_SWITCH, NULL, "print this help" },
};

#define FLAG_COUNT (sizeof flags / sizeof flags[0])

size_t cli_flag_count(void)
{
    return FLAG_COUNT;
}

const cli_flag *cli_flag_at(size_t index)
{
    return index < FLAG_COUNT ? &flags[index] : NULL;
}

const cli_flag *cli_flag_find(const char *name, size_t len)
{
    for (size_t i = 0; i < FLAG_COUNT; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

const char *cli_message_body(const cli_flag *flag, const char *message)
{
    const char *name = NULL;
    if (flag->target == CLI_TARGET_MODEL)
        llmem_model_field_info(flag->key, &name, NULL, NULL);
    else if (flag->target == CLI_TARGET_TRAIN)
        llmem_train_field_info(flag->key, &name, NULL, NULL, NULL);
    else if (flag->target == CLI_TARGET_PARALLEL)
        llmem_parallel_field_info(flag->key, &name, NULL, NULL);
    else if (flag->target == CLI_TARGET_PLAN)
        llmem_plan_field_info(flag->key, &name, NULL, NULL);
    return cli_message_after_field(message, name);
}

const cli_flag *cli_flag_for_field(int object, int key)
{
    static const cli_target targets[] = { [LLMEM_OBJECT_MODEL] = CLI_TARGET_MODEL,
                                          [LLMEM_OBJECT_TRAIN] = CLI_TARGET_TRAIN,
                                          [LLMEM_OBJECT_PARALLEL] = CLI_TARGET_PARALLEL,
                                          [LLMEM_OBJECT_PLAN] = CLI_TARGET_PLAN };
    if (object < LLMEM_OBJECT_MODEL || object > LLMEM_OBJECT_PLAN)
        return NULL;
    cli_target target = targets[object];
    for (size_t i = 0; i < FLAG_COUNT; i++)
        if (flags[i].target == target && flags[i].key == key)
            return &flags[i];
    return NULL;
}

const char *cli_value_name(const cli_flag *flag, int64_t value)
{
    if (flag->target == CLI_TARGET_MODEL)
        return llmem_model_value_name(flag->key, value);
    if (flag->target == CLI_TARGET_TRAIN)
        return llmem_train_value_name(flag->key, value);
    if (flag->target == CLI_TARGET_PARALLEL)
        return llmem_parallel_value_name(flag->key, value);
    return NULL;
}

static void append(char *buf, size_t cap, size_t *used, const char *sep, const char *name)
{
    int n;
    if (*used >= cap)
        return;
    n = snprintf(buf + *used, cap - *used, "%s%s", *used ? sep : "", name);
    if (n > 0)
        *used += (size_t)n;
}

const char *cli_flag_choice(const cli_flag *flag, size_t index, int64_t *value)
{
    if (flag->target == CLI_TARGET_MODEL)
        return llmem_model_choice(flag->key, index, value);
    if (flag->target == CLI_TARGET_TRAIN)
        return llmem_train_choice(flag->key, index, value);
    if (flag->target == CLI_TARGET_PARALLEL)
        return llmem_parallel_choice(flag->key, index, value);
    return NULL;
}

void cli_flag_choices(const cli_flag *flag, char *buf, size_t cap)
{
    size_t used = 0;
    const char *name;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; (name = cli_flag_choice(flag, i, NULL)) != NULL; i++)
        append(buf, cap, &used, "|", name);
}

void cli_flag_values(const cli_flag *flag, char *buf, size_t cap)
{
    char choices[CLI_CHOICES_CAP];
    cli_flag_choices(flag, choices, sizeof choices);
    if (flag->kind == CLI_KIND_NAMES)
        snprintf(buf, cap, "%s with M in %s", flag->metavar, choices);
    else if (flag->kind == CLI_KIND_NAME)
        snprintf(buf, cap, "%s", choices);
    else
        snprintf(buf, cap, "%s", flag->metavar ? flag->metavar : "");
}

void cli_args_begin(cli_arg_iter *it, int argc, char **argv, int operands)
{
    it->argc = argc;
    it->argv = argv;
    it->next = 0;
    it->operands = operands;
}

static int looks_like_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-';
}

int cli_args_next(cli_arg_iter *it, const cli_flag **flag, const char **value)
{
    if (it->next >= it->argc)
        return 0;
    const char *arg = it->argv[it->next++];
    *value = NULL;
    if (strcmp(arg, "-h") == 0) {
        *flag = cli_flag_find("help", 4);
        return 1;
    }
    if (it->operands && !looks_like_flag(arg)) {
        *flag = NULL;
        *value = arg;
        return 1;
    }
    if (!looks_like_flag(arg) || arg[2] == '\0') {
        cli_error("unexpected argument '%s' (flags start with --; see `llmem help`)", arg);
        return -1;
    }
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const cli_flag *f = cli_flag_find(name, len);
    if (f == NULL) {
        cli_error("unknown flag '--%.*s' (see `llmem help`)", (int)len, name);
        return -1;
    }
    if (f->kind == CLI_KIND_SWITCH) {
        if (eq != NULL) {
            cli_error("--%s takes no value (got '%s')", f->name, eq + 1);
            return -1;
        }
    } else if (eq != NULL) {
        *value = eq + 1;
    } else if (it->next < it->argc && !looks_like_flag(it->argv[it->next])) {
        *value = it->argv[it->next++];
    } else {
        char values[CLI_CHOICES_CAP + 40];
        cli_flag_values(f, values, sizeof values);
        cli_error("--%s: missing value (expected %s)", f->name, values);
        return -1;
    }
    *flag = f;
    return 1;
}
