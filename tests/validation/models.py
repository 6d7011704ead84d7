"""Plain-PyTorch GPT-2 and Llama models that follow the Hugging Face
transformers eager code paths op for op, so that the tensors alive during a
training step are the ones HF keeps.

Reference versions: transformers 4.48-4.50 (the first releases with
``ForCausalLMLoss`` pad-and-shift labels, the ``eager_attention_forward``
refactor, Llama's ``_update_causal_mask`` 4-D mask and GPT-2's per-layer
``bias`` bool buffer), PEFT >= 0.14 (LoRA adapters kept in fp32,
``autocast_adapter_dtype=True``), accelerate >= 1.0 (``autocast`` around
``model.forward`` plus ``convert_outputs_to_fp32``).

GPU-faithful substitutions (see README.md):

* dropout runs ``torch.native_dropout`` (the CUDA path of ``F.dropout``:
  1-byte bool mask saved) instead of CPU ``F.dropout``; p == 0 returns the
  input itself as ``F.dropout`` does on CUDA;
* mixed precision emulates CUDA autocast explicitly (``CudaAutocastEmu``):
  CPU autocast uses a different op list.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
import weakref

from sdpa import eager_mask, repeat_kv, sdpa_attention_forward, sliding_window_mask

LLAMA_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                      "up_proj", "down_proj")
GPT2_LORA_TARGETS = ("c_attn", "c_proj", "c_fc")


# ---------------------------------------------------------------------------
# CUDA autocast emulation
# ---------------------------------------------------------------------------

class CudaAutocastEmu:
    """Explicit emulation of ``torch.autocast('cuda', dtype)`` (PyTorch 2.x).

    * ``lp(t)``: argument cast of the lower_precision_fp policy (linear,
      matmul, mm, bmm, addmm, baddbmm, ...).  Every floating argument that is
      not already in the low dtype (and not float64) is cast; casts of fp32
      leaf tensors that require grad and are not views (parameters) are
      cached until the outermost autocast region exits, as
      ``at::autocast::cached_cast`` does.  Everything else (activations,
      frozen weights) is cast again at every use.
    * ``fp32(t)``: argument cast of the fp32 policy (layer_norm, pow, rsqrt,
      nll_loss, exp, log, ...): low-precision floating arguments go to fp32.
    * softmax/log_softmax (fp32_set_opt_dtype) are handled at the call site:
      their input is fp32 in both models whenever autocast is on.
    * all other ops follow ordinary type promotion.

    When ``dtype`` is None (fp32 or pure bf16 training) every method is the
    identity.  Over bf16 parameters (bf16-autocast) ``lp`` returns them as
    they are (cached_cast casts only a dtype other than the target, and
    caches only casts of fp32 tensors), while ``fp32`` still casts them
    (layer_norm's weight and bias: a fresh fp32 copy at every use).
    """

    def __init__(self, dtype: Optional[torch.dtype] = None):
        self.dtype = dtype
        self.depth = 0
        self.enabled_stack = []
        self.cache = {}
        self.cache_hits = 0

    @property
    def active(self):
        return (self.dtype is not None and self.depth > 0
                and (not self.enabled_stack or self.enabled_stack[-1]))

    @contextlib.contextmanager
    def region(self, enabled=True):
        """``with torch.autocast('cuda', dtype, enabled=enabled)``."""
        self.depth += 1
        self.enabled_stack.append(enabled)
        try:
            yield
        finally:
            self.enabled_stack.pop()
            self.depth -= 1
            if self.depth == 0:
                self.cache = {}  # torch.clear_autocast_cache()

    def lp(self, t):
        if t is None or not self.active:
            return t
        if not t.is_floating_point() or t.dtype in (self.dtype, torch.float64):
            return t
        if (t.dtype == torch.float32 and t.requires_grad and t.is_leaf
                and not t._is_view()):
            hit = self.cache.get(id(t))
            if hit is not None and hit[0] is t:
                self.cache_hits += 1
                return hit[1]
            c = t.to(self.dtype)
            self.cache[id(t)] = (t, c)
            return c
        return t.to(self.dtype)

    def fp32(self, t):
        if t is None or not self.active:
            return t
        if t.is_floating_point() and t.dtype not in (torch.float32, torch.float64):
            return t.to(torch.float32)
        return t


def linear(amp, x, w, b=None):
    return F.linear(amp.lp(x), amp.lp(w), amp.lp(b))


def matmul(amp, a, b):
    return torch.matmul(amp.lp(a), amp.lp(b))


class _Mean2x(torch.autograd.Function):
    """``x.mean(dim, keepdim)`` with the autograd node of torch >= 2.0.

    torch 1.13's MeanBackward1 keeps its whole input alive (its formula uses
    ``self.numel()``, which 1.13's codegen can only get from the saved
    tensor); torch 2.x saves only ``self_sym_sizes`` / ``self_sym_numel``.
    Backward is 2.x's ``mean_backward``: ``grad.expand(sizes) / n``."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.sizes = x.shape
        ctx.dim = dim
        ctx.keepdim = keepdim
        return x.mean(dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad):
        g = grad if ctx.keepdim else grad.unsqueeze(ctx.dim)
        return g.expand(ctx.sizes) / ctx.sizes[ctx.dim], None, None


