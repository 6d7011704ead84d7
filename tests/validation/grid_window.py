"""Measure the sliding-window rows (transformers 5.x SDPA with
``config.sliding_window``) and write grid_window.csv.

    /usr/bin/python3 tests/validation/grid_window.py
    /usr/bin/python3 tests/validation/grid_window.py --only w01,w05
    /usr/bin/python3 tests/validation/grid_window.py --breakdown w05
    /usr/bin/python3 tests/validation/grid_window.py --list

A model whose config sets ``sliding_window`` (Mistral's code on the Llama
path, Phi-3, StarCoder2) trains under SDPA with a mask once seq >= window
(sdpa.py): the bool ``[B, 1, S, S]`` mask built once per forward (held by
every checkpointed layer through its backward), and in each layer
``repeat_kv`` copies of key and value, a new additive bias in q's dtype
(padded to a multiple of 8 when S is not one: w05, w06, w14), the memory-efficient kernel
that saves it.  Below the window nothing changes (no mask, is_causal,
enable_gqa): w04 and w12 sit one token below theirs.  Gemma-2 (w16-w27,
models_more.py) builds a mask per layer type once per forward: its odd
(full-attention) layers run the causal kernel at every length, its even
(sliding) layers the bool mask from seq >= window; no attention softcapping
under SDPA; w24 sits one token below the window.  Same method as grid.py
(CPU, LiveTracker, one warm-up step); columns: grid_families.csv's, plus
``lora_dropout`` and ``sliding_window`` (compare.py passes
``--sliding-window N`` when nonzero).  Llama, Phi-3 and Gemma-2 rows leave
the families' layout columns empty, as grid_bf16_autocast.csv does.
"""

from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_families as GF  # noqa: E402
import grid_more as GM  # noqa: E402

COLUMNS = GF.COLUMNS + ["lora_dropout", "sliding_window"]


def _windowed(base):
    """``base`` (a RunConfig class) with the model's ``sliding_window``."""

    @dataclasses.dataclass
    class RunConfigWindow(base):
        sliding_window: int = 0

        def arch(self):
            # dataclasses.replace re-runs ArchConfig's checks of the window
            return dataclasses.replace(base.arch(self), sliding_window=self.sliding_window)

        def normalized(self):
            c = base.normalized(self)
            c.arch()  # a bad window fails here, before the model is built
            return c

    RunConfigWindow.__name__ = RunConfigWindow.__qualname__ = base.__name__ + "Window"
    return RunConfigWindow


RunConfigMoreWindow = _windowed(GM.RunConfigMore)
RunConfigFamiliesWindow = _windowed(GF.RunConfigFamilies)

SIZES = {
    # Mistral-7B-like on the Llama path: 8 heads, 2 kv heads (repeat_kv copies
    # k and v to 8 heads), head_dim 32; a small vocabulary so that the
    # attention's S x S tensors weigh in the peak
    "w1": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32,
               intermediate=688, vocab=2048, max_positions=4096),
    # 4 kv heads
    "w2": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=4, head_dim=32,
               intermediate=688, vocab=2048, max_positions=4096),
    # Phi-3-mini-like: kv_heads = heads (repeat_kv returns k and v as they are)
    "w3": dict(family="phi3", hidden=256, layers=2, heads=8, kv_heads=8, intermediate=688,
               vocab=2048, max_positions=4096),
    # StarCoder2: grouped kv heads, LayerNorm, biases, tied
    "w4": dict(family="starcoder2", hidden=256, layers=2, heads=8, kv_heads=2,
               intermediate=1024, vocab=2048, max_positions=4096),
    # w1 with a 512-token vocabulary: at seq 1024 a layer's attention
    # (its recomputation under checkpointing) holds the backward peak
    "w5": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32,
               intermediate=688, vocab=512, max_positions=4096),
    # Gemma-2: sliding (even) and full (odd) layers alternate, head_dim 64,
    # tied, a 512-token vocabulary so that the sliding layers' S x S mask
    # and biases weigh in the peak
    "w6": dict(family="gemma2", hidden=256, layers=4, heads=4, kv_heads=2, head_dim=64,
               intermediate=512, vocab=512, max_positions=4096, tie_embeddings=1),
    # an odd layer count: two sliding layers, one full
    "w7": dict(family="gemma2", hidden=256, layers=3, heads=4, kv_heads=2, head_dim=64,
               intermediate=512, vocab=512, max_positions=4096, tie_embeddings=1),
}

SDPA = {"attention": "sdpa"}


def win(w, **kw):
    return dict(SDPA, sliding_window=w, **kw)


