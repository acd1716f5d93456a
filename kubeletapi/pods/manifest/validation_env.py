"""Validation of a container's env and envFrom: names, and the downward-API, resource, ConfigMap
and Secret references a value may come from (ValidateEnv, validateEnvVarValueFrom).
"""

from __future__ import annotations

from kubeletapi.api.core_v1 import EnvFromSource, EnvVar, ObjectFieldSelector, ResourceFieldSelector
from kubeletapi.pods.manifest.errors import FieldErrors
from kubeletapi.pods.manifest.formats import config_key, dns1123_subdomain, env_var_name, qualified_name

_ENV_FIELD_PATHS = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
]
# Labels ConvertDownwardAPIFieldLabel accepts (spec.host is the old name of spec.nodeName).
_CONVERTIBLE = {"metadata.annotations", "metadata.labels", "spec.restartPolicy", "spec.schedulerName", "status.phase"}
_RESOURCE_FIELDS = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
]
_BYTE_DIVISORS = {"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
_BYTES_MSG = "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the "
_DIVISORS = {
    "cpu": ({"1m", "1"}, "only divisor's values 1m and 1 are supported with the cpu resource"),
    "memory": (_BYTE_DIVISORS, _BYTES_MSG + "memory resource"),
    "ephemeral-storage": (_BYTE_DIVISORS, _BYTES_MSG + "local ephemeral storage resource"),
}


def validate_env(env: list[EnvVar], path: str, errs: FieldErrors) -> None:
    for i, var in enumerate(env):
        at = f"{path}[{i}]"
        if not var.name:
            errs.required(f"{at}.name")
        errs.invalid_each(f"{at}.name", var.name, env_var_name(var.name))
        source = var.value_from
        if source is None:
            continue
        at = f"{at}.valueFrom"
        if source.field_ref is not None:
            _validate_field_ref(source.field_ref, f"{at}.fieldRef", errs)
        if source.resource_field_ref is not None:
            _validate_resource_field_ref(source.resource_field_ref, f"{at}.resourceFieldRef", errs)
        for key, selector in (("configMapKeyRef", source.config_map_key_ref), ("secretKeyRef", source.secret_key_ref)):
            if selector is not None:
                errs.invalid_each(f"{at}.{key}.name", selector.name, dns1123_subdomain(selector.name))
                if not selector.key:
                    errs.required(f"{at}.{key}.key")
                errs.invalid_each(f"{at}.{key}.key", selector.key, config_key(selector.key) if selector.key else [])
        count = len(source.sources())
        if count == 0:
            errs.invalid(
                at, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
            )
        elif var.value:
            errs.invalid(at, "", "may not be specified when `value` is not empty")
        elif count > 1:
            errs.invalid(at, "", "may not have more than one field specified at a time")


def _split_subscript(field_path: str) -> tuple[str, str | None]:
    """fieldpath.SplitMaybeSubscriptedPath: metadata.labels['x'] -> (metadata.labels, x)."""
    if field_path.endswith("']") and "['" in field_path and not field_path.startswith("['"):
        base, subscript = field_path[:-2].split("['", 1)
        return base, subscript
    return field_path, None


def _validate_field_ref(ref: ObjectFieldSelector, path: str, errs: FieldErrors) -> None:
    if not ref.api_version:
        errs.required(f"{path}.apiVersion")
        return
    if not ref.field_path:
        errs.required(f"{path}.fieldPath")
        return
    base, subscript = _split_subscript(ref.field_path)
    if ref.api_version != "v1":
        problem = f"unsupported pod version: {ref.api_version}"
    elif subscript is not None:
        problem = (
            ""
            if base in ("metadata.annotations", "metadata.labels")
            else f"field label does not support subscript: {ref.field_path}"
        )
    else:
        known = base in _CONVERTIBLE or base in _ENV_FIELD_PATHS or base == "spec.host"
        problem = "" if known else f"field label not supported: {ref.field_path}"
    if problem:
        errs.invalid(f"{path}.fieldPath", ref.field_path, f"error converting fieldPath: {problem}")
    elif subscript is not None:
        key = subscript.lower() if base == "metadata.annotations" else subscript
        errs.invalid_each(path, key, qualified_name(key))
    elif (internal := "spec.nodeName" if base == "spec.host" else base) not in _ENV_FIELD_PATHS:
        errs.unsupported(f"{path}.fieldPath", internal, _ENV_FIELD_PATHS)


def _validate_resource_field_ref(ref: ResourceFieldSelector, path: str, errs: FieldErrors) -> None:
    if not ref.resource:
        errs.required(f"{path}.resource")
        return
    if ref.resource not in _RESOURCE_FIELDS and not ref.resource.startswith(
        ("limits.hugepages-", "requests.hugepages-")
    ):
        errs.unsupported(f"{path}.resource", ref.resource, _RESOURCE_FIELDS)
        return
    allowed = _DIVISORS.get(ref.resource.split(".", 1)[1])
    if allowed is not None and not ref.divisor.is_zero() and ref.divisor.wire() not in allowed[0]:
        errs.invalid(f"{path}.divisor", ref.resource, allowed[1])


def validate_env_from(sources: list[EnvFromSource], path: str, errs: FieldErrors) -> None:
    for i, source in enumerate(sources):
        at = f"{path}[{i}]"
        if source.prefix:
            errs.invalid_each(f"{at}.prefix", source.prefix, env_var_name(source.prefix))
        refs = [(k, r) for k, r in (("configMapRef", source.config_map_ref), ("secretRef", source.secret_ref)) if r]
        for key, ref in refs:
            if not ref.name:
                errs.required(f"{at}.{key}.name")
            else:
                errs.invalid_each(f"{at}.{key}.name", ref.name, dns1123_subdomain(ref.name))
        if not refs:
            errs.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`")
        elif len(refs) > 1:
            errs.invalid(path, "", "may not have more than one field specified at a time")