def mean_lastdim(x):
    """``x.mean(-1, keepdim=True)`` saving what torch 2.x saves (see _Mean2x)."""
    if torch.is_grad_enabled() and x.requires_grad:
        return _Mean2x.apply(x, -1, True)
    return x.mean(-1, keepdim=True)


def dropout(x, p, training):
    """``F.dropout`` as it runs on CUDA (PyTorch 2.x ``at::dropout``).

    For 0 < p < 1 in training the fused ``native_dropout`` kernel is used
    (output + bool mask, only the mask is saved for backward); otherwise the
    input itself is returned (no copy)."""
    if not training or p == 0.0 or x.numel() == 0:
        return x
    return torch.native_dropout(x, p, True)[0]


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------

# Families whose transformers code takes config.sliding_window.
WINDOW_FAMILIES = ("llama", "phi3", "starcoder2", "gemma2")


@dataclasses.dataclass
class ArchConfig:
    family: str                 # "gpt2" | "llama"
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_positions: int
    tie_embeddings: bool
    attn_bias: bool             # gpt2: always True (Conv1D biases); llama: q/k/v bias (Qwen2)
    dropout: float = 0.0        # gpt2: embd/attn/resid pdrop; llama: attention_dropout
    eps: float = 1e-5
    attention: str = "eager"    # "eager" | "sdpa" (sdpa.py)
    rope_theta: float = 10000.0
    init_std: float = 0.02
    # A model config's own probability at each kind of dropout site, as
    # transformers feeds its keys to the nn.Dropout / F.dropout calls (the
    # attention probabilities; the attention and MLP outputs; the embedding
    # output): None takes ``dropout``, what every site of a row with one
    # probability runs.
    attention_dropout: Optional[float] = None
    hidden_dropout: Optional[float] = None
    embedding_dropout: Optional[float] = None
    # config.sliding_window (0 = None): Mistral's code on the Llama path,
    # Phi-3, StarCoder2 under transformers 5.x SDPA (sdpa.sliding_window_mask;
    # Gemma-2's eager window in models_more.py, where 0 means its default).
    sliding_window: int = 0

    def __post_init__(self):
        w = self.sliding_window
        if isinstance(w, bool) or not isinstance(w, int) or w < 0:
            raise ValueError("sliding_window must be an integer >= 0 (0 = none), got %r" % (w,))
        if w and self.family not in WINDOW_FAMILIES:
            raise ValueError("sliding_window %d: family %r has no sliding-window attention "
                             "(%s do)" % (w, self.family, ", ".join(WINDOW_FAMILIES)))
        if w and self.family != "gemma2" and self.attention != "sdpa":
            raise ValueError("sliding_window %d with %r attention is not measured (sdpa only)"
                             % (w, self.attention))

    def p_attention(self) -> float:
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    def p_hidden(self) -> float:
        return self.dropout if self.hidden_dropout is None else self.hidden_dropout

    def p_embedding(self) -> float:
        return self.dropout if self.embedding_dropout is None else self.embedding_dropout


# ---------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------

