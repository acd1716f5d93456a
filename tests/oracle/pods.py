"""The static pods both nodes run: host network, the locally built busybox image."""

from __future__ import annotations

from pathlib import Path

from tests.podtools import write

IMAGE = "localhost/busybox:latest"

_HEAD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: oracle
  labels: {{app: {name}}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
{spec}  containers:
  - name: main
    image: localhost/busybox:latest
    imagePullPolicy: IfNotPresent
{container}"""

PODS: dict[str, tuple[str, str]] = {
    # name: (pod-level spec lines, container lines), indented as in _HEAD
    "sleeper": ("", '    command: ["sleep", "3600"]\n'),
    "logger": ("", '    command: ["sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.5; done"]\n'),
    "crasher": ("", '    command: ["sh", "-c", "echo crashing; exit 3"]\n'),
    "limits": ("", '    command: ["sh", "-c", "while true; do :; done"]\n'
                   "    resources:\n"
                   "      requests: {cpu: 100m, memory: 32Mi}\n"
                   "      limits: {cpu: 200m, memory: 64Mi}\n"),
    "scratch": ("  volumes:\n  - name: data\n    emptyDir: {}\n",
                '    command: ["sh", "-c", "echo hello > /data/file; sleep 3600"]\n'
                "    volumeMounts:\n    - {name: data, mountPath: /data}\n"),
    "probed": ("", '    command: ["sh", "-c", "touch /tmp/ready; sleep 3600"]\n'
                   "    livenessProbe:\n      exec: {command: [\"true\"]}\n      periodSeconds: 1\n"
                   "    readinessProbe:\n      exec: {command: [\"test\", \"-e\", \"/tmp/ready\"]}\n"
                   "      periodSeconds: 1\n"),
}


def write_all(manifests: Path) -> None:
    for name, (spec, container) in PODS.items():
        write(manifests, f"{name}.yaml", _HEAD.format(name=name, spec=spec, container=container))
