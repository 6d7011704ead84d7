# SPDX-License-Identifier: MIT
"""What safetensors headers hold: parameters and bytes, by dtype."""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Dict, Optional, Union

from ._library import LIB
from .context import Context, Handle, c_path, resolve

# Keys of include/llmem.h (enum llmem_weights_key); never renumbered.
_PARAMS = 1
_BYTES = 2
_TENSORS = 3
_FILES = 4
_QUANT_STATE_BYTES = 5
_QUANT_STATE_TENSORS = 6


@dataclass(frozen=True)
class DtypeTotal:
    """Elements and bytes of one safetensors dtype ("BF16", "F32", ...)."""

    params: int
    bytes: int


class _Handle(Handle):
    _free = LIB.llmem_weights_free
    _what = "weights"


class Weights:
    """The totals of safetensors weights, read from their headers only.

    ``Weights(path)``: a ``.safetensors`` file, a
    ``model.safetensors.index.json`` with its shards, or a directory holding
    either. The headers are read at once and the library handle freed, so the
    object is a plain value: ``params``, ``bytes``, ``tensors``, ``files`` and
    ``dtypes`` (name -> :class:`DtypeTotal`, in order of first appearance).
    A bitsandbytes 4-bit checkpoint's packed weights are the dtype
    ``"bnb-nf4"`` or ``"bnb-fp4"`` (two parameters a byte); their
    quantization state is ``quant_state_bytes`` in ``quant_state_tensors``
    tensors, part of ``bytes`` and ``tensors`` but of no dtype.
    """

    params: int
    bytes: int
    tensors: int
    files: int
    quant_state_bytes: int
    quant_state_tensors: int
    dtypes: Dict[str, DtypeTotal]

    def __init__(self, path: Union[str, bytes, "os.PathLike[str]"], *,
                 context: Optional[Context] = None) -> None:
        data = c_path(path)
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_weights_open(ctx._handle, data, ctypes.byref(ptr)))
            self._read(_Handle(ptr, ctx))

    @classmethod
    def from_buffer(cls, data: Union[bytes, bytearray, memoryview], *,
                    context: Optional[Context] = None) -> "Weights":
        """The totals of one safetensors file's bytes (bytes, bytearray or
        memoryview; the tensors' data is not read)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):  # bytes(5): five NULs
            raise TypeError("Weights.from_buffer(): data: expected bytes, bytearray or "
                            "memoryview, got %s" % type(data).__name__)
        data = bytes(data)
        ctx = resolve(context)
        self = cls.__new__(cls)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_weights_open_buffer(ctx._handle, data, len(data),
                                                    ctypes.byref(ptr)))
            self._read(_Handle(ptr, ctx))
        return self

    def _read(self, handle: _Handle) -> None:
        ctx = handle._context
        with handle:
            def total(key: int) -> int:
                out = ctypes.c_uint64()
                ctx.check(LIB.llmem_weights_get_u64(handle._handle, key, ctypes.byref(out)))
                return out.value

            self.params, self.bytes = total(_PARAMS), total(_BYTES)
            self.tensors, self.files = total(_TENSORS), total(_FILES)
            self.quant_state_bytes = total(_QUANT_STATE_BYTES)
            self.quant_state_tensors = total(_QUANT_STATE_TENSORS)
            self.dtypes = {}
            name, params, nbytes = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64()
            for index in range(LIB.llmem_weights_dtype_count(handle._handle)):
                ctx.check(LIB.llmem_weights_dtype(handle._handle, index, ctypes.byref(name),
                                                  ctypes.byref(params), ctypes.byref(nbytes)))
                self.dtypes[name.value.decode()] = DtypeTotal(params.value, nbytes.value)

    def __repr__(self) -> str:
        return "<llmem.Weights params=%d bytes=%d tensors=%d files=%d>" % (
            self.params, self.bytes, self.tensors, self.files)
