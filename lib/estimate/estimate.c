/* SPDX-License-Identifier: MIT */
#include "estimate/estimate.h"

#include "core/checked.h"
#include "core/compiler.h"
#include "core/ctx.h"
#include "estimate/article.h"
#include "estimate/run.h"
#include "estimate/shard.h"
#include "estimate/terms.h"
#include "layers/layers.h"
#include "model/families.h"
#include "train/train.h"

#include <stddef.h>
#include <string.h>

void llmem_estimate_forget(llmem_estimate *e)
{
    /* Most of the handle is scratch and cache, written before it is read:
     * only what says "empty" is set, so a new handle costs no clearing. */
    e->valid = 0;
    e->nranks = e->peak_rank = 0;
    memset(e->trace_count, 0, sizeof e->trace_count);
    e->model_valid = e->model_checked = 0;
    e->model_serial = e->clock = 0;
    e->setup_serial = 0;
    e->setup_last = 0;
    e->tensors_valid = 0;
    e->nsums = 0;
    for (int i = 0; i < ESTIMATE_CONFIGS; i++)
        e->config[i].used = 0;
    e->walk.graph.events = NULL; /* the graph's tables are written before they are read */
    e->walk.graph.event_ops = NULL;
    e->walk.graph.event_grads = NULL;
    e->walk.graph.events_cap = 0;
    e->walk.graph_overflow = 0;
    memset(&e->walk.context_name, 0, sizeof e->walk.context_name);
    e->walk.walk_key = 0;
    e->walk.loss_chunk = 0;
    e->walk.compiled = e->walk.answered = e->walk.simulated = 0;
    for (int k = 0; k < SEG_WALKS; k++) {
        e->walk.memo[k].key = 0;
        for (int g = 0; g < WALK_REGIMES; g++) {
            e->walk.forms[k][g].state = 0;
            e->walk.forms[k][g].key = 0;
            e->walk.forms[k][g].at = 0;
        }
    }
    e->last_config = NULL;
    llmem_segcache_init(&e->walk.cache);
}

