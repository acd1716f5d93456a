"""Pod lifecycle with real processes (and, as root, real cgroups and namespaces)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
import pytest

from tests.helpers import Agent
from tests.podtools import container, manifest, pods, polled, running, status_of, wait_for, write

pytestmark = pytest.mark.e2e
ROOT = os.geteuid() == 0


def phase_is(agent: Agent, name: str, phase: str) -> dict | None:  # type: ignore[type-arg]
    pod = pods(agent).get(f"{name}-testnode")
    return pod if pod is not None and pod["status"].get("phase") == phase else None


@pytest.mark.parametrize(
    ("policy", "code", "phase", "restarts", "reason"),
    [
        pytest.param("Always", 0, "Running", True, None, id="always-exit0-restarts"),
        pytest.param("OnFailure", 0, "Succeeded", False, "Completed", id="onfailure-exit0-done"),
        pytest.param("OnFailure", 1, "Running", True, None, id="onfailure-exit1-restarts"),
        pytest.param("Never", 1, "Failed", False, "Error", id="never-exit1-failed"),
        pytest.param("Never", 0, "Succeeded", False, "Completed", id="never-exit0-succeeded"),
    ],
)
def test_restart_policies(
    start_agent: Callable[..., Agent], tmp_path: Path, policy: str, code: int, phase: str, restarts: bool,
    reason: str | None,
) -> None:
    agent = start_agent(manifests=True)
    write(tmp_path / "manifests", "p.yaml",
          manifest("p", container("c", ["sh", "-c", f"sleep 0.2; exit {code}"]), f"restartPolicy: {policy}"))
    if restarts:
        pod = wait_for(lambda: (p := pods(agent).get("p-testnode")) and polled(p, "c")["restartCount"] >= 1 and p,
                       what="a restart")
        last = status_of(pod, "c")["lastState"]["terminated"]
        assert last["exitCode"] == code
        assert pod["status"]["phase"] == phase
    else:
        pod = wait_for(lambda: phase_is(agent, "p", phase), what=phase)
        time.sleep(1.5)  # long enough for a wrong restart to show
        status = status_of(pods(agent)["p-testnode"], "c")
        assert status["restartCount"] == 0
        assert status["state"]["terminated"]["reason"] == reason
        assert status["state"]["terminated"]["exitCode"] == code


@pytest.mark.slow
def test_crashloop_backoff_timing(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    """Immediate first restart, then 10 s, then 20 s (kubelet: 10 s doubling to 300 s)."""
    agent = start_agent(manifests=True)
    write(tmp_path / "manifests", "crash.yaml", manifest("crash", container("c", ["false"])))
    seen: dict[int, float] = {}
    messages: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 4 and time.monotonic() < deadline:
        pod = pods(agent).get("crash-testnode")
        if pod is not None and pod["status"].get("containerStatuses"):
            status = status_of(pod, "c")
            seen.setdefault(status["restartCount"], time.monotonic())
            waiting = status["state"].get("waiting")
            if waiting and waiting["reason"] == "CrashLoopBackOff" and waiting["message"] not in messages:
                messages.append(waiting["message"])
        time.sleep(0.05)
    assert sorted(seen) == [0, 1, 2, 3], seen
    first, second = seen[2] - seen[1], seen[3] - seen[2]
    assert 9.5 <= first <= 13, first
    assert 19.5 <= second <= 23, second
    assert any(m.startswith("back-off 10s restarting failed container=c pod=crash-testnode_default(") for m in messages)
    assert any(m.startswith("back-off 20s") for m in messages)


def test_init_containers_run_in_order(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    log = tmp_path / "order.log"
    init = (container("init1", ["sh", "-c", f"sleep 1; echo init1 >> {log}"])
            + container("init2", ["sh", "-c", f"echo init2 >> {log}"]))
    write(tmp_path / "manifests", "p.yaml",
          manifest("p", container("app", ["sh", "-c", f"echo app >> {log}; sleep 300"]), init=init))
    pod = wait_for(lambda: (p := pods(agent).get("p-testnode")) and p["status"].get("initContainerStatuses") and p,
                   what="init statuses")
    app = status_of(pod, "app")
    assert app["state"]["waiting"]["reason"] in ("PodInitializing", "ContainerCreating")
    assert pod["status"]["phase"] == "Pending"
    init_cond = next(c for c in pod["status"]["conditions"] if c["type"] == "Initialized")
    assert init_cond["status"] == "False" and init_cond["reason"] == "ContainersNotInitialized"
    pod = wait_for(lambda: running(agent, "p"), what="app running")
    assert log.read_text().split() == ["init1", "init2", "app"]
    for name in ("init1", "init2"):
        assert status_of(pod, name)["state"]["terminated"]["reason"] == "Completed"


def test_failed_init_container_with_restart_never_fails_the_pod(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    agent = start_agent(manifests=True)
    marker = tmp_path / "app-ran"
    write(tmp_path / "manifests", "p.yaml", manifest(
        "p", container("app", ["touch", str(marker)]), "restartPolicy: Never",
        init=container("init", ["sh", "-c", "exit 7"]),
    ))
    pod = wait_for(lambda: phase_is(agent, "p", "Failed"), what="Failed")
    assert status_of(pod, "init")["state"]["terminated"]["exitCode"] == 7
    time.sleep(1)
    assert not marker.exists()


def processes_with(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def test_prestop_then_sigterm_then_sigkill_at_the_grace_period(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    agent = start_agent(manifests=True)
    trace = tmp_path / "trace.log"
    marker = f"stubborn-{uuid.uuid4().hex}"
    polite = container("polite", ["sh", "-c", f"trap 'echo TERM >> {trace}; exit 0' TERM; while :; do sleep 0.1; done"],
                       f"lifecycle:\n  preStop:\n    exec:\n      command: [sh, -c, 'echo prestop >> {trace}']")
    stubborn = container("stubborn", ["sh", "-c", f"trap '' TERM; while :; do sleep 0.1; done # {marker}"])
    write(tmp_path / "manifests", "p.yaml", manifest("p", polite + stubborn, "terminationGracePeriodSeconds: 3"))
    wait_for(lambda: running(agent, "p"), what="running")
    assert processes_with(marker)
    started = time.monotonic()
    (tmp_path / "manifests" / "p.yaml").unlink()
    wait_for(lambda: not processes_with(marker), timeout=15, what="the stubborn container killed")
    took = time.monotonic() - started
    wait_for(lambda: trace.exists() and len(trace.read_text().split()) == 2, what="trace")
    assert trace.read_text().split() == ["prestop", "TERM"]
    assert 2.5 <= took < 8, took  # SIGKILL at the 3 s deadline
    wait_for(lambda: "p-testnode" not in pods(agent), what="pod gone")


def test_post_start_hook(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    marker = tmp_path / "post-start"
    write(tmp_path / "manifests", "p.yaml", manifest("p", container(
        "c", ["sleep", "300"], f"lifecycle:\n  postStart:\n    exec:\n      command: [touch, {marker}]",
    )))
    wait_for(lambda: running(agent, "p"), what="running")
    wait_for(marker.exists, what="postStart ran")


def test_container_without_command(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    write(tmp_path / "manifests", "p.yaml", manifest("p", "- name: c\n  image: nginx:1.27\n"))
    pod = wait_for(lambda: (p := pods(agent).get("p-testnode")) and "waiting" in polled(p, "c")["state"]
                   and polled(p, "c")["state"]["waiting"]["reason"] == "CreateContainerConfigError" and p,
                   what="config error")
    assert "the process runtime needs a command" in status_of(pod, "c")["state"]["waiting"]["message"]


def test_env_field_refs_and_expansion(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    start_agent(manifests=True)
    out = tmp_path / "env.out"
    env = ("env:\n- {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
           "- {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}\n"
           "- {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
           "- {name: GREETING, value: hello}\n- {name: MSG, value: '$(GREETING) from $(POD)'}")
    write(tmp_path / "manifests", "p.yaml", manifest("p", container(
        "c", ["sh", "-c", f"echo $POD $NS $IP \"$MSG\" > {out}; sleep 300"], env)))
    wait_for(lambda: out.exists() and out.read_text(), what="env written")
    assert out.read_text().strip() == "p-testnode default 127.0.0.1 hello from p-testnode"


def test_max_pods_and_duplicates(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    # All there before the agent starts: its first read goes in name order, as the kubelet's
    # os.ReadDir, so a-copy.yaml comes before a.yaml. (Written while it runs, each file is read when
    # it lands, and the pod admitted first keeps its name.)
    for name in ("a", "b", "c"):
        write(tmp_path / "manifests", f"{name}.yaml", manifest(name, container("c", ["sleep", "300"])))
    write(tmp_path / "manifests", "a-copy.yaml", manifest("a", container("c", ["sleep", "299"])))
    agent = start_agent("--max-pods", "2", manifests=True)
    wait_for(lambda: running(agent, "a") and running(agent, "b"), what="a and b")
    rejected = wait_for(lambda: phase_is(agent, "c", "Failed"), what="c refused")
    assert rejected["status"]["reason"] == "OutOfpods"
    assert rejected["status"]["message"] == (
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    )
    assert rejected["status"]["qosClass"] == "BestEffort"
    with agent.admin() as client:
        records = {r["origin"]: r for r in client.get(agent.url(path="/manifests")).json()["items"]}
        metrics = client.get(agent.url(path="/metrics")).text
    dup = records[str(tmp_path / "manifests" / "a.yaml")]
    assert dup["state"] == "rejected" and "already defined by" in dup["reason"] and "a-copy.yaml" in dup["reason"]
    assert records[str(tmp_path / "manifests" / "c.yaml")]["reason"].startswith("OutOfpods")
    assert 'kubeletapi_static_pod_manifest_errors_total{source="file"} 2\n' in metrics


def test_hostile_manifests_disturb_nothing(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    dirp = tmp_path / "manifests"
    write(dirp, "good.yaml", manifest("good", container("c", ["sleep", "300"])))
    wait_for(lambda: running(agent, "good"), what="good running")
    uid = pods(agent)["good-testnode"]["metadata"]["uid"]
    (dirp / "bad.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
    with (dirp / "huge.yaml").open("wb") as fh:
        fh.truncate(11 * 1024 * 1024)
    (dirp / "typo.yaml").write_text(manifest("typo", container("c", ["sleep", "1"])).replace("command:", "comand:"))
    (dirp / "loop.yaml").symlink_to(dirp / "loop.yaml")
    (dirp / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    os.mkfifo(dirp / "fifo.yaml")
    (dirp / "bomb.yaml").write_text("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                                    "e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n")
    (dirp / "empty.yaml").write_text("")

    def all_rejected() -> dict[str, str] | None:
        with agent.admin() as client:
            items = client.get(agent.url(path="/manifests")).json()["items"]
        reasons = {Path(r["origin"]).name: r.get("reason", "") for r in items if r["state"] == "rejected"}
        return reasons if len(reasons) == 8 else None

    reasons = wait_for(all_rejected, timeout=30, what="8 rejections")
    assert "larger than 1.5 MiB" in reasons["huge.yaml"]
    assert "unknown field" in reasons["typo.yaml"] and "comand" in reasons["typo.yaml"]
    assert "Too many levels of symbolic links" in reasons["loop.yaml"]
    assert "No such file" in reasons["dangling.yaml"]
    assert "not a regular file" in reasons["fifo.yaml"]
    assert "bad.yaml" in reasons["bad.yaml"]
    pod = running(agent, "good")
    assert pod is not None and pod["metadata"]["uid"] == uid and status_of(pod, "c")["restartCount"] == 0
    assert httpx.get(agent.url("healthz", "/healthz"), timeout=5).text == "ok"
    assert set(pods(agent)) == {"good-testnode"}


@pytest.mark.skipif(not ROOT, reason="emptyDir and hostPath mounts need root (mount namespaces)")
def test_volumes(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    host = tmp_path / "host-data"
    out = tmp_path / "volumes.out"
    writer = container("writer", ["sh", "-c", "echo shared > /cache/file; sleep 300"],
                       "volumeMounts:\n- {name: cache, mountPath: /cache}")
    reader = container("reader", ["sh", "-c",
                                  f"sleep 0.5; cat /cache/file > {out}; mount | grep -c ' /mem type tmpfs' >> {out};"
                                  f" echo x > /host/made && echo {{}} >> {out}; sleep 300"],
                       "volumeMounts:\n- {name: cache, mountPath: /cache}\n- {name: mem, mountPath: /mem}\n"
                       "- {name: host, mountPath: /host}")
    volumes = (f"volumes:\n- {{name: cache, emptyDir: {{}}}}\n- {{name: mem, emptyDir: {{medium: Memory}}}}\n"
               f"- {{name: host, hostPath: {{path: {host}, type: DirectoryOrCreate}}}}")
    write(tmp_path / "manifests", "p.yaml", manifest("p", writer + reader, volumes))
    wait_for(lambda: running(agent, "p"), what="running")
    wait_for(lambda: out.exists() and len(out.read_text().split()) >= 3, what="reader output")
    assert out.read_text().split()[:2] == ["shared", "1"]
    assert (host / "made").read_text() == "x\n"


@pytest.mark.skipif(not ROOT, reason="cgroup limits need root")
def test_memory_hog_is_oom_killed(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    hog = "b = []\nwhile True: b.append(bytearray(8 << 20))"
    write(tmp_path / "manifests", "hog.yaml", manifest("hog", container(
        "hog", ["python3", "-c", hog], "resources:\n  limits: {memory: 64Mi}"), "restartPolicy: Never"))
    pod = wait_for(lambda: phase_is(agent, "hog", "Failed"), timeout=30, what="hog failed")
    term = status_of(pod, "hog")["state"]["terminated"]
    assert (term["reason"], term["exitCode"]) == ("OOMKilled", 137)
    assert pod["status"]["qosClass"] == "Burstable"  # a memory limit only


@pytest.mark.skipif(not ROOT, reason="cgroup limits need root")
def test_cpu_hog_is_throttled(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    write(tmp_path / "manifests", "cpu.yaml", manifest("cpu", container(
        "spin", ["python3", "-c", "while True: pass"], "resources:\n  limits: {cpu: 100m}")))
    pod = wait_for(lambda: running(agent, "cpu"), what="running")
    cid = status_of(pod, "spin")["containerID"].removeprefix("process://")
    cgroup_root = agent.args[agent.args.index("--cgroup-root") + 1].strip("/")
    assert pod["status"]["qosClass"] == "Burstable"  # a cpu limit only
    pod_dir = f"kubepods/burstable/pod{pod['metadata']['uid']}"
    stat = Path(f"/sys/fs/cgroup/cpu/{cgroup_root}/{pod_dir}/{cid}/cpu.stat")
    quota = stat.with_name("cpu.cfs_quota_us").read_text().strip()
    assert quota == "10000"  # 100m of a 100000 us period

    def throttled() -> int:
        values = dict(line.split() for line in stat.read_text().splitlines())
        return int(values["nr_throttled"])

    assert wait_for(lambda: throttled() >= 5, timeout=10, what="throttling")
