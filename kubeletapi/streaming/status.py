"""What the error channel (3) carries when an exec or attach ends.

v4 and v5 always write a JSON status (metav1.Status); v1 subprotocols write the status message as
plain text, and only on failure. The messages are the kubelet's: a non-zero exit is the runtime's
exec error (containerd and CRI-O: `error executing command [argv...], exit code N`, with argv in Go's
%v form) behind `command terminated with non-zero exit code: `; any other failure is an internal
error, `Internal error occurred: error executing command in container: <err>` (exec) or
`... error attaching to container: <err>` (attach).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubeletapi.api import gojson
from kubeletapi.gofmt import go_list


@dataclass(frozen=True)
class Status:
    """A metav1.Status as the streaming server writes it."""

    status: str
    message: str = ""
    reason: str = ""
    exit_code: int | None = None
    code: int = 0

    @property
    def success(self) -> bool:
        return self.status == "Success"

    def to_json(self) -> bytes:
        body: dict[str, Any] = {"status": self.status}
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        if self.exit_code is not None:
            body["details"] = {"causes": [{"reason": "ExitCode", "message": str(self.exit_code)}]}
        if self.code:
            body["code"] = self.code
        return gojson.dumps(body)


def success() -> Status:
    return Status("Success")


def non_zero_exit(cmd: Sequence[str], exit_code: int) -> Status:
    runtime_error = f"error executing command {go_list(cmd)}, exit code {exit_code}"
    return Status(
        "Failure",
        message=f"command terminated with non-zero exit code: {runtime_error}",
        reason="NonZeroExitCode",
        exit_code=exit_code,
    )


def internal_error(err: str) -> Status:
    return Status("Failure", message=f"Internal error occurred: {err}", reason="InternalError", code=500)


def exec_failed(err: str) -> Status:
    return internal_error(f"error executing command in container: {err}")


def attach_failed(err: str) -> Status:
    return internal_error(f"error attaching to container: {err}")


def render(status: Status, json_status: bool) -> bytes | None:
    """The error channel's message for `status`; None when nothing is written (v1 success)."""
    if json_status:
        return status.to_json()
    if status.success:
        return None
    return status.message.encode("utf-8")
