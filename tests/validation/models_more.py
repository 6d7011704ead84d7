"""More architectures for the validation harness, built from models.py's
pieces and following Hugging Face transformers eager code op for op:

* Qwen3 (Llama layer + ``q_norm`` / ``k_norm`` RMSNorm over head_dim,
  applied to ``q_proj(h).view(B, S, -1, D)`` before the transpose);
* Mixtral-style sparse MoE MLP (``MixtralSparseMoeBlock``, transformers
  4.48: softmax router in fp32, top-k, renormalised, per-expert loop with
  ``torch.where`` / ``index_add_``), optionally with Qwen2-MoE's shared
  expert and its sigmoid gate; or, with ``experts_impl="grouped-mm"``,
  transformers 5.x's block (3-D experts run by ``grouped_mm_experts_forward``,
  ``torch._grouped_mm`` emulated by ``GroupedMM``);
* Phi-3 (fused ``qkv_proj`` sliced into views, fused ``gate_up_proj``
  chunked);
* Gemma-2 (Gemma2RMSNorm ``(1 + w)`` in fp32, four norms per layer,
  sqrt(hidden)-scaled embeddings, GeGLU with tanh gelu, attention-logit
  softcapping 50, final-logit softcapping 30, tied embeddings; transformers
  5.x's per-layer-type mask mapping: eager, a float mask per type built
  once per forward (sdpa.eager_mask); sdpa, no attention softcapping, the
  window's bool mask on the sliding layers once reached, None on the others).

``build_model`` dispatches these and falls back to models.build_model for the
plain gpt2 / llama configurations.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn
import torch.nn.functional as F

import models as M

_orig_build_model = M.build_model


@dataclasses.dataclass
class ArchConfigMore(M.ArchConfig):
    qk_norm: int = 0
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    shared_expert_gate: int = 0
    # how the routed experts run: "loop" (transformers 4.48's modules) or
    # "grouped-mm" (5.x's 3-D experts under grouped_mm)
    experts_impl: str = "loop"
    # Gemma-2 defaults (Gemma2Config)
    attn_logit_softcapping: float = 50.0
    final_logit_softcapping: float = 30.0
    # sliding_window: models.ArchConfig's; Gemma-2 takes 0 as Gemma2Config's 4096


GEMMA2_SLIDING_WINDOW = 4096  # Gemma2Config's default sliding_window


# ---------------------------------------------------------------------------
# Norms
# ---------------------------------------------------------------------------

class Gemma2RMSNorm(M.LlamaRMSNorm):
    """transformers Gemma2RMSNorm: ``_norm(x.float()) * (1.0 + weight.float())``
    then ``type_as(x)``; weight initialised to zeros.  Subclass of
    LlamaRMSNorm only so that the Trainer's no-decay grouping sees a norm."""

    def __init__(self, dim, eps, amp):
        super().__init__(dim, eps, amp)
        self.eps = eps
        with torch.no_grad():
            self.weight.zero_()

    def _norm(self, x):
        amp = self._amp[0]
        return x * torch.rsqrt(amp.fp32(M.mean_lastdim(torch.pow(amp.fp32(x), 2)) + self.eps))

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


# ---------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------

