"""Go's encoding/json for pydantic models: the one encoder of every wire struct (core/v1 objects,
the KubeletConfiguration of /configz).

A struct encodes its fields in declaration order under their JSON names, by its field's tag:
- `always` (no omitempty, or a struct: Go never omits a struct) is written even when empty;
- `pointer` (a *T) is left out only when nil (None), so an explicit false or 0 stays;
- `omitempty` is left out when empty: "", 0, false, an empty list or map.
Maps are written with their keys sorted, as Go does; a map of unmodelled JSON (values typed Any)
keeps its order, because it stands for a struct whose field order is not known here.
JSON null decodes as an absent key (Go leaves the zero value).

Values that encode as Go structs of their own (Quantity, Duration) derive from GoValue.
"""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, ClassVar, Union

from pydantic import BaseModel, model_validator


class GoValue:
    """A value Go encodes with its own MarshalJSON (never empty to omitempty)."""

    def wire(self) -> Any:
        raise NotImplementedError


class Tag(Enum):
    ALWAYS = "always"
    POINTER = "pointer"
    OMITEMPTY = "omitempty"


_Rule = tuple[str, str, Tag, bool]  # python name, JSON name, tag, sort map keys
_RULES: dict[type, list[_Rule]] = {}  # a cache: each struct's rules, built on first encoding


def unwrap(tp: Any) -> Any:
    """X from X | None and from Annotated[X, ...]."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def format_time(value: datetime) -> str:
    """metav1.Time.MarshalJSON: RFC 3339 in UTC, whole seconds."""
    t = value.astimezone(UTC) if value.tzinfo else value
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"


class GoStruct(BaseModel):
    """A Go struct on the wire. `_always` and `_pointers` name (by Python name) the fields tagged
    without omitempty and the pointer fields; a field defaulting to None is a pointer too."""

    _always: ClassVar[frozenset[str]] = frozenset()
    _pointers: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        # JSON null decodes to the zero value in Go: same as the key being absent.
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data

    @classmethod
    def _tag(cls, name: str, alias: str, default: Any) -> Tag:
        """The field's tag (`alias`: its JSON name, for structs that name fields by it)."""
        if name in cls._always:
            return Tag.ALWAYS
        if name in cls._pointers or default is None:
            return Tag.POINTER
        return Tag.OMITEMPTY

    @classmethod
    def wire_rules(cls) -> list[_Rule]:
        """(name, JSON name, tag, sort keys) of every field, in declaration order; built once."""
        rules = _RULES.get(cls)
        if rules is None:
            rules = []
            for name, info in cls.model_fields.items():
                tp = unwrap(info.annotation)
                sort = typing.get_origin(tp) is dict and typing.get_args(tp)[1] is not Any
                alias = info.alias or name
                rules.append((name, alias, cls._tag(name, alias, info.default), sort))
            _RULES[cls] = rules
        return rules

    def to_wire(self) -> dict[str, Any]:
        """The JSON object Go's encoding/json writes for this struct."""
        out: dict[str, Any] = {}
        for name, key, tag, sort in self.wire_rules():
            value = getattr(self, name)
            if tag is not Tag.ALWAYS and (value is None or (tag is Tag.OMITEMPTY and empty(value))):
                continue
            out[key] = wire_value(value, sort)
        return out


def empty(value: Any) -> bool:
    """Empty to Go's omitempty: false, 0, "", an empty list or map; never a struct."""
    if isinstance(value, (GoStruct, GoValue)):
        return False
    if isinstance(value, bool):
        return not value
    return value in ("", 0) or (isinstance(value, (list, dict)) and not value)


def wire_value(value: Any, sort: bool = False) -> Any:
    """A field's value as JSON-ready data (`sort`: a map whose keys Go sorts)."""
    if isinstance(value, GoStruct):
        return value.to_wire()
    if isinstance(value, GoValue):
        return value.wire()
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, list):
        return [wire_value(item) for item in value]
    if isinstance(value, dict):
        items = sorted(value.items()) if sort else value.items()
        return {k: wire_value(v) for k, v in items}
    return value
