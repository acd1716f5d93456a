"""RBAC file evaluation: kube-apiserver's matching rules for nodes/<subresource>."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeletapi.errors import ConfigError
from kubeletapi.server.authn import UserInfo
from kubeletapi.server.authz import Attributes, Decision
from kubeletapi.server.rbac import RBACAuthorizer

POLICY = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules:
- apiGroups: [""]
  resources: [nodes/metrics, nodes/stats]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: any-proxy}
rules:
- apiGroups: ["*"]
  resources: ["*/proxy"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: literal-wildcard}
rules:
- apiGroups: [""]
  resources: ["nodes/*", nodes]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: other-node}
rules:
- apiGroups: [""]
  resources: ["*"]
  resourceNames: [other]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects:
- {kind: ServiceAccount, name: prometheus, namespace: monitoring}
- {kind: Group, name: scrapers}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ops}
roleRef: {kind: ClusterRole, name: any-proxy}
subjects: [{kind: User, name: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: literal}
roleRef: {kind: ClusterRole, name: literal-wildcard}
subjects: [{kind: User, name: lit}, {kind: ServiceAccount, name: nons}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: other}
roleRef: {kind: ClusterRole, name: other-node}
subjects: [{kind: User, name: elsewhere}]
"""

PROM = UserInfo("system:serviceaccount:monitoring:prometheus")


@pytest.fixture
def rbac(tmp_path: Path) -> RBACAuthorizer:
    path = tmp_path / "rbac.yaml"
    path.write_text(POLICY)
    return RBACAuthorizer.load(path)


@pytest.mark.parametrize(
    ("user", "verb", "subresource", "allowed"),
    [
        pytest.param(PROM, "get", "metrics", True, id="sa-metrics"),
        pytest.param(PROM, "get", "stats", True, id="sa-stats"),
        pytest.param(PROM, "get", "proxy", False, id="sa-not-proxy"),
        pytest.param(PROM, "create", "metrics", False, id="sa-wrong-verb"),
        pytest.param(PROM, "", "metrics", False, id="sa-head-empty-verb"),
        pytest.param(UserInfo("someone", groups=("scrapers",)), "get", "metrics", True, id="group"),
        pytest.param(UserInfo("system:serviceaccount:other:prometheus"), "get", "metrics", False, id="sa-other-ns"),
        pytest.param(UserInfo("ops"), "create", "proxy", True, id="star-slash-subresource"),
        pytest.param(UserInfo("ops"), "get", "metrics", False, id="star-slash-other"),
        pytest.param(UserInfo("lit"), "get", "metrics", False, id="nodes-star-is-literal"),
        pytest.param(UserInfo("nons"), "get", "metrics", False, id="sa-without-namespace"),
        pytest.param(UserInfo("elsewhere"), "get", "metrics", False, id="resource-names"),
        pytest.param(UserInfo("root", groups=("system:masters",)), "delete", "proxy", True, id="superuser"),
        pytest.param(UserInfo("nobody"), "get", "metrics", False, id="unbound"),
    ],
)
def test_matching(rbac: RBACAuthorizer, user: UserInfo, verb: str, subresource: str, allowed: bool) -> None:
    attrs = Attributes(user=user, verb=verb, subresource=subresource, name="node-a")
    expected = Decision.ALLOW if allowed else Decision.NO_OPINION
    assert asyncio.run(rbac.authorize(attrs)) is expected


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param("kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: r}\n",
                     "only rbac.authorization.k8s.io/v1 ClusterRole and ClusterRoleBinding", id="role"),
        pytest.param("kind: ClusterRoleBinding\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: b}\n"
                     "roleRef: {kind: ClusterRole, name: missing}\n", "unknown ClusterRole missing", id="dangling"),
        pytest.param("kind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: r}\n"
                     "rules: [{resources: [nodes/metrics]}]\n", "a rule needs verbs", id="no-verbs"),
        pytest.param("kind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {}\n",
                     "metadata.name must be a non-empty string", id="no-name"),
        pytest.param("kind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata: {name: r}\n"
                     "rules: [{verbs: [get], resource: [x]}]\n", "unknown rule field", id="typo"),
        pytest.param(": [", "RBAC file", id="yaml-syntax"),
    ],
)
def test_bad_files(tmp_path: Path, doc: str, expected: str) -> None:
    path = tmp_path / "rbac.yaml"
    path.write_text(doc)
    with pytest.raises(ConfigError, match=expected):
        RBACAuthorizer.load(path)
