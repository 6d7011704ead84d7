/* SPDX-License-Identifier: MIT */
/*
 * The segments of a step: the embedding, one decoder layer (its block built
 * by the family's code path, paths.c), and the head with the loss; and the
 * per-forward tensors the layers share.
 */
#include "layers/common.h"

#include <string.h>

/* Elements of one rotary table ([1, seq, head_dim]; 0 without rotary) and of
 * the attention mask: Llama's eager path builds a 4-D additive mask
 * [batch, 1, seq, seq], GPT-2 broadcasts a padding mask [batch, 1, 1, seq],
 * and SDPA and FlashAttention-2 take none. */
static uint64_t rope_elems(const build *b, const model_shape *m)
{
    return m->positions == LLMEM_POSITIONS_ROTARY ? b->seq * m->rotary_dim : 0;
}

/* build_alibi_tensor (modeling_bloom.py): [batch x heads, 1, seq] in the
 * dtype of the embedding LayerNorm's output. */
static uint64_t alibi_elems(const build *b, const model_shape *m)
{
    return m->positions == LLMEM_POSITIONS_ALIBI ? b->batch * m->heads * b->seq : 0;
}

/* OPTDecoder.forward: position_ids = (cumsum(attention_mask) * attention_mask - 1),
 * int64 [batch, seq], a local of the forward passed to every layer. */
static uint64_t position_id_elems(const build *b, const model_shape *m)
{
    return (m->traits & TRAIT_MASK_POSITIONS) ? b->tokens : 0;
}

static uint64_t mask_elems(const build *b, const model_shape *m)
{
    /* From the sliding window on, SDPA gets the bool [batch, 1, seq, seq]
     * mask sdpa_mask builds once per forward (masking_utils.py: the window,
     * causal and the Trainer's 2-D attention_mask, so every batch row is
     * materialised). */
    if (llmem_model_window_reached(m, b->attention, b->seq))
        return b->batch * b->seq * b->seq;
    /* Without padding, transformers passes SDPA no mask (is_causal instead:
     * _ignore_causal_mask_sdpa, _prepare_4d_attention_mask_for_sdpa), and
     * flash-attn none. */
    /* Falcon's _update_causal_mask: masked_fill(alibi / sqrt(head_dim), causal < -1, min),
     * for SDPA as well */
    if ((m->traits & TRAIT_ALIBI_MASK) && m->positions == LLMEM_POSITIONS_ALIBI &&
        b->attention != LLMEM_ATTENTION_FLASH)
        return b->batch * m->heads * b->seq * b->seq;
    if (b->attention != LLMEM_ATTENTION_EAGER)
        return 0;
    if (m->traits & TRAIT_CAUSAL_BUFFER)
        return b->batch * b->seq;
    return b->batch * b->seq * b->seq;
}

/* Additive masks the model's forward builds: Gemma2Model (transformers 5.x)
 * maps each layer type to its own, create_causal_mask's and
 * create_sliding_window_causal_mask's, which under eager attention are both
 * materialised at every seq (masking_utils.py: eager_mask never skips, then
 * where(mask, 0, min) in inputs_embeds' dtype); under SDPA the full layers
 * get None, the sliding ones the window's mask once reached (mask_elems). */
static uint64_t mask_count(const build *b, const model_shape *m)
{
    return (m->traits & TRAIT_ALTERNATE_WINDOW) && b->attention == LLMEM_ATTENTION_EAGER ? 2 : 1;
}

/* Bytes of a mask element: the sliding-window mask is bool; the additive
 * masks are in inputs_embeds' dtype, before any embedding norm. */
static int mask_dt(const build *b, const model_shape *m)
{
    return llmem_model_window_reached(m, b->attention, b->seq) ? 1 : b->param_dt;
}

/* DeepSeek-V2's rotary embedding returns one complex64 freqs_cis [1, seq,
 * rope / 2] (the bytes of seq x rope fp32 values) whatever the model dtype;
 * the others cos and sin in the hidden dtype. */
static int complex_rope(const model_shape *m)
{
    return m->path == PATH_LATENT && !m->router_bias;
}

