"""docker-compose.yml, the Dockerfile and the kubeletapi container's entrypoint, without a Docker engine.

- The compose file as Compose itself reads it (`docker-compose config`, Debian's docker-compose):
  services, loopback-only ports, the node agent's privileges and mounts, and every mounted config
  file is the one in the repo that the other ecosystem tests validate (deploy/prometheus,
  deploy/grafana), wired to the compose service names, ports, volumes and database.
- The Dockerfile's entrypoint is the repo's executable script, built from what .dockerignore keeps.
- The entrypoint for real: with a stand-in `kubeletapi` on PATH (fast, any user) it passes the
  stack's flags, publishes the admin token for Prometheus only once the agent serves (atomically,
  0400, owned by Prometheus' user), forwards SIGTERM and returns the agent's exit status; and, as
  root, in a private network and mount namespace standing in for the container, it runs the real
  agent with the demo manifests at its container defaults (0.0.0.0:10250/10255, healthz 10248):
  every demo pod runs, the compose healthcheck passes, the published token authenticates on the
  secure port, and SIGTERM removes the pods before the agent stops.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from kubeletapi.pods.manifest import ManifestError, decode_pod
from tests.helpers import free_port, proc_state, purge
from tests.podtools import wait_for

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "deploy" / "docker" / "entrypoint.sh"
DEMO_MANIFESTS = ROOT / "deploy" / "docker" / "manifests"
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
GRAFANA_DIR = ROOT / "deploy" / "grafana"
DOCKER_COMPOSE = shutil.which("docker-compose")
SERVICES = {"kubeletapi", "prometheus", "grafana", "influxdb"}
# The only host paths the stack mounts that are not files of this repo: what a node agent needs.
HOST_PATHS = {"/sys/fs/cgroup", "/var/log/pods"}
PROMETHEUS_UID = PROMETHEUS_GID = 65534  # the prom/prometheus image runs as nobody


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool
    bind: bool


def mounts(service: dict[str, Any]) -> list[Mount]:
    """A service's volumes, short ("src:dst:mode") or long syntax, as `docker-compose config` prints them."""
    result = []
    for entry in service.get("volumes", []):
        if isinstance(entry, str):
            parts = entry.split(":")
            source, target = parts[0], parts[1]
            mode = parts[2] if len(parts) > 2 else "rw"
            result.append(Mount(source, target, "ro" in mode.split(","), source.startswith("/")))
        else:
            result.append(Mount(str(entry.get("source", "")), entry["target"], bool(entry.get("read_only")),
                                entry.get("type") == "bind"))
    return result


def mount_at(service: dict[str, Any], target: str) -> Mount:
    found = [m for m in mounts(service) if m.target == target]
    assert len(found) == 1, f"expected one mount at {target}, got {found}"
    return found[0]