int llmem_estimate_new(llmem_ctx *ctx, llmem_estimate **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "estimate: NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    llmem_estimate *e = llmem__alloc(ctx, sizeof *e);
    if (e == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "estimate: out of memory");
    e->ctx = ctx;
    e->trace = NULL;
    e->trace_room = NULL;
    llmem_estimate_forget(e);
    *out = e;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_estimate_free(llmem_estimate *e)
{
    if (e == NULL)
        return;
    llmem_estimate_timeline(e, 0, 0);
    llmem__free(e->ctx, e);
}

/* A bound on every byte count of the step, for the setup actually run: each
 * tensor is at most tokens x (vocab + the widths of a layer, all of them
 * added + the attention scores when the attention materializes them + a
 * mixture of experts' one-hot routing mask, top-k x experts) elements of at
 * most 8 bytes, and fewer than 64 of them per layer are live at once. If the
 * bound fits in 62 bits, no sum the walk forms can wrap. The widths: the
 * residual stream and the embedding's, q, k and v per head (the values'
 * own size under latent attention), the latent ranks and rotary part, the
 * MLP, the shared expert and top-k routed experts per token, LoRA's rank.
 * What depends on the model alone is summed once per model (step_bound). */
static void step_bound_model(const model_shape *m, step_bound *sb)
{
    checked c = { 0 };
    uint64_t attention = ck_mul(&c, m->heads, ck_add(&c, 2 * m->head_dim, m->v_head_dim));
    uint64_t latent = ck_add(&c, ck_add(&c, m->q_lora_rank, m->kv_lora_rank), m->rotary_dim);
    uint64_t mlp = ck_add(&c, ck_add(&c, m->intermediate, m->shared_intermediate),
                          ck_mul(&c, m->experts_per_token, m->expert_intermediate + m->hidden));
    uint64_t widest = ck_add(&c, ck_add(&c, m->hidden, m->embed_dim),
                             ck_add(&c, ck_add(&c, attention, latent), mlp));
    uint64_t routing = ck_add(&c, ck_mul(&c, m->experts_per_token, m->experts), m->experts);
    sb->per_token = ck_add(&c, ck_add(&c, m->vocab, widest), routing);
    sb->per_layer = ck_mul(&c, m->layers + 2, 8 * 64);
    sb->heads = m->heads;
    sb->window = m->sliding_window;
    sb->overflow = c.overflow;
}

/* The bound on the step's byte counts for each token (checked in c). */
static uint64_t step_per_token(const step_bound *sb, const setup *s, int scores_formed, checked *c)
{
    uint64_t per_token = sb->per_token;
    /* LoRA's A projects each adapted input to rank values a token */
    if (s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA)
        per_token = ck_add(c, per_token, s->lora_rank);
    if (scores_formed)
        per_token = ck_add(c, per_token, ck_mul(c, sb->heads, s->seq));
    /* a sliding-window mask and bias, [batch, 1, seq, seq], once reached */
    if (llmem_window_reached(sb->window, s->attention, s->seq))
        per_token = ck_add(c, per_token, s->seq);
    return ck_mul(c, per_token, sb->per_layer);
}

int llmem_step_overflows(const step_bound *sb, const setup *s, int scores_formed)
{
    checked c = { 0 };
    uint64_t per = step_per_token(sb, s, scores_formed, &c);
    uint64_t bound = ck_mul(&c, ck_mul(&c, s->batch, s->seq), per);
    return sb->overflow || c.overflow || bound > (UINT64_C(1) << 62);
}

uint64_t llmem_step_token_limit(const step_bound *sb, const setup *s, int scores_formed)
{
    checked c = { 0 };
    uint64_t per = step_per_token(sb, s, scores_formed, &c);
    if (sb->overflow || c.overflow)
        return 0;
    return per == 0 ? UINT64_MAX : (UINT64_C(1) << 62) / per;
}

static int step_overflow_error(llmem_ctx *ctx, const setup *s)
{
    return llmem__fail_field(ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_BATCH, LLMEM_EOVERFLOW,
                             "batch x seq: %llu x %llu tokens are beyond the estimate's range "
                             "for this model (its byte counts are bounded by 2^62)",
                             (unsigned long long)s->batch, (unsigned long long)s->seq);
}

/* The phased model builds the families on a code path of lib/layers: others
 * are refused, naming the field, rather than guessed. */
static int check_covered(llmem_ctx *ctx, const model_shape *m)
{
    const char *why, *family = llmem_family(m->family)->id.name;
    int key = llmem_layers_unsupported(m, &why);
    if (key == 0)
        return LLMEM_OK;
    char covered[200];
    llmem_layers_covered(covered, sizeof covered);
    if (key == LLMEM_MODEL_FAMILY)
        return llmem__fail_field(ctx, LLMEM_OBJECT_MODEL, key, LLMEM_ENOTSUP,
                                 "family: the phased estimate does not build %s models yet (it "
                                 "builds %s); use --formula article for this model",
                                 family, covered);
    /* Every family has a code path: name the field, not the (long) list. */
    return llmem__fail_field(ctx, LLMEM_OBJECT_MODEL, key, LLMEM_ENOTSUP,
                             "%s: the phased estimate does not build this layout of a %s model "
                             "as transformers runs it; use --formula article for this model",
                             why, family);
}

/* The model resolved: kept while its fields stay the same, so a run with
 * the same model skips resolving it. */
static int resolve_model(llmem_estimate *e, llmem_model *model)
{
    if (e->model_valid && memcmp(e->model_field, model->field, sizeof e->model_field) == 0)
        return LLMEM_OK;
    e->model_valid = e->model_checked = 0;
    int rc = llmem_model_resolve(model, &e->model, &e->params);
    if (rc != LLMEM_OK)
        return llmem__fail_from(e->ctx, model->ctx, rc); /* the model's message and field */
    memcpy(e->model_field, model->field, sizeof e->model_field);
    step_bound_model(&e->model, &e->bound);
    e->model_valid = 1;
    e->model_serial++;
    return LLMEM_OK;
}

/* What the phased estimate needs of the model: a covered family, and byte
 * counts within 64 bits. Every static byte count is at most 32 bytes per
 * parameter (weights, gradients, states, rounding): bound it once here. */
static int check_model(llmem_estimate *e, const setup *s)
{
    if (e->model_checked)
        return LLMEM_OK;
    int rc;
    if (s->formula == LLMEM_FORMULA_PHASED && (rc = check_covered(e->ctx, &e->model)) != LLMEM_OK)
        return rc;
    checked c = { 0 };
    if (ck_mul(&c, e->params.total, 32) > (UINT64_C(1) << 62) || c.overflow)
        return llmem__fail(e->ctx, LLMEM_EOVERFLOW,
                           "model: %llu parameters overflow the 64-bit byte counts",
                           (unsigned long long)e->params.total);
    e->model_checked = s->formula == LLMEM_FORMULA_PHASED;
    return LLMEM_OK;
}

/* Setups compare but their batch and seq, their first two fields (with
 * their padding: llmem_setup_resolve zeroes the whole struct). */
#define SETUP_KEY_AT offsetof(setup, precision)
typedef char setup_point_first[SETUP_KEY_AT == 2 * sizeof(uint64_t) ? 1 : -1];

static int same_setup(const setup *a, const setup *b)
{
    return memcmp((const char *)a + SETUP_KEY_AT, (const char *)b + SETUP_KEY_AT,
                  sizeof *a - SETUP_KEY_AT) == 0;
}

/* The serial naming s but its batch and seq (est_setup): the last run's
 * (a planner or a sweep moves the layout or the point, not the setup), one
 * of the last setups', or a new one in the oldest's slot. */
static uint64_t setup_id(llmem_estimate *e, const setup *s)
{
    int n = e->setup_serial < ESTIMATE_SETUPS ? (int)e->setup_serial : ESTIMATE_SETUPS;
    if (n > 0 && same_setup(&e->setups[e->setup_last].s, s))
        return e->setups[e->setup_last].id;
    for (int i = 0; i < n; i++)
        if (i != e->setup_last && same_setup(&e->setups[i].s, s)) {
            e->setup_last = i;
            return e->setups[i].id;
        }
    uint64_t id = ++e->setup_serial;
    e->setup_last = (int)((id - 1) % ESTIMATE_SETUPS);
    e->setups[e->setup_last].id = id;
    memcpy(&e->setups[e->setup_last].s, s, sizeof *s);
    return id;
}

/* The tensor list of the whole model under the rank setup `run` (2 x its
 * setup's serial + the recipe's cast: the setup itself or its model cast to
 * 16 bits), checked; the last one is kept. */
static int tensor_list_of(llmem_estimate *e, uint64_t run, const rank_recipe *rc)
{
    const model_shape *m = &e->model;
    if (e->tensors_valid && e->tensors_model == e->model_serial && e->tensors_run == run)
        return LLMEM_OK;
    e->tensors_valid = 0;
    llmem_tensors_list(m, &e->params, &rc->run, &e->tensors);
    if (e->tensors.overflow)
        return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                           "estimate: this model has more kinds of parameter tensors than "
                           "the estimator lists (TENSOR_CLASSES_MAX); please report it");
    /* The bound on the model's parameters (check_model) leaves out LoRA's
     * adapters, which a large rank makes outnumber them: bound every
     * listed tensor the same way, 32 bytes an element. The trainable ones
     * summed on the way are llmem_statics_params's count, within the bound. */
    checked c = { 0 };
    uint64_t elems = 0, trainable = 0;
    for (int i = 0; i < e->tensors.n; i++) {
        const tensor_class *x = &e->tensors.c[i];
        uint64_t n = ck_mul(&c, ck_mul(&c, x->rows, x->cols), x->count);
        elems = ck_add(&c, elems, n);
        trainable += x->trainable ? n : 0;
    }
    if (ck_mul(&c, elems, 32) > (UINT64_C(1) << 62) || c.overflow)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_LORA_RANK,
                                 LLMEM_EOVERFLOW,
                                 "lora-rank: %llu: the adapters' parameters overflow the "
                                 "64-bit byte counts",
                                 (unsigned long long)rc->run.lora_rank);
    e->tensors_trainable = trainable;
    e->tensors_model = e->model_serial;
    e->tensors_run = run;
    e->tensors_valid = 1;
    return LLMEM_OK;
}

