"""A container's environment as makeEnvironmentVariables builds it: envFrom then env, sources
from ConfigMaps, Secrets, the downward API and the Services, optional references, the kubelet's
messages; and a standalone node's narrower answer."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput, NotFound, Unavailable
from kubeletapi.pods.env import NO_SERVICES, EnvResolver
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.static import CONFIG_SOURCE

P = pytest.param
Json = dict[str, Any]
NODE = NodeEnv("n1", "10.0.0.5", Path("/nonexistent"), Path("/logs"), memory_capacity=8 << 30,
               cpu_capacity_milli=4000)


class Objects:
    def __init__(self, kind: str, objects: dict[str, Json]) -> None:
        self.kind = kind
        self.objects = objects
        self.reads: list[str] = []

    async def get(self, namespace: str, name: str) -> Json:
        self.reads.append(name)
        if name == "broken":
            raise Unavailable(f"failed to sync {self.kind} cache: timed out waiting for the condition")
        if name not in self.objects:
            raise NotFound(f'{self.kind} "{name}" not found')
        return self.objects[name]


class Services:
    def __init__(self, synced: bool = True) -> None:
        self.is_synced = synced
        self.asked: list[tuple[str, bool]] = []

    def synced(self) -> bool:
        return self.is_synced

    def env(self, namespace: str, enable_service_links: bool) -> dict[str, str]:
        self.asked.append((namespace, enable_service_links))
        return {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "SHADOWED": "svc"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def resolver(services: Services | None = None) -> tuple[EnvResolver, Objects, Objects]:
    cms = Objects("configmap", {"cfg": {"data": {"LEVEL": "debug", "mode": "fast"},
                                        "binaryData": {"blob": b64("x")}}})
    secrets = Objects("secret", {"creds": {"data": {"PASSWORD": b64("hunter2"), "USER": b64("admin")}}})
    allocatable = {"cpu": Quantity.parse("3"), "memory": Quantity.parse("6Gi")}
    return EnvResolver(NODE, cms, secrets, services or Services(), lambda: allocatable), cms, secrets


def pod(env: list[Json] | None = None, env_from: list[Json] | None = None, **meta: Any) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "labels": {"app": "web"}, **meta},
        "spec": {"nodeName": "n1", "serviceAccountName": "sa", "containers": [
            {"name": "main", "image": "i", "env": env or [], "envFrom": env_from or [],
             "resources": {"limits": {"memory": "64Mi"}}}]},
    })


def environment(r: EnvResolver, p: Pod) -> list[tuple[str, str]]:
    return asyncio.run(r.environment(p, p.spec.containers[0]))


def test_the_order_and_the_sources() -> None:
    r, cms, _ = resolver()
    p = pod(
        env_from=[{"configMapRef": {"name": "cfg"}}, {"prefix": "DB_", "secretRef": {"name": "creds"}}],
        env=[
            {"name": "LEVEL", "value": "info-$(mode)"},  # replaces envFrom's, expanded against it
            {"name": "HOST", "value": "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
            {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "SHADOWED", "value": "mine"},
        ])
    assert environment(r, p) == [
        ("LEVEL", "info-fast"), ("mode", "fast"), ("DB_PASSWORD", "hunter2"), ("DB_USER", "admin"),
        ("HOST", "10.0.0.1:443"), ("KEY", "fast"), ("PW", "hunter2"), ("POD", "web"), ("IP", "10.0.0.5"),
        ("APP", "web"), ("MEM", "64"), ("CPU", "3"), ("SHADOWED", "mine"),
        ("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("KUBERNETES_SERVICE_PORT", "443"),
    ]
    assert cms.reads == ["cfg"]  # read once per container


def test_optional_references_leave_the_variable_unset() -> None:
    r, _, _ = resolver()
    p = pod(env_from=[{"configMapRef": {"name": "absent", "optional": True}}], env=[
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}}},
        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nope", "optional": True}}},
        {"name": "C", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": True}}},
        {"name": "D", "value": "d"},
    ])
    assert [k for k, _ in environment(r, p)] == ["D", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
                                                 "SHADOWED"]


@pytest.mark.parametrize(("p", "message"), [
    P(pod(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]),
      'configmap "absent" not found', id="missing-configmap"),
    P(pod(env_from=[{"secretRef": {"name": "absent"}}]), 'secret "absent" not found', id="missing-secret"),
    P(pod(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nope"}}}]),
      "couldn't find key nope in ConfigMap ns/cfg", id="missing-configmap-key"),
    P(pod(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "blob"}}}]),
      "couldn't find key blob in ConfigMap ns/cfg", id="binary-data-is-not-env"),
    P(pod(env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope"}}}]),
      "couldn't find key nope in Secret ns/creds", id="missing-secret-key"),
    P(pod(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "broken", "key": "k"}}}]),
      "failed to sync configmap cache: timed out waiting for the condition", id="unreadable"),
])
def test_failures_are_config_errors(p: Pod, message: str) -> None:
    r, _, _ = resolver()
    with pytest.raises(InvalidInput) as caught:
        environment(r, p)
    assert str(caught.value) == message


def test_api_pods_wait_for_the_services_but_static_pods_do_not() -> None:
    services = Services(synced=False)
    r, _, _ = resolver(services)
    with pytest.raises(InvalidInput, match=NO_SERVICES):
        environment(r, pod())
    static = pod(annotations={CONFIG_SOURCE: "file"})
    assert ("KUBERNETES_SERVICE_HOST", "10.0.0.1") in environment(r, static)


def test_service_links_follow_the_pod() -> None:
    services = Services()
    r, _, _ = resolver(services)
    p = pod()
    p.spec.enable_service_links = False
    environment(r, p)
    environment(r, pod())
    assert services.asked == [("ns", False), ("ns", True)]


def test_a_standalone_node() -> None:
    r = EnvResolver(NODE)
    p = pod(env=[
        {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k", "optional": True}}},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ])
    assert environment(r, p) == [("OPT", ""), ("CPU", "4000"), ("NODE", "n1")]  # capacity stands in
    with pytest.raises(InvalidInput) as caught:
        environment(r, pod(env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]))
    assert str(caught.value) == ('secret "s": environment variable A needs an API server, and kubeletapi runs '
                                 "standalone (no --kubeconfig)")
    with pytest.raises(InvalidInput, match="envFrom of container 'main' needs an API server"):
        environment(r, pod(env_from=[{"configMapRef": {"name": "c"}}]))
