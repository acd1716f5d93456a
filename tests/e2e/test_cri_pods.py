"""Pods on containerd end to end: a real agent with --container-runtime=remote on the session's
private containerd (tests/cri/fixtures.py), real busybox images, real clients.

One agent (module scope, housekeeping every second) runs:
- `bb-testnode`: `main` ticks a line every 0.2 s; its readiness probe waits for /tmp/ready;
- `crash-testnode`: `main` prints `run <n>` and exits 3 (restartPolicy Always: CrashLoopBackOff);
- `oom-testnode`: `main` doubles a shell string under a 32 MiB limit (restartPolicy Never);
- `liveness-testnode`: `main` sleeps; its liveness probe fails once /tmp/sick exists.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import Configuration
from kubernetes.stream.ws_client import WSClient, get_websocket_url

from tests.cri.cleanup import cgroup_dirs, list_sandboxes, purge_cri
from tests.cri.fixtures import CRIEnv
from tests.helpers import Agent, agent_args
from tests.podtools import manifest, pods, polled, status_of, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.cri]

IMAGE = "localhost/busybox:latest"


def bb(name: str, command: list[str], extra: str = "") -> str:
    cmd = ", ".join(json.dumps(c) for c in command)
    body = f"- name: {name}\n  image: {IMAGE}\n  imagePullPolicy: IfNotPresent\n  command: [{cmd}]\n"
    return body + "".join(f"  {line}\n" for line in extra.strip().splitlines()) if extra else body


TICKER = ["sh", "-c", "echo started; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"]
PROBE_READY = """readinessProbe:
  exec: {command: ["test", "-e", "/tmp/ready"]}
  periodSeconds: 1
