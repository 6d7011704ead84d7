/* SPDX-License-Identifier: MIT */
/*
 * A tape of the tensor operations of one segment of a training step (the
 * embedding, one decoder layer, or the head and loss), and the liveness
 * simulation that turns it into bytes.
 *
 * The builder records what PyTorch's autograd records: for each operation
 * the tensors it saves for backward (which depends on which inputs require
 * gradients), and for each tensor when Python drops its last reference. The
 * simulation then walks the tape forward (allocate outputs, drop what is no
 * longer referenced nor saved) and backward (allocate input gradients,
 * release saved tensors and the output gradient), recording the peak.
 * Most views (reshape, transpose, expand) are not recorded: the builder
 * goes on with their base. A view whose own size matters (a part of a
 * fused projection, whose gradient is its size) and an op's result written
 * in place are recorded as ops that allocate nothing and share their
 * base's storage (ROLE_VIEW, llmem_graph_view).
 */
#ifndef LLMEM_SIM_GRAPH_H
#define LLMEM_SIM_GRAPH_H

#include <stdint.h>

#define GRAPH_MAX_TENSORS 256
#define GRAPH_MAX_OPS 224
#define GRAPH_MAX_IN 3
#define GRAPH_MAX_MADE 4 /* tensors a tape makes only to save (llmem_graph_made_to_save) */
/* Gradient storages: one per tensor, plus one sum or copy per op input. */
#define GRAPH_MAX_GRADS (GRAPH_MAX_TENSORS + GRAPH_MAX_IN * GRAPH_MAX_OPS)
/* Steps one run logs at most: the start and each op, forward and backward. */
#define GRAPH_MAX_EVENTS (2 * (GRAPH_MAX_OPS + 1))

typedef int16_t tid; /* tensor index; -1 = none */

/* Inlined whatever the compiler's size heuristics say: recording's hot path
 * into the builders (their constant arguments then fold away), and a run's
 * parts into each kind of log (graph.c), whose tests then fold away. */
#if defined(__GNUC__)
#define GRAPH_INLINE static inline __attribute__((always_inline))
#else
#define GRAPH_INLINE static inline
#endif

typedef enum tensor_role {
    ROLE_ACT = 0,   /* created by this segment */
    ROLE_INPUT,     /* the segment's input (previous segment's output) */
    ROLE_PARAM,     /* a parameter: storage counted outside, its gradient persists */
    ROLE_EXTERNAL,  /* storage counted outside and never released here (batch, masks) */
    ROLE_VIEW       /* a view: its storage is its base's (bytes is its own size) */
} tensor_role;

typedef struct g_tensor {
    uint64_t bytes;      /* its storage, and its gradient's (a parameter's .grad too) */
    int16_t last_use;    /* last forward op that references it */
    tid base;            /* the tensor owning its storage: itself, or a view's base */
    uint16_t saved;      /* ops that keep it for backward */
    int16_t first_save;  /* the first of them (when saved): backward, which runs
                            the ops in reverse, releases it after that one */
    uint8_t role;
    uint8_t rg;          /* requires grad */
    uint8_t dt;          /* bytes per element (dtype) */
    uint8_t cached;      /* a parameter: it requires grad, whatever the grad mode,
                            as recorded (a retarget leaves it stale, and nothing
                            reads it after one: only llmem_graph_cached, while
                            recording under no_grad, and walk.c retargets only
                            tapes recorded with grad); an activation: autocast's
                            cast of a parameter, which it caches while the
                            parameter requires grad (llmem_graph_cached) */
} g_tensor;

typedef struct g_op {
    tid out;
    tid in[GRAPH_MAX_IN];
    tid aux;            /* a second output created with it (dropout mask, norm stats); -1 = none */
    uint8_t nin;
    uint8_t save;       /* BIT(i): input i saved; SAVE_OUT: the output (SAVE_ bits) */
    uint8_t rule;       /* the save argument as recorded: save and bwd_extra follow it
                           when what requires grad changes (llmem_graph_retarget) */
    uint8_t grad_alias; /* BIT(i): input i's gradient is the output gradient itself */
    uint64_t alloc;     /* what it allocates: its output's storage (a view: none) and aux */
    uint64_t fwd_extra; /* workspace while the op runs forward */
    uint64_t bwd_extra; /* workspace while the op runs backward */
    uint64_t bwd_final; /* of its input gradients, those BWD_REDUCE makes after its products */
    const char *region; /* the part of the segment it belongs to ("attention", "mlp") */
} g_op;

