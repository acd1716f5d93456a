"""Manifest decoding: YAML/JSON loading, unknown fields, defaults, validation messages, wire form."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubeletapi.api.core_v1 import (
    ContainerPort,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    HostIP,
    Pod,
    PodCondition,
    PodIP,
    PodList,
    PodStatus,
)
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.manifest import ManifestError, decode_pod, decode_pod_list, image_tag

P = pytest.param
SRC = "/etc/kubernetes/manifests/web.yaml"
DELETE = object()
LABEL_RE = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    f"with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{LABEL_RE}')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
KEY_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"
ENV_FIELDS = (
    '"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
    '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'
)

BASE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.25",
                "ports": [{"name": "http", "containerPort": 80}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
    },
}


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    target: Any = doc
    for part in parts[:-1]:
        target = target[part]
    if value is DELETE:
        del target[parts[-1]]
    else:
        target[parts[-1]] = value


def pod_with(*changes: tuple[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for path, value in changes:
        _set(doc, path, value)
    return doc


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def problems_of(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ManifestError) as err:
        decode_pod(encode(doc), SRC)
    assert str(err.value).startswith(f"{SRC}: ")
    return err.value.problems


C0 = "spec.containers[0]"


# --- validation: one case per rule, with the exact Kubernetes message ---------------------------------

VALIDATION_CASES = [
    P(
        [("metadata.name", DELETE)],
        ["metadata.name: Required value: name or generateName is required"],
        id="name-required",
    ),
    P([("metadata.name", "Web")], [f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'], id="name-subdomain"),
    P(
        [("metadata.name", "a" * 254)],
        [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
        id="name-too-long",
    ),
    P(
        [("metadata.namespace", "Kube_System")],
        [f'metadata.namespace: Invalid value: "Kube_System": {LABEL_MSG}'],
        id="ns-label",
    ),
    P(
        [("metadata.namespace", "a.b")],
        ['metadata.namespace: Invalid value: "a.b": must not contain dots'],
        id="ns-dots",
    ),
    P([("metadata.labels", {"-bad": "x"})], [f'metadata.labels: Invalid value: "-bad": {KEY_MSG}'], id="label-key"),
    P(
        [("metadata.labels", {"/x": "y"})],
        ['metadata.labels: Invalid value: "/x": prefix part must be non-empty'],
        id="label-key-empty-prefix",
    ),
    P([("metadata.labels", {"app": "a b"})], [f'metadata.labels: Invalid value: "a b": {VALUE_MSG}'], id="label-value"),
    P(
        [("metadata.labels", {"app": "v" * 64})],
        [f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 characters'],
        id="label-value-too-long",
    ),
    P(
        [("metadata.annotations", {"a/b/c": "x"})],
        [
            'metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ],
        id="annotation-key",
    ),
    P(
        [("metadata.annotations", {"big": "x" * (256 * 1024)})],
        ["metadata.annotations: Too long: may not be more than 262144 bytes"],
        id="annotations-too-large",
    ),
    P([("spec.containers", [])], ["spec.containers: Required value"], id="containers-required"),
    P([(f"{C0}.name", DELETE)], [f"{C0}.name: Required value"], id="container-name-required"),
    P([(f"{C0}.name", "App")], [f'{C0}.name: Invalid value: "App": {LABEL_MSG}'], id="container-name-label"),
    P(
        [("spec.containers", [{"name": "a", "image": "x"}, {"name": "a", "image": "x"}])],
        ['spec.containers[1].name: Duplicate value: "a"'],
        id="container-name-duplicate",
    ),
    P(
        [("spec.initContainers", [{"name": "app", "image": "busybox"}])],
        ['spec.initContainers[0].name: Duplicate value: "app"'],
        id="init-container-name-duplicate",
    ),
    P([(f"{C0}.image", DELETE)], [f"{C0}.image: Required value"], id="image-required"),
    P(
        [(f"{C0}.image", " nginx")],
        [f'{C0}.image: Invalid value: " nginx": must not have leading or trailing whitespace'],
        id="image-whitespace",
    ),
    P(
        [(f"{C0}.ports[0].containerPort", 70000)],
        [f"{C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}"],
        id="port-range",
    ),
    P([(f"{C0}.ports[0].containerPort", DELETE)], [f"{C0}.ports[0].containerPort: Required value"], id="port-required"),
    P(
        [(f"{C0}.ports[0].hostPort", -1)],
        [f"{C0}.ports[0].hostPort: Invalid value: -1: {PORT_RANGE}"],
        id="host-port-range",
    ),
    P(
        [(f"{C0}.ports[0].protocol", "HTTP")],
        [f'{C0}.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'],
        id="protocol",
    ),
    P(
        [(f"{C0}.ports[0].name", "a-very-long-port-name")],
        [f'{C0}.ports[0].name: Invalid value: "a-very-long-port-name": must be no more than 15 characters'],
        id="port-name-length",
    ),
    P(
        [(f"{C0}.ports[0].name", "Http")],
        [
            f'{C0}.ports[0].name: Invalid value: "Http": '
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
        ],
        id="port-name-charset",
    ),
    P(
        [(f"{C0}.ports[0].name", "8080")],
        [f'{C0}.ports[0].name: Invalid value: "8080": must contain at least one letter (a-z)'],
        id="port-name-letter",
    ),
    P(
        [(f"{C0}.ports[0].name", "a--b")],
        [f'{C0}.ports[0].name: Invalid value: "a--b": must not contain consecutive hyphens'],
        id="port-name-hyphens",
    ),
    P(
        [(f"{C0}.ports[0].name", "-ab")],
        [f'{C0}.ports[0].name: Invalid value: "-ab": must not begin or end with a hyphen'],
        id="port-name-edge-hyphen",
    ),
    P(
        [(f"{C0}.ports", [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}])],
        [f'{C0}.ports[1].name: Duplicate value: "http"'],
        id="port-name-duplicate",
    ),
    P(
        [(f"{C0}.env", [{"name": "A=B"}])],
        [
            f'{C0}.env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable '
            "ASCII characters other than '='"
        ],
        id="env-name",
    ),
    P(
        [(f"{C0}.env", [{"name": ""}])],
        [
            f"{C0}.env[0].name: Required value",
            f'{C0}.env[0].name: Invalid value: "": environment variable name must be non-empty',
        ],
        id="env-name-empty",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {}}])],
        [
            f'{C0}.env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
            "`configMapKeyRef` or `secretKeyRef`"
        ],
        id="env-value-from-none",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])],
        [f'{C0}.env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'],
        id="env-value-and-value-from",
    ),
    P(
        [
            (
                f"{C0}.env",
                [
                    {
                        "name": "A",
                        "valueFrom": {
                            "fieldRef": {"fieldPath": "metadata.name"},
                            "secretKeyRef": {"name": "s", "key": "k"},
                        },
                    }
                ],
            )
        ],
        [f'{C0}.env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time'],
        id="env-two-sources",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.foo"}}}])],
        [
            f'{C0}.env[0].valueFrom.fieldRef.fieldPath: Invalid value: "spec.foo": error converting fieldPath: '
            "field label not supported: spec.foo"
        ],
        id="field-ref-unknown",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}])],
        [
            f'{C0}.env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": '
            f"supported values: {ENV_FIELDS}"
        ],
        id="field-ref-not-for-env",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v2"}}}])],
        [
            f'{C0}.env[0].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: '
            "unsupported pod version: v2"
        ],
        id="field-ref-version",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['-x']"}}}])],
        [f'{C0}.env[0].valueFrom.fieldRef: Invalid value: "-x": {KEY_MSG}'],
        id="field-ref-label-key",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}])],
        [
            f'{C0}.env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: '
            '"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", '
            '"requests.memory"'
        ],
        id="resource-field-ref",
    ),
    P(
        [
            (
                f"{C0}.env",
                [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1k"}}}],
            )
        ],
        [
            f'{C0}.env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor\'s values 1m '
            "and 1 are supported with the cpu resource"
        ],
        id="resource-field-ref-divisor",
    ),
    P(
        [(f"{C0}.env", [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm"}}}])],
        [f"{C0}.env[0].valueFrom.configMapKeyRef.key: Required value"],
        id="config-map-key-required",
    ),
    P(
        [(f"{C0}.envFrom", [{}])],
        [f'{C0}.envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`'],
        id="env-from-none",
    ),
    P(
        [(f"{C0}.resources", {"limits": {"gpu": "1"}})],
        [
            f'{C0}.resources.limits[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
            f'{C0}.resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers',
            f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
            f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers',
        ],
        id="resource-name",
    ),
    P(
        [(f"{C0}.resources", {"requests": {"cpu": "-1"}})],
        [f'{C0}.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
        id="quantity-negative",
    ),
    P(
        [(f"{C0}.resources", {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m"}})],
        [f'{C0}.resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1'],
        id="requests-above-limits",
    ),
    P(
        [(f"{C0}.resources", {"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})],
        [f'{C0}.resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
        id="extended-request-equals-limit",
    ),
    P(
        [(f"{C0}.resources", {"requests": {"example.com/gpu": "500m"}})],
        [
            f'{C0}.resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer',
            f"{C0}.resources.limits: Required value: Limit must be set for non overcommitable resources",
        ],
        id="extended-integer-and-limit",
    ),
    P(
        [("spec.restartPolicy", "Sometimes")],
        ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
        id="restart-policy",
    ),
    P(
        [("spec.terminationGracePeriodSeconds", -1)],
        ["spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"],
        id="grace-period",
    ),
    P(
        [("spec.dnsPolicy", "Cluster")],
        [
            'spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", '
            '"ClusterFirst", "Default", "None"'
        ],
        id="dns-policy",
    ),
    P(
        [("spec.activeDeadlineSeconds", 0)],
        ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"],
        id="active-deadline",
    ),
    P([("spec.hostname", "Web")], [f'spec.hostname: Invalid value: "Web": {LABEL_MSG}'], id="hostname"),
    P(
        [(f"{C0}.imagePullPolicy", "Sometimes")],
        [f'{C0}.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'],
        id="pull-policy",
    ),
    P(
        [("spec.volumes", [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}])],
        ['spec.volumes[1].name: Duplicate value: "data"'],
        id="volume-name-duplicate",
    ),
    P(
        [("spec.volumes", [{"name": "Data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}])],
        [f'spec.volumes[0].name: Invalid value: "Data": {LABEL_MSG}'],
        id="volume-name-label",
    ),
    P(
        [("spec.volumes[0].hostPath", {"path": "/x"})],
        [
            "spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type",
            f'{C0}.volumeMounts[0].name: Not found: "data"',
        ],
        id="volume-two-sources",
    ),
    P(
        [("spec.volumes[0]", {"name": "data", "hostPath": {"path": ""}})],
        ["spec.volumes[0].hostPath.path: Required value", 'spec.containers[0].volumeMounts[0].name: Not found: "data"'],
        id="host-path-required",
    ),
    P(
        [("spec.volumes[0]", {"name": "data", "hostPath": {"path": "/x", "type": "Dir"}})],
        [
            'spec.volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", '
            '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
            'spec.containers[0].volumeMounts[0].name: Not found: "data"',
        ],
        id="host-path-type",
    ),
    P(
        [("spec.volumes[0]", {"name": "data", "hostPath": {"path": "/var/../etc"}})],
        [
            "spec.volumes[0].hostPath.path: Invalid value: \"/var/../etc\": must not contain '..'",
            'spec.containers[0].volumeMounts[0].name: Not found: "data"',
        ],
        id="host-path-backsteps",
    ),
    P(
        [(f"{C0}.volumeMounts[0].name", "cache")],
        [f'{C0}.volumeMounts[0].name: Not found: "cache"'],
        id="mount-volume-not-found",
    ),
    P(
        [(f"{C0}.volumeMounts[0].mountPath", "data")],
        [f'{C0}.volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path'],
        id="mount-path-absolute",
    ),
    P(
        [(f"{C0}.volumeMounts", [{"name": "data", "mountPath": "/d"}, {"name": "data", "mountPath": "/d"}])],
        [f'{C0}.volumeMounts[1].mountPath: Invalid value: "/d": must be unique'],
        id="mount-path-unique",
    ),
    P(
        [(f"{C0}.volumeMounts[0].subPath", "../x")],
        [f"{C0}.volumeMounts[0].subPath: Invalid value: \"../x\": must not contain '..'"],
        id="sub-path-backsteps",
    ),
    P(
        [(f"{C0}.livenessProbe", {"periodSeconds": 5})],
        [f"{C0}.livenessProbe: Required value: must specify a handler type"],
        id="probe-no-handler",
    ),
    P(
        [(f"{C0}.livenessProbe", {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}})],
        [f"{C0}.livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"],
        id="probe-two-handlers",
    ),
    P(
        [(f"{C0}.readinessProbe", {"exec": {"command": ["true"]}, "initialDelaySeconds": -1})],
        [f"{C0}.readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"],
        id="probe-negative",
    ),
    P(
        [(f"{C0}.readinessProbe", {"exec": {"command": ["true"]}, "failureThreshold": -3})],
        [f"{C0}.readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0"],
        id="probe-threshold",
    ),
    P(
        [(f"{C0}.livenessProbe", {"exec": {"command": ["true"]}, "successThreshold": 2})],
        [f"{C0}.livenessProbe.successThreshold: Invalid value: 2: must be 1"],
        id="liveness-success-threshold",
    ),
    P(
        [(f"{C0}.readinessProbe", {"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 5})],
        [f"{C0}.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"],
        id="readiness-grace",
    ),
    P(
        [(f"{C0}.livenessProbe", {"exec": {"command": []}})],
        [f"{C0}.livenessProbe.exec.command: Required value"],
        id="exec-command-required",
    ),
    P(
        [(f"{C0}.livenessProbe", {"httpGet": {"port": 0}})],
        [f"{C0}.livenessProbe.httpGet.port: Invalid value: 0: {PORT_RANGE}"],
        id="http-get-port",
    ),
    P(
        [(f"{C0}.startupProbe", {"tcpSocket": {"port": "HTTP"}})],
        [
            f'{C0}.startupProbe.tcpSocket.port: Invalid value: "HTTP": must contain only alpha-numeric characters '
            "(a-z, 0-9), and hyphens (-)",
            f'{C0}.startupProbe.tcpSocket.port: Invalid value: "HTTP": must contain at least one letter (a-z)',
        ],
        id="tcp-port-name",
    ),
    P(
        [(f"{C0}.livenessProbe", {"grpc": {"port": 70000}})],
        [f"{C0}.livenessProbe.grpc.port: Invalid value: 70000: {PORT_RANGE}"],
        id="grpc-port",
    ),
    P(
        [(f"{C0}.livenessProbe", {"httpGet": {"port": 80, "scheme": "FTP"}})],
        [f'{C0}.livenessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"'],
        id="http-get-scheme",
    ),
    P(
        [(f"{C0}.lifecycle", {"preStop": {}})],
        [f"{C0}.lifecycle.preStop: Required value: must specify a handler type"],
        id="lifecycle-no-action",
    ),
    P(
        [(f"{C0}.lifecycle", {"postStart": {"exec": {"command": ["a"]}, "sleep": {"seconds": 1}}})],
        [f"{C0}.lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"],
        id="lifecycle-two-actions",
    ),
    P(
        [(f"{C0}.lifecycle", {"preStop": {"sleep": {"seconds": 60}}})],
        [
            f"{C0}.lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than "
            "terminationGracePeriodSeconds (30)"
        ],
        id="lifecycle-sleep",
    ),
    P(
        [
            (
                "spec.initContainers",
                [{"name": "init", "image": "busybox", "livenessProbe": {"exec": {"command": ["a"]}}}],
            )
        ],
        [
            "spec.initContainers[0].livenessProbe: Forbidden: "
            "may not be set for init containers without restartPolicy=Always"
        ],
        id="init-probe",
    ),
    P(
        [("spec.initContainers", [{"name": "init", "image": "busybox", "restartPolicy": "Never"}])],
        ['spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"'],
        id="init-restart-policy",
    ),
    P(
        [(f"{C0}.restartPolicy", "Always")],
        [f"{C0}.restartPolicy: Forbidden: may not be set for non-init containers"],
        id="container-restart-policy",
    ),
    P(
        [("spec.hostNetwork", True), (f"{C0}.ports[0].hostPort", 8080)],
        [f"{C0}.ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"],
        id="host-network-ports",
    ),
    P(
        [
            (
                "spec.containers",
                [
                    {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]},
                    {"name": "b", "image": "x", "ports": [{"containerPort": 81, "hostPort": 8080}]},
                ],
            )
        ],
        ['spec.containers[1].ports[0].hostPort: Duplicate value: "/TCP/8080"'],
        id="host-port-conflict",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), VALIDATION_CASES)
def test_validation(changes: list[tuple[str, Any]], expected: list[str]) -> None:
    assert problems_of(pod_with(*changes)) == expected


def test_error_message_lists_every_problem_after_the_source() -> None:
    doc = pod_with((f"{C0}.ports[0].containerPort", 70000), ("spec.restartPolicy", "Sometimes"))
    with pytest.raises(InvalidInput) as err:
        decode_pod(encode(doc), SRC)
    assert str(err.value) == (
        f"{SRC}: invalid pod: {C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}; "
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    )


def containers(n: int, prefix: str = "c") -> list[dict[str, Any]]:
    return [{"name": f"{prefix}{i}", "image": "busybox:1.36", "command": ["true"]} for i in range(n)]


@pytest.mark.parametrize(
    ("apps", "inits", "expected"),
    [
        P(256, 0, [], id="at-the-limit"),
        P(200, 56, [], id="init-and-app-at-the-limit"),
        P(257, 0, ["spec.containers: Too many: 257: must have at most 256 items "
                   "(init, app and ephemeral containers together)"], id="one-over"),
        P(10_000, 5, ["spec.containers: Too many: 10005: must have at most 256 items "
                      "(init, app and ephemeral containers together)"], id="ten-thousand"),
    ],
)
def test_containers_per_pod_limit(apps: int, inits: int, expected: list[str]) -> None:
    doc = pod_with(("spec.containers", containers(apps)), ("spec.initContainers", containers(inits, "i")))
    if expected:
        assert problems_of(doc) == expected
    else:
        assert len(decode_pod(encode(doc), SRC).spec.containers) == apps


def test_echoed_values_and_problem_lists_are_bounded() -> None:
    passwd = b"root:x:0:0:root:/root:/bin/bash\n" * 200  # e.g. a manifest symlinked to /etc/passwd
    with pytest.raises(ManifestError) as err:
        decode_pod(passwd, SRC)
    text = str(err.value)
    assert len(text) < 512 and "more characters" in text and text.startswith(f"{SRC}: invalid pod: ")
    many = pod_with(("spec.containers", [{"name": f"Bad{i}", "image": "x", "command": ["true"]} for i in range(40)]))
    with pytest.raises(ManifestError) as err:
        decode_pod(encode(many), SRC)
    assert len(err.value.problems) == 40  # every problem is kept...
    assert str(err.value).endswith("; and 20 more problems")  # ...the message lists twenty


# --- kind, apiVersion and decoding errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        P([("kind", "Deployment")], ['kind: Unsupported value: "Deployment": supported values: "Pod"'], id="kind"),
        P([("kind", DELETE)], ["kind: Required value"], id="kind-missing"),
        P(
            [("apiVersion", "apps/v1")],
            ['apiVersion: Unsupported value: "apps/v1": supported values: "v1"'],
            id="version",
        ),
        P(
            [(f"{C0}.ports[0].containerPort", "80")],
            [f'{C0}.ports[0].containerPort: Invalid value: "80": must be an integer'],
            id="string-for-int",
        ),
        P([("spec.hostNetwork", "true")], ['spec.hostNetwork: Invalid value: "true": must be a boolean'], id="bool"),
        P(
            [("metadata.labels", {"version": 1})],
            ['metadata.labels: Invalid value: {"version":1}: must be a map of strings to strings'],
            id="label-number",
        ),
        P(
            [(f"{C0}.resources", {"limits": {"memory": "64MB"}})],
            [
                f'{C0}.resources.limits[memory]: Invalid value: "64MB": quantities must match the regular expression '
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            ],
            id="quantity",
        ),
        P(
            [(f"{C0}.resources", {"limits": {"memory": "1e"}})],
            [f'{C0}.resources.limits[memory]: Invalid value: "1e": unable to parse quantity\'s suffix'],
            id="quantity-suffix",
        ),
        P(
            [(f"{C0}.ports[0].containerPort", 2**40)],
            [
                f"{C0}.ports[0].containerPort: Invalid value: {2**40}: "
                "must be between -2147483648 and 2147483647, inclusive"
            ],
            id="int32-overflow",
        ),
        P(
            [("metadata.creationTimestamp", "yesterday")],
            [
                'metadata.creationTimestamp: Invalid value: "yesterday": '
                "must be an RFC 3339 date-time such as 2006-01-02T15:04:05Z"
            ],
            id="time",
        ),
        P(
            [("spec.containers", {"name": "a"})],
            ['spec.containers: Invalid value: {"name":"a"}: must be a list'],
            id="list",
        ),
    ],
)
def test_decode_errors(changes: list[tuple[str, Any]], expected: list[str]) -> None:
    assert problems_of(pod_with(*changes)) == expected


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        P([("specs", {})], ["specs: unknown field"], id="top-level"),
        P([("metadata.nam", "x")], ["metadata.nam: unknown field"], id="metadata"),
        P([(f"{C0}.comand", ["x"])], [f"{C0}.comand: unknown field"], id="container"),
        P([(f"{C0}.ports[0].containerport", 80)], [f"{C0}.ports[0].containerport: unknown field"], id="port"),
        P(
            [(f"{C0}.livenessProbe", {"httpGet": {"port": 80, "paht": "/x"}})],
            [f"{C0}.livenessProbe.httpGet.paht: unknown field"],
            id="probe-action",
        ),
        P([("spec.volumes[0].hostpath", {"path": "/x"})], ["spec.volumes[0].hostpath: unknown field"], id="volume"),
        P([("spec.securityContext", {"runAsUsr": 1})], ["spec.securityContext.runAsUsr: unknown field"], id="opaque"),
        P(
            [(f"{C0}.securityContext", {"capabilities": {"ad": ["NET_ADMIN"]}})],
            [f"{C0}.securityContext.capabilities.ad: unknown field"],
            id="opaque-nested",
        ),
        P(
            [
                (
                    "spec.affinity",
                    {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operater": "In"}]}]
                            }
                        }
                    },
                )
            ],
            [
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                ".matchExpressions[0].operater: unknown field"
            ],
            id="opaque-deep",
        ),
        P(
            [("spec.tolerations", [{"efect": "NoSchedule"}])],
            ["spec.tolerations[0].efect: unknown field"],
            id="toleration",
        ),
        P(
            [
                (
                    "spec.volumes[0]",
                    {"name": "data", "secret": {"secretName": "s", "items": [{"kee": "a", "path": "b"}]}},
                )
            ],
            ["spec.volumes[0].secret.items[0].kee: unknown field"],
            id="volume-source",
        ),
        P([("status", {"phas": "Running"})], ["status.phas: unknown field"], id="status"),
        P(
            [("spec.tolerations", ["NoSchedule"])],
            ['spec.tolerations[0]: Invalid value: "NoSchedule": must be an object'],
            id="opaque-scalar",
        ),
        P(
            [(f"{C0}.comand", ["x"]), (f"{C0}.ports[0].containerPort", 70000)],
            [f"{C0}.comand: unknown field", f"{C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}"],
            id="with-validation-errors",
        ),
        P(
            [("spec.container_name", "x")],
            ["spec.container_name: unknown field"],
            id="python-names-are-not-wire-names",
        ),
    ],
)
def test_unknown_fields(changes: list[tuple[str, Any]], expected: list[str]) -> None:
    assert problems_of(pod_with(*changes)) == expected


# --- YAML and JSON loading -------------------------------------------------------------------------------

VALID_YAML = b"""\
# a static pod
apiVersion: v1
kind: Pod
metadata:
  name: web
  creationTimestamp: 2024-01-02T03:04:05Z
