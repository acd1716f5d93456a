"""The web UI's built files, served from memory: read once (again when the file changes), with a
strong ETag, so a revalidation costs a 304 and nothing is read from disk per request. The page
names each asset with its version (`ui.js?v=<version>`, the ETag's hash): asked for by its
current version, an asset may be kept a year without asking again (a new build is a new address),
so a page load sends no request for its script and style sheet."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

# Revalidated on every load: a new build shows at once, an unchanged file costs a 304.
CACHE_CONTROL = "no-cache"
# Asked for by its current version (?v=): that address never changes its body.
CACHE_VERSIONED = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class _File:
    mtime_ns: int
    size: int
    body: bytes
    etag: str


class Assets:
    """The files of one directory, by name; `respond` answers a GET for one of them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, _File] = {}
        self._lock = threading.Lock()

    def exists(self, name: str) -> bool:
        return (self.root / name).is_file()

    def body(self, name: str) -> bytes | None:
        """The file's bytes (None when there is no such file)."""
        loaded = self._load(name)
        return loaded.body if loaded is not None else None

    def version(self, name: str) -> str:
        """The file's version for its address (`?v=`): the hash in its ETag ("" when missing)."""
        loaded = self._load(name)
        return loaded.etag.strip('"')[:16] if loaded is not None else ""

    def _load(self, name: str) -> _File | None:
        path = self.root / name
        try:
            st = path.stat()
            with self._lock:
                known = self._files.get(name)
                if known is not None and (known.mtime_ns, known.size) == (st.st_mtime_ns, st.st_size):
                    return known
                body = path.read_bytes()
                loaded = _File(st.st_mtime_ns, st.st_size, body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')
                self._files[name] = loaded
                return loaded
        except OSError:
            return None

    def respond(self, request: Request, name: str, media_type: str) -> Response | None:
        """The file (or 304 Not Modified for its ETag); None when there is no such file."""
        loaded = self._load(name)
        if loaded is None:
            return None
        versioned = request.query_params.get("v") == loaded.etag.strip('"')[:16]
        headers = {"ETag": loaded.etag, "Cache-Control": CACHE_VERSIONED if versioned else CACHE_CONTROL}
        if loaded.etag in {tag.strip() for tag in request.headers.get("if-none-match", "").split(",")}:
            return Response(status_code=304, headers=headers)
        return Response(loaded.body, media_type=media_type, headers=headers)
