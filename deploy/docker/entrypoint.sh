#!/bin/sh
# kubeletapi in the docker-compose stack (docker-compose.yml, Dockerfile).
#
# 1. Starts kubeletapi with the stack's flags, then "$@" (later flags win, so `command:` in
#    docker-compose.yml or `docker compose run kubeletapi --v 2` can override any of them).
# 2. Once the agent serves (its PKI in the cert dir is then current), publishes the admin token
#    for Prometheus: $CERT_DIR/token holds only the first field of the generated tokens.csv,
#    written atomically, mode 0400, owned by Prometheus' user (the cert dir is a volume mounted in
#    the Prometheus container at /etc/prometheus/secrets; prometheus.yml reads secrets/token).
# 3. On SIGTERM/SIGINT (docker stop, docker compose down), removes the pods first: containers
#    outlive the agent by design, and here they would be left running on the host, in the host's
#    PID namespace and cgroups, after the agent's container is gone. The manifests directory is
#    hidden under an empty read-only tmpfs (the host's files are untouched), the agent stops the
#    pods, and then it gets SIGTERM. KUBELETAPI_REMOVE_PODS_ON_STOP=false keeps them running
#    instead (the next agent re-adopts them from the /var/lib/kubelet volume).
#
# Everything may be overridden from the environment (the defaults are the compose stack's).
set -eu

CERT_DIR=${KUBELETAPI_CERT_DIR:-/var/lib/kubeletapi/certs}
ROOT_DIR=${KUBELETAPI_ROOT_DIR:-/var/lib/kubelet}
POD_LOGS_DIR=${KUBELETAPI_POD_LOGS_DIR:-/var/log/pods}
MANIFESTS=${KUBELETAPI_MANIFESTS:-/etc/kubeletapi/manifests}
ADDRESS=${KUBELETAPI_ADDRESS:-0.0.0.0}
PORT=${KUBELETAPI_PORT:-10250}
READ_ONLY_PORT=${KUBELETAPI_READ_ONLY_PORT:-10255}
HEALTHZ_PORT=${KUBELETAPI_HEALTHZ_PORT:-10248}
FILE_CHECK_FREQUENCY=${KUBELETAPI_FILE_CHECK_FREQUENCY:-5s}
NODE_NAME=${NODE_NAME:-kubeletapi}
# Set but empty disables the InfluxDB sink.
INFLUXDB_URL=${INFLUXDB_URL-http://influxdb:8086}
INFLUXDB_DATABASE=${INFLUXDB_DATABASE:-k8s}
# The prom/prometheus image runs as nobody (65534:65534).
TOKEN_OWNER=${PROMETHEUS_TOKEN_OWNER:-65534:65534}
REMOVE_PODS_ON_STOP=${KUBELETAPI_REMOVE_PODS_ON_STOP:-true}
DRAIN_TIMEOUT=${KUBELETAPI_DRAIN_TIMEOUT:-60}
PYTHON=${PYTHON:-python3}

log() {
    echo "entrypoint: $*" >&2
}

# Where this container reaches the agent's plain-HTTP listeners.
case $ADDRESS in
    0.0.0.0 | :: | "") LOCAL=127.0.0.1 ;;
    *:*) LOCAL="[$ADDRESS]" ;;
    *) LOCAL=$ADDRESS ;;
esac

if [ -n "$INFLUXDB_URL" ]; then
    set -- --influxdb-url "$INFLUXDB_URL" --influxdb-database "$INFLUXDB_DATABASE" "$@"
fi
set -- \
    --address "$ADDRESS" --port "$PORT" --read-only-port "$READ_ONLY_PORT" \
    --healthz-bind-address 127.0.0.1 --healthz-port "$HEALTHZ_PORT" \
    --cert-dir "$CERT_DIR" --root-dir "$ROOT_DIR" --pod-logs-dir "$POD_LOGS_DIR" \
    --pod-manifest-path "$MANIFESTS" --file-check-frequency "$FILE_CHECK_FREQUENCY" \
    --hostname-override "$NODE_NAME" \
    "$@"

mkdir -p "$CERT_DIR" "$ROOT_DIR" "$POD_LOGS_DIR"
# The volume's root must be traversable by Prometheus' user; every key in it is 0600.
chmod 0755 "$CERT_DIR"