/* LlamaRotaryEmbedding returns cos and sin in the hidden dtype. */
static shared_tensors shared_inputs(build *b, const model_shape *m)
{
    shared_tensors sh = { -1, -1, -1, -1, -1 };
    int dt = embedding_dt(b, m);
    if (rope_elems(b, m) > 0 && complex_rope(m)) {
        sh.cos = llmem_graph_tensor(b->g, rope_elems(b, m), FP32, ROLE_EXTERNAL, 0);
    } else if (rope_elems(b, m) > 0) {
        sh.cos = llmem_graph_tensor(b->g, rope_elems(b, m), dt, ROLE_EXTERNAL, 0);
        sh.sin = llmem_graph_tensor(b->g, rope_elems(b, m), dt, ROLE_EXTERNAL, 0);
    }
    if (mask_elems(b, m) > 0)
        sh.mask = llmem_graph_tensor(b->g, mask_elems(b, m), mask_dt(b, m), ROLE_EXTERNAL, 0);
    if (alibi_elems(b, m) > 0)
        sh.alibi = llmem_graph_tensor(b->g, alibi_elems(b, m), dt, ROLE_EXTERNAL, 0);
    return sh;
}

shared_bytes llmem_layers_shared_bytes(const build *b, const model_shape *m, const seg_spec *emb)
{
    uint64_t dt = (uint64_t)embedding_dt(b, m);
    shared_bytes sb;
    sb.rope = complex_rope(m) ? rope_elems(b, m) * FP32 : 2 * rope_elems(b, m) * dt;
    /* position ids (cache_position): int64 [seq]. GPT2Model looks up wpe at
     * cache_position.unsqueeze(0), a view of it, which EmbeddingBackward
     * saves when the table trains (OPT's own ids are the embedding's). */
    int learned = m->positions == LLMEM_POSITIONS_LEARNED && !(m->traits & TRAIT_MASK_POSITIONS);
    sb.ids_saved = learned && emb->weights_trainable && b->sp == 1 ? b->seq * INT64 : 0;
    /* GPT2Block takes no position ids: a checkpointed block does not hold them */
    sb.ids_unheld = learned && !sb.ids_saved && b->sp == 1 ? b->seq * INT64 : 0;
    uint64_t mask = mask_elems(b, m) * (uint64_t)mask_dt(b, m);
    sb.locals = b->seq * INT64 + mask_count(b, m) * mask;
    /* 5.x's masks ride in the layers' calls (4.48's eager mask is an argument) */
    int in_call = mask_count(b, m) > 1 || llmem_model_window_reached(m, b->attention, b->seq);
    sb.in_call = in_call ? mask_count(b, m) * mask : 0;
    sb.mask_other = mask_count(b, m) > 1 ? mask : 0;
    sb.locals += alibi_elems(b, m) * dt + position_id_elems(b, m) * INT64;
    /* FalconModel computes its rotary tables with ALiBi too, for no layer to use */
    if ((m->traits & TRAIT_ROTARY_TABLES) && m->positions != LLMEM_POSITIONS_ROTARY)
        sb.locals += 2 * b->seq * m->head_dim * dt;
    return sb;
}

/* PEFT's enable_input_require_grads makes a frozen embedding's output a leaf
 * that requires grad: an op after it (positions, Gemma's normalizer, a
 * dropout, a projection, a norm) puts an AccumulateGrad node on it, which
 * keeps it alive through backward (the embedding segment saves it). */
static int leaf_kept(const build *b, const model_shape *m, const seg_spec *s)
{
    return s->input_rg && !s->weights_trainable &&
           (m->positions == LLMEM_POSITIONS_LEARNED || m->embed_norm ||
            (m->traits & TRAIT_SCALED_EMBED) ||
            ((m->traits & TRAIT_EMBED_DROPOUT) && b->dropout[DROPOUT_EMBEDDING] > 0.0));
}

