# SPDX-License-Identifier: MIT
"""MIG: a GPU's MIG profiles, which of them (or the whole GPU) holds a job,
and many jobs packed onto a fleet of GPUs with valid MIG layouts.

The profiles are the library's catalog (``llmem_mig_profile_*``); fitting is
``llmem_fit_*`` (``llmem fit``), packing ``llmem_pack_*`` (``llmem pack``),
with the outputs schedulers consume: mig-parted YAML, ``nvidia-smi``
commands and each job's Kubernetes resource. docs/mig.md has the rules.

    >>> import llmem
    >>> llmem.mig_profile("A100-80GB", "3g.39gb").name        # a driver's name
    '3g.40gb'
    >>> llmem.fit(9 * 2**30, "H100", running=["4g.40gb@0", ("1g.10gb", 4)]).best.start
    5
    >>> result = llmem.pack([("a", 30 * 2**30), ("b", 9 * 2**30)], {"A100-80GB": 2})
    >>> result.job("a").profile, result.mig_parted
"""
from __future__ import annotations

import collections.abc
import ctypes
import enum
import functools
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple, Union

from . import errors
from ._configurable import Configurable, add_properties
from ._library import LIB
from .context import Context, c_string, expect_u64, resolve
from .estimate import DEFAULT_MARGIN, LEVELS, Gpu, Result, _margin_permille
from .fields import FIT_FIELDS, PACK_FIELDS

# Keys of include/llmem.h; the library never renumbers them.
# enum llmem_mig_key
_MIG_USABLE_BYTES = 1
_MIG_COMPUTE_SLICES = 2
_MIG_SLOTS = 3
_MIG_STARTS = 4
_MIG_MAX_COUNT = 5
_MIG_SMS = 6
_MIG_VARIANT = 7
_MIG_UNCERTAIN = 8
_MIG_SINCE_DRIVER = 9
# enum llmem_mig_uncertain
_MIG_MEMORY_ESTIMATED = 1
_MIG_PLACEMENTS_INFERRED = 2
# enum llmem_gpu_key
_GPU_MIG_PROFILES = 7
# enum llmem_fit_result
_FIT_PROFILE = 1
_FIT_WHOLE_GPU = 2
_FIT_FITS = 3
_FIT_USABLE_BYTES = 4
_FIT_NEED_BYTES = 5
_FIT_REQUIRED_BYTES = 6
_FIT_HEADROOM_BYTES = 7
_FIT_SHORTFALL_BYTES = 8
_FIT_COMPUTE_SLICES = 9
_FIT_BUDGET_BYTES = 10
_FIT_PLACEABLE = 11
_FIT_START = 12
_FIT_STARTS = 13
# enum llmem_pack_result
_PACK_GPUS_USED = 1
_PACK_LOWER_BOUND = 2
_PACK_BOUND_MEMORY = 3
_PACK_BOUND_COMPUTE = 4
_PACK_BOUND_COUNT = 5
_PACK_BOUND_LP = 6
_PACK_OPTIMAL = 7
_PACK_JOBS_PLACED = 8
_PACK_JOBS_UNPLACED = 9
_PACK_JOBS_BOUND = 10
# enum llmem_pack_job_key
_JOB_STATUS = 1
_JOB_GPU = 2
_JOB_PROFILE = 3
_JOB_START = 4
_JOB_NEED_BYTES = 5
_JOB_USABLE_BYTES = 6
_JOB_HEADROOM_BYTES = 7
_JOB_SHORTFALL_BYTES = 8
_JOB_LARGEST_GPU = 9
_JOB_LARGEST_PROFILE = 10
# enum llmem_pack_gpu_key
_PACK_GPU_TYPE = 1
_PACK_GPU_MIG = 2
_PACK_GPU_NODE = 4
_PACK_GPU_DEVICE = 5

# enum llmem_mig_variant, by value, named as `llmem gpus --mig --json` names them.
VARIANTS = ("plain", "me", "gfx", "me.all", "no-me")
# The levels a fitted or packed job's bytes may be given at (enum llmem_level).
_JOB_LEVELS = ("device", "reserved")
# The name llmem_fit_name() and `llmem pack` give the whole GPU (MIG disabled).
WHOLE_GPU = "whole"
_WHOLE_GPU_RESOURCE = "nvidia.com/gpu"
_INT64_MAX = (1 << 63) - 1

GpuName = Union[str, bytes, Gpu]


# --- the catalog ---------------------------------------------------------------

@dataclass(frozen=True)
class MigDriverName:
    """One run of driver branches that give a profile the same name, as
    ``llmem gpus --mig --json``'s ``driver_names``: from ``first_driver``
    (0: every branch before) to ``last_driver`` (None: the newest)."""

    name: str
    resource: str
    first_driver: int
    last_driver: Optional[int]


@dataclass(frozen=True)
class MigProfile:
    """A MIG profile of a GPU (``llmem gpus --mig``): ``name`` as the
    ``driver`` branch names it (0: the newest, the catalog's ``catalog_name``;
    535 names the A100 80 GB's ``3g.40gb`` ``3g.39gb``) with its Kubernetes
    ``resource``; ``usable_bytes`` inside an instance (``nvidia-smi mig
    -lgip``); ``compute_slices`` and ``slots`` of the GPU's grid; the
    placement ``starts`` it may be created at (in slots); ``max_count`` on one
    GPU; ``sms`` (0: unknown); ``variant`` ("plain", "me", "gfx", "me.all",
    "no-me"; fitting and packing use plain profiles only); whether the memory
    is estimated and the placements inferred rather than observed; the first
    driver branch that has it (``since_driver``, 0: every branch) and where
    the values come from. ``gpu`` is the GPU's canonical name, ``gpu_index``
    and ``index`` the catalog's indices, stable within one library version
    only: look profiles up by name (:func:`mig_profile`)."""

    gpu: str
    gpu_index: int
    index: int
    name: str
    catalog_name: str
    driver: int
    resource: str
    usable_bytes: int
    compute_slices: int
    slots: int
    starts: Tuple[int, ...]
    max_count: int
    sms: int
    variant: str
    memory_estimated: bool
    placements_inferred: bool
    since_driver: int
    source: str

    def driver_names(self) -> Tuple[MigDriverName, ...]:
        """The profile's names over every driver branch from its first to the
        newest (``llmem gpus --mig --json``'s ``driver_names``)."""
        return _driver_names(self.gpu_index, self.index, self.since_driver)


