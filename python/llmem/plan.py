# SPDX-License-Identifier: MIT
"""The planner: which layouts of a job fit N GPUs, best first."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

from ._configurable import Configurable, add_properties
from ._library import LIB
from .context import Context, expect, locked, resolve
from .fields import (ALIASES, MODEL, MODEL_FIELDS, PLAN_FIELDS, TRAIN_FIELDS, Value,
                     unknown_keyword)
from .model import Model
from .parallel import Parallel
from .train import Train

# Result keys of include/llmem.h (enum llmem_plan_result_key); never renumbered.
_MICRO_BATCH = 1
_MICRO_BATCHES = 2
_GRAD_CKPT = 3
_PEAK_DEVICE = 4
_HEADROOM = 5
_COMM_BYTES = 6
_BUBBLE_PERMILLE = 7
_TOKENS_PER_SECOND = 8
# enum llmem_gpu_key.
_GPU_USABLE_BYTES = 1


@dataclass(frozen=True)
class PlannedLayout:
    """A layout that fits: its fields (as :class:`Parallel` names them), the
    largest micro-batch, the checkpointing it needs, its most loaded rank's
    device peak and headroom, the bytes a GPU sends per step, the pipeline
    bubble (a fraction of the compute time) and the throughput proxy."""

    layout: Dict[str, Value]
    micro_batch: int
    micro_batches: int
    grad_ckpt: str
    peak_device: int
    headroom: int
    comm_bytes: int
    bubble: float
    tokens_per_second: int


@dataclass(frozen=True)
class Rejection:
    """A kind of layout that does not fit or cannot be built: the library's
    reason, how many layouts it rejected, and one example's message."""

    reason: str
    layouts: int
    example: str


@dataclass(frozen=True)
class PlanResult:
    """The layouts that fit, best first, the rejections, and the verdict on
    the GPU: ``gpu_bytes`` is the memory of one GPU the layouts were fitted
    to (the planner's ``gpu_bytes``, or when that is 0 the usable memory of
    the training setup's ``gpu``), with ``margin_permille`` of it kept free;
    ``fits`` is whether the best layout (so any) fits it, as ``llmem plan``'s
    ``gpu.fits``; ``margin_bytes`` is the bytes kept free
    (``ceil(gpu_bytes x margin_permille / 1000)``, ``gpu.margin_bytes``),
    ``budget_bytes`` what is left for the peak (``gpu_bytes - margin_bytes``,
    ``gpu.budget_bytes``), and ``gpu_headroom`` the budget less the best
    layout's device peak (``gpu.headroom_bytes``, the best layout's
    ``headroom``), None when nothing fits."""

    layouts: Tuple[PlannedLayout, ...]
    rejected: Tuple[Rejection, ...]
    gpu_bytes: int = 0
    margin_permille: int = 0

    @property
    def best(self) -> Optional[PlannedLayout]:
        """The best layout by the throughput proxy, or None when none fits."""
        return self.layouts[0] if self.layouts else None

    @property
    def fits(self) -> bool:
        """Whether a layout fits the GPU with the margin kept free."""
        return bool(self.layouts)

    @property
    def margin_bytes(self) -> int:
        """The bytes of the GPU kept free: ceil(gpu_bytes x margin_permille / 1000)."""
        return self.gpu_bytes - self.budget_bytes

    @property
    def budget_bytes(self) -> int:
        """What a layout's device peak must fit: floor(gpu_bytes x (1000 -
        margin_permille) / 1000), as the planner counts it."""
        return self.gpu_bytes * (1000 - self.margin_permille) // 1000

    @property
    def gpu_headroom(self) -> Optional[int]:
        """The budget less the best layout's device peak (that layout's
        ``headroom``); None when none fits."""
        return self.budget_bytes - self.layouts[0].peak_device if self.layouts else None


