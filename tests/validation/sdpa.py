"""SDPA attention as transformers 5.x calls it and PyTorch 2.11 runs it on
CUDA, emulated with the memory behaviour of each backend on CPU torch 1.13.

torch 1.13 has no ``torch.nn.functional.scaled_dot_product_attention`` (it
appeared in 2.0; 1.13 only has the private math helper
``F._scaled_dot_product_attention``, which returns the probabilities too).
This module therefore writes each backend out:

* ``sdpa_attention_forward`` follows transformers'
  ``integrations/sdpa_attention.py`` (5.x): no ``repeat_kv`` but
  ``enable_gqa=True`` (torch >= 2.5 and no mask), ``is_causal`` when there is
  no mask (no padding: the mask helpers return None), and
  ``attn_output.transpose(1, 2).contiguous()``.  Under CUDA autocast,
  ``scaled_dot_product_attention`` is on the lower_precision_fp list: q, k and
  v are cast (``CudaAutocastEmu.lp``).
* ``scaled_dot_product_attention`` is the call itself, for a family that
  makes it without transformers' wrapper (Falcon: no ``enable_gqa``, so
  grouped kv heads go to the math path, whose ``matmul`` broadcasts them).
* ``backend`` is PyTorch 2.11's ``select_sdp_backend`` (sdp_utils.cpp) for an
  sm80+ GPU: fp16/bf16 with one head size up to 256 run a fused kernel
  (cuDNN on sm90/sm100 with the cuDNN torch 2.11 bundles, flash otherwise;
  both save the same tensors; they take no value narrower than the keys, as
  DeepSeek's); otherwise fp32 or 16-bit without grouped kv heads runs the
  memory-efficient kernel (it takes GQA only from torch 2.12, and a narrower
  value); anything else the math fallback.
* ``_FusedKernel`` stands for ``_scaled_dot_product_cudnn_attention`` /
  ``_scaled_dot_product_flash_attention`` / ``..._efficient_attention``: its
  outputs (the attention output in the [B, S, H, D] memory order the kernels
  write, and the fp32 log-sum-exp) and its backward's outputs and workspace
  are allocated with tracked ops; the values are computed inside
  ``kernel_internal()``, untracked, as the kernels compute them on chip.
  Saved for backward: q, k, v, the output and the log-sum-exp (what the
  derivatives.yaml entries of these ops save; the philox seed and offset are
  host scalars without dropout, 16 device bytes with it, left out).
  Workspaces: cuDNN's SDPA backward (cudnn-frontend's SDPA backward node)
  holds softmax_sum fp32 [B, H, S] and dQ_accum fp32 [B, H, S, D], and for
  grouped kv heads dK and dV at the query heads' count in the input dtype;
  the memory-efficient backward (attention_backward.cu) holds delta fp32
  [B, H, S] and a workspace with the fp32 gradient-of-q accumulator
  [B, H, S, round64(D)]; its log-sum-exp is padded to a multiple of 32.
  These come from the sources: only a GPU can measure them.
* A sliding window (``sliding_window_mask``, ``attention_mask`` in
  ``sdpa_attention_forward``): transformers 5.x's
  ``create_sliding_window_causal_mask`` -> ``sdpa_mask`` materialises a
  bool ``[B, 1, S, S]`` mask once seq >= window (True = attend: kv <= q and
  kv > q - window, ANDed with the 2-D attention_mask, so B*S*S bytes), once
  per forward, shared by every layer.  With a mask, sdpa_attention_forward
  runs ``repeat_kv`` on key and value (a copy at every query head when
  n_rep > 1) and no ``enable_gqa``, ``is_causal`` False; torch's
  ``scaled_dot_product_attention`` turns the bool mask into a new additive
  bias in q's dtype per call (``convert_boolean_attn_mask``:
  ``where(logical_not(mask), -inf, 0)``), pads its last dimension to a
  multiple of 8 when it is not aligned (``preprocess_mask`` /
  ``pad_bias<8>``: a padded copy, sliced back as a view), and runs the
  memory-efficient kernel, which also saves the bias for backward (no
  gradient for it, no S x S workspace).  Flash takes no mask; cuDNN (torch
  2.11 with a recent cuDNN) would make the same bias without the padding:
  modelled as the memory-efficient kernel at every dtype.
* ``sdpa_math`` is ``at::_scaled_dot_product_attention_math`` of torch 2.11,
  op for op (a composite function, so the same ops allocate the same
  tensors): fp16/bf16 inputs upcast to fp32, ``q * sqrt(scale)``, the causal
  mask ``ones(L, S).tril()`` turned into an additive fp32 mask with
  ``where``, ``repeat_interleave`` of k and v for GQA, ``k^T * sqrt(scale)``,
  ``matmul``, ``add_`` of the mask, ``_safe_softmax`` (torch 1.13 lacks it:
  ``_SafeSoftmax`` runs its forward ops and saves its result as the 2.x node
  does), dropout, ``matmul`` with v, cast back.  C++ locals (the scaled q,
  the expanded keys, the mask) live until the function returns, as the
  Python locals here do.
"""