def _text(value: Optional[bytes]) -> str:
    return value.decode() if value is not None else ""


def _bits(mask: int) -> Tuple[int, ...]:
    return tuple(s for s in range(64) if mask >> s & 1)


def _mig_u64(gpu: int, profile: int, key: int) -> int:
    out = ctypes.c_uint64()
    rc = LIB.llmem_mig_profile_get_u64(gpu, profile, key, ctypes.byref(out))
    if rc != errors.OK:  # indices from the catalog: never
        raise errors.error_class(rc)("MIG profile %d of GPU %d: key %d: %s" % (
            profile, gpu, key, LIB.llmem_status_str(rc).decode()), rc)
    return out.value


def _driver_max() -> int:
    return FIT_FIELDS["driver"].maximum


@functools.lru_cache(maxsize=None)  # the catalog is const data
def _driver_names(gpu: int, profile: int, since: int) -> Tuple[MigDriverName, ...]:
    runs: List[List[Any]] = []
    for driver in range(since if since > 0 else 1, _driver_max() + 1):
        name = LIB.llmem_mig_profile_driver_name(gpu, profile, driver)
        if name is None:
            continue
        if runs and runs[-1][0] == name:
            runs[-1][3] = driver
            continue
        runs.append([name, LIB.llmem_mig_profile_driver_resource(gpu, profile, driver),
                     since if not runs else driver, driver])
    if runs:
        runs[-1][3] = None
    return tuple(MigDriverName(name=_text(n), resource=_text(r), first_driver=first,
                               last_driver=last) for n, r, first, last in runs)


@functools.lru_cache(maxsize=None)  # the catalog is const data
def _profile_at(gpu: int, profile: int, driver: int) -> Optional[MigProfile]:
    """Profile ``profile`` of GPU ``gpu`` as branch ``driver`` has it, or
    None when that branch lacks it."""
    name = LIB.llmem_mig_profile_driver_name(gpu, profile, driver)
    if name is None:
        return None
    uncertain = _mig_u64(gpu, profile, _MIG_UNCERTAIN)
    variant = _mig_u64(gpu, profile, _MIG_VARIANT)
    return MigProfile(
        gpu=_text(LIB.llmem_gpu_name(gpu)), gpu_index=gpu, index=profile, name=name.decode(),
        catalog_name=_text(LIB.llmem_mig_profile_name(gpu, profile)), driver=driver,
        resource=_text(LIB.llmem_mig_profile_driver_resource(gpu, profile, driver)),
        usable_bytes=_mig_u64(gpu, profile, _MIG_USABLE_BYTES),
        compute_slices=_mig_u64(gpu, profile, _MIG_COMPUTE_SLICES),
        slots=_mig_u64(gpu, profile, _MIG_SLOTS),
        starts=_bits(_mig_u64(gpu, profile, _MIG_STARTS)),
        max_count=_mig_u64(gpu, profile, _MIG_MAX_COUNT), sms=_mig_u64(gpu, profile, _MIG_SMS),
        variant=VARIANTS[variant] if variant < len(VARIANTS) else str(variant),
        memory_estimated=bool(uncertain & _MIG_MEMORY_ESTIMATED),
        placements_inferred=bool(uncertain & _MIG_PLACEMENTS_INFERRED),
        since_driver=_mig_u64(gpu, profile, _MIG_SINCE_DRIVER),
        source=_text(LIB.llmem_mig_profile_source(gpu, profile)))


def _catalog(gpu: int, profile: int) -> MigProfile:
    """A profile as the catalog names it (driver 0 has every profile)."""
    found = _profile_at(gpu, profile, 0)
    assert found is not None
    return found


def _profile_count(gpu: int) -> int:
    out = ctypes.c_uint64()
    LIB.llmem_gpu_get_u64(gpu, _GPU_MIG_PROFILES, ctypes.byref(out))
    return out.value


def _gpu_index(ctx: Context, gpu: Any, name: str = "gpu") -> int:
    """The catalog index of ``gpu``: a :class:`Gpu`, or any name
    ``llmem_gpu_find`` accepts (NotFound with the library's message). Call
    with the context's lock held."""
    if isinstance(gpu, Gpu):
        found = LIB.llmem_gpu_name(gpu.index) if 0 <= gpu.index < LIB.llmem_gpu_count() \
            else None
        if found is None or found.decode() != gpu.name:
            raise errors.NotFound("%s: %s is not this library's GPU %d" % (
                name, gpu.name, gpu.index), errors.ENOTFOUND)
        return gpu.index
    if not isinstance(gpu, (str, bytes)):
        raise TypeError("%s: expected a GPU's name or a llmem.Gpu, got %s"
                        % (name, type(gpu).__name__))
    index = ctypes.c_size_t()
    ctx.check(LIB.llmem_gpu_find(ctx._handle, c_string(gpu, name), ctypes.byref(index)))
    return index.value


