"""Measure the families' SDPA rows and write grid_families_sdpa.csv.

    /usr/bin/python3 tests/validation/grid_families_sdpa.py
    /usr/bin/python3 tests/validation/grid_families_sdpa.py --only z01,z07
    /usr/bin/python3 tests/validation/grid_families_sdpa.py --breakdown z07
    /usr/bin/python3 tests/validation/grid_families_sdpa.py --list

SDPA (transformers 5.x's default attention) for OPT, GPT-NeoX, Falcon, Phi,
StarCoder2 and DeepSeek, through sdpa.py's emulation as models_families.py
calls it: ``sdpa_attention_forward`` for all but Falcon (OPT with scaling 1,
its query scaled before), Falcon's own ``F.scaled_dot_product_attention``
(no ``enable_gqa``, dropout 0).  Without padding no mask is built.  The rows
reach every backend: the fused 16-bit kernel, the memory-efficient kernel
(fp32; DeepSeek's narrower values at any precision) and the math fallback
(fp32 with grouped kv heads; Falcon's multi-query layout at any precision),
with and without attention dropout.  One BLOOM row: BLOOM has no SDPA in
transformers, ``sdpa`` runs its eager attention.  Falcon-RW's ALiBi (a float
mask handed to SDPA) is not measured.  Same method and columns as
grid_families.py (CPU, LiveTracker, one warm-up step); sizes are its.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_families as GF  # noqa: E402
import measure as ms  # noqa: E402

SDPA = {"attention": "sdpa"}


def lora(targets, **kw):
    return dict(SDPA, lora_rank=8, lora_targets=targets, **kw)


# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    # OPT: the query scaled before SDPA (scale 1); pre- and post-norm
    ("z01", "o1", 1, 256, "fp32", "adamw", "none", 0.1, "full", dict(SDPA)),
    ("z02", "o1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora", lora(GF.OPT_T)),
    ("z03", "o2", 2, 128, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(SDPA)),
    # GPT-NeoX: partial rotary (Pythia) and full
    ("z04", "n1", 1, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z05", "n1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(SDPA)),
    ("z06", "n2", 2, 256, "fp32", "adamw", "reentrant", 0.0, "lora", lora(GF.QKV_T)),
    ("z07", "n1", 2, 256, "bf16", "adamw", "none", 0.0, "full", dict(SDPA)),
    # Falcon's own call: multi-query (math at every precision), grouped kv
    # heads broadcast to every head, the per-head layout
    ("z08", "f1", 1, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z09", "f1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", lora(GF.QKV_T)),
    ("z10", "f2", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z11", "f2", 1, 256, "fp32", "adamw", "non-reentrant", 0.0, "full", dict(SDPA)),
    ("z12", "f3", 2, 128, "fp32", "adamw", "none", 0.1, "full", dict(SDPA)),
    ("z13", "f4", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora", lora(GF.QKV_T)),
    # Phi: partial rotary; grouped kv heads with qk_layernorm (fp32: math, with
    # the attention dropout's mask)
    ("z14", "h1", 1, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z15", "h1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", lora(GF.PHI_T)),
    ("z16", "h2", 2, 128, "fp32", "adamw", "none", 0.1, "full", dict(SDPA)),
    ("z17", "h2", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(SDPA)),
    # StarCoder2: grouped kv heads
    ("z18", "s1", 1, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z19", "s1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(SDPA)),
    ("z20", "s1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora", lora(GF.SC2_T)),
    # DeepSeek: values narrower than keys (the memory-efficient kernel)
    ("z21", "d1", 1, 256, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("z22", "d1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora", lora(GF.DS2_T)),
    ("z23", "d2", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(SDPA)),
    # BLOOM: no SDPA in transformers, eager attention under sdpa
    ("z24", "b1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(SDPA)),
]


def run_config(row):
    rid, rc = GF.run_config(row)
    if rc.family == "bloom":
        rc.attention = "eager"  # what transformers runs; the CSV row keeps "sdpa"
        rc.requested_attention = "sdpa"
    return rid, rc


def csv_row(rid, rc, res):
    r = GF.csv_row(rid, rc, res)
    r["attention"] = getattr(rc, "requested_attention", rc.attention)
    return r


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_families_sdpa", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       lambda path, rows: G.write_csv(path, rows, GF.COLUMNS, ROWS),
                       lambda row, rc: "%-10s %-3s b%d s%-4d %-10s gc=%-13s %-5s p=%.1f" % (
            rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.method, rc.dropout))


if __name__ == "__main__":
    sys.exit(main())
