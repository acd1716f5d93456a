"""Probe handlers: exec, httpGet, tcpSocket and grpc, and the runner that picks one.

Each handler returns an Outcome and never raises for what the target does; every one is bounded
in time (the probe's timeoutSeconds) and memory (10 KiB of output, as the kubelet keeps).

- exec: the runtime's exec_sync in the container, stdout and stderr capped by the runtime
  (`max_output`); exit 0 succeeds, else fails with the output; running out of time fails with
  the CRI client's `command "<cmd>" timed out`; a runtime refusal (container gone) is an error.
- tcpSocket: a connection to host (default the pod IP) and port, closed at once; Go's `dial tcp
  <addr>: connect: connection refused` / `dial tcp <addr>: i/o timeout` on failure.
- grpc: grpc.health.v1.Health/Check on the pod IP with the configured service; SERVING
  succeeds; the kubelet's messages for a connect timeout, an unimplemented health service, an
  RPC timeout, any other RPC error and a non-SERVING answer.
- httpGet: kubeletapi.prober.httpget.

The runner resolves ports (an unresolvable port is an error, as in the kubelet), retries an
errored run up to 3 times (maxProbeRetries), and bounds how many exec probes spawn at once
(each is a shim process): waiting for a slot does not count against the probe's timeout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol

from kubeletapi.aio import import_off_loop
from kubeletapi.api.core_v1 import Container, GRPCAction, Probe, TCPSocketAction
from kubeletapi.api.expansion import expand
from kubeletapi.errors import KubeletError

if TYPE_CHECKING:  # grpc_probe imports grpc: a node without grpc probes (and the CRI) never maps it
    import grpc
from kubeletapi.prober.httpget import dial_error, http_probe, request_headers, tls_context
from kubeletapi.prober.results import Outcome, Result
from kubeletapi.runtime.types import ExecResult

log = logging.getLogger(__name__)

MAX_OUTPUT = 10 * 1024  # the kubelet's exec maxReadLength
MAX_RETRIES = 3  # the kubelet's maxProbeRetries (for errored runs only)
EXEC_SLOTS = 32
SAFETY_S = 5.0  # a handler that ignores its own timeout is cut off this much later
_GRPC_CODES = {
    "CANCELLED": "Canceled", "INVALID_ARGUMENT": "InvalidArgument", "DEADLINE_EXCEEDED": "DeadlineExceeded",
    "NOT_FOUND": "NotFound", "ALREADY_EXISTS": "AlreadyExists", "PERMISSION_DENIED": "PermissionDenied",
    "RESOURCE_EXHAUSTED": "ResourceExhausted", "FAILED_PRECONDITION": "FailedPrecondition",
    "OUT_OF_RANGE": "OutOfRange", "DATA_LOSS": "DataLoss", "UNAUTHENTICATED": "Unauthenticated",
}


class Executor(Protocol):
    """Runs a command in a container (the Runtime's exec_sync)."""

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None
    ) -> ExecResult: ...


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _seconds(timeout_s: float) -> str:
    """Go's time.Duration text for whole and fractional seconds (1s, 1.5s)."""
    return f"{timeout_s:g}s"


def static_command(command: Sequence[str], container: Container) -> list[str]:
    """The kubelet's ExpandContainerCommandOnlyStatic: $(VAR) of the container's plain `value`
    env vars (not valueFrom ones, which only the runtime knows) expanded in an exec probe's command."""
    env = {var.name: var.value for var in container.env if var.value_from is None}
    return [expand(part, env) for part in command]


async def exec_probe(executor: Executor, container_id: str, command: Sequence[str], timeout_s: float) -> Outcome:
    began = time.monotonic()
    try:
        result = await executor.exec_sync(container_id, command, timeout_s, max_output=MAX_OUTPUT)
    except KubeletError as exc:
        if "timed out" in str(exc) or time.monotonic() - began >= timeout_s:
            quoted = json.dumps(" ".join(command), ensure_ascii=False)
            return Outcome(Result.FAILURE, f"command {quoted} timed out")
        return Outcome(Result.UNKNOWN, error=str(exc))
    output = (result.stdout[:MAX_OUTPUT] + result.stderr[:MAX_OUTPUT])[:MAX_OUTPUT].decode(errors="replace")
    return Outcome(Result.SUCCESS if result.exit_code == 0 else Result.FAILURE, output)


async def tcp_probe(host: str, port: int, timeout_s: float) -> Outcome:
    addr = join_host_port(host, port)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            transport, _ = await loop.create_connection(asyncio.Protocol, host, port)
    except TimeoutError:
        return Outcome(Result.FAILURE, f"dial tcp {addr}: i/o timeout")
    except OSError as exc:
        return Outcome(Result.FAILURE, dial_error(host, port, exc))
    transport.abort()
    return Outcome(Result.SUCCESS)


