"""The memory manager's state and its checkpoint file, byte-compatible with the kubelet's.

pkg/kubelet/cm/memorymanager/state: a machine state (per NUMA node: how many assignments use it,
the memory table of each memory type, the group of nodes it is allocated with) and the blocks of
every container (pod UID -> container name -> blocks). The file <root-dir>/memory_manager_state is
the checkpoint manager's JSON (encoding/json of MemoryManagerCheckpoint: compact, map keys sorted,
`entries` omitted when empty) with a checksum the kubelet verifies on every read:
checkpointmanager/checksum computes FNV-32a over apimachinery's dump.ForHash, go-spew's `%#v` of
the checkpoint pointer with the checksum zeroed (sorted keys, no pointer addresses). `dump_for_hash`
writes that text for exactly these types, so a file either kubelet wrote is read by the other.

Go tells a nil slice or map from an empty one (spew prints `<nil>` for the first, `[]`/`map[]` for
the second), so the model keeps None apart from empty wherever the JSON can carry either.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubeletapi.errors import InvalidInput

STATE_FILE = "memory_manager_state"
CORRUPT = "checkpoint is corrupted"
MEMORY = "memory"


@dataclass
class MemoryTable:
    total: int = 0  # TotalMemSize
    system_reserved: int = 0
    allocatable: int = 0
    reserved: int = 0
    free: int = 0


@dataclass
class NUMANodeState:
    number_of_assignments: int = 0
    memory_map: dict[str, MemoryTable | None] | None = None
    cells: list[int] | None = None


@dataclass
class Block:
    numa_affinity: list[int] | None
    type: str
    size: int


NUMANodeMap = dict[int, NUMANodeState | None]
Assignments = dict[str, dict[str, list[Block] | None] | None]


@dataclass
class Checkpoint:
    policy_name: str = ""
    machine_state: NUMANodeMap | None = field(default_factory=dict)
    entries: Assignments | None = field(default_factory=dict)
    checksum: int = 0


class CheckpointError(InvalidInput):
    """The state file cannot be read back (bad JSON, wrong types, checksum mismatch)."""


# --- the hash: go-spew's %#v of *state.MemoryManagerCheckpoint ----------------------------------

class _Spew:
    """go-spew's formatter state for `%#v` (types shown, no addresses), over these types only.

    Its one flag, ignoreNextType, is set before each map key, map value and slice element and
    cleared once a value prints, except after a nil pointer: then it stays set and the next
    value's type is not printed (a nil map value as a map's last entry hides the type of the
    struct field after the map). The checksum depends on that quirk, so it is kept.
    """

    def __init__(self) -> None:
        self.out: list[str] = []
        self.ignore = False

    def typed(self, go_type: str, text: str) -> None:
        if not self.ignore:
            self.out.append(f"({go_type})")
        self.ignore = False
        self.out.append(text)

    def pointer(self, go_type: str, value: Any, body: Callable[[Any], None]) -> None:
        if value is None:
            if not self.ignore:  # only a top-level nil pointer shows its type
                self.out.append(f"(*{go_type})")
            self.out.append("<nil>")
            return
        self.out.append("<*>" if self.ignore else f"(*{go_type})")
        self.ignore = True
        body(value)

    def struct(self, fields: list[tuple[str, Callable[[], None]]]) -> None:
        self.ignore = False
        self.out.append("{")
        for i, (name, emit) in enumerate(fields):
            self.out.append(f"{' ' if i else ''}{name}:")
            emit()
        self.out.append("}")

    def slice(self, go_type: str, items: list[Any] | None, item: Callable[[Any], None]) -> None:
        self.typed(go_type, "")
        if items is None:
            self.out.append("<nil>")
            return
        self.out.append("[")
        for i, value in enumerate(items):
            if i:
                self.out.append(" ")
            self.ignore = True
            item(value)
        self.out.append("]")

    def map(self, go_type: str, items: dict[Any, Any] | None, value: Callable[[Any], None]) -> None:
        self.typed(go_type, "")
        if items is None:
            self.out.append("<nil>")
            return
        self.out.append("map[")
        for i, key in enumerate(sorted(items)):
            if i:
                self.out.append(" ")
            self.ignore = True
            self.typed("", str(key))
            self.out.append(":")
            self.ignore = True
            value(items[key])
        self.out.append("]")

    def ints(self, values: list[int] | None) -> None:
        self.slice("[]int", values, lambda v: self.typed("int", str(v)))

    def table(self, t: MemoryTable | None) -> None:
        self.pointer("state.MemoryTable", t, lambda t: self.struct([
            (name, self._uint(value)) for name, value in (
                ("TotalMemSize", t.total), ("SystemReserved", t.system_reserved), ("Allocatable", t.allocatable),
                ("Reserved", t.reserved), ("Free", t.free))]))

    def _uint(self, value: int) -> Callable[[], None]:
        return lambda: self.typed("uint64", str(value))

    def node(self, n: NUMANodeState | None) -> None:
        self.pointer("state.NUMANodeState", n, lambda n: self.struct([
            ("NumberOfAssignments", lambda: self.typed("int", str(n.number_of_assignments))),
            ("MemoryMap", lambda: self.map("map[v1.ResourceName]*state.MemoryTable", n.memory_map, self.table)),
            ("Cells", lambda: self.ints(n.cells))]))

    def block(self, b: Block) -> None:
        self.struct([("NUMAAffinity", lambda: self.ints(b.numa_affinity)),
                     ("Type", lambda: self.typed("v1.ResourceName", b.type)),
                     ("Size", lambda: self.typed("uint64", str(b.size)))])

    def containers(self, cs: dict[str, list[Block] | None] | None) -> None:
        self.map("map[string][]state.Block", cs, lambda bs: self.slice("[]state.Block", bs, self.block))

    def checkpoint(self, cp: Checkpoint) -> str:
        self.pointer("state.MemoryManagerCheckpoint", cp, lambda cp: self.struct([
            ("PolicyName", lambda: self.typed("string", cp.policy_name)),
            ("MachineState", lambda: self.map("state.NUMANodeMap", cp.machine_state, self.node)),
            ("Entries", lambda: self.map("state.ContainerMemoryAssignments", cp.entries, self.containers)),
            ("Checksum", lambda: self.typed("checksum.Checksum", str(cp.checksum)))]))
        return "".join(self.out)


def dump_for_hash(cp: Checkpoint) -> str:
    """dump.ForHash(cp) for the checkpoint pointer, as the kubelet hashes it."""
    return _Spew().checkpoint(cp)


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def checksum(cp: Checkpoint) -> int:
    """The checksum of `cp` with its checksum field zeroed (checksum.New)."""
    zeroed = Checkpoint(cp.policy_name, cp.machine_state, cp.entries, 0)
    return fnv32a(dump_for_hash(zeroed).encode())


# --- JSON (encoding/json) ----------------------------------------------------------------------

def _ints_json(values: list[int] | None) -> list[int] | None:
    return None if values is None else list(values)


def _node_json(n: NUMANodeState | None) -> dict[str, Any] | None:
    if n is None:
        return None
    tables = None if n.memory_map is None else {
        k: None if t is None else {"total": t.total, "systemReserved": t.system_reserved,
                                   "allocatable": t.allocatable, "reserved": t.reserved, "free": t.free}
        for k, t in sorted(n.memory_map.items())}
    return {"numberOfAssignments": n.number_of_assignments, "memoryMap": tables, "cells": _ints_json(n.cells)}


def _entries_json(es: Assignments) -> dict[str, Any]:
    return {pod: None if cs is None else {
        name: None if bs is None else [{"numaAffinity": _ints_json(b.numa_affinity), "type": b.type, "size": b.size}
                                       for b in bs]
        for name, bs in sorted(cs.items())} for pod, cs in sorted(es.items())}


def encode(cp: Checkpoint) -> bytes:
    """MarshalCheckpoint: the checksum is computed, then the struct marshalled compactly."""
    cp.checksum = checksum(cp)
    ms = cp.machine_state
    # encoding/json writes integer map keys in the order of their decimal strings
    machine = None if ms is None else {str(k): _node_json(ms[k]) for k in sorted(ms, key=str)}
    out: dict[str, Any] = {"policyName": cp.policy_name, "machineState": machine}
    if cp.entries:
        out["entries"] = _entries_json(cp.entries)
    out["checksum"] = cp.checksum
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()


class _Float(str):
    """A JSON number with a fraction or exponent, kept as written (Go names it in its error)."""


class _Reader:
    """Go's json.Unmarshal into the checkpoint's types: field names match case-insensitively,
    unknown fields are ignored, null leaves nil, and a value of the wrong type is the first
    UnmarshalTypeError: `json: cannot unmarshal <kind> into Go struct field <Struct>.<path> of
    type <type>` (the path: the JSON field names from the top, map keys left out)."""

    def fields(self, value: Any, names: tuple[str, ...], struct: str, path: str, go_type: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.type_error(value, struct, path, go_type)
        out: dict[str, Any] = {}
        for key, item in value.items():
            for name in names:
                if key == name or key.lower() == name.lower():
                    out[name] = item
        return out

    @staticmethod
    def type_error(value: Any, struct: str, path: str, go_type: str) -> CheckpointError:
        if isinstance(value, _Float | int) and not isinstance(value, bool):
            # the literal only when the target is a number too (encoding/json's literalStore)
            kind = f"number {value}" if go_type in ("int", "uint64", "checksum.Checksum") else "number"
        else:
            kind = {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "value")
        if not path:
            return CheckpointError(f"json: cannot unmarshal {kind} into Go value of type {go_type}")
        return CheckpointError(f"json: cannot unmarshal {kind} into Go struct field {struct}.{path} of type {go_type}")

    def number(self, value: Any, struct: str, path: str, go_type: str = "uint64") -> int:
        if value is None:
            return 0
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.type_error(value, struct, path, go_type)
        low = -(1 << 63) if go_type == "int" else 0
        high = (1 << 63) if go_type == "int" else (1 << 64)
        if not low <= value < high:
            raise self.type_error(value, struct, path, go_type)
        return value

    def ints(self, value: Any, struct: str, path: str) -> list[int] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.type_error(value, struct, path, "[]int")
        return [self.number(v, struct, path, "int") for v in value]

    def table(self, value: Any) -> MemoryTable | None:
        if value is None:
            return None
        path = "machineState.memoryMap"
        names = ("total", "systemReserved", "allocatable", "reserved", "free")
        f = self.fields(value, names, "NUMANodeState", path, "state.MemoryTable")
        return MemoryTable(*(self.number(f.get(k), "MemoryTable", f"{path}.{k}") for k in names))

    def node(self, value: Any) -> NUMANodeState | None:
        if value is None:
            return None
        f = self.fields(value, ("numberOfAssignments", "memoryMap", "cells"), "MemoryManagerCheckpoint",
                        "machineState", "state.NUMANodeState")
        tables = f.get("memoryMap")
        if tables is not None and not isinstance(tables, dict):
            raise self.type_error(tables, "NUMANodeState", "machineState.memoryMap",
                                  "map[v1.ResourceName]*state.MemoryTable")
        return NUMANodeState(
            self.number(f.get("numberOfAssignments"), "NUMANodeState", "machineState.numberOfAssignments", "int"),
            None if tables is None else {k: self.table(t) for k, t in tables.items()},
            self.ints(f.get("cells"), "NUMANodeState", "machineState.cells"))

    def blocks(self, value: Any) -> list[Block] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.type_error(value, "MemoryManagerCheckpoint", "entries", "[]state.Block")
        out = []
        for item in value:
            f = self.fields(item, ("numaAffinity", "type", "size"), "MemoryManagerCheckpoint", "entries",
                            "state.Block")
            kind = f.get("type")
            if kind is not None and (not isinstance(kind, str) or isinstance(kind, _Float)):
                raise self.type_error(kind, "Block", "entries.type", "v1.ResourceName")
            out.append(Block(self.ints(f.get("numaAffinity"), "Block", "entries.numaAffinity"), kind or "",
                             self.number(f.get("size"), "Block", "entries.size")))
        return out


def decode(blob: bytes) -> Checkpoint:
    """UnmarshalCheckpoint then VerifyChecksum; CheckpointError with the kubelet's words."""
    try:
        raw = json.loads(blob, parse_float=_Float)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(_json_error(blob, exc)) from None
    r = _Reader()
    top = "MemoryManagerCheckpoint"
    f = r.fields(raw, ("policyName", "machineState", "entries", "checksum"), top, "", "state.MemoryManagerCheckpoint")
    cp = Checkpoint()  # NewMemoryManagerCheckpoint: both maps start empty, not nil
    if "policyName" in f:
        if f["policyName"] is not None and (not isinstance(f["policyName"], str) or isinstance(f["policyName"],
                                                                                              _Float)):
            raise r.type_error(f["policyName"], top, "policyName", "string")
        cp.policy_name = f["policyName"] or ""
    if "machineState" in f:
        ms = f["machineState"]
        if ms is not None and not isinstance(ms, dict):
            raise r.type_error(ms, top, "machineState", "state.NUMANodeMap")
        cp.machine_state = None if ms is None else {_node_id(k): r.node(v) for k, v in ms.items()}
    if "entries" in f:
        es = f["entries"]
        if es is not None and not isinstance(es, dict):
            raise r.type_error(es, top, "entries", "state.ContainerMemoryAssignments")
        cp.entries = None if es is None else {
            pod: None if cs is None else {name: r.blocks(bs) for name, bs in _object(r, cs).items()}
            for pod, cs in es.items()}
    cp.checksum = r.number(f.get("checksum"), top, "checksum", "checksum.Checksum")
    if checksum(cp) != cp.checksum:
        raise CheckpointError(CORRUPT)
    return cp


