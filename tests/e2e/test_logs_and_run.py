"""GET /containerLogs and POST /run end to end: real TLS, real agent, real container processes.

One agent (module scope) runs two pods that every table below reads:
- `logs-testnode`: `static` (six known lines, stdout and stderr, with a 1.5 s gap after the third so
  that time filters can split them), `chatty` (a line every 50 ms, forever), `quiet` (one line, then
  silence), `flaky` (exits once, then runs: it has a previous instance) and `long` (a 40000-byte
  line, which the shim writes as partial records);
- `runner-testnode` (restartPolicy OnFailure): `main` (sleeps, with an env var and a workingDir)
  and `done` (printed one line and exited 0, so it is not running and is not restarted).
Follow tests that need control over when a container writes or exits add their own pods, blocked on
trigger files. Log rotation needs `containerLogMaxSize: 1Ki`, so those tests start their own agent.

The agent runs in this process (tests.helpers.Agent), so /proc/self/fd shows which log files the
agent's readers hold open: that is how a test sees that a reader was closed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import Agent, agent_args
from tests.podtools import container, manifest, polled, status_of, wait_for, write

pytestmark = pytest.mark.e2e

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
LOGS, RUNNER = "logs-testnode", "runner-testnode"
LINES = ["one", "two", "three", "four", "five", "six"]  # "two" and "five" go to stderr
ALL = "".join(f"{line}\n" for line in LINES)
UNDECODABLE = '{"message": "Unable to decode query."}'
INVALID = '{"message": "Invalid request."}'
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"  # the kubelet's RFC3339NanoFixed
TEXT = "text/plain; charset=utf-8"

SCRIPTS = {
    "static.sh": "echo one\nsleep 0.1\necho two >&2\nsleep 0.1\necho three\nsleep 1.5\n"
                 "echo four\nsleep 0.1\necho five >&2\nsleep 0.1\necho six\nexec sleep 600\n",
    "chatty.sh": "while :; do echo tick; sleep 0.05; done\n",
    # $1: a marker file; the first instance creates it and fails, the restarted one keeps running.
    "flaky.sh": 'if [ -e "$1" ]; then echo second instance; exec sleep 600; fi\n'
                'touch "$1"\necho first instance\nexit 3\n',
    # A 40000-byte line: the shim writes it as 16 KiB partial (P) records and a final (F) one.
    "long.py": "import sys, time\nsys.stdout.write('x' * 40000 + '\\nend\\n')\nsys.stdout.flush()\ntime.sleep(600)\n",
    "both.sh": "echo to-stderr >&2\nsleep 0.05\necho to-stdout\n",
    "fail.sh": "echo partial output\necho oops >&2\nexit 3\n",
    # $1, $2: trigger files; each block is written only once its trigger exists.
    "follower.sh": 'echo ready\nwhile [ ! -e "$1" ]; do sleep 0.02; done\necho a1\nsleep 0.05\necho a2 >&2\n'
                   'while [ ! -e "$2" ]; do sleep 0.02; done\necho b1\n',
    "count.py": "import os, sys, time\n"
                "trigger, count, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])\n"
                "print('ready', flush=True)\n"
                "while not os.path.exists(trigger):\n    time.sleep(0.01)\n"
                "for i in range(1, count + 1):\n    print(i, flush=True)\n    time.sleep(delay)\n"
                "print('done', flush=True)\n",
}


def write_scripts(directory: Path) -> Path:
    bin_dir = directory / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in SCRIPTS.items():
        (bin_dir / name).write_text(text)
    return bin_dir


@dataclass
class Node:
    """The shared agent, an admin client on its secure port, and the directory it works in."""

    agent: Agent
    client: httpx.Client
    root: Path

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def logs_url(self, pod: str, name: str, query: str = "", namespace: str = "default") -> str:
        url = self.agent.url(path=f"/containerLogs/{namespace}/{pod}/{name}")
        return f"{url}?{query}" if query else url

    def logs(self, pod: str, name: str, query: str = "", **kwargs: Any) -> httpx.Response:
        """A non-follow read; `query` goes on the wire exactly as written."""
        return self.client.get(self.logs_url(pod, name, query), **kwargs)

    @contextlib.contextmanager
    def follow(self, pod: str, name: str, query: str, read_timeout: float = 5.0
               ) -> Iterator[tuple[httpx.Response, Iterator[bytes]]]:
        """A streamed read: the response and its body chunks as they arrive. Leaving the block
        before the body ends drops the connection mid-stream."""
        timeout = httpx.Timeout(10, read=read_timeout)
        with self.client.stream("GET", self.logs_url(pod, name, query), timeout=timeout) as resp:
            yield resp, resp.iter_raw()

    def run(self, pod: str, name: str, cmd: str, uid: str | None = None, namespace: str = "default",
            method: str = "POST") -> httpx.Response:
        path = f"/run/{namespace}/{pod}/{uid}/{name}" if uid else f"/run/{namespace}/{pod}/{name}"
        return self.client.request(method, self.agent.url(path=path), params={"cmd": cmd})

    def pod(self, name: str) -> dict[str, Any] | None:
        items = self.client.get(self.agent.url(path="/pods")).json()["items"]
        return next((p for p in items if p["metadata"]["name"] == name), None)

    def uid(self, pod: str) -> str:
        found = self.pod(pod)
        assert found is not None, pod
        return str(found["metadata"]["uid"])

    def log_file(self, pod: str, name: str, restart: int = 0) -> Path:
        return self.root / "logs" / f"default_{pod}_{self.uid(pod)}" / name / f"{restart}.log"


def container_running(node: Node, pod: str, name: str) -> bool:
    found = node.pod(pod)
    statuses = (found or {}).get("status", {}).get("containerStatuses", [])
    return any(s["name"] == name and "running" in s["state"] for s in statuses)


def open_fds_on(path: Path) -> int:
    """How many descriptors of this process (the in-process agent) are open on `path`."""
    target = path.stat()
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            st = os.stat(f"/proc/self/fd/{fd}")
            count += (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino)
    return count


def read_until(chunks: Iterator[bytes], want: bytes, got: bytes = b"") -> bytes:
    """Read streamed chunks until `want` has arrived (each read bounded by the read timeout)."""
    while want not in got:
        chunk = next(chunks, None)
        assert chunk is not None, f"stream ended before {want!r}; got {got!r}"
        got += chunk
    return got


def stamps(node: Node, pod: str, name: str) -> dict[str, str]:
    """line -> its record's timestamp, as /containerLogs?timestamps=true prints them."""
    out = {}
    for line in node.logs(pod, name, "timestamps=true").text.splitlines():
        stamp, _, text = line.partition(" ")
        out[text] = stamp
    return out


