/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the estimator through the public API, with invariants.
 *
 * The input decodes into a model (any family with a plausible core shape
 * made one of the layouts its code path builds, variant_of, or a preset), a
 * training setup (the attention kernel, checkpointing, the optimizer step's
 * implementation and the precision each drawn alike with the defaults,
 * set_kernels) and a layout, then a list of field records, each setting one
 * model, training or layout field to a value within the bounds the field
 * describers report (biased toward small, realistic values). Every call must
 * return LLMEM_OK or a documented status with a message, never an internal
 * error; and when an estimate succeeds:
 *
 *   1. allocated <= reserved <= device, for the peak and every rank; the
 *      getters answer for the most loaded rank;
 *   2. the four terms at the peak add up to the allocated peak, each term's
 *      components to the term, each term's maximum lies between its bytes at
 *      the peak and the allocated peak; the phase peaks stay within the
 *      allocated peak and the peak phase reaches it;
 *   3. the allocated peak of every rank does not decrease when batch or seq
 *      grows by one (refusing the larger value is allowed only as the
 *      documentation says: overflow, learned positions, the sp and cp splits);
 *   4. a handle run again gives, for the same inputs, the numbers a fresh
 *      handle gives, a failed run leaves the last result in place, and a
 *      one-GPU layout gives what no layout gives;
 *   5. llmem_estimate_max answers a job that runs, with a value whose run fits
 *      the capacity and whose successor (the next value the layout splits)
 *      does not;
 *   6. each layout the planner returns re-estimates to its peak, within the
 *      planner's capacity, and the next micro-batch does not fit; no
 *      rejection is an internal error;
 *   7. a timeline's points add up to at most the peak and reach it;
 *   9. a sweep of points around the job's batch and seq (the third of three,
 *      its points answered by compiled walks where they compile) gives each point's
 *      own run's peak at the level drawn, or stops at the first point whose
 *      run fails, with its status and the point named, and leaves the
 *      train as it was;
 *   8. the device peak fitted to a GPU gives every plain MIG profile and the
 *      whole GPU in order with the documented figures, the best the first
 *      that holds it; with one MIG instance running, each option's starts
 *      those the placement table leaves it; packed with jobs scaled from it onto one or two GPU
 *      types, every placed job holds in a valid MIG layout or a whole GPU,
 *      the lower bound is at most the GPUs used, and a second run repeats.
 *
 * A broken invariant is a __builtin_trap(), so libFuzzer keeps the input.
 * Each input's work is bounded (a few dozen estimates, a planner run over at
 * most 8 GPUs, a timeline of at most 8,192 points a rank, six jobs packed):
 * a few thousand inputs a second without sanitizers, hundreds with them.
 * fuzz_seeded.c runs it without libFuzzer, on seeded random inputs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant: say which, then trap so libFuzzer keeps the input. */
#define FAIL(...) \
    (fprintf(stderr, "fuzz_estimate: " __VA_ARGS__), fputc('\n', stderr), __builtin_trap())
/* Build with -DLLMEM_FUZZ_TRACE to see what each input ran (corpus work). */
#ifdef LLMEM_FUZZ_TRACE
#define TRACE(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
#else
#define TRACE(...) ((void)0)
#endif
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) \
            FAIL(__VA_ARGS__); \
    } while (0)

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define RECORDS_MAX 48
#define RANKS_MAX 10 /* the first stage, the last, runs of alike middle stages */
#define COMPONENTS_MAX 16

/* ---- Reading the input ------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

/* The next byte, 0 once the input is exhausted (so short inputs decode to
 * defaults). */
