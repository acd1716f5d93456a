"""The Services of the cluster, for the environment variables the kubelet gives every container
(getServiceEnvVarMap and pkg/kubelet/envvars FromServices).

One LIST+WATCH of /api/v1/services, as the kubelet's service informer (the node may read every
Service), re-listed after 410 Gone or a failure (back-off 1 s doubling to 30 s); watches of 5 to
10 minutes. A container sees the `kubernetes` Service of the default namespace always, and the
Services of its own namespace when the pod's enableServiceLinks is true (a Service of its own
namespace wins over a master Service of the same name); Services without a cluster IP
(headless) are skipped. For each: <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (the first port),
<NAME>_SERVICE_PORT_<PORTNAME> for named ports, and the Docker link variables <NAME>_PORT,
<NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import Forbidden, Gone, KubeletError

log = logging.getLogger(__name__)

PATH = "/api/v1/services"
MIN_WATCH_S = 300  # the informer's reflector: watch timeouts drawn in [5, 10) minutes
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
MASTER_SERVICES = {"kubernetes"}

Json = dict[str, Any]


class ServicesApi(Protocol):
    """List and watch (apiclient.ApiClient)."""

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json: ...

    def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
              timeout_s: int = MIN_WATCH_S) -> AsyncIterator[Json]: ...


@dataclass(frozen=True)
class ServicePort:
    name: str
    port: int
    protocol: str


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    cluster_ip: str
    ports: tuple[ServicePort, ...]

    @classmethod
    def of(cls, obj: Json) -> Service:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        ports = tuple(ServicePort(str(p.get("name") or ""), int(p.get("port") or 0), str(p.get("protocol") or ""))
                      for p in spec.get("ports") or [] if isinstance(p, dict))
        return cls(str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(spec.get("clusterIP") or ""),
                   ports)


def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"  # net.JoinHostPort


def service_env(service: Service) -> dict[str, str]:
    """FromServices for one Service with a cluster IP and at least one port."""
    prefix = _env_name(service.name)
    ip = service.cluster_ip
    out = {f"{prefix}_SERVICE_HOST": ip, f"{prefix}_SERVICE_PORT": str(service.ports[0].port)}
    for port in service.ports:
        if port.name:
            out[f"{prefix}_SERVICE_PORT_{_env_name(port.name)}"] = str(port.port)
    for i, port in enumerate(service.ports):
        protocol = port.protocol or "TCP"
        url = f"{protocol.lower()}://{_host_port(ip, port.port)}"
        if i == 0:
            out[f"{prefix}_PORT"] = url
        base = f"{prefix}_PORT_{port.port}_{protocol.upper()}"
        out.update({base: url, f"{base}_PROTO": protocol.lower(), f"{base}_PORT": str(port.port),
                    f"{base}_ADDR": ip})
    return out


class ServiceEnv:
    def __init__(self, api: ServicesApi, clock: Clock, rand: Callable[[], float] = random.random) -> None:
        self._api = api
        self._clock = clock
        self._rand = rand
        self._services: dict[tuple[str, str], Service] = {}
        self._synced = False
        self._failing = ""

    def synced(self) -> bool:
        """The Services have been listed at least once."""
        return self._synced

    def env(self, namespace: str, enable_service_links: bool) -> dict[str, str]:
        """getServiceEnvVarMap: the variables of the Services a container of `namespace` sees."""
        chosen: dict[str, Service] = {}
        for service in self._services.values():
            if service.cluster_ip in ("", "None") or not service.ports:
                continue
            if service.namespace == "default" and service.name in MASTER_SERVICES:
                chosen.setdefault(service.name, service)
            elif service.namespace == namespace and enable_service_links:
                chosen[service.name] = service
        out: dict[str, str] = {}
        for service in chosen.values():
            out.update(service_env(service))
        return out

    async def run(self) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                version = await self._list()
                backoff = FIRST_BACKOFF_S
                while True:
                    version = await self._watch(version)
            except Gone:
                continue
            except KubeletError as exc:
                if str(exc) != self._failing:
                    refused = " (the API server refuses this node)" if isinstance(exc, Forbidden) else ""
                    log.warning("services%s: %s; retrying in %.0fs", refused, exc, backoff)
                self._failing = str(exc)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _list(self) -> str:
        listed = await self._api.list(PATH)
        services = [Service.of(o) for o in listed.get("items") or [] if isinstance(o, dict)]
        self._services = {(s.namespace, s.name): s for s in services}
        self._synced = True
        self._failing = ""
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    async def _watch(self, version: str) -> str:
        async for event in self._api.watch(PATH, version, None, int(MIN_WATCH_S * (1 + self._rand()))):
            kind, obj = event.get("type"), event.get("object") or {}
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            service = Service.of(obj)
            if kind == "DELETED":
                self._services.pop((service.namespace, service.name), None)
            else:
                self._services[(service.namespace, service.name)] = service
        return version