def epoch(stamp: str) -> float:
    whole = dt.datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC)
    return whole.timestamp() + float("0" + stamp[19:-1])


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("logsrun")
    bin_dir = write_scripts(root)
    (root / "manifests").mkdir()
    agent = Agent(agent_args(root, "--pod-manifest-path", str(root / "manifests")))
    client = agent.admin()
    node = Node(agent, client, root)
    try:
        write(node.manifests, "logs.yaml", manifest(
            "logs",
            container("static", ["sh", str(bin_dir / "static.sh")])
            + container("chatty", ["sh", str(bin_dir / "chatty.sh")])
            + container("quiet", ["sh", "-c", "echo hello; exec sleep 600"])
            + container("flaky", ["sh", str(bin_dir / "flaky.sh"), str(root / "flaky.marker")])
            + container("long", ["python3", str(bin_dir / "long.py")]),
        ))
        write(node.manifests, "runner.yaml", manifest(
            "runner",
            container("main", ["sleep", "600"],
                      f"env:\n- name: GREETING\n  value: hello world\nworkingDir: {root.resolve()}\n")
            + container("done", ["sh", "-c", "echo finished"]),
            spec_extra="restartPolicy: OnFailure",
        ))
        # Wait on what the tests read: every line written, the restart done.
        wait_for(lambda: node.logs(LOGS, "static").text == ALL, what="static's six lines")
        wait_for(lambda: node.logs(LOGS, "flaky", "previous=true").status_code == 200, what="flaky restarted")
        wait_for(lambda: node.logs(LOGS, "quiet").text == "hello\n", what="quiet's line")
        wait_for(lambda: node.logs(LOGS, "long").text.endswith("end\n"), what="long's lines")
        wait_for(lambda: node.run(RUNNER, "main", "true").status_code == 200, what="runner/main runnable")
        wait_for(lambda: "terminated" in polled(node.pod(RUNNER) or {"status": {}}, "done")["state"],
                 what="runner/done exited")
        yield node
    finally:
        client.close()  # an idle keep-alive connection would hold the agent's shutdown for 5 s
        agent.close()


