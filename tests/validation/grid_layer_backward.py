"""Measure the rows whose backward phase peaks inside the decoder layers and
write grid_layer_backward.csv.

    /usr/bin/python3 tests/validation/grid_layer_backward.py
    /usr/bin/python3 tests/validation/grid_layer_backward.py --only lb01,lb12
    /usr/bin/python3 tests/validation/grid_layer_backward.py --breakdown lb01
    /usr/bin/python3 tests/validation/grid_layer_backward.py --list

The other grids' backward phase mostly peaks at the loss (the logits'
gradient and log-softmax backward over a large vocabulary), so a temporary
of a layer's backward that a layer-by-layer account misses (pow's backward
inside RMSNorm's, found on checkpointed Gemma-2) shows only where a layer's
backward holds the peak.  These rows use a 512-token vocabulary (one 128)
at 512-1024 tokens, full fine-tuning (the parameter gradients of the layers already
done pile up while the activations still saved are those of the layers to
come) or LoRA on every linear under bf16-mixed with checkpointing, in fp32,
bf16 and bf16-mixed, each checkpointing mode, eager and SDPA, over every
family of the harness.

Each measurement also records where its backward peak falls: tensor hooks
on the inputs and outputs of the final norm and of every decoder layer mark
when their gradients are made, and the peak's op is placed between the
marks (``loss``: the loss and lm_head backward, before the final norm's
output gradient; ``final-norm``; ``layers.N backward``, from layer N's
output gradient to its input gradient; ``layers.N recompute``, a reentrant
checkpoint's recomputation before the output gradient reaches layer N's
inner graph; ``embedding``, after layer 0's input gradient).  The progress
line and ``--breakdown`` print it; a row whose backward peak is not in a
layer is flagged.  The hooks return nothing and allocate nothing on the
tracked path.

Same method as grid.py (CPU, LiveTracker, one warm-up step); columns those
of grid_layer_peaks.csv.  The sizes are grid_layer_peaks.py's (the other
grids' with the vocabulary set to 512), the MoE and DeepSeek-V3 ones
likewise, and two more (``llw``, ``neox128``) where that left the backward
peak at the final norm or the loss.
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_families as GF  # noqa: E402
import grid_layer_peaks as LP  # noqa: E402
import grid_more as GM  # noqa: E402
import live_tracker  # noqa: E402
import measure as ms  # noqa: E402

COLUMNS = LP.COLUMNS

SIZES = dict(LP.SIZES)
SIZES.update({
    # Mixtral-style 4 experts top-2; Qwen2-MoE-style 8 experts, shared expert
    "mix": LP._small(GM.SIZES["m1"]),
    "qmoe": LP._small(GM.SIZES["m2"]),
    # DeepSeek-V3-like: q compression, sigmoid router, groups
    "ds3": LP._small(GF.SIZES["d2"]),
    # without checkpointing under SDPA a layer's backward makes few
    # temporaries and the final norm's (or the loss's) held the peak: wider
    # layers, whose MLP backward temporaries outgrow the final norm's, or a
    # 128-token vocabulary
    "llw": dict(LP.SIZES["ll"], hidden=1024, heads=16, kv_heads=4, head_dim=64,
                intermediate=2752),
    "neox128": dict(LP.SIZES["neox"], vocab=128),
    # Gemma-2 with four layers: a mask per layer type, released layer by layer
    "gemma2x4": dict(LP.SIZES["gemma2"], layers=4),
})

SDPA = LP.SDPA
EAGER = LP.EAGER
lora = LP.lora
BM = "bf16-mixed"
RE = "reentrant"
NR = "non-reentrant"

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    # Llama (8 heads, 2 kv heads) full fine-tuning, each precision and
    # checkpointing, eager and SDPA (fp32 SDPA with grouped kv heads: the
    # math fallback; 16-bit: the fused kernel)
    ("lb01", "ll", 1, 1024, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb02", "llw", 1, 512, "bf16", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lb03", "llw", 1, 512, BM, "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lb04", "ll", 2, 512, "fp32", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb05", "ll", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lb06", "ll", 1, 1024, "bf16", "adamw", RE, 0.0, "full", dict(SDPA)),
    ("lb07", "ll", 2, 512, BM, "adamw", RE, 0.0, "full", dict(EAGER)),
    ("lb08", "ll", 1, 1024, "fp32", "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb09", "ll", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(EAGER)),
    ("lb10", "llmha", 2, 512, "bf16", "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb11", "ll3", 1, 1024, "fp32", "adamw", RE, 0.1, "full", dict(EAGER)),
    # Qwen2-style biases (tied), Qwen3 qk-norm
    ("lb12", "qw", 1, 1024, BM, "adamw", RE, 0.0, "full", dict(SDPA)),
    ("lb13", "qwen3", 1, 1024, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb14", "qwen3", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
    # Mixtral / Qwen2-MoE experts
    ("lb15", "mix", 1, 1024, BM, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb16", "qmoe", 2, 512, "fp32", "adamw", RE, 0.0, "full", dict(EAGER)),
    # Llama LoRA on all seven projections, bf16-mixed, checkpointed
    ("lb17", "ll", 1, 1024, BM, "adamw", RE, 0.0, "lora", lora(SDPA)),
    ("lb18", "ll", 1, 1024, BM, "adamw", NR, 0.0, "lora", lora(EAGER)),
    ("lb19", "ll", 2, 512, BM, "adamw", NR, 0.0, "lora", lora(SDPA, p=0.1)),
    # GPT-2 (gelu_new's pow, LayerNorm, Conv1D)
    ("lb20", "gp", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb21", "gp", 1, 1024, BM, "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lb22", "gp", 2, 512, "bf16", "adamw", RE, 0.0, "full", dict(EAGER)),
    ("lb23", "gp", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb24", "gp", 1, 1024, "fp32", "adamw", NR, 0.1, "full", dict(SDPA)),
    ("lb25", "gp", 1, 1024, BM, "adamw", RE, 0.0, "lora",
     lora(SDPA, "c_attn,c_proj,c_fc")),
    ("lb26", "gp", 2, 512, BM, "adamw", NR, 0.0, "lora",
     lora(EAGER, "c_attn,c_proj,c_fc")),
    # Gemma-2 (four RMSNorms a layer, each with pow's backward)
    ("lb27", "gemma2", 1, 1024, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb28", "gemma2", 1, 1024, BM, "adamw", RE, 0.0, "full", dict(EAGER)),
    ("lb29", "gemma2", 1, 1024, "fp32", "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb30", "gemma2", 2, 512, "bf16", "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb31", "gemma2", 1, 1024, BM, "adamw", RE, 0.0, "lora", lora(SDPA)),
    ("lb32", "gemma2", 1, 1024, BM, "adamw", NR, 0.0, "lora", lora(EAGER)),
    # one or two rows of each other family
    ("lb33", "opt", 1, 1024, BM, "adamw", RE, 0.0, "full", dict(SDPA)),
    ("lb34", "bloom", 1, 1024, "bf16", "adamw", NR, 0.0, "full", dict(EAGER)),
    ("lb35", "neox128", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lb36", "neox", 1, 1024, BM, "adamw", RE, 0.0, "lora", lora(SDPA, GF.QKV_T)),
    ("lb37", "falcon", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb38", "phi", 1, 1024, "bf16", "adamw", RE, 0.0, "full", dict(SDPA)),
    ("lb39", "phi3", 1, 1024, BM, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lb40", "phi3", 1, 1024, BM, "adamw", NR, 0.0, "lora", lora(SDPA, GM.PHI3_TARGETS)),
    ("lb41", "sc2", 1, 1024, "fp32", "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb42", "ds2", 1, 1024, BM, "adamw", RE, 0.0, "full", dict(SDPA)),
    ("lb43", "ds3", 1, 1024, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    # bf16-mixed under non-reentrant checkpointing: Phi's gelu_new as
    # GPT-2's (lb23), StarCoder2's gelu_pytorch_tanh
    ("lb44", "phi", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
    ("lb45", "sc2", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
    # Gemma-2 eager as transformers 5.x runs it: both layer types' masks
    # built once, each held by its layers' checkpoints (to the end of
    # backward when reentrant)
    ("lb46", "gemma2x4", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(EAGER)),
    ("lb47", "gemma2x4", 1, 1024, BM, "adamw", RE, 0.0, "full", dict(EAGER)),
    ("lb48", "gemma2x4", 1, 1024, "bf16", "adamw", NR, 0.0, "freeze",
     dict(EAGER, freeze_layers=1)),
    ("lb49", "gemma2x4", 1, 1024, BM, "adamw", NR, 0.0, "lora", lora(EAGER)),
    ("lb50", "gemma2x4", 2, 512, "fp32", "adamw", NR, 0.0, "full", dict(EAGER)),
    # DeepSeek-V2's combine, mul_ in place: autograd clones its input to save
    # it under grad mode (a non-reentrant checkpoint's forward packs the
    # clone and drops it), not under no_grad (lb42: reentrant)
    ("lb51", "ds2", 1, 1024, BM, "adamw", NR, 0.0, "full", dict(SDPA)),
]


def run_config(row):
    return LP.run_config(row, SIZES)


# --- where the backward peak falls ----------------------------------------

_MARKS = []  # (tracker seq, mark) of the measured backward, in firing order
_LAST = {}   # where the last measured row's backward peak fell


def _mark(name):
    def hook(grad):
        tr = live_tracker._ACTIVE[-1] if live_tracker._ACTIVE else None
        if tr is not None and tr.phase == "backward":
            _MARKS.append((tr.seq, name))
    return hook


def _first_tensor(x):
    if isinstance(x, (tuple, list)):
        x = x[0] if x else None
    return x if isinstance(x, torch.Tensor) else None


def _install_marks(model):
    """Hooks on the final norm's and each decoder layer's first input and
    output, where grad is on (not inside a reentrant checkpoint's forward,
    but in its recomputation): a module's input gradient marks the end of
    its backward, its output gradient the start."""
    mods = [("layers.%d" % i, m) for i, m in enumerate(model.decoder_layers())]
    for attr in ("norm", "ln_f", "final_layer_norm", "final_layernorm"):
        if getattr(model, attr, None) is not None:
            mods.append(("final-norm", getattr(model, attr)))
            break
    for name, mod in mods:
        def pre(m, inp, _n=name):
            t = _first_tensor(inp)
            if t is not None and t.requires_grad and torch.is_grad_enabled():
                t.register_hook(_mark(_n + ":in"))

        def post(m, inp, out, _n=name):
            t = _first_tensor(out)
            if t is not None and t.requires_grad and torch.is_grad_enabled():
                t.register_hook(_mark(_n + ":out"))
        mod.register_forward_pre_hook(pre)
        mod.register_forward_hook(post)


def where(seq, marks, layers):
    """The region of the backward that holds op number ``seq``."""
    first = {}
    for s, name in marks:
        first.setdefault(name, s)
    # A gradient's hook fires after the op that makes it, so that op belongs
    # to the region before the mark; at one seq an input mark comes before
    # an output mark (one tensor: layer N's input is layer N-1's output).
    region = "loss"
    for name, s in sorted(first.items(), key=lambda x: (x[1], x[0].endswith(":out"))):
        if s >= seq:
            break
        mod, end = name.rsplit(":", 1)
        if end == "out":
            region = "final-norm" if mod == "final-norm" else mod + " backward"
        else:
            i = layers if mod == "final-norm" else int(mod.split(".")[1])
            region = "layers.%d recompute" % (i - 1) if i > 0 else "embedding"
    return region


def _marked(build, measure):
    def build_marked(rc):
        model, opt, batch, lora_names = build(rc)
        _install_marks(model)
        return model, opt, batch, lora_names

    def measure_marked(rc, **kw):
        del _MARKS[:]
        res = measure(rc, **kw)
        res["backward_peak_where"] = where(res["phase_peak_op"]["backward"][1],
                                           list(_MARKS), rc.layers)
        _LAST["where"] = res["backward_peak_where"]
        return res
    return build_marked, measure_marked


def csv_row(rid, rc, res):
    return LP.csv_row(rid, rc, res)


def write_csv(path, rows):
    """Columns a row lacks are left empty (compare.py passes no flag for them)."""
    G.write_csv(path, rows, COLUMNS, ROWS, missing="")


def _describe(row, rc):
    w = _LAST.get("where", "?")
    return "%-10s %-6s b%d s%-4d %-10s gc=%-13s %-5s %-4s bwd@%s%s" % (
        rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.attention,
        rc.method, w, "" if w.startswith("layers.") else " (NOT IN A LAYER)")


def main(argv=None):
    # measure() builds and grid_main() measures through the measure
    # module's names: route both through the marks for this run
    saved = ms.build, ms.measure
    ms.build, ms.measure = _marked(*saved)
    try:
        rc = G.grid_main(argv, __doc__, "grid_layer_backward", ROWS, run_config,
                         lambda rid, rc, res, row: csv_row(rid, rc, res),
                         write_csv, _describe)
    finally:
        ms.build, ms.measure = saved
    args = sys.argv[1:] if argv is None else argv
    if "where" in _LAST and any(a.startswith("--breakdown") for a in args):
        print("backward peak in: %s" % _LAST["where"])
    return rc


if __name__ == "__main__":
    sys.exit(main())