static int same_sums_key(const sums_key *a, const sums_key *b)
{
    return a->run == b->run && a->model == b->model && a->tp == b->tp && a->ep == b->ep &&
           a->layer_first == b->layer_first && a->layers == b->layers &&
           a->chunks == b->chunks && a->chunk_stride == b->chunk_stride && a->ends == b->ends;
}

/* The slot for new sums: an unused one, else the least recently used. */
static est_sums *sums_slot(llmem_estimate *e)
{
    if (e->nsums < ESTIMATE_SUMS)
        return &e->sums[e->nsums++];
    est_sums *x = &e->sums[0];
    for (int i = 1; i < ESTIMATE_SUMS; i++)
        if (e->sums[i].used < x->used)
            x = &e->sums[i];
    return x;
}

/* Rank r's sums with parts (at least) under the rank setup `run` (as for
 * tensor_list_of), found or computed into the least recently used slot. A
 * planner that moves data parallelism and its engine finds them: only the
 * divisions (llmem_rank_share) are left to do. */
static int rank_sums_of(llmem_estimate *e, uint64_t run, const rank_recipe *rc, const layout *l,
                        const rank_class *r, int parts, const est_sums **out)
{
    sums_key key = { e->model_serial, run, l->tp, l->ep, r->layer_first, r->layers, r->chunks,
                     r->chunk_stride, (uint64_t)(r->embedding | r->head << 1) };
    est_sums *x = NULL;
    for (int i = 0; i < e->nsums && x == NULL; i++)
        if (same_sums_key(&e->sums[i].key, &key)) /* a free slot's run is 0, no run's */
            x = &e->sums[i];
    if (x != NULL && (parts & ~x->sums.parts) == 0) {
        x->used = ++e->clock;
        *out = x;
        return LLMEM_OK;
    }
    if (x != NULL)
        parts |= x->sums.parts; /* computed again, with the parts this layout adds */
    else
        x = sums_slot(e);
    x->key.run = 0; /* free until it is filled */
    x->used = 0;
    int rc_ = tensor_list_of(e, run, rc);
    if (rc_ != LLMEM_OK)
        return rc_;
    if (llmem_rank_sums(&e->tensors, &e->model, rc, l, r, parts, &x->sums) != LLMEM_OK)
        return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                           "estimate: a rank holds more kinds of parameter tensors than the "
                           "estimator lists (TENSOR_CLASSES_MAX); please report it");
    x->key = key;
    x->trainable = e->tensors_trainable;
    x->used = ++e->clock;
    *out = x;
    return LLMEM_OK;
}

