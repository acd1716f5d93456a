"""Volume payloads (configMap, secret, downwardAPI) and the downward API's values, against the
kubelet's MakePayload/CollectData/ExtractFieldPathAsString/ExtractContainerResourceValue cases."""

from __future__ import annotations

import base64

import pytest

from kubeletapi.api.core_v1 import Pod, ResourceFieldSelector
from kubeletapi.api.quantity import Quantity
from kubeletapi.api.volumes_v1 import DownwardAPIVolumeFile, KeyToPath
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.atomicwriter import FileProjection
from kubeletapi.pods.fieldpath import PodAddresses, format_map, object_field, pod_field, resource_value
from kubeletapi.pods.payloads import configmap_data, downward_payload, key_payload, secret_data

P = pytest.param
ALLOCATABLE = {"cpu": Quantity.parse("3500m"), "memory": Quantity.parse("7Gi"),
               "ephemeral-storage": Quantity.parse("90Gi")}


def pod(**spec: object) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": "web", "namespace": "prod", "uid": "u-1",
                     "labels": {"app": "web", "tier": "front"},
                     "annotations": {"note": 'say "hi"\n', "example.com/Key": "v"}},
        "spec": {"nodeName": "n1", "serviceAccountName": "builder",
                 "containers": [{"name": "main", "image": "i", "resources": {
                     "limits": {"memory": "128Mi"}, "requests": {"cpu": "250m", "memory": "64Mi"}}},
                     {"name": "side", "image": "i", "resources": {"limits": {"cpu": "1500m"}}}],
                 **spec},
    })


def test_configmap_and_secret_data() -> None:
    cm = {"data": {"a": "text"}, "binaryData": {"b": base64.b64encode(b"\x00\x01").decode()}}
    assert configmap_data(cm) == {"a": b"text", "b": b"\x00\x01"}
    assert secret_data({"data": {"s": base64.b64encode(b"pw").decode()}}) == {"s": b"pw"}
    assert secret_data({}) == {}
    with pytest.raises(InvalidInput, match="key s is not base64"):
        secret_data({"data": {"s": "!!"}})


@pytest.mark.parametrize(("items", "mode", "optional", "want"), [
    P([], None, False, {"a": FileProjection(b"1", 0o644), "b": FileProjection(b"2", 0o644)}, id="all-keys"),
    P([], 0o400, False, {"a": FileProjection(b"1", 0o400), "b": FileProjection(b"2", 0o400)}, id="default-mode"),
    P([KeyToPath(key="a", path="dir/x", mode=0o600), KeyToPath(key="b", path="y")], 0o644, False,
      {"dir/x": FileProjection(b"1", 0o600), "y": FileProjection(b"2", 0o644)}, id="items"),
    P([KeyToPath(key="a", path="x"), KeyToPath(key="zz", path="z")], 0o644, True,
      {"x": FileProjection(b"1", 0o644)}, id="optional-missing-key-skipped"),
])
def test_key_payload(items: list[KeyToPath], mode: int | None, optional: bool,
                     want: dict[str, FileProjection]) -> None:
    assert key_payload("configmap", {"a": b"1", "b": b"2"}, items, mode, optional) == want


