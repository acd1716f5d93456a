#!/usr/bin/env bash
# Build the Kubernetes control plane binaries the cluster tests need, from the Go module proxy,
# into a cache folder outside the checkout (only what is missing; nothing here is committed).
#   scripts/cluster-bin.sh <dest-dir> <name>...   names: kube-apiserver kube-controller-manager
#                                                  kube-scheduler kubectl kubelet etcd spdyclient metrics-server
#                                                  prometheus
# The wrapper modules tests/cluster/k8s and tests/cluster/etcd pin the versions (go.mod, go.sum):
# k8s.io/kubernetes with its staging modules replaced by their published v0.x tags (its own go.mod
# replaces them with ./staging, which a dependency's go.mod cannot), etcd's server module as is.
# spdyclient is the tests' own client-go SPDY client (tests/cluster/k8s/spdyclient), from the same
# module and so the same client-go. tests/cluster/metrics-server and tests/cluster/prometheus pin
# those servers; Prometheus is built with Kubernetes service discovery only (Debian's package has
# none), without its web UI assets (the tests use its HTTP API).
set -euo pipefail
dest=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dest"
k8s_version=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$root/tests/cluster/k8s/go.mod")
minor=$(echo "$k8s_version" | cut -d. -f2)
export CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=local
k8s=() etcd=0 spdyclient=0 metrics=0 prometheus=0
for name in "$@"; do
    [ -x "$dest/$name" ] && continue
    case $name in
        etcd) etcd=1 ;;
        spdyclient) spdyclient=1 ;;
        metrics-server) metrics=1 ;;
        prometheus) prometheus=1 ;;
        kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet) k8s+=("k8s.io/kubernetes/cmd/$name") ;;
        *) echo "cluster-bin: unknown binary $name" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ ${#k8s[@]} -gt 0 ]; then
    echo "cluster-bin: building ${k8s[*]} $k8s_version into $dest"
    # The version the binaries report (as hack/lib/version.sh sets it), not v0.0.0-master.
    ld="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1"
    ld="$ld -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
    ld="$ld -X k8s.io/component-base/version.gitTreeState=clean"
    (cd "$root/tests/cluster/k8s" && go build -trimpath -ldflags "$ld" -o "$tmp/" "${k8s[@]}")
fi
if [ $etcd = 1 ]; then
    echo "cluster-bin: building etcd into $dest"
    (cd "$root/tests/cluster/etcd" && go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
fi
if [ $spdyclient = 1 ]; then
    echo "cluster-bin: building spdyclient into $dest"
    (cd "$root/tests/cluster/k8s" && go build -trimpath -ldflags "-s -w" -o "$tmp/spdyclient" ./spdyclient)
fi
if [ $metrics = 1 ]; then
    ms_version=$(awk '/^require sigs.k8s.io\/metrics-server /{print $3}' "$root/tests/cluster/metrics-server/go.mod")
    echo "cluster-bin: building metrics-server $ms_version into $dest"
    (cd "$root/tests/cluster/metrics-server" && go build -trimpath -o "$tmp/metrics-server" \
        -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$ms_version" \
        sigs.k8s.io/metrics-server/cmd/metrics-server)
fi
if [ $prometheus = 1 ]; then
    prom_version=$(awk '/^require github.com\/prometheus\/prometheus /{print $3}' "$root/tests/cluster/prometheus/go.mod")
    n=${prom_version#v0.}   # the Go module v0.316.0 is Prometheus 3.16.0
    release="${n:0:1}.${n:1}"
    echo "cluster-bin: building prometheus $release (module $prom_version, kubernetes_sd) into $dest"
    (cd "$root/tests/cluster/prometheus" && go build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
        -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
        -o "$tmp/prometheus" github.com/prometheus/prometheus/cmd/prometheus)
fi
for built in "$tmp"/*; do
    [ -e "$built" ] && mv "$built" "$dest/"   # whole binaries only: a killed build leaves none behind
done
echo "cluster-bin: $(ls "$dest" | tr '\n' ' ')"
