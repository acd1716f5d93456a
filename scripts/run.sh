#!/usr/bin/env bash
# `make run`: start kubeletapi on loopback with the example manifests and print commands to try.
# Ports and directories may be overridden from the environment (the test of this script does).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${KUBELETAPI_PORT:-10250}"
RO_PORT="${KUBELETAPI_READ_ONLY_PORT:-10255}"
HEALTHZ_PORT="${KUBELETAPI_HEALTHZ_PORT:-10248}"
CERTS="${KUBELETAPI_CERT_DIR:-certs}"
STATE="${KUBELETAPI_RUN_DIR:-.run}"
NODE="$(hostname | tr '[:upper:]' '[:lower:]')"
mkdir -p "$STATE/root" "$STATE/logs" "$CERTS"
.venv/bin/kubeletapi \
  --address 127.0.0.1 --port "$PORT" --read-only-port "$RO_PORT" --healthz-port "$HEALTHZ_PORT" \
  --cert-dir "$CERTS" --root-dir "$STATE/root" --pod-logs-dir "$STATE/logs" \
  --pod-manifest-path examples/manifests --hostname-override "$NODE" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' INT TERM EXIT
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "kubeletapi did not start (see the log above)"; exit 1; }
  sleep 0.1
done
TOKEN="$(cut -d, -f1 "$CERTS/tokens.csv" | head -n1)"
cat <<MSG

kubeletapi is running (pid $pid) as node "$NODE". Try, from this directory:

  # client certificate (CN=kubeletapi-admin, O=system:masters)
  curl --cacert $CERTS/ca.crt --cert $CERTS/admin.crt --key $CERTS/admin.key 'https://127.0.0.1:$PORT/healthz?verbose'

  # bearer token from $CERTS/tokens.csv
  curl --cacert $CERTS/ca.crt -H 'Authorization: Bearer $TOKEN' https://127.0.0.1:$PORT/configz

  # kubectl, through the generated kubeconfig
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /healthz
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /api/v1/nodes/$NODE/proxy/metrics

  # read-only port: no authentication
  curl http://127.0.0.1:$RO_PORT/metrics

Press Ctrl-C to stop.
MSG
wait "$pid"