class Linear(nn.Module):
    """nn.Linear whose forward goes through the autocast emulation."""

    def __init__(self, in_f, out_f, bias, amp, std=0.02):
        super().__init__()
        self.in_features = in_f
        self.out_features = out_f
        self.weight = nn.Parameter(torch.empty(out_f, in_f).normal_(0.0, std))
        self.bias = nn.Parameter(torch.zeros(out_f)) if bias else None
        self._amp = [amp]

    def forward(self, x):
        return linear(self._amp[0], x, self.weight, self.bias)


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: ``addmm(bias, x.view(-1, nx), W)``."""

    def __init__(self, nf, nx, amp, std=0.02):
        super().__init__()
        self.nf = nf
        self.in_features = nx
        self.out_features = nf
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(0.0, std))
        self.bias = nn.Parameter(torch.zeros(nf))
        self._amp = [amp]

    def forward(self, x):
        amp = self._amp[0]
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(amp.lp(self.bias), amp.lp(x.view(-1, x.size(-1))),
                        amp.lp(self.weight))
        x = x.view(size_out)
        return x


class LoraLinear(nn.Module):
    """PEFT ``lora.Linear`` around a Linear or Conv1D base layer.

    ``result = base(x); x = x.to(lora_A.dtype);
    result = result + lora_B(lora_A(dropout(x))) * scaling;
    result = result.to(result_dtype)`` (peft tuners/lora/layer.py,
    Linear.forward: the cast stays bound to the end, the dropout's output
    lives through lora_A's call).  lora_dropout = 0 -> nn.Identity;
    p > 0 -> the module's own nn.Dropout (F.dropout, native_dropout on CUDA:
    ``dropout`` above).  lora_A (r x in) kaiming-uniform, lora_B (out x r)
    zeros, both fp32."""

    def __init__(self, base, r, alpha, amp, lora_dropout=0.0):
        super().__init__()
        self.base_layer = base
        self.r = r
        self.lora_dropout = lora_dropout
        self.scaling = alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=torch.float32))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=torch.float32))
        self._amp = [amp]

    def forward(self, x):
        amp = self._amp[0]
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.dtype:  # PEFT _cast_input_dtype: x rebound to the cast
            x = x.to(self.lora_A.dtype)
        # the dropout's output is a temporary of lora_A's call; x stays bound
        result = result + linear(amp, linear(amp, dropout(x, self.lora_dropout, self.training),
                                             self.lora_A), self.lora_B) * self.scaling
        result = result.to(torch_result_dtype)
        return result


def causal_lm_loss(logits, labels, vocab_size, ignore_index=-100):
    """transformers.loss.loss_utils.ForCausalLMLoss (>= 4.48), mean reduction."""
    logits = logits.float()
    labels = labels.to(logits.device)
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    loss = F.cross_entropy(logits, shift_labels, ignore_index=ignore_index,
                           reduction="mean")
    return loss


class CausalLMBase(nn.Module):
    def __init__(self, cfg: ArchConfig):
        super().__init__()
        self.cfg = cfg
        self.amp = CudaAutocastEmu(None)
        self.gradient_checkpointing = False

    @property
    def dtype(self):
        for p in self.parameters():
            if p.is_floating_point():
                return p.dtype
        return torch.float32

    def _ckpt(self, layer, *args):
        """HF ``_gradient_checkpointing_func``: torch.utils.checkpoint with
        use_reentrant=True (``gradient_checkpointing = "reentrant"``) or False
        (``"non-reentrant"``, transformers 5.x's default).  The recomputation
        in backward runs inside a fresh autocast region with the forward's
        autocast state, as both variants re-enter ``torch.autocast``."""
        amp = self.amp
        was_active = amp.active

        def run(*a):
            if amp.depth > 0:  # forward pass: inside the outer region
                return layer(*a)
            with amp.region(enabled=was_active):  # recomputation in backward
                return layer(*a)

        if self.gradient_checkpointing == "non-reentrant":
            return checkpoint_non_reentrant(run, *args)
        return torch.utils.checkpoint.checkpoint(run, *args, use_reentrant=True)


def is_window_mask(mask):
    """The bool sliding-window mask (sdpa.sliding_window_mask); the eager
    4-D masks are additive floats."""
    return isinstance(mask, torch.Tensor) and mask.dtype == torch.bool


def mask_in_call(layer_call, mask):
    """transformers 5.x GradientCheckpointingLayer runs
    ``checkpoint(partial(layer.__call__, **kwargs), hidden_states)``: the
    mask rides in the function, not among the checkpoint's saved inputs.
    The function lives as long as the checkpoint's node (reentrant:
    ``ctx.run_function``, until the graph is freed at the end of backward;
    non-reentrant: the frame the saved-tensor hooks hold, until the layer's
    backward has released them), so every layer holds the mask through its
    backward.  ``layer_call(hidden_states, mask, *rest)``."""
    def call(hidden_states, *rest):
        return layer_call(hidden_states, mask, *rest)
    return call


# ---------------------------------------------------------------------------
# GPT-2
# ---------------------------------------------------------------------------

def gelu_new(amp, input):
    """transformers.activations.NewGELUActivation; pow is on autocast's fp32 list."""
    return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (
        input + 0.044715 * torch.pow(amp.fp32(input), 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        P = cfg.max_positions
        self.register_buffer(
            "bias", torch.tril(torch.ones((P, P), dtype=torch.bool)).view(1, 1, P, P),
            persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = cfg.hidden
        self.num_heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.split_size = cfg.hidden
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * cfg.hidden, cfg.hidden, amp)
        self.c_proj = Conv1D(cfg.hidden, cfg.hidden, amp,
                             std=cfg.init_std / math.sqrt(2 * cfg.layers))
        self.p = cfg.p_attention()          # attn_pdrop
        self.p_resid = cfg.p_hidden()       # resid_pdrop
        self.attention = cfg.attention
        self._amp = [amp]

    def _eager(self, query, key, value, attention_mask):
        """transformers.models.gpt2.modeling_gpt2.eager_attention_forward."""
        amp = self._amp[0]
        attn_weights = matmul(amp, query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype,
                                device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key.shape[-2]]
            attn_weights = attn_weights + causal_mask
        # softmax: autocast fp32_set_opt_dtype; the input is fp32 under autocast here
        if amp.active and attn_weights.dtype != torch.float32:
            attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        else:
            attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = dropout(attn_weights, self.p, self.training)
        attn_output = matmul(amp, attn_weights, value)
        attn_output = attn_output.transpose(1, 2)
        return attn_output, attn_weights

    def forward(self, hidden_states, attention_mask=None):
        query_states, key_states, value_states = self.c_attn(hidden_states).split(
            self.split_size, dim=2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        if self.attention == "sdpa":
            attn_output = sdpa_attention_forward(
                self._amp[0], query_states, key_states, value_states,
                self.p if self.training else 0.0, self.head_dim ** -0.5, gqa_module=False)
            attn_weights = None
        else:
            attn_output, attn_weights = self._eager(query_states, key_states, value_states,
                                                    attention_mask)
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        attn_output = self.c_proj(attn_output)
        attn_output = dropout(attn_output, self.p_resid, self.training)
        return attn_output, attn_weights


class GPT2MLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.c_fc = Conv1D(cfg.intermediate, cfg.hidden, amp)
        self.c_proj = Conv1D(cfg.hidden, cfg.intermediate, amp,
                             std=cfg.init_std / math.sqrt(2 * cfg.layers))
        self.p = cfg.p_hidden()  # resid_pdrop
        self._amp = [amp]

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = gelu_new(self._amp[0], hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = dropout(hidden_states, self.p, self.training)
        return hidden_states


class LayerNorm(nn.Module):
    def __init__(self, n, eps, amp):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n))
        self.eps = eps
        self.n = n
        self._amp = [amp]

    def forward(self, x):
        amp = self._amp[0]  # layer_norm is on autocast's fp32 list
        return F.layer_norm(amp.fp32(x), (self.n,), amp.fp32(self.weight),
                            amp.fp32(self.bias), self.eps)


class GPT2Block(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.ln_1 = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.attn = GPT2Attention(cfg, layer_idx, amp)
        self.ln_2 = LayerNorm(cfg.hidden, cfg.eps, amp)
        self.mlp = GPT2MLP(cfg, amp)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                encoder_hidden_states=None, encoder_attention_mask=None,
                use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, self_attn_weights = self.attn(hidden_states, attention_mask=attention_mask)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        outputs = (hidden_states,)
        return outputs


class GPT2LMHeadModel(CausalLMBase):
    def __init__(self, cfg: ArchConfig):
        super().__init__(cfg)
        amp = self.amp
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden)
        nn.init.normal_(self.wte.weight, 0.0, cfg.init_std)
        nn.init.normal_(self.wpe.weight, 0.0, cfg.init_std)
        self.h = nn.ModuleList([GPT2Block(cfg, i, amp) for i in range(cfg.layers)])
        self.ln_f = LayerNorm(cfg.hidden, cfg.eps, amp)
        if cfg.tie_embeddings:
            self.lm_head = None
        else:
            self.lm_head = Linear(cfg.hidden, cfg.vocab, False, amp)

    def get_input_embeddings(self):
        return self.wte

    def lm_head_weight(self):
        return self.wte.weight if self.lm_head is None else self.lm_head.weight

    def transformer(self, input_ids, attention_mask):
        """GPT2Model.forward (eager attention, no cache, no head mask)."""
        cfg = self.cfg
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device
        past_length = 0
        position_ids = torch.arange(past_length, input_shape[-1] + past_length,
                                    dtype=torch.long, device=device)
        position_ids = position_ids.unsqueeze(0)
        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        # eager: 2-D padding mask -> additive [B, 1, 1, S] in the model dtype;
        # sdpa: none when there is no padding (_prepare_4d_attention_mask_for_sdpa
        # tests torch.all(mask == 1) and returns None)
        attention_mask = attention_mask.view(batch_size, -1) if attention_mask is not None else None
        if attention_mask is not None and cfg.attention == "sdpa":
            if bool(torch.all(attention_mask == 1)):
                attention_mask = None
        if attention_mask is not None:
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.dtype).min
        hidden_states = dropout(hidden_states, cfg.p_embedding(), self.training)  # embd_pdrop
        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
        for block in self.h:
            if self.gradient_checkpointing and self.training:
                outputs = self._ckpt(block.__call__, hidden_states, None, attention_mask,
                                     None, None, None, False, False)
            else:
                outputs = block(hidden_states, layer_past=None, attention_mask=attention_mask,
                                head_mask=None, use_cache=False, output_attentions=False)
            hidden_states = outputs[0]
        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        return (hidden_states,)

    def forward(self, input_ids, attention_mask=None, labels=None):
        transformer_outputs = self.transformer(input_ids, attention_mask)
        hidden_states = transformer_outputs[0]
        lm_logits = linear(self.amp, hidden_states, self.lm_head_weight())
        loss = None
        if labels is not None:
            loss = causal_lm_loss(lm_logits, labels, self.cfg.vocab)
        return {"loss": loss, "logits": lm_logits}

    def decoder_layers(self):
        return list(self.h)

    def embedding_modules(self):
        return [self.wte, self.wpe]


# ---------------------------------------------------------------------------
# Llama (and Qwen2-style q/k/v bias)
# ---------------------------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps, amp):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
        self._amp = [amp]

    def forward(self, hidden_states):
        amp = self._amp[0]
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = mean_lastdim(torch.pow(amp.fp32(hidden_states), 2))
        hidden_states = hidden_states * torch.rsqrt(amp.fp32(variance + self.variance_epsilon))
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        dim = cfg.head_dim
        inv_freq = 1.0 / (cfg.rope_theta ** (
            torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0
        self._amp = [amp]

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with self._amp[0].region(enabled=False):  # torch.autocast(enabled=False)
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos()
            sin = emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class LlamaAttention(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.head_dim = cfg.head_dim
        self.num_key_value_groups = cfg.heads // cfg.kv_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.p_attention()
        self.q_proj = Linear(cfg.hidden, cfg.heads * cfg.head_dim, cfg.attn_bias, amp)
        self.k_proj = Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, cfg.attn_bias, amp)
        self.v_proj = Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, cfg.attn_bias, amp)
        self.o_proj = Linear(cfg.heads * cfg.head_dim, cfg.hidden, False, amp)
        self.attention = cfg.attention
        self._amp = [amp]

    def _eager(self, query, key, value, attention_mask, scaling, p):
        """transformers.models.llama.modeling_llama.eager_attention_forward."""
        amp = self._amp[0]
        key_states = repeat_kv(key, self.num_key_value_groups)
        value_states = repeat_kv(value, self.num_key_value_groups)
        attn_weights = matmul(amp, query, key_states.transpose(2, 3)) * scaling
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        attn_weights = dropout(attn_weights, p, self.training)
        attn_output = matmul(amp, attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        return attn_output, attn_weights

    def _attend(self, query, key, value, attention_mask):
        """The attention interface the model was built with: eager, or
        transformers' sdpa_attention_forward (sdpa.py); [B, S, H, D] out."""
        p = 0.0 if not self.training else self.attention_dropout
        if self.attention == "sdpa":
            return sdpa_attention_forward(self._amp[0], query, key, value, p, self.scaling,
                                          gqa_module=True, attention_mask=attention_mask), None
        return self._eager(query, key, value, attention_mask, self.scaling, p)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, attn_weights = self._attend(query_states, key_states, value_states,
                                                 attention_mask)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class LlamaMLP(nn.Module):
    def __init__(self, cfg, amp):
        super().__init__()
        self.gate_proj = Linear(cfg.hidden, cfg.intermediate, False, amp)
        self.up_proj = Linear(cfg.hidden, cfg.intermediate, False, amp)
        self.down_proj = Linear(cfg.intermediate, cfg.hidden, False, amp)

    def forward(self, x):
        down_proj = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, amp):
        super().__init__()
        self.self_attn = LlamaAttention(cfg, layer_idx, amp)
        self.mlp = LlamaMLP(cfg, amp)
        self.input_layernorm = LlamaRMSNorm(cfg.hidden, cfg.eps, amp)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.hidden, cfg.eps, amp)

    def forward(self, hidden_states, attention_mask=None, position_ids=None,
                past_key_value=None, output_attentions=False, use_cache=False,
                cache_position=None, position_embeddings=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights = self.self_attn(
            hidden_states=hidden_states, position_embeddings=position_embeddings,
            attention_mask=attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        outputs = (hidden_states,)
        return outputs


class LlamaForCausalLM(CausalLMBase):
    def __init__(self, cfg: ArchConfig):
        super().__init__(cfg)
        amp = self.amp
        self.embed_tokens = nn.Embedding(cfg.vocab, cfg.hidden)
        nn.init.normal_(self.embed_tokens.weight, 0.0, cfg.init_std)
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg, i, amp) for i in range(cfg.layers)])
        self.norm = LlamaRMSNorm(cfg.hidden, cfg.eps, amp)
        self.rotary_emb = LlamaRotaryEmbedding(cfg, amp)
        if cfg.tie_embeddings:
            self.lm_head = None
        else:
            self.lm_head = Linear(cfg.hidden, cfg.vocab, False, amp)

    def get_input_embeddings(self):
        return self.embed_tokens

    def lm_head_weight(self):
        return self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight

    @staticmethod
    def _prepare_4d_causal_attention_mask_with_cache_position(
            attention_mask, sequence_length, target_length, dtype, device,
            cache_position, batch_size):
        min_dtype = torch.finfo(dtype).min
        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype,
                                 dtype=dtype, device=device)
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length, device=device) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :].to(
                causal_mask.device)
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(
                padding_mask, min_dtype)
        return causal_mask

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position):
        """LlamaModel._update_causal_mask for eager attention, no cache; for
        sdpa without padding no mask at all (transformers 5.x create_causal_mask
        -> sdpa_mask, whose causal skip tests padding_mask.all())."""
        if self.cfg.attention == "sdpa":
            if self.cfg.sliding_window:
                # MistralModel / Phi3Model: create_sliding_window_causal_mask
                return sliding_window_mask(attention_mask, input_tensor.shape[1],
                                           self.cfg.sliding_window)
            if attention_mask is None or bool(attention_mask.bool().all()):
                return None
            raise ValueError("padded batches are not measured with sdpa")
        dtype, device = input_tensor.dtype, input_tensor.device
        sequence_length = input_tensor.shape[1]
        target_length = (attention_mask.shape[-1] if isinstance(attention_mask, torch.Tensor)
                         else sequence_length + 1)
        return self._prepare_4d_causal_attention_mask_with_cache_position(
            attention_mask, sequence_length=sequence_length, target_length=target_length,
            dtype=dtype, device=device, cache_position=cache_position,
            batch_size=input_tensor.shape[0])

    def model(self, input_ids, attention_mask):
        """LlamaModel.forward (use_cache=False)."""
        inputs_embeds = self.embed_tokens(input_ids)
        past_seen_tokens = 0
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1],
                                      device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        masks = self._layer_masks(attention_mask, inputs_embeds, cache_position)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        hidden_states = self._scale_embeddings(hidden_states)
        for decoder_layer in self.layers:
            causal_mask = self._mask_of(decoder_layer, masks)
            if self.gradient_checkpointing and self.training and self._mask_in_call(causal_mask):
                layer_outputs = self._ckpt(mask_in_call(decoder_layer.__call__, causal_mask),
                                           hidden_states, position_ids, None, False, False,
                                           cache_position, position_embeddings)
            elif self.gradient_checkpointing and self.training:
                layer_outputs = self._ckpt(decoder_layer.__call__, hidden_states, causal_mask,
                                           position_ids, None, False, False, cache_position,
                                           position_embeddings)
            else:
                layer_outputs = decoder_layer(
                    hidden_states, attention_mask=causal_mask, position_ids=position_ids,
                    past_key_value=None, output_attentions=False, use_cache=False,
                    cache_position=cache_position, position_embeddings=position_embeddings)
            hidden_states = layer_outputs[0]
        hidden_states = self.norm(hidden_states)
        return (hidden_states,)

    def _scale_embeddings(self, hidden_states):
        """Llama does not scale its embeddings (Gemma does: models_more.py)."""
        return hidden_states

    def _layer_masks(self, attention_mask, inputs_embeds, cache_position):
        """The masks the model's forward builds once for its layers: Llama's
        one (Gemma-2's per layer type under SDPA: models_more.py)."""
        return self._update_causal_mask(attention_mask, inputs_embeds, cache_position)

    def _mask_of(self, decoder_layer, masks):
        """The mask a layer gets of those _layer_masks built."""
        return masks

    def _mask_in_call(self, mask):
        """Whether a checkpointed layer takes its mask in its call
        (transformers 5.x's GradientCheckpointingLayer: mask_in_call) rather
        than among the checkpoint's inputs (4.48): the 5.x sliding-window mask."""
        return is_window_mask(mask)

    def forward(self, input_ids, attention_mask=None, labels=None):
        outputs = self.model(input_ids, attention_mask)
        hidden_states = outputs[0]
        slice_indices = slice(0, None)  # logits_to_keep = 0
        logits = linear(self.amp, hidden_states[:, slice_indices, :], self.lm_head_weight())
        loss = None
        if labels is not None:
            loss = causal_lm_loss(logits, labels, self.cfg.vocab)
        return {"loss": loss, "logits": logits}

    def decoder_layers(self):
        return list(self.layers)

    def embedding_modules(self):
        return [self.embed_tokens]


