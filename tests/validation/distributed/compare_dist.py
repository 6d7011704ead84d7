#!/usr/bin/env python3
"""Compare ``llmem estimate`` with the per-rank peaks in dist.csv (stdlib only).

    python3 tests/validation/distributed/compare_dist.py --llmem build/cli/llmem \
        [--csv tests/validation/distributed/dist.csv] [--max-error PCT]

Each CSV line is one rank of one row.  The architecture and training flags
are built as ../compare.py builds them; the layout flags by engine:

``ddp``   (gradient_as_bucket_view=False) ``--dp W``: the per-rank peak and
          the peak of each phase (forward, backward, optimizer; llmem's
          ``loss-backward`` folds onto backward) are compared directly.
          **Gated**: every phase of every rank within --max-error percent.
``ddp`` with view=1: compared with the same ``--dp W`` estimate, which models
          DDP's default; printed, not gated (what the view changes is the
          point of these rows).
``zero1`` (DDP + ZeroRedundancyOptimizer, fp32): ``--dp W --zero 1``, DeepSpeed
          ZeRO-1 as llmem models it, printed as is; then reconciled term by
          term with what torch's engine does differently, each term taken
          from the measurement (README.md):
            bucket   --bucket-elements = the trainable parameters, so that
                     llmem's backward-time contiguous bucket has the bytes of
                     DDP's gradient buckets (engine_bytes, checked equal);
            held     DDP keeps those buckets in forward and in the step too:
                     + engine_bytes in the forward and optimizer phases;
            states   ZeroRedundancyOptimizer gives whole parameters to ranks
                     (sorted greedy), DeepSpeed an even flat split: + the
                     measured state bytes - llmem's states, in every phase;
            step     torch's foreach AdamW on the local shard allocates the
                     sqrt of its largest (group, dtype) bucket of second
                     moments (local_step_bucket_bytes); llmem's DeepSpeed
                     step holds its ``optimizer_step`` term: + the first -
                     the second, in the optimizer phase.
          What remains is llmem's own error on the model, as in the DDP
          rows.  **Gated** like the DDP rows.

``tp``    (tp.py, world = tp) ``--tp W``.  Rows whose loss is the HF loss on
          the rank's vocabulary shard (``tp_loss`` hf-shard: the ops llmem's
          walk runs under --tp) are **gated** like the DDP rows.  Rows with
          Megatron's vocab-parallel cross entropy are printed, not gated, with
          llmem's excess in units of S (one fp32 logits shard, batch x seq x
          vocab/tp x 4 bytes) and, where the same configuration was measured
          with the HF loss, the measured difference between the two losses.

Self-checks of the measurement (exit 1 when they fail): on DDP and ZeRO rows
the engine's bytes equal DDP's logged bucket sizes and the trainable
parameters' bytes.

Exit status: 0 ok; 1 a gate or a self-check failed; 2 llmem failed or the CSV
is unusable.
"""

import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare  # noqa: E402  (stdlib only)

PHASES = ("forward", "backward", "optimizer")


def llmem_doc(cmd, timeout):
    where = " ".join(cmd)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise compare.LlmemError("cannot run %s: %s" % (where, e))
    if p.returncode != 0:
        raise compare.LlmemError("exit status %d from: %s\nstderr: %s" % (
            p.returncode, where, p.stderr.strip()[-2000:]))
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        raise compare.LlmemError("output is not JSON (%s) from: %s" % (e, where))
    for k in ("peak_allocated_bytes", "phases", "components"):
        if k not in doc:
            raise compare.LlmemError("JSON has no %r key, from: %s" % (k, where))
    return doc


def phases_of(doc):
    out = {}
    for k, v in doc["phases"].items():
        c = compare.coarse_phase(k)
        if c in PHASES:
            out[c] = max(out.get(c, 0), int(v))
    return out


def component(doc, group, name):
    return int(doc["components"].get(group, {}).get(name, 0))


def command(llmem, row, layout):
    cmd = compare.build_command(llmem, row)
    assert cmd[-1] == "--json"
    return cmd[:-1] + layout + ["--json"]


def config_key(row):
    """The configuration of a row without its id, engine options and results."""
    return tuple(row[c] for c in compare.REQUIRED[1:23]) + (row["world"],)


def measured(row):
    return {ph: int(row["measured_%s_peak_bytes" % ph]) for ph in PHASES}


