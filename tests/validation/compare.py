#!/usr/bin/env python3
"""Compare ``llmem estimate`` with the measured grid (stdlib only, no torch).

    python3 tests/validation/compare.py --llmem build/cli/llmem \
        [--csv tests/validation/grid.csv] [--max-median PCT] [--max-error PCT] \
        [--max-phase-error [PHASE=]PCT[,...]] [--no-phase-allowances]

For every CSV row the CLI is run as

    llmem estimate --family F --hidden H --layers L --heads A --kv-heads K
        --head-dim D --intermediate I --vocab V --max-positions P
        --tie-embeddings 0|1 --attn-bias 0|1 --batch B --seq S
        --precision PREC --optimizer OPT --optimizer-impl IMPL
        --grad-ckpt none|reentrant|non-reentrant
        --attention eager|sdpa [--dropout P] --method M
        [--lora-rank R --lora-targets a,b [--lora-dropout P]] [--freeze-layers N]
        [--qk-norm Q --experts E --experts-per-token K --expert-intermediate N
         --shared-expert-intermediate N --shared-expert-gate G]
        [--sliding-window N] --json

(the bracketed architecture flags only for optional CSV columns that are
present and nonzero, as in grid_more.csv and grid_window.csv; every training field is passed
explicitly, so a row means what was measured whatever llmem's defaults are,
but one: a ``dropout`` of ``model`` passes no ``--dropout``, so each dropout
site runs at the model's own probability, llmem's default, as
grid_dropouts.csv measured it; with ``dropout_source`` ``config`` the row's
``attention_dropout``, ``hidden_dropout`` and ``embedding_dropout`` are the
model's, passed as --attention-dropout, --hidden-dropout and
--embedding-dropout; with ``family`` llmem's --family must supply them)

and its JSON ``peak_allocated_bytes`` and ``peak_phase`` are compared with
``measured_peak_bytes`` and ``measured_peak_phase``.  Prints the relative
error |est - measured| / measured per row, then median, p95 and max error
and how many rows agree on the phase (an estimator phase name is folded onto
forward / backward / optimizer, e.g. ``loss-backward`` -> backward; a row
whose phase differs is marked ``*``).  If the JSON also has a ``phases``
object (name -> bytes), the per-phase peaks are compared with the measured
``measured_forward_peak_bytes``, ``measured_backward_peak_bytes`` and
``measured_optimizer_peak_bytes``, with the same folding: ``loss-backward``
and ``backward`` (and any recomputation) against the measured backward phase,
which is the whole ``loss.backward()`` (measure.py); ``forward`` (the loss
included) against the measured forward phase; ``optimizer`` (step and
zero_grad) against the measured optimizer phase.  ``--max-phase-error``
gates each of them per row; without it they are printed for information.
A few rows miss one phase for a documented reason: PHASE_ALLOWANCES below
gives each such row and phase its own limit, just above its current error,
instead of widening the gate for every row (``--no-phase-allowances`` turns
them off).

Exit status: 0 ok; 1 a threshold (--max-median, --max-error,
--max-phase-error, in percent) is exceeded; 2 llmem failed on a row, the
CSV is unusable, or an option is malformed.
"""

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys

REQUIRED = (
    "id", "family", "hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate",
    "vocab", "max_positions", "tie_embeddings", "attn_bias", "batch", "seq", "precision",
    "optimizer", "optimizer_impl", "grad_ckpt", "attention", "dropout", "method", "lora_rank",
    "lora_targets", "freeze_layers", "measured_peak_bytes", "measured_peak_phase",
)


# optional CSV column -> llmem flag (Qwen3 qk-norm, mixture of experts)
# The optimizers torch.optim runs (fused, foreach or a loop): llmem reads
# --optimizer-impl only for them.
TORCH_OPTIMIZERS = ("adamw", "adam", "sgd", "sgd-momentum")

