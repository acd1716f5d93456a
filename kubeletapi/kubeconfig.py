"""Kubeconfig files: write the admin one for kubectl, read --kubeconfig for the webhooks, write
the node's own after a TLS bootstrap.

Only what a node agent needs: the current context's cluster (server, CA, insecure flag) and user
(client certificate and key, token or token file), as file paths or inline base64 data.
Credentials holds the ClientConfig the node's API clients use now: a rotated client certificate
replaces it, and each client builds its connections anew when its generation changes.
"""

from __future__ import annotations

import base64
import binascii
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeletapi.errors import ConfigError
from kubeletapi.pkifiles import write_private


@dataclass(frozen=True)
class ClientConfig:
    """How to reach an API server: its URL, how to trust it and how to authenticate to it."""

    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context for `server` with this config's trust and client certificate."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_pem is not None:
            ctx.load_verify_locations(cadata=self.ca_pem.decode())
        if self.client_cert_pem is not None and self.client_key_pem is not None:
            # ssl only loads key pairs from files; keep them in a private temp dir briefly.
            with tempfile.TemporaryDirectory() as tmp:
                crt, key = Path(tmp) / "c.crt", Path(tmp) / "c.key"
                write_private(crt, self.client_cert_pem)
                write_private(key, self.client_key_pem)
                ctx.load_cert_chain(crt, key)
        return ctx


class Credentials:
    """The current ClientConfig of a set of API clients; `generation` counts replacements."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self.generation = 0

    @property
    def config(self) -> ClientConfig:
        return self._config

    def replace(self, config: ClientConfig) -> None:
        self._config = config
        self.generation += 1


def write_node_kubeconfig(path: Path, server: str, ca_pem: bytes | None, insecure: bool, cert_file: Path) -> None:
    """The kubeconfig a TLS bootstrap leaves at --kubeconfig (as the kubelet writes it): the
    bootstrap's cluster, and a user whose certificate and key are both the store's current file,
    so a rotated certificate needs no new kubeconfig."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster}],
        "contexts": [{"name": "default-context",
                      "context": {"cluster": "default-cluster", "namespace": "default", "user": "default-auth"}}],
        "current-context": "default-context",
        "users": [{"name": "default-auth",
                   "user": {"client-certificate": str(cert_file), "client-key": str(cert_file)}}],
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, yaml.safe_dump(doc, sort_keys=False).encode())


def write_kubeconfig(
    path: Path, name: str, server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes
) -> None:
    """Write a self-contained kubeconfig (inline data) with mode 0600."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": name, "user": {"client-certificate-data": b64(cert_pem), "client-key-data": b64(key_pem)}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }
    write_private(path, yaml.safe_dump(doc, sort_keys=False).encode())


def load_kubeconfig(path: Path) -> ClientConfig:
    """Read `path`; raise ConfigError naming the file and the missing or bad entry."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"kubeconfig {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {path}: not a kubeconfig document")
    base = path.parent
    context = _named(doc, path, "contexts", doc.get("current-context") or _first_name(doc, "contexts"))
    cluster = _named(doc, path, "clusters", context.get("cluster"))
    user = _named(doc, path, "users", context.get("user")) if context.get("user") else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise ConfigError(f"kubeconfig {path}: cluster has no https server URL")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = _read(path, base, user["tokenFile"]).decode().strip()
    config = ClientConfig(
        server=server.rstrip("/"),
        ca_pem=_data_or_file(path, base, cluster, "certificate-authority"),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        client_cert_pem=_data_or_file(path, base, user, "client-certificate"),
        client_key_pem=_data_or_file(path, base, user, "client-key"),
        token=token or None,
    )
    try:
        config.ssl_context()  # a CA, certificate or key that does not load is this file's fault
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {path}: its certificate authority, client certificate or key "
                          f"does not load: {exc}") from exc
    return config


def _first_name(doc: dict[str, Any], section: str) -> str | None:
    items = doc.get(section) or []
    return items[0].get("name") if items and isinstance(items[0], dict) else None


def _named(doc: dict[str, Any], path: Path, section: str, name: Any) -> dict[str, Any]:
    key = section[:-1]
    if name is None:
        missing = "no current-context and no contexts" if section == "contexts" else f"its context names no {key}"
        raise ConfigError(f"kubeconfig {path}: {missing}: there is no API server to use")
    for item in doc.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get(key), dict):
            return dict(item[key])
    raise ConfigError(f"kubeconfig {path}: no {key} named {name!r}")


def _read(path: Path, base: Path, name: str) -> bytes:
    target = Path(name) if Path(name).is_absolute() else base / name
    try:
        return target.read_bytes()
    except OSError as exc:
        raise ConfigError(f"kubeconfig {path}: cannot read {target}: {exc.strerror}") from exc


def _data_or_file(path: Path, base: Path, section: dict[str, Any], field: str) -> bytes | None:
    data = section.get(f"{field}-data")
    if data:
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, TypeError) as exc:
            raise ConfigError(f"kubeconfig {path}: {field}-data is not base64") from exc
    if section.get(field):
        return _read(path, base, str(section[field]))
    return None
