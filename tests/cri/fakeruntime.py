"""Fake CRI runtimes: real gRPC servers on unix sockets that serve only the calls a test gives
(the others answer UNIMPLEMENTED, as a runtime lacking them does)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2_grpc  # type: ignore[import-untyped]

from kubeletapi.runtime.cri.gen import api_pb2 as pb

Handler = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


def version_answer(api_version: str = "v1", name: str = "fakeruntime", version: str = "0.0.1") -> Handler:
    async def answer(request: pb.VersionRequest, context: grpc.aio.ServicerContext[Any, Any]) -> pb.VersionResponse:
        return pb.VersionResponse(version=request.version, runtime_name=name, runtime_version=version,
                                  runtime_api_version=api_version)
    return answer


def _service(service_name: str, calls: dict[str, Handler]) -> grpc.GenericRpcHandler:
    service = pb.DESCRIPTOR.services_by_name[service_name]
    methods = {}
    for name, handler in calls.items():
        method = service.methods_by_name[name]
        request, response = getattr(pb, method.input_type.name), getattr(pb, method.output_type.name)
        methods[name] = grpc.unary_unary_rpc_method_handler(
            handler, request_deserializer=request.FromString, response_serializer=response.SerializeToString,
        )
    return grpc.method_handlers_generic_handler(service.full_name, methods)


def runtime_service(**calls: Handler) -> grpc.GenericRpcHandler:
    """runtime.v1.RuntimeService with only `calls` (name -> handler); the rest answer UNIMPLEMENTED."""
    return _service("RuntimeService", calls)


def image_service(**calls: Handler) -> grpc.GenericRpcHandler:
    """runtime.v1.ImageService with only `calls` (name -> handler); the rest answer UNIMPLEMENTED."""
    return _service("ImageService", calls)


@contextlib.asynccontextmanager
async def grpc_server(path: Path, *handlers: grpc.GenericRpcHandler, with_health: bool = False) -> AsyncIterator[str]:
    """A gRPC server on the unix socket `path` serving `handlers`; yields its endpoint."""
    server = grpc.aio.server()
    if with_health:
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    server.add_generic_rpc_handlers(handlers)
    assert server.add_insecure_port(f"unix:{path}") != 0
    await server.start()
    try:
        yield f"unix://{path}"
    finally:
        await server.stop(None)