/* The locals are inputs_embeds (the token embedding's output) and learned
 * position embeddings (GPT2Model's position_embeds, OPTDecoder's pos_embeds):
 * the layers get a new tensor (their sum, Gemma's hidden_states *
 * normalizer, BLOOM's word_embeddings_layernorm, an embedding dropout) and
 * the locals stay bound beside it. Embedding backward saves only the
 * indices and a sum or a scaling by a constant nothing, so only BLOOM's
 * LayerNorm, when it needs grads, saves its input. OPT's project_in, and
 * Phi's embedding dropout, rebind inputs_embeds to their output. Megatron's embedding (sequence
 * parallelism) sums inside its own module: only the decoder input stays. */
uint64_t llmem_layers_embedding_locals(const build *b, const model_shape *m, const seg_spec *s,
                                       int *input_kept)
{
    uint64_t rows = b->tokens / b->sp, tok = rows * m->embed_dim * (uint64_t)b->param_dt;
    uint64_t H = m->hidden;
    /* inputs_embeds, unless the embedding segment keeps it anyway */
    uint64_t embeds_local = leaf_kept(b, m, s) ? 0 : tok;
    int dropout = (m->traits & TRAIT_EMBED_DROPOUT) && !(m->traits & TRAIT_DROPOUT_REBINDS) &&
                  b->dropout[DROPOUT_EMBEDDING] > 0.0;
    *input_kept = 0;
    if (b->sp > 1) {
        *input_kept = 1;
        return 0;
    }
    if (m->traits & TRAIT_MASK_POSITIONS) {
        uint64_t in_dt = (uint64_t)(m->embed_dim != H && b->autocast ? b->compute : b->param_dt);
        uint64_t embeds = m->embed_dim != H ? rows * H * in_dt : embeds_local;
        return embeds + rows * H * (uint64_t)b->param_dt;
    }
    if (m->positions == LLMEM_POSITIONS_LEARNED)
        return embeds_local + b->seq * H * (uint64_t)b->param_dt; /* position_embeds */
    if (m->embed_norm) {
        int needs_grad = s->norms_trainable || s->weights_trainable || s->input_rg;
        return needs_grad ? 0 : tok;
    }
    if ((m->traits & TRAIT_SCALED_EMBED) || dropout)
        return embeds_local;
    *input_kept = 1;
    return 0;
}

void llmem_layers_decoder(build *b, const model_shape *m, const seg_spec *s)
{
    shared_tensors sh = shared_inputs(b, m);
    sh.window = sh.mask;
    if (s->full_attention) /* its mask is None: the causal kernel */
        sh.mask = -1;
    tid x = llmem_graph_tensor(b->g, b->tokens / b->sp * m->hidden, layer_input_dt(b, m, s),
                               ROLE_INPUT, s->input_rg);
    b->g->output = llmem_layer_path(m->path)->block(b, m, s, x, &sh);
    if (b->hold_input)
        llmem_layers_hold_input(b->g);
}

void llmem_layers_decoder_tail(build *b, const model_shape *m, const seg_spec *s)
{
    graph *g = b->g;
    g->output = llmem_layer_path(m->path)->tail(b, m, s, g->mark.carry);
    if (b->hold_input)
        llmem_layers_hold_input(g);
}

void llmem_layers_take_kind(const model_shape *m, seg_spec *to, const seg_spec *from)
{
    const layer_path *path = llmem_layer_path(m->path);
    if (path->tail != NULL)
        memcpy((char *)to + path->kind, (const char *)from + path->kind, sizeof(int));
}

void llmem_layers_hold_input(graph *g)
{
    g->hold_input = 1;
}

/* The token (and position) embedding. input_rg here means PEFT's
 * enable_input_require_grads hook: a frozen embedding's output is made a leaf
 * that requires grad, which its AccumulateGrad node keeps alive to the end. */
