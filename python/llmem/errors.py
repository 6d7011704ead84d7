# SPDX-License-Identifier: MIT
"""Exceptions: one class per libllmem status code, all under :class:`Error`.

Each carries the library's message (``llmem_ctx_error``), the status code and,
when the library or the call names one, the field the error is about. The
classes also derive from the closest built-in exception, so ``except
ValueError`` catches an out-of-range value as Python code expects.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Type

# Status codes of include/llmem.h; the library never renumbers them.
OK = 0
EINVAL = -1
ENOMEM = -2
ERANGE = -3
ENOTFOUND = -4
EOVERFLOW = -5
EINCONSISTENT = -6
EIO = -7
EPARSE = -8
ENOTSUP = -9
EBUFFER = -10


class Error(Exception):
    """A call into libllmem failed.

    Attributes:
        status: the negative ``LLMEM_E*`` code.
        message: the library's message, naming the offending field and value.
        field: the field's Python keyword (``"lora_rank"``), or None; the
            message spells it as the library does (``"lora-rank: ..."``).
        object: ``"model"``, ``"train"``, ``"parallel"``, ``"plan"``, ``"fit"``
            or ``"pack"`` when ``field`` is set, else None.
        value: what a failed :meth:`Estimate.max` found before it stopped:
            with :class:`Overflow` or :class:`NotSupported` (the next value is
            beyond what the estimate counts or models) the last value that
            could be counted and fits, a floor of the answer, not the
            answer (``llmem_estimate_max``'s ``*out``); else None.
        peaks: the peaks of a failed :meth:`Estimate.sweep`'s points before
            the failing one (empty when it failed before any point); else
            None.
    """

    status = EINVAL
    value: Optional[int] = None
    peaks: Optional[List[int]] = None

    def __init__(self, message: str, status: Optional[int] = None,
                 field: Optional[str] = None, object: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.field = field
        self.object = object

    def __str__(self) -> str:
        return self.message


class InvalidArgument(Error, ValueError):
    """LLMEM_EINVAL: a bad argument (wrong kind of value, unknown key)."""
    status = EINVAL


class OutOfMemory(Error, MemoryError):
    """LLMEM_ENOMEM: an allocation failed."""
    status = ENOMEM


class OutOfRange(Error, ValueError):
    """LLMEM_ERANGE: a value outside the field's bounds."""
    status = ERANGE


class NotFound(Error, LookupError):
    """LLMEM_ENOTFOUND: an unknown name (preset, value of a field)."""
    status = ENOTFOUND


class Overflow(Error, OverflowError):
    """LLMEM_EOVERFLOW: a count does not fit in 64 bits."""
    status = EOVERFLOW


class Inconsistent(Error, ValueError):
    """LLMEM_EINCONSISTENT: fields contradict each other."""
    status = EINCONSISTENT


class ReadError(Error, OSError):
    """LLMEM_EIO: a file could not be read."""
    status = EIO


class ParseError(Error, ValueError):
    """LLMEM_EPARSE: a file or text is malformed."""
    status = EPARSE


class NotSupported(Error, NotImplementedError):
    """LLMEM_ENOTSUP: not supported by this build of the library or this model."""
    status = ENOTSUP


class BufferTooSmall(Error):
    """LLMEM_EBUFFER: a caller's buffer is too small."""
    status = EBUFFER


_BY_STATUS: Dict[int, Type[Error]] = {
    cls.status: cls for cls in (InvalidArgument, OutOfMemory, OutOfRange, NotFound, Overflow,
                                Inconsistent, ReadError, ParseError, NotSupported,
                                BufferTooSmall)
}


def error_class(status: int) -> Type[Error]:
    """The exception class of a status code (:class:`Error` for an unknown one)."""
    return _BY_STATUS.get(status, Error)