spec:
  containers:
  - name: app
    image: nginx
    env: &env
    - {name: MODE, value: "on"}
  initContainers:
  - name: init
    image: busybox
    env: *env
"""

BOMB = b"""\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


def test_yaml_with_anchors_and_timestamps() -> None:
    pod = decode_pod(VALID_YAML, SRC)
    assert pod.spec.init_containers[0].env[0].value == "on"
    wire = pod.to_wire()
    assert wire["metadata"]["creationTimestamp"] == "2024-01-02T03:04:05Z"
    assert "kind" not in wire and "apiVersion" not in wire


@pytest.mark.parametrize(
    ("data", "message"),
    [
        P(b"", f"{SRC}: invalid document: the manifest is empty", id="empty"),
        P(b"# only a comment\n", f"{SRC}: invalid document: the manifest is empty", id="comment-only"),
        P(b"kind: Pod\n---\nkind: Pod\n", f"{SRC}: invalid document: expected one document, found 2", id="multi-doc"),
        P(BOMB, f"{SRC}: invalid document: document contains excessive aliasing", id="yaml-bomb"),
        P(b"a: &a [*a]\n", f"{SRC}: invalid document: document contains a recursive alias", id="recursive-alias"),
        P(
            b"kind: Pod\nkind: Pod\n",
            f"{SRC}: invalid document: found duplicate key 'kind' at line 2, column 1",
            id="dup-yaml",
        ),
        P(b'{"kind": "Pod", "kind": "Pod"}', f"{SRC}: invalid document: found duplicate key 'kind'", id="dup-json"),
        P(b'{"a": NaN}', f"{SRC}: invalid document: NaN is not valid JSON", id="json-nan"),
        P(b'{"a": ', f"{SRC}: invalid JSON: Expecting value at line 1, column 7", id="json-syntax"),
        P(b"\xff\xfe", f"{SRC}: unreadable manifest: not valid UTF-8 (invalid start byte at byte 0)", id="not-utf8"),
        P(
            b"- a\n- b\n",
            f'{SRC}: invalid pod: <document>: Invalid value: ["a","b"]: must be a Pod object',
            id="not-a-map",
        ),
        P(b"!!binary aGVsbG8=\n", f"{SRC}: invalid document: : unsupported YAML value of type bytes", id="binary"),
    ],
)
def test_document_errors(data: bytes, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        decode_pod(data, SRC)
    assert str(err.value) == message


def test_yaml_syntax_error_has_its_position() -> None:
    with pytest.raises(ManifestError) as err:
        decode_pod(b"a: 1\n  b: 2\n", SRC)
    # libyaml says "in this context", the pure-Python parser "here".
    assert re.fullmatch(
        rf"{re.escape(SRC)}: invalid document: mapping values are not allowed .* at line 2, column 4", str(err.value)
    )


def test_trailing_document_separator_is_fine() -> None:
    data = b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\n"
    assert decode_pod(data, SRC).metadata.name == "a"


# --- PodList --------------------------------------------------------------------------------------------


def test_pod_list() -> None:
    second = pod_with(("metadata.name", "db"))
    doc = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [copy.deepcopy(BASE), second]}
    pods = decode_pod_list(encode(doc), "http://example.test/pods")
    assert [p.metadata.name for p in pods] == ["web", "db"]


