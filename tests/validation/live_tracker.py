"""Exact live-tensor-byte tracking for one training step (torch 1.13, CPU or meta).

A ``TorchDispatchMode`` sits below autograd, so every ATen op of the forward pass,
the backward pass (autograd engine nodes run on the calling thread for CPU and
inherit the mode), gradient-checkpoint recomputation and the optimizer step is
seen here.  For each op:

1. before the op runs, every tracked storage is polled through a c10 weak
   storage reference (``UntypedStorage._weak_ref`` / ``UntypedStorage._expired``,
   the mechanism behind ``torch.multiprocessing.reductions.StorageWeakRef``);
   expired ones are released from the live total.  Python ``weakref``
   finalizers on storage objects are not used: in torch 1.13 the Python storage
   object is a throw-away wrapper and its finalizer does not track the C++
   StorageImpl.
2. the op runs;
3. each output storage that is not tracked yet is recorded once (views share
   their base's storage, in-place ops return an input, so both are deduplicated
   by StorageImpl address).  While we hold a weak reference the StorageImpl
   object itself cannot be freed, so its address cannot be reused by another
   storage before we have seen it expire.
4. the live total after the outputs exist is compared with the peak.

The peak therefore is the exact maximum, over all op boundaries, of the bytes
of all tensors alive at that moment (what ``torch.cuda.max_memory_allocated``
would report before the caching allocator's 512-byte rounding, which is kept
as a second total).  Tensors allocated *inside* a kernel and freed before it
returns are not seen (on CUDA these are kernel workspaces; on CPU the
profiler sees them, see ``profiler_peak``).

Baseline tensors (parameters, buffers, existing gradients, optimizer states,
the batch) are registered with ``track_existing`` before the step starts, so
they are live from the start.

CUDA-faithful size corrections (``cuda_faithful=True``): CPU kernels that
produce a different dtype than the CUDA kernel are counted at the CUDA size.
Only one is known for the ops the validation models use:
``native_layer_norm`` on a bf16/fp16 input returns mean and rstd in bf16/fp16
on CPU but in fp32 on CUDA (and on meta), so those two outputs are counted at
4 bytes per element.
"""

from __future__ import annotations

import collections
import contextlib
import gc

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_expired = torch.UntypedStorage._expired
_free_weak_ref = torch.UntypedStorage._free_weak_ref

_ATEN = torch.ops.aten

# The trackers whose mode is active, innermost last (see kernel_internal).
_ACTIVE = []
_LN_OPS = {_ATEN.native_layer_norm.default}
_ADD = _ATEN.add.Tensor
_LOW = (torch.bfloat16, torch.float16)

CUDA_BLOCK = 512  # CUDA caching allocator rounds every block to 512 bytes


def _untyped(t):
    """The UntypedStorage of a tensor (torch 1.13: ``_storage()``)."""
    if hasattr(t, "_storage"):
        return t._storage()
    return t.untyped_storage()  # torch >= 2.0


def storage_key(t):
    """StorageImpl address: identical for a tensor and all its views."""
    return _untyped(t)._cdata


def storage_nbytes(t):
    return _untyped(t).nbytes()


def _non_overlapping_and_dense(t):
    if t.numel() <= 1:
        return True
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1)
    expect = 1
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