OPTIONAL_FLAGS = (
    ("qk_norm", "--qk-norm"),
    ("experts", "--experts"),
    ("experts_per_token", "--experts-per-token"),
    ("expert_intermediate", "--expert-intermediate"),
    ("shared_expert_intermediate", "--shared-expert-intermediate"),
    ("shared_expert_gate", "--shared-expert-gate"),
    # grid_families.csv: the layouts of OPT, GPT-NeoX, Falcon, Phi, DeepSeek
    ("rotary_dim", "--rotary-dim"),
    ("post_norm", "--post-norm"),
    ("embed_dim", "--embed-dim"),
    ("q_lora_rank", "--q-lora-rank"),
    ("kv_lora_rank", "--kv-lora-rank"),
    ("v_head_dim", "--v-head-dim"),
    ("dense_layers", "--dense-layers"),
    ("router_bias", "--router-bias"),
    # grid_window.csv: config.sliding_window (absent or 0: none)
    ("sliding_window", "--sliding-window"),
)

# columns passed whenever present, zero included (a family's default may be 1)
LAYOUT_FLAGS = (
    ("parallel_block", "--parallel-block"),
    ("norms_per_layer", "--norms-per-layer"),
    ("final_norm", "--final-norm"),
    ("out_bias", "--out-bias"),
    ("mlp_bias", "--mlp-bias"),
)

# a model's own dropout probabilities by kind of site (grid_dropouts.csv)
MODEL_DROPOUT_FLAGS = (
    ("attention_dropout", "--attention-dropout"),
    ("hidden_dropout", "--hidden-dropout"),
    ("embedding_dropout", "--embedding-dropout"),
)

# the harness's hidden_act names -> llmem activation names
ACTIVATIONS = {"silu": "silu", "gelu": "gelu", "gelu_pytorch_tanh": "gelu-tanh",
               "gelu_tanh": "gelu-tanh", "gelu_new": "gelu-new", "gelu_fast": "gelu-fast",
               "relu": "relu"}


# Per-row, per-phase limits (percent) that widen --max-phase-error for one
# (CSV file name, row id, phase): only for a miss documented in
# docs/validation.md (its cause, or what is known of it while it is open),
# each set just above the row's current error so that any further drift
# still fails.  An entry whose row is gone from its CSV is an error (exit 2).
PHASE_ALLOWANCES = {
    # grid_layer_backward.csv's open misses (docs/validation.md, "Peaks inside
    # the layers' backward"): phases no other grid puts inside a layer.
    # Cause not found: StarCoder2's backward, 504 bytes high.
    ("grid_layer_backward.csv", "lb45", "backward"): 0.0015,
}


class LlmemError(Exception):
    pass


def build_command(llmem, row):
    cmd = [llmem, "estimate",
           "--family", row["family"],
           "--hidden", row["hidden"],
           "--layers", row["layers"],
           "--heads", row["heads"],
           "--kv-heads", row["kv_heads"],
           "--head-dim", row["head_dim"],
           "--intermediate", row["intermediate"],
           "--vocab", row["vocab"],
           "--max-positions", row["max_positions"],
           "--tie-embeddings", row["tie_embeddings"],
           "--attn-bias", row["attn_bias"],
           "--batch", row["batch"],
           "--seq", row["seq"],
           "--precision", row["precision"],
           "--optimizer", row["optimizer"],
           "--grad-ckpt", row["grad_ckpt"],
           "--attention", row["attention"],
           "--method", row["method"]]
    # "model": the model's own dropouts, llmem's default (grid_dropouts.csv)
    if row["dropout"].strip() != "model":
        cmd += ["--dropout", row["dropout"]]
    if (row.get("dropout_source") or "").strip() == "config":
        for col, flag in MODEL_DROPOUT_FLAGS:
            cmd += [flag, row[col]]
    # torch.optim's optimizers take an implementation; the harness logs one
    # for every row, the others' included (llmem refuses a flag it ignores).
    if row["optimizer"] in TORCH_OPTIMIZERS:
        cmd += ["--optimizer-impl", row["optimizer_impl"]]
    if row["method"] == "lora":
        cmd += ["--lora-rank", row["lora_rank"], "--lora-targets", row["lora_targets"]]
        dropout = (row.get("lora_dropout") or "").strip()
        if dropout:
            cmd += ["--lora-dropout", dropout]
    if row["method"] == "freeze":
        cmd += ["--freeze-layers", row["freeze_layers"]]
    # optional architecture columns (grid_more.csv): passed only when the
    # column exists and is nonzero, so rows without them run as before
    for col, flag in OPTIONAL_FLAGS:
        v = (row.get(col) or "").strip()
        if v and v not in ("0", "0.0"):
            cmd += [flag, v]
    for col, flag in LAYOUT_FLAGS:
        v = (row.get(col) or "").strip()
        if v:
            cmd += [flag, v]
    # how the routed experts run: the harness's experts_impl column, else its
    # transformers 4.x per-expert loop (4.54's code for DeepSeek)
    if (row.get("experts") or "0").strip() not in ("", "0"):
        cmd += ["--experts-impl", (row.get("experts_impl") or "").strip() or "loop"]
    pos = (row.get("positions") or "").strip()
    if pos and pos != "0":
        cmd += ["--positions", pos]
    act = (row.get("activation") or "").strip()
    if act:
        cmd += ["--activation", ACTIVATIONS.get(act, act)]
    cmd.append("--json")
    return cmd


