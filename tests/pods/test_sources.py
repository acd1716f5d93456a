"""Static pod sources: the manifest directory (or file) on real files, and the manifest URL on a loopback server.

FileSource.run tests use an event loop whose clock the test jumps forward: the source's timer-driven
re-scans (fast at first, then every fileCheckFrequency) are driven through to the steady state, after
which the next re-scan is a full period (20 s) away, so an update that arrives within seconds can
only come from the inotify watcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import multiprocessing
import os
import shutil
import socket
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.pods.sources import MAX_MANIFEST_BYTES, FileSource, ManifestResult, PodUpdate, URLSource
from kubeletapi.pods.static import CONFIG_HASH, CONFIG_SEEN, CONFIG_SOURCE

P = pytest.param
NODE = "Node1"
SEEN = 1_700_000_000.0  # 2023-11-14T22:13:20Z
SEEN_TEXT = "2023-11-14T22:13:20Z"
NOBODY = 65534
PERIOD = 20.0
LOGGER = "kubeletapi.pods.sources"


def pod_yaml(name: str = "web", label: str = "web") -> bytes:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{app: {label}}}\n"
        "spec:\n  containers:\n  - {name: app, image: nginx:1.25}\n"
    ).encode()


def pod_doc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
    }


def source(path: Path, clock: FakeClock | None = None) -> FileSource:
    return FileSource(path, NODE, clock or FakeClock(start=SEEN), PERIOD)


def summary(results: list[ManifestResult] | tuple[ManifestResult, ...]) -> list[tuple[str, str, str]]:
    """(file name, pod name or "", error) per result."""
    return [(Path(r.origin).name, r.pod.metadata.name if r.pod else "", r.error) for r in results]


def warnings_of(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING and text in r.getMessage()]


# --- FileSource.scan: one directory entry at a time ---------------------------------------------


def _yaml(d: Path) -> None:
    (d / "m.yaml").write_bytes(pod_yaml())


def _json(d: Path) -> None:
    (d / "m.yaml").write_text(json.dumps(pod_doc("api")))


def _dotfile(d: Path) -> None:
    (d / ".m.yaml").write_bytes(pod_yaml())


def _subdir(d: Path) -> None:
    (d / "m.yaml").mkdir()
    (d / "m.yaml" / "inner.yaml").write_bytes(pod_yaml())


def _link_to_dir(d: Path) -> None:
    (d.parent / "elsewhere").mkdir()
    (d.parent / "elsewhere" / "inner.yaml").write_bytes(pod_yaml())
    (d / "m.yaml").symlink_to(d.parent / "elsewhere")


def _link_to_file(d: Path) -> None:
    (d.parent / "real.yaml").write_bytes(pod_yaml())
    (d / "m.yaml").symlink_to(d.parent / "real.yaml")


def _too_big(d: Path) -> None:
    with (d / "m.yaml").open("wb") as fh:
        fh.truncate(11 * 1024 * 1024)  # sparse: the size check needs no data


def _exactly_max(d: Path) -> None:
    with (d / "m.yaml").open("wb") as fh:
        fh.truncate(MAX_MANIFEST_BYTES)


def _loop(d: Path) -> None:
    (d / "m.yaml").symlink_to(d / ".n.lnk")
    (d / ".n.lnk").symlink_to(d / "m.yaml")  # a dotfile: only m.yaml is reported


def _dangling(d: Path) -> None:
    (d / "m.yaml").symlink_to(d / "gone.yaml")


def _bad_yaml(d: Path) -> None:
    (d / "m.yaml").write_bytes(b"apiVersion: v1\nkind: Pod\nmetadata: {name: web\n")


def _bad_json(d: Path) -> None:
    (d / "m.yaml").write_bytes(b'{"apiVersion": "v1",}')


def _invalid_pod(d: Path) -> None:
    (d / "m.yaml").write_bytes(b"apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n")


def _empty(d: Path) -> None:
    (d / "m.yaml").write_bytes(b"")


def _name_too_long_for_node(d: Path) -> None:
    (d / "m.yaml").write_bytes(pod_yaml(name="x" * 250))  # valid alone, too long with "-node1"


EXACT, PREFIX = True, False  # parser messages go on (line, column...): only their fixed start is pinned


@pytest.mark.parametrize(
    ("setup", "pod_name", "error", "exact"),
    [
        P(_yaml, "web-node1", "", EXACT, id="yaml"),
        P(_json, "api-node1", "", EXACT, id="json"),
        P(_dotfile, None, None, EXACT, id="dotfile-ignored"),
        P(_subdir, None, None, EXACT, id="subdirectory-ignored"),
        P(_link_to_dir, None, None, EXACT, id="link-to-directory-ignored"),
        P(_link_to_file, "web-node1", "", EXACT, id="link-to-file"),
        P(_too_big, "", "{o}: the manifest is larger than 1.5 MiB (11534336 bytes)", EXACT, id="over-the-limit"),
        P(_exactly_max, "", "{o}: invalid document: ", PREFIX, id="exactly-the-limit-is-read"),
        P(_loop, "", "{o}: " + os.strerror(errno.ELOOP), EXACT, id="symlink-loop"),
        P(_dangling, "", "{o}: " + os.strerror(errno.ENOENT), EXACT, id="dangling-symlink"),
        P(_bad_yaml, "", "{o}: invalid document: did not find expected ',' or '}'", PREFIX, id="bad-yaml"),
        P(_bad_json, "", "{o}: invalid JSON: ", PREFIX, id="bad-json"),
        P(_invalid_pod, "", "{o}: invalid pod: spec.containers: Required value", EXACT, id="invalid-pod"),
        P(_empty, "", "{o}: invalid document: the manifest is empty", EXACT, id="empty-file"),
        P(_name_too_long_for_node, "", "{o}: invalid pod: metadata.name: Invalid value: ", PREFIX,
          id="name-too-long-with-node"),
    ],
)
def test_scan_entry(
    tmp_path: Path, setup: Callable[[Path], None], pod_name: str | None, error: str | None, exact: bool
) -> None:
    d = tmp_path / "manifests"
    d.mkdir()
    setup(d)
    results = source(d).scan()
    if pod_name is None:
        assert results == []
        return
    origin = str(d / "m.yaml")
    [result] = results
    assert result.origin == origin
    assert (result.pod.metadata.name if result.pod else "") == pod_name
    assert error is not None
    expected = error.replace("{o}", origin)
    if exact:
        assert result.error == expected
    else:
        assert result.error.startswith(expected) and len(result.error) > len(expected), result.error


def test_scan_yaml_pod_identity(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_bytes(pod_yaml())
    [result] = source(tmp_path).scan()
    assert result.pod is not None and not result.error
    meta = result.pod.metadata
    assert (meta.name, meta.namespace, result.pod.spec.node_name) == ("web-node1", "default", NODE)
    assert meta.annotations == {CONFIG_HASH: meta.uid, CONFIG_SEEN: SEEN_TEXT, CONFIG_SOURCE: "file"}


def test_scan_mixed_directory_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_bytes(pod_yaml("bee"))
    (tmp_path / "a.json").write_text(json.dumps(pod_doc("ay")))
    (tmp_path / "c.yaml").write_bytes(b"spec: {}")
    (tmp_path / ".swp").write_bytes(b"junk")
    (tmp_path / "sub").mkdir()
    got = summary(source(tmp_path).scan())
    assert [(n, p) for n, p, _ in got] == [("a.json", "ay-node1"), ("b.yaml", "bee-node1"), ("c.yaml", "")]
    assert got[2][2].startswith(f"{tmp_path / 'c.yaml'}: invalid pod: ")  # one bad file hides nothing


def test_scan_fifo_rejected_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    (tmp_path / "web.yaml").write_bytes(pod_yaml())
    done: list[list[ManifestResult]] = []
    thread = threading.Thread(target=lambda: done.append(source(tmp_path).scan()), daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():
        with fifo.open("wb"):  # a writer releases the reader stuck in open()
            pass
        thread.join(5)
        pytest.fail("scan blocked on a FIFO")
    assert summary(done[0]) == [("pipe.yaml", "", f"{fifo}: not a regular file"), ("web.yaml", "web-node1", "")]


def test_scan_single_file_path(tmp_path: Path) -> None:
    path = tmp_path / ".hidden-but-named.yaml"  # named explicitly: read even as a dotfile
    path.write_bytes(pod_yaml())
    (tmp_path / "other.yaml").write_bytes(pod_yaml("other"))
    [result] = source(path).scan()
    assert result.origin == str(path)
    assert result.pod is not None and result.pod.metadata.name == "web-node1"


# --- FileSource.scan: cache, UIDs and config.seen -----------------------------------------------


def test_unchanged_files_keep_their_result_changed_files_get_a_new_uid(tmp_path: Path) -> None:
    clock = FakeClock(start=SEEN)
    src = source(tmp_path, clock)
    web, db = tmp_path / "web.yaml", tmp_path / "db.yaml"
    web.write_bytes(pod_yaml())
    db.write_bytes(pod_yaml("db"))
    first = {Path(r.origin).name: r for r in src.scan()}
    assert {n: r.pod.metadata.annotations[CONFIG_SEEN] for n, r in first.items() if r.pod} == {
        "db.yaml": SEEN_TEXT, "web.yaml": SEEN_TEXT}

    clock.advance(60)
    second = {Path(r.origin).name: r for r in src.scan()}
    assert second == first  # same pods, same config.seen

    web.write_bytes(pod_yaml(label="web-v2"))
    third = {Path(r.origin).name: r for r in src.scan()}
    assert third["db.yaml"] == first["db.yaml"]
    new, old = third["web.yaml"].pod, first["web.yaml"].pod
    assert new is not None and old is not None
    assert new.metadata.uid != old.metadata.uid
    assert new.metadata.labels == {"app": "web-v2"}
    assert new.metadata.annotations[CONFIG_SEEN] == "2023-11-14T22:14:20Z"


def test_rewritten_identical_content_keeps_its_uid(tmp_path: Path) -> None:
    clock = FakeClock(start=SEEN)
    src = source(tmp_path, clock)
    web = tmp_path / "web.yaml"
    web.write_bytes(pod_yaml())
    [before] = src.scan()
    clock.advance(60)
    web.unlink()
    web.write_bytes(pod_yaml())  # a new file (inode) with the same manifest
    os.utime(web, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    [after] = src.scan()
    assert before.pod is not None and after.pod is not None
    assert after.pod.metadata.uid == before.pod.metadata.uid


def test_a_removed_file_is_forgotten(tmp_path: Path) -> None:
    clock = FakeClock(start=SEEN)
    src = source(tmp_path, clock)
    web = tmp_path / "web.yaml"
    web.write_bytes(pod_yaml())
    [first] = src.scan()
    web.unlink()
    assert src.scan() == []
    clock.advance(30)
    web.write_bytes(pod_yaml())
    [again] = src.scan()
    assert again.pod is not None and first.pod is not None
    assert again.pod.metadata.uid == first.pod.metadata.uid  # same manifest, same path
    assert again.pod.metadata.annotations[CONFIG_SEEN] == "2023-11-14T22:13:50Z"  # seen anew


def test_missing_path_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    d = tmp_path / "manifests"
    src = source(d)
    assert [src.scan() for _ in range(3)] == [[], [], []]  # a path that does not exist holds no pods
    assert warnings_of(caplog, "does not exist") == [f"the static pod path {d} does not exist: no static pods"]
    d.mkdir()
    (d / "web.yaml").write_bytes(pod_yaml())
    assert summary(src.scan()) == [("web.yaml", "web-node1", "")]
    shutil.rmtree(d)
    assert src.scan() == [] and src.scan() == []
    assert len(warnings_of(caplog, "does not exist")) == 2  # once more after it had recovered


# --- FileSource.scan as an unprivileged user ------------------------------------------------------


def _scan_unprivileged(conn: Connection, workdir: str, drop: bool) -> None:
    """In a forked child: become nobody (when root), then scan relative paths from `workdir`."""
    try:
        os.chdir(workdir)  # entered while privileged: the ancestors of tmp_path need no chmod
        # Import what a scan loads lazily (codecs, YAML, validators) while the interpreter's own
        # files are still readable: nobody may not read a Python installed under /root.
        source(Path("manifests")).scan()
        if drop:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
    except OSError as exc:
        conn.send(("skip", f"cannot drop to uid/gid {NOBODY}: {exc}"))
        return
    try:
        logged: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: logged.append(record.getMessage())  # type: ignore[method-assign]
        logging.getLogger(LOGGER).addHandler(handler)
        results = source(Path("manifests")).scan()
        unlisted = source(Path("locked")).scan()
        conn.send(("ok", (summary(results), unlisted, logged)))
    except BaseException as exc:
        conn.send(("error", repr(exc)))


def test_unreadable_files_rejected(tmp_path: Path) -> None:
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "open.yaml").write_bytes(pod_yaml())
    (d / "secret.yaml").write_bytes(pod_yaml("secret"))
    private = tmp_path / "private"
    private.mkdir()
    (private / "pod.yaml").write_bytes(pod_yaml("private"))
    (d / "via-private.yaml").symlink_to("../private/pod.yaml")
    locked = tmp_path / "locked"  # traversable, not listable
    locked.mkdir()
    (locked / "web.yaml").write_bytes(pod_yaml())
    os.chmod(tmp_path, 0o755)
    os.chmod(d, 0o755)
    os.chmod(d / "open.yaml", 0o644)
    os.chmod(d / "secret.yaml", 0o000)
    os.chmod(private, 0o000)
    os.chmod(locked, 0o311)
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_scan_unprivileged, args=(sender, str(tmp_path), os.geteuid() == 0))
    try:
        with warnings.catch_warnings():  # Python >= 3.12 warns about fork() in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            child.start()
        child.join(30)
        assert child.exitcode == 0, "the unprivileged scan did not finish"
        assert receiver.poll(1)
        kind, payload = receiver.recv()
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        receiver.close()
        sender.close()
        for path in (private, locked, d / "secret.yaml"):
            os.chmod(path, 0o700)
    if kind == "skip":
        pytest.skip(payload)
    assert kind == "ok", payload
    results, unlisted, logged = payload
    denied = os.strerror(errno.EACCES)
    assert results == [
        ("open.yaml", "web-node1", ""),
        ("secret.yaml", "", f"manifests/secret.yaml: {denied}"),  # open() refused
        ("via-private.yaml", "", f"manifests/via-private.yaml: {denied}"),  # stat() refused
    ]
    assert unlisted is None  # a directory that cannot be listed is no news, not "no pods"
    assert logged == [f"cannot list locked: {denied}; keeping its pods"]


# --- FileSource.run -------------------------------------------------------------------------------


class JumpingLoop(asyncio.SelectorEventLoop):
    """An event loop on real time, plus jumps a test makes to fire timers early."""

    def __init__(self) -> None:
        super().__init__()
        self.jumped = 0.0

    def time(self) -> float:
        return super().time() + self.jumped


def run_jumping(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with asyncio.Runner(loop_factory=JumpingLoop) as runner:
        runner.run(main())


async def next_update(queue: asyncio.Queue[PodUpdate], within: float) -> PodUpdate:
    try:
        return await asyncio.wait_for(queue.get(), within)
    except TimeoutError:
        raise AssertionError(f"no update within {within} s") from None


async def until_update(
    queue: asyncio.Queue[PodUpdate], check: Callable[[PodUpdate], bool], within: float
) -> tuple[PodUpdate, float]:
    """The first update passing `check` (earlier ones, e.g. a half-written file, are skipped) and its delay."""
    started = time.monotonic()
    while True:
        left = within - (time.monotonic() - started)
        if left <= 0:
            raise AssertionError(f"no matching update within {within} s")
        update = await next_update(queue, left)
        if check(update):
            return update, time.monotonic() - started


async def reach_steady_state(queue: asyncio.Queue[PodUpdate]) -> None:
    """Jump through the early re-scans: afterwards the next timer re-scan is a whole period away."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, JumpingLoop)
    for _ in range(12):
        loop.jumped += PERIOD
        await next_update(queue, 5)
    await asyncio.sleep(0.3)  # the watcher is set up; nothing else is due
    while not queue.empty():
        queue.get_nowait()


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.rename(tmp, path)


