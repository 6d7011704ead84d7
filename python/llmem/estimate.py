# SPDX-License-Identifier: MIT
"""Estimates: the memory of one training step, and its breakdown."""
from __future__ import annotations

import array
import collections.abc
import ctypes
import dataclasses
import re
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple,
                    Union)

from . import errors
from ._library import LIB
from .context import Context, Handle, c_string, expect, expect_u64, locked, resolve
from .fields import (ALIASES, MODEL, MODEL_FIELDS, PARALLEL, PARALLEL_FIELDS, TRAIN,
                     TRAIN_FIELDS, unknown_keyword)
from .model import Model
from .parallel import Parallel
from .train import Train

# Result keys of include/llmem.h (enum llmem_estimate_key); never renumbered.
_PARAMS_TOTAL = 1
_PARAMS_TRAINABLE = 2
_PEAK_ALLOCATED = 3
_PEAK_RESERVED = 4
_PEAK_DEVICE = 5
_PEAK_PHASE = 6
_PARAMS_ACTIVE = 7
# Per-rank keys (enum llmem_rank_key).
_RANK_STAGE = 101
_RANK_LAYER_FIRST = 102
_RANK_LAYERS = 103
_RANK_GPUS = 104
_RANK_HOST = 105
_RANK_IN_FLIGHT_X1000 = 106
_RANK_STAGES = 107
_RANK_CHUNKS = 108
_RANK_CHUNK_STRIDE = 109
# Peak levels of llmem_estimate_max (enum llmem_level; the library names them
# nowhere else).
LEVELS = {"allocated": 1, "reserved": 2, "device": 3}
# The training fields llmem_estimate_max solves for.
_MAX_FIELDS = ("batch", "seq")


def _job(model: Any, train: Any, parallel: Any) -> List[Handle]:
    """The job's objects, each checked to be of its kind."""
    expect(model, Model, "model")
    expect(train, Train, "train")
    if parallel is None:
        return [model, train]
    expect(parallel, Parallel, "parallel")
    return [model, train, parallel]


def _names(fn: Any) -> Tuple[Tuple[int, str], ...]:
    """(value, name) of the library's phases or terms: 1, 2, ... until NULL."""
    found = []
    value = 1
    while True:
        name = fn(value)
        if name is None:
            return tuple(found)
        found.append((value, name.decode()))
        value += 1


PHASES = _names(LIB.llmem_phase_name)
TERMS = _names(LIB.llmem_term_name)

# GPU keys of include/llmem.h (enum llmem_gpu_key, enum llmem_gpu_text).
_GPU_USABLE_BYTES = 1
_GPU_USABLE_ESTIMATED = 2
_GPU_CONTEXT_BYTES = 3
_GPU_WORKSPACE_BYTES = 4
_GPU_SMS = 5
_GPU_COMPUTE_CAPABILITY = 6
_GPU_MIG_PROFILES = 7
_GPU_MIG_SLOTS = 8
_GPU_MIG_COMPUTE_SLICES = 9
_GPU_CONTEXT_ESTIMATED = 10
_GPU_ARCH = 1
_GPU_DEVICE_NAME = 2
_GPU_MEMORY_SOURCE = 3
_GPU_CONSTANTS_SOURCE = 4
_GPU_ALIASES = 5
# The CLI's --margin default: percent of a GPU's memory kept free.
DEFAULT_MARGIN = 5


@dataclass(frozen=True)
class Gpu:
    """One GPU of the library's catalog (``llmem gpus``): ``name`` (the
    canonical one, as ``gpu=`` and :func:`gpu` accept it), the driver's
    ``device_name``, ``arch`` ("sm_90"), ``usable_bytes`` (what a process can
    use: ``torch.cuda.mem_get_info()`` total), the architecture's CUDA
    ``context_bytes`` and cuBLAS ``workspace_bytes``, ``sms``,
    ``compute_capability`` (major x 10 + minor; 0 for AMD), the MIG grid
    (``mig_profiles``: how many profiles, 0 without MIG; ``mig_slots``,
    ``mig_compute_slices``), the other names :func:`gpu` accepts
    (``aliases``), whether the usable or context bytes are estimated rather
    than measured, and where the values come from. ``index`` is the
    catalog's, stable within one library version only: look GPUs up by name."""

    index: int
    name: str
    device_name: str
    arch: str
    usable_bytes: int
    usable_estimated: bool
    context_bytes: int
    context_estimated: bool
    workspace_bytes: int
    sms: int
    compute_capability: int
    mig_profiles: int
    mig_slots: int
    mig_compute_slices: int
    aliases: Tuple[str, ...]
    memory_source: str
    constants_source: str


