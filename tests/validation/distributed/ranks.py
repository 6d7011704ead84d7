"""Per-rank live-tensor peaks of one data-parallel training step.

torch.distributed's gloo backend on the CPU (torch 1.13), N processes on
127.0.0.1, each rank running the validation models (../models.py) with the
tracker of ../live_tracker.py.  Engines:

``ddp``    torch.nn.parallel.DistributedDataParallel with its defaults
           (bucket_cap_mb=25, broadcast_buffers=True,
           find_unused_parameters=False); ``view=1`` sets
           gradient_as_bucket_view=True.
``zero1``  DDP as above plus torch.distributed.optim.ZeroRedundancyOptimizer
           (optimizer states of each parameter on one rank; parameters and
           gradients whole), its local optimizer the harness's AdamW (the
           torch 2.x foreach code path, ../optimizers.py).
``fsdp``   torch.distributed.fsdp.FullyShardedDataParallel (FSDP1 in 1.13):
           only tried; the wrap fails on a CPU-only build (see README.md) and
           the error is returned.
``tp``     a Megatron-style tensor-parallel Llama (tp.py); world = tp, no
           data parallelism.

What DDP allocates inside its C++ Reducer is counted as follows.  A
"background" LiveTracker is active from before the wrap through the warm-up
steps (two: the Reducer builds one bucket at construction when
find_unused_parameters=False and rebuilds its buckets, in gradient-ready
order, in the second iteration's forward).  Every storage it saw created that
is still alive after the warm-up and is neither a parameter, a buffer, a
batch tensor nor an optimizer state was made by the engine (the Reducer's
gradient buckets, its small bookkeeping tensors); those are registered as
category ``engine`` of the measured step's baseline, beside the parameters,
buffers, optimizer states and batch.  Cross-check: the float bytes among them
equal the bucket sizes DDP logs (``_get_ddp_logging_data()``,
``rebuilt_bucket_sizes``) and the trainable parameters' bytes.

One measured step as in ../measure.py: forward (incl. loss, logits dropped),
backward, optimizer.step(), zero_grad(set_to_none=True).

    /usr/bin/python3 tests/validation/distributed/ranks.py --engine ddp --world 2 \
        --family llama --hidden 128 --layers 2 --heads 4 --kv-heads 4 --vocab 32000 \
        --batch 1 --seq 128 --precision fp32
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import socket
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import measure as ms  # noqa: E402
from live_tracker import LiveTracker, gc_disabled  # noqa: E402
from optimizers import OPTIMIZERS  # noqa: E402

WARMUP_STEPS = 2
ENGINES = ("ddp", "zero1", "fsdp", "tp")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

class _Trainable:
    """What measure.train_step / models.forward_like_trainer call: the
    wrapped module's __call__ with the inner model's autocast emulation."""

    def __init__(self, wrapped, inner):
        self.wrapped = wrapped
        self.amp = inner.amp

    def __call__(self, **kw):
        return self.wrapped(**kw)


class RankTracker(LiveTracker):
    """LiveTracker that leaves out ``torch.autograd.profiler.record_function``
    handles.  In torch 1.13 a record_function holds a placeholder
    ``torch.zeros(1)`` (made in ``__init__``) and then the tensor returned
    by ``torch.ops.profiler._record_function_enter`` (288 bytes here); both
    are CPU tensors whatever the model's device, i.e. host memory on a GPU
    run (torch 2.x holds a ScriptObject instead).  DDP's forward and
    torch.optim.Optimizer's step (ZeroRedundancyOptimizer is one) run inside
    one.  Use with ``host_side_record_function(tracker)``."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.host_depth = 0
        self.host_skipped = 0

    def _add(self, t, op, category, nbytes=None):
        if self.host_depth:
            self.host_skipped += 1
            return False
        return super()._add(t, op, category, nbytes)


@contextlib.contextmanager
def host_side_record_function(trackers):
    rf = torch.autograd.profiler.record_function
    init, enter = rf.__init__, rf.__enter__

    def wrap(fn):
        def call(*a, **kw):
            for t in trackers:
                t.host_depth += 1
            try:
                return fn(*a, **kw)
            finally:
                for t in trackers:
                    t.host_depth -= 1
        return call
    rf.__init__, rf.__enter__ = wrap(init), wrap(enter)
    try:
        yield
    finally:
        rf.__init__, rf.__enter__ = init, enter


