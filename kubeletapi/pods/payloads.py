"""What a configMap, secret or downwardAPI volume (or projection) holds: path -> contents and mode,
built as the kubelet's plugins build it (configmap.MakePayload, secret.MakePayload,
downwardapi.CollectData).

- Without items every key becomes a file of that name (a ConfigMap's data and binaryData, a
  Secret's data); with items only the keys listed, at their paths. A listed key that is missing
  fails the volume, unless the source is optional.
- A file's mode is its item's mode, else the volume's defaultMode (0644 once defaulted).
- A downwardAPI file holds a pod field or a container resource (fieldpath); every item's error
  is reported together, as Go's aggregate prints them.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import Quantity
from kubeletapi.api.volumes_v1 import DownwardAPIVolumeFile, KeyToPath
from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.pods.atomicwriter import FileProjection
from kubeletapi.pods.fieldpath import object_field, resource_value

DEFAULT_MODE = 0o644
Json = dict[str, Any]
Payload = dict[str, FileProjection]


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several as `[a, b]`."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _decoded(values: Any, what: str) -> dict[str, bytes]:
    out = {}
    for key, value in (values or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput(f"{what}: key {key} is not base64") from None
    return out


def configmap_data(obj: Json) -> dict[str, bytes]:
    """A ConfigMap's keys: data (text) and binaryData (base64 on the wire)."""
    data = {str(k): str(v).encode() for k, v in (obj.get("data") or {}).items()}
    return {**data, **_decoded(obj.get("binaryData"), "binaryData")}


def secret_data(obj: Json) -> dict[str, bytes]:
    """A Secret's keys (base64 on the wire)."""
    return _decoded(obj.get("data"), "data")


def key_payload(kind: str, data: Mapping[str, bytes], items: Sequence[KeyToPath], default_mode: int | None,
                optional: bool) -> Payload:
    """MakePayload of a ConfigMap (`kind` "configmap") or a Secret ("secret")."""
    mode = DEFAULT_MODE if default_mode is None else default_mode
    if not items:
        return {key: FileProjection(value, mode) for key, value in data.items()}
    out: Payload = {}
    for item in items:
        if item.key not in data:
            if optional:
                continue
            if kind == "configmap":
                raise InvalidInput(f"configmap references non-existent config key: {item.key}")
            raise InvalidInput(f"references non-existent secret key: {item.key}")
        out[item.path] = FileProjection(data[item.key], mode if item.mode is None else item.mode)
    return out


def downward_payload(items: Sequence[DownwardAPIVolumeFile], pod: Pod, default_mode: int | None,
                     allocatable: Mapping[str, Quantity]) -> Payload:
    """CollectData: one file per item, every failing item named in one error."""
    mode = DEFAULT_MODE if default_mode is None else default_mode
    out: Payload = {}
    errors: list[str] = []
    for item in items:
        value = b""
        try:
            if item.field_ref is not None:
                value = object_field(pod, item.field_ref.field_path).encode()
            elif item.resource_field_ref is not None:
                value = resource_value(pod, None, item.resource_field_ref, allocatable, pod_level=False).encode()
        except KubeletError as exc:
            errors.append(str(exc))
        out[posixpath.normpath(item.path)] = FileProjection(value, mode if item.mode is None else item.mode)
    if errors:
        raise InvalidInput(aggregate(errors))
    return out
