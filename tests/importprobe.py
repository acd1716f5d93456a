"""`python -m tests.importprobe <kubelet flags>`: which modules a started agent has imported.

Builds the Kubelet from the flags as `python -m kubeletapi` does (kubeletapi.cli.configuration),
starts it (listeners bound, pod machinery and sources up), prints the sorted names in sys.modules
as one JSON list on stdout, and stops it. Used by tests/e2e/test_cli_imports.py (a standalone node
must not load apiserver mode's modules) and bench/footprint_bench.py.
"""

from __future__ import annotations

import asyncio
import json
import sys

from kubeletapi import cli
from kubeletapi.kubelet import Kubelet


async def _run(argv: list[str]) -> list[str]:
    cfg, opts = cli.configuration(argv)
    kubelet = Kubelet(cfg, opts)
    await kubelet.start()
    try:
        return sorted(sys.modules)
    finally:
        await kubelet.stop()


def main() -> int:
    print(json.dumps(asyncio.run(_run(sys.argv[1:]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
