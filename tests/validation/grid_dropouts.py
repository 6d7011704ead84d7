"""Measure rows that run each model with its config's own dropouts and write
grid_dropouts.csv.

    /usr/bin/python3 tests/validation/grid_dropouts.py
    /usr/bin/python3 tests/validation/grid_dropouts.py --only r01,r05
    /usr/bin/python3 tests/validation/grid_dropouts.py --breakdown r05   # live at the peak
    /usr/bin/python3 tests/validation/grid_dropouts.py --list

The Hugging Face Trainer trains a model in train mode: every nn.Dropout its
config turns on runs, each kind of site at its own probability (the attention
probabilities; the attention's and the MLP's outputs; the embedding output).
These rows measure that, and compare.py checks ``llmem estimate`` without
``--dropout`` (the ``dropout`` column reads ``model``) against them:

* ``dropout_source`` ``family``: the family's configuration class defaults,
  which llmem's ``--family`` must supply by itself (GPT2Config's attn_pdrop,
  resid_pdrop and embd_pdrop 0.1; OPTConfig's dropout 0.1 with
  attention_dropout 0);
* ``config``: a published config's values on a family whose defaults are 0
  (starcoder2-3b's three 0.1, phi-2's resid_pdrop 0.1), or values no
  published config has, to put each kind of site apart (BLOOM, GPT-NeoX,
  Falcon-RW, Phi-3's resid_pdrop): compare.py passes them as
  ``--attention-dropout``, ``--hidden-dropout`` and ``--embedding-dropout``.

``attention_dropout``, ``hidden_dropout`` and ``embedding_dropout`` hold what
the harness ran.  The architectures are grid.py's (GPT-2), grid_more.py's
(Phi-3) and grid_families.py's (the rest), with the same method (CPU,
LiveTracker, one warm-up step).
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
import grid_more as GM  # noqa: E402
import measure as ms  # noqa: E402

SITE_COLUMNS = ["attention_dropout", "hidden_dropout", "embedding_dropout"]
COLUMNS = GF.COLUMNS + ["lora_dropout"] + SITE_COLUMNS + ["dropout_source"]

# transformers' configuration class defaults (attention, hidden, embedding)
FAMILY = {"gpt2": (0.1, 0.1, 0.1), "opt": (0.0, 0.1, 0.0)}
STARCODER2_3B = (0.1, 0.1, 0.1)   # attention_dropout, residual_dropout, embedding_dropout
PHI_2 = (0.0, 0.1, 0.0)           # attention_dropout, resid_pdrop, embd_pdrop

# id, (grid, size), batch, seq, precision, optimizer, grad_ckpt, method,
# (attention, hidden, embedding) or "family", extra (RunConfig fields)
EAGER = {"attention": "eager", "optimizer_impl": "foreach"}
SDPA = {"attention": "sdpa", "optimizer_impl": "fused"}
ROWS = [
    # GPT-2: every site 0.1
    ("r01", ("G", "g1"), 2, 256, "fp32", "adamw", "none", "full", "family", dict(EAGER)),
    ("r02", ("G", "g4"), 2, 512, "bf16-mixed", "adamw", "none", "full", "family", dict(SDPA)),
    ("r03", ("G", "g2"), 2, 256, "bf16-mixed", "adamw", "reentrant", "lora", "family",
     dict(EAGER, lora_rank=8, lora_targets="c_attn")),
    ("r04", ("G", "g4"), 4, 1024, "fp32", "sgd", "non-reentrant", "full", "family",
     {"attention": "sdpa"}),
    # OPT: dropout 0.1 on the attention and MLP outputs, attention_dropout 0
    ("r05", ("F", "o1"), 1, 256, "fp32", "adamw", "none", "full", "family", dict(EAGER)),
    ("r06", ("F", "o2"), 2, 256, "bf16-mixed", "adamw", "none", "full", "family", dict(EAGER)),
    ("r07", ("F", "o1"), 2, 256, "bf16-mixed", "adamw", "none", "lora", "family",
     dict(EAGER, lora_rank=8, lora_targets=GF.OPT_T)),
    # StarCoder2-3b's and Phi-2's published dropouts
    ("r08", ("F", "s1"), 2, 256, "fp32", "adamw", "none", "full", STARCODER2_3B, dict(EAGER)),
    ("r09", ("F", "s1"), 2, 256, "bf16-mixed", "adamw", "reentrant", "full", STARCODER2_3B,
     dict(EAGER)),
    ("r10", ("F", "h1"), 2, 256, "bf16-mixed", "adamw", "none", "full", PHI_2, dict(EAGER)),
    # each kind of site apart
    ("r11", ("F", "b1"), 2, 256, "fp32", "adamw", "none", "full", (0.0, 0.1, 0.0), dict(EAGER)),
    ("r12", ("F", "n1"), 2, 256, "fp32", "adamw", "none", "full", (0.0, 0.1, 0.1), dict(EAGER)),
    ("r13", ("F", "f5"), 1, 256, "fp32", "adamw", "none", "full", (0.1, 0.0, 0.0), dict(EAGER)),
    # Phi-3's resid_attn_dropout and resid_mlp_dropout (resid_pdrop)
    ("r14", ("M", "p1"), 2, 256, "bf16-mixed", "adamw", "none", "full", (0.0, 0.1, 0.0),
     dict(EAGER)),
    ("r15", ("M", "p2"), 2, 256, "bf16-mixed", "adamw", "none", "full", (0.0, 0.1, 0.0),
     dict(SDPA)),
]


def run_config(row):
    rid, (grid, size), b, s, prec, opt, gc, method, sites, extra = row
    plain = (rid, size, b, s, prec, opt, gc, 0.0, method, extra)
    if grid == "F":
        _, rc = GF.run_config(plain)
    elif grid == "M":
        _, rc = G.run_config(plain, GM.SIZES, GM.RunConfigMore)
    else:
        _, rc = G.run_config(plain)
    p = FAMILY[rc.family] if sites == "family" else sites
    rc.attention_dropout, rc.hidden_dropout, rc.embedding_dropout = p
    return rid, rc


def csv_row(rid, rc, res, row):
    r = G.csv_row(rid, rc, res)
    r["dropout"] = "model"
    # the families' layout columns only for their rows: compare.py passes a
    # layout column whenever it is not empty
    for k in GM.EXTRA + GF.FAMILY_EXTRA:
        v = getattr(rc, k, "")
        r[k] = v if isinstance(v, str) else int(v)
    if row[1][0] != "F":
        for k in GF.FAMILY_EXTRA:
            r[k] = ""
    r["lora_dropout"] = rc.lora_dropout
    for k in SITE_COLUMNS:
        r[k] = getattr(rc, k)
    r["dropout_source"] = "family" if row[8] == "family" else "config"
    return r


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_dropouts", ROWS, run_config,
                       csv_row,
                       lambda path, rows: G.write_csv(path, rows, COLUMNS, ROWS),
                       lambda row, rc: "%-10s %-3s b%d s%-4d %-10s %-5s gc=%-13s p=%s %-6s" % (
            rc.family, row[1][1], rc.batch, rc.seq, rc.precision, rc.attention, rc.grad_ckpt,
            "/".join("%g" % getattr(rc, k) for k in SITE_COLUMNS), rc.method))


if __name__ == "__main__":
    sys.exit(main())
