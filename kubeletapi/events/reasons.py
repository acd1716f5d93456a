"""The kubelet's event types and reasons (pkg/kubelet/events/event.go, and the literals of the
setters and probes), so every emitter spells them the same way."""

from __future__ import annotations

NORMAL = "Normal"
WARNING = "Warning"
TYPES = (NORMAL, WARNING)

# containers
CREATED = "Created"
STARTED = "Started"
FAILED = "Failed"  # FailedToCreateContainer, FailedToStartContainer, FailedToPullImage
KILLING = "Killing"
BACK_OFF = "BackOff"  # BackOffStartContainer, BackOffPullImage
# images
PULLING = "Pulling"
PULLED = "Pulled"
INSPECT_FAILED = "InspectFailed"
ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
# pods
FAILED_MOUNT = "FailedMount"
SANDBOX_CHANGED = "SandboxChanged"
FAILED_CREATE_POD_SANDBOX = "FailedCreatePodSandBox"
FAILED_POST_START_HOOK = "FailedPostStartHook"
FAILED_PRE_STOP_HOOK = "FailedPreStopHook"
LIFECYCLE_HTTP_FALLBACK = "LifecycleHTTPFallback"
# probes
UNHEALTHY = "Unhealthy"
PROBE_WARNING = "ProbeWarning"
# the node
STARTING = "Starting"
NODE_READY = "NodeReady"
NODE_NOT_READY = "NodeNotReady"
REBOOTED = "Rebooted"
CGROUP_V1 = "CgroupV1"
# garbage collection (the node's)
CONTAINER_GC_FAILED = "ContainerGCFailed"
IMAGE_GC_FAILED = "ImageGCFailed"
INVALID_DISK_CAPACITY = "InvalidDiskCapacity"
FREE_DISK_SPACE_FAILED = "FreeDiskSpaceFailed"
