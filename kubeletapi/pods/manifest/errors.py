"""The error vocabulary of manifest decoding: ManifestError and field.ErrorList-style problems.

`go_value` prints a bad value the way apimachinery's field.Error does, and `FieldErrors` builds the
`<path>: <type>[: <value>][: <detail>]` strings, so every module reports problems in one format.

Messages are bounded: a manifest is anything a file holds (a symlink to /etc/passwd, megabytes of
one value), and what it holds is echoed into the log and /manifests only as an excerpt: a value
is cut after VALUE_EXCERPT characters, a message lists at most MAX_PROBLEMS problems.
"""

from __future__ import annotations

import json
from typing import Any

from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput

VALUE_EXCERPT = 256  # a name at its 253-character limit, quoted, still prints whole
MAX_PROBLEMS = 20


class ManifestError(InvalidInput):
    """A manifest that cannot become a Pod. `problems` lists each one in field-path style."""

    def __init__(self, source: str, problems: list[str], what: str = "invalid pod") -> None:
        self.source = source
        self.problems = problems
        shown = "; ".join(problems[:MAX_PROBLEMS])
        if len(problems) > MAX_PROBLEMS:
            shown += f"; and {len(problems) - MAX_PROBLEMS} more problems"
        super().__init__(f"{source}: {what}: {shown}")


def excerpt(text: str) -> str:
    """`text`, cut after VALUE_EXCERPT characters (saying how much was left out)."""
    if len(text) <= VALUE_EXCERPT:
        return text
    return f"{text[:VALUE_EXCERPT]}... ({len(text) - VALUE_EXCERPT} more characters)"


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted, numbers and booleans bare, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Quantity):
        return excerpt(json.dumps(value.wire()))
    return excerpt(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class FieldErrors(list[str]):
    """field.ErrorList: `<path>: <type>[: <value>][: <detail>]`."""

    def required(self, path: str, detail: str = "") -> None:
        self.append(f"{path}: Required value" + (f": {detail}" if detail else ""))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.append(f"{path}: Invalid value: {go_value(value)}: {detail}")

    def invalid_each(self, path: str, value: Any, details: list[str]) -> None:
        for detail in details:
            self.invalid(path, value, detail)

    def unsupported(self, path: str, value: Any, supported: list[str]) -> None:
        self.append(
            f"{path}: Unsupported value: {go_value(value)}: supported values: " + ", ".join(map(json.dumps, supported))
        )

    def duplicate(self, path: str, value: Any) -> None:
        self.append(f"{path}: Duplicate value: {go_value(value)}")

    def forbidden(self, path: str, detail: str) -> None:
        self.append(f"{path}: Forbidden: {detail}")

    def not_found(self, path: str, value: Any) -> None:
        self.append(f"{path}: Not found: {go_value(value)}")


def check_enum(errs: FieldErrors, path: str, value: str, supported: list[str]) -> None:
    """A required enum field: empty is Required, anything outside `supported` is Unsupported."""
    if not value:
        errs.required(path)
    elif value not in supported:
        errs.unsupported(path, value, supported)