# ---------------------------------------------------------------------------
# Building, fine-tuning methods, precision
# ---------------------------------------------------------------------------

def build_model(cfg: ArchConfig, seed=0):
    torch.manual_seed(seed)
    if cfg.family == "gpt2":
        m = GPT2LMHeadModel(cfg)
    elif cfg.family == "llama":
        m = LlamaForCausalLM(cfg)
    else:
        raise ValueError("unknown family %r" % cfg.family)
    return m


def set_precision(model, precision):
    """fp32 / bf16-mixed / fp16-mixed: fp32 parameters (autocast emulated for
    mixed); bf16: parameters converted (buffers keep their dtype, as
    HF ``from_pretrained(torch_dtype=...)`` computes inv_freq in fp32);
    bf16-autocast: bf16 parameters as bf16 and bf16 autocast on top, what
    ``from_pretrained`` (dtype "auto", transformers 5.x) of a bf16 checkpoint
    trained with ``TrainingArguments(bf16=True)`` runs (accelerate wraps the
    forward in autocast whatever the parameters' dtype)."""
    if precision in ("bf16-mixed", "fp16-mixed"):
        model.amp.dtype = torch.bfloat16 if precision == "bf16-mixed" else torch.float16
    elif precision in ("bf16", "bf16-autocast"):
        for p in model.parameters():
            p.data = p.data.to(torch.bfloat16)
        if precision == "bf16-autocast":
            model.amp.dtype = torch.bfloat16
    elif precision == "fp16":
        # CUDA's softmax(fp16, dtype=float32) runs the fused half_to_float
        # kernel (no fp32 copy of its input); CPU has no such kernel, so a
        # pure-fp16 measurement here would count a copy CUDA does not make.
        raise ValueError("pure fp16 is not measured (see README); use fp16-mixed or bf16")
    elif precision != "fp32":
        raise ValueError("unknown precision %r" % precision)


