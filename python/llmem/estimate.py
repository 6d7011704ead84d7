# SPDX-License-Identifier: MIT
"""Estimates: the memory of one training step, and its breakdown."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

from ._library import LIB
from .context import Context, Handle, locked, resolve
from .fields import MODEL_FIELDS, TRAIN_FIELDS, unknown_keyword
from .model import Model
from .train import Train

# Result keys of include/llmem.h (enum llmem_estimate_key); never renumbered.
_PARAMS_TOTAL = 1
_PARAMS_TRAINABLE = 2
_PEAK_ALLOCATED = 3
_PEAK_RESERVED = 4
_PEAK_DEVICE = 5
_PEAK_PHASE = 6
_PARAMS_ACTIVE = 7


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
class Result:
    """What one estimate found; plain values, no library handle.

    Peaks are bytes at three levels: ``peak_allocated`` (live tensors, as
    ``torch.cuda.max_memory_allocated``), ``peak_reserved`` (plus the caching
    allocator) and ``peak_device`` (plus the CUDA context, as nvidia-smi).
    ``peak_phase`` names the phase holding the peak (None with the article
    formula, which sums terms); ``phase_bytes`` is the peak of each phase.
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


class Estimate(Handle):
    """A reusable estimate handle (``llmem_estimate``).

    :meth:`run` allocates nothing; a handle run again with the same model and
    setup but another batch or seq reuses what does not depend on them, so
    keep one per model and setup in a loop.
    """

    _free = LIB.llmem_estimate_free
    _what = "estimate"

    def __init__(self, *, context: Optional[Context] = None) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_estimate_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)

    def run(self, model: Model, train: Train) -> Result:
        """Estimate ``model`` trained as ``train``; both are validated."""
        ctx = self._context
        with locked(ctx, model._context, train._context):
            ctx.check(LIB.llmem_estimate_run(self._handle, model._handle, train._handle))
            return self._result()

    def _u64(self, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_estimate_get_u64(self._handle, key, ctypes.byref(out)))
        return out.value

    def _phase(self, phase: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_estimate_phase_bytes(self._handle, phase,
                                                           ctypes.byref(out)))
        return out.value

    def _term(self, kind: int, name: str) -> Term:
        term = ctypes.c_void_p()
        self._context.check(LIB.llmem_estimate_term(self._handle, kind, ctypes.byref(term)))
        components = {}
        comp_name, comp_bytes = ctypes.c_char_p(), ctypes.c_uint64()
        for index in range(LIB.llmem_term_component_count(term)):
            self._context.check(LIB.llmem_term_component(term, index, ctypes.byref(comp_name),
                                                         ctypes.byref(comp_bytes)))
            components[comp_name.value.decode()] = comp_bytes.value
        return Term(name=name, bytes_at_peak=LIB.llmem_term_bytes_at_peak(term),
                    max_bytes=LIB.llmem_term_max_bytes(term), components=components)

    def _result(self) -> Result:
        phase = self._u64(_PEAK_PHASE)
        return Result(
            params_total=self._u64(_PARAMS_TOTAL),
            params_trainable=self._u64(_PARAMS_TRAINABLE),
            params_active=self._u64(_PARAMS_ACTIVE),
            peak_allocated=self._u64(_PEAK_ALLOCATED),
            peak_reserved=self._u64(_PEAK_RESERVED),
            peak_device=self._u64(_PEAK_DEVICE),
            peak_phase=dict(PHASES).get(phase),
            phase_bytes={name: self._phase(value) for value, name in PHASES},
            terms={name: self._term(kind, name) for kind, name in TERMS})


def estimate(model: Union[str, Model], *, context: Optional[Context] = None,
             **settings: Any) -> Result:
    """Estimate one training step in one call.

    ``model`` is a preset name (``"meta-llama/Llama-3.1-8B"``) or a
    :class:`Model`. ``settings`` are training fields (``batch=4, seq=2048,
    attention="flash"``) and, with a preset name, model fields that change it
    (``layers=16``), named like the ``llmem estimate`` flags.
    """
    model_fields = {k: v for k, v in settings.items() if k in MODEL_FIELDS}
    train_fields = {k: v for k, v in settings.items() if k in TRAIN_FIELDS}
    for keyword in settings:
        if keyword not in model_fields and keyword not in train_fields:
            raise unknown_keyword("estimate()", keyword, list(TRAIN_FIELDS) + list(MODEL_FIELDS))
    if isinstance(model, Model):
        if model_fields:
            raise TypeError("estimate(): model fields (%s) change a preset given by name; set "
                            "them on the Model instead" % ", ".join(model_fields))
        ctx = context if context is not None else model._context
        with Train(context=ctx, **train_fields) as train, Estimate(context=ctx) as est:
            return est.run(model, train)
    if not isinstance(model, str):
        raise TypeError("estimate(): model must be a preset name or a llmem.Model, not %s"
                        % type(model).__name__)
    ctx = resolve(context)
    with Model.from_preset(model, context=ctx, **model_fields) as owned:
        return estimate(owned, context=ctx, **train_fields)
