# SPDX-License-Identifier: MIT
"""Model descriptions: built-in presets, Hugging Face configs, or fields."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Optional, Tuple, Union

from ._configurable import Configurable, add_properties
from ._library import LIB
from .context import Context, c_path, c_string, resolve
from .fields import MODEL_FIELDS


def presets() -> Tuple[str, ...]:
    """The names of the built-in presets (Hugging Face ids)."""
    return tuple(LIB.llmem_preset_name(i).decode() for i in range(LIB.llmem_preset_count()))


class Model(Configurable):
    """A decoder-only transformer (``llmem_model``).

    ``Model("llama", hidden=4096, layers=32, ...)`` describes one field by
    field; :meth:`from_preset`, :meth:`from_hf_config` and
    :meth:`from_hf_json` start from a known one. Keywords are the fields of
    :data:`llmem.MODEL_FIELDS` (``kv_heads``, ``tie_embeddings``, ...), also
    readable and writable as attributes (``model.hidden``). Enumerated fields
    (family, norm, mlp, positions) take and return names; the dropout
    probabilities (``attention_dropout``, ``hidden_dropout``,
    ``embedding_dropout``: the config's, or the family's defaults) are floats.
    """

    _free = LIB.llmem_model_free
    _what = "model"
    _fields = MODEL_FIELDS
    _set_int = staticmethod(LIB.llmem_model_set_int)
    _set_str = staticmethod(LIB.llmem_model_set_str)
    _get_int = staticmethod(LIB.llmem_model_get_int)
    _set_double = staticmethod(LIB.llmem_model_set_double)  # type: ignore[assignment]
    _get_double = staticmethod(LIB.llmem_model_get_double)  # type: ignore[assignment]

    def __init__(self, family: Union[str, int], *, context: Optional[Context] = None,
                 **fields: Any) -> None:
        """A model of ``family`` ("llama", "gpt2", ...) with that family's
        layout defaults and the given fields; the sizes (hidden, layers,
        heads, intermediate, vocab) must be set before it is estimated."""
        if isinstance(family, bool) or not isinstance(family, (str, int)):
            raise TypeError("family: expected a name or an int, got %s" % type(family).__name__)
        ctx = resolve(context)
        family_field = MODEL_FIELDS["family"]
        codes = dict(family_field.choices)
        # A name the library does not list, or a code no C int holds (ctypes
        # would wrap it), is set below as a field, so that the library's own
        # message reports it.
        direct = family in codes if isinstance(family, str) else -(1 << 31) <= family < 1 << 31
        code = codes.get(family, family) if direct else family_field.minimum
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_model_new(ctx._handle, code, ctypes.byref(ptr)))
            super().__init__(ptr, ctx)
            if not direct:
                self._set(family_field, family)
        self.set(**fields)

    @classmethod
    def _adopt(cls, ctx: Context, ptr: ctypes.c_void_p, fields: Any) -> "Model":
        model = cls.__new__(cls)
        Configurable.__init__(model, ptr, ctx)
        return model.set(**fields)

    @classmethod
    def from_preset(cls, name: Union[str, bytes], *, context: Optional[Context] = None,
                    **fields: Any) -> "Model":
        """A built-in preset (see :func:`presets`; the part after the slash
        also matches), with the given fields changed."""
        data = c_string(name, "name")
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_model_new_preset(ctx._handle, data, ctypes.byref(ptr)))
            return cls._adopt(ctx, ptr, fields)

    @classmethod
    def from_hf_config(cls, path: Union[str, bytes, "os.PathLike[str]"], *,
                       context: Optional[Context] = None, **fields: Any) -> "Model":
        """A Hugging Face ``config.json``, or a directory holding one.

        Raises :class:`ReadError` (unreadable), :class:`ParseError`
        (malformed) or :class:`NotSupported` (unknown model_type, or a
        library built without its JSON reader)."""
        data = c_path(path)
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_model_new_hf_config(ctx._handle, data, ctypes.byref(ptr)))
            return cls._adopt(ctx, ptr, fields)

    @classmethod
    def from_hf_json(cls, text: Union[str, bytes], *, context: Optional[Context] = None,
                     **fields: Any) -> "Model":
        """As :meth:`from_hf_config`, from the JSON text of a config (passed
        with its length: a NUL in it is the reader's :class:`ParseError`)."""
        if not isinstance(text, (str, bytes, bytearray, memoryview)):
            raise TypeError("text: expected a str or bytes, got %s" % type(text).__name__)
        data = text.encode() if isinstance(text, str) else bytes(text)
        ctx = resolve(context)
        with ctx._lock:
            ptr = ctypes.c_void_p()
            ctx.check(LIB.llmem_model_new_hf_config_json(ctx._handle, data, len(data),
                                                         ctypes.byref(ptr)))
            return cls._adopt(ctx, ptr, fields)

    def validate(self) -> None:
        """Check the fields together (sizes set, heads dividing hidden, ...)."""
        with self._context._lock:
            self._context.check(LIB.llmem_model_validate(self._handle))

    @property
    def param_count(self) -> int:
        """The exact parameter count (tied weights counted once)."""
        out = ctypes.c_uint64()
        with self._context._lock:
            self._context.check(LIB.llmem_model_param_count(self._handle, ctypes.byref(out)))
        return out.value

    def __repr__(self) -> str:
        if self.closed:
            return "<llmem.Model closed>"
        return "<llmem.Model %s hidden=%s layers=%s>" % (self.family, self.hidden, self.layers)


add_properties(Model, MODEL_FIELDS)
