"""The families added to the phased model, in plain PyTorch, following the
Hugging Face transformers eager code op for op (with models.py's CUDA
autocast emulation, CUDA dropout and reentrant checkpointing):

* OPT, BLOOM, GPT-NeoX (Pythia), Falcon, Phi (1, 1.5, 2), StarCoder2:
  transformers v4.50.0 (the first release in which all six compute their
  loss with ``self.loss_function``, i.e. ``ForCausalLMLoss``; 4.48 still had
  OPT's ``logits[..., :-1, :].contiguous()``), ``modeling_<type>.py``;
* DeepSeek-V2 and DeepSeek-V3 (multi-head latent attention, shared and
  routed experts): transformers v4.54.0, the first release with both
  ``modeling_deepseek_v2.py`` and ``modeling_deepseek_v3.py``.  Its
  ``create_causal_mask`` (eager: ``torch.where`` of a boolean
  ``[B, 1, S, S]`` mask) leaves the same ``[B, 1, S, S]`` additive mask in
  the embedding dtype as the 4.48 path models.py builds, and its
  ``GradientCheckpointingLayer`` (``checkpoint(partial(layer, **kwargs),
  hidden_states)``) keeps the same tensors as passing them positionally.

Every dropout site of a family (hidden, residual, attention, embedding)
takes the row's ``dropout``, or, where the row gives them, the config's own
probability by kind of site (``attention_dropout``, ``hidden_dropout``,
``embedding_dropout``: models.ArchConfig).  Names of modules follow transformers, so PEFT
target names (``query_key_value``, ``dense``, ``fc1``, ...) select the same
linears.  ``install()`` routes models.build_model through this module.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import models as M
import models_more as MM
from sdpa import scaled_dot_product_attention, sdpa_attention_forward, sliding_window_mask

_prev_build_model = None

FAMILIES = ("opt", "bloom", "gpt_neox", "falcon", "phi", "starcoder2", "deepseek")


@dataclasses.dataclass
class ArchConfigFamilies(MM.ArchConfigMore):
    rotary_dim: int = 0            # partial rotary: dims of a head with rotary (0 = head_dim)
    parallel_block: int = 0        # GPT-NeoX use_parallel_residual / Falcon parallel_attn
    norms_per_layer: int = 2       # Falcon: 1 (input_layernorm) or 2 (ln_attn, ln_mlp)
    post_norm: int = 0             # OPT do_layer_norm_before = False
    embed_dim: int = 0             # OPT word_embed_proj_dim (0 = hidden)
    activation: str = ""           # hidden_act ("" = the family's)
    new_arch: int = 0              # Falcon new_decoder_architecture
    alibi: int = 0                 # Falcon alibi (Falcon-RW)
    q_lora_rank: int = 0           # DeepSeek
    kv_lora_rank: int = 0
    v_head_dim: int = 0
    dense_layers: int = 0          # DeepSeek first_k_dense_replace
    router_bias: int = 0           # DeepSeek-V3 (e_score_correction_bias): the V3 code
    n_group: int = 1
    topk_group: int = 1
    routed_scaling_factor: float = 1.0
    norm_topk_prob: int = 1


# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------

class LayerNorm(M.LayerNorm):
    """nn.LayerNorm with optional bias (a subclass, so that the Trainer's
    no-decay group sees a norm)."""

    def __init__(self, n, eps, amp, bias=True):
        super().__init__(n, eps, amp)
        if not bias:
            self.bias = None

    def forward(self, x):
        amp = self._amp[0]
        return F.layer_norm(amp.fp32(x), (self.n,), amp.fp32(self.weight),
                            amp.fp32(self.bias), self.eps)


class RMSNorm(M.LlamaRMSNorm):
    """DeepseekV2RMSNorm / DeepseekV3RMSNorm (LlamaRMSNorm's code)."""


def gelu_new(amp, x):
    """NewGELUActivation (GPT-2, Phi): Python ops, pow on autocast's fp32 list."""
    return M.gelu_new(amp, x)


def gelu_fast(amp, x):
    """FastGELUActivation: 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x)))."""
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def activation(name, amp):
    """transformers.activations.ACT2FN for the names these families use."""
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    if name in ("gelu_pytorch_tanh", "gelu_tanh"):
        return functools.partial(F.gelu, approximate="tanh")
    if name == "gelu_new":
        return functools.partial(gelu_new, amp)
    if name == "gelu_fast":
        return functools.partial(gelu_fast, amp)
    if name == "silu":
        return F.silu
    raise ValueError("activation %r not modelled" % name)


def causal_mask_4d(attention_mask, inputs_embeds, cache_position, sdpa=False,
                   sliding_window=0):
    """``_update_causal_mask`` for eager attention without a cache (the code
    OPT, BLOOM, GPT-NeoX, Falcon, Phi and StarCoder2 copy from Llama in 4.50):
    ``[B, 1, S, S]`` additive mask in the embedding dtype.  ``sdpa``: no mask
    without padding (5.x's create_causal_mask -> sdpa_mask skips a causal mask
    when every token is attended; 4.50's _ignore_causal_mask_sdpa too); with
    a ``sliding_window`` 5.x's create_sliding_window_causal_mask
    (sdpa.sliding_window_mask: a bool mask from seq >= window)."""
    if sdpa and sliding_window:
        return sliding_window_mask(attention_mask, inputs_embeds.shape[1], sliding_window)
    if sdpa:
        if bool(attention_mask.bool().all()):
            return None
        raise ValueError("padded batches are not measured with sdpa")
    return M.LlamaForCausalLM._prepare_4d_causal_attention_mask_with_cache_position(
        attention_mask, sequence_length=inputs_embeds.shape[1],
        target_length=attention_mask.shape[-1], dtype=inputs_embeds.dtype,
        device=inputs_embeds.device, cache_position=cache_position,
        batch_size=inputs_embeds.shape[0])


class _RopeCfg:
    def __init__(self, dim, theta=10000.0):
        self.head_dim = dim
        self.rope_theta = theta


def rotary(dim, amp, theta=10000.0):
    """The family's rotary embedding module over ``dim`` dimensions
    (GPTNeoXRotaryEmbedding / PhiRotaryEmbedding with partial_rotary_factor:
    default rope init over head_dim * factor): LlamaRotaryEmbedding's code."""
    return M.LlamaRotaryEmbedding(_RopeCfg(dim, theta), amp)


def attention_interface(module, amp, query, key, value, attention_mask, scaling, p, n_rep=1):
    """The attention function the module was built with (OPT, GPT-NeoX, Phi,
    StarCoder2 and DeepSeek call ``ALL_ATTENTION_FUNCTIONS[...]``):
    transformers' ``sdpa_attention_forward`` (sdpa.py; ``enable_gqa`` where the
    module has ``num_key_value_groups``: Phi, StarCoder2, DeepSeek), or
    ``eager_attention_forward``.  Returns [B, S, H, D] and the weights."""
    if module.attention == "sdpa":
        gqa_module = hasattr(module, "num_key_value_groups")
        return sdpa_attention_forward(amp, query, key, value, p, scaling, gqa_module,
                                      attention_mask=attention_mask), None
    return eager_attention(module, amp, query, key, value, attention_mask, scaling, p, n_rep)


def eager_attention(module, amp, query, key, value, attention_mask, scaling, p, n_rep=1):
    """``eager_attention_forward`` of Llama-derived code (GPT-NeoX without
    repeat_kv, Phi, StarCoder2, DeepSeek with it)."""
    key_states = M.repeat_kv(key, n_rep)
    value_states = M.repeat_kv(value, n_rep)
    attn_weights = M.matmul(amp, query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = M.dropout(attn_weights, p, module.training)
    attn_output = M.matmul(amp, attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class FamilyLM(M.CausalLMBase):
    """What every family model shares: the loss, the embedding accessors."""

    def lm_head_weight(self):
        return self.lm_head.weight

    def head(self, hidden_states):
        return M.linear(self.amp, hidden_states, self.lm_head_weight(),
                        getattr(self, "lm_head_bias", None))

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden_states = self.model(input_ids, attention_mask)
        logits = self.head(hidden_states)
        loss = None
        if labels is not None:
            loss = M.causal_lm_loss(logits, labels, self.cfg.vocab)
        return {"loss": loss, "logits": logits}

    def decoder_layers(self):
        return list(self.layers)

    def get_input_embeddings(self):
        return self.embed_tokens

    def embedding_modules(self):
        return [self.embed_tokens]

    def run_layer(self, layer, hidden_states, *args):
        """``args[0]`` is the mask (or alibi) of the layer's signature; a
        sliding-window mask rides in the checkpointed function
        (models.mask_in_call) as transformers 5.x passes it."""
        if self.gradient_checkpointing and self.training:
            if args and M.is_window_mask(args[0]):
                return self._ckpt(M.mask_in_call(layer.__call__, args[0]), hidden_states,
                                  *args[1:])
            return self._ckpt(layer.__call__, hidden_states, *args)
        return layer(hidden_states, *args)


def _head(cfg, amp, in_f, bias=False):
    return M.Linear(in_f, cfg.vocab, bias, amp)


# ---------------------------------------------------------------------------
# OPT (modeling_opt.py, 4.50)
# ---------------------------------------------------------------------------

class OPTAttention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.num_heads = cfg.heads
        self.head_dim = H // cfg.heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = M.Linear(H, H, cfg.attn_bias, amp)
        self.v_proj = M.Linear(H, H, cfg.attn_bias, amp)
        self.q_proj = M.Linear(H, H, cfg.attn_bias, amp)
        self.out_proj = M.Linear(H, H, cfg.attn_bias, amp)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention
        self._amp = [amp]

    def forward(self, hidden_states, attention_mask):
        amp = self._amp[0]
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        query_states = query_states.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        key_states = key_states.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        if self.attention == "sdpa":
            # the attention interface with scaling=1.0: the query is scaled already
            attn_output = sdpa_attention_forward(amp, query_states, key_states, value_states,
                                                 self.p if self.training else 0.0, 1.0, False)
            attn_output = attn_output.reshape(bsz, tgt_len, -1).contiguous()
            return self.out_proj(attn_output), None
        attn_weights = M.matmul(amp, query_states, key_states.transpose(3, 2))
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_probs = M.dropout(attn_weights, self.p, self.training)
        attn_output = M.matmul(amp, attn_probs, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, tgt_len, -1)
        attn_output = self.out_proj(attn_output)
        return attn_output, attn_probs


class OPTDecoderLayer(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.self_attn = OPTAttention(cfg, amp)
        self.do_layer_norm_before = not cfg.post_norm
        self.p = cfg.p_hidden()
        self.activation_fn = activation(cfg.activation or "relu", amp)
        self.self_attn_layer_norm = LayerNorm(H, cfg.eps, amp)
        self.fc1 = M.Linear(H, cfg.intermediate, cfg.attn_bias, amp)
        self.fc2 = M.Linear(cfg.intermediate, H, cfg.attn_bias, amp)
        self.final_layer_norm = LayerNorm(H, cfg.eps, amp)

    def forward(self, hidden_states, attention_mask=None, layer_head_mask=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                position_ids=None, cache_position=None):
        residual = hidden_states
        if self.do_layer_norm_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, self_attn_weights = self.self_attn(hidden_states, attention_mask)
        hidden_states = M.dropout(hidden_states, self.p, self.training)
        hidden_states = residual + hidden_states
        if not self.do_layer_norm_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states_shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        if self.do_layer_norm_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        hidden_states = M.dropout(hidden_states, self.p, self.training)
        hidden_states = (residual + hidden_states).view(hidden_states_shape)
        if not self.do_layer_norm_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return (hidden_states,)


class OPTForCausalLM(FamilyLM):
    OFFSET = 2  # OPTLearnedPositionalEmbedding

    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        E = cfg.embed_dim or cfg.hidden
        self.embed_tokens = nn.Embedding(cfg.vocab, E)
        self.embed_positions = nn.Embedding(cfg.max_positions + self.OFFSET, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        nn.init.normal_(self.embed_positions.weight, 0.0, cfg.init_std)
        self.project_out = M.Linear(cfg.hidden, E, False, amp) if E != cfg.hidden else None
        self.project_in = M.Linear(E, cfg.hidden, False, amp) if E != cfg.hidden else None
        self.final_layer_norm = None if cfg.post_norm else LayerNorm(cfg.hidden, cfg.eps, amp)
        self.layers = nn.ModuleList([OPTDecoderLayer(cfg, amp) for _ in range(cfg.layers)])
        self.lm_head = None  # tied to embed_tokens (OPTForCausalLM)

    def lm_head_weight(self):
        return self.embed_tokens.weight

    def embedding_modules(self):
        """Frozen with the embeddings under "freeze": the position table and
        the projections to and from the embedding width."""
        mods = [self.embed_tokens, self.embed_positions]
        return mods + [p for p in (self.project_in, self.project_out) if p is not None]

    def model(self, input_ids, attention_mask):
        """OPTDecoder.forward (no cache)."""
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa")
        position_ids = torch.cumsum(attention_mask, dim=1)
        position_ids = (position_ids * attention_mask - 1).long()
        position_ids = position_ids[:, 0:]
        pos_embeds = self.embed_positions(position_ids + self.OFFSET)
        if self.project_in is not None:
            inputs_embeds = self.project_in(inputs_embeds)
        hidden_states = inputs_embeds + pos_embeds
        for layer in self.layers:
            hidden_states = self.run_layer(layer, hidden_states, causal_mask, None, None, False,
                                           False, position_ids, cache_position)[0]
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        if self.project_out is not None:
            hidden_states = self.project_out(hidden_states)
        return hidden_states

    def head(self, hidden_states):
        return M.linear(self.amp, hidden_states, self.lm_head_weight()).contiguous()


# ---------------------------------------------------------------------------
# BLOOM (modeling_bloom.py, 4.50)
# ---------------------------------------------------------------------------

def build_alibi_tensor(attention_mask, num_heads, dtype):
    batch_size, seq_length = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))),
                                  dtype=torch.float32)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def dropout_add(x, residual, prob, training):
    out = M.dropout(x, prob, training)
    return residual + out


def bloom_gelu_forward(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def bloom_gelu_back(g, x):
    x = x[0]
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (
        1 + tanh_out)
    return ff * g


class GeLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return bloom_gelu_forward(input)

    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors
        return bloom_gelu_back(grad_output, input)


class BloomAttention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.num_heads = cfg.heads
        self.head_dim = H // cfg.heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.beta = 1.0
        self.query_key_value = M.Linear(H, 3 * H, True, amp)
        self.dense = M.Linear(H, H, True, amp)
        self.p = cfg.p_attention()  # attention_dropout
        self.p_hidden = cfg.p_hidden()  # hidden_dropout (dropout_add)
        self._amp = [amp]

    def _reshape(self, fused_qkv):
        batch_size, seq_length, _ = fused_qkv.shape
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
        query_layer = fused_qkv[..., 0, :].transpose(1, 2)
        key_layer = fused_qkv[..., 1, :].transpose(1, 2)
        value_layer = fused_qkv[..., 2, :].transpose(1, 2)
        return query_layer, key_layer, value_layer

    def _merge_heads(self, x):
        batch_size_and_num_heads, seq_length, _ = x.shape
        batch_size = batch_size_and_num_heads // self.num_heads
        x = x.view(batch_size, self.num_heads, seq_length, self.head_dim)
        x = x.permute(0, 2, 1, 3)
        return x.reshape(batch_size, seq_length, self.num_heads * self.head_dim)

    def forward(self, hidden_states, residual, alibi, attention_mask):
        amp = self._amp[0]
        batch_size, q_length, _ = hidden_states.shape
        fused_qkv = self.query_key_value(hidden_states)
        query_layer, key_layer, value_layer = self._reshape(fused_qkv)
        query_layer = query_layer.reshape(batch_size * self.num_heads, -1, self.head_dim)
        key_layer = key_layer.reshape(batch_size * self.num_heads, -1, self.head_dim).transpose(-1, -2)
        value_layer = value_layer.reshape(batch_size * self.num_heads, -1, self.head_dim)
        # alibi.baddbmm: on autocast's lower-precision list (all three arguments cast)
        attention_scores = torch.baddbmm(amp.lp(alibi), amp.lp(query_layer), amp.lp(key_layer),
                                         beta=self.beta, alpha=self.inv_norm_factor)
        attn_weights = attention_scores.view(batch_size, self.num_heads, q_length, -1)
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_layer.shape[-1]]
            attn_weights = attn_weights + causal_mask
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_layer.dtype)
        attention_probs = M.dropout(attention_probs, self.p, self.training)  # attention_dropout
        attention_probs_reshaped = attention_probs.view(batch_size * self.num_heads, q_length, -1)
        context_layer = torch.bmm(amp.lp(attention_probs_reshaped), amp.lp(value_layer))
        context_layer = self._merge_heads(context_layer)
        output_tensor = self.dense(context_layer)
        output_tensor = dropout_add(output_tensor, residual, self.p_hidden, self.training)
        return output_tensor


class BloomMLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.dense_h_to_4h = M.Linear(H, 4 * H, True, amp)
        self.dense_4h_to_h = M.Linear(4 * H, H, True, amp)
        self.p = cfg.p_hidden()

    def forward(self, hidden_states, residual):
        hidden_states = self.dense_h_to_4h(hidden_states)
        hidden_states = GeLUFunction.apply(hidden_states) if self.training else \
            bloom_gelu_forward(hidden_states)
        intermediate_output = self.dense_4h_to_h(hidden_states)
        return dropout_add(intermediate_output, residual, self.p, self.training)


class BloomBlock(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.input_layernorm = LayerNorm(H, cfg.eps, amp)
        self.self_attention = BloomAttention(cfg, amp)
        self.post_attention_layernorm = LayerNorm(H, cfg.eps, amp)
        self.mlp = BloomMLP(cfg, amp)

    def forward(self, hidden_states, alibi, attention_mask, layer_past=None, head_mask=None,
                use_cache=False, output_attentions=False, cache_position=None):
        layernorm_output = self.input_layernorm(hidden_states)
        residual = hidden_states  # apply_residual_connection_post_layernorm = False
        attention_output = self.self_attention(layernorm_output, residual, alibi, attention_mask)
        layernorm_output = self.post_attention_layernorm(attention_output)
        residual = attention_output
        output = self.mlp(layernorm_output, residual)
        return (output,)


class BloomForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.word_embeddings = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.word_embeddings.weight, 0.0, cfg.init_std)
        self.word_embeddings_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.h = nn.ModuleList([BloomBlock(cfg, amp) for _ in range(cfg.layers)])
        self.ln_f = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.lm_head = None  # tied

    @property
    def embed_tokens(self):
        return self.word_embeddings

    @property
    def layers(self):
        return self.h

    def lm_head_weight(self):
        return self.word_embeddings.weight

    def embedding_modules(self):
        """word_embeddings_layernorm is frozen with the embedding under "freeze"."""
        return [self.word_embeddings, self.word_embeddings_layernorm]

    def model(self, input_ids, attention_mask):
        """BloomModel.forward (no cache)."""
        inputs_embeds = self.word_embeddings(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        hidden_states = self.word_embeddings_layernorm(inputs_embeds)
        alibi = build_alibi_tensor(attention_mask, self.cfg.heads, dtype=hidden_states.dtype)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position)
        for block in self.h:
            hidden_states = self.run_layer(block, hidden_states, alibi, causal_mask, None, None,
                                           False, False, cache_position)[0]
        hidden_states = self.ln_f(hidden_states)
        return hidden_states