def _driver(value: Any, name: str = "driver") -> int:
    """A driver branch, 0 to 999, as the fit and pack settings take it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s: expected an int (the driver's major branch, 535), got %s"
                        % (name, type(value).__name__))
    if not 0 <= value <= _driver_max():
        raise errors.OutOfRange("%s: %d out of range [0, %d]" % (name, value, _driver_max()),
                                errors.ERANGE)
    return value


def _driver_lacks(profile: MigProfile, driver: int) -> errors.NotFound:
    """What a lookup raises for a profile the driver branch does not have."""
    return errors.NotFound("driver branch %d has no %s%s" % (
        driver, profile.catalog_name,
        " (from R%d on)" % profile.since_driver if profile.since_driver else ""),
        errors.ENOTFOUND)


def mig_profiles(gpu: GpuName, *, driver: int = 0,
                 context: Optional[Context] = None) -> Tuple[MigProfile, ...]:
    """The MIG profiles of ``gpu`` (a name, as :func:`llmem.gpu` takes it, or
    a :class:`Gpu`), in the catalog's order, as driver branch ``driver`` (0:
    the newest) has and names them: ``llmem gpus --mig [--driver N]``.
    Empty for a GPU without MIG."""
    branch = _driver(driver)
    ctx = resolve(context)
    with ctx._lock:
        index = _gpu_index(ctx, gpu)
    found = (_profile_at(index, p, branch) for p in range(_profile_count(index)))
    return tuple(p for p in found if p is not None)


def mig_profile(gpu: GpuName, name: Union[str, bytes], *, driver: int = 0,
                context: Optional[Context] = None) -> MigProfile:
    """The MIG profile of ``gpu`` that ``name`` names (``llmem_mig_profile_find``):
    its catalog name or any driver branch's ("3g.39gb", as nvidia-smi lists
    the A100 80 GB's ``3g.40gb`` on R535), case-insensitively; described as
    branch ``driver`` has it. An unknown name raises :class:`NotFound` with
    the library's message (it lists the GPU's profiles), as does a profile
    the branch lacks."""
    branch = _driver(driver)
    data = c_string(name, "name")
    ctx = resolve(context)
    out = ctypes.c_size_t()
    with ctx._lock:
        index = _gpu_index(ctx, gpu)
        ctx.check(LIB.llmem_mig_profile_find(ctx._handle, index, data, ctypes.byref(out)))
    found = _profile_at(index, out.value, branch)
    if found is None:
        raise _driver_lacks(_catalog(index, out.value), branch)
    return found


# --- fitting -------------------------------------------------------------------

@dataclass(frozen=True)
class RunningInstance:
    """A MIG instance a GPU runs and keeps: its profile (as the fit's driver
    branch names it) and placement start, as ``nvidia-smi mig -lgi`` shows
    them (``3g.40gb@4``)."""

    name: str
    start: int
    profile: MigProfile

    def __str__(self) -> str:
        return "%s@%d" % (self.name, self.start)


@dataclass(frozen=True)
class FitOption:
    """One option of a fit (``llmem fit --json``'s ``options``): a MIG
    profile (``profile``; None for the whole GPU, ``whole_gpu``, named
    "whole") or the whole GPU with MIG disabled. Bytes as docs/mig.md
    counts them: ``usable_bytes`` U, ``budget_bytes`` B = U less the margin
    kept free (``margin_bytes``), the job's ``need_bytes`` N (device level,
    CUDA context included), ``required_bytes`` (the least U whose budget
    holds N), ``headroom_bytes`` (B - N where it holds N, else 0) and
    ``shortfall_bytes`` (the usable bytes it lacks, else 0; 2^64 - 1 for a
    need beyond 64 bits). ``fits`` asks for the memory, the compute slices
    asked and ``placeable``: whether one more instance can be created next
    to the running instances, at ``start`` (the start that leaves most
    placements open; None when not placeable) of its open ``starts``."""

    name: str
    profile: Optional[MigProfile]
    whole_gpu: bool
    fits: bool
    resource: str
    usable_bytes: int
    compute_slices: int
    budget_bytes: int
    need_bytes: int
    required_bytes: int
    headroom_bytes: int
    shortfall_bytes: int
    placeable: bool
    start: Optional[int]
    starts: Tuple[int, ...]

    @property
    def margin_bytes(self) -> int:
        """The bytes kept free: ceil(usable_bytes x margin / 1000)."""
        return self.usable_bytes - self.budget_bytes


@dataclass(frozen=True)
class FitResult:
    """Which options of ``gpu`` hold a job (``llmem fit --json``): every
    plain MIG profile of the ``driver`` branch, smallest usable memory
    first, then the whole GPU, with ``margin_permille`` of each kept free.
    ``need_bytes`` is the job's device-level need, ``required_bytes`` the
    least usable bytes that hold it; ``running`` the instances the GPU
    keeps. ``best`` is the smallest option that fits (None when none does),
    ``fits`` whether there is one."""

    gpu: str
    level: str
    margin_permille: int
    min_compute: int
    driver: int
    need_bytes: int
    required_bytes: int
    running: Tuple[RunningInstance, ...]
    options: Tuple[FitOption, ...]
    best_index: Optional[int]

    @property
    def best(self) -> Optional[FitOption]:
        """The smallest option that fits (``llmem_fit_best``), or None."""
        return self.options[self.best_index] if self.best_index is not None else None

    @property
    def fits(self) -> bool:
        """Whether some option holds the job (and can be created)."""
        return self.best_index is not None

    def option(self, name: str) -> FitOption:
        """The option named ``name`` ("1g.10gb", "whole"); KeyError if none."""
        for found in self.options:
            if found.name == name:
                return found
        raise KeyError("%s has no option %r (options: %s)" % (
            self.gpu, name, ", ".join(o.name for o in self.options)))


def _level(value: Any, function: str) -> int:
    """A job's level by name: "device" or "reserved" (enum llmem_level)."""
    if not isinstance(value, str):
        raise TypeError("%s: level: expected \"device\" or \"reserved\", got %s"
                        % (function, type(value).__name__))
    if value not in _JOB_LEVELS:
        raise errors.InvalidArgument("%s: level %r: expected device|reserved (a job's "
                                     "device-level peak, or one without the CUDA context)"
                                     % (function, value), errors.EINVAL)
    return LEVELS[value]