def start_pod(node: Node, name: str, containers: str, spec_extra: str = "") -> str:
    """Add a pod to the shared agent; returns its full name once every container has started."""
    write(node.manifests, f"{name}.yaml", manifest(name, containers, spec_extra))
    full = f"{name}-testnode"
    wait_for(lambda: (p := node.pod(full)) and p["status"].get("containerStatuses")
             and all("running" in s["state"] for s in p["status"]["containerStatuses"]), what=f"{full} running")
    return full


# --- /containerLogs: parameters ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("", ALL, id="everything-stdout-and-stderr"),
        pytest.param("follow=false", ALL, id="follow-false"),
        pytest.param("tailLines=2", "five\nsix\n", id="tailLines"),
        pytest.param("tailLines=0", "", id="tailLines-0"),
        pytest.param("tailLines=100", ALL, id="tailLines-more-than-there-are"),
        pytest.param("tailLines=1&tailLines=3", "six\n", id="tailLines-first-value-wins"),
        pytest.param("tail=3", "four\nfive\nsix\n", id="tail-alias"),
        pytest.param("tail=all", ALL, id="tail-all"),
        pytest.param("tail=all&tailLines=1", ALL, id="tail-all-drops-tailLines"),
        pytest.param("tail=1&tailLines=4", "six\n", id="tail-replaces-tailLines"),
        pytest.param("tail=&tailLines=2", "five\nsix\n", id="empty-tail-ignored"),
        pytest.param("limitBytes=4", "one\n", id="limitBytes-whole-line"),
        pytest.param("limitBytes=5", "one\nt", id="limitBytes-cuts-mid-line"),
        pytest.param("limitBytes=100000", ALL, id="limitBytes-more-than-there-is"),
        pytest.param("limitBytes=3&limitBytes=100", "one", id="limitBytes-first-value-wins"),
        pytest.param("tailLines=2&limitBytes=7", "five\nsi", id="tailLines-and-limitBytes"),
        pytest.param("sinceTime=2000-01-01T00:00:00Z", ALL, id="sinceTime-past"),
        pytest.param("sinceTime=2999-01-01T00:00:00Z", "", id="sinceTime-future"),
        pytest.param("sinceTime=2000-01-01T01:00:00%2B01:00", ALL, id="sinceTime-offset"),
        pytest.param("sinceTime=", ALL, id="sinceTime-empty-is-zero-time"),
        pytest.param("sinceTime=null", ALL, id="sinceTime-null-is-zero-time"),
        pytest.param("sinceSeconds=86400", ALL, id="sinceSeconds-a-day"),
        pytest.param("previous=false", ALL, id="previous-false"),
        pytest.param("stream=All", ALL, id="stream-All-without-the-gate"),
        pytest.param("insecureSkipTLSVerifyBackend=true", ALL, id="insecureSkipTLSVerifyBackend-ignored"),
        pytest.param("noSuchOption=1", ALL, id="unknown-key-ignored"),
    ],
)
def test_log_options(node: Node, query: str, expected: str) -> None:
    resp = node.logs(LOGS, "static", query)
    assert (resp.status_code, resp.text) == (200, expected)
    assert resp.headers["content-type"] == TEXT
    assert resp.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in resp.headers


@pytest.mark.parametrize(
    ("query", "stamped"),
    [
        pytest.param("timestamps=true", True, id="true"),
        pytest.param("timestamps=1", True, id="1"),
        pytest.param("timestamps=", True, id="empty-is-true"),
        pytest.param("timestamps", True, id="bare-key-is-true"),
        pytest.param("timestamps=no", True, id="no-is-true"),
        pytest.param("timestamps=yes&timestamps=false", True, id="first-value-wins-true"),
        pytest.param("timestamps=false", False, id="false"),
        pytest.param("timestamps=FALSE", False, id="FALSE"),
        pytest.param("timestamps=0", False, id="0"),
        pytest.param("timestamps=0&timestamps=true", False, id="first-value-wins-false"),
    ],
)
def test_timestamps_bool_decoding(node: Node, query: str, stamped: bool) -> None:
    """Only "0" and "false" (any case) are false, as in the kubelet's query conversion."""
    resp = node.logs(LOGS, "static", f"{query}&tailLines=1")
    assert resp.status_code == 200
    assert re.fullmatch(f"{STAMP} six\n" if stamped else "six\n", resp.text), resp.text


