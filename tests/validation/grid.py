"""Measure the validation grid and write grid.csv.

    /usr/bin/python3 tests/validation/grid.py --out tests/validation/grid.csv
    /usr/bin/python3 tests/validation/grid.py --out tests/validation/grid.csv --only g07,l12
    /usr/bin/python3 tests/validation/grid.py --list

Every row is measured on the CPU (see README.md for the method).  With
``--only`` the listed rows are re-measured and replaced in an existing CSV,
the others are kept.  A JSON-lines file with extra detail per row (peak op,
gradient bytes, peaks rounded to the CUDA allocator's 512-byte blocks, time)
is written next to the CSV (``--details``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import measure as ms  # noqa: E402

COLUMNS = [
    "id", "family", "hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate",
    "vocab", "max_positions", "tie_embeddings", "attn_bias", "batch", "seq", "precision",
    "optimizer", "optimizer_impl", "grad_ckpt", "attention", "dropout", "method", "lora_rank",
    "lora_targets", "freeze_layers", "measured_peak_bytes", "measured_peak_phase",
    "measured_forward_peak_bytes", "measured_backward_peak_bytes",
    "measured_optimizer_peak_bytes", "baseline_bytes",
]

# Architectures (small, realistic shapes).
SIZES = {
    # GPT-2 family: learned positions, tied head, Conv1D with biases
    "g1": dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=50257, max_positions=1024),
    "g2": dict(family="gpt2", hidden=256, layers=4, heads=4, vocab=50257, max_positions=1024),
    "g3": dict(family="gpt2", hidden=512, layers=6, heads=8, vocab=50257, max_positions=1024),
    "g4": dict(family="gpt2", hidden=256, layers=2, heads=8, vocab=8192, max_positions=1024),
    "g5": dict(family="gpt2", hidden=192, layers=3, heads=6, vocab=16384, max_positions=512,
               tie_embeddings=0),
    # Llama family: RMSNorm, RoPE, GQA, SwiGLU, untied head
    "l1": dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=4, intermediate=344,
               vocab=32000, max_positions=2048),
    "l2": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=2, intermediate=688,
               vocab=32000, max_positions=2048),
    "l3": dict(family="llama", hidden=512, layers=4, heads=8, kv_heads=8, intermediate=1376,
               vocab=32000, max_positions=2048),
    # Llama-3 style vocabulary, one kv head
    "l4": dict(family="llama", hidden=256, layers=2, heads=4, kv_heads=1, intermediate=688,
               vocab=128256, max_positions=8192),
    # Qwen2 style: q/k/v bias, tied embeddings
    "l5": dict(family="llama", hidden=256, layers=3, heads=4, kv_heads=2, intermediate=704,
               vocab=32000, max_positions=4096, attn_bias=1, tie_embeddings=1),
    # small vocabulary: attention-dominated at long sequences
    "l6": dict(family="llama", hidden=256, layers=2, heads=8, kv_heads=4, intermediate=688,
               vocab=4096, max_positions=4096),
}

# id, size, batch, seq, precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    ("g01", "g1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("g02", "g1", 2, 256, "fp32", "adamw", "none", 0.1, "full", {}),
    ("g03", "g1", 4, 256, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("g04", "g1", 1, 512, "bf16", "adamw", "none", 0.0, "full", {}),
    ("g05", "g1", 2, 128, "fp32", "sgd", "none", 0.0, "full", {}),
    ("g06", "g1", 2, 128, "fp32", "sgd-momentum", "none", 0.0, "full", {}),
    ("g07", "g1", 2, 128, "fp32", "lion", "none", 0.0, "full", {}),
    ("g08", "g1", 2, 128, "fp32", "adam", "none", 0.0, "full", {}),
    ("g09", "g1", 4, 512, "fp32", "adamw", "reentrant", 0.1, "full", {}),
    ("g10", "g1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("g11", "g1", 2, 256, "fp32", "adamw", "none", 0.0, "lora", {"lora_rank": 16}),
    ("g12", "g1", 2, 256, "bf16", "adamw", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("g13", "g2", 1, 256, "fp32", "adamw", "none", 0.1, "full", {}),
    ("g14", "g2", 2, 512, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("g15", "g2", 2, 512, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("g16", "g2", 4, 128, "bf16", "lion", "none", 0.1, "full", {}),
    ("g17", "g2", 1, 1024, "fp32", "sgd", "reentrant", 0.0, "full", {}),
    ("g18", "g2", 2, 256, "bf16-mixed", "adamw", "none", 0.1, "lora",
     {"lora_rank": 8, "lora_targets": "c_attn"}),
    ("g19", "g2", 2, 256, "fp32", "adam", "none", 0.0, "freeze", {"freeze_layers": 2}),
    ("g20", "g2", 4, 256, "bf16-mixed", "sgd-momentum", "reentrant", 0.1, "freeze",
     {"freeze_layers": 2}),
    ("g21", "g3", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("g22", "g3", 1, 512, "bf16-mixed", "adamw", "reentrant", 0.1, "lora", {"lora_rank": 16}),
    ("g23", "g3", 2, 128, "bf16", "sgd", "none", 0.0, "full", {}),
    ("g24", "g4", 2, 1024, "fp32", "adamw", "none", 0.0, "full", {}),
    ("g25", "g4", 1, 1024, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("g26", "g4", 4, 512, "bf16-mixed", "lion", "reentrant", 0.0, "full", {}),
    ("g27", "g4", 2, 1024, "bf16", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("g28", "g5", 2, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("g29", "g5", 2, 512, "bf16-mixed", "adam", "none", 0.1, "full", {}),
    ("g30", "g5", 4, 128, "bf16", "adamw", "reentrant", 0.0, "freeze", {"freeze_layers": 1}),
    ("l01", "l1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l02", "l1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("l03", "l1", 4, 256, "bf16", "adamw", "none", 0.0, "full", {}),
    ("l04", "l1", 2, 128, "fp32", "sgd", "none", 0.0, "full", {}),
    ("l05", "l1", 2, 128, "fp32", "sgd-momentum", "none", 0.0, "full", {}),
    ("l06", "l1", 2, 128, "fp32", "lion", "none", 0.0, "full", {}),
    ("l07", "l1", 2, 128, "bf16-mixed", "adam", "none", 0.1, "full", {}),
    ("l08", "l1", 4, 512, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("l09", "l1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora", {"lora_rank": 8}),
    ("l10", "l1", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("l11", "l1", 2, 256, "fp32", "adamw", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("l12", "l2", 1, 512, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l13", "l2", 2, 512, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("l14", "l2", 2, 512, "bf16-mixed", "adamw", "reentrant", 0.1, "full", {}),
    ("l15", "l2", 4, 256, "bf16", "lion", "none", 0.0, "full", {}),
    ("l16", "l2", 1, 1024, "bf16-mixed", "sgd", "reentrant", 0.0, "full", {}),
    ("l17", "l2", 2, 512, "bf16", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 16}),
    ("l18", "l2", 4, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     {"lora_rank": 32, "lora_targets": "q_proj,v_proj"}),
    ("l19", "l2", 2, 256, "fp32", "sgd-momentum", "none", 0.0, "freeze", {"freeze_layers": 1}),
    ("l20", "l3", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l21", "l3", 1, 512, "bf16-mixed", "adamw", "reentrant", 0.0, "full", {}),
    ("l22", "l3", 2, 256, "bf16", "adam", "none", 0.1, "full", {}),
    ("l23", "l3", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora", {"lora_rank": 8}),
    ("l24", "l3", 1, 512, "bf16-mixed", "lion", "reentrant", 0.0, "freeze", {"freeze_layers": 2}),
    ("l25", "l4", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l26", "l4", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("l27", "l4", 1, 512, "bf16", "adamw", "reentrant", 0.0, "full", {}),
    ("l28", "l4", 2, 256, "bf16-mixed", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 16}),
    ("l29", "l4", 1, 256, "fp32", "sgd", "none", 0.1, "freeze", {"freeze_layers": 1}),
    ("l30", "l5", 2, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l31", "l5", 2, 256, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("l32", "l5", 2, 512, "bf16", "adamw", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("l33", "l5", 4, 128, "bf16-mixed", "sgd-momentum", "none", 0.0, "freeze",
     {"freeze_layers": 2}),
    ("l34", "l6", 2, 1024, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l35", "l6", 1, 1024, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("l36", "l6", 4, 512, "bf16-mixed", "sgd", "reentrant", 0.0, "lora", {"lora_rank": 8}),
    ("l37", "l6", 2, 1024, "bf16", "lion", "reentrant", 0.0, "full", {}),
    ("l38", "l6", 2, 512, "fp32", "adam", "reentrant", 0.1, "freeze", {"freeze_layers": 1}),
    # short sequences: the optimizer step's temporary (or the end of
    # backward) rather than the loss holds the peak
    ("g31", "g3", 1, 64, "fp32", "adamw", "none", 0.0, "full", {}),
    ("g32", "g2", 1, 64, "bf16-mixed", "adam", "none", 0.0, "full", {}),
    ("l39", "l3", 1, 64, "fp32", "adamw", "none", 0.0, "full", {}),
    ("l40", "l4", 1, 64, "bf16", "adamw", "none", 0.0, "full", {}),
    ("l41", "l3", 2, 64, "bf16-mixed", "lion", "none", 0.0, "full", {}),
    ("l42", "l2", 1, 64, "fp32", "sgd-momentum", "reentrant", 0.0, "full", {}),
]


def run_config(row, sizes=SIZES, config=ms.RunConfig):
    rid, size, b, s, prec, opt, gc, p, method, extra = row
    kw = dict(sizes[size])
    kw.update(batch=b, seq=s, precision=prec, optimizer=opt, grad_ckpt=gc, dropout=p,
              method=method)
    kw.update(extra)
    return rid, config(**kw).normalized()


def csv_row(rid, rc, res):
    return {
        "id": rid, "family": rc.family, "hidden": rc.hidden, "layers": rc.layers,
        "heads": rc.heads, "kv_heads": rc.kv_heads, "head_dim": rc.head_dim,
        "intermediate": rc.intermediate, "vocab": rc.vocab, "max_positions": rc.max_positions,
        "tie_embeddings": int(rc.tie_embeddings), "attn_bias": int(rc.attn_bias),
        "batch": rc.batch, "seq": rc.seq, "precision": rc.precision,
        "optimizer": rc.optimizer, "optimizer_impl": rc.optimizer_impl,
        "grad_ckpt": rc.grad_ckpt, "attention": rc.attention,
        "dropout": rc.dropout, "method": rc.method, "lora_rank": rc.lora_rank,
        "lora_targets": rc.lora_targets, "freeze_layers": rc.freeze_layers,
        "measured_peak_bytes": res["measured_peak_bytes"],
        "measured_peak_phase": res["measured_peak_phase"],
        "measured_forward_peak_bytes": res["measured_forward_peak_bytes"],
        "measured_backward_peak_bytes": res["measured_backward_peak_bytes"],
        "measured_optimizer_peak_bytes": res["measured_optimizer_peak_bytes"],
        "baseline_bytes": res["baseline_bytes"],
    }


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_csv(path, rows, columns=COLUMNS, order_rows=ROWS, missing=0):
    """Rows in the grid's order; columns a row lacks are written as missing
    (0; "" where compare.py must pass no flag for them)."""
    order = {r[0]: i for i, r in enumerate(order_rows)}
    rows = sorted(rows, key=lambda r: order.get(r["id"], len(order)))
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, missing) for k in columns})
    os.replace(tmp, path)


BREAKDOWN_KEYS = ("measured_peak_bytes", "measured_peak_phase", "baseline_bytes",
                  "baseline_by_category", "grads_bytes", "peak_op", "phase_peak_op",
                  "quiet_bytes", "trainable_params", "total_params")


def grid_main(argv, doc, name, rows, run_config, csv_row, write, describe):
    """The command line of the grids built on this one's machinery: measure
    the rows (or --only some, into the CSV as it stands), writing the CSV
    after each; --list their configurations; --breakdown ID, what is live at
    a row's peaks. csv_row(rid, rc, res, row) makes a CSV row, write(path,
    rows) writes the CSV, describe(row, rc) is the middle of a progress line."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), name + ".csv"))
    ap.add_argument("--only", action="append", default=[],
                    help="row id(s) to (re)measure, comma-separated; repeatable")
    ap.add_argument("--list", action="store_true", help="print the rows' configurations")
    ap.add_argument("--breakdown", default=None, metavar="ID",
                    help="measure one row and print what is live at its peak(s)")
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    byid = {r[0]: r for r in rows}
    if a.list:
        for row in rows:
            print(*run_config(row))
        return 0
    only = {x for v in a.only for x in v.split(",") if x} | ({a.breakdown} if a.breakdown else set())
    bad = only - set(byid)
    if bad:
        print("unknown row id(s): %s" % ", ".join(sorted(bad)), file=sys.stderr)
        return 2
    if a.breakdown:
        rid, rc = run_config(byid[a.breakdown])
        res = ms.measure(rc, snapshot=True)
        for k in BREAKDOWN_KEYS:
            print("%-28s %s" % (k, res[k]))
        print(ms.breakdown(res))
        for ph in ("forward", "backward", "optimizer"):
            if ph != res["measured_peak_phase"]:
                print(ms.breakdown(res, ph))
        return 0
    existing = {r["id"]: r for r in read_csv(a.out)} if only else {}
    todo = [r for r in rows if not only or r[0] in only]
    t_all = time.time()
    for i, row in enumerate(todo):
        rid, rc = run_config(row)
        t = time.time()
        res = ms.measure(rc)
        existing[rid] = csv_row(rid, rc, res, row)
        write(a.out, list(existing.values()))
        print("[%2d/%d] %s %s peak %11d %-9s (%.1f s)" % (
            i + 1, len(todo), rid, describe(row, rc), res["measured_peak_bytes"],
            res["measured_peak_phase"], time.time() - t), flush=True)
    print("%s: %d rows in %.0f s -> %s" % (name, len(todo), time.time() - t_all, a.out))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "grid.csv"))
    ap.add_argument("--details", default=None,
                    help="JSON-lines detail file (default: OUT with .details.jsonl)")
    ap.add_argument("--only", action="append", default=[],
                    help="row id(s) to (re)measure, comma-separated; repeatable")
    ap.add_argument("--list", action="store_true", help="print the row ids and exit")
    ap.add_argument("--device", default="cpu", help="cpu (default) or meta")
    a = ap.parse_args(argv)
    if a.list:
        for row in ROWS:
            rid, rc = run_config(row)
            print(rid, rc)
        return 0
    only = {x for v in a.only for x in v.split(",") if x}
    known = {r[0] for r in ROWS}
    bad = only - known
    if bad:
        print("unknown row id(s): %s" % ", ".join(sorted(bad)), file=sys.stderr)
        return 2
    details = a.details or os.path.splitext(a.out)[0] + ".details.jsonl"
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    existing = {r["id"]: r for r in read_csv(a.out)} if only else {}
    old_details = {}
    if only and os.path.exists(details):
        with open(details) as f:
            for line in f:
                d = json.loads(line)
                old_details[d["id"]] = d
    t_all = time.time()
    todo = [r for r in ROWS if not only or r[0] in only]
    for i, row in enumerate(todo):
        rid, rc = run_config(row)
        rc.device = a.device
        t = time.time()
        res = ms.measure(rc)
        existing[rid] = csv_row(rid, rc, res)
        old_details[rid] = {
            "id": rid, "peak_op": res["peak_op"], "phase_peak_op": res["phase_peak_op"],
            "grads_bytes": res["grads_bytes"], "baseline_by_category": res["baseline_by_category"],
            "peak_bytes_rounded512": res["peak_bytes_rounded512"],
            "phase_peak_bytes_rounded512": res["phase_peak_bytes_rounded512"],
            "quiet_bytes": res["quiet_bytes"], "trainable_params": res["trainable_params"],
            "total_params": res["total_params"], "device": a.device,
            "seconds": round(time.time() - t, 1),
        }
        write_csv(a.out, list(existing.values()))
        with open(details, "w") as f:
            for r in ROWS:
                if r[0] in old_details:
                    f.write(json.dumps(old_details[r[0]], sort_keys=True) + "\n")
        print("[%2d/%d] %s %-6s %-5s b%d s%-4d %-10s %-12s gc=%-4s p=%.1f %-6s peak %13d %-9s"
              " (%.1f s)" % (i + 1, len(todo), rid, rc.family, row[1], rc.batch, rc.seq,
                             rc.precision, rc.optimizer, rc.grad_ckpt, rc.dropout, rc.method,
                             res["measured_peak_bytes"], res["measured_peak_phase"],
                             time.time() - t), flush=True)
    print("grid: %d rows in %.0f s -> %s" % (len(todo), time.time() - t_all, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