def names(update: PodUpdate) -> list[str]:
    return [r.pod.metadata.name for r in update.results if r.pod is not None]


def labels(update: PodUpdate) -> list[dict[str, str]]:
    return [r.pod.metadata.labels for r in update.results if r.pod is not None]


@contextlib.asynccontextmanager
async def running(src: FileSource) -> AsyncIterator[asyncio.Queue[PodUpdate]]:
    """Run the source; its snapshots land in the queue; cancelled (watcher included) at the end."""
    queue: asyncio.Queue[PodUpdate] = asyncio.Queue()
    task = asyncio.create_task(src.run(queue.put_nowait))
    try:
        yield queue
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_run_watcher_reacts_to_new_and_removed_files(tmp_path: Path) -> None:
    d = tmp_path / "manifests"
    d.mkdir()

    async def main() -> None:
        async with running(source(d)) as queue:
            assert (await next_update(queue, 5)).results == ()
            await reach_steady_state(queue)
            write_atomically(d / "web.yaml", pod_yaml())
            update, delay = await until_update(queue, lambda u: names(u) == ["web-node1"], 5)
            assert update.source == "file"
            assert delay < 5  # the next timer re-scan was 20 s away
            (d / "web.yaml").unlink()
            await until_update(queue, lambda u: u.results == (), 5)

    run_jumping(main)