def test_timestamps_prefix_every_line_in_record_order(node: Node) -> None:
    resp = node.logs(LOGS, "static", "timestamps=true")
    lines = resp.text.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == LINES
    assert all(re.fullmatch(f"{STAMP} [a-z]+", line) for line in lines), lines
    times = [epoch(line.split(" ", 1)[0]) for line in lines]
    assert times == sorted(times)
    assert times[3] - times[2] > 1.4  # the pause in static.sh
    assert abs(times[-1] - time.time()) < 600
    # limitBytes counts the prefix too.
    assert node.logs(LOGS, "static", "timestamps=true&limitBytes=11").text == lines[0][:11]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("", "x{40000}\nend\n", id="partial-records-joined"),
        pytest.param("timestamps=true", f"{STAMP} x{{40000}}\n{STAMP} end\n", id="one-timestamp-per-line"),
        pytest.param("tailLines=1", "end\n", id="tailLines"),
        # tailLines counts file records, and a partial record is one (as the kubelet does).
        pytest.param("tailLines=2", f"x{{{40000 - 2 * 16384}}}\nend\n", id="tailLines-counts-records"),
        pytest.param("limitBytes=16390", "x{16390}", id="limitBytes-across-records"),
    ],
)
def test_long_lines(node: Node, query: str, expected: str) -> None:
    resp = node.logs(LOGS, "long", query)
    assert resp.status_code == 200
    assert re.fullmatch(expected, resp.text), resp.text[-80:]


def test_since_time_keeps_records_stamped_at_or_after_it(node: Node) -> None:
    at = stamps(node, LOGS, "static")
    # Exact RFC3339Nano of a record: that record is included.
    assert node.logs(LOGS, "static", f"sinceTime={at['five']}").text == "five\nsix\n"
    # Whole seconds, as kubectl sends them: "four" came >1 s after "three", so its second is after "three".
    second = at["four"][:19]
    assert node.logs(LOGS, "static", f"sinceTime={second}Z").text == "four\nfive\nsix\n"
    # The same instant written with a +02:00 offset.
    shifted = dt.datetime.strptime(second, "%Y-%m-%dT%H:%M:%S") + dt.timedelta(hours=2)
    resp = node.client.get(node.logs_url(LOGS, "static"),
                           params={"sinceTime": shifted.strftime("%Y-%m-%dT%H:%M:%S+02:00")})
    assert resp.text == "four\nfive\nsix\n"


def test_since_seconds_counts_back_from_now(node: Node) -> None:
    at = stamps(node, LOGS, "static")
    # Pick N so that now-N falls between "three" and "four" (1.5 s apart), 0.25 s from either.
    seconds = math.ceil(time.time() - epoch(at["four"]) + 0.25)
    resp = node.logs(LOGS, "static", f"sinceSeconds={seconds}")
    assert (resp.status_code, resp.text) == (200, "four\nfive\nsix\n")


# --- /containerLogs: errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("tailLines=abc", id="tailLines-abc"),
        pytest.param("tailLines=", id="tailLines-empty"),
        pytest.param("tailLines=1.5", id="tailLines-fraction"),
        pytest.param("tailLines=%201", id="tailLines-space"),
        pytest.param("tailLines=99999999999999999999", id="tailLines-overflows-int64"),
        pytest.param("tail=abc", id="tail-abc"),
        pytest.param("limitBytes=ten", id="limitBytes-word"),
        pytest.param("sinceSeconds=1s", id="sinceSeconds-with-unit"),
        pytest.param("sinceTime=yesterday", id="sinceTime-word"),
        pytest.param("sinceTime=2024-01-01", id="sinceTime-date-only"),
        pytest.param("sinceTime=2000-01-01T00:00:00+01:00", id="sinceTime-unencoded-plus-is-a-space"),
        pytest.param("follow=true&tailLines=x", id="with-follow"),
    ],
)
def test_undecodable_query_is_400(node: Node, query: str) -> None:
    resp = node.logs(LOGS, "static", query)
    assert (resp.status_code, resp.text) == (400, UNDECODABLE)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("sinceSeconds=10&sinceTime=2000-01-01T00:00:00Z", id="sinceSeconds-and-sinceTime"),
        pytest.param("sinceSeconds=10&sinceTime=", id="sinceSeconds-and-empty-sinceTime"),
        pytest.param("tailLines=-1", id="tailLines-negative"),
        pytest.param("tail=-1", id="tail-negative"),
        pytest.param("limitBytes=0", id="limitBytes-0"),
        pytest.param("limitBytes=-1", id="limitBytes-negative"),
        pytest.param("sinceSeconds=0", id="sinceSeconds-0"),
        pytest.param("sinceSeconds=-5", id="sinceSeconds-negative"),
        pytest.param("stream=Bogus", id="stream-unknown"),
        pytest.param("stream=Stdout&tailLines=1", id="stream-with-tailLines"),
    ],
)
def test_invalid_options_are_422(node: Node, query: str) -> None:
    resp = node.logs(LOGS, "static", query)
    assert (resp.status_code, resp.text) == (422, INVALID)


