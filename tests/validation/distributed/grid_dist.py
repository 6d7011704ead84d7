"""Measure the per-rank rows and write dist.csv (one line per rank).

    /usr/bin/python3 tests/validation/distributed/grid_dist.py            # all rows
    /usr/bin/python3 tests/validation/distributed/grid_dist.py --only d01,z01
    /usr/bin/python3 tests/validation/distributed/grid_dist.py --list

Each row spawns its ranks (ranks.py; tp.py for tensor parallelism) with gloo on
127.0.0.1.  With ``--only`` the listed rows are re-measured and replaced in
an existing CSV.  Per-rank extras (what the engine holds, DDP's logged bucket
sizes, peak ops, quiet points) go to dist.details.jsonl; engines that cannot
run here (FSDP on a CPU-only torch 1.13) are recorded there with their error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import grid  # noqa: E402
import measure as ms  # noqa: E402
import ranks  # noqa: E402

COLUMNS = grid.COLUMNS[:1] + ["engine", "world", "rank", "view", "tp_loss"] + \
    grid.COLUMNS[1:] + [
    "engine_bytes", "ddp_bucket_bytes_logged", "grads_bytes", "optimizer_state_bytes",
    "trainable_bytes", "trainable_numel", "local_trainable_numel", "local_step_bucket_bytes",
]

SIZES = grid.SIZES

# id, engine, world, view (ddp: gradient_as_bucket_view; tp: the loss), size, batch, seq,
# precision, optimizer, grad_ckpt, dropout, method, extra
ROWS = [
    # DDP (defaults: bucket_cap_mb=25, gradient_as_bucket_view=False)
    ("d01", "ddp", 2, 0, "g1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("d02", "ddp", 2, 0, "g1", 2, 256, "bf16-mixed", "adamw", "none", 0.1, "full", {}),
    ("d03", "ddp", 2, 0, "l1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("d04", "ddp", 4, 0, "l1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "full", {}),
    ("d05", "ddp", 2, 0, "l2", 1, 256, "fp32", "adamw", "reentrant", 0.0, "full", {}),
    ("d06", "ddp", 2, 0, "l1", 2, 256, "bf16-mixed", "adamw", "none", 0.0, "lora",
     {"lora_rank": 8}),
    ("d07", "ddp", 4, 0, "g1", 1, 64, "fp32", "sgd-momentum", "none", 0.0, "full", {}),
    # DDP with gradient_as_bucket_view=True (llmem models False, DDP's default)
    ("v01", "ddp", 2, 1, "l1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("v02", "ddp", 2, 1, "g1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    # DDP + torch's ZeroRedundancyOptimizer (ZeRO-1 style), fp32
    ("z01", "zero1", 2, 0, "l1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("z02", "zero1", 2, 0, "g1", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("z03", "zero1", 4, 0, "l1", 1, 64, "fp32", "adamw", "none", 0.0, "full", {}),
    # Megatron-style tensor parallelism (tp.py), world = tp, the same batch on every rank;
    # the loss: Megatron's vocab-parallel cross entropy, or the HF loss on the shard
    ("t01", "tp", 2, "megatron", "l1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("t02", "tp", 2, "hf-shard", "l1", 1, 256, "fp32", "adamw", "none", 0.0, "full", {}),
    ("t03", "tp", 2, "megatron", "l2", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("t04", "tp", 2, "hf-shard", "l2", 1, 128, "fp32", "adamw", "none", 0.0, "full", {}),
    ("t05", "tp", 4, "megatron", "l1", 2, 128, "fp32", "adamw", "none", 0.0, "full", {}),
]


def run_config(row):
    rid, engine, world, view, size, b, s, prec, opt, gc, p, method, extra = row
    kw = dict(SIZES[size])
    kw.update(batch=b, seq=s, precision=prec, optimizer=opt, grad_ckpt=gc, dropout=p,
              method=method)
    kw.update(extra)
    return rid, engine, world, view, ms.RunConfig(**kw).normalized()


def csv_row(rid, engine, world, view, rc, res):
    out = grid.csv_row(rid, rc, res)
    tp = engine == "tp"
    out.update({
        "engine": engine, "world": world, "rank": res["rank"], "view": 0 if tp else view,
        "tp_loss": view if tp else "",
        "engine_bytes": res["baseline_by_category"].get("engine", 0),
        "ddp_bucket_bytes_logged": sum(res.get("ddp_bucket_sizes", [])),
        "grads_bytes": res["grads_bytes"],
        "optimizer_state_bytes": res["baseline_by_category"].get("optimizer_state", 0),
        "trainable_bytes": res["trainable_bytes"],
        "trainable_numel": res["trainable_numel"],
        "local_trainable_numel": res.get("local_trainable_numel", res["trainable_numel"]),
        "local_step_bucket_bytes": res.get("local_step_bucket_bytes", 0),
    })
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "dist.csv"))
    ap.add_argument("--details", default=None)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--fsdp", type=int, default=1,
                    help="also try FSDP once and record its error in the details (default 1)")
    a = ap.parse_args(argv)
    if a.list:
        for row in ROWS:
            print(run_config(row))
        return 0
    only = {x for v in a.only for x in v.split(",") if x}
    bad = only - {r[0] for r in ROWS} - {"f01"}
    if bad:
        print("unknown row id(s): %s" % ", ".join(sorted(bad)), file=sys.stderr)
        return 2
    details = a.details or os.path.splitext(a.out)[0] + ".details.jsonl"
    rows = {}
    old = {}
    if only:
        for r in grid.read_csv(a.out):
            r.setdefault("tp_loss", "")
            rows[(r["id"], int(r["rank"]))] = r
        if os.path.exists(details):
            with open(details) as f:
                for line in f:
                    d = json.loads(line)
                    old[(d["id"], d.get("rank", 0))] = d
    order = {r[0]: i for i, r in enumerate(ROWS)}
    todo = [r for r in ROWS if not only or r[0] in only]
    t_all = time.time()
    for i, row in enumerate(todo):
        rid, engine, world, view, rc = run_config(row)
        t = time.time()
        opts = {"loss": view} if engine == "tp" else {"view": view}
        job = {"engine": engine, "config": rc.__dict__.copy(), "opts": opts}
        res = ranks.run_world(job, world)
        for r in res:
            rows[(rid, r["rank"])] = csv_row(rid, engine, world, view, rc, r)
            old[(rid, r["rank"])] = {
                "id": rid, "rank": r["rank"], "engine": engine, "world": world, "view": view,
                **{k: r[k] for k in ("baseline_by_category", "engine_tensors", "peak_op",
                                     "phase_peak_op", "quiet_bytes", "peak_bytes_rounded512",
                                     "host_tensors_left_out", "seconds_setup",
                                     "seconds_measured")},
                **{k: r[k] for k in ("ddp_bucket_sizes", "ddp_has_rebuilt_buckets",
                                     "ddp_ignored_bool_buffer_bytes",
                                     "local_trainable_numel", "local_step_bucket_bytes",
                                     "tp_loss", "tp_loss_check", "tp_rank_params")
                   if k in r},
            }
        print("[%d/%d] %s %-5s world %d view %s %-5s b%d s%-4d %-10s peaks %s (%.0f s)" % (
            i + 1, len(todo), rid, engine, world, view, rc.family, rc.batch, rc.seq,
            rc.precision, [r["measured_peak_bytes"] for r in res], time.time() - t), flush=True)
        _write(a.out, details, rows, old, order)
    if a.fsdp and (not only or "f01" in only):
        rc = ms.RunConfig(**SIZES["l1"], batch=1, seq=128, precision="fp32").normalized()
        res = ranks.run_world({"engine": "fsdp", "config": rc.__dict__.copy()}, 2)
        old[("f01", 0)] = {"id": "f01", "rank": 0, "engine": "fsdp", "world": 2,
                           "error": res[0].get("error", "ran")}
        print("f01 fsdp: %s" % res[0].get("error", "ran (unexpected on a CPU-only build)"))
        _write(a.out, details, rows, old, order)
    print("grid_dist: %d rows in %.0f s -> %s" % (len(todo), time.time() - t_all, a.out))
    return 0


def _write(out, details, rows, old, order):
    key = lambda k: (order.get(k[0], len(order)), k[1])  # noqa: E731
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        import csv
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for k in sorted(rows, key=key):
            w.writerow({c: rows[k].get(c, 0) for c in COLUMNS})
    os.replace(tmp, out)
    with open(details, "w") as f:
        for k in sorted(old, key=key):
            f.write(json.dumps(old[k], sort_keys=True, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(main())