/* Bit i of an op's save and grad_alias: its input i (i < GRAPH_MAX_IN). */
#define BIT(i) (1u << (i))
#define SAVE_INPUTS (BIT(GRAPH_MAX_IN) - 1u) /* the save bits of every input */
#define SAVE_OUT 8u
#define SAVE_AUX 16u
/* save bit: each of inputs 0 and 1 is saved for the other's gradient, when
 * the other requires grad (a product: mm, bmm, mul). This and BWD_REDUCE
 * concern ops of two or more inputs. */
#define SAVE_CROSS 32u
/* save bit: backward computes the gradient of an input that requires grad
 * and was broadcast or promoted at the output's size, and the engine reduces
 * or casts it once the function returns (validate_outputs, before the node
 * releases its saved tensors): bwd_extra, each such product at the output's
 * size; bwd_final, the reduced gradients among those the op counts. */
#define BWD_REDUCE 64u
/* save bit: the op saves a Python number (x * 0.5: MulBackward0's other, a
 * host scalar) when its input requires grad. No device bytes, but a packed
 * tensor: non-reentrant checkpointing's recomputation runs up to it. */
#define SAVE_SCALAR 128u
/* grad_alias bit: the op computed its input gradients in forward and saved
 * them as its aux output, which backward hands over (fused linear + loss). */
#define GRADS_IN_AUX 0x80u

#define GRAPH_MAX_INPUTS 4 /* inputs the simulation tracks by index (more: scanned) */

#define GRAPH_MAX_CARRY 6 /* tensors a marked prefix hands its tail (llmem_graph_mark) */

typedef struct graph {
    g_tensor t[GRAPH_MAX_TENSORS];
    g_op op[GRAPH_MAX_OPS];
    int nt, nop;
    int ninputs;       /* ROLE_INPUT tensors, the first GRAPH_MAX_INPUTS in inputs */
    tid inputs[GRAPH_MAX_INPUTS];
    int overflow;      /* a builder ran out of room: a bug, reported as such */
    int grad_enabled;  /* 0 under torch.no_grad (checkpointed forward) */
    int hold_input;    /* the segment's input stays referenced to its end (a
                          checkpoint's recomputation): a run setting, not the tape's */
    int nmade;         /* tensors that exist only when saved (llmem_graph_made_to_save) */
    /* The flag the last retarget gave every parameter (0 or 1; -1: none
     * since the reset) and the tape's tensors then: while nt is still
     * params_nt, no parameter came since, and they all have it. */
    int params_rg, params_nt;
    tid made[GRAPH_MAX_MADE];
    tid output;        /* the segment's output */
    /* The point a builder marked (llmem_graph_mark): the tape's counts
     * then, the tensors its tail goes on from, and the last uses of the
     * tensors before it, which the tail's ops move on. nt 0: no mark. */
    struct graph_mark {
        int nt, nop, nmade;
        tid carry[GRAPH_MAX_CARRY];
        int16_t last_use[GRAPH_MAX_TENSORS];
    } mark;
    /* When events is set, the simulation also records the live bytes of every
     * step it takes (forward, then backward): see compiled.c. When event_ops
     * and event_grads are set too, the op of each step (-1: the start) and
     * the parameter gradients live at it (the timeline). Each has room for
     * events_cap >= GRAPH_MAX_EVENTS steps (less is a bug: the run logs
     * nothing and sets overflow). */
    uint64_t *events;
    int16_t *event_ops;
    uint64_t *event_grads;
    int nevents, events_cap;
    int nevents_forward; /* how many of them the forward pass logged */
    const char *region;  /* what the builder is recording: ops take it */
    /* The tensor pass of the tape's first run without grad (graph.c), kept
     * for its other runs: with grad, freed[i] is what goes after op i,
     * release[i] the saved tensors whose first save op i is (backward drops
     * them after it), persist their sum, cached autocast's casts held past
     * the segment; without, the saved tensors go too: those of extra, nextra
     * of them, after their last use. valid: 0 once the tape changes (a
     * reset, a retarget, the builders' calls but the new tensors and ops
     * that nt and nop tell); output, nt, nop: the tape's then. */
    struct tensor_fate {
        uint64_t freed[GRAPH_MAX_OPS], release[GRAPH_MAX_OPS];
        uint64_t persist, cached;
        tid extra[GRAPH_MAX_TENSORS];
        int nextra, valid, nt, nop;
        tid output;
    } fate;
} graph;

