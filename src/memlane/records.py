"""Data classes for memlane's plain records, without the standard library's import-time cost.

``from memlane.records import dataclass, field`` reads and behaves as ``dataclasses`` does for the
part memlane uses: ``@dataclass`` and ``@dataclass(frozen=True)`` over annotated fields, defaults and
``field(default=…, default_factory=…, compare=…, hash=…, repr=…)``, ``__post_init__``, ``ClassVar``
annotations left out, and ``fields``, ``replace``, ``asdict`` and ``is_dataclass``.

Why not the standard module: a hook answered without the daemon is a fresh Python process, and
importing ``dataclasses`` (which brings ``inspect``, ``ast``, ``dis`` and ``tokenize``) took 13–19 ms of
it, and creating the 52 classes on that path another 27–37 ms: Python 3.11 compiles every generated
method apart (about 195 ``exec`` calls). Here only ``__init__`` is compiled — one small function a
class, at the class's first instance (until then ``inspect.signature`` reads ``(*args, **kwargs)``;
nothing in memlane introspects a record's ``__init__``), with the standard errors for a missing or
unknown argument — and
``__repr__``, ``__eq__``, ``__hash__`` and the frozen guard are shared functions that read the class's
field names. Classes are never subclassed here; a record that inherits from another is refused
rather than half supported.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import PurePath

__all__ = ["FrozenInstanceError", "asdict", "dataclass", "field", "fields", "is_dataclass", "replace"]

MISSING = type("MISSING", (), {"__repr__": lambda self: "MISSING"})()
_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """Raised on assigning to or deleting a field of a frozen record."""


class Field:
    """One field of a record: its name and how it is filled, compared, hashed and shown."""

    __slots__ = ("name", "default", "default_factory", "compare", "hash", "repr")

    def __init__(self, default=MISSING, default_factory=MISSING, compare=True, hash=None, repr=True):
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory = default, default_factory
        self.compare, self.hash, self.repr = compare, hash, repr

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default=MISSING, default_factory=MISSING, compare=True, hash=None, repr=True) -> Field:
    """A field's default, or the callable that makes a fresh one for each record (as ``dataclasses.field``)."""
    return Field(default, default_factory, compare, hash, repr)


def dataclass(cls=None, /, *, frozen: bool = False):
    """Give ``cls`` an ``__init__`` over its annotated fields, and ``__repr__`` and ``__eq__`` (plus
    ``__hash__`` and read-only fields when ``frozen``); methods the class defines itself are kept."""

    def wrap(cls):
        return _make_record(cls, frozen)

    return wrap if cls is None else wrap(cls)


def fields(record) -> tuple[Field, ...]:
    """The fields of a record or record class, in the order they were declared."""
    try:
        return getattr(record, _FIELDS)
    except AttributeError:
        raise TypeError("must be called with a dataclass type or instance") from None


def is_dataclass(obj) -> bool:
    """Whether ``obj`` is a record class or a record made with this module's ``dataclass``."""
    return hasattr(obj, _FIELDS)


def replace(record, /, **changes):
    """A new record of the same class with ``changes`` applied (its ``__post_init__`` runs again)."""
    values = {f.name: getattr(record, f.name) for f in fields(record)}
    unknown = set(changes) - values.keys()
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field {sorted(unknown)[0]!r}")
    return type(record)(**(values | changes))


def asdict(record) -> dict:
    """The record as a dict, nested records, lists, tuples and dicts converted too and every other
    value deep-copied (as ``dataclasses.asdict``)."""
    if not is_dataclass(record) or isinstance(record, type):
        raise TypeError("asdict() should be called on dataclass instances")
    return _asdict(record)


_ATOMIC = frozenset({type(None), bool, int, float, complex, str, bytes})


def _asdict(value):
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _asdict(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple: its fields are its arguments
        return type(value)(*[_asdict(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_asdict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_asdict(k), _asdict(v)) for k, v in value.items())
    if type(value) in _ATOMIC or isinstance(value, (Enum, PurePath)):
        return value  # immutable: what ``copy.deepcopy`` gives, or its equal, without importing ``copy`` (and ``weakref``)
    import copy

    return copy.deepcopy(value)


def _make_record(cls, frozen: bool):
    if any(hasattr(base, _FIELDS) for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__name__}: a record cannot inherit from another record here")
    found = _collect_fields(cls)
    setattr(cls, _FIELDS, found)
    _set_if_missing(cls, "__init__", _first_init(cls, found, frozen))
    _set_if_missing(cls, "__repr__", _repr)
    _set_if_missing(cls, "__eq__", _eq)
    # as dataclasses does: a class that compares by value is unhashable unless frozen or given a __hash__
    own_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in cls.__dict__))
    if not explicit_hash:
        cls.__hash__ = _hash if frozen else None
    if frozen:
        for name, guard in (("__setattr__", _frozen_setattr), ("__delattr__", _frozen_delattr)):
            if name in cls.__dict__:
                raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
            setattr(cls, name, guard)
    _set_if_missing(cls, "__match_args__", tuple(f.name for f in found))
    return cls


