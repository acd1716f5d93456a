"""Static pod manifests: decode YAML or JSON into a Pod, apply the v1 defaults, validate.

What the kubelet does for a manifest (pkg/kubelet/config/common.go tryDecodeSinglePod), plus the
strictness a hand-written file deserves: unknown fields are errors (typos are caught), YAML
duplicate keys are errors, and alias bombs are refused. Every problem is reported at once, in
Kubernetes' field-path style, in the message of the `ManifestError` raised:

    /etc/kubernetes/manifests/web.yaml: invalid pod: spec.containers[0].comand: unknown field;
    spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive

Defaults are those of k8s.io/kubernetes pkg/apis/core/v1/defaults.go (and the declarative ones
of types.go); `validate_pod` restates pkg/apis/core/validation ValidatePod for the fields a node
agent acts on, with the apimachinery message texts.

Modules, in pipeline order: `load` (bytes → document), `decode` (document → Pod), `defaults`,
`validation` (pod level) with `validation_containers`, `validation_env` and `validation_resources`;
`formats` holds the apimachinery value formats and `errors` the error vocabulary they all share.
This package re-exports the public names, so callers import from `kubeletapi.pods.manifest`.

Deliberate differences from the kubelet: unknown fields and duplicate keys are errors (the kubelet
drops them silently); multi-document files are errors (it reads the first document);
terminationGracePeriodSeconds must be >= 0 and volumeMounts[].mountPath absolute.
"""

from kubeletapi.pods.manifest.decode import decode_api_pod, decode_errors, decode_pod, decode_pod_list
from kubeletapi.pods.manifest.defaults import apply_defaults, image_tag
from kubeletapi.pods.manifest.errors import ManifestError, go_value
from kubeletapi.pods.manifest.formats import (
    config_key,
    dns1123_label,
    dns1123_subdomain,
    env_var_name,
    label_value,
    port_name,
    qualified_name,
)
from kubeletapi.pods.manifest.load import MAX_ALIAS_ALLOWANCE, MAX_ALIAS_RATIO, load_document
from kubeletapi.pods.manifest.validation import validate_pod

__all__ = [
    "MAX_ALIAS_ALLOWANCE",
    "MAX_ALIAS_RATIO",
    "ManifestError",
    "apply_defaults",
    "config_key",
    "decode_api_pod",
    "decode_errors",
    "decode_pod",
    "decode_pod_list",
    "dns1123_label",
    "dns1123_subdomain",
    "env_var_name",
    "go_value",
    "image_tag",
    "label_value",
    "load_document",
    "port_name",
    "qualified_name",
    "validate_pod",
]
