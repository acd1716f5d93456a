"""Go's mime.TypeByExtension on Unix, which http.FileServer uses for /logs/ files: its builtin
table first, then the shared-mime-info database (/usr/share/mime/globs2, highest weight first,
bare `*.ext` globs only), else the mime.types files; text/* types get `; charset=utf-8`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

GLOBS = (Path("/usr/local/share/mime/globs2"), Path("/usr/share/mime/globs2"))
TYPE_FILES = (Path("/etc/mime.types"), Path("/etc/apache2/mime.types"), Path("/etc/apache/mime.types"),
              Path("/etc/httpd/conf/mime.types"))

# mime/type.go builtinTypesLower
BUILTIN = {
    ".ai": "application/postscript", ".apk": "application/vnd.android.package-archive", ".apng": "image/apng",
    ".avif": "image/avif", ".bin": "application/octet-stream", ".bmp": "image/bmp",
    ".com": "application/octet-stream", ".css": "text/css; charset=utf-8", ".csv": "text/csv; charset=utf-8",
    ".doc": "application/msword",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".ehtml": "text/html; charset=utf-8", ".eml": "message/rfc822", ".eps": "application/postscript",
    ".exe": "application/octet-stream", ".flac": "audio/flac", ".gif": "image/gif", ".gz": "application/gzip",
    ".htm": "text/html; charset=utf-8", ".html": "text/html; charset=utf-8", ".ico": "image/vnd.microsoft.icon",
    ".ics": "text/calendar; charset=utf-8", ".jfif": "image/jpeg", ".jpeg": "image/jpeg", ".jpg": "image/jpeg",
    ".js": "text/javascript; charset=utf-8", ".json": "application/json", ".m4a": "audio/mp4",
    ".mjs": "text/javascript; charset=utf-8", ".mp3": "audio/mpeg", ".mp4": "video/mp4", ".oga": "audio/ogg",
    ".ogg": "audio/ogg", ".ogv": "video/ogg", ".opus": "audio/ogg", ".pdf": "application/pdf",
    ".pjp": "image/jpeg", ".pjpeg": "image/jpeg", ".png": "image/png", ".ppt": "application/vnd.ms-powerpoint",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".ps": "application/postscript", ".rdf": "application/rdf+xml", ".rtf": "application/rtf",
    ".shtml": "text/html; charset=utf-8", ".svg": "image/svg+xml", ".text": "text/plain; charset=utf-8",
    ".tif": "image/tiff", ".tiff": "image/tiff", ".txt": "text/plain; charset=utf-8",
    ".vtt": "text/vtt; charset=utf-8", ".wasm": "application/wasm", ".wav": "audio/wav", ".webm": "audio/webm",
    ".webp": "image/webp", ".xbl": "text/xml; charset=utf-8", ".xbm": "image/x-xbitmap",
    ".xht": "application/xhtml+xml", ".xhtml": "application/xhtml+xml", ".xls": "application/vnd.ms-excel",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".xml": "text/xml; charset=utf-8", ".xsl": "text/xml; charset=utf-8", ".zip": "application/zip",
}


def _with_charset(mime_type: str) -> str:
    if mime_type.startswith("text/") and "charset=" not in mime_type:
        return f"{mime_type.lower()}; charset=utf-8"
    return mime_type


class MimeTypes:
    """The table TypeByExtension reads, built once from `globs` or else `type_files`."""

    def __init__(self, globs: Iterable[Path] = GLOBS, type_files: Iterable[Path] = TYPE_FILES) -> None:
        self._types = dict(BUILTIN)
        for path in globs:
            if self._load_globs(path):
                break
        else:
            for path in type_files:
                self._load_types(path)
        self._lower = {ext.lower(): value for ext, value in self._types.items()}

    def type_by_extension(self, ext: str) -> str:
        return self._types.get(ext) or self._lower.get(ext.lower(), "")

    def _load_globs(self, path: Path) -> bool:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return False
        for line in lines:
            fields = line.split(":")
            if len(fields) < 3 or not fields[0] or len(fields[2]) < 3 or fields[0][0] == "#":
                continue
            if not fields[2].startswith("*."):
                continue
            ext = fields[2][1:]
            if any(c in ext for c in "?*[") or ext in self._types:
                continue  # a glob, or seen already (the file is in weight order)
            self._types[ext] = _with_charset(fields[1])
        return True

    def _load_types(self, path: Path) -> None:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            fields = line.split()
            if len(fields) <= 1 or fields[0].startswith("#"):
                continue
            for ext in fields[1:]:
                if ext.startswith("#"):
                    break
                self._types["." + ext] = _with_charset(fields[0])