class Qwen3Attention(M.LlamaAttention):
    """Qwen3Attention: RMSNorm over head_dim on q and k before the transpose."""

    def __init__(self, cfg, layer_idx, amp):
        super().__init__(cfg, layer_idx, amp)
        self.q_norm = M.LlamaRMSNorm(cfg.head_dim, cfg.eps, amp)
        self.k_norm = M.LlamaRMSNorm(cfg.head_dim, cfg.eps, amp)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = M.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, attn_weights = self._attend(query_states, key_states, value_states,
                                                 attention_mask)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class Phi3Attention(M.LlamaAttention):
    """Phi3Attention (4.48): one qkv_proj, sliced with ``qkv[..., a:b]``."""

    def __init__(self, cfg, layer_idx, amp):
        nn.Module.__init__(self)
        self.head_dim = cfg.head_dim
        self.num_heads = cfg.heads
        self.num_key_value_heads = cfg.kv_heads
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.p_attention()
        op_size = cfg.heads * cfg.head_dim + 2 * (cfg.kv_heads * cfg.head_dim)
        self.qkv_proj = M.Linear(cfg.hidden, op_size, False, amp)
        self.o_proj = M.Linear(cfg.heads * cfg.head_dim, cfg.hidden, False, amp)
        self.attention = cfg.attention
        self._amp = [amp]

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        qkv = self.qkv_proj(hidden_states)
        query_pos = self.num_heads * self.head_dim
        query_states = qkv[..., :query_pos]
        key_states = qkv[..., query_pos: query_pos + self.num_key_value_heads * self.head_dim]
        value_states = qkv[..., query_pos + self.num_key_value_heads * self.head_dim:]
        query_states = query_states.view(hidden_shape).transpose(1, 2)
        key_states = key_states.view(hidden_shape).transpose(1, 2)
        value_states = value_states.view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = M.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, attn_weights = self._attend(query_states, key_states, value_states,
                                                 attention_mask)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class Gemma2Attention(M.LlamaAttention):
    """Gemma2Attention + gemma2 eager_attention_forward (logit softcapping
    ``/ cap; tanh; * cap`` after ``* scaling``, before the mask).  Under sdpa
    LlamaAttention._attend runs sdpa_attention_forward, which ignores the
    ``softcap`` kwarg transformers 5.x passes: no softcapping."""

    def __init__(self, cfg, layer_idx, amp):
        super().__init__(cfg, layer_idx, amp)
        self.scaling = cfg.head_dim ** -0.5  # query_pre_attn_scalar = head_dim
        self.softcap = cfg.attn_logit_softcapping

    def _eager(self, query, key, value, attention_mask, scaling, p):
        amp = self._amp[0]
        key_states = M.repeat_kv(key, self.num_key_value_groups)
        value_states = M.repeat_kv(value, self.num_key_value_groups)
        attn_weights = M.matmul(amp, query, key_states.transpose(2, 3)) * scaling
        if self.softcap is not None:
            attn_weights = attn_weights / self.softcap
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * self.softcap
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        attn_weights = M.dropout(attn_weights, p, self.training)
        attn_output = M.matmul(amp, attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        return attn_output, attn_weights


# ---------------------------------------------------------------------------
# MLPs
# ---------------------------------------------------------------------------

class Phi3MLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.gate_up_proj = M.Linear(cfg.hidden, 2 * cfg.intermediate, False, amp)
        self.down_proj = M.Linear(cfg.intermediate, cfg.hidden, False, amp)

    def forward(self, hidden_states):
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * F.silu(gate)
        return self.down_proj(up_states)


class Gemma2MLP(M.LlamaMLP):
    """GeGLU: down(gelu_tanh(gate(x)) * up(x))."""

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class MixtralExpert(nn.Module):
    """MixtralBlockSparseTop2MLP: w2(silu(w1(x)) * w3(x))."""

    def __init__(self, hidden, inter, amp):
        super().__init__()
        self.w1 = M.Linear(hidden, inter, False, amp)
        self.w2 = M.Linear(inter, hidden, False, amp)
        self.w3 = M.Linear(hidden, inter, False, amp)

    def forward(self, hidden_states):
        current_hidden_states = F.silu(self.w1(hidden_states)) * self.w3(hidden_states)
        current_hidden_states = self.w2(current_hidden_states)
        return current_hidden_states


class SharedExpertMLP(nn.Module):
    """Qwen2MoeMLP used as the shared expert."""

    def __init__(self, hidden, inter, amp):
        super().__init__()
        self.gate_proj = M.Linear(hidden, inter, False, amp)
        self.up_proj = M.Linear(hidden, inter, False, amp)
        self.down_proj = M.Linear(inter, hidden, False, amp)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def _add_shared_expert(block, cfg, amp):
    """Qwen2-MoE's shared expert and its sigmoid gate, where the config has them."""
    block.shared_expert = None
    block.shared_expert_gate = None
    if cfg.shared_expert_intermediate > 0:
        block.shared_expert = SharedExpertMLP(cfg.hidden, cfg.shared_expert_intermediate, amp)
        if cfg.shared_expert_gate:
            block.shared_expert_gate = M.Linear(cfg.hidden, 1, False, amp)


class SparseMoeBlock(nn.Module):
    """MixtralSparseMoeBlock (transformers 4.48, jitter 0) plus, when
    shared_expert_intermediate > 0, Qwen2MoeSparseMoeBlock's shared expert
    (``F.sigmoid(shared_expert_gate(h)) * shared_expert(h)`` added before the
    reshape; the gate only when shared_expert_gate)."""

    def __init__(self, cfg, amp):
        super().__init__()
        self.hidden_dim = cfg.hidden
        self.num_experts = cfg.experts
        self.top_k = cfg.experts_per_token
        self.gate = M.Linear(cfg.hidden, cfg.experts, False, amp)
        self.experts = nn.ModuleList([MixtralExpert(cfg.hidden, cfg.expert_intermediate, amp)
                                      for _ in range(cfg.experts)])
        _add_shared_expert(self, cfg, amp)
        self._amp = [amp]

    def forward(self, hidden_states):
        amp = self._amp[0]
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        # softmax with an explicit dtype: autocast runs it as asked
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x,
                                           current_hidden_states.to(hidden_states.dtype))
        if self.shared_expert is not None:
            shared_expert_output = self.shared_expert(hidden_states)
            if self.shared_expert_gate is not None:
                shared_expert_output = torch.sigmoid(
                    self.shared_expert_gate(hidden_states)) * shared_expert_output
            final_hidden_states = final_hidden_states + shared_expert_output
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        del amp
        return final_hidden_states, router_logits


