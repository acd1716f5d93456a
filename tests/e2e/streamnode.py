"""The agent and pods the streaming end-to-end modules share (each module starts its own):
- `shell-testnode`: `main` (sleeps) and `done` (exited: restartPolicy OnFailure, it printed a line);
- `reader-testnode`: `echo` (stdin: true) prints `got: <line>` for every line it reads;
- `web-testnode`: `python3 -m http.server` on a free loopback port (pods use the host's network),
  serving `www/` (hello.txt holds PAGE).
streamingConnectionIdleTimeout is IDLE_S (2 s) from a --config file."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tests.helpers import Agent, agent_args, free_port
from tests.podtools import container, manifest, polled, wait_for, write

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
SHELL, READER, WEB = "shell-testnode", "reader-testnode", "web-testnode"
IDLE_S = 2.0
PAGE = b"hello from the pod\n"


@dataclass
class Node:
    agent: Agent
    root: Path
    web_port: int

    @property
    def www(self) -> Path:
        return self.root / "www"

    def exec_path(self, *cmd: str, query: str = "output=1&error=1", pod: str = SHELL, name: str = "main") -> str:
        return exec_path(*cmd, query=query, pod=pod, name=name)


def exec_path(*cmd: str, query: str = "output=1&error=1", pod: str = SHELL, name: str = "main") -> str:
    args = "".join(f"&command={quote(c, safe='')}" for c in cmd)
    return f"/exec/default/{pod}/{name}?{query}{args}"


@contextlib.contextmanager
def stream_node(root: Path) -> Iterator[Node]:
    """The agent with its three pods running (and `done` exited), stopped afterwards."""
    (root / "manifests").mkdir()
    (root / "www").mkdir()
    (root / "www" / "hello.txt").write_bytes(PAGE)
    config = root / "kubelet.yaml"
    config.write_text(HEADER + f"streamingConnectionIdleTimeout: {int(IDLE_S)}s\n")
    agent = Agent(agent_args(root, "--config", str(config), "--pod-manifest-path", str(root / "manifests")))
    port = free_port()
    try:
        write(root / "manifests", "shell.yaml", manifest(
            "shell",
            container("main", ["sleep", "600"]) + container("done", ["sh", "-c", "echo finished"]),
            spec_extra="restartPolicy: OnFailure",
        ))
        write(root / "manifests", "reader.yaml", manifest(
            "reader", container("echo", ["sh", "-c", 'while read -r line; do echo "got: $line"; done'],
                                "stdin: true\n"),
        ))
        write(root / "manifests", "web.yaml", manifest(
            "web", container("http", ["python3", "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                      "--directory", str(root / "www")]),
        ))
        with agent.admin() as client:
            def pod(name: str) -> dict[str, object]:
                items = client.get(agent.url(path="/pods")).json()["items"]
                return next((p for p in items if p["metadata"]["name"] == name), {"status": {}})

            for name, main in ((SHELL, "main"), (READER, "echo"), (WEB, "http")):
                wait_for(lambda n=name, c=main: "running" in polled(pod(n), c)["state"],  # type: ignore[misc]
                         what=f"{name} running")
            wait_for(lambda: "terminated" in polled(pod(SHELL), "done")["state"], what="done exited")
        wait_for(lambda: listening(port), what="http.server listening")
        yield Node(agent, root, port)
    finally:
        agent.close()


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line contains `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                pids.append(int(entry))
    return pids
