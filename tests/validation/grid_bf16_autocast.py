"""Measure the bf16-autocast rows and write grid_bf16_autocast.csv.

    /usr/bin/python3 tests/validation/grid_bf16_autocast.py
    /usr/bin/python3 tests/validation/grid_bf16_autocast.py --only a01,a09
    /usr/bin/python3 tests/validation/grid_bf16_autocast.py --breakdown a05
    /usr/bin/python3 tests/validation/grid_bf16_autocast.py --list

bf16 parameters under bf16 autocast: what transformers 5.x runs when
``from_pretrained`` loads a bf16 checkpoint with its default dtype "auto" and
``TrainingArguments(bf16=True)`` makes accelerate wrap the forward in
autocast.  The harness converts the parameters to bf16 and switches its CUDA
autocast emulation on (models.set_precision): weights already in bf16 are not
cast (nor cached), layer_norm and the other fp32-list ops still run in fp32
(their weights cast up at every use), LoRA adapters stay fp32 (PEFT's
autocast_adapter_dtype) and are cast down and cached as under bf16-mixed.
Same method as grid.py (CPU, LiveTracker, one warm-up step).  Llama and GPT-2
rows take grid_defaults.py's columns, the other families' grid_families.py's;
columns a row does not use are left empty, so compare.py passes nothing for
them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_defaults as GD  # noqa: E402
import grid_families as GF  # noqa: E402
import measure as ms  # noqa: E402

COLUMNS = GF.COLUMNS + ["lora_dropout"]

P = "bf16-autocast"
DEFAULTS = {"optimizer_impl": "fused", "attention": "sdpa"}
EAGER = {"optimizer_impl": "fused", "attention": "eager"}
LORA = {"lora_rank": 8}

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
# Sizes: grid.py's (l*, g*) and grid_families.py's (the others).
ROWS = [
    # Llama, grouped kv heads: the transformers 5.x defaults, then eager
    ("a01", "l2", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a02", "l2", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a03", "l2", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    ("a04", "l2", 2, 256, P, "adamw", "none", 0.0, "lora", dict(DEFAULTS, **LORA)),
    ("a05", "l2", 2, 256, P, "adamw", "non-reentrant", 0.0, "lora", dict(EAGER, **LORA)),
    ("a06", "l4", 1, 512, P, "adamw", "reentrant", 0.0, "full", dict(EAGER)),
    # GPT-2: layer_norm's fp32 outputs, gelu_new's fp32 pow, the eager fp32 softmax
    ("a07", "g4", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a08", "g4", 2, 256, P, "adamw", "none", 0.1, "full", dict(EAGER)),
    ("a09", "g4", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    ("a10", "g2", 2, 256, P, "adamw", "none", 0.0, "lora", dict(DEFAULTS, **LORA)),
    ("a11", "g1", 2, 256, P, "adamw", "reentrant", 0.1, "lora", dict(EAGER, **LORA)),
    # GPT-NeoX (Pythia: parallel residual, partial rotary; and sequential),
    # eager (the families' SDPA is measured in grid_families_sdpa.py)
    ("a12", "n1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a13", "n1", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(EAGER)),
    ("a14", "n2", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.QKV_T)),
    ("a15", "n1", 2, 256, P, "adamw", "reentrant", 0.0, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.QKV_T)),
    # one full fine-tuning row of each other family
    ("a16", "o1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a17", "o2", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a18", "f1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a19", "h1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a20", "s1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a21", "d1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    # BLOOM: autocast's fp32 word_embeddings_layernorm makes the residual
    # stream fp32, which every residual sum keeps; the causal mask stays in the
    # embeddings' bf16 (held through backward under checkpointing)
    ("a22", "b1", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a23", "b1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.QKV_T)),
    ("a24", "b1", 2, 256, P, "adamw", "none", 0.1, "full", dict(EAGER)),
    ("a25", "b1", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(EAGER)),
    ("a26", "b1", 2, 256, P, "adamw", "reentrant", 0.1, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.QKV_T)),
    # OPT-350m's post-norm: its layers end in an fp32 LayerNorm, so every
    # layer but the first (fed the bf16 embedding) takes an fp32 input
    ("a27", "o3", 2, 256, P, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("a28", "o3", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a29", "o3", 2, 256, P, "adamw", "non-reentrant", 0.0, "freeze",
     dict(EAGER, freeze_layers=2)),
    ("a30", "o3", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.OPT_T)),
    ("a31", "o3", 2, 256, P, "adamw", "reentrant", 0.1, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.OPT_T)),
    ("a32", "o3", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    # The LayerNorm, latent-attention and expert families under SDPA (the
    # default attention), LoRA on their own target names, freeze and
    # checkpointing: where the fp32 LayerNorm outputs and casts meet each path
    # GPT-NeoX: parallel residual with partial rotary, and sequential
    ("a33", "n1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a34", "n2", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    ("a35", "n1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.QKV_T)),
    ("a36", "n2", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    # Falcon: multi-query (SDPA's math path) and new_decoder_architecture
    ("a37", "f1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a38", "f2", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a39", "f1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.QKV_T)),
    ("a40", "f2", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a41", "f2", 2, 256, P, "adamw", "reentrant", 0.0, "lora",
     dict(EAGER, lora_rank=8, lora_targets=GF.QKV_T)),
    # Phi: partial rotary; grouped kv heads with qk_layernorm
    ("a42", "h1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a43", "h2", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a44", "h1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.PHI_T)),
    ("a45", "h2", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a46", "h1", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    # StarCoder2: grouped kv heads, LayerNorm, biases
    ("a47", "s1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a48", "s1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.SC2_T)),
    ("a49", "s1", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a50", "s1", 2, 256, P, "adamw", "reentrant", 0.0, "full", dict(DEFAULTS)),
    # DeepSeek: latent attention (values narrower than keys), experts; V2 and V3
    ("a51", "d1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a52", "d1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.DS2_T)),
    ("a53", "d1", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a54", "d2", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
    # OPT-125m's pre-norm: the query scaled before SDPA
    ("a55", "o1", 2, 256, P, "adamw", "none", 0.0, "full", dict(DEFAULTS)),
    ("a56", "o1", 2, 256, P, "adamw", "none", 0.0, "lora",
     dict(DEFAULTS, lora_rank=8, lora_targets=GF.OPT_T)),
    ("a57", "o1", 2, 256, P, "adamw", "none", 0.0, "freeze", dict(EAGER, freeze_layers=1)),
    ("a58", "o1", 2, 256, P, "adamw", "reentrant", 0.0, "full", dict(DEFAULTS)),
    # Phi's fp32 q/k LayerNorm outputs cast down for SDPA, with dropout;
    # Falcon's multi-query math path recomputed
    ("a59", "h2", 2, 256, P, "adamw", "reentrant", 0.1, "full", dict(DEFAULTS)),
    ("a60", "f1", 2, 256, P, "adamw", "non-reentrant", 0.0, "full", dict(DEFAULTS)),
]


def run_config(row):
    size = row[1]
    if size in GF.SIZES:
        return GF.run_config(row)
    return GD.run_config(row)


def csv_row(rid, rc, res):
    if rc.family in GF.DEFAULTS:
        r = GF.csv_row(rid, rc, res)
    else:
        r = G.csv_row(rid, rc, res)
    r["lora_dropout"] = rc.lora_dropout
    return r


def write_csv(path, rows):
    """Columns a row lacks are left empty (compare.py passes no flag for them)."""
    G.write_csv(path, rows, COLUMNS, ROWS, missing="")


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_bf16_autocast", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-8s %-3s b%d s%-4d gc=%-13s %-5s %-4s p=%.1f" % (
            rc.family, row[1], rc.batch, rc.seq, rc.grad_ckpt, rc.attention, rc.method, rc.dropout))


if __name__ == "__main__":
    sys.exit(main())
