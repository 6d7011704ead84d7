# SPDX-License-Identifier: MIT
"""What models and training setups share: fields set and read by keyword."""
from __future__ import annotations

import ctypes
import difflib
from typing import Any, Dict, Iterable, Mapping, Optional, TypeVar

from . import errors
from .context import Handle, c_string
from .fields import Field, Value, canonical, unknown_keyword

_C = TypeVar("_C", bound="Configurable")

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class Configurable(Handle):
    """A handle whose fields are set with keywords named like the CLI flags."""

    _fields: Mapping[str, Field]
    _set_int: Any
    _set_str: Any = None  # None: the object takes no names (a planner)
    _get_int: Any

    def set(self: _C, **values: Any) -> _C:
        """Set fields by keyword, in order: ``set(hidden=4096, norm="rmsnorm")``.

        Enumerated fields take their names, bitmasks a comma-separated string
        or a list of names, real fields a float. The ``llmem`` flags that
        spell a field their own way are keywords too (``attn_bias`` for
        ``qkv_bias``, ``zero=3`` for ``sharding="zero3"``, ``fsdp="full"``
        for ``sharding="fsdp-full"``: :data:`llmem.fields.ALIASES`). Returns
        the object itself.
        """
        function = "%s.set()" % type(self).__name__
        for keyword, value in canonical(function, values, self._fields).items():
            self._set(self._field(keyword, "set()"), value)
        return self

    def get(self, keyword: str) -> Optional[Value]:
        """The value of a field: a name for an enumerated field (None for no
        value chosen, as the GPU's default); a bitmask (LoRA targets) as it was
        set, its names or its role bits (the default: an int), so that setting
        what was read changes nothing; else a number."""
        return self._get(self._field(keyword, "get()"))

    def __setattr__(self, name: str, value: Any) -> None:
        # A misspelt field (train.bacth = 64) is an error, not a new attribute.
        if not name.startswith("_") and not hasattr(type(self), name):
            close = difflib.get_close_matches(name, list(self._fields), n=3)
            hint = " (did you mean %s?)" % ", ".join(repr(c) for c in close) if close else ""
            raise AttributeError("%s has no field %r%s" % (type(self).__name__, name, hint))
        object.__setattr__(self, name, value)

    def to_dict(self) -> Dict[str, Optional[Value]]:
        """Every field by keyword, defaults resolved."""
        return {keyword: self._get(field) for keyword, field in self._fields.items()}

    def _field(self, keyword: str, function: str) -> Field:
        field = self._fields.get(keyword)
        if field is None:
            raise unknown_keyword("%s.%s" % (type(self).__name__, function), keyword,
                                  list(self._fields))
        return field

    def _set_double(self, handle: ctypes.c_void_p, key: int, value: float) -> int:
        raise TypeError("%s has no real fields" % type(self).__name__)

    def _set(self, field: Field, value: Any) -> None:
        if isinstance(value, (list, tuple, set, frozenset)):  # a bitmask by names
            value = ",".join(_names(field, value))
        expected = "a number" if field.is_real else \
            "an int or a name" if self._set_str is not None else "an int"
        if value is None:
            if not (field.is_enum and field.minimum == 0):
                raise TypeError("%s: None is not a value of this field (expected %s)"
                                % (field.name, expected))
            value = 0  # no value chosen (the GPU)
        ctx = self._context
        with ctx._lock:
            handle = self._handle
            if isinstance(value, str) and self._set_str is not None:
                rc = self._set_str(handle, field.key, c_string(
                    value, field.name, field=field.keyword, object=field.object))
            elif isinstance(value, bool) and (field.is_real or
                                              (field.minimum, field.maximum) != (0, 1)):
                # True is an int in Python: only a flag's 0/1 may be given so.
                raise TypeError("%s: expected %s, got bool" % (
                    field.name, "a number" if field.is_real else "an int"))
            elif field.is_real and isinstance(value, (int, float)):
                rc = self._set_double(handle, field.key, float(value))
            elif isinstance(value, int):
                if not _INT64_MIN <= value <= _INT64_MAX:
                    raise errors.OutOfRange("%s: value %d out of range [%d, %d]"
                                            % (field.name, value, field.minimum, field.maximum),
                                            field=field.keyword, object=field.object)
                rc = self._set_int(handle, field.key, value)
            else:
                raise TypeError("%s: expected %s, got %s" % (field.name, expected,
                                                             type(value).__name__))
            ctx.check(rc)
        if field.is_mask:
            # names resolve in the model's family when an estimate runs;
            # role bits do not: read back what was given
            given = self.__dict__.setdefault("_mask_given", {})
            if isinstance(value, str):
                given[field.key] = value
            else:
                given.pop(field.key, None)

    def _get(self, field: Field) -> Optional[Value]:
        if field.is_mask and field.key in self.__dict__.get("_mask_given", {}):
            return self.__dict__["_mask_given"][field.key]
        ctx = self._context
        with ctx._lock:
            if field.is_real:
                out_d = ctypes.c_double()
                rc = self._get_double(self._handle, field.key, ctypes.byref(out_d))
                ctx.check(rc)
                return out_d.value
            out = ctypes.c_int64()
            rc = self._get_int(self._handle, field.key, ctypes.byref(out))
            ctx.check(rc)
        if field.is_mask:
            return out.value  # role bits (#llmem_lora_target), in every family
        return field.show(out.value)

    def _get_double(self, handle: ctypes.c_void_p, key: int, out: Any) -> int:
        raise TypeError("%s has no real fields" % type(self).__name__)


def _names(field: Field, values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        if not isinstance(value, str):
            raise TypeError("%s: expected names, got %s" % (field.name, type(value).__name__))
        yield value


def add_properties(cls: type, fields: Mapping[str, Field]) -> None:
    """One property a field on ``cls`` (``model.hidden``, ``train.lora_rank``),
    read and written like get()/set()."""
    for keyword, field in fields.items():
        if hasattr(cls, keyword):
            continue  # a method of the same name wins; get()/set() still reach it

        def getter(self: Configurable, _f: Field = field) -> Optional[Value]:
            return self._get(_f)

        def setter(self: Configurable, value: Any, _f: Field = field) -> None:
            self._set(_f, value)

        setattr(cls, keyword, property(getter, setter, doc="The %s field '%s' (library bounds "
                                       "[%d, %d])." % (field.object, field.name, field.minimum,
                                                       field.maximum)))
