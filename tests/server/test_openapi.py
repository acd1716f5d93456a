"""The committed OpenAPI documents match the apps, say what each listener shares, agree with the
routes on methods, and the secure port serves its own (around a FakeHost: the documents depend on
the routes only, not on the agent behind them). Whether the served API is what they say is
tests/e2e/test_published_api.py's job (schemathesis against a live agent)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Route

from kubeletapi.openapi_doc import FILES, document
from kubeletapi.server.app import Role, api
from kubeletapi.server.routing import allowed_methods
from tests.fakehost import FakeHost, FakeNode

OPENAPI = Path(__file__).resolve().parents[2] / "openapi"
METHODS = {"get", "head", "post", "put", "patch", "delete", "options", "trace"}


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]


@pytest.mark.parametrize("listener", list(FILES))
def test_committed_document_is_current(listener: Role) -> None:
    committed = json.loads((OPENAPI / FILES[listener]).read_text())
    assert committed == document(listener), "run `make openapi` and commit openapi/"


def test_served_on_the_secure_port(node: FakeNode) -> None:
    with node.admin() as client:
        served = client.get(node.url(path="/openapi.json")).json()
        assert client.get(node.url("read-only", "/openapi.json")).status_code == 404
    assert served == document("secure")
    ops = served["paths"]["/configz"]["get"]
    assert ops["x-kubelet-authz"] == {"resource": "nodes", "subresources": ["configz", "proxy"]}


def test_secure_port_security_and_its_answers() -> None:
    doc = document("secure")
    assert set(doc["components"]["securitySchemes"]) == {"bearerToken", "clientCertificate"}
    assert doc["components"]["securitySchemes"]["clientCertificate"]["type"] == "mutualTLS"
    assert doc["security"] == [{"bearerToken": []}, {"clientCertificate": []}]
    unauthorized = doc["components"]["responses"]["Unauthorized"]["content"]["text/plain; charset=utf-8"]
    assert unauthorized["schema"]["examples"] == ["Unauthorized"]
    for path, method, op in operations(doc):
        assert {"401", "403", "413", "431", "500"} <= set(op["responses"]), (method, path)


def test_read_only_port_has_no_security() -> None:
    doc = document("readonly")
    assert "security" not in doc
    assert "securitySchemes" not in doc["components"]
    for path, method, op in operations(doc):
        assert {"413", "431"} <= set(op["responses"]), (method, path)
        assert not {"401", "403"} & set(op["responses"]), (method, path)
    # The subset a client of the read-only port can use: no debugging handlers, no /configz.
    paths = set(doc["paths"])
    assert paths < set(document("secure")["paths"])
    assert not {p for p in paths if re.match(r"^/(run|exec|attach|portForward|containerLogs|runningpods|configz)", p)}


@pytest.mark.parametrize("listener", list(FILES))
def test_no_fastapi_validation_error_and_every_answer_typed(listener: Role) -> None:
    doc = document(listener)
    assert "HTTPValidationError" not in json.dumps(doc)
    for path, method, op in operations(doc):
        for code, response in op["responses"].items():
            if "$ref" in response or code == "101":
                continue
            assert response.get("content"), (method, path, code)


@pytest.mark.parametrize("listener", list(FILES))
def test_documented_methods_are_the_served_methods(listener: Role) -> None:
    """The methods a path documents are exactly the ones its routes serve, so a 405's Allow (the
    served ones, server/errors.py) agrees with the document."""
    doc = document(listener)
    routes = api(FakeHost(), listener).routes
    for path, item in doc["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        served = allowed_methods(routes, {"type": "http", "path": concrete, "method": "GET", "root_path": ""})
        assert {m.lower() for m in served} == set(item) & METHODS, path


@pytest.mark.parametrize("listener", list(FILES))
def test_every_query_parameter_a_handler_reads_is_documented(listener: Role) -> None:
    """The query keys the handlers read (by name, in their modules) appear in the document."""
    doc = json.dumps(document(listener))
    reads = {
        "/stats/summary": ["only_cpu_and_memory"],
        "/healthz": ["verbose", "exclude"],
        "/containerLogs": ["follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines", "tail",
                           "limitBytes", "insecureSkipTLSVerifyBackend", "stream"],
        "/run": ["cmd"],
        "/exec": ["input", "output", "error", "tty", "command"],
        "/portForward": ["port"],
    }
    served = {r.path for r in api(FakeHost(), listener).routes if isinstance(r, Route) and r.include_in_schema}
    for prefix, keys in reads.items():
        if any(p == prefix or p.startswith(prefix + "/{") for p in served):
            for key in keys:
                assert f'"{key}"' in doc, (prefix, key)