class Plan(Configurable):
    """A planner (``llmem_plan``): ``Plan(gpus=8, gpu_bytes=80 * 2**30)``.

    Keywords are the fields of :data:`llmem.PLAN_FIELDS` (gpus, gpu_bytes,
    gpus_per_node, max_micro_batch, global_batch, margin_permille,
    plan_offload), read from the library.
    """

    _free = LIB.llmem_plan_free
    _what = "planner"
    _fields = PLAN_FIELDS
    _set_int = staticmethod(LIB.llmem_plan_set_int)
    _get_int = staticmethod(LIB.llmem_plan_get_int)

    def __init__(self, *, context: Optional[Context] = None, **fields: Any) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_plan_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self.set(**fields)

    def run(self, model: Model, train: Train) -> PlanResult:
        """Enumerate the layouts of ``model`` trained as ``train`` (its batch
        is ignored: the planner solves the micro-batch) over the GPUs."""
        expect(model, Model, "model")
        expect(train, Train, "train")
        ctx = self._context
        with locked(ctx, model._context, train._context):
            ctx.check(LIB.llmem_plan_run(self._handle, model._handle, train._handle))
            with Parallel(context=ctx) as layout:
                layouts = tuple(self._layout(i, layout)
                                for i in range(LIB.llmem_plan_result_count(self._handle)))
            return PlanResult(layouts=layouts, rejected=tuple(
                self._rejection(i) for i in range(LIB.llmem_plan_rejected_count(self._handle))),
                gpu_bytes=self._gpu_bytes(train), margin_permille=int(self.margin_permille))

    def _gpu_bytes(self, train: Train) -> int:
        """The capacity llmem_plan_run took: LLMEM_PLAN_GPU_BYTES, or when
        that is 0 the usable bytes of the train's GPU (its catalog index + 1)."""
        own = int(self.gpu_bytes)
        if own:
            return own
        gpu = ctypes.c_int64()
        self._context.check(LIB.llmem_train_get_int(train._handle, TRAIN_FIELDS["gpu"].key,
                                                    ctypes.byref(gpu)))
        usable = ctypes.c_uint64()
        self._context.check(LIB.llmem_gpu_get_u64(gpu.value - 1, _GPU_USABLE_BYTES,
                                                  ctypes.byref(usable)))
        return usable.value

    def _u64(self, index: int, key: int) -> int:
        out = ctypes.c_uint64()
        self._context.check(LIB.llmem_plan_result_get_u64(self._handle, index, key,
                                                          ctypes.byref(out)))
        return out.value

    def _layout(self, index: int, layout: Parallel) -> PlannedLayout:
        self._context.check(LIB.llmem_plan_result_layout(self._handle, index, layout._handle))
        grad_ckpt = TRAIN_FIELDS["grad_ckpt"].show(self._u64(index, _GRAD_CKPT))
        return PlannedLayout(
            layout=layout.to_dict(), micro_batch=self._u64(index, _MICRO_BATCH),
            micro_batches=self._u64(index, _MICRO_BATCHES), grad_ckpt=str(grad_ckpt),
            peak_device=self._u64(index, _PEAK_DEVICE), headroom=self._u64(index, _HEADROOM),
            comm_bytes=self._u64(index, _COMM_BYTES),
            bubble=self._u64(index, _BUBBLE_PERMILLE) / 1000,
            tokens_per_second=self._u64(index, _TOKENS_PER_SECOND))

    def _rejection(self, index: int) -> Rejection:
        reason, example = ctypes.c_char_p(), ctypes.c_char_p()
        layouts = ctypes.c_uint64()
        self._context.check(LIB.llmem_plan_rejected(self._handle, index, ctypes.byref(reason),
                                                    ctypes.byref(layouts),
                                                    ctypes.byref(example)))
        return Rejection(reason=reason.value.decode(), layouts=layouts.value,
                         example=(example.value or b"").decode())


add_properties(Plan, PLAN_FIELDS)


def plan(model: Union[str, Model], *, context: Optional[Context] = None,
         **settings: Any) -> PlanResult:
    """Plan in one call: ``plan("meta-llama/Llama-3.1-8B", gpus=8,
    gpu_bytes=80 * 2**30, seq=4096)``. ``settings`` are planner fields,
    training fields and, with a preset name, model fields."""
    tables = (MODEL_FIELDS, TRAIN_FIELDS, PLAN_FIELDS)
    model_fields, train_fields, plan_fields = (
        {k: v for k, v in settings.items() if k in table} for table in tables)
    for keyword in settings:  # the command's spellings of model fields (attn_bias)
        alias = ALIASES.get(keyword)
        if alias is not None and alias.object == MODEL:
            model_fields[keyword] = settings[keyword]
    for keyword in settings:
        if not any(keyword in table for table in tables) and keyword not in model_fields:
            raise unknown_keyword("plan()", keyword, [k for table in tables for k in table])
    if isinstance(model, str):
        ctx = resolve(context)
        with Model.from_preset(model, context=ctx, **model_fields) as owned:
            return plan(owned, context=ctx, **train_fields, **plan_fields)
    if not isinstance(model, Model):
        raise TypeError("plan(): model must be a preset name or a llmem.Model, not %s"
                        % type(model).__name__)
    if model_fields:
        raise TypeError("plan(): model fields (%s) change a preset given by name; set them on "
                        "the Model instead" % ", ".join(model_fields))
    ctx = context if context is not None else model._context
    with Train(context=ctx, **train_fields) as train, Plan(context=ctx, **plan_fields) as planner:
        return planner.run(model, train)
