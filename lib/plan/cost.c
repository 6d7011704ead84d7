/* SPDX-License-Identifier: MIT */
/*
 * The planner's throughput proxy (docs/partitioning.md, "The planner"): not a
 * prediction of step time, a ranking of layouts on one kind of GPU by the
 * three things that separate them: the compute a GPU does (recomputation
 * included), the pipeline bubble, and the bytes a GPU sends, over NVLink
 * within a node or the network across nodes. Communication is assumed not
 * overlapped, which favours layouts that send less.
 *
 * Constants (assumptions of the proxy, stated as such):
 * - effective compute 400 TFLOP/s a GPU: about 40% of an H100's 989 dense
 *   bf16 TFLOP/s (NVIDIA H100 datasheet), a common model-FLOPs utilization;
 * - 6 FLOPs a parameter a token for a training step (Kaplan et al. 2020),
 *   8 with full recomputation (the forward runs twice);
 * - 300 GB/s a GPU within a node (NVLink 4: 900 GB/s both ways, NVIDIA H100
 *   datasheet, of which a ring all-reduce sustains about a third each way)
 *   and 25 GB/s across nodes (a 200 Gb/s NIC per GPU).
 */
#include "plan/plan.h"

#define EFFECTIVE_FLOPS 400e12
#define INTRA_NODE_BYTES_PER_S 300e9
#define INTER_NODE_BYTES_PER_S 25e9
#define ACT_BYTES 2.0 /* activations cross ranks in 16 bits */

/* Bytes per second of a group of `size` ranks `stride` apart, ranks placed
 * node by node (tp fastest, then cp, pp, dp). The groups tile aligned blocks
 * of size x stride ranks; every group is within a node when the job is, or
 * when a node holds whole blocks (a node of 8 and pp 3 does not: ranks 6-8). */
static double bandwidth(uint64_t size, uint64_t stride, uint64_t per_node, uint64_t gpus)
{
    return gpus <= per_node || per_node % (size * stride) == 0 ? INTRA_NODE_BYTES_PER_S
                                                               : INTER_NODE_BYTES_PER_S;
}

/* A ring all-reduce sends 2 (n - 1) / n of the data; an all-gather or a
 * reduce-scatter half of that. */
static double ring(uint64_t n)
{
    return n > 1 ? 2.0 * (double)(n - 1) / (double)n : 0.0;
}

void llmem_plan_cost(const plan_cost_input *in, plan_result *out)
{
    const layout *l = in->l;
    const model_shape *m = in->m;
    const setup *s = in->s;
    int ckpt = s->grad_ckpt != LLMEM_GRAD_CKPT_NONE; /* either variant recomputes the forward */
    uint64_t gpus = l->dp * l->tp * l->pp * l->cp, mb = out->micro_batches;
    double b = (double)in->micro_batch, seq = (double)s->seq, h = (double)m->hidden;
    double tokens_step = b * seq * (double)mb * (double)l->dp;
    double flops = (ckpt ? 8.0 : 6.0) * (double)in->p->active * tokens_step;
    double compute = flops / ((double)gpus * EFFECTIVE_FLOPS);
    double bubble = l->pp > 1 ? (double)(l->pp - 1) / (double)(mb * l->virtual_stages) : 0.0;

    /* Bytes one GPU sends per step, and the time they take. */
    double layers = (double)m->layers / (double)l->pp;
    double params_rank = (double)in->p->total / (double)(l->tp * l->pp) * ACT_BYTES;
    double act = b * seq / (double)l->cp * h * ACT_BYTES; /* one micro-batch's hidden states */
    /* Tensor parallelism: two all-reduces a layer forward and two backward
     * (Megatron), and the forward's again under recomputation. */
    double tp_bytes = (ckpt ? 6.0 : 4.0) * layers * (double)mb * act * ring(l->tp);
    /* Pipelines: an activation forward and a gradient backward a micro-batch. */
    double pp_bytes = l->pp > 1 ? 2.0 * (double)mb * act / (double)l->tp : 0.0;
    /* Data parallelism: the gradients' all-reduce (DDP, ZeRO-1/2); parameters
     * gathered twice and gradients reduce-scattered (ZeRO-3, FSDP). */
    double dp_bytes = l->sharding->params ? 1.5 * params_rank * ring(l->shard)
                                          : params_rank * ring(l->dp);
    /* Context parallelism: keys and values around the ring, forward and backward. */
    double kv = b * seq / (double)l->cp * (double)(m->kv_heads * m->head_dim) * ACT_BYTES;
    double cp_bytes = l->cp > 1 ? 2.0 * 2.0 * kv * layers * (double)mb * (double)(l->cp - 1) : 0.0;
    /* Expert parallelism: two all-to-alls forward, two backward, of the routed rows. */
    double ep_bytes = l->ep > 1 ? 4.0 * (double)m->experts_per_token * act * layers * (double)mb *
                                      (double)(l->ep - 1) / (double)l->ep
                                : 0.0;
    uint64_t per_node = in->gpus_per_node;
    double comm = tp_bytes / bandwidth(l->tp, 1, per_node, gpus) +
                  cp_bytes / bandwidth(l->cp, l->tp, per_node, gpus) +
                  pp_bytes / bandwidth(l->pp, l->tp * l->cp, per_node, gpus) +
                  (dp_bytes + ep_bytes) / bandwidth(l->dp, l->tp * l->cp * l->pp, per_node, gpus);
    double step = compute * (1.0 + bubble) + comm;
    out->comm_bytes = (uint64_t)(tp_bytes + pp_bytes + dp_bytes + cp_bytes + ep_bytes);
    out->bubble_permille = (uint64_t)(bubble * 1000.0 + 0.5);
    out->tokens_per_second = step > 0 ? tokens_step / step : 0.0;
}