def _gpu_u64(index: int, key: int) -> int:
    out = ctypes.c_uint64()
    rc = LIB.llmem_gpu_get_u64(index, key, ctypes.byref(out))
    if rc != errors.OK:  # an index from the catalog: never
        raise errors.error_class(rc)("GPU %d: key %d: %s" % (
            index, key, LIB.llmem_status_str(rc).decode()), rc)
    return out.value


def _gpu_str(index: int, key: int) -> str:
    text = LIB.llmem_gpu_get_str(index, key)
    return text.decode() if text is not None else ""


def _gpu_at(index: int) -> Gpu:
    aliases = _gpu_str(index, _GPU_ALIASES)
    return Gpu(index=index, name=LIB.llmem_gpu_name(index).decode(),
               device_name=_gpu_str(index, _GPU_DEVICE_NAME), arch=_gpu_str(index, _GPU_ARCH),
               usable_bytes=_gpu_u64(index, _GPU_USABLE_BYTES),
               usable_estimated=bool(_gpu_u64(index, _GPU_USABLE_ESTIMATED)),
               context_bytes=_gpu_u64(index, _GPU_CONTEXT_BYTES),
               context_estimated=bool(_gpu_u64(index, _GPU_CONTEXT_ESTIMATED)),
               workspace_bytes=_gpu_u64(index, _GPU_WORKSPACE_BYTES),
               sms=_gpu_u64(index, _GPU_SMS),
               compute_capability=_gpu_u64(index, _GPU_COMPUTE_CAPABILITY),
               mig_profiles=_gpu_u64(index, _GPU_MIG_PROFILES),
               mig_slots=_gpu_u64(index, _GPU_MIG_SLOTS),
               mig_compute_slices=_gpu_u64(index, _GPU_MIG_COMPUTE_SLICES),
               aliases=tuple(a for a in aliases.split("|") if a),
               memory_source=_gpu_str(index, _GPU_MEMORY_SOURCE),
               constants_source=_gpu_str(index, _GPU_CONSTANTS_SOURCE))


def gpus() -> Tuple[Gpu, ...]:
    """The library's GPU catalog, in its order (as ``llmem gpus`` lists it)."""
    return tuple(_gpu_at(i) for i in range(LIB.llmem_gpu_count()))


def gpu(name: Union[str, bytes], *, context: Optional[Context] = None) -> Gpu:
    """The GPU of the catalog ``name`` names: any name the library accepts
    (``llmem_gpu_find``: the canonical name, an alias or the driver's name,
    case-insensitively, ignoring spaces, '-' and '_': "H100", "h100-sxm",
    "NVIDIA H100 80GB HBM3"). An unknown or ambiguous name ("A100": 40 or
    80 GB) raises :class:`NotFound` with the library's message, which names
    the close matches."""
    data = c_string(name, "name")
    ctx = resolve(context)
    index = ctypes.c_size_t()
    with ctx._lock:
        ctx.check(LIB.llmem_gpu_find(ctx._handle, data, ctypes.byref(index)))
    return _gpu_at(index.value)


def _margin_permille(function: str, margin: Any) -> int:
    """``margin`` (percent) in permille, as the CLI reads --margin: a number
    in [0, 90), rounded to the nearest tenth of a percent."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)):
        raise TypeError("%s: margin: expected a number (percent), got %s"
                        % (function, type(margin).__name__))
    if not 0 <= margin < 90:
        raise ValueError("%s: margin %r: a percentage in [0, 90)" % (function, margin))
    tenths = int(float(margin) * 10.0 + 0.5)
    # The range holds for the value kept (89.96 would keep 90.0), as the CLI's.
    if tenths >= 900:
        raise ValueError("%s: margin %r: a percentage in [0, 90) (it rounds to %.1f%%, in "
                         "tenths of a percent)" % (function, margin, tenths / 10))
    return tenths


def _budget(usable: int, permille: int) -> int:
    """What a device peak must fit: floor(usable x (1000 - margin) / 1000),
    the CLI's cli_usable(); the margin kept free is usable - this."""
    return usable * (1000 - permille) // 1000


def _train_gpu(train: "Train") -> Optional[int]:
    """The catalog index of the training setup's ``gpu``, or None when unset."""
    out = ctypes.c_int64()
    ctx = train._context
    with ctx._lock:
        ctx.check(LIB.llmem_train_get_int(train._handle, TRAIN_FIELDS["gpu"].key,
                                          ctypes.byref(out)))
    return out.value - 1 if out.value > 0 else None


