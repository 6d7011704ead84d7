/* SPDX-License-Identifier: MIT */
/* A sweep's points answered without a run: one point from its compiled
 * walks (llmem_estimate_point), and a row of points at one seq as lines in
 * the batch (llmem_estimate_row). */
#include "estimate/estimate.h"

#include "core/ctx.h"
#include "core/fields.h"
#include "estimate/run.h"
#include "train/train.h"

int llmem_estimate_point(llmem_estimate *e, est_job *job, uint64_t batch, uint64_t seq,
                         int level, uint64_t *peak)
{
    const est_config *cf = job->cf;
    if (job->s.formula != LLMEM_FORMULA_PHASED || e->trace != NULL || cf != e->last_config ||
        cf->serial != e->last_serial)
        return 0;
    setup *s = &job->s;
    const setup *run = &job->rc.run;
    s->batch = batch;
    s->seq = seq;
    llmem_rank_point(&job->l, batch, seq, &job->rc.run);
    uint64_t data = llmem_statics_data(run);
    est_results best;
    best.peak_allocated = best.peak_reserved = best.peak_device = 0;
    for (int i = 0; i < cf->nranks; i++) {
        const rank_share *share = &cf->share[i];
        const rank_class *c = &cf->classes[i];
        walk_peak w;
        e->walk.walk_key = llmem_estimate_walk_key(cf, i, run);
        if (!llmem_walk_known_peak(&e->walk, run->batch, run->seq, c->in_flight_num,
                                   c->in_flight_den, &w) ||
            unaccounted(&share->st, data, w.end_of_backward, share, c, &job->l) != 0)
            return 0;
        uint64_t reserved = reserved_of(w.peak, share);
        uint64_t device = llmem_allocator_device(run, reserved, share->st.paged_states);
        if (i == 0 || device > best.peak_device) { /* the first most loaded, as a run's */
            best.peak_allocated = w.peak;
            best.peak_reserved = reserved;
            best.peak_device = device;
        }
    }
    /* What a run checks of batch and seq, with the run's own checks (after
     * the walks, which decline sooner and whose wrapping arithmetic is
     * harmless at a point that fails): any failure is left to the run,
     * which reports it. (The scores bound the step whenever the model's or
     * the rank's kernel forms them: a step that overflows without them
     * overflows with them.) */
    if (llmem_setup_check_point(e->ctx, &e->model, s) != LLMEM_OK ||
        llmem_layout_check_point(e->ctx, &job->l, &e->model, s) != LLMEM_OK ||
        llmem_step_overflows(&e->bound, s, job->scores))
        return 0;
    *peak = llmem_level_bytes(&best, level);
    return 1;
}

/* The line k of a row's room (a, b) at batch x (wrapping, exact where the
 * value fits). */
static inline uint64_t row_line_at(const uint64_t *a, const uint64_t *b, int k, uint64_t x)
{
    return a[k] + b[k] * x;
}

/* The upper envelope over the batches x..hi of lines a + b B whose values
 * there fit in 62 bits (so the wrapping values and, when hi > 2, the slopes
 * as signed are the true ones) into row's pieces. From x, the line on top
 * there (the steepest of equals) holds until the first batch where a
 * steeper one passes it: the next piece starts there, with a steeper line
 * on top (else it was not on top before), so there are at most n pieces.
 * Exact: every crossing is an integer division of true values. */
static void row_envelope(const uint64_t *a, const uint64_t *b, int n, uint64_t x, uint64_t hi,
                         est_row *row)
{
    row->n = 0;
    for (;;) {
        int top = 0;
        uint64_t tv = row_line_at(a, b, 0, x);
        for (int k = 1; k < n; k++) {
            uint64_t v = row_line_at(a, b, k, x);
            if (v > tv || (v == tv && (int64_t)b[k] > (int64_t)b[top])) {
                top = k;
                tv = v;
            }
        }
        uint64_t next = hi + 1; /* the first batch another passes it at */
        for (int k = 0; k < n; k++)
            if ((int64_t)b[k] > (int64_t)b[top]) {
                uint64_t at = x + (tv - row_line_at(a, b, k, x)) / (b[k] - b[top]) + 1;
                next = at < next ? at : next;
            }
        row->a[row->n] = a[top];
        row->b[row->n] = b[top];
        row->until[row->n++] = next - 1;
        if (next > hi)
            return;
        x = next;
    }
}

/* The row's pieces from a form's moments at seq over batches 2..hi: 1, or
 * 0 when a value there passes 62 bits (outside the forms' premise). The
 * line on top at batch 2 (then at hi) is below no other at batch 2, and
 * one below it at both ends is below it between: the envelope is made of
 * it and the lines above it at hi alone (mostly none). */