/* What one segment costs, in bytes, relative to the live set before it. */
typedef struct seg_cost {
    uint64_t fwd_peak;     /* peak during forward, counting the input as live at start */
    uint64_t persist;      /* left after forward, saved for backward (input included if saved) */
    uint64_t out_bytes;    /* the output, alive after forward unless the next segment drops it */
    uint64_t bwd_start;    /* live at backward start: persist + output gradient */
    uint64_t bwd_peak;     /* peak during backward on the same footing as bwd_start */
    uint64_t param_grads;  /* gradients of parameters produced (they persist) */
    uint64_t param_grads_wide; /* the part of them of 4-byte or wider parameters */
    uint64_t input_grad;   /* gradient of the input left for the previous segment */
    uint64_t cached;       /* autocast's cached casts no op saved: live after forward
                              until autocast exits (not under no_grad: the caller's) */
    uint64_t bwd_end;      /* live at backward end: param_grads + input_grad (+ held output) */
    int input_saved;
} seg_cost;

void llmem_graph_reset(graph *g, int grad_enabled);
tid llmem_graph_tensor(graph *g, uint64_t elems, int dt, tensor_role role, int rg);
/* llmem_graph_op's path for an op that does not fit, or that saves an input
 * it does not have: a builder's bug, flagged in overflow. */
tid llmem_graph_op_overflow(graph *g, uint64_t out_elems, int out_dt, const tid *in, int nin);
/* The tape as if recorded with its input requiring grad or not (a layer
 * after a frozen embedding, or after a layer that trains) and with its
 * parameters training or not (params_rg: every one, or none; -1: as
 * recorded): what requires grad, the save bits and reduce workspaces of
 * every op re-derived from their rules.
 * A decoder layer's ops, sizes and uses do not depend on it (its builders'
 * saves go through SAVE_CROSS and BWD_REDUCE; tests/unit/test_walk.c checks
 * every family); the chunked loss's do. Meant for tapes recorded with grad:
 * on one recorded under no_grad nothing requires grad whatever params_rg
 * says, and autocast's casts keep the cache flags the recording's
 * parameters gave them (CAST_CACHED_NO_GRAD). */
void llmem_graph_retarget(graph *g, int input_rg, int params_rg);
/* Mark the tape here: what comes after (the tail) can be taken back by
 * llmem_graph_rewind and recorded again otherwise (a layer whose MLP
 * differs: DeepSeek's dense first layers and its experts' layers share
 * their attention's ops; Gemma-2's sliding and full ones, theirs up to the
 * attention kernel), going on from the n tensors of carry. */
void llmem_graph_mark(graph *g, const tid *carry, int n);
/* The tape as it was at its mark (which stays), but for what requires
 * grad, which follows the retargets since: the tail's ops and tensors
 * gone, their uses and saves of the tensors before taken back. The
 * tail's ops write nothing else on those (a builder's op saves and uses
 * its inputs, and makes its own outputs views or casts). */
void llmem_graph_rewind(graph *g);
/* The output v of the op just recorded is a view of x (or x written in
 * place): it shares x's storage and allocates none. */
void llmem_graph_view(graph *g, tid v, tid x);
/* t, the output of the op before the one just recorded and taken by that
 * one only, exists only when that op saves it: autograd's clone of an
 * in-place op's input (original_self), made under grad mode for an input
 * that needs it. Nothing is allocated under no_grad or when the op saves
 * nothing; else t lives from its op on until that op's backward. */
void llmem_graph_made_to_save(graph *g, tid t);
/* c, the op just recorded, casts parameter w in autocast: autocast caches
 * the copy until it exits whenever w requires grad (a leaf; torch's
 * cached_cast looks at the flag, not the grad mode), even when no op saves
 * it. */