static unsigned byte_of(reader *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static uint64_t u64_of(reader *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | byte_of(r);
    return v;
}

/* A value in [min, max], mostly small or a round power of two, sometimes
 * anywhere (log-uniform) in the field's range. */
static int64_t value_in(reader *r, int64_t min, int64_t max)
{
    uint64_t span = (uint64_t)(max - min), v;
    unsigned b = byte_of(r);
    if (span <= 16)
        return min + (int64_t)(b % (span + 1));
    switch (b >> 6) {
    case 0: v = b & 63; break;                                        /* 0..63 */
    case 1: v = UINT64_C(1) << (b & 15); break;                       /* 1..32768 */
    case 2: v = (uint64_t)(byte_of(r) + 1) << (b & 15); break;        /* k x 2^e */
    default: v = u64_of(r, 8) & ((UINT64_C(1) << (b & 63)) - 1); break; /* log-uniform */
    }
    if (v < (uint64_t)min)
        return min;
    if (v - (uint64_t)min > span)
        return min + (int64_t)(v % (span + 1));
    return (int64_t)v;
}

/* ---- The inputs an input describes ------------------------------------- */

enum { OBJ_MODEL, OBJ_TRAIN, OBJ_LAYOUT, OBJ_COUNT };

typedef struct record {
    int object, key;
    int64_t value;
    double real; /* real training fields */
    int is_real;
} record;

typedef struct job {
    int preset;             /* >= 0: preset index; else family */
    int family;
    int64_t core[7];        /* heads, kv-heads, head-dim, hidden, layers, intermediate, vocab */
    unsigned kernels;       /* attention, checkpointing, optimizer step, precision */
    unsigned variant;       /* the family's layout (variant_of) */
    unsigned extras;        /* activation, experts */
    int with_layout;
    size_t timeline;        /* points a rank: 0 = off */
    int expand;             /* the timeline shows every layer op by op */
    int checks;             /* CHECK_* bits */
    unsigned aux[8];        /* bytes for capacities, planner, fit and pack fields */
    record rec[RECORDS_MAX];
    size_t nrec;
} job;

enum { CHECK_MAX = 1, CHECK_PLAN = 2, CHECK_SWEEP = 4 };

static int count_keys(int object)
{
    int key = 1;
    switch (object) {
    case OBJ_MODEL:
        while (llmem_model_field_info(key, NULL, NULL, NULL) == LLMEM_OK)
            key++;
        break;
    case OBJ_TRAIN:
        while (llmem_train_field_info(key, NULL, NULL, NULL, NULL) == LLMEM_OK)
            key++;
        break;
    default:
        while (llmem_parallel_field_info(key, NULL, NULL, NULL) == LLMEM_OK)
            key++;
        break;
    }
    return key - 1;
}

/* Keys of each object, counted once through the describers. */
static int key_count(int object)
{
    static int counts[OBJ_COUNT];
    if (counts[object] == 0)
        counts[object] = count_keys(object);
    return counts[object];
}

static void decode_record(reader *r, record *rec)
{
    unsigned sel = byte_of(r);
    int64_t min = 0, max = 0;
    rec->object = (int)(sel % OBJ_COUNT);
    rec->key = 1 + (int)((sel / OBJ_COUNT) % (unsigned)key_count(rec->object));
    rec->is_real = 0;
    switch (rec->object) {
    case OBJ_MODEL:
        llmem_model_field_info(rec->key, NULL, &min, &max);
        rec->is_real = llmem_model_field_is_real(rec->key) == 1; /* the dropouts */
        break;
    case OBJ_TRAIN: llmem_train_field_info(rec->key, NULL, &min, &max, &rec->is_real); break;
    default: llmem_parallel_field_info(rec->key, NULL, &min, &max); break;
    }
    if (rec->is_real) {
        /* Bounds of a real field are rounded toward zero and dropout's upper
         * bound is open: stay below max. */
        rec->real = (double)min + (double)(max - min) * (double)byte_of(r) / 256.0;
        return;
    }
    /* The layout's degrees: mostly what a real job uses (1 to 8). */
    if (rec->object == OBJ_LAYOUT && rec->key <= LLMEM_PARALLEL_CP && byte_of(r) < 224)
        rec->value = 1 + (int64_t)(byte_of(r) % 8);
    else
        rec->value = value_in(r, min, max);
}

static void decode(const uint8_t *data, size_t size, job *j)
{
    reader r = { data, size };
    unsigned src = byte_of(&r);
    memset(j, 0, sizeof *j);
    j->preset = -1;
    /* Every family runs the phased estimate: drawn alike. */
    if (src % 8 == 7)
        j->preset = (int)(byte_of(&r) % llmem_preset_count());
    else
        j->family = 1 + (int)(byte_of(&r) % LLMEM_FAMILY_MEGATRON_GPT);
    /* A core shape that holds together: heads a power of two, kv-heads
     * dividing them, hidden = heads x head-dim. */
    unsigned a = byte_of(&r), b = byte_of(&r), c = byte_of(&r);
    int64_t heads = INT64_C(1) << (a % 6);
    j->core[0] = heads;
    j->core[1] = heads >> ((a / 6) % 3);
    j->core[2] = INT64_C(8) << (b % 5);
    j->core[3] = heads * j->core[2];
    j->core[4] = 1 + (int64_t)((b / 5) % 8);
    j->core[5] = 16 * (1 + (int64_t)(c % 64));
    j->core[6] = 1 + (int64_t)u64_of(&r, 2);
    unsigned flags = byte_of(&r);
    j->with_layout = flags & 1;
    if (flags & 16) {
        static const size_t rooms[] = { 32, 512, 8192, 8192 };
        j->timeline = rooms[(flags >> 5) & 3];
        j->expand = flags >> 7;
    }
    /* The planner runs hundreds of estimates: a quarter of the inputs. */
    j->checks = (flags & 2 ? CHECK_MAX : CHECK_SWEEP) | ((flags & 12) == 12 ? CHECK_PLAN : 0);
    j->kernels = byte_of(&r);
    j->variant = byte_of(&r);
    j->extras = byte_of(&r);
    for (size_t i = 0; i < N(j->aux); i++)
        j->aux[i] = byte_of(&r);
    while (r.n > 0 && j->nrec < RECORDS_MAX)
        decode_record(&r, &j->rec[j->nrec++]);
}

/* ---- Checked calls ------------------------------------------------------ */

/* A failed call: a documented status with a message that is not one of the
 * library's internal errors. */
static void check_status(llmem_ctx *ctx, int rc, const char *call)
{
    if (rc == LLMEM_OK)
        return;
    CHECK(rc < 0 && rc >= LLMEM_EBUFFER, "%s: undocumented status %d", call, rc);
    CHECK(rc != LLMEM_ENOMEM && rc != LLMEM_EIO && rc != LLMEM_EPARSE && rc != LLMEM_EBUFFER,
          "%s: %s without files, buffers or allocation limits: %s", call, llmem_status_str(rc),
          llmem_ctx_error(ctx));
    const char *msg = llmem_ctx_error(ctx);
    CHECK(msg[0] != '\0', "%s: %s without a message", call, llmem_status_str(rc));
    CHECK(strstr(msg, "please report") == NULL && strstr(msg, "does not cover this") == NULL &&
              strstr(msg, "unaccounted") == NULL,
          "%s: internal error: %s", call, msg);
}

typedef struct inputs {
    llmem_model *m;
    llmem_train *t;
    llmem_parallel *l; /* NULL: one GPU */
} inputs;

static void free_inputs(inputs *in)
{
    llmem_model_free(in->m);
    llmem_train_free(in->t);
    llmem_parallel_free(in->l);
    memset(in, 0, sizeof *in);
}

static int apply(inputs *in, const record *rec)
{
    switch (rec->object) {
    case OBJ_MODEL:
        return rec->is_real ? llmem_model_set_double(in->m, rec->key, rec->real)
                            : llmem_model_set_int(in->m, rec->key, rec->value);
    case OBJ_TRAIN:
        return rec->is_real ? llmem_train_set_double(in->t, rec->key, rec->real)
                            : llmem_train_set_int(in->t, rec->key, rec->value);
    default: return in->l ? llmem_parallel_set_int(in->l, rec->key, rec->value) : LLMEM_OK;
    }
}

/* ---- Setups and layouts of the families -------------------------------- */

/* The kernels byte: two bits each for the attention kernel, gradient
 * checkpointing, the optimizer step's implementation and the precision; 0
 * keeps the library's default, so every value of each is drawn alike. The
 * records may set them again. */
static int set_kernels(llmem_train *t, unsigned k)
{
    static const int attention[] = { 0, LLMEM_ATTENTION_EAGER, LLMEM_ATTENTION_SDPA,
                                     LLMEM_ATTENTION_FLASH };
    static const int ckpt[] = { 0, LLMEM_GRAD_CKPT_NONE, LLMEM_GRAD_CKPT_REENTRANT,
                                LLMEM_GRAD_CKPT_NON_REENTRANT };
    static const int impl[] = { 0, LLMEM_OPTIMIZER_IMPL_FUSED, LLMEM_OPTIMIZER_IMPL_FOREACH,
                                LLMEM_OPTIMIZER_IMPL_FORLOOP };
    static const int precision[] = { 0, LLMEM_PRECISION_FP32, LLMEM_PRECISION_FP16_MIXED,
                                     LLMEM_PRECISION_BF16 };
    const struct {
        int key, value;
    } set[] = {
        { LLMEM_TRAIN_ATTENTION, attention[k & 3] },
        { LLMEM_TRAIN_GRAD_CKPT, ckpt[(k >> 2) & 3] },
        { LLMEM_TRAIN_OPTIMIZER_IMPL, impl[(k >> 4) & 3] },
        { LLMEM_TRAIN_PRECISION, precision[(k >> 6) & 3] },
    };
    for (size_t i = 0; i < N(set); i++)
        if (set[i].value != 0 && llmem_train_set_int(t, set[i].key, set[i].value) != LLMEM_OK)
            return 0;
    return 1;
}

/* Whether a family's code path takes another MLP activation than its default. */
static int takes_activation(int family)
{
    return family != LLMEM_FAMILY_GPT2 && family != LLMEM_FAMILY_BLOOM &&
           family != LLMEM_FAMILY_DEEPSEEK && family != LLMEM_FAMILY_MEGATRON_GPT;
}

typedef struct field_value {
    int key;
    int64_t value;
} field_value;

/*
 * The fields that make a drawn core shape one of the layouts a family's
 * code path builds, as its published checkpoints have them: no grouped kv
 * heads for OPT, BLOOM and GPT-NeoX; OPT's post-norm and projected
 * embedding (opt-350m); GPT-NeoX's and Phi's partial rotary, GPT-NeoX's
 * sequential block, Phi's q/k norms; Falcon's multi-query, grouped
 * (new_decoder_architecture), sequential and ALiBi (Falcon-RW) layouts;
 * DeepSeek's latent attention; Llama's q/k norms (Qwen3). The extras byte
 * adds an activation and, for Llama and DeepSeek, routed experts (shared
 * ones, gated as Qwen2-MoE's or always as DeepSeek's, a dense first layer,
 * V3's router bias). A variant byte with its low three bits 0 leaves the
 * drawn shape as it is (the refusals of layouts a path does not build).
 * Returns the number of fields written to out.
 */
static size_t variant_of(const job *j, field_value *out)
{
    size_t n = 0;
    unsigned v = j->variant >> 3, e = j->extras;
    int64_t heads = j->core[0], hd = j->core[2], hidden = j->core[3], layers = j->core[4];
    if (j->variant % 8 == 0)
        return 0;
#define PUT(k, x) (out[n].key = LLMEM_MODEL_##k, out[n].value = (x), n++)
    switch (j->family) {
    case LLMEM_FAMILY_OPT:
        PUT(KV_HEADS, heads);
        if (v & 1) { /* do_layer_norm_before false: no final norm either */
            PUT(POST_NORM, 1);
            PUT(FINAL_NORM, 0);
        }
        if ((v & 2) && hidden >= 16)
            PUT(EMBED_DIM, hidden / 2);
        break;
    case LLMEM_FAMILY_BLOOM:
        PUT(KV_HEADS, heads);
        break;
    case LLMEM_FAMILY_GPT_NEOX:
        PUT(KV_HEADS, heads);
        PUT(PARALLEL_BLOCK, v & 1);
        PUT(ROTARY_DIM, hd >> ((v >> 1) % 3));
        break;
    case LLMEM_FAMILY_PHI:
        PUT(ROTARY_DIM, hd >> ((v >> 1) % 3));
        PUT(QK_NORM, (v >> 3) & 1);
        break;
    case LLMEM_FAMILY_FALCON: {
        int64_t bias = (v >> 2) & 1;
        PUT(QKV_BIAS, bias);
        PUT(OUT_BIAS, bias);
        PUT(MLP_BIAS, bias);
        switch (v & 3) {
        case 0: /* multi_query (Falcon-7B) */
            PUT(KV_HEADS, 1);
            PUT(PARALLEL_BLOCK, 1);
            PUT(NORMS_PER_LAYER, 1);
            break;
        case 1: /* new_decoder_architecture (Falcon-40B), with heads to group */
            PUT(KV_HEADS, heads >= 4 ? heads / 2 : heads);
            PUT(PARALLEL_BLOCK, 1);
            PUT(NORMS_PER_LAYER, heads >= 4 ? 2 : 1);
            break;
        default: /* sequential, per-head kv; 3: with ALiBi (Falcon-RW) */
            PUT(KV_HEADS, heads);
            PUT(PARALLEL_BLOCK, 0);
            PUT(NORMS_PER_LAYER, 2);
            if ((v & 3) == 3)
                PUT(POSITIONS, LLMEM_POSITIONS_ALIBI);
            break;
        }
        break;
    }
    case LLMEM_FAMILY_DEEPSEEK: {
        /* head-dim is qk_nope + qk_rope; values qk_nope or half of it wide */
        int64_t rope = INT64_C(8) << (v & 1), kv_rank = INT64_C(16) << ((v >> 2) & 3);
        PUT(HEAD_DIM, hd + rope);
        PUT(ROTARY_DIM, rope);
        PUT(V_HEAD_DIM, v & 2 ? hd : hd / 2);
        PUT(KV_LORA_RANK, kv_rank);
        PUT(Q_LORA_RANK, v & 16 ? 0 : 2 * kv_rank); /* 0: V2-Lite's uncompressed queries */
        break;
    }
    case LLMEM_FAMILY_LLAMA:
        PUT(QK_NORM, v & 1);
        break;
    default:
        break;
    }
    if ((e & 7) >= 2 && takes_activation(j->family))
        PUT(ACTIVATION, 1 + (int64_t)(e & 7) - 2);
    if (((e >> 3) & 3) && (j->family == LLMEM_FAMILY_LLAMA || j->family == LLMEM_FAMILY_DEEPSEEK)) {
        int deepseek = j->family == LLMEM_FAMILY_DEEPSEEK;
        PUT(EXPERTS, INT64_C(2) << ((e >> 3) & 3));
        PUT(EXPERTS_PER_TOKEN, 1 + (int64_t)((e >> 5) & 1));
        PUT(EXPERT_INTERMEDIATE, 32);
        if (deepseek || ((e >> 6) & 1)) {
            PUT(SHARED_EXPERT_INTERMEDIATE, 64);
            if (!deepseek)
                PUT(SHARED_EXPERT_GATE, 1);
        }
        if (deepseek)
            PUT(ROUTER_BIAS, (e >> 6) & 1);
        if ((e >> 7) && layers > 1)
            PUT(DENSE_LAYERS, 1);
    }
#undef PUT
    return n;
}

/* The job's model, setup and layout with its first nrec records applied:
 * 0 when they could not be made (a preset or field the library refuses, a
 * documented status). */
static int build(llmem_ctx *ctx, const job *j, size_t nrec, inputs *in)
{
    int rc;
    memset(in, 0, sizeof *in);
    if (j->preset >= 0)
        rc = llmem_model_new_preset(ctx, llmem_preset_name((size_t)j->preset), &in->m);
    else
        rc = llmem_model_new(ctx, j->family, &in->m);
    CHECK(rc == LLMEM_OK, "model: %s", llmem_ctx_error(ctx));
    if (j->preset < 0) {
        static const int keys[] = { LLMEM_MODEL_HEADS, LLMEM_MODEL_KV_HEADS,
                                    LLMEM_MODEL_HEAD_DIM, LLMEM_MODEL_HIDDEN,
                                    LLMEM_MODEL_LAYERS, LLMEM_MODEL_INTERMEDIATE,
                                    LLMEM_MODEL_VOCAB };
        for (size_t k = 0; k < N(keys); k++) {
            /* Head-dim is left to hidden / heads unless a record sets it. */
            if (keys[k] == LLMEM_MODEL_HEAD_DIM)
                continue;
            rc = llmem_model_set_int(in->m, keys[k], j->core[k]);
            CHECK(rc == LLMEM_OK, "core field %d: %s", keys[k], llmem_ctx_error(ctx));
        }
        rc = llmem_model_set_int(in->m, LLMEM_MODEL_MAX_POSITIONS, 4096);
        CHECK(rc == LLMEM_OK, "max-positions: %s", llmem_ctx_error(ctx));
        field_value f[16];
        size_t nf = variant_of(j, f);
        for (size_t k = 0; k < nf; k++) {
            rc = llmem_model_set_int(in->m, f[k].key, f[k].value);
            CHECK(rc == LLMEM_OK, "variant field %d = %lld: %s", f[k].key, (long long)f[k].value,
                  llmem_ctx_error(ctx));
        }
    }
    CHECK(llmem_train_new(ctx, &in->t) == LLMEM_OK, "train: %s", llmem_ctx_error(ctx));
    CHECK(set_kernels(in->t, j->kernels), "kernels: %s", llmem_ctx_error(ctx));
    if (j->with_layout)
        CHECK(llmem_parallel_new(ctx, &in->l) == LLMEM_OK, "layout: %s", llmem_ctx_error(ctx));
    for (size_t i = 0; i < nrec; i++) {
        rc = apply(in, &j->rec[i]);
        /* Within the describers' bounds, a setter accepts every value. */
        CHECK(rc == LLMEM_OK, "record %zu (object %d key %d = %lld): %s", i, j->rec[i].object,
              j->rec[i].key, (long long)j->rec[i].value, llmem_ctx_error(ctx));
    }
    return 1;
}

#ifdef LLMEM_FUZZ_TRACE
/* The job's fields by name, to reproduce an input with the command. */
static void describe(const inputs *in)
{
    const char *name;
    int64_t v;
    double d;
    int is_real;
    fprintf(stderr, "model:");
    for (int k = 1; llmem_model_field_info(k, &name, NULL, NULL) == LLMEM_OK; k++) {
        if (llmem_model_field_is_real(k) == 1 && llmem_model_get_double(in->m, k, &d) == LLMEM_OK)
            fprintf(stderr, " --%s %g", name, d);
        else if (llmem_model_get_int(in->m, k, &v) == LLMEM_OK)
            fprintf(stderr, " --%s %lld", name, (long long)v);
    }
    fprintf(stderr, "\ntrain:");
    for (int k = 1; llmem_train_field_info(k, &name, NULL, NULL, &is_real) == LLMEM_OK; k++) {
        if (is_real && llmem_train_get_double(in->t, k, &d) == LLMEM_OK)
            fprintf(stderr, " --%s %g", name, d);
        else if (!is_real && llmem_train_get_int(in->t, k, &v) == LLMEM_OK)
            fprintf(stderr, " --%s %lld", name, (long long)v);
    }
    fprintf(stderr, "\nlayout:");
    for (int k = 1; in->l && llmem_parallel_field_info(k, &name, NULL, NULL) == LLMEM_OK; k++)
        if (llmem_parallel_get_int(in->l, k, &v) == LLMEM_OK)
            fprintf(stderr, " --%s %lld", name, (long long)v);
    fputc('\n', stderr);
}
#endif

/* ---- Results ------------------------------------------------------------ */

typedef struct term_snap {
    uint64_t at_peak, max;
    size_t ncomp;
    const char *name[COMPONENTS_MAX];
    uint64_t comp[COMPONENTS_MAX];
} term_snap;

typedef struct rank_snap {
    uint64_t est[7];  /* llmem_estimate_key 1..7 */
    uint64_t rank[9]; /* llmem_rank_key 101..109 */
    uint64_t phase[4];
    term_snap term[4];
} rank_snap;

typedef struct snap {
    rank_snap top; /* the 0.1 getters */
    size_t nranks, peak_rank;
    rank_snap rank[RANKS_MAX];
} snap;

static void take_term(const llmem_term *t, term_snap *s)
{
    s->at_peak = llmem_term_bytes_at_peak(t);
    s->max = llmem_term_max_bytes(t);
    s->ncomp = llmem_term_component_count(t);
    CHECK(s->ncomp <= COMPONENTS_MAX, "%zu components", s->ncomp);
    for (size_t i = 0; i < s->ncomp; i++) {
        CHECK(llmem_term_component(t, i, &s->name[i], &s->comp[i]) == LLMEM_OK, "component %zu", i);
        CHECK(s->name[i] != NULL && s->name[i][0] != '\0', "component %zu has no name", i);
    }
    CHECK(llmem_term_component(t, s->ncomp, NULL, NULL) == LLMEM_EINVAL, "component past the end");
}

static void take(const llmem_estimate *e, snap *s)
{
    memset(s, 0, sizeof *s);
    for (int k = 1; k <= 7; k++)
        CHECK(llmem_estimate_get_u64(e, k, &s->top.est[k - 1]) == LLMEM_OK, "get %d", k);
    for (int p = 1; p <= 4; p++)
        CHECK(llmem_estimate_phase_bytes(e, p, &s->top.phase[p - 1]) == LLMEM_OK, "phase %d", p);
    for (int k = 1; k <= 4; k++) {
        const llmem_term *t = NULL;
        CHECK(llmem_estimate_term(e, k, &t) == LLMEM_OK && t != NULL, "term %d", k);
        take_term(t, &s->top.term[k - 1]);
    }
    s->nranks = llmem_estimate_rank_count(e);
    s->peak_rank = llmem_estimate_peak_rank(e);
    CHECK(s->nranks >= 1 && s->nranks <= RANKS_MAX, "%zu ranks", s->nranks);
    CHECK(s->peak_rank < s->nranks, "peak rank %zu of %zu", s->peak_rank, s->nranks);
    for (size_t r = 0; r < s->nranks; r++) {
        rank_snap *rs = &s->rank[r];
        for (int k = 1; k <= 7; k++)
            CHECK(llmem_estimate_rank_get_u64(e, r, k, &rs->est[k - 1]) == LLMEM_OK, "rank get");
        for (int k = 101; k <= 109; k++)
            CHECK(llmem_estimate_rank_get_u64(e, r, k, &rs->rank[k - 101]) == LLMEM_OK,
                  "rank get %d", k);
        for (int p = 1; p <= 4; p++)
            CHECK(llmem_estimate_rank_phase_bytes(e, r, p, &rs->phase[p - 1]) == LLMEM_OK,
                  "rank phase");
        for (int k = 1; k <= 4; k++) {
            const llmem_term *t = NULL;
            CHECK(llmem_estimate_rank_term(e, r, k, &t) == LLMEM_OK && t != NULL, "rank term");
            take_term(t, &rs->term[k - 1]);
        }
    }
    uint64_t v;
    CHECK(llmem_estimate_rank_get_u64(e, s->nranks, LLMEM_EST_PEAK_ALLOCATED, &v) == LLMEM_ERANGE,
          "a rank past the last");
}

static int same_rank(const rank_snap *a, const rank_snap *b)
{
    if (memcmp(a->est, b->est, sizeof a->est) != 0 || memcmp(a->phase, b->phase, sizeof a->phase))
        return 0;
    for (int k = 0; k < 4; k++) {
        const term_snap *x = &a->term[k], *y = &b->term[k];
        if (x->at_peak != y->at_peak || x->max != y->max || x->ncomp != y->ncomp)
            return 0;
        for (size_t i = 0; i < x->ncomp; i++)
            if (x->comp[i] != y->comp[i] || strcmp(x->name[i], y->name[i]) != 0)
                return 0;
    }
    return 1;
}

static int same(const snap *a, const snap *b)
{
    if (!same_rank(&a->top, &b->top) || a->nranks != b->nranks || a->peak_rank != b->peak_rank)
        return 0;
    for (size_t r = 0; r < a->nranks; r++)
        if (!same_rank(&a->rank[r], &b->rank[r]) ||
            memcmp(a->rank[r].rank, b->rank[r].rank, sizeof a->rank[r].rank) != 0)
            return 0;
    return 1;
}

/* Invariants 1 and 2 for one rank's numbers. */
/* What a result's checks depend on. */
enum { MODE_ARTICLE = 1, MODE_ADAPTERS = 2 };

static void check_rank(const rank_snap *r, int mode)
{
    int article = mode & MODE_ARTICLE;
    uint64_t alloc = r->est[LLMEM_EST_PEAK_ALLOCATED - 1];
    uint64_t reserved = r->est[LLMEM_EST_PEAK_RESERVED - 1];
    uint64_t device = r->est[LLMEM_EST_PEAK_DEVICE - 1];
    uint64_t phase = r->est[LLMEM_EST_PEAK_PHASE - 1];
    uint64_t total = r->est[LLMEM_EST_PARAMS_TOTAL - 1];
    CHECK(alloc <= reserved && reserved <= device, "allocated %llu, reserved %llu, device %llu",
          (unsigned long long)alloc, (unsigned long long)reserved, (unsigned long long)device);
    /* LoRA's adapters are trainable parameters the model's count leaves out:
     * a tiny model with a large rank has more of them than weights. */
    CHECK((mode & MODE_ADAPTERS) || r->est[LLMEM_EST_PARAMS_TRAINABLE - 1] <= total,
          "trainable above total");
    CHECK(r->est[LLMEM_EST_PARAMS_ACTIVE - 1] <= total, "active above total");
    uint64_t sum = 0;
    for (int k = 0; k < 4; k++) {
        const term_snap *t = &r->term[k];
        uint64_t parts = 0;
        CHECK(t->at_peak <= alloc, "term %d: %llu at the peak, above the peak %llu", k + 1,
              (unsigned long long)t->at_peak, (unsigned long long)alloc);
        CHECK(t->max >= t->at_peak, "term %d: max %llu below its %llu at the peak", k + 1,
              (unsigned long long)t->max, (unsigned long long)t->at_peak);
        CHECK(t->max <= alloc, "term %d: max %llu above the peak %llu", k + 1,
              (unsigned long long)t->max, (unsigned long long)alloc);
        for (size_t i = 0; i < t->ncomp; i++) {
            CHECK(t->comp[i] <= t->at_peak - parts, "term %d: components exceed it", k + 1);
            parts += t->comp[i];
        }
        CHECK(parts == t->at_peak, "term %d: components %llu, term %llu", k + 1,
              (unsigned long long)parts, (unsigned long long)t->at_peak);
        sum += t->at_peak; /* each is at most alloc: four cannot wrap */
    }
    CHECK(sum == alloc, "terms %llu, allocated %llu", (unsigned long long)sum,
          (unsigned long long)alloc);
    if (article) {
        CHECK(phase == 0, "article: peak phase %llu", (unsigned long long)phase);
        for (int p = 0; p < 4; p++)
            CHECK(r->phase[p] == 0, "article: phase %d holds bytes", p + 1);
        return;
    }
    CHECK(phase >= 1 && phase <= 4, "peak phase %llu", (unsigned long long)phase);
    CHECK(llmem_phase_name((int)phase) != NULL, "peak phase without a name");
    for (int p = 0; p < 4; p++)
        CHECK(r->phase[p] <= alloc, "phase %d: %llu above the peak %llu", p + 1,
              (unsigned long long)r->phase[p], (unsigned long long)alloc);
    CHECK(r->phase[phase - 1] == alloc, "the peak phase %llu holds %llu, the peak is %llu",
          (unsigned long long)phase, (unsigned long long)r->phase[phase - 1],
          (unsigned long long)alloc);
}

static void check_result(const snap *s, int mode)
{
    /* The classes cover the stages in order, each once; a class's layers
     * are whole model chunks. */
    uint64_t next = 0;
    for (size_t r = 0; r < s->nranks; r++) {
        const uint64_t *k = s->rank[r].rank; /* index: key - 101 */
        uint64_t stages = k[LLMEM_RANK_STAGES - 101], chunks = k[LLMEM_RANK_CHUNKS - 101];
        CHECK(k[LLMEM_RANK_STAGE - 101] == next && stages >= 1,
              "rank %zu: stage %llu (%llu stages) after %llu", r,
              (unsigned long long)k[LLMEM_RANK_STAGE - 101], (unsigned long long)stages,
              (unsigned long long)next);
        CHECK(chunks >= 1 && k[LLMEM_RANK_LAYERS - 101] % chunks == 0,
              "rank %zu: %llu layers in %llu chunks", r,
              (unsigned long long)k[LLMEM_RANK_LAYERS - 101], (unsigned long long)chunks);
        CHECK(k[LLMEM_RANK_GPUS - 101] % stages == 0, "rank %zu: %llu GPUs over %llu stages",
              r, (unsigned long long)k[LLMEM_RANK_GPUS - 101], (unsigned long long)stages);
        next += stages;
    }
    for (size_t r = 0; r < s->nranks; r++) {
        check_rank(&s->rank[r], mode);
        CHECK(s->rank[r].est[LLMEM_EST_PEAK_DEVICE - 1] <=
                  s->rank[s->peak_rank].est[LLMEM_EST_PEAK_DEVICE - 1],
              "rank %zu above the most loaded rank", r);
    }
    CHECK(same_rank(&s->top, &s->rank[s->peak_rank]),
          "the getters do not answer for the most loaded rank");
}

static int mode_of(const inputs *in)
{
    int64_t formula = 0, method = 0;
    llmem_train_get_int(in->t, LLMEM_TRAIN_FORMULA, &formula);
    llmem_train_get_int(in->t, LLMEM_TRAIN_METHOD, &method);
    return (formula == LLMEM_FORMULA_ARTICLE ? MODE_ARTICLE : 0) |
           (method == LLMEM_METHOD_LORA || method == LLMEM_METHOD_QLORA ? MODE_ADAPTERS : 0);
}

/* Run and check: 1 with a result (in *s), 0 refused (documented). */
static int run(llmem_ctx *ctx, llmem_estimate *e, const inputs *in, snap *s)
{
    int rc = llmem_estimate_run_parallel(e, in->m, in->t, in->l);
    check_status(ctx, rc, "estimate");
    if (rc != LLMEM_OK)
        return 0;
    take(e, s);
    check_result(s, mode_of(in));
    int64_t pp = 1;
    uint64_t stages = 0;
    if (in->l != NULL)
        llmem_parallel_get_int(in->l, LLMEM_PARALLEL_PP, &pp);
    for (size_t r = 0; r < s->nranks; r++)
        stages += s->rank[r].rank[LLMEM_RANK_STAGES - 101];
    CHECK(stages == (uint64_t)pp, "rank classes stand for %llu stages of %lld",
          (unsigned long long)stages, (long long)pp);
    return 1;
}

/* The timeline of every rank: points of known phases and parts whose terms
 * add up to at most the peak, reaching it at the point it names (unless the
 * step had more points than the room and lost the later ones). */
static void check_timeline(const llmem_estimate *e, const snap *s, const job *j, int mode)
{
    for (size_t r = 0; r < s->nranks; r++) {
        size_t n = llmem_estimate_timeline_count(e, r), at = llmem_estimate_timeline_peak(e, r);
        uint64_t peak = s->rank[r].est[LLMEM_EST_PEAK_ALLOCATED - 1], best = 0, at_bytes = 0;
        CHECK(n <= j->timeline, "timeline: %zu points in room for %zu", n, j->timeline);
        if (mode & MODE_ARTICLE) {
            CHECK(n == 0, "timeline: %zu points for the article's formula", n);
            continue;
        }
        CHECK(n > 0, "timeline: no point");
        for (size_t i = 0; i < n; i++) {
            uint64_t t[4];
            int phase = 0;
            const char *part = NULL;
            int64_t layer = -2;
            CHECK(llmem_estimate_timeline_point(e, r, i, &phase, &part, &layer, &t[0], &t[1], &t[2],
                                                &t[3]) == LLMEM_OK,
                  "timeline point");
            CHECK(phase >= LLMEM_PHASE_FORWARD && phase <= LLMEM_PHASE_OPTIMIZER && part != NULL &&
                      layer >= -1,
                  "timeline point %zu: phase %d, layer %lld", i, phase, (long long)layer);
            uint64_t sum = 0;
            for (int k = 0; k < 4; k++) {
                CHECK(t[k] <= peak, "timeline point %zu: term %d %llu above the peak %llu", i,
                      k + 1, (unsigned long long)t[k], (unsigned long long)peak);
                sum += t[k];
            }
            CHECK(sum <= peak, "timeline point %zu (%s, layer %lld): %llu above the peak %llu", i,
                  part, (long long)layer, (unsigned long long)sum, (unsigned long long)peak);
            best = sum > best ? sum : best;
            if (i == at)
                at_bytes = sum;
        }
        CHECK(llmem_estimate_timeline_point(e, r, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
                  LLMEM_ERANGE,
              "timeline: a point past the last");
        if (n < j->timeline) {
            CHECK(at < n && at_bytes == peak, "timeline: the peak point %zu holds %llu, not %llu",
                  at, (unsigned long long)at_bytes, (unsigned long long)peak);
            CHECK(best == peak, "timeline: largest point %llu, peak %llu",
                  (unsigned long long)best, (unsigned long long)peak);
        }
    }
}

/* ---- Invariant 3: monotone in batch and seq ---------------------------- */

/* Whether a refusal of batch or seq + 1, where the value itself ran, is one
 * the documentation leads to: 64-bit overflow, a learned position table's
 * length, or a split the new value does not divide (sequence parallelism:
 * seq / cp over tp; context parallelism: seq over 2 x cp). */
static int refusal_expected(llmem_ctx *ctx, int rc, int key)
{
    int object = 0, field = 0;
    if (rc == LLMEM_EOVERFLOW)
        return 1;
    if (rc != LLMEM_EINCONSISTENT || llmem_ctx_error_field(ctx, &object, &field) != LLMEM_OK)
        return 0;
    if (object == LLMEM_OBJECT_PARALLEL)
        return field == LLMEM_PARALLEL_SP || (key == LLMEM_TRAIN_SEQ && field == LLMEM_PARALLEL_CP);
    return key == LLMEM_TRAIN_SEQ && object == LLMEM_OBJECT_TRAIN && field == LLMEM_TRAIN_SEQ;
}

static void check_monotone(llmem_ctx *ctx, llmem_estimate *e, const inputs *in, const snap *base,
                           int key)
{
    int64_t v = 0, max = 0, attention = 0, step = 1;
    snap grown;
    llmem_train_get_int(in->t, key, &v);
    llmem_train_field_info(key, NULL, NULL, &max, NULL);
    /* SDPA's memory-efficient kernel pads a mask's last dimension to a
     * multiple of 8, copying it only when it is not one: seq 8k - 1 holds a
     * padded copy that seq 8k does not, on the GPU as here. Seq + 8 keeps the
     * alignment. */
    llmem_train_get_int(in->t, LLMEM_TRAIN_ATTENTION, &attention);
    if (key == LLMEM_TRAIN_SEQ && attention == LLMEM_ATTENTION_SDPA)
        step = 8;
    if (v > max - step)
        return;
    CHECK(llmem_train_set_int(in->t, key, v + step) == LLMEM_OK, "set %d", key);
    int rc = llmem_estimate_run_parallel(e, in->m, in->t, in->l);
    check_status(ctx, rc, "estimate + 1");
    if (rc == LLMEM_OK) {
        take(e, &grown);
        check_result(&grown, mode_of(in));
        CHECK(grown.nranks == base->nranks, "ranks changed with key %d", key);
        for (size_t r = 0; r < base->nranks; r++)
            CHECK(grown.rank[r].est[LLMEM_EST_PEAK_ALLOCATED - 1] >=
                      base->rank[r].est[LLMEM_EST_PEAK_ALLOCATED - 1],
                  "rank %zu: the peak falls from %llu to %llu when %s grows from %lld", r,
                  (unsigned long long)base->rank[r].est[LLMEM_EST_PEAK_ALLOCATED - 1],
                  (unsigned long long)grown.rank[r].est[LLMEM_EST_PEAK_ALLOCATED - 1],
                  key == LLMEM_TRAIN_BATCH ? "batch" : "seq", (long long)v);
    } else {
        CHECK(refusal_expected(ctx, rc, key), "%s %lld runs but + %lld is refused: %s",
              key == LLMEM_TRAIN_BATCH ? "batch" : "seq", (long long)v, (long long)step,
              llmem_ctx_error(ctx));
    }
    llmem_train_set_int(in->t, key, v);
}

/* ---- Invariant 9: a sweep is its points' runs -------------------------- */

static void check_sweep(llmem_ctx *ctx, llmem_estimate *e, llmem_estimate *f, const inputs *in,
                        const job *j)
{
    int64_t b = 1, s = 1, bmax = 1, smax = 1;
    llmem_train_get_int(in->t, LLMEM_TRAIN_BATCH, &b);
    llmem_train_get_int(in->t, LLMEM_TRAIN_SEQ, &s);
    llmem_train_field_info(LLMEM_TRAIN_BATCH, NULL, NULL, &bmax, NULL);
    llmem_train_field_info(LLMEM_TRAIN_SEQ, NULL, NULL, &smax, NULL);
    /* a 3 x 3 grid from the job's point (swept three times, so that a
     * handle compiles it and answers the last sweep's points alone), then
     * its neighbours and the batch 1 and seq 1 regimes */
    int64_t b1 = b < bmax ? b + 1 : b, b2 = b1 < bmax ? b1 + 1 : b1;
    int64_t s1 = s < smax ? s + 1 : s, s2 = s1 < smax ? s1 + 1 : s1;
    const int64_t batch[] = { b, b1, b2, b, b1, b2, b, b1, b2, b, b1, 1, b, 2, b };
    const int64_t seq[] = { s, s, s, s1, s1, s1, s2, s2, s2, s, s, s, 1, s1, s > 1 ? s - 1 : s };
    uint64_t peak[N(batch)];
    int level = LLMEM_LEVEL_ALLOCATED + (int)(j->variant % 3);
    static const int level_key[] = { LLMEM_EST_PEAK_ALLOCATED, LLMEM_EST_PEAK_RESERVED,
                                     LLMEM_EST_PEAK_DEVICE };
    int rc = LLMEM_OK;
    for (int pass = 0; pass < 3; pass++)
        rc = llmem_estimate_sweep(e, in->m, in->t, in->l, batch, seq, N(batch), level, peak);
    check_status(ctx, rc, "sweep");
    int64_t after_b = 0, after_s = 0;
    llmem_train_get_int(in->t, LLMEM_TRAIN_BATCH, &after_b);
    llmem_train_get_int(in->t, LLMEM_TRAIN_SEQ, &after_s);
    CHECK(after_b == b && after_s == s, "a sweep changed the train");
    char prefix[96] = "";
    if (rc != LLMEM_OK) /* the message names the point before the reference runs replace it */
        snprintf(prefix, sizeof prefix, "%.95s", llmem_ctx_error(ctx));
    size_t i = 0;
    for (; i < N(batch); i++) {
        uint64_t own = 0;
        llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, batch[i]);
        llmem_train_set_int(in->t, LLMEM_TRAIN_SEQ, seq[i]);
        int rci = llmem_estimate_run_parallel(f, in->m, in->t, in->l);
        check_status(ctx, rci, "estimate at a sweep point");
        if (rci != LLMEM_OK) {
            char want[64];
            snprintf(want, sizeof want, "sweep point %zu (", i);
            CHECK(rc == rci && strncmp(prefix, want, strlen(want)) == 0,
                  "point %zu (batch %lld, seq %lld) fails alone (%d) but the sweep gave %d: %s",
                  i, (long long)batch[i], (long long)seq[i], rci, rc, prefix);
            break;
        }
        llmem_estimate_get_u64(f, level_key[level - 1], &own);
        CHECK(rc == LLMEM_OK || i + 1 < N(batch), "the sweep failed where every point runs");
        CHECK(peak[i] == own, "sweep point %zu (batch %lld, seq %lld): %llu, its run %llu", i,
              (long long)batch[i], (long long)seq[i], (unsigned long long)peak[i],
              (unsigned long long)own);
    }
    CHECK(i < N(batch) || rc == LLMEM_OK, "every point runs alone but the sweep failed: %s",
          prefix);
    llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, b);
    llmem_train_set_int(in->t, LLMEM_TRAIN_SEQ, s);
}