class GroupedMM(torch.autograd.Function):
    """``torch._grouped_mm(x, w.transpose(-2, -1), offs=offsets)`` (PyTorch
    2.9+, CUDA only; torch 1.13 has none): what it allocates and saves.  The
    output [R, N] is written group by group in place (no temporaries); autograd
    saves ``self`` for ``mat2``'s gradient and ``mat2`` for ``self``'s;
    backward makes the input's gradient [R, K] and the whole 3-D weight's
    [E, N, K] (zeros where an expert got no rows)."""

    @staticmethod
    def forward(ctx, x, w, counts):
        out = x.new_empty(x.shape[0], w.shape[1])
        start = 0
        for e, n in enumerate(counts):
            if n:
                torch.mm(x[start:start + n], w[e].t(), out=out[start:start + n])
            start += n
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              w if ctx.needs_input_grad[0] else None)
        ctx.counts = counts
        ctx.wshape = tuple(w.shape)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx = grad.new_empty(grad.shape[0], ctx.wshape[2]) if ctx.needs_input_grad[0] else None
        gw = x.new_zeros(ctx.wshape) if ctx.needs_input_grad[1] else None
        start = 0
        for e, n in enumerate(ctx.counts):
            if n:
                if gx is not None:
                    torch.mm(grad[start:start + n], w[e], out=gx[start:start + n])
                if gw is not None:
                    torch.mm(grad[start:start + n].t(), x[start:start + n], out=gw[e])
            start += n
        return gx, gw, None