void llmem_layers_embedding(build *b, const model_shape *m, const seg_spec *s)
{
    llmem_region(b, "embedding");
    tid x = op_embedding(b, m->vocab, m->embed_dim, s->weights_trainable, NULL);
    if (s->input_rg && !s->weights_trainable) {
        b->g->t[x].rg = (uint8_t)b->g->grad_enabled;
        if (leaf_kept(b, m, s))
            llmem_graph_op(b->g, 0, b->param_dt, &x, 1, BIT(0), 0, 0, 0, 0);
    }
    if (m->traits & TRAIT_SCALED_EMBED) /* hidden_states * normalizer (sqrt(hidden), a 0-dim tensor) */
        x = op_scale(b, x);
    if (m->traits & TRAIT_MASK_POSITIONS) {
        /* OPTLearnedPositionalEmbedding: embedding(position_ids + offset); the
         * index tensor is new (int64 [batch, seq]) and EmbeddingBackward keeps
         * it for the position table's gradient. Under sequence parallelism
         * the rank looks up its share of the tokens, as the token embedding
         * hands it on (or the sum outgrows the residual stream). */
        uint64_t rank_tokens = b->tokens / b->sp;
        tid ids = llmem_graph_tensor(b->g, b->tokens, INT64, ROLE_EXTERNAL, 0);
        tid index = llmem_graph_op(b->g, rank_tokens, INT64, &ids, 1, 0, 0, 0, 0, 0);
        tid table = op_param(b, (m->max_positions + m->position_offset) * m->hidden,
                             s->weights_trainable);
        tid pos = llmem_graph_op(b->g, rank_tokens * m->hidden, b->param_dt,
                                 (tid[]){ table, index }, 2, BIT(1), 0, 0, 0, 0);
        if (m->embed_dim != m->hidden) /* project_in, no bias */
            x = op_linear(b, x, m->embed_dim, m->hidden, s->weights_trainable, 0);
        b->g->output = op_add(b, x, pos);
        return;
    }
    if (m->embed_norm) /* BLOOM's word_embeddings_layernorm */
        x = op_layer_norm(b, x, m->hidden, s->norms_trainable, m->norm_bias);
    if (m->traits & TRAIT_EMBED_DROPOUT) /* emb_dropout, embed_dropout, embedding_dropout */
        x = op_dropout(b, x, DROPOUT_EMBEDDING);
    if (m->positions == LLMEM_POSITIONS_LEARNED) {
        /* The positions of the rank's tokens: under sequence parallelism a
         * chunk of seq / sp of them (broadcast over the batch), like the
         * token embedding's output, or the sum outgrows the residual stream. */
        uint64_t rows = (b->seq + b->sp - 1) / b->sp;
        tid pos = llmem_graph_op(b->g, rows * m->hidden, b->param_dt,
                           (tid[]){ op_param(b, (m->max_positions + m->position_offset) * m->hidden,
                                             s->weights_trainable) },
                           1, 0, 0, 0, 0, 0);
        x = op_add(b, x, pos);
        x = op_dropout(b, x, DROPOUT_EMBEDDING); /* embd_pdrop */
    }
    b->g->output = x;
}

/*
 * Fused linear cross-entropy (Liger-Kernel's fused_linear_cross_entropy.py):
 * the logits are computed chunk by chunk, chunk = next_pow2(ceil(tokens /
 * ceil(vocab / hidden))) rows, and the gradients of the input and of the
 * head's weight (zeros_like(weight)) are computed in forward and saved until
 * backward hands them over. No full logits exist.
 */
static uint64_t loss_chunk(const build *b, const model_shape *m)
{
    if (b->loss_chunk != 0) /* fixed: a compiled walk samples its caller's chunk */
        return b->loss_chunk == LOSS_CHUNK_ALL ? b->tokens : b->loss_chunk;
    uint64_t E = m->embed_dim;
    uint64_t inc = (m->vocab + E - 1) / E, rows = (b->tokens + inc - 1) / inc;
    uint64_t chunk = 1;
    while (chunk < rows)
        chunk <<= 1;
    return chunk > b->tokens ? b->tokens : chunk;
}

uint64_t llmem_layers_piece(const build *b, const model_shape *m, const seg_spec *s)
{
    if (!s->chunked_loss)
        return 0;
    if (b->loss_chunk != 0) /* fixed, whatever the tokens at this point */
        return b->loss_chunk == LOSS_CHUNK_ALL ? 0 : b->loss_chunk;
    uint64_t chunk = loss_chunk(b, m);
    return chunk < b->tokens ? chunk : 0; /* a fixed chunk, or all the tokens */
}

