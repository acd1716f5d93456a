"""What a started agent has imported: a standalone node loads nothing of apiserver mode.

Memory is mostly the interpreter and its libraries (bench/results.md, "Head to head"): a node
without --kubeconfig must not load the API client, httpx, the certificate machinery, the
webhooks or the node controller, nor grpc without --container-runtime=remote; and once its
generated PKI exists, not cryptography either (kubeletapi.pkifiles checks the files with the ssl
module). A real process (tests/importprobe.py) builds the Kubelet from the flags, starts it and
lists sys.modules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import agent_args, purge

pytestmark = pytest.mark.e2e

# Only apiserver mode (--kubeconfig / --bootstrap-kubeconfig) needs these.
APISERVER_ONLY = (
    "kubeletapi.apiclient", "kubeletapi.certificate", "kubeletapi.kubelet.certificates",
    "kubeletapi.kubelet.cluster", "kubeletapi.server.webhook", "kubeletapi.node.controller",
    "kubeletapi.node.lease", "kubeletapi.node.registration", "kubeletapi.pods.apisource",
    "kubeletapi.pods.mirror", "httpx",
)
# Only --container-runtime=remote (and grpc probes, when one runs) needs these.
CRI_ONLY = ("kubeletapi.runtime.cri", "grpc", "grpc_health", "google.protobuf")


def started_modules(args: list[str]) -> set[str]:
    result = subprocess.run([sys.executable, "-m", "tests.importprobe", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout))


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_a_standalone_node_loads_nothing_of_apiserver_mode_or_the_cri(tmp_path: Path) -> None:
    args = agent_args(tmp_path)
    try:
        first = started_modules(args)
        again = started_modules(args)  # a restart on the PKI the first start generated
    finally:
        purge(args)
    for modules in (first, again):
        assert "kubeletapi.runtime.process.runtime" in modules  # the probe did start the agent
        assert "kubeletapi.pods.sources" in modules
        assert loaded(modules, APISERVER_ONLY) == []
        assert loaded(modules, CRI_ONLY) == []
        # httpx's import loads its command line (rich, pygments, click's console): never here
        assert loaded(modules, ("rich", "pygments")) == []
    assert "kubeletapi.pki" in first  # the first start made the certificates
    assert loaded(again, ("kubeletapi.pki", "cryptography")) == []
    assert (tmp_path / "certs" / "kubelet.crt").exists()