def _job_bytes(job: Any, level: str, name: str, function: str) -> Tuple[int, str]:
    """A job's bytes and level: a count of bytes at ``level``, or an estimate's
    :class:`Result`, whose device-level peak (its most loaded rank's) it is."""
    if isinstance(job, Result):
        if level != "device":
            raise errors.InvalidArgument("%s: %s: an estimate's peak_device is device-level, "
                                         "not %s" % (function, name, level), errors.EINVAL)
        return job.peak_device, level
    if isinstance(job, bool) or not isinstance(job, int):
        raise TypeError("%s: %s: expected bytes (an int) or a llmem.Result, got %s"
                        % (function, name, type(job).__name__))
    return expect_u64(job, name), level


def _instance(item: Any, position: int) -> Tuple[str, int, Optional[int]]:
    """A running instance as given, as (name, start, size or None): a
    ("3g.40gb", 4) pair, or the text ``llmem fit --running`` takes:
    "3g.40gb@4", "3g.40gb@4:4" (``nvidia-smi mig -lgi``'s Placement
    Start:Size whole; the size must be the profile's) or "3g.40gb:4"
    (``nvidia-smi mig -cgi``'s tuple)."""
    where = "running[%d]" % position
    if isinstance(item, tuple) and len(item) == 2:
        name, start = item
        if not isinstance(name, (str, bytes)):
            raise TypeError("%s: the profile: expected a str, got %s"
                            % (where, type(name).__name__))
        if isinstance(start, bool) or not isinstance(start, int):
            raise TypeError("%s: the start: expected an int, got %s"
                            % (where, type(start).__name__))
        if not 0 <= start < 2 ** 64:
            raise errors.OutOfRange("%s %s@%d: a start is a slot, 0 or more"
                                    % (where, name, start), errors.ERANGE)
        return (name.decode() if isinstance(name, bytes) else name), start, None
    if not isinstance(item, str):
        raise TypeError("%s: expected \"NAME@START\" or a (name, start) pair, got %s"
                        % (where, type(item).__name__))
    name, at, rest = item.partition("@")
    if at:
        start_text, colon, size_text = rest.partition(":")
        numbers = [start_text, size_text] if colon else [start_text]
    else:
        name, colon, start_text = item.rpartition(":")
        numbers = [start_text] if colon else []
    if not name or not numbers or \
            not all(n.isascii() and n.isdigit() and int(n) <= 1000 for n in numbers):
        raise errors.InvalidArgument(
            "%s %r: expected NAME@START (3g.40gb@4: a profile and its placement start, as "
            "nvidia-smi mig -lgi lists them), NAME@START:SIZE or NAME:START" % (where, item),
            errors.EINVAL)
    return name, int(numbers[0]), int(numbers[1]) if len(numbers) == 2 else None


