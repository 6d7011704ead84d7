"""Measure the exact live-tensor peak of one training step.

One warm-up step (untracked) creates the optimizer states; then one step --
forward (incl. loss), backward, optimizer.step(), zero_grad(set_to_none=True)
-- is run under ``LiveTracker``.  Reported: overall peak and its phase, the
peak of each phase, baseline bytes at step start (parameters + buffers +
optimizer states + batch), gradient bytes, live bytes at quiet points.

Library use: ``measure(RunConfig(...))``.  CLI::

    /usr/bin/python3 tests/validation/measure.py --family llama --hidden 256 \
        --layers 2 --heads 4 --kv-heads 2 --intermediate 688 --vocab 32000 \
        --batch 2 --seq 256 --precision bf16-mixed --optimizer adamw [--json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
import time
from typing import Optional

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models as M  # noqa: E402
from live_tracker import LiveTracker, autograd_saved_storages, gc_disabled  # noqa: E402
from optimizers import make_optimizer  # noqa: E402


@dataclasses.dataclass
class RunConfig:
    family: str = "llama"
    hidden: int = 256
    layers: int = 2
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 0            # 0: hidden // heads
    intermediate: int = 0        # 0: gpt2 4*hidden, llama ~2.7*hidden
    vocab: int = 32000
    max_positions: int = 1024
    tie_embeddings: int = -1     # -1: family default (gpt2 1, llama 0)
    attn_bias: int = -1          # -1: family default (gpt2 1, llama 0)
    batch: int = 1
    seq: int = 128
    precision: str = "fp32"
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"  # foreach | fused | forloop (optimizers.py)
    grad_ckpt: str = "none"          # none | reentrant | non-reentrant
    attention: str = "eager"         # eager | sdpa (sdpa.py)
    dropout: float = 0.0
    # the model config's own probabilities by kind of site (models.ArchConfig);
    # None: dropout
    attention_dropout: Optional[float] = None
    hidden_dropout: Optional[float] = None
    embedding_dropout: Optional[float] = None
    method: str = "full"
    lora_rank: int = 0
    lora_targets: str = ""
    lora_dropout: float = 0.0
    freeze_layers: int = 0
    seed: int = 0
    device: str = "cpu"

    def normalized(self):
        c = dataclasses.replace(self)
        if c.head_dim <= 0:
            c.head_dim = c.hidden // c.heads
        if c.family == "gpt2":
            c.kv_heads = c.heads
            c.head_dim = c.hidden // c.heads
            if c.intermediate <= 0:
                c.intermediate = 4 * c.hidden
            if c.tie_embeddings < 0:
                c.tie_embeddings = 1
            c.attn_bias = 1
        else:
            if c.intermediate <= 0:
                c.intermediate = int(round(2.6875 * c.hidden))
            if c.tie_embeddings < 0:
                c.tie_embeddings = 0
            if c.attn_bias < 0:
                c.attn_bias = 0
        if c.method == "lora":
            if c.lora_rank <= 0:
                c.lora_rank = 8
            if not c.lora_targets:
                c.lora_targets = ",".join(M.GPT2_LORA_TARGETS if c.family == "gpt2"
                                          else M.LLAMA_LORA_TARGETS)
        else:
            c.lora_rank = 0
            c.lora_targets = ""
            c.lora_dropout = 0.0
        if c.method != "freeze":
            c.freeze_layers = 0
        if c.attention not in ("eager", "sdpa"):
            raise ValueError("attention must be eager or sdpa (flash-attn is not measured)")
        if c.grad_ckpt not in ("none", "reentrant", "non-reentrant"):
            raise ValueError("grad_ckpt must be none, reentrant or non-reentrant")
        return c

    def arch(self):
        return M.ArchConfig(
            family=self.family, hidden=self.hidden, layers=self.layers, heads=self.heads,
            kv_heads=self.kv_heads, head_dim=self.head_dim, intermediate=self.intermediate,
            vocab=self.vocab, max_positions=self.max_positions,
            tie_embeddings=bool(self.tie_embeddings), attn_bias=bool(self.attn_bias),
            dropout=self.dropout, eps=1e-5 if self.family == "gpt2" else 1e-6,
            attention=self.attention, attention_dropout=self.attention_dropout,
            hidden_dropout=self.hidden_dropout, embedding_dropout=self.embedding_dropout)


# ---------------------------------------------------------------------------

def trainer_param_groups(model):
    """HF Trainer.create_optimizer: decay group (everything but biases and
    LayerNorm/RMSNorm weights) and no-decay group, trainable params only."""
    norm_types = (M.LayerNorm, M.LlamaRMSNorm)
    no_decay = set()
    for mname, mod in model.named_modules():
        for pname, p in mod.named_parameters(recurse=False):
            full = (mname + "." if mname else "") + pname
            if isinstance(mod, norm_types) or "bias" in pname:
                no_decay.add(full)
    decay, nodecay = [], []
    for n, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (nodecay if n in no_decay else decay).append(p)
    groups = [{"params": decay}, {"params": nodecay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def make_batch(rc, device):
    g = torch.Generator().manual_seed(rc.seed + 1)
    input_ids = torch.randint(0, rc.vocab, (rc.batch, rc.seq), generator=g, dtype=torch.int64)
    batch = {
        "input_ids": input_ids,
        "attention_mask": torch.ones(rc.batch, rc.seq, dtype=torch.int64),
        "labels": input_ids.clone(),
    }
    return {k: v.to(device) for k, v in batch.items()}


def build(rc):
    """Model (with method, precision, checkpointing), optimizer, batch."""
    model = M.build_model(rc.arch(), seed=rc.seed)
    M.set_precision(model, rc.precision)
    lora_names = []
    if rc.method == "lora":
        lora_names = M.apply_lora(model, rc.lora_rank, tuple(rc.lora_targets.split(",")),
                                  lora_dropout=rc.lora_dropout)
    elif rc.method == "freeze":
        M.apply_freeze(model, rc.freeze_layers)
    elif rc.method != "full":
        raise ValueError("unknown method %r" % rc.method)
    if rc.device != "cpu":
        model.to(rc.device)
    if rc.grad_ckpt != "none":
        M.enable_gradient_checkpointing(model, rc.grad_ckpt)
    model.train()
    opt = make_optimizer(rc.optimizer, rc.optimizer_impl, trainer_param_groups(model))
    batch = make_batch(rc, rc.device)
    return model, opt, batch, lora_names


def train_step(model, opt, batch, tr=None, checks=None):
    """One HF-Trainer-like step.  ``tr``: LiveTracker (phases/quiet points).
    ``checks``: dict filled with the autograd-saved storages after forward."""
    def phase(n):
        if tr is not None:
            tr.set_phase(n)

    def quiet(n):
        if tr is not None:
            tr.quiet(n)

    phase("forward")
    out = M.forward_like_trainer(model, batch)
    loss = out["loss"]
    del out  # Trainer.compute_loss keeps only the loss
    quiet("after_forward")
    if checks is not None:
        checks["saved"] = autograd_saved_storages([loss.grad_fn])
        checks["loss_key"] = loss._storage()._cdata
        checks["loss_bytes"] = loss._storage().nbytes()
        if tr is not None:
            tr.poll()
            checks["tracked"] = {k: e.nbytes for k, e in tr.entries.items()}
        else:
            checks["tracked"] = {}
    phase("backward")
    loss.backward()
    del loss
    quiet("after_backward")
    phase("optimizer")
    opt.step()
    quiet("after_step")
    opt.zero_grad(set_to_none=True)
    quiet("after_zero_grad")


def _baseline_tensors(model, opt, batch):
    yield "param", list(model.parameters())
    yield "buffer", list(model.buffers())
    yield "grad", [p.grad for p in model.parameters() if p.grad is not None]
    yield "optimizer_state", opt.state_tensors()
    yield "batch", list(batch.values())


def _install_tag_hooks(model, tr):
    stack = []
    handles = []
    for name, mod in model.named_modules():
        def pre(m, inp, _n=name):
            stack.append(tr.tag)
            tr.tag = _n or "<model>"

        def post(m, inp, out):
            tr.tag = stack.pop() if stack else ""
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post))
    return handles


def measure(rc, snapshot=False, cross_checks=False, timeline=False):
    """Measure one configuration; returns a dict (see module docstring)."""
    rc = rc.normalized()
    t0 = time.time()
    torch.manual_seed(rc.seed)
    model, opt, batch, lora_names = build(rc)
    # Warm-up step so that the optimizer states exist.  It runs on a short
    # batch (states depend on the parameters only) to halve the CPU time.
    # Mixture-of-experts rows warm up on the whole batch: AdamW creates an
    # expert's states only once it has had a gradient, and 16 tokens leave
    # some experts without any (in training, every expert has states).
    wb = {k: v[:1, :min(rc.seq, 16)].contiguous() for k, v in batch.items()}
    if getattr(rc, "experts", 0) > 0:
        wb = batch
    train_step(model, opt, wb)
    del wb
    torch.manual_seed(rc.seed + 7)
    t1 = time.time()
    tr = LiveTracker(cuda_faithful=True, snapshot_at_peak=snapshot, record_timeline=timeline)
    by_cat = {}
    for cat, ts in _baseline_tensors(model, opt, batch):
        by_cat[cat] = tr.track_existing(ts, cat)
    handles = _install_tag_hooks(model, tr) if snapshot else []
    checks = {} if cross_checks else None
    with gc_disabled():
        baseline = tr.quiet("start")
        with tr:
            train_step(model, opt, batch, tr, checks)
    for h in handles:
        h.remove()
    rep = tr.report()
    q = rep["quiet_bytes"]
    grads = q["after_backward"] - baseline
    res = {
        "config": dataclasses.asdict(rc),
        "measured_peak_bytes": rep["peak_bytes"],
        "measured_peak_phase": rep["peak_phase"],
        "measured_forward_peak_bytes": rep["phase_peak_bytes"].get("forward", 0),
        "measured_backward_peak_bytes": rep["phase_peak_bytes"].get("backward", 0),
        "measured_optimizer_peak_bytes": rep["phase_peak_bytes"].get("optimizer", 0),
        "baseline_bytes": baseline,
        "baseline_by_category": by_cat,
        "grads_bytes": grads,
        "peak_op": rep["peak_op"],
        "phase_peak_op": rep["phase_peak_op"],
        "peak_bytes_rounded512": rep["peak_bytes_rounded512"],
        "phase_peak_bytes_rounded512": rep["phase_peak_bytes_rounded512"],
        "quiet_bytes": q,
        "ops": rep["ops"],
        "inplace_accumulations": rep["inplace_accumulations"],
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "total_params": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
        "lora_modules": len(lora_names),
        "autocast_cache_hits": model.amp.cache_hits,
        "seconds_warmup": round(t1 - t0, 2),
        "seconds_measured": round(time.time() - t1, 2),
    }
    if cross_checks:
        base_keys = set()
        for _, ts in _baseline_tensors(model, opt, batch):
            for t in ts:
                base_keys.add(t._storage()._cdata)
        saved = {k: v for k, v in checks["saved"].items()
                 if k not in base_keys and k != checks["loss_key"]}
        tracked = checks["tracked"]
        saved = {k: v for k, v in checks["saved"].items()
                 if k not in base_keys and k != checks["loss_key"]}
        # Saved tensors the tracker never saw as op outputs: Python scalars
        # wrapped as 0-dim CPU tensors and the CPU RNG state stashed by
        # torch.utils.checkpoint -- host memory on a GPU.
        host = {k: v for k, v in saved.items() if k not in tracked}
        res["check_saved_host"] = [(v[0], v[1], str(v[2])) for v in host.values()]
        # Bytes as the tracker counts them (CUDA-faithful sizes).
        res["check_saved_bytes"] = sum(tracked[k] for k in saved if k in tracked)
        res["check_loss_bytes"] = tracked.get(checks["loss_key"], checks["loss_bytes"])
    if snapshot:
        res["peak_snapshot"] = tr.peak_snapshot
        res["phase_snapshots"] = tr.phase_snapshot
    if timeline:
        res["timeline"] = tr.timeline
    tr.close()
    return res


# ---------------------------------------------------------------------------
# Breakdown of what is live at the peak
# ---------------------------------------------------------------------------

def _norm_tag(tag):
    parts = tag.split(".")
    out = []
    for p in parts:
        out.append("N" if p.isdigit() else p)
    return ".".join(out)


def breakdown(res, phase=None):
    """Text table of what is live at the overall peak (or at the peak of
    ``phase``), grouped by (phase created, module, op, shape, dtype)."""
    if phase is None:
        snap = res.get("peak_snapshot") or []
        title = "overall peak (%s phase, op %s)" % (res["measured_peak_phase"], res["peak_op"])
    else:
        snap = res.get("phase_snapshots", {}).get(phase) or []
        title = "%s-phase peak (op %s)" % (phase, res["phase_peak_op"].get(phase, ("?",))[0])
    lines = []
    tot = sum(d["bytes"] for d in snap)
    lines.append("live at %s: %d bytes" % (title, tot))
    cat = collections.Counter()
    for d in snap:
        c = d["category"]
        if c == "op":
            c = "created in %s" % d["phase"]
        cat[c] += d["bytes"]
    for c, b in sorted(cat.items(), key=lambda x: -x[1]):
        lines.append("  %-40s %14d" % (c, b))
    groups = collections.OrderedDict()
    for d in sorted(snap, key=lambda d: d["seq"]):
        if d["category"] != "op":
            continue
        key = (d["phase"], _norm_tag(d["tag"]), d["op"], d["shape"], d["dtype"])
        g = groups.setdefault(key, {"bytes": 0, "count": 0})
        g["bytes"] += d["bytes"]
        g["count"] += 1
    lines.append("  %-8s %-30s %-28s %-20s %-8s %5s %11s" % (
        "created", "module (N = every layer)", "op", "shape", "dtype", "count", "bytes"))
    for key, g in groups.items():
        ph, tag, op, shape, dt = key
        lines.append("  %-8s %-30s %-28s %-20s %-8s %5d %11d" % (
            ph, tag[-30:], op.replace(".default", "")[:28], str(list(shape)).replace(" ", "")[:20],
            dt, g["count"], g["bytes"]))
    return "\n".join(lines)


# ---------------------------------------------------------------------------

def _parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rc = RunConfig()
    for f in dataclasses.fields(RunConfig):
        flag = "--" + f.name.replace("_", "-")
        ap.add_argument(flag, type=type(getattr(rc, f.name)), default=getattr(rc, f.name))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--breakdown", action="store_true",
                    help="print what is live at the peak")
    ap.add_argument("--checks", action="store_true", help="run the cross-checks")
    a = ap.parse_args(argv)
    kw = {f.name: getattr(a, f.name) for f in dataclasses.fields(RunConfig)}
    return RunConfig(**kw), a


def main(argv=None):
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    rc, a = _parse(argv)
    res = measure(rc, snapshot=a.breakdown, cross_checks=a.checks)
    if a.json:
        out = {k: v for k, v in res.items() if k not in ("peak_snapshot", "phase_snapshots")}
        print(json.dumps(out, indent=1, default=str))
    else:
        for k in ("measured_peak_bytes", "measured_peak_phase", "measured_forward_peak_bytes",
                  "measured_backward_peak_bytes", "measured_optimizer_peak_bytes",
                  "baseline_bytes", "baseline_by_category", "grads_bytes", "peak_op",
                  "phase_peak_op", "quiet_bytes", "peak_bytes_rounded512",
                  "trainable_params", "total_params", "seconds_warmup", "seconds_measured"):
            print("%-32s %s" % (k, res[k]))
        if a.checks:
            q = res["quiet_bytes"]
            print("check after_forward: live %d  baseline+saved+loss %d" % (
                q["after_forward"],
                res["baseline_bytes"] + res["check_saved_bytes"] + res["check_loss_bytes"]))
            print("saved, host-side (not counted):", res["check_saved_host"])
            print("check after_step: live %d  baseline+grads %d" % (
                q["after_step"], res["baseline_bytes"] + res["grads_bytes"]))
    if a.breakdown:
        print(breakdown(res))
        for ph in ("forward", "backward", "optimizer"):
            if ph != res["measured_peak_phase"]:
                print(breakdown(res, ph))
    return 0


if __name__ == "__main__":
    sys.exit(main())