def pct(est, meas):
    return (est - meas) / meas * 100.0


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError("%s has no rows" % path)
    need = compare.REQUIRED + ("engine", "world", "rank", "view", "engine_bytes",
                               "ddp_bucket_bytes_logged", "optimizer_state_bytes",
                               "trainable_bytes", "trainable_numel",
                               "local_step_bucket_bytes", "tp_loss")
    missing = [c for c in need if c not in rows[0]]
    if missing:
        raise ValueError("%s lacks column(s): %s" % (path, ", ".join(missing)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llmem", required=True)
    ap.add_argument("--csv", default=os.path.join(HERE, "dist.csv"))
    ap.add_argument("--max-error", type=float, default=None, metavar="PCT",
                    help="fail if a gated phase of a rank is off by more than PCT percent")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--quiet", action="store_true", help="print the summary only")
    ap.add_argument("--scale-measured", type=float, default=1.0, metavar="F",
                    help="multiply every measured byte count by F before comparing "
                         "(a check that the gate fails; default 1)")
    a = ap.parse_args(argv)
    try:
        rows = load(a.csv)
    except (OSError, ValueError) as e:
        print("compare_dist.py: %s" % e, file=sys.stderr)
        return 2
    if a.scale_measured != 1.0:
        for r in rows:
            for c in ("measured_peak_bytes",) + tuple("measured_%s_peak_bytes" % ph
                                                      for ph in PHASES):
                r[c] = str(int(round(int(r[c]) * a.scale_measured)))

    say = (lambda *x: None) if a.quiet else print
    gated, failures = [], []
    header = "%-4s %-5s %2s %-10s %-6s %-9s %13s %13s %7s"
    line = "%-4s %-5s %2s %-10s %-6s %-9s %13d %13d %+7.3f"  # rank "*": every rank alike

    try:
        # --- DDP -------------------------------------------------------------
        say("DDP (gradient_as_bucket_view=False) against llmem --dp W, per rank and phase:")
        say(header % ("id", "world", "rk", "precision", "method", "phase", "measured", "llmem",
                      "err%"))
        seen = set()
        for r in rows:
            if r["engine"] != "ddp":
                continue
            w = r["world"]
            # ranks that measured the same bytes print once (rank "*"); all are checked
            same = [x for x in rows if x["id"] == r["id"]]
            alike = all(measured(x) == measured(r) and x["measured_peak_bytes"] ==
                        r["measured_peak_bytes"] for x in same)
            if alike and r["id"] in seen:
                quiet_rank = True
            else:
                quiet_rank = False
            seen.add(r["id"])
            rk = "*" if alike else r["rank"]
            doc = llmem_doc(command(a.llmem, r, ["--dp", w]), a.timeout)
            est, meas = phases_of(doc), measured(r)
            eb = int(r["engine_bytes"])
            for what, other in (("DDP's logged bucket sizes", int(r["ddp_bucket_bytes_logged"])),
                                ("the trainable parameters", int(r["trainable_bytes"]))):
                if eb != other:
                    failures.append("%s rank %s: engine bytes %d != %s %d" % (
                        r["id"], r["rank"], eb, what, other))
            if int(r["view"]) == 0 and component(doc, "optimizer", "gradient_buckets") != eb:
                say("  %s: llmem's gradient_buckets %d, DDP's %d" % (
                    r["id"], component(doc, "optimizer", "gradient_buckets"), eb))
            for ph in PHASES:
                e = pct(est[ph], meas[ph])
                tag = ""
                if int(r["view"]) == 0:
                    gated.append((abs(e), "%s rank %s %s" % (r["id"], r["rank"], ph)))
                else:
                    tag = "  (view=1, not gated)"
                if not quiet_rank:
                    say(line % (r["id"], w, rk, r["precision"], r["method"], ph, meas[ph],
                                est[ph], e) + tag)
            e = pct(doc["peak_allocated_bytes"], int(r["measured_peak_bytes"]))
            if not quiet_rank:
                say(line % (r["id"], w, rk, r["precision"], r["method"], "peak",
                            int(r["measured_peak_bytes"]), doc["peak_allocated_bytes"], e)
                    + ("  (view=1, not gated)" if int(r["view"]) else ""))

        # --- ZeRO-1 ----------------------------------------------------------
        zrows = [r for r in rows if r["engine"] == "zero1"]
        if zrows:
            say("\nZeRO-1 (DDP + ZeroRedundancyOptimizer, fp32) against llmem --dp W --zero 1,"
                " then reconciled:")
            say("%-4s %2s %-9s %13s %14s %13s %9s %9s %9s %9s %9s %7s" % (
                "id", "rk", "phase", "measured", "llmem zero1", "bucket=P", "held",
                "states", "step", "residual", "", "res%"))
        for r in zrows:
            w = r["world"]
            raw = llmem_doc(command(a.llmem, r, ["--dp", w, "--zero", "1"]), a.timeout)
            doc = llmem_doc(command(a.llmem, r, ["--dp", w, "--zero", "1", "--bucket-elements",
                                                 r["trainable_numel"]]), a.timeout)
            eb = int(r["engine_bytes"])
            for what, other in (("DDP's logged bucket sizes", int(r["ddp_bucket_bytes_logged"])),
                                ("the trainable parameters", int(r["trainable_bytes"]))):
                if eb != other:
                    failures.append("%s rank %s: engine bytes %d != %s %d" % (
                        r["id"], r["rank"], eb, what, other))
            est_raw, est, meas = phases_of(raw), phases_of(doc), measured(r)
            states = int(r["optimizer_state_bytes"]) - component(doc, "optimizer", "states")
            step = int(r["local_step_bucket_bytes"]) - component(doc, "temporary",
                                                                 "optimizer_step")
            for ph in PHASES:
                held = eb if ph in ("forward", "optimizer") else 0
                st = step if ph == "optimizer" else 0
                expect = est[ph] + held + states + st
                res = meas[ph] - expect
                e = pct(expect, meas[ph])
                gated.append((abs(e), "%s rank %s %s (reconciled)" % (r["id"], r["rank"], ph)))
                say("%-4s %2s %-9s %13d %14d %13d %+9d %+9d %+9d %+9d %9s %+7.3f" % (
                    r["id"], r["rank"], ph, meas[ph], est_raw[ph], est[ph], held, states, st,
                    res, "", -e))
        # --- tensor parallelism ---------------------------------------------
        trows = [r for r in rows if r["engine"] == "tp"]
        if trows:
            say("\nTensor parallelism (tp.py, world = tp) against llmem --tp W; "
                "S = one fp32 logits shard, batch x seq x vocab/tp x 4 bytes:")
            say("%-4s %2s %2s %-8s %-9s %13s %13s %9s %11s %7s" % (
                "id", "tp", "rk", "loss", "phase", "measured", "llmem", "err%", "llmem-meas",
                "in S"))
        twins = {}
        for r in trows:
            twins[(config_key(r), r["rank"], r["tp_loss"])] = r
        for r in trows:
            w = r["world"]
            doc = llmem_doc(command(a.llmem, r, ["--tp", w]), a.timeout)
            est, meas = phases_of(doc), measured(r)
            shard = int(r["batch"]) * int(r["seq"]) * -(-int(r["vocab"]) // int(w)) * 4
            for ph in PHASES:
                e = pct(est[ph], meas[ph])
                note = ""
                if r["tp_loss"] == "hf-shard":
                    gated.append((abs(e), "%s rank %s %s" % (r["id"], r["rank"], ph)))
                else:
                    note = "  (not gated: llmem models the HF loss)"
                    twin = twins.get((config_key(r), r["rank"], "hf-shard"))
                    if twin is not None:
                        d = measured(twin)[ph] - meas[ph]
                        note = "  measured hf-shard - megatron %+d (%+.3f S)" % (d, d / shard)
                say("%-4s %2s %2s %-8s %-9s %13d %13d %+9.3f %+11d %+7.3f%s" % (
                    r["id"], w, r["rank"], r["tp_loss"], ph, meas[ph], est[ph], e,
                    est[ph] - meas[ph], (est[ph] - meas[ph]) / shard, note))
    except compare.LlmemError as e:
        print("compare_dist.py: llmem failed: %s" % e, file=sys.stderr)
        return 2

    if gated:
        worst = max(gated)
        print("dist: %d gated rank-phases, max error %.3f%% (%s)" % (len(gated), worst[0],
                                                                    worst[1]))
        if a.max_error is not None and worst[0] > a.max_error:
            failures.append("max error %.3f%% > %.3f%% (%s)" % (worst[0], a.max_error,
                                                                 worst[1]))
    if failures:
        for f in failures:
            print("compare_dist.py: FAIL: %s" % f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