class Fit(Configurable):
    """A fit (``llmem_fit``): which MIG profiles of a GPU, and whether the
    whole GPU, hold a job. ``Fit(margin_permille=50, min_compute=2,
    driver=535)``; the keywords are :data:`llmem.FIT_FIELDS`, read from the
    library. Reusable: :meth:`run` allocates nothing in the library."""

    _free = LIB.llmem_fit_free
    _what = "fit"
    _fields = FIT_FIELDS
    _set_int = staticmethod(LIB.llmem_fit_set_int)
    _set_str = staticmethod(LIB.llmem_fit_set_str)
    _get_int = staticmethod(LIB.llmem_fit_get_int)

    def __init__(self, *, context: Optional[Context] = None, **settings: Any) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_fit_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self.set(**settings)

    def run(self, job: Union[int, Result], gpu: GpuName, *, level: str = "device",
            running: Iterable[Union[str, Tuple[str, int]]] = ()) -> FitResult:
        """Fit ``job`` (bytes at ``level``: "device", CUDA context included,
        or "reserved", without it; or an estimate's :class:`Result`, its
        device peak) to ``gpu``, next to the MIG instances it runs and keeps
        (``running``: "3g.40gb@4" strings or ("3g.40gb", 4) pairs, by any
        name :func:`mig_profile` takes). A running instance the GPU cannot
        hold as given raises the library's error naming it (NotFound for an
        unknown profile, OutOfRange for a start that is none of its
        placements, InvalidArgument for overlapping slots, a profile past
        its count or one the driver branch lacks)."""
        function = "Fit.run()"
        code = _level(level, function)
        need, level = _job_bytes(job, level, "job", function)
        given = self._running(running)
        ctx = self._context
        with ctx._lock:
            handle = self._handle
            index = _gpu_index(ctx, gpu)
            instances = self._declare(index, given)
            ctx.check(LIB.llmem_fit_run(handle, index, need, code))
            return self._result(index, level, instances)

    @staticmethod
    def _running(running: Any) -> List[Tuple[str, int, Optional[int]]]:
        if isinstance(running, (str, bytes)) or \
                not isinstance(running, collections.abc.Iterable):
            raise TypeError("running: expected a list of \"NAME@START\" or (name, start), "
                            "got %s" % type(running).__name__)
        return [_instance(item, position) for position, item in enumerate(running)]

    def _declare(self, gpu: int, given: List[Tuple[str, int, Optional[int]]]
                 ) -> Tuple[RunningInstance, ...]:
        """Declare the running instances on the GPU (the lock held)."""
        ctx, handle = self._context, self._handle
        driver = int(self._int("driver"))
        ctx.check(LIB.llmem_fit_clear_running(handle))
        found = []
        for position, (name, start, size) in enumerate(given):
            profile = ctypes.c_size_t()
            ctx.check(LIB.llmem_mig_profile_find(ctx._handle, gpu, c_string(
                name, "running[%d]" % position), ctypes.byref(profile)))
            # a profile the branch lacks: named as the catalog names it, and
            # refused by the run ("driver branch 520 has no 1g.20gb")
            described = _profile_at(gpu, profile.value, driver) or _catalog(gpu, profile.value)
            if size is not None and size != described.slots:
                raise errors.InvalidArgument("running[%d] '%s@%d:%d': %s occupies %d slots, "
                                             "not %d" % (position, name, start, size,
                                                         described.name, described.slots, size),
                                             errors.EINVAL)
            ctx.check(LIB.llmem_fit_add_running(handle, profile.value, start))
            found.append(RunningInstance(name=described.name, start=start, profile=described))
        return tuple(found)

    def _int(self, keyword: str) -> int:
        out = ctypes.c_int64()
        self._context.check(LIB.llmem_fit_get_int(self._handle, FIT_FIELDS[keyword].key,
                                                  ctypes.byref(out)))
        return out.value

    def _u64(self, option: int, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_fit_get_u64(self._handle, option, key,
                                                  ctypes.byref(out)))
        return out.value

    def _option(self, gpu: int, option: int, driver: int) -> FitOption:
        whole = bool(self._u64(option, _FIT_WHOLE_GPU))
        profile = None if whole else _profile_at(gpu, self._u64(option, _FIT_PROFILE), driver)
        placeable = bool(self._u64(option, _FIT_PLACEABLE))
        return FitOption(
            name=_text(LIB.llmem_fit_name(self._handle, option)), profile=profile,
            whole_gpu=whole, fits=bool(self._u64(option, _FIT_FITS)),
            resource=_WHOLE_GPU_RESOURCE if profile is None else profile.resource,
            usable_bytes=self._u64(option, _FIT_USABLE_BYTES),
            compute_slices=self._u64(option, _FIT_COMPUTE_SLICES),
            budget_bytes=self._u64(option, _FIT_BUDGET_BYTES),
            need_bytes=self._u64(option, _FIT_NEED_BYTES),
            required_bytes=self._u64(option, _FIT_REQUIRED_BYTES),
            headroom_bytes=self._u64(option, _FIT_HEADROOM_BYTES),
            shortfall_bytes=self._u64(option, _FIT_SHORTFALL_BYTES),
            placeable=placeable, start=self._u64(option, _FIT_START) if placeable else None,
            starts=_bits(self._u64(option, _FIT_STARTS)))

    def _result(self, gpu: int, level: str, running: Tuple[RunningInstance, ...]) -> FitResult:
        driver = self._int("driver")
        options = tuple(self._option(gpu, i, driver)
                        for i in range(LIB.llmem_fit_count(self._handle)))
        best = ctypes.c_size_t()
        found = LIB.llmem_fit_best(self._handle, ctypes.byref(best)) == errors.OK
        return FitResult(gpu=_text(LIB.llmem_gpu_name(gpu)), level=level,
                         margin_permille=self._int("margin_permille"),
                         min_compute=self._int("min_compute"), driver=driver,
                         need_bytes=options[0].need_bytes,
                         required_bytes=options[0].required_bytes, running=running,
                         options=options, best_index=best.value if found else None)


add_properties(Fit, FIT_FIELDS)


def fit(job: Union[int, Result], gpu: GpuName, *, level: str = "device",
        margin: Optional[float] = None, min_compute: Optional[int] = None,
        driver: Optional[int] = None, running: Iterable[Union[str, Tuple[str, int]]] = (),
        context: Optional[Context] = None) -> FitResult:
    """Which MIG profile of ``gpu`` (or the whole GPU) holds ``job``, in one
    call: ``llmem fit --gpu H100 --bytes N [--bytes-level reserved]
    [--margin P] [--min-compute C] [--driver D] [--running LIST]``.

    ``job`` is bytes at ``level`` ("device", or "reserved": the GPU's CUDA
    context is added) or an estimate's :class:`Result` (its device peak:
    estimate it with ``gpu=`` the same GPU, whose context and workspace a MIG
    instance has). ``margin`` is the percent of each option kept free
    (default 5, read as ``--margin``), ``min_compute`` the compute slices
    the job needs, ``driver`` the NVIDIA driver's major branch (0: the
    newest), ``running`` the instances the GPU keeps ("3g.40gb@4" or
    ("3g.40gb", 4))."""
    settings: Dict[str, Any] = {"margin_permille": _margin_permille(
        "fit()", DEFAULT_MARGIN if margin is None else margin)}
    if min_compute is not None:
        settings["min_compute"] = min_compute
    if driver is not None:
        settings["driver"] = driver
    with Fit(context=context, **settings) as handle:
        return handle.run(job, gpu, level=level, running=running)


# --- packing -------------------------------------------------------------------

class PackStatus(str, enum.Enum):
    """Where a packed job ended up (enum llmem_pack_status), named as
    ``llmem pack --json`` names it; compares equal to that name."""

    PLACED = "placed"              # on a GPU, in a MIG instance or the whole GPU
    FITS_NOWHERE = "fits-nowhere"  # no option of any GPU type holds it
    NO_ROOM = "no-room"            # it fits, but the fleet's GPUs are all used

    def __str__(self) -> str:
        return self.value


_STATUS = {1: PackStatus.PLACED, 2: PackStatus.FITS_NOWHERE, 3: PackStatus.NO_ROOM}


