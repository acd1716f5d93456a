"""The Prometheus text exposition (0.0.4) as the oracle compares it: per family its HELP and
TYPE lines as written (escapes kept), and its samples (name, labels, whether a timestamp follows).

prometheus_client's parser unescapes HELP and drops timestamps' presence; the oracle wants both
as they are on the wire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]

_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created", "_info")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Labels
    value: str
    timestamp: str | None


@dataclass
class Family:
    name: str
    help: str | None = None
    type: str | None = None
    samples: list[Sample] = field(default_factory=list)


def parse(text: str) -> dict[str, Family]:
    """Families by name; a sample belongs to the family its HELP/TYPE named last when its name
    is that family's or one of its suffixed series, else to a family of its own (untyped)."""
    families: dict[str, Family] = {}
    current: Family | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                current = families.setdefault(parts[2], Family(parts[2]))
                text_part = parts[3] if len(parts) > 3 else ""
                if parts[1] == "HELP":
                    current.help = text_part
                else:
                    current.type = text_part
            continue
        sample = _sample(line)
        if current is None or not _belongs(sample.name, current.name):
            current = families.setdefault(sample.name, Family(sample.name))
        current.samples.append(sample)
    return families


def _belongs(sample: str, family: str) -> bool:
    return sample == family or any(sample == family + s for s in _SUFFIXES)


def _sample(line: str) -> Sample:
    brace = line.find("{")
    space = line.find(" ")
    if brace != -1 and (space == -1 or brace < space):
        name = line[:brace]
        end = _label_end(line, brace)
        labels = tuple((m.group(1), m.group(2)) for m in _LABEL.finditer(line[brace + 1:end]))
        rest = line[end + 1:].split()
    else:
        name, *rest = line.split()
        labels = ()
    value = rest[0] if rest else ""
    return Sample(name, labels, value, rest[1] if len(rest) > 1 else None)


def _label_end(line: str, start: int) -> int:
    quoted = escaped = False
    for i in range(start + 1, len(line)):
        ch = line[i]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == "}" and not quoted:
            return i
    raise ValueError(f"unterminated labels: {line!r}")
