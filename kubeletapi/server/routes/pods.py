"""/pods, /runningpods/ and /manifests: what the node manages, what runs, what was rejected."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from kubeletapi.api.core_v1 import Container, ObjectMeta, PodList
from kubeletapi.api.gojson import JSON_TYPE, dumps
from kubeletapi.pods.admission import ManifestRecord
from kubeletapi.server.apidoc import documented, model
from kubeletapi.server.host import Host


class ManifestList(BaseModel):
    """The /manifests answer: every static pod manifest, accepted or rejected."""

    items: list[ManifestRecord]


class RunningPodSpec(BaseModel):
    """The runtime's containers of a running pod: null when none runs (a ready sandbox alone)."""

    containers: list[Container] | None = None


class RunningPod(BaseModel):
    """A pod as the runtime sees it: metadata, running containers' name and image, no status."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: RunningPodSpec = Field(default_factory=RunningPodSpec)
    status: dict[str, Any] = Field(default_factory=dict)


class RunningPodList(BaseModel):
    """The /runningpods/ answer, a v1 PodList of RunningPods."""

    kind: str = "PodList"
    api_version: str = Field("v1", alias="apiVersion")
    metadata: dict[str, Any] = Field(default_factory=dict)
    items: list[RunningPod] = Field(default_factory=list)


async def pods(request: Request) -> Response:
    """v1 PodList of every pod this node manages, with status."""
    host: Host = request.app.state.host
    return Response(dumps(host.pod_list()), media_type=JSON_TYPE)


async def running_pods(request: Request) -> Response:
    """v1 PodList of the pods the runtime is running (metadata and running containers only)."""
    host: Host = request.app.state.host
    return Response(dumps(host.running_pods()), media_type=JSON_TYPE)


async def manifests(request: Request) -> Response:
    """kubeletapi extension: every static pod manifest, accepted or rejected, with the reason."""
    host: Host = request.app.state.host
    return Response(dumps(host.manifests()), media_type=JSON_TYPE)


def install_pods(app: FastAPI) -> None:
    """The auth-not-required /pods (both listeners)."""
    doc = documented(("pods", "proxy"), {200: model("The pods, with status.", PodList)})
    app.add_api_route("/pods", pods, methods=["GET"], tags=["pods"], **doc)


def install_debugging(app: FastAPI) -> None:
    """Debugging handlers (secure listener only)."""
    doc = documented(("pods", "proxy"), {200: model("The runtime's pods (metadata and running containers).",
                                                    RunningPodList)})
    app.add_api_route("/runningpods/", running_pods, methods=["GET"], tags=["pods"], **doc)
    doc = documented(("proxy",), {200: model("Every manifest, accepted or rejected with its reason.", ManifestList)})
    app.add_api_route("/manifests", manifests, methods=["GET"], tags=["pods"], **doc)