def _replace_module(root, name, new):
    parent_name, _, child = name.rpartition(".")
    parent = root.get_submodule(parent_name) if parent_name else root
    setattr(parent, child, new)


def apply_lora(model, r, targets, alpha=None, lora_dropout=0.0):
    """PEFT get_peft_model: freeze everything, wrap modules whose name ends
    with one of ``targets``; adapters are fp32 (autocast_adapter_dtype)."""
    alpha = 2 * r if alpha is None else alpha
    for p in model.parameters():
        p.requires_grad_(False)
    names = []
    for name, mod in list(model.named_modules()):
        leaf = name.rpartition(".")[2]
        if leaf in targets and isinstance(mod, (Linear, Conv1D)):
            names.append(name)
    if not names:
        raise ValueError("no LoRA target matched %r" % (targets,))
    for name in names:
        base = model.get_submodule(name)
        _replace_module(model, name, LoraLinear(base, r, alpha, model.amp, lora_dropout))
    return names


def apply_freeze(model, n):
    """Freeze the first n decoder layers and the input embeddings (a tied
    output head is therefore frozen too)."""
    for emb in model.embedding_modules():
        for p in emb.parameters():
            p.requires_grad_(False)
    for layer in model.decoder_layers()[:n]:
        for p in layer.parameters():
            p.requires_grad_(False)


