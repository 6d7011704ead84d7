#!/usr/bin/env python3
"""Op by op on a CUDA GPU: what each aten op of one training step allocates.

    python3 tests/validation/gpu/trace_gpu.py --rows p01,x04 --layers 2 --out DIR
    python3 tests/validation/gpu/trace_gpu.py --workspaces

For each row of run_gpu.py's grid (its model cut to --layers decoder layers,
so a trace stays short), one warm-up step, then a step under a
TorchDispatchMode that writes, after each aten op, a line: the phase, the
op, its outputs' shapes and dtypes, torch.cuda.memory_allocated() and the
peak since the phase began; then one "save" line for each tensor autograd
saved for backward (the op, shape and dtype, its storage's address and
bytes: a storage saved by several ops counts once). DIR/<row>.tsv, with the model's config.json as
its first line, is what llmem's own trace of the same config is read
against (llmem estimate --config ... --trace).

--workspaces measures what the first matmul of a thread allocates beyond
its output (cuBLAS's workspace, one per handle: the forward's thread and
autograd's backward thread each get one), in fp32 and under bf16 autocast.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_gpu as R  # noqa: E402


def workspaces(torch):
    out = []
    mib = float(1 << 20)

    def delta(what, fn):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        keep = fn()
        torch.cuda.synchronize()
        out.append((what, torch.cuda.memory_allocated() - before))
        return keep

    x = torch.randn(256, 256, device="cuda")
    w = torch.randn(256, 256, device="cuda", requires_grad=True)
    y = delta("fp32 matmul, first on this thread (output 262144 B)", lambda: x @ w)
    y2 = delta("fp32 matmul, second (output 262144 B)", lambda: x @ w)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y3 = delta("bf16 autocast matmul (output 131072 B, + cast copies)", lambda: x @ w)
    delta("backward of the fp32 matmul (autograd's thread; grad 262144 B)",
          lambda: y.sum().backward())
    del y, y2, y3
    for what, b in out:
        print("workspace probe\t%s\t%d B\t%.3f MiB" % (what, b, b / mib))
    print("workspace probe\tallocated now\t%d B" % torch.cuda.memory_allocated())


def trace_row(row, layers, outdir, torch, transformers, backend=""):
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    rid = row[0]
    cls_name, fields = R.MODELS[row[1]]
    fields = dict(fields)
    for key in ("num_hidden_layers", "n_layer"):
        if key in fields and layers:
            fields[key] = min(fields[key], layers)
    if fields.get("first_k_dense_replace", 0) and layers:
        fields["first_k_dense_replace"] = min(fields["first_k_dense_replace"], layers - 1)
    saved = R.MODELS[row[1]]
    R.MODELS[row[1]] = (cls_name, fields)
    try:
        model, opt, data, config = R._build(row, torch, transformers)
    finally:
        R.MODELS[row[1]] = saved
    R._step(model, opt, data, row[4], torch)
    torch.cuda.synchronize()
    lines = []
    phase = ["forward"]

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            res = func(*args, **(kwargs or {}))
            outs = [t for t in tree_flatten(res)[0] if isinstance(t, torch.Tensor)]
            desc = " ".join("%s:%s" % ("x".join(str(d) for d in t.shape),
                                        str(t.dtype).replace("torch.", "")) for t in outs)
            lines.append("%s\t%s\t%s\t%d\t%d" % (
                phase[0], func, desc, torch.cuda.memory_allocated(),
                torch.cuda.max_memory_allocated()))
            return res

    def probe(name):
        lines.append("%s\tEND\t\t%d\t%d" % (name, torch.cuda.memory_allocated(),
                                             torch.cuda.max_memory_allocated()))
        phase[0] = {"forward": "backward", "backward": "optimizer"}.get(name, name)

    # What autograd saves for backward, in the order the ops save it: each
    # saved tensor's storage (data_ptr), shape and dtype, and the op being run.
    saves = []
    current = ["-"]

    def pack(t):
        try:
            ptr, nbytes = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
        except Exception:  # noqa: BLE001 - a tensor without a plain storage
            ptr, nbytes = 0, 0
        saves.append("save\t%s\t%s:%s\t%d\t%d" % (
            current[0], "x".join(str(d) for d in t.shape), str(t.dtype).replace("torch.", ""),
            ptr, nbytes))
        return t

    class Named(Log):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            current[0] = str(func)
            return super().__torch_dispatch__(func, types, args, kwargs)

    import contextlib
    kernel = contextlib.nullcontext()
    if backend:  # one SDPA backend forced (torch.nn.attention.sdpa_kernel)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        kernel = sdpa_kernel(getattr(SDPBackend, backend.upper()))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), Named(), kernel:
        R._step(model, opt, data, row[4], torch, probe)
    lines.extend(saves)
    path = os.path.join(outdir, "%s%s.tsv" % (rid, "-" + backend if backend else ""))
    with open(path, "w") as f:
        f.write("# config %s\n" % json.dumps(config.to_dict(), sort_keys=True, default=str))
        f.write("# row %s\n" % json.dumps(list(row)))
        f.write("\n".join(lines) + "\n")
    print("trace %s: %d ops -> %s" % (rid, len(lines), path), flush=True)
    del model, opt, data
    R._release(torch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out", default=".")
    ap.add_argument("--workspaces", action="store_true")
    ap.add_argument("--sdpa-backend", default="",
                    help="flash_attention, efficient_attention, cudnn_attention or math: "
                         "the measured step runs that one (the trace's name ends -BACKEND)")
    a = ap.parse_args()
    import torch
    import transformers
    torch.empty(1, device="cuda")
    if a.workspaces:
        try:
            workspaces(torch)
        except Exception as e:  # noqa: BLE001 - the traces still run
            print("workspace probe failed: %r" % (e,), flush=True)
    os.makedirs(a.out, exist_ok=True)
    by_id = {r[0]: r for r in R.ROWS}
    for rid in [x for x in a.rows.split(",") if x]:
        t0 = time.time()
        failed = None
        try:
            trace_row(by_id[rid], a.layers, a.out, torch, transformers, a.sdpa_backend)
        except Exception as e:  # noqa: BLE001 - the next row still runs
            failed = repr(e)
        if failed is not None:  # released past the except: its traceback holds the row's tensors
            print("trace %s: failed: %s" % (rid, failed), flush=True)
            R._release(torch)
        print("trace %s: %.1f s" % (rid, time.time() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
