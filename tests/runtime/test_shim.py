"""kubeletapi-shim end to end: real daemons, containers, logs, namespaces and cgroups.

Every test starts real processes and cleans them up by pid (and the cgroups it creates). Tests
that need root (namespaces, mounts, cgroups) skip with a reason otherwise. The whole file runs in
a few seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import pty
import re
import secrets
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubeletapi.errors import StartupError
from kubeletapi.runtime.logfiles import rotated_files
from kubeletapi.runtime.process import shimbuild

IS_ROOT = os.geteuid() == 0
requires_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: namespaces, mounts and cgroups")
CGROUP_V1 = Path("/sys/fs/cgroup")
requires_cgroup_v1 = pytest.mark.skipif(
    not (IS_ROOT and all((CGROUP_V1 / c / "cgroup.procs").exists() for c in ("memory", "pids"))),
    reason="needs root and cgroup v1 memory and pids hierarchies at /sys/fs/cgroup",
)
# Go's RFC3339Nano: UTC, up to 9 fraction digits, no trailing zeros (no fraction at all when 0).
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z$")
ROTATED = re.compile(r"^c\.log\.(\d{8}-\d{6})(?:\.(\d+))?$")
MAX_LINE = 16384


# --- helpers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Exit:
    code: int
    signal: int
    finished_ns: int
    reason: str
    message: str


@dataclass(frozen=True)
class Record:
    time: str
    stream: str
    tag: str
    content: str


def parse_records(path: Path) -> list[Record]:
    # Bytes, not read_text(): universal newlines would eat the \r a tty produces.
    lines = path.read_bytes().decode().split("\n")
    assert lines[-1] == "", "every record ends with a newline"
    return [Record(*line.split(" ", 3)) for line in lines[:-1]]


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ppid_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


class Container:
    """One `kubeletapi-shim run` and the files it writes."""

    def __init__(self, state: Path, log: Path) -> None:
        self.state = state
        self.log = log

    @property
    def shim_pid(self) -> int:
        return int((self.state / "shim.pid").read_text())

    @property
    def started(self) -> tuple[int, int, int] | None:
        path = self.state / "started"
        if not path.exists():
            return None
        app, init, when = (int(x) for x in path.read_text().split())
        return app, init, when

    @property
    def app_pid(self) -> int:
        assert self.started is not None
        return self.started[0]

    def wait_exit(self, timeout: float = 5.0) -> Exit:
        path = self.state / "exit"
        wait_for(path.exists, timeout, f"{path}")
        head, _, message = path.read_text().partition("\n")
        code, sig, finished, reason = head.split(" ")
        return Exit(int(code), int(sig), int(finished), reason, message)

    def records(self) -> list[Record]:
        return parse_records(self.log)

    def contents(self) -> list[str]:
        return [r.content for r in self.records()]

    def cleanup(self) -> None:
        if not (self.state / "exit").exists() and self.started:
            app, init, _ = self.started
            kill(init or app)
            with contextlib.suppress(AssertionError):
                self.wait_exit()
        with contextlib.suppress(OSError, ValueError):
            pid = self.shim_pid
            with contextlib.suppress(AssertionError):
                wait_for(lambda: not alive(pid), 2.0)
            if alive(pid) and b"kubeletapi-shim" in Path(f"/proc/{pid}/cmdline").read_bytes():
                kill(pid)


@pytest.fixture(scope="module")
def shim() -> Path:
    return shimbuild.shim_path()


RunShim = Callable[..., Container]


@pytest.fixture
def run(shim: Path, tmp_path: Path) -> Iterator[RunShim]:
    """Start containers with `run(*argv, opts=[...])`; every one is killed and waited for afterwards."""
    containers: list[Container] = []
    counter = itertools.count()

    def start(*argv: str, opts: Sequence[str] = (), log: bool = True, env: dict[str, str] | None = None) -> Container:
        n = next(counter)
        state, logs = tmp_path / f"state{n}", tmp_path / f"logs{n}"
        state.mkdir()
        logs.mkdir()
        c = Container(state, logs / "c.log")
        containers.append(c)
        log_opts = ["--log", str(c.log)] if log else []
        # capture_output also proves the daemon lets go of the caller's pipes: else this hangs.
        result = subprocess.run([str(shim), "run", "--state", str(state), *log_opts, *opts, "--", *argv],
                                capture_output=True, text=True, timeout=10, env=env)
        assert result.returncode == 0, result.stderr
        # The invoker returns only once the daemon recorded the start (or the failure to start).
        assert (state / "started").exists() or (state / "exit").exists()
        return c

    yield start
    for c in containers:
        c.cleanup()


def exec_shim(shim: Path, *args: str, timeout: float = 10) -> tuple[int, str, str]:
    """Exit code, stdout, stderr (decoded without newline translation: a tty's \\r matters)."""
    result = subprocess.run([str(shim), "exec", *args], capture_output=True, timeout=timeout)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


# --- build -------------------------------------------------------------------------------------
def test_source_compiles_warning_free(tmp_path: Path) -> None:
    result = subprocess.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "shim"),
                             str(shimbuild.SHIM_SOURCE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_shim_path_is_cached_and_named_by_source_hash(shim: Path) -> None:
    assert re.fullmatch(r"kubeletapi-shim-[0-9a-f]{12}", shim.name)
    assert shim.name == shimbuild.binary_name(shimbuild.SHIM_SOURCE)
    assert shimbuild.shim_path() == shim
    assert os.access(shim, os.X_OK)


HELLO_C = '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n'


def test_build_uses_the_first_writable_dir(tmp_path: Path) -> None:
    source = tmp_path / "hello.c"
    source.write_text(HELLO_C)
    (tmp_path / "file").write_text("")
    unusable = tmp_path / "file" / "bin"  # below a regular file: cannot be created
    built = shimbuild.ensure_built(source, [unusable, tmp_path / "cache"])
    assert built.parent == tmp_path / "cache"
    assert subprocess.run([str(built)], capture_output=True, text=True, check=True).stdout == "hi\n"
    assert [p.name for p in built.parent.iterdir()] == [built.name], "no temporary file is left behind"


def test_concurrent_builds_install_one_complete_binary(tmp_path: Path) -> None:
    source = tmp_path / "hello.c"
    source.write_text(HELLO_C)
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(shimbuild.ensure_built(source, [tmp_path / "bin"])))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2
    assert results[0] == results[1]
    assert subprocess.run([str(results[0])], capture_output=True, text=True, check=True).stdout == "hi\n"