/* The configuration of (model, setup but batch and seq: its serial
 * setup_no, layout): found, or computed into the least recently used slot.
 * Layouts are zeroed before they are filled, so memcmp is exact. */
static int find_config(llmem_estimate *e, uint64_t setup_no, const layout *l,
                       const rank_recipe *rc, est_config **out)
{
    est_config *x = NULL;
    for (int i = 0; i < ESTIMATE_CONFIGS; i++) {
        est_config *c = &e->config[i];
        if (c->used && c->model == e->model_serial && c->setup == setup_no &&
            memcmp(&c->layout, l, sizeof *l) == 0) {
            c->used = ++e->clock;
            *out = c;
            return LLMEM_OK;
        }
        if (x == NULL || c->used < x->used)
            x = c;
    }
    const model_shape *m = &e->model;
    x->used = 0;
    uint64_t bounds[LAYER_RUNS_MAX];
    int nbounds = l->pp > 1 ? llmem_walk_layer_bounds(m, &rc->run, bounds) : 0;
    x->nranks = llmem_layout_ranks(l, m, bounds, nbounds, x->classes);
    if (x->nranks < 0)
        return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                           "estimate: the layout's stages hold more kinds of layers than the "
                           "estimator has rank classes for (RANKS_MAX); please report it");
    llmem_rank_shape(m, l, &x->shape);
    uint64_t run = 2 * setup_no + (uint64_t)rc->cast;
    int parts = llmem_rank_sums_parts(l);
    for (int i = 0; i < x->nranks; i++) {
        const est_sums *sums = NULL;
        int rc_ = rank_sums_of(e, run, rc, l, &x->classes[i], parts, &sums);
        if (rc_ != LLMEM_OK)
            return rc_;
        x->trainable = sums->trainable;
        if (llmem_rank_share(&sums->sums, m, rc, l, &x->classes[i], &x->share[i]) != LLMEM_OK)
            return llmem__fail_field(e->ctx, LLMEM_OBJECT_PARALLEL, LLMEM_PARALLEL_BUCKET_ELEMENTS,
                                     LLMEM_EOVERFLOW,
                                     "bucket-elements: DeepSpeed's reduce bucket (hidden %llu "
                                     "squared by default) is beyond the estimate's range (2^62 "
                                     "bytes)",
                                     (unsigned long long)m->hidden);
    }
    x->model = e->model_serial;
    x->setup = setup_no;
    memcpy(&x->layout, l, sizeof *l);
    x->used = ++e->clock;
    x->serial = e->clock;
    *out = x;
    return LLMEM_OK;
}

