#!/usr/bin/env python3
"""The caching allocator's own history of one training step on a CUDA GPU:
what a model of its fragmentation would be checked against.

    python3 tests/validation/gpu/alloc_history.py --rows l01,l03,l08 --out DIR

For each row of run_gpu.py's grid (whole models), a warm-up step, then the
measured step with torch.cuda.memory._record_memory_history on (no stack
traces): DIR/<row>.json.gz holds the allocator's events of that step (each
`alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`
with its address, size and stream), the segments at the step's start and
end (address, total and allocated bytes, pool, their blocks), and the three
levels run_gpu.py measures, so that a replay of the events through a model
of the allocator can be scored against `max_memory_reserved`.
"""

import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_gpu as R  # noqa: E402


def segments(torch):
    out = []
    for s in torch.cuda.memory._snapshot()["segments"]:
        out.append({"address": s["address"], "total_size": s["total_size"],
                     "allocated_size": s["allocated_size"], "segment_type": s["segment_type"],
                     "stream": s["stream"],
                     "blocks": [[b["size"], b.get("requested_size", 0), b["state"]]
                                for b in s["blocks"]]})
    return out


def history(row, outdir, torch, transformers):
    model, opt, data, config = R._build(row, torch, transformers)
    R._step(model, opt, data, row[4], torch)
    torch.cuda.synchronize()
    start = segments(torch)
    levels = {}

    def probe(name):
        levels[name] = {"allocated": torch.cuda.max_memory_allocated(),
                        "reserved": torch.cuda.max_memory_reserved()}

    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=2000000)
    R._step(model, opt, data, row[4], torch, probe)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    events = []
    for trace in snap["device_traces"]:
        for e in trace:
            events.append([e["action"], e["addr"], e["size"], e["stream"]])
    doc = {"row": list(row), "config": config.to_dict(), "levels": levels,
           "segments_start": start, "segments_end": segments(torch), "events": events,
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    path = os.path.join(outdir, "%s.json.gz" % row[0])
    with gzip.open(path, "wt") as f:
        json.dump(doc, f, default=str, separators=(",", ":"))
    print("history %s: %d events, %d segments at the start -> %s (%d bytes)" % (
        row[0], len(events), len(start), path, os.path.getsize(path)), flush=True)
    del model, opt, data
    R._release(torch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    import torch
    import transformers
    os.makedirs(a.out, exist_ok=True)
    by_id = {r[0]: r for r in R.ROWS}
    for rid in [x for x in a.rows.split(",") if x]:
        failed = None
        try:
            history(by_id[rid], a.out, torch, transformers)
        except Exception as e:  # noqa: BLE001 - the next row still runs
            failed = repr(e)
        if failed is not None:
            print("history %s: failed: %s" % (rid, failed), flush=True)
            R._release(torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