def _capacity(train: "Train", capacity: Optional[int]) -> Optional[int]:
    """The bytes a peak is measured against: ``capacity`` (which wins, as
    --capacity does), else the usable memory of the setup's ``gpu``; None
    with neither."""
    if capacity is not None:
        return expect_u64(capacity, "capacity")
    index = _train_gpu(train)
    return _gpu_u64(index, _GPU_USABLE_BYTES) if index is not None else None


@dataclass(frozen=True)
class Term:
    """One term of the article's decomposition (parameters, optimizer, data,
    temporary): bytes at the overall peak, its own maximum over the step, and
    its named components at the peak (``{"gradients": ..., "states": ...}``)."""

    name: str
    bytes_at_peak: int
    max_bytes: int
    components: Dict[str, int]


@dataclass(frozen=True)
class TimelinePoint:
    """One point of a step's timeline (``llmem_estimate_timeline_point``):
    its position, the phase, the part of the model it is in ("embedding",
    "norm", "attention", "mlp", "head", "loss", "recompute", "layer" for a
    layer shown by one point, "optimizer"), the decoder layer (-1 outside the
    layers) and the live bytes of each term then, at the allocated level."""

    index: int
    phase: str
    part: str
    layer: int
    parameters: int
    optimizer: int
    data: int
    temporary: int

    @property
    def total(self) -> int:
        """The live bytes at this point: the four terms' sum."""
        return self.parameters + self.optimizer + self.data + self.temporary


@dataclass(frozen=True)
class Timeline:
    """A rank's memory through one training step: its points in order, and
    ``peak``, the index of the first point holding the largest total (that
    total is the rank's ``peak_allocated``), or None when the points kept
    stop before the peak (a ``capacity`` of :meth:`Estimate.record_timeline`
    too small for the step). Iterable and indexable like its points."""

    points: Tuple[TimelinePoint, ...]
    peak: Optional[int]

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[TimelinePoint]:
        return iter(self.points)

    def __getitem__(self, index: int) -> TimelinePoint:
        return self.points[index]


@dataclass(frozen=True)
class Rank:
    """One rank class of a layout (ranks whose memory is the same: a pipeline
    stage of every data-parallel replica, or a run of ``stages`` alike middle
    stages from ``stage`` on, the first of which, with the most micro-batches
    in flight, it describes): what it runs and what it holds. Its layers are
    ``chunks`` model chunks (the interleaved schedule's; else one) of
    ``layers // chunks`` layers, ``chunk_stride`` apart: ``layer_ranges``."""

    index: int
    stage: int
    stages: int
    layer_first: int
    layers: int
    chunks: int
    chunk_stride: int
    gpus: int
    micro_batches_in_flight: float
    host_bytes: int
    peak_allocated: int
    peak_reserved: int
    peak_device: int
    peak_phase: Optional[str]
    phase_bytes: Dict[str, int]
    terms: Dict[str, Term]
    timeline: Optional[Timeline] = None

    @property
    def layer_ranges(self) -> List[Tuple[int, int]]:
        """Its decoder layers as (first, last) ranges, one a model chunk."""
        per = self.layers // self.chunks
        return [(self.layer_first + c * self.chunk_stride,
                 self.layer_first + c * self.chunk_stride + per - 1)
                for c in range(self.chunks)]


@dataclass(frozen=True)
class Result:
    """What one estimate found; plain values, no library handle.

    Peaks are bytes at three levels: ``peak_allocated`` (live tensors, as
    ``torch.cuda.max_memory_allocated``), ``peak_reserved`` (plus the caching
    allocator) and ``peak_device`` (plus the CUDA context, as nvidia-smi).
    ``peak_phase`` names the phase holding the peak (None with the article
    formula, which sums terms); ``phase_bytes`` is the peak of each phase.
    With a layout these answer for the most loaded rank, ``ranks[peak_rank]``;
    ``ranks`` holds every rank class (one for a single GPU). ``timeline`` is
    the most loaded rank's timeline when one was recorded
    (:meth:`Estimate.record_timeline`, or ``estimate(..., timeline=True)``),
    else None; the article formula has none.

    The verdict on a GPU, set by :func:`estimate` given ``gpu=`` or
    ``capacity=`` (else None), as ``llmem estimate --json``'s ``gpu`` object:
    ``usable`` (``capacity``, else the GPU's usable bytes), ``margin_bytes``
    kept free of it (``ceil(usable x margin_permille / 1000)``), ``budget``
    (``usable - margin_bytes``), ``headroom`` (``budget - peak_device``;
    negative: short by) and ``fits`` (``headroom >= 0``).
    """

    params_total: int
    params_trainable: int
    params_active: int
    peak_allocated: int
    peak_reserved: int
    peak_device: int
    peak_phase: Optional[str]
    phase_bytes: Dict[str, int]
    terms: Dict[str, Term]
    peak_rank: int
    ranks: Tuple[Rank, ...]
    timeline: Optional[Timeline] = None
    usable: Optional[int] = None
    margin_permille: Optional[int] = None
    margin_bytes: Optional[int] = None
    budget: Optional[int] = None
    headroom: Optional[int] = None
    fits: Optional[bool] = None