/* ---- Invariant 5: the largest batch or sequence ------------------------ */

static uint64_t level_bytes(const snap *s, int level)
{
    return s->top.est[(level == LLMEM_LEVEL_ALLOCATED  ? LLMEM_EST_PEAK_ALLOCATED
                       : level == LLMEM_LEVEL_RESERVED ? LLMEM_EST_PEAK_RESERVED
                                                       : LLMEM_EST_PEAK_DEVICE) -
                      1];
}

/* A capacity around a measured peak: a fraction to a few times it. */
static uint64_t capacity_near(uint64_t peak, unsigned b)
{
    if (b >= 240)
        return UINT64_C(1) << (4 * (b - 240)); /* anything: 1 B to 1 EiB */
    uint64_t scaled = peak / 16 * (1 + b % 64);
    return scaled + (b & 1);
}

static uint64_t gcd_of(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The values of batch or seq a layout splits are multiples of this step, as
 * llmem_estimate_max() documents: 2 x cp for seq under context parallelism,
 * cp x tp under sequence parallelism (a rank's seq / cp over tp); any batch. */
static int64_t step_of(const llmem_parallel *l, int key)
{
    int64_t cp = 1, tp = 1, sp = 0;
    uint64_t step = 1;
    if (l == NULL || key != LLMEM_TRAIN_SEQ)
        return 1;
    llmem_parallel_get_int(l, LLMEM_PARALLEL_CP, &cp);
    llmem_parallel_get_int(l, LLMEM_PARALLEL_TP, &tp);
    llmem_parallel_get_int(l, LLMEM_PARALLEL_SP, &sp);
    if (cp > 1)
        step = 2 * (uint64_t)cp;
    if (sp && tp > 1) {
        uint64_t unit = (uint64_t)cp * (uint64_t)tp;
        step = step / gcd_of(step, unit) * unit;
    }
    return (int64_t)step;
}

/* A value beyond what fits: refused only as too large (64-bit overflow, or
 * the field itself beyond the model: a sequence past learned positions, or
 * past what the estimate models: Gemma-2's windows under sdpa). */
static int refused_as_too_large(llmem_ctx *ctx, int rc, int key)
{
    int object = 0, field = 0;
    if (rc == LLMEM_EOVERFLOW)
        return 1;
    if ((rc != LLMEM_EINCONSISTENT && rc != LLMEM_ENOTSUP) ||
        llmem_ctx_error_field(ctx, &object, &field) != LLMEM_OK)
        return 0;
    /* A value of the field itself, or, for seq, the pipeline's refusal of a
     * sliding window on alternate layers once seq reaches it (it names pp:
     * lib/estimate/max.c, beyond_modelled), which every longer seq meets. */
    return (object == LLMEM_OBJECT_TRAIN && field == key) ||
           (rc == LLMEM_ENOTSUP && key == LLMEM_TRAIN_SEQ && object == LLMEM_OBJECT_PARALLEL &&
            field == LLMEM_PARALLEL_PP);
}

static void check_max(llmem_ctx *ctx, llmem_estimate *e, const job *j, const inputs *in,
                      const snap *base)
{
    int key = j->aux[0] & 1 ? LLMEM_TRAIN_SEQ : LLMEM_TRAIN_BATCH;
    int level = LLMEM_LEVEL_ALLOCATED + (int)(j->aux[0] >> 1) % 3;
    uint64_t capacity = capacity_near(level_bytes(base, level), j->aux[1]);
    int64_t out = -1, saved = 0, max = 0, step = step_of(in->l, key);
    snap s, left;
    int rc = llmem_estimate_max(e, in->m, in->t, in->l, key, level, capacity, &out);
    check_status(ctx, rc, "max");
    /* The job runs at its own value: the search has something to answer, or
     * a floor when the next value is beyond the estimate's range or what it
     * models. */
    CHECK(rc == LLMEM_OK || ((rc == LLMEM_EOVERFLOW || rc == LLMEM_ENOTSUP) && out > 0),
          "max: refused, although the job runs: %s", llmem_ctx_error(ctx));
    int floor_only = rc == LLMEM_EOVERFLOW || rc == LLMEM_ENOTSUP ? rc : 0;
    llmem_train_field_info(key, NULL, NULL, &max, NULL);
    llmem_train_get_int(in->t, key, &saved);
    CHECK(out >= 0 && out <= max && out % step == 0, "max: %lld outside [0, %lld] or not of %lld",
          (long long)out, (long long)max, (long long)step);
    take(e, &left);
    /* The answer fits; the next value the layout splits does not. The
     * estimate is left with the answer's result (or the smallest value's). */
    CHECK(llmem_train_set_int(in->t, key, out > 0 ? out : step) == LLMEM_OK, "set");
    if (out > 0) {
        CHECK(run(ctx, e, in, &s), "max: its answer %lld does not run", (long long)out);
        CHECK(same(&left, &s), "max: the estimate is not left with its answer's result");
        CHECK(level_bytes(&s, level) <= capacity, "max: %lld does not fit", (long long)out);
    }
    int64_t next = out + step;
    if (next <= max) {
        CHECK(llmem_train_set_int(in->t, key, next) == LLMEM_OK, "set");
        rc = llmem_estimate_run_parallel(e, in->m, in->t, in->l);
        check_status(ctx, rc, "max + step");
        CHECK(!floor_only || rc == floor_only, "max: a floor %lld, but %lld runs",
              (long long)out, (long long)next);
        CHECK(floor_only || (rc != LLMEM_EOVERFLOW && rc != LLMEM_ENOTSUP),
              "max: %lld is the answer, but %lld is beyond the range: a floor", (long long)out,
              (long long)next);
        if (rc == LLMEM_OK) {
            take(e, &s);
            CHECK(level_bytes(&s, level) > capacity,
                  "max: %lld, but %lld fits too (capacity %llu, level %d)", (long long)out,
                  (long long)next, (unsigned long long)capacity, level);
            if (out == 0)
                CHECK(same(&left, &s), "max: the estimate is not left with the smallest's result");
        } else {
            CHECK(refused_as_too_large(ctx, rc, key), "max: %lld, and %lld is refused: %s",
                  (long long)out, (long long)next, llmem_ctx_error(ctx));
        }
    }
    llmem_train_set_int(in->t, key, saved);
}

/* ---- Invariant 6: the planner ------------------------------------------ */

static void check_plan(llmem_ctx *ctx, llmem_estimate *e, const job *j, const inputs *in,
                       uint64_t peak_device)
{
    static const int gpus[] = { 1, 2, 3, 4, 6, 8 };
    llmem_plan *p;
    llmem_parallel *l;
    CHECK(llmem_plan_new(ctx, &p) == LLMEM_OK, "plan_new");
    CHECK(llmem_parallel_new(ctx, &l) == LLMEM_OK, "parallel_new");
    uint64_t bytes = capacity_near(peak_device, j->aux[2]);
    int64_t max_mb = 1 + (int64_t)(j->aux[4] % 8), margin = (int64_t)(j->aux[5] % 4) * 50;
    int64_t global = j->aux[6] < 192 ? 0 : (int64_t)(j->aux[6] % 64);
    if (bytes > (uint64_t)9.0e18)
        bytes = (uint64_t)9.0e18;
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_GPUS, gpus[j->aux[3] % N(gpus)]) == LLMEM_OK, "gpus");
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_GPU_BYTES, (int64_t)bytes) == LLMEM_OK, "gpu-bytes");
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_MAX_MICRO_BATCH, max_mb) == LLMEM_OK, "max mb");
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_MARGIN_PERMILLE, margin) == LLMEM_OK, "margin");
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_GLOBAL_BATCH, global) == LLMEM_OK, "global");
    CHECK(llmem_plan_set_int(p, LLMEM_PLAN_OFFLOAD, (int64_t)(j->aux[3] >> 7)) == LLMEM_OK,
          "offload");
    /* The planner solves the micro-batch: the setup's is 1 (another is
     * refused, as grad-accum with a global batch is). */
    int64_t saved_batch = 0, saved_ckpt = 0, saved_accum = 1;
    llmem_train_get_int(in->t, LLMEM_TRAIN_BATCH, &saved_batch);
    llmem_train_get_int(in->t, LLMEM_TRAIN_GRAD_CKPT, &saved_ckpt);
    llmem_train_get_int(in->t, LLMEM_TRAIN_GRAD_ACCUM, &saved_accum);
    llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, 1);
    if (global > 0)
        llmem_train_set_int(in->t, LLMEM_TRAIN_GRAD_ACCUM, 1);
    int rc = llmem_plan_run(p, in->m, in->t);
    check_status(ctx, rc, "plan");
    if (rc != LLMEM_OK)
        goto done;
    uint64_t keep = (uint64_t)(1000 - margin); /* floor(bytes x keep / 1000), exactly */
    uint64_t capacity = bytes / 1000 * keep + bytes % 1000 * keep / 1000;
    for (size_t i = 0; i < llmem_plan_rejected_count(p); i++) {
        const char *reason = NULL, *example = NULL;
        uint64_t n = 0;
        CHECK(llmem_plan_rejected(p, i, &reason, &n, &example) == LLMEM_OK, "rejected");
        CHECK(reason != NULL && n > 0 && example != NULL, "rejection %zu", i);
        CHECK(strstr(example, "please report") == NULL && strstr(example, "unaccounted") == NULL,
              "plan: internal error: %s", example);
    }
    for (size_t i = 0; i < llmem_plan_result_count(p); i++) {
        uint64_t b = 0, ckpt = 0, peak = 0, headroom = 0, device = 0;
        CHECK(llmem_plan_result_get_u64(p, i, LLMEM_PLAN_MICRO_BATCH, &b) == LLMEM_OK, "mb");
        CHECK(llmem_plan_result_get_u64(p, i, LLMEM_PLAN_GRAD_CKPT, &ckpt) == LLMEM_OK, "ckpt");
        CHECK(llmem_plan_result_get_u64(p, i, LLMEM_PLAN_PEAK_DEVICE, &peak) == LLMEM_OK, "peak");
        CHECK(llmem_plan_result_get_u64(p, i, LLMEM_PLAN_HEADROOM, &headroom) == LLMEM_OK, "hr");
        CHECK(llmem_plan_result_layout(p, i, l) == LLMEM_OK, "layout: %s", llmem_ctx_error(ctx));
        CHECK(b >= 1 && b <= (uint64_t)max_mb, "plan: micro-batch %llu", (unsigned long long)b);
        CHECK(peak <= capacity && headroom == capacity - peak,
              "plan: peak %llu, headroom %llu, capacity %llu", (unsigned long long)peak,
              (unsigned long long)headroom, (unsigned long long)capacity);
        CHECK(llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, (int64_t)b) == LLMEM_OK, "batch");
        CHECK(llmem_train_set_int(in->t, LLMEM_TRAIN_GRAD_CKPT, (int64_t)ckpt) == LLMEM_OK, "ckpt");
        rc = llmem_estimate_run_parallel(e, in->m, in->t, l);
        CHECK(rc == LLMEM_OK, "plan: result %zu does not re-estimate: %s", i, llmem_ctx_error(ctx));
        llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &device);
        CHECK(device == peak, "plan: result %zu re-estimates to %llu, not %llu", i,
              (unsigned long long)device, (unsigned long long)peak);
        /* The next micro-batch the layout splits does not fit (with a
         * global batch, the candidates are its divisors: not checked). */
        uint64_t next = b + (uint64_t)step_of(l, LLMEM_TRAIN_BATCH);
        CHECK(b % (next - b) == 0, "plan: micro-batch %llu does not split",
              (unsigned long long)b);
        if (global == 0 && next <= (uint64_t)max_mb) {
            CHECK(llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, (int64_t)next) == LLMEM_OK, "b");
            rc = llmem_estimate_run_parallel(e, in->m, in->t, l);
            check_status(ctx, rc, "plan + step");
            if (rc == LLMEM_OK) {
                llmem_estimate_get_u64(e, LLMEM_EST_PEAK_DEVICE, &device);
                CHECK(device > capacity, "plan: result %zu at micro-batch %llu, but %llu fits",
                      i, (unsigned long long)b, (unsigned long long)next);
            } else {
                CHECK(refused_as_too_large(ctx, rc, LLMEM_TRAIN_BATCH),
                      "plan: micro-batch %llu runs, %llu is refused: %s", (unsigned long long)b,
                      (unsigned long long)next, llmem_ctx_error(ctx));
            }
        }
    }
