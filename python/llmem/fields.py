# SPDX-License-Identifier: MIT
"""The fields of models and training setups, as the library describes them.

Names, bounds and value names are asked of the library at import
(``llmem_{model,train,parallel,plan,fit,pack}_field_info``, ``*_value_name``,
``*_choice``);
nothing here lists them a second time. A field's keyword is
its library name with underscores for dashes (``kv-heads`` -> ``kv_heads``),
as the ``llmem`` command's flags are spelled.
"""
from __future__ import annotations

import ctypes
import difflib
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple, Union

from . import errors
from ._library import LIB

MODEL = "model"
TRAIN = "train"
PARALLEL = "parallel"
PLAN = "plan"
FIT = "fit"
PACK = "pack"

# Object kinds of llmem_ctx_error_field (include/llmem.h, LLMEM_OBJECT_*).
_OBJECT_CODES = {1: MODEL, 2: TRAIN, 3: PARALLEL, 4: PLAN, 5: FIT, 6: PACK}

# Field keys are small integers, assigned in order and never reused; the
# scan reaches far beyond the last one so keys added later are found.
_KEY_SCAN_LIMIT = 1024

Value = Union[int, float, str]


@dataclass(frozen=True)
class Field:
    """One field of a model, a training setup, a layout, a planner, a fit
    or a pack (``object``: "model", "train", "parallel", "plan", "fit",
    "pack")."""

    object: str
    key: int
    name: str
    minimum: int
    maximum: int
    is_real: bool
    is_enum: bool
    is_mask: bool
    choices: Tuple[Tuple[str, int], ...]

    @property
    def keyword(self) -> str:
        """The Python keyword: the name with underscores for dashes."""
        return self.name.replace("-", "_")

    def value_name(self, value: int) -> Optional[str]:
        """The library's name of an enumerated value, or None."""
        if not self.is_enum:
            return None
        name = _FUNCTIONS[self.object]["value_name"](self.key, value)
        return name.decode() if name is not None else None

    def mask_names(self, mask: int) -> Optional[Tuple[str, ...]]:
        """The names spelling a bitmask, or None when some bits have none:
        each accepted name, in the library's order, that adds bits not yet
        named (q|k|v reads q_proj, k_proj, v_proj, not also c_attn)."""
        named = 0
        names = []
        for name, bits in self.choices:
            if bits and mask & bits == bits and named & bits != bits:
                named |= bits
                names.append(name)
        return tuple(names) if named == mask else None

    def show(self, raw: Union[int, float]) -> Optional[Value]:
        """A value as Python code sees it: the name of an enumerated value
        (None for 0, no value chosen: the GPU), the comma-separated names of
        a bitmask, else the number."""
        if self.is_enum:
            if int(raw) == 0 and self.minimum == 0:
                return None
            name = self.value_name(int(raw))
            return name if name is not None else int(raw)
        if self.is_mask:
            names = self.mask_names(int(raw))
            return ",".join(names) if names is not None else int(raw)
        return raw


# The settings of the planner, the fit and the pack are all plain numbers:
# they have no value names.
_FUNCTIONS = {
    object: {"field_info": getattr(LIB, "llmem_%s_field_info" % object),
             "value_name": getattr(LIB, "llmem_%s_value_name" % object),
             "choice": getattr(LIB, "llmem_%s_choice" % object)}
    for object in (MODEL, TRAIN, PARALLEL)
}
for _numeric in (PLAN, FIT, PACK):
    _FUNCTIONS[_numeric] = {"field_info": getattr(LIB, "llmem_%s_field_info" % _numeric),
                            "value_name": None, "choice": None}


def _choices(object: str, key: int) -> Tuple[Tuple[str, int], ...]:
    choice = _FUNCTIONS[object]["choice"]
    if choice is None:
        return ()
    found = []
    value = ctypes.c_int64()
    index = 0
    while True:
        name = choice(key, index, ctypes.byref(value))
        if name is None:
            return tuple(found)
        found.append((name.decode(), value.value))
        index += 1


def _describe(object: str, key: int) -> Optional[Field]:
    name = ctypes.c_char_p()
    lo, hi = ctypes.c_int64(), ctypes.c_int64()
    is_real = ctypes.c_int(0)
    info = _FUNCTIONS[object]["field_info"]
    if object == TRAIN:  # its describer says which fields are real
        rc = info(key, ctypes.byref(name), ctypes.byref(lo), ctypes.byref(hi),
                  ctypes.byref(is_real))
    else:
        rc = info(key, ctypes.byref(name), ctypes.byref(lo), ctypes.byref(hi))
    if rc != 0:
        return None
    if object == MODEL:  # the dropout probabilities are real
        is_real.value = LIB.llmem_model_field_is_real(key) == 1
    choices = _choices(object, key)
    value_name = _FUNCTIONS[object]["value_name"]
    # An enumeration from 0 (no value chosen, as the GPU) names its values from 1.
    first = lo.value if lo.value != 0 else 1
    is_enum = value_name is not None and value_name(key, first) is not None
    return Field(object=object, key=key, name=name.value.decode(), minimum=lo.value,
                 maximum=hi.value, is_real=bool(is_real.value), is_enum=is_enum,
                 is_mask=bool(choices) and not is_enum, choices=choices)


def _scan(object: str) -> Mapping[str, Field]:
    found: Dict[str, Field] = {}
    for key in range(1, _KEY_SCAN_LIMIT):
        field = _describe(object, key)
        if field is not None:
            found[field.keyword] = field
    return found