@dataclass(frozen=True)
class PackJob:
    """A job to pack: ``id`` (any text, unique within one pack), its memory
    ``bytes`` at ``level`` ("device", or "reserved": each GPU type's CUDA
    context is added; an estimate's :class:`Result` gives its device peak),
    and the compute slices it needs at least (``min_compute``, 0: any)."""

    id: str
    bytes: Union[int, Result]
    level: str = "device"
    min_compute: int = 0


@dataclass(frozen=True)
class PackedJob:
    """One job's place in the layout (``llmem pack --json``'s ``jobs``).
    Placed: its ``gpu`` (index in the layout) of type ``gpu_type``, its
    ``profile`` (as the driver branch names it; "whole" for a whole GPU),
    ``start``, ``usable_bytes``, ``headroom_bytes`` and Kubernetes
    ``resource``. Fits nowhere: the GPU type and option that come closest
    (``largest_gpu``, ``largest_option``) and the usable bytes that option
    lacks (``shortfall_bytes``). ``need_bytes``: device level on its type
    (on ``largest_gpu`` when it fits nowhere; as given with no room). What
    does not apply is None."""

    id: str
    status: PackStatus
    need_bytes: int
    gpu: Optional[int] = None
    gpu_type: Optional[str] = None
    profile: Optional[str] = None
    start: Optional[int] = None
    usable_bytes: Optional[int] = None
    headroom_bytes: Optional[int] = None
    resource: Optional[str] = None
    largest_gpu: Optional[str] = None
    largest_option: Optional[str] = None
    shortfall_bytes: Optional[int] = None

    @property
    def placed(self) -> bool:
        """Whether it has a slice."""
        return self.status is PackStatus.PLACED


@dataclass(frozen=True)
class PackedInstance:
    """A MIG instance (or the whole GPU) of a packed GPU and its job's id."""

    profile: str
    start: int
    job: str


@dataclass(frozen=True)
class PackedGpu:
    """One GPU of the layout: ``index``, its ``type`` (catalog name), its
    ``node`` and ``device`` index within it (``gpus_per_node``), whether MIG
    is enabled, and its instances by start."""

    index: int
    type: str
    node: int
    device: int
    mig_enabled: bool
    instances: Tuple[PackedInstance, ...]


@dataclass(frozen=True)
class PackBounds:
    """The proven lower bounds on the GPUs (docs/mig.md): memory slices,
    compute slices, profiles that cannot share a GPU, and the configuration
    LP (0 when not solved)."""

    memory_slices: int
    compute_slices: int
    profile_counts: int
    lp: int


@dataclass(frozen=True)
class PackResult:
    """A packing (``llmem pack --json``), plain values: ``gpus_used`` against
    the proven ``lower_bound`` (the largest of ``bounds``), whether the
    layout is proven ``optimal``, the jobs placed and unplaced and the
    proven most any layout of the fleet places (``jobs_bound``); each GPU
    (``gpus``) and each job in the order added (``jobs``); and the outputs:
    ``mig_parted`` (NVIDIA mig-parted YAML, its config named
    ``config_name``) and ``nvidia_smi`` (the commands that create it)."""

    gpus_used: int
    lower_bound: int
    bounds: PackBounds
    optimal: bool
    jobs_placed: int
    jobs_unplaced: int
    jobs_bound: int
    gpus: Tuple[PackedGpu, ...]
    jobs: Tuple[PackedJob, ...]
    config_name: str
    mig_parted: str
    nvidia_smi: str

    @property
    def gap(self) -> int:
        """GPUs used beyond the lower bound."""
        return self.gpus_used - self.lower_bound

    def job(self, id: str) -> PackedJob:
        """The job of id ``id``; KeyError if none."""
        for found in self.jobs:
            if found.id == id:
                return found
        raise KeyError(id)


def _fleet_items(gpus: Any) -> List[Tuple[Any, Any]]:
    """(gpu, count) of a fleet: a GPU (as many as needed), a mapping of GPUs
    to counts, or a list of GPUs and (gpu, count) pairs."""
    if isinstance(gpus, (str, bytes, Gpu)):
        return [(gpus, 0)]
    if isinstance(gpus, collections.abc.Mapping):
        return list(gpus.items())
    if not isinstance(gpus, collections.abc.Iterable):
        raise TypeError("gpus: expected a GPU's name, a mapping of names to counts or a list "
                        "of names and (name, count) pairs, got %s" % type(gpus).__name__)
    items: List[Tuple[Any, Any]] = []
    for position, item in enumerate(gpus):
        if isinstance(item, tuple) and len(item) == 2:
            items.append(item)
        elif isinstance(item, (str, bytes, Gpu)):
            items.append((item, 0))
        else:
            raise TypeError("gpus[%d]: expected a GPU's name or a (name, count) pair, got %s"
                            % (position, type(item).__name__))
    return items


