/* SPDX-License-Identifier: MIT */
/*
 * The runs of identical decoder layers a walk combines in closed form
 * (walkparts.h): the step's runs for a method, split where experts begin
 * or the first layer's input dtype differs, clipped to a rank's layers,
 * paired where alternate layers take the window, and split again where a
 * second mask goes.
 */
#include "estimate/walk.h"
#include "estimate/walkparts.h"

#include <string.h>

/* Split the run that crosses the layer `boundary` in two, the second's
 * input requiring grad as the first's output does (split_runs' reasons). */
static int split_at(layer_group *g, int n, uint64_t boundary)
{
    uint64_t first = 0;
    for (int i = 0; i < n; first += g[i].count, i++) {
        if (first < boundary && boundary < first + g[i].count) {
            memmove(&g[i + 1], &g[i], (size_t)(n - i) * sizeof *g);
            g[i].count = boundary - first;
            g[i + 1].count -= g[i].count;
            g[i + 1].spec.input_rg = output_rg(&g[i].spec);
            return n + 1;
        }
    }
    return n;
}

/* Where the layer runs of a method split further: in a mixture-of-experts
 * model the first dense_layers layers have a dense MLP (the runs that cross
 * that boundary split, and the MoE runs are marked); a first layer fed in
 * the embedding's dtype, not the stream's, runs alone. A model has one
 * reason at most (post-norm is OPT's alone, which has no experts), so with
 * the method's three runs at most LAYER_RUNS_MAX. */
static int split_runs(const model_shape *m, const setup *s, layer_group *g, int n)
{
    build b = { .autocast = s->autocast, .param_dt = s->param_dt };
    if (embedding_dt(&b, m) != residual_dt(&b, m)) {
        n = split_at(g, n, 1);
        g[0].spec.embedded_input = 1;
        return n;
    }
    if (m->experts == 0)
        return n; /* every run dense, as llmem_walk_groups made it */
    uint64_t boundary = m->dense_layers, first = 0;
    n = split_at(g, n, boundary);
    for (int i = 0; i < n; i++) {
        g[i].spec.moe = first >= boundary;
        first += g[i].count;
    }
    return n;
}

/* The runs of a one-stage rank (the layouts check refuses pipelines here)
 * as runs of identical layers again: a run of n >= 2 layers becomes its
 * pairs, two interleaved runs of n / 2 layers each, the first's layers of
 * the kind its first layer is, and an odd last layer alone. */
int llmem_walk_alternate_runs(const layer_group *in, int n, layer_group *out)
{
    uint64_t at = 0; /* the model's index of the run's first layer */
    int k = 0;
    for (int i = 0; i < n; at += in[i].count, i++) {
        uint64_t pairs = in[i].count / 2;
        if (pairs > 0) {
            for (int j = 0; j < 2; j++) {
                out[k] = in[i];
                out[k].count = pairs;
                out[k].pair = j == 0 ? PAIR_FIRST : PAIR_SECOND;
                out[k++].spec.full_attention = (int)((at + (uint64_t)j) % 2);
            }
        }
        if (in[i].count % 2 != 0) {
            out[k] = in[i];
            out[k].count = 1;
            out[k++].spec.full_attention = (int)((at + in[i].count - 1) % 2);
        }
    }
    return k;
}

