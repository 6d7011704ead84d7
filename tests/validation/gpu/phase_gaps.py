#!/usr/bin/env python3
"""Measured minus estimated, phase by phase, in MiB: where a GPU row and
llmem part (python3 standard library only).

    python3 tests/validation/gpu/phase_gaps.py build/cli/llmem tests/validation/gpu/gpu.csv
    python3 tests/validation/gpu/phase_gaps.py build/cli/llmem --traces tests/validation/gpu/traces

With a CSV, one line per row of run_gpu.py's measure: the allocated peak of
the forward (with the loss), the backward and the optimizer step, measured,
estimated (llmem's loss-backward and backward phases: the larger), and the
gap. With --traces, the same for each trace_gpu.py trace (a model cut to a
few layers: its config is the trace's first line). A gap the same in every
phase and row is what the step holds outside llmem's allocated level (the
cuBLAS workspaces, the allocator's 512-byte rounding); a gap that grows
with the layers is a tensor the estimate misses or adds in each layer.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_gpu as R  # noqa: E402

MIB = float(1 << 20)
PHASES = ("forward", "backward", "optimizer")


def estimate(llmem, config_json, row):
    with tempfile.TemporaryDirectory(prefix="llmem-gaps-") as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(config_json)
        out = subprocess.run(R.llmem_command(llmem, d, row), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    ph = json.loads(out.stdout)["phases"]
    return {"forward": ph["forward"],
            "backward": max(ph.get("loss-backward", 0), ph.get("backward", 0)),
            "optimizer": ph["optimizer"]}


def line(rid, model, measured, est):
    return "%-4s %-16s" % (rid, model) + "  ".join(
        "%s %9.1f - %9.1f = %7.1f" % (p[:3], measured[p] / MIB, est[p] / MIB,
                                       (measured[p] - est[p]) / MIB) for p in PHASES)


def from_csv(llmem, path):
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            measured = {p: int(r["measured_%s_peak_bytes" % p]) for p in PHASES}
            print(line(r["id"], r["model"], measured, estimate(llmem, r["hf_config"], r)))


def from_traces(llmem, folder):
    keys = ("id", "model", "batch", "seq", "precision", "optimizer", "grad_ckpt", "attention",
            "method")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tsv"):
            continue
        with open(os.path.join(folder, name)) as f:
            lines = f.read().splitlines()
        config = lines[0][len("# config "):]
        row = json.loads(lines[1][len("# row "):])
        r = dict(zip(keys, map(str, row[:9])))
        lora = row[9]
        r.update(lora_rank=str(lora[0]) if lora else "0", lora_targets=lora[1] if lora else "",
                 lora_dropout=str(lora[2]) if lora else "0")
        measured = {}
        for ln in lines[2:]:
            phase, op, _, _, peak = ln.split("\t")
            if op == "END":
                measured[phase] = int(peak)
        layers = json.loads(config).get("num_hidden_layers", json.loads(config).get("n_layer"))
        print(line(name[:-len(".tsv")], "%s/%sL" % (row[1], layers), measured,
                   estimate(llmem, config, r)))


def main(argv):
    if len(argv) == 2:
        from_csv(argv[0], argv[1])
    elif len(argv) == 3 and argv[1] == "--traces":
        from_traces(argv[0], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
