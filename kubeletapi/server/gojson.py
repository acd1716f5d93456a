"""JSON encoded like Go's encoding/json: compact, UTF-8, with <, >, & and U+2028/9 escaped."""

from __future__ import annotations

import json
from typing import Any

JSON_TYPE = "application/json"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TABLE = str.maketrans(_ESCAPES)


def dumps(value: Any, indent: int | None = None) -> bytes:
    """Encode `value`; `indent` pretty-prints like json.MarshalIndent (used by the summary)."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, ensure_ascii=False, separators=separators, indent=indent, allow_nan=False)
    return text.translate(_TABLE).encode()
