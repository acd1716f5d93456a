"""FakeHost: the Host protocol (kubeletapi/server/host.py) with every answer a function field, and
FakeNode: the HTTP layer of an agent serving a FakeHost on real loopback sockets (asgi_client: the
same app called in-process, for what routes answer).

A test overrides exactly what it needs, `FakeHost(container_logs=araises(NotFound("...")))`; the
defaults answer as an agent with no pods does. FakeNode parses the agent's flags and wires TLS,
authentication and authorization with the agent's own code (kubelet/security.py), so everything
between the socket and the Host is real; there are no pods, runtime, stats or sync loop behind it.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import math
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import httpx
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp

from kubeletapi import nodeinfo
from kubeletapi.cli import configuration
from kubeletapi.clock import Clock, RealClock
from kubeletapi.errors import NotFound
from kubeletapi.health import HealthCheck, PingCheck
from kubeletapi.kubelet.security import SecurityWiring, tls_files
from kubeletapi.metrics.kubelet import KubeletMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.node.logfiles import NOT_FOUND, LogAnswer
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.server.app import Role, create_app, create_healthz_app
from kubeletapi.server.auth import Security
from kubeletapi.server.authn import RequestAuthenticator
from kubeletapi.server.authz import AlwaysAllow
from kubeletapi.server.host import Host
from kubeletapi.server.listeners import Listener, ListenerSpec
from kubeletapi.server.tls import server_context
from kubeletapi.stats.history import History
from kubeletapi.streaming.targets import ContainerStreams, PodPorts
from tests.helpers import Listening, LoopThread

NODE_NAME = "testnode"  # tests.helpers.agent_args's --hostname-override
EMPTY_POD_LIST: Mapping[str, Any] = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}
EMPTY_NODE_VIEW: Mapping[str, Any] = {"capacity": {"cpu": "2", "memory": "4Gi"},
                                      "allocatable": {"cpu": "2", "memory": "3Gi"}, "conditions": []}
EMPTY_SUMMARY = b'{\n  "node": {\n   "nodeName": "testnode"\n  },\n  "pods": []\n}'


@dataclass(frozen=True)
class FixedCheck:
    """A health check with a fixed answer (None: healthy)."""

    name: str
    error: str | None = None

    def check(self) -> str | None:
        return self.error


def agent_checks() -> Sequence[HealthCheck]:
    """The checks the agent installs, by name (ping, log, syncloop), all healthy. They make the
    /healthz/<check> routes, so the served OpenAPI document equals the one built on a real agent
    (tests/server/test_openapi.py)."""
    return [PingCheck(), FixedCheck("log"), FixedCheck("syncloop")]


def raises(exc: BaseException) -> Callable[..., NoReturn]:
    """A function field that raises `exc` whatever it is asked."""

    def answer(*args: object) -> NoReturn:
        raise exc

    return answer


def araises(exc: BaseException) -> Callable[..., Coroutine[Any, Any, NoReturn]]:
    """An async function field that raises `exc` whatever it is asked."""

    async def answer(*args: object) -> NoReturn:
        raise exc

    return answer


def _registries() -> Callable[[str], CollectorRegistry]:
    made: dict[str, CollectorRegistry] = {}

    def registry(endpoint: str) -> CollectorRegistry:
        if endpoint not in ("metrics", "probes"):
            raise KeyError(endpoint)
        return made.setdefault(endpoint, new_registry())

    return registry


def _stats_metrics(endpoint: str, gzipped: bool) -> bytes:
    return gzip.compress(b"") if gzipped else b""


async def _logs(namespace: str, pod: str, container: str, opts: PodLogOptions) -> AsyncIterator[bytes]:
    raise NotFound(f'pod "{pod}" does not exist')  # the agent's answer for an unknown pod


async def _run(namespace: str, pod: str, uid: str | None, container: str, cmd: Sequence[str]) -> bytes:
    raise NotFound("pod does not exist")


async def _streams(namespace: str, pod: str, uid: str | None, container: str) -> ContainerStreams:
    raise NotFound("pod does not exist")


async def _ports(namespace: str, pod: str, uid: str | None) -> PodPorts:
    raise NotFound("pod does not exist")


async def _node_logs(path: str, query: Sequence[tuple[str, str]], raw_query: str,
                     headers: Mapping[str, str]) -> LogAnswer:
    return NOT_FOUND  # an empty node log directory


async def _submit(body: bytes) -> Mapping[str, Any]:
    return EMPTY_POD_LIST  # accepted, and nothing defined (a node without pods)


def _history() -> Callable[[], History]:
    history = History(10.0)
    return lambda: history


@dataclass
class FakeHost:
    """A Host whose every answer is a function field; the defaults are a node without pods."""

    node_name: str = NODE_NAME
    process_start_unix: int = 1_700_000_000
    health_checks: Callable[[], Sequence[HealthCheck]] = agent_checks
    configz: Callable[[], Mapping[str, Any]] = lambda: {"kubeletconfig": {}}
    # /metrics and /metrics/probes: one fresh registry each per host (FakeNode adds the kubelet_http_*
    # instruments to the "metrics" one, as the agent does).
    metrics_registry: Callable[[str], CollectorRegistry] = field(default_factory=_registries)
    stats_metrics: Callable[[str, bool], bytes] = _stats_metrics
    stats_summary: Callable[[bool], bytes] = lambda only_cpu_and_memory: EMPTY_SUMMARY
    # The web UI's history: a real (empty) ring per host; a test adds Summaries to it.
    stats_history: Callable[[], History] = field(default_factory=_history)
    node_status_view: Callable[[], Mapping[str, Any]] = lambda: EMPTY_NODE_VIEW
    pod_list: Callable[[], Mapping[str, Any]] = lambda: EMPTY_POD_LIST
    pod_events: Callable[[str], Sequence[Mapping[str, Any]]] = lambda uid: ()
    # A new number per call: as if the pods changed every time (the UI rebuilds its PodList per TTL).
    pods_version: Callable[[], int] = field(default_factory=lambda: itertools.count().__next__)
    running_pods: Callable[[], Mapping[str, Any]] = lambda: EMPTY_POD_LIST
    manifests: Callable[[], Mapping[str, Any]] = lambda: {"items": []}
    node_logs: Callable[[str, Sequence[tuple[str, str]], str, Mapping[str, str]],
                        Coroutine[Any, Any, LogAnswer]] = _node_logs
    submit_pods: Callable[[bytes], Coroutine[Any, Any, Mapping[str, Any]]] = _submit
    container_logs: Callable[[str, str, str, PodLogOptions], Coroutine[Any, Any, AsyncIterator[bytes]]] = _logs
    run_in_container: Callable[[str, str, str | None, str, Sequence[str]], Coroutine[Any, Any, bytes]] = _run
    container_streams: Callable[[str, str, str | None, str], Coroutine[Any, Any, ContainerStreams]] = _streams
    pod_ports: Callable[[str, str, str | None], Coroutine[Any, Any, PodPorts]] = _ports
    streaming_idle_timeout: Callable[[], float] = lambda: 4 * 3600.0  # the kubelet's default, 4h


_: Host = FakeHost()  # mypy checks that FakeHost is a Host


class AsgiClient:
    """Requests to an ASGI app called in-process (httpx's ASGI transport), from synchronous tests."""

    def __init__(self, app: ASGIApp) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=f"http://{NODE_NAME}")

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._loop.run_until_complete(self._client.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()

    def __enter__(self) -> AsgiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def asgi_client(host: FakeHost, role: Role = "secure", debugging_handlers: bool = True) -> AsgiClient:
    """A listener's app around `host`, called in-process (no socket, TLS or uvicorn), every request
    anonymous and allowed: for what the routes answer. Use it as a context manager."""
    metrics = KubeletMetrics(host.metrics_registry("metrics"), host.node_name, lambda: math.inf)
    security = Security(RequestAuthenticator(None, [], anonymous=True), AlwaysAllow(), host.node_name)
    return AsgiClient(create_app(host, role, metrics, security, debugging_handlers))


class FakeNode(Listening):
    """The listeners of an agent started with `args` (tests.helpers.agent_args flags), serving
    `host`: secure (TLS files from --cert-dir or generated, the configured authenticators and
    authorizer), read-only and healthz, each only when the flags ask for it, as the agent does."""

    def __init__(self, args: Sequence[str], host: FakeHost | None = None, clock: Clock | None = None) -> None:
        self.cfg, self.opts = configuration(list(args))
        self.host = host or FakeHost(node_name=nodeinfo.node_name(self.opts.hostname_override))
        self.clock: Clock = clock or RealClock()
        self.listeners: dict[str, Listener] = {}
        self._security = SecurityWiring(self.cfg, self.opts, self.clock)
        self._loop = LoopThread()
        try:
            self._loop.run(self._start())
        except BaseException:
            self.close()
            raise

    @property
    def certs(self) -> Path:
        return self.opts.effective_cert_dir

    def port(self, listener: str) -> int:
        return self.listeners[listener].port

    def close(self) -> None:
        """Stop the listeners and the loop (idempotent: a test may stop its node early)."""
        if self._loop.loop.is_closed():
            return
        try:
            self._loop.run(self._stop())
        finally:
            self._loop.close()

    async def _start(self) -> None:
        for spec in self._specs():
            self.listeners[spec.name] = Listener(spec)
        for listener in self.listeners.values():
            await listener.start()

    async def _stop(self) -> None:
        await asyncio.gather(*(listener.stop() for listener in self.listeners.values()))
        await self._security.close()

    def _specs(self) -> list[ListenerSpec]:
        cfg, host = self.cfg, self.host
        server_url = f"https://{cfg.address}:{cfg.port}"
        tls = tls_files(cfg, self.opts, host.node_name, nodeinfo.node_ips(self.opts.node_ip), server_url, self.clock)
        metrics = KubeletMetrics(host.metrics_registry("metrics"), host.node_name, lambda: math.inf)
        security = Security(self._security.authenticator(tls), self._security.authorizer(), host.node_name)
        secure = create_app(host, "secure", metrics, security, cfg.enable_debugging_handlers)
        ctx = server_context(tls.cert, tls.key, tls.client_ca, cfg.tls_min_version)
        specs = [ListenerSpec("secure", cfg.address, cfg.port, secure, ctx)]
        if cfg.read_only_port > 0:
            read_only = create_app(host, "readonly", metrics)
            specs.append(ListenerSpec("read-only", cfg.address, cfg.read_only_port, read_only))
        if cfg.healthz_port > 0:
            specs.append(ListenerSpec("healthz", cfg.healthz_bind_address, cfg.healthz_port, create_healthz_app(host)))
        return specs
