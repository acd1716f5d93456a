"""The image manager (pods/images.py) against a hand-written image service and a fake clock:
pull policies, the kubelet's reasons and messages, the pull back-off, serialized pulls."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kubeletapi.clock import FakeClock
from kubeletapi.errors import InvalidInput, KubeletError, NotFound, Unavailable
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.runtime import InstrumentedRuntime
from kubeletapi.pods.images import ImageManager, ImageResult, ImageService, with_default_tag
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import AuthConfig, Image, PodMeta, SandboxConfig

P = pytest.param
UID = "uid-1"
IMAGE = "registry.example/app:1.0"


@dataclass
class FakeImages:
    """image_status and pull_image: a set of present images, scripted pull failures."""

    present: set[str] = field(default_factory=set)
    pull_errors: list[KubeletError] = field(default_factory=list)  # raised by the next pulls, in order
    status_error: KubeletError | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)
    gate: asyncio.Event | None = None  # pulls wait for it when set
    active: int = 0
    most_active: int = 0
    auths: list[AuthConfig | None] = field(default_factory=list)  # what each pull was given

    async def image_status(self, image: str) -> Image | None:
        self.calls.append(("status", image))
        if self.status_error is not None:
            raise self.status_error
        return Image(id=f"sha256:{image}", ref=f"ref-{image}") if image in self.present else None

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        self.calls.append(("pull", image))
        self.auths.append(auth)
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.pull_errors:
                raise self.pull_errors.pop(0)
            self.present.add(image)
            return f"ref-{image}"
        finally:
            self.active -= 1


_: type[ImageService] = FakeImages  # the fake implements the consumer's protocol


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_700_000_000.0)


def ensure(manager: ImageManager, policy: str, image: str = IMAGE, uid: str = UID) -> ImageResult:
    return asyncio.run(manager.ensure(uid, image, policy))


# --- policies -------------------------------------------------------------------------------------
def test_always_pulls_on_every_start_without_asking_for_status(clock: FakeClock) -> None:
    images = FakeImages(present={IMAGE})
    manager = ImageManager(images, clock)
    assert ensure(manager, "Always") == ImageResult(ref=f"ref-{IMAGE}")
    assert ensure(manager, "Always").ok
    assert images.calls == [("pull", IMAGE), ("pull", IMAGE)]


def test_if_not_present_uses_a_present_image(clock: FakeClock) -> None:
    images = FakeImages(present={IMAGE})
    assert ensure(ImageManager(images, clock), "IfNotPresent") == ImageResult(ref=f"ref-{IMAGE}")
    assert images.calls == [("status", IMAGE)]


def test_if_not_present_pulls_an_absent_image(clock: FakeClock) -> None:
    images = FakeImages()
    manager = ImageManager(images, clock)
    assert ensure(manager, "IfNotPresent") == ImageResult(ref=f"ref-{IMAGE}")
    assert ensure(manager, "IfNotPresent").ok  # now present: no second pull
    assert images.calls == [("status", IMAGE), ("pull", IMAGE), ("status", IMAGE)]


def test_never_uses_a_present_image(clock: FakeClock) -> None:
    images = FakeImages(present={IMAGE})
    assert ensure(ImageManager(images, clock), "Never").ok
    assert images.calls == [("status", IMAGE)]


def test_never_with_an_absent_image_is_err_image_never_pull(clock: FakeClock) -> None:
    images = FakeImages()
    result = ensure(ImageManager(images, clock), "Never", "busybox")
    assert result == ImageResult(
        reason="ErrImageNeverPull", message='Container image "busybox" is not present with pull policy of Never',
    )
    assert images.calls == [("status", "busybox:latest")]


@pytest.mark.parametrize("policy", ["IfNotPresent", "Never"])
def test_an_image_status_error_is_image_inspect_error_without_back_off(clock: FakeClock, policy: str) -> None:
    images = FakeImages(present={IMAGE}, status_error=Unavailable("runtime is down"))
    manager = ImageManager(images, clock)
    result = ensure(manager, policy)
    assert result == ImageResult(reason="ImageInspectError",
                                 message=f'Failed to inspect image "{IMAGE}": runtime is down')
    images.status_error = None
    assert ensure(manager, policy).ok  # at once: an inspect error starts no back-off


def test_undefaulted_policy_pulls(clock: FakeClock) -> None:
    images = FakeImages()
    assert ensure(ImageManager(images, clock), "").ok
    assert images.calls == [("pull", IMAGE)]


@pytest.mark.parametrize(
    ("image", "asked"),
    [
        P("busybox", "busybox:latest", id="no-tag"),
        P("busybox:1.36", "busybox:1.36", id="tag"),
        P("localhost:5000/team/app", "localhost:5000/team/app:latest", id="registry-port-no-tag"),
        P("busybox@sha256:" + "a" * 64, "busybox@sha256:" + "a" * 64, id="digest"),
        P("busybox:1.36@sha256:" + "a" * 64, "busybox:1.36@sha256:" + "a" * 64, id="tag-and-digest"),
    ],
)
def test_the_runtime_is_asked_for_the_default_tag(clock: FakeClock, image: str, asked: str) -> None:
    assert with_default_tag(image) == asked
    images = FakeImages()
    assert ensure(ImageManager(images, clock), "IfNotPresent", image).ok
    assert images.calls == [("status", asked), ("pull", asked)]


# --- failures and back-off ------------------------------------------------------------------------
def test_a_failed_pull_is_err_image_pull_with_the_runtime_message(clock: FakeClock) -> None:
    error = 'failed to pull and unpack image "registry.example/app:1.0": not found'
    images = FakeImages(pull_errors=[NotFound(error)])
    result = ensure(ImageManager(images, clock), "IfNotPresent")
    assert result == ImageResult(reason="ErrImagePull", message=error, retry_s=10.0)


def test_back_off_message_timing_and_doubling(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable(f"boom {i}") for i in range(8)])
    manager = ImageManager(images, clock)
    assert ensure(manager, "Always") == ImageResult(reason="ErrImagePull", message="boom 0", retry_s=10.0)
    clock.advance(4)
    assert ensure(manager, "Always") == ImageResult(
        reason="ImagePullBackOff", message=f'Back-off pulling image "{IMAGE}": ErrImagePull: boom 0', retry_s=6.0,
    )
    assert [c for c in images.calls if c[0] == "pull"] == [("pull", IMAGE)]  # no pull while backing off
    clock.advance(6)
    assert ensure(manager, "Always") == ImageResult(reason="ErrImagePull", message="boom 1", retry_s=20.0)
    clock.advance(19.5)
    backing_off = ensure(manager, "Always")
    assert backing_off.reason == "ImagePullBackOff" and backing_off.retry_s == pytest.approx(0.5)
    assert backing_off.message.endswith("ErrImagePull: boom 1")
    waits = []
    for _ in range(5):
        clock.advance(backing_off.retry_s or 0)
        backing_off = ensure(manager, "Always")
        assert backing_off.reason == "ErrImagePull"
        waits.append(backing_off.retry_s)
    assert waits == [40.0, 80.0, 160.0, 300.0, 300.0]  # capped at MaxImageBackOff


def test_registry_unavailable_and_signature_failures_keep_the_kubelet_wording(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable("RegistryUnavailable: dial tcp: i/o timeout"),
                                     Unavailable("SignatureValidationFailed: no valid signature")])
    manager = ImageManager(images, clock)
    assert ensure(manager, "Always") == ImageResult(
        reason="RegistryUnavailable",
        message=f"image pull failed for {IMAGE} because the registry is unavailable: dial tcp: i/o timeout",
        retry_s=10.0,
    )
    assert ensure(manager, "Always").message == (
        f'Back-off pulling image "{IMAGE}": RegistryUnavailable: image pull failed for {IMAGE} because the '
        "registry is unavailable: dial tcp: i/o timeout"
    )
    clock.advance(10)
    assert ensure(manager, "Always") == ImageResult(
        reason="SignatureValidationFailed",
        message=f"image pull failed for {IMAGE} because the signature validation failed: no valid signature",
        retry_s=20.0,
    )


def test_back_off_is_per_pod_and_image(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable("boom")])
    manager = ImageManager(images, clock)
    assert ensure(manager, "Always").reason == "ErrImagePull"
    assert ensure(manager, "Always").reason == "ImagePullBackOff"  # another container, same pod and image
    assert ensure(manager, "Always", uid="uid-2").ok  # another pod
    assert ensure(manager, "Always", image="registry.example/other:1").ok  # another image


def test_success_does_not_reset_the_back_off_but_time_does(clock: FakeClock) -> None:
    """flowcontrol.Backoff as the kubelet uses it: a successful pull only GCs expired entries, so
    a failure soon after a success backs off longer; 2 x 300 s without a failure starts over."""
    images = FakeImages(pull_errors=[Unavailable("one")])
    manager = ImageManager(images, clock)
    assert ensure(manager, "Always").retry_s == 10.0
    clock.advance(10)
    assert ensure(manager, "Always").ok
    images.pull_errors.append(Unavailable("two"))
    clock.advance(1)
    assert ensure(manager, "Always").retry_s == 20.0
    clock.advance(20)
    assert ensure(manager, "Always").ok
    clock.advance(601)
    images.pull_errors.append(Unavailable("three"))
    assert ensure(manager, "Always").retry_s == 10.0


def test_forget_drops_a_pods_back_off(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable("boom"), Unavailable("boom")])
    manager = ImageManager(images, clock)
    ensure(manager, "Always")
    ensure(manager, "Always", uid="uid-10")  # a uid that starts like the other one
    manager.forget(UID)
    assert ensure(manager, "Always").ok
    assert ensure(manager, "Always", uid="uid-10").reason == "ImagePullBackOff"


# --- parallelism ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("serialize", "max_parallel", "most"),
    [
        P(True, None, 1, id="serialized-default"),
        P(True, 5, 1, id="serialized-ignores-max"),
        P(False, 2, 2, id="max-parallel-2"),
        P(False, None, 3, id="unbounded"),
    ],
)
def test_pulls_are_serialized_or_bounded(clock: FakeClock, serialize: bool, max_parallel: int | None,
                                         most: int) -> None:
    async def go() -> None:
        images = FakeImages(gate=asyncio.Event())
        manager = ImageManager(images, clock, serialize=serialize, max_parallel=max_parallel)
        pulls = [asyncio.create_task(manager.ensure(f"uid-{i}", f"img-{i}:1", "Always")) for i in range(3)]
        await asyncio.sleep(0.01)
        assert images.active == most
        assert images.gate is not None
        images.gate.set()
        results = await asyncio.gather(*pulls)
        assert all(r.ok for r in results)
        assert images.most_active == most

    asyncio.run(go())


# --- imagePullSecrets ------------------------------------------------------------------------------
class FakeCredentials:
    def __init__(self, *auths: AuthConfig) -> None:
        self.auths = list(auths)
        self.asked: list[tuple[str, tuple[str, ...], str]] = []

    async def credentials(self, namespace: str, secret_names: Sequence[str], image: str) -> list[AuthConfig]:
        self.asked.append((namespace, tuple(secret_names), image))
        return self.auths


SANDBOX = SandboxConfig(PodMeta("web", "ns", UID), "web", "/logs", "")
ALICE, BOB = AuthConfig(username="alice", password="a"), AuthConfig(username="bob", password="b")


def test_pull_secrets_give_the_pull_its_credentials_in_turn(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable("401 Unauthorized")])
    credentials = FakeCredentials(ALICE, BOB)
    manager = ImageManager(images, clock, credentials=credentials)
    result = asyncio.run(manager.ensure(UID, IMAGE, "Always", SANDBOX, ["regcred", "other"]))
    assert result.ok
    assert credentials.asked == [("ns", ("regcred", "other"), IMAGE)]
    assert images.auths == [ALICE, BOB]  # the first failed, the second worked


def test_every_credential_failing_names_every_failure(clock: FakeClock) -> None:
    images = FakeImages(pull_errors=[Unavailable("401 a"), Unavailable("401 b")])
    manager = ImageManager(images, clock, credentials=FakeCredentials(ALICE, BOB))
    result = asyncio.run(manager.ensure(UID, IMAGE, "Always", SANDBOX, ["regcred"]))
    assert (result.reason, result.message) == ("ErrImagePull", "[401 a, 401 b]")


def test_no_pull_secrets_or_no_match_pulls_without_credentials(clock: FakeClock) -> None:
    images = FakeImages()
    credentials = FakeCredentials()
    manager = ImageManager(images, clock, credentials=credentials)
    asyncio.run(manager.ensure(UID, IMAGE, "Always", SANDBOX))  # none named: not even looked up
    asyncio.run(manager.ensure(UID, IMAGE, "Always", SANDBOX, ["regcred"]))  # none matches
    assert images.auths == [None, None] and len(credentials.asked) == 1


class BrokenCredentials:
    async def credentials(self, namespace: str, secret_names: Sequence[str], image: str) -> list[AuthConfig]:
        raise InvalidInput(".dockerconfigjson of secret ns/regcred: Expecting value")


def test_a_malformed_pull_secret_fails_the_pull_with_its_error(clock: FakeClock) -> None:
    images = FakeImages()
    manager = ImageManager(images, clock, credentials=BrokenCredentials())
    result = asyncio.run(manager.ensure(UID, IMAGE, "Always", SANDBOX, ["regcred"]))
    assert result.reason == "ErrImagePull"
    assert result.message == ".dockerconfigjson of secret ns/regcred: Expecting value"
    assert images.calls == []


# --- the process runtime, through the instrumented wrapper ----------------------------------------
def test_process_runtime_has_every_image_and_the_calls_are_counted(tmp_path: Path, clock: FakeClock) -> None:
    async def go() -> None:
        registry = CollectorRegistry()
        runtime = InstrumentedRuntime(ProcessRuntime(tmp_path / "state", shim_path(), clock), PodMetrics(registry))
        manager = ImageManager(runtime, clock)
        assert await manager.ensure(UID, "never-heard-of-it:1", "Never") == ImageResult(ref="")
        assert await manager.ensure(UID, "busybox", "Always") == ImageResult(ref="")

        def ops(operation: str) -> float | None:
            return registry.get_sample_value("kubelet_runtime_operations_total", {"operation_type": operation})

        assert (ops("image_status"), ops("pull_image")) == (1.0, 1.0)

    asyncio.run(go())
