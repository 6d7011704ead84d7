#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run two builds of the llmem CLI over the same grid of presets and flags and
report every case whose output or exit status differs.

A refactor or a speed change must leave every printed number as it was: this
is its check. It needs two builds, so it is not a Meson test.

usage: compare_cli.py OLD_LLMEM NEW_LLMEM [PRESETS, default all]
"""
import concurrent.futures
import subprocess
import sys

# Each setup: flags appended to --model PRESET --json. Chosen to cross every
# switch of the estimate (method, precision, attention, checkpointing, loss,
# optimizer, layouts) and the commands built on it (--max, grids, fit, plan).
SETUPS = [
    [],
    ["--batch", "1", "--seq", "1"],
    ["--batch", "1", "--seq", "3"],
    ["--batch", "4", "--seq", "2048"],
    ["--batch", "3", "--seq", "777", "--attention", "eager"],
    ["--batch", "2", "--seq", "1024", "--attention", "flash"],
    ["--precision", "fp32", "--batch", "2"],
    ["--precision", "fp16-mixed", "--seq", "1000"],
    ["--precision", "bf16", "--optimizer", "sgd"],
    ["--precision", "bf16-autocast", "--batch", "2"],
    ["--method", "lora", "--batch", "2", "--seq", "1024"],
    ["--method", "lora", "--lora-targets", "all-linear", "--lora-rank", "16"],
    ["--method", "qlora", "--batch", "4", "--seq", "512"],
    ["--method", "freeze", "--freeze-layers", "2", "--batch", "2"],
    ["--grad-ckpt", "full", "--batch", "8", "--seq", "2048"],
    ["--grad-ckpt", "reentrant", "--batch", "2"],
    ["--loss", "chunked", "--batch", "2", "--seq", "4096"],
    ["--optimizer", "adamw-8bit", "--optimizer-impl", "foreach"],
    ["--optimizer", "adafactor", "--grad-accum", "4"],
    ["--optimizer", "lion", "--dropout", "0.1"],
    ["--optimizer-impl", "forloop", "--batch", "2"],
    ["--dp", "8", "--zero", "2", "--batch", "2"],
    ["--dp", "8", "--zero", "3", "--seq", "4096"],
    ["--dp", "4", "--fsdp", "full", "--offload", "optimizer"],
    ["--dp", "8", "--fsdp", "hybrid", "--shard-group", "4"],
    ["--tp", "2", "--sp", "1", "--batch", "2"],
    ["--tp", "4", "--batch", "2", "--seq", "2048"],
    ["--pp", "2", "--micro-batches", "4"],
    ["--pp", "4", "--micro-batches", "8", "--batch", "2"],
    ["--cp", "2", "--seq", "4096"],
    ["--gpu", "H100-SXM"],
    ["--gpu", "A100-40GB", "--max", "batch"],
    ["--capacity", "24GiB", "--max", "seq"],
    ["--batch", "1,2,4", "--seq", "512,2048"],
    ["--formula", "article"],
    ["--svg", "/dev/null", "--timeline"],
]
COMMANDS = [
    ["fit", "--gpu", "A100-80GB"],
    ["fit", "--gpu", "H100-SXM", "--method", "lora", "--batch", "2"],
    ["plan", "--gpus", "8", "--gpu", "H100-SXM", "--top", "3"],
    ["plan", "--gpus", "16", "--gpu", "A100-40GB", "--top", "2", "--seq", "2048"],
]


def cases(presets):
    for p in presets:
        for flags in SETUPS:
            yield ["estimate", "--model", p, "--json"] + flags
            if flags == SETUPS[0] or flags == SETUPS[3]:
                yield ["estimate", "--model", p] + flags  # the table
        for cmd in COMMANDS:
            yield cmd[:1] + ["--model", p, "--json"] + cmd[1:]


def run(cli, args):
    r = subprocess.run([cli] + args, capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = sys.argv[1], sys.argv[2]
    presets = sys.argv[3:] or [line.split()[0] for line in subprocess.run(
        [old, "models"], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.strip()]
    todo = list(cases(presets))
    same_ok = same_err = differ = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for args, a, b in zip(todo, pool.map(lambda c: run(old, c), todo),
                              pool.map(lambda c: run(new, c), todo)):
            if a != b:
                differ += 1
                if differ <= 10:
                    print("DIFFER:", " ".join(args), "exit", a[0], "->", b[0])
            elif a[0] in (0, 3):
                same_ok += 1
            else:
                same_err += 1
    print(f"{len(todo)} runs: {same_ok} same (answer), {same_err} same (error exit), {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