/* What a rank's walk takes, at the batch and seq of rc's setup. */
static void rank_input(const model_shape *shape, const rank_recipe *rc, const layout *l,
                       const rank_class *c, const rank_share *share, const step_static *st,
                       walk_input *in)
{
    llmem_walk_single(in, shape, &rc->run, st);
    in->layer_first = c->layer_first;
    in->layer_count = c->layers;
    in->chunks = c->chunks;
    in->chunk_stride = c->chunk_stride;
    in->embedding = c->embedding;
    in->head = c->head;
    in->in_flight = c->in_flight_num;
    in->in_flight_den = c->in_flight_den;
    in->grads_persist = rc->run.grad_accum > 1 || l->micro_batches > 1;
    in->gather = share->gather;
    if (l->cp > 1) {
        /* Ring attention (TransformerEngine's AttnFuncWithCPAndKVP2P): the
         * keys and values of a sequence chunk go round the cp ranks double
         * buffered, and backward sends their gradients the same way. */
        uint64_t kv = rc->run.batch * rc->run.seq * shape->kv_heads *
                      (shape->head_dim + shape->v_head_dim) * (uint64_t)rc->run.compute_dt;
        in->gather.layer_fwd += 2 * kv;
        in->gather.layer_bwd += 4 * kv;
    }
    in->keep = share->keep;
    in->sp = l->sp ? l->tp : 1;
    in->ep = l->ep;
}

/* A fused loss's chunk at a rank's point (0: all the tokens), as the head
 * segment takes it (llmem_layers_piece); 0 too without a fused loss. */
static uint64_t loss_piece(const model_shape *m, const setup *run)
{
    build b;
    memset(&b, 0, sizeof b);
    b.batch = run->batch;
    b.seq = run->seq;
    b.tokens = run->batch * run->seq;
    seg_spec spec = { .chunked_loss = run->loss == LLMEM_LOSS_CHUNKED };
    return llmem_layers_piece(&b, m, &spec);
}

/* After a walk whose segments all came compiled, compile the walk itself
 * for its key and regime (walkform.h): the walk again at the regime's grid
 * and check points, each cheap, then the fit. Only at the second such walk
 * of a key and regime (a sweep; a planner that tries a configuration once
 * does not pay for it). Refused for good (for this key and regime) when a
 * sample walk simulates or the fit fails. A fused loss's chunk changes with
 * the tokens: each chunk has a key of its own, and the samples take it. */
static inline walk_form *walk_to_compile(llmem_estimate *e, const rank_recipe *rc)
{
    walk_scratch *ws = &e->walk;
    walk_form *f = llmem_walk_form(ws, rc->run.batch, rc->run.seq);
    if (f == NULL || (f->key == ws->walk_key && f->state != 0) || !ws->cache.walk_full ||
        e->trace != NULL)
        return NULL;
    if (f->key != ws->walk_key) { /* the first: wait for a second */
        f->key = ws->walk_key;
        f->state = 0;
        return NULL;
    }
    if (!ws->logged || ws->log.overflow || ws->log.positions > SEG_HINTS)
        return NULL;
    return f;
}

/* The fit itself, out of line: its logs (kilobytes) stay off every run's
 * stack frame. */
