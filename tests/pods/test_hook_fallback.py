"""An https httpGet lifecycle hook whose server speaks plain HTTP is retried over http without its
Authorization header, as the kubelet's runHTTPHandler does: the LifecycleHTTPFallback event and
kubelet_lifecycle_handler_http_fallbacks_total record a retry that got an answer; a retry that got
none leaves the https error. A real plain-HTTP server on loopback answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from kubeletapi.api.core_v1 import Container, HTTPGetAction, LifecycleHandler
from kubeletapi.clock import RealClock
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.lifecycle import run_hook
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.pods.test_pod_events import Events, static_pod
from tests.podtools import container


class PlainServer:
    """Answers 200 to whatever it is sent (a TLS hello included); `refuse_plain` closes on a
    plain request instead. Keeps the first line and headers of each plain request."""

    def __init__(self, refuse_plain: bool = False) -> None:
        self.refuse_plain = refuse_plain
        self.requests: list[list[str]] = []
        self.hellos = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.read(4096)
            if head.startswith(b"GET "):
                self.requests.append(head.decode().split("\r\n\r\n")[0].split("\r\n"))
                if self.refuse_plain:
                    return
            else:
                self.hellos += 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        finally:
            writer.close()
            await writer.wait_closed()


@asynccontextmanager
async def serving(server: PlainServer) -> AsyncIterator[int]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    try:
        yield listener.sockets[0].getsockname()[1]
    finally:
        listener.close()
        await listener.wait_closed()


def https_hook(port: int) -> LifecycleHandler:
    return LifecycleHandler(http_get=HTTPGetAction.model_validate(
        {"scheme": "HTTPS", "host": "127.0.0.1", "port": port, "path": "/hook",
         "httpHeaders": [{"name": "Authorization", "value": "Bearer secret"}, {"name": "X-Kept", "value": "1"}]}))


def test_an_https_hook_answered_in_http_is_retried_over_http() -> None:
    async def go() -> None:
        server, fell_back = PlainServer(), []
        async with serving(server) as port:
            error = await run_hook(https_hook(port), None, "cid", Container(name="c"), "127.0.0.1", 5,  # type: ignore[arg-type]
                                   fell_back.append)
        assert error is None and fell_back == [f"127.0.0.1:{port}"] and server.hellos == 1
        (request,) = server.requests
        assert request[0] == "GET /hook HTTP/1.1"
        headers = {line.split(": ", 1)[0].lower() for line in request[1:]}
        assert "x-kept" in headers and "authorization" not in headers

    asyncio.run(go())


def test_a_retry_without_an_answer_keeps_the_https_error() -> None:
    async def go() -> None:
        server, fell_back = PlainServer(refuse_plain=True), []
        async with serving(server) as port:
            error = await run_hook(https_hook(port), None, "cid", Container(name="c"), "127.0.0.1", 5,  # type: ignore[arg-type]
                                   fell_back.append)
        assert error is not None and error.startswith(f"Get 'https://127.0.0.1:{port}/hook': ")
        assert "WRONG_VERSION_NUMBER" in error or "RECORD_LAYER_FAILURE" in error
        assert fell_back == [] and len(server.requests) == 1

    asyncio.run(go())


def test_the_syncer_records_each_fallback_as_the_kubelet(tmp_path: Path) -> None:
    """postStart and preStop both fall back: two LifecycleHTTPFallback events on the pod, the counter at 2."""

    async def go() -> None:
        clock, registry, events = RealClock(), new_registry(), Events()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock),
                           StatusStore(), PodMetrics(registry), events=PodEvents(events))
        server = PlainServer()
        async with serving(server) as port:
            action = f"{{httpGet: {{scheme: HTTPS, host: 127.0.0.1, port: {port}, path: /hook}}}}"
            hooks = f"""
        lifecycle:
          postStart: {action}
          preStop: {action}
        """
            pod = static_pod(container("c", ["sleep", "300"], hooks), "terminationGracePeriodSeconds: 2")
            try:
                await syncer.sync(pod)
            finally:
                await syncer.kill(pod)
        said = f"request to HTTPS lifecycle hook 127.0.0.1:{port} got HTTP response, retry with HTTP succeeded"
        assert [e for e in events.seen if e[2] == "LifecycleHTTPFallback"] == [("", "Warning", "LifecycleHTTPFallback",
                                                                                said)] * 2
        assert registry.get_sample_value("kubelet_lifecycle_handler_http_fallbacks_total") == 2
        assert len(server.requests) == 2 and server.hellos == 2

    asyncio.run(go())
