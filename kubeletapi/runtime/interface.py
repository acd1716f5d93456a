"""The Runtime protocol: CRI-shaped, implemented by the process runtime and the CRI client.

The pods layer talks to a runtime only through this protocol (and declares narrower protocols
beside itself where it needs less). Errors are kubeletapi.errors: NotFound for an unknown id,
InvalidInput for a container config the runtime cannot run (reported as
CreateContainerConfigError), Unavailable for a runtime that cannot answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kubeletapi.runtime.types import (
    AuthConfig,
    ContainerConfig,
    ContainerStatus,
    ExecResult,
    Image,
    RuntimeVersion,
    Sandbox,
    SandboxConfig,
)


class Runtime(Protocol):
    """Sandbox and container lifecycle, as the kubelet drives a CRI runtime."""

    async def version(self) -> RuntimeVersion: ...

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        """Create the pod's sandbox (cgroup, directories); returns its id."""
        ...

    async def stop_pod_sandbox(self, sandbox_id: str) -> None: ...

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox and everything of its containers but their logs."""
        ...

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        """Every sandbox, or those labelled io.kubernetes.pod.uid=`pod_uid` (CRI's label filter)."""
        ...

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str: ...

    async def start_container(self, container_id: str) -> None: ...

    async def stop_container(self, container_id: str, timeout_s: float) -> None:
        """SIGTERM, then SIGKILL after `timeout_s`; returns once the container has exited."""
        ...

    async def remove_container(self, container_id: str) -> None: ...

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
        """Every container, or those labelled io.kubernetes.pod.uid=`pod_uid` (CRI's label filter)."""
        ...

    async def container_status(self, container_id: str) -> ContainerStatus: ...

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None
    ) -> ExecResult:
        """Run `cmd` in the running container and collect its exit code and output. With
        `max_output`, at most that many bytes of each stream are kept (the rest is read and
        dropped), so a command that floods its output costs bounded memory (exec probes)."""
        ...

    # --- images (CRI ImageService) -----------------------------------------------------------------
    async def image_status(self, image: str) -> Image | None:
        """The image if the runtime has it, else None (the process runtime has every image: it
        runs commands on the host)."""
        ...

    async def list_images(self) -> Sequence[Image]:
        """Every image the runtime has (none for the process runtime: nothing to collect)."""
        ...

    async def remove_image(self, image: str) -> None:
        """Remove an image (image GC); NotFound is no error: it is gone."""
        ...

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        """Pull the image (with `auth`'s registry credentials if given); its reference (what
        status reports as imageID). Unavailable (or NotFound for an unknown image) with the
        runtime's message when the pull fails."""
        ...