class Pack(Configurable):
    """A packing problem (``llmem_pack``): jobs onto a fleet of GPUs of one
    or more types with valid MIG layouts, as many jobs as the fleet holds on
    as few GPUs as possible. ``Pack(margin_permille=50, gpus_per_node=8,
    exact_limit=200000, driver=535)``; the keywords are
    :data:`llmem.PACK_FIELDS`. Add GPU types and jobs, then :meth:`run`;
    the result lasts until the problem changes."""

    _free = LIB.llmem_pack_free
    _what = "pack"
    _fields = PACK_FIELDS
    _set_int = staticmethod(LIB.llmem_pack_set_int)
    _set_str = staticmethod(LIB.llmem_pack_set_str)
    _get_int = staticmethod(LIB.llmem_pack_get_int)

    def __init__(self, *, context: Optional[Context] = None, **settings: Any) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_pack_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self._ids: Set[str] = set()
        self.set(**settings)

    def add_gpu(self, gpu: GpuName, count: int = 0) -> "Pack":
        """Add ``count`` GPUs of type ``gpu`` (a name or a :class:`Gpu`; 0: as
        many as needed) to the fleet; types are tried in the order added,
        a type added again adds to its count (at most 8 types)."""
        expect_u64(count, "count")
        ctx = self._context
        with ctx._lock:
            handle = self._handle
            ctx.check(LIB.llmem_pack_add_gpu(handle, _gpu_index(ctx, gpu), count))
        return self

    def add_job(self, id: Union[str, bytes], bytes: Union[int, Result], *,
                level: str = "device", min_compute: int = 0) -> "Pack":
        """Add a job: its ``id`` (unique; a str, or bytes in UTF-8), ``bytes``
        at ``level`` ("device" or "reserved"; or an estimate's
        :class:`Result`, its device peak) and the compute slices it needs at
        least (``min_compute``)."""
        function = "Pack.add_job()"
        data = c_string(id, "id")
        try:  # results give ids back as str: refuse what would not decode, up front
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise errors.InvalidArgument("pack: job %r: id is not UTF-8 (byte %d): give a str "
                                         "or UTF-8 bytes" % (id, exc.start),
                                         errors.EINVAL) from None
        code = _level(level, function)
        need, level = _job_bytes(bytes, level, "job '%s': bytes" % text, function)
        if isinstance(min_compute, bool) or not isinstance(min_compute, int):
            raise TypeError("%s: job '%s': min_compute: expected an int, got %s"
                            % (function, text, type(min_compute).__name__))
        if not -_INT64_MAX - 1 <= min_compute <= _INT64_MAX:
            raise errors.OutOfRange("pack: job '%s': min compute %d out of range [0, 7]"
                                    % (text, min_compute), errors.ERANGE)
        ctx = self._context
        with ctx._lock:
            handle = self._handle
            if text in self._ids:
                raise errors.InvalidArgument("pack: job '%s': the same id as an earlier job"
                                             % text, errors.EINVAL)
            ctx.check(LIB.llmem_pack_add_job(handle, data, need, code, min_compute))
            self._ids.add(text)
        return self

    def clear(self) -> "Pack":
        """Remove every job and GPU type, keeping the settings."""
        with self._context._lock:
            LIB.llmem_pack_clear(self._handle)
            self._ids.clear()
        return self

    @property
    def job_count(self) -> int:
        """Jobs added."""
        with self._context._lock:
            return int(LIB.llmem_pack_job_count(self._handle))

    def run(self, config_name: Optional[str] = None) -> PackResult:
        """Pack the jobs onto the fleet; the result's ``mig_parted`` names its
        config ``config_name`` ("llmem" when None; a Kubernetes label value,
        else :class:`InvalidArgument`). Jobs that fit nowhere or find no room
        are results too (their ``status``); no GPU type added raises
        :class:`Inconsistent`."""
        ctx = self._context
        with ctx._lock:
            ctx.check(LIB.llmem_pack_run(self._handle))
            return self._result(config_name)

    def mig_parted(self, config_name: Optional[str] = None) -> str:
        """The last result as an NVIDIA mig-parted configuration (YAML), named
        ``config_name`` ("llmem" when None; ``<name>-node-<k>`` per node with
        ``gpus_per_node``). :class:`Inconsistent` before a run."""
        name = None if config_name is None else c_string(config_name, "config_name")
        return self._output(lambda buf, cap, length: LIB.llmem_pack_mig_parted(
            self._handle, name, buf, cap, length))

    def nvidia_smi(self) -> str:
        """The last result as ``nvidia-smi`` commands that create it, with
        explicit placements. :class:`Inconsistent` before a run."""
        return self._output(lambda buf, cap, length: LIB.llmem_pack_nvidia_smi(
            self._handle, buf, cap, length))

    def _output(self, call: Any) -> str:
        ctx = self._context
        length = ctypes.c_size_t()
        with ctx._lock:
            ctx.check(call(None, 0, ctypes.byref(length)))
            buf = ctypes.create_string_buffer(length.value + 1)
            ctx.check(call(buf, len(buf), None))
        return buf.value.decode()

    def _u64(self, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_pack_get_u64(self._handle, key, ctypes.byref(out)))
        return out.value

    def _job_u64(self, job: int, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_pack_job_u64(self._handle, job, key, ctypes.byref(out)))
        return out.value

    def _gpu_u64(self, gpu: int, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_pack_gpu_u64(self._handle, gpu, key, ctypes.byref(out)))
        return out.value

    def _slice_name(self, gpu_type: int, profile: int, driver: int) -> str:
        """A profile's name as the pack's branch names it; "whole" for the
        whole GPU (the type's profile count)."""
        if profile == _profile_count(gpu_type):
            return WHOLE_GPU
        return _text(LIB.llmem_mig_profile_driver_name(gpu_type, profile, driver))

    def _job(self, job: int, driver: int, types: List[int]) -> PackedJob:
        status = _STATUS[self._job_u64(job, _JOB_STATUS)]
        id = _text(LIB.llmem_pack_job_id(self._handle, job))
        need = self._job_u64(job, _JOB_NEED_BYTES)
        if status is PackStatus.PLACED:
            gpu = self._job_u64(job, _JOB_GPU)
            kind = types[gpu]
            return PackedJob(
                id=id, status=status, need_bytes=need, gpu=gpu,
                gpu_type=_text(LIB.llmem_gpu_name(kind)),
                profile=self._slice_name(kind, self._job_u64(job, _JOB_PROFILE), driver),
                start=self._job_u64(job, _JOB_START),
                usable_bytes=self._job_u64(job, _JOB_USABLE_BYTES),
                headroom_bytes=self._job_u64(job, _JOB_HEADROOM_BYTES),
                resource=_text(LIB.llmem_pack_job_resource(self._handle, job)))
        if status is PackStatus.FITS_NOWHERE:
            kind = self._job_u64(job, _JOB_LARGEST_GPU)
            return PackedJob(
                id=id, status=status, need_bytes=need,
                largest_gpu=_text(LIB.llmem_gpu_name(kind)),
                largest_option=self._slice_name(kind, self._job_u64(job, _JOB_LARGEST_PROFILE),
                                                driver),
                shortfall_bytes=self._job_u64(job, _JOB_SHORTFALL_BYTES))
        return PackedJob(id=id, status=status, need_bytes=need)

    def _result(self, config_name: Optional[str]) -> PackResult:
        """The last result as plain values (the lock held)."""
        driver = int(self.driver)
        used = self._u64(_PACK_GPUS_USED)
        types = [self._gpu_u64(g, _PACK_GPU_TYPE) for g in range(used)]
        jobs = tuple(self._job(j, driver, types)
                     for j in range(LIB.llmem_pack_job_count(self._handle)))
        on_gpu: Dict[int, List[Tuple[int, int, PackedJob]]] = {}
        for position, job in enumerate(jobs):
            if job.gpu is not None and job.start is not None:
                on_gpu.setdefault(job.gpu, []).append((job.start, position, job))
        gpus = tuple(PackedGpu(
            index=g, type=_text(LIB.llmem_gpu_name(types[g])),
            node=self._gpu_u64(g, _PACK_GPU_NODE), device=self._gpu_u64(g, _PACK_GPU_DEVICE),
            mig_enabled=bool(self._gpu_u64(g, _PACK_GPU_MIG)),
            instances=tuple(PackedInstance(profile=str(job.profile), start=start, job=job.id)
                            for start, _, job in sorted(on_gpu.get(g, []),
                                                        key=lambda e: (e[0], e[1]))))
            for g in range(used))
        return PackResult(
            gpus_used=used, lower_bound=self._u64(_PACK_LOWER_BOUND),
            bounds=PackBounds(memory_slices=self._u64(_PACK_BOUND_MEMORY),
                              compute_slices=self._u64(_PACK_BOUND_COMPUTE),
                              profile_counts=self._u64(_PACK_BOUND_COUNT),
                              lp=self._u64(_PACK_BOUND_LP)),
            optimal=bool(self._u64(_PACK_OPTIMAL)), jobs_placed=self._u64(_PACK_JOBS_PLACED),
            jobs_unplaced=self._u64(_PACK_JOBS_UNPLACED), jobs_bound=self._u64(_PACK_JOBS_BOUND),
            gpus=gpus, jobs=jobs, config_name="llmem" if config_name is None else
            c_string(config_name, "config_name").decode("utf-8", "replace"),
            mig_parted=self.mig_parted(config_name), nvidia_smi=self.nvidia_smi())