def test_pod_list_accepts_a_single_pod() -> None:
    assert [p.metadata.name for p in decode_pod_list(encode(BASE), "http://x")] == ["web"]


def test_pod_list_errors_name_the_item() -> None:
    bad = pod_with((f"{C0}.ports[0].containerPort", 0))
    doc = {"kind": "PodList", "apiVersion": "v1", "items": [copy.deepcopy(BASE), bad], "extra": 1}
    with pytest.raises(ManifestError) as err:
        decode_pod_list(encode(doc), "http://x")
    assert err.value.problems == [
        "extra: unknown field",
        "items[1].spec.containers[0].ports[0].containerPort: Required value",
    ]


# --- defaults and the wire form -------------------------------------------------------------------------

MINIMAL = b"""\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: kube-system}
spec:
  hostNetwork: true
  containers:
  - name: app
    image: registry.local:5000/web
    ports: [{containerPort: 8080}]
    resources: {limits: {cpu: "0.5", memory: 1024Mi}, requests: {cpu: 100u}}
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
    readinessProbe: {httpGet: {port: 8080}}
    livenessProbe: {grpc: {port: 9000}}
    lifecycle: {preStop: {httpGet: {port: 8080, path: /stop}}}
    volumeMounts: [{name: data, mountPath: /data}, {name: logs, mountPath: /logs}]
  volumes:
  - {name: data}
  - {name: logs, hostPath: {path: /var/log/web}}
  - {name: token, projected: {sources: [{serviceAccountToken: {path: token, audience: api}}]}}
  - {name: cfg, configMap: {name: cfg, optional: true}}
"""

