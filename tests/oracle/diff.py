"""Structural comparison of the kubelet's answers with kubeletapi's.

A document is compared as a tree: every key at every level, the JSON type of every value, and
the values themselves where they are meant to agree (after `normalise`, which blanks what must
differ between two nodes: names of the node's own files, UIDs, IDs, times, byte counts,
versions). Lists of objects are compared element by element after sorting by a key the caller
names; otherwise through the union of their elements' shapes (one path `[]`).

A difference is a short stable string, `<what> <path>: <kind>`, e.g.
`/pods items[].status.hostIPs: missing` (the kubelet has it, kubeletapi does not) or
`/pods items[].status.qosClass: value 'Burstable' != 'BestEffort'`. The README's list of
deliberate differences names them by the part before the colon plus the kind word
(tests/oracle/allowed.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Normaliser = Callable[[str, Any], Any]


@dataclass(frozen=True, order=True)
class Difference:
    what: str  # the endpoint or document, e.g. "/pods"
    path: str  # e.g. "items[].status.conditions[type=Ready].reason"
    kind: str  # missing | extra | type | value
    detail: str = ""

    @property
    def key(self) -> str:
        """What the README lists: `<what> <path>: <kind>`."""
        return f"{self.what} {self.path}: {self.kind}"

    def __str__(self) -> str:
        return f"{self.key}{' ' + self.detail if self.detail else ''}"


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@dataclass
class Comparer:
    """`keyed`: for a list at a path (indices written `[]`), the field naming its elements (e.g.
    "type" for conditions): elements are matched by that field and the path says `[type=Ready]`.
    `values`: whether leaf values are compared (after `normalise`) or only their types."""

    what: str
    keyed: Mapping[str, str]
    values: bool = True
    normalise: Normaliser | None = None

    def compare(self, real: Any, ours: Any, path: str = "") -> list[Difference]:
        out: list[Difference] = []
        self._walk(real, ours, path, out)
        return sorted(set(out))

    def _walk(self, real: Any, ours: Any, path: str, out: list[Difference]) -> None:
        if self.normalise is not None:
            real, ours = self.normalise(path, real), self.normalise(path, ours)
        if type_name(real) != type_name(ours):
            out.append(Difference(self.what, path, "type", f"{type_name(real)} != {type_name(ours)}"))
            return
        if isinstance(real, dict):
            for key in sorted(set(real) | set(ours)):
                sub = join(path, key)
                if key not in ours:
                    out.append(Difference(self.what, sub, "missing", _short(real[key])))
                elif key not in real:
                    out.append(Difference(self.what, sub, "extra", _short(ours[key])))
                else:
                    self._walk(real[key], ours[key], sub, out)
        elif isinstance(real, list):
            self._list(real, ours, path, out)
        elif self.values and real != ours:
            out.append(Difference(self.what, path, "value", f"{_short(real)} != {_short(ours)}"))

    def _list(self, real: list[Any], ours: list[Any], path: str, out: list[Difference]) -> None:
        field = self.keyed.get(path + "[]")
        if field is not None:
            real_by = {str(dig(e, field)): e for e in real if isinstance(e, dict)}
            ours_by = {str(dig(e, field)): e for e in ours if isinstance(e, dict)}
            for name in sorted(set(real_by) | set(ours_by)):
                sub = f"{path}[{field}={name}]"
                if name not in ours_by:
                    out.append(Difference(self.what, sub, "missing"))
                elif name not in real_by:
                    out.append(Difference(self.what, sub, "extra"))
                else:
                    self._walk(real_by[name], ours_by[name], sub, out)
            return
        if not real or not ours:
            if bool(real) != bool(ours):
                out.append(Difference(self.what, path + "[]", "missing" if real else "extra"))
            return
        if all(not isinstance(e, (dict, list)) for e in [*real, *ours]):
            if self.values and sorted(map(repr, real)) != sorted(map(repr, ours)):
                out.append(Difference(self.what, path + "[]", "value", f"{_short(real)} != {_short(ours)}"))
            return
        for r, o in zip(_sorted(real), _sorted(ours), strict=False):
            self._walk(r, o, path + "[]", out)
        if len(real) != len(ours):
            out.append(Difference(self.what, path + "[]", "length", f"{len(real)} != {len(ours)}"))


def dig(value: Any, dotted: str) -> Any:
    """value["a"]["b"] for "a.b"; None where a step is missing."""
    for step in dotted.split("."):
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _sorted(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=lambda e: repr(sorted(e.items())) if isinstance(e, dict) else repr(e))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