# The agent serves its listeners only after writing its PKI: once healthz answers, tokens.csv
# is the one it authenticates with (a stale file from an earlier start has been replaced).
serving() {
    if [ "$HEALTHZ_PORT" = 0 ]; then
        [ -s "$CERT_DIR/tokens.csv" ]
        return
    fi
    "$PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).close()' \
        "http://127.0.0.1:$HEALTHZ_PORT/healthz/ping" 2>/dev/null
}

publish_token() {
    tokens=$CERT_DIR/tokens.csv
    if [ ! -s "$tokens" ]; then
        log "no $tokens (an explicit --token-auth-file?): $CERT_DIR/token not written"
        return 0
    fi
    token=
    IFS=, read -r token rest <"$tokens" || [ -n "$token" ] || return 1
    if [ -z "$token" ]; then
        log "$tokens has no token in its first line: $CERT_DIR/token not written"
        return 0
    fi
    tmp=$CERT_DIR/.token.tmp
    rm -f "$tmp" || return 1
    (umask 077 && printf '%s' "$token" >"$tmp") || return 1
    chown "$TOKEN_OWNER" "$tmp" || log "cannot give $CERT_DIR/token to $TOKEN_OWNER: Prometheus may not read it"
    chmod 0400 "$tmp" && mv -f "$tmp" "$CERT_DIR/token" || return 1
    log "admin token published in $CERT_DIR/token for Prometheus"
}

pods_left() {
    "$PYTHON" - "http://$LOCAL:$READ_ONLY_PORT/pods" "$DRAIN_TIMEOUT" <<'EOF'
import json, sys, time, urllib.request
url, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
left = None
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            left = len(json.load(answer).get("items") or [])
    except OSError as exc:
        print(f"entrypoint: cannot list the pods ({exc})", file=sys.stderr)
        sys.exit(1)
    if left == 0:
        sys.exit(0)
    time.sleep(0.5)
print(f"entrypoint: {left} pod(s) still there after {sys.argv[2]}s", file=sys.stderr)
sys.exit(1)
EOF
}

drained=
remove_pods() {
    [ "$REMOVE_PODS_ON_STOP" = true ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    if [ "$READ_ONLY_PORT" = 0 ]; then
        log "read-only port off: cannot watch the pods go, leaving them running"
        return 0
    fi
    log "removing the pods before stopping kubeletapi (KUBELETAPI_REMOVE_PODS_ON_STOP=false keeps them)"
    if ! mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=0755 kubeletapi-drain "$MANIFESTS"; then
        log "cannot hide $MANIFESTS: leaving the pods running"
        return 0
    fi
    drained=1
    pods_left && log "all pods removed" || true
}

stop=
trap 'stop=TERM' TERM
trap 'stop=INT' INT

log "starting kubeletapi as node $NODE_NAME"
kubeletapi "$@" &
pid=$!

# Until the agent serves: a signal, or the agent exiting, ends the wait. From here on nothing may
# end this script early (set -e): the agent would be left without its parent's clean-up.
while [ -z "$stop" ] && kill -0 "$pid" 2>/dev/null; do
    if serving; then
        publish_token || log "could not write $CERT_DIR/token"
        break
    fi
    sleep 0.5
done

# `wait` returns early when a trapped signal arrives, the agent still running (or a zombie);
# `kill -0` then tells whether it is still to be stopped and waited for.
status=0
running=1
if [ -z "$stop" ]; then
    if wait "$pid"; then status=0; else status=$?; fi
    kill -0 "$pid" 2>/dev/null || running=
fi
if [ -n "$stop" ] && [ -n "$running" ]; then
    log "got SIG$stop"
    remove_pods
    kill -TERM "$pid" 2>/dev/null || true
    while :; do
        if wait "$pid"; then status=0; else status=$?; fi
        kill -0 "$pid" 2>/dev/null || break
    done
fi
if [ -n "$drained" ]; then
    umount "$MANIFESTS" || log "cannot unmount the tmpfs over $MANIFESTS"
fi
log "kubeletapi exited with status $status"
exit "$status"