class Estimate(Handle):
    """A reusable estimate handle (``llmem_estimate``).

    :meth:`run` allocates nothing; a handle run again with the same model and
    setup but another batch or seq reuses what does not depend on them, so
    keep one per model and setup in a loop.
    """

    _free = LIB.llmem_estimate_free
    _what = "estimate"
    # Points a rank the handle makes room for first when record_timeline()
    # is given no capacity; a run that fills them grows the room and runs again.
    _TIMELINE_ROOM = 1024

    def __init__(self, *, context: Optional[Context] = None) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_estimate_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self._timeline_room = 0  # points a rank; 0: no timeline
        self._timeline_grows = False
        self._timeline_expand = False

    def record_timeline(self, expand: bool = False, *, capacity: Optional[int] = None) -> None:
        """Record the timeline of every later :meth:`run`: its Result (and each
        Rank) then has ``timeline``. One layer of each run of identical layers
        is shown op by op (the one holding that run's peak), the others by one
        point each, unless ``expand``. Without ``capacity`` the room grows as
        needed (a run that fills it is run again with more); with one, a step
        with more points keeps the first ``capacity`` (``llmem_estimate_timeline``),
        and the timeline's ``peak`` is None when they stop before the peak;
        ``capacity=0`` stops recording."""
        if capacity is not None:
            expect_u64(capacity, "capacity")
        room = self._TIMELINE_ROOM if capacity is None else capacity
        with self._context._lock:
            self._timeline_room = 0  # a failed call leaves the timeline off
            self._context.check(LIB.llmem_estimate_timeline(self._handle, room, int(expand)))
            self._timeline_room = room
            self._timeline_grows = capacity is None
            self._timeline_expand = bool(expand)

    def _timeline_full(self) -> bool:
        """Whether a rank's timeline filled the room (so may have lost points)."""
        return self._timeline_room > 0 and any(
            LIB.llmem_estimate_timeline_count(self._handle, rank) >= self._timeline_room
            for rank in range(LIB.llmem_estimate_rank_count(self._handle)))

    def run(self, model: Model, train: Train, parallel: Optional[Parallel] = None) -> Result:
        """Estimate ``model`` trained as ``train`` (on one GPU, or laid out
        as ``parallel``); all are validated."""
        ctx = self._context
        objects = _job(model, train, parallel)
        with locked(ctx, *(o._context for o in objects)):
            self._run(model, train, parallel)
            while self._timeline_grows and self._timeline_full():
                self._timeline_room *= 4
                ctx.check(LIB.llmem_estimate_timeline(self._handle, self._timeline_room,
                                                      int(self._timeline_expand)))
                self._run(model, train, parallel)
            return self._result()

    def _run(self, model: Model, train: Train, parallel: Optional[Parallel]) -> None:
        if parallel is None:
            rc = LIB.llmem_estimate_run(self._handle, model._handle, train._handle)
        else:
            rc = LIB.llmem_estimate_run_parallel(self._handle, model._handle, train._handle,
                                                 parallel._handle)
        self._context.check(rc)

    def max(self, model: Model, train: Train, field: str = "batch", *, capacity: int,
            level: str = "device", parallel: Optional[Parallel] = None) -> int:
        """The largest ``field`` ("batch" or "seq") whose peak at ``level``
        ("allocated", "reserved", "device") on the most loaded rank stays
        within ``capacity`` bytes, the other fields as ``train`` has them; 0
        when even the smallest value the layout splits does not fit (1, or a
        multiple of 2 x cp for seq under context parallelism:
        :meth:`Parallel.step`). Keep a safety margin out of ``capacity``.
        When the next value is beyond what the estimate counts or models,
        :class:`Overflow` or :class:`NotSupported` is raised with the last
        value that could be counted as its ``value`` (a floor of the answer)."""
        if not isinstance(field, str):
            raise TypeError("field: expected a str, got %s" % type(field).__name__)
        if field not in _MAX_FIELDS:
            raise errors.InvalidArgument("field: %r is not one of %s"
                                         % (field, ", ".join(_MAX_FIELDS)))
        key = TRAIN_FIELDS[field].key
        if level not in LEVELS:
            raise ValueError("level: %r is not one of %s" % (level, ", ".join(LEVELS)))
        expect_u64(capacity, "capacity")
        ctx = self._context
        out = ctypes.c_int64()
        objects = _job(model, train, parallel)
        with locked(ctx, *(o._context for o in objects)):
            rc = LIB.llmem_estimate_max(
                self._handle, model._handle, train._handle,
                parallel._handle if parallel is not None else None, key, LEVELS[level],
                capacity, ctypes.byref(out))
            try:
                ctx.check(rc)
            except errors.Error as exc:
                if rc in (errors.EOVERFLOW, errors.ENOTSUP):  # *out: the last countable value
                    exc.value = out.value
                raise
        return out.value

    def sweep(self, model: Model, train: Train, batch: Optional[Sequence[int]] = None,
              seq: Optional[Sequence[int]] = None, *, level: str = "device",
              parallel: Optional[Parallel] = None) -> List[int]:
        """The peak at ``level`` ("allocated", "reserved", "device") on the
        most loaded rank of ``train`` at each point ``(batch[i], seq[i])``,
        in one call of the library (``llmem_estimate_sweep``): each the peak
        :meth:`run` gives at that point. ``None`` keeps the train's value at
        every point; two sequences must be the same length. ``train`` is left
        as it was; the estimate holds the last point's result. A point that
        fails raises its error, the message naming the point ("sweep point 3
        (batch 0, seq 2048): ..."), with the peaks of the points before it
        as its ``peaks``."""
        if level not in LEVELS:
            raise ValueError("level: %r is not one of %s" % (level, ", ".join(LEVELS)))
        objects = _job(model, train, parallel)
        columns = [_int64_column(name, values) for name, values in (("batch", batch),
                                                                     ("seq", seq))]
        lengths = {len(c) for c in columns if c is not None}
        if len(lengths) > 1:
            raise ValueError("sweep(): batch and seq differ in length (%s)"
                             % " and ".join(str(n) for n in sorted(lengths)))
        n = lengths.pop() if lengths else 0
        peaks = (ctypes.c_uint64 * n)()
        ctx = self._context
        with locked(ctx, *(o._context for o in objects)):
            rc = LIB.llmem_estimate_sweep(
                self._handle, model._handle, train._handle,
                parallel._handle if parallel is not None else None, columns[0], columns[1],
                n, LEVELS[level], peaks)
            try:
                ctx.check(rc)
            except errors.Error as exc:
                exc.peaks = list(peaks[:_failed_point(exc.message)])  # written up to it
                raise
        return list(peaks)

    def _u64(self, key: int, rank: Optional[int] = None) -> int:
        out = ctypes.c_uint64()
        if rank is None:
            rc = LIB.llmem_estimate_get_u64(self._handle, key, ctypes.byref(out))
        else:
            rc = LIB.llmem_estimate_rank_get_u64(self._handle, rank, key, ctypes.byref(out))
        self._context.check(rc)
        return out.value

    def _phase(self, phase: int, rank: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_estimate_rank_phase_bytes(self._handle, rank, phase,
                                                                ctypes.byref(out)))
        return out.value

    def _term(self, kind: int, name: str, rank: int) -> Term:
        term = ctypes.c_void_p()
        self._context.check(LIB.llmem_estimate_rank_term(self._handle, rank, kind,
                                                         ctypes.byref(term)))
        components = {}
        comp_name, comp_bytes = ctypes.c_char_p(), ctypes.c_uint64()
        for index in range(LIB.llmem_term_component_count(term)):
            self._context.check(LIB.llmem_term_component(term, index, ctypes.byref(comp_name),
                                                         ctypes.byref(comp_bytes)))
            components[comp_name.value.decode()] = comp_bytes.value
        return Term(name=name, bytes_at_peak=LIB.llmem_term_bytes_at_peak(term),
                    max_bytes=LIB.llmem_term_max_bytes(term), components=components)

    def _peaks(self, rank: int) -> Dict[str, Any]:
        """A rank's peaks, phases and terms (a Result takes its most loaded
        rank's)."""
        return dict(
            peak_allocated=self._u64(_PEAK_ALLOCATED, rank),
            peak_reserved=self._u64(_PEAK_RESERVED, rank),
            peak_device=self._u64(_PEAK_DEVICE, rank),
            peak_phase=dict(PHASES).get(self._u64(_PEAK_PHASE, rank)),
            phase_bytes={name: self._phase(value, rank) for value, name in PHASES},
            terms={name: self._term(kind, name, rank) for kind, name in TERMS})

    def _timeline(self, rank: int, peak_allocated: int) -> Optional[Timeline]:
        count = LIB.llmem_estimate_timeline_count(self._handle, rank)
        if count == 0:
            return None
        phases = dict(PHASES)
        phase, part, layer = ctypes.c_int(), ctypes.c_char_p(), ctypes.c_int64()
        terms = [ctypes.c_uint64() for _ in range(4)]
        points = []
        for index in range(count):
            self._context.check(LIB.llmem_estimate_timeline_point(
                self._handle, rank, index, ctypes.byref(phase), ctypes.byref(part),
                ctypes.byref(layer), *(ctypes.byref(t) for t in terms)))
            points.append(TimelinePoint(
                index=index, phase=phases[phase.value], part=part.value.decode(),
                layer=layer.value, parameters=terms[0].value, optimizer=terms[1].value,
                data=terms[2].value, temporary=terms[3].value))
        # The library's peak is the largest of the points kept: when the room
        # filled, the step's peak may lie past them.
        peak: Optional[int] = LIB.llmem_estimate_timeline_peak(self._handle, rank)
        if count >= self._timeline_room and points[peak].total != peak_allocated:
            peak = None
        return Timeline(points=tuple(points), peak=peak)

    def _rank(self, rank: int) -> Rank:
        peaks = self._peaks(rank)
        return Rank(index=rank, stage=self._u64(_RANK_STAGE, rank),
                    stages=self._u64(_RANK_STAGES, rank),
                    layer_first=self._u64(_RANK_LAYER_FIRST, rank),
                    layers=self._u64(_RANK_LAYERS, rank),
                    chunks=self._u64(_RANK_CHUNKS, rank),
                    chunk_stride=self._u64(_RANK_CHUNK_STRIDE, rank),
                    gpus=self._u64(_RANK_GPUS, rank),
                    micro_batches_in_flight=self._u64(_RANK_IN_FLIGHT_X1000, rank) / 1000,
                    host_bytes=self._u64(_RANK_HOST, rank),
                    timeline=self._timeline(rank, peaks["peak_allocated"]), **peaks)

    def _result(self) -> Result:
        peak_rank = LIB.llmem_estimate_peak_rank(self._handle)
        ranks = tuple(self._rank(r) for r in range(LIB.llmem_estimate_rank_count(self._handle)))
        # The estimate's own getters answer for the most loaded rank
        # (llmem_estimate_get_u64): its values, not asked for again.
        top = ranks[peak_rank]
        return Result(
            params_total=self._u64(_PARAMS_TOTAL),
            params_trainable=self._u64(_PARAMS_TRAINABLE),
            params_active=self._u64(_PARAMS_ACTIVE),
            peak_allocated=top.peak_allocated, peak_reserved=top.peak_reserved,
            peak_device=top.peak_device, peak_phase=top.peak_phase,
            phase_bytes=dict(top.phase_bytes), terms=dict(top.terms),
            peak_rank=peak_rank, ranks=ranks, timeline=top.timeline)


