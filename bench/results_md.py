"""bench/results.md is a set of sections, one per benchmark script, each replaced on re-run."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results.md"
TITLE = "# Benchmark results\n"


def update_section(key: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the section whose heading starts with `## <key>`."""
    text = path.read_text() if path.exists() else TITLE
    sections = re.split(r"(?m)^(?=## )", text)
    head, rest = sections[0], [s for s in sections[1:] if not s.startswith(f"## {key}")]
    rest.append(body.rstrip() + "\n")
    path.write_text(head.rstrip() + "\n\n" + "\n".join(s.rstrip() + "\n" for s in rest))