def run_llmem(cmd, timeout, want_doc=False):
    """The allocated peak, its phase and the per-phase peaks of one llmem run
    (and its whole JSON document when want_doc)."""
    where = " ".join(cmd)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
    except FileNotFoundError:
        raise LlmemError("cannot run %s: no such file" % cmd[0])
    except PermissionError:
        raise LlmemError("cannot run %s: not executable" % cmd[0])
    except subprocess.TimeoutExpired:
        raise LlmemError("timed out after %g s: %s" % (timeout, where))
    if p.returncode != 0:
        raise LlmemError("exit status %d from: %s\nstderr: %s" % (
            p.returncode, where, p.stderr.strip()[-2000:]))
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        raise LlmemError("output is not JSON (%s) from: %s\nstdout: %s" % (
            e, where, p.stdout.strip()[:2000]))
    if not isinstance(doc, dict):
        raise LlmemError("JSON output is not an object, from: %s" % where)
    try:
        peak = doc["peak_allocated_bytes"]
    except KeyError:
        raise LlmemError("JSON has no 'peak_allocated_bytes' key, from: %s" % where)
    if isinstance(peak, bool) or not isinstance(peak, (int, float)) or not math.isfinite(peak) \
            or peak < 0:
        raise LlmemError("'peak_allocated_bytes' is not a non-negative number (%r), from: %s"
                         % (peak, where))
    phase = doc.get("peak_phase")
    if phase is not None and not isinstance(phase, str):
        raise LlmemError("'peak_phase' is not a string (%r), from: %s" % (phase, where))
    # optional: per-phase peaks, folded onto the three measured phases
    phases = {}
    if isinstance(doc.get("phases"), dict):
        for k, v in doc["phases"].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                c = coarse_phase(k)
                if c in COARSE:
                    phases[c] = max(phases.get(c, 0.0), float(v))
    if want_doc:
        return float(peak), phase, phases, doc
    return float(peak), phase, phases


COARSE = ("forward", "backward", "optimizer")


def coarse_phase(name):
    """Map an estimator phase name to forward / backward / optimizer.

    The grid names three phases; an estimator may report finer ones (e.g.
    ``loss-backward``, ``recompute``, ``optimizer-step``).  Anything naming
    backward or recomputation is ``backward``; the optimizer step or
    zero_grad is ``optimizer``; forward or loss (not backward) is ``forward``.
    """
    n = (name or "").strip().lower()
    if n in COARSE:
        return n
    if "backward" in n or "recompute" in n or n.startswith("bwd"):
        return "backward"
    if "optim" in n or "step" in n or "zero_grad" in n:
        return "optimizer"
    if "forward" in n or "loss" in n or n.startswith("fwd"):
        return "forward"
    return n


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(1, int(math.ceil(q / 100.0 * len(s))))
    return s[k - 1]


