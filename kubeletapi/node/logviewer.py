"""/logs as the kubelet's Run() builds its log server: the file server over the node log dir, and,
with the NodeLogQuery feature gate and enableSystemLogQuery, the query form in front of it
(node/logquery.py): a bad query is 400, a query that fails validation or names a path is 406, a
service query is the journal's (or a log file's) text, a file query is the file server's answer."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from kubeletapi.node.logfiles import LogAnswer, LogFileServer, error
from kubeletapi.node.logquery import NodeLogReader, aggregate, parse, validate

JOURNAL_TYPE = "text/plain;charset=UTF-8"  # the journal server's own spelling


class NodeLogViewer:
    def __init__(self, root: Path, query_enabled: bool, reader: NodeLogReader | None = None) -> None:
        self.files = LogFileServer(root)
        self.query_enabled = query_enabled
        self._reader = reader or NodeLogReader(root)

    def answer(self, path: str, query: Sequence[tuple[str, str]], raw_query: str,
               headers: Mapping[str, str]) -> LogAnswer:
        """`path`: the request path after /logs/ (StripPrefix); `headers` lower-cased."""
        if self.query_enabled:
            nlq, problems = parse(query)
            if problems:
                return error(400, aggregate(problems))
            if nlq is not None:
                if path not in ("", "/"):
                    return error(406, "path not allowed in query mode")
                problems = validate(nlq, self.files.root)
                if problems:
                    return error(406, aggregate(problems))
                if nlq.services:
                    stream = self._reader.copy(nlq)
                    out: list[tuple[str, str]] = [("Content-Type", JOURNAL_TYPE)]
                    if headers.get("accept-encoding") == "gzip":
                        out.append(("Content-Encoding", "gzip"))
                        stream = _gzip(stream)
                    return LogAnswer(200, tuple(out), stream=stream)
                path = nlq.files[0].replace("\\", "/")
        return self.files.serve(path, raw_query, headers.get("if-modified-since"), headers.get("range"))


async def _gzip(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """gzip.BestSpeed, as the journal server writes it."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    async for chunk in chunks:
        if packed := packer.compress(chunk):
            yield packed
    yield packer.flush()