async def grpc_probe(host: str, port: int, service: str, timeout_s: float, user_agent: str) -> Outcome:
    await import_off_loop("grpc", "grpc.aio", "grpc_health.v1.health_pb2", "grpc_health.v1.health_pb2_grpc")
    import grpc  # noqa: PLC0415 - see TYPE_CHECKING above
    from grpc_health.v1 import health_pb2, health_pb2_grpc  # type: ignore[import-untyped]  # noqa: PLC0415

    addr = join_host_port(host, port)
    deadline = time.monotonic() + timeout_s
    options = [("grpc.primary_user_agent", user_agent), ("grpc.max_receive_message_length", MAX_OUTPUT),
               ("grpc.enable_retries", 0)]
    async with grpc.aio.insecure_channel(addr, options=options) as channel:
        try:
            async with asyncio.timeout(timeout_s):
                await channel.channel_ready()
        except TimeoutError:
            return Outcome(Result.FAILURE, f'timeout: failed to connect service "{addr}" within '
                                           f"{_seconds(timeout_s)}: context deadline exceeded")
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            response = await stub.Check(health_pb2.HealthCheckRequest(service=service),
                                        timeout=max(deadline - time.monotonic(), 0.001))
        except grpc.aio.AioRpcError as exc:
            return Outcome(Result.FAILURE, _rpc_error(exc, timeout_s))
    if response.status != health_pb2.HealthCheckResponse.SERVING:
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
        return Outcome(Result.FAILURE, f'service unhealthy (responded with "{name}")')
    return Outcome(Result.SUCCESS, "service healthy")


def _rpc_error(exc: grpc.aio.AioRpcError, timeout_s: float) -> str:
    import grpc  # noqa: PLC0415 - loaded already: grpc_probe raised this

    code = exc.code()
    details = exc.details() or ""
    if code is grpc.StatusCode.UNIMPLEMENTED:
        return f"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): {details}"
    if code is grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"timeout: health rpc did not complete within {_seconds(timeout_s)}"
    name = code.name
    go_name = _GRPC_CODES.get(name, name.capitalize() if name != "OK" else name)
    return f"error: health rpc probe failed: rpc error: code = {go_name} desc = {details}"


class ProbeRunner:
    """Runs one probe of a container: picks the handler, resolves the target, retries errors."""

    def __init__(self, executor: Executor, user_agent: str, exec_slots: int = EXEC_SLOTS) -> None:
        self._executor = executor
        self._user_agent = user_agent
        self._exec_slots = asyncio.Semaphore(exec_slots)
        self._tls = tls_context()

    async def run(self, probe: Probe, container: Container, container_id: str, pod_ip: str) -> Outcome:
        """The outcome of up to MAX_RETRIES runs: the first that did not error, else the last."""
        outcome = Outcome(Result.UNKNOWN, error="not run")
        for _ in range(MAX_RETRIES):
            outcome = await self._once(probe, container, container_id, pod_ip)
            if outcome.error is None:
                break
        return outcome

    async def _once(self, probe: Probe, container: Container, container_id: str, pod_ip: str) -> Outcome:
        timeout_s = float(probe.timeout_seconds or 1)
        if probe.exec is not None:
            command = static_command(probe.exec.command, container)
            async with self._exec_slots:
                return await self._bounded(exec_probe(self._executor, container_id, command, timeout_s), timeout_s)
        try:
            return await self._bounded(self._network(probe, container, pod_ip, timeout_s), timeout_s)
        except ValueError as exc:  # the port does not resolve
            return Outcome(Result.UNKNOWN, error=str(exc))

    async def _network(self, probe: Probe, container: Container, pod_ip: str, timeout_s: float) -> Outcome:
        if probe.http_get is not None:
            action = probe.http_get
            url = action.url(container, pod_ip)
            headers = request_headers([(h.name, h.value) for h in action.http_headers], self._user_agent)
            return await http_probe(url, headers, timeout_s, self._tls)
        if probe.tcp_socket is not None:
            return await self._tcp(probe.tcp_socket, container, pod_ip, timeout_s)
        if probe.grpc is not None:
            return await self._grpc(probe.grpc, pod_ip, timeout_s)
        return Outcome(Result.UNKNOWN, error="missing probe handler")

    async def _tcp(self, action: TCPSocketAction, container: Container, pod_ip: str, timeout_s: float) -> Outcome:
        return await tcp_probe(action.host or pod_ip, container.resolve_port(action.port), timeout_s)

    async def _grpc(self, action: GRPCAction, pod_ip: str, timeout_s: float) -> Outcome:
        return await grpc_probe(pod_ip, action.port, action.service or "", timeout_s, self._user_agent)

    @staticmethod
    async def _bounded(work: Awaitable[Outcome], timeout_s: float) -> Outcome:
        """A last guard: a handler (or runtime) that ignores its timeout is cut off."""
        try:
            async with asyncio.timeout(timeout_s + SAFETY_S):
                return await work
        except TimeoutError:
            log.warning("a probe handler overran its %gs timeout by %gs: cancelled", timeout_s, SAFETY_S)
            return Outcome(Result.FAILURE, f"probe timed out after {_seconds(timeout_s)}")
