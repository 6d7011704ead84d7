"""Measure the extra validation rows (Qwen3 qk-norm, Mixtral / Qwen2-MoE
sparse MoE, Phi-3, Gemma-2) and write grid_more.csv.

    /usr/bin/python3 tests/validation/grid_more.py --out tests/validation/grid_more.csv
    /usr/bin/python3 tests/validation/grid_more.py --only q01,m02
    /usr/bin/python3 tests/validation/grid_more.py --breakdown m02   # live at the peak
    /usr/bin/python3 tests/validation/grid_more.py --list

Same method and columns as grid.py (CPU, LiveTracker, one warm-up step), plus
``qk_norm, experts, experts_per_token, expert_intermediate,
shared_expert_intermediate, shared_expert_gate`` (0 when unused).  Qwen3 and
MoE rows have family ``llama`` with those fields set; Phi-3 rows ``phi3``;
Gemma-2 rows ``gemma2``.  The models are in models_more.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import measure as ms  # noqa: E402
import models_more as MM  # noqa: E402

MM.install()

EXTRA = ["qk_norm", "experts", "experts_per_token", "expert_intermediate",
         "shared_expert_intermediate", "shared_expert_gate"]
COLUMNS = G.COLUMNS + EXTRA + ["lora_dropout"]


@dataclasses.dataclass
class RunConfigMore(ms.RunConfig):
    qk_norm: int = 0
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    shared_expert_gate: int = 0

    def arch(self):
        base = ms.RunConfig.arch(self)
        kw = dataclasses.asdict(base)
        kw.update({k: getattr(self, k) for k in EXTRA})
        return MM.ArchConfigMore(**kw)


ATTN = "q_proj,k_proj,v_proj,o_proj"
PHI3_TARGETS = "qkv_proj,o_proj,gate_up_proj,down_proj"

SIZES = {
    # Qwen3: head_dim 64 with hidden 256 / 4 heads (q width 256), qk-norm, untied
    "q1": dict(family="llama", hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64,
               intermediate=688, vocab=16000, max_positions=4096, qk_norm=1),
    # Mixtral-style: 4 experts, top-2
    "m1": dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=2, intermediate=344,
               vocab=8000, max_positions=4096, experts=4, experts_per_token=2,
               expert_intermediate=256),
    # Qwen2-MoE-style: 8 small experts, top-2, gated shared expert
    "m2": dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=2, intermediate=344,
               vocab=8000, max_positions=4096, experts=8, experts_per_token=2,
               expert_intermediate=128, shared_expert_intermediate=512, shared_expert_gate=1),
    # Phi-3: fused qkv_proj / gate_up_proj, GQA
    "p1": dict(family="phi3", hidden=256, layers=2, heads=8, kv_heads=4, intermediate=688,
               vocab=32064, max_positions=4096),
    # Phi-3-mini style: kv_heads = heads (repeat_kv is the identity, v stays a
    # view of the fused qkv output)
    "p2": dict(family="phi3", hidden=256, layers=2, heads=8, kv_heads=8, intermediate=688,
               vocab=32064, max_positions=4096),
    # Gemma-2: head_dim 64, 4 norms, softcapping, tied
    "e1": dict(family="gemma2", hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64,
               intermediate=512, vocab=16000, max_positions=8192, tie_embeddings=1),
}

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    ("q01", "q1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("q02", "q1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("q03", "q1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("q04", "q1", 1, 512, "bf16", "adamw", "reentrant", 0.0, "full", {}),
    ("m01", "m1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("m02", "m1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("m03", "m1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("m04", "m1", 2, 256, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": ATTN}),
    ("m05", "m2", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("m06", "m2", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": ATTN}),
    ("p01", "p1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("p02", "p1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("p03", "p1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": PHI3_TARGETS}),
    ("p04", "p1", 1, 512, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 16, "lora_targets": PHI3_TARGETS}),
    ("p05", "p2", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("e01", "e1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("e02", "e1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("e03", "e1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("e04", "e1", 1, 512, "bf16", "adamw", "none", 0.0, "full", {}),
    ("e05", "e1", 1, 256, "fp32", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    # what current defaults run (SDPA, the fused step, non-reentrant
    # checkpointing): the fused kernel saves Phi-3's v, a view of qkv_proj's
    # output, and so keeps that output alive
    ("q05", "q1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full",
     {"attention": "sdpa", "optimizer_impl": "fused"}),
    ("m07", "m1", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full",
     {"attention": "sdpa", "optimizer_impl": "fused"}),
    ("p06", "p1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full",
     {"attention": "sdpa", "optimizer_impl": "fused"}),
    ("p07", "p2", 2, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "lora",
     {"attention": "sdpa", "optimizer_impl": "fused", "lora_rank": 8,
      "lora_targets": PHI3_TARGETS, "lora_dropout": 0.05}),
    ("p08", "p1", 1, 256, "fp32", "adamw", "none", 0.0, "full",
     {"attention": "sdpa", "optimizer_impl": "forloop"}),
]


def run_config(row):
    return G.run_config(row, SIZES, RunConfigMore)


def csv_row(rid, rc, res):
    r = G.csv_row(rid, rc, res)
    for k in EXTRA:
        r[k] = int(getattr(rc, k))
    r["lora_dropout"] = rc.lora_dropout
    return r


def write_csv(path, rows):
    G.write_csv(path, rows, COLUMNS, ROWS)


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_more", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-6s %-3s b%d s%-4d %-10s gc=%-4s %-5s" % (
            rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.method))


if __name__ == "__main__":
    sys.exit(main())