enum { CAST_CACHED = 1, CAST_CACHED_NO_GRAD = 2 }; /* g_tensor's cached: by rg, or always */
void llmem_graph_cached(graph *g, tid c, tid w);
/* Keep t referenced (a Python local) at least until the op most recently recorded. */
static inline void llmem_graph_hold(graph *g, tid t)
{
    if (t >= 0 && g->nop > 0 && g->t[t].last_use < g->nop - 1) {
        g->t[t].last_use = g->t[g->t[t].base].last_use = (int16_t)(g->nop - 1);
        g->fate.valid = 0;
    }
}

/* How a segment runs (torch.utils.checkpoint, torch/utils/checkpoint.py). */
enum sim_mode {
    SIM_PLAIN = 0,       /* forward, then backward */
    /* Reentrant checkpoint's recomputation (CheckpointFunction.backward): the
     * recomputed output and the incoming gradient stay referenced in backward,
     * so sums into that gradient go out of place. */
    SIM_HOLD_OUTPUT = 1,
    /* Non-reentrant checkpoint's recomputation (_checkpoint_hook's unpack): the
     * forward stops once the last tensor the first forward packed is saved
     * again (_StopRecomputationError: before the op runs when it saves an input,
     * after it when it saves its output), and nothing else is held. */
    SIM_EARLY_STOP = 2,
    /* A tape recorded with grad enabled, run forward as if recorded under
     * torch.no_grad (a checkpoint's first forward): nothing saved, every
     * tensor freed at its last use, no backward. The builders record the
     * same ops, sizes and uses either way (only save bits, grad flags and
     * backward workspace follow grad mode; tests/unit/test_walk.c checks
     * it for every family), so one recording serves both runs of a
     * checkpointed layer. */
    SIM_NO_GRAD = 3,
    /* A non-reentrant checkpoint's first forward: grad enabled, every save
     * packed into a placeholder by the checkpoint's hooks, so it runs as
     * SIM_NO_GRAD but for what autograd makes only to save
     * (llmem_graph_made_to_save): made, packed and dropped at once. */
    SIM_PACKED = 4
};

/* Simulate forward and backward in one of the sim_mode ways. A run leaves
 * the tape's tensors and ops as they were: it may be run any number of
 * times, in any mode. Each run logs its events from the first; a run given
 * too little room for them sets overflow, which stays until the next reset
 * (every later run then logs nothing). */
void llmem_graph_simulate(graph *g, int mode, seg_cost *cost);

/* The saves and backward workspace of op (its rule) given what requires
 * grad: for recording (graph.c) and retargeting (retarget.c). */
static inline void graph_apply_rule(g_tensor *t, g_op *op, int any_rg)
{
    unsigned rule = op->rule, save;
    /* Nothing is saved outside autograd (no grad mode, or no input needing
     * grad, a creation op's included), and an op without a second output
     * saves none. */
    if (!any_rg) {
        op->save = 0;
        if (rule & BWD_REDUCE)
            op->bwd_extra = op->bwd_final = 0;
        return;
    }
    save = rule & (SAVE_INPUTS | SAVE_OUT | SAVE_AUX | SAVE_SCALAR);
    if (op->aux < 0)
        save &= ~SAVE_AUX;
    if (rule & (SAVE_CROSS | BWD_REDUCE)) { /* two inputs */
        const g_tensor *x = &t[op->in[0]], *y = &t[op->in[1]];
        if (rule & SAVE_CROSS)
            save |= (y->rg ? BIT(0) : 0) | (x->rg ? BIT(1) : 0);
        if (rule & BWD_REDUCE) {
            uint64_t out = t[op->out].bytes;
            int rx = x->rg && x->bytes != out, ry = y->rg && y->bytes != out;
            op->bwd_extra = (rx ? out : 0) + (ry ? out : 0);
            op->bwd_final = (rx ? x->bytes : 0) + (ry ? y->bytes : 0);
        }
    }
    op->save = (uint8_t)save;
}

/* The segment's inputs: by index when there are few, else by a scan. */
static inline int graph_input_at(const graph *g, int k)
{
    return g->ninputs <= GRAPH_MAX_INPUTS ? g->inputs[k] : k;
}

static inline int graph_input_count(const graph *g)
{
    return g->ninputs <= GRAPH_MAX_INPUTS ? g->ninputs : g->nt;
}

