"""Measure the routed experts as transformers 5.x runs them by default
(grouped_mm on 3-D expert weights) and write grid_moe.csv.

    /usr/bin/python3 tests/validation/grid_moe.py --out tests/validation/grid_moe.csv
    /usr/bin/python3 tests/validation/grid_moe.py --only x01 --breakdown x01

grid_more.py's method and columns plus ``experts_impl``.  The MoE block is
models_more.SparseMoeBlock5: MixtralTopKRouter (fp32 scores) and
grouped_mm_experts_forward (integrations/moe.py), Qwen2MoeSparseMoeBlock's
shared expert first when there is one.  torch._grouped_mm (PyTorch 2.9+,
CUDA) is emulated by models_more.GroupedMM, which allocates and saves what
the op does; its kernels' workspace, if any, is not measured here.  The
layers are small and the vocabulary too (512), so that the experts, not the
loss, hold the peaks; each setup is also run with experts_impl "loop"
(transformers 4.48's per-expert modules) for comparison.
"""

from __future__ import annotations

import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_more as GM  # noqa: E402

COLUMNS = GM.COLUMNS + ["experts_impl"]


@dataclasses.dataclass
class RunConfigMoe(GM.RunConfigMore):
    experts_impl: str = "loop"

    def arch(self):
        a = GM.RunConfigMore.arch(self)
        a.experts_impl = self.experts_impl
        return a


SIZES = {
    # Mixtral-style: 4 experts, top-2
    "mx": dict(GM.SIZES["m1"], vocab=512, hidden=256, expert_intermediate=512),
    # Qwen2-MoE-style: 8 experts, top-2, gated shared expert
    "qx": dict(GM.SIZES["m2"], vocab=512, hidden=256, expert_intermediate=256,
               shared_expert_intermediate=512),
}

ATTN = "q_proj,k_proj,v_proj,o_proj"
SD = {"attention": "sdpa", "optimizer_impl": "fused"}
GR = dict(SD, experts_impl="grouped-mm")
LP = dict(SD, experts_impl="loop")

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    ("x01", "mx", 4, 256, "fp32", "adamw", "none", 0.0, "full", dict(GR)),
    ("x02", "mx", 4, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(GR)),
    ("x03", "mx", 4, 256, "bf16", "adamw", "none", 0.0, "full", dict(GR)),
    ("x04", "mx", 4, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(GR)),
    ("x05", "mx", 4, 256, "bf16", "adamw", "none", 0.0, "lora",
     dict(GR, lora_rank=8, lora_targets=ATTN)),
    ("x06", "mx", 4, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(GR)),
    ("x07", "mx", 2, 512, "fp32", "adamw", "none", 0.0, "full",
     dict(GR, attention="eager", optimizer_impl="forloop")),
    ("x08", "qx", 4, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(GR)),
    ("x09", "qx", 4, 256, "bf16", "adamw", "non-reentrant", 0.0, "lora",
     dict(GR, lora_rank=8, lora_targets=ATTN)),
    ("x10", "qx", 2, 256, "fp32", "adamw", "reentrant", 0.0, "full",
     dict(GR, optimizer_impl="foreach")),
    # the same setups as x02 and x08 on 4.48's per-expert modules (with
    # checkpointing, x04's and x06's, the estimate of the loop is 1.6 % and
    # 4.2 % high: docs/validation.md; --breakdown y04 measures one)
    ("y02", "mx", 4, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(LP)),
    ("y08", "qx", 4, 256, "bf16-mixed", "adamw", "none", 0.0, "full", dict(LP)),
    # batch 1 x seq 32: weights and gradients large next to activations, as
    # Mixtral-8x7B at batch 1 x seq 256, where checkpointing raises the
    # estimated peak (late in the first layer's backward; docs/validation.md)
    ("c01", "mx", 1, 32, "bf16-mixed", "adamw", "none", 0.0, "full", dict(GR)),
    ("c02", "mx", 1, 32, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(GR)),
    ("c03", "mx", 1, 32, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(GR)),
    ("c04", "mx", 1, 32, "bf16-mixed", "adamw", "none", 0.0, "freeze", dict(GR)),
    ("c05", "mx", 1, 32, "bf16-mixed", "adamw", "non-reentrant", 0.0, "freeze", dict(GR)),
    ("c06", "mx", 1, 32, "bf16-mixed", "adamw", "reentrant", 0.0, "freeze", dict(GR)),
]

# Not in grid_moe.csv (not gated): 4.48's loop under checkpointing.
LOOP_CKPT_ROWS = [
    ("y04", "mx", 4, 256, "bf16-mixed", "adamw", "non-reentrant", 0.0, "full", dict(LP)),
    ("y06", "mx", 4, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", dict(LP)),
]


def run_config(row):
    return G.run_config(row, SIZES, RunConfigMoe)


def csv_row(rid, rc, res):
    r = GM.csv_row(rid, rc, res)
    r["experts_impl"] = rc.experts_impl
    return r


def write_csv(path, rows):
    G.write_csv(path, rows, COLUMNS, ROWS)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rows = ROWS + (LOOP_CKPT_ROWS if any(a.startswith("--breakdown") for a in argv) else [])
    return G.grid_main(argv, __doc__, "grid_moe", rows, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-3s b%d s%-4d %-10s gc=%-13s %-5s %s" % (
            row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.method, rc.experts_impl))


if __name__ == "__main__":
    sys.exit(main())