from __future__ import annotations

import math

import torch

from live_tracker import kernel_internal

_LOW = (torch.bfloat16, torch.float16)


def backend(dtype, head_dim, gqa, v_head_dim=None, enable_gqa=True):
    """PyTorch 2.11's choice for a call with no mask and is_causal.

    ``enable_gqa`` False (Falcon's own call) leaves grouped kv heads to the
    math path, the only one that broadcasts them; the fused kernels take one
    head size for q, k and v, the memory-efficient kernel a narrower value
    (DeepSeek's latent attention)."""
    v_head_dim = head_dim if v_head_dim is None else v_head_dim
    if gqa and not enable_gqa:
        return "math"
    if dtype in _LOW and head_dim <= 256 and v_head_dim == head_dim:
        return "fused"
    align = 8 if dtype in _LOW else 4
    if not gqa and head_dim % align == 0 and v_head_dim % align == 0:
        return "efficient"
    return "math"


def _reference(q, k, v, scale, bias=None):
    """Causal attention in fp32, or with an additive ``bias`` instead of the
    causal mask (values only; run inside kernel_internal)."""
    n_rep = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(n_rep, 1)
    vv = v.float().repeat_interleave(n_rep, 1)
    w = torch.matmul(q.float(), kk.transpose(-2, -1)) * scale
    if bias is not None:
        w = w + bias.float()
    else:
        s_q, s_k = w.shape[-2], w.shape[-1]
        causal = torch.ones(s_q, s_k, dtype=torch.bool).tril()
        w = w.masked_fill(~causal, float("-inf"))
    lse = torch.logsumexp(w, -1)
    return torch.matmul(torch.softmax(w, -1), vv), lse