static int row_lines(const walk_form *f, uint64_t seq, uint64_t hi, est_row *row)
{
    uint64_t a[WALK_TERMS], b[WALK_TERMS], lo[WALK_TERMS], up[WALK_TERMS];
    int top = 0;
    if (f->npeak < 1)
        return 0;
    for (int k = 0; k < f->npeak; k++) { /* the moments that can hold the peak */
        llmem_form_line(f->kind, f->total[f->peak[k]], seq, &a[k], &b[k]);
        lo[k] = row_line_at(a, b, k, 2);
        up[k] = row_line_at(a, b, k, hi);
        if (lo[k] > UINT64_C(1) << 62 || up[k] > UINT64_C(1) << 62)
            return 0;
        if (lo[k] > lo[top] || (lo[k] == lo[top] && up[k] > up[top]))
            top = k;
    }
    uint64_t ca[WALK_TERMS], cb[WALK_TERMS]; /* the candidates, that line first */
    int n = 1;
    ca[0] = a[top];
    cb[0] = b[top];
    for (int k = 0; k < f->npeak; k++)
        if (up[k] > up[top]) {
            ca[n] = a[k];
            cb[n++] = b[k];
        }
    row_envelope(ca, cb, n, 2, hi, row);
    return 1;
}

int llmem_estimate_row(llmem_estimate *e, est_job *job, uint64_t seq, est_row *row)
{
    const est_config *cf = job->cf;
    setup *s = &job->s;
    setup *run = &job->rc.run;
    const field_desc *seq_field, *batch_field;
    if (s->formula != LLMEM_FORMULA_PHASED || e->trace != NULL || cf != e->last_config ||
        cf->serial != e->last_serial || cf->nranks != 1 || s->loss == LLMEM_LOSS_CHUNKED)
        return 0;
    const rank_share *share = &cf->share[0];
    const rank_class *c = &cf->classes[0];
    if (llmem_walk_stashes(c->in_flight_num, c->in_flight_den))
        return 0; /* a pipeline's stash: its extra is not a line */
    /* The checks of a point that read the seq alone, as the sweep and the run make them. */
    if (llmem_fields_accept_int(e->ctx, &llmem_train_fields, LLMEM_TRAIN_SEQ, (int64_t)seq,
                                &seq_field) != LLMEM_OK ||
        llmem_fields_row(e->ctx, &llmem_train_fields, LLMEM_TRAIN_BATCH, &batch_field) !=
            LLMEM_OK ||
        batch_field->kind != FIELD_INT || batch_field->min > 2 || batch_field->max > 0x1p53)
        return 0;
    s->batch = 2;
    s->seq = seq;
    llmem_rank_point(&job->l, 2, seq, run);
    if (llmem_setup_check_point(e->ctx, &e->model, s) != LLMEM_OK ||
        llmem_layout_check_point(e->ctx, &job->l, &e->model, s) != LLMEM_OK)
        return 0;
    /* Batches 2..hi: within the field's range and the step's bound, one
     * regime (batch >= 2 at this seq) and so one compiled walk. */
    uint64_t hi = llmem_step_token_limit(&e->bound, s, job->scores) / seq;
    if (hi > (uint64_t)batch_field->max)
        hi = (uint64_t)batch_field->max;
    e->walk.walk_key = llmem_estimate_walk_key(cf, 0, run);
    walk_form *f = llmem_walk_form(&e->walk, 2, run->seq);
    if (hi < 2 || !llmem_walkform_ready(f, e->walk.walk_key))
        return 0;
    if (f->npeak < 0)
        llmem_walkform_peak_set(f);
    /* A row's or a full form's polynomials are lines in the batch at a seq. */
    if (f->kind != FORM_ROW && f->kind != FORM_FULL)
        return 0;
    /* Within the step's bound a moment's value fits (the forms' premise). */
    if (!row_lines(f, run->seq, hi, row))
        return 0;
    /* The end of backward less what the statics and the batch's data make
     * it: the data is a line through 0 in the batch, its slope one
     * sample's (run is at batch 2 here: not llmem_statics_data(run)). */
    uint64_t end_a, end_b;
    llmem_form_line(f->kind, f->end_of_backward, run->seq, &end_a, &end_b);
    row->off_a = end_a - statics_held(&share->st);
    row->off_b = end_b - llmem_statics_data_sample(run->seq);
    row->rounding = end_rounding(share, c, &job->l);
    /* Mostly the same at every batch: then checked here once. */
    row->off_each = row->off_b != 0;
    if (!row->off_each && row->off_a > row->rounding && 0 - row->off_a > row->rounding)
        return 0;
    row->add[LLMEM_LEVEL_ALLOCATED - 1] = 0;
    row->add[LLMEM_LEVEL_RESERVED - 1] = reserved_of(0, share);
    row->add[LLMEM_LEVEL_DEVICE - 1] = llmem_allocator_device(run, reserved_of(0, share),
                                                              share->st.paged_states);
    row->seq = seq;
    row->hi = hi;
    return 1;
}