LLAMA_T = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
ATTN_T = "q_proj,k_proj,v_proj,o_proj"

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    # Mistral-like: above the window, fp32 and bf16-mixed
    ("w01", "w1", 2, 512, "fp32", "adamw", "none", 0.0, "full", win(128)),
    ("w02", "w1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", win(100)),
    # seq == window: the mask is built (sdpa_mask materialises from S >= W)
    ("w03", "w1", 2, 128, "bf16-mixed", "adamw", "none", 0.0, "full", win(128)),
    # seq one below the window: no mask, is_causal and enable_gqa as without
    # a window
    ("w04", "w1", 2, 128, "bf16-mixed", "adamw", "none", 0.0, "full", win(129)),
    # S % 8 != 0: the bias padded to 136 columns (pad_bias<8>)
    ("w05", "w1", 2, 130, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
    ("w06", "w5", 1, 1020, "fp32", "adamw", "reentrant", 0.0, "full", win(256)),
    # checkpointing: the mask held by every layer's checkpoint, each layer's
    # bias and repeat_kv copies rebuilt in its recomputation
    ("w07", "w1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     win(64, lora_rank=8, lora_targets=LLAMA_T)),
    ("w08", "w2", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full",
     win(64, optimizer_impl="fused")),
    ("w09", "w2", 2, 512, "bf16", "adamw", "none", 0.0, "full", win(256)),
    # Phi-3: no repeat_kv copy; v stays a view of qkv_proj's output
    ("w10", "w3", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
    ("w11", "w3", 1, 256, "fp32", "adamw", "non-reentrant", 0.0, "lora",
     win(128, lora_rank=8, lora_targets=GM.PHI3_TARGETS)),
    ("w12", "w3", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", win(257)),
    # StarCoder2
    ("w13", "w4", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
    ("w14", "w4", 2, 130, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora",
     win(100, lora_rank=8, lora_targets=GF.SC2_T)),
    # long sequence, small vocabulary: the recomputed layer's bias and
    # repeat_kv copies at the backward peak
    ("w15", "w5", 1, 1024, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", win(512)),
    # Gemma-2 under SDPA: the mask only on the sliding layers, the full ones
    # on the causal kernel (enable_gqa, no repeat_kv copies)
    ("w16", "w6", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
    ("w17", "w6", 2, 256, "fp32", "adamw", "none", 0.0, "full", win(64)),
    ("w18", "w6", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     win(64, lora_rank=8, lora_targets=ATTN_T)),
    ("w19", "w6", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", win(64)),
    ("w20", "w6", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora",
     win(64, lora_rank=8, lora_targets=ATTN_T)),
    ("w21", "w6", 2, 256, "bf16", "adamw", "none", 0.0, "full", win(64)),
    # frozen first layers: a sliding one, then a sliding and a full one
    ("w22", "w6", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "freeze",
     win(64, freeze_layers=1)),
    ("w23", "w6", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "freeze",
     win(64, freeze_layers=2)),
    # one below the window: every layer on the causal kernel
    ("w24", "w6", 2, 128, "bf16-mixed", "adamw", "none", 0.0, "full", win(129)),
    ("w25", "w7", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
    ("w26", "w7", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     win(64, lora_rank=8, lora_targets=ATTN_T)),
    # S % 8 != 0: the sliding layers' bias padded to 136 columns
    ("w27", "w6", 2, 130, "bf16-mixed", "adamw", "none", 0.0, "full", win(64)),
]


def run_config(row):
    rid, size, b, s, prec, opt, gc, p, method, extra = row
    family = SIZES[size]["family"]
    if family in GF.DEFAULTS:
        kw = dict(GF.DEFAULTS[family])
        cls = RunConfigFamiliesWindow
    else:
        kw = {}
        cls = RunConfigMoreWindow
    kw.update(SIZES[size])
    kw.update(batch=b, seq=s, precision=prec, optimizer=opt, grad_ckpt=gc, dropout=p,
              method=method)
    kw.update(extra)
    rc = cls(**kw).normalized()
    if family in GF.DEFAULTS:
        GF.mirror_biases(rc)
    return rid, rc


def csv_row(rid, rc, res):
    if rc.family in GF.DEFAULTS:
        r = GF.csv_row(rid, rc, res)
        r["lora_dropout"] = rc.lora_dropout
    else:
        r = GM.csv_row(rid, rc, res)
    r["sliding_window"] = rc.sliding_window
    return r


def write_csv(path, rows):
    """Columns a row lacks are left empty (compare.py passes no flag for them)."""
    G.write_csv(path, rows, COLUMNS, ROWS, missing="")


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_window", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-10s %-3s b%d s%-4d w%-4d %-10s gc=%-13s %-5s" % (
            rc.family, row[1], rc.batch, rc.seq, rc.sliding_window, rc.precision, rc.grad_ckpt,
            rc.method))


if __name__ == "__main__":
    sys.exit(main())
