"""Authentication, in the kubelet's order: x509 client certificate, bearer token (token file, then
TokenReview webhook) from the Authorization header or the WebSocket subprotocol, then anonymous.

As in k8s.io/apiserver: the first authenticator that succeeds wins; a presented but invalid
credential is an error, and an error prevents the anonymous fallback; every authenticated user
gets the group system:authenticated.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from kubeletapi.aio import import_off_loop
from kubeletapi.clock import Clock
from kubeletapi.errors import ConfigError

log = logging.getLogger(__name__)

AUTHENTICATED = "system:authenticated"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"


class AuthenticationError(Exception):
    """A credential was presented and is not valid (or could not be checked)."""


@dataclass(frozen=True)
class UserInfo:
    """Who is asking: user name, uid, groups and extra attributes (as in user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def with_group(self, group: str) -> UserInfo:
        if group in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, group), self.extra)


@dataclass(frozen=True)
class Credentials:
    """What a request presented, extracted by the HTTP layer."""

    client_cert_pem: str | None = None
    header_token: str | None = None
    websocket_token: str | None = None
    # A malformed WebSocket token subprotocol: an error in its turn, after the header token.
    websocket_error: str | None = None


class TokenAuthenticator(Protocol):
    """Maps a bearer token to a user; None when the token is unknown to it."""

    async def authenticate_token(self, token: str) -> UserInfo | None: ...


K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A bounded mapping: random tokens or certificates cannot grow memory without limit."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)


class X509Authenticator:
    """User = subject CN, groups = subject O, from a client certificate the TLS handshake verified."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._cache: _LRU[str, tuple[UserInfo, float, float]] = _LRU(1024)

    def authenticate(self, pem: str) -> UserInfo:
        cached = self._cache.get(pem)
        if cached is None:
            # the first client certificate loads cryptography: a node nobody presents one to never does
            from cryptography import x509  # noqa: PLC0415
            from cryptography.x509.oid import NameOID  # noqa: PLC0415

            try:
                cert = x509.load_pem_x509_certificate(pem.encode())
            except ValueError as exc:
                raise AuthenticationError(f"x509: cannot parse client certificate: {exc}") from exc
            names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
            user = UserInfo(
                name=str(names[0].value) if names else "",
                groups=tuple(str(o.value) for o in orgs),
            )
            cached = (user, cert.not_valid_before_utc.timestamp(), cert.not_valid_after_utc.timestamp())
            self._cache.put(pem, cached)
        user, not_before, not_after = cached
        now = self._clock.now()
        if not not_before <= now <= not_after:
            stamp = dt.datetime.fromtimestamp(not_after, dt.UTC).isoformat()
            raise AuthenticationError(f"x509: certificate has expired or is not yet valid (notAfter {stamp})")
        if not user.name:
            raise AuthenticationError("x509: client certificate has no common name")
        return user


class TokenFile:
    """Static tokens in kube-apiserver's --token-auth-file CSV format: token,user,uid[,"g1,g2"]."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self._tokens = tokens

    @classmethod
    def load(cls, path: Path) -> TokenFile:
        """Parse like kube-apiserver: at least 3 columns, no comments, whitespace kept, the
        4th column split on "," into groups, empty tokens skipped, the last duplicate wins."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"token file {path}: {exc}") from exc
        tokens: dict[str, UserInfo] = {}
        number = 0
        try:
            records = list(csv.reader(io.StringIO(text), strict=True))
        except csv.Error as exc:
            raise ConfigError(f"token file {path}: {exc}") from exc
        for record in records:
            if not record:
                continue  # blank line
            if len(record) < 3:
                raise ConfigError(
                    f"token file '{path}' must have at least 3 columns (token, user name, user uid), "
                    f"found {len(record)}"
                )
            number += 1
            token = record[0]
            if not token:
                log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
                continue
            if token in tokens:
                log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            groups = tuple(record[3].split(",")) if len(record) > 3 else ()
            tokens[token] = UserInfo(name=record[1], uid=record[2], groups=groups)
        return cls(tokens)

    async def authenticate_token(self, token: str) -> UserInfo | None:
        return self._tokens.get(token)


class CachedTokenAuthenticator:
    """Caches another token authenticator's answers (success and failure) for `ttl` seconds.

    Keys are SHA-256 digests, so tokens are never kept in memory longer than a request.
    """

    def __init__(self, inner: TokenAuthenticator, ttl: float, clock: Clock, size: int = 4096) -> None:
        self._inner = inner
        self._ttl = ttl
        self._clock = clock
        self._cache: _LRU[bytes, tuple[float, UserInfo | None]] = _LRU(size)

    async def authenticate_token(self, token: str) -> UserInfo | None:
        key = hashlib.sha256(token.encode()).digest()
        hit = self._cache.get(key)
        now = self._clock.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]
        user = await self._inner.authenticate_token(token)  # errors are not cached
        if self._ttl > 0:
            self._cache.put(key, (now + self._ttl, user))
        return user


class RequestAuthenticator:
    """The union of the configured authenticators, with the anonymous fallback."""

    def __init__(
        self,
        x509_auth: X509Authenticator | None,
        token_auths: Sequence[TokenAuthenticator],
        anonymous: bool,
    ) -> None:
        self._x509 = x509_auth
        self._tokens = tuple(token_auths)
        self._anonymous = anonymous

    async def authenticate(self, creds: Credentials) -> UserInfo:
        """The user, or AuthenticationError (answered with 401 Unauthorized)."""
        errors: list[str] = []
        if creds.client_cert_pem is not None and self._x509 is not None:
            await import_off_loop("cryptography.x509", "cryptography.x509.oid")
            try:
                return self._x509.authenticate(creds.client_cert_pem).with_group(AUTHENTICATED)
            except AuthenticationError as exc:
                errors.append(str(exc))
        for token, error in ((creds.header_token, None), (creds.websocket_token, creds.websocket_error)):
            if error is not None:
                errors.append(error)
            if token is None:
                continue
            try:
                user = await self._token_user(token)
            except AuthenticationError as exc:
                errors.append(str(exc))
                continue
            if user is not None:
                return user.with_group(AUTHENTICATED)
            errors.append("invalid bearer token")
        if errors:
            raise AuthenticationError("; ".join(errors))
        if self._anonymous:
            return UserInfo(name=ANONYMOUS, groups=(UNAUTHENTICATED,))
        raise AuthenticationError("no credentials presented")

    async def _token_user(self, token: str) -> UserInfo | None:
        errors: list[str] = []
        for auth in self._tokens:
            try:
                user = await auth.authenticate_token(token)
            except AuthenticationError as exc:
                errors.append(str(exc))
                continue
            if user is not None:
                return user
        if errors:
            raise AuthenticationError("; ".join(errors))
        return None