done:
    llmem_train_set_int(in->t, LLMEM_TRAIN_BATCH, saved_batch);
    llmem_train_set_int(in->t, LLMEM_TRAIN_GRAD_CKPT, saved_ckpt);
    llmem_train_set_int(in->t, LLMEM_TRAIN_GRAD_ACCUM, saved_accum);
    llmem_parallel_free(l);
    llmem_plan_free(p);
}

/* ---- Invariant 8: fitting and packing the estimate --------------------- */

/* What permille kept free leaves of usable bytes, as fit and pack document
 * it (their budget): usable - ceil(usable x margin / 1000) (usable below
 * 2^54: the product fits in 64 bits). */
static uint64_t budget_of(uint64_t usable, uint64_t permille)
{
    return usable - (usable * permille + 999) / 1000;
}

/* Whether usable bytes hold need with permille kept free: the budget does. */
static int holds(uint64_t usable, uint64_t need, uint64_t permille)
{
    return budget_of(usable, permille) >= need;
}

static uint64_t fit_u64(const llmem_fit *f, size_t option, int key)
{
    uint64_t v = 0;
    CHECK(llmem_fit_get_u64(f, option, key, &v) == LLMEM_OK, "fit: option %zu key %d", option, key);
    return v;
}

static uint64_t mig_u64(size_t gpu, size_t profile, int key)
{
    uint64_t v = 0;
    CHECK(llmem_mig_profile_get_u64(gpu, profile, key, &v) == LLMEM_OK, "mig %zu/%zu key %d", gpu,
          profile, key);
    return v;
}

