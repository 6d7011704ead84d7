/* SPDX-License-Identifier: MIT */
/* The readable table of `llmem estimate`. */
#include "report.h"

#include "args.h"
#include "cli.h"
#include "format.h"
#include "gpu_fit.h"
#include "settings.h"
#include "weights.h"

#include <stdarg.h>
#include <string.h>

#define LABEL_WIDTH CLI_LABEL_WIDTH
#define ROW_WIDTH CLI_ROW_WIDTH
#define BYTES_WIDTH CLI_BYTES_WIDTH

/* The settings the table shows, read before anything is printed so that a
 * failure prints no partial table. */
typedef struct text_settings {
    cli_setting family, hidden, layers, heads, kv_heads, head_dim, intermediate, vocab,
        tie_embeddings, attn_bias, norm, mlp, experts, experts_per_token, expert_intermediate,
        shared_expert_intermediate, shared_expert_gate, dense_layers, router_bias, qk_norm,
        rotary_dim, v_head_dim, q_lora_rank, kv_lora_rank, parallel_block, activation, post_norm,
        sliding_window, bnb_4bit, attention_dropout, hidden_dropout, embedding_dropout;
    cli_setting batch, seq, precision, optimizer, optimizer_impl, grad_ckpt, attention, dropout,
        experts_impl, method, lora_rank, lora_targets, lora_dropout, freeze_layers, loss, grad_accum, formula,
        article_tmp_factor, article_param_bytes;
} text_settings;

static int read_settings(const cli_request *req, text_settings *s)
{
    const struct {
        const char *flag;
        cli_setting *out;
    } rows[] = {
        { "family", &s->family },
        { "hidden", &s->hidden },
        { "layers", &s->layers },
        { "heads", &s->heads },
        { "kv-heads", &s->kv_heads },
        { "head-dim", &s->head_dim },
        { "intermediate", &s->intermediate },
        { "vocab", &s->vocab },
        { "tie-embeddings", &s->tie_embeddings },
        { "attn-bias", &s->attn_bias },
        { "norm", &s->norm },
        { "mlp", &s->mlp },
        { "experts", &s->experts },
        { "experts-per-token", &s->experts_per_token },
        { "expert-intermediate", &s->expert_intermediate },
        { "shared-expert-intermediate", &s->shared_expert_intermediate },
        { "shared-expert-gate", &s->shared_expert_gate },
        { "dense-layers", &s->dense_layers },
        { "router-bias", &s->router_bias },
        { "qk-norm", &s->qk_norm },
        { "rotary-dim", &s->rotary_dim },
        { "v-head-dim", &s->v_head_dim },
        { "q-lora-rank", &s->q_lora_rank },
        { "kv-lora-rank", &s->kv_lora_rank },
        { "parallel-block", &s->parallel_block },
        { "activation", &s->activation },
        { "post-norm", &s->post_norm },
        { "sliding-window", &s->sliding_window },
        { "bnb-4bit", &s->bnb_4bit },
        { "attention-dropout", &s->attention_dropout },
        { "hidden-dropout", &s->hidden_dropout },
        { "embedding-dropout", &s->embedding_dropout },
        { "batch", &s->batch },
        { "seq", &s->seq },
        { "precision", &s->precision },
        { "optimizer", &s->optimizer },
        { "optimizer-impl", &s->optimizer_impl },
        { "grad-ckpt", &s->grad_ckpt },
        { "attention", &s->attention },
        { "experts-impl", &s->experts_impl },
        { "dropout", &s->dropout },
        { "method", &s->method },
        { "lora-rank", &s->lora_rank },
        { "lora-targets", &s->lora_targets },
        { "lora-dropout", &s->lora_dropout },
        { "freeze-layers", &s->freeze_layers },
        { "loss", &s->loss },
        { "grad-accum", &s->grad_accum },
        { "formula", &s->formula },
        { "article-tmp-factor", &s->article_tmp_factor },
        { "article-param-bytes", &s->article_param_bytes },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const cli_flag *f = cli_flag_find(rows[i].flag, strlen(rows[i].flag));
        int rc = f ? cli_setting_read(req, f, rows[i].out) : LLMEM_EINVAL;
        if (rc != LLMEM_OK)
            return rc;
    }
    return LLMEM_OK;
}

/* Append ", text" (or "text" first) to a line being built. */
static void append(char *line, size_t cap, const char *fmt, ...) CLI_PRINTF(3, 4);

