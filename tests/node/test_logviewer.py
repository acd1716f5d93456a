"""The node log viewer's parts on fixture trees: Go's listing hrefs (the table is what Go 1.26's
url.URL{Path: name}.String() printed for these names), journalctl's arguments through a fake
journalctl that records them, and the 30 s deadline's absence of effect on short reads."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import os
from pathlib import Path

import pytest

from kubeletapi.node.gomime import MimeTypes
from kubeletapi.node.logfiles import RangeError, listing, parse_range
from kubeletapi.node.logquery import NodeLogQuery, NodeLogReader, journalctl_args, parse
from kubeletapi.node.logviewer import NodeLogViewer

GO_HREFS = {
    "b&<x>.txt": "b&%3Cx%3E.txt", "a b?c#d": "a%20b%3Fc%23d", "ü.log": "%C3%BC.log", "100%.log": "100%25.log",
    "x:y": "./x:y", "it's\"q\".log": "it%27s%22q%22.log", "+~!*()'": "+~%21%2A%28%29%27",
}


def test_listing_hrefs_are_gos(tmp_path: Path) -> None:
    for name in GO_HREFS:
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    body = listing(tmp_path).decode()
    for name, href in GO_HREFS.items():
        assert f'<a href="{href}">' in body, name
    assert '<a href="sub/">sub/</a>' in body


def test_journalctl_arguments() -> None:
    nlq, errors = parse([("query", "kubelet"), ("sinceTime", "2024-01-02T03:04:05Z"), ("untilTime",
                        "2024-01-02T13:14:15+02:00"), ("tailLines", "7"), ("pattern", "err.*"), ("boot", "-1")])
    assert errors == [] and nlq is not None
    assert journalctl_args(nlq, ["kubelet", "containerd"]) == [
        "--utc", "--no-pager", "--output=short-precise", "--since=2024-1-2 3:4:5", "--until=2024-1-2 13:14:15",
        "--pager-end", "--lines=7", "--unit=kubelet", "--unit=containerd", "--grep=err.*", "--boot", "-1"]


@pytest.fixture
def fake_journalctl(tmp_path: Path) -> Path:
    """Knows the unit `known`; prints its arguments as JSON."""
    script = tmp_path / "journalctl"
    script.write_text('#!/bin/sh\nif [ "$1" = "--field" ]; then echo known.service; exit 0; fi\n'
                      'python3 -c \'import json,sys; print(json.dumps(sys.argv[1:]))\' "$@"\n')
    script.chmod(0o755)
    return script


def test_known_units_go_to_the_journal_the_rest_to_files(tmp_path: Path, fake_journalctl: Path) -> None:
    (tmp_path / "other.log").write_text("from a file\n")

    async def read(services: list[str]) -> bytes:
        reader = NodeLogReader(tmp_path, str(fake_journalctl))
        return b"".join([c async for c in reader.copy(NodeLogQuery(services=services))])

    out = asyncio.run(read(["known", "other"])).decode()
    journal, _, rest = out.partition("\n")
    assert json.loads(journal) == ["--utc", "--no-pager", "--output=short-precise", "--unit=known"]
    assert rest == "from a file\n"


def test_without_journalctl_everything_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "svc.log").write_text("nested\n")

    async def read() -> bytes:
        reader = NodeLogReader(tmp_path, str(tmp_path / "no-journalctl"))
        return b"".join([c async for c in reader.copy(NodeLogQuery(services=["svc"]))])

    assert asyncio.run(read()) == b"nested\n"
    assert os.path.isdir(tmp_path / "svc")


def test_times_keep_their_offset() -> None:
    nlq, _ = parse([("query", "x"), ("sinceTime", "2024-01-02T03:04:05-01:30")])
    assert nlq is not None and nlq.since == dt.datetime(2024, 1, 2, 4, 34, 5, tzinfo=dt.UTC)


def test_journal_answer_is_gzipped_on_request(tmp_path: Path, fake_journalctl: Path) -> None:
    viewer = NodeLogViewer(tmp_path, True, NodeLogReader(tmp_path, str(fake_journalctl)))

    async def body(headers: dict[str, str]) -> tuple[dict[str, str], bytes]:
        answer = viewer.answer("", [("query", "known"), ("tailLines", "3")], "query=known&tailLines=3", headers)
        assert answer.stream is not None and answer.status == 200
        return dict(answer.headers), b"".join([c async for c in answer.stream])

    headers, packed = asyncio.run(body({"accept-encoding": "gzip"}))
    assert headers == {"Content-Type": "text/plain;charset=UTF-8", "Content-Encoding": "gzip"}
    plain_headers, plain = asyncio.run(body({}))
    assert plain_headers == {"Content-Type": "text/plain;charset=UTF-8"}
    assert gzip.decompress(packed) == plain
    assert json.loads(plain)[-3:] == ["--pager-end", "--lines=3", "--unit=known"]


def test_go_mime_table(tmp_path: Path) -> None:
    globs = tmp_path / "globs2"
    globs.write_text("# comment\n50:text/x-log:*.log\n40:text/plain:*.log\n50:application/x-custom:*.cst\n"
                     "50:text/x-ignored:*.[ch]\n50:image/x-mine:*.png\n")
    types = MimeTypes([tmp_path / "missing", globs], [])
    assert types.type_by_extension(".log") == "text/x-log; charset=utf-8"  # the first, highest weight
    assert types.type_by_extension(".CST") == "application/x-custom"
    assert types.type_by_extension(".png") == "image/png"  # the builtin table wins
    assert types.type_by_extension(".c") == ""
    mime_types = tmp_path / "mime.types"
    mime_types.write_text("text/x-old log old # comment\napplication/x-y yy\n")
    fallback = MimeTypes([tmp_path / "missing"], [mime_types])
    assert fallback.type_by_extension(".log") == "text/x-old; charset=utf-8"
    assert fallback.type_by_extension(".yy") == "application/x-y"


@pytest.mark.parametrize(("header", "size", "ranges"), [
    ("bytes=0-3", 16, [(0, 4)]), ("bytes=-3", 16, [(13, 3)]), ("bytes=10-", 16, [(10, 6)]),
    ("bytes=10-100", 16, [(10, 6)]), ("bytes=0-1,4-5", 16, [(0, 2), (4, 2)]), ("", 16, []),
    ("bytes=0-,0-,0-", 16, []),  # more than the file: ignored
    ("bytes=20-", 0, []),  # an empty file ignores the range
])
def test_ranges(header: str, size: int, ranges: list[tuple[int, int]]) -> None:
    assert parse_range(header, size) == ranges


@pytest.mark.parametrize(("header", "message"), [
    ("items=0-1", "invalid range"), ("bytes=x", "invalid range"), ("bytes=5-1", "invalid range"),
    ("bytes=-", "invalid range"), ("bytes=20-", "invalid range: failed to overlap"),
])
def test_bad_ranges(header: str, message: str) -> None:
    with pytest.raises(RangeError) as err:
        parse_range(header, 16)
    assert str(err.value) == message