MINIMAL_WIRE = (
    '{"metadata":{"name":"web","namespace":"kube-system"},"spec":{"volumes":['
    '{"name":"data","emptyDir":{}},{"name":"logs","hostPath":{"path":"/var/log/web","type":""}},'
    '{"name":"token","projected":{"sources":[{"serviceAccountToken":{"audience":"api","expirationSeconds":3600,'
    '"path":"token"}}],"defaultMode":420}},{"name":"cfg","configMap":{"name":"cfg","defaultMode":420,"optional":true}}],'
    '"containers":[{"name":"app","image":"registry.local:5000/web","ports":[{"hostPort":8080,"containerPort":8080,'
    '"protocol":"TCP"}],"env":[{"name":"NODE","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"spec.nodeName"}}}],'
    '"resources":{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"1m","memory":"1Gi"}},'
    '"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"logs","mountPath":"/logs"}],'
    '"livenessProbe":{"grpc":{"port":9000,"service":""},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,'
    '"failureThreshold":3},"readinessProbe":{"httpGet":{"path":"/","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,'
    '"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"lifecycle":{"preStop":{"httpGet":{"path":"/stop",'
    '"port":8080,"scheme":"HTTP"}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",'
    '"imagePullPolicy":"Always"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",'
    '"hostNetwork":true,"securityContext":{},"schedulerName":"default-scheduler","enableServiceLinks":true},"status":{}}'
)


