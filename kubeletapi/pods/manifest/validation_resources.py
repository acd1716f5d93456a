"""Validation of resource names and quantities (ValidateResourceRequirements and friends):
standard versus extended resources, overcommit rules, hugepages.
"""

from __future__ import annotations

from kubeletapi.api.core_v1 import ResourceRequirements
from kubeletapi.api.quantity import Quantity
from kubeletapi.pods.manifest.errors import FieldErrors
from kubeletapi.pods.manifest.formats import qualified_name

_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | {
    *(f"{scope}.{r}" for scope in ("requests", "limits") for r in _STANDARD_CONTAINER_RESOURCES),
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
    "requests.storage",
}


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    return not _native(name) and not name.startswith("requests.") and not qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not name.startswith("hugepages-")


def _validate_resource_name(name: str, path: str, errs: FieldErrors) -> None:
    problems = qualified_name(name)
    errs.invalid_each(path, name, problems)
    standard = name in _STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))
    if not problems and "/" not in name and not standard:
        errs.invalid(path, name, "must be a standard resource type or fully qualified")
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.invalid(path, name, "must be a standard resource for containers")
    elif not _native(name) and not _extended(name):
        errs.invalid(path, name, "doesn't follow extended resource name standard")


def validate_quantity(name: str, quantity: Quantity, path: str, errs: FieldErrors) -> None:
    if quantity.sign() < 0:
        errs.invalid(path, quantity.wire(), "must be greater than or equal to 0")
    if _extended(name) and quantity.milli_value() % 1000:
        errs.invalid(path, quantity.wire(), "must be an integer")


def validate_resources(resources: ResourceRequirements, path: str, errs: FieldErrors) -> None:
    for name, quantity in resources.limits.items():
        _validate_resource_name(name, f"{path}.limits[{name}]", errs)
        validate_quantity(name, quantity, f"{path}.limits[{name}]", errs)
    for name, quantity in resources.requests.items():
        _validate_resource_name(name, f"{path}.requests[{name}]", errs)
        validate_quantity(name, quantity, f"{path}.requests[{name}]", errs)
        limit = resources.limits.get(name)
        if limit is not None and quantity != limit and not _overcommit_allowed(name):
            errs.invalid(f"{path}.requests", quantity.wire(), f"must be equal to {name} limit of {limit.wire()}")
        elif limit is not None and quantity > limit:
            errs.invalid(
                f"{path}.requests", quantity.wire(), f"must be less than or equal to {name} limit of {limit.wire()}"
            )
        elif limit is None and not _overcommit_allowed(name):
            errs.required(f"{path}.limits", "Limit must be set for non overcommitable resources")
    names = {*resources.limits, *resources.requests}
    if any(n.startswith("hugepages-") for n in names) and not names & {"cpu", "memory"}:
        errs.forbidden(path, "HugePages require cpu or memory")
