"""The README list's reader and the staleness check (tests/oracle/allowed.py), on README texts of
their own: no nodes needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.allowed import ORACLE_SECTION, Findings, listed, unlisted
from tests.oracle.diff import Difference

README_TEXT = f"""# x

{ORACLE_SECTION}

Prose with `code` that is not an entry.

- `/pods items[*].status.hostIP: missing`: the standalone kubelet has no node address.
- `*:/healthz?verbose check device-plugin: missing`: no device plugins.

## Next section

- `/metrics go_*: missing`: not in the section, not an entry.
"""


@pytest.fixture
def readme(tmp_path: Path) -> Path:
    path = tmp_path / "README.md"
    path.write_text(README_TEXT)
    return path


def test_only_the_sections_bullets_are_entries(readme: Path) -> None:
    assert [a.pattern for a in listed(readme)] == [
        "/pods items[*].status.hostIP: missing", "*:/healthz?verbose check device-plugin: missing"]


def test_a_missing_section_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# nothing here\n")
    with pytest.raises(AssertionError, match="no section"):
        listed(tmp_path / "README.md")


def test_unlisted_differences_are_reported_listed_ones_are_not(readme: Path) -> None:
    covered = Difference("/pods", "items[metadata.name=a].status.hostIP", "missing")
    other_kind = Difference("/pods", "items[metadata.name=a].status.hostIP", "value", "'x' != 'y'")
    wildcard = Difference("secure:/healthz?verbose", "check device-plugin", "missing")
    assert unlisted([covered, wildcard], readme) == []
    assert unlisted([covered, other_kind], readme) == [f"not in the README: {other_kind}"]


def test_an_entry_for_a_compared_scope_that_matches_nothing_is_stale(readme: Path) -> None:
    findings = Findings()
    findings.check([Difference("/pods", "items[metadata.name=a].status.hostIP", "missing")], "/pods")
    assert findings.stale(readme) == []  # the healthz entry is out of this run's scope
    findings.check([], "read-only:/healthz?verbose")
    assert findings.stale(readme) == [
        "listed in the README but no longer seen: `*:/healthz?verbose check device-plugin: missing`"]
