"""EnsureImageExists: the image a container needs, by its pull policy, as the kubelet's image manager.

From pkg/kubelet/images/image_manager.go (imagePullPrecheck, EnsureImageExists, pullImage,
evalCRIPullErr), serialized_image_puller.go and parallel_image_puller.go:

- Always: PullImage on every container start, no ImageStatus first. IfNotPresent: ImageStatus,
  PullImage only when absent. Never: ImageStatus; absent is ErrImageNeverPull. An ImageStatus
  error is ImageInspectError (no back-off: the sync simply retries).
- A failed pull is ErrImagePull with the runtime's error text (RegistryUnavailable and
  SignatureValidationFailed keep the kubelet's own wording and reasons), and starts or doubles
  the back-off of key "<pod uid>_<image>": 10 s doubling to 300 s (imageBackOffPeriod,
  MaxImageBackOff). Within it the result is ImagePullBackOff, `Back-off pulling image "<image>"`
  followed by the last failure. Like flowcontrol.Backoff, a success does not reset it: an entry
  with no failure for 2 x 300 s starts over at 10 s.
- Pulls are serialized node-wide by default (serializeImagePulls: true); otherwise at most
  maxParallelImagePulls run at once (unbounded when unset).
- An image with neither tag nor digest is asked for as "<image>:latest" (applyDefaultImageTag);
  messages name the image as the spec wrote it.
- With the pod's imagePullSecrets (apiserver mode), the pull is tried with each credential that
  matches the image (pods.pullsecrets), the first success wins, and every failure is reported
  together; with no match, without credentials (kuberuntime PullImage).
- Events (logIt, to the container's reference, when the caller gives a way to report): Pulled
  `Container image "x" already present on machine`; Pulling `Pulling image "x"`; Pulled
  `Successfully pulled image "x" in 1.2s (1.5s including waiting). Image size: N bytes.` (the
  pull then the size asked of the runtime, then the same counting the wait for a slot; Go's
  durations cut to the millisecond); Warning Failed `Failed to pull image "x": <error>`; Normal
  BackOff `Back-off pulling image "x"`; Warning InspectFailed and ErrImageNeverPull with the
  waiting message.
- The pod startup SLI tracker (apiserver mode) hears when each pull starts (past the back-off)
  and when it succeeds, as the kubelet's podPullingTimeRecorder.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.config.durations import Duration
from kubeletapi.errors import KubeletError, Unavailable
from kubeletapi.events import reasons
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest.defaults import image_tag
from kubeletapi.runtime.types import AuthConfig, Image, SandboxConfig

log = logging.getLogger(__name__)

IMAGE_BACKOFF_S = 10.0  # imageBackOffPeriod
MAX_IMAGE_BACKOFF_S = 300.0  # MaxImageBackOff
IMAGE_BACKOFF_RESET_S = 2 * MAX_IMAGE_BACKOFF_S  # flowcontrol.Backoff: an entry expires after 2 x max

# Waiting reasons: pkg/kubelet/images/types.go and k8s.io/cri-api/pkg/errors.
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACKOFF = "ImagePullBackOff"
IMAGE_INSPECT_ERROR = "ImageInspectError"
ERR_IMAGE_NEVER_PULL = "ErrImageNeverPull"
REGISTRY_UNAVAILABLE = "RegistryUnavailable"
SIGNATURE_VALIDATION_FAILED = "SignatureValidationFailed"


class ImageService(Protocol):
    """The runtime's image calls the image manager makes (runtime.interface.Runtime has them)."""

    async def image_status(self, image: str) -> Image | None: ...

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None,
                         auth: AuthConfig | None = None) -> str: ...


class Credentials(Protocol):
    """Registry credentials from a pod's imagePullSecrets (pods.pullsecrets.PullCredentials)."""

    async def credentials(self, namespace: str, secret_names: Sequence[str], image: str) -> list[AuthConfig]: ...


class PullRecorder(Protocol):
    """The pod startup SLI tracker (pods.startupsli.PodStartupTracker): when a pod's pulls ran."""

    def image_started_pulling(self, pod_uid: str) -> None: ...

    def image_finished_pulling(self, pod_uid: str) -> None: ...


