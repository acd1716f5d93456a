"""Authentication pieces: token file, credential extraction, the union and its caches."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from pathlib import Path

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import ConfigError
from kubeletapi.server.auth import bearer_token, websocket_token
from kubeletapi.server.authn import (
    AuthenticationError,
    CachedTokenAuthenticator,
    Credentials,
    RequestAuthenticator,
    TokenFile,
    UserInfo,
    X509Authenticator,
)
from tests.helpers import client_cert, make_ca


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def token_file(tmp_path: Path, text: str) -> TokenFile:
    path = tmp_path / "tokens.csv"
    path.write_text(text)
    return TokenFile.load(path)


def test_token_file_format(tmp_path: Path) -> None:
    tokens = token_file(tmp_path, 'tok1,alice,uid-1,"g1,g2"\n\ntok2,bob,uid-2\n,empty,x\ntok1,carol,uid-3,\n')
    assert run(tokens.authenticate_token("tok2")) == UserInfo("bob", "uid-2", ())
    # duplicate: the last one wins; an empty 4th column is one empty group, as upstream
    assert run(tokens.authenticate_token("tok1")) == UserInfo("carol", "uid-3", ("",))
    assert run(tokens.authenticate_token("")) is None
    assert run(tokens.authenticate_token("nope")) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("tok,alice\n", "must have at least 3 columns", id="two-columns"),
        pytest.param("# a comment\n", "must have at least 3 columns", id="comments-unsupported"),
        pytest.param('tok,"unterminated,x\n', "token file", id="bad-quote"),
    ],
)
def test_token_file_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        token_file(tmp_path, text)


def scope(headers: list[tuple[bytes, bytes]], kind: str = "http") -> dict[str, object]:
    return {"type": kind, "headers": headers, "path": "/x"}


@pytest.mark.parametrize(
    ("value", "token"),
    [
        pytest.param(b"Bearer abc", "abc", id="bearer"),
        pytest.param(b"bearer abc", "abc", id="lower-case"),
        pytest.param(b"  Bearer abc  ", "abc", id="trimmed"),
        pytest.param(b"Bearer abc def", "abc", id="first-word"),
        pytest.param(b"Bearer  abc", None, id="double-space"),
        pytest.param(b"Basic abc", None, id="basic"),
        pytest.param(b"Bearer", None, id="no-token"),
    ],
)
def test_bearer_header(value: bytes, token: str | None) -> None:
    assert bearer_token(scope([(b"authorization", value)])) == token


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("protocols", "token", "error", "left"),
    [
        pytest.param(f"v4.channel.k8s.io, base64url.bearer.authorization.k8s.io.{b64('s3cret?')}", "s3cret?", None,
                     ["v4.channel.k8s.io"], id="valid"),
        pytest.param(f"base64url.bearer.authorization.k8s.io.{b64('tok')}", None, "missing additional subprotocol",
                     None, id="alone"),
        pytest.param(f"x, base64url.bearer.authorization.k8s.io.{b64('a')}, base64url.bearer.authorization.k8s.io.b",
                     None, "multiple base64.bearer.authorization tokens specified", None, id="two"),
        pytest.param("x, base64url.bearer.authorization.k8s.io.dG9r=", None,
                     "invalid base64.bearer.authorization token encoding", None, id="padded"),
        pytest.param("x, base64url.bearer.authorization.k8s.io.__8", None,
                     "invalid base64.bearer.authorization token", None, id="not-utf8"),
        pytest.param("v4.channel.k8s.io", None, None, None, id="none"),
    ],
)
def test_websocket_token(protocols: str, token: str | None, error: str | None, left: list[str] | None) -> None:
    s = scope([(b"sec-websocket-protocol", protocols.encode())], "websocket")
    s["subprotocols"] = [p.strip() for p in protocols.split(",")]
    assert websocket_token(s) == (token, error)
    if left is not None:
        assert s["subprotocols"] == left  # the token is never echoed back
        assert (b"sec-websocket-protocol", ",".join(left).encode()) in s["headers"]  # type: ignore[operator]


def test_websocket_token_ignored_on_plain_http() -> None:
    s = scope([(b"sec-websocket-protocol", f"x, base64url.bearer.authorization.k8s.io.{b64('t')}".encode())])
    assert websocket_token(s) == (None, None)


class CountingTokens:
    """A fake token authenticator (unit test of the cache only)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    async def authenticate_token(self, token: str) -> UserInfo | None:
        self.calls += 1
        if self.fail:
            raise AuthenticationError("webhook down")
        return UserInfo("alice") if token == "good" else None