static inline int graph_rg(const graph *g, tid t)
{
    return t >= 0 && g->t[t].rg;
}

/* Op i keeps x for backward. Ops are counted in order, so the first to
 * keep it has the lowest index: backward's last use of it. */
static inline void graph_keep(g_tensor *x, int i)
{
    if (x->saved++ == 0)
        x->first_save = (int16_t)i;
}

/* Count op i's saves on the tensors that own their storage. Inlined into
 * llmem_graph_op always (GCC's LTO otherwise keeps one out-of-line copy):
 * the tests of bits a builder's constant rule cannot set then fold away. */
GRAPH_INLINE void graph_count_saves(g_tensor *t, const g_op *op, int i)
{
    unsigned save = op->save;
    if (save == 0)
        return;
    if (save & BIT(0))
        graph_keep(&t[t[op->in[0]].base], i);
    if (save & BIT(1))
        graph_keep(&t[t[op->in[1]].base], i);
    if (save & BIT(2))
        graph_keep(&t[t[op->in[2]].base], i);
    if (save & SAVE_OUT)
        graph_keep(&t[op->out], i);
    if ((save & SAVE_AUX) && op->aux >= 0) /* graph_apply_rule clears the bit without one; */
        graph_keep(&t[op->aux], i);        /* the test tells GCC's -Warray-bounds so */
}

/* A tensor op index creates (first_save is set by its first save). */
static inline void graph_activation(g_tensor *x, tid id, uint64_t bytes, int index, int rg, int dt)
{
    x->bytes = bytes;
    x->last_use = (int16_t)index;
    x->base = id;
    x->saved = 0;
    x->role = ROLE_ACT;
    x->rg = (uint8_t)rg;
    x->dt = (uint8_t)dt;
    x->cached = 0;
}

/* Record op out = f(in...) and return out. save bits are cleared when no
 * input requires grad (autograd records nothing then). aux_bytes > 0 adds a
 * second output (saved when save has SAVE_AUX). Inline: a builder's op
 * passes constants for most arguments, which then fold away (the refusal's
 * tests included). A save bit for an input past nin is refused with the
 * rest: op->in[j] would be stale there. */
GRAPH_INLINE tid llmem_graph_op(graph *g, uint64_t out_elems, int out_dt, const tid *in, int nin,
                                unsigned save, unsigned grad_alias, uint64_t aux_bytes,
                                uint64_t fwd_extra, uint64_t bwd_extra)
{
    g_tensor *t = g->t;
    int nt = g->nt, has_aux = aux_bytes > 0, any_rg = 0;
    if (nt + 1 + has_aux > GRAPH_MAX_TENSORS || g->nop >= GRAPH_MAX_OPS ||
        (unsigned)nin > GRAPH_MAX_IN || ((save & SAVE_INPUTS) >> nin) != 0)
        return llmem_graph_op_overflow(g, out_elems, out_dt, in, nin);
    int index = g->nop++;
    tid out = (tid)nt, aux = has_aux ? (tid)(nt + 1) : -1;
    uint64_t out_bytes = out_elems * (uint64_t)out_dt;
    g_op *op = &g->op[index];
    op->out = out;
    op->aux = aux;
    op->nin = (uint8_t)nin;
    op->rule = (uint8_t)(nin >= 2 ? save : save & ~(SAVE_CROSS | BWD_REDUCE));
    op->grad_alias = (uint8_t)grad_alias;
    op->alloc = out_bytes + aux_bytes;
    op->fwd_extra = fwd_extra;
    op->bwd_extra = bwd_extra;
    op->bwd_final = 0;
    op->region = g->region;
    /* Using an input (a view: its base) keeps its storage alive to here. */
    for (int j = 0; j < nin; j++) {
        g_tensor *x = &t[in[j]];
        op->in[j] = in[j];
        any_rg |= x->rg;
        x->last_use = t[x->base].last_use = (int16_t)index;
    }
    graph_activation(&t[out], out, out_bytes, index, any_rg, out_dt);
    if (has_aux)
        graph_activation(&t[aux], aux, aux_bytes, index, 0, 1);
    g->nt = nt + 1 + has_aux;
    graph_apply_rule(t, op, any_rg);
    graph_count_saves(t, op, index);
    return out;
}

#endif