def _round(n):
    return ((n + CUDA_BLOCK - 1) // CUDA_BLOCK) * CUDA_BLOCK if n else 0


class _Entry:
    __slots__ = ("wref", "nbytes", "op", "shape", "dtype", "phase", "tag", "seq",
                 "category")

    def __init__(self, wref, nbytes, op, shape, dtype, phase, tag, seq, category):
        self.wref = wref
        self.nbytes = nbytes
        self.op = op
        self.shape = shape
        self.dtype = dtype
        self.phase = phase
        self.tag = tag
        self.seq = seq
        self.category = category

    def describe(self):
        return {
            "bytes": self.nbytes,
            "op": self.op,
            "shape": tuple(self.shape),
            "dtype": str(self.dtype).replace("torch.", ""),
            "phase": self.phase,
            "tag": self.tag,
            "seq": self.seq,
            "category": self.category,
        }


class LiveTracker(TorchDispatchMode):
    """Tracks live tensor bytes at every ATen op boundary.

    Usage::

        tr = LiveTracker()
        tr.track_existing(model.parameters(), "param")
        with tr:
            tr.set_phase("forward"); ...
            tr.quiet("after_forward")
            ...
        tr.report()

    ``snapshot_at_peak=True`` records what is live at the overall peak
    (O(live) per new peak; use for breakdowns only).  ``tag`` can be set by the
    caller (e.g. a module path from forward hooks) and is stored with each new
    storage.
    """

    def __init__(self, cuda_faithful=True, snapshot_at_peak=False,
                 record_timeline=False, emulate_inplace_accumulate=True):
        super().__init__()
        self.cuda_faithful = cuda_faithful
        self.snapshot_at_peak = snapshot_at_peak
        self.record_timeline = record_timeline
        self.entries = {}
        self.live = 0
        self.live_r = 0
        self.peak = 0
        self.peak_r = 0
        self.peak_phase = None
        self.peak_op = None
        self.peak_seq = -1
        self.peak_snapshot = None
        self.phase_snapshot = {}
        self.phase = "init"
        self.phase_peak = collections.OrderedDict()
        self.phase_peak_r = collections.OrderedDict()
        self.phase_peak_op = {}
        self.quiet_points = collections.OrderedDict()
        self.seq = 0
        self.tag = ""
        self.timeline = []
        self.op_counts = collections.Counter()
        self.emulate_inplace_accumulate = emulate_inplace_accumulate
        self.inplace_accumulations = 0
        self.inplace_saved_bytes = 0
        self.accumulations_kept_out_of_place = 0
        self._pending = None
        self.suspended = 0

    def __enter__(self):
        _ACTIVE.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        return super().__exit__(*exc)

    # -- bookkeeping -----------------------------------------------------
    def _add(self, t, op, category, nbytes=None):
        s = _untyped(t)
        key = s._cdata
        if key in self.entries:
            return False
        if nbytes is None:
            nbytes = s.nbytes()
        wref = s._weak_ref()
        self.entries[key] = _Entry(wref, nbytes, op, tuple(t.shape), t.dtype,
                                   self.phase, self.tag, self.seq, category)
        self.live += nbytes
        self.live_r += _round(nbytes)
        return True

    def poll(self):
        """Release every tracked storage whose StorageImpl has expired."""
        dead = [k for k, e in self.entries.items() if _expired(e.wref)]
        for k in dead:
            e = self.entries.pop(k)
            self.live -= e.nbytes
            self.live_r -= _round(e.nbytes)
            _free_weak_ref(e.wref)
        if self._pending is not None:
            self._resolve_pending(set(dead))
        return len(dead)

    def _resolve_pending(self, dead_keys):
        """Decide a deferred InputBuffer accumulation (see __torch_dispatch__).

        torch >= 2.0 accumulates ``old_var.add_(var)`` in place when the
        buffer holds the last reference to ``old_var`` and its storage;
        torch 1.13 always computes ``old_var + var``.  Whether the last
        reference was held shows one op later: ``old_var``'s storage has
        expired.  In that case the torch 2.x total at the op excluded the new
        sum (it reused ``old_var``'s storage)."""
        p = self._pending
        self._pending = None
        inplace = p["old_key"] in dead_keys
        if inplace:
            self.inplace_accumulations += 1
            self.inplace_saved_bytes += p["out_bytes"]
            val = p["live"] - p["out_bytes"]
            val_r = p["live_r"] - _round(p["out_bytes"])
            snap = p["snapshot"]
            if snap is not None:
                snap = [d for d in snap if d["_key"] != p["out_key"]]
        else:
            self.accumulations_kept_out_of_place += 1
            val, val_r, snap = p["live"], p["live_r"], p["snapshot"]
        self._candidate(val, val_r, p["op"], p["phase"], p["seq"], snap)

    def _candidate(self, val, val_r, opname, ph, seq, snapshot=None):
        if val > self.phase_peak.get(ph, -1) or (
                self.snapshot_at_peak and ph not in self.phase_snapshot):
            self.phase_peak[ph] = max(val, self.phase_peak.get(ph, -1))
            self.phase_peak_op[ph] = (opname, seq)
            if self.snapshot_at_peak:
                if snapshot is None:
                    snapshot = self._snapshot()
                self.phase_snapshot[ph] = snapshot
        if val_r > self.phase_peak_r.get(ph, -1):
            self.phase_peak_r[ph] = val_r
        if val_r > self.peak_r:
            self.peak_r = val_r
        if val > self.peak:
            self.peak = val
            self.peak_phase = ph
            self.peak_op = opname
            self.peak_seq = seq
            if self.snapshot_at_peak:
                if snapshot is None:
                    snapshot = self._snapshot()
                self.peak_snapshot = snapshot

    def _snapshot(self):
        out = []
        for k, e in self.entries.items():
            d = e.describe()
            d["_key"] = k
            out.append(d)
        return out

    def _note_peak(self, opname):
        self._candidate(self.live, self.live_r, opname, self.phase, self.seq)

    def track_existing(self, tensors, category):
        """Register tensors that exist before the step (params, states, batch)."""
        n = 0
        for t in tensors:
            if t is None or not isinstance(t, torch.Tensor):
                continue
            if self._add(t, "<existing>", category):
                n += _untyped(t).nbytes()
        self._note_peak("<existing>")
        return n

    def set_phase(self, name):
        self.poll()
        self.phase = name
        self.phase_peak.setdefault(name, self.live)
        self.phase_peak_r.setdefault(name, self.live_r)
        self._note_peak("<phase:%s>" % name)

    def quiet(self, name):
        """Live bytes at a quiet point (between ops, nothing in flight)."""
        self.poll()
        self.quiet_points[name] = self.live
        return self.live

    def live_by_category(self):
        self.poll()
        out = collections.Counter()
        for e in self.entries.values():
            out[e.category] += e.nbytes
        return dict(out)

    def live_entries(self):
        self.poll()
        return [e.describe() for e in self.entries.values()]

    def live_keys(self):
        self.poll()
        return set(self.entries.keys())

    # -- dispatch --------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.suspended:  # inside one emulated CUDA kernel (kernel_internal)
            return func(*args, **kwargs)
        self.poll()
        out = func(*args, **kwargs)
        self.seq += 1
        opname = func.__name__ if hasattr(func, "__name__") else str(func)
        self.op_counts[opname] += 1
        flat = out if isinstance(out, (tuple, list)) else (out,)
        ln = self.cuda_faithful and func in _LN_OPS
        for i, t in enumerate(flat):
            if isinstance(t, (tuple, list)):  # foreach ops return lists
                for u in t:
                    if isinstance(u, torch.Tensor):
                        self._add(u, opname, "op")
            elif isinstance(t, torch.Tensor):
                nb = None
                if ln and i in (1, 2) and t.dtype in _LOW:
                    nb = t.numel() * 4  # CUDA keeps mean/rstd in fp32
                self._add(t, opname, "op", nb)
        if self._is_buffer_accumulate(func, args, kwargs, out):
            # Defer the peak decision to the next poll (see _resolve_pending).
            out_key = _untyped(out)._cdata
            e = self.entries.get(out_key)
            self._pending = {
                "old_key": _untyped(args[0])._cdata,
                "out_key": out_key,
                "out_bytes": e.nbytes if e is not None else 0,
                "live": self.live, "live_r": self.live_r,
                "op": opname + "[accumulate]", "phase": self.phase,
                "seq": self.seq,
                "snapshot": (self._snapshot() if self.snapshot_at_peak
                             and self.live > self.peak else None),
            }
        else:
            self._note_peak(opname)
        if self.record_timeline:
            self.timeline.append((self.seq, self.phase, opname, self.live))
        return out

    def _is_buffer_accumulate(self, func, args, kwargs, out):
        """An autograd InputBuffer sum ``old_var + var`` (backward only).

        In backward with grad mode off, ``aten.add.Tensor`` between two
        same-shape, same-dtype tensors without ``alpha`` comes from the
        engine summing two gradient contributions (no derivative formula of
        the ops used by the validation models emits such an add)."""
        if not self.emulate_inplace_accumulate or func is not _ADD:
            return False
        if not self.phase.startswith("backward") or torch.is_grad_enabled():
            return False
        if kwargs or len(args) != 2:
            return False
        a, b = args
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or out.dtype != a.dtype:
            return False
        return _non_overlapping_and_dense(a)

    # -- results ---------------------------------------------------------
    def report(self):
        self.poll()
        return {
            "peak_bytes": self.peak,
            "peak_phase": self.peak_phase,
            "peak_op": self.peak_op,
            "peak_seq": self.peak_seq,
            "peak_bytes_rounded512": self.peak_r,
            "phase_peak_bytes": dict(self.phase_peak),
            "phase_peak_bytes_rounded512": dict(self.phase_peak_r),
            "phase_peak_op": dict(self.phase_peak_op),
            "quiet_bytes": dict(self.quiet_points),
            "ops": self.seq,
            "inplace_accumulations": self.inplace_accumulations,
            "inplace_accumulation_bytes": self.inplace_saved_bytes,
            "accumulations_kept_out_of_place": self.accumulations_kept_out_of_place,
        }

    def close(self):
        for e in self.entries.values():
            _free_weak_ref(e.wref)
        self.entries.clear()


@contextlib.contextmanager
def kernel_internal():
    """Run code that stands for the inside of one CUDA kernel without tracking.

    A fused CUDA kernel (FlashAttention's, cuDNN's, the fused AdamW step)
    computes in registers and shared memory: it allocates nothing but its
    outputs and the workspace its host code asks the caching allocator for.
    The CPU emulations in models.py and optimizers.py allocate those outputs
    and workspaces with tracked ops, then compute the values with ordinary
    (temporary-allocating) torch ops inside this context, which the active
    tracker does not see.  Nothing allocated here may outlive the context
    unless it is copied into a tracked tensor."""
    tr = _ACTIVE[-1] if _ACTIVE else None
    if tr is not None:
        tr.suspended += 1
    try:
        yield
    finally:
        if tr is not None:
            tr.suspended -= 1


# ---------------------------------------------------------------------------
# Cross-check helpers
# ---------------------------------------------------------------------------

def autograd_saved_storages(roots):
    """Storages held by the autograd graph reachable from ``roots``.

    Walks ``grad_fn.next_functions`` and reads every ``_saved_*`` attribute
    (generated nodes), ``saved_tensors`` (custom Functions such as
    ``torch.utils.checkpoint.CheckpointFunction``) and ``variable``
    (AccumulateGrad: the leaf itself, e.g. an embedding output made to
    require grad by ``enable_input_require_grads``).  Returns {key: nbytes}.
    Tensors held as plain attributes of a custom Function's ctx (e.g.
    checkpoint's ``ctx.inputs`` tuple with the rotary cos/sin, or its
    ``ctx.fwd_cpu_state`` RNG stash) are included too.  Returns
    {key: (nbytes, shape, dtype, device)}.
    """
    seen_nodes = set()
    keep = []  # hold node wrappers so that id() values are not reused
    out = {}
    stack = [r for r in roots if r is not None]

    def add(v):
        if isinstance(v, torch.Tensor):
            try:
                s = _untyped(v)
            except Exception:  # noqa: BLE001 - undefined / no storage
                return
            out[s._cdata] = (s.nbytes(), tuple(v.shape), v.dtype)
        elif isinstance(v, (tuple, list)):
            for u in v:
                add(u)

    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        keep.append(node)
        for name in dir(node):
            if name.startswith("_saved_") or name in ("saved_tensors", "variable"):
                try:
                    add(getattr(node, name))
                except Exception:  # noqa: BLE001 - released or not a tensor
                    pass
        d = getattr(node, "__dict__", None)
        if d:  # custom Function ctx attributes (e.g. checkpoint's ctx.inputs)
            for v in d.values():
                add(v)
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return out


def profiler_peak(fn):
    """Run ``fn`` under ``torch.profiler`` with ``profile_memory=True``.

    Returns (peak_delta_bytes, final_delta_bytes): the maximum over time of
    the cumulative CPU allocator delta since the profiler started, from the
    kineto ``[memory]`` events (signed ``nbytes``, in time order), and the
    delta at the end.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=False) as prof:
        fn()
    raw = prof.profiler.kineto_results.events()
    evs = [(e.start_us(), i, e.nbytes()) for i, e in enumerate(raw)
           if e.name() == "[memory]"]
    evs.sort()
    cur = 0
    peak = 0
    for _, _, nb in evs:
        cur += nb
        peak = max(peak, cur)
    return peak, cur


@contextlib.contextmanager
def gc_disabled():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