def test_token_cache_ttl_success_and_failure() -> None:
    clock = FakeClock()
    inner = CountingTokens()
    cache = CachedTokenAuthenticator(inner, ttl=120, clock=clock)
    for _ in range(3):
        assert run(cache.authenticate_token("good")) == UserInfo("alice")
        assert run(cache.authenticate_token("bad")) is None
    assert inner.calls == 2
    clock.advance(121)
    run(cache.authenticate_token("good"))
    assert inner.calls == 3


def test_token_cache_does_not_cache_errors() -> None:
    inner = CountingTokens(fail=True)
    cache = CachedTokenAuthenticator(inner, ttl=120, clock=FakeClock())
    for _ in range(2):
        with pytest.raises(AuthenticationError):
            run(cache.authenticate_token("good"))
    assert inner.calls == 2


def test_token_cache_is_bounded() -> None:
    inner = CountingTokens()
    cache = CachedTokenAuthenticator(inner, ttl=120, clock=FakeClock(), size=8)
    for i in range(100):
        run(cache.authenticate_token(f"random-{i}"))
    assert len(cache._cache._data) == 8


def union(tmp_path: Path, anonymous: bool) -> RequestAuthenticator:
    return RequestAuthenticator(None, [token_file(tmp_path, "good,alice,1,admins\n")], anonymous)


@pytest.mark.parametrize(
    ("creds", "anonymous", "user"),
    [
        pytest.param(Credentials(header_token="good"), False,
                     UserInfo("alice", "1", ("admins", "system:authenticated")), id="token"),
        pytest.param(Credentials(websocket_token="good"), False,
                     UserInfo("alice", "1", ("admins", "system:authenticated")), id="ws-token"),
        pytest.param(Credentials(), True, UserInfo("system:anonymous", "", ("system:unauthenticated",)),
                     id="anonymous"),
        pytest.param(Credentials(header_token="bad", websocket_token="good"), False,
                     UserInfo("alice", "1", ("admins", "system:authenticated")), id="second-token-wins"),
    ],
)
def test_union_success(tmp_path: Path, creds: Credentials, anonymous: bool, user: UserInfo) -> None:
    assert run(union(tmp_path, anonymous).authenticate(creds)) == user


@pytest.mark.parametrize(
    ("creds", "anonymous", "message"),
    [
        pytest.param(Credentials(), False, "no credentials", id="nothing"),
        pytest.param(Credentials(header_token="bad"), True, "invalid bearer token", id="bad-token-no-anonymous"),
        pytest.param(Credentials(websocket_error="missing additional subprotocol"), True,
                     "missing additional subprotocol", id="ws-error-no-anonymous"),
    ],
)
def test_union_failure(tmp_path: Path, creds: Credentials, anonymous: bool, message: str) -> None:
    with pytest.raises(AuthenticationError, match=message):
        run(union(tmp_path, anonymous).authenticate(creds))


def test_x509_identity_and_validity(tmp_path: Path) -> None:
    ca, key, _ = make_ca(tmp_path, "ca")
    now = dt.datetime.now(dt.UTC)
    good = client_cert(tmp_path, ca, key, "alice", ["devs", "ops"])
    old = client_cert(tmp_path, ca, key, "old", not_before=now - dt.timedelta(days=3),
                      not_after=now - dt.timedelta(days=1))
    auth = X509Authenticator(FakeClock())
    assert auth.authenticate(good.cert.read_text()) == UserInfo("alice", "", ("devs", "ops"))
    with pytest.raises(AuthenticationError, match="expired"):
        auth.authenticate(old.cert.read_text())
    with pytest.raises(AuthenticationError, match="cannot parse"):
        auth.authenticate("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