def test_build_failure_raises_startup_error_with_the_compiler_message(tmp_path: Path) -> None:
    source = tmp_path / "broken.c"
    source.write_text("int main(void) { return undeclared_thing; }\n")
    with pytest.raises(StartupError, match="undeclared_thing"):
        shimbuild.ensure_built(source, [tmp_path / "bin"])
    assert list((tmp_path / "bin").iterdir()) == []


def test_missing_compiler_raises_startup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "hello.c"
    source.write_text(HELLO_C)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(StartupError, match=r"set \$CC"):
        shimbuild.ensure_built(source, [tmp_path / "bin"])


def test_module_main_prints_the_path(shim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert shimbuild.main() == 0
    assert capsys.readouterr().out == f"{shim}\n"


# --- command line ------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "error"), [
    pytest.param(["run", "--", "true"], "--state is required", id="no-state"),
    pytest.param(["run", "--state", "/nonexistent-state", "--", "true"], "not an existing directory", id="bad-state"),
    pytest.param(["run", "--state", "/tmp", "true"], "the command goes after --", id="no-dashdash"),
    pytest.param(["run", "--state", "/tmp", "--"], "missing -- ARGV", id="no-argv"),
    pytest.param(["run", "--state", "/tmp", "--hostname", "x", "--", "true"], "need --namespaces", id="hostname-alone"),
    pytest.param(["run", "--state", "/tmp", "--log-max-files", "1", "--", "true"], "--log-max-files", id="one-file"),
    pytest.param(["run", "--state", "/tmp", "--oom-score-adj", "x", "--", "true"], "invalid value", id="bad-number"),
    pytest.param(["run", "--state", "/tmp", "--frobnicate", "--", "true"], "unknown option", id="unknown"),
    pytest.param(["run", "--state", "/tmp", "--lock-fd", "1", "--", "true"], "invalid value", id="lock-on-stdio"),
    pytest.param(["nonsense"], "expected a command", id="no-command"),
])
def test_run_usage_errors_exit_1(shim: Path, args: list[str], error: str) -> None:
    result = subprocess.run([str(shim), *args], capture_output=True, text=True, timeout=5)
    assert result.returncode == 1
    assert error in result.stderr
    assert "usage:" in result.stderr


