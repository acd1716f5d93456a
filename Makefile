# kubeletapi: `make run` starts a demo node agent, `make test` runs every check CI runs.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the test suite and benchmarks need (installed only when running as root).
# prometheus (promtool and a real scraper for the tests), prometheus-node-exporter (the bench peer);
# containerd, runc and the CNI plugins (the CRI runtime under the contract suite), busybox-static and
# umoci (its images, built locally: no registry); influxdb (the sink's end-to-end tests),
# docker-compose (the compose file's checks) and docker-registry (the distribution registry v2 the
# imagePullSecrets test runs privately on loopback, with htpasswd auth), e2fsprogs and mount (mkfs.ext4
# and mount -o loop: the small filesystem the disk-pressure eviction test fills); chromium (the browser
# the web UI's test drives with playwright-core: no browser download): this is the one list.
DEB_PACKAGES := wrk curl prometheus prometheus-node-exporter containerd runc containernetworking-plugins busybox-static umoci influxdb docker-compose docker-registry e2fsprogs mount chromium
# Node.js and npm build the web UI (ui/): Debian's, unless the machine already has a node and npm
# (e.g. NodeSource's nodejs, which carries its own npm and conflicts with Debian's npm package).
NODE_DEB_PACKAGES := $(if $(shell command -v node),,nodejs) $(if $(shell command -v npm),,npm)

# The real Kubernetes control plane the cluster tests run (tests/cluster/): built from the Go module
# proxy by scripts/cluster-bin.sh into a cache outside the checkout, once per version.
K8S_VERSION := $(shell awk '/^require k8s.io\/kubernetes /{print $$3}' tests/cluster/k8s/go.mod)
CLUSTER_BIN ?= $(HOME)/.cache/kubeletapi/k8s-$(K8S_VERSION)
CLUSTER_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet spdyclient metrics-server prometheus

.PHONY: all venv ui deb deb-node run test test-fast lint typecheck importlint pytest openapi proto bench clean cluster-bin

all: test

# The web UI's assets (uPlot from the npm registry, pinned by ui/package-lock.json, bundled with
# ui/src by ui/build.mjs) go into the package (kubeletapi/server/ui/, ignored by git, shipped as
# package data): built here, so `make venv` and `make run` have them on a fresh machine.
UI_ASSETS := kubeletapi/server/ui/.built
$(UI_ASSETS): ui/package.json ui/package-lock.json ui/build.mjs $(wildcard ui/src/*)
	@command -v npm >/dev/null || $(MAKE) --no-print-directory deb-node
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	node ui/build.mjs kubeletapi/server/ui
	touch $@

ui: $(UI_ASSETS)

$(BIN)/.installed: pyproject.toml kubeletapi/__init__.py kubeletapi/runtime/process/shim/shim.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/python -m kubeletapi.runtime.process.shimbuild >/dev/null
	touch $@

venv: $(BIN)/.installed $(UI_ASSETS)

cluster-bin:
	@scripts/cluster-bin.sh $(CLUSTER_BIN) $(CLUSTER_TOOLS)

deb: DEB_LIST = $(DEB_PACKAGES) $(NODE_DEB_PACKAGES)
deb-node: DEB_LIST = $(NODE_DEB_PACKAGES)
deb deb-node:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make: not root, not installing Debian packages: $(DEB_LIST)"; \
	else \
		missing=$$(for p in $(DEB_LIST); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
		if [ -n "$$missing" ]; then \
			echo "make: installing Debian packages:" $$missing; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
		fi; \
	fi

run: venv
	@scripts/run.sh

lint: venv
	$(BIN)/ruff check kubeletapi tests bench

typecheck: venv
	$(BIN)/mypy kubeletapi tests/fakehost.py  # the FakeHost is checked against Host statically too

importlint: venv
	$(BIN)/lint-imports

# The whole suite, with line coverage of kubeletapi/ (the floor is fail_under in pyproject.toml).
# In three parts (tests/conftest.py --part), coverage adding up over them: the unit and server tests
# in 4 worker processes; the tests that start real daemons in 2 (a module at a time each, every
# cluster test on one); then, with nothing else running, the oracle and the tests marked alone
# (they read machine-wide figures: free memory, the process count) and the schemathesis cases,
# which share one node id that xdist would run once.
pytest: venv deb cluster-bin
	KUBELETAPI_CLUSTER_BIN=$(CLUSTER_BIN) $(BIN)/pytest -n 4 --dist worksteal --part=fast \
		--cov=kubeletapi --cov-report= --cov-fail-under=0
	KUBELETAPI_CLUSTER_BIN=$(CLUSTER_BIN) $(BIN)/pytest -n 2 --dist loadgroup --part=rest \
		--cov=kubeletapi --cov-append --cov-report= --cov-fail-under=0 --durations=20
	KUBELETAPI_CLUSTER_BIN=$(CLUSTER_BIN) $(BIN)/pytest --part=alone --cov=kubeletapi --cov-append \
		--cov-report=term-missing:skip-covered --durations=10

test: venv deb lint typecheck importlint pytest

# The edit loop: the unit and server tests, without e2e, CRI and ecosystem tests or anything marked
# slow, in 4 worker processes (most of these tests wait on sockets, processes and timers, so more
# workers than this machine's 2 cores still pay). `make test` stays the whole suite CI runs.
test-fast: venv
	$(BIN)/pytest -n 4 --dist worksteal --part=fast

# The published API: one document per listener (tests/server/test_openapi.py checks they are current).
openapi: venv
	$(BIN)/python -m kubeletapi.openapi_doc secure > openapi/kubeletapi.json
	$(BIN)/python -m kubeletapi.openapi_doc readonly > openapi/kubeletapi-readonly.json

# The CRI client's stubs from kubeletapi/runtime/cri/api.proto (committed; a test checks they match).
proto: venv
	PYTHON=$(BIN)/python scripts/cri_proto.sh

bench: venv deb cluster-bin
	$(BIN)/python bench/http_bench.py
	$(BIN)/python bench/pod_bench.py
	$(BIN)/python bench/stats_bench.py
	$(BIN)/python bench/stream_bench.py
	$(BIN)/python bench/cri_bench.py
	$(BIN)/python bench/limits_bench.py
	$(BIN)/python bench/crash_bench.py
	$(BIN)/python bench/reliability_bench.py
	$(BIN)/python bench/api_bench.py
	$(BIN)/python bench/apiserver_bench.py
	$(BIN)/python bench/spdy_bench.py
	$(BIN)/python bench/nodes_bench.py
	$(BIN)/python bench/ui_bench.py

clean:
	rm -rf $(VENV) .run .mypy_cache .pytest_cache .ruff_cache .coverage .coverage.* htmlcov
