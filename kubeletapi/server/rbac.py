"""RBAC mode: ClusterRoles and ClusterRoleBindings from a local file, evaluated like kube-apiserver.

This is kubeletapi's extension for nodes without an API server: --authorization-rbac-file holds
rbac.authorization.k8s.io/v1 ClusterRole and ClusterRoleBinding documents (YAML, multi-doc or a
List), so a Prometheus token can get nodes/metrics and nodes/stats and nothing else.

Matching follows pkg/apis/rbac/v1/evaluation_helpers.go: verbs and apiGroups match exactly or
by "*"; a resource rule matches "*", the exact "nodes/<subresource>", or "*/<subresource>"
("nodes/*" is a literal and matches nothing); resourceNames, when given, must list the node.
Subjects: User by name, Group by membership, ServiceAccount as
system:serviceaccount:<namespace>:<name> (a namespace is required). As in kube-apiserver, the
group system:masters is always allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeletapi.errors import ConfigError
from kubeletapi.server.authn import UserInfo
from kubeletapi.server.authz import Attributes, Authorizer, Decision

RBAC_API = "rbac.authorization.k8s.io/v1"
SUPERUSER_GROUP = "system:masters"


@dataclass(frozen=True)
class Rule:
    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]

    def allows(self, attrs: Attributes) -> bool:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            ("*" in self.verbs or attrs.verb in self.verbs)
            and ("*" in self.api_groups or "" in self.api_groups)
            and (
                "*" in self.resources
                or combined in self.resources
                or (bool(attrs.subresource) and f"*/{attrs.subresource}" in self.resources)
            )
            and (not self.resource_names or attrs.name in self.resource_names)
        )


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    namespace: str

    def applies_to(self, user: UserInfo) -> bool:
        if self.kind == "User":
            return user.name == self.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            return bool(self.namespace) and user.name == f"system:serviceaccount:{self.namespace}:{self.name}"
        return False


@dataclass(frozen=True)
class Binding:
    name: str
    role: str
    subjects: tuple[Subject, ...]


class RBACAuthorizer(Authorizer):
    """Evaluates the bindings; ALLOW or NO_OPINION (RBAC never denies outright)."""

    def __init__(self, roles: dict[str, tuple[Rule, ...]], bindings: Iterable[Binding]) -> None:
        self._roles = roles
        self._bindings = tuple(bindings)

    @classmethod
    def load(cls, path: Path) -> RBACAuthorizer:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"RBAC file {path}: {exc}") from exc
        roles: dict[str, tuple[Rule, ...]] = {}
        bindings: list[Binding] = []
        for index, doc in enumerate(_flatten(docs, path)):
            where = f"RBAC file {path}, object {index + 1}"
            if not isinstance(doc, dict):
                raise ConfigError(f"{where}: not an object")
            kind, api = doc.get("kind"), doc.get("apiVersion")
            name = _str(doc.get("metadata", {}).get("name") if isinstance(doc.get("metadata"), dict) else None,
                        f"{where}: metadata.name")
            if api != RBAC_API or kind not in ("ClusterRole", "ClusterRoleBinding"):
                raise ConfigError(f"{where} ({name}): only {RBAC_API} ClusterRole and ClusterRoleBinding "
                                  f"are supported, got {api} {kind}")
            if kind == "ClusterRole":
                roles[name] = tuple(_rule(r, f"{where} ({name})") for r in doc.get("rules") or [])
            else:
                bindings.append(_binding(doc, name, f"{where} ({name})"))
        for binding in bindings:
            if binding.role not in roles:
                raise ConfigError(f"RBAC file {path}: ClusterRoleBinding {binding.name} refers to "
                                  f"unknown ClusterRole {binding.role}")
        return cls(roles, bindings)

    async def authorize(self, attrs: Attributes) -> Decision:
        if SUPERUSER_GROUP in attrs.user.groups:
            return Decision.ALLOW
        for binding in self._bindings:
            if any(s.applies_to(attrs.user) for s in binding.subjects) and any(
                rule.allows(attrs) for rule in self._roles[binding.role]
            ):
                return Decision.ALLOW
        return Decision.NO_OPINION


def _flatten(docs: list[Any], path: Path) -> list[Any]:
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            out.extend(doc.get("items") or [])
        else:
            out.append(doc)
    return out


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def _strings(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return frozenset(value)


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a rule must be an object")
    unknown = set(raw) - {"verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"}
    if unknown:
        raise ConfigError(f"{where}: unknown rule field(s) {sorted(unknown)}")
    verbs = _strings(raw.get("verbs"), f"{where}: verbs")
    if not verbs:
        raise ConfigError(f"{where}: a rule needs verbs")
    return Rule(
        verbs=verbs,
        api_groups=_strings(raw.get("apiGroups"), f"{where}: apiGroups"),
        resources=_strings(raw.get("resources"), f"{where}: resources"),
        resource_names=_strings(raw.get("resourceNames"), f"{where}: resourceNames"),
    )


def _binding(doc: dict[str, Any], name: str, where: str) -> Binding:
    ref = doc.get("roleRef")
    if not isinstance(ref, dict) or ref.get("kind") != "ClusterRole":
        raise ConfigError(f"{where}: roleRef must name a ClusterRole")
    subjects = []
    for raw in doc.get("subjects") or []:
        if not isinstance(raw, dict) or raw.get("kind") not in ("User", "Group", "ServiceAccount"):
            raise ConfigError(f"{where}: subject kind must be User, Group or ServiceAccount")
        subjects.append(Subject(raw["kind"], _str(raw.get("name"), f"{where}: subject name"),
                                str(raw.get("namespace") or "")))
    return Binding(name, _str(ref.get("name"), f"{where}: roleRef.name"), tuple(subjects))
