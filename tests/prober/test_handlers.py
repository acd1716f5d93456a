"""exec (through a hand-written executor), tcpSocket and grpc handlers, and the runner."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass, field

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # type: ignore[import-untyped]

from kubeletapi.api.core_v1 import (
    Container,
    ContainerPort,
    EnvVar,
    EnvVarSource,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    ObjectFieldSelector,
    Probe,
    TCPSocketAction,
)
from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.prober import handlers
from kubeletapi.prober.handlers import MAX_OUTPUT, ProbeRunner, exec_probe, grpc_probe, static_command, tcp_probe
from kubeletapi.prober.httpget import http_probe, tls_context
from kubeletapi.prober.results import Outcome, Result
from kubeletapi.runtime.types import ExecResult
from tests.helpers import free_port
from tests.prober.servers import never_answer, raw_server, respond
from tests.prober.test_httpget import close_in_body

UA = "kube-probe/0.1"
TLS = tls_context()
P = pytest.param
Behaviour = Callable[[Sequence[str], float, int | None], Awaitable[ExecResult]]


@dataclass
class FakeExecutor:
    """Runs `behaviour` instead of a command; records every call."""

    behaviour: Behaviour
    calls: list[tuple[str, list[str], float, int | None]] = field(default_factory=list)

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None
    ) -> ExecResult:
        self.calls.append((container_id, list(cmd), timeout_s, max_output))
        return await self.behaviour(cmd, timeout_s, max_output)


def result(code: int, out: bytes = b"", err: bytes = b"") -> Behaviour:
    async def behaviour(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
        return ExecResult(code, out, err)

    return behaviour


async def flood(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
    """What the runtime returns for `yes` with max_output: each stream cut at max_output."""
    limit = max_output if max_output is not None else 50 << 20
    return ExecResult(0, (b"y\n" * (25 << 20))[:limit], (b"e" * (1 << 20))[:limit])


async def slow(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
    await asyncio.sleep(timeout_s)
    raise Unavailable(f"command {list(cmd)} timed out after {timeout_s:g}s")


async def hang(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


async def not_running(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
    raise InvalidInput("container 'c' is not running")


@pytest.mark.parametrize(
    ("behaviour", "want", "output"),
    [
        P(result(0, b"fine\n"), Result.SUCCESS, "fine\n", id="exit-0"),
        P(result(1, b"out ", b"err"), Result.FAILURE, "out err", id="exit-1-output"),
        P(slow, Result.FAILURE, 'command "sleep 10" timed out', id="timeout"),
    ],
)
def test_exec(behaviour: Behaviour, want: Result, output: str) -> None:
    executor = FakeExecutor(behaviour)
    outcome = asyncio.run(exec_probe(executor, "cid", ["sleep", "10"], 0.2))
    assert (outcome.result, outcome.output, outcome.error) == (want, output, None)
    assert executor.calls == [("cid", ["sleep", "10"], 0.2, MAX_OUTPUT)]


def test_exec_flood_is_capped_at_10kib() -> None:
    outcome = asyncio.run(exec_probe(FakeExecutor(flood), "cid", ["yes"], 1))
    assert outcome.result is Result.SUCCESS
    assert len(outcome.output) == MAX_OUTPUT


def test_exec_output_is_capped_even_if_the_runtime_ignores_max_output() -> None:
    async def greedy(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
        return await flood(cmd, timeout_s, None)

    outcome = asyncio.run(exec_probe(FakeExecutor(greedy), "cid", ["yes"], 1))
    assert len(outcome.output) == MAX_OUTPUT


def test_exec_the_runtime_refuses_is_an_error_retried_three_times() -> None:
    executor = FakeExecutor(not_running)
    probe = Probe(exec=ExecAction(command=["true"]), timeout_seconds=1)
    outcome = asyncio.run(ProbeRunner(executor, UA).run(probe, Container(name="c"), "cid", "127.0.0.1"))
    assert outcome.error == "container 'c' is not running"
    assert len(executor.calls) == 3


def test_an_executor_that_ignores_the_timeout_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers, "SAFETY_S", 0.2)
    probe = Probe(exec=ExecAction(command=["sleep", "1000"]), timeout_seconds=1)
    began = time.monotonic()
    outcome = asyncio.run(ProbeRunner(FakeExecutor(hang), UA).run(probe, Container(name="c"), "cid", "127.0.0.1"))
    assert (outcome.result, outcome.output) == (Result.FAILURE, "probe timed out after 1s")
    assert time.monotonic() - began < 2


def test_exec_slots_bound_spawns_without_eating_the_timeout() -> None:
    async def go() -> None:
        gate = asyncio.Event()
        running = 0
        peak = 0

        async def gated(cmd: Sequence[str], timeout_s: float, max_output: int | None) -> ExecResult:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await gate.wait()
            running -= 1
            return ExecResult(0, b"", b"")

        runner = ProbeRunner(FakeExecutor(gated), UA, exec_slots=2)
        probe = Probe(exec=ExecAction(command=["true"]), timeout_seconds=1)
        tasks = [asyncio.ensure_future(runner.run(probe, Container(name="c"), f"c{i}", "")) for i in range(5)]
        await asyncio.sleep(0.05)
        assert (running, peak) == (2, 2)
        gate.set()
        outcomes = await asyncio.gather(*tasks)
        assert [o.result for o in outcomes] == [Result.SUCCESS] * 5
        assert peak == 2

    asyncio.run(go())


# --- tcpSocket ----------------------------------------------------------------------------------
def test_tcp_success_and_refused() -> None:
    async def go() -> None:
        async with raw_server(respond(200)) as server:
            ok = await tcp_probe("127.0.0.1", server.port, 1)
        closed = free_port()
        refused = await tcp_probe("127.0.0.1", closed, 1)
        assert (ok.result, ok.output) == (Result.SUCCESS, "")
        assert (refused.result, refused.output) == (
            Result.FAILURE, f"dial tcp 127.0.0.1:{closed}: connect: connection refused")

    asyncio.run(go())


def test_runner_resolves_named_ports_and_defaults_the_host_to_the_pod_ip() -> None:
    async def go() -> None:
        async with raw_server(respond(200, b"named")) as server:
            container = Container(name="c", ports=[ContainerPort(name="web", container_port=server.port)])
            runner = ProbeRunner(FakeExecutor(result(0)), UA)
            http = await runner.run(Probe(http_get=HTTPGetAction(path="/", port="web")), container, "cid", "127.0.0.1")
            tcp = await runner.run(Probe(tcp_socket=TCPSocketAction(port="web")), container, "cid", "127.0.0.1")
            missing = await runner.run(Probe(tcp_socket=TCPSocketAction(port="nope")), container, "cid", "127.0.0.1")
        assert (http.result, http.output) == (Result.SUCCESS, "named")
        assert tcp.result is Result.SUCCESS
        assert missing.error == 'strconv.Atoi: parsing "nope": invalid syntax'

    asyncio.run(go())


# --- grpc ---------------------------------------------------------------------------------------
class RecordingHealth(health.HealthServicer):  # type: ignore[misc]
    """The grpc project's HealthServicer, keeping the user agent of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.agents: list[str] = []

    def Check(self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext) -> object:
        self.agents.append(dict(context.invocation_metadata()).get("user-agent", ""))
        return super().Check(request, context)