static uint64_t gpu_u64(size_t gpu, int key)
{
    uint64_t v = 0;
    CHECK(llmem_gpu_get_u64(gpu, key, &v) == LLMEM_OK, "gpu %zu key %d", gpu, key);
    return v;
}

/* Whether MIG profile b of gpu is variant v's plain profile (the one whose
 * name v's extends: "1g.10gb" of "1g.10gb+me"), or v itself. */
static int same_base(size_t gpu, size_t v, size_t b)
{
    const char *vn = llmem_mig_profile_name(gpu, v), *bn = llmem_mig_profile_name(gpu, b);
    size_t n = strlen(bn);
    return v == b || (strncmp(vn, bn, n) == 0 && (vn[n] == '+' || vn[n] == '-'));
}

/* The fit of check_fit again with one instance running (a profile drawn, at
 * its first start): each plain option can be created at exactly the starts
 * where the placement table holds it next to that one (its starts, no shared
 * slot, its maximum count with the running one if it is that profile or its
 * variant, the compute slices), the whole GPU nowhere; fits is the memory's
 * verdict and that. Then cleared: the options of before. */
static void check_fit_running(llmem_ctx *ctx, llmem_fit *f, const job *j, size_t gpu,
                              uint64_t bytes, uint64_t margin)
{
    uint64_t profiles = gpu_u64(gpu, LLMEM_GPU_MIG_PROFILES), grid, compute;
    if (profiles == 0)
        return;
    grid = gpu_u64(gpu, LLMEM_GPU_MIG_SLOTS);
    compute = gpu_u64(gpu, LLMEM_GPU_MIG_COMPUTE_SLICES);
    size_t r = j->aux[2] % profiles, start = 0;
    uint64_t rstarts = mig_u64(gpu, r, LLMEM_MIG_STARTS), rslots = mig_u64(gpu, r, LLMEM_MIG_SLOTS);
    while (!(rstarts >> start & 1))
        start++;
    CHECK(llmem_fit_add_running(f, r, start) == LLMEM_OK, "fit: add_running");
    int rc = llmem_fit_run(f, gpu, bytes, LLMEM_LEVEL_DEVICE);
    CHECK(rc == LLMEM_OK, "fit: %s@%zu running: %s", llmem_mig_profile_name(gpu, r), start,
          llmem_ctx_error(ctx));
    for (size_t i = 0; rc == LLMEM_OK && i < llmem_fit_count(f); i++) {
        size_t p = (size_t)fit_u64(f, i, LLMEM_FIT_PROFILE);
        uint64_t want = 0;
        if (!fit_u64(f, i, LLMEM_FIT_WHOLE_GPU)) {
            uint64_t slots = mig_u64(gpu, p, LLMEM_MIG_SLOTS);
            unsigned held = 1 + (unsigned)same_base(gpu, r, p);
            for (uint64_t s = 0; s < grid; s++)
                if ((mig_u64(gpu, p, LLMEM_MIG_STARTS) >> s & 1) && s + slots <= grid &&
                    (s + slots <= start || start + rslots <= s) &&
                    held <= mig_u64(gpu, p, LLMEM_MIG_MAX_COUNT) &&
                    mig_u64(gpu, p, LLMEM_MIG_COMPUTE_SLICES) +
                            mig_u64(gpu, r, LLMEM_MIG_COMPUTE_SLICES) <=
                        compute)
                    want |= UINT64_C(1) << s;
        }
        uint64_t usable = fit_u64(f, i, LLMEM_FIT_USABLE_BYTES);
        CHECK(fit_u64(f, i, LLMEM_FIT_STARTS) == want, "fit: option %zu starts %llx, want %llx",
              i, (unsigned long long)fit_u64(f, i, LLMEM_FIT_STARTS), (unsigned long long)want);
        CHECK(fit_u64(f, i, LLMEM_FIT_PLACEABLE) == (want != 0), "fit: option %zu placeable", i);
        CHECK(want ? fit_u64(f, i, LLMEM_FIT_START) < 64 &&
                         (want >> fit_u64(f, i, LLMEM_FIT_START) & 1)
                   : fit_u64(f, i, LLMEM_FIT_START) == UINT64_MAX,
              "fit: option %zu start", i);
        CHECK(fit_u64(f, i, LLMEM_FIT_FITS) ==
                  (uint64_t)(want != 0 && budget_of(usable, margin) >= bytes &&
                             fit_u64(f, i, LLMEM_FIT_SHORTFALL_BYTES) != UINT64_MAX),
              "fit: option %zu fits next to a running instance", i);
    }
    CHECK(llmem_fit_clear_running(f) == LLMEM_OK, "fit: clear_running");
    CHECK(llmem_fit_run(f, gpu, bytes, LLMEM_LEVEL_DEVICE) == LLMEM_OK, "fit: cleared");
    for (size_t i = 0; i < llmem_fit_count(f); i++)
        CHECK(fit_u64(f, i, LLMEM_FIT_PLACEABLE) == 1, "fit: option %zu on an empty GPU", i);
}