def test_defaults_and_wire_form_golden() -> None:
    wire = decode_pod(MINIMAL, SRC).to_wire()
    assert json.dumps(wire, separators=(",", ":")) == MINIMAL_WIRE


@pytest.mark.parametrize(
    ("image", "tag", "policy"),
    [
        P("nginx", "latest", "Always", id="no-tag"),
        P("nginx:latest", "latest", "Always", id="latest"),
        P("nginx:1.25", "1.25", "IfNotPresent", id="tag"),
        P("registry.local:5000/team/web", "latest", "Always", id="registry-port-no-tag"),
        P("registry.local:5000/team/web:v2", "v2", "IfNotPresent", id="registry-port-tag"),
        P("nginx@sha256:" + "a" * 64, "", "IfNotPresent", id="digest"),
        P("nginx:1.25@sha256:" + "a" * 64, "1.25", "IfNotPresent", id="tag-and-digest"),
        P("Nginx", "", "IfNotPresent", id="invalid-reference"),
    ],
)
def test_image_pull_policy_default(image: str, tag: str, policy: str) -> None:
    assert image_tag(image) == tag
    pod = decode_pod(encode(pod_with((f"{C0}.image", image))), SRC)
    assert pod.spec.containers[0].image_pull_policy == policy


def test_explicit_values_are_not_overridden_by_defaults() -> None:
    doc = pod_with(
        ("spec.restartPolicy", "Never"),
        ("spec.terminationGracePeriodSeconds", 0),
        (f"{C0}.imagePullPolicy", "Never"),
        ("spec.enableServiceLinks", False),
        ("spec.securityContext", {"runAsUser": 1000}),
    )
    spec = decode_pod(encode(doc), SRC).to_wire()["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["enableServiceLinks"] is False
    assert spec["securityContext"] == {"runAsUser": 1000}


UNMODELLED: dict[str, Any] = {
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}}
            ]
        }
    },
    "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5}],
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
    "readinessGates": [{"conditionType": "example.com/ready"}],
    "dnsConfig": {"nameservers": ["1.1.1.1"], "options": [{"name": "ndots", "value": "2"}]},
    "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db"]}],
    "os": {"name": "linux"},
    "securityContext": {"runAsNonRoot": True, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
    "priorityClassName": "system-node-critical",
    "runtimeClassName": "runc",
    "schedulingGates": [{"name": "wait"}],
}