def _collect_fields(cls) -> tuple[Field, ...]:
    found: list[Field] = []
    for name, annotation in _own_annotations(cls).items():
        if _is_classvar(annotation):
            continue
        default = cls.__dict__.get(name, MISSING)
        spec = default if isinstance(default, Field) else Field(default=default)
        spec.name = name
        if spec.default is not MISSING and type(spec.default).__hash__ is None:
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: "
                             "use default_factory")
        if spec.default is MISSING and spec.default_factory is MISSING:
            if found and _has_default(found[-1]):
                raise TypeError(f"non-default argument {name!r} follows default argument")
            if isinstance(default, Field):
                delattr(cls, name)
        else:
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        found.append(spec)
    return tuple(found)


def _own_annotations(cls) -> dict:
    annotations = cls.__dict__.get("__annotations__")
    if annotations is None and sys.version_info >= (3, 14):
        # annotations evaluated lazily (PEP 649): the class dict holds them only under
        # ``from __future__ import annotations``; read them as dataclasses does there
        import annotationlib

        annotations = annotationlib.get_annotations(cls, format=annotationlib.Format.FORWARDREF)
    return annotations or {}


def _has_default(spec: Field) -> bool:
    return spec.default is not MISSING or spec.default_factory is not MISSING


def _is_classvar(annotation) -> bool:
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip()
        return head in ("ClassVar", "typing.ClassVar")
    typing = sys.modules.get("typing")
    return typing is not None and (annotation is typing.ClassVar or getattr(annotation, "__origin__", None)
                                   is typing.ClassVar)


def _first_init(cls, found: tuple[Field, ...], frozen: bool):
    """An ``__init__`` that compiles the class's own at its first call and hands over to it: a
    fresh process (a hook answered without the daemon) creates ~50 record classes on import and
    builds only some of them, and compiling each ``__init__`` costs ~0.15 ms."""

    def __init__(self, *args, **kwargs):
        init = _compile_init(cls, found, frozen)
        if cls.__dict__.get("__init__") is __init__:
            type.__setattr__(cls, "__init__", init)
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    return __init__


def _compile_init(cls, found: tuple[Field, ...], frozen: bool):
    """One small ``__init__`` a class, compiled so it has the fields as its real parameters."""
    # the source's own names are dunders no field can bear (the class body mangles ``__x``), and
    # ``self`` is renamed when a field is called so, as dataclasses does
    me = "__records_self__" if any(spec.name == "self" for spec in found) else "self"
    params, body = [me], []
    scope = {"__records_missing__": MISSING, "__records_setattr__": object.__setattr__}
    for n, spec in enumerate(found):
        if spec.default_factory is not MISSING:
            scope[f"__records_factory_{n}__"] = spec.default_factory
            params.append(f"{spec.name}=__records_missing__")
            value = f"__records_factory_{n}__() if {spec.name} is __records_missing__ else {spec.name}"
        else:
            if spec.default is not MISSING:
                scope[f"__records_default_{n}__"] = spec.default
                params.append(f"{spec.name}=__records_default_{n}__")
            else:
                params.append(spec.name)
            value = spec.name
        body.append(f"__records_setattr__({me}, {spec.name!r}, {value})" if frozen else f"{me}.{spec.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"{me}.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(source, scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


def _set_if_missing(cls, name: str, value) -> None:
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _repr(self) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in getattr(self, _FIELDS) if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _compared(self) -> tuple:
    return tuple(getattr(self, f.name) for f in getattr(self, _FIELDS) if f.compare)


def _eq(self, other):
    if other.__class__ is self.__class__:
        return _compared(self) == _compared(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(tuple(getattr(self, f.name) for f in getattr(self, _FIELDS)
                      if (f.compare if f.hash is None else f.hash)))


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")