# --- logs --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("script", "expected"), [
    pytest.param("echo one; echo two", [("stdout", "F", "one"), ("stdout", "F", "two")], id="full-lines"),
    pytest.param("echo oops >&2", [("stderr", "F", "oops")], id="stderr"),
    pytest.param("echo", [("stdout", "F", "")], id="empty-line"),
    pytest.param("printf abc", [("stdout", "P", "abc")], id="no-final-newline"),
    pytest.param("head -c 40000 /dev/zero | tr '\\0' x; echo",
                 [("stdout", "P", "x" * MAX_LINE), ("stdout", "P", "x" * MAX_LINE),
                  ("stdout", "F", "x" * (40000 - 2 * MAX_LINE))], id="long-line"),
    pytest.param(f"head -c {MAX_LINE} /dev/zero | tr '\\0' y; echo", [("stdout", "F", "y" * MAX_LINE)],
                 id="line-of-exactly-max"),
    pytest.param("head -c 20000 /dev/zero | tr '\\0' z",
                 [("stdout", "P", "z" * MAX_LINE), ("stdout", "P", "z" * (20000 - MAX_LINE))], id="long-unterminated"),
])
def test_log_records(run: RunShim, script: str, expected: list[tuple[str, str, str]]) -> None:
    c = run("sh", "-c", script)
    assert c.wait_exit().reason == "Completed"
    records = c.records()
    assert [(r.stream, r.tag, r.content) for r in records] == expected
    now = datetime.now(UTC)
    for r in records:
        assert TIMESTAMP.match(r.time), r.time
        assert abs((now - datetime.fromisoformat(r.time)).total_seconds()) < 10


def test_log_timestamps_trim_trailing_zeros(run: RunShim) -> None:
    c = run("sh", "-c", "for i in $(seq 1 200); do echo $i; done")
    c.wait_exit()
    times = [r.time for r in c.records()]
    assert len(times) == 200
    assert all(TIMESTAMP.match(t) for t in times), [t for t in times if not TIMESTAMP.match(t)]


def test_log_rotation_bounds_files_and_loses_no_line_in_what_is_kept(run: RunShim) -> None:
    max_size, lines = 2000, 500
    c = run("sh", "-c", f"for i in $(seq 1 {lines}); do echo line-$i; done",
            opts=["--log-max-size", str(max_size), "--log-max-files", "3"])
    assert c.wait_exit().reason == "Completed"
    rotated = [p for p in c.log.parent.iterdir() if ROTATED.match(p.name)]
    assert sorted(p.name for p in c.log.parent.iterdir() if p not in rotated) == ["c.log"]
    assert len(rotated) == 2, "at most --log-max-files - 1 rotated files remain"

    def age(p: Path) -> tuple[str, int]:
        m = ROTATED.match(p.name)
        assert m is not None
        return m[1], int(m[2] or 0)

    # The shim's names are those of the agent's grammar, in the same order.
    assert rotated_files(str(c.log)) == [str(p) for p in sorted(rotated, key=age)]
    kept: list[Record] = []
    for path in [*sorted(rotated, key=age), c.log]:
        records = parse_records(path)
        kept += records
        if path != c.log:
            assert path.stat().st_size >= max_size, "a file is rotated once it reaches the maximum size"
    numbers = [int(r.content.removeprefix("line-")) for r in kept]
    assert numbers == list(range(numbers[0], lines + 1)), "the kept files hold the newest lines, none lost"
    assert c.log.stat().st_size < max_size


def test_a_leftover_process_holding_stdout_does_not_delay_the_exit(run: RunShim) -> None:
    c = run("sh", "-c", "sleep 5 & echo done")
    try:
        got = c.wait_exit(timeout=3)
        assert got.reason == "Completed"
        assert c.contents() == ["done"]
    finally:
        # The app made its own process group (setsid), which the background sleep shares.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(c.app_pid, signal.SIGKILL)


