#!/usr/bin/env bash
# A real Kubernetes control plane on loopback (etcd, kube-apiserver, controller-manager, scheduler),
# the one the cluster tests run, for people:  scripts/cluster.sh up [dir] | down [dir]  (dir: .cluster)
# It builds what is missing first (make cluster-bin; minutes on a cold cache).
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory -s venv cluster-bin >/dev/null 2>&1 || make --no-print-directory venv cluster-bin
exec .venv/bin/python -m tests.cluster.cli "$@"