class Experts5(nn.Module):
    """transformers 5.x's MixtralExperts (Qwen2MoeExperts alike): the experts
    as two 3-D parameters, run by ``grouped_mm_experts_forward``
    (integrations/moe.py), the default where torch._grouped_mm dispatches.
    Autocast casts both operands of the grouped matmul (the weights' casts
    cached, as any leaf's)."""

    def __init__(self, cfg, amp):
        super().__init__()
        E, H, I = cfg.experts, cfg.hidden, cfg.expert_intermediate
        self.num_experts = E
        self.gate_up_proj = nn.Parameter(torch.empty(E, 2 * I, H).normal_(0.0, 0.02))
        self.down_proj = nn.Parameter(torch.empty(E, H, I).normal_(0.0, 0.02))
        self._amp = [amp]

    def forward(self, hidden_states, top_k_index, top_k_weights):
        amp = self._amp[0]
        num_top_k = top_k_index.size(-1)
        num_tokens = hidden_states.size(0)
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_ids = top_k_index.reshape(-1)
        token_idx = torch.arange(num_tokens).unsqueeze(1).expand(-1, num_top_k).reshape(-1)
        perm = torch.argsort(expert_ids, stable=True)
        inv_perm = torch.argsort(perm, stable=True)
        sample_weights = top_k_weights.reshape(-1)
        current_hidden_states = hidden_states[token_idx]
        expert_ids_g = expert_ids[perm]
        sample_weights_g = sample_weights[perm]
        current_states_g = current_hidden_states[perm]
        num_tokens_per_expert = torch.histc(expert_ids_g.float(), bins=self.num_experts, min=0,
                                            max=self.num_experts - 1)
        offsets = torch.cumsum(num_tokens_per_expert, dim=0, dtype=torch.int32)
        counts = [int(c) for c in num_tokens_per_expert.tolist()]
        gate_up_out = GroupedMM.apply(amp.lp(current_states_g), amp.lp(self.gate_up_proj), counts)
        gate, up = gate_up_out.chunk(2, dim=-1)
        hidden_after_activation = F.silu(gate) * up
        out_per_sample_g = GroupedMM.apply(amp.lp(hidden_after_activation),
                                           amp.lp(self.down_proj), counts)
        out_per_sample_g = out_per_sample_g * sample_weights_g.unsqueeze(-1)
        out_per_sample = out_per_sample_g[inv_perm]
        final_hidden_states.index_add_(0, token_idx,
                                       out_per_sample.to(final_hidden_states.dtype))
        del offsets  # the kernel's argument; counts stand for it here
        return final_hidden_states


class TopKRouter5(nn.Module):
    """transformers 5.x's MixtralTopKRouter: fp32 softmax, top-k,
    renormalised; the scores stay fp32."""

    def __init__(self, cfg, amp):
        super().__init__()
        self.top_k = cfg.experts_per_token
        self.hidden_dim = cfg.hidden
        self.weight = nn.Parameter(torch.empty(cfg.experts, cfg.hidden).normal_(0.0, 0.02))
        self._amp = [amp]

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = M.linear(self._amp[0], hidden_states, self.weight)
        router_probs = F.softmax(router_logits.float(), dim=-1)
        router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
        router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
        return router_logits, router_top_value, router_indices


class SparseMoeBlock5(nn.Module):
    """transformers 5.x's MixtralSparseMoeBlock, or with a shared expert
    Qwen2MoeSparseMoeBlock (the shared expert first, its sigmoid gate after the
    routed experts, added in place)."""

    def __init__(self, cfg, amp):
        super().__init__()
        self.gate = TopKRouter5(cfg, amp)
        self.experts = Experts5(cfg, amp)
        _add_shared_expert(self, cfg, amp)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        shared_expert_output = None
        if self.shared_expert is not None:
            shared_expert_output = self.shared_expert(hidden_states)
        _, top_k_weights, top_k_index = self.gate(hidden_states)
        expert_output = self.experts(hidden_states, top_k_index, top_k_weights)
        if shared_expert_output is not None:
            if self.shared_expert_gate is not None:
                shared_expert_output = torch.sigmoid(
                    self.shared_expert_gate(hidden_states)) * shared_expert_output
            expert_output += shared_expert_output
        return expert_output.reshape(batch_size, sequence_length, hidden_dim), None


