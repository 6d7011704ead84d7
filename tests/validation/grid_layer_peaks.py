"""Measure the rows whose forward phase peaks inside the decoder layers and
write grid_layer_peaks.csv.

    /usr/bin/python3 tests/validation/grid_layer_peaks.py
    /usr/bin/python3 tests/validation/grid_layer_peaks.py --only lp01,lp12
    /usr/bin/python3 tests/validation/grid_layer_peaks.py --breakdown lp01
    /usr/bin/python3 tests/validation/grid_layer_peaks.py --list

The other grids mostly use large vocabularies, so their forward phase peaks
at the loss (the fp32 logits and their log-softmax) and a tensor held too
long or too short inside a layer does not show there.  These rows use a
512-token vocabulary at 512-1024 tokens, so the forward peak falls in the
last decoder layer, where two things are live that a layer-by-layer account
can miss:

* PEFT's ``lora.Linear.forward`` casts its input to the adapter's dtype
  (``_cast_input_dtype``) and the copy stays bound until the forward
  returns: under bf16-mixed the inputs of ``o_proj`` and ``down_proj`` (and
  GPT-2's ``c_proj``, OPT's ``out_proj`` / ``fc2``, ...) are bf16, so the
  fp32 copy is made and held through the adapter's matmuls;
* the model's forward keeps ``inputs_embeds`` (GPT-2 also
  ``position_embeds``, OPT ``pos_embeds``) bound as a local through the
  whole decoder loop, so the embedding output is live at every layer's peak
  even when no layer saves it for backward (a frozen embedding under LoRA
  without checkpointing; pure bf16 full fine-tuning, where RMSNorm's
  ``.to(float32)`` copies and saves the copy, not its input).

Rows: Llama (grouped kv heads) LoRA on all seven projections under
bf16-mixed with each checkpointing, with and without ``lora_dropout``, SDPA
and eager; Llama full fine-tuning in bf16, fp32 and bf16-mixed; GPT-2 full
and LoRA; one LoRA bf16-mixed row of each other family.  Same method as
grid.py (CPU, LiveTracker, one warm-up step); columns grid_families.csv's
plus ``lora_dropout``; Llama, GPT-2, Phi-3, Gemma-2 and Qwen3 rows leave the
families' layout columns empty, as grid_bf16_autocast.csv does.  The sizes
are the other grids' (grid_defaults.py s1 / s2, grid_families.py,
grid_more.py) with the vocabulary set to 512.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grid as G  # noqa: E402
import grid_defaults as GD  # noqa: E402
import grid_families as GF  # noqa: E402
import grid_more as GM  # noqa: E402

COLUMNS = GF.COLUMNS + ["lora_dropout"]

V = 512  # the vocabulary of every row


def _small(size, **kw):
    """A size of another grid with a 512-token vocabulary (and the family's
    harness defaults, as grid_families.run_config applies them)."""
    s = dict(GF.DEFAULTS.get(size["family"], {}))
    s.update(size)
    s.update(vocab=V, **kw)
    return s


SIZES = {
    # Llama, 8 heads, 2 kv heads, head_dim 32 (grid_defaults.py s1)
    "ll": _small(GD.SIZES["s1"]),
    "ll3": _small(GD.SIZES["s1"], layers=3),
    # Qwen2-style on the Llama path: q/k/v bias, tied embeddings
    "qw": _small(GD.SIZES["s1"], attn_bias=1, tie_embeddings=1),
    # GPT-2, 8 heads (grid_defaults.py s2)
    "gp": _small(GD.SIZES["s2"]),
    "opt": _small(GF.SIZES["o1"], max_positions=2048),
    "neox": _small(GF.SIZES["n1"]),
    "bloom": _small(GF.SIZES["b1"]),
    "falcon": _small(GF.SIZES["f1"]),
    "phi": _small(GF.SIZES["h1"]),
    "sc2": _small(GF.SIZES["s1"]),
    "ds2": _small(GF.SIZES["d1"]),
    "phi3": _small(GM.SIZES["p1"]),
    "gemma2": _small(GM.SIZES["e1"]),
    "qwen3": _small(GM.SIZES["q1"]),
    # ll with one kv head per query head: no repeat_kv copy, so eager's matmul
    # copies q, k and v at batch > 1
    "llmha": _small(GD.SIZES["s1"], kv_heads=8),
}

L7 = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
SDPA = {"optimizer_impl": "fused", "attention": "sdpa"}
EAGER = {"optimizer_impl": "fused", "attention": "eager"}


def lora(attn, targets=L7, p=0.0):
    return dict(attn, lora_rank=8, lora_targets=targets, lora_dropout=p)


BM = "bf16-mixed"

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    # Llama LoRA on all seven projections, bf16-mixed: the fp32 copies of
    # o_proj's and down_proj's bf16 inputs held through each adapter
    ("lp01", "ll", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA)),
    ("lp02", "ll", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, p=0.1)),
    ("lp03", "ll", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(EAGER)),
    ("lp04", "ll", 2, 512, BM, "adamw", "none", 0.0, "lora", lora(EAGER, p=0.1)),
    ("lp05", "ll", 1, 1024, BM, "adamw", "reentrant", 0.0, "lora", lora(SDPA)),
    ("lp06", "ll", 1, 1024, BM, "adamw", "reentrant", 0.0, "lora", lora(SDPA, p=0.1)),
    ("lp07", "ll", 2, 512, BM, "adamw", "reentrant", 0.0, "lora", lora(EAGER)),
    ("lp08", "ll", 1, 1024, BM, "adamw", "non-reentrant", 0.0, "lora", lora(SDPA)),
    ("lp09", "ll", 1, 1024, BM, "adamw", "non-reentrant", 0.0, "lora", lora(SDPA, p=0.1)),
    ("lp10", "ll", 2, 512, BM, "adamw", "non-reentrant", 0.0, "lora", lora(EAGER, p=0.1)),
    ("lp11", "ll3", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA)),
    # Llama full fine-tuning: pure bf16 (layer 0's RMSNorm saves its fp32
    # copy, not inputs_embeds), fp32, bf16-mixed.  Eager, or fp32 SDPA (the
    # math fallback with grouped kv heads): the S x S scores put the forward
    # peak in the last layer; with the fused 16-bit kernel every layer tensor
    # is saved and the forward peak is at the loss.  lp13 (batch 2): eager's
    # matmul copies the transposed query (a view of q_proj's output cannot be
    # folded to [B*H, S, D] when B > 1) while the rotary output stays bound
    ("lp12", "ll", 1, 1024, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp13", "ll", 2, 512, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp14", "ll", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lp15", "ll", 1, 1024, BM, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp16", "ll", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(EAGER)),
    # GPT-2: inputs_embeds and position_embeds held through the blocks;
    # fp32 rows eager (with SDPA's memory-efficient kernel the forward peak
    # is at the loss)
    ("lp17", "gp", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp18", "gp", 1, 1024, BM, "adamw", "none", 0.0, "full", dict(SDPA)),
    ("lp19", "gp", 1, 1024, "fp32", "adamw", "none", 0.0, "lora",
     lora(EAGER, "c_attn,c_proj,c_fc")),
    ("lp20", "gp", 1, 1024, BM, "adamw", "none", 0.0, "lora",
     lora(SDPA, "c_attn,c_proj,c_fc")),
    ("lp21", "gp", 2, 512, BM, "adamw", "none", 0.0, "lora",
     lora(EAGER, "c_attn,c_proj,c_fc", p=0.1)),
    # one LoRA bf16-mixed row of each other family, no checkpointing, SDPA
    # where the harness has it (BLOOM and Gemma-2 run eager)
    ("lp22", "opt", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.OPT_T)),
    ("lp23", "neox", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.QKV_T)),
    ("lp24", "phi3", 1, 1024, BM, "adamw", "none", 0.0, "lora",
     lora(SDPA, GM.PHI3_TARGETS)),
    ("lp25", "qw", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA)),
    ("lp26", "gemma2", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(EAGER)),
    ("lp27", "bloom", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(EAGER, GF.QKV_T)),
    ("lp28", "falcon", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.QKV_T)),
    ("lp29", "phi", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.PHI_T)),
    ("lp30", "sc2", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.SC2_T)),
    ("lp31", "qwen3", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA)),
    ("lp32", "ds2", 1, 1024, BM, "adamw", "none", 0.0, "lora", lora(SDPA, GF.DS2_T)),
    # batch 2, eager (helper 39): Llama with a kv head per query head (the
    # matmul copies of q, k and v), Qwen3 under bf16, GPT-2 (the attention
    # output held to the block's end), and Phi (its two sublayer outputs held
    # through both sums)
    ("lp33", "llmha", 2, 512, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp34", "qwen3", 2, 512, "bf16", "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp35", "gp", 2, 512, BM, "adamw", "none", 0.0, "full", dict(EAGER)),
    ("lp36", "gp", 2, 512, "fp32", "adamw", "none", 0.1, "full", dict(EAGER)),
    ("lp37", "phi", 1, 1024, "fp32", "adamw", "none", 0.0, "full", dict(EAGER)),
]


def run_config(row, sizes=None):
    """A row's configuration from ``sizes`` (this grid's SIZES by default)."""
    sizes = SIZES if sizes is None else sizes
    if sizes[row[1]]["family"] in GF.DEFAULTS:
        rid, rc = G.run_config(row, sizes, GF.RunConfigFamilies)
        GF.mirror_biases(rc)
        return rid, rc
    return G.run_config(row, sizes, GM.RunConfigMore)


def csv_row(rid, rc, res):
    if rc.family in GF.DEFAULTS:
        r = GF.csv_row(rid, rc, res)
        r["lora_dropout"] = rc.lora_dropout
        return r
    return GM.csv_row(rid, rc, res)


def write_csv(path, rows):
    """Columns a row lacks are left empty (compare.py passes no flag for them)."""
    G.write_csv(path, rows, COLUMNS, ROWS, missing="")


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_layer_peaks", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-10s %-6s b%d s%-4d %-10s gc=%-13s %-5s %-4s p=%.1f" % (
            rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.attention,
            rc.method, rc.lora_dropout))


if __name__ == "__main__":
    sys.exit(main())
