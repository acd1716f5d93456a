"""The kubelet's NodeLogQuery (pkg/kubelet/kubelet_server_journal.go and _linux.go), restated.

`/logs/?query=<service>&pattern=&tailLines=&sinceTime=&untilTime=&boot=`: decoded (400 with the
field errors), then validated (406), then a service's journal is read with journalctl when it is a
systemd unit the journal knows, else a file under the node log dir is copied by the kubelet's
heuristics (`<svc>`, `<svc>.log`, `<svc>/<svc>.log`). A query naming a file (it has a slash) is
served by the file server (node/logfiles.py). Error texts are field.ErrorList's, aggregated.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.logoptions import parse_timestamp_offset

log = logging.getLogger(__name__)

MAX_TAIL_LINES = 100000
MAX_SERVICE_LENGTH = 256
MAX_SERVICES = 4
DEADLINE_S = 30.0
CHUNK = 64 * 1024
_UNSAFE = re.compile(r"[^a-zA-Z\-_.:0-9@]+")
_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class FieldError:
    """One field.Error: `<field>: <kind>[: <value>][: <detail>]`."""

    field: str
    kind: str  # "Invalid value", "Required value", "Too many"
    value: object = None
    detail: str = ""
    has_value: bool = True

    def __str__(self) -> str:
        text = f"{self.field}: {self.kind}"
        if self.has_value:
            value = self.value
            if isinstance(value, str):
                text += f": {json.dumps(value, ensure_ascii=False)}"  # %q of ASCII text
            elif isinstance(value, dt.datetime):
                text += f": {json.dumps(_rfc3339(value))}"
            else:
                text += f": {json.dumps(value, separators=(',', ':'))}"
        return text + (f": {self.detail}" if self.detail else "")


def aggregate(errors: Sequence[FieldError]) -> str:
    """ErrorList.ToAggregate().Error(): one error as is, several in brackets, duplicates once."""
    unique = list(dict.fromkeys(str(e) for e in errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


@dataclass
class NodeLogQuery:
    services: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    tail_lines: int | None = None
    boot: int | None = None
    pattern: str = ""

    @property
    def has_options(self) -> bool:
        return (self.since, self.until, self.tail_lines, self.boot, self.pattern) != (None, None, None, None, "")


def _first(query: Sequence[tuple[str, str]], key: str) -> str:
    return next((v for k, v in query if k == key), "")


def _atoi(text: str) -> tuple[int | None, str]:
    if not _INT.fullmatch(text):
        return None, f'strconv.Atoi: parsing {json.dumps(text)}: invalid syntax'
    value = int(text)
    if not -(1 << 63) <= value < 1 << 63:
        return None, f'strconv.Atoi: parsing {json.dumps(text)}: value out of range'
    return value, ""


def _time(text: str) -> dt.datetime | None:
    try:
        ns, offset = parse_timestamp_offset(text)
    except InvalidInput:
        return None
    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone(dt.timedelta(seconds=offset)))


def parse(query: Sequence[tuple[str, str]]) -> tuple[NodeLogQuery | None, list[FieldError]]:
    """newNodeLogQuery: None (and no errors) when the request asks nothing of it."""
    nlq, errors = NodeLogQuery(), []
    queries = [v for k, v in query if k == "query"]
    for q in queries:
        if "/" in q or "\\" in q:
            nlq.files.append(q)
        elif q.strip():
            nlq.services.append(q)
    if any(k == "query" for k, _ in query) and not nlq.files and not nlq.services:
        errors.append(FieldError("query", "Invalid value", queries, "may not be empty"))
    nlq.since = _time_option(query, "sinceTime", errors)
    nlq.until = _time_option(query, "untilTime", errors)
    nlq.boot = _int_option(query, "boot", errors)
    nlq.tail_lines = _int_option(query, "tailLines", errors)
    nlq.pattern = _first(query, "pattern")
    if errors:
        return None, errors
    if nlq == NodeLogQuery():
        return None, []
    return nlq, []


def _time_option(query: Sequence[tuple[str, str]], key: str, errors: list[FieldError]) -> dt.datetime | None:
    text = _first(query, key)
    if not text:
        return None
    moment = _time(text)
    if moment is None:
        errors.append(FieldError(key, "Invalid value", text, "invalid time format"))
    return moment


def _int_option(query: Sequence[tuple[str, str]], key: str, errors: list[FieldError]) -> int | None:
    text = _first(query, key)
    if not text:
        return None
    value, problem = _atoi(text)
    if value is None:
        errors.append(FieldError(key, "Invalid value", text, problem))
    return value


def validate(nlq: NodeLogQuery, log_dir: Path) -> list[FieldError]:
    """nodeLogQuery.validate (the Linux rules)."""
    errors = [FieldError("query", "Invalid value", s, _service_error(s)) for s in nlq.services if _service_error(s)]
    if len(nlq.services) > MAX_SERVICES:
        errors.append(FieldError("query", "Too many", len(nlq.services), f"must have at most {MAX_SERVICES} items"))
    if not nlq.files and not nlq.services:
        errors.append(FieldError("query", "Required value", detail="cannot be empty with options", has_value=False))
    elif nlq.files and nlq.services:
        errors.append(FieldError("query", "Invalid value", f"[{' '.join(nlq.files)}], [{' '.join(nlq.services)}]",
                                 "cannot specify a file and service"))
    elif len(nlq.files) > 1:
        errors.append(FieldError("query", "Invalid value", nlq.files, "cannot specify more than one file"))
    elif len(nlq.files) == 1 and nlq.has_options:
        errors.append(FieldError("query", "Invalid value", nlq.files, "cannot specify file with options"))
    elif len(nlq.files) == 1:
        problem = stat_in_root(log_dir, nlq.files[0])
        if problem:
            errors.append(FieldError("query", "Invalid value", nlq.files, problem))
    if nlq.since is not None and nlq.until is not None and nlq.since > nlq.until:
        errors.append(FieldError("untilTime", "Invalid value", nlq.until, "must be after `sinceTime`"))
    if nlq.boot is not None and nlq.boot > 0:
        errors.append(FieldError("boot", "Invalid value", nlq.boot, "must be less than 1"))
    if nlq.tail_lines is not None and not 0 <= nlq.tail_lines <= MAX_TAIL_LINES:
        errors.append(FieldError("tailLines", "Invalid value", nlq.tail_lines,
                                 f"must be between 0 and {MAX_TAIL_LINES}, inclusive"))
    if nlq.pattern:
        try:
            re.compile(nlq.pattern)
        except re.error as exc:
            errors.append(FieldError("pattern", "Invalid value", nlq.pattern, f"error parsing regexp: {exc}"))
    return errors


def _service_error(name: str) -> str:
    if len(name) > MAX_SERVICE_LENGTH:
        return "length must be less than 100"  # sic: the kubelet's text (the limit is 256)
    if _UNSAFE.search(name):
        return "input contains unsupported characters"
    return ""


def resolve_in_root(root: Path, name: str) -> Path | None:
    """`name` under `root` as os.OpenInRoot resolves it: None when it (or a symlink on the way)
    leaves the root. The path need not exist."""
    if os.path.isabs(name):
        return None
    real_root = os.path.realpath(root)
    target = os.path.realpath(os.path.join(real_root, name))
    if target != real_root and not target.startswith(real_root.rstrip("/") + "/"):
        return None
    return Path(target)


def stat_in_root(root: Path, name: str) -> str:
    """Why os.Root.Stat(name) fails ("" when it does not): Go's error text."""
    target = resolve_in_root(root, name)
    if target is None:
        return f"statat {name}: path escapes from parent"
    try:
        target.stat()
    except FileNotFoundError:
        return f"statat {name}: no such file or directory"
    except OSError as exc:
        return f"statat {name}: {(exc.strerror or str(exc)).lower()}"
    return ""