# ---------------------------------------------------------------------------
# Decoder layers
# ---------------------------------------------------------------------------

class MoreDecoderLayer(nn.Module):
    """Llama / Qwen3 / Mixtral / Qwen2-MoE / Phi-3 decoder layer (pre-norm,
    two residuals; Phi3DecoderLayer adds resid_attn_dropout and
    resid_mlp_dropout (resid_pdrop) to the residual sums)."""

    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.p_resid = None  # no dropout layer
        if cfg.family == "phi3":
            self.self_attn = Phi3Attention(cfg, layer_idx, amp)
            self.mlp = Phi3MLP(cfg, amp)
            self.p_resid = cfg.p_hidden()
        else:
            self.self_attn = (Qwen3Attention if cfg.qk_norm else M.LlamaAttention)(
                cfg, layer_idx, amp)
            if cfg.experts > 0:
                block = SparseMoeBlock5 if cfg.experts_impl == "grouped-mm" else SparseMoeBlock
                self.block_sparse_moe = block(cfg, amp)
            else:
                self.mlp = M.LlamaMLP(cfg, amp)
        self.input_layernorm = M.LlamaRMSNorm(cfg.hidden, cfg.eps, amp)
        self.post_attention_layernorm = M.LlamaRMSNorm(cfg.hidden, cfg.eps, amp)

    def forward(self, hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                cache_position=None, position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights = self.self_attn(
            hidden_states=hidden_states, position_embeddings=position_embeddings,
            attention_mask=attention_mask)
        if self.p_resid is not None:  # residual + self.resid_attn_dropout(hidden_states)
            hidden_states = residual + M.dropout(hidden_states, self.p_resid, self.training)
        else:
            hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        if hasattr(self, "block_sparse_moe"):
            hidden_states, router_logits = self.block_sparse_moe(hidden_states)
            del router_logits  # output_router_logits=False: not collected
        else:
            hidden_states = self.mlp(hidden_states)
        if self.p_resid is not None:  # residual + self.resid_mlp_dropout(hidden_states)
            hidden_states = residual + M.dropout(hidden_states, self.p_resid, self.training)
        else:
            hidden_states = residual + hidden_states
        return (hidden_states,)


class Gemma2DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.is_sliding = not bool(layer_idx % 2)
        # config.layer_types[layer_idx] (transformers 5.x): the key of the
        # model's mask mapping this layer attends with under sdpa
        self.attention_type = "sliding_attention" if self.is_sliding else "full_attention"
        self.sliding_window = cfg.sliding_window or GEMMA2_SLIDING_WINDOW
        self.self_attn = Gemma2Attention(cfg, layer_idx, amp)
        self.mlp = Gemma2MLP(cfg, amp)
        self.input_layernorm = Gemma2RMSNorm(cfg.hidden, cfg.eps, amp)
        self.post_attention_layernorm = Gemma2RMSNorm(cfg.hidden, cfg.eps, amp)
        self.pre_feedforward_layernorm = Gemma2RMSNorm(cfg.hidden, cfg.eps, amp)
        self.post_feedforward_layernorm = Gemma2RMSNorm(cfg.hidden, cfg.eps, amp)

    def forward(self, hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                cache_position=None, position_embeddings=None):
        # transformers 5.x: the model's forward hands the layer its type's mask
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights = self.self_attn(
            hidden_states=hidden_states, position_embeddings=position_embeddings,
            attention_mask=attention_mask)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        return (hidden_states,)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class MoreForCausalLM(M.LlamaForCausalLM):
    """LlamaForCausalLM with the decoder layer, final norm, embedding scale
    and logit softcapping of the configured family."""

    def __init__(self, cfg):
        M.CausalLMBase.__init__(self, cfg)
        amp = self.amp
        self.is_gemma2 = cfg.family == "gemma2"
        if self.is_gemma2 and cfg.attention not in ("eager", "sdpa"):
            raise ValueError("gemma2 is measured with eager or sdpa attention")
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        layer_cls = Gemma2DecoderLayer if self.is_gemma2 else MoreDecoderLayer
        self.layers = nn.ModuleList([layer_cls(cfg, i, amp) for i in range(cfg.layers)])
        self.norm = (Gemma2RMSNorm if self.is_gemma2 else M.LlamaRMSNorm)(cfg.hidden, cfg.eps, amp)
        self.rotary_emb = M.LlamaRotaryEmbedding(cfg, amp)
        if cfg.tie_embeddings:
            self.lm_head = None
        else:
            self.lm_head = M.Linear(cfg.hidden, cfg.vocab, False, amp)

    def _scale_embeddings(self, hidden_states):
        """Gemma2Model.forward: hidden_states * normalizer (sqrt(hidden), a 0-dim
        tensor in the hidden dtype), after the rotary tables."""
        if not self.is_gemma2:
            return hidden_states
        normalizer = torch.tensor(self.cfg.hidden ** 0.5, dtype=hidden_states.dtype)
        return hidden_states * normalizer

    def _layer_masks(self, attention_mask, inputs_embeds, cache_position):
        """Gemma2Model.forward's causal_mask_mapping (transformers 5.x, no
        cache), built once per forward. Under sdpa "full_attention" is
        create_causal_mask's None at every length (no padding: is_causal) and
        "sliding_attention" create_sliding_window_causal_mask's, None below
        the window, else the bool [B, 1, S, S] mask (sdpa.sliding_window_mask).
        Under eager both are eager_mask's float [B, 1, S, S] in inputs_embeds'
        dtype, at every length. The other families: Llama's one mask."""
        if not self.is_gemma2:
            return super()._layer_masks(attention_mask, inputs_embeds, cache_position)
        window = self.cfg.sliding_window or GEMMA2_SLIDING_WINDOW
        seq = inputs_embeds.shape[1]
        if self.cfg.attention == "eager":
            return {
                "full_attention": M.eager_mask(attention_mask, seq, inputs_embeds.dtype),
                "sliding_attention": M.eager_mask(attention_mask, seq, inputs_embeds.dtype,
                                                  window),
            }
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            raise ValueError("padded batches are not measured with sdpa")
        return {"full_attention": None,
                "sliding_attention": M.sliding_window_mask(attention_mask, seq, window)}

    def _mask_of(self, decoder_layer, masks):
        """A Gemma-2 layer gets the mask of its type."""
        if isinstance(masks, dict):
            return masks[decoder_layer.attention_type]
        return masks

    def _mask_in_call(self, mask):
        """transformers 5.x's GradientCheckpointingLayer: a checkpointed
        Gemma-2 layer holds its mask in its call (models.mask_in_call)."""
        if self.is_gemma2:
            return mask is not None
        return super()._mask_in_call(mask)

    def forward(self, input_ids, attention_mask=None, labels=None):
        outputs = self.model(input_ids, attention_mask)
        hidden_states = outputs[0]
        logits = M.linear(self.amp, hidden_states[:, slice(0, None), :], self.lm_head_weight())
        if self.is_gemma2 and self.cfg.final_logit_softcapping is not None:
            logits = logits / self.cfg.final_logit_softcapping
            logits = torch.tanh(logits)
            logits = logits * self.cfg.final_logit_softcapping
        loss = None
        if labels is not None:
            loss = M.causal_lm_loss(logits, labels, self.cfg.vocab)
        return {"loss": loss, "logits": logits}


def is_more(cfg):
    return (cfg.family in ("phi3", "gemma2")
            or getattr(cfg, "qk_norm", 0) or getattr(cfg, "experts", 0) > 0)


def build_model(cfg, seed=0):
    if not is_more(cfg):
        return _orig_build_model(cfg, seed=seed)
    torch.manual_seed(seed)
    return MoreForCausalLM(cfg)


def install():
    """Route models.build_model (used by measure.build) through this module."""
    M.build_model = build_model
