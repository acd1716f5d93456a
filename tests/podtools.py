"""Helpers for tests that run real pods through a real agent."""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.helpers import LOOPBACK, Agent

T = TypeVar("T")


def manifest(name: str, containers: str, spec_extra: str = "", init: str = "") -> str:
    """A Pod manifest; `containers` (and `init`) are YAML list items indented for `spec:`."""
    text = f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
    if spec_extra:
        text += textwrap.indent(textwrap.dedent(spec_extra).strip() + "\n", "  ")
    if init:
        text += "  initContainers:\n" + textwrap.indent(textwrap.dedent(init).strip() + "\n", "  ")
    return text + "  containers:\n" + textwrap.indent(textwrap.dedent(containers).strip() + "\n", "  ")


def container(name: str, command: list[str], extra: str = "") -> str:
    """One container list item (image busybox; the process runtime runs `command` on the host)."""
    cmd = ", ".join(json.dumps(c) for c in command)  # JSON strings are YAML double-quoted strings
    body = f"- name: {name}\n  image: busybox:1.36\n  command: [{cmd}]\n"
    if extra:
        body += textwrap.indent(textwrap.dedent(extra).strip() + "\n", "  ")
    return body


def write(manifests: Path, filename: str, text: str) -> Path:
    """Write atomically (rename), as editors and config management do."""
    manifests.mkdir(parents=True, exist_ok=True)
    tmp = manifests / f".{filename}.tmp"
    tmp.write_text(text)
    target = manifests / filename
    tmp.rename(target)
    return target


def pods(agent: Agent) -> dict[str, dict[str, Any]]:
    """name -> pod, from the read-only /pods."""
    items = httpx.get(agent.url("read-only", "/pods"), timeout=10).json()["items"]
    return {p["metadata"]["name"]: p for p in items}


def flag(args: list[str], name: str) -> str:
    """The value of `name` in an agent's command line."""
    return args[args.index(name) + 1]


def pod_list(args: list[str]) -> dict[str, dict[str, Any]]:
    """/pods of an agent process started with `args`, read on its read-only port, by pod name; {}
    while it does not answer (starting, stopped)."""
    url = f"http://{LOOPBACK}:{flag(args, '--read-only-port')}/pods"
    try:
        items = httpx.get(url, timeout=5).json()["items"]
    except httpx.HTTPError:
        return {}
    return {p["metadata"]["name"]: p for p in items}


def wait_for(check: Callable[[], T | None], timeout: float = 20, interval: float = 0.05, what: str = "") -> T:
    """Poll `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or check}; last: {last!r}")


def _find_status(pod: dict[str, Any], container_name: str) -> dict[str, Any] | None:
    status = pod.get("status", {})
    statuses = status.get("initContainerStatuses", []) + status.get("containerStatuses", [])
    return next((s for s in statuses if s["name"] == container_name), None)


def status_of(pod: dict[str, Any], container_name: str) -> dict[str, Any]:
    """The container's status in a pod that has been synced (fails clearly when it has none)."""
    found = _find_status(pod, container_name)
    assert found is not None, f"pod has no status for container {container_name!r} yet: {pod.get('status')!r}"
    return found


def polled(pod: dict[str, Any], container_name: str) -> dict[str, Any]:
    """The container's status, for conditions polled by wait_for: a pod not synced yet (its
    status has no containerStatuses) reads as a container that has done nothing yet."""
    found = _find_status(pod, container_name)
    if found is not None:
        return found
    return {"name": container_name, "state": {}, "lastState": {}, "restartCount": 0, "ready": False, "started": False}


def running(agent: Agent, name: str, node: str = "testnode") -> dict[str, Any] | None:
    """The pod when every container runs, else None."""
    pod = pods(agent).get(f"{name}-{node}")
    if pod is None or pod["status"].get("phase") != "Running":
        return None
    statuses = pod["status"].get("containerStatuses", [])
    return pod if statuses and all("running" in s["state"] for s in statuses) else None