MODEL_FIELDS: Mapping[str, Field] = _scan(MODEL)
TRAIN_FIELDS: Mapping[str, Field] = _scan(TRAIN)
PARALLEL_FIELDS: Mapping[str, Field] = _scan(PARALLEL)
PLAN_FIELDS: Mapping[str, Field] = _scan(PLAN)
FIT_FIELDS: Mapping[str, Field] = _scan(FIT)
PACK_FIELDS: Mapping[str, Field] = _scan(PACK)
_BY_KEY = {(f.object, f.key): f
           for table in (MODEL_FIELDS, TRAIN_FIELDS, PARALLEL_FIELDS, PLAN_FIELDS, FIT_FIELDS,
                         PACK_FIELDS)
           for f in table.values()}


@dataclass(frozen=True)
class Alias:
    """A keyword spelt as an ``llmem`` flag that names a field its own way:
    it sets ``object``'s field ``target`` to the value given, after
    ``prefix`` (``zero=3`` is ``sharding="zero3"``, as ``--zero 3`` is
    ``--sharding zero3``; ``fsdp="full"`` is ``sharding="fsdp-full"``;
    ``attn_bias=1`` is ``qkv_bias=1``). ``metavar``: the values it takes."""

    keyword: str
    object: str
    target: str
    prefix: Optional[str] = None
    metavar: Optional[str] = None

    def value(self, given: object) -> object:
        """The target field's value for ``given``."""
        if self.prefix is None:
            return given
        if isinstance(given, bool) or not isinstance(given, (int, str)):
            raise TypeError("%s: expected %s, got %s"
                            % (self.keyword, self.metavar, type(given).__name__))
        name = "%s%s" % (self.prefix, given)
        field = _TABLES[self.object][self.target]
        if name not in dict(field.choices):
            raise errors.NotFound("%s %r: expected %s" % (self.keyword, given, self.metavar),
                                  field=self.keyword, object=self.object)
        return name


def _suffixes(object: str, target: str, prefix: str) -> str:
    """The values a prefixed alias takes: "1|2|3" for zero."""
    field = _TABLES[object][target]
    return "|".join(name[len(prefix):] for name, _ in field.choices
                    if name.startswith(prefix) and len(name) > len(prefix))


_TABLES = {MODEL: MODEL_FIELDS, TRAIN: TRAIN_FIELDS, PARALLEL: PARALLEL_FIELDS,
           PLAN: PLAN_FIELDS, FIT: FIT_FIELDS, PACK: PACK_FIELDS}

# The flags of cli/args.c whose name is not the field's: each its keyword.
ALIASES: Mapping[str, Alias] = {
    a.keyword: a for a in (
        Alias("attn_bias", MODEL, "qkv_bias"),
        Alias("zero", PARALLEL, "sharding", "zero", _suffixes(PARALLEL, "sharding", "zero")),
        Alias("fsdp", PARALLEL, "sharding", "fsdp-", _suffixes(PARALLEL, "sharding", "fsdp-")),
    ) if a.target in _TABLES[a.object]
}


def canonical(function: str, values: Mapping[str, object],
              fields: Mapping[str, Field]) -> Dict[str, object]:
    """``values`` with each alias of ``fields``' object replaced by its
    field (``zero=3`` -> ``sharding="zero3"``), in order. A field given
    twice, by its keyword and an alias or by two aliases, must get the same
    value: ``zero=3, sharding="fsdp-full"`` raises InvalidArgument, as the
    command refuses ``--zero 3 --sharding fsdp-full``."""
    found: Dict[str, object] = {}
    given_as: Dict[str, str] = {}
    for keyword, value in values.items():
        alias = ALIASES.get(keyword)
        if alias is not None and alias.target in fields and keyword not in fields:
            target, value = alias.target, alias.value(value)
        else:
            target = keyword
        if target in found and not _same(fields.get(target), found[target], value):
            raise errors.InvalidArgument(
                "%s: %s=%r and %s=%r set %s differently: give one"
                % (function, given_as[target], values[given_as[target]], keyword,
                   values[keyword], target), field=target,
                object=fields[target].object if target in fields else None)
        found[target] = value
        given_as.setdefault(target, keyword)
    return found


def _same(field: Optional[Field], a: object, b: object) -> bool:
    """Whether two values of a field are one (a name and its code are)."""
    if a == b and type(a) is type(b):
        return True
    if field is None or not field.is_enum:
        return False
    codes = dict(field.choices)
    return codes.get(a, a) == codes.get(b, b) if not isinstance(a, bool) and \
        not isinstance(b, bool) else False


def field_by_key(object_code: int, key: int) -> Optional[Field]:
    """The field an ``llmem_ctx_error_field`` answer names, or None."""
    object = _OBJECT_CODES.get(object_code)
    return _BY_KEY.get((object, key)) if object is not None else None


def unknown_keyword(function: str, keyword: str, known: "list[str]") -> TypeError:
    """The TypeError for a keyword naming no field, with the closest names."""
    alias = ALIASES.get(keyword)
    if alias is not None:  # an alias of a field of another object
        return TypeError("%s got an unexpected keyword argument %r (%s sets the %s field "
                         "%r)" % (function, keyword, keyword, alias.object, alias.target))
    close = difflib.get_close_matches(keyword, list(known) + [
        name for name, other in ALIASES.items() if other.target in known], n=3)
    hint = " (did you mean %s?)" % ", ".join(repr(c) for c in close) if close else ""
    return TypeError("%s got an unexpected keyword argument %r%s" % (function, keyword, hint))