def test_run_missing_path_rescanned_each_period_then_watched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    d = tmp_path / "manifests"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, JumpingLoop)
        async with running(source(d)) as queue:
            assert (await next_update(queue, 5)).results == ()
            await reach_steady_state(queue)  # twelve empty re-scans
            d.mkdir()
            (d / "web.yaml").write_bytes(pod_yaml())
            # The missing path is watched through its parent: it is picked up without a re-scan.
            await until_update(queue, lambda u: names(u) == ["web-node1"], 5)
            await asyncio.sleep(0.5)  # the watcher re-armed on the new directory
            write_atomically(d / "db.yaml", pod_yaml("db"))
            await until_update(queue, lambda u: names(u) == ["db-node1", "web-node1"], 5)

    run_jumping(main)
    assert len(warnings_of(caplog, "does not exist: no static pods")) == 1


# Regression tests: the watcher once kept watching the old inode after its path was replaced.


def test_run_single_file_replaced_twice(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_bytes(pod_yaml())

    async def main() -> None:
        async with running(source(path)) as queue:
            await next_update(queue, 5)
            await reach_steady_state(queue)
            write_atomically(path, pod_yaml(label="v2"))  # how editors and config management save files
            await until_update(queue, lambda u: labels(u) == [{"app": "v2"}], 2.5)  # seen: the watch ends here
            write_atomically(path, pod_yaml(label="v3"))
            await until_update(queue, lambda u: labels(u) == [{"app": "v3"}], 2.5)

    run_jumping(main)


def test_run_directory_recreated(tmp_path: Path) -> None:
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "web.yaml").write_bytes(pod_yaml())

    async def main() -> None:
        async with running(source(d)) as queue:
            await next_update(queue, 5)
            await reach_steady_state(queue)
            shutil.rmtree(d)
            await until_update(queue, lambda u: u.results == (), 2.5)  # the deletion itself is seen
            d.mkdir()
            await asyncio.sleep(1.0)  # time for a watcher to re-arm on the new directory
            write_atomically(d / "web.yaml", pod_yaml())
            await until_update(queue, lambda u: names(u) == ["web-node1"], 2.5)

    run_jumping(main)