def test_output_is_drained_without_a_log(run: RunShim) -> None:
    c = run("sh", "-c", "head -c 2000000 /dev/zero", log=False)
    assert c.wait_exit().reason == "Completed"
    assert not c.log.exists()


# --- start and exit ----------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "opts", "expected"), [
    pytest.param(["sh", "-c", "exit 0"], [], Exit(0, 0, 0, "Completed", ""), id="completed"),
    pytest.param(["sh", "-c", "exit 3"], [], Exit(3, 0, 0, "Error", ""), id="error"),
    pytest.param(["sh", "-c", "kill -KILL $$"], [], Exit(137, 9, 0, "Error", ""), id="killed-by-signal"),
    pytest.param(["kubeletapi-no-such-program"], [], Exit(
        128, 0, 0, "StartError", 'exec: "kubeletapi-no-such-program": executable file not found in $PATH'),
        id="missing-program"),
    pytest.param(["/dev/null"], [], Exit(128, 0, 0, "StartError", 'exec: "/dev/null": Permission denied'),
                 id="not-executable"),
    pytest.param(["true"], ["--workdir", "/nonexistent-dir"], Exit(
        128, 0, 0, "StartError", "chdir /nonexistent-dir: No such file or directory"), id="bad-workdir"),
    pytest.param(["true"], ["--cgroup", "/sys/fs/cgroup/pids/kubeletapi-test-missing"], Exit(
        128, 0, 0, "StartError", "join cgroup /sys/fs/cgroup/pids/kubeletapi-test-missing: No such file or directory"),
        id="missing-cgroup"),
    pytest.param(["true"], ["--log", "/nonexistent-dir/c.log"], Exit(
        128, 0, 0, "StartError", "open log /nonexistent-dir/c.log: No such file or directory"), id="bad-log-path"),
])
def test_exit_recording(run: RunShim, argv: list[str], opts: list[str], expected: Exit) -> None:
    before = time.time_ns()
    c = run(*argv, opts=opts)
    got = c.wait_exit()
    assert (got.code, got.signal, got.reason, got.message) == (
        expected.code, expected.signal, expected.reason, expected.message)
    assert before <= got.finished_ns <= time.time_ns()
    assert (c.started is None) == (expected.reason == "StartError")


def test_app_killed_from_outside(run: RunShim) -> None:
    c = run("sleep", "30")
    kill(c.app_pid, signal.SIGKILL)
    got = c.wait_exit()
    assert (got.code, got.signal, got.reason) == (137, 9, "Error")


def test_run_returns_once_started_with_a_detached_daemon(run: RunShim) -> None:
    before = time.time_ns()
    c = run("sleep", "30")
    assert c.started is not None
    app, init, started_ns = c.started
    assert init == 0
    assert before <= started_ns <= time.time_ns()
    assert not (c.state / "exit").exists()
    assert Path(f"/proc/{app}/cmdline").read_bytes() == b"sleep\x0030\x00"
    daemon = c.shim_pid
    assert alive(daemon)
    assert ppid_of(app) == daemon
    assert ppid_of(daemon) != os.getpid(), "the agent never has the daemon as a child"
    assert os.getsid(daemon) == daemon, "the daemon has its own session"
    assert os.readlink(f"/proc/{daemon}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{daemon}/fd/2") == str(c.state / "shim.log")