def _failed_point(message: str) -> int:
    """The index of the point a failed sweep stopped at, from the library's
    message ("sweep point 3 (batch 0, seq 2048): ...", llmem.h); 0 for a
    failure before any point (a bad argument)."""
    found = re.match(r"sweep point (\d+) ", message)
    return int(found.group(1)) if found else 0


def _int64_column(name: str, values: Optional[Iterable[int]]) -> Any:
    """Integers as a C array of int64 (None stays None): one conversion for
    the whole column; a bad element is named by its index. Only ints, as the
    fields take them: array() would take True as 1 (and any __index__), and
    read bytes as raw int64s."""
    if values is None:
        return None
    if isinstance(values, (str, bytes, bytearray, memoryview)) or \
            not isinstance(values, collections.abc.Iterable):
        raise TypeError("sweep(): %s: expected a sequence of ints, got %s"
                        % (name, type(values).__name__))
    values = values if isinstance(values, (list, tuple)) else list(values)
    if any(kind is bool or not issubclass(kind, int) for kind in set(map(type, values))):
        i, v = next((i, v) for i, v in enumerate(values)
                    if isinstance(v, bool) or not isinstance(v, int))
        raise TypeError("sweep(): %s[%d]: expected an int, got %s" % (name, i, type(v).__name__))
    try:
        column = array.array("q", values)
    except OverflowError:
        i, v = next((i, v) for i, v in enumerate(values) if not -(1 << 63) <= v < (1 << 63))
        raise ValueError("sweep(): %s[%d]: %d does not fit 64 bits" % (name, i, v)) from None
    return (ctypes.c_int64 * len(column)).from_buffer(column)  # which it keeps alive


