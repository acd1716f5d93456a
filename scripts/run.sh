#!/usr/bin/env bash
# `make run`: start kubeletapi on loopback with the example manifests and print commands to try.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .run/root .run/logs certs
NODE="$(hostname | tr '[:upper:]' '[:lower:]')"
.venv/bin/kubeletapi \
  --address 127.0.0.1 --port 10250 --read-only-port 10255 \
  --cert-dir certs --root-dir .run/root --pod-logs-dir .run/logs \
  --pod-manifest-path examples/manifests --hostname-override "$NODE" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' INT TERM EXIT
for _ in $(seq 1 150); do
  curl -sf http://127.0.0.1:10248/healthz >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "kubeletapi did not start (see the log above)"; exit 1; }
  sleep 0.1
done
TOKEN="$(cut -d, -f1 certs/tokens.csv | head -n1)"
cat <<MSG

kubeletapi is running (pid $pid) as node "$NODE". Try, from this directory:

  # client certificate (CN=kubeletapi-admin, O=system:masters)
  curl --cacert certs/ca.crt --cert certs/admin.crt --key certs/admin.key https://127.0.0.1:10250/healthz?verbose

  # bearer token from certs/tokens.csv
  curl --cacert certs/ca.crt -H "Authorization: Bearer $TOKEN" https://127.0.0.1:10250/configz

  # kubectl, through the generated kubeconfig
  kubectl --kubeconfig certs/admin.kubeconfig get --raw /healthz
  kubectl --kubeconfig certs/admin.kubeconfig get --raw /api/v1/nodes/$NODE/proxy/metrics

  # read-only port: no authentication
  curl http://127.0.0.1:10255/metrics

Press Ctrl-C to stop.
MSG
wait "$pid"