static LLMEM_NOINLINE void compile_walk(llmem_estimate *e, const model_shape *shape,
                                        const rank_recipe *rc, const layout *l,
                                        const rank_class *c, const rank_share *share,
                                        const step_static *st, walk_form *f)
{
    walk_scratch *ws = &e->walk;
    uint64_t batch = rc->run.batch, seq = rc->run.seq;
    uint64_t bs[WALK_GRID + WALK_CHECKS], ss[WALK_GRID + WALK_CHECKS];
    walk_log logs[WALK_GRID + WALK_CHECKS];
    int regime = llmem_regime_of(batch, seq, (ws->walk_key & WALK_KEY_WINDOW) != 0);
    int n = llmem_walkform_grid(regime, seq, bs, ss);
    f->key = ws->walk_key;
    f->state = -1;
    if (n == 0)
        return;
    n += WALK_CHECKS;
    /* The samples take the caller's fused-loss chunk: the walk's key is of it. */
    uint64_t piece = loss_piece(shape, &rc->run);
    ws->loss_chunk = rc->run.loss != LLMEM_LOSS_CHUNKED ? 0 : piece != 0 ? piece : LOSS_CHUNK_ALL;
    int k = 0;
    for (; k < n; k++) {
        rank_recipe at = *rc;
        at.run.batch = bs[k];
        at.run.seq = ss[k];
        step_static st_at = *st;
        st_at.batch = llmem_statics_data(&at.run);
        walk_input in;
        walk_result w;
        rank_input(shape, &at, l, c, share, &st_at, &in);
        if (llmem_step_overflows(&e->bound, &at.run, 1) ||
            llmem_walk_logged(ws, &in, &w, &logs[k]) != LLMEM_OK || !ws->cache.walk_full)
            break;
    }
    ws->loss_chunk = 0;
    if (k < n)
        return;
    const compiled_form *seg[SEG_HINTS] = { NULL };
    if (!llmem_segcache_walk_forms(&ws->cache, ws->log.positions, seg))
        return;
    if (llmem_walkform_fit(f, regime, logs, n, &ws->log, batch, seq, seg)) {
        f->state = 1;
        ws->compiled++;
    }
}

/* One rank's walk (checked), into out. */
static int walk_rank(llmem_estimate *e, size_t rank, const model_shape *shape,
                     const rank_recipe *rc, const layout *l, const rank_class *c,
                     const rank_share *share, const step_static *st, walk_result *out)
{
    walk_input in;
    e->walk.logged = 0;
    /* Known without walking (the same point again, a compiled walk): no input to build. */
    int known = e->trace == NULL && llmem_walk_known(&e->walk, rc->run.batch, rc->run.seq,
                                                     c->in_flight_num, c->in_flight_den, out);
    if (!known) {
        if (e->trace != NULL)
            e->trace->points = e->trace_room + rank * e->trace->cap;
        rank_input(shape, rc, l, c, share, st, &in);
        in.trace = e->trace;
        if (llmem_walk(&e->walk, &in, out) != LLMEM_OK)
            return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                               "estimate: this model's layer needs more operations or "
                               "tensors than the simulator's tape holds (GRAPH_MAX_OPS, "
                               "GRAPH_MAX_TENSORS); please report it");
    }
    uint64_t off = unaccounted(st, st->batch, out->end_of_backward, share, c, l);
    if (off != 0)
        return llmem__fail(e->ctx, LLMEM_ENOTSUP,
                           "estimate: the layer model does not cover this combination of "
                           "fields (%llu bytes unaccounted); please report it",
                           (unsigned long long)off);
    if (known)
        return LLMEM_OK;
    walk_form *f = walk_to_compile(e, rc);
    if (f != NULL)
        compile_walk(e, shape, rc, l, c, share, st, f);
    if (e->trace != NULL) {
        e->trace_count[rank] = e->trace->n;
        e->trace_peak[rank] = llmem_trace_peak(e->trace);
    }
    return LLMEM_OK;
}

/* A rank's terms and levels from its walk. */
static void rank_results(est_results *r, const step_static *st, const walk_result *w,
                         const rank_share *share, const setup *run)
{
    llmem_terms_phased(r, st, w, share->gather.backward);
    r->peak_reserved = reserved_of(w->peak, share);
    r->peak_device = llmem_allocator_device(run, r->peak_reserved, st->paged_states);
}