@pytest.mark.parametrize(
    ("namespace", "pod", "name", "query", "status", "body"),
    [
        pytest.param("default", "nope", "static", "", 404, 'pod "nope" does not exist', id="unknown-pod"),
        pytest.param("kube-system", LOGS, "static", "", 404, f'pod "{LOGS}" does not exist',
                     id="pod-in-another-namespace"),
        pytest.param("default", LOGS, "nope", "", 404, f'container "nope" not found in pod "{LOGS}"',
                     id="unknown-container"),
        pytest.param("default", "nope", "static", "tailLines=abc", 400, UNDECODABLE, id="decoding-before-lookup"),
        pytest.param("default", "nope", "static", "limitBytes=0", 422, INVALID, id="validation-before-lookup"),
        pytest.param("default", "nope", "static", "stream=Stdout", 404, 'pod "nope" does not exist',
                     id="lookup-before-stream-gate"),
        pytest.param("default", LOGS, "static", "stream=Stdout", 400,
                     'unable to return the given log stream: "Stdout". '
                     "Please enable PodLogsQuerySplitStreams feature gate in kubelet", id="stream-Stdout-needs-gate"),
        pytest.param("default", LOGS, "static", "stream=Stderr", 400,
                     'unable to return the given log stream: "Stderr". '
                     "Please enable PodLogsQuerySplitStreams feature gate in kubelet", id="stream-Stderr-needs-gate"),
    ],
)
def test_log_errors(node: Node, namespace: str, pod: str, name: str, query: str, status: int, body: str) -> None:
    resp = node.client.get(node.logs_url(pod, name, query, namespace))
    assert (resp.status_code, resp.text) == (status, body)
    assert resp.headers["content-type"].startswith("text/plain")


def test_container_logs_is_get_only(node: Node) -> None:
    resp = node.client.post(node.logs_url(LOGS, "static"))
    assert resp.status_code == 405


def test_a_rejected_stream_option_does_not_leak_the_log_file(node: Node) -> None:
    log = node.log_file(LOGS, "static")
    before = open_fds_on(log)
    for stream in ("Stdout", "Stderr", "Stdout"):
        assert node.logs(LOGS, "static", f"stream={stream}").status_code == 400
    assert open_fds_on(log) == before


# --- /containerLogs: previous ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("", "second instance\n", id="current"),
        pytest.param("previous=false", "second instance\n", id="previous-false"),
        pytest.param("previous=true", "first instance\n", id="previous-true"),
        pytest.param("previous=1", "first instance\n", id="previous-1"),
        pytest.param("previous", "first instance\n", id="previous-bare-key"),
        pytest.param("previous=true&follow=true", "first instance\n", id="previous-follow-ends-at-once"),
        pytest.param("previous=true&timestamps=true", f"{STAMP} first instance\n", id="previous-timestamps"),
    ],
)
def test_previous_reads_the_instance_before_the_restart(node: Node, query: str, expected: str) -> None:
    resp = node.logs(LOGS, "flaky", query, timeout=5)
    assert resp.status_code == 200
    assert re.fullmatch(expected, resp.text), resp.text
    assert status_of(node.pod(LOGS) or {}, "flaky")["restartCount"] == 1