# --- URLSource ------------------------------------------------------------------------------------


@dataclass
class Served:
    """What the loopback server answers, and the headers of every request it got."""

    status: int = 200
    body: bytes = b""
    requests: list[Message] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        served = self.server.served
        served.requests.append(self.headers)
        self.send_response(served.status)
        self.send_header("Content-Type", "application/yaml")
        self.send_header("Content-Length", str(len(served.body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that stops reading
            self.wfile.write(served.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    served: Served


@pytest.fixture
def served() -> Iterator[tuple[Served, str]]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.served = Served()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.served, f"http://127.0.0.1:{server.server_address[1]}/pods"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def url_source(url: str, clock: FakeClock | None = None, headers: dict[str, list[str]] | None = None) -> URLSource:
    return URLSource(url, headers or {}, NODE, clock or FakeClock(start=SEEN), PERIOD, timeout_s=5)


def polls(src: URLSource, before_each: list[Callable[[], None]]) -> list[PodUpdate | None]:
    """Poll once after each callable has set the scene; one client for them all."""

    async def main() -> list[PodUpdate | None]:
        out = []
        async with httpx.AsyncClient(timeout=5, trust_env=False) as client:
            for step in before_each:
                step()
                out.append(await src.poll(client))
        return out

    return asyncio.run(main())


def serve(served: Served, body: bytes, status: int = 200) -> Callable[[], None]:
    def step() -> None:
        served.body, served.status = body, status

    return step


def test_url_single_pod(served: tuple[Served, str]) -> None:
    state, url = served
    [update] = polls(url_source(url), [serve(state, pod_yaml())])
    assert update is not None and update.source == "http"
    [result] = update.results
    assert (result.origin, result.error) == (url, "")
    assert result.pod is not None
    meta = result.pod.metadata
    assert meta.name == "web-node1"
    assert meta.annotations == {CONFIG_HASH: meta.uid, CONFIG_SEEN: SEEN_TEXT, CONFIG_SOURCE: "http"}
    assert not result.pod.spec.tolerations  # only file pods get the NoExecute toleration


def test_url_pod_list(served: tuple[Served, str]) -> None:
    state, url = served
    body = json.dumps({"kind": "PodList", "apiVersion": "v1",
                       "items": [pod_doc("web"), pod_doc("db"), pod_doc("x" * 250)]}).encode()
    [update] = polls(url_source(url), [serve(state, body)])
    assert update is not None
    got = [(r.origin, r.pod.metadata.name if r.pod else "", r.error.split(":")[0] if r.error else "")
           for r in update.results]
    # an item valid alone but too long with the node name is rejected; the others stay
    assert got == [(f"{url}#0", "web-node1", ""), (f"{url}#1", "db-node1", ""), (f"{url}#2", "", "http")]
    assert "metadata.name: Invalid value" in update.results[2].error
    uids = {r.pod.metadata.uid for r in update.results if r.pod}
    assert len(uids) == 2


def test_url_headers_sent_with_repeated_values(served: tuple[Served, str]) -> None:
    state, url = served
    src = url_source(url, headers={"X-Token": ["a", "b"], "X-Node": ["n1"]})
    polls(src, [serve(state, pod_yaml())])
    [request] = state.requests
    assert request.get_all("X-Token") == ["a", "b"]
    assert request.get_all("X-Node") == ["n1"]


def test_url_unchanged_body_gives_no_update(served: tuple[Served, str]) -> None:
    state, url = served
    first, second, third = polls(
        url_source(url), [serve(state, pod_yaml()), serve(state, pod_yaml()), serve(state, pod_yaml("db"))]
    )
    assert first is not None and second is None
    assert third is not None and names(third) == ["db-node1"]


def test_url_failure_keeps_the_last_good_set(served: tuple[Served, str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    state, url = served
    got = polls(url_source(url), [
        serve(state, pod_yaml()),
        serve(state, b"oops", 500),
        serve(state, b"oops", 500),
        serve(state, pod_yaml()),  # back, unchanged: the snapshot in force stays
        serve(state, b"oops", 500),
    ])
    assert got[0] is not None and names(got[0]) == ["web-node1"]
    assert got[1:] == [None, None, None, None]
    expected = f"cannot fetch static pods from {url}: {url} answered 500; keeping the last good set"
    assert warnings_of(caplog, "cannot fetch") == [expected, expected]  # once per outage


def test_url_unreachable_keeps_the_last_good_set(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/pods"
    assert polls(url_source(url), [lambda: None, lambda: None]) == [None, None]
    logged = warnings_of(caplog, "cannot fetch")
    assert len(logged) == 1 and logged[0].startswith(f"cannot fetch static pods from {url}: ")


def test_url_body_over_the_limit_rejected(served: tuple[Served, str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    state, url = served
    huge = b"# padding\n" * (MAX_MANIFEST_BYTES // 10)
    huge += b"#" * (MAX_MANIFEST_BYTES - len(huge)) + b"\n"  # valid YAML, one byte too many
    assert len(huge) == MAX_MANIFEST_BYTES + 1
    got = polls(url_source(url), [serve(state, pod_yaml()), serve(state, huge)])
    assert got[0] is not None and got[1] is None
    assert warnings_of(caplog, "larger than 1.5 MiB") == [
        f"cannot fetch static pods from {url}: {url}: the manifest is larger than 1.5 MiB; keeping the last good set"
    ]


def test_url_invalid_pod_list_rejected(served: tuple[Served, str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    state, url = served
    bad = json.dumps({"kind": "PodList", "apiVersion": "v1",
                      "items": [pod_doc("web"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db"}}]})
    got = polls(url_source(url), [
        serve(state, pod_yaml("first")),
        serve(state, bad.encode()),
        serve(state, pod_yaml("first")),  # the rejected body did not replace the last good one
        serve(state, b"not: [valid"),
    ])
    assert got[0] is not None and got[1:] == [None, None, None]
    logged = warnings_of(caplog, url)
    assert logged[0] == f"{url}: invalid pod list: items[1].spec.containers: Required value; keeping the last good set"
    assert logged[1].startswith(f"{url}: invalid document: ")


def test_url_run_polls_each_period(served: tuple[Served, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # the source's own client must go straight to loopback
    state, url = served
    state.body = pod_yaml()
    clock = FakeClock(start=SEEN)

    async def main() -> None:
        queue: asyncio.Queue[PodUpdate] = asyncio.Queue()
        task = asyncio.create_task(url_source(url, clock).run(queue.put_nowait))
        try:
            assert names(await next_update(queue, 5)) == ["web-node1"]
            state.body = pod_yaml("db")
            await asyncio.sleep(0.3)
            assert queue.empty() and len(state.requests) == 1  # waits for the period on its clock
            clock.advance(PERIOD)
            assert names(await next_update(queue, 5)) == ["db-node1"]
            clock.advance(PERIOD)
            await asyncio.sleep(0.3)
            assert queue.empty() and len(state.requests) == 3  # polled again; unchanged: no update
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(main())


# --- a failed read is no news ----------------------------------------------------------------------


def _scan_without_fds(conn: Connection, path: str) -> None:
    """In a forked child: scan once, then with every file descriptor in use (RLIMIT_NOFILE at the
    number already open, as an agent flooded with idle connections), then with descriptors again."""
    import resource

    try:
        known = source(Path(path))
        first = summary(known.scan() or [])
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
        held = []
        try:
            with contextlib.suppress(OSError):
                while True:
                    held.append(os.open("/dev/null", os.O_RDONLY))
            starved = (known.scan(), source(Path(path)).scan())
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        conn.send(("ok", (first, starved, summary(known.scan() or []))))
    except BaseException as exc:
        conn.send(("error", repr(exc)))


def test_a_directory_that_cannot_be_listed_for_lack_of_descriptors_is_no_news(tmp_path: Path) -> None:
    """The attack that removed every static pod: "Too many open files" while listing the manifest
    directory read as an empty directory. Now the scan reports no news (None), not "no pods"."""
    (tmp_path / "web.yaml").write_bytes(pod_yaml())
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_scan_without_fds, args=(sender, str(tmp_path)))
    try:
        with warnings.catch_warnings():  # Python >= 3.12 warns about fork() in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            child.start()
        child.join(30)
        assert child.exitcode == 0 and receiver.poll(1)
        kind, payload = receiver.recv()
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        receiver.close()
        sender.close()
    assert kind == "ok", payload
    first, starved, after = payload
    assert first == after == [("web.yaml", "web-node1", "")]
    assert starved == (None, None)  # neither the known source nor a new one claims "no pods"


def test_a_manifest_that_cannot_be_read_keeps_its_last_good_pod(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    src = source(tmp_path)
    web = tmp_path / "web.yaml"
    web.write_bytes(pod_yaml())
    [good] = src.scan() or []
    assert good.pod is not None
    web.unlink()
    web.symlink_to(tmp_path / ".loop")  # now unreadable: a symlink loop (ELOOP)
    (tmp_path / ".loop").symlink_to(web)
    assert src.scan() == [good]  # the pod it defined stays
    assert warnings_of(caplog, "keeping its pod") == [f"cannot read {web}: {os.strerror(errno.ELOOP)}; keeping its pod"]
    fresh = source(tmp_path).scan() or []  # never read: rejected with the reason, as before
    assert summary(fresh) == [("web.yaml", "", f"{web}: {os.strerror(errno.ELOOP)}")]
    web.unlink()
    assert src.scan() == []  # removed: a successful read of the directory says so
