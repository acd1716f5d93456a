"""The committed OpenAPI document matches the app, and the secure port serves it (around a
FakeHost: the document depends on the routes only, not on the agent behind them)."""

from __future__ import annotations

import json
from pathlib import Path

from kubeletapi.openapi_doc import document
from tests.fakehost import FakeNode

COMMITTED = Path(__file__).resolve().parents[2] / "openapi" / "kubeletapi.json"


def test_committed_document_is_current() -> None:
    assert json.loads(COMMITTED.read_text()) == document(), "run `make openapi` and commit openapi/kubeletapi.json"


def test_served_on_the_secure_port(node: FakeNode) -> None:
    with node.admin() as client:
        served = client.get(node.url(path="/openapi.json")).json()
        assert client.get(node.url("read-only", "/openapi.json")).status_code == 404
    assert served == document()
    ops = served["paths"]["/configz"]["get"]
    assert ops["x-kubelet-authz"] == {"resource": "nodes", "subresources": ["configz", "proxy"]}