add_properties(Pack, PACK_FIELDS)


def _pack_job(item: Any, position: int, level: str) -> PackJob:
    """A job as given: a PackJob, or (id, bytes[, min_compute])."""
    if isinstance(item, PackJob):
        return item
    if isinstance(item, tuple) and len(item) in (2, 3):
        return PackJob(item[0], item[1], level, item[2] if len(item) == 3 else 0)
    raise TypeError("jobs[%d]: expected (id, bytes[, min_compute]) or a llmem.PackJob, got %s"
                    % (position, type(item).__name__))


def pack(jobs: Iterable[Union[PackJob, Tuple[Any, ...]]],
         gpus: Union[GpuName, Mapping[Any, int], Iterable[Any]], *, level: str = "device",
         margin: Optional[float] = None, gpus_per_node: Optional[int] = None,
         exact_limit: Optional[int] = None, driver: Optional[int] = None,
         config_name: Optional[str] = None, context: Optional[Context] = None) -> PackResult:
    """Pack ``jobs`` onto the fleet ``gpus`` in one call: ``llmem pack --gpu
    FLEET --jobs FILE [--margin P] [--gpus-per-node N] [--driver D]
    [--config-name NAME]``.

    ``jobs`` are :class:`PackJob` objects or (id, bytes[, min_compute])
    tuples, their bytes at ``level`` ("device", or "reserved": each type's
    CUDA context is added) or an estimate's :class:`Result`. ``gpus`` is a
    GPU's name (as many as needed), a mapping of names to counts (0: as many
    as needed; ``{"A100-80GB": 16}`` is ``--gpu A100-80GB --gpus 16``) or a
    list of names and (name, count) pairs. ``margin`` is the percent of each
    slice kept free (default 5, as ``--margin``); ``gpus_per_node`` makes
    one mig-parted config per node; ``exact_limit`` bounds the exact search;
    ``driver`` is the NVIDIA driver's major branch (0: the newest)."""
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, collections.abc.Iterable):
        raise TypeError("jobs: expected a list of (id, bytes[, min_compute]) or llmem.PackJob, "
                        "got %s" % type(jobs).__name__)
    _level(level, "pack()")
    specs = [_pack_job(item, position, level) for position, item in enumerate(jobs)]
    fleet = _fleet_items(gpus)
    settings: Dict[str, Any] = {"margin_permille": _margin_permille(
        "pack()", DEFAULT_MARGIN if margin is None else margin)}
    for keyword, value in (("gpus_per_node", gpus_per_node), ("exact_limit", exact_limit),
                           ("driver", driver)):
        if value is not None:
            settings[keyword] = value
    with Pack(context=context, **settings) as handle:
        for gpu, count in fleet:
            handle.add_gpu(gpu, count)
        for spec in specs:
            handle.add_job(spec.id, spec.bytes, level=spec.level, min_compute=spec.min_compute)
        return handle.run(config_name)
