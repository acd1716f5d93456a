#!/usr/bin/env bash
# `make run`: start kubeletapi on loopback with the example pods and print commands to try.
# Ctrl-C removes the pods (containers outlive the agent by design) and then stops the agent.
# Ports and directories may be overridden from the environment (the test of this script does).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${KUBELETAPI_PORT:-10250}"
RO_PORT="${KUBELETAPI_READ_ONLY_PORT:-10255}"
HEALTHZ_PORT="${KUBELETAPI_HEALTHZ_PORT:-10248}"
CERTS="${KUBELETAPI_CERT_DIR:-certs}"
# Absolute and normalized: --pod-logs-dir must be (the kubelet refuses a relative podLogsDir).
STATE="$(realpath -ms "${KUBELETAPI_RUN_DIR:-.run}")"
CGROUP_ROOT="${KUBELETAPI_CGROUP_ROOT:-/}"
NODE="$(hostname | tr '[:upper:]' '[:lower:]')"
mkdir -p "$STATE/root" "$STATE/logs" "$CERTS"
rm -rf "$STATE/manifests" && cp -r examples/manifests "$STATE/manifests"
# Its own session: Ctrl-C reaches this script only, which removes the pods before stopping it.
setsid .venv/bin/kubeletapi \
  --address 127.0.0.1 --port "$PORT" --read-only-port "$RO_PORT" --healthz-port "$HEALTHZ_PORT" \
  --cert-dir "$CERTS" --root-dir "$STATE/root" --pod-logs-dir "$STATE/logs" --cgroup-root "$CGROUP_ROOT" \
  --pod-manifest-path "$STATE/manifests" --file-check-frequency 5s --hostname-override "$NODE" &
pid=$!
stop() {
  trap - INT TERM EXIT
  if kill -0 "$pid" 2>/dev/null; then
    echo "Removing the example pods, then stopping kubeletapi..."
    rm -f "$STATE"/manifests/*.yaml
    # Done when /pods answers without a pod and the runtime has removed every container (/pods
    # drops a pod as soon as its manifest goes, while its containers are still being stopped).
    for _ in $(seq 1 400); do
      if pods="$(curl -sf "http://127.0.0.1:$RO_PORT/pods")" && ! grep -q '"uid"' <<<"$pods" \
          && [ -z "$(ls -A "$STATE/root/runtime/process/containers" 2>/dev/null)" ]; then
        break
      fi
      sleep 0.1
    done
    kill -TERM "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
trap 'stop; exit 130' INT TERM
trap stop EXIT
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { echo "kubeletapi did not start (see the log above)"; exit 1; }
  sleep 0.1
done
TOKEN="$(cut -d, -f1 "$CERTS/tokens.csv" | head -n1)"
cat <<MSG

kubeletapi is running (pid $pid) as node "$NODE" with the pods of examples/manifests. Try:

  # client certificate (CN=kubeletapi-admin, O=system:masters)
  curl --cacert $CERTS/ca.crt --cert $CERTS/admin.crt --key $CERTS/admin.key 'https://127.0.0.1:$PORT/healthz?verbose'

  # bearer token from $CERTS/tokens.csv
  curl --cacert $CERTS/ca.crt -H 'Authorization: Bearer $TOKEN' https://127.0.0.1:$PORT/configz

  # kubectl, through the generated kubeconfig
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /healthz
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /api/v1/nodes/$NODE/proxy/pods
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw '/containerLogs/default/ticker-$NODE/tick?tailLines=3'
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /stats/summary
  kubectl --kubeconfig $CERTS/admin.kubeconfig get --raw /metrics/resource

  # read-only port: no authentication
  curl http://127.0.0.1:$RO_PORT/metrics
  curl 'http://127.0.0.1:$RO_PORT/stats/summary?only_cpu_and_memory=true'
  curl http://127.0.0.1:$RO_PORT/metrics/cadvisor

Edit or add manifests in $STATE/manifests to change the pods. Press Ctrl-C to stop.
MSG
wait "$pid"