def published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host IP, host port, container port) of every published port."""
    result = []
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            result.append((str(entry.get("host_ip", "")), int(entry["published"]), int(entry["target"])))
            continue
        parts = str(entry).split("/")[0].split(":")
        assert len(parts) == 3, f"port {entry!r} does not name a host IP"
        result.append((parts[0], int(parts[1]), int(parts[2])))
    return result


def container_ports(service: dict[str, Any]) -> set[int]:
    return {target for _, _, target in published(service)}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """The compose file as Compose resolves it (interpolated, paths absolute, defaults filled in)."""
    if DOCKER_COMPOSE is None:
        pytest.skip("docker-compose not installed (Debian package `docker-compose`, in the Makefile's DEB_PACKAGES)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "DOCKER_", "GRAFANA_"))}
    result = subprocess.run([DOCKER_COMPOSE, "-f", str(COMPOSE_FILE), "config"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    doc = yaml.safe_load(result.stdout)
    assert isinstance(doc, dict)
    return doc


def service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    svc = compose["services"][name]
    assert isinstance(svc, dict)
    return svc


def entrypoint_defaults() -> dict[str, tuple[str, str]]:
    """Shell variable -> (environment variable, default) of the entrypoint's `VAR=${ENV:-default}` lines."""
    found = {}
    for line in ENTRYPOINT.read_text().splitlines():
        m = re.fullmatch(r"([A-Z_]+)=\$\{([A-Z_]+):?-([^}]*)\}", line.strip())
        if m:
            found[m.group(1)] = (m.group(2), m.group(3))
    return found


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [ln for ln in DOCKERFILE.read_text().splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


# --- docker-compose.yml -------------------------------------------------------------------------


def test_services_and_loopback_ports(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == SERVICES
    expected = {"kubeletapi": {10250, 10255}, "prometheus": {9090}, "grafana": {3000}, "influxdb": {8086}}
    for name, ports in expected.items():
        entries = published(service(compose, name))
        assert {host_port for _, host_port, _ in entries} == ports, name
        assert all(ip == "127.0.0.1" for ip, _, _ in entries), f"{name} publishes beyond loopback: {entries}"


def test_kubeletapi_service(compose: dict[str, Any]) -> None:
    """A node agent's container: privileged, host PID namespace, the host's cgroups and pod logs,
    the repo's demo manifests, and the paths, ports and healthcheck the entrypoint really uses."""
    svc = service(compose, "kubeletapi")
    assert svc.get("privileged") is True
    assert svc.get("pid") == "host"
    assert Path(svc["build"]["context"]) == ROOT
    assert (ROOT / svc["build"].get("dockerfile", "Dockerfile")).resolve() == DOCKERFILE
    cgroup = mount_at(svc, "/sys/fs/cgroup")
    assert (cgroup.source, cgroup.read_only) == ("/sys/fs/cgroup", False)
    assert mount_at(svc, "/var/log/pods").source == "/var/log/pods"

    defaults = {var: default for var, (_, default) in entrypoint_defaults().items()}
    manifests = mount_at(svc, defaults["MANIFESTS"])
    assert Path(manifests.source) == DEMO_MANIFESTS and manifests.read_only
    assert mount_at(svc, defaults["POD_LOGS_DIR"]).source == "/var/log/pods"
    for var in ("CERT_DIR", "ROOT_DIR"):  # state that outlives the container: named volumes
        m = mount_at(svc, defaults[var])
        assert not m.bind and m.source in compose["volumes"], (var, m)
    assert container_ports(svc) == {int(defaults["PORT"]), int(defaults["READ_ONLY_PORT"])}
    health = " ".join(svc["healthcheck"]["test"])
    assert f"http://127.0.0.1:{defaults['HEALTHZ_PORT']}/healthz" in health


def test_bind_mounts_are_repo_files(compose: dict[str, Any]) -> None:
    """Every bind-mounted source is in the repo (so `docker compose up` mounts what the tests
    checked), apart from the node agent's two host paths."""
    outside = set()
    for name in SERVICES:
        for m in mounts(service(compose, name)):
            if not m.bind:
                assert m.source in compose["volumes"], f"{name}: undeclared volume {m.source}"
                continue
            path = Path(m.source)
            if path.is_relative_to(ROOT):
                assert path.exists(), f"{name} mounts {path}, which is not in the repo"
            else:
                outside.add(m.source)
    assert outside == HOST_PATHS


def test_prometheus_mounts_the_validated_config(compose: dict[str, Any]) -> None:
    """Prometheus runs deploy/prometheus as the Prometheus tests run it (relative paths resolved
    against prometheus.yml's directory), with the shared certs volume as its secrets/ directory,
    where the entrypoint publishes the token under the name prometheus.yml reads."""
    prom, kubelet = service(compose, "prometheus"), service(compose, "kubeletapi")
    config = mount_at(prom, "/etc/prometheus")
    assert Path(config.source) == PROMETHEUS_DIR and config.read_only
    assert "--config.file=/etc/prometheus/prometheus.yml" in prom["command"]
    doc = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    rules = [f for pattern in doc.get("rule_files", []) for f in PROMETHEUS_DIR.glob(pattern)]
    assert rules, "prometheus.yml loads no rule file from deploy/prometheus"

    secrets = mount_at(prom, "/etc/prometheus/secrets")
    assert not secrets.bind and secrets.read_only
    assert (PROMETHEUS_DIR / "secrets").is_dir(), "the mount point inside the read-only config mount"
    cert_dir = entrypoint_defaults()["CERT_DIR"][1]
    assert mount_at(kubelet, cert_dir).source == secrets.source, "kubeletapi and Prometheus share the certs volume"
    credentials = set()
    for job in doc["scrape_configs"]:
        credentials.add(job.get("authorization", {}).get("credentials_file") or job.get("bearer_token_file"))
        for sd in job.get("file_sd_configs", []):
            for pattern in sd["files"]:
                for targets_file in PROMETHEUS_DIR.glob(pattern):
                    for group in yaml.safe_load(targets_file.read_text()):
                        for target in group["targets"]:
                            host, _, port = target.rpartition(":")
                            assert host in compose["services"] and int(port) in container_ports(
                                service(compose, host)), target
    # /etc/prometheus/secrets/token is <certs volume>/token, the file the entrypoint writes.
    assert credentials == {"secrets/token"}


def test_grafana_provisioning(compose: dict[str, Any]) -> None:
    """Grafana reads deploy/grafana: the dashboards provider's path is where the dashboards are
    mounted, and the data sources reach the compose services at their ports and database."""
    graf = service(compose, "grafana")
    provisioning = mount_at(graf, "/etc/grafana/provisioning")
    assert Path(provisioning.source) == GRAFANA_DIR / "provisioning" and provisioning.read_only
    dashboards = [m for m in mounts(graf) if Path(m.source) == GRAFANA_DIR / "dashboards"]
    assert len(dashboards) == 1 and dashboards[0].read_only
    target = dashboards[0].target

    providers = yaml.safe_load((GRAFANA_DIR / "provisioning" / "dashboards" / "dashboards.yml").read_text())
    assert [p["options"]["path"] for p in providers["providers"]] == [target]
    assert sorted((GRAFANA_DIR / "dashboards").glob("*.json")), "no dashboards to provision"
    home = graf["environment"].get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        assert (GRAFANA_DIR / "dashboards" / Path(home).relative_to(target)).is_file()

    sources = yaml.safe_load((GRAFANA_DIR / "provisioning" / "datasources" / "datasources.yml").read_text())
    by_type = {ds["type"]: ds for ds in sources["datasources"]}
    assert set(by_type) == {"prometheus", "influxdb"}
    for ds in by_type.values():
        url = urlsplit(ds["url"])
        assert url.hostname in compose["services"], ds["url"]
        assert url.port in container_ports(service(compose, url.hostname)), ds["url"]
    assert urlsplit(by_type["prometheus"]["url"]).hostname == "prometheus"
    influx = by_type["influxdb"]
    assert urlsplit(influx["url"]).hostname == "influxdb"
    database = service(compose, "influxdb")["environment"]["INFLUXDB_DB"]
    assert influx.get("jsonData", {}).get("dbName", influx.get("database")) == database
    assert service(compose, "kubeletapi")["environment"]["INFLUXDB_DATABASE"] == database


def test_node_name_matches_the_scrape_target(compose: dict[str, Any]) -> None:
    """The compose target's `node` label (what rules and dashboards group by) is the agent's node name."""
    groups = yaml.safe_load((PROMETHEUS_DIR / "targets" / "kubeletapi.yml").read_text())
    node = service(compose, "kubeletapi")["environment"]["NODE_NAME"]
    assert [g["labels"]["node"] for g in groups] == [node]


def test_demo_manifests_are_valid_pods() -> None:
    """kubeletapi's own decoder (strict fields, defaults, validation) accepts every demo pod."""
    files = sorted(p for p in DEMO_MANIFESTS.iterdir() if not p.name.startswith("."))
    assert files
    names = []
    for path in files:
        try:
            pod = decode_pod(path.read_bytes(), str(path))
        except ManifestError as exc:
            pytest.fail(str(exc))
        names.append(pod.metadata.name)
    assert len(set(names)) == len(names)


# --- Dockerfile --------------------------------------------------------------------------------


def test_dockerfile_entrypoint_is_the_repo_script() -> None:
    instructions = dockerfile_instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim-bookworm")
    workdir = Path(next(args for word, args in instructions if word == "WORKDIR"))
    entrypoint = json.loads(next(args for word, args in reversed(instructions) if word == "ENTRYPOINT"))
    assert len(entrypoint) == 1
    script = Path(entrypoint[0]).relative_to(workdir)
    assert ROOT / script == ENTRYPOINT
    copies = [args.split() for word, args in instructions if word == "COPY"]
    assert [str(script), f"./{script}"] in copies or [str(script), str(script)] in copies
    mode = ENTRYPOINT.stat().st_mode
    assert stat.S_ISREG(mode) and mode & 0o111 == 0o111, f"{ENTRYPOINT} is not executable"
    assert ENTRYPOINT.read_text().startswith("#!/bin/sh\n")
    assert any(word == "RUN" and "kubeletapi.runtime.process.shimbuild" in args for word, args in instructions)

    # What the COPY instructions take from the build context is not excluded by .dockerignore.
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    for source in (src for args in copies for src in args[:-1]):
        assert (ROOT / source).exists(), source
        assert not any(fnmatch.fnmatch(source, p) or source.startswith(f"{p}/") for p in patterns), source
    for local in (".venv", ".git", "certs", ".run", "kubeletapi/runtime/process/shim/bin"):
        assert local in patterns, f".dockerignore lets {local} into the build context"


# --- the entrypoint with a stand-in agent --------------------------------------------------------

FAKE_AGENT = """\
#!{python}
# Stands in for kubeletapi: records its argv, replaces tokens.csv (after FAKE_PKI_DELAY seconds,
# as a slow start would), exits with FAKE_EXIT if set, else serves /healthz/ping until SIGTERM.
import http.server, json, os, secrets, signal, sys, time
from pathlib import Path

args = sys.argv[1:]
def flag(name):
    return args[len(args) - 1 - args[::-1].index(name) + 1]

out = Path(os.environ["FAKE_OUT"])
(out / "pid").write_text(str(os.getpid()))
(out / "argv.json").write_text(json.dumps(args))
time.sleep(float(os.environ.get("FAKE_PKI_DELAY", "0")))
certs = Path(flag("--cert-dir"))
token = secrets.token_urlsafe(32)
tmp = certs / ".tokens.csv.tmp"
tmp.write_text(token + ',kubeletapi-admin,kubeletapi-admin,"system:masters"\\n')
os.chmod(tmp, 0o600)
os.replace(tmp, certs / "tokens.csv")
if os.environ.get("FAKE_EXIT"):
    sys.exit(int(os.environ["FAKE_EXIT"]))

def stop(signum, frame):
    (out / "signal").write_text(signal.Signals(signum).name)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)

class Ping(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz/ping" else 404)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass

http.server.HTTPServer(("127.0.0.1", int(flag("--healthz-port"))), Ping).serve_forever()
"""


@dataclass
class FakeRun:
    proc: subprocess.Popen[bytes]
    out: Path
    certs: Path

    def argv(self) -> list[str]:
        return list(json.loads((self.out / "argv.json").read_text()))

    def output(self) -> str:
        return (self.out / "entrypoint.log").read_text()

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        return self.proc.wait(timeout), self.output()


def entrypoint_env(compose: dict[str, Any], bin_dir: Path) -> dict[str, str]:
    """This process's environment without KUBELETAPI_*/INFLUXDB_* overrides, plus the compose
    service's environment, with `bin_dir` (where `kubeletapi` is) first on PATH."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KUBELETAPI_", "INFLUXDB_"))},
        **{k: str(v) for k, v in service(compose, "kubeletapi").get("environment", {}).items()},
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHON": sys.executable,
    }


@pytest.fixture
def fake_entrypoint(tmp_path: Path, compose: dict[str, Any]) -> Iterator[Any]:
    """Run the entrypoint with the compose service's environment, paths moved under tmp_path and
    a stand-in agent first on PATH; the runs are killed (by PID) if a test leaves them running."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubeletapi"
    fake.write_text(FAKE_AGENT.format(python=sys.executable))
    fake.chmod(0o755)
    runs: list[FakeRun] = []

    def start(*args: str, **env: str) -> FakeRun:
        out = tmp_path / f"run{len(runs)}"
        out.mkdir(exist_ok=True)
        certs = out / "certs"
        environment = {
            **entrypoint_env(compose, bin_dir),
            "FAKE_OUT": str(out),
            "KUBELETAPI_CERT_DIR": str(certs),
            "KUBELETAPI_ROOT_DIR": str(out / "root"),
            "KUBELETAPI_POD_LOGS_DIR": str(out / "logs"),
            "KUBELETAPI_MANIFESTS": str(out / "manifests"),
            "KUBELETAPI_HEALTHZ_PORT": str(free_port()),
            "KUBELETAPI_REMOVE_PODS_ON_STOP": "false",
            "PROMETHEUS_TOKEN_OWNER": f"{os.getuid()}:{os.getgid()}",
            **env,
        }
        # Output to a file, not a pipe: the agent inherits it, and may outlive a broken entrypoint.
        with (out / "entrypoint.log").open("wb") as log:
            proc = subprocess.Popen([str(ENTRYPOINT), *args], env=environment, stdout=log, stderr=subprocess.STDOUT)
        run = FakeRun(proc, out, certs)
        runs.append(run)
        return run

    yield start
    for pid_file in tmp_path.glob("run*/pid"):  # a stand-in agent its run left behind
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            if str(fake).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
    for run in runs:
        if run.proc.poll() is None:
            run.proc.kill()
        run.proc.wait()


def test_entrypoint_flags_token_and_signals(fake_entrypoint: Any, compose: dict[str, Any], tmp_path: Path) -> None:
    owner = (PROMETHEUS_UID, PROMETHEUS_GID) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    certs = tmp_path / "run0" / "certs"
    certs.mkdir(parents=True, mode=0o700)
    # A tokens.csv from an earlier start, which the agent replaces before it serves: the
    # entrypoint must publish the new token, not this one.
    (certs / "tokens.csv").write_text('stale-token,kubeletapi-admin,kubeletapi-admin,"system:masters"\n')
    run = fake_entrypoint("--v", "2", FAKE_PKI_DELAY="1", PROMETHEUS_TOKEN_OWNER=f"{owner[0]}:{owner[1]}")

    token_file = certs / "token"
    wait_for(lambda: token_file.exists() or run.proc.poll() is not None, timeout=30, what="the token file")
    assert run.proc.poll() is None, run.finish()[1]
    tokens_csv = (certs / "tokens.csv").read_text()
    assert token_file.read_text() == tokens_csv.split(",", 1)[0] != "stale-token"
    info = token_file.stat()
    assert stat.S_IMODE(info.st_mode) == 0o400
    assert (info.st_uid, info.st_gid) == owner
    assert stat.S_IMODE(certs.stat().st_mode) == 0o755, "Prometheus' user must traverse the volume"
    assert sorted(p.name for p in certs.iterdir()) == ["token", "tokens.csv"], "a temporary file was left"

    argv = run.argv()
    flags = dict(zip(argv[:-2:2], argv[1:-2:2], strict=True))
    assert argv[-2:] == ["--v", "2"], "the container's command comes last, so it can override"
    svc_env = service(compose, "kubeletapi")["environment"]
    assert flags["--address"] == "0.0.0.0"
    assert {int(flags["--port"]), int(flags["--read-only-port"])} == container_ports(service(compose, "kubeletapi"))
    assert flags["--hostname-override"] == svc_env["NODE_NAME"]
    assert flags["--cert-dir"] == str(certs)
    assert flags["--pod-manifest-path"] == str(run.out / "manifests")
    influx = urlsplit(flags["--influxdb-url"])
    assert influx.hostname == "influxdb" and influx.port in container_ports(service(compose, "influxdb"))
    assert flags["--influxdb-database"] == service(compose, "influxdb")["environment"]["INFLUXDB_DB"]

    run.proc.send_signal(signal.SIGTERM)
    status, output = run.finish()
    assert status == 0, output
    assert (run.out / "signal").read_text() == "SIGTERM"


def test_entrypoint_returns_the_agent_status(fake_entrypoint: Any) -> None:
    """An agent that exits before serving: its status is the container's, no token is published
    from a PKI it never served with, and an empty INFLUXDB_URL leaves the sink off."""
    run = fake_entrypoint(FAKE_EXIT="3", INFLUXDB_URL="")
    status, output = run.finish()
    assert status == 3, output
    assert not (run.certs / "token").exists()
    assert not [a for a in run.argv() if a.startswith("--influxdb")]


# --- the entrypoint with the real agent and the demo pods ----------------------------------------


def in_netns(pid: int, code: str, *args: str) -> Any:
    """Run Python `code` with `args` in the network namespace of `pid`; its printed JSON."""
    result = subprocess.run(
        ["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


POD_STATE = """
import json, urllib.request
pods = json.load(urllib.request.urlopen("http://127.0.0.1:10255/pods", timeout=5))["items"]
print(json.dumps({p["metadata"]["name"]: [[c["name"], list(c["state"]), c.get("ready", False), c["restartCount"],
                                           (c.get("lastState", {}).get("terminated") or {}).get("reason")]
                                          for c in p["status"].get("containerStatuses", [])] for p in pods}))
"""

SECURE_GET = """
import json, ssl, sys, urllib.error, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
codes = []
for token in sys.argv[2:]:
    req = urllib.request.Request("https://127.0.0.1:10250/pods", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as answer:
            codes.append([answer.status, len(json.load(answer)["items"])])
    except urllib.error.HTTPError as err:
        codes.append([err.code, 0])
print(json.dumps(codes))
"""


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces, mounts and the pods' cgroups")
@pytest.mark.skipif(not all(shutil.which(t) for t in ("unshare", "nsenter", "ip", "mount")),
                    reason="needs util-linux's unshare, nsenter and mount, and iproute2's ip")
def test_entrypoint_runs_the_demo_pods_and_removes_them_on_stop(compose: dict[str, Any], tmp_path: Path) -> None:
    """The container's entrypoint at its defaults, in a private network namespace (its own
    loopback: 0.0.0.0:10250/10255 and the web pod's :8088 reach nothing else) and a private mount
    namespace where the manifests are a read-only bind mount, as docker-compose.yml mounts them."""
    manifests = tmp_path / "manifests"
    shutil.copytree(DEMO_MANIFESTS, manifests)
    expected_pods = {decode_pod(p.read_bytes(), str(p)).metadata.name for p in manifests.iterdir()}
    certs, root = tmp_path / "certs", tmp_path / "root"
    cgroup_root = f"/kubeletapi-test-compose-{os.getpid()}"
    env = {
        **entrypoint_env(compose, Path(sys.executable).parent),
        "KUBELETAPI_CERT_DIR": str(certs),
        "KUBELETAPI_ROOT_DIR": str(root),
        "KUBELETAPI_POD_LOGS_DIR": str(tmp_path / "logs"),
        "KUBELETAPI_MANIFESTS": str(manifests),
        # No influxd in this namespace: the sink buffers, which must not hold up anything.
        "INFLUXDB_URL": "http://127.0.0.1:8086",
    }
    container = ('ip link set lo up && mount --bind "$KUBELETAPI_MANIFESTS" "$KUBELETAPI_MANIFESTS" '
                 '&& mount -o remount,bind,ro "$KUBELETAPI_MANIFESTS" && exec "$0" "$@"')
    log = tmp_path / "entrypoint.log"
    with log.open("wb") as out:  # a file, not a pipe: nothing can block on a leftover writer
        proc = subprocess.Popen(
            ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", container, str(ENTRYPOINT),
             "--cgroup-root", cgroup_root, "--housekeeping-interval", "2s"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    node = service(compose, "kubeletapi")["environment"]["NODE_NAME"]
    pids: set[int] = set()
    agents: set[int] = set()  # the entrypoint's children, killed if it could not stop them itself
    try:
        def all_running() -> dict[str, Any] | None:
            assert proc.poll() is None, log.read_text()
            try:
                state = in_netns(proc.pid, POD_STATE)
            except AssertionError:
                return None  # not serving yet
            steady = {n: cs for n, cs in state.items() if not n.startswith("crasher")}
            ready = all(cs and all(c[1] == ["running"] and c[2] for c in cs) for cs in steady.values())
            crashed = any(c[3] >= 1 for c in state.get(f"crasher-{node}", []))
            return state if set(state) == {f"{p}-{node}" for p in expected_pods} and ready and crashed else None

        state = wait_for(all_running, timeout=90, interval=1, what="the demo pods running and ready")
        agents |= {int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()}
        assert not [c for cs in state.values() for c in cs if c[4] == "OOMKilled"], state

        health = service(compose, "kubeletapi")["healthcheck"]["test"]
        assert health[0] == "CMD"
        check = subprocess.run(["nsenter", f"--net=/proc/{proc.pid}/ns/net", *health[1:]], capture_output=True,
                               timeout=30)
        assert check.returncode == 0, check.stderr

        token = (certs / "token").read_text()
        assert token == (certs / "tokens.csv").read_text().split(",", 1)[0]
        info = (certs / "token").stat()
        assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o400, PROMETHEUS_UID, PROMETHEUS_GID)
        codes = in_netns(proc.pid, SECURE_GET, str(certs / "ca.crt"), token, f"not-{token}")
        assert codes == [[200, len(expected_pods)], [401, 0]]

        for record in (root / "runtime" / "process" / "containers").glob("*/container.json"):
            data = json.loads(record.read_text())
            pids |= {p for p in (data.get("app_pid"), data.get("shim_pid")) if p}
        assert pids

        proc.send_signal(signal.SIGTERM)
        proc.wait(90)
        output = log.read_text()
        assert proc.returncode == 0, output
        assert "all pods removed" in output, output
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and proc_state(p) != "Z"]
        assert not alive, f"pod processes left after the container stopped: {alive}"
        assert sorted(p.name for p in manifests.iterdir()) == sorted(p.name for p in DEMO_MANIFESTS.iterdir())
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in agents:
            with contextlib.suppress(OSError):
                if str(certs).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
        purge(["--root-dir", str(root), "--cgroup-root", cgroup_root])
