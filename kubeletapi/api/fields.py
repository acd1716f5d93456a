"""Known v1 field names of the objects kubeletapi keeps opaque (k8s.io/api core/v1 types.go).

The objects kubeletapi works with are declared field by field in `core_v1`. Everything else a Pod
may carry (security contexts, affinity, tolerations, most volume sources ...) is accepted and
re-emitted verbatim, but its keys are still checked against the tables below, so a typo such as
`runAsUsr` is reported instead of silently dropped. Each table maps a JSON field name to the table
of its value (a nested object, or each element of a list of objects), or to None when the value is
a scalar, a free-form map, or not checked further.
"""

from __future__ import annotations

import json
from typing import Any

Schema = dict[str, str | None]


def _leaf(*names: str) -> Schema:
    return dict.fromkeys(names)


SCHEMAS: dict[str, Schema] = {
    "LocalObjectReference": _leaf("name"),
    "OwnerReference": _leaf("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"),
    "ManagedFieldsEntry": _leaf("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"),
    "LabelSelector": {"matchLabels": None, "matchExpressions": "LabelSelectorRequirement"},
    "LabelSelectorRequirement": _leaf("key", "operator", "values"),
    "PodSecurityContext": {
        "seLinuxOptions": "SELinuxOptions",
        "windowsOptions": "WindowsSecurityContextOptions",
        **_leaf("runAsUser", "runAsGroup", "runAsNonRoot", "supplementalGroups", "supplementalGroupsPolicy", "fsGroup"),
        "sysctls": "Sysctl",
        "fsGroupChangePolicy": None,
        "seccompProfile": "SeccompProfile",
        "appArmorProfile": "AppArmorProfile",
        "seLinuxChangePolicy": None,
    },
    "SecurityContext": {
        "capabilities": "Capabilities",
        "privileged": None,
        "seLinuxOptions": "SELinuxOptions",
        "windowsOptions": "WindowsSecurityContextOptions",
        **_leaf("runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation"),
        "procMount": None,
        "seccompProfile": "SeccompProfile",
        "appArmorProfile": "AppArmorProfile",
    },
    "Capabilities": _leaf("add", "drop"),
    "SELinuxOptions": _leaf("user", "role", "type", "level"),
    "WindowsSecurityContextOptions": _leaf(
        "gmsaCredentialSpecName", "gmsaCredentialSpec", "runAsUserName", "hostProcess"
    ),
    "Sysctl": _leaf("name", "value"),
    "SeccompProfile": _leaf("type", "localhostProfile"),
    "AppArmorProfile": _leaf("type", "localhostProfile"),
    "Affinity": {"nodeAffinity": "NodeAffinity", "podAffinity": "PodAffinity", "podAntiAffinity": "PodAffinity"},
    "NodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": "NodeSelector",
        "preferredDuringSchedulingIgnoredDuringExecution": "PreferredSchedulingTerm",
    },
    "NodeSelector": {"nodeSelectorTerms": "NodeSelectorTerm"},
    "NodeSelectorTerm": {"matchExpressions": "NodeSelectorRequirement", "matchFields": "NodeSelectorRequirement"},
    "NodeSelectorRequirement": _leaf("key", "operator", "values"),
    "PreferredSchedulingTerm": {"weight": None, "preference": "NodeSelectorTerm"},
    "PodAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": "PodAffinityTerm",
        "preferredDuringSchedulingIgnoredDuringExecution": "WeightedPodAffinityTerm",
    },
    "WeightedPodAffinityTerm": {"weight": None, "podAffinityTerm": "PodAffinityTerm"},
    "PodAffinityTerm": {
        "labelSelector": "LabelSelector",
        "namespaces": None,
        "topologyKey": None,
        "namespaceSelector": "LabelSelector",
        "matchLabelKeys": None,
        "mismatchLabelKeys": None,
    },
    "Toleration": _leaf("key", "operator", "value", "effect", "tolerationSeconds"),
    "HostAlias": _leaf("ip", "hostnames"),
    "PodDNSConfig": {"nameservers": None, "searches": None, "options": "PodDNSConfigOption"},
    "PodDNSConfigOption": _leaf("name", "value"),
    "PodReadinessGate": _leaf("conditionType"),
    "TopologySpreadConstraint": {
        **_leaf("maxSkew", "topologyKey", "whenUnsatisfiable"),
        "labelSelector": "LabelSelector",
        **_leaf("minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"),
    },
    "PodOS": _leaf("name"),
    "PodSchedulingGate": _leaf("name"),
    "PodResourceClaim": _leaf("name", "resourceClaimName", "resourceClaimTemplateName"),
    "WorkloadReference": _leaf("name", "podGroup", "podGroupReplicaKey"),
    "ContainerResizePolicy": _leaf("resourceName", "restartPolicy"),
    "ContainerRestartRule": {"action": None, "exitCodes": "ContainerRestartRuleOnExitCodes"},
    "ContainerRestartRuleOnExitCodes": _leaf("operator", "values"),
    "VolumeDevice": _leaf("name", "devicePath"),
    "FileKeySelector": _leaf("volumeName", "path", "key", "optional"),
    "ContainerUser": {"linux": "LinuxContainerUser"},
    "LinuxContainerUser": _leaf("uid", "gid", "supplementalGroups"),
    "VolumeMountStatus": _leaf("name", "mountPath", "readOnly", "recursiveReadOnly", "volumeStatus"),
    # Volume sources kubeletapi keeps opaque (the common ones are checked one level down).
    "SecretVolumeSource": {"secretName": None, "items": "KeyToPath", "defaultMode": None, "optional": None},
    "ConfigMapVolumeSource": {"name": None, "items": "KeyToPath", "defaultMode": None, "optional": None},
    "KeyToPath": _leaf("key", "path", "mode"),
    "PersistentVolumeClaimVolumeSource": _leaf("claimName", "readOnly"),
    "DownwardAPIVolumeSource": {"items": "DownwardAPIVolumeFile", "defaultMode": None},
    "DownwardAPIVolumeFile": {
        "path": None,
        "fieldRef": "ObjectFieldSelector",
        "resourceFieldRef": "ResourceFieldSelector",
        "mode": None,
    },
    "ObjectFieldSelector": _leaf("apiVersion", "fieldPath"),
    "ResourceFieldSelector": _leaf("containerName", "resource", "divisor"),
    "ProjectedVolumeSource": {"sources": "VolumeProjection", "defaultMode": None},
    "VolumeProjection": {
        "secret": "SecretProjection",
        "downwardAPI": "DownwardAPIProjection",
        "configMap": "ConfigMapProjection",
        "serviceAccountToken": "ServiceAccountTokenProjection",
        "clusterTrustBundle": None,
        "podCertificate": None,
    },
    "SecretProjection": {"name": None, "items": "KeyToPath", "optional": None},
    "ConfigMapProjection": {"name": None, "items": "KeyToPath", "optional": None},
    "DownwardAPIProjection": {"items": "DownwardAPIVolumeFile"},
    "ServiceAccountTokenProjection": _leaf("audience", "expirationSeconds", "path"),
    "CSIVolumeSource": {
        **_leaf("driver", "readOnly", "fsType", "volumeAttributes"),
        "nodePublishSecretRef": "LocalObjectReference",
    },
    "NFSVolumeSource": _leaf("server", "path", "readOnly"),
    "ImageVolumeSource": _leaf("reference", "pullPolicy"),
}