# ---------------------------------------------------------------------------
# GPT-NeoX (modeling_gpt_neox.py, 4.50)
# ---------------------------------------------------------------------------

def apply_partial_rotary(q, k, cos, sin):
    """GPT-NeoX's apply_rotary_pos_emb: rotate the first cos.shape[-1] dims,
    then cat the rest back."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (M.rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (M.rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class GPTNeoXAttention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.head_size = H // cfg.heads
        self.scaling = self.head_size ** -0.5
        self.query_key_value = M.Linear(H, 3 * H, cfg.attn_bias, amp)
        self.dense = M.Linear(H, H, cfg.attn_bias, amp)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention
        self._amp = [amp]

    def forward(self, hidden_states, attention_mask, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, 3 * self.head_size)
        qkv = self.query_key_value(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = apply_partial_rotary(query_states, key_states, cos, sin)
        attn_output, attn_weights = attention_interface(
            self, self._amp[0], query_states, key_states, value_states,
            attention_mask, self.scaling, self.p if self.training else 0.0)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.dense(attn_output)
        return attn_output


class GPTNeoXMLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.dense_h_to_4h = M.Linear(cfg.hidden, cfg.intermediate, True, amp)
        self.dense_4h_to_h = M.Linear(cfg.intermediate, cfg.hidden, True, amp)
        self.act = activation(cfg.activation or "gelu", amp)

    def forward(self, hidden_states):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(hidden_states)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.use_parallel_residual = bool(cfg.parallel_block)
        self.input_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.post_attention_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.attention = GPTNeoXAttention(cfg, amp)
        self.mlp = GPTNeoXMLP(cfg, amp)
        self.p = cfg.p_hidden()

    def forward(self, hidden_states, attention_mask=None, position_ids=None, head_mask=None,
                use_cache=False, layer_past=None, output_attentions=False, cache_position=None,
                position_embeddings=None):
        attn_output = self.attention(self.input_layernorm(hidden_states), attention_mask,
                                     position_embeddings)
        attn_output = M.dropout(attn_output, self.p, self.training)  # post_attention_dropout
        if self.use_parallel_residual:
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            mlp_output = M.dropout(mlp_output, self.p, self.training)
            hidden_states = mlp_output + attn_output + hidden_states
        else:
            attn_output = attn_output + hidden_states
            mlp_output = self.mlp(self.post_attention_layernorm(attn_output))
            mlp_output = M.dropout(mlp_output, self.p, self.training)
            hidden_states = mlp_output + attn_output
        return (hidden_states,)


class GPTNeoXForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.embed_in = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_in.weight, 0.0, cfg.init_std)
        self.layers = nn.ModuleList([GPTNeoXLayer(cfg, amp) for _ in range(cfg.layers)])
        self.final_layer_norm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.rotary_emb = rotary(cfg.rotary_dim or cfg.head_dim, amp)
        self.embed_out = _head(cfg, amp, cfg.hidden)

    @property
    def embed_tokens(self):
        return self.embed_in

    def lm_head_weight(self):
        return self.embed_out.weight

    def model(self, input_ids, attention_mask):
        inputs_embeds = self.embed_in(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa")
        # emb_dropout (hidden_dropout)
        hidden_states = M.dropout(inputs_embeds, self.cfg.p_embedding(), self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = self.run_layer(layer, hidden_states, causal_mask, position_ids, None,
                                           False, None, False, cache_position,
                                           position_embeddings)[0]
        return self.final_layer_norm(hidden_states)


# ---------------------------------------------------------------------------
# Falcon (modeling_falcon.py, 4.50), rotary positions
# ---------------------------------------------------------------------------

class FalconLinear(M.Linear):
    """FalconLinear: ``input @ self.weight.T`` then ``+ self.bias``.  The
    transposed weight is a view, not a leaf, so autocast casts it at every
    use instead of caching the cast."""

    def forward(self, x):
        amp = self._amp[0]
        hidden_states = M.matmul(amp, x, self.weight.T)
        if self.bias is None:
            return hidden_states
        return hidden_states + self.bias


class FalconAttention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.num_heads = cfg.heads
        self.head_dim = H // cfg.heads
        self.new_decoder_architecture = bool(cfg.new_arch)
        self.multi_query = not cfg.new_arch and cfg.kv_heads == 1
        if self.new_decoder_architecture:
            qkv_out_dim = (cfg.kv_heads * 2 + cfg.heads) * self.head_dim
        elif self.multi_query:
            qkv_out_dim = H + 2 * self.head_dim
        else:
            qkv_out_dim = 3 * H
        self.query_key_value = FalconLinear(H, qkv_out_dim, cfg.attn_bias, amp)
        self.dense = FalconLinear(H, H, cfg.attn_bias, amp)
        self.num_kv_heads = cfg.kv_heads if (self.new_decoder_architecture or not self.multi_query) \
            else 1
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention

    def _split_heads(self, fused_qkv):
        if self.new_decoder_architecture:
            batch, seq_len, _ = fused_qkv.shape
            qkv = fused_qkv.view(batch, seq_len, -1, self.num_heads // self.num_kv_heads + 2,
                                 self.head_dim)
            query = qkv[:, :, :, :-2]
            key = qkv[:, :, :, [-2]]
            value = qkv[:, :, :, [-1]]
            key = torch.broadcast_to(key, query.shape)
            value = torch.broadcast_to(value, query.shape)
            query, key, value = [x.flatten(2, 3) for x in (query, key, value)]
            return query, key, value
        elif not self.multi_query:
            batch_size, seq_length, _ = fused_qkv.shape
            fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
            return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]
        else:
            batch_size, seq_length, _ = fused_qkv.shape
            fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads + 2, self.head_dim)
            return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, hidden_states, alibi, attention_mask, position_embeddings, amp):
        fused_qkv = self.query_key_value(hidden_states)
        num_kv_heads = self.num_heads if self.new_decoder_architecture else self.num_kv_heads
        query_layer, key_layer, value_layer = self._split_heads(fused_qkv)
        batch_size, query_length, _, _ = query_layer.shape
        query_layer = query_layer.transpose(1, 2).reshape(batch_size, self.num_heads, query_length,
                                                          self.head_dim)
        key_layer = key_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length,
                                                      self.head_dim)
        value_layer = value_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length,
                                                          self.head_dim)
        if alibi is None:
            cos, sin = position_embeddings
            query_layer, key_layer = M.apply_rotary_pos_emb(query_layer, key_layer, cos, sin)
        kv_length = key_layer.shape[-2]
        if attention_mask is not None:
            attention_mask = attention_mask[:, :, :, : key_layer.shape[-2]]
        if alibi is None and self.attention == "sdpa":
            # FalconAttention's own F.scaled_dot_product_attention call: no mask
            # (is_causal), dropout_p 0, no enable_gqa
            attn_output = scaled_dot_product_attention(amp, query_layer, key_layer, value_layer,
                                                       0.0, None, enable_gqa=False)
            return self._merge_heads(attn_output, batch_size, query_length)
        if alibi is not None and self.attention == "sdpa":
            raise ValueError("Falcon's ALiBi under sdpa (a float mask) is not measured")
        if alibi is not None:
            # the eager ALiBi branch (FalconAttention.forward, alibi is not None)
            matmul_result = M.matmul(amp, query_layer, key_layer.transpose(-1, -2))
            attention_scores = matmul_result.view(batch_size, self.num_heads, query_length,
                                                  kv_length)
            input_dtype = attention_scores.dtype
            if input_dtype == torch.float16 or input_dtype == torch.bfloat16:
                attention_scores = attention_scores.to(torch.float32)
            attention_logits = attention_scores + alibi.view(batch_size, self.num_heads, 1, -1)
            attention_logits *= self.inv_norm_factor
            attention_probs = F.softmax(attention_logits + attention_mask, dim=-1,
                                        dtype=hidden_states.dtype)
            attention_probs = M.dropout(attention_probs, self.p, self.training)
            attention_probs_reshaped = attention_probs.view(batch_size, self.num_heads,
                                                            query_length, kv_length)
            attn_output = M.matmul(amp, attention_probs_reshaped, value_layer).flatten(0, 1)
            return self._merge_heads(attn_output, batch_size, query_length)
        attention_scores = M.matmul(amp, query_layer, key_layer.transpose(-1, -2))
        attention_scores /= math.sqrt(self.head_dim)
        # softmax(..., dtype=hidden_states.dtype): the layer norm's output dtype
        attention_scores = F.softmax(attention_scores + attention_mask, dim=-1,
                                     dtype=hidden_states.dtype)
        attn_output = M.matmul(amp, attention_scores, value_layer)
        return self._merge_heads(attn_output, batch_size, query_length)

    def _merge_heads(self, attn_output, batch_size, query_length):
        """Every branch's end: the heads back into the hidden size, then dense."""
        attn_output = attn_output.view(batch_size, self.num_heads, query_length, self.head_dim)
        attn_output = attn_output.permute(0, 2, 1, 3)
        attn_output = attn_output.reshape(batch_size, query_length, self.num_heads * self.head_dim)
        return self.dense(attn_output)


class FalconMLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.dense_h_to_4h = FalconLinear(cfg.hidden, cfg.intermediate, cfg.attn_bias, amp)
        self.act = activation(cfg.activation or "gelu", amp)
        self.dense_4h_to_h = FalconLinear(cfg.intermediate, cfg.hidden, cfg.attn_bias, amp)

    def forward(self, x):
        x = self.act(self.dense_h_to_4h(x))
        return self.dense_4h_to_h(x)


class FalconDecoderLayer(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.self_attention = FalconAttention(cfg, amp)
        self.mlp = FalconMLP(cfg, amp)
        self.new_arch = bool(cfg.new_arch)
        self.parallel_attn = bool(cfg.parallel_block)
        self.two_ln = self.parallel_attn and cfg.norms_per_layer == 2
        self.p = cfg.p_hidden()
        if not self.parallel_attn:
            self.post_attention_layernorm = LayerNorm(H, cfg.eps, amp)
            self.input_layernorm = LayerNorm(H, cfg.eps, amp)
        elif self.two_ln:
            self.ln_attn = LayerNorm(H, cfg.eps, amp)
            self.ln_mlp = LayerNorm(H, cfg.eps, amp)
        else:
            self.input_layernorm = LayerNorm(H, cfg.eps, amp)
        self._amp = [amp]

    def forward(self, hidden_states, alibi, attention_mask, position_ids=None, layer_past=None,
                head_mask=None, use_cache=False, output_attentions=False, cache_position=None,
                position_embeddings=None):
        residual = hidden_states
        if self.new_arch and self.two_ln:
            attention_layernorm_out = self.ln_attn(hidden_states)
            mlp_layernorm_out = self.ln_mlp(hidden_states)
        else:
            attention_layernorm_out = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(attention_layernorm_out, alibi, attention_mask,
                                               position_embeddings, self._amp[0])
        if not self.new_arch:
            if self.parallel_attn:
                mlp_layernorm_out = attention_layernorm_out
            else:
                residual = dropout_add(attention_output, residual, self.p, self.training)
                mlp_layernorm_out = self.post_attention_layernorm(residual)
        if self.new_arch and self.parallel_attn and not self.two_ln:
            mlp_layernorm_out = attention_layernorm_out
        mlp_output = self.mlp(mlp_layernorm_out)
        if self.new_arch or self.parallel_attn:
            mlp_output += attention_output
        output = dropout_add(mlp_output, residual, self.p, self.training)
        return (output,)


def falcon_alibi(attention_mask, num_heads, dtype):
    """modeling_falcon.build_alibi_tensor: BLOOM's, with the slopes in bf16."""
    batch_size, seq_length = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))),
                                  dtype=torch.float32)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None].bfloat16() * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


class FalconForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.word_embeddings = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.word_embeddings.weight, 0.0, cfg.init_std)
        self.h = nn.ModuleList([FalconDecoderLayer(cfg, amp) for _ in range(cfg.layers)])
        self.ln_f = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.rotary_emb = rotary(cfg.head_dim, amp)
        self.lm_head = None if cfg.tie_embeddings else _head(cfg, amp, cfg.hidden)

    @property
    def embed_tokens(self):
        return self.word_embeddings

    @property
    def layers(self):
        return self.h

    def lm_head_weight(self):
        return self.word_embeddings.weight if self.lm_head is None else self.lm_head.weight

    def model(self, input_ids, attention_mask):
        """FalconModel.forward: with alibi, build_alibi_tensor (bf16 slopes times
        positions, cast to the embedding dtype) and _update_causal_mask's
        masked_fill(alibi / sqrt(head_dim), causal_mask < -1, min): a
        [B, heads, S, S] mask; the rotary tables are computed either way."""
        inputs_embeds = self.word_embeddings(input_ids)
        batch_size, seq_length, _ = inputs_embeds.shape
        alibi = None
        if self.cfg.alibi:
            alibi = falcon_alibi(attention_mask, self.cfg.heads, inputs_embeds.dtype)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa" and not self.cfg.alibi)
        if alibi is not None:
            min_dtype = torch.finfo(inputs_embeds.dtype).min
            a = alibi.reshape(batch_size, -1, *alibi.shape[1:])
            causal_mask = torch.masked_fill(a / math.sqrt(self.cfg.hidden // self.cfg.heads),
                                            causal_mask < -1, min_dtype)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for block in self.h:
            hidden_states = self.run_layer(block, hidden_states, alibi, causal_mask, position_ids,
                                           None, None, False, False, cache_position,
                                           position_embeddings)[0]
        return self.ln_f(hidden_states)


# ---------------------------------------------------------------------------
# Phi (modeling_phi.py, 4.50)
# ---------------------------------------------------------------------------

class PhiAttention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = M.Linear(H, cfg.heads * self.head_dim, True, amp)
        self.k_proj = M.Linear(H, cfg.kv_heads * self.head_dim, True, amp)
        self.v_proj = M.Linear(H, cfg.kv_heads * self.head_dim, True, amp)
        self.dense = M.Linear(cfg.heads * self.head_dim, H, True, amp)
        self.rotary_ndims = cfg.rotary_dim or self.head_dim
        self.qk_layernorm = bool(cfg.qk_norm)
        if self.qk_layernorm:
            self.q_layernorm = LayerNorm(H // cfg.heads, cfg.eps, amp)
            self.k_layernorm = LayerNorm(H // cfg.heads, cfg.eps, amp)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention
        self._amp = [amp]

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.qk_layernorm:
            query_states = self.q_layernorm(query_states)
            key_states = self.k_layernorm(key_states)
        cos, sin = position_embeddings
        query_rot, query_pass = (query_states[..., : self.rotary_ndims],
                                 query_states[..., self.rotary_ndims:])
        key_rot, key_pass = (key_states[..., : self.rotary_ndims],
                             key_states[..., self.rotary_ndims:])
        query_rot, key_rot = M.apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        attn_output, attn_weights = attention_interface(
            self, self._amp[0], query_states, key_states, value_states,
            attention_mask, self.scaling, self.p if self.training else 0.0,
            self.num_key_value_groups)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class PhiMLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.activation_fn = activation(cfg.activation or "gelu_new", amp)
        self.fc1 = M.Linear(cfg.hidden, cfg.intermediate, True, amp)
        self.fc2 = M.Linear(cfg.intermediate, cfg.hidden, True, amp)

    def forward(self, hidden_states):
        return self.fc2(self.activation_fn(self.fc1(hidden_states)))


class PhiDecoderLayer(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.self_attn = PhiAttention(cfg, amp)
        self.mlp = PhiMLP(cfg, amp)
        self.input_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.p = cfg.p_hidden()

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, cache_position=None,
                position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs = self.self_attn(hidden_states, position_embeddings, attention_mask)
        attn_outputs = M.dropout(attn_outputs, self.p, self.training)  # resid_dropout
        feed_forward_hidden_states = M.dropout(self.mlp(hidden_states), self.p, self.training)
        hidden_states = attn_outputs + feed_forward_hidden_states + residual
        return (hidden_states,)


class PhiForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        self.layers = nn.ModuleList([PhiDecoderLayer(cfg, amp) for _ in range(cfg.layers)])
        self.rotary_emb = rotary(cfg.rotary_dim or cfg.head_dim, amp)
        self.final_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.lm_head = _head(cfg, amp, cfg.hidden, bias=True)

    def head(self, hidden_states):
        return self.lm_head(hidden_states)

    def model(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa")
        inputs_embeds = M.dropout(inputs_embeds, self.cfg.p_embedding(), self.training)  # embed_dropout
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = self.run_layer(layer, hidden_states, causal_mask, position_ids, None,
                                           False, False, cache_position, position_embeddings)[0]
        return self.final_layernorm(hidden_states)


# ---------------------------------------------------------------------------
# StarCoder2 (modeling_starcoder2.py, 4.50)
# ---------------------------------------------------------------------------

class Starcoder2Attention(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.scaling = self.head_dim ** -0.5
        b = bool(cfg.attn_bias)
        self.q_proj = M.Linear(H, cfg.heads * self.head_dim, b, amp)
        self.k_proj = M.Linear(H, cfg.kv_heads * self.head_dim, b, amp)
        self.v_proj = M.Linear(H, cfg.kv_heads * self.head_dim, b, amp)
        self.o_proj = M.Linear(cfg.heads * self.head_dim, H, b, amp)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention
        self.p_resid = cfg.p_hidden()  # residual_dropout
        self._amp = [amp]

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = M.apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, attn_weights = attention_interface(
            self, self._amp[0], query_states, key_states, value_states,
            attention_mask, self.scaling, self.p if self.training else 0.0,
            self.num_key_value_groups)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return M.dropout(attn_output, self.p_resid, self.training)  # residual_dropout


class Starcoder2MLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        b = bool(cfg.attn_bias)
        self.c_fc = M.Linear(cfg.hidden, cfg.intermediate, b, amp)
        self.c_proj = M.Linear(cfg.intermediate, cfg.hidden, b, amp)
        self.act = activation(cfg.activation or "gelu_pytorch_tanh", amp)
        self.p = cfg.p_hidden()

    def forward(self, hidden_states):
        hidden_states = self.c_proj(self.act(self.c_fc(hidden_states)))
        return M.dropout(hidden_states, self.p, self.training)


class Starcoder2DecoderLayer(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.self_attn = Starcoder2Attention(cfg, amp)
        self.mlp = Starcoder2MLP(cfg, amp)
        self.input_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.post_attention_layernorm = LayerNorm(cfg.hidden, cfg.eps, amp)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, cache_position=None,
                position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return (hidden_states,)


class Starcoder2ForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        self.layers = nn.ModuleList([Starcoder2DecoderLayer(cfg, amp) for _ in range(cfg.layers)])
        self.norm = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.rotary_emb = rotary(cfg.head_dim, amp)
        self.lm_head = None if cfg.tie_embeddings else _head(cfg, amp, cfg.hidden)

    def lm_head_weight(self):
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    def model(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa", self.cfg.sliding_window)
        hidden_states = inputs_embeds
        # embedding_dropout
        hidden_states = M.dropout(hidden_states, self.cfg.p_embedding(), self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = self.run_layer(layer, hidden_states, causal_mask, position_ids, None,
                                           False, False, cache_position, position_embeddings)[0]
        return self.norm(hidden_states)


# ---------------------------------------------------------------------------
# DeepSeek-V2 / V3 (modeling_deepseek_v2.py, modeling_deepseek_v3.py, 4.54)
# ---------------------------------------------------------------------------

class DeepseekMLP(nn.Module):
    """DeepseekV2MLP / DeepseekV3MLP: down(silu(gate(x)) * up(x)), no biases."""

    def __init__(self, hidden, inter, amp):
        super().__init__()
        self.gate_proj = M.Linear(hidden, inter, False, amp)
        self.up_proj = M.Linear(hidden, inter, False, amp)
        self.down_proj = M.Linear(inter, hidden, False, amp)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def apply_rotary_emb_complex(xq, xk, freqs_cis):
    """DeepSeek-V2's apply_rotary_emb: complex multiplication by freqs_cis."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(1)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3).type_as(xk)
    return xq_out, xk_out


def apply_rotary_pos_emb_interleave(q, k, cos, sin):
    """DeepSeek-V3's apply_rotary_pos_emb_interleave (rope_interleave=True)."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    q_embed = (q * cos) + (M.rotate_half(q) * sin)
    k_embed = (k * cos) + (M.rotate_half(k) * sin)
    return q_embed, k_embed


class DeepseekRotaryComplex(nn.Module):
    """DeepseekV2RotaryEmbedding: freqs_cis = polar(1, freqs) * attention_scaling,
    complex64 [1, S, rope / 2], not cast to the model dtype."""

    def __init__(self, dim, amp, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0
        self._amp = [amp]

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with self._amp[0].region(enabled=False):
            freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
            freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
            freqs_cis = freqs_cis * self.attention_scaling
        return freqs_cis


class DeepseekAttention(nn.Module):
    """DeepseekV2Attention / DeepseekV3Attention (multi-head latent attention)."""

    def __init__(self, cfg, amp):
        super().__init__()
        H = cfg.hidden
        self.v3 = bool(cfg.router_bias)
        self.num_heads = cfg.heads
        self.q_lora_rank = cfg.q_lora_rank
        self.qk_rope_head_dim = cfg.rotary_dim
        self.kv_lora_rank = cfg.kv_lora_rank
        self.v_head_dim = cfg.v_head_dim
        self.qk_nope_head_dim = cfg.head_dim - cfg.rotary_dim
        self.qk_head_dim = cfg.head_dim
        b = bool(cfg.attn_bias)
        if not self.q_lora_rank:
            self.q_proj = M.Linear(H, cfg.heads * self.qk_head_dim, False, amp)
        else:
            self.q_a_proj = M.Linear(H, cfg.q_lora_rank, b, amp)
            self.q_a_layernorm = RMSNorm(cfg.q_lora_rank, 1e-6, amp)
            self.q_b_proj = M.Linear(cfg.q_lora_rank, cfg.heads * self.qk_head_dim, False, amp)
        self.kv_a_proj_with_mqa = M.Linear(H, self.kv_lora_rank + self.qk_rope_head_dim, b, amp)
        self.kv_a_layernorm = RMSNorm(self.kv_lora_rank, 1e-6, amp)
        self.kv_b_proj = M.Linear(self.kv_lora_rank,
                                  cfg.heads * (self.qk_nope_head_dim + self.v_head_dim), False, amp)
        self.o_proj = M.Linear(cfg.heads * self.v_head_dim, H, b, amp)
        self.scaling = self.qk_head_dim ** (-0.5)
        self.p = cfg.p_attention()  # attention_dropout
        self.attention = cfg.attention
        self._amp = [amp]

    def forward(self, hidden_states, position_embeddings, attention_mask):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        if not self.q_lora_rank:
            q = self.q_proj(hidden_states)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim],
                                    dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [self.qk_nope_head_dim, self.v_head_dim],
                                           dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        if self.v3:
            cos, sin = position_embeddings
            q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
        else:
            q_rot, k_rot = apply_rotary_emb_complex(q_rot, k_rot, position_embeddings)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        attn_output, attn_weights = attention_interface(
            self, self._amp[0], query_states, key_states, value_states,
            attention_mask, self.scaling, self.p if self.training else 0.0)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class DeepseekV3TopkRouter(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.top_k = cfg.experts_per_token
        self.n_routed_experts = cfg.experts
        self.routed_scaling_factor = cfg.routed_scaling_factor
        self.n_group = cfg.n_group
        self.topk_group = cfg.topk_group
        self.norm_topk_prob = bool(cfg.norm_topk_prob)
        self.hidden = cfg.hidden
        self.weight = nn.Parameter(torch.empty((cfg.experts, cfg.hidden)).normal_(0.0, 0.02))
        self.register_buffer("e_score_correction_bias", torch.zeros(cfg.experts))
        self._amp = [amp]

    @torch.no_grad()
    def get_topk_indices(self, scores):
        scores_for_choice = scores.view(-1, self.n_routed_experts) + \
            self.e_score_correction_bias.unsqueeze(0)
        group_scores = (scores_for_choice.view(-1, self.n_group,
                                               self.n_routed_experts // self.n_group)
                        .topk(2, dim=-1)[0].sum(dim=-1))
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = (group_mask.unsqueeze(-1)
                      .expand(-1, self.n_group, self.n_routed_experts // self.n_group)
                      .reshape(-1, self.n_routed_experts))
        scores_for_choice = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
        topk_indices = torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]
        return topk_indices

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden)
        router_logits = M.linear(self._amp[0], hidden_states.type(torch.float32),
                                 self.weight.type(torch.float32))
        scores = router_logits.sigmoid()
        topk_indices = self.get_topk_indices(scores)
        topk_weights = scores.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        return topk_indices, topk_weights


class DeepseekV3MoE(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.experts = nn.ModuleList([DeepseekMLP(cfg.hidden, cfg.expert_intermediate, amp)
                                      for _ in range(cfg.experts)])
        self.gate = DeepseekV3TopkRouter(cfg, amp)
        self.shared_experts = DeepseekMLP(cfg.hidden, cfg.shared_expert_intermediate, amp)

    def moe(self, hidden_states, topk_indices, topk_weights):
        final_hidden_states = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
        expert_mask = F.one_hot(topk_indices, num_classes=len(self.experts))
        expert_mask = expert_mask.permute(2, 0, 1)
        for expert_idx in range(len(self.experts)):
            expert = self.experts[expert_idx]
            mask = expert_mask[expert_idx]
            token_indices, weight_indices = torch.where(mask)
            if token_indices.numel() > 0:
                expert_weights = topk_weights[token_indices, weight_indices]
                expert_input = hidden_states[token_indices]
                expert_output = expert(expert_input)
                weighted_output = expert_output * expert_weights.unsqueeze(-1)
                final_hidden_states.index_add_(0, token_indices, weighted_output)
        return final_hidden_states.type(hidden_states.dtype)

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        topk_indices, topk_weights = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.moe(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


class DeepseekV2MoEGate(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.top_k = cfg.experts_per_token
        self.num_experts = cfg.experts
        self.routed_scaling_factor = cfg.routed_scaling_factor
        self.num_group = cfg.n_group
        self.topk_group = cfg.topk_group
        self.topk_method = "group_limited_greedy" if cfg.n_group > 1 else "greedy"
        self.weight = nn.Parameter(torch.empty((cfg.experts, cfg.hidden)).normal_(0.0, 0.02))
        self._amp = [amp]

    def forward(self, hidden_states):
        batch_size, seq_len, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        logits = M.linear(self._amp[0], hidden_states.type(torch.float32),
                          self.weight.type(torch.float32))
        scores = logits.softmax(dim=-1, dtype=torch.float32)
        if self.topk_method == "greedy":
            topk_weight, topk_idx = torch.topk(scores, k=self.top_k, dim=-1, sorted=False)
        else:
            group_scores = scores.view(batch_size * seq_len, self.num_group, -1).max(dim=-1).values
            group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
            group_mask = torch.zeros_like(group_scores)
            group_mask.scatter_(1, group_idx, 1)
            score_mask = (group_mask.unsqueeze(-1)
                          .expand(batch_size * seq_len, self.num_group,
                                  self.num_experts // self.num_group)
                          .reshape(batch_size * seq_len, -1))
            tmp_scores = scores.masked_fill(~score_mask.bool(), 0.0)
            topk_weight, topk_idx = torch.topk(tmp_scores, k=self.top_k, dim=-1, sorted=False)
        topk_weight = topk_weight * self.routed_scaling_factor
        return topk_idx, topk_weight


class DeepseekV2MoE(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.experts = nn.ModuleList([DeepseekMLP(cfg.hidden, cfg.expert_intermediate, amp)
                                      for _ in range(cfg.experts)])
        self.gate = DeepseekV2MoEGate(cfg, amp)
        self.shared_experts = DeepseekMLP(cfg.hidden, cfg.shared_expert_intermediate, amp)

    def moe(self, hidden_states, topk_ids, topk_weight):
        cnts = topk_ids.new_zeros((topk_ids.shape[0], len(self.experts)))
        cnts.scatter_(1, topk_ids, 1)
        tokens_per_expert = cnts.sum(dim=0)
        indicies = topk_ids.view(-1).argsort()
        sorted_tokens = hidden_states[indicies // topk_ids.shape[1]]
        outputs = []
        start_idx = 0
        for i, num_tokens in enumerate(tokens_per_expert):
            if num_tokens == 0:
                continue
            end_idx = start_idx + num_tokens
            expert = self.experts[i]
            tokens_for_this_expert = sorted_tokens[start_idx:end_idx]
            expert_out = expert(tokens_for_this_expert)
            outputs.append(expert_out)
            start_idx = end_idx
        outs = torch.cat(outputs, dim=0) if outputs else sorted_tokens.new_empty(0)
        new_x = torch.empty_like(outs)
        new_x[indicies] = outs
        hidden_states = (new_x.view(*topk_ids.shape, -1).type(topk_weight.dtype)
                         .mul_(topk_weight.unsqueeze(dim=-1)).sum(dim=1).type(new_x.dtype))
        return hidden_states

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        topk_indices, topk_weights = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.moe(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


class DeepseekDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.self_attn = DeepseekAttention(cfg, amp)
        if cfg.experts > 0 and layer_idx >= cfg.dense_layers:
            self.mlp = (DeepseekV3MoE if cfg.router_bias else DeepseekV2MoE)(cfg, amp)
        else:
            self.mlp = DeepseekMLP(cfg.hidden, cfg.intermediate, amp)
        self.input_layernorm = RMSNorm(cfg.hidden, 1e-6, amp)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, 1e-6, amp)

    def forward(self, hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, use_cache=False, cache_position=None,
                position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


class DeepseekForCausalLM(FamilyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        amp = self.amp
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        self.layers = nn.ModuleList([DeepseekDecoderLayer(cfg, i, amp)
                                     for i in range(cfg.layers)])
        self.norm = RMSNorm(cfg.hidden, 1e-6, amp)
        self.rotary_emb = (rotary(cfg.rotary_dim, amp) if cfg.router_bias
                           else DeepseekRotaryComplex(cfg.rotary_dim, amp))
        self.lm_head = _head(cfg, amp, cfg.hidden)

    def model(self, input_ids, attention_mask):
        """DeepseekV2Model / DeepseekV3Model.forward; the layers are
        GradientCheckpointingLayers: checkpoint(partial(layer, **kwargs), hidden_states)."""
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, inputs_embeds.shape[1], device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        causal_mask = causal_mask_4d(attention_mask, inputs_embeds, cache_position,
                                     self.cfg.attention == "sdpa")
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            call = functools.partial(layer.__call__, attention_mask=causal_mask,
                                     position_ids=position_ids, past_key_value=None,
                                     cache_position=cache_position,
                                     position_embeddings=position_embeddings)
            if self.gradient_checkpointing and self.training:
                hidden_states = self._ckpt(call, hidden_states)
            else:
                hidden_states = call(hidden_states)
        return self.norm(hidden_states)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------

BUILDERS = {
    "opt": OPTForCausalLM,
    "bloom": BloomForCausalLM,
    "gpt_neox": GPTNeoXForCausalLM,
    "falcon": FalconForCausalLM,
    "phi": PhiForCausalLM,
    "starcoder2": Starcoder2ForCausalLM,
    "deepseek": DeepseekForCausalLM,
}


def build_model(cfg, seed=0):
    if cfg.family not in BUILDERS:
        return _prev_build_model(cfg, seed=seed)
    torch.manual_seed(seed)
    return BUILDERS[cfg.family](cfg)


def install():
    """Route models.build_model (used by measure.build) through this module,
    after models_more's routing."""
    global _prev_build_model
    MM.install()
    if _prev_build_model is None:
        _prev_build_model = M.build_model
        M.build_model = build_model