def _rfc3339(moment: dt.datetime) -> str:
    text = moment.isoformat()
    return text.replace("+00:00", "Z")


def journalctl_args(nlq: NodeLogQuery, services: Sequence[str]) -> list[str]:
    """getLoggingCmd (Linux): journalctl's arguments."""
    layout = "%Y-%-m-%-d %-H:%-M:%-S"  # Go's "2006-1-2 15:4:5": no zero padding
    args = ["--utc", "--no-pager", "--output=short-precise"]
    if nlq.since is not None:
        args.append(f"--since={nlq.since.strftime(layout)}")
    if nlq.until is not None:
        args.append(f"--until={nlq.until.strftime(layout)}")
    if nlq.tail_lines is not None:
        args += ["--pager-end", f"--lines={nlq.tail_lines}"]
    args += [f"--unit={s}" for s in services if s]
    if nlq.pattern:
        args.append(f"--grep={nlq.pattern}")
    if nlq.boot is not None:
        args += ["--boot", str(nlq.boot)]
    return args


class NodeLogReader:
    """Copies what a validated service query asks for: journald units, else log files."""

    def __init__(self, log_dir: Path, journalctl: str = "journalctl") -> None:
        self._dir = log_dir
        self._journalctl = journalctl

    async def copy(self, nlq: NodeLogQuery) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        native: list[str] = []
        files: list[str] = []
        for service in nlq.services:
            (native if await self._journal_knows(service) else files).append(service)
        if native:
            async for chunk in self._journal(nlq, native, deadline):
                yield chunk
        if files and nlq.has_options:
            yield (f"\noptions present and query resolved to log files for [{' '.join(files)}]\n"
                   "try without specifying options\n").encode()
            return
        for service in files:
            async for chunk in self._file_logs(service, deadline):
                yield chunk

    async def _journal_knows(self, service: str) -> bool:
        """checkForNativeLogger: the unit appears in `journalctl --field _SYSTEMD_UNIT`."""
        output = await self._run([self._journalctl, "--field", "_SYSTEMD_UNIT"])
        return output is not None and f"{service}.service" in output.decode(errors="replace")

    async def _run(self, argv: list[str]) -> bytes | None:
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.STDOUT)
        except OSError:
            return None
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), DEADLINE_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return None
        return out if proc.returncode == 0 else None

    async def _journal(self, nlq: NodeLogQuery, services: list[str], deadline: float) -> AsyncIterator[bytes]:
        try:
            proc = await asyncio.create_subprocess_exec(
                self._journalctl, *journalctl_args(nlq, services),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        except OSError:
            if not nlq.boot:
                yield b"\nerror: journal output not available\n"
            return
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        try:
            while (left := deadline - loop.time()) > 0:
                try:
                    chunk = await asyncio.wait_for(proc.stdout.read(CHUNK), left)
                except TimeoutError:
                    break
                if not chunk:
                    break
                yield chunk
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()

    async def _file_logs(self, service: str, deadline: float) -> AsyncIterator[bytes]:
        error: OSError | None = None
        for name in (service, f"{service}.log", f"{service}/{service}.log"):
            target = resolve_in_root(self._dir, name)
            try:
                if target is None:
                    raise PermissionError(f"openat {name}: path escapes from parent")
                if target.is_dir():
                    raise FileNotFoundError(name)
                handle = await asyncio.to_thread(open, target, "rb")
            except FileNotFoundError as exc:
                error = exc
                continue
            except OSError as exc:
                error = exc
                break
            error = None
            with handle:
                loop = asyncio.get_running_loop()
                while loop.time() < deadline and (chunk := await asyncio.to_thread(handle.read, CHUNK)):
                    yield chunk
            break
        if isinstance(error, FileNotFoundError):
            yield f"\nlog not found for {service}\n".encode()
        elif error is not None:
            yield f"\nerror getting log for {service}: {error}\n".encode()