def _key(t):
    return t._storage()._cdata


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fsdp_import_shim():
    """Make ``torch.distributed.fsdp`` importable on Python 3.11 with torch 1.13.

    1.13's ``ShardedTensorMetadata`` declares ``tensor_properties:
    TensorProperties = field(default=TensorProperties())``; Python 3.11's
    dataclasses reject an unhashable default (``ValueError: mutable default
    ... use default_factory``), so the FSDP package cannot even be imported.
    PyTorch fixed it with ``field(default_factory=TensorProperties)``
    (pytorch/pytorch#91795, in 2.0); this import hook applies that one
    change to the module's source when it is loaded.  Nothing else changes.
    """
    import importlib.abc
    import importlib.machinery

    name = "torch.distributed._shard.sharded_tensor.metadata"
    old, new = "field(default=TensorProperties())", "field(default_factory=TensorProperties)"
    if name in sys.modules or sys.version_info < (3, 11):
        return

    class Loader(importlib.machinery.SourceFileLoader):
        def get_code(self, fullname):
            path = self.get_filename(fullname)
            src = self.get_data(path).decode("utf-8")
            if src.count(old) == 1:
                src = src.replace(old, new)
            return compile(src, path, "exec", dont_inherit=True)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None:
                spec.loader = Loader(fullname, spec.origin)
            return spec

    if not any(type(f).__name__ == "Finder" and getattr(f, "_llmem", False)
               for f in sys.meta_path):
        f = Finder()
        f._llmem = True
        sys.meta_path.insert(0, f)


def _largest_foreach_bucket(groups):
    """Elements of the largest (param group, dtype) bucket of trainable
    parameters: what the foreach AdamW's ``_foreach_sqrt`` allocates at once
    (optimizers.AdamW)."""
    best = 0
    for g in groups:
        by = {}
        for p in g["params"]:
            if p.requires_grad:
                by[p.dtype] = by.get(p.dtype, 0) + p.numel() * p.element_size()
        if by:
            best = max(best, max(by.values()))
    return best


def _ddp_bucket_sizes(wrapped):
    """Bucket sizes in bytes as DDP's logger reports them (after a rebuild,
    the rebuilt ones)."""
    ld = wrapped._get_ddp_logging_data()
    raw = ld.get("rebuilt_bucket_sizes") or ld.get("bucket_sizes") or ""
    sizes = [int(x) for x in str(raw).replace(" ", "").split(",") if x]
    return sizes, int(ld.get("has_rebuilt_buckets", 0))


# ---------------------------------------------------------------------------
# one rank
# ---------------------------------------------------------------------------

def _wrap(engine, rc, model, built_opt, opts, rank, world):
    """Returns (trainable, optimizer, wrapped module, extra info)."""
    info = {}
    if engine in ("ddp", "zero1"):
        from torch.nn.parallel import DistributedDataParallel as DDP
        # gloo cannot broadcast bool tensors ("Invalid scalar type"), and DDP
        # broadcasts the buffers at construction and before every forward
        # (broadcast_buffers=True); GPT-2's causal masks are bool buffers,
        # identical on every rank, so they are left out of the broadcasts
        # (DDP's documented ignore list).  See README.md for what that changes.
        ignore = [n for n, b in model.named_buffers() if b.dtype == torch.bool]
        if ignore:
            DDP._set_params_and_buffers_to_ignore_for_model(model, ignore)
        info["ddp_ignored_bool_buffer_bytes"] = sum(
            b.numel() for n, b in model.named_buffers() if n in ignore)
        wrapped = DDP(model, bucket_cap_mb=25,
                      gradient_as_bucket_view=bool(opts.get("view", 0)))
        if engine == "ddp":
            opt = built_opt
        else:
            from torch.distributed.optim import ZeroRedundancyOptimizer
            make = OPTIMIZERS[rc.optimizer]
            opt = ZeroRedundancyOptimizer(
                ms.trainer_param_groups(model),
                optimizer_class=lambda groups, **kw: make(groups))
            local = [p for g in opt.optim.param_groups for p in g["params"]]
            info["local_trainable_numel"] = sum(p.numel() for p in local)
            info["local_trainable_bytes"] = sum(p.numel() * p.element_size() for p in local)
            info["local_step_bucket_bytes"] = _largest_foreach_bucket(opt.optim.param_groups)
        return _Trainable(wrapped, model), opt, wrapped, info
    if engine == "fsdp":
        fsdp_import_shim()
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        wrapped = FSDP(model)  # raises on a CPU-only build of 1.13
        return _Trainable(wrapped, model), built_opt, wrapped, info
    if engine == "tp":
        return model, built_opt, model, {}
    raise ValueError("unknown engine %r" % engine)


