"""The Event object and what it refers to, as the kubelet's recorder fills them in.

- involvedObject: a pod by kind Pod, apiVersion v1, namespace, name, uid and resourceVersion
  (client-go's reference.GetReference); a container of it adds fieldPath `spec.containers{name}`
  (`spec.initContainers{name}`, `spec.ephemeralContainers{name}`, `[index]` for a nameless one,
  `implicitly required container <name>` for one the spec does not list: kubecontainer's
  GenerateContainerRef); the node is kind Node with its name as UID and no namespace or
  apiVersion (the kubelet's nodeRef).
- An event lives in its object's namespace, `default` for the node; it is named
  `<object name>.<its time in Unix nanoseconds, hex>`, a UUID when that is no DNS subdomain
  (record/util.GenerateEventName).
- source {component: kubelet, host: <node>}, reportingComponent and reportingInstance the same
  (the legacy recorder's generateEvent); firstTimestamp = lastTimestamp = now, count 1.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.api.gowire import format_time

DEFAULT_NAMESPACE = "default"
IMPLICIT_PREFIX = "implicitly required container "  # kubecontainer.ImplicitContainerPrefix
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_NAME = 253

Json = dict[str, Any]


@dataclass(frozen=True)
class ObjectRef:
    """core/v1 ObjectReference (every field omitempty)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    field_path: str = ""

    def to_wire(self) -> Json:
        pairs = (("kind", self.kind), ("namespace", self.namespace), ("name", self.name), ("uid", self.uid),
                 ("apiVersion", self.api_version), ("resourceVersion", self.resource_version),
                 ("fieldPath", self.field_path))
        return {k: v for k, v in pairs if v}


def pod_ref(pod: Pod) -> ObjectRef:
    meta = pod.metadata
    return ObjectRef("Pod", meta.name, meta.namespace, meta.uid, "v1", meta.resource_version)


def container_ref(pod: Pod, container: Container) -> ObjectRef:
    return replace(pod_ref(pod), field_path=field_path(pod, container.name))


def field_path(pod: Pod, name: str) -> str:
    """Where the container sits in the pod's spec (kubecontainer's fieldPath)."""
    spec = pod.spec
    lists: tuple[tuple[str, list[Any]], ...] = (
        ("containers", spec.containers), ("initContainers", spec.init_containers),
        ("ephemeralContainers", spec.ephemeral_containers),
    )
    for key, items in lists:
        for index, item in enumerate(items):
            if item.name == name:
                return f"spec.{key}{{{name}}}" if name else f"spec.{key}[{index}]"
    return IMPLICIT_PREFIX + name


def node_ref(name: str) -> ObjectRef:
    """The kubelet's nodeRef: its name as UID, no namespace."""
    return ObjectRef("Node", name, uid=name)


def event_name(object_name: str, unix_ns: int) -> str:
    name = f"{object_name}.{unix_ns:x}"
    if len(name) <= MAX_NAME and _SUBDOMAIN.match(name):
        return name
    return str(uuid.uuid4())


@dataclass
class Event:
    """One core/v1 Event; times are Unix seconds (sent at the API's whole seconds)."""

    namespace: str
    name: str
    involved: ObjectRef
    type: str
    reason: str
    message: str
    component: str
    host: str
    first_timestamp: float
    last_timestamp: float
    count: int = 1
    reporting_component: str = ""
    reporting_instance: str = ""
    resource_version: str = field(default="", compare=False)

    def key(self) -> str:
        """getEventKey: what makes two events the same event (counted, not posted twice)."""
        ref = self.involved
        return "".join((self.component, self.host, ref.kind, ref.namespace, ref.name, ref.field_path, ref.uid,
                        ref.api_version, self.type, self.reason, self.message))

    def to_wire(self) -> Json:
        meta: Json = {"name": self.name, "namespace": self.namespace}
        if self.resource_version:
            meta["resourceVersion"] = self.resource_version
        return {
            "kind": "Event", "apiVersion": "v1", "metadata": meta,
            "involvedObject": self.involved.to_wire(), "reason": self.reason, "message": self.message,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": wire_time(self.first_timestamp), "lastTimestamp": wire_time(self.last_timestamp),
            "count": self.count, "type": self.type, "eventTime": None,
            "reportingComponent": self.reporting_component, "reportingInstance": self.reporting_instance,
        }


def wire_time(seconds: float) -> str:
    """metav1.Time on the wire: RFC 3339, whole seconds, UTC."""
    return format_time(dt.datetime.fromtimestamp(seconds, dt.UTC))