/* A result copied field by field, the terms' components as many as there
 * are: a struct copy is 600 bytes, which compilers turn into a string move
 * costing more than the rest of a cached estimate's bookkeeping. */
static void copy_results(est_results *to, const est_results *from)
{
    to->params_total = from->params_total;
    to->params_trainable = from->params_trainable;
    to->params_active = from->params_active;
    to->peak_allocated = from->peak_allocated;
    to->peak_reserved = from->peak_reserved;
    to->peak_device = from->peak_device;
    to->peak_phase = from->peak_phase;
    for (int i = 0; i < PHASE_COUNT; i++)
        to->phase_peak[i] = from->phase_peak[i];
    for (int k = 0; k < TERM_COUNT; k++) {
        struct llmem_term *t = &to->term[k];
        const struct llmem_term *f = &from->term[k];
        t->kind = f->kind;
        t->at_peak = f->at_peak;
        t->max = f->max;
        t->ncomp = f->ncomp;
        for (size_t j = 0; j < f->ncomp; j++) {
            t->comp_name[j] = f->comp_name[j];
            t->comp_bytes[j] = f->comp_bytes[j];
        }
    }
}

int llmem_estimate_run(llmem_estimate *e, llmem_model *model, const llmem_train *train)
{
    return llmem_estimate_run_parallel(e, model, train, NULL);
}

int llmem_estimate_run_parallel(llmem_estimate *e, llmem_model *model, const llmem_train *train,
                                const llmem_parallel *parallel)
{
    return llmem_estimate_run_job(e, model, train, parallel, NULL);
}

/* A configuration's rank names its walk: the same segments asked for at
 * every run. A fused loss's segment changes with its chunk (a power of two
 * of the tokens): each chunk names a walk of its own, coded in the low five
 * bits (0: no fused loss, 1: all the tokens, 2 + log2 of the chunk). From a
 * sliding window on the layers take a mask: WALK_KEY_WINDOW (bit 5; such
 * walks are compiled one seq at a time, and a walk compiled below the
 * window must not answer them). */
uint64_t llmem_estimate_walk_key(const est_config *cf, int rank, const setup *run)
{
    uint64_t key = (cf->serial * RANKS_MAX + (uint64_t)rank + 1) << WALK_KEY_RANK_SHIFT;
    if (llmem_model_window_reached(&cf->shape, run->attention, run->seq))
        key += WALK_KEY_WINDOW;
    if (run->loss != LLMEM_LOSS_CHUNKED)
        return key;
    uint64_t piece = loss_piece(&cf->shape, run), code = 1; /* all the tokens */
    if (piece != 0) /* a power of two below 2^29, the tokens' bound */
        for (code = 2; piece > 1; piece >>= 1)
            code++;
    return key + code;
}