def enable_gradient_checkpointing(model, kind="reentrant"):
    """HF gradient_checkpointing_enable() (``kind``: "reentrant" for
    use_reentrant=True, the default of transformers 4.35 to 4.57;
    "non-reentrant" for use_reentrant=False, transformers 5.x's default) plus
    PEFT's enable_input_require_grads() when the input embedding is frozen."""
    if kind not in ("reentrant", "non-reentrant"):
        raise ValueError("checkpointing must be reentrant or non-reentrant, not %r" % kind)
    model.gradient_checkpointing = kind
    emb = model.get_input_embeddings()
    if not emb.weight.requires_grad:
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)
        model._require_grads_hook = emb.register_forward_hook(make_inputs_require_grads)


def forward_like_trainer(model, batch):
    """What HF Trainer + accelerate run for the forward: ``model(**inputs)``
    inside accelerate's autocast wrapper (mixed precision only), then
    ``convert_outputs_to_fp32`` on the outputs; the caller keeps the loss and
    drops the outputs (logits) as ``Trainer.compute_loss`` does."""
    if model.amp.dtype is None:
        return model(**batch)
    with model.amp.region():
        out = model(**batch)
    low = (torch.bfloat16, torch.float16)
    return {k: (v.float() if isinstance(v, torch.Tensor) and v.dtype in low else v)
            for k, v in out.items()}


