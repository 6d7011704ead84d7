# SPDX-License-Identifier: MIT
"""Layouts across GPUs: data, tensor, pipeline, expert and context parallelism."""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from ._configurable import Configurable, add_properties
from ._library import LIB
from .context import Context, resolve
from .fields import PARALLEL_FIELDS, TRAIN_FIELDS, unknown_keyword


class Parallel(Configurable):
    """How a training job is split over GPUs (``llmem_parallel``).

    ``Parallel(dp=8, sharding="zero3", pp=2, micro_batches=8)``. Keywords
    are the fields of :data:`llmem.PARALLEL_FIELDS`, named like the
    ``llmem estimate`` layout flags; the default is one GPU. Give it to
    :meth:`Estimate.run` or to :func:`llmem.estimate` (``parallel=``), or
    pass its keywords to :func:`llmem.estimate` directly.
    """

    _free = LIB.llmem_parallel_free
    _what = "layout"
    _fields = PARALLEL_FIELDS
    _set_int = staticmethod(LIB.llmem_parallel_set_int)
    _set_str = staticmethod(LIB.llmem_parallel_set_str)
    _get_int = staticmethod(LIB.llmem_parallel_get_int)

    def __init__(self, *, context: Optional[Context] = None, **fields: Any) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_parallel_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self.set(**fields)

    def unread(self, keyword: str) -> Optional[str]:
        """Why the layout as it stands does not read field ``keyword``
        ("needs sharding fsdp-hybrid ..."), or None when it does. An estimate
        refuses such a field set away from its default (``llmem.Error``
        naming it): ``Parallel(dp=4, shard_group=2)`` does not run."""
        field = self._field(keyword, "unread()")
        with self._context._lock:
            why = LIB.llmem_parallel_unread(self._handle, field.key)
        return None if why is None else why.decode()

    @property
    def gpus(self) -> int:
        """GPUs the layout spans: dp x tp x pp x cp."""
        with self._context._lock:
            return LIB.llmem_parallel_gpus(self._handle)

    def step(self, field: str) -> int:
        """The values of the training field ``field`` ("batch" or "seq") the
        layout splits are the multiples of this (``llmem_parallel_step``):
        2 x cp for seq under context parallelism, the least common multiple
        with cp x tp under sequence parallelism; 1 for batch and any other
        training field. It is the smallest value :meth:`Estimate.max` tries."""
        if not isinstance(field, str):
            raise TypeError("Parallel.step(): field: expected a str, got %s"
                            % type(field).__name__)
        train_field = TRAIN_FIELDS.get(field)
        if train_field is None:
            raise unknown_keyword("Parallel.step()", field, list(TRAIN_FIELDS))
        with self._context._lock:
            return int(LIB.llmem_parallel_step(self._handle, train_field.key))

    def __repr__(self) -> str:
        if self.closed:
            return "<llmem.Parallel closed>"
        return "<llmem.Parallel gpus=%d %s>" % (self.gpus, " ".join(
            "%s=%s" % (k, v) for k, v in self.to_dict().items() if k in ("dp", "tp", "pp")))


add_properties(Parallel, PARALLEL_FIELDS)