def _state_tensors(opt):
    inner = getattr(opt, "optim", opt)  # ZeroRedundancyOptimizer: the local one
    return inner.state_tensors()


def run_rank(rank, world, job):
    """Build, wrap, warm up and measure one step on this rank."""
    t0 = time.time()
    engine = job["engine"]
    opts = job.get("opts", {})
    rc = ms.RunConfig(**job["config"]).normalized()
    torch.manual_seed(rc.seed)
    if engine == "tp":
        import tp  # the ranks of one tensor-parallel group see the same batch
        model, built_opt, batch, tp_info = tp.build_rank(rc, rank, world, opts)
    else:
        model, built_opt, batch, _ = ms.build(rc)
        # each data-parallel rank its own micro-batch (same shapes)
        batch = ms.make_batch(dataclasses.replace(rc, seed=rc.seed + 1000 * (rank + 1)),
                              rc.device)
    params = list({id(p): p for p in model.parameters()}.values())
    buffers = list(model.buffers())

    pre = RankTracker(cuda_faithful=True)
    for cat, ts in (("param", params), ("buffer", buffers), ("batch", list(batch.values()))):
        pre.track_existing(ts, cat)
    try:
        with host_side_record_function([pre]), pre:
            pre.set_phase("wrap")
            trainable, opt, wrapped, info = _wrap(engine, rc, model, built_opt, opts, rank, world)
            del built_opt
            for i in range(WARMUP_STEPS):
                pre.set_phase("warmup%d" % i)
                wb = {k: v[:1, :min(rc.seq, 16)].contiguous() for k, v in batch.items()}
                ms.train_step(trainable, opt, wb)
                del wb
    except Exception as e:  # noqa: BLE001 - reported (FSDP on a CPU-only build)
        pre.close()
        return {"rank": rank, "error": "%s: %s" % (type(e).__name__, e)}

    states = _state_tensors(opt)
    known = {_key(t) for t in params + buffers + states + list(batch.values())}
    pre.poll()
    engine_tensors, engine_desc = [], []
    for k, e in pre.entries.items():
        if k in known:
            continue
        s = torch.UntypedStorage._new_with_weak_ptr(e.wref)
        if s is None:
            continue
        engine_tensors.append(torch.empty(0, dtype=torch.uint8).set_(s))
        d = e.describe()
        engine_desc.append({k2: d[k2] for k2 in ("bytes", "op", "shape", "dtype", "phase")})
    pre.close()

    t1 = time.time()
    tr = RankTracker(cuda_faithful=True)
    by_cat = {}
    for cat, ts in (("param", params), ("buffer", buffers),
                    ("grad", [p.grad for p in params if p.grad is not None]),
                    ("optimizer_state", states), ("batch", list(batch.values())),
                    ("engine", engine_tensors)):
        by_cat[cat] = tr.track_existing(ts, cat)
    del engine_tensors  # the engine keeps its storages; the tracker holds weak references
    torch.manual_seed(rc.seed + 7)
    with gc_disabled():
        baseline = tr.quiet("start")
        with host_side_record_function([tr]), tr:
            ms.train_step(trainable, opt, batch, tr)
    rep = tr.report()
    q = rep["quiet_bytes"]
    if engine in ("ddp", "zero1"):
        # DDP's logger records the rebuilt buckets at the iteration after the rebuild
        info["ddp_bucket_sizes"], info["ddp_has_rebuilt_buckets"] = _ddp_bucket_sizes(wrapped)
    trainable_params = [p for p in params if p.requires_grad]
    res = {
        "rank": rank,
        "world": world,
        "engine": engine,
        "opts": opts,
        "config": dataclasses.asdict(rc),
        "measured_peak_bytes": rep["peak_bytes"],
        "measured_peak_phase": rep["peak_phase"],
        "measured_forward_peak_bytes": rep["phase_peak_bytes"].get("forward", 0),
        "measured_backward_peak_bytes": rep["phase_peak_bytes"].get("backward", 0),
        "measured_optimizer_peak_bytes": rep["phase_peak_bytes"].get("optimizer", 0),
        "baseline_bytes": baseline,
        "baseline_by_category": by_cat,
        "engine_tensors": engine_desc,
        "grads_bytes": q["after_backward"] - baseline,
        "trainable_bytes": sum(p.numel() * p.element_size() for p in trainable_params),
        "trainable_numel": sum(p.numel() for p in trainable_params),
        "peak_op": rep["peak_op"],
        "phase_peak_op": rep["phase_peak_op"],
        "quiet_bytes": q,
        "peak_bytes_rounded512": rep["peak_bytes_rounded512"],
        "host_tensors_left_out": tr.host_skipped,
        "seconds_setup": round(t1 - t0, 2),
        "seconds_measured": round(time.time() - t1, 2),
    }
    res.update(info)
    if engine == "tp":
        res.update(tp_info)
    tr.close()
    return res