def test_daemon_survives_its_caller_being_killed(shim: Path, run: RunShim, tmp_path: Path) -> None:
    state = tmp_path / "wrapped"
    state.mkdir()
    c = Container(state, tmp_path / "wrapped.log")
    # The caller and everything in its process group die at once, as when an agent is SIGKILLed.
    caller = subprocess.Popen(["sh", "-c", f'"$0" run --state {state} --log {c.log} -- sleep 30; exec sleep 60',
                               str(shim)], start_new_session=True)
    try:
        wait_for(lambda: c.started is not None, what="started")
        os.killpg(caller.pid, signal.SIGKILL)
        caller.wait(timeout=5)
        daemon = c.shim_pid
        assert alive(daemon)
        assert alive(c.app_pid)
        assert ppid_of(daemon) not in (caller.pid, os.getpid())
        kill(c.app_pid, signal.SIGTERM)
        got = c.wait_exit()
        assert (got.code, got.signal, got.reason) == (143, 15, "Error")
        wait_for(lambda: not alive(daemon), what="the daemon to exit")
    finally:
        kill(caller.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            caller.wait(timeout=5)
        c.cleanup()


def test_daemon_does_not_hold_fds_inherited_from_the_caller(shim: Path, run: RunShim, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        state = tmp_path / "fds"
        state.mkdir()
        c = Container(state, tmp_path / "fds.log")
        try:
            subprocess.run([str(shim), "run", "--state", str(state), "--", "sleep", "30"], pass_fds=[write_end],
                           check=True, timeout=10)
            os.close(write_end)
            write_end = -1
            assert os.read(read_end, 1) == b"", "EOF: neither the daemon nor the container kept the pipe"
        finally:
            c.cleanup()
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def lock_held(state: Path) -> bool:
    """Whether somebody holds the state dir's lock (a probe as the runtime makes it)."""
    fd = os.open(state / "shim.lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def holds_lock(pid: int, state: Path) -> bool:
    """Whether the process has the state dir's lock file open."""
    with contextlib.suppress(OSError):
        fds = os.listdir(f"/proc/{pid}/fd")
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(state / "shim.lock") for fd in fds)
    return False


@pytest.mark.parametrize("namespaces", [False, pytest.param(True, marks=requires_root)])
def test_the_daemon_holds_the_state_lock_for_its_life_the_container_never(run: RunShim, namespaces: bool) -> None:
    c = run("sh", "-c", "sleep 30; true", opts=["--namespaces"] if namespaces else [])
    assert lock_held(c.state)
    app, init, _ = c.started  # type: ignore[misc]
    assert holds_lock(c.shim_pid, c.state)
    assert [pid for pid in (app, init) if pid and holds_lock(pid, c.state)] == []
    kill(app, signal.SIGTERM)
    c.wait_exit()
    wait_for(lambda: not alive(c.shim_pid), what="the daemon to exit")
    assert not lock_held(c.state)


def test_a_state_dir_runs_one_container_once(shim: Path, run: RunShim) -> None:
    c = run("sleep", "30")

    def again() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(shim), "run", "--state", str(c.state), "--", "sleep", "30"],
                              capture_output=True, text=True, timeout=10)

    running = again()
    assert (running.returncode, running.stderr.strip()) == (
        1, f"kubeletapi-shim run: --state {c.state}: another shim holds its lock (its container runs)")
    kill(c.app_pid, signal.SIGTERM)
    c.wait_exit()
    wait_for(lambda: not lock_held(c.state), what="the lock to be released")
    ended = again()
    assert (ended.returncode, ended.stderr.strip()) == (1, f"kubeletapi-shim run: --state {c.state} already ran "
                                                           "a container (shim.pid exists): a state dir is used once")
    assert c.contents() == [], "the second run started nothing"


def test_lock_fd_hands_the_callers_lock_to_the_daemon(shim: Path, tmp_path: Path) -> None:
    state = tmp_path / "handed"
    state.mkdir()
    c = Container(state, tmp_path / "handed.log")
    fd = os.open(state / "shim.lock", os.O_RDONLY | os.O_CREAT, 0o640)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the caller holds it before the shim exists
    try:
        subprocess.run([str(shim), "run", "--state", str(state), "--lock-fd", str(fd), "--log", str(c.log), "--",
                        "sleep", "30"], pass_fds=[fd], check=True, timeout=10)
        os.close(fd)
        fd = -1
        assert lock_held(state), "the daemon holds the lock the caller let go of"
        assert holds_lock(c.shim_pid, state)
        kill(c.app_pid, signal.SIGTERM)
        c.wait_exit()
        wait_for(lambda: not lock_held(state), what="the lock to be released with the daemon")
    finally:
        if fd >= 0:
            os.close(fd)
        c.cleanup()


def test_a_lock_held_by_someone_else_refuses_the_run(shim: Path, tmp_path: Path) -> None:
    state = tmp_path / "taken"
    state.mkdir()
    fd = os.open(state / "shim.lock", os.O_RDONLY | os.O_CREAT, 0o640)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = subprocess.run([str(shim), "run", "--state", str(state), "--", "true"], capture_output=True,
                                text=True, timeout=10)
        assert result.returncode == 1
        assert "another shim holds its lock" in result.stderr
        assert sorted(p.name for p in state.iterdir()) == ["shim.lock"]
    finally:
        os.close(fd)


