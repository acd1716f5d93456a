"""Typed views of the core/v1 volume sources kubeletapi mounts from the API server: configMap,
secret, downwardAPI and projected (k8s.io/api core/v1 types.go).

core_v1.Volume keeps these sources as opaque JSON (checked against api.fields, re-encoded
verbatim on /pods); the volume plugins read them through these models with `parse`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import Field, ValidationError

from kubeletapi.api.core_v1 import Int32, Int64, ObjectFieldSelector, Opaque, ResourceFieldSelector, WireModel

M = TypeVar("M", bound=WireModel)


class KeyToPath(WireModel):
    key: str = ""
    path: str = ""
    mode: Int32 | None = None


class ConfigMapVolumeSource(WireModel):
    name: str = ""
    items: list[KeyToPath] = Field(default_factory=list)
    default_mode: Int32 | None = None
    optional: bool | None = None


class SecretVolumeSource(WireModel):
    secret_name: str = ""
    items: list[KeyToPath] = Field(default_factory=list)
    default_mode: Int32 | None = None
    optional: bool | None = None


class DownwardAPIVolumeFile(WireModel):
    path: str = ""
    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    mode: Int32 | None = None


class DownwardAPIVolumeSource(WireModel):
    items: list[DownwardAPIVolumeFile] = Field(default_factory=list)
    default_mode: Int32 | None = None


class ConfigMapProjection(WireModel):
    name: str = ""
    items: list[KeyToPath] = Field(default_factory=list)
    optional: bool | None = None


class SecretProjection(WireModel):
    name: str = ""
    items: list[KeyToPath] = Field(default_factory=list)
    optional: bool | None = None


class DownwardAPIProjection(WireModel):
    items: list[DownwardAPIVolumeFile] = Field(default_factory=list)


class ServiceAccountTokenProjection(WireModel):
    audience: str = ""
    expiration_seconds: Int64 | None = None
    path: str = ""


class VolumeProjection(WireModel):
    secret: SecretProjection | None = None
    downward_api: DownwardAPIProjection | None = None
    config_map: ConfigMapProjection | None = None
    service_account_token: ServiceAccountTokenProjection | None = None
    cluster_trust_bundle: Opaque | None = None
    pod_certificate: Opaque | None = None


class ProjectedVolumeSource(WireModel):
    sources: list[VolumeProjection] = Field(default_factory=list)
    default_mode: Int32 | None = None


def parse(model: type[M], raw: Any, what: str) -> M:
    """`raw` (a volume's opaque source) as `model`; ValueError naming `what` if it is not one."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"{what}: {where}: {first['msg']}") from None
