"""Measure the rows of the families added to the phased model (OPT, BLOOM,
GPT-NeoX, Falcon, Phi, StarCoder2, DeepSeek-V2/V3) and write
grid_families.csv.

    /usr/bin/python3 tests/validation/grid_families.py                 # all rows
    /usr/bin/python3 tests/validation/grid_families.py --only o01,b02
    /usr/bin/python3 tests/validation/grid_families.py --breakdown o01  # live at the peak
    /usr/bin/python3 tests/validation/grid_families.py --list

Same method as grid.py (CPU, LiveTracker, one warm-up step); the models are
in models_families.py.  Columns: grid_more.csv's plus the layout fields these
families set (``rotary_dim, parallel_block, norms_per_layer, post_norm,
embed_dim, activation, q_lora_rank, kv_lora_rank, v_head_dim, dense_layers,
router_bias``); compare.py passes them to llmem when the column is present.
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
import grid_more as GM  # noqa: E402
import measure as ms  # noqa: E402
import models_families as MF  # noqa: E402

MF.install()

FAMILY_EXTRA = ["rotary_dim", "parallel_block", "norms_per_layer", "post_norm", "embed_dim",
                "activation", "q_lora_rank", "kv_lora_rank", "v_head_dim", "dense_layers",
                "router_bias", "final_norm", "out_bias", "mlp_bias", "n_group", "positions"]
ARCH_EXTRA = FAMILY_EXTRA[:11] + ["n_group"]
EXTRA = GM.EXTRA + FAMILY_EXTRA
COLUMNS = G.COLUMNS + EXTRA

# Family defaults of the harness configuration (transformers' config classes).
DEFAULTS = {
    "opt": dict(tie_embeddings=1, attn_bias=1, activation="relu"),
    "bloom": dict(tie_embeddings=1, attn_bias=1, activation="gelu_tanh"),
    "gpt_neox": dict(tie_embeddings=0, attn_bias=1, parallel_block=1, activation="gelu"),
    "falcon": dict(tie_embeddings=1, attn_bias=0, parallel_block=1, norms_per_layer=1,
                   activation="gelu"),
    "phi": dict(tie_embeddings=0, attn_bias=1, parallel_block=1, norms_per_layer=1,
                activation="gelu_new"),
    "starcoder2": dict(tie_embeddings=1, attn_bias=1, activation="gelu_pytorch_tanh"),
    "deepseek": dict(tie_embeddings=0, attn_bias=0, activation="silu"),
}


@dataclasses.dataclass
class RunConfigFamilies(GM.RunConfigMore):
    rotary_dim: int = 0
    parallel_block: int = 0
    norms_per_layer: int = 2
    post_norm: int = 0
    embed_dim: int = 0
    activation: str = ""
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    v_head_dim: int = 0
    dense_layers: int = 0
    router_bias: int = 0
    # what llmem needs besides attn_bias: transformers ties these to one
    # config switch or fixes them (see mirror_biases)
    final_norm: int = 1
    out_bias: int = 0
    mlp_bias: int = 0
    # DeepSeek's router groups (harness only; llmem models V2's greedy top-k and
    # V3's group-limited top-k, which runs under no_grad)
    n_group: int = 1
    positions: str = ""  # "alibi": Falcon-RW's ALiBi instead of rotary

    def arch(self):
        base = GM.RunConfigMore.arch(self)
        kw = dataclasses.asdict(base)
        kw.update({k: getattr(self, k) for k in ARCH_EXTRA})
        # Falcon's new_decoder_architecture: grouped kv heads (1 < kv < heads)
        kw["new_arch"] = int(self.family == "falcon" and 1 < self.kv_heads < self.heads)
        kw["alibi"] = int(self.positions == "alibi")
        kw["eps"] = 1e-5
        return MF.ArchConfigFamilies(**kw)


def run_config(row):
    rid, size, b, s, prec, opt, gc, p, method, extra = row
    kw = dict(DEFAULTS[SIZES[size]["family"]])
    kw.update(SIZES[size])
    kw.update(batch=b, seq=s, precision=prec, optimizer=opt, grad_ckpt=gc, dropout=p,
              method=method)
    kw.update(extra)
    rc = RunConfigFamilies(**kw).normalized()
    mirror_biases(rc)
    return rid, rc


def mirror_biases(rc):
    """The biases and final norm transformers builds, for llmem's fields:
    OPT enable_bias, Falcon bias and StarCoder2 use_bias switch every linear;
    GPT-NeoX's attention_bias switches query_key_value and dense, its MLP
    always has biases; BLOOM and Phi always have them; DeepSeek's
    attention_bias switches the attention's, its MLPs have none.  OPT has no
    final norm with do_layer_norm_before false."""
    b = int(rc.attn_bias)
    rc.out_bias = b if rc.family != "phi" else 1
    rc.mlp_bias = {"gpt_neox": 1, "bloom": 1, "phi": 1, "deepseek": 0}.get(rc.family, b)
    rc.final_norm = 0 if rc.post_norm else 1


SIZES = {
    # OPT-125m-like: pre-norm, ReLU, learned positions (+2), tied
    "o1": dict(family="opt", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=8192, max_positions=512),
    # OPT-350m-like: post-norm (no final norm), word_embed_proj_dim 128 (project_in/out)
    "o2": dict(family="opt", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=8192, max_positions=512, post_norm=1, embed_dim=128),
    # the same with 3 layers: under bf16 autocast the first layer's input is
    # bf16, the others' the fp32 output of a post-norm LayerNorm
    "o3": dict(family="opt", hidden=256, layers=3, heads=4, kv_heads=4, intermediate=1024,
               vocab=8192, max_positions=512, post_norm=1, embed_dim=128),
    # BLOOM: ALiBi, fused query_key_value, embedding LayerNorm, tied
    "b1": dict(family="bloom", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048),
    # Pythia: parallel residual, rotary_pct 0.25 (16 of 64 dims)
    "n1": dict(family="gpt_neox", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048, rotary_dim=16),
    # GPT-NeoX without the parallel residual, full rotary
    "n2": dict(family="gpt_neox", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048, parallel_block=0),
    # Falcon-7B-like: multi-query, parallel attention, one LayerNorm, no biases
    "f1": dict(family="falcon", hidden=256, layers=2, heads=8, kv_heads=1, intermediate=1024,
               vocab=16000, max_positions=2048),
    # Falcon-40B-like: new_decoder_architecture, 2 kv groups, ln_attn and ln_mlp
    "f2": dict(family="falcon", hidden=256, layers=2, heads=8, kv_heads=2, intermediate=1024,
               vocab=16000, max_positions=2048, norms_per_layer=2),
    # Falcon sequential block (parallel_attn false), full heads, biases
    "f3": dict(family="falcon", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048, parallel_block=0, norms_per_layer=2,
               attn_bias=1),
    # Phi-2-like: partial_rotary_factor 0.5, one LayerNorm, lm_head bias
    "h1": dict(family="phi", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048, rotary_dim=32),
    # Phi with qk_layernorm and grouped kv heads
    "h2": dict(family="phi", hidden=256, layers=2, heads=4, kv_heads=2, intermediate=1024,
               vocab=16000, max_positions=2048, rotary_dim=32, qk_norm=1),
    # small vocabularies, long sequences: the attention holds the peak
    "b2": dict(family="bloom", hidden=256, layers=2, heads=8, kv_heads=8, intermediate=1024,
               vocab=4096, max_positions=2048),
    # GPT-NeoX-20B-like activation (gelu_fast, Python ops)
    "n3": dict(family="gpt_neox", hidden=256, layers=2, heads=8, kv_heads=8, intermediate=1024,
               vocab=4096, max_positions=2048, rotary_dim=8, activation="gelu_fast"),
    # Falcon2-11B-like: new_decoder_architecture with one LayerNorm
    "f4": dict(family="falcon", hidden=256, layers=2, heads=8, kv_heads=2, intermediate=1024,
               vocab=16000, max_positions=2048),
    # Falcon-RW-like: ALiBi folded into the mask, the sequential block, biases
    "f5": dict(family="falcon", hidden=256, layers=2, heads=4, kv_heads=4, intermediate=1024,
               vocab=16000, max_positions=2048, parallel_block=0, norms_per_layer=2,
               attn_bias=1, positions="alibi"),
    # StarCoder2: GQA, LayerNorm, c_fc/c_proj GELU, biases, tied
    "s1": dict(family="starcoder2", hidden=256, layers=2, heads=4, kv_heads=2,
               intermediate=1024, vocab=16000, max_positions=4096),
    # DeepSeek-V2-Lite-like: full q projection, latent kv (rank 64), head_dim
    # 32 + 16 rope, v_head_dim 32, one dense layer then 8 experts top-2 with
    # 2 shared; softmax router, greedy top-k, complex rotary
    "d1": dict(family="deepseek", hidden=256, layers=3, heads=4, kv_heads=4, head_dim=48,
               intermediate=512, vocab=16000, max_positions=4096, rotary_dim=16,
               kv_lora_rank=64, v_head_dim=32, dense_layers=1, experts=8,
               experts_per_token=2, expert_intermediate=128, shared_expert_intermediate=256),
    # DeepSeek-V3-like: q compression (rank 96), sigmoid router with
    # e_score_correction_bias, 4 groups, norm_topk_prob, interleaved rotary
    "d2": dict(family="deepseek", hidden=256, layers=3, heads=4, kv_heads=4, head_dim=48,
               intermediate=512, vocab=16000, max_positions=4096, rotary_dim=16,
               q_lora_rank=96, kv_lora_rank=64, v_head_dim=32, dense_layers=1, experts=8,
               experts_per_token=2, expert_intermediate=128, shared_expert_intermediate=128,
               router_bias=1, n_group=4),
}

OPT_T = "q_proj,k_proj,v_proj,out_proj,fc1,fc2"
QKV_T = "query_key_value,dense,dense_h_to_4h,dense_4h_to_h"
PHI_T = "q_proj,k_proj,v_proj,dense,fc1,fc2"
SC2_T = "q_proj,k_proj,v_proj,o_proj,c_fc,c_proj"
DS2_T = "q_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj"
DS3_T = "q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj"

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
# (the foreach step and eager attention: the families' code as 4.50 runs it)
ROWS = [
    ("o01", "o1", 1, 256, "fp32", "adamw", "none", 0.1, "full", {}),
    ("o02", "o1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("o03", "o1", 2, 256, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": OPT_T}),
    ("o04", "o2", 2, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("o05", "o2", 2, 256, "bf16-mixed", "adamw", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("b01", "b1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("b02", "b1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("b03", "b1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": QKV_T}),
    ("b04", "b1", 1, 512, "bf16", "adamw", "none", 0.0, "full", {}),
    ("b05", "b1", 2, 128, "fp32", "adamw", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("n01", "n1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("n02", "n1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("n03", "n1", 2, 256, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": QKV_T}),
    ("n04", "n2", 2, 128, "fp32", "adamw", "none", 0.1, "full", {}),
    ("n05", "n1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "freeze", {"freeze_layers": 1}),
    ("f01", "f1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("f02", "f1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": QKV_T}),
    ("f03", "f2", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("f04", "f2", 1, 512, "bf16", "adamw", "reentrant", 0.0, "full", {}),
    ("f05", "f3", 2, 128, "fp32", "adamw", "none", 0.1, "full", {}),
    ("h01", "h1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("h02", "h1", 2, 256, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("h03", "h1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": PHI_T}),
    ("h04", "h2", 1, 512, "bf16", "adamw", "none", 0.0, "full", {}),
    ("h05", "h2", 2, 128, "fp32", "adamw", "none", 0.0, "freeze", {"freeze_layers": 1}),
    ("s01", "s1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("s02", "s1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("s03", "s1", 2, 256, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": SC2_T}),
    ("s04", "s1", 2, 128, "fp32", "adamw", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("d01", "d1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("d02", "d1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("d03", "d1", 2, 256, "bf16", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": DS2_T}),
    ("d04", "d2", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("d05", "d2", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("d06", "d2", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": DS3_T}),
    ("d07", "d2", 1, 512, "bf16", "adamw", "none", 0.0, "full", {}),
    ("o06", "o1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.1, "lora",
     {"lora_rank": 16, "lora_targets": "q_proj,v_proj"}),
    ("b06", "b2", 2, 1024, "fp32", "sgd", "none", 0.0, "full", {}),
    ("b07", "b1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.1, "freeze", {"freeze_layers": 1}),
    ("n06", "n3", 1, 1024, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("n07", "n2", 2, 256, "bf16", "lion", "reentrant", 0.0, "full", {}),
    ("f06", "f4", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": QKV_T}),
    ("f07", "f2", 2, 256, "fp32", "adamw", "reentrant", 0.1, "freeze", {"freeze_layers": 1}),
    ("h06", "h1", 1, 1024, "fp32", "sgd-momentum", "none", 0.0, "full", {}),
    ("h07", "h2", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8, "lora_targets": PHI_T}),
    ("s05", "s1", 2, 256, "bf16-mixed", "lion", "none", 0.1, "full", {}),
    ("d08", "d1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {"n_group": 2}),
    ("d09", "d2", 2, 256, "bf16", "adamw", "reentrant", 0.0, "freeze", {"freeze_layers": 1}),
    ("f08", "f5", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("f09", "f5", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.1, "lora",
     {"lora_rank": 8, "lora_targets": QKV_T}),
    ("f10", "f5", 2, 256, "bf16", "adamw", "none", 0.0, "full", {}),
    ("f11", "f5", 2, 512, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
]


def csv_row(rid, rc, res):
    r = G.csv_row(rid, rc, res)
    for k in EXTRA:
        v = getattr(rc, k)
        r[k] = v if isinstance(v, str) else int(v)
    return r


def write_csv(path, rows):
    G.write_csv(path, rows, COLUMNS, ROWS)


def main(argv=None):
    return G.grid_main(argv, __doc__, "grid_families", ROWS, run_config,
                       lambda rid, rc, res, row: csv_row(rid, rc, res),
                       write_csv,
                       lambda row, rc: "%-10s %-3s b%d s%-4d %-10s gc=%-4s %-6s" % (
            rc.family, row[1], rc.batch, rc.seq, rc.precision, rc.grad_ckpt, rc.method))


if __name__ == "__main__":
    sys.exit(main())