def test_environment_is_exactly_the_shims(run: RunShim) -> None:
    env = {"PATH": "/usr/bin:/bin", "FOO": "bar baz"}
    c = run("env", env=env)
    c.wait_exit()
    assert sorted(c.contents()) == sorted(f"{k}={v}" for k, v in env.items())


def test_stdin_is_dev_null_by_default(run: RunShim) -> None:
    c = run("cat")
    assert c.wait_exit().reason == "Completed"


def test_stdin_fifo(run: RunShim) -> None:
    c = run("sh", "-c", "read line; echo got:$line", opts=["--stdin"])
    fifo = c.state / "stdin"
    assert fifo.is_fifo()
    assert fifo.stat().st_mode & 0o777 == 0o600
    with fifo.open("w") as f:
        f.write("hello\n")
    assert c.wait_exit().reason == "Completed"
    assert c.contents() == ["got:hello"]


def test_tty_with_stdin(run: RunShim) -> None:
    c = run("sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo isatty; read l; echo got:$l",
            opts=["--tty", "--stdin"])
    # The terminal echoes input on arrival: send it only once "isatty" is out, for a stable order.
    wait_for(lambda: c.log.exists() and c.log.stat().st_size > 0, what="the first output")
    with (c.state / "stdin").open("w") as f:
        f.write("world\n")
    assert c.wait_exit().reason == "Completed"
    records = c.records()
    assert {r.stream for r in records} == {"stdout"}
    # The terminal echoes the input and turns \n into \r\n.
    assert [r.content for r in records] == ["isatty\r", "world\r", "got:world\r"]


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param(500, "500", id="positive"),
    pytest.param(-997, None, id="negative"),
])
def test_oom_score_adj(run: RunShim, value: int, expected: str | None) -> None:
    if expected is None:
        # Negative values need CAP_SYS_RESOURCE; when the node forbids them, the shim uses 0 and warns.
        allowed = subprocess.run(["sh", "-c", f"echo {value} > /proc/self/oom_score_adj"],
                                 capture_output=True, check=False).returncode == 0
        expected = str(value) if allowed else "0"
    c = run("cat", "/proc/self/oom_score_adj", opts=["--oom-score-adj", str(value)])
    assert c.wait_exit().reason == "Completed"
    assert c.contents() == [expected]
    warnings = c.state / "warnings"
    if expected == str(value):
        assert not warnings.exists()
    else:
        assert warnings.read_text() == f"oom_score_adj {value} not permitted, used 0\n"


def test_daemon_private_memory_is_small(run: RunShim, record_property: Callable[[str, object], None]) -> None:
    c = run("sh", "-c", "seq 1 20000; exec sleep 30")
    wait_for(lambda: c.log.exists() and c.log.stat().st_size > 20000 * 40, what="the output to be logged")
    rollup = Path(f"/proc/{c.shim_pid}/smaps_rollup").read_text()
    fields = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in rollup.splitlines()[1:])}
    private_kib = fields["Private_Clean"] + fields["Private_Dirty"]
    record_property("shim_private_kib", private_kib)
    print(f"shim daemon private memory: {private_kib} kB", file=sys.stderr)
    assert private_kib <= 4096