/* The estimate's device peak fitted to a GPU of the catalog: every plain
 * profile and the whole GPU, by usable bytes; each option's figures as
 * documented; the best is the first that holds the job. */
static void check_fit(llmem_ctx *ctx, const job *j, uint64_t bytes)
{
    size_t gpu = (j->aux[7] >> 1) % llmem_gpu_count(), plain = 1, first = SIZE_MAX, best = 0;
    uint64_t margin = (uint64_t)(j->aux[5] % 4) * 50, previous = 0;
    llmem_fit *f;
    CHECK(llmem_fit_new(ctx, &f) == LLMEM_OK, "fit_new");
    CHECK(llmem_fit_set_int(f, LLMEM_FIT_MARGIN_PERMILLE, (int64_t)margin) == LLMEM_OK, "margin");
    int rc = llmem_fit_run(f, gpu, bytes, LLMEM_LEVEL_DEVICE);
    check_status(ctx, rc, "fit");
    if (rc != LLMEM_OK) {
        CHECK(0, "fit: %llu bytes refused: %s", (unsigned long long)bytes, llmem_ctx_error(ctx));
        llmem_fit_free(f);
        return;
    }
    /* The least usable bytes that hold the need, ceil(1000 bytes / (1000 -
     * margin)); UINT64_MAX (saturated) beyond 64 bits, where nothing holds. */
    uint64_t keep = 1000 - margin, want = UINT64_MAX;
    uint64_t rest = (bytes % keep * 1000 + keep - 1) / keep;
    int exact = bytes / keep <= UINT64_MAX / 1000 && bytes / keep * 1000 <= UINT64_MAX - rest;
    if (exact)
        want = bytes / keep * 1000 + rest;
    for (size_t p = 0; p < gpu_u64(gpu, LLMEM_GPU_MIG_PROFILES); p++)
        plain += mig_u64(gpu, p, LLMEM_MIG_VARIANT) == LLMEM_MIG_PLAIN;
    CHECK(llmem_fit_count(f) == plain, "fit: %zu options, %zu plain profiles and the GPU",
          llmem_fit_count(f), plain);
    for (size_t i = 0; i < llmem_fit_count(f); i++) {
        uint64_t usable = fit_u64(f, i, LLMEM_FIT_USABLE_BYTES), fits = fit_u64(f, i, LLMEM_FIT_FITS);
        uint64_t required = fit_u64(f, i, LLMEM_FIT_REQUIRED_BYTES);
        /* Profiles by usable bytes, then the whole GPU, last whatever its
         * bytes (the H100's 7g.80gb figure is above its whole GPU's). */
        int whole = fit_u64(f, i, LLMEM_FIT_WHOLE_GPU) != 0;
        CHECK(whole ? i + 1 == llmem_fit_count(f) : usable >= previous,
              "fit: option %zu out of order", i);
        CHECK(fit_u64(f, i, LLMEM_FIT_NEED_BYTES) == bytes, "fit: need");
        CHECK(fits == (uint64_t)(exact && holds(usable, bytes, margin)),
              "fit: option %zu fits %llu", i, (unsigned long long)fits);
        CHECK(required == want, "fit: required %llu for %llu", (unsigned long long)required,
              (unsigned long long)bytes);
        /* Headroom below the margin's line, as the estimate's and the
         * planner's: budget - need where it fits (no compute minimum here). */
        uint64_t budget = fit_u64(f, i, LLMEM_FIT_BUDGET_BYTES);
        CHECK(budget == budget_of(usable, margin), "fit: budget %llu of %llu usable",
              (unsigned long long)budget, (unsigned long long)usable);
        CHECK(fits == (uint64_t)(exact && budget >= bytes), "fit: fits, budget and need disagree");
        CHECK(fit_u64(f, i, LLMEM_FIT_HEADROOM_BYTES) == (fits ? budget - bytes : 0),
              "fit: headroom");
        CHECK(fit_u64(f, i, LLMEM_FIT_SHORTFALL_BYTES) ==
                  (!exact ? UINT64_MAX : fits ? 0 : required - usable),
              "fit: shortfall");
        CHECK(llmem_fit_name(f, i) != NULL, "fit: option %zu has no name", i);
        if (fits && first == SIZE_MAX)
            first = i;
        previous = usable;
    }
    rc = llmem_fit_best(f, &best);
    CHECK(first == SIZE_MAX ? rc == LLMEM_ENOTFOUND : rc == LLMEM_OK && best == first,
          "fit: best %zu (status %d), first holding %zu", best, rc, first);
    check_fit_running(ctx, f, j, gpu, bytes, margin);
    llmem_fit_free(f);
}