@pytest.mark.parametrize(
    ("pod", "name"),
    [
        pytest.param(LOGS, "static", id="running-never-restarted"),
        pytest.param(RUNNER, "done", id="exited-never-restarted"),
    ],
)
def test_previous_without_a_previous_instance_is_400(node: Node, pod: str, name: str) -> None:
    resp = node.logs(pod, name, "previous=true")
    assert resp.status_code == 400
    assert resp.text.startswith(f'previous terminated container "{name}" in pod "{pod}"'), resp.text


def test_previous_without_a_previous_instance_has_the_kubelet_message(node: Node) -> None:
    resp = node.logs(LOGS, "static", "previous=true")
    assert resp.text == f'previous terminated container "static" in pod "{LOGS}" not found'


def test_logs_of_an_exited_container(node: Node) -> None:
    assert node.logs(RUNNER, "done").text == "finished\n"
    started = time.monotonic()
    assert node.logs(RUNNER, "done", "follow=true", timeout=5).text == "finished\n"
    assert time.monotonic() - started < 2  # following a container that is not running ends at once


# --- /containerLogs: follow --------------------------------------------------------------------


def test_follow_streams_new_lines_and_ends_when_the_container_exits(node: Node) -> None:
    go1, go2 = node.root / "follow.go1", node.root / "follow.go2"
    pod = start_pod(node, "follower", container("c", ["sh", str(node.bin / "follower.sh"), str(go1), str(go2)]),
                    "restartPolicy: Never")
    wait_for(lambda: node.logs(pod, "c").text == "ready\n", what="follower ready")
    with node.follow(pod, "c", "follow=true") as (resp, chunks):
        assert resp.status_code == 200
        assert resp.headers["content-type"] == TEXT
        assert resp.headers["transfer-encoding"] == "chunked"
        got = read_until(chunks, b"ready\n")
        go1.touch()
        got = read_until(chunks, b"a2\n", got)  # streamed while the container still runs (it waits on go2)
        assert got == b"ready\na1\na2\n"
        assert container_running(node, pod, "c")
        go2.touch()
        started = time.monotonic()
        got += b"".join(chunks)  # ends by itself once the container has exited
        assert time.monotonic() - started < 5
    assert got == b"ready\na1\na2\nb1\n"


@pytest.mark.parametrize(
    ("query", "follows"),
    [
        pytest.param("follow=true", True, id="true"),
        pytest.param("follow=1", True, id="1"),
        pytest.param("follow=", True, id="empty-is-true"),
        pytest.param("follow", True, id="bare-key-is-true"),
        pytest.param("follow=no", True, id="no-is-true"),
        pytest.param("follow=false", False, id="false"),
        pytest.param("follow=False", False, id="False"),
        pytest.param("follow=0", False, id="0"),
    ],
)
def test_follow_bool_decoding(node: Node, query: str, follows: bool) -> None:
    """tailLines=0 on a silent running container: following waits, not following ends empty."""
    with node.follow(LOGS, "quiet", f"{query}&tailLines=0", read_timeout=0.4) as (resp, chunks):
        assert resp.status_code == 200
        if follows:
            with pytest.raises(httpx.ReadTimeout):
                next(chunks)
        else:
            assert b"".join(chunks) == b""


def test_follow_with_limit_bytes_ends_while_the_container_runs(node: Node) -> None:
    resp = node.logs(LOGS, "chatty", "follow=true&limitBytes=12", timeout=5)
    assert (resp.status_code, resp.text) == (200, "tick\ntick\nti")


def test_follow_with_tail_lines_starts_from_the_tail(node: Node) -> None:
    latest = node.logs(LOGS, "chatty", "tailLines=1&timestamps=true").text.split(" ")[0]
    with node.follow(LOGS, "chatty", "follow=true&tailLines=1&timestamps=true") as (_, chunks):
        got = read_until(chunks, b"\n")
        cut = got.index(b"\n") + 1
        got = got[:cut] + read_until(chunks, b"\n", got[cut:])  # and then the lines that follow
    lines = got.decode().splitlines()
    assert len(lines) >= 2
    assert lines[0].split(" ")[0] >= latest  # started at the last line, not at the beginning
    assert all(re.fullmatch(f"{STAMP} tick", line) for line in lines), lines


