"""Static pod identity: what the kubelet's file and HTTP sources add to a manifest's pod.

Restates pkg/kubelet/config/common.go (applyDefaults) and config.go:

- UID: the hex FNV-128a hash of the decoded pod, then `host:<node>` and `file:<path>` for a file
  (only `url:<url>` for a URL, as the kubelet does; `host:<node>` and `api-http` for a pod
  submitted over HTTP, a source kubeletapi adds), unless the manifest sets metadata.uid. The
  pod is serialized as sorted-key compact JSON of its wire form, so the same manifest at the same
  path keeps its UID across restarts and any change to it gives a new one;
- name `<name>-<lowercased node name>`, namespace `default` when empty, spec.nodeName = node;
- annotations kubernetes.io/config.hash (= UID), config.source (file|http|api-http) and config.seen
  (RFC 3339 with nanoseconds, when the source first saw it);
- file pods tolerate every NoExecute taint; status.phase starts Pending.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from kubeletapi.api.core_v1 import Pod
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.manifest import dns1123_subdomain, go_value

CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_SEEN = "kubernetes.io/config.seen"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
DEFAULT_NAMESPACE = "default"
NO_EXECUTE_TOLERATION: dict[str, Any] = {"operator": "Exists", "effect": "NoExecute"}

SourceKind = Literal["file", "http", "api-http"]
SOURCE_KINDS = ("file", "http", "api-http")

_FNV128_OFFSET = 0x6C62272E07BB014262B821756295C58D
_FNV128_PRIME = 0x0000000001000000000000000000013B
_MASK128 = (1 << 128) - 1


class Fnv128a:
    """FNV-1a with a 128-bit state (Go's hash/fnv New128a)."""

    def __init__(self) -> None:
        self._state = _FNV128_OFFSET

    def update(self, data: bytes) -> None:
        state = self._state
        for byte in data:
            state = ((state ^ byte) * _FNV128_PRIME) & _MASK128
        self._state = state

    def digest(self) -> bytes:
        return self._state.to_bytes(16, "big")

    def hexdigest(self) -> str:
        return self.digest().hex()


def is_static(pod: Pod) -> bool:
    """The kubelet's IsStaticPod: a pod from a file or URL source (the API's own say "api")."""
    return pod.metadata.annotations.get(CONFIG_SOURCE, "api") != "api"


def canonical_json(pod: Pod) -> bytes:
    """The pod's wire form as sorted-key compact JSON: the bytes its UID is hashed from."""
    return json.dumps(pod.to_wire(), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def static_uid(pod: Pod, node_name: str, source_kind: SourceKind, source: str) -> str:
    """The UID the kubelet gives a static pod (32 hex digits)."""
    hasher = Fnv128a()
    hasher.update(canonical_json(pod))
    if source_kind == "file":
        hasher.update(f"host:{node_name}".encode())
        hasher.update(f"file:{source}".encode())
    elif source_kind == "api-http":
        hasher.update(f"host:{node_name}".encode())
        hasher.update(b"api-http")
    else:
        hasher.update(f"url:{source}".encode())
    return hasher.hexdigest()


def rfc3339_nano(moment: datetime) -> str:
    """Go's time.RFC3339Nano: fraction without trailing zeros, `Z` for a zero offset."""
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    offset = moment.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset else 0
    if minutes == 0:
        return text + "Z"
    sign = "+" if minutes > 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def config_seen(pod: Pod) -> float | None:
    """When the pod's source first saw it (its config.seen annotation, seconds since the epoch);
    None without one, or one that is not RFC 3339."""
    text = pod.metadata.annotations.get(CONFIG_SEEN)
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def make_static(pod: Pod, node_name: str, source_kind: SourceKind, source: str, seen: datetime) -> Pod:
    """A copy of a decoded manifest pod with the identity the kubelet gives static pods."""
    if source_kind not in SOURCE_KINDS:
        raise ValueError(f"unknown static pod source kind {source_kind!r}")
    out = pod.model_copy(deep=True)
    meta = out.metadata
    name = f"{meta.name}-{node_name.lower()}"
    problems = dns1123_subdomain(name)
    if problems:
        details = "; ".join(f"metadata.name: Invalid value: {go_value(name)}: {p}" for p in problems)
        raise InvalidInput(f"{source}: invalid pod: {details}")
    meta.uid = meta.uid or static_uid(pod, node_name, source_kind, source)
    meta.name = name
    meta.namespace = meta.namespace or DEFAULT_NAMESPACE
    out.spec.node_name = node_name
    meta.annotations = {
        **meta.annotations,
        CONFIG_HASH: meta.uid,
        CONFIG_SEEN: rfc3339_nano(seen),
        CONFIG_SOURCE: source_kind,
    }
    if source_kind == "file":
        out.spec.tolerations = _add_or_update_toleration(out.spec.tolerations, NO_EXECUTE_TOLERATION)
    out.status.phase = "Pending"
    return out


def _add_or_update_toleration(tolerations: list[Any], toleration: dict[str, Any]) -> list[Any]:
    """helper.AddOrUpdateTolerationInPod: replace a toleration matching key/operator/value/effect."""
    fields = ("key", "operator", "value", "effect")
    out = []
    found = False
    for existing in tolerations:
        if isinstance(existing, dict) and all(existing.get(f, "") == toleration.get(f, "") for f in fields):
            out.append(dict(toleration))
            found = True
        else:
            out.append(existing)
    return out if found else [*out, dict(toleration)]
