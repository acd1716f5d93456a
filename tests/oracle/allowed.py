"""The README's list of differences the oracle may find (section ORACLE_SECTION): each bullet
starts with a pattern in backticks, `<what> <path>: <kind>`, where `*` stands for any text and
everything else is literal (paths hold brackets and question marks), then the reason. A test
fails on a difference no pattern covers; the last test of the package (test_zz_readme.py) fails
on a pattern for something the run compared that covered nothing (the list stays short and true).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.oracle.diff import Difference

README = Path(__file__).resolve().parents[2] / "README.md"
ORACLE_SECTION = "### What the oracle finds different"
_BULLET = re.compile(r"^- `([^`]+)`")


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def matches(text: str, pattern: str) -> bool:
    """`*` is any text, the rest literal."""
    return _compiled(pattern).fullmatch(text) is not None


@dataclass(frozen=True)
class Allowed:
    pattern: str

    def covers(self, difference: Difference) -> bool:
        return matches(difference.key, self.pattern)

    @property
    def what(self) -> str:
        return self.pattern.split(" ", 1)[0]


def listed(readme: Path = README) -> list[Allowed]:
    lines = readme.read_text().splitlines()
    try:
        start = lines.index(ORACLE_SECTION)
    except ValueError as exc:
        raise AssertionError(f"README.md has no section {ORACLE_SECTION!r}") from exc
    out: list[Allowed] = []
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if match := _BULLET.match(line):
            out.append(Allowed(match.group(1)))
    return out


def unlisted(differences: Iterable[Difference], readme: Path = README) -> list[str]:
    """Every difference no README pattern covers."""
    patterns = listed(readme)
    return [f"not in the README: {d}" for d in sorted(set(differences)) if not any(a.covers(d) for a in patterns)]


@dataclass
class Findings:
    """What the run's checks compared (`scopes`, e.g. "/pods" or "secure:/healthz") and found; at
    the end, the README entries for those scopes that covered nothing are stale."""

    scopes: set[str] = field(default_factory=set)
    found: set[Difference] = field(default_factory=set)

    def check(self, differences: Iterable[Difference], *scopes: str) -> list[str]:
        """Record a check's differences; the problems: those the README does not list."""
        found = set(differences)
        self.scopes.update(scopes)
        self.found |= found
        return unlisted(found)

    def stale(self, readme: Path = README) -> list[str]:
        out = []
        for allowed in listed(readme):
            in_scope = any(matches(scope, allowed.what) for scope in self.scopes)
            if in_scope and not any(allowed.covers(d) for d in self.found):
                out.append(f"listed in the README but no longer seen: `{allowed.pattern}`")
        return out