def _split(function: str, settings: Dict[str, Any]) -> Tuple[Dict[str, Any], ...]:
    """Settings by table: model, training and layout fields."""
    tables = (MODEL_FIELDS, TRAIN_FIELDS, PARALLEL_FIELDS)
    objects = (MODEL, TRAIN, PARALLEL)
    split: Tuple[Dict[str, Any], ...] = ({}, {}, {})
    for keyword, value in settings.items():
        alias = ALIASES.get(keyword)
        for table, object, found in zip(tables, objects, split):
            if keyword in table or (alias is not None and alias.object == object):
                found[keyword] = value
                break
        else:
            raise unknown_keyword(function, keyword, [k for table in tables for k in table])
    return split


def _with_job(function: str, model: Union[str, Model], context: Optional[Context],
              settings: Dict[str, Any], body: Callable[[Model, Train, Estimate, Parallel], Any]) -> Any:
    """``body(model, train, estimate, layout)`` on the handles of ``settings``
    (named as for :func:`estimate`), a preset given by name opened first."""
    model_fields, train_fields, layout_fields = _split(function + "()", settings)
    if isinstance(model, str):
        ctx = resolve(context)
        with Model.from_preset(model, context=ctx, **model_fields) as owned:
            return _with_job(function, owned, ctx, dict(train_fields, **layout_fields), body)
    if not isinstance(model, Model):
        raise TypeError("%s(): model must be a preset name or a llmem.Model, not %s"
                        % (function, type(model).__name__))
    if model_fields:
        raise TypeError("%s(): model fields (%s) change a preset given by name"
                        % (function, ", ".join(model_fields)))
    ctx = context if context is not None else model._context
    with Train(context=ctx, **train_fields) as train, Estimate(context=ctx) as est, \
            Parallel(context=ctx, **layout_fields) as layout:
        return body(model, train, est, layout)