def load_rows(path, only):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError("%s lacks column(s): %s" % (path, ", ".join(missing)))
        rows = [r for r in reader if not only or r["id"] in only]
    if not rows:
        raise ValueError("%s has no rows%s" % (path, " matching --only" if only else ""))
    for r in rows:
        try:
            if int(r["measured_peak_bytes"]) <= 0:
                raise ValueError
        except ValueError:
            raise ValueError("row %s: bad measured_peak_bytes %r" % (
                r["id"], r["measured_peak_bytes"]))
    return rows


def parse_phase_limits(specs):
    """--max-phase-error values -> {phase: percent}.  Each value is a
    comma-separated list of ``PCT`` (every phase) or ``PHASE=PCT`` (one of
    forward, backward, optimizer); later items override earlier ones."""
    limits = {}
    for spec in specs:
        for item in spec.split(","):
            item = item.strip()
            name, sep, val = item.rpartition("=")
            name = name.strip().lower()
            if sep and name not in COARSE:
                raise ValueError("--max-phase-error: unknown phase %r in %r (expected %s)"
                                 % (name, item, ", ".join(COARSE)))
            try:
                pct = float(val)
            except ValueError:
                pct = float("nan")
            if not math.isfinite(pct) or pct < 0:
                raise ValueError("--max-phase-error: %r is not a non-negative percentage"
                                 % item)
            for ph in ((name,) if sep else COARSE):
                limits[ph] = pct
    return limits


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Compare llmem estimates with the measured grid.")
    ap.add_argument("--llmem", required=True, help="path of the llmem CLI")
    ap.add_argument("--csv", default=os.path.join(here, "grid.csv"), help="measured grid")
    ap.add_argument("--max-median", type=float, default=None, metavar="PCT",
                    help="fail (exit 1) if the median relative error exceeds PCT percent")
    ap.add_argument("--max-error", type=float, default=None, metavar="PCT",
                    help="fail (exit 1) if any row's relative error exceeds PCT percent")
    ap.add_argument("--max-phase-error", action="append", default=[],
                    metavar="[PHASE=]PCT[,...]",
                    help="fail (exit 1) if any row's forward, backward or optimizer phase "
                         "peak is off by more than PCT percent (PHASE=PCT for one phase; "
                         "repeatable); rows in PHASE_ALLOWANCES use their own limit")
    ap.add_argument("--no-phase-allowances", action="store_true",
                    help="apply --max-phase-error to every row, PHASE_ALLOWANCES included")
    ap.add_argument("--only", action="append", default=[],
                    help="row id(s), comma-separated; repeatable")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per llmem call")
    ap.add_argument("--quiet", action="store_true", help="print the summary only")
    a = ap.parse_args(argv)

    only = {x for v in a.only for x in v.split(",") if x}
    try:
        phase_limits = parse_phase_limits(a.max_phase_error)
        rows = load_rows(a.csv, only)
    except (OSError, ValueError) as e:
        print("compare.py: %s" % e, file=sys.stderr)
        return 2

    csv_name = os.path.basename(a.csv)
    allowances = {} if a.no_phase_allowances else {
        (rid, ph): pct for (f, rid, ph), pct in PHASE_ALLOWANCES.items() if f == csv_name}
    errors = []
    phase_errors = {}
    phase_failed = []   # (row, phase, measured, estimated, error %, limit %)
    allowance_used = []
    agree = 0
    with_phase = 0
    worst = None
    if not a.quiet:
        print("%-5s %-6s %-11s %-6s %-5s %-12s %14s %14s %8s  %-9s %-9s" % (
            "id", "family", "precision", "method", "ckpt", "optimizer", "measured",
            "estimated", "err%", "phase", "est.phase"))
    for r in rows:
        try:
            est, est_phase, est_phases = run_llmem(build_command(a.llmem, r), a.timeout)
        except LlmemError as e:
            print("compare.py: llmem failed on row %s: %s" % (r["id"], e), file=sys.stderr)
            return 2
        meas = int(r["measured_peak_bytes"])
        err = abs(est - meas) / meas * 100.0
        errors.append(err)
        if worst is None or err > worst[1]:
            worst = (r["id"], err)
        mp = r["measured_peak_phase"].strip().lower()
        ep = (est_phase or "").strip().lower()
        if est_phase is not None:
            with_phase += 1
        same = coarse_phase(ep) == mp
        for ph in COARSE:
            col = "measured_%s_peak_bytes" % ph
            if ph in est_phases and r.get(col, "").strip():
                try:
                    m = int(r[col])
                except ValueError:
                    print("compare.py: row %s: bad %s %r" % (r["id"], col, r[col]),
                          file=sys.stderr)
                    return 2
                if m > 0:
                    perr = abs(est_phases[ph] - m) / m * 100.0
                    phase_errors.setdefault(ph, []).append((perr, r["id"]))
                    limit = phase_limits.get(ph)
                    if (r["id"], ph) in allowances and limit is not None:
                        # widens the gate for this row and phase, never narrows it
                        limit = max(limit, allowances[(r["id"], ph)])
                        allowance_used.append((r["id"], ph, perr, limit, phase_limits[ph]))
                    if limit is not None and perr > limit:
                        phase_failed.append((r["id"], ph, m, est_phases[ph], perr, limit))
        agree += same
        if not a.quiet:
            print("%-5s %-6s %-11s %-6s %-5s %-12s %14d %14.0f %8.2f  %-9s %-9s%s" % (
                r["id"], r["family"], r["precision"], r["method"], r["grad_ckpt"],
                r["optimizer"], meas, est, err, mp, ep or "-", "" if same else "  *"))

    med = statistics.median(errors)
    p95 = percentile(errors, 95)
    mx = max(errors)
    print("rows %d: median error %.2f%%, p95 %.2f%%, max %.2f%% (row %s); "
          "phase agrees on %d/%d rows%s" % (
              len(errors), med, p95, mx, worst[0], agree, len(rows),
              "" if with_phase == len(rows) else " (%d rows without peak_phase)"
              % (len(rows) - with_phase)))
    if phase_errors:
        print("per-phase peaks (%s, from the JSON 'phases'): " % (
            "gated" if phase_limits else "informational") + "; ".join(
            "%s median %.4f%% max %.4f%% (row %s)" % (
                ph, statistics.median(e for e, _ in phase_errors[ph]),
                max(phase_errors[ph])[0], max(phase_errors[ph])[1])
            for ph in COARSE if ph in phase_errors))
    for rid, ph, perr, limit, gate in allowance_used:
        note = "" if perr > gate else "; now within the gate, remove the allowance"
        print("phase allowance: row %s %s error %.4f%% (allowed %.4f%%, gate %.4f%%)%s" % (
            rid, ph, perr, limit, gate, note))
    if phase_limits and not only:
        seen = {(rid, ph) for rid, ph, _, _, _ in allowance_used}
        stale = sorted(k for k in allowances if k[1] in phase_limits and k not in seen)
        if stale:
            print("compare.py: PHASE_ALLOWANCES names row/phase(s) that %s does not gate: %s"
                  % (csv_name, ", ".join("%s %s" % k for k in stale)), file=sys.stderr)
            return 2
    gated = sum(1 for ph in phase_limits for _ in phase_errors.get(ph, ()))
    if phase_limits and not gated:
        # a gate that compared nothing must not pass silently
        print("compare.py: --max-phase-error given but no row has both a measured "
              "phase peak (measured_<phase>_peak_bytes) and the JSON phase for %s"
              % ", ".join(sorted(phase_limits)), file=sys.stderr)
        return 2
    failed = []
    if a.max_median is not None and med > a.max_median:
        failed.append("median %.2f%% > %.2f%%" % (med, a.max_median))
    if a.max_error is not None and mx > a.max_error:
        failed.append("max %.2f%% > %.2f%% (row %s)" % (mx, a.max_error, worst[0]))
    for rid, ph, m, e, perr, limit in phase_failed:
        print("compare.py: phase FAIL: row %s %s: measured %d, estimated %.0f, "
              "error %.4f%% > %.4f%%" % (rid, ph, m, e, perr, limit), file=sys.stderr)
    if phase_failed:
        failed.append("%d row phase(s) over --max-phase-error" % len(phase_failed))
    if failed:
        print("compare.py: FAIL: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
