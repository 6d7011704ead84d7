#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The training-memory formula of EleutherAI's cookbook, timed in-process.

Source: EleutherAI cookbook, calc/calc_transformer_mem.py (Anthony et al.,
"Transformer Math 101", blog.eleuther.ai/transformer-math, 2023). The
equations below are re-typed from the published ones (parameters, gradients,
optimizer states, communication buffers, activations); the script's own code
(argument parsing, printing, inference mode) is not reproduced. The two
example lines of the cookbook ("default 20B", "llama 7B") are checked first.

usage: peer_eleutherai.py [seconds per repetition] [repetitions]
prints one line: "eleutherai <ns per call> <total GiB>" for Llama-3.1-8B,
bf16 mixed precision, AdamW, micro-batch 4, sequence 2048, one GPU.
"""
import sys
import time

GIB = 2 ** 30


def transformer_mem(num_layers, hidden_size, num_attention_heads, sequence_length, batch_size,
                    vocab_size=51200, ffn_expansion_factor=4, num_mlp_linears=2,
                    kv_size_ratio=1.0, num_gpus=1, tensor_parallel_size=1,
                    pipeline_parallel_size=1, zero_stage=1, partition_activations=True,
                    checkpoint_activations=False, mixed_precision=True, bytes_per_grad_ele=4,
                    optimizer_bytes_per_param=12, low_prec_bytes_per_val=2,
                    zero_allgather_bucket_size=5e8, zero3_max_live_params=1e9, misc_mem_gib=0):
    """Bytes of each term, as the cookbook sums them (one GPU's share)."""
    h, L, s, b = hidden_size, num_layers, sequence_length, batch_size
    # Parameters: embeddings (input and output) and learned positions, per-layer
    # biases and norms (8h), final norm (2h), attention (q, o and k, v at kv_size_ratio)
    # and the MLP's linears.
    params = (2 * vocab_size * h + h * s + 8 * h * L + 2 * h
              + 2 * (1 + kv_size_ratio) * L * h * h
              + num_mlp_linears * L * h * ffn_expansion_factor * h)
    bytes_per_param = low_prec_bytes_per_val if mixed_precision else 4
    model_parallel = tensor_parallel_size * pipeline_parallel_size
    dp = num_gpus / model_parallel
    model_mem = params * bytes_per_param / model_parallel
    if zero_stage >= 3:
        model_mem /= dp
    grad_mem = params * bytes_per_grad_ele / model_parallel
    if zero_stage >= 2:
        grad_mem /= dp
    optimizer_mem = params * optimizer_bytes_per_param / model_parallel
    if zero_stage >= 1:
        optimizer_mem /= dp
    comm_mem = 0
    if zero_stage >= 1 and num_gpus > 1:
        comm_mem += zero_allgather_bucket_size * low_prec_bytes_per_val
    if zero_stage >= 3 and num_gpus > 1:
        comm_mem += zero3_max_live_params * low_prec_bytes_per_val
    # Activations (Korthikanti et al. 2022): sbhL(16B + 2) with checkpointing,
    # plus (2B + 1) a s^2 b L without.
    B = low_prec_bytes_per_val
    if checkpoint_activations:
        act_mem = s * b * h * L * (16 * B + 2)
    else:
        act_mem = s * b * h * L * ((16 * B + 2) + (2 * B + 1) * (num_attention_heads * s / h))
    if partition_activations:
        act_mem /= tensor_parallel_size
    total = model_mem + grad_mem + optimizer_mem + comm_mem + act_mem + misc_mem_gib * GIB
    return params, model_mem, grad_mem, optimizer_mem, comm_mem, act_mem, total


def check_published_examples():
    """The cookbook's two example lines and their printed results (GiB)."""
    p, model, grad, opt, _, act, total = transformer_mem(44, 6144, 64, 2048, 1,
                                                         checkpoint_activations=True)
    assert round(p / 1e9, 2) == 20.58 and round(act / GIB, 2) == 17.53
    assert round(model / GIB, 2) == 38.32 and round(grad / GIB, 2) == 76.65
    assert round(opt / GIB, 2) == 229.95 and round(total / GIB, 2) == 362.45
    p, model, grad, opt, _, act, total = transformer_mem(32, 4096, 32, 4096, 1,
                                                         ffn_expansion_factor=3.5)
    assert round(p / 1e9, 2) == 6.34 and round(act / GIB, 2) == 97.00
    assert round(total / GIB, 2) == 203.33


def llama_3_1_8b():
    """Llama-3.1-8B (32 layers, hidden 4096, 32 heads, 8 key/value heads, MLP
    14336 = 3.5 h with three linears, vocabulary 128256), batch 4, seq 2048."""
    return transformer_mem(32, 4096, 32, 2048, 4, vocab_size=128256, ffn_expansion_factor=3.5,
                           num_mlp_linears=3, kv_size_ratio=8 / 32, zero_stage=0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    check_published_examples()
    n, best = 1, None
    while True:  # calibrate: a batch of calls taking a tenth of the target
        t0 = time.perf_counter()
        for _ in range(n):
            llama_3_1_8b()
        dt = time.perf_counter() - t0
        if dt > seconds / 10:
            break
        n *= 2
    n = max(1, int(n * seconds / dt))
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            llama_3_1_8b()
        per = (time.perf_counter() - t0) / n
        best = per if best is None or per < best else best
    print("eleutherai %.1f %.2f" % (best * 1e9, llama_3_1_8b()[-1] / GIB))


if __name__ == "__main__":
    main()
