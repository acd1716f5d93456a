"""What the routes answer when the Host fails, and the one mapping of kubeletapi errors to HTTP
(server/errors.py), around a FakeHost that fails as told, called in-process (asgi_client)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from kubeletapi.errors import Conflict, InvalidInput, KubeletError, NotFound, NotSupported, Unavailable
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.streaming.targets import ContainerStreams
from tests.fakehost import FakeHost, araises, asgi_client, raises
from tests.streaming.fakes import FakeContainer

TEXT = "text/plain; charset=utf-8"


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (NotFound, 404, "NotFound"),
        (InvalidInput, 400, "BadRequest"),
        (Conflict, 409, "Conflict"),
        (NotSupported, 501, "NotImplemented"),
        (Unavailable, 503, "ServiceUnavailable"),
        (KubeletError, 500, "InternalError"),
    ],
)
@pytest.mark.parametrize("path", ["/pods", "/runningpods/", "/manifests", "/configz"])
def test_an_error_escaping_a_route_is_a_status(error: type[KubeletError], status: int, reason: str, path: str) -> None:
    failing = raises(error("the pod cache is gone"))
    host = FakeHost(pod_list=failing, running_pods=failing, manifests=failing, configz=failing)
    with asgi_client(host) as client:
        response = client.get(path)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the pod cache is gone", "reason": reason, "code": status,
    }


def test_a_summary_that_cannot_be_built() -> None:
    with asgi_client(FakeHost(stats_summary=raises(Unavailable("no housekeeping cycle yet")))) as client:
        response = client.get("/stats/summary")
    assert (response.status_code, response.text) == (500, "Internal Error: no housekeeping cycle yet")


def test_the_summary_and_its_form() -> None:
    asked: list[bool] = []

    def summary(only_cpu_and_memory: bool) -> bytes:
        asked.append(only_cpu_and_memory)
        return b'{"node": {}}'

    with asgi_client(FakeHost(stats_summary=summary)) as client:
        plain = client.get("/stats/summary")
        client.get("/stats/summary?only_cpu_and_memory=true")
        client.post("/stats/summary", content="only_cpu_and_memory=true",
                    headers={"content-type": "application/x-www-form-urlencoded"})
        client.get("/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true")  # not exactly once
        bad = client.get("/stats/summary?a=%zz")
    assert (plain.status_code, plain.content) == (200, b'{"node": {}}')
    assert plain.headers["content-type"] == "application/json"
    assert asked == [False, True, True, False]
    assert (bad.status_code, bad.json()["message"]) == (400, "parse form failed: invalid URL escape in the query")


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (NotFound('pod "web" does not exist'), 404),
        (InvalidInput('container "c" in pod "web" is waiting to start'), 400),
        (Unavailable("the log file is gone"), 400),
    ],
)
def test_container_log_refusals(error: KubeletError, status: int) -> None:
    with asgi_client(FakeHost(container_logs=araises(error))) as client:
        response = client.get("/containerLogs/default/web/c")
    assert (response.status_code, response.text) == (status, str(error))
    assert response.headers["content-type"] == TEXT


def test_container_logs_stream_with_the_decoded_options() -> None:
    asked: list[tuple[str, str, str, PodLogOptions]] = []

    async def logs(namespace: str, pod: str, container: str, opts: PodLogOptions) -> AsyncIterator[bytes]:
        asked.append((namespace, pod, container, opts))

        async def lines() -> AsyncIterator[bytes]:
            yield b"one\n"
            yield b"two\n"

        return lines()

    with asgi_client(FakeHost(container_logs=logs)) as client:
        response = client.get("/containerLogs/default/web/c?tailLines=2&timestamps=true")
        undecodable = client.get("/containerLogs/default/web/c?tailLines=x")
    assert (response.status_code, response.text, response.headers["content-type"]) == (200, "one\ntwo\n", TEXT)
    assert asked == [("default", "web", "c", PodLogOptions(tail_lines=2, timestamps=True))]
    assert (undecodable.status_code, undecodable.text) == (400, '{"message": "Unable to decode query."}')


def test_run() -> None:
    ran: list[tuple[str, str, str | None, str, Sequence[str]]] = []

    async def run(namespace: str, pod: str, uid: str | None, container: str, cmd: Sequence[str]) -> bytes:
        ran.append((namespace, pod, uid, container, cmd))
        return b"hello\n"

    with asgi_client(FakeHost(run_in_container=run)) as client:
        response = client.post("/run/default/web/uid-1/c?cmd=echo hello")
    assert (response.status_code, response.content) == (200, b"hello\n")
    assert response.headers["content-type"] == "application/json"  # the kubelet's quirk
    assert ran == [("default", "web", "uid-1", "c", ["echo", "hello"])]


@pytest.mark.parametrize(
    ("error", "status"),
    [(NotFound("pod does not exist"), 404), (Unavailable('container not found ("c")'), 500),
     (Unavailable("command 'false' exited with 1: "), 500)],
)
def test_run_refusals(error: KubeletError, status: int) -> None:
    with asgi_client(FakeHost(run_in_container=araises(error))) as client:
        response = client.post("/run/default/web/c?cmd=false")
    assert (response.status_code, response.text) == (status, str(error))


def test_streams_without_an_upgrade() -> None:
    async def streams(namespace: str, pod: str, uid: str | None, container: str) -> ContainerStreams:
        return FakeContainer()

    host = FakeHost(container_streams=streams, pod_ports=araises(Unavailable('pod not found ("web_default")')))
    with asgi_client(host) as client:
        exec_ = client.get("/exec/default/web/c?output=1&command=ls")
        port_forward = client.post("/portForward/default/web")
    assert (exec_.status_code, exec_.text) == (500, "Upgrade request required\n")
    assert exec_.headers["x-content-type-options"] == "nosniff"
    assert (port_forward.status_code, port_forward.text) == (500, 'pod not found ("web_default")')


def test_stream_refusals_by_kind() -> None:
    host = FakeHost(container_streams=araises(Unavailable('container not found ("c")')),
                    pod_ports=araises(NotFound("pod not found")))
    with asgi_client(host) as client:
        attach = client.post("/attach/default/web/uid-1/c?output=1")
        port_forward = client.get("/portForward/default/web/uid-2")
    assert (attach.status_code, attach.text) == (500, 'container not found ("c")')
    assert (port_forward.status_code, port_forward.text) == (404, "pod not found")