def _object(r: _Reader, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise r.type_error(value, "MemoryManagerCheckpoint", "entries", "map[string][]state.Block")
    return value


def _node_id(key: str) -> int:
    try:
        return int(key, 10)
    except ValueError:
        raise CheckpointError(f"json: cannot unmarshal number {key} into Go struct field "
                              "MemoryManagerCheckpoint.machineState of type int") from None


def _json_error(blob: bytes, exc: Exception) -> str:
    """encoding/json's SyntaxError text for what Python's decoder refused."""
    text = blob.decode("utf-8", "replace")
    if not isinstance(exc, json.JSONDecodeError):
        return "invalid character in JSON input"  # not UTF-8
    if not text.strip() or exc.pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    char = text[exc.pos]
    quoted = "'\\''" if char == "'" else f"'{char}'"
    if exc.msg.startswith("Extra data"):
        return f"invalid character {quoted} after top-level value"
    if exc.msg.startswith("Expecting property name"):
        return f"invalid character {quoted} looking for beginning of object key string"
    if exc.msg.startswith("Expecting ':'"):
        return f"invalid character {quoted} after object key"
    if exc.msg.startswith("Expecting ','"):
        inside = _innermost(text[:exc.pos])
        return f"invalid character {quoted} after {'object key:value pair' if inside == '{' else 'array element'}"
    return f"invalid character {quoted} looking for beginning of value"


def _innermost(text: str) -> str:
    """The innermost open bracket at the end of `text` (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""