/* The runs of identical layers a method produces. */
int llmem_walk_groups(const model_shape *m, const setup *s, layer_group *g)
{
    int ckpt = s->grad_ckpt != LLMEM_GRAD_CKPT_NONE, n = 0;
    int lora = s->method == LLMEM_METHOD_LORA || s->method == LLMEM_METHOD_QLORA;
    seg_spec trainable = { .input_rg = 1, .weights_trainable = 1, .norms_trainable = 1 };
    seg_spec adapters = { .input_rg = 1, .lora_targets = s->lora_targets,
                          .lora_rank = s->lora_rank,
                          .nf4 = s->method == LLMEM_METHOD_QLORA };
    seg_spec frozen = { .input_rg = ckpt };
    if (lora) {
        /* The frozen embedding's output needs no grad, so the first layer saves
         * less, unless PEFT's enable_input_require_grads (used with checkpointing). */
        g[n] = (layer_group){ .count = ckpt ? m->layers : 1, .spec = adapters };
        g[n++].spec.input_rg = ckpt;
        if (!ckpt && m->layers > 1)
            g[n++] = (layer_group){ .count = m->layers - 1, .spec = adapters };
    } else if (s->method == LLMEM_METHOD_FREEZE) {
        uint64_t rest = m->layers - s->frozen_layers;
        if (s->frozen_layers > 0)
            g[n++] = (layer_group){ .count = s->frozen_layers, .spec = frozen };
        if (rest > 0 && !ckpt) {
            /* its input comes from frozen layers or the frozen embedding */
            g[n] = (layer_group){ .count = 1, .spec = trainable };
            g[n++].spec.input_rg = 0;
            rest--;
        }
        if (rest > 0)
            g[n++] = (layer_group){ .count = rest, .spec = trainable };
    } else {
        g[n++] = (layer_group){ .count = m->layers, .spec = trainable };
    }
    return split_runs(m, s, g, n);
}

/* Where a second mask goes (Gemma-2 eager: a mask per layer type,
 * shared_bytes.mask_other). Under non-reentrant checkpointing each layer's
 * checkpoint holds its type's mask in its call until that layer's backward
 * (reentrant ones, to the end of backward: in_call), so the
 * mask that the stage's first layer in the graph (k) does not take goes
 * with the backward of layer k + 1: the group of k is split so that k
 * stands alone, and the walk releases the mask before that group's
 * backward (*before: its index). With no layer above k in the stage nothing
 * holds the mask past the forward (*before: -2). Interleaved chunks (their
 * layers not contiguous) keep it with the other to the end (*before: -1):
 * at most one mask high in layer k's backward. Returns the groups' count. */
int llmem_walk_place_other_mask(layer_group *g, int n, uint64_t chunks, int *before)
{
    int i = 0;
    *before = -1;
    while (i < n && g[i].bwd_start == 0) /* frozen layers outside the graph */
        i++;
    if (chunks != 1 || i == n)
        return n;
    if (g[i].count == 1) {
        *before = i + 1 < n ? i : -2;
        return n;
    }
    if (n == MAX_RUNS)
        return n; /* no room to split: kept to the end (not reached: runs are few) */
    memmove(&g[i + 1], &g[i], (size_t)(n - i) * sizeof *g);
    g[i].count = 1;
    g[i + 1].count -= 1;
    *before = i;
    return n + 1;
}

/* The groups of the layers a rank runs, in order: its chunks' in turn, a
 * group running on from one chunk to the next being one. The layers ascend,
 * so there are at most as many as the step's groups. */
int llmem_walk_clip_groups(const layer_group *all, int n, const walk_input *in,
                           layer_group *out)
{
    uint64_t per = in->layer_count / in->chunks;
    int k = 0, last = -1;
    for (uint64_t c = 0; c < in->chunks; c++) {
        uint64_t begin = 0, first = in->layer_first + c * in->chunk_stride, end = first + per;
        for (int i = 0; i < n; i++) {
            uint64_t lo = begin > first ? begin : first;
            uint64_t hi = begin + all[i].count < end ? begin + all[i].count : end;
            begin += all[i].count;
            if (lo >= hi)
                continue;
            if (i == last) {
                out[k - 1].count += hi - lo;
                continue;
            }
            out[k] = all[i];
            out[k++].count = hi - lo;
            last = i;
        }
    }
    return k;
}

/* The bounds between the step's runs of identical layers: where each run
 * after the first starts (llmem_layout_ranks). Returns how many. */
int llmem_walk_layer_bounds(const model_shape *m, const setup *s, uint64_t *bounds)
{
    layer_group g[MAX_GROUPS];
    int n = llmem_walk_groups(m, s, g);
    uint64_t at = 0;
    for (int i = 0; i + 1 < n; i++)
        bounds[i] = at += g[i].count;
    return n > 0 ? n - 1 : 0;
}
