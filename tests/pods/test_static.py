"""Static pod identity: name, namespace, annotations, toleration, and a UID stable across restarts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.static import (
    CONFIG_HASH,
    CONFIG_SEEN,
    CONFIG_SOURCE,
    Fnv128a,
    make_static,
    rfc3339_nano,
    static_uid,
)

P = pytest.param
PATH = "/etc/kubernetes/manifests/web.yaml"
SEEN = datetime(2026, 11, 21, 9, 3, 53, 123400, tzinfo=UTC)
MANIFEST = b"""\
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: app, image: nginx:1.25}]
"""


def decoded(data: bytes = MANIFEST) -> Pod:
    return decode_pod(data, PATH)


@pytest.mark.parametrize(
    ("data", "digest"),
    [
        P(b"", "6c62272e07bb014262b821756295c58d", id="empty"),
        P(b"a", "d228cb696f1a8caf78912b704e4a8964", id="a"),
        P(b"foobar", "343e1662793c64bf6f0d3597ba446f18", id="foobar"),
    ],
)
def test_fnv128a_vectors(data: bytes, digest: str) -> None:
    hasher = Fnv128a()
    hasher.update(data)
    assert hasher.hexdigest() == digest


def test_identity() -> None:
    pod = make_static(decoded(), "Node-1", "file", PATH, SEEN)
    meta = pod.metadata
    assert meta.name == "web-node-1"
    assert meta.namespace == "default"
    assert len(meta.uid) == 32 and int(meta.uid, 16) >= 0
    assert meta.annotations == {CONFIG_HASH: meta.uid, CONFIG_SEEN: "2026-11-21T09:03:53.1234Z", CONFIG_SOURCE: "file"}
    assert meta.labels == {"app": "web"}
    assert pod.spec.node_name == "Node-1"
    assert pod.spec.tolerations == [{"operator": "Exists", "effect": "NoExecute"}]
    assert pod.status.phase == "Pending"
    assert list(pod.to_wire()["metadata"]["annotations"]) == [CONFIG_HASH, CONFIG_SEEN, CONFIG_SOURCE]


def test_input_pod_is_not_modified() -> None:
    pod = decoded()
    make_static(pod, "node", "file", PATH, SEEN)
    assert pod.metadata.name == "web" and not pod.metadata.uid and not pod.metadata.annotations


def test_uid_is_stable_across_restarts_and_seen_times() -> None:
    first = make_static(decoded(), "node", "file", PATH, SEEN).metadata.uid
    again = make_static(decoded(), "node", "file", PATH, SEEN + timedelta(hours=1)).metadata.uid
    assert first == again == static_uid(decoded(), "node", "file", PATH)


@pytest.mark.parametrize(
    ("data", "node", "path"),
    [
        P(MANIFEST.replace(b"nginx:1.25", b"nginx:1.26"), "node", PATH, id="changed-manifest"),
        P(MANIFEST, "node", "/etc/kubernetes/manifests/other.yaml", id="other-path"),
        P(MANIFEST, "node-2", PATH, id="other-node"),
    ],
)
def test_uid_changes(data: bytes, node: str, path: str) -> None:
    base = static_uid(decoded(), "node", "file", PATH)
    assert static_uid(decoded(data), node, "file", path) != base


def test_http_pods_hash_the_url_only() -> None:
    url = "http://config.example/pods"
    a = make_static(decoded(), "node-a", "http", url, SEEN)
    b = make_static(decoded(), "node-b", "http", url, SEEN)
    assert a.metadata.uid == b.metadata.uid != static_uid(decoded(), "node-a", "file", url)
    assert a.metadata.annotations[CONFIG_SOURCE] == "http"
    assert a.spec.tolerations == []


def test_manifest_uid_and_namespace_are_kept() -> None:
    data = MANIFEST.replace(b"name: web,", b"name: web, uid: fixed-uid, namespace: kube-system,")
    pod = make_static(decoded(data), "node", "file", PATH, SEEN)
    assert pod.metadata.uid == "fixed-uid"
    assert pod.metadata.annotations[CONFIG_HASH] == "fixed-uid"
    assert pod.metadata.namespace == "kube-system"


def test_existing_toleration_is_updated_not_duplicated() -> None:
    data = MANIFEST + b"  tolerations: [{operator: Exists, effect: NoExecute, tolerationSeconds: 5}, {key: a}]\n"
    pod = make_static(decoded(data), "node", "file", PATH, SEEN)
    assert pod.spec.tolerations == [{"operator": "Exists", "effect": "NoExecute"}, {"key": "a"}]


def test_generated_name_must_be_valid() -> None:
    data = MANIFEST.replace(b"name: web,", b"name: " + b"w" * 250 + b",")
    with pytest.raises(InvalidInput) as err:
        make_static(decoded(data), "node", "file", PATH, SEEN)
    assert str(err.value).startswith(f"{PATH}: invalid pod: metadata.name: Invalid value: ")
    assert str(err.value).endswith("must be no more than 253 characters")


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        P(datetime(2026, 11, 21, 9, 3, 53, tzinfo=UTC), "2026-11-21T09:03:53Z", id="whole-seconds"),
        P(datetime(2026, 11, 21, 9, 3, 53, 500000, tzinfo=UTC), "2026-11-21T09:03:53.5Z", id="trimmed-fraction"),
        P(datetime(2026, 11, 21, 9, 3, 53, 1, tzinfo=UTC), "2026-11-21T09:03:53.000001Z", id="micro"),
        P(
            datetime(2026, 11, 21, 9, 3, 53, tzinfo=timezone(timedelta(hours=2))),
            "2026-11-21T09:03:53+02:00",
            id="offset",
        ),
        P(
            datetime(2026, 11, 21, 9, 3, 53, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
            "2026-11-21T09:03:53-05:30",
            id="negative-offset",
        ),
        P(datetime(2026, 11, 21, 9, 3, 53), "2026-11-21T09:03:53Z", id="naive-is-utc"),
    ],
)
def test_rfc3339_nano(moment: datetime, text: str) -> None:
    assert rfc3339_nano(moment) == text


def test_unknown_source_kind() -> None:
    with pytest.raises(ValueError, match="unknown static pod source kind"):
        make_static(decoded(), "node", "api", PATH, SEEN)  # type: ignore[arg-type]