int llmem_estimate_run_job(llmem_estimate *e, llmem_model *model, const llmem_train *train,
                           const llmem_parallel *parallel, est_job *job)
{
    setup s;
    layout l;
    rank_recipe rc;
    est_config *cf = NULL;
    if (e == NULL)
        return LLMEM_EINVAL;
    if (model == NULL || train == NULL)
        return llmem__fail(e->ctx, LLMEM_EINVAL, "estimate: model or train is NULL");
    int rc_ = resolve_model(e, model);
    if (rc_ != LLMEM_OK)
        return rc_;
    const model_shape *m = &e->model;
    const model_params *p = &e->params;
    if ((rc_ = llmem_setup_resolve(train, m, e->ctx, &s)) != LLMEM_OK)
        return rc_;
    int scores = llmem_layers_quadratic_attention(m, s.attention, s.compute_dt);
    if (s.formula == LLMEM_FORMULA_PHASED && llmem_step_overflows(&e->bound, &s, scores))
        return step_overflow_error(e->ctx, &s);
    if ((rc_ = check_model(e, &s)) != LLMEM_OK ||
        (rc_ = llmem_layout_resolve(e->ctx, parallel, m, &s, &l)) != LLMEM_OK)
        return rc_;
    if (s.formula == LLMEM_FORMULA_ARTICLE && llmem_parallel_gpus(parallel) > 1)
        return llmem__fail_field(e->ctx, LLMEM_OBJECT_TRAIN, LLMEM_TRAIN_FORMULA, LLMEM_ENOTSUP,
                                 "formula: the article's sum is for one GPU; use the phased "
                                 "formula with a layout");
    llmem_rank_recipe(&s, &l, &rc);
    uint64_t setup_no = setup_id(e, &s);
    if ((rc_ = find_config(e, setup_no, &l, &rc, &cf)) != LLMEM_OK) {
        e->last_config = NULL;
        return rc_;
    }
    /* Tensor parallelism can change the kernel a rank runs: Falcon's grouped
     * layout with one kv group a rank runs its multi-query branch, SDPA's
     * math kernel. Bound the step again with the scores then. */
    if (s.formula == LLMEM_FORMULA_PHASED && !scores &&
        llmem_layers_quadratic_attention(&cf->shape, s.attention, s.compute_dt) &&
        llmem_step_overflows(&e->bound, &s, 1))
        return step_overflow_error(e->ctx, &s);
    int n = cf->nranks;
    /* What decides the walks' model shape (tensor and context parallelism's
     * splits of the model) and build settings (the rank's setup, sequence and
     * expert parallelism): walks of the same, a planner's that only moves
     * data parallelism, share the segment cache's context. */
    e->walk.context_name = (seg_context_name){ { e->model_serial, 2 * setup_no + (uint64_t)rc.cast,
                                                 l.tp, l.cp > 1, l.sp, l.ep } };
    e->last_config = cf;
    e->last_serial = cf->serial;

    /* Every check comes first, then the results are written: a failed run
     * keeps the last one. */
    step_static st[RANKS_MAX];
    walk_result walks[RANKS_MAX];
    est_results article[RANKS_MAX];
    for (int i = 0; i < n; i++) {
        const rank_share *share = &cf->share[i];
        st[i] = share->st;
        st[i].batch = llmem_statics_data(&rc.run);
        if (s.formula == LLMEM_FORMULA_ARTICLE) {
            est_results *a = &article[i];
            memset(a, 0, sizeof *a);
            if ((rc_ = llmem_article_estimate(e->ctx, a, p, train, &s)) != LLMEM_OK)
                return rc_;
            a->peak_reserved = a->peak_allocated + share->overhead;
            /* The article's m_os already holds any paged states. */
            a->peak_device = llmem_allocator_device(&s, a->peak_reserved, 0);
            walks[i].end_of_backward = 0;
            e->trace_count[i] = 0;
            continue;
        }
        e->walk.walk_key = llmem_estimate_walk_key(cf, i, &rc.run);
        if ((rc_ = walk_rank(e, (size_t)i, &cf->shape, &rc, &l, &cf->classes[i], share, &st[i],
                             &walks[i])) != LLMEM_OK)
            return rc_;
    }
    size_t peak = 0;
    for (int i = 0; i < n; i++) {
        est_results *r = &e->rank[i];
        if (s.formula == LLMEM_FORMULA_ARTICLE)
            copy_results(r, &article[i]);
        else
            rank_results(r, &st[i], &walks[i], &cf->share[i], &rc.run);
        r->params_total = p->total;
        r->params_active = p->active;
        r->params_trainable = cf->trainable;
        e->rank_static[i] = st[i];
        e->rank_class[i] = cf->classes[i];
        e->rank_host[i] = cf->share[i].host;
        if (r->peak_device > e->rank[peak].peak_device)
            peak = (size_t)i;
    }
    e->nranks = (size_t)n;
    e->peak_rank = peak;
    copy_results(&e->r, &e->rank[peak]);
    e->end_of_backward = walks[peak].end_of_backward;
    e->valid = 1;
    if (job != NULL) {
        job->s = s;
        job->l = l;
        job->rc = rc;
        job->cf = cf;
        job->scores = scores || llmem_layers_quadratic_attention(&cf->shape, s.attention,
                                                                 s.compute_dt);
    }
    llmem__ok(e->ctx);
    return LLMEM_OK;
}