@pytest.mark.parametrize(
    ("name", "query"),
    [
        pytest.param("chatty", "follow=true", id="while-lines-arrive"),
        pytest.param("quiet", "follow=true&tailLines=1", id="while-waiting-for-lines"),
    ],
)
def test_client_disconnect_mid_stream_leaves_the_agent_healthy(node: Node, name: str, query: str) -> None:
    log = node.log_file(LOGS, name)
    wait_for(lambda: open_fds_on(log) == 0, timeout=5, what="readers of earlier tests closed")
    with node.follow(LOGS, name, query) as (resp, chunks):
        assert resp.status_code == 200
        assert next(chunks)
        assert open_fds_on(log) == 1  # the agent's reader
    # The connection was dropped mid-stream: the agent closes its reader and goes on serving.
    wait_for(lambda: open_fds_on(log) == 0, timeout=5, what="the agent to close the log after the client left")
    health = node.client.get(node.agent.url(path="/healthz"))
    assert (health.status_code, health.text) == (200, "ok")
    assert node.logs(LOGS, "quiet").text == "hello\n"
    assert node.logs(LOGS, name, "limitBytes=5").text in ("tick\n", "hello")


def test_endpoints_answer_as_soon_as_pods_reports_running(node: Node) -> None:
    """/pods, /run and /containerLogs agree: no window where a running container is unknown.

    Regression: the endpoints used to look containers up in the PLEG cache (relisted once a second),
    so for ~0.9 s after /pods showed Running, /run said 500 "not running" and /containerLogs 400.
    """
    previous = start_pod(node, "fresh0", container("c", ["sleep", "600"]))
    for i in (1, 2):
        # Were the endpoints to lag behind the PLEG relist, /run would start answering right after
        # one: the next is then about a second away and the next pod is Running well before it.
        wait_for(lambda p=previous: node.run(p, "c", "true").status_code == 200, interval=0.005)
        pod = start_pod(node, f"fresh{i}", container("c", ["sleep", "600"]))
        run = node.run(pod, "c", "true")
        logs = node.logs(pod, "c")
        assert (run.status_code, logs.status_code) == (200, 200), (run.text, logs.text)
        previous = pod


# --- /containerLogs: follow across log rotation ------------------------------------------------


def follow_counter(start_agent: Callable[..., Agent], tmp_path: Path, count: int, delay: float
                   ) -> tuple[list[str], list[str], Path]:
    """Follow a container printing 1..count (one line per `delay` s) on an agent rotating its logs
    at 1 KiB; returns the followed lines, a plain read's lines afterwards, and the log directory."""
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + "containerLogMaxSize: 1Ki\n")
    agent = start_agent("--config", str(config), manifests=True)
    script = write_scripts(tmp_path) / "count.py"
    trigger = tmp_path / "go"
    write(tmp_path / "manifests", "counter.yaml", manifest(
        "counter", container("c", ["python3", str(script), str(trigger), str(count), str(delay)]),
        "restartPolicy: Never"))
    url = agent.url(path="/containerLogs/default/counter-testnode/c")
    with agent.admin() as client:
        wait_for(lambda: client.get(url).text == "ready\n", what="counter ready")
        with client.stream("GET", f"{url}?follow=true", timeout=httpx.Timeout(10, read=5)) as resp:
            chunks = resp.iter_raw()
            got = read_until(chunks, b"ready\n")
            trigger.touch()
            got += b"".join(chunks)
        plain = client.get(url).text.splitlines()
        pod = client.get(agent.url(path="/pods")).json()["items"][0]
    log_dir = tmp_path / "logs" / f"default_counter-testnode_{pod['metadata']['uid']}" / "c"
    return got.decode().splitlines(), plain, log_dir


def test_follow_across_log_rotation_loses_and_repeats_nothing(start_agent: Callable[..., Agent],
                                                              tmp_path: Path) -> None:
    count = 150  # ~44 bytes a record: about six rotations at 1 KiB, one every ~0.5 s
    followed, plain, log_dir = follow_counter(start_agent, tmp_path, count, delay=0.02)
    assert followed == ["ready", *map(str, range(1, count + 1)), "done"]
    rotated = sorted(p.name for p in log_dir.glob("0.log.*"))
    assert 1 <= len(rotated) <= 4, rotated  # containerLogMaxFiles 5: the current file and 4 rotated
    on_disk = b"".join(p.read_bytes() for p in log_dir.iterdir())
    assert b" stdout F 1\n" not in on_disk  # the first lines were followed from files pruned since
    # A plain read serves the current file only: a run of the last numbers, then "done".
    assert plain[-1] == "done"
    assert plain[:-1] == [str(n) for n in range(count - len(plain) + 2, count + 1)]


