#!/usr/bin/env bash
# Generate the CRI client's Python stubs from kubeletapi/runtime/cri/api.proto into OUT_ROOT
# (default: the repository itself) as OUT_ROOT/kubeletapi/runtime/cri/gen/api_pb2{.py,.pyi,_grpc.py}.
# The proto is mapped to the virtual path kubeletapi/runtime/cri/gen/api.proto so that the
# generated modules import each other by their package name. `make proto` runs this;
# tests/cri/test_proto.py runs it into a temporary directory and compares.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
OUT_ROOT=${1:-.}
mkdir -p "$OUT_ROOT/kubeletapi/runtime/cri/gen"
"$PYTHON" -m grpc_tools.protoc \
    -Ikubeletapi/runtime/cri/gen=kubeletapi/runtime/cri \
    --python_out="$OUT_ROOT" --pyi_out="$OUT_ROOT" --grpc_python_out="$OUT_ROOT" \
    kubeletapi/runtime/cri/gen/api.proto
