"""Go's fmt forms that appear in the kubelet's streaming messages: %q of a string, %v of a []string."""

from __future__ import annotations

from collections.abc import Sequence

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """`text` as %q (strconv.Quote) prints it."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_list(items: Sequence[str]) -> str:
    """A []string as %v prints it: `[a b c]`."""
    return "[" + " ".join(items) + "]"
