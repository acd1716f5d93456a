"""Volumes from the API server, through PodVolumes as the syncer calls it: the directories and
files the kubelet leaves, the kube-api-access projection, updates, failures and their messages,
what a pod registers, and the standalone node's refusal."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import Quantity
from kubeletapi.clock import FakeClock
from kubeletapi.errors import NotFound
from kubeletapi.pods.apivolumes import ApiVolumes
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.tokens import TokenSpec
from kubeletapi.pods.volumes import PodVolumes, VolumeError

Json = dict[str, Any]


class FakeReader:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.objects: dict[tuple[str, str], Json] = {}
        self.refs: dict[str, tuple[str, set[str]]] = {}

    def set_references(self, pod_uid: str, namespace: str, names: set[str]) -> None:
        self.refs[pod_uid] = (namespace, set(names))

    def forget(self, pod_uid: str) -> None:
        self.refs.pop(pod_uid, None)

    async def get(self, namespace: str, name: str) -> Json:
        if (namespace, name) not in self.objects:
            raise NotFound(f'{self.kind} "{name}" not found')
        return self.objects[(namespace, name)]


class FakeTokens:
    def __init__(self) -> None:
        self.asked: list[TokenSpec] = []
        self.forgotten: list[str] = []

    async def token(self, spec: TokenSpec) -> str:
        self.asked.append(spec)
        return f"jwt-{len(self.asked)}"

    def forget(self, pod_uid: str) -> None:
        self.forgotten.append(pod_uid)


class Setup:
    def __init__(self, tmp: Path, *, standalone: bool = False) -> None:
        self.node = NodeEnv("n1", "10.0.0.5", tmp, tmp / "logs", memory_capacity=8 << 30, cpu_capacity_milli=4000)
        self.configmaps = FakeReader("configmap")
        self.secrets = FakeReader("secret")
        self.tokens = FakeTokens()
        self.clock = FakeClock(start=1_700_000_000.0)
        api = ApiVolumes(self.node, self.configmaps, self.secrets, self.tokens,
                         lambda: {"memory": Quantity.parse("6Gi")}, self.clock, self.refuse)
        self.volumes = PodVolumes(self.node, run=self.refuse, api=None if standalone else api)

    @staticmethod
    def refuse(argv: list[str]) -> None:
        raise AssertionError(f"not root: nothing to mount ({argv})")

    def setup(self, pod: Pod) -> dict[str, Any]:
        return asyncio.run(self.volumes.setup(pod))


def pod(*volumes: Json, **spec: Any) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-1", "labels": {"app": "web"}},
        "spec": {"serviceAccountName": "builder", "volumes": list(volumes),
                 "containers": [{"name": "main", "image": "i"}], **spec},
    })


def read(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir()) if not p.name.startswith("..")}


KUBE_API_ACCESS = {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1",
                                                                 "fieldPath": "metadata.namespace"}}]}},
]}}


def test_the_kube_api_access_projection(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.configmaps.objects[("ns", "kube-root-ca.crt")] = {"data": {"ca.crt": "PEM"}}
    mounts = s.setup(pod(KUBE_API_ACCESS))
    mount = mounts["kube-api-access-x7k2p"]
    path = tmp_path / "pods/uid-1/volumes/kubernetes.io~projected/kube-api-access-x7k2p"
    assert (mount.host_path, mount.readonly) == (str(path), True)
    assert read(path) == {"ca.crt": "PEM", "namespace": "ns", "token": "jwt-1"}
    assert os.readlink(path / "token") == "..data/token"
    assert (path / "token").stat().st_mode & 0o777 == 0o644
    assert s.tokens.asked == [TokenSpec("ns", "builder", (), 3607, "web", "uid-1")]


def test_configmap_secret_and_downward_volumes(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.configmaps.objects[("ns", "cfg")] = {"data": {"a.conf": "x=1", "b.conf": "y=2"}}
    s.secrets.objects[("ns", "creds")] = {"data": {"pw": base64.b64encode(b"hunter2").decode()}}
    mounts = s.setup(pod(
        {"name": "config", "configMap": {"name": "cfg", "items": [{"key": "a.conf", "path": "app/a.conf"}],
                                         "defaultMode": 0o440}},
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
        {"name": "info", "downwardAPI": {"defaultMode": 0o644, "items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "mem", "resourceFieldRef": {"containerName": "main", "resource": "limits.memory",
                                                 "divisor": "1Gi"}}]}},
    ))
    base = tmp_path / "pods/uid-1/volumes"
    assert {n: Path(m.host_path).relative_to(base).as_posix() for n, m in mounts.items()} == {
        "config": "kubernetes.io~configmap/config", "creds": "kubernetes.io~secret/creds",
        "info": "kubernetes.io~downward-api/info"}
    assert (base / "kubernetes.io~configmap/config/app/a.conf").read_text() == "x=1"
    assert (base / "kubernetes.io~configmap/config/app/a.conf").stat().st_mode & 0o777 == 0o440
    assert read(base / "kubernetes.io~secret/creds") == {"pw": "hunter2"}
    assert read(base / "kubernetes.io~downward-api/info") == {"labels": 'app="web"', "mem": "6"}  # allocatable


def test_an_update_swaps_the_data_in_place(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.configmaps.objects[("ns", "cfg")] = {"data": {"k": "1"}}
    volume = {"name": "config", "configMap": {"name": "cfg"}}
    s.setup(pod(volume))
    path = tmp_path / "pods/uid-1/volumes/kubernetes.io~configmap/config"
    first = os.readlink(path / "..data")
    s.configmaps.objects[("ns", "cfg")] = {"data": {"k": "2", "new": "3"}}
    s.setup(pod(volume))
    assert read(path) == {"k": "2", "new": "3"}
    assert os.readlink(path / "..data") != first and not (path / first).exists()


def test_a_missing_object_fails_with_the_kubelets_message_and_backs_off(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    p = pod({"name": "config", "configMap": {"name": "absent"}}, {"name": "scratch", "emptyDir": {}})
    retries = []
    for _ in range(3):
        with pytest.raises(VolumeError) as caught:
            s.setup(p)
        retries.append(caught.value.retry_s)
    assert str(caught.value) == 'MountVolume.SetUp failed for volume "config" : configmap "absent" not found'
    assert retries == [0.5, 1.0, 2.0]
    assert (tmp_path / "pods/uid-1/volumes/kubernetes.io~empty-dir/scratch").is_dir()  # the others still set up
    assert not (tmp_path / "pods/uid-1/volumes/kubernetes.io~configmap").exists()
    s.configmaps.objects[("ns", "absent")] = {"data": {}}
    assert "config" in s.setup(p)


def test_optional_sources_may_be_missing(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    mounts = s.setup(pod(
        {"name": "config", "configMap": {"name": "absent", "optional": True,
                                         "items": [{"key": "k", "path": "k"}]}},
        {"name": "both", "projected": {"sources": [{"secret": {"name": "absent", "optional": True}}]}},
    ))
    assert read(Path(mounts["config"].host_path)) == {}
    assert read(Path(mounts["both"].host_path)) == {}


def test_a_projection_names_every_failing_source(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    with pytest.raises(VolumeError) as caught:
        s.setup(pod({"name": "p", "projected": {"sources": [
            {"configMap": {"name": "gone"}}, {"secret": {"name": "gone-too"}}]}}))
    assert str(caught.value) == ('MountVolume.SetUp failed for volume "p" : '
                                 '[configmap "gone" not found, secret "gone-too" not found]')


def test_unsupported_volume_kinds(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    with pytest.raises(VolumeError) as caught:
        s.setup(pod({"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                    {"name": "drv", "csi": {"driver": "x"}}))
    assert str(caught.value) == (
        'MountVolume.SetUp failed for volume "data" : persistentVolumeClaim volumes are not supported by kubeletapi '
        "(it mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes); "
        'MountVolume.SetUp failed for volume "drv" : csi volumes are not supported by kubeletapi '
        "(it mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes)")
    assert caught.value.retry_s is None  # the syncer's own retry


def test_standalone_nodes_say_an_api_server_is_needed(tmp_path: Path) -> None:
    s = Setup(tmp_path, standalone=True)
    with pytest.raises(VolumeError) as caught:
        s.setup(pod(KUBE_API_ACCESS))
    assert str(caught.value) == (
        'MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : projected volumes need an API server, '
        'and kubeletapi runs standalone '
        "(no --kubeconfig): only emptyDir and hostPath volumes can be mounted")


def test_references_are_registered_and_forgotten(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.configmaps.objects[("ns", "kube-root-ca.crt")] = {"data": {"ca.crt": "PEM"}}
    env = [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a"}}},
           {"name": "B", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "b"}}}]
    p = pod(KUBE_API_ACCESS, imagePullSecrets=[{"name": "regcred"}],
            containers=[{"name": "main", "image": "i", "env": env, "envFrom": [{"configMapRef": {"name": "all"}}]}])
    s.setup(p)
    assert s.configmaps.refs["uid-1"] == ("ns", {"kube-root-ca.crt", "env-cm", "all"})
    assert s.secrets.refs["uid-1"] == ("ns", {"env-secret", "regcred"})
    asyncio.run(s.volumes.teardown("uid-1"))
    assert s.configmaps.refs == {} and s.secrets.refs == {} and s.tokens.forgotten == ["uid-1"]
    assert not (tmp_path / "pods/uid-1").exists()


def test_volume_counts_by_plugin_desired_and_actual(tmp_path: Path) -> None:
    """volume_manager_total_volumes' figures: every volume the pod asks for is desired, those set up
    are actual (the kubelet's desired and actual states of the world); teardown forgets both."""
    s = Setup(tmp_path, standalone=True)
    with pytest.raises(VolumeError):
        s.setup(pod({"name": "scratch", "emptyDir": {}}, {"name": "host", "hostPath": {"path": str(tmp_path)}},
                    KUBE_API_ACCESS))
    desired, actual = "desired_state_of_world", "actual_state_of_world"
    assert s.volumes.counts() == {
        ("kubernetes.io/empty-dir", desired): 1, ("kubernetes.io/empty-dir", actual): 1,
        ("kubernetes.io/host-path", desired): 1, ("kubernetes.io/host-path", actual): 1,
        ("kubernetes.io/projected", desired): 1,  # no API server: never set up
    }
    asyncio.run(s.volumes.teardown("uid-1"))
    assert s.volumes.counts() == {}