# --- namespaces and cgroups (root) -------------------------------------------------------------
@requires_root
def test_namespaces_mounts_and_hostname(run: RunShim, tmp_path: Path) -> None:
    rw, ro = tmp_path / "rw-src", tmp_path / "ro-src"
    rw.mkdir()
    ro.mkdir()
    (rw / "f").write_text("rw-data\n")
    (ro / "g").write_text("ro-data\n")
    (tmp_path / "file-src").write_text("file-data\n")
    root = tmp_path / "ctr"
    script = (f"echo $$; hostname; cat {root}/rw/f {root}/ro/g {root}/file; touch {root}/rw/new; "
              f"touch {root}/ro/new 2>/dev/null && echo ro-writable || echo ro-readonly; "
              f"grep '^tmpfs {root}/tmp ' /proc/mounts | cut -d' ' -f1; echo /proc/[0-9]*")
    c = run("sh", "-c", script, opts=[
        "--namespaces", "--hostname", "ctr-host", "--bind", str(rw), f"{root}/rw", "--bind-ro", str(ro), f"{root}/ro",
        "--bind", str(tmp_path / "file-src"), f"{root}/file", "--tmpfs", f"{root}/tmp"])
    assert c.wait_exit().reason == "Completed", c.contents()
    assert c.contents() == ["2", "ctr-host", "rw-data", "ro-data", "file-data", "ro-readonly", "tmpfs",
                            "/proc/1 /proc/2"]
    assert (rw / "new").exists(), "the read-write bind writes through to the host"
    assert list((root / "rw").iterdir()) == [], "mounts stay inside the container"
    assert os.uname().nodename != "ctr-host"


@requires_root
def test_namespaced_app_is_pid_2_under_an_init(run: RunShim) -> None:
    c = run("sleep", "30", opts=["--namespaces"])
    assert c.started is not None
    app, init, _ = c.started
    assert init != 0
    assert ppid_of(init) == c.shim_pid
    assert ppid_of(app) == init
    nspid = next(line for line in Path(f"/proc/{app}/status").read_text().splitlines() if line.startswith("NSpid:"))
    assert nspid.split()[1:] == [str(app), "2"]


@requires_root
def test_sigterm_to_the_namespaced_app_stops_it(run: RunShim) -> None:
    c = run("sleep", "30", opts=["--namespaces"])
    sent = time.monotonic()
    kill(c.app_pid, signal.SIGTERM)
    got = c.wait_exit(timeout=2)
    assert time.monotonic() - sent < 2
    assert (got.code, got.signal, got.reason) == (143, 15, "Error")


@requires_root
def test_sigkill_to_the_init_kills_the_whole_namespace(run: RunShim) -> None:
    c = run("sh", "-c", "sleep 30 & sleep 31", opts=["--namespaces"])
    assert c.started is not None
    init = c.started[1]
    pidns = os.readlink(f"/proc/{init}/ns/pid")
    wait_for(lambda: len(members(pidns)) >= 4, what="the container's processes")  # init, sh, two sleeps
    kill(init)
    got = c.wait_exit()
    assert (got.code, got.signal, got.reason) == (137, 9, "Error")
    wait_for(lambda: members(pidns) == [], what="the namespace to empty")


def members(pidns: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "pid") == pidns and alive(int(entry.name)):
                    found.append(int(entry.name))
    return found


@requires_root
def test_mount_failure_is_a_start_error(run: RunShim, tmp_path: Path) -> None:
    c = run("true", opts=["--namespaces", "--bind", "/nonexistent-src", str(tmp_path / "dst")])
    got = c.wait_exit()
    assert (got.code, got.reason) == (128, "StartError")
    assert got.message == (f"bind mount /nonexistent-src on {tmp_path / 'dst'}: stat /nonexistent-src: "
                           "No such file or directory")


@pytest.fixture
def cgroups() -> Iterator[list[Path]]:
    """A fresh cgroup in the v1 memory and pids hierarchies, removed (once empty) afterwards."""
    name = f"kubeletapi-test-{secrets.token_hex(4)}"
    dirs = [CGROUP_V1 / "memory" / name, CGROUP_V1 / "pids" / name]
    for d in dirs:
        d.mkdir()
    yield dirs
    for d in dirs:
        # rmdir fails with EBUSY until the killed processes are gone.
        with contextlib.suppress(AssertionError):
            wait_for(lambda d=d: not (d / "cgroup.procs").read_text().strip(), what=f"{d} to empty")
        d.rmdir()


@requires_cgroup_v1
@pytest.mark.parametrize("namespaces", [pytest.param(False, id="plain"), pytest.param(True, id="namespaces")])
def test_cgroup_join(run: RunShim, cgroups: list[Path], namespaces: bool) -> None:
    opts = [arg for d in cgroups for arg in ("--cgroup", str(d))] + (["--namespaces"] if namespaces else [])
    c = run("sleep", "30", opts=opts)
    assert c.started is not None
    app, init, _ = c.started
    name = cgroups[0].name
    for pid in [app, init] if namespaces else [app]:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        assert any(line.endswith(f":memory:/{name}") for line in lines), lines
        assert any(line.endswith(f":pids:/{name}") for line in lines), lines
    assert str(c.shim_pid) not in (cgroups[0] / "cgroup.procs").read_text().split(), "the daemon stays outside"
    c.cleanup()


