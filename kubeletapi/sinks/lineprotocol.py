"""InfluxDB line protocol: one Point per line, `measurement,tag=v field=1i <ns>`.

Escaping follows the protocol: measurements escape commas and spaces; tag keys, tag values and field
keys also escape `=`. Tags with an empty value are left out (the protocol has no empty tag values)
and tags are written sorted by key, the order InfluxDB indexes them in. Every field here is an
integer (`i` suffix), as Telegraf's kubernetes input writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_MEASUREMENT = str.maketrans({",": r"\,", " ": r"\ ", "\n": r"\n"})
_KEY = str.maketrans({",": r"\,", "=": r"\=", " ": r"\ ", "\n": r"\n"})


@dataclass(frozen=True)
class Point:
    measurement: str
    tags: Mapping[str, str]
    fields: Mapping[str, int]
    time_ns: int


def encode(point: Point) -> bytes:
    """One line of line protocol (without the newline)."""
    head = point.measurement.translate(_MEASUREMENT)
    tags = "".join(
        f",{key.translate(_KEY)}={value.translate(_KEY)}"
        for key, value in sorted(point.tags.items()) if value
    )
    fields = ",".join(f"{key.translate(_KEY)}={int(value)}i" for key, value in point.fields.items())
    return f"{head}{tags} {fields} {point.time_ns}".encode()


def encode_all(points: Iterable[Point]) -> list[bytes]:
    return [encode(p) for p in points]
