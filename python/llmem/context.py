# SPDX-License-Identifier: MIT
"""Contexts, and the lifetime of the handles created from them.

A :class:`Context` owns an ``llmem_ctx``: the library's allocator and last
error message. Every model, training setup and estimate is created from one
and keeps it alive. The library allows one thread at a time per context; the
package enforces that with a lock per context, so sharing objects between
threads is safe here (and serialized). Without an explicit ``context=``,
objects use the calling thread's default context: threads never contend.

Handles are freed by ``close()``, by leaving a ``with`` block, or by the
garbage collector (``weakref.finalize``), whichever comes first; closing a
context closes the objects still open in it first.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import threading
import weakref
from typing import Any, Callable, Iterator, Optional, Tuple, TypeVar

from . import errors
from ._library import LIB
from .fields import field_by_key

_H = TypeVar("_H", bound="Handle")
_Free = Callable[[ctypes.c_void_p], None]  # a library free function


class _ContextLock:
    """A context's re-entrant lock, and the frees the collector asks for.

    The collector may finalize an object in any thread, even one holding the
    lock of another context that the object's owner is waiting for: blocking
    there could deadlock. So a handle is freed at once only when its
    context's lock is free; otherwise it is queued and freed when the holder
    lets go (or when the context itself is freed).
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # nesting of the holding thread
        self._pending: "collections.deque[Tuple[_Free, ctypes.c_void_p]]" = collections.deque()

    def __enter__(self) -> "_ContextLock":
        self._lock.acquire()
        self._depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.drain()
        self._lock.release()

    def drain(self) -> None:
        """Free the queued handles (with the lock held)."""
        while self._pending:
            free, ptr = self._pending.popleft()
            free(ptr)

    def free(self, free: _Free, ptr: ctypes.c_void_p) -> None:
        """Free a handle of this context now, or when the lock's holder lets go."""
        self._pending.append((free, ptr))
        if self._lock.acquire(blocking=False):
            try:
                if self._depth == 0:  # not inside a call sequence of this thread
                    self.drain()
            finally:
                self._lock.release()


def _release(free: _Free, ptr: ctypes.c_void_p,
             lock: _ContextLock, context: "Context") -> None:
    # `context` is an argument only to keep the context alive until now.
    lock.free(free, ptr)


def _release_context(ptr: ctypes.c_void_p, lock: _ContextLock) -> None:
    with lock._lock:
        lock.drain()
        LIB.llmem_ctx_free(ptr)


class Handle:
    """Base of the objects that own a library handle.

    ``close()`` frees it at once and is idempotent; the object then raises
    ``ValueError`` when used. It is also a context manager.
    """

    _free: _Free
    _what = "handle"

    def __init__(self, ptr: ctypes.c_void_p, context: "Context") -> None:
        self._ptr = ptr
        self._context = context
        context._children.add(self)
        # The finalizer holds the context: it outlives every object made from it.
        self._finalizer = weakref.finalize(self, _release, type(self)._free, ptr,
                                           context._lock, context)

    @property
    def closed(self) -> bool:
        """True once the handle is freed."""
        return not self._finalizer.alive

    def close(self) -> None:
        """Free the library handle now (again: no effect)."""
        self._finalizer()

    @property
    def _handle(self) -> ctypes.c_void_p:
        if not self._finalizer.alive:
            raise ValueError("llmem: operation on a closed %s" % self._what)
        return self._ptr

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Context(Handle):
    """An ``llmem_ctx``: the library's allocator (malloc) and last error.

    Use one per thread (the default), or share one and let its lock
    serialize the calls.
    """

    _what = "context"

    def __init__(self) -> None:
        ptr = ctypes.c_void_p()
        rc = LIB.llmem_ctx_new(ctypes.byref(ptr), None)
        if rc != errors.OK:
            raise errors.error_class(rc)("llmem_ctx_new: %s" % status_str(rc), rc)
        self._ptr = ptr
        self._lock = _ContextLock()
        self._children: "weakref.WeakSet[Handle]" = weakref.WeakSet()
        # Not Handle.__init__: a context has no parent, and its finalizer
        # frees what its objects queued before the context itself.
        self._finalizer = weakref.finalize(self, _release_context, ptr, self._lock)

    def close(self) -> None:
        """Close the objects still open in this context, then the context."""
        with self._lock:
            for child in list(self._children):
                child.close()
            super().close()

    @property
    def last_error(self) -> str:
        """The message of the last failed call through this context ("" if none)."""
        with self._lock:
            return LIB.llmem_ctx_error(self._handle).decode("utf-8", "replace")

    def check(self, rc: int) -> None:
        """Raise the exception of status ``rc`` with this context's message
        and the field the library names (llmem_ctx_error_field), if any.
        Call with the context's lock held, right after the failing call."""
        if rc == errors.OK:
            return
        message = LIB.llmem_ctx_error(self._handle).decode("utf-8", "replace") \
            or status_str(rc)
        named = self._error_field()
        object, field = named if named is not None else (None, None)
        raise errors.error_class(rc)(message, rc, field, object)

    def _error_field(self) -> Optional["tuple[str, str]"]:
        obj, key = ctypes.c_int(), ctypes.c_int()
        if LIB.llmem_ctx_error_field(self._handle, ctypes.byref(obj), ctypes.byref(key)) \
                != errors.OK:
            return None
        found = field_by_key(obj.value, key.value)
        return (found.object, found.keyword) if found is not None else None


