"""What is wrong with a configuration, where it came from, and the one message that says so.

A Problem names the fields it is about by JSON path ("containerLogMaxFiles", "logging.vmodule") and
carries the kubelet's own error text where the kubelet has one. An Origin knows which fields the
--config file set, which flags were given and which kubeletapi flag sets each field, so every line
of the message says the field, its flag, and whether the value came from the command line or is a
default; the header names the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletapi.errors import ConfigError


@dataclass(frozen=True)
class Problem:
    """One error: the fields it is about (the first one labels it) and its text."""

    fields: tuple[str, ...]
    message: str


def problem(fields: str | tuple[str, ...], message: str) -> Problem:
    return Problem((fields,) if isinstance(fields, str) else fields, message)


@dataclass(frozen=True)
class HostFacts:
    """What the checks need to know about this machine (None: not known, those checks are skipped)."""

    cgroup_v1: bool | None = None


def _paths(data: Mapping[str, Any], prefix: str = "") -> Iterable[str]:
    for key, value in data.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, Mapping):
            yield from _paths(value, path + ".")


def _covers(given: Iterable[str], name: str) -> bool:
    """Whether a set path decides field `name`: the path itself, one inside it, or one around it."""
    return any(p == name or p.startswith(name + ".") or name.startswith(p + ".") for p in given)


@dataclass(frozen=True)
class Origin:
    """Where the configuration came from: the --config file (its name and the paths it set), the
    flags given (their config paths) and the flag of each field kubeletapi has one for."""

    file_name: str | None = None
    file_paths: frozenset[str] | None = None  # None: where the values came from is not known
    flags_given: Mapping[str, str] = field(default_factory=dict)  # config path -> flag
    flag_names: Mapping[str, str] = field(default_factory=dict)  # config path -> flag

    @classmethod
    def of(cls, file_name: str | None, file_data: Mapping[str, Any] | None,
           flags_given: Mapping[str, str], flag_names: Mapping[str, str]) -> Origin:
        return cls(file_name if file_data is not None else None, frozenset(_paths(file_data or {})),
                   dict(flags_given), {**flag_names, **flags_given})

    def label(self, name: str) -> str:
        """`name`, its flag, and where its value came from when that was not the file."""
        notes = []
        given = next((flag for path, flag in self.flags_given.items() if _covers([path], name)), None)
        flag = given or self.flag_names.get(name)
        if flag:
            notes.append(flag)
        if given:
            notes.append("given on the command line")
        elif self.file_paths is not None and not _covers(self.file_paths, name):
            notes.append("default")
        return f"{name} ({', '.join(notes)})" if notes else name

    def source(self) -> str:
        if self.file_name is not None:
            return f"kubelet config file {self.file_name}"
        if self.file_paths is not None:
            return "the command line (no --config file)"
        return "the configuration"


def raise_if_any(problems: Sequence[Problem], origin: Origin) -> None:
    """One ConfigError listing every problem (the kubelet aggregates them), or nothing."""
    if not problems:
        return
    count = f"{len(problems)} error{'s' if len(problems) > 1 else ''}"
    lines = [f"  {origin.label(p.fields[0])}: {p.message}" for p in problems]
    raise ConfigError(f"invalid configuration in {origin.source()} ({count}):\n" + "\n".join(lines))
