"""Service environment variables (envvars.FromServices, getServiceEnvVarMap) and the Services
informer that feeds them (one LIST, then a WATCH)."""

from __future__ import annotations

import asyncio

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Forbidden
from kubeletapi.pods.services import PATH, Service, ServiceEnv, ServicePort, service_env
from tests.pods.apifakes import FakeObjects, settle


def test_the_variables_of_one_service() -> None:
    svc = Service("ns", "redis-primary", "10.0.0.11", (ServicePort("", 6379, ""), ServicePort("metrics", 9121, "TCP"),
                                                        ServicePort("dns", 53, "UDP")))
    assert service_env(svc) == {
        "REDIS_PRIMARY_SERVICE_HOST": "10.0.0.11",
        "REDIS_PRIMARY_SERVICE_PORT": "6379",
        "REDIS_PRIMARY_SERVICE_PORT_METRICS": "9121",
        "REDIS_PRIMARY_SERVICE_PORT_DNS": "53",
        "REDIS_PRIMARY_PORT": "tcp://10.0.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.0.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
        "REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379",
        "REDIS_PRIMARY_PORT_6379_TCP_ADDR": "10.0.0.11",
        "REDIS_PRIMARY_PORT_9121_TCP": "tcp://10.0.0.11:9121",
        "REDIS_PRIMARY_PORT_9121_TCP_PROTO": "tcp",
        "REDIS_PRIMARY_PORT_9121_TCP_PORT": "9121",
        "REDIS_PRIMARY_PORT_9121_TCP_ADDR": "10.0.0.11",
        "REDIS_PRIMARY_PORT_53_UDP": "udp://10.0.0.11:53",
        "REDIS_PRIMARY_PORT_53_UDP_PROTO": "udp",
        "REDIS_PRIMARY_PORT_53_UDP_PORT": "53",
        "REDIS_PRIMARY_PORT_53_UDP_ADDR": "10.0.0.11",
    }
    v6 = Service("ns", "a", "fd00::1", (ServicePort("", 80, "TCP"),))
    assert service_env(v6)["A_PORT"] == "tcp://[fd00::1]:80"


def svc(api: FakeObjects, namespace: str, name: str, ip: str, port: int = 80) -> None:
    api.put(PATH, f"{namespace}/{name}", spec={"clusterIP": ip, "ports": [{"port": port, "protocol": "TCP"}]})
    api.objects[f"{PATH}/{namespace}/{name}"]["metadata"].update(namespace=namespace, name=name)


def test_which_services_a_namespace_sees() -> None:
    async def go() -> None:
        api = FakeObjects()
        svc(api, "default", "kubernetes", "10.0.0.1", 443)
        svc(api, "default", "other", "10.0.0.2")
        svc(api, "ns", "web", "10.0.0.3")
        svc(api, "ns", "headless", "None")
        services = ServiceEnv(api, FakeClock(), rand=lambda: 0.0)
        task = asyncio.create_task(services.run())
        await settle()
        assert services.synced()
        hosts = {k: v for k, v in services.env("ns", True).items() if k.endswith("_SERVICE_HOST")}
        assert hosts == {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "WEB_SERVICE_HOST": "10.0.0.3"}
        assert [k for k in services.env("ns", False) if k.endswith("_SERVICE_HOST")] == ["KUBERNETES_SERVICE_HOST"]
        assert "OTHER_SERVICE_HOST" in services.env("default", True)
        assert api.calls == [("LIST", PATH), ("WATCH", PATH)]
        task.cancel()

    asyncio.run(go())


def test_the_watch_keeps_the_services_current_and_failures_retry() -> None:
    async def go() -> None:
        api = FakeObjects()
        api.fail = [Forbidden("GET /api/v1/services: 403 no")]
        clock = FakeClock()
        services = ServiceEnv(api, clock, rand=lambda: 0.0)
        task = asyncio.create_task(services.run())
        await settle()
        assert not services.synced()
        while clock.sleepers < 1:
            await asyncio.sleep(0.005)
        clock.advance(1.0)
        for _ in range(100):
            if services.synced():
                break
            await asyncio.sleep(0.005)
        api.put(PATH, "db", metadata={"namespace": "ns", "name": "db"},
                spec={"clusterIP": "10.0.0.9", "ports": [{"port": 5432}]})
        await settle()
        assert services.env("ns", True)["DB_SERVICE_HOST"] == "10.0.0.9"
        api.delete(PATH, "db")
        await settle()
        assert services.env("ns", True) == {}
        task.cancel()

    asyncio.run(go())