_per_thread = threading.local()


def default_context() -> Context:
    """The calling thread's default context, created on first use."""
    ctx = getattr(_per_thread, "context", None)
    if ctx is None or ctx.closed:
        ctx = _per_thread.context = Context()
    return ctx


def resolve(context: Optional[Context]) -> Context:
    """``context``, or the thread's default one."""
    return context if context is not None else default_context()


@contextlib.contextmanager
def locked(*contexts: Context) -> Iterator[None]:
    """Hold the locks of several contexts, always in the same order."""
    with contextlib.ExitStack() as stack:
        for ctx in sorted(set(contexts), key=id):
            stack.enter_context(ctx._lock)
        yield


def expect(value: Any, kind: type, name: str) -> None:
    """Raise TypeError unless ``value`` is a ``kind``: handles reach the
    library as bare pointers, where one kind read as another would crash."""
    if not isinstance(value, kind):
        raise TypeError("%s: expected llmem.%s, not %s" % (name, kind.__name__,
                                                            type(value).__name__))


def expect_u64(value: Any, name: str) -> int:
    """``value`` as an unsigned 64-bit count, else TypeError or
    :class:`llmem.OutOfRange` naming it (ctypes would wrap it silently)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s: expected an integer, not %s" % (name, type(value).__name__))
    if not 0 <= value < 2 ** 64:
        raise errors.OutOfRange("%s: %d is outside [0, 2^64)" % (name, value), field=name)
    return value


def c_string(value: Any, name: str, *, field: Optional[str] = None,
             object: Optional[str] = None) -> bytes:
    """``value`` (a str, or bytes) as the bytes of a C string, else TypeError
    naming ``name``, or :class:`llmem.InvalidArgument` for a NUL inside it
    (ctypes would pass the string cut short there); ``field`` and ``object``
    go to the exception."""
    if isinstance(value, str):
        data = value.encode()
    elif isinstance(value, bytes):
        data = value
    else:
        raise TypeError("%s: expected a str or bytes, got %s" % (name, type(value).__name__))
    return _no_nul(data, value, name, field, object)


def c_path(value: Any, name: str = "path") -> bytes:
    """A path (str, bytes or os.PathLike) as a C string (``os.fsencode``),
    checked as :func:`c_string` checks a name."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("%s: expected a str, bytes or os.PathLike, got %s"
                        % (name, type(value).__name__))
    return _no_nul(os.fsencode(value), os.fspath(value), name)


def _no_nul(data: bytes, value: Any, name: str, field: Optional[str] = None,
            object: Optional[str] = None) -> bytes:
    if b"\0" in data:
        raise errors.InvalidArgument("%s: embedded NUL character in %r" % (name, value),
                                     field=field, object=object)
    return data


def status_str(rc: int) -> str:
    """The library's description of a status code."""
    return LIB.llmem_status_str(rc).decode()
