# SPDX-License-Identifier: MIT
"""Training setups: batch, sequence, precision, optimizer, method, kernels."""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from ._configurable import Configurable, add_properties
from ._library import LIB
from .context import Context, expect, locked, resolve
from .fields import TRAIN_FIELDS
from .model import Model


class Train(Configurable):
    """How a model is trained (``llmem_train``).

    ``Train(batch=4, seq=2048, attention="flash", method="lora",
    lora_rank=16, lora_targets=["q_proj", "v_proj"])``. Keywords are the
    fields of :data:`llmem.TRAIN_FIELDS`, named like the ``llmem`` command's
    flags; enumerated values by name. Unset fields keep the library's
    defaults (batch 1, seq 512, bf16-mixed, AdamW, full fine-tuning, ...).
    ``gpu="A100-80GB"`` (any name ``llmem gpus`` accepts) estimates with that
    GPU's CUDA context and cuBLAS workspace; unset, it reads ``None``.
    ``dropout`` unset reads ``-1.0`` (set it so, or to ``"model"``, to go back):
    each dropout site runs at the model's own probability, as the Trainer
    runs the model; a probability replaces them all. ``lora_targets`` reads
    back as it was set: names (resolved in the model's family when an
    estimate runs; ``"all-linear"``, PEFT's keyword, is every linear module
    of the decoder layers) or role bits (an int of ``llmem_lora_target``
    bits, the default q | v: every family's query and value projections,
    which have no names outside a family: :meth:`lora_modules` names them
    for a model). A misspelt
    attribute (``train.bacth = 64``) raises AttributeError.
    """

    _free = LIB.llmem_train_free
    _what = "training setup"
    _fields = TRAIN_FIELDS
    _set_int = staticmethod(LIB.llmem_train_set_int)
    _set_str = staticmethod(LIB.llmem_train_set_str)
    _get_int = staticmethod(LIB.llmem_train_get_int)
    _set_double = staticmethod(LIB.llmem_train_set_double)  # type: ignore[assignment]
    _get_double = staticmethod(LIB.llmem_train_get_double)  # type: ignore[assignment]

    def __init__(self, *, context: Optional[Context] = None, **fields: Any) -> None:
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_train_new(ctx._handle, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
        self.set(**fields)

    def lora_modules(self, model: Model) -> str:
        """The Hugging Face module names the LoRA targets select in
        ``model``'s family, with commas: ``"c_attn"`` for GPT-2 and
        ``"q_proj,v_proj"`` for Llama with the default q | v roles, every
        linear module of the decoder layers for ``"all-linear"``. Set as
        ``lora_targets``, they give the same estimate: what to show or save
        for that model (``lora_targets`` itself reads back as it was set,
        role bits as an int, which a Train without a model cannot name).
        Raises llmem.Error when no names select exactly those linears (the o
        role alone on GPT-2, whose c_proj is both output projections) or
        none matches."""
        expect(model, Model, "model")
        with locked(self._context, model._context):
            size = ctypes.c_size_t()
            self._context.check(LIB.llmem_train_lora_modules(
                self._handle, model._handle, None, 0, ctypes.byref(size)))
            buf = ctypes.create_string_buffer(size.value + 1)
            self._context.check(LIB.llmem_train_lora_modules(
                self._handle, model._handle, buf, len(buf), None))
        return buf.value.decode()

    def unread(self, keyword: str) -> Optional[str]:
        """Why the setup as it stands does not read field ``keyword`` ("needs
        method lora or qlora"), or None when an estimate reads it. An estimate
        refuses such a field set away from its default (``llmem.Error``
        naming it): ``Train(method="full", lora_rank=16)`` does not run."""
        field = self._field(keyword, "unread()")
        ctx = self._context
        with ctx._lock:
            why = LIB.llmem_train_unread(self._handle, field.key)
        return None if why is None else why.decode()

    def __repr__(self) -> str:
        if self.closed:
            return "<llmem.Train closed>"
        return "<llmem.Train %s>" % " ".join(
            "%s=%s" % (k, v) for k, v in self.to_dict().items()
            if k in ("batch", "seq", "precision", "optimizer", "method"))


add_properties(Train, TRAIN_FIELDS)