static void chunked_head_loss(build *b, const model_shape *m, const seg_spec *s, tid x)
{
    uint64_t E = m->embed_dim, chunk = loss_chunk(b, m);
    tid w = op_param(b, m->vocab * E, s->weights_trainable);
    tid xc = op_cast(b, x, b->compute);
    uint64_t grad_in = graph_rg(b->g, xc) ? b->g->t[xc].bytes : 0;
    uint64_t grad_w = s->weights_trainable ? b->g->t[w].bytes : 0;
    uint64_t workspace = chunk * m->vocab * (uint64_t)b->compute + chunk * E * FP32;
    tid in[2] = { xc, w };
    b->g->output = llmem_graph_op(b->g, 1, FP32, in, 2, SAVE_AUX, GRADS_IN_AUX, grad_in + grad_w,
                                  workspace, 0);
}

/* Final norm, lm_head, and ForCausalLMLoss: logits.float(), labels padded
 * and shifted, cross_entropy = log_softmax + nll_loss. */
void llmem_layers_head(build *b, const model_shape *m, const seg_spec *s)
{
    tid x = llmem_graph_tensor(b->g, b->tokens / b->sp * m->hidden, residual_dt(b, m), ROLE_INPUT,
                               s->input_rg);
    tid last_layer = x;
    /* The base model's forward returns after its final norm (and OPT's
     * project_out): until then its locals (inputs_embeds, the position ids,
     * the masks) stay bound. */
    int model_tail = m->final_norm || m->embed_dim != m->hidden;
    tid locals = s->model_locals && model_tail
                     ? llmem_graph_tensor(b->g, b->model_locals, 1, ROLE_INPUT, 0)
                     : -1;
    llmem_region(b, "norm");
    if (m->final_norm) {
        x = llmem_seg_norm(b, m, s, x);
        llmem_graph_hold(b->g, last_layer); /* the model's hidden_states, until rebound */
    }
    if (m->embed_dim != m->hidden) { /* OPT's project_out, no bias; it trains with the embedding */
        llmem_region(b, "head");
        x = op_linear(b, x, m->hidden, m->embed_dim, s->projections_trainable, 0);
    }
    llmem_graph_hold(b->g, locals);
    llmem_region(b, "loss");
    if (s->chunked_loss) {
        chunked_head_loss(b, m, s, x);
        return;
    }
    /* The output layer is column-parallel over the vocabulary. */
    llmem_region(b, "head");
    tid logits = b->sp > 1 ? llmem_seg_linear_sp(b, x, m->embed_dim, m->vocab, s->weights_trainable,
                                                 m->head_bias, 1)
                           : op_linear(b, x, m->embed_dim, m->vocab, s->weights_trainable,
                                       m->head_bias);
    if (m->traits & TRAIT_SOFTCAP) /* final_logit_softcapping: / cap, tanh, * cap */
        logits = op_scale(b, op_tanh(b, op_scale(b, logits)));
    llmem_region(b, "loss");
    tid lf = op_cast(b, logits, FP32);
    /* pad(labels, (0, 1), -100)[..., 1:].contiguous(): int64, saved by nll_loss.
     * One row is contiguous already, so .contiguous() copies nothing then. */
    tid padded = llmem_graph_op(b->g, b->batch * (b->seq + 1), INT64, NULL, 0, 0, 0, 0, 0, 0);
    tid target = llmem_graph_op(b->g, b->tokens, INT64, &padded, 1, 0, 0, 0, 0, 0);
    if (b->batch == 1)
        llmem_graph_view(b->g, target, padded);
    tid logp = llmem_graph_op(b->g, b->tokens * m->vocab, FP32, &lf, 1, SAVE_OUT, 0, 0, 0, 0);
    tid in[2] = { logp, target };
    b->g->output = llmem_graph_op(b->g, 1, FP32, in, 2, BIT(1), 0, 0, 0, 0);
    llmem_graph_hold(b->g, logits); /* the model output keeps the logits until the loss returns */
    llmem_graph_hold(b->g, lf);     /* ForCausalLMLoss's locals: the fp32 logits and padded labels */
    llmem_graph_hold(b->g, padded);
    llmem_graph_hold(b->g, x);      /* the CausalLM forward's hidden_states local */
}