class _FusedKernel(torch.autograd.Function):
    """One fused SDPA kernel call and its backward (see the module doc)."""

    @staticmethod
    def forward(ctx, q, k, v, scale, efficient, bias):
        """``bias``: None (is_causal), or the memory-efficient kernel's
        additive attn_bias (a view of the converted mask's storage), which
        derivatives.yaml saves for the backward; it gets no gradient."""
        b, h, s, d = q.shape
        dv = v.shape[-1]
        out = torch.empty((b, s, h, dv), dtype=q.dtype, device=q.device).transpose(1, 2)
        lse_len = -(-s // 32) * 32 if efficient else s
        lse = torch.empty((b, h, lse_len), dtype=torch.float32, device=q.device)
        with kernel_internal():
            o, l = _reference(q, k, v, scale, bias)
            out.copy_(o)
            lse[..., :s].copy_(l)
            del o, l
        ctx.save_for_backward(q, k, v, out, lse, bias)
        ctx.scale = scale
        ctx.efficient = efficient
        return out

    @staticmethod
    def backward(ctx, gout):
        q, k, v, out, lse, bias = ctx.saved_tensors
        b, h, s, d = q.shape
        hk = k.shape[1]
        dq = torch.empty((b, s, h, d), dtype=q.dtype, device=q.device).transpose(1, 2)
        dk = torch.empty((b, s, hk, d), dtype=k.dtype, device=k.device).transpose(1, 2)
        dv = torch.empty((b, s, hk, v.shape[-1]), dtype=v.dtype,
                         device=v.device).transpose(1, 2)
        f32 = dict(dtype=torch.float32, device=q.device)
        if ctx.efficient:
            d64 = -(-d // 64) * 64
            work = [torch.empty((b, h, s), **f32), torch.empty((b, h, s, d64), **f32)]
        else:
            work = [torch.empty((b, h, s), **f32), torch.empty((b, h, s, d), **f32)]
            if hk != h:
                work += [torch.empty((b, s, h, d), dtype=q.dtype, device=q.device)
                         for _ in range(2)]
        with kernel_internal():
            with torch.enable_grad():
                qq = q.detach().float().requires_grad_(True)
                kk = k.detach().float().requires_grad_(True)
                vv = v.detach().float().requires_grad_(True)
                o, _ = _reference(qq, kk, vv, ctx.scale, bias)
                gq, gk, gv = torch.autograd.grad(o, (qq, kk, vv), gout.float())
            dq.copy_(gq)
            dk.copy_(gk)
            dv.copy_(gv)
            del qq, kk, vv, o, gq, gk, gv
        del work, bias
        return dq, dk, dv, None, None, None


class _SafeSoftmax(torch.autograd.Function):
    """at::_safe_softmax (torch >= 2.5, SoftMax.cpp): softmax, then rows that
    are all -inf set to 0: ``where(all(self == -inf, dim, keepdim), 0, out)``.
    Its autograd node saves the result (derivatives.yaml)."""

    @staticmethod
    def forward(ctx, x, dim):
        out = torch.softmax(x, dim)
        neg_inf = torch.tensor(float("-inf"), dtype=out.dtype, device=out.device)
        masked = x.eq(neg_inf)
        masked_rows = torch.all(masked, dim, keepdim=True)
        zero = torch.tensor(0.0, dtype=out.dtype, device=out.device)
        result = torch.where(masked_rows, zero, out)
        del out, masked, masked_rows
        ctx.save_for_backward(result)
        ctx.dim = dim
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return torch._softmax_backward_data(grad, result, ctx.dim, result.dtype), None


def _dropout(x, p):
    return torch.native_dropout(x, p, True)[0] if p > 0 else x


def sdpa_math(query_, key, value, dropout_p, scale, enable_gqa):
    """at::_scaled_dot_product_attention_math (torch 2.11), is_causal, no mask."""
    origin = query_.dtype
    query_acc = query_.to(torch.float32) if query_.dtype in _LOW else query_
    key_acc = key.to(torch.float32) if key.dtype in _LOW else key
    value_acc = value.to(torch.float32) if value.dtype in _LOW else value
    scaling_factor = math.sqrt(scale)
    query = query_acc * scaling_factor
    s_q, s_k = query.shape[-2], key_acc.shape[-2]
    attn_mask = torch.ones(s_q, s_k, dtype=torch.bool, device=query.device).tril()
    attn_mask = torch.where(attn_mask, torch.tensor(0.0, dtype=query.dtype),
                            torch.tensor(float("-inf"), dtype=query.dtype))
    if enable_gqa and query.shape[-3] != key_acc.shape[-3]:
        n_rep = query.shape[-3] // key_acc.shape[-3]
        key_expanded = key_acc.repeat_interleave(n_rep, dim=-3)
        value_expanded = value_acc.repeat_interleave(n_rep, dim=-3)
    else:
        key_expanded, value_expanded = key_acc, value_acc
    attn = torch.matmul(query, key_expanded.transpose(-2, -1) * scaling_factor)
    attn.add_(attn_mask)
    attn = _SafeSoftmax.apply(attn, -1)
    attn = _dropout(attn, dropout_p)
    return torch.matmul(attn, value_expanded).to(origin)


def scaled_dot_product_attention(amp, query, key, value, dropout, scaling, enable_gqa):
    """F.scaled_dot_product_attention(q, k, v, dropout_p, scale, is_causal=True,
    enable_gqa) under CUDA autocast; returns [B, H, S, Dv] (the fused kernels'
    memory is [B, S, H, Dv]).  ``scaling`` None: 1 / sqrt(head_dim)."""
    query, key, value = amp.lp(query), amp.lp(key), amp.lp(value)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    gqa = query.shape[1] != key.shape[1]
    kind = backend(query.dtype, query.shape[-1], gqa, value.shape[-1], enable_gqa)
    if kind == "math":
        return sdpa_math(query, key, value, dropout, scaling, enable_gqa)
    return _FusedKernel.apply(query, key, value, scaling, kind == "efficient", None)


# ---------------------------------------------------------------------------
# Sliding-window masks (transformers 5.x masking_utils, torch 2.x attention.cpp)
# ---------------------------------------------------------------------------

def sliding_window_mask(attention_mask, seq, window):
    """``create_sliding_window_causal_mask`` -> ``sdpa_mask`` in training (no
    cache, q and kv offsets 0): None below the window (seq < window, no
    padding: ``_ignore_causal_mask_sdpa`` skips, is_causal then runs), else
    the bool ``[B, 1, S, S]`` mask of ``dense_bool_mask``."""
    if window <= 0:
        raise ValueError("sliding_window_mask: window must be > 0, got %r" % (window,))
    if attention_mask is not None and not bool(attention_mask.bool().all()):
        raise ValueError("padded batches are not measured with sdpa")
    if seq < window:
        return None
    return dense_bool_mask(attention_mask, seq, window)


def dense_bool_mask(attention_mask, seq, window=0):
    """``sdpa_mask``'s bool ``[B, 1, S, S]`` mask without a skip, True where
    kv <= q (and kv > q - window for a window > 0), ANDed with the 2-D
    ``attention_mask`` (the Trainer passes one, all ones), which makes it
    dense: B*S*S bytes.  Only the result is allocated with tracked ops; the
    index tensors and partial ``&`` results of the build (about 2 x S*S
    bytes, before layer 0) are computed untracked."""
    if attention_mask is None:
        raise ValueError("mask rows are measured with the Trainer's 2-D attention_mask "
                         "(without it the mask is [1, 1, S, S], expanded)")
    batch = attention_mask.shape[0]
    mask = torch.empty((batch, 1, seq, seq), dtype=torch.bool, device=attention_mask.device)
    with kernel_internal():
        q_idx = torch.arange(seq, device=mask.device)[:, None]
        kv_idx = torch.arange(seq, device=mask.device)[None, :]
        local = kv_idx <= q_idx
        if window > 0:
            local = local & (kv_idx > q_idx - window)
        mask.copy_(local[None, None] & attention_mask.bool()[:, None, None, :])
        del q_idx, kv_idx, local
    return mask


def eager_mask(attention_mask, seq, dtype, window=0):
    """transformers 5.x ``masking_utils.eager_mask`` in training: the bool
    mask of ``sdpa_mask`` (never skipped: ``allow_is_causal_skip=False``),
    then ``torch.where(mask, tensor(0.0, dtype), finfo(dtype).min)``, a float
    ``[B, 1, S, S]`` in dtype; the bool goes when eager_mask returns."""
    mask = dense_bool_mask(attention_mask, seq, window)
    zero = torch.tensor(0.0, dtype=dtype, device=mask.device)
    return torch.where(mask, zero, torch.finfo(dtype).min)


def repeat_kv(hidden_states, n_rep):
    """transformers' repeat_kv: ``expand`` then ``reshape`` (a copy at every
    query head), the tensor itself when n_rep == 1."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def _aligned(t, alignment):
    """sdp_utils aligned_tensor<alignment>: every stride but the last a
    multiple of ``alignment``, the last 1."""
    return all(st % alignment == 0 for st in t.stride()[:-1]) and t.stride(-1) == 1


def scaled_dot_product_attention_masked(amp, query, key, value, attn_mask, dropout, scaling):
    """F.scaled_dot_product_attention(q, k, v, attn_mask=<bool mask>, dropout_p,
    scale, is_causal=False) under CUDA autocast, on the memory-efficient
    kernel (torch 2.x attention.cpp): q, k, v cast (the bool mask is not a
    floating argument); ``convert_boolean_attn_mask``: ``logical_not`` (a
    bool temporary), ``where(.., -inf, scalar_tensor(0.0, q dtype))``, a new
    bias [B, 1, S, S] in q's dtype; ``preprocess_mask``: ``pad_bias<8>``
    unless aligned (a padded copy [.., S + pad], sliced back; the unpadded
    bias freed when replaced), then ``expand`` to [B, H, S, S] (a view);
    the kernel saves the bias for backward.  Returns [B, H, S, Dv]."""
    query, key, value = amp.lp(query), amp.lp(key), amp.lp(value)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    if query.shape[1] != key.shape[1] or key.shape[1] != value.shape[1]:
        raise ValueError("a masked SDPA call takes key and value at the query's %d heads "
                         "(repeat_kv), got %d and %d" % (query.shape[1], key.shape[1],
                                                         value.shape[1]))
    align = 8 if query.dtype in _LOW else 4
    if query.shape[-1] % align or value.shape[-1] % align:
        raise ValueError("head_dim %d / %d: the memory-efficient kernel needs a multiple of "
                         "%d (the math path with a mask is not measured)"
                         % (query.shape[-1], value.shape[-1], align))
    if attn_mask.dtype != torch.bool:
        raise ValueError("only bool masks are measured, got %s" % attn_mask.dtype)
    # convert_boolean_attn_mask
    zero = torch.scalar_tensor(0.0, dtype=query.dtype, device=query.device)
    masked_out = attn_mask.logical_not()
    bias = torch.where(masked_out, float("-inf"), zero)
    del masked_out, zero
    # preprocess_mask (memory-efficient alignment 8)
    if not _aligned(bias, 8):
        s_kv = bias.shape[-1]
        bias = torch.nn.functional.pad(bias, (0, 8 - s_kv % 8))[..., :s_kv]
    b, h, s_q = query.shape[:3]
    bias = bias.expand(b, h, s_q, key.shape[-2])
    return _FusedKernel.apply(query, key, value, scaling, True, bias)


def sdpa_attention_forward(amp, query, key, value, dropout, scaling, gqa_module,
                           attention_mask=None):
    """transformers' sdpa_attention_forward; returns [B, S, H, D].

    ``gqa_module``: the module has ``num_key_value_groups`` (Llama: True,
    GPT-2: False).  Without a mask transformers passes enable_gqa to such a
    module and is_causal; with one (a sliding window, ``sliding_window_mask``)
    ``use_gqa_in_sdpa`` is False: ``repeat_kv`` on key and value, no
    enable_gqa, is_causal False."""
    if attention_mask is None:
        out = scaled_dot_product_attention(amp, query, key, value, dropout, scaling, gqa_module)
        return out.transpose(1, 2).contiguous()
    if gqa_module:
        n_rep = query.shape[1] // key.shape[1]
        key = repeat_kv(key, n_rep)
        value = repeat_kv(value, n_rep)
    out = scaled_dot_product_attention_masked(amp, query, key, value, attention_mask, dropout,
                                              scaling)
    return out.transpose(1, 2).contiguous()
