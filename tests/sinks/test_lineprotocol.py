"""Line protocol encoding: escaping, tag order, empty tags, integer fields."""

from __future__ import annotations

import pytest

from kubeletapi.sinks.lineprotocol import Point, encode


@pytest.mark.parametrize(
    ("point", "line"),
    [
        pytest.param(Point("m", {"b": "2", "a": "1"}, {"f": 3}, 7), b"m,a=1,b=2 f=3i 7", id="tags-sorted"),
        pytest.param(Point("m", {"a": "", "b": "x"}, {"f": 0}, 1), b"m,b=x f=0i 1", id="empty-tag-left-out"),
        pytest.param(Point("m", {}, {"f": 1, "g": -2}, 1), b"m f=1i,g=-2i 1", id="no-tags-negative"),
        pytest.param(Point("my m,x", {"k": "v"}, {"f": 1}, 1), rb"my\ m\,x,k=v f=1i 1", id="measurement-escapes"),
        pytest.param(Point("m", {"k =,": "a b=c,d"}, {"f": 1}, 1), rb"m,k\ \=\,=a\ b\=c\,d f=1i 1",
                     id="tag-escapes"),
        pytest.param(Point("m", {}, {"a b": 1}, 1), rb"m a\ b=1i 1", id="field-key-escapes"),
        pytest.param(Point("m", {"k": "line\nbreak"}, {"f": 1}, 1), rb"m,k=line\nbreak f=1i 1",
                     id="newline-never-splits-a-line"),
    ],
)
def test_encode(point: Point, line: bytes) -> None:
    assert encode(point) == line
    assert b"\n" not in encode(point)