typedef struct pack_place {
    uint64_t status, gpu, profile, start;
} pack_place;

/* The estimate's peak and jobs scaled from it (one to six, with minimum
 * compute slices) packed onto one or two GPU types: every placed job holds
 * with the margin in a valid MIG layout (placements the profile allows, no
 * overlap, per-profile counts and compute slices within the GPU's) or alone
 * on a whole GPU; the bound is at most the GPUs used; a second run gives the
 * same layout. */
static void check_pack(llmem_ctx *ctx, const job *j, uint64_t bytes)
{
    size_t types[2] = { (j->aux[7] >> 1) % llmem_gpu_count(), j->aux[6] % llmem_gpu_count() };
    size_t ntypes = 1 + (j->aux[6] >> 7), njobs = 1 + j->aux[4] % 6;
    uint64_t margin = (uint64_t)(j->aux[5] % 4) * 50, need[6], used = 0, again = 0;
    int64_t min_compute[6];
    pack_place first[6];
    llmem_pack *p;
    CHECK(llmem_pack_new(ctx, &p) == LLMEM_OK, "pack_new");
    CHECK(llmem_pack_set_int(p, LLMEM_PACK_MARGIN_PERMILLE, (int64_t)margin) == LLMEM_OK, "margin");
    for (size_t t = 0; t < ntypes; t++)
        CHECK(llmem_pack_add_gpu(p, types[t], (uint64_t)(j->aux[3] % 4)) == LLMEM_OK, "add_gpu");
    for (size_t k = 0; k < njobs; k++) {
        unsigned b = j->aux[(k + 1) % 8] + (unsigned)k;
        char id[16];
        /* the peak, or a share or multiple of it */
        need[k] = k == 0 || bytes > (UINT64_C(1) << 61) ? bytes
                  : b & 1                               ? bytes / (1 + (b >> 1) % 8) + 1
                                                        : bytes * (1 + (b >> 1) % 3);
        min_compute[k] = (b >> 4) % 3;
        snprintf(id, sizeof id, "job-%zu", k);
        int rc = llmem_pack_add_job(p, id, need[k], LLMEM_LEVEL_DEVICE, min_compute[k]);
        CHECK(rc == LLMEM_OK, "add_job %llu: %s", (unsigned long long)need[k], llmem_ctx_error(ctx));
    }
    for (int run = 0; run < 2; run++) {
        int rc = llmem_pack_run(p);
        check_status(ctx, rc, "pack");
        if (rc != LLMEM_OK) {
            CHECK(rc == LLMEM_EOVERFLOW && run == 0, "pack: refused: %s", llmem_ctx_error(ctx));
            break;
        }
        uint64_t placed = 0, unplaced = 0, bound = 0;
        CHECK(llmem_pack_get_u64(p, LLMEM_PACK_GPUS_USED, run ? &again : &used) == LLMEM_OK, "used");
        CHECK(llmem_pack_get_u64(p, LLMEM_PACK_JOBS_PLACED, &placed) == LLMEM_OK &&
                  llmem_pack_get_u64(p, LLMEM_PACK_JOBS_UNPLACED, &unplaced) == LLMEM_OK &&
                  llmem_pack_get_u64(p, LLMEM_PACK_LOWER_BOUND, &bound) == LLMEM_OK,
              "pack results");
        CHECK(placed + unplaced == njobs, "pack: %llu placed, %llu not, of %zu",
              (unsigned long long)placed, (unsigned long long)unplaced, njobs);
        CHECK(run == 0 || again == used, "pack: a second run uses %llu GPUs, the first %llu",
              (unsigned long long)again, (unsigned long long)used);
        CHECK(bound <= used, "pack: bound %llu above the %llu GPUs used", (unsigned long long)bound,
              (unsigned long long)used);
        for (size_t k = 0; k < njobs; k++) {
            pack_place x = { 0, 0, 0, 0 };
            CHECK(llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_STATUS, &x.status) == LLMEM_OK, "status");
            if (x.status == LLMEM_PACK_PLACED) {
                llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_GPU, &x.gpu);
                llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_PROFILE, &x.profile);
                llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_START, &x.start);
                CHECK(x.gpu < used, "pack: job %zu on GPU %llu of %llu", k,
                      (unsigned long long)x.gpu, (unsigned long long)used);
            } else {
                CHECK(x.status == LLMEM_PACK_FITS_NOWHERE || x.status == LLMEM_PACK_NO_ROOM,
                      "pack: job %zu status %llu", k, (unsigned long long)x.status);
            }
            if (run == 0)
                first[k] = x;
            else
                CHECK(memcmp(&first[k], &x, sizeof x) == 0, "pack: job %zu moved on a second run",
                      k);
        }
    }
    /* Each GPU of the layout: a valid MIG layout, or one job on the whole GPU. */
    for (size_t g = 0; g < used; g++) {
        uint64_t type = 0, mig_on = 0, jobs = 0, seen = 0, occupied = 0, compute = 0, count[64] = { 0 };
        CHECK(llmem_pack_gpu_u64(p, g, LLMEM_PACK_GPU_TYPE, &type) == LLMEM_OK &&
                  llmem_pack_gpu_u64(p, g, LLMEM_PACK_GPU_MIG, &mig_on) == LLMEM_OK &&
                  llmem_pack_gpu_u64(p, g, LLMEM_PACK_GPU_JOBS, &jobs) == LLMEM_OK,
              "pack: GPU %zu", g);
        uint64_t profiles = gpu_u64(type, LLMEM_GPU_MIG_PROFILES);
        for (size_t k = 0; k < njobs; k++) {
            if (first[k].status != LLMEM_PACK_PLACED || first[k].gpu != g)
                continue;
            uint64_t pr = first[k].profile, start = first[k].start;
            seen++;
            uint64_t job_usable = 0, job_headroom = 0;
            CHECK(llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_USABLE_BYTES, &job_usable) == LLMEM_OK &&
                      llmem_pack_job_u64(p, k, LLMEM_PACK_JOB_HEADROOM_BYTES, &job_headroom) ==
                          LLMEM_OK,
                  "pack: job %zu usable and headroom", k);
            /* Below the margin's line, as fit's: its slice's budget less the need. */
            CHECK(job_usable >= need[k] && job_headroom == budget_of(job_usable, margin) - need[k],
                  "pack: job %zu headroom %llu of %llu usable, need %llu", k,
                  (unsigned long long)job_headroom, (unsigned long long)job_usable,
                  (unsigned long long)need[k]);
            if (pr == profiles) {
                CHECK(!mig_on && jobs == 1 && holds(gpu_u64(type, LLMEM_GPU_USABLE_BYTES), need[k],
                                                    margin) &&
                          job_usable == gpu_u64(type, LLMEM_GPU_USABLE_BYTES),
                      "pack: job %zu on a whole GPU", k);
                continue;
            }
            CHECK(pr < profiles && pr < 64 && mig_on, "pack: job %zu profile %llu", k,
                  (unsigned long long)pr);
            uint64_t slots = mig_u64(type, pr, LLMEM_MIG_SLOTS);
            uint64_t span = ((UINT64_C(1) << slots) - 1) << start;
            CHECK(mig_u64(type, pr, LLMEM_MIG_VARIANT) == LLMEM_MIG_PLAIN &&
                      (mig_u64(type, pr, LLMEM_MIG_STARTS) >> start & 1) &&
                      start + slots <= gpu_u64(type, LLMEM_GPU_MIG_SLOTS) && (occupied & span) == 0,
                  "pack: job %zu placed at slot %llu of a %llu-slot profile", k,
                  (unsigned long long)start, (unsigned long long)slots);
            occupied |= span;
            compute += mig_u64(type, pr, LLMEM_MIG_COMPUTE_SLICES);
            CHECK(++count[pr] <= mig_u64(type, pr, LLMEM_MIG_MAX_COUNT), "pack: profile count");
            CHECK(holds(mig_u64(type, pr, LLMEM_MIG_USABLE_BYTES), need[k], margin) &&
                      job_usable == mig_u64(type, pr, LLMEM_MIG_USABLE_BYTES) &&
                      mig_u64(type, pr, LLMEM_MIG_COMPUTE_SLICES) >= (uint64_t)min_compute[k],
                  "pack: job %zu (%llu bytes) in %s", k, (unsigned long long)need[k],
                  llmem_mig_profile_name(type, pr));
        }
        CHECK(seen == jobs && jobs > 0, "pack: GPU %zu holds %llu jobs, says %llu", g,
              (unsigned long long)seen, (unsigned long long)jobs);
        CHECK(compute <= gpu_u64(type, LLMEM_GPU_MIG_COMPUTE_SLICES) || !mig_on,
              "pack: GPU %zu uses %llu compute slices", g, (unsigned long long)compute);
    }
    llmem_pack_free(p);
}