resources: {limits: {memory: 64Mi, cpu: 500m}}
workingDir: /data
env:
- {name: GREETING, value: hello}
- name: MY_POD
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
volumeMounts:
- {name: scratch, mountPath: /data}"""
PROBE_LIVE = """livenessProbe:
  exec: {command: ["sh", "-c", "test ! -e /tmp/sick"]}
  periodSeconds: 1
  failureThreshold: 1
  terminationGracePeriodSeconds: 1"""


@dataclass
class Node:
    agent: Agent
    root: Path
    cri: CRIEnv

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    def pod(self, name: str) -> dict[str, Any] | None:
        return pods(self.agent).get(f"{name}-testnode")

    def cgroup_root(self) -> str:
        return self.agent.args[self.agent.args.index("--cgroup-root") + 1]


@pytest.fixture(scope="module")
def node(cri_env: CRIEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("cri")
    manifests = root / "manifests"
    manifests.mkdir()
    write(manifests, "bb.yaml", manifest("bb", bb("main", TICKER, PROBE_READY),
                                         spec_extra="volumes:\n- {name: scratch, emptyDir: {}}"))
    write(manifests, "crash.yaml", manifest("crash", bb("main", ["sh", "-c", "echo run; exit 3"])))
    write(manifests, "oom.yaml", manifest(
        "oom", bb("main", ["sh", "-c", "x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done"],
                  "resources: {limits: {memory: 32Mi}}"),
        spec_extra="restartPolicy: Never"))
    write(manifests, "liveness.yaml", manifest("liveness", bb("main", ["sleep", "3600"], PROBE_LIVE)))
    args = agent_args(root, "--container-runtime=remote", "--container-runtime-endpoint", cri_env.endpoint,
                      "--pod-manifest-path", str(manifests), "--housekeeping-interval", "1s")
    agent = Agent(args)
    try:
        yield Node(agent, root, cri_env)
    finally:
        try:
            agent.close()
        finally:
            purge_cri(cri_env.endpoint, args)


def running(node: Node, name: str) -> dict[str, Any] | None:
    pod = node.pod(name)
    if pod is None or pod["status"].get("phase") != "Running":
        return None
    statuses = pod["status"].get("containerStatuses", [])
    return pod if statuses and all("running" in s["state"] for s in statuses) else None


def test_busybox_pod_runs_with_the_runtimes_ids(node: Node) -> None:
    pod = wait_for(lambda: running(node, "bb"), what="bb running")
    status = status_of(pod, "main")
    assert status["containerID"].startswith("containerd://")
    assert status["image"] == IMAGE and status["imageID"].startswith(("sha256:", "localhost/busybox@sha256:"))
    cid = status["containerID"].removeprefix("containerd://")
    (sandbox,) = [s for s in list_sandboxes(node.cri.endpoint) if s.meta.uid == pod["metadata"]["uid"]]
    # The kubelet's labels, the log directory and the cgroup parent under the QoS hierarchy.
    assert sandbox.labels["io.kubernetes.pod.name"] == "bb-testnode"
    assert sandbox.labels["io.kubernetes.pod.namespace"] == "default"
    assert sandbox.labels["io.kubernetes.pod.uid"] == pod["metadata"]["uid"]
    uid = pod["metadata"]["uid"]
    assert sandbox.log_directory == str(node.root / "logs" / f"default_bb-testnode_{uid}")
    assert sandbox.cgroup_parent == f"{node.cgroup_root()}/kubepods/pod{uid}"  # Guaranteed QoS
    assert (Path("/sys/fs/cgroup/memory") / sandbox.cgroup_parent.strip("/") / cid).is_dir()
    limit = (Path("/sys/fs/cgroup/memory") / sandbox.cgroup_parent.strip("/") / "memory.limit_in_bytes").read_text()
    assert int(limit) == 64 << 20  # the pod-level limit, written by kubeletapi
    assert (Path(sandbox.log_directory) / "main" / "0.log").is_file()

    def listed() -> list[Any]:  # as the PLEG has relisted it
        with node.agent.admin() as client:
            items = client.get(node.agent.url(path="/runningpods/")).json()["items"]
        return [p for p in items if p["metadata"]["name"] == "bb-testnode"]

    (listed_pod,) = wait_for(listed, what="bb in /runningpods")
    # As the kubelet's GetRunningPods: the image as the runtime lists the container, i.e. the image
    # ID containerd reports (the oracle compares it with the real kubelet's).
    assert [(c["name"], c["image"]) for c in listed_pod["spec"]["containers"]] == [("main", status["imageID"])]


def test_container_logs_follow_and_previous(node: Node) -> None:
    wait_for(lambda: running(node, "bb"), what="bb running")
    with node.agent.admin() as client, client.stream(
        "GET", node.agent.url(path="/containerLogs/default/bb-testnode/main?follow=true&tailLines=1"),
        timeout=15) as response:
        assert response.status_code == 200
        seen: list[int] = []
        for line in response.iter_lines():
            if line.startswith("tick "):
                seen.append(int(line.split()[1]))
            if len(seen) >= 4:
                break
    assert seen == list(range(seen[0], seen[0] + 4))  # new lines arrive, in order, none lost
    crashed = wait_for(lambda: (p := node.pod("crash")) and polled(p, "main")["restartCount"] >= 1 and p,
                       timeout=30, what="crash restarted")
    last = status_of(crashed, "main")["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (3, "Error")
    with node.agent.admin() as client:
        previous = client.get(node.agent.url(path="/containerLogs/default/crash-testnode/main?previous=true"))
    assert previous.status_code == 200 and previous.text == "run\n"


def _rfc3339(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_restart_policy_backs_off(node: Node) -> None:
    """Between two restarts the container waits in CrashLoopBackOff for the announced back-off
    (10 s doubling): the next instance starts no sooner than that after the last one exited."""
    def backing_off() -> tuple[int, float, int] | None:
        pod = node.pod("crash")
        status = polled(pod, "main") if pod else None
        waiting = status["state"].get("waiting") if status else None
        if status is None or waiting is None or waiting["reason"] != "CrashLoopBackOff":
            return None
        announced = re.match(r"back-off (\d+)s restarting failed container=main pod=crash-testnode_default\(",
                             waiting["message"])
        assert announced, waiting["message"]
        last = status["lastState"]["terminated"]
        assert last["exitCode"] == 3
        return status["restartCount"], _rfc3339(last["finishedAt"]), int(announced.group(1))

    count, exited, backoff = wait_for(backing_off, timeout=40, what="crash in CrashLoopBackOff")
    assert backoff in (10, 20, 40, 80, 160, 300)

    def next_instance() -> dict[str, Any] | None:
        pod = node.pod("crash")
        status = polled(pod, "main") if pod else None
        return status if status and status["restartCount"] > count else None

    status = wait_for(next_instance, timeout=backoff + 30, what="the restart after the back-off")
    state = status["state"]
    started = (state.get("running") or state.get("terminated") or status["lastState"]["terminated"])["startedAt"]
    # RFC 3339 times here have whole seconds: allow one second of truncation on each side.
    assert _rfc3339(started) - exited >= backoff - 2
    assert status["restartCount"] == count + 1


def test_oom_killed(node: Node) -> None:
    pod = wait_for(lambda: (p := node.pod("oom")) and "terminated" in polled(p, "main")["state"] and p,
                   timeout=30, what="oom terminated")
    terminated = status_of(pod, "main")["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert pod["status"]["phase"] == "Failed"


def k8s_config(agent: Agent) -> Configuration:
    cfg = Configuration(host=agent.url())
    cfg.cert_file, cfg.key_file = str(agent.certs / "admin.crt"), str(agent.certs / "admin.key")
    cfg.ssl_ca_cert = str(agent.certs / "ca.crt")
    return cfg


def k8s_exec(node: Node, pod: str, *cmd: str) -> tuple[str, int]:
    args = "".join(f"&command={c}" for c in cmd)
    url = get_websocket_url(node.agent.url(path=f"/exec/default/{pod}/main?output=1&error=1{args}"))
    client = WSClient(k8s_config(node.agent), url, headers=None, capture_all=True)
    try:
        client.run_forever(timeout=15)
        return client.read_stdout() + client.read_stderr(), int(client.returncode)
    finally:
        client.close()
        client.sock.shutdown()


def test_exec_with_the_kubernetes_client_and_readiness(node: Node) -> None:
    pod = wait_for(lambda: running(node, "bb"), what="bb running")
    assert status_of(pod, "main")["ready"] is False  # no /tmp/ready yet
    out, code = k8s_exec(node, "bb-testnode", "hostname")
    assert code == 0 and out.strip() == os.uname().nodename  # a host-network pod: the node's hostname
    out, code = k8s_exec(node, "bb-testnode", "sh", "-c", "echo%20made;touch%20/tmp/ready;exit%205")
    assert (out, code) == ("made\n", 5)
    wait_for(lambda: (p := node.pod("bb")) and polled(p, "main")["ready"], timeout=10, what="bb ready")
    # env (a plain value and a fieldRef), working dir, an emptyDir written through to the host
    out, code = k8s_exec(node, "bb-testnode", "sh", "-c", "echo%20$GREETING%20$MY_POD%20$PWD>note;cat%20note")
    assert (out, code) == ("hello bb-testnode /data\n", 0)
    uid = pod["metadata"]["uid"]
    volume = node.root / "root" / "pods" / uid / "volumes" / "kubernetes.io~empty-dir" / "scratch"
    assert (volume / "note").read_text() == "hello bb-testnode /data\n"
    # DNS from the host's resolv.conf
    out, code = k8s_exec(node, "bb-testnode", "cat", "/etc/resolv.conf")
    host = [line.split()[1] for line in Path("/etc/resolv.conf").read_text().splitlines()
            if line.startswith("nameserver")]
    assert code == 0 and [line.split()[1] for line in out.splitlines() if line.startswith("nameserver")] == host


def test_run_uses_exec_sync(node: Node) -> None:
    wait_for(lambda: running(node, "bb"), what="bb running")
    with node.agent.admin() as client:
        answer = client.post(node.agent.url(path="/run/default/bb-testnode/main?cmd=id+-u"))  # split on spaces
        failed = client.post(node.agent.url(path="/run/default/bb-testnode/main?cmd=ls+/nonexistent"))
    assert answer.status_code == 200 and answer.text == "0\n"
    assert failed.status_code == 500 and "exited with 1" in failed.text and "nonexistent" in failed.text


def test_liveness_probe_restarts_the_container(node: Node) -> None:
    pod = wait_for(lambda: running(node, "liveness"), what="liveness running")
    first = status_of(pod, "main")["containerID"]
    out, code = k8s_exec(node, "liveness-testnode", "touch", "/tmp/sick")
    assert code == 0, out
    pod = wait_for(lambda: (p := node.pod("liveness")) and polled(p, "main")["restartCount"] >= 1 and p,
                   timeout=30, what="liveness restart")
    assert status_of(pod, "main")["containerID"] != first  # a new container (its /tmp is fresh)


def test_stats_and_metrics_for_the_pod(node: Node) -> None:
    pod = wait_for(lambda: running(node, "bb"), what="bb running")
    uid = pod["metadata"]["uid"]
    agent = node.agent

    def summary_pod() -> dict[str, Any] | None:
        agent.run(agent.kubelet.stats.housekeeper.collect())
        with agent.admin() as client:
            summary = client.get(agent.url(path="/stats/summary")).json()
        found = next((p for p in summary["pods"] if p["podRef"]["uid"] == uid), None)
        containers = found["containers"] if found else []
        ok = found and found.get("cpu", {}).get("usageNanoCores") and containers \
            and containers[0].get("cpu", {}).get("usageNanoCores")
        return {"pod": found, "node": summary["node"]} if ok else None

    found = wait_for(summary_pod, timeout=15, interval=1.1, what="CPU rates in the summary")
    stats = found["pod"]
    (main,) = stats["containers"]  # the pause container is not a workload container
    assert main["name"] == "main" and main["memory"]["workingSetBytes"] > 0
    assert main["memory"]["availableBytes"] <= 64 << 20
    assert main["cpu"]["usageCoreNanoSeconds"] > 0 and stats["memory"]["workingSetBytes"] > 0
    assert main["rootfs"]["capacityBytes"] > 0 and "usedBytes" in main["rootfs"]  # writable layer
    assert main["logs"]["usedBytes"] > 0
    image_fs = found["node"]["runtime"]["imageFs"]
    assert image_fs["capacityBytes"] > 0
    with agent.admin() as client:
        resource = client.get(agent.url(path="/metrics/resource")).text
        cadvisor = client.get(agent.url(path="/metrics/cadvisor")).text
    labels = 'container="main",namespace="default",pod="bb-testnode"'
    assert f"container_memory_working_set_bytes{{{labels}}}" in resource
    assert f"container_cpu_usage_seconds_total{{{labels}}}" in resource
    cid = status_of(pod, "main")["containerID"].removeprefix("containerd://")
    lines = [line for line in cadvisor.splitlines() if line.startswith("container_memory_working_set_bytes{")]
    main_line = next(line for line in lines if f'name="{cid}"' in line)
    assert f'image="{IMAGE}"' in main_line and 'container="main"' in main_line
    assert 'pod="bb-testnode"' in main_line and 'namespace="default"' in main_line
    assert float(main_line.rsplit(" ", 2)[1]) > 0
    (sandbox,) = [s for s in list_sandboxes(node.cri.endpoint) if s.meta.uid == uid]
    pause = next(line for line in lines if f'name="{sandbox.id}"' in line)
    assert 'container=""' in pause and f'image="{node.cri.pause}"' in pause and 'pod="bb-testnode"' in pause


def test_pod_removal_cleans_sandboxes_and_cgroups(node: Node) -> None:
    pod = wait_for(lambda: node.pod("crash"), what="crash pod")
    uid = pod["metadata"]["uid"]
    parent = f"{node.cgroup_root()}/kubepods/burstable/pod{uid}"
    assert any(s.meta.uid == uid for s in list_sandboxes(node.cri.endpoint))
    (node.manifests / "crash.yaml").unlink()
    wait_for(lambda: node.pod("crash") is None, what="crash gone from /pods")
    wait_for(lambda: not any(s.meta.uid == uid for s in list_sandboxes(node.cri.endpoint)),
             what="crash sandbox removed")
    leftovers = [d for d in cgroup_dirs(node.cgroup_root()) if f"pod{uid}" in str(d)]
    assert leftovers == [], parent
    assert running(node, "bb")  # the others keep running
