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


def _reference(q, k, v, scale):
    """Causal attention in fp32 (values only; run inside kernel_internal)."""
    n_rep = q.shape[1] // k.shape[1]
    kk = k.float().repeat_interleave(n_rep, 1)
    vv = v.float().repeat_interleave(n_rep, 1)
    w = torch.matmul(q.float(), kk.transpose(-2, -1)) * scale
    s_q, s_k = w.shape[-2], w.shape[-1]
    causal = torch.ones(s_q, s_k, dtype=torch.bool).tril()
    w = w.masked_fill(~causal, float("-inf"))
    lse = torch.logsumexp(w, -1)
    return torch.matmul(torch.softmax(w, -1), vv), lse


class _FusedKernel(torch.autograd.Function):
    """One fused SDPA kernel call and its backward (see the module doc)."""

    @staticmethod
    def forward(ctx, q, k, v, scale, efficient):
        b, h, s, d = q.shape
        dv = v.shape[-1]
        out = torch.empty((b, s, h, dv), dtype=q.dtype, device=q.device).transpose(1, 2)
        lse_len = -(-s // 32) * 32 if efficient else s
        lse = torch.empty((b, h, lse_len), dtype=torch.float32, device=q.device)
        with kernel_internal():
            o, l = _reference(q, k, v, scale)
            out.copy_(o)
            lse[..., :s].copy_(l)
            del o, l
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.scale = scale
        ctx.efficient = efficient
        return out

    @staticmethod
    def backward(ctx, gout):
        q, k, v, out, lse = ctx.saved_tensors
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
                o, _ = _reference(qq, kk, vv, ctx.scale)
                gq, gk, gv = torch.autograd.grad(o, (qq, kk, vv), gout.float())
            dq.copy_(gq)
            dk.copy_(gk)
            dv.copy_(gv)
            del qq, kk, vv, o, gq, gk, gv
        del work
        return dq, dk, dv, None, None


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
    return _FusedKernel.apply(query, key, value, scaling, kind == "efficient")


def sdpa_attention_forward(amp, query, key, value, dropout, scaling, gqa_module):
    """transformers' sdpa_attention_forward with no mask; returns [B, S, H, D].

    ``gqa_module``: the module has ``num_key_value_groups`` (Llama: True,
    GPT-2: False), so transformers passes enable_gqa."""
    out = scaled_dot_product_attention(amp, query, key, value, dropout, scaling, gqa_module)
    return out.transpose(1, 2).contiguous()