def test_unmodelled_fields_are_preserved_verbatim() -> None:
    doc = pod_with(*(("spec." + k, v) for k, v in UNMODELLED.items()))
    doc["spec"]["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_ADMIN"]}, "privileged": False}
    doc["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    doc["spec"]["volumes"].append({"name": "csi", "csi": {"driver": "x", "volumeAttributes": {"z": "1", "a": "2"}}})
    doc["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}]
    wire = decode_pod(encode(doc), SRC).to_wire()
    for key, value in UNMODELLED.items():
        assert wire["spec"][key] == value, key
    assert list(wire["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]) == [
        "weight",
        "podAffinityTerm",
    ]
    container = wire["spec"]["containers"][0]
    assert container["securityContext"] == {"capabilities": {"add": ["NET_ADMIN"]}, "privileged": False}
    assert container["resizePolicy"] == [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
    assert list(wire["spec"]["volumes"][1]["csi"]["volumeAttributes"]) == ["z", "a"]
    assert wire["metadata"]["ownerReferences"] == doc["metadata"]["ownerReferences"]


def _mutate(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    fn(doc)
    return doc


def test_null_values_are_zero_values() -> None:
    doc = _mutate(lambda d: d["spec"].update({"nodeSelector": None, "restartPolicy": None}))
    doc["metadata"]["labels"] = {"app": None}
    pod = decode_pod(encode(doc), SRC)
    assert pod.spec.restart_policy == "Always"
    assert pod.metadata.labels == {"app": ""}


# --- status encoding and the /pods envelope -----------------------------------------------------------

T = datetime(2026, 11, 21, 11, 3, 53, 987654, tzinfo=timezone(timedelta(hours=2)))


def _running_pod() -> Pod:
    pod = decode_pod(encode(pod_with((f"{C0}.volumeMounts", DELETE), ("spec.volumes", DELETE))), SRC)
    pod.metadata.uid = "0123"
    pod.metadata.creation_timestamp = T
    pod.status = PodStatus(
        phase="Running",
        conditions=[PodCondition(type="Ready", status="True", last_transition_time=T)],
        host_ip="10.0.0.1",
        host_ips=[HostIP(ip="10.0.0.1")],
        pod_ip="10.1.0.5",
        pod_ips=[PodIP(ip="10.1.0.5")],
        start_time=T,
        container_statuses=[
            ContainerStatus(
                name="app",
                state=ContainerState(running=ContainerStateRunning(started_at=T + timedelta(seconds=1))),
                ready=True,
                image="nginx:1.25",
                image_id="sha256:1",
                container_id="containerd://abc",
                started=True,
            ),
            ContainerStatus(
                name="job",
                state=ContainerState(
                    terminated=ContainerStateTerminated(exit_code=0, reason="Completed", finished_at=T)
                ),
                restart_count=2,
                image="busybox",
            ),
        ],
        qos_class="BestEffort",
    )
    return pod


POD_LIST_WIRE = (
    '{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"web","uid":"0123",'
    '"creationTimestamp":"2026-11-21T09:03:53Z","labels":{"app":"web"}},"spec":{"containers":[{"name":"app",'
    '"image":"nginx:1.25","ports":[{"name":"http","containerPort":80,"protocol":"TCP"}],"resources":{},'
    '"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],'
    '"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},'
    '"schedulerName":"default-scheduler","enableServiceLinks":true},"status":{"phase":"Running","conditions":[{"type":'
    '"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-21T09:03:53Z"}],"hostIP":"10.0.0.1",'
    '"hostIPs":[{"ip":"10.0.0.1"}],"podIP":"10.1.0.5","podIPs":[{"ip":"10.1.0.5"}],"startTime":"2026-11-21T09:03:53Z",'
    '"containerStatuses":[{"name":"app","state":{"running":{"startedAt":"2026-11-21T09:03:54Z"}},"lastState":{},'
    '"ready":true,"restartCount":0,"image":"nginx:1.25","imageID":"sha256:1","containerID":"containerd://abc",'
    '"started":true},{"name":"job","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":null,'
    '"finishedAt":"2026-11-21T09:03:53Z"}},"lastState":{},"ready":false,"restartCount":2,"image":"busybox",'
    '"imageID":""}],"qosClass":"BestEffort"}}]}'
)


def test_pod_list_wire_golden() -> None:
    wire = PodList(items=[_running_pod()]).to_wire()
    assert json.dumps(wire, separators=(",", ":")) == POD_LIST_WIRE


def test_empty_pod_list() -> None:
    assert PodList().to_wire() == {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}


def test_wire_round_trip_is_stable() -> None:
    wire = _running_pod().to_wire()
    assert Pod.model_validate(wire).to_wire() == wire


def test_python_names_work_for_construction() -> None:
    port = ContainerPort(container_port=80, host_ip="0.0.0.0")
    assert port.to_wire() == {"containerPort": 80, "hostIP": "0.0.0.0"}


def test_pod_list_items_need_no_type_meta() -> None:
    """Like Go decoding a v1.PodList: the list's kind types its items; a wrong item kind is still an error."""
    from kubeletapi.pods.manifest import decode_pod_list

    def item(name: str) -> str:
        return '{"metadata":{"name":"' + name + '"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}'

    body = '{"kind":"PodList","apiVersion":"v1","items":[' + item("a") + "," + item("b") + "]}"
    assert [p.metadata.name for p in decode_pod_list(body.encode(), "u")] == ["a", "b"]
    wrong = body.replace('{"metadata":{"name":"b"}', '{"kind":"Service","metadata":{"name":"b"}')
    with pytest.raises(Exception, match=r"items\[1\]\.kind: Unsupported value"):
        decode_pod_list(wrong.encode(), "u")
