"""/logs/: the node's log directory as the kubelet serves it, Go's http.FileServer under
StripPrefix("/logs/") over http.Dir("/var/log") (the directory injected here, --node-log-dir).

- the path after /logs is cleaned as path.Clean("/"+p): `..` never climbs above the directory;
  a symlink whose target leaves the directory is refused too (404), where Go would follow it;
- a directory without its trailing slash: 301 to `<base>/` (relative, query kept); a file with
  one: 301 to `../<base>`; `.../index.html`: 301 to `./`; a directory with an index.html serves it;
- a directory: Go's listing (`<!doctype html>`, the viewport meta, `<pre>`, one `<a>` per entry
  sorted by name, directories with a slash), text/html, Last-Modified;
- a file: its bytes, Content-Type from the extension (node/gomime.py) or sniffed (text/plain;
  charset=utf-8 for text, application/octet-stream otherwise), Last-Modified, Accept-Ranges,
  If-Modified-Since, one Range (206; several ranges: the whole file, where Go sends multipart);
- errors as Go's http.Error: `404 page not found`, `403 Forbidden`, `500 Internal Server Error`.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import posixpath
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from kubeletapi.node.gomime import MimeTypes

TEXT = "text/plain; charset=utf-8"
HTML = "text/html; charset=utf-8"
_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})
@dataclass(frozen=True)
class LogAnswer:
    """What /logs answers: a status, headers, and `body`, the file at `file` (`size` bytes), or
    the chunks of `stream` (a journal's output)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    file: Path | None = None
    size: int = 0  # bytes of `file` to send, from `offset`
    offset: int = 0
    stream: AsyncIterator[bytes] | None = field(default=None, compare=False)


def error(status: int, message: str) -> LogAnswer:
    """http.Error: the message and a newline, plain text, nosniff."""
    return LogAnswer(status, (("Content-Type", TEXT), ("X-Content-Type-Options", "nosniff")),
                     (message + "\n").encode())


NOT_FOUND = error(404, "404 page not found")


def _redirect(target: str, query: str) -> LogAnswer:
    return LogAnswer(301, (("Location", target + ("?" + query if query else "")),))


def _http_date(mtime: float) -> str:
    return email.utils.formatdate(int(mtime), usegmt=True)


def _content_type(path: Path, types: MimeTypes) -> str:
    """serveContent: the type of the extension, else sniffed from the first 512 bytes."""
    ext = path.name[path.name.rfind("."):] if "." in path.name else ""
    if ext and (known := types.type_by_extension(ext)):
        return known
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return "application/octet-stream"
    return _sniff(head)


def _sniff(head: bytes) -> str:
    """http.DetectContentType's verdict for log files: text or binary."""
    if not head:
        return TEXT
    if any(b in head for b in (0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                26, 27, 28, 29, 30, 31)):
        return "application/octet-stream"
    stripped = head.lstrip(b"\t\n\x0c\r ").lower()
    if stripped.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<pre")):
        return HTML
    if stripped.startswith(b"<?xml"):
        return "text/xml; charset=utf-8"
    return TEXT


def listing(directory: Path) -> bytes:
    """dirList: Go's HTML listing of a directory."""
    entries = []
    with os.scandir(directory) as scan:
        for entry in scan:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            entries.append(entry.name + ("/" if is_dir else ""))
    lines = ["<!doctype html>\n", '<meta name="viewport" content="width=device-width">\n', "<pre>\n"]
    for name in sorted(entries, key=lambda n: n.rstrip("/").encode("utf-8", "surrogateescape")):
        href = quote(name, safe="/$&+,;=:@-._~")  # Go's shouldEscape(encodePath)
        if ":" in name.split("/", 1)[0]:
            href = "./" + href  # url.URL{Path: name}.String() guards a colon in the first segment
        lines.append(f'<a href="{href}">{name.translate(_HTML_ESCAPES)}</a>\n')
    lines.append("</pre>\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


class LogFileServer:
    """http.FileServer over `root`; `serve(path, query)` with the path after /logs."""

    def __init__(self, root: Path, types: MimeTypes | None = None) -> None:
        self.root = root
        self._types = types or MimeTypes()

    def serve(self, url_path: str, query: str = "", if_modified_since: str | None = None,
              byte_range: str | None = None) -> LogAnswer:
        if not url_path.startswith("/"):
            url_path = "/" + url_path
        if url_path.endswith("/index.html"):
            return _redirect("./", query)
        name = posixpath.normpath(url_path)
        name = "/" if name in ("//", "/.") else name
        target = self._resolve(name)
        if target is None:
            return NOT_FOUND
        try:
            info = target.stat()
        except FileNotFoundError:
            return NOT_FOUND
        except PermissionError:
            return error(403, "403 Forbidden")
        except OSError:
            return error(500, "500 Internal Server Error")
        if stat.S_ISDIR(info.st_mode):
            if not url_path.endswith("/"):
                return _redirect(posixpath.basename(url_path) + "/", query)
            index = target / "index.html"
            if index.is_file() and self._resolve(name.rstrip("/") + "/index.html") is not None:
                return self._file(index, index.stat(), if_modified_since, byte_range)
            return self._directory(target, info, if_modified_since)
        if url_path.endswith("/"):
            return _redirect("../" + posixpath.basename(url_path.rstrip("/")), query)
        return self._file(target, info, if_modified_since, byte_range)

    def _resolve(self, name: str) -> Path | None:
        """The path under the root; None when a symlink takes it outside (refused as not found)."""
        real_root = os.path.realpath(self.root)
        target = os.path.realpath(os.path.join(real_root, name.lstrip("/")))
        if target != real_root and not target.startswith(real_root.rstrip("/") + "/"):
            return None
        return Path(target)

    def _directory(self, directory: Path, info: os.stat_result, since: str | None) -> LogAnswer:
        modified = _http_date(info.st_mtime)
        if _not_modified(since, info.st_mtime):
            return LogAnswer(304, (("Last-Modified", modified),))
        try:
            body = listing(directory)
        except PermissionError:
            return error(403, "403 Forbidden")
        except OSError:
            return error(500, "Error reading directory")
        return LogAnswer(200, (("Content-Type", HTML), ("Last-Modified", modified)), body)

    def _file(self, path: Path, info: os.stat_result, since: str | None, byte_range: str | None) -> LogAnswer:
        modified = _http_date(info.st_mtime)
        if _not_modified(since, info.st_mtime):
            return LogAnswer(304, (("Last-Modified", modified),))
        if not os.access(path, os.R_OK):
            return error(403, "403 Forbidden")
        headers = (("Accept-Ranges", "bytes"), ("Content-Type", _content_type(path, self._types)),
                   ("Last-Modified", modified))
        size = info.st_size
        try:
            ranges = parse_range(byte_range or "", size)
        except RangeError as exc:
            refusal = error(416, str(exc))
            extra = (("Content-Range", f"bytes */{size}"),) if exc.no_overlap else ()
            return LogAnswer(416, (*headers[2:], *extra, *refusal.headers), refusal.body)
        if len(ranges) == 1 and ranges[0][1] <= size:  # several ranges: the whole file (see the README)
            start, length = ranges[0]
            return LogAnswer(206, (*headers, ("Content-Range", f"bytes {start}-{start + length - 1}/{size}")),
                             file=path, size=length, offset=start)
        return LogAnswer(200, headers, file=path, size=size)


class RangeError(ValueError):
    def __init__(self, message: str, no_overlap: bool = False) -> None:
        super().__init__(message)
        self.no_overlap = no_overlap


def parse_range(header: str, size: int) -> list[tuple[int, int]]:
    """net/http's parseRange: (start, length) pairs; RangeError `invalid range` or, when no range
    overlaps a non-empty file, `invalid range: failed to overlap`."""
    if not header:
        return []
    if not header.startswith("bytes="):
        raise RangeError("invalid range")
    parts = [p.strip(" \t") for p in header[len("bytes="):].split(",")]
    found = [_one_range(p, size) for p in parts if p]
    ranges = [r for r in found if r is not None]
    if len(ranges) < len(found) and not ranges:
        if size == 0:
            return []
        raise RangeError("invalid range: failed to overlap", no_overlap=True)
    if sum(length for _, length in ranges) > size:
        return []  # more bytes than the file: ignored, as Go ignores it
    return ranges


def _one_range(part: str, size: int) -> tuple[int, int] | None:
    """One `start-end`, `start-` or `-suffix`; None when it starts past the end."""
    start, sep, end = part.partition("-")
    start, end = start.strip(" \t"), end.strip(" \t")
    if not sep:
        raise RangeError("invalid range")
    if not start:
        if not end.isdigit():
            raise RangeError("invalid range")
        suffix = min(int(end), size)
        return size - suffix, suffix
    if not start.isdigit():
        raise RangeError("invalid range")
    first = int(start)
    if first >= size:
        return None
    if not end:
        return first, size - first
    if not end.isdigit() or first > int(end):
        raise RangeError("invalid range")
    return first, min(int(end), size - 1) - first + 1


async def file_chunks(path: Path, offset: int = 0, length: int | None = None,
                      chunk: int = 64 * 1024) -> AsyncIterator[bytes]:
    """`length` bytes of a served file from `offset` (to its end: None), read off the event loop."""
    handle = await asyncio.to_thread(path.open, "rb")
    try:
        handle.seek(offset)
        left = length
        while left is None or left > 0:
            data = await asyncio.to_thread(handle.read, chunk if left is None else min(chunk, left))
            if not data:
                break
            if left is not None:
                left -= len(data)
            yield data
    finally:
        handle.close()


def _not_modified(header: str | None, mtime: float) -> bool:
    if not header:
        return False
    try:
        since = email.utils.parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError):
        return False
    return int(mtime) <= since
