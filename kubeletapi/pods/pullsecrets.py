"""Registry credentials from a pod's imagePullSecrets, matched to an image as the kubelet's keyring
matches them (pkg/credentialprovider keyring.go and config.go, secrets.MakeDockerKeyring,
parsers.ParseImageName).

- A Secret of type kubernetes.io/dockerconfigjson (key .dockerconfigjson, `{"auths": {...}}`)
  or kubernetes.io/dockercfg (key .dockercfg, `{...}`) gives one entry per registry location:
  username and password, or `auth` = base64("user:password"). A Secret that cannot be read is
  skipped (logged); a malformed one fails the pull.
- A location is keyed by host[:port] plus its path (a /v1/ or /v2/ prefix dropped); keys are
  tried most specific first (reverse order). A key matches an image's repository (docker.io
  normalized: `busybox` is docker.io/library/busybox) when the ports are equal, the hosts have as
  many dot-separated parts and each matches as a glob (`*.example.com`), and the repository's
  path starts with the key's. With no match, an image of Docker Hub uses the index.docker.io key.
- The pull is tried with each matching credential in turn (the image manager does), and without
  any when none matches.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.pods.payloads import secret_data
from kubeletapi.runtime.types import AuthConfig

log = logging.getLogger(__name__)

DEFAULT_REGISTRY_HOST = "index.docker.io"
DOCKER_CONFIG_JSON = ("kubernetes.io/dockerconfigjson", ".dockerconfigjson")
DOCKER_CFG = ("kubernetes.io/dockercfg", ".dockercfg")

Json = dict[str, Any]


class SecretGetter(Protocol):
    """The Secret cache (pods.objectcache.ObjectCache)."""

    async def get(self, namespace: str, name: str) -> Json: ...


def repository(image: str) -> str:
    """ParseImageName's repository: the normalized name without tag or digest."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    first, sep, rest = name.partition("/")
    if not sep:
        return f"docker.io/library/{name}"
    if first in ("docker.io", "index.docker.io"):
        return f"docker.io/{rest if '/' in rest else 'library/' + rest}"
    if "." in first or ":" in first or first == "localhost":
        return name
    return f"docker.io/{name}"


def _entry(location: str, raw: Any) -> AuthConfig:
    if not isinstance(raw, dict):
        raise InvalidInput(f"docker config entry {location}: not an object")
    username, password = str(raw.get("username") or ""), str(raw.get("password") or "")
    auth = str(raw.get("auth") or "")
    if auth:
        padded = auth.strip() + "=" * (-len(auth.strip()) % 4)
        try:
            username, sep, password = base64.b64decode(padded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise InvalidInput(f"docker config entry {location}: the auth field is not base64") from None
        if not sep:
            raise InvalidInput("unable to parse auth field, must be formatted as base64(username:password)")
    return AuthConfig(username=username, password=password)


def _name(secret: Json) -> str:
    meta = secret.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def docker_config(secret: Json) -> dict[str, AuthConfig] | None:
    """location -> credentials of a docker config Secret; None for a Secret of another type."""
    kind = str(secret.get("type") or "")
    data = secret_data(secret)
    for secret_type, key in (DOCKER_CONFIG_JSON, DOCKER_CFG):
        if kind == secret_type and data.get(key):
            try:
                parsed = json.loads(data[key])
            except ValueError as exc:
                raise InvalidInput(f"{key} of secret {_name(secret)}: {exc}") from None
            if secret_type == DOCKER_CONFIG_JSON[0] and isinstance(parsed, dict):
                parsed = parsed.get("auths") or {}  # DockerConfigJSON: no auths, no entries
            if not isinstance(parsed, dict):
                raise InvalidInput(f"{key} of secret {_name(secret)}: not an object of registry locations")
            try:
                return {str(loc): _entry(str(loc), raw) for loc, raw in parsed.items()}
            except InvalidInput as exc:
                raise InvalidInput(f"{key} of secret {_name(secret)}: {exc}") from None
    return None


def _key(location: str) -> str | None:
    value = location if location.startswith(("https://", "http://")) else "https://" + location
    try:
        parsed = urlsplit(value)
        host = parsed.netloc
    except ValueError:
        return None
    path = parsed.path
    if path.startswith(("/v1/", "/v2/")):
        path = path[3:]
    return host + path if path and path != "/" else host


def _split(url: str) -> tuple[list[str], str, str]:
    parsed = urlsplit("https://" + url)
    host, _, port = parsed.netloc.rpartition(":") if ":" in parsed.netloc else (parsed.netloc, "", "")
    return host.split("."), port, parsed.path


def urls_match(glob: str, target: str) -> bool:
    """URLsMatchStr: ports equal, as many host parts each matching as a glob, path a prefix."""
    glob_parts, glob_port, glob_path = _split(glob)
    parts, port, path = _split(target)
    if glob_port != port or len(glob_parts) != len(parts) or not path.startswith(glob_path):
        return False
    return all(fnmatch.fnmatchcase(p, g) for g, p in zip(glob_parts, parts, strict=True))


def _default_registry(image: str) -> bool:
    first, sep, _ = image.partition("/")
    if not first:
        return False
    return not sep or first in ("docker.io", "index.docker.io") or not any(c in first for c in ".:")


class Keyring:
    """BasicDockerKeyring."""

    def __init__(self) -> None:
        self._creds: dict[str, list[AuthConfig]] = {}

    def add(self, config: Mapping[str, AuthConfig]) -> None:
        for location, creds in config.items():
            key = _key(location)
            if key is None:
                log.warning("docker config entry %r is invalid: ignored", location)
                continue
            self._creds.setdefault(key, []).append(creds)

    def lookup(self, image: str) -> list[AuthConfig]:
        found = [c for key in sorted(self._creds, reverse=True) if urls_match(key, image) for c in self._creds[key]]
        if not found and _default_registry(image):
            found = list(self._creds.get(DEFAULT_REGISTRY_HOST, ()))
        return found


class PullCredentials:
    """The credentials to pull `image` with, from the pod's imagePullSecrets."""

    def __init__(self, secrets: SecretGetter) -> None:
        self._secrets = secrets

    async def credentials(self, namespace: str, secret_names: Sequence[str], image: str) -> list[AuthConfig]:
        keyring = Keyring()
        for name in secret_names:
            if not name:
                continue
            try:
                secret = await self._secrets.get(namespace, name)
            except KubeletError as exc:  # getPullSecretsForPod: the pull may still succeed
                log.info("Unable to retrieve pull secret %s/%s, the image pull may not succeed: %s",
                         namespace, name, exc)
                continue
            config = docker_config(secret)
            if config is not None:
                keyring.add(config)
        return keyring.lookup(repository(image))