static void append(char *line, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(line);
    va_list ap;
    if (used > 0 && used + 2 < cap) {
        memcpy(line + used, ", ", 3);
        used += 2;
    }
    va_start(ap, fmt);
    vsnprintf(line + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The attention's less common features, on a line of their own when there are any. */
static void print_attention(FILE *out, const text_settings *s)
{
    char line[256] = "";
    if (s->kv_lora_rank.i > 0) {
        append(line, sizeof line, "latent attention: kv rank %lld", (long long)s->kv_lora_rank.i);
        if (s->q_lora_rank.i > 0)
            append(line, sizeof line, "q rank %lld", (long long)s->q_lora_rank.i);
    }
    if (s->v_head_dim.i != s->head_dim.i)
        append(line, sizeof line, "v head-dim %lld", (long long)s->v_head_dim.i);
    if (s->rotary_dim.i != s->head_dim.i)
        append(line, sizeof line, "rotary on %lld of %lld head dims", (long long)s->rotary_dim.i,
               (long long)s->head_dim.i);
    if (s->qk_norm.i)
        append(line, sizeof line, "qk-norm");
    if (s->parallel_block.i)
        append(line, sizeof line, "attention and MLP in parallel");
    if (s->post_norm.i)
        append(line, sizeof line, "norms after the residual additions");
    if (s->sliding_window.i)
        append(line, sizeof line, "sliding window %lld", (long long)s->sliding_window.i);
    if (s->bnb_4bit.i)
        append(line, sizeof line, "linears in bitsandbytes 4-bit");
    if (line[0] != '\0')
        fprintf(out, "%-*s%s\n", LABEL_WIDTH, "", line);
}

static void print_experts(FILE *out, const text_settings *s)
{
    char line[256] = "";
    append(line, sizeof line, "%lld experts a layer, top-%lld routed, expert intermediate %lld",
           (long long)s->experts.i, (long long)s->experts_per_token.i,
           (long long)s->expert_intermediate.i);
    if (s->shared_expert_intermediate.i > 0)
        append(line, sizeof line, "shared expert %lld%s",
               (long long)s->shared_expert_intermediate.i,
               s->shared_expert_gate.i ? " (gated)" : "");
    if (s->dense_layers.i > 0)
        append(line, sizeof line, "%lld dense layer%s", (long long)s->dense_layers.i,
               s->dense_layers.i == 1 ? "" : "s");
    if (s->router_bias.i)
        append(line, sizeof line, "router bias");
    fprintf(out, "%-*s%s\n", LABEL_WIDTH, "", line);
}

static void print_model(FILE *out, const cli_request *req, const cli_report *r,
                        const text_settings *s)
{
    char total[CLI_NUMBER_CAP], total_short[CLI_NUMBER_CAP], trainable[CLI_NUMBER_CAP],
        active[CLI_NUMBER_CAP];
    static const char *const source_notes[] = {
        [CLI_MODEL_DEFAULT] = " (the default; choose another with --model or --config)",
        [CLI_MODEL_PRESET] = "",
        [CLI_MODEL_CUSTOM] = " (from --family and the architecture flags)",
        [CLI_MODEL_CONFIG] = " (a Hugging Face config)",
    };
    int modified = (req->source == CLI_MODEL_PRESET || req->source == CLI_MODEL_CONFIG) &&
                   req->arch_flags > 0;

    fprintf(out, "%-*s%s%s%s\n", LABEL_WIDTH, "Model", req->model_name,
            source_notes[req->source], modified ? " (modified by architecture flags)" : "");
    fprintf(out, "%-*s%s: hidden %lld, %lld layers, %lld heads (%lld kv-heads, head-dim %lld)\n",
            LABEL_WIDTH, "Architecture", s->family.text, (long long)s->hidden.i,
            (long long)s->layers.i, (long long)s->heads.i, (long long)s->kv_heads.i,
            (long long)s->head_dim.i);
    fprintf(out, "%-*s%s %s MLP %lld, vocab %lld, %s%s%s\n", LABEL_WIDTH, "", s->mlp.text,
            s->activation.text, (long long)s->intermediate.i, (long long)s->vocab.i, s->norm.text,
            s->attn_bias.i ? ", qkv biases" : "", s->tie_embeddings.i ? ", tied embeddings" : "");
    print_attention(out, s);
    if (s->experts.i > 0)
        print_experts(out, s);

    cli_format_count(r->params_total, total, sizeof total);
    cli_format_count_short(r->params_total, total_short, sizeof total_short);
    cli_format_count(r->params_trainable, trainable, sizeof trainable);
    fprintf(out, "%-*s%s total (%s), %s trainable", LABEL_WIDTH, "Parameters", total, total_short,
            trainable);
    if (r->params_active != r->params_total) {
        cli_format_count(r->params_active, active, sizeof active);
        fprintf(out, ", %s active a token", active);
    }
    fputc('\n', out);
}

/* "batch 4", or a grid's list: "batch 1, 2, 4". */
static void print_values(FILE *out, const char *name, const int64_t *list, int n, int64_t one)
{
    fprintf(out, "%s %lld", name, (long long)(n > 0 ? list[0] : one));
    for (int i = 1; i < n; i++)
        fprintf(out, ", %lld", (long long)list[i]);
}

/* ", dropout 0.1" when set; unset, each site at the model's own: ", dropout
 * model (0.1)" when they agree, else the nonzero ones by site ("hidden 0.1");
 * nothing where every probability is 0. */
static void print_dropout(FILE *out, const text_settings *s)
{
    const struct {
        const char *site;
        double p;
    } sites[] = { { "attention", s->attention_dropout.d },
                  { "hidden", s->hidden_dropout.d },
                  { "embedding", s->embedding_dropout.d } };
    const size_t n = sizeof sites / sizeof sites[0];
    if (s->dropout.d >= 0) {
        if (s->dropout.d > 0)
            fprintf(out, ", dropout %g", s->dropout.d);
        return;
    }
    int any = 0, same = 1;
    for (size_t i = 0; i < n; i++) {
        any |= sites[i].p > 0;
        same &= sites[i].p == sites[0].p;
    }
    if (!any)
        return;
    if (same) {
        fprintf(out, ", dropout model (%g)", sites[0].p);
        return;
    }
    const char *sep = "";
    fputs(", dropout model (", out);
    for (size_t i = 0; i < n; i++) {
        if (sites[i].p > 0) {
            fprintf(out, "%s%s %g", sep, sites[i].site, sites[i].p);
            sep = ", ";
        }
    }
    fputc(')', out);
}

/* Learned positions refuse a longer seq (the library does); rotary ones and
 * ALiBi run it, transformers does not refuse, but the model was trained on
 * no longer: said, not refused. */
static void print_past_positions(FILE *out, const cli_request *req, const text_settings *s)
{
    int64_t positions = 0, max_positions = 0, seq = s->seq.i;
    llmem_model_get_int(req->model, LLMEM_MODEL_POSITIONS, &positions);
    llmem_model_get_int(req->model, LLMEM_MODEL_MAX_POSITIONS, &max_positions);
    for (int i = 0; i < req->ngrid[1]; i++)
        seq = req->grid[1][i] > seq ? req->grid[1][i] : seq;
    if (positions != LLMEM_POSITIONS_LEARNED && max_positions > 0 && seq > max_positions)
        fprintf(out, "%-*sseq %lld is past the model's max-positions %lld: transformers runs "
                     "it, the model was trained on no longer\n",
                LABEL_WIDTH, "", (long long)seq, (long long)max_positions);
}

static void print_setup(FILE *out, const cli_request *req, const text_settings *s, int article)
{
    const char *defaults =
        req->train_flags ? "" : " (the defaults: " CLI_DEFAULTS_SOURCE ", bf16=True on fp32 weights)";
    if (article) { /* what its sum reads */
        fprintf(out, "%-*s%s, ", LABEL_WIDTH, "Setup", s->optimizer.text);
        print_values(out, "batch", req->grid[0], req->ngrid[0], s->batch.i);
        print_values(out, " x seq", req->grid[1], req->ngrid[1], s->seq.i);
        fprintf(out, "%s\n%-*sarticle: m_total = m_p + m_os + m_data + m_tmp (%lld bytes a "
                     "parameter, m_tmp = %g x m_p)\n",
                defaults, LABEL_WIDTH, "Formula", (long long)s->article_param_bytes.i,
                s->article_tmp_factor.d);
        return;
    }
    fprintf(out, "%-*s%s, %s", LABEL_WIDTH, "Setup", s->precision.text, s->optimizer.text);
    if (llmem_train_unread(req->train, LLMEM_TRAIN_OPTIMIZER_IMPL) == NULL)
        fprintf(out, " (%s step)", s->optimizer_impl.text);
    fputs(", ", out);
    if (strcmp(s->method.text, "lora") == 0 || strcmp(s->method.text, "qlora") == 0) {
        fprintf(out, "%s (rank %lld on %s", s->method.text, (long long)s->lora_rank.i,
                s->lora_targets.text);
        if (s->lora_dropout.d > 0)
            fprintf(out, ", dropout %g", s->lora_dropout.d);
        fputc(')', out);
    } else if (strcmp(s->method.text, "freeze") == 0) {
        fprintf(out, "freeze (the embedding%s and the first %lld layers frozen)",
                s->tie_embeddings.i ? " with its tied output head" : "",
                (long long)s->freeze_layers.i);
    } else {
        fprintf(out, "%s fine-tuning", s->method.text);
    }
    fprintf(out, "%s\n", defaults);
    /* "full" is transformers' default variant, non-reentrant (LLMEM_GRAD_CKPT_FULL). */
    fprintf(out, "%-*s", LABEL_WIDTH, "");
    print_values(out, "batch", req->grid[0], req->ngrid[0], s->batch.i);
    print_values(out, " x seq", req->grid[1], req->ngrid[1], s->seq.i);
    fprintf(out, ", grad-ckpt %s%s, attention %s, loss %s", s->grad_ckpt.text,
            strcmp(s->grad_ckpt.text, "full") == 0 ? " (non-reentrant)" : "", s->attention.text,
            s->loss.text);
    if (s->experts.i > 0)
        fprintf(out, ", experts %s", s->experts_impl.text);
    print_dropout(out, s);
    if (s->grad_accum.i > 1)
        fprintf(out, ", grad-accum %lld", (long long)s->grad_accum.i);
    fputc('\n', out);
    /* bf16-mixed is fp32 weights; transformers 5.x loads a checkpoint in its
     * own dtype (from_pretrained's dtype "auto"), so a bf16 one trains with
     * bf16 weights under the same autocast: another precision. */
    if (strcmp(s->precision.text, "bf16-mixed") == 0)
        fprintf(out, "%-*sbf16-mixed: fp32 weights; a bf16 checkpoint in its own dtype "
                     "(transformers 5.x) is --precision bf16-autocast\n", LABEL_WIDTH, "");
    print_past_positions(out, req, s);
    fprintf(out, "%-*sphased: the peak over the phases of one training step\n", LABEL_WIDTH,
            "Formula");
}

/* "  label      <bytes>  <more>" */
static void print_bytes_row(FILE *out, int indent, const char *label, uint64_t bytes,
                            const char *more)
{
    char b[CLI_NUMBER_CAP];
    cli_format_bytes(bytes, b, sizeof b);
    int width = more[0] ? BYTES_WIDTH : 0;
    if (more[0] && (int)strlen(b) >= width) /* a peak of six digits: a space before the note */
        width = (int)strlen(b) + 1;
    fprintf(out, "%*s%-*s%-*s%s\n", indent, "", ROW_WIDTH - indent, label, width, b, more);
}

static void print_terms(FILE *out, const cli_report *r, int article)
{
    char max[CLI_NUMBER_CAP];
    if (article) {
        fprintf(out, "\nTerms (the article's formula sums them; no phase)\n");
    } else {
        fprintf(out, "\nTerms at the peak (phase %s)\n", llmem_phase_name(r->peak_phase));
        fprintf(out, "%-*s%-*s%s\n", ROW_WIDTH, "", BYTES_WIDTH, "at the peak",
                "the term's own max");
    }
    for (int i = 0; i < CLI_TERMS; i++) {
        const llmem_term *t = r->term[i];
        const char *name = llmem_term_name(r->term_kind[i]);
        size_t count = llmem_term_component_count(t);
        if (article) {
            /* The library names the article's terms m_p, m_os, m_data, m_tmp. */
            const char *symbol = name;
            char label[64];
            if (count > 0)
                llmem_term_component(t, 0, &symbol, NULL);
            snprintf(label, sizeof label, "%-7s (%s)", symbol, name);
            print_bytes_row(out, 2, label, llmem_term_bytes_at_peak(t), "");
            continue;
        }
        cli_format_bytes(llmem_term_max_bytes(t), max, sizeof max);
        print_bytes_row(out, 2, name, llmem_term_bytes_at_peak(t), max);
        for (size_t c = 0; c < count; c++) {
            const char *component = NULL;
            uint64_t bytes = 0;
            if (llmem_term_component(t, c, &component, &bytes) == LLMEM_OK)
                print_bytes_row(out, 4, component, bytes, "");
        }
    }
}

static void print_phases(FILE *out, const cli_report *r, int article)
{
    if (article) {
        fprintf(out, "\nPhase peaks: none (the article's formula sums the terms; no phase)\n");
        return;
    }
    fprintf(out, "\nPhase peaks (allocated)\n");
    for (int i = 0; i < CLI_PHASES; i++)
        print_bytes_row(out, 2, llmem_phase_name(r->phase[i]), r->phase_bytes[i],
                        r->phase[i] == r->peak_phase ? "<- peak" : "");
    if (r->timeline.n > 0) {
        fprintf(out, "  %-*s", ROW_WIDTH - 2, "the step");
        cli_timeline_sparkline(out, &r->timeline, 60);
        fputc('\n', out);
    }
}

static void print_peak(FILE *out, const cli_report *r, int article)
{
    fprintf(out, "\nPeak\n");
    print_bytes_row(out, 2, "allocated", r->peak_allocated,
                    article ? "m_total" : "live tensors (torch.cuda.max_memory_allocated)");
    print_bytes_row(out, 2, "reserved", r->peak_reserved, "+ caching-allocator rounding");
    print_bytes_row(out, 2, "device", r->peak_device,
                    "+ CUDA context and workspaces (what nvidia-smi shows)");
    if (article)
        fprintf(out, "  %-*snone (the article's formula sums the terms)\n", ROW_WIDTH - 2,
                "phase");
    else
        fprintf(out, "  %-*s%s\n", ROW_WIDTH - 2, "phase", llmem_phase_name(r->peak_phase));
}

/* "s" after a count other than one. */
static const char *plural(double n)
{
    return n == 1.0 ? "" : "s";
}

/* A rank's layers: its range, or its model chunks' ("0-3, 16-19"; past
 * three, the first two and the last), a range of one layer as that layer. */
static void rank_layers(const cli_rank *rk, char *buf, size_t cap)
{
    uint64_t chunks = rk->chunks ? rk->chunks : 1, per = rk->layers / chunks;
    size_t used = 0;
    buf[0] = '\0';
    for (uint64_t c = 0; c < chunks && used < cap; c++) {
        const char *sep = c == 0 ? "" : ", ";
        if (chunks > 3 && c == 2) {
            sep = ", ..., ";
            c = chunks - 1;
        }
        unsigned long long first = rk->layer_first + c * rk->chunk_stride, last = first + per - 1;
        int n = per == 1 ? snprintf(buf + used, cap - used, "%s%llu", sep, first)
                         : snprintf(buf + used, cap - used, "%s%llu-%llu", sep, first, last);
        used += n > 0 ? (size_t)n : 0;
    }
    if (chunks > 1 && used < cap)
        snprintf(buf + used, cap - used, " (%llu chunks)", (unsigned long long)chunks);
}

/* The layers of a class of stages: those of each, consecutive and as many
 * (layout.c), or the first stage's when they come in interleaved chunks. */
static void class_layers(const cli_rank *rk, char *buf, size_t cap)
{
    uint64_t chunks = rk->chunks ? rk->chunks : 1;
    if (rk->stages > 1 && chunks == 1) {
        snprintf(buf, cap, "%llu-%llu (%llu a stage)", (unsigned long long)rk->layer_first,
                 (unsigned long long)(rk->layer_first + rk->stages * rk->layers - 1),
                 (unsigned long long)rk->layers);
        return;
    }
    rank_layers(rk, buf, cap);
    if (rk->stages > 1) {
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, " on stage %llu, %llu later on each next",
                 (unsigned long long)rk->stage, (unsigned long long)(rk->layers / chunks));
    }
}

/* The layout line, and the ranks whose memory differs, when there is more than one GPU. */
static void print_layout(FILE *out, const cli_request *req, const cli_report *r)
{
    int64_t v[LLMEM_PARALLEL_VIRTUAL_STAGES + 1] = { 0 };
    uint64_t gpus = llmem_parallel_gpus(req->parallel);
    if (gpus <= 1 && req->layout_flags == 0)
        return;
    for (int key = LLMEM_PARALLEL_DP; key <= LLMEM_PARALLEL_VIRTUAL_STAGES; key++)
        llmem_parallel_get_int(req->parallel, key, &v[key]);
    fprintf(out, "%-*sdp %lld x tp %lld%s x pp %lld x cp %lld = %llu GPU%s, sharding %s",
            LABEL_WIDTH, "Layout", (long long)v[LLMEM_PARALLEL_DP],
            (long long)v[LLMEM_PARALLEL_TP], v[LLMEM_PARALLEL_SP] ? " (sp)" : "",
            (long long)v[LLMEM_PARALLEL_PP], (long long)v[LLMEM_PARALLEL_CP],
            (unsigned long long)gpus, plural((double)gpus),
            llmem_parallel_value_name(LLMEM_PARALLEL_SHARDING, v[LLMEM_PARALLEL_SHARDING]));
    if (v[LLMEM_PARALLEL_EP] > 1)
        fprintf(out, ", ep %lld", (long long)v[LLMEM_PARALLEL_EP]);
    if (v[LLMEM_PARALLEL_OFFLOAD] != LLMEM_OFFLOAD_NONE)
        fprintf(out, ", offload %s",
                llmem_parallel_value_name(LLMEM_PARALLEL_OFFLOAD, v[LLMEM_PARALLEL_OFFLOAD]));
    if (v[LLMEM_PARALLEL_PP] > 1)
        fprintf(out, ", %lld micro-batch%s, %s", (long long)v[LLMEM_PARALLEL_MICRO_BATCHES],
                v[LLMEM_PARALLEL_MICRO_BATCHES] == 1 ? "" : "es",
                llmem_parallel_value_name(LLMEM_PARALLEL_SCHEDULE, v[LLMEM_PARALLEL_SCHEDULE]));
    else if (v[LLMEM_PARALLEL_MICRO_BATCHES] > 1) /* without stages: accumulated in turn */
        fprintf(out, ", %lld micro-batches (gradient accumulation)",
                (long long)v[LLMEM_PARALLEL_MICRO_BATCHES]);
    fputc('\n', out);
    if (cli_is_grid(req))
        return; /* the ranks' peaks differ from point to point: the grid has them */
    for (size_t k = 0; k < r->nranks; k++) {
        const cli_rank *rk = &r->rank[k];
        char peak[CLI_NUMBER_CAP], host[CLI_NUMBER_CAP];
        cli_format_bytes(rk->peak_device, peak, sizeof peak);
        double in_flight = (double)rk->in_flight_x1000 / 1000.0;
        char stages[48], layers[160];
        if (rk->stages > 1)
            snprintf(stages, sizeof stages, "stages %llu-%llu", (unsigned long long)rk->stage,
                     (unsigned long long)(rk->stage + rk->stages - 1));
        else
            snprintf(stages, sizeof stages, "stage %llu", (unsigned long long)rk->stage);
        class_layers(rk, layers, sizeof layers);
        /* A class is described by its first stage, which holds the most
         * micro-batches in flight of them. */
        fprintf(out, "%-*s%s: layers %s, %s%g micro-batch%s in flight, %llu GPU%s: "
                     "device peak %s%s",
                LABEL_WIDTH, k == 0 ? "Ranks" : "", stages, layers,
                rk->stages > 1 ? "up to " : "", in_flight,
                in_flight == 1.0 ? "" : "es", (unsigned long long)rk->gpus,
                plural((double)rk->gpus), peak, k == r->peak_rank ? " (the most loaded: below)" : "");
        if (rk->host > 0) {
            cli_format_bytes(rk->host, host, sizeof host);
            fprintf(out, ", host %s", host);
        }
        fputc('\n', out);
    }
}

int cli_report_text(FILE *out, const cli_request *req, const cli_report *r)
{
    text_settings s;
    int rc = read_settings(req, &s);
    if (rc != LLMEM_OK)
        return rc;
    int article = strcmp(s.formula.text, "article") == 0;
    print_model(out, req, r, &s);
    print_setup(out, req, &s, article);
    print_layout(out, req, r);
    cli_gpu_fit g;
    if (cli_gpu_fit_of(req, 1, r->peak_device, &g))
        cli_gpu_fit_text(out, &g, r->nranks > 1 ? "the most loaded rank's device peak"
                                                : "device peak");
    if (req->max_key != 0) {
        char cap[CLI_NUMBER_CAP], room[CLI_NUMBER_CAP], peak[CLI_NUMBER_CAP], bound[96] = "";
        const char *field = req->max_key == LLMEM_TRAIN_BATCH ? "batch" : "seq";
        cli_format_bytes(req->budget, cap, sizeof cap);
        /* A bound other than memory stopped the search: the answer is that bound's. */
        if (strcmp(req->max_limited_by, "max_positions") == 0)
            snprintf(bound, sizeof bound, " (the model's max positions; memory allows more)");
        else if (strcmp(req->max_limited_by, "field_max") == 0)
            snprintf(bound, sizeof bound, " (the largest %s the library takes; memory allows "
                     "more)", field);
        if (req->max_value > 0) {
            cli_format_bytes(req->budget - r->peak_device, room, sizeof room);
            fprintf(out, "%-*sthe largest %s whose device peak fits %s (%s less %g%%): %lld%s, "
                         "%s to spare\n",
                    LABEL_WIDTH, "Max", field, cap,
                    req->capacity_from_gpu ? "the GPU's usable memory" : "capacity",
                    req->margin_permille / 10.0, (long long)req->max_value, bound, room);
        } else {
            /* The report describes the smallest value: the answer is no. */
            cli_format_bytes(r->peak_device, peak, sizeof peak);
            cli_format_bytes(r->peak_device - req->budget, room, sizeof room);
            fprintf(out, "%-*sno %s fits %s (%s less %g%%): the smallest the layout takes, %lld, "
                         "needs %s, short by %s\n",
                    LABEL_WIDTH, "Max", field, cap,
                    req->capacity_from_gpu ? "the GPU's usable memory" : "capacity",
                    req->margin_permille / 10.0, (long long)req->max_smallest, peak, room);
        }
    }
    print_terms(out, r, article);
    print_phases(out, r, article);
    print_peak(out, r, article);
    if (req->weights.path != NULL) {
        fputc('\n', out);
        cli_weights_text(out, &req->weights, &r->params_total);
    }
    return LLMEM_OK;
}

/* The grid: a row a batch, a column a seq, each cell the device peak of
 * the most loaded rank, marked when it fits the capacity less the margin. */
int cli_grid_text(FILE *out, const cli_request *req, const cli_report *r, const cli_grid *g)
{
    enum { CELL = 12 };
    text_settings s;
    char cell[CLI_NUMBER_CAP], budget_text[CLI_NUMBER_CAP];
    int rc = read_settings(req, &s);
    if (rc != LLMEM_OK)
        return rc;
    uint64_t budget = cli_usable(req->capacity, req->margin_permille);
    print_model(out, req, r, &s);
    print_setup(out, req, &s, strcmp(s.formula.text, "article") == 0);
    print_layout(out, req, r);
    fprintf(out, "\n%-*sby batch (rows) and seq (columns)%s\n", LABEL_WIDTH,
            r->nranks > 1 ? "Device peaks" : "Device peak",
            r->nranks > 1 ? ", the most loaded rank's" : "");
    if (req->capacity > 0) {
        cli_gpu_fit gpu;
        int named = cli_gpu_fit_of(req, 0, 0, &gpu) && req->capacity_from_gpu;
        cli_format_gib(budget, budget_text, sizeof budget_text);
        fprintf(out, "%-*s* fits %s (%s%s less %g%%)\n", LABEL_WIDTH, "", budget_text,
                named ? gpu.name : "the capacity", named ? "'s usable memory" : "",
                req->margin_permille / 10.0);
    }
    fprintf(out, "%-*s", LABEL_WIDTH, "");
    for (size_t j = 0; j < g->seqs; j++)
        fprintf(out, "%*lld ", CELL, (long long)g->seq[j]);
    fputc('\n', out);
    for (size_t i = 0; i < g->batches; i++) {
        char label[32];
        snprintf(label, sizeof label, "batch %lld", (long long)g->batch[i]);
        fprintf(out, "%-*s", LABEL_WIDTH, label);
        for (size_t j = 0; j < g->seqs; j++) {
            uint64_t peak = g->peak[i * g->seqs + j];
            cli_format_gib(peak, cell, sizeof cell);
            fprintf(out, "%*s%c", CELL, cell, req->capacity > 0 && peak <= budget ? '*' : ' ');
        }
        fputc('\n', out);
    }
    if (req->weights.path != NULL) {
        fputc('\n', out);
        cli_weights_text(out, &req->weights, &r->params_total);
    }
    return LLMEM_OK;
}
