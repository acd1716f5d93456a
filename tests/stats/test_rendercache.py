"""Bodies rendered once per generation, prepared ahead for what clients asked for recently."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest

from kubeletapi.errors import KubeletError
from kubeletapi.stats.rendercache import RenderCache


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def render(self, text: str) -> bytes:
        self.calls += 1
        return text.encode() * 100


def test_rendered_once_per_generation_and_gzip_is_of_the_plain_body() -> None:
    now = [0.0]
    cache, counter = RenderCache(lambda: now[0]), Counter()
    assert cache.get(1, "a", False, lambda: counter.render("one")) == b"one" * 100
    assert gzip.decompress(cache.get(1, "a", True, lambda: counter.render("one"))) == b"one" * 100
    cache.get(1, "a", False, lambda: counter.render("one"))
    assert counter.calls == 1
    assert cache.get(2, "a", False, lambda: counter.render("two")) == b"two" * 100
    assert counter.calls == 2


def test_prepare_renders_what_was_asked_recently_only(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    cache, counter = RenderCache(lambda: now[0], ahead_s=60), Counter()
    cache.get(1, "asked", True, lambda: counter.render("x"))
    cache.get(1, "stale", False, lambda: counter.render("y"))
    now[0] = 30.0
    cache.get(1, "asked", True, lambda: counter.render("x"))  # asked again: still wanted
    now[0] = 70.0  # "stale" was last asked 70 s ago
    calls: list[str] = []

    def recording(kind: str, body: bytes) -> Callable[[], bytes]:
        def render() -> bytes:
            calls.append(kind)
            return body
        return render

    def broken() -> bytes:
        raise KubeletError("failed to get rootFs stats")

    cache.prepare(2, {"asked": recording("asked", b"new"), "stale": recording("stale", b"old")})
    assert calls == ["asked"]
    # Served from the prepared bodies: the renderer given here is never called.
    assert gzip.decompress(cache.get(2, "asked", True, lambda: counter.render("never"))) == b"new"
    assert cache.get(2, "asked", False, lambda: counter.render("never")) == b"new"
    assert counter.calls == 2
    cache.get(2, "fails", False, lambda: b"ok")
    cache.prepare(3, {"fails": broken})  # a summary that cannot be built is not an exception
    assert "Traceback" not in caplog.text
    with pytest.raises(KubeletError):
        cache.get(3, "fails", False, broken)


def test_only_the_newest_generations_are_kept() -> None:
    cache = RenderCache(lambda: 0.0)
    for generation in range(1, 6):
        cache.get(generation, "a", False, str(generation).encode)
    assert sorted(cache._bodies) == [4, 5]