def largest_fitting(model: Union[str, Model], field: str = "batch", *,
                    capacity: Optional[int] = None, margin: Optional[float] = None,
                    level: str = "device", context: Optional[Context] = None,
                    **settings: Any) -> int:
    """The largest batch (or ``field="seq"``) whose peak fits one GPU (see
    :meth:`Estimate.max`), with the settings of :func:`estimate` (not the
    field it solves: ``batch=`` with ``field="batch"`` raises TypeError, as
    the command refuses ``--max batch --batch N``).

    It fits the capacity, ``capacity`` (bytes) or else the usable memory of
    ``gpu=NAME``, less ``margin`` percent kept free (default 5, as
    :func:`estimate` and ``--margin``): exactly what ``llmem estimate --max
    batch --gpu NAME`` (or ``--capacity SIZE``) ``[--margin P]`` answers,
    ``largest_fitting("meta-llama/Llama-3.1-8B", gpu="H100", seq=4096, dp=8,
    zero=3)``. ``capacity`` wins over the GPU's memory, as ``--capacity``
    does; ``margin=0`` makes it the budget itself (what ``capacity`` alone
    meant before 0.2.0). 0 when even the smallest value does not fit."""
    function = "largest_fitting()"
    if capacity is None and "gpu" not in settings:
        raise TypeError("%s needs capacity= (bytes) or gpu= (a GPU's name)" % function)
    if capacity is not None:
        expect_u64(capacity, "capacity")
    if isinstance(field, str) and field in settings:
        raise TypeError("%s: %s=%r: it solves %s (the answer): leave it out"
                        % (function, field, settings[field], field))
    permille = _margin_permille(function, DEFAULT_MARGIN if margin is None else margin)

    def body(m: Model, train: Train, est: Estimate, layout: Parallel) -> int:
        usable = _capacity(train, capacity)
        if usable is None:  # gpu=None: no GPU named
            raise TypeError("%s needs capacity= (bytes) or gpu= (a GPU's name)" % function)
        return est.max(m, train, field, capacity=_budget(usable, permille), level=level,
                       parallel=layout)

    return _with_job("largest_fitting", model, context, settings, body)