# Every VolumeSource member in Go struct order, with the table checking it (None: not checked).
VOLUME_SOURCES: dict[str, str | None] = {
    "hostPath": None,  # modelled
    "emptyDir": None,  # modelled
    "gcePersistentDisk": None,
    "awsElasticBlockStore": None,
    "gitRepo": None,
    "secret": "SecretVolumeSource",
    "nfs": "NFSVolumeSource",
    "iscsi": None,
    "glusterfs": None,
    "persistentVolumeClaim": "PersistentVolumeClaimVolumeSource",
    "rbd": None,
    "flexVolume": None,
    "cinder": None,
    "cephfs": None,
    "flocker": None,
    "downwardAPI": "DownwardAPIVolumeSource",
    "fc": None,
    "azureFile": None,
    "configMap": "ConfigMapVolumeSource",
    "vsphereVolume": None,
    "quobyte": None,
    "azureDisk": None,
    "photonPersistentDisk": None,
    "projected": "ProjectedVolumeSource",
    "portworxVolume": None,
    "scaleIO": None,
    "storageos": None,
    "csi": "CSIVolumeSource",
    "ephemeral": None,
    "image": "ImageVolumeSource",
}


def unknown_fields(schema: str, value: Any, path: str) -> list[str]:
    """`<path>: unknown field` for every key of `value` (recursively) that `schema` does not know,
    and `must be an object` where an object (or a list of objects) holds a scalar."""
    table = SCHEMAS[schema]
    if isinstance(value, list):
        return [err for i, item in enumerate(value) for err in unknown_fields(schema, item, f"{path}[{i}]")]
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{path}: Invalid value: {json.dumps(value)}: must be an object"]
    errors: list[str] = []
    for key, item in value.items():
        if key not in table:
            errors.append(f"{path}.{key}: unknown field")
        elif (nested := table[key]) is not None:
            errors.extend(unknown_fields(nested, item, f"{path}.{key}"))
    return errors
