"""Go-compatible JSON: compact and indented output agree with Go's encoding/json byte for byte."""

from __future__ import annotations

import json

from kubeletapi.api.gojson import dumps

TRICKY = {
    "name": "a\n  b<c>&d",  # an escaped newline followed by spaces must not be re-indented
    "unicode": "snow \u2603 \u2028",
    "empty": {"list": [], "map": {}},
    "nested": [{"x": [1, [2, [3]]], "y": None, "z": True}],
    "big": 18446744073709551615,
}


def test_indented_matches_marshal_indent_one_space() -> None:
    body = dumps(TRICKY, indent=1)
    expected = json.dumps(TRICKY, indent=1, ensure_ascii=False).encode()
    for raw, escaped in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"), ("\u2028".encode(), b"\\u2028")):
        expected = expected.replace(raw, escaped)
    assert body == expected
    assert body.startswith(b'{\n "name": "a\\n  b\\u003cc\\u003e\\u0026d",\n "unicode": "snow \xe2\x98\x83 \\u2028"')
    assert b'"empty": {\n  "list": [],\n  "map": {}\n }' in body
    assert json.loads(body) == TRICKY


def test_compact_escapes_like_go() -> None:
    assert dumps({"a": "<&>", "b": [1, None]}) == b'{"a":"\\u003c\\u0026\\u003e","b":[1,null]}'
