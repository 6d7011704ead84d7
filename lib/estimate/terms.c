/* SPDX-License-Identifier: MIT */
#include "estimate/terms.h"

#include <string.h>

void llmem_term_set(struct llmem_term *t, int kind, uint64_t at_peak, uint64_t max)
{
    t->kind = kind;
    t->at_peak = at_peak;
    t->max = max;
    t->ncomp = 0;
}

void llmem_term_add(struct llmem_term *t, const char *name, uint64_t bytes)
{
    if (t->ncomp < TERM_MAX_COMPONENTS) {
        t->comp_name[t->ncomp] = name;
        t->comp_bytes[t->ncomp] = bytes;
        t->ncomp++;
    }
}

void llmem_terms_phased(est_results *r, const step_static *st, const walk_result *w,
                        uint64_t backward_bucket)
{
    struct llmem_term *params = &r->term[LLMEM_TERM_PARAMETERS - 1];
    struct llmem_term *optimizer = &r->term[LLMEM_TERM_OPTIMIZER - 1];
    struct llmem_term *data = &r->term[LLMEM_TERM_DATA - 1];
    struct llmem_term *temporary = &r->term[LLMEM_TERM_TEMPORARY - 1];
    uint64_t weights = statics_params(st);

    r->peak_allocated = w->peak;
    r->peak_phase = w->peak_phase;
    memcpy(r->phase_peak, w->phase_peak, sizeof w->phase_peak);

    llmem_term_set(params, LLMEM_TERM_PARAMETERS, weights, weights);
    llmem_term_add(params, "weights", st->weights);
    if (st->quant_constants)
        llmem_term_add(params, "quant_constants", st->quant_constants);
    if (st->adapters)
        llmem_term_add(params, "lora_adapters", st->adapters);
    llmem_term_add(params, "buffers", st->buffers);

    uint64_t held = statics_optimizer_held(st);
    llmem_term_set(optimizer, LLMEM_TERM_OPTIMIZER, held + w->peak_grads, held + st->grads);
    llmem_term_add(optimizer, "gradients", w->peak_grads);
    llmem_term_add(optimizer, "states", st->states);
    if (st->master)
        llmem_term_add(optimizer, "master_weights", st->master);
    if (st->comm)
        llmem_term_add(optimizer, "gradient_buckets", st->comm);

    llmem_term_set(data, LLMEM_TERM_DATA, st->batch, st->batch);
    llmem_term_add(data, "batch", st->batch);

    /* Parameters gathered for compute (ZeRO-3, FSDP) are temporaries too,
     * apart: more recomputation does not shrink them. So is ZeRO-1/2's
     * gradient bucket, live through backward (both backward phases). */
    uint64_t temp = w->peak - w->fixed - w->peak_grads;
    uint64_t gathered = w->peak_gathered < temp ? w->peak_gathered : temp;
    int in_backward = w->peak_phase == LLMEM_PHASE_LOSS_BACKWARD ||
                      w->peak_phase == LLMEM_PHASE_BACKWARD;
    uint64_t bucket = in_backward ? backward_bucket : 0;
    if (bucket > temp - gathered)
        bucket = temp - gathered;
    /* What the rest is, by the phase of the peak: in backward the saved
     * activations still held and the gradients in flight (an activation's,
     * a tied embedding's second contribution summed out of place), which
     * the step does not tell apart at its peak. */
    static const char *const rest_name[] = {
        [LLMEM_PHASE_FORWARD] = "activations",
        [LLMEM_PHASE_LOSS_BACKWARD] = "activations_and_grads",
        [LLMEM_PHASE_BACKWARD] = "activations_and_grads",
        [LLMEM_PHASE_OPTIMIZER] = "optimizer_step",
    };
    llmem_term_set(temporary, LLMEM_TERM_TEMPORARY, temp, w->temp_max);
    int known = w->peak_phase >= LLMEM_PHASE_FORWARD && w->peak_phase <= LLMEM_PHASE_OPTIMIZER;
    llmem_term_add(temporary, known ? rest_name[w->peak_phase] : "activations",
                   temp - gathered - bucket);
    if (gathered)
        llmem_term_add(temporary, "gathered_parameters", gathered);
    if (bucket)
        llmem_term_add(temporary, "gradient_bucket", bucket);
}
