#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the safetensors checkpoint a Hugging Face config.json describes.

The tensor list (names and shapes) follows the module tree each transformers
modeling_<type>.py builds, written out here independently of libllmem's C
counting, so that counting the generated headers cross-checks the counts
libllmem derives from the config. Tensor data is never written: files are
extended with truncate(), which leaves them sparse (zeros) where the file
system allows; only the headers are real.

usage: gen_safetensors.py CONFIG OUTDIR [--shards N] [--dtype BF16] [--bnb-4bit nf4|fp4]
Writes OUTDIR/model.safetensors, or with N > 1 OUTDIR/model-0000i-of-0000N
.safetensors and OUTDIR/model.safetensors.index.json. Exit status 77 when the
file system cannot hold the (sparse) files, so a test can skip.

--bnb-4bit writes the decoder layers' linear weights (2-D "model.layers.*
.weight", which is every nn.Linear transformers' bitsandbytes quantizer
replaces in the llama-like families) as a checkpoint saved after
load_in_4bit with double quantization holds them (bitsandbytes'
Linear4bit._save_to_state_dict and QuantState.as_dict(packed=True)): the n
values packed two a byte as U8 [ceil(n/2), 1], then absmax (U8, one per
64-value block), quant_map (F32 [16]), nested_absmax (F32, one per 256
blocks), nested_quant_map (F32 [256]) and quant_state.bitsandbytes__<type>,
the other fields as a JSON blob in U8. The printed count stays the model's.
"""
import argparse
import json
import os
import struct
import sys

BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def need(c, key):
    if c.get(key) is None:
        raise SystemExit(f"{key} missing")
    return c[key]


class Tensors:
    def __init__(self):
        self.items = []

    def add(self, name, *shape):
        self.items.append((name, list(shape)))

    def linear(self, name, out_f, in_f, bias):
        self.add(name + ".weight", out_f, in_f)
        if bias:
            self.add(name + ".bias", out_f)

    def norm(self, name, dim, bias):
        self.add(name + ".weight", dim)
        if bias:
            self.add(name + ".bias", dim)


def gated_mlp(t, p, hidden, inner, bias=False):
    t.linear(p + ".gate_proj", inner, hidden, bias)
    t.linear(p + ".up_proj", inner, hidden, bias)
    t.linear(p + ".down_proj", hidden, inner, bias)


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def llama_like(c, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm=False,
               tie_default=False, norms=("input_layernorm", "post_attention_layernorm"),
               mlp=None):
    """LlamaForCausalLM and the models written after it (Mistral, Mixtral,
    Qwen2, Qwen2-MoE, Qwen3, Gemma, Gemma-2)."""
    t = Tensors()
    H, L, V = need(c, "hidden_size"), need(c, "num_hidden_layers"), need(c, "vocab_size")
    heads = need(c, "num_attention_heads")
    kv = c.get("num_key_value_heads") or heads
    d = head_dim(c)
    t.add("model.embed_tokens.weight", V, H)
    for i in range(L):
        p = f"model.layers.{i}"
        for n in norms:
            t.norm(f"{p}.{n}", H, False)
        t.linear(p + ".self_attn.q_proj", heads * d, H, qkv_bias)
        t.linear(p + ".self_attn.k_proj", kv * d, H, qkv_bias)
        t.linear(p + ".self_attn.v_proj", kv * d, H, qkv_bias)
        t.linear(p + ".self_attn.o_proj", H, heads * d, o_bias)
        if qk_norm:
            t.norm(p + ".self_attn.q_norm", d, False)
            t.norm(p + ".self_attn.k_norm", d, False)
        if mlp:
            mlp(t, p, i)
        else:
            gated_mlp(t, p + ".mlp", H, need(c, "intermediate_size"), mlp_bias)
    t.norm("model.norm", H, False)
    if not c.get("tie_word_embeddings", tie_default):
        t.add("lm_head.weight", V, H)
    return t


def gen_llama(c):
    b = bool(c.get("attention_bias", False))
    return llama_like(c, qkv_bias=b, o_bias=b, mlp_bias=bool(c.get("mlp_bias", False)))


def gen_mistral(c):
    return llama_like(c)


def gen_mixtral(c):
    H, E, inner = c["hidden_size"], need(c, "num_local_experts"), need(c, "intermediate_size")

    def moe(t, p, i):
        t.add(p + ".block_sparse_moe.gate.weight", E, H)
        for j in range(E):
            q = f"{p}.block_sparse_moe.experts.{j}"
            t.add(q + ".w1.weight", inner, H)
            t.add(q + ".w2.weight", H, inner)
            t.add(q + ".w3.weight", inner, H)
    return llama_like(c, mlp=moe)


def gen_qwen2(c):
    return llama_like(c, qkv_bias=True)


def gen_qwen2_moe(c):
    H = c["hidden_size"]
    E, mi = need(c, "num_experts"), need(c, "moe_intermediate_size")
    si = need(c, "shared_expert_intermediate_size")
    step, only = c.get("decoder_sparse_step", 1), c.get("mlp_only_layers") or []

    def moe(t, p, i):
        if i not in only and E > 0 and (i + 1) % step == 0:
            t.add(p + ".mlp.gate.weight", E, H)
            for j in range(E):
                gated_mlp(t, f"{p}.mlp.experts.{j}", H, mi)
            gated_mlp(t, p + ".mlp.shared_expert", H, si)
            t.add(p + ".mlp.shared_expert_gate.weight", 1, H)
        else:
            gated_mlp(t, p + ".mlp", H, need(c, "intermediate_size"))
    return llama_like(c, qkv_bias=c.get("qkv_bias", True), mlp=moe)


def gen_qwen3(c):
    c = dict(c, head_dim=c.get("head_dim", 128))
    b = bool(c.get("attention_bias", False))
    return llama_like(c, qkv_bias=b, o_bias=b, qk_norm=True)


def gen_gemma(c):
    c = dict(c, head_dim=c.get("head_dim", 256))
    b = bool(c.get("attention_bias", False))
    return llama_like(c, qkv_bias=b, o_bias=b, tie_default=True)


def gen_gemma2(c):
    c = dict(c, head_dim=c.get("head_dim", 256))
    b = bool(c.get("attention_bias", False))
    return llama_like(c, qkv_bias=b, o_bias=b, tie_default=True,
                      norms=("input_layernorm", "post_attention_layernorm",
                             "pre_feedforward_layernorm", "post_feedforward_layernorm"))


def gen_phi(c):
    t = Tensors()
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    d, inner = H // heads, c["intermediate_size"]
    t.add("model.embed_tokens.weight", V, H)
    for i in range(L):
        p = f"model.layers.{i}"
        t.norm(p + ".input_layernorm", H, True)
        t.linear(p + ".self_attn.q_proj", heads * d, H, True)
        t.linear(p + ".self_attn.k_proj", kv * d, H, True)
        t.linear(p + ".self_attn.v_proj", kv * d, H, True)
        t.linear(p + ".self_attn.dense", H, heads * d, True)
        if c.get("qk_layernorm"):
            t.norm(p + ".self_attn.q_layernorm", d, True)
            t.norm(p + ".self_attn.k_layernorm", d, True)
        t.linear(p + ".mlp.fc1", inner, H, True)
        t.linear(p + ".mlp.fc2", H, inner, True)
    t.norm("model.final_layernorm", H, True)
    if not c.get("tie_word_embeddings", False):
        t.linear("lm_head", V, H, True)
    return t


def gen_phi3(c):
    t = Tensors()
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    d, inner = H // heads, c["intermediate_size"]
    t.add("model.embed_tokens.weight", V, H)
    for i in range(L):
        p = f"model.layers.{i}"
        t.norm(p + ".input_layernorm", H, False)
        t.add(p + ".self_attn.qkv_proj.weight", (heads + 2 * kv) * d, H)
        t.add(p + ".self_attn.o_proj.weight", H, heads * d)
        t.norm(p + ".post_attention_layernorm", H, False)
        t.add(p + ".mlp.gate_up_proj.weight", 2 * inner, H)
        t.add(p + ".mlp.down_proj.weight", H, inner)
    t.norm("model.norm", H, False)
    if not c.get("tie_word_embeddings", False):
        t.add("lm_head.weight", V, H)
    return t


def gen_gpt2(c):
    t = Tensors()
    H, L, V, P = c["n_embd"], c["n_layer"], c["vocab_size"], c["n_positions"]
    inner = c.get("n_inner") or 4 * H
    t.add("transformer.wte.weight", V, H)
    t.add("transformer.wpe.weight", P, H)
    for i in range(L):
        p = f"transformer.h.{i}"
        t.norm(p + ".ln_1", H, True)
        t.add(p + ".attn.c_attn.weight", H, 3 * H)  # Conv1D stores [in, out]
        t.add(p + ".attn.c_attn.bias", 3 * H)
        t.add(p + ".attn.c_proj.weight", H, H)
        t.add(p + ".attn.c_proj.bias", H)
        t.norm(p + ".ln_2", H, True)
        t.add(p + ".mlp.c_fc.weight", H, inner)
        t.add(p + ".mlp.c_fc.bias", inner)
        t.add(p + ".mlp.c_proj.weight", inner, H)
        t.add(p + ".mlp.c_proj.bias", H)
    t.norm("transformer.ln_f", H, True)
    if not c.get("tie_word_embeddings", True):
        t.add("lm_head.weight", V, H)
    return t


def gen_opt(c):
    t = Tensors()
    H, L, V, F = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["ffn_dim"]
    E = c.get("word_embed_proj_dim") or H
    b = c.get("enable_bias", True)
    p0 = "model.decoder"
    t.add(p0 + ".embed_tokens.weight", V, E)
    t.add(p0 + ".embed_positions.weight", c["max_position_embeddings"] + 2, H)
    if E != H:
        t.add(p0 + ".project_out.weight", E, H)
        t.add(p0 + ".project_in.weight", H, E)
    if c.get("do_layer_norm_before", True) and not c.get("_remove_final_layer_norm", False):
        t.norm(p0 + ".final_layer_norm", H, True)
    for i in range(L):
        p = f"{p0}.layers.{i}"
        for n in ("k_proj", "v_proj", "q_proj", "out_proj"):
            t.linear(f"{p}.self_attn.{n}", H, H, b)
        t.norm(p + ".self_attn_layer_norm", H, True)
        t.linear(p + ".fc1", F, H, b)
        t.linear(p + ".fc2", H, F, b)
        t.norm(p + ".final_layer_norm", H, True)
    if not c.get("tie_word_embeddings", True):
        t.add("lm_head.weight", V, E)
    return t


def gen_bloom(c):
    t = Tensors()
    H = c.get("n_embed") or c["hidden_size"]
    L, V = c.get("n_layer") or c["num_hidden_layers"], c["vocab_size"]
    t.add("transformer.word_embeddings.weight", V, H)
    t.norm("transformer.word_embeddings_layernorm", H, True)
    for i in range(L):
        p = f"transformer.h.{i}"
        t.norm(p + ".input_layernorm", H, True)
        t.linear(p + ".self_attention.query_key_value", 3 * H, H, True)
        t.linear(p + ".self_attention.dense", H, H, True)
        t.norm(p + ".post_attention_layernorm", H, True)
        t.linear(p + ".mlp.dense_h_to_4h", 4 * H, H, True)
        t.linear(p + ".mlp.dense_4h_to_h", H, 4 * H, True)
    t.norm("transformer.ln_f", H, True)
    return t


def gen_gpt_neox(c):
    t = Tensors()
    H, L, V, inner = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    b = c.get("attention_bias", True)
    t.add("gpt_neox.embed_in.weight", V, H)
    for i in range(L):
        p = f"gpt_neox.layers.{i}"
        t.norm(p + ".input_layernorm", H, True)
        t.norm(p + ".post_attention_layernorm", H, True)
        t.linear(p + ".attention.query_key_value", 3 * H, H, b)
        t.linear(p + ".attention.dense", H, H, b)
        t.linear(p + ".mlp.dense_h_to_4h", inner, H, True)
        t.linear(p + ".mlp.dense_4h_to_h", H, inner, True)
    t.norm("gpt_neox.final_layer_norm", H, True)
    if not c.get("tie_word_embeddings", False):
        t.add("embed_out.weight", V, H)
    return t


def gen_falcon(c):
    t = Tensors()
    H = c.get("n_embed") or c["hidden_size"]
    L = c.get("num_hidden_layers") or c["n_layer"]
    heads = c.get("num_attention_heads") or c["n_head"]
    V, d, b = c["vocab_size"], H // heads, c.get("bias", False)
    new = c.get("new_decoder_architecture", c.get("model_type") == "RefinedWeb")
    if new:
        kv = c.get("num_kv_heads") or c.get("n_head_kv") or heads
        qkv = (2 * kv + heads) * d
    elif c.get("multi_query", True):
        qkv = H + 2 * d
    else:
        qkv = 3 * H
    ffn = c.get("ffn_hidden_size") or 4 * H
    n_ln = c.get("num_ln_in_parallel_attn") or (2 if new else None)
    t.add("transformer.word_embeddings.weight", V, H)
    for i in range(L):
        p = f"transformer.h.{i}"
        if not c.get("parallel_attn", True):
            t.norm(p + ".input_layernorm", H, True)
            t.norm(p + ".post_attention_layernorm", H, True)
        elif n_ln == 2:
            t.norm(p + ".ln_attn", H, True)
            t.norm(p + ".ln_mlp", H, True)
        else:
            t.norm(p + ".input_layernorm", H, True)
        t.linear(p + ".self_attention.query_key_value", qkv, H, b)
        t.linear(p + ".self_attention.dense", H, H, b)
        t.linear(p + ".mlp.dense_h_to_4h", ffn, H, b)
        t.linear(p + ".mlp.dense_4h_to_h", H, ffn, b)
    t.norm("transformer.ln_f", H, True)
    if not c.get("tie_word_embeddings", True):
        t.add("lm_head.weight", V, H)
    return t


def gen_starcoder2(c):
    t = Tensors()
    H, L, V, inner = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"], c["intermediate_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads") or heads
    d, b = H // heads, c.get("use_bias", True)
    t.add("model.embed_tokens.weight", V, H)
    for i in range(L):
        p = f"model.layers.{i}"
        t.norm(p + ".input_layernorm", H, True)
        t.linear(p + ".self_attn.q_proj", heads * d, H, b)
        t.linear(p + ".self_attn.k_proj", kv * d, H, b)
        t.linear(p + ".self_attn.v_proj", kv * d, H, b)
        t.linear(p + ".self_attn.o_proj", H, heads * d, b)
        t.norm(p + ".post_attention_layernorm", H, True)
        t.linear(p + ".mlp.c_fc", inner, H, b)
        t.linear(p + ".mlp.c_proj", H, inner, b)
    t.norm("model.norm", H, True)
    if not c.get("tie_word_embeddings", True):
        t.add("lm_head.weight", V, H)
    return t


def gen_deepseek(c):
    t = Tensors()
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    heads, b = c["num_attention_heads"], c.get("attention_bias", False)
    rope, nope, vd = c["qk_rope_head_dim"], c["qk_nope_head_dim"], c["v_head_dim"]
    ql, kvl = c.get("q_lora_rank"), c["kv_lora_rank"]
    E, k0, freq = c.get("n_routed_experts"), c.get("first_k_dense_replace", 0), c.get("moe_layer_freq", 1)
    t.add("model.embed_tokens.weight", V, H)
    for i in range(L):
        p = f"model.layers.{i}"
        a = p + ".self_attn"
        t.norm(p + ".input_layernorm", H, False)
        if ql is None:
            t.add(a + ".q_proj.weight", heads * (nope + rope), H)
        else:
            t.linear(a + ".q_a_proj", ql, H, b)
            t.norm(a + ".q_a_layernorm", ql, False)
            t.add(a + ".q_b_proj.weight", heads * (nope + rope), ql)
        t.linear(a + ".kv_a_proj_with_mqa", kvl + rope, H, b)
        t.norm(a + ".kv_a_layernorm", kvl, False)
        t.add(a + ".kv_b_proj.weight", heads * (nope + vd), kvl)
        t.linear(a + ".o_proj", H, heads * vd, b)
        t.norm(p + ".post_attention_layernorm", H, False)
        if E and i >= k0 and i % freq == 0:
            mi = c["moe_intermediate_size"]
            t.add(p + ".mlp.gate.weight", E, H)
            if c.get("topk_method") == "noaux_tc":
                t.add(p + ".mlp.gate.e_score_correction_bias", E)
            for j in range(E):
                gated_mlp(t, f"{p}.mlp.experts.{j}", H, mi)
            if c.get("n_shared_experts"):
                gated_mlp(t, p + ".mlp.shared_experts", H, mi * c["n_shared_experts"])
        else:
            gated_mlp(t, p + ".mlp", H, c["intermediate_size"])
    t.norm("model.norm", H, False)
    if not c.get("tie_word_embeddings", False):
        t.add("lm_head.weight", V, H)
    return t


GENERATORS = {
    "llama": gen_llama, "mistral": gen_mistral, "mixtral": gen_mixtral, "qwen2": gen_qwen2,
    "qwen2_moe": gen_qwen2_moe, "qwen3": gen_qwen3, "gemma": gen_gemma, "gemma2": gen_gemma2,
    "phi": gen_phi, "phi3": gen_phi3, "gpt2": gen_gpt2, "opt": gen_opt, "bloom": gen_bloom,
    "gpt_neox": gen_gpt_neox, "falcon": gen_falcon, "RefinedWeb": gen_falcon,
    "RefinedWebModel": gen_falcon, "starcoder2": gen_starcoder2, "deepseek_v2": gen_deepseek,
    "deepseek_v3": gen_deepseek,
}


def numel(shape):
    n = 1
    for dim in shape:
        n *= dim
    return n


BNB_BLOCK, BNB_NESTED_BLOCK = 64, 256  # bitsandbytes' 4-bit and nested blocksizes


def bnb_4bit(items, dtype, quant_type):
    """items with the decoder's linear weights quantized; each item becomes
    (name, shape, dtype)."""
    out = []
    for name, shape in items:
        if not (name.startswith("model.layers.") and name.endswith(".weight") and
                len(shape) == 2):
            out.append((name, shape, dtype))
            continue
        n = numel(shape)
        blocks = -(-n // BNB_BLOCK)
        blob = json.dumps({"quant_type": quant_type, "blocksize": BNB_BLOCK,
                           "dtype": "bfloat16", "shape": shape,
                           "nested_blocksize": BNB_NESTED_BLOCK, "nested_dtype": "float32",
                           "nested_offset": 0.0}).encode()
        out += [(name, [-(-n // 2), 1], "U8"),
                (name + ".absmax", [blocks], "U8"),
                (name + ".quant_map", [16], "F32"),
                (name + ".nested_absmax", [-(-blocks // BNB_NESTED_BLOCK)], "F32"),
                (name + ".nested_quant_map", [256], "F32"),
                (name + ".quant_state.bitsandbytes__" + quant_type, [len(blob)], "U8")]
    return out


def write_file(path, items, dtype):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for item in items:
        name, shape = item[0], item[1]
        n = numel(shape) * BYTES[item[2] if len(item) > 2 else dtype]
        header[name] = {"dtype": item[2] if len(item) > 2 else dtype, "shape": shape,
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + offset)
    return offset


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("outdir")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--dtype", default="BF16", choices=sorted(BYTES))
    ap.add_argument("--bnb-4bit", choices=("nf4", "fp4"))
    args = ap.parse_args()
    with open(args.config) as f:
        config = json.load(f)
    params = GENERATORS[config["model_type"]](config).items
    items = bnb_4bit(params, args.dtype, args.bnb_4bit) if args.bnb_4bit else params
    os.makedirs(args.outdir, exist_ok=True)
    try:
        if args.shards <= 1:
            write_file(os.path.join(args.outdir, "model.safetensors"), items, args.dtype)
        else:
            per = -(-len(items) // args.shards)
            weight_map, total = {}, 0
            for s in range(args.shards):
                name = f"model-{s + 1:05d}-of-{args.shards:05d}.safetensors"
                part = items[s * per:(s + 1) * per]
                total += write_file(os.path.join(args.outdir, name), part, args.dtype)
                weight_map.update({item[0]: name for item in part})
            with open(os.path.join(args.outdir, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    except OSError as e:
        print(f"cannot write the sparse files: {e}", file=sys.stderr)
        return 77
    print(sum(numel(shape) for _, shape in params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