def test_follow_across_fast_log_rotation_loses_nothing(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    count = 400  # ~250 lines/s: a rotation every ~0.1 s, 4 rotated files hold ~0.37 s of output
    followed, _, _ = follow_counter(start_agent, tmp_path, count, delay=0.004)
    numbers = [int(n) for n in followed if n.isdigit()]
    assert len(numbers) == len(set(numbers))
    assert numbers == sorted(numbers)
    assert numbers == list(range(1, count + 1)), f"{count - len(numbers)} lines lost"


# --- /run --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cmd", "expected"),
    [
        pytest.param("printenv GREETING", "hello world\n", id="env-from-the-manifest"),
        pytest.param("echo hello", "hello\n", id="echo"),
        pytest.param("echo  two", " two\n", id="split-on-single-spaces"),
        pytest.param("pwd", "{root}\n", id="workingDir"),
        pytest.param("sh {bin}/both.sh", "to-stdout\nto-stderr\n", id="stdout-then-stderr"),
        pytest.param("true", "", id="no-output"),
    ],
)
@pytest.mark.parametrize("with_uid", [pytest.param(False, id="name"), pytest.param(True, id="uid")])
def test_run(node: Node, cmd: str, expected: str, with_uid: bool) -> None:
    """Combined output (stdout, then stderr), 200 with the kubelet's application/json quirk."""
    uid = node.uid(RUNNER) if with_uid else None
    resp = node.run(RUNNER, "main", cmd.format(bin=node.bin), uid=uid)
    assert (resp.status_code, resp.text) == (200, expected.format(root=node.root.resolve()))
    assert resp.headers["content-type"] == "application/json"


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root")
def test_run_enters_the_container_namespaces(node: Node) -> None:
    assert node.run(RUNNER, "main", "hostname").text == f"{RUNNER}\n"
    cgroups = node.run(RUNNER, "main", "cat /proc/self/cgroup").text
    assert f"pod{node.uid(RUNNER)}" in cgroups


@pytest.mark.parametrize(
    ("cmd", "body"),
    [
        pytest.param("sh {bin}/fail.sh", "command 'sh {bin}/fail.sh' exited with 3: oops\n", id="stderr"),
        pytest.param("false", "command 'false' exited with 1: ", id="no-output"),
    ],
)
def test_run_non_zero_exit_is_an_error(node: Node, cmd: str, body: str) -> None:
    """As the kubelet (ExecSync's CodeExitError): 500, the command, its exit code and stderr."""
    resp = node.run(RUNNER, "main", cmd.format(bin=node.bin))
    assert resp.status_code == 500
    assert resp.text == body.format(bin=node.bin)


@pytest.mark.parametrize(
    ("namespace", "pod", "uid", "name", "status", "body"),
    [
        pytest.param("default", "nope", None, "main", 404, "pod does not exist", id="unknown-pod"),
        pytest.param("kube-system", RUNNER, None, "main", 404, "pod does not exist", id="pod-in-another-namespace"),
        pytest.param("default", "nope", "0123", "main", 404, "pod does not exist", id="unknown-pod-with-uid"),
        pytest.param("default", RUNNER, "0123", "main", 404, "pod does not exist", id="wrong-uid"),
        # The kubelet's RunInContainer: only running containers are found; errors are 500.
        pytest.param("default", RUNNER, None, "nope", 500, 'container not found ("nope")', id="unknown-container"),
        pytest.param("default", RUNNER, "UID", "nope", 500, 'container not found ("nope")',
                     id="unknown-container-with-uid"),
        pytest.param("default", RUNNER, None, "done", 500, 'container not found ("done")', id="not-running"),
    ],
)
def test_run_errors(node: Node, namespace: str, pod: str, uid: str | None, name: str, status: int,
                    body: str) -> None:
    uid = node.uid(RUNNER) if uid == "UID" else uid
    resp = node.run(pod, name, "echo hi", uid=uid, namespace=namespace)
    assert (resp.status_code, resp.text) == (status, body)


@pytest.mark.parametrize("with_uid", [pytest.param(False, id="name"), pytest.param(True, id="uid")])
def test_run_is_post_only(node: Node, with_uid: bool) -> None:
    resp = node.run(RUNNER, "main", "echo hi", uid=node.uid(RUNNER) if with_uid else None, method="GET")
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"
