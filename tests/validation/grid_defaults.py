"""Measure the rows of what current defaults run and write grid_defaults.csv.

    /usr/bin/python3 tests/validation/grid_defaults.py
    /usr/bin/python3 tests/validation/grid_defaults.py --only d01,d08
    /usr/bin/python3 tests/validation/grid_defaults.py --breakdown d04   # live at the peak
    /usr/bin/python3 tests/validation/grid_defaults.py --list

What transformers 5.x with PyTorch 2.11 runs by default, and the choices
next to it: SDPA attention on each backend PyTorch picks (the fused
flash/cuDNN kernel for fp16/bf16, memory-efficient for fp32 without grouped
kv heads, the math fallback for fp32 with them; sdpa.py), the fused and
forloop AdamW/Adam steps (optimizers.py), non-reentrant checkpointing as
torch 2.x implements it (models.checkpoint_non_reentrant), and PEFT's
lora_dropout.  Same method and columns as grid.py (CPU, LiveTracker, one
warm-up step), plus ``lora_dropout``.  The architectures are grid.py's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import measure as ms  # noqa: E402

COLUMNS = G.COLUMNS + ["lora_dropout"]

# grid.py's architectures, and two with a 512-token vocabulary, so that the
# backward through the layers (the attention kernels' workspaces, the
# recomputation of a checkpointed layer) rather than the loss holds the
# backward phase's peak.
SIZES = dict(G.SIZES)
SIZES.update({
    "s1": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=2, intermediate=688,
               vocab=512, max_positions=4096),
    "s2": dict(family="gpt2", hidden=256, layers=2, heads=8, vocab=512, max_positions=1024),
})

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
# (extra: optimizer_impl, attention, lora_* as RunConfig fields)
FUSED = {"optimizer_impl": "fused"}
SDPA = {"attention": "sdpa"}
DEFAULTS = {"optimizer_impl": "fused", "attention": "sdpa"}
ROWS = [
    # SDPA, fused 16-bit kernel (GQA kept grouped, enable_gqa), the defaults
    ("d01", "l6", 2, 512, "bf16-mixed", "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("d02", "l6", 2, 512, "bf16", "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    # GPT-2: q, k, v are views of c_attn's output, saved by the kernel
    ("d03", "g4", 2, 512, "bf16-mixed", "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    # fp32, one kv head per query head: the memory-efficient kernel
    ("d04", "l1", 2, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("d05", "g1", 2, 256, "fp32", "adamw", "none", 0.1, "full", dict(SDPA)),
    # fp32 with grouped kv heads: the math fallback
    ("d06", "l6", 1, 512, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("d07", "l2", 2, 256, "fp32", "sgd", "none", 0.0, "full", dict(SDPA)),
    # the AdamW/Adam step by implementation: short sequences, the step holds the peak
    ("d08", "l3", 1, 64, "fp32", "adamw", "none", 0.0, "full", {"optimizer_impl": "fused"}),
    ("d09", "l3", 1, 64, "fp32", "adamw", "none", 0.0, "full", {"optimizer_impl": "forloop"}),
    ("d10", "g3", 1, 64, "fp32", "adam", "none", 0.0, "full", {"optimizer_impl": "forloop"}),
    ("d11", "l4", 1, 64, "bf16", "adamw", "none", 0.0, "full",
     {"optimizer_impl": "forloop", "attention": "sdpa"}),
    ("d12", "l2", 1, 64, "bf16-mixed", "adam", "none", 0.0, "lora",
     {"optimizer_impl": "fused", "attention": "sdpa", "lora_rank": 16}),
    # non-reentrant checkpointing (transformers 5.x's default)
    ("d13", "l2", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", {}),
    ("d14", "g2", 2, 256, "fp32", "adamw", "non-reentrant", 0.1, "full", {}),
    ("d15", "l1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora", dict(DEFAULTS)),
    ("d16", "l6", 2, 512, "bf16", "sgd", "non-reentrant", 0.0, "full", {}),
    ("d17", "l6", 2, 512, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    # PEFT lora_dropout: each adapter's own dropout on its input
    ("d18", "l1", 2, 256, "fp32", "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_dropout=0.1)),
    ("d19", "l2", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_dropout": 0.05, "lora_rank": 16}),
    ("d20", "g1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     {"lora_dropout": 0.1, "lora_targets": "c_attn"}),
    ("d21", "l2", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora",
     dict(DEFAULTS, lora_dropout=0.05)),
    # small vocabularies: the layers' backward holds the backward phase's peak
    ("d22", "s1", 4, 1024, "bf16-mixed", "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("d23", "s1", 2, 1024, "fp32", "sgd", "none", 0.0, "full", dict(SDPA)),
    ("d24", "s2", 4, 1024, "fp32", "sgd", "none", 0.0, "full", dict(SDPA)),
    ("d25", "s1", 4, 1024, "bf16-mixed", "sgd", "non-reentrant", 0.0, "full", dict(SDPA)),
    ("d26", "s2", 4, 1024, "fp32", "sgd", "non-reentrant", 0.1, "full", {}),
]


def run_config(row):
    return G.run_config(row, SIZES, ms.RunConfig)


def csv_row(rid, rc, res):
    r = G.csv_row(rid, rc, res)
    r["lora_dropout"] = rc.lora_dropout
    return r


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_defaults", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       lambda path, rows: G.write_csv(path, rows, COLUMNS, ROWS),
                       lambda row, rc: "%-6s %-3s b%d s%-4d %-10s %-6s %-7s gc=%-13s %-5s %-5s" % (
            rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.optimizer, rc.optimizer_impl,
            rc.grad_ckpt, rc.attention, rc.method))


if __name__ == "__main__":
    sys.exit(main())