@pytest.fixture
def grpc_server() -> Iterator[tuple[int, RecordingHealth]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = RecordingHealth()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("down", health_pb2.HealthCheckResponse.NOT_SERVING)
    yield port, servicer
    server.stop(None)


@pytest.mark.parametrize(
    ("service", "want", "output"),
    [
        P("", Result.SUCCESS, "service healthy", id="serving"),
        P("down", Result.FAILURE, 'service unhealthy (responded with "NOT_SERVING")', id="not-serving"),
        P("unknown", Result.FAILURE, "error: health rpc probe failed: rpc error: code = NotFound desc = ",
          id="unknown-service"),
    ],
)
def test_grpc_health(grpc_server: tuple[int, RecordingHealth], service: str, want: Result, output: str) -> None:
    port, servicer = grpc_server
    outcome = asyncio.run(grpc_probe("127.0.0.1", port, service, 1, UA))
    assert (outcome.result, outcome.output) == (want, output)
    assert servicer.agents[-1].startswith(f"{UA} grpc-python")  # the kubelet's: "kube-probe/1.x grpc-go/..."


def test_grpc_without_a_health_service() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        outcome = asyncio.run(grpc_probe("127.0.0.1", port, "", 1, UA))
    finally:
        server.stop(None)
    assert outcome.result is Result.FAILURE
    assert outcome.output.startswith(
        "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ")


def test_grpc_nothing_listening_times_out_connecting() -> None:
    port = free_port()
    began = time.monotonic()
    outcome = asyncio.run(grpc_probe("127.0.0.1", port, "", 0.5, UA))
    assert outcome.output == (f'timeout: failed to connect service "127.0.0.1:{port}" within 0.5s: '
                              "context deadline exceeded")
    assert time.monotonic() - began < 1.5


def test_grpc_against_a_server_that_never_speaks_http2() -> None:
    async def go() -> Outcome:
        async with raw_server(never_answer) as server:
            return await grpc_probe("127.0.0.1", server.port, "", 0.5, UA)

    began = time.monotonic()
    outcome = asyncio.run(go())
    assert outcome.result is Result.FAILURE and outcome.output.startswith("timeout: failed to connect service")
    assert time.monotonic() - began < 1.5


def test_runner_grpc_uses_the_pod_ip(grpc_server: tuple[int, RecordingHealth]) -> None:
    port, _ = grpc_server
    probe = Probe(grpc=GRPCAction(port=port, service=None), timeout_seconds=1)
    outcome = asyncio.run(ProbeRunner(FakeExecutor(result(0)), UA).run(probe, Container(name="c"), "x", "127.0.0.1"))
    assert outcome.result is Result.SUCCESS


def test_probes_leave_no_socket_behind() -> None:
    """Hundreds of tcp and http probes, including refused and hostile ones: the fd count comes back."""
    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def go() -> None:
        async with raw_server(respond(200)) as ok, raw_server(close_in_body) as cut:
            before = fds()
            closed = free_port()
            for _ in range(100):
                await tcp_probe("127.0.0.1", ok.port, 1)
                await tcp_probe("127.0.0.1", closed, 1)
                await http_probe(ok.url(), [], 1, TLS)
                await http_probe(cut.url(), [], 1, TLS)
            await asyncio.sleep(0.05)
            assert fds() <= before + 2

    asyncio.run(go())


@pytest.mark.parametrize(
    ("port", "want"),
    [
        P(8080, 8080, id="number"),
        P("web", 9000, id="named"),
        P("8081", 8081, id="numeric-string"),
        P("nope", 'strconv.Atoi: parsing "nope": invalid syntax', id="unknown-name"),
        P(0, "invalid port number: 0", id="zero"),
        P("70000", "invalid port number: 70000", id="out-of-range"),
    ],
)
def test_port_resolution(port: int | str, want: int | str) -> None:
    c = Container(name="c", ports=[ContainerPort(name="web", container_port=9000)])
    if isinstance(want, int):
        assert c.resolve_port(port) == want
    else:
        with pytest.raises(ValueError, match=want.replace("(", r"\(")):
            c.resolve_port(port)


@pytest.mark.parametrize(
    ("action", "url"),
    [
        P(HTTPGetAction(path="/healthz?full=1", port="web"), "http://10.0.0.5:9000/healthz?full=1", id="named-pod-ip"),
        P(HTTPGetAction(path="ready", port=80, scheme="HTTPS", host="::1"), "https://[::1]:80/ready", id="v6-https"),
    ],
)
def test_http_get_url(action: HTTPGetAction, url: str) -> None:
    c = Container(name="c", ports=[ContainerPort(name="web", container_port=9000)])
    assert action.url(c, "10.0.0.5") == url


def test_exec_probe_commands_expand_static_env_only() -> None:
    container = Container(name="c", env=[
        EnvVar(name="PORT", value="8080"),
        EnvVar(name="POD", value_from=EnvVarSource(field_ref=ObjectFieldSelector(field_path="metadata.name"))),
    ])
    command = ["check", "--port=$(PORT)", "--pod=$(POD)", "$$(PORT)", "$(MISSING)"]
    assert static_command(command, container) == ["check", "--port=8080", "--pod=$(POD)", "$(PORT)", "$(MISSING)"]