def sweep(model: Union[str, Model], batch: Optional[Sequence[int]] = None,
          seq: Optional[Sequence[int]] = None, *, level: str = "device",
          context: Optional[Context] = None, **settings: Any) -> List[int]:
    """The peak of each point ``(batch[i], seq[i])`` (see :meth:`Estimate.sweep`)
    with the other settings of :func:`estimate`, in one call of the library:
    ``sweep("meta-llama/Llama-3.1-8B", batch=[1, 2, 4, 8], seq=[4096] * 4,
    attention="flash", dp=8, sharding="zero3")``."""
    return _with_job("sweep", model, context, settings,
                     lambda m, train, est, layout: est.sweep(m, train, batch, seq, level=level,
                                                             parallel=layout))


def estimate(model: Union[str, Model], *, context: Optional[Context] = None,
             parallel: Optional[Parallel] = None, timeline: bool = False,
             expand_timeline: bool = False, capacity: Optional[int] = None,
             margin: Optional[float] = None, **settings: Any) -> Result:
    """Estimate one training step in one call.

    ``model`` is a preset name (``"meta-llama/Llama-3.1-8B"``) or a
    :class:`Model`. ``settings`` are training fields (``batch=4, seq=2048,
    attention="flash"``), layout fields (``dp=8, sharding="zero3"``; or a
    :class:`Parallel` as ``parallel``) and, with a preset name, model fields
    that change it (``layers=16``), all named like the ``llmem estimate``
    flags (``zero=3``, ``fsdp="full"``, ``attn_bias=1`` too). ``timeline=True``
    records the step's timeline (``Result.timeline``; see
    :meth:`Estimate.record_timeline`), ``expand_timeline=True`` with every
    layer op by op.

    With ``gpu="H100"`` (a training field: the GPU's CUDA context and
    workspace) or ``capacity=`` (bytes, which wins over the GPU's usable
    memory, as ``--capacity``), the Result has the verdict of ``llmem
    estimate --json``'s ``gpu`` object: ``fits``, ``headroom``, ``budget``,
    ``margin_bytes`` and ``usable``, with ``margin`` percent of the memory
    kept free (default 5, as ``--margin``).
    """
    function = "estimate()"
    if capacity is not None and expect_u64(capacity, "capacity") == 0:
        raise ValueError("%s: capacity 0: expected bytes above 0 (as --capacity)" % function)
    if margin is not None and capacity is None and settings.get("gpu") is None:
        raise TypeError("%s: margin= is what the verdict keeps free of a GPU's memory: "
                        "give gpu= or capacity= too" % function)
    permille = _margin_permille(function, DEFAULT_MARGIN if margin is None else margin)
    model_fields, train_fields, layout_fields = _split(function, settings)
    if parallel is not None and layout_fields:
        raise TypeError("estimate(): layout fields (%s) and parallel= both give the layout"
                        % ", ".join(layout_fields))
    if isinstance(model, str):
        ctx = resolve(context)
        with Model.from_preset(model, context=ctx, **model_fields) as owned:
            return estimate(owned, context=ctx, parallel=parallel, timeline=timeline,
                            expand_timeline=expand_timeline, capacity=capacity,
                            margin=margin, **train_fields, **layout_fields)
    if not isinstance(model, Model):
        raise TypeError("estimate(): model must be a preset name or a llmem.Model, not %s"
                        % type(model).__name__)
    if model_fields:
        raise TypeError("estimate(): model fields (%s) change a preset given by name; set "
                        "them on the Model instead" % ", ".join(model_fields))
    ctx = context if context is not None else model._context
    with Train(context=ctx, **train_fields) as train, Estimate(context=ctx) as est:
        if timeline or expand_timeline:
            est.record_timeline(expand_timeline)
        if parallel is None and layout_fields:
            with Parallel(context=ctx, **layout_fields) as layout:
                result = est.run(model, train, layout)
        else:
            result = est.run(model, train, parallel)
        usable = _capacity(train, capacity)
    if usable is None:
        return result
    return _with_verdict(result, usable, permille)


def _with_verdict(result: Result, usable: int, permille: int) -> Result:
    """``result`` with the verdict on its device peak against ``usable`` bytes
    less ``permille`` kept free (cli_gpu_fit_of)."""
    budget = _budget(usable, permille)
    headroom = max(-(1 << 63), min((1 << 63) - 1, budget - result.peak_device))
    return dataclasses.replace(result, usable=usable, margin_permille=permille,
                               margin_bytes=usable - budget, budget=budget, headroom=headroom,
                               fits=result.peak_device <= budget)
