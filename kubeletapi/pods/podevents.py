"""The kubelet's pod and container events, worded as kuberuntime and the kubelet word them.

The syncer, the stopper and the manager report through PodEvents; it formats and hands each
event to the recorder (the narrow PodEventSink below; events.recorder.EventRecorder with an API
server, NullRecorder without one). Container events go to the container's reference
(`spec.containers{name}`), and, as recordContainerEvent does, a container ID in a message is
replaced by the container's name (runtime errors name IDs, which would defeat counting).

- Failed `Error: <message>` (Warning): an image not there (the waiting reason: ErrImagePull,
  ImagePullBackOff...), a config the container cannot be created with, a failed create or start;
- Created `Created container: <name>`, Started `Started container <name>`;
- Killing: the reason it is stopped (`Container <name> failed liveness probe, will be
  restarted`, `Container <name> definition changed, will be restarted`, `FailedPostStartHook`),
  else `Stopping container <name>`;
- BackOff `Back-off restarting failed container <name> in pod <name>_<namespace>(<uid>)`
  (Warning, every sync that finds the container backing off);
- FailedPostStartHook / FailedPreStopHook `PostStartHook failed` / `PreStopHook failed`
  (Warning; the hook's output stays out of the event, it may hold secrets);
- pod events: FailedMount `MountVolume.SetUp failed for volume "x" : <why>` (one per volume), SandboxChanged `Pod
  sandbox changed, it will be killed and re-created.`, FailedCreatePodSandBox `Failed to create
  pod sandbox: <error>`, and an admission refusal (Warning, its reason and message).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.events import reasons as r
from kubeletapi.events.recorder import NullRecorder
from kubeletapi.pods.images import ImageEvents


class PodEventSink(Protocol):
    """The recorder as the pod machinery uses it."""

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None: ...

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None: ...


def format_pod(pod: Pod) -> str:
    """format.Pod: name_namespace(uid)."""
    meta = pod.metadata
    return f"{meta.name}_{meta.namespace}({meta.uid})"


class PodEvents:
    def __init__(self, sink: PodEventSink | None = None) -> None:
        self._sink: PodEventSink = sink if sink is not None else NullRecorder()

    # --- containers ----------------------------------------------------------------------------
    def container(self, pod: Pod, container: Container, event_type: str, reason: str, message: str,
                  container_id: str = "") -> None:
        if container_id:
            message = message.replace(container_id, container.name)
        self._sink.container_event(pod, container, event_type, reason, message)

    def image(self, pod: Pod, container: Container) -> ImageEvents:
        """Where the image manager reports about this container's image."""
        return functools.partial(self._sink.container_event, pod, container)

    def failed(self, pod: Pod, container: Container, message: str, container_id: str = "") -> None:
        self.container(pod, container, r.WARNING, r.FAILED, f"Error: {message}", container_id)

    def created(self, pod: Pod, container: Container) -> None:
        self.container(pod, container, r.NORMAL, r.CREATED, f"Created container: {container.name}")

    def started(self, pod: Pod, container: Container) -> None:
        self.container(pod, container, r.NORMAL, r.STARTED, f"Started container {container.name}")

    def killing(self, pod: Pod, container: Container, message: str = "", container_id: str = "") -> None:
        self.container(pod, container, r.NORMAL, r.KILLING, message or f"Stopping container {container.name}",
                       container_id)

    def back_off(self, pod: Pod, container: Container) -> None:
        self.container(pod, container, r.WARNING, r.BACK_OFF,
                       f"Back-off restarting failed container {container.name} in pod {format_pod(pod)}")

    def post_start_failed(self, pod: Pod, container: Container) -> None:
        self.container(pod, container, r.WARNING, r.FAILED_POST_START_HOOK, "PostStartHook failed")

    def pre_stop_failed(self, pod: Pod, container: Container) -> None:
        self.container(pod, container, r.WARNING, r.FAILED_PRE_STOP_HOOK, "PreStopHook failed")

    # --- pods ----------------------------------------------------------------------------------
    def http_fallback(self, pod: Pod, hostport: str) -> None:
        self.pod(pod, r.WARNING, r.LIFECYCLE_HTTP_FALLBACK,
                 f"request to HTTPS lifecycle hook {hostport} got HTTP response, retry with HTTP succeeded")

    def pod(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self._sink.pod_event(pod, event_type, reason, message)

    def failed_mount(self, pod: Pod, failures: Sequence[str]) -> None:
        """One event per volume that failed (`MountVolume.SetUp failed for volume "x" : why`)."""
        for message in failures:
            self.pod(pod, r.WARNING, r.FAILED_MOUNT, message)

    def sandbox_changed(self, pod: Pod) -> None:
        self.pod(pod, r.NORMAL, r.SANDBOX_CHANGED, "Pod sandbox changed, it will be killed and re-created.")

    def sandbox_failed(self, pod: Pod, error: object) -> None:
        self.pod(pod, r.WARNING, r.FAILED_CREATE_POD_SANDBOX, f"Failed to create pod sandbox: {error}")

    def rejected(self, pod: Pod, reason: str, message: str) -> None:
        """Admission refused the pod (the kubelet's rejectPod)."""
        self.pod(pod, r.WARNING, reason, message)