# ---------------------------------------------------------------------------
# Non-reentrant checkpointing as torch 2.x implements it
# ---------------------------------------------------------------------------

class _StopRecomputation(Exception):
    pass


class _Holder:
    """What the forward packs in place of a saved tensor."""
    __slots__ = ("handle", "__weakref__")

    def __init__(self):
        self.handle = None


class _Handle:
    __slots__ = ("__weakref__",)


def _plain_scalar(x):
    from torch.utils._python_dispatch import _get_current_dispatch_mode, _pop_mode_temporarily
    if _get_current_dispatch_mode() is None:
        return x.clone()
    with _pop_mode_temporarily():
        return x.clone()


def checkpoint_non_reentrant(fn, *args):
    """torch.utils.checkpoint(fn, *args, use_reentrant=False) of torch 2.x
    (torch/utils/checkpoint.py: _checkpoint_without_reentrant_generator,
    _checkpoint_hook, _recomputation_hook), for one graph task.

    torch 1.13's own non-reentrant variant differs in memory: it recomputes
    the whole function and keeps each recomputed tensor until its holder
    dies.  torch 2.x, written out here with the same saved-tensor hooks:

    * forward: ``fn`` runs with grad enabled; every tensor autograd saves is
      packed as an empty holder (nothing kept); the inputs are kept (2.x:
      ``_NoopSaveInputs`` saves them; here the closure holds them);
    * the first unpack in backward recomputes ``fn`` on the kept inputs under
      hooks that store each packed tensor (detached) for its holder, and stop
      the recomputation (_StopRecomputationError) as soon as the last holder
      of the forward is filled -- before the op that packs it runs when it
      packs an input, after it when it packs its output;
    * each unpack hands its tensor over and drops the frame's reference
      (``holder.handles[gid] = None``), so a recomputed tensor lives only
      until the node that saved it has run.
    """
    weak_holders = []
    recomputed = weakref.WeakKeyDictionary()
    state = {"done": False}

    def pack(x):
        holder = _Holder()
        weak_holders.append(weakref.ref(holder))
        return holder

    def unpack(holder):
        if not state["done"]:
            counter = [0]

            def recompute_pack(x):
                x = x.detach() if x.requires_grad else x
                if x.dim() == 0:
                    # A Python scalar autograd saved as a 0-dim "wrapped
                    # number" reaches torch 1.13's dispatch modes as a float
                    # (and the engine detaches it on unpack): keep a plain
                    # copy made outside the mode (a host scalar on a GPU).
                    x = _plain_scalar(x)
                idx = counter[0]
                counter[0] += 1
                target = weak_holders[idx]() if idx < len(weak_holders) else None
                if target is not None:
                    target.handle = _Handle()
                    recomputed[target.handle] = x
                if counter[0] == len(weak_holders):
                    raise _StopRecomputation()
                return x

            def recompute_unpack(x):
                return x

            try:
                with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(
                        recompute_pack, recompute_unpack):
                    fn(*args)
            except (_StopRecomputation, RuntimeError) as e:
                # torch 1.13 hands an exception raised in a saved-tensor hook
                # back as a RuntimeError naming it
                if not isinstance(e, _StopRecomputation) and \
                        "_StopRecomputation" not in str(e):
                    raise
            state["done"] = True
        handle = holder.handle
        ret = recomputed[handle]
        holder.handle = None
        del handle
        return ret

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)