@pytest.mark.parametrize(("kind", "message"), [
    P("configmap", "configmap references non-existent config key: zz", id="configmap"),
    P("secret", "references non-existent secret key: zz", id="secret"),
])
def test_a_missing_key_fails_the_volume(kind: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        key_payload(kind, {"a": b"1"}, [KeyToPath(key="zz", path="z")], 0o644, False)
    assert str(caught.value) == message


def test_format_map_sorts_and_quotes() -> None:
    assert format_map({"b": "2", "a": 'x"y\n'}) == 'a="x\\"y\\n"\nb="2"'
    assert format_map({}) == ""


@pytest.mark.parametrize(("path", "want"), [
    P("metadata.name", "web", id="name"),
    P("metadata.namespace", "prod", id="namespace"),
    P("metadata.uid", "u-1", id="uid"),
    P("metadata.labels", 'app="web"\ntier="front"', id="labels"),
    P("metadata.annotations", 'example.com/Key="v"\nnote="say \\"hi\\"\\n"', id="annotations"),
    P("metadata.labels['tier']", "front", id="one-label"),
    P("metadata.labels['absent']", "", id="absent-label"),
    P("metadata.annotations['example.com/Key']", "v", id="one-annotation"),
])
def test_object_fields(path: str, want: str) -> None:
    assert object_field(pod(), path) == want


@pytest.mark.parametrize(("path", "message"), [
    P("spec.nodeName", "unsupported fieldPath: spec.nodeName", id="not-a-volume-field"),
    P("metadata.name['x']", "fieldPath \"metadata.name['x']\" does not support subscript", id="subscript"),
    P("metadata.labels['-bad-']", "invalid key subscript in metadata.labels['-bad-']: ", id="bad-key"),
])
def test_object_field_errors(path: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        object_field(pod(), path)
    assert str(caught.value).startswith(message)


WHERE = PodAddresses("n1", ["10.0.0.5", "fd00::5"], ["10.0.0.5"])


@pytest.mark.parametrize(("path", "want"), [
    P("spec.nodeName", "n1", id="node"),
    P("spec.host", "n1", id="old-name"),
    P("spec.serviceAccountName", "builder", id="sa"),
    P("status.hostIP", "10.0.0.5", id="host-ip"),
    P("status.hostIPs", "10.0.0.5,fd00::5", id="host-ips"),
    P("status.podIP", "10.0.0.5", id="pod-ip"),
    P("status.podIPs", "10.0.0.5", id="pod-ips"),
    P("metadata.labels['app']", "web", id="label"),
    P("metadata.uid", "u-1", id="uid"),
])
def test_env_pod_fields(path: str, want: str) -> None:
    assert pod_field(pod(), "v1", path, WHERE) == want


@pytest.mark.parametrize(("version", "path", "message"), [
    P("v2", "metadata.name", "unsupported pod version: v2", id="version"),
    P("v1", "spec.containers", "field label not supported: spec.containers", id="label"),
    P("v1", "spec.nodeName['x']", "field label does not support subscript: spec.nodeName['x']", id="subscript"),
    P("v1", "status.phase", "unsupported fieldPath: status.phase", id="convertible-but-not-extracted"),
])
def test_env_pod_field_errors(version: str, path: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        pod_field(pod(), version, path, WHERE)
    assert str(caught.value) == message


def ref(resource: str, divisor: str = "0", container: str = "") -> ResourceFieldSelector:
    return ResourceFieldSelector(resource=resource, divisor=Quantity.parse(divisor), container_name=container)


@pytest.mark.parametrize(("selector", "want"), [
    P(ref("limits.memory"), str(128 * 2**20), id="memory-limit"),
    P(ref("limits.memory", "1Mi"), "128", id="memory-divisor"),
    P(ref("requests.cpu"), "1", id="cpu-request-rounds-up"),
    P(ref("requests.cpu", "1m"), "250", id="cpu-millis"),
    P(ref("limits.cpu"), "4", id="cpu-limit-defaults-to-allocatable"),
    P(ref("limits.cpu", "1m"), "3500", id="allocatable-millis"),
    P(ref("limits.ephemeral-storage", "1Gi"), "90", id="ephemeral-storage-allocatable"),
    P(ref("requests.ephemeral-storage"), "0", id="unset-request"),
    P(ref("limits.hugepages-2Mi"), "0", id="hugepages"),
    P(ref("limits.cpu", "1m", "side"), "1500", id="other-container"),
])
def test_resource_values(selector: ResourceFieldSelector, want: str) -> None:
    p = pod()
    assert resource_value(p, p.spec.containers[0], selector, ALLOCATABLE, pod_level=True) == want


def test_pod_level_limits_default_env_but_not_volumes() -> None:
    p = pod(resources={"limits": {"cpu": "2"}})
    assert resource_value(p, p.spec.containers[0], ref("limits.cpu"), ALLOCATABLE, pod_level=True) == "2"
    assert resource_value(p, p.spec.containers[0], ref("limits.cpu"), ALLOCATABLE, pod_level=False) == "4"


@pytest.mark.parametrize(("selector", "message"), [
    P(ref("limits.gpu"), "unsupported container resource : limits.gpu", id="resource"),
    P(ref("limits.cpu", container="nope"), "container nope not found", id="container"),
])
def test_resource_value_errors(selector: ResourceFieldSelector, message: str) -> None:
    p = pod()
    with pytest.raises(InvalidInput) as caught:
        resource_value(p, p.spec.containers[0], selector, ALLOCATABLE, pod_level=True)
    assert str(caught.value) == message


def test_downward_payload() -> None:
    items = [DownwardAPIVolumeFile.model_validate(i) for i in (
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "./ns", "fieldRef": {"fieldPath": "metadata.namespace"}, "mode": 0o400},
        {"path": "mem", "resourceFieldRef": {"containerName": "main", "resource": "limits.memory",
                                             "divisor": "1Mi"}},
    )]
    assert downward_payload(items, pod(), 0o644, ALLOCATABLE) == {
        "labels": FileProjection(b'app="web"\ntier="front"', 0o644),
        "ns": FileProjection(b"prod", 0o400),
        "mem": FileProjection(b"128", 0o644),
    }


def test_downward_payload_names_every_failure() -> None:
    items = [DownwardAPIVolumeFile.model_validate(i) for i in (
        {"path": "a", "fieldRef": {"fieldPath": "spec.nodeName"}},
        {"path": "b", "resourceFieldRef": {"containerName": "x", "resource": "limits.cpu"}},
    )]
    with pytest.raises(InvalidInput) as caught:
        downward_payload(items, pod(), 0o644, ALLOCATABLE)
    assert str(caught.value) == "[unsupported fieldPath: spec.nodeName, container x not found]"