class ImageEvents(Protocol):
    """Reports an event about the container whose image this is (the syncer binds it)."""

    def __call__(self, event_type: str, reason: str, message: str) -> None: ...


def _no_events(event_type: str, reason: str, message: str) -> None:
    pass


@dataclass(frozen=True)
class ImageResult:
    """What EnsureImageExists decided. `reason` empty: the container may be created (`ref` is the
    image reference when one is known); else the container's waiting reason and message, and
    for a pull failure, `retry_s` until its back-off ends."""

    ref: str = ""
    reason: str = ""
    message: str = ""
    retry_s: float | None = None

    @property
    def ok(self) -> bool:
        return not self.reason


def with_default_tag(image: str) -> str:
    """applyDefaultImageTag: "<image>:latest" for a reference with neither tag nor digest."""
    tag = image_tag(image)  # "" for a digest alone (or an unparseable reference)
    if tag and "@" not in image and not image.endswith(":" + tag):
        return f"{image}:{tag}"
    return image


class ImageManager:
    def __init__(
        self, images: ImageService, clock: Clock, *, serialize: bool = True, max_parallel: int | None = None,
        credentials: Credentials | None = None, pulls: PullRecorder | None = None,
    ) -> None:
        self._images = images
        self._pulls = pulls
        self._credentials = credentials
        self._clock = clock
        self._backoff = Backoff(clock, IMAGE_BACKOFF_S, MAX_IMAGE_BACKOFF_S, IMAGE_BACKOFF_RESET_S)
        self._failed_at: dict[str, float] = {}  # back-off key -> when its last pull failed
        self._last_error: dict[str, str] = {}  # back-off key -> "<reason>: <message>" of that failure
        limit = 1 if serialize else max_parallel
        self._slots = asyncio.Semaphore(limit) if limit is not None and limit > 0 else None

    async def ensure(
        self, pod_uid: str, image: str, policy: str, sandbox: SandboxConfig | None = None,
        pull_secrets: Sequence[str] = (), events: ImageEvents | None = None,
    ) -> ImageResult:
        """The image for a container of pod `pod_uid` (`pull_secrets`: the names of its
        imagePullSecrets, in the sandbox's namespace)."""
        spec_image = with_default_tag(image)
        report = events or _no_events
        if policy in ("IfNotPresent", "Never"):  # Always (and an undefaulted "") skip the check
            try:
                present = await self._images.image_status(spec_image)
            except KubeletError as exc:
                # The kubelet formats this with the (empty) imageRef it failed to get; the
                # spec's image says more.
                message = f"Failed to inspect image {_quote(image)}: {exc}"
                log.warning("%s", message)
                report(reasons.WARNING, reasons.INSPECT_FAILED, message)
                return ImageResult(reason=IMAGE_INSPECT_ERROR, message=message)
            if present is not None:
                report(reasons.NORMAL, reasons.PULLED, f"Container image {_quote(image)} already present on machine")
                return ImageResult(ref=present.ref or present.id)
            if policy == "Never":
                message = f"Container image {_quote(image)} is not present with pull policy of Never"
                log.warning("%s", message)
                report(reasons.WARNING, reasons.ERR_IMAGE_NEVER_PULL, message)
                return ImageResult(reason=ERR_IMAGE_NEVER_PULL, message=message)
        return await self._pull(pod_uid, image, spec_image, sandbox, pull_secrets, events)

    async def _pull(self, pod_uid: str, image: str, spec_image: str, sandbox: SandboxConfig | None,
                    pull_secrets: Sequence[str], events: ImageEvents | None) -> ImageResult:
        report = events or _no_events
        key = f"{pod_uid}_{image}"
        failed_at = self._failed_at.get(key)
        if failed_at is not None and (remaining := self._backoff.remaining(key, failed_at)) > 0:
            message = f"Back-off pulling image {_quote(image)}"
            report(reasons.NORMAL, reasons.BACK_OFF, message)
            if key in self._last_error:
                message += f": {self._last_error[key]}"
            return ImageResult(reason=IMAGE_PULL_BACKOFF, message=message, retry_s=remaining)
        self._last_error.pop(key, None)
        if self._pulls is not None:
            self._pulls.image_started_pulling(pod_uid)
        log.info("Pulling image %s", _quote(image))
        report(reasons.NORMAL, reasons.PULLING, f"Pulling image {_quote(image)}")
        began = self._clock.monotonic()
        try:
            auths = await self._auths(spec_image, sandbox, pull_secrets)
            if self._slots is None:
                ref, pulled_in, size = await self._pull_once(spec_image, sandbox, auths, events is not None)
            else:
                async with self._slots:
                    ref, pulled_in, size = await self._pull_once(spec_image, sandbox, auths, events is not None)
        except KubeletError as exc:
            log.warning("Failed to pull image %s: %s", _quote(image), exc)
            report(reasons.WARNING, reasons.FAILED, f"Failed to pull image {_quote(image)}: {exc}")
            self._backoff.next(key)
            self._failed_at[key] = self._clock.now()
            reason, message = _pull_error(image, str(exc))
            self._last_error[key] = f"{reason}: {message}"
            return ImageResult(reason=reason, message=message, retry_s=self._backoff.current(key))
        if self._pulls is not None:
            self._pulls.image_finished_pulling(pod_uid)
        waited = self._clock.monotonic() - began
        log.info("Successfully pulled image %s in %.3fs", _quote(image), waited)
        report(reasons.NORMAL, reasons.PULLED, f"Successfully pulled image {_quote(image)} in {_ms(pulled_in)} "
                                               f"({_ms(waited)} including waiting). Image size: {size} bytes.")
        return ImageResult(ref=ref)

    async def _auths(self, image: str, sandbox: SandboxConfig | None,
                     pull_secrets: Sequence[str]) -> list[AuthConfig]:
        if self._credentials is None or not pull_secrets:
            return []
        namespace = sandbox.meta.namespace if sandbox is not None else ""
        return await self._credentials.credentials(namespace, pull_secrets, image)

    async def _pull_with(self, image: str, sandbox: SandboxConfig | None, auths: Sequence[AuthConfig]) -> str:
        """PullImage: without credentials, or with each in turn until one works."""
        if not auths:
            return await self._images.pull_image(image, sandbox)
        errors: list[KubeletError] = []
        for auth in auths:
            try:
                return await self._images.pull_image(image, sandbox, auth)
            except KubeletError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise Unavailable("[" + ", ".join(str(e) for e in errors) + "]")

    async def _pull_once(self, spec_image: str, sandbox: SandboxConfig | None, auths: Sequence[AuthConfig],
                         sized: bool) -> tuple[str, float, int]:
        """Pull; the reference, the seconds it took and (`sized`) the image's size, asked of the
        runtime afterwards at best effort, within those seconds (the kubelet's pullers)."""
        began = self._clock.monotonic()
        ref = await self._pull_with(spec_image, sandbox, auths)
        size = 0
        if sized and ref:
            try:
                image = await self._images.image_status(spec_image)
            except KubeletError:
                image = None
            size = image.size if image is not None else 0
        return ref, self._clock.monotonic() - began, size

    def forget(self, pod_uid: str) -> None:
        """Drop a removed pod's back-off entries (their keys start with its uid)."""
        prefix = f"{pod_uid}_"
        self._backoff.forget(prefix)
        for table in (self._failed_at, self._last_error):
            for key in [k for k in table if k.startswith(prefix)]:
                del table[key]


_REWORDED = (
    (REGISTRY_UNAVAILABLE, "the registry is unavailable"),
    (SIGNATURE_VALIDATION_FAILED, "the signature validation failed"),
)


def _pull_error(image: str, error: str) -> tuple[str, str]:
    """evalCRIPullErr: the runtime's error prefixes the kubelet rewords, else ErrImagePull."""
    for reason, why in _REWORDED:
        if error.startswith(reason):
            return reason, f"image pull failed for {image} because {why}{error.removeprefix(reason)}"
    return ERR_IMAGE_PULL, error


def _ms(seconds: float) -> str:
    """A time.Duration truncated to the millisecond, as Go prints it."""
    return str(Duration(int(seconds * 1000) * 1_000_000))


def _quote(text: str) -> str:
    """Go's %q for the printable ASCII of image references."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
