#!/usr/bin/env python3
"""Other estimators' published formulas against the measured grid (stdlib only).

    python3 tests/validation/peers.py [--llmem build/cli/llmem] [--csv grid.csv]
                                      [--quiet] [--markdown]

For every row of ``grid.csv`` (measured training-step peaks at the allocated
level, see README.md) this computes the estimate that each peer tool's
published formula gives for that configuration, and prints per tool the rows
it can express and the median / p95 / max of the relative error
|est - measured| / measured over them, with the typical sign of the error.
With ``--llmem PATH`` libllmem is run on every row exactly as compare.py runs
it (``PATH estimate ... --json``).

The formulas follow /work/shared/reference/peer_formulas.md and the source
files it names (cited at each function).  What each tool is given:

* the row's exact parameter count (``exact_params``) wherever the tool takes a
  parameter count or builds the real model; a tool that derives the count from
  the architecture with its own formula (EleutherAI cookbook, gpu_poor,
  Megatron) uses that formula, as its users get it (an "exact P" variant of
  the cookbook and gpu_poor is printed too);
* only what the tool can express.  A row is skipped for a tool when one of its
  settings has no counterpart among the tool's inputs and differs from the
  tool's implicit assumption (LoRA, freezing, an optimizer other than the one
  the formula hard-codes, a precision recipe it has no option for, batch > 1
  for accelerate, checkpointing for vram.asmirnov); the reasons are printed.
  Settings a tool accepts but its formula ignores (e.g. Megatron's recompute
  flag outside the SP+selective path) are evaluated as the tool answers.
* no display rounding: the formula's value in bytes (the tools print MiB or
  GiB with 0-2 decimals; that rounding is not the subject here).

``--selftest`` only recomputes the published worked examples of
peer_formulas.md (EleutherAI cookbook "llama 7B" and "default 20B",
vram.asmirnov's phi-1_5 default) with these functions.

Exit status 0; 1 if --selftest fails; 2 when the CSV is unusable, the exact
parameter counts do not reproduce the grid's baseline_bytes, or llmem fails
on a row.
"""

import argparse
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (stdlib-only sibling: row loading, llmem invocation)

MiB = 2 ** 20


class Skip(Exception):
    """The tool cannot express this row; the message says why."""


# ---------------------------------------------------------------------------
# Exact parameter counts (the ground truth; checked against baseline_bytes)
# ---------------------------------------------------------------------------

def cfg(row):
    """The row's numeric fields as ints, plus the string ones."""
    c = dict(row)
    for k in ("hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
              "max_positions", "tie_embeddings", "attn_bias", "batch", "seq", "lora_rank",
              "freeze_layers", "measured_peak_bytes"):
        c[k] = int(row[k] or 0)
    c["baseline_bytes"] = int(row.get("baseline_bytes") or 0)
    return c