# --- exec --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "code", "stdout", "stderr"), [
    pytest.param(["--", "sh", "-c", "echo out; echo err >&2; exit 5"], 5, "out\n", "err\n", id="output-and-code"),
    pytest.param(["--", "sh", "-c", "kill -TERM $$"], 143, "", "", id="killed"),
    pytest.param(["--", "kubeletapi-no-such-program"], 127, "",
                 'kubeletapi-shim exec: exec: "kubeletapi-no-such-program": executable file not found in $PATH\n',
                 id="not-found"),
    pytest.param(["--", "/dev/null"], 126, "", 'kubeletapi-shim exec: exec: "/dev/null": Permission denied\n',
                 id="not-executable"),
    pytest.param(["--workdir", "/nonexistent-dir", "--", "true"], 126, "",
                 "kubeletapi-shim exec: chdir /nonexistent-dir: No such file or directory\n", id="bad-workdir"),
    pytest.param(["--workdir", "/tmp", "--", "pwd"], 0, "/tmp\n", "", id="workdir"),
    pytest.param(["--tty", "--", "sh", "-c", "test -t 0 && test -t 1 && echo tty"], 0, "tty\r\n", "", id="tty"),
])
def test_exec(shim: Path, args: list[str], code: int, stdout: str, stderr: str) -> None:
    assert exec_shim(shim, *args) == (code, stdout, stderr)


def test_exec_usage_error_is_not_a_command_status(shim: Path) -> None:
    code, _, stderr = exec_shim(shim, "--pid", "x", "--", "true")
    assert code == 125
    assert "--pid: invalid value x" in stderr


def test_a_file_without_interpreter_line_is_not_run_by_sh(shim: Path, run: RunShim, tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("echo ran\n")
    script.chmod(0o755)
    assert run(str(script)).wait_exit().message == f'exec: "{script}": Exec format error'
    expected = f'kubeletapi-shim exec: exec: "{script}": Exec format error\n'
    assert exec_shim(shim, "--", str(script)) == (126, "", expected)


def test_exec_forwards_sigterm(shim: Path) -> None:
    proc = subprocess.Popen([str(shim), "exec", "--", "sleep", "30"])
    try:
        time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=2) == 143
    finally:
        proc.kill()
        proc.wait()


def test_exec_pid_of_a_plain_container_stays_on_the_host(shim: Path, run: RunShim) -> None:
    c = run("sleep", "30")
    assert exec_shim(shim, "--pid", str(c.app_pid), "--", "hostname") == (0, f"{os.uname().nodename}\n", "")


def test_exec_tty_restores_the_callers_terminal(shim: Path) -> None:
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        result = subprocess.run([str(shim), "exec", "--tty", "--", "sh", "-c", "echo in-tty; exit 7"], stdin=slave,
                                capture_output=True, timeout=10)
        assert (result.returncode, result.stdout) == (7, b"in-tty\r\n")
        assert termios.tcgetattr(slave) == before
    finally:
        os.close(master)
        os.close(slave)


@requires_root
def test_exec_enters_a_namespaced_container(shim: Path, run: RunShim, tmp_path: Path) -> None:
    c = run("sleep", "30", opts=["--namespaces", "--hostname", "exec-box", "--tmpfs", str(tmp_path / "scratch")])
    code, stdout, stderr = exec_shim(shim, "--pid", str(c.app_pid), "--workdir", str(tmp_path / "scratch"), "--",
                                     "sh", "-c", "hostname; echo $$; echo /proc/[0-9]*; stat -f -c %T .")
    assert code == 0, stderr
    hostname, pid, procs, fstype = stdout.splitlines()
    assert hostname == "exec-box"
    assert int(pid) > 2, "a new process in the container's pid namespace"
    assert procs.split()[:2] == ["/proc/1", "/proc/2"]
    assert f"/proc/{pid}" in procs.split()
    assert fstype == "tmpfs", "the container's mount namespace"