def _worker(rank, world, job, outdir, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(max(1, int(job.get("threads", 1))))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=600))
    try:
        res = run_rank(rank, world, job)
        with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
            json.dump(res, f, default=str)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_world(job, world):
    """Spawn ``world`` ranks on this machine; returns their result dicts."""
    if job["engine"] not in ENGINES:
        raise ValueError("unknown engine %r" % job["engine"])
    with tempfile.TemporaryDirectory(prefix="llmem-dist-") as outdir:
        mp.start_processes(_worker, args=(world, job, outdir, free_port()), nprocs=world,
                           join=True, start_method="spawn")
        out = []
        for r in range(world):
            with open(os.path.join(outdir, "rank%d.json" % r)) as f:
                out.append(json.load(f))
    return out


# ---------------------------------------------------------------------------

def _parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rc = ms.RunConfig()
    for f in dataclasses.fields(ms.RunConfig):
        flag = "--" + f.name.replace("_", "-")
        ap.add_argument(flag, type=type(getattr(rc, f.name)), default=getattr(rc, f.name))
    ap.add_argument("--engine", choices=ENGINES, default="ddp")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--view", type=int, default=0, help="ddp: gradient_as_bucket_view")
    ap.add_argument("--loss", default="megatron", choices=("megatron", "hf-shard"),
                    help="tp: the loss on the vocabulary shards (tp.py)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    cfg = {f.name: getattr(a, f.name) for f in dataclasses.fields(ms.RunConfig)}
    job = {"engine": a.engine, "config": cfg, "opts": {"view": a.view, "loss": a.loss}, "threads": a.threads}
    return job, a


def main(argv=None):
    job, a = _parse(argv)
    res = run_world(job, a.world)
    if a.json:
        print(json.dumps(res, indent=1, default=str))
        return 0
    for r in res:
        if "error" in r:
            print("rank %d: %s" % (r["rank"], r["error"]))
            continue
        print("rank %d: peak %d (%s)  forward %d  backward %d  optimizer %d  baseline %d  "
              "engine %d  grads %d" % (
                  r["rank"], r["measured_peak_bytes"], r["measured_peak_phase"],
                  r["measured_forward_peak_bytes"], r["measured_backward_peak_bytes"],
                  r["measured_optimizer_peak_bytes"], r["baseline_bytes"],
                  r["baseline_by_category"]["engine"], r["grads_bytes"]))
        for d in r["engine_tensors"]:
            print("    engine tensor %s" % d)
        for k in ("ddp_bucket_sizes", "ddp_has_rebuilt_buckets", "local_trainable_numel",
                  "local_step_bucket_bytes", "quiet_bytes", "phase_peak_op"):
            if k in r:
                print("    %s %s" % (k, r[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