def exact_params(c):
    """Exact parameter count of the row's model, as the HF code paths build it.

    Returns (total, base, buffer_bytes_accelerate, buffer_bytes_real) where
    ``base`` is the AutoModel (no LM head) count accelerate builds, and the two
    buffer sizes are the non-parameter tensors counted by accelerate's
    ``dtype_byte_size`` (bool = 1/8 byte) and as they really occupy memory.

    GPT-2 (h hidden, L layers, I = intermediate, V vocab, P max positions):
        wte V*h + wpe P*h
        + L * [ ln_1 2h + c_attn (3h*h + 3h) + c_proj (h*h + h)
                + ln_2 2h + c_fc (I*h + I) + c_proj (h*I + h) ]
        + ln_f 2h  (+ lm_head V*h, no bias, if untied)
      buffers: per layer a [1,1,P,P] bool causal mask + a 4-byte masked_bias.
    Llama (a heads, k kv heads, d head_dim; bias = attn_bias):
        embed V*h
        + L * [ 2 RMSNorm h + q h*a*d + k h*k*d + v h*k*d + o a*d*h
                + bias*(a*d + 2*k*d) + gate/up/down 3*h*I ]
        + final norm h  (+ lm_head V*h if untied)
      buffers: rotary inv_freq, d/2 fp32.
    """
    h, L, I, V = c["hidden"], c["layers"], c["intermediate"], c["vocab"]
    head = 0 if c["tie_embeddings"] else V * h
    if c["family"] == "gpt2":
        P = c["max_positions"]
        layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (I * h + I) + (h * I + h)
        base = V * h + P * h + L * layer + 2 * h
        buf_acc = L * (P * P / 8.0 + 4)
        buf_real = L * (P * P + 4)
    elif c["family"] == "llama":
        a, k, d = c["heads"], c["kv_heads"], c["head_dim"]
        attn = h * a * d + 2 * h * k * d + a * d * h + c["attn_bias"] * (a * d + 2 * k * d)
        layer = 2 * h + attn + 3 * h * I
        base = V * h + L * layer + h
        buf_acc = buf_real = (d // 2) * 4
    else:
        raise ValueError("row %s: unknown family %r" % (c["id"], c["family"]))
    return base + head, base, buf_acc, buf_real


def check_params(rows):
    """Recompute baseline_bytes of the full fine-tuning rows from exact_params.

    baseline = parameters + buffers + optimizer states + batch (3 int64 [B,S]);
    parameters 4 B (fp32, bf16-mixed) or 2 B (pure bf16); states per
    parameter: AdamW/Adam 2, SGD+momentum/Lion 1, SGD 0 (in the parameter dtype).
    Returns (rows checked, list of mismatching ids).
    """
    states = {"adamw": 2, "adam": 2, "sgd-momentum": 1, "lion": 1, "sgd": 0}
    n, bad = 0, []
    for c in rows:
        if c["method"] != "full" or not c["baseline_bytes"]:
            continue
        total, _, _, buf = exact_params(c)
        pb = 2 if c["precision"] == "bf16" else 4
        want = total * pb * (1 + states[c["optimizer"]]) + buf + 24 * c["batch"] * c["seq"]
        n += 1
        if want != c["baseline_bytes"]:
            bad.append(c["id"])
    return n, bad


# ---------------------------------------------------------------------------
# Common expressibility checks
# ---------------------------------------------------------------------------

def need_full(c, tool):
    if c["method"] == "lora":
        raise Skip("LoRA: no LoRA in " + tool)
    if c["method"] != "full":
        raise Skip("freeze: no layer freezing in " + tool)


def need_adam(c, tool):
    if c["optimizer"] not in ("adam", "adamw"):
        raise Skip("SGD/Lion: %s assumes Adam" % tool)


# ---------------------------------------------------------------------------
# (1) accelerate estimate-memory
# ---------------------------------------------------------------------------

def accelerate(c):
    """accelerate `estimate-memory`, "Training using Adam" column.

    Source: huggingface/accelerate src/accelerate/commands/estimate.py
    (create_empty_model, estimate_training_usage, estimate_command) and
    src/accelerate/utils/modeling.py (calculate_maximum_sizes,
    compute_module_sizes, dtype_byte_size: bool = 1/8 byte).
    The model is built with AutoModel (no LM head) in fp32; total_size F =
    parameters + buffers at their dtype.  Training dict: float32 -> model F,
    grads F, optimizer 2F, step 4F; float16/bfloat16 -> model F, grads 1.5F,
    optimizer 2F, step 2F; printed value = max(dict) = 4F or 2F.  Batch size 1
    implied (docstring), no activations; no optimizer / method inputs.
    """
    need_full(c, "accelerate")
    need_adam(c, "accelerate")
    if c["batch"] != 1:
        raise Skip("batch > 1: no batch input (batch 1 implied)")
    _, base, buf_acc, _ = exact_params(c)
    F = 4 * base + buf_acc
    fp16_size = F // 2
    if c["precision"] == "fp32":          # --dtypes float32
        sizes = {"model": F, "gradients": F, "optimizer": 2 * F, "step": 4 * F}
    else:                                  # bf16-mixed / bf16 -> --dtypes float16
        sizes = {"model": F, "gradients": F + fp16_size, "optimizer": 2 * F}
        sizes["step"] = sizes["optimizer"]
    return max(sizes.values())


# ---------------------------------------------------------------------------
# (2) HF transformers docs: 18 bytes/param + activations (activations ignored)
# ---------------------------------------------------------------------------

def hf_docs_18(c):
    """HF transformers docs, model_memory_anatomy ("Anatomy of Model's Memory").

    Weights 4 B/param (fp32) or 6 B (mixed: fp32 + half copy); gradients 4 B
    (always fp32); optimizer 8 B (AdamW, 2 states) or 4 B (SGD with momentum);
    "+ activations", which have no formula there and are left out.  Mixed
    AdamW = 18 B/param, fp32 AdamW = 16 B/param.  Pure bf16, plain SGD and
    Lion are not among the documented cases.
    """
    need_full(c, "the HF docs rule")
    wb = {"fp32": 4, "bf16-mixed": 6}.get(c["precision"])
    if wb is None:
        raise Skip("pure bf16: docs cover fp32 and mixed only")
    ob = {"adamw": 8, "adam": 8, "sgd-momentum": 4}.get(c["optimizer"])
    if ob is None:
        raise Skip("SGD/Lion: only AdamW and SGD+momentum listed")
    total = exact_params(c)[0]
    return total * (wb + 4 + ob)


# ---------------------------------------------------------------------------
# (3) DeepSpeed ZeRO-2 model-states estimator
# ---------------------------------------------------------------------------

def deepspeed_zero2(c):
    """DeepSpeed estimate_zero2_model_states_mem_needs, no offload, 1 GPU.

    Source: deepspeed/runtime/zero/stage_1_and_2.py (after PR #5099):
    GPU = 2P + 18P/N ("2 fp16 params; 18 = 2 fp16 grads + 4 fp32 grads +
    4 fp32 params + 8 Adam"), N = 1 here -> 20P.  Model states only; P from
    model_to_params (the real model, tied weights deduplicated).  Written for
    fp16/bf16 mixed precision with Adam.
    """
    need_full(c, "DeepSpeed")
    need_adam(c, "DeepSpeed's estimator")
    if c["precision"] != "bf16-mixed":
        raise Skip("fp32/pure bf16: estimator assumes fp16/bf16 mixed")
    P = exact_params(c)[0]
    N = 1
    return 2 * P + 18 * P / N


# ---------------------------------------------------------------------------
# (4) EleutherAI cookbook
# ---------------------------------------------------------------------------

def eleuther_params(c, nl=None):
    """calc_transformer_mem.py's own count, with the inputs the CLI offers:
    -v V -hs h -s seq -l L -ff I/h -nl (2 GPT-2, 3 gated Llama) -kv k/a:
    2Vh + h*s + 8hL + 2h + int(2(1+kv)Lh^2) + nl*L*h*ff*h."""
    h, L, V, s = c["hidden"], c["layers"], c["vocab"], c["seq"]
    kv = c["kv_heads"] / c["heads"]
    ff = c["intermediate"] / h
    if nl is None:
        nl = 3 if c["family"] == "llama" else 2
    embed = 2 * V * h
    positional = h * s
    ln = 8 * h * L + 2 * h
    attention = int(2 * (1 + kv) * L * h * h)
    mlp = nl * L * h * ff * h
    return embed + positional + ln + attention + mlp


def eleuther(c, exact=False, P=None):
    """EleutherAI cookbook calc/calc_transformer_mem.py (calc_mem), 1 GPU,
    defaults ZeRO-1, tp = pp = 1, misc 0, communication 0 (num_gpus 1).

    model = P * 2 (mixed) or P * 4 (--disable-mixed-precision); gradients
    P * 4; optimizer P * 12 (hard-coded AdamW: fp32 copy + m + v);
    activations (low_prec_bytes_per_val B = 2, also for fp32):
      no checkpointing  s*b*h*L*[(16B+2) + (2B+1)*a*s/h] = sbhL(34 + 5as/h)
      --checkpoint-activations  s*b*h*L*(16B+2) = 34 sbhL
    total = activations + gradients + model + optimizer (+ misc 0).
    """
    need_full(c, "the cookbook")
    need_adam(c, "the cookbook (12 B/param hard-coded)")
    if c["precision"] not in ("fp32", "bf16-mixed"):
        raise Skip("pure bf16: optimizer 12 B/param hard-coded")
    if P is None:
        P = exact_params(c)[0] if exact else eleuther_params(c)
    low, high = 2, 4
    model = P * (low if c["precision"] == "bf16-mixed" else high)
    grads = P * 4
    opt = P * 12
    s, b, h, L, a = c["seq"], c["batch"], c["hidden"], c["layers"], c["heads"]
    if c["grad_ckpt"] != "none":  # reentrant or not: the layers recompute
        act = s * b * h * L * (16 * low + 2)
    else:
        act = s * b * h * L * ((16 * low + 2) + (2 * low + 1) * (a * s / h))
    return act + grads + model + opt


def eleuther_exact(c):
    return eleuther(c, exact=True)


# ---------------------------------------------------------------------------
# (5) gpu_poor
# ---------------------------------------------------------------------------

def gpu_poor_params(c):
    """src/App.js computeModelSize: 2Vh + 4Lh^2 + 3LIh (untied, MHA, gated)."""
    h, L, I, V = c["hidden"], c["layers"], c["intermediate"], c["vocab"]
    return V * h * 2 + L * 4 * h * h + L * 3 * I * h


def gpu_poor(c, overhead=True, exact=False):
    """gpu_poor (RahulSChand/gpu_poor) src/App.js getAllComputedData, training.

    floatBytes = 2 always (convertToBytes); model MB = 2P/2^20 (no quant);
    grad+optimizer (getGradOptMemory): full Adam 3*P*2, full SGD P*2,
    LoRA Adam L*8*h*2*4*3*2, LoRA SGD L*8*h*2*4*2 (rank 8, 4 targets fixed);
    activations (getActivationMemory, fB = 2, len = seq) per layer:
      attn 3sh fB + 2sh fB + s^2 a fB + 4 s^2 a + s^2 a fB + 3 sh fB
      ffn 2hs fB + 5 fB s I + I s fB;  norm 8s + 6 sh fB
      x L x batch, x 0.15 with gradient checkpointing;
    + 650 MB "cuda + other overhead" (MB = 2^20 B).  No fp32 option (16-bit
    only), no freezing, SGD has no momentum term, no Lion.
    """
    if c["method"] == "freeze":
        raise Skip("freeze: no layer freezing")
    if c["precision"] == "fp32":
        raise Skip("fp32: 16-bit only")
    opt = {"adamw": "adam_opt", "adam": "adam_opt", "sgd": "sgd_opt"}.get(c["optimizer"])
    if opt is None:
        raise Skip("SGD+momentum/Lion: only Adam and plain SGD")
    h, L, I, a = c["hidden"], c["layers"], c["intermediate"], c["heads"]
    s, b = c["seq"], c["batch"]
    P = exact_params(c)[0] if exact else gpu_poor_params(c)
    fB = 2.0
    model_mb = P * fB / MiB
    if c["method"] == "full":
        gradopt = P * 3 * fB if opt == "adam_opt" else P * 1 * fB
    else:  # lora_trn
        gradopt = L * 8 * h * 2 * 4 * 3 * 2 if opt == "adam_opt" else L * 8 * h * 2 * 4 * 2
    attn = (s * h * 3 * fB + s * h * 2 * fB + s * s * a * fB + s * s * a * 4 + s * s * a * fB
            + s * h * fB + s * h * fB + s * h * fB)
    ffn = h * s * fB + h * s * fB + fB * 5 * s * I + I * s * fB
    norm = s * 4 * 2 + s * h * fB * 6
    act_mb = (attn + ffn + norm) * L * b / MiB
    if c["grad_ckpt"] != "none":  # reentrant or not: the layers recompute
        act_mb *= 0.15
    total_mb = model_mb + gradopt / MiB + act_mb + (650 if overhead else 0)
    return total_mb * MiB


def gpu_poor_bare(c):
    return gpu_poor(c, overhead=False)


def gpu_poor_exact_bare(c):
    return gpu_poor(c, overhead=False, exact=True)


# ---------------------------------------------------------------------------
# (6) vram.asmirnov.xyz
# ---------------------------------------------------------------------------

def vram_asmirnov(c, cuda=True, P=None):
    """vram.asmirnov.xyz (furiousteabag/vram-calculator) app/_lib/index.ts,
    estimateResult + calculateActivations + getTotalUsagePerGPU, 1 GPU.

    parameters 6 B/param (mixed) or 4 B (full); gradients 4P; first moment 4P
    (Adam, or SGD with momentum); second moment 4P (Adam); outputs
    4*b*s*V*2 (training); CUDA kernels 1000 MiB.  Activations (Bp = 2 mixed,
    4 full; d = h/a) per layer, x L:
      attn  Bp*bsh + Bp*bs*d*a + 2*Bp*bs*d*kv + 2*Bp*b*a*s^2 + b*a*s^2
            + Bp*bs*a*d + bsh
      mlp   Bp*bsh + 2*Bp*bs*I + bsh;   norms 2*Bp*bsh
    Parameter count given exactly (the page takes it as an input).  No pure
    bf16, Lion, LoRA, freezing or checkpointing inputs.
    """
    need_full(c, "vram.asmirnov")
    mixed = {"bf16-mixed": True, "fp32": False}.get(c["precision"])
    if mixed is None:
        raise Skip("pure bf16: only full or mixed training")
    if c["optimizer"] not in ("adam", "adamw", "sgd", "sgd-momentum"):
        raise Skip("Lion: only Adam and SGD(+momentum)")
    if c["grad_ckpt"] != "none":
        raise Skip("checkpointing: no such input")
    if P is None:
        P = exact_params(c)[0]
    h, L, I, a, kv, V = (c["hidden"], c["layers"], c["intermediate"], c["heads"],
                         c["kv_heads"], c["vocab"])
    s, b = c["seq"], c["batch"]
    bpp = 6 if mixed else 4
    Bp = 2 if mixed else 4
    d = h / a
    attention = (Bp * b * s * h + Bp * b * s * d * a + Bp * b * s * d * kv + Bp * b * a * s * s
                 + 1 * b * a * s * s + Bp * b * a * s * s + Bp * b * s * d * kv
                 + Bp * b * s * a * d + 1 * b * s * h)
    mlp = Bp * b * s * h + Bp * b * s * I + Bp * b * s * I + 1 * b * s * h
    norms = Bp * b * s * h * 2
    activations = (attention + mlp + norms) * L
    outputs = 4 * b * s * V * 2
    parameters = bpp * P
    gradients = 4 * P
    first = 4 * P if c["optimizer"] != "sgd" else 0
    second = 4 * P if c["optimizer"] in ("adam", "adamw") else 0
    return ((1000 * MiB if cuda else 0) + parameters + outputs + activations + gradients
            + first + second)


def vram_asmirnov_bare(c):
    return vram_asmirnov(c, cuda=False)


# ---------------------------------------------------------------------------
# (7) Megatron-LM theoretical memory
# ---------------------------------------------------------------------------

def megatron(c):
    """Megatron-LM megatron/training/theoretical_memory_usage.py,
    report_theoretical_memory with tp = pp = 1, no distributed optimizer, no
    sequence parallelism (so compute_activation_memory_without_sp, which also
    applies whatever the recompute setting).

    Parameters (own count): per layer 2h*(ffn*(3/2 if SwiGLU) + norm_size)
    + 2h^2*(1 + g/a)*(kv_ch*a/h), norm_size 2 (LayerNorm) or 1 (RMSNorm);
    + final norm + embedding h*V_pad (x2 if untied); no biases, no learned
    positions; vocabulary padded to a multiple of 128.  Weights+optimizer
    18 B/param.  Activations: s*b*h*(10 + 24/t)*L + 8sb + sbh
    + (s*b*V_pad/t + s*b*h)*2, all x 1.05.  bf16 mixed precision with Adam.
    """
    need_full(c, "Megatron")
    need_adam(c, "Megatron's 18 B/param")
    if c["precision"] != "bf16-mixed":
        raise Skip("fp32/pure bf16: 18 B/param and 2-byte activations are the bf16 recipe")
    h, L, I, V, a = c["hidden"], c["layers"], c["intermediate"], c["vocab"], c["heads"]
    s, b, t, p = c["seq"], c["batch"], 1, 1
    llama = c["family"] == "llama"
    g = c["kv_heads"]
    kv_ch = c["head_dim"]
    gated = 3 / 2 if llama else 1
    norm_size = 1 if llama else 2
    v_pad = int(math.ceil(V / (128.0 * t)) * 128 * t)
    attn = 2 * h * h * ((1 + g / a) * (kv_ch * a / h))
    layer = 2 * h * (I * gated + norm_size) + attn
    embedding = h * v_pad
    block = layer * L + norm_size * h
    shard = (block / p + embedding) / t
    if not c["tie_embeddings"] and p == 1:
        shard += embedding / t
    weight_and_optimizer = shard * 18
    act = s * b * h * (10 + 24 / t) * L
    act += 8 * s * b * p
    act += s * b * h * p
    act += (s * b * v_pad / t + s * b * h) * 2
    act *= 1.05
    return weight_and_optimizer + act


# ---------------------------------------------------------------------------
# (8) The source article
# ---------------------------------------------------------------------------

def article(c):
    """The source article (/work/shared/seed/seed-article-zh.txt):
    m_total = m_p + m_os + m_data + m_tmp with m_p = P x 4 B, m_os = 2 x m_p
    (Adam/AdamW), m_data = batch x sample (seq tokens of input_ids,
    attention_mask, labels, int64: 24 B per token), m_tmp = 0 (a factor the
    article leaves open).  No gradients, no activations; 4 B per parameter,
    so pure bf16 is not expressible; nothing about LoRA or freezing."""
    need_full(c, "the article")
    need_adam(c, "the article")
    if c["precision"] == "bf16":
        raise Skip("pure bf16: the article assumes 4 B parameters")
    m_p = exact_params(c)[0] * 4
    m_os = 2 * m_p
    m_data = c["batch"] * c["seq"] * 24
    m_tmp = 0
    return m_p + m_os + m_data + m_tmp


# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# Worked examples (peer_formulas.md "closed-form test vectors")
# ---------------------------------------------------------------------------

def selftest():
    """Reproduce the published numbers of the worked examples in
    peer_formulas.md with the functions above; returns a list of failures."""
    GiB = 2 ** 30
    fails = []

    def check(name, got, want, tol):
        ok = abs(got - want) <= tol
        print("  %-58s %12.3f  want %12.3f  %s" % (name, got, want, "ok" if ok else "FAIL"))
        if not ok:
            fails.append(name)

    base = dict(id="x", family="gpt2", kv_heads=0, head_dim=0, max_positions=0,
                tie_embeddings=1, attn_bias=1, lora_rank=0, freeze_layers=0, dropout="0.0",
                method="full", lora_targets="", measured_peak_bytes=1, baseline_bytes=0)
    # J. EleutherAI cookbook, its own example lines (outputs in GiB, 2 decimals)
    llama7b = dict(base, hidden=4096, layers=32, heads=32, kv_heads=32, intermediate=14336,
                   vocab=51200, batch=1, seq=4096, precision="bf16-mixed", optimizer="adamw",
                   grad_ckpt="none")
    P = eleuther_params(llama7b, nl=2)
    check("J cookbook 'llama 7B' params (B)", P / 1e9, 6.34, 0.005)
    check("J cookbook 'llama 7B' total (GiB)", eleuther(llama7b, P=P) / GiB, 203.33, 0.005)
    d20b = dict(base, hidden=6144, layers=44, heads=64, kv_heads=64, intermediate=4 * 6144,
                vocab=51200, batch=1, seq=2048, precision="bf16-mixed", optimizer="adamw",
                grad_ckpt="full")
    P = eleuther_params(d20b, nl=2)
    check("J cookbook 'default 20B' params (B)", P / 1e9, 20.58, 0.005)
    check("J cookbook 'default 20B' total (GiB)", eleuther(d20b, P=P) / GiB, 362.45, 0.005)
    # F. vram.asmirnov default: phi-1_5, mixed, SGD+momentum, b 4, s 512 -> 27836 MiB
    phi = dict(base, hidden=2048, layers=24, heads=32, kv_heads=32, intermediate=8192,
               vocab=51200, batch=4, seq=512, precision="bf16-mixed", optimizer="sgd-momentum",
               grad_ckpt="none")
    check("F vram.asmirnov phi-1_5 total (MiB, +/-3 for rounding)",
          vram_asmirnov(phi, P=1.418e9) / MiB, 27836, 3)
    return fails


TOOLS = [
    # key, label, function
    ("acc", "accelerate estimate-memory", accelerate),
    ("hf18", "HF docs 18 B/param (no activations)", hf_docs_18),
    ("ds2", "DeepSpeed ZeRO-2 estimator (1 GPU)", deepspeed_zero2),
    ("eleu", "EleutherAI cookbook", eleuther),
    ("eleuP", "EleutherAI cookbook, exact P", eleuther_exact),
    ("gp", "gpu_poor (+650 MB overhead)", gpu_poor),
    ("gp0", "gpu_poor, without the 650 MB", gpu_poor_bare),
    ("gp0P", "gpu_poor, exact P, without 650 MB", gpu_poor_exact_bare),
    ("vram", "vram.asmirnov (+1000 MiB CUDA)", vram_asmirnov),
    ("vram0", "vram.asmirnov, without the 1000 MiB", vram_asmirnov_bare),
    ("mega", "Megatron theoretical memory", megatron),
    ("art", "source article (m_p+m_os+m_data)", article),
]


def summarize(errs):
    """errs: list of (signed relative error, id).  Returns a dict or None."""
    if not errs:
        return None
    absval = [abs(e) for e, _ in errs]
    under = sum(1 for e, _ in errs if e < 0)
    over = sum(1 for e, _ in errs if e > 0)
    worst = max(errs, key=lambda x: abs(x[0]))
    if max(absval) < 0.001:
        sign = "none (all within 0.1 %)"
    elif under == len(errs):
        sign = "under (all)"
    elif over == len(errs):
        sign = "over (all)"
    elif under > over:
        sign = "under (%d/%d)" % (under, len(errs))
    elif over > under:
        sign = "over (%d/%d)" % (over, len(errs))
    else:
        sign = "mixed"
    return {"n": len(errs), "median": statistics.median(absval) * 100,
            "p95": compare.percentile(absval, 95) * 100, "max": max(absval) * 100,
            "worst": worst[1], "sign": sign}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Peer estimators' formulas vs the measured grid.")
    ap.add_argument("--csv", default=os.path.join(HERE, "grid.csv"), help="measured grid")
    ap.add_argument("--llmem", default=None, metavar="PATH",
                    help="also run PATH estimate ... --json on every row (as compare.py)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per llmem call")
    ap.add_argument("--quiet", action="store_true", help="print the summary only")
    ap.add_argument("--markdown", action="store_true", help="summary as a Markdown table")
    ap.add_argument("--selftest", action="store_true",
                    help="only check the formulas against the published worked examples")
    a = ap.parse_args(argv)

    if a.selftest:
        fails = selftest()
        print("selftest: %s" % ("all ok" if not fails else "FAILED: " + ", ".join(fails)))
        return 1 if fails else 0

    try:
        rows = compare.load_rows(a.csv, set())
    except (OSError, ValueError) as e:
        print("peers.py: %s" % e, file=sys.stderr)
        return 2
    cs = [cfg(r) for r in rows]

    n_checked, bad = check_params(cs)
    if bad:
        print("peers.py: exact parameter counts do not reproduce baseline_bytes on rows %s"
              % ", ".join(bad), file=sys.stderr)
        return 2

    tools = list(TOOLS)
    if a.llmem:
        def llmem(c, _rows={r["id"]: r for r in rows}):
            est, _, _ = compare.run_llmem(compare.build_command(a.llmem, _rows[c["id"]]),
                                          a.timeout)
            return est
        tools.append(("llmem", "libllmem (llmem estimate)", llmem))

    errs = {k: [] for k, _, _ in tools}
    skips = {k: {} for k, _, _ in tools}
    table = []
    for c in cs:
        meas = c["measured_peak_bytes"]
        cells = []
        for key, _, fn in tools:
            try:
                est = fn(c)
            except Skip as e:
                skips[key][str(e)] = skips[key].get(str(e), 0) + 1
                cells.append(None)
                continue
            except compare.LlmemError as e:
                print("peers.py: llmem failed on row %s: %s" % (c["id"], e), file=sys.stderr)
                return 2
            rel = (est - meas) / meas
            errs[key].append((rel, c["id"]))
            cells.append(rel)
        table.append((c, cells))

    if not a.quiet:
        print("signed relative error (est - measured) / measured, %; '-' = not expressible")
        hdr = "%-4s %-5s %-10s %-6s %-4s %-12s %9s" % ("id", "fam", "precision", "method",
                                                      "ckpt", "optimizer", "meas MiB")
        print(hdr + "".join(" %7s" % k for k, _, _ in tools))
        for c, cells in table:
            line = "%-4s %-5s %-10s %-6s %-4s %-12s %9.1f" % (
                c["id"], c["family"], c["precision"], c["method"], c["grad_ckpt"],
                c["optimizer"], c["measured_peak_bytes"] / MiB)
            line += "".join(" %7s" % ("-" if v is None else "%+.1f" % (v * 100)) for v in cells)
            print(line)
        print()

    print("parameter counts: exact formula reproduces baseline_bytes on %d/%d full "
          "fine-tuning rows" % (n_checked, n_checked))
    print()
    if a.markdown:
        print("| tool | rows expressible | median | p95 | max | typical sign |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
    else:
        print("%-38s %5s %9s %9s %9s  %-6s %s" % ("tool", "rows", "median%", "p95%", "max%",
                                                   "worst", "sign"))
    for key, label, _ in tools:
        s = summarize(errs[key])
        if s is None:
            continue
        if a.markdown:
            print("| %s | %d / %d | %.2f %% | %.2f %% | %.2f %% (%s) | %s |" % (
                label, s["n"], len(cs), s["median"], s["p95"], s["max"], s["worst"], s["sign"]))
        else:
            print("%-38s %2d/%2d %9.2f %9.2f %9.2f  %-6s %s" % (
                label, s["n"], len(cs), s["median"], s["p95"], s["max"], s["worst"], s["sign"]))
    print()
    print("rows not expressible, per tool (reason: count):")
    for key, label, _ in tools:
        if skips[key]:
            print("  %s: %s" % (label, "; ".join(
                "%s (%d)" % kv for kv in sorted(skips[key].items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
