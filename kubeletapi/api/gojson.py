"""JSON encoded like Go's encoding/json: UTF-8, with <, >, & and U+2028/9 escaped.

Compact output (json.Marshal: /pods, /configz) uses the standard library's C encoder. Indented
output (json.MarshalIndent(v, "", " "): the summary, a few hundred KB every housekeeping cycle)
uses orjson, whose only indent is two spaces, and then halves each line's leading spaces:
JSON strings cannot hold a raw newline, so every line starts with structural indentation only.
That is four times faster than the standard library's pure-Python indenting encoder.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

JSON_TYPE = "application/json"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)
_BYTE_ESCAPES = [(k.encode(), v.encode()) for k, v in _ESCAPES.items()]


def dumps(value: Any, indent: int | None = None) -> bytes:
    """Encode `value`; `indent` pretty-prints like json.MarshalIndent with that many spaces."""
    if indent is not None:
        return _escape(_indented(value, indent))
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_TABLE).encode()


def _indented(value: Any, indent: int) -> bytes:
    data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    if indent == 2:
        return data
    out = []
    for line in data.split(b"\n"):
        depth = (len(line) - len(line.lstrip(b" "))) // 2
        out.append(b" " * (depth * indent) + line[depth * 2 :])
    return b"\n".join(out)


def _escape(data: bytes) -> bytes:
    for raw, escaped in _BYTE_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data