/* ---- The context's allocator ------------------------------------------ */

/* An estimate handle is one allocation of about 138 KiB: malloc maps and
 * unmaps a block that size each time, and the page faults of touching it
 * anew cost more than the estimates themselves. Large blocks are kept for
 * the next handle instead (small ones go to malloc, where the sanitizers
 * see every free). A size header in front of each block finds its size. */
#define KEEP_FROM 65536
#define KEEP_MAX 4

typedef struct kept_block {
    size_t bytes;
    void *base;
} kept_block;

static kept_block keep[KEEP_MAX];

static void *keeping_alloc(void *user, size_t bytes)
{
    (void)user;
    if (bytes >= KEEP_FROM)
        for (int i = 0; i < KEEP_MAX; i++)
            if (keep[i].base != NULL && keep[i].bytes == bytes) {
                void *base = keep[i].base;
                keep[i].base = NULL;
                return (char *)base + 16;
            }
    size_t *base = malloc(bytes + 16);
    if (base == NULL)
        return NULL;
    *base = bytes;
    return (char *)base + 16;
}

static void keeping_free(void *user, void *ptr)
{
    (void)user;
    size_t *base = (size_t *)((char *)ptr - 16);
    if (*base >= KEEP_FROM)
        for (int i = 0; i < KEEP_MAX; i++)
            if (keep[i].base == NULL) {
                keep[i].bytes = *base;
                keep[i].base = base;
                return;
            }
    free(base);
}

/* ---- The target --------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static job j; /* large: not on the stack */
    llmem_ctx *ctx = NULL;
    llmem_estimate *e = NULL, *f = NULL;
    inputs a, b;
    snap sa, sb, again;
    decode(data, size, &j);
    llmem_allocator allocator = { sizeof(llmem_allocator), keeping_alloc, keeping_free, NULL };
    if (llmem_ctx_new(&ctx, &allocator) != LLMEM_OK)
        return 0;
    /* Two handles, each fresh for its first run: e runs A first, f runs B
     * (the records but the last, or A with checkpointing toggled); then
     * each runs the other's job, and their fresh results must repeat. */
    CHECK(llmem_estimate_new(ctx, &e) == LLMEM_OK && llmem_estimate_new(ctx, &f) == LLMEM_OK,
          "estimate_new");
    build(ctx, &j, j.nrec, &a);
    build(ctx, &j, j.nrec > 0 ? j.nrec - 1 : 0, &b);
    if (j.nrec == 0) {
        int64_t ckpt = LLMEM_GRAD_CKPT_NONE;
        llmem_train_get_int(b.t, LLMEM_TRAIN_GRAD_CKPT, &ckpt);
        llmem_train_set_int(b.t, LLMEM_TRAIN_GRAD_CKPT,
                            ckpt == LLMEM_GRAD_CKPT_NONE ? LLMEM_GRAD_CKPT_FULL : LLMEM_GRAD_CKPT_NONE);
    }
#ifdef LLMEM_FUZZ_TRACE
    describe(&a);
#endif
    /* The timeline, when drawn, on e: f has none, so A's results on both
     * also say the timeline changes no number. */
    if (j.timeline)
        CHECK(llmem_estimate_timeline(e, j.timeline, j.expand) == LLMEM_OK, "timeline");
    int ok_a = run(ctx, e, &a, &sa);
    if (ok_a && j.timeline)
        check_timeline(e, &sa, &j, mode_of(&a));
    TRACE("A: %s%s (%zu records, layout %d, checks %d)", ok_a ? "ok" : "refused: ",
          ok_a ? "" : llmem_ctx_error(ctx), j.nrec, j.with_layout, j.checks);
    int ok_b = run(ctx, f, &b, &sb);

    if (ok_a) {
        /* 3: batch and seq + 1, on the same handle (its cache's path). */
        check_monotone(ctx, e, &a, &sa, LLMEM_TRAIN_BATCH);
        check_monotone(ctx, e, &a, &sa, LLMEM_TRAIN_SEQ);
    }

    /* 4: B on e after A; a failed run keeps the last result. */
    snap before, kept;
    if (ok_a)
        take(e, &before);
    if (run(ctx, e, &b, &again)) {
        CHECK(ok_b, "B runs on a reused handle, not on a fresh one");
        CHECK(same(&sb, &again), "B on a reused handle differs from a fresh one");
    } else {
        CHECK(!ok_b, "B runs on a fresh handle, not on a reused one");
        if (ok_a) {
            take(e, &kept);
            CHECK(same(&before, &kept), "a failed run changed the last result");
        }
    }
    if (ok_a) {
        CHECK(run(ctx, e, &a, &again), "A runs on a fresh handle but not again");
        CHECK(same(&sa, &again), "A on a reused handle differs from a fresh one");
        CHECK(run(ctx, e, &a, &again) && same(&sa, &again), "A run twice differs");
        if (j.timeline)
            check_timeline(e, &again, &j, mode_of(&a));
        CHECK(run(ctx, f, &a, &again) && same(&sa, &again), "A after B differs");
    }

    /* A one-GPU layout is the single-GPU estimate, to the byte. */
    if (ok_a && a.l != NULL && llmem_parallel_gpus(a.l) == 1) {
        int64_t v, plain = 1;
        for (int key = LLMEM_PARALLEL_DP; llmem_parallel_get_int(a.l, key, &v) == LLMEM_OK; key++) {
            int64_t def = key == LLMEM_PARALLEL_SP || key == LLMEM_PARALLEL_SHARD_GROUP ||
                                  key == LLMEM_PARALLEL_BUCKET_ELEMENTS
                              ? 0
                              : 1;
            plain &= v == def;
        }
        if (plain) {
            inputs none = a;
            none.l = NULL;
            CHECK(run(ctx, f, &none, &again), "a plain layout runs, one GPU does not");
            CHECK(same(&sa, &again), "a plain layout differs from one GPU");
        }
    }
    free_inputs(&b);

    if (ok_a) {
        check_fit(ctx, &j, sa.top.est[LLMEM_EST_PEAK_DEVICE - 1]);
        if (j.aux[7] & 1)
            check_pack(ctx, &j, sa.top.est[LLMEM_EST_PEAK_DEVICE - 1]);
    }
    if (ok_a && (j.checks & CHECK_MAX))
        check_max(ctx, f, &j, &a, &sa);
    if (ok_a && (j.checks & CHECK_SWEEP))
        check_sweep(ctx, e, f, &a, &j);
    if (j.checks & CHECK_PLAN)
        check_plan(ctx, f, &j, &a, ok_a ? sa.top.est[LLMEM_EST_PEAK_DEVICE - 1] : UINT64_C(1) << 34);

    free_inputs(&a);
    llmem_estimate_free(f);
    llmem_estimate_free(e);
    llmem_ctx_free(ctx);
    return 0;
}
