"""The kubelet's flags: their names, parsers and help, the argument parser, and parse(), which
turns a command line into node options and the overrides of the --config file's fields.

A flag with a config path overrides that KubeletConfiguration field (FlagValue; the file's value
under it, as in the kubelet); the others are node options (NodeOptions), which the file does not
hold. A bad flag exits with code 1 and a message naming it (argparse's error, via _Parser).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from kubeletapi import __version__
from kubeletapi.config import Duration, FlagValue, InfluxDBOptions, NodeOptions
from kubeletapi.config.reservedmemory import parse_reserved_memory
from kubeletapi.errors import ConfigError


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "t", "true"):
        return True
    if lowered in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}")


def _paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in text.split(",") if p)


def _duration(text: str) -> str:
    try:
        Duration.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def _names(text: str) -> list[str]:
    """A comma-separated list flag (pflag's StringSlice: no trimming)."""
    return text.split(",") if text else []


def _labels(text: str) -> dict[str, str]:
    """--node-labels: key=value pairs, comma-separated (the kubelet's mapStringString)."""
    out: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"label {item!r} must be key=value")
        out[key.strip()] = value.strip()
    return out


def _map(separator: str) -> Any:
    """A map flag, comma-separated `key<sep>value` pairs (cliflag's MapStringString with "=",
    LangleSeparatedMapStringString with "<"); the flag replaces the configuration's whole map."""
    def parse(text: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for item in filter(None, (s.strip() for s in text.split(","))):
            key, sep, value = item.partition(separator)
            if not sep:
                raise argparse.ArgumentTypeError(f"malformed pair, expect string{separator}string")
            out[key.strip()] = value.strip()
        return out
    parse.__name__ = f"map of key{separator}value"  # argparse names the type in its message
    return parse


def _taints(text: str) -> list[dict[str, str]]:
    """--register-with-taints: key=value:Effect (or key:Effect), comma-separated."""
    out = []
    for item in filter(None, text.split(",")):
        head, sep, effect = item.rpartition(":")
        key, _, value = head.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"taint {item!r} must be key[=value]:Effect")
        out.append({"key": key, "value": value, "effect": effect})
    return out


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"header {text!r} must be key:value")
    return name, value


def _reserved_memory(text: str) -> list[dict[str, Any]]:
    """--reserved-memory (repeatable): config.reservedmemory's syntax and errors."""
    try:
        return parse_reserved_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# (flag, config path, type, help); flags without a path are node options (below).
CONFIG_FLAGS: list[tuple[str, tuple[str, ...], Any, str]] = [
    ("--address", ("address",), str, "IP address to serve on (0.0.0.0 for all IPv4 interfaces)"),
    ("--port", ("port",), int, "port of the secure (authenticated) server"),
    ("--read-only-port", ("readOnlyPort",), int, "port of the read-only server (0 disables it)"),
    ("--healthz-port", ("healthzPort",), int, "port of the healthz server (0 disables it)"),
    ("--healthz-bind-address", ("healthzBindAddress",), str, "IP address of the healthz server"),
    ("--tls-cert-file", ("tlsCertFile",), str, "serving certificate (a CA chain may follow)"),
    ("--tls-private-key-file", ("tlsPrivateKeyFile",), str, "serving certificate's private key"),
    ("--tls-cipher-suites", ("tlsCipherSuites",), _names,
     "comma-separated TLS 1.2 cipher suites, Go's names (e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)"),
    ("--tls-min-version", ("tlsMinVersion",), str,
     "minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12 (default) or VersionTLS13"),
    ("--client-ca-file", ("authentication", "x509", "clientCAFile"), str,
     "CA bundle for client certificates (default: the generated CA)"),
    ("--anonymous-auth", ("authentication", "anonymous", "enabled"), _bool, "allow anonymous requests"),
    ("--authentication-token-webhook", ("authentication", "webhook", "enabled"), _bool,
     "authenticate bearer tokens with TokenReview (needs --kubeconfig)"),
    ("--authentication-token-webhook-cache-ttl", ("authentication", "webhook", "cacheTTL"), _duration,
     "TokenReview cache TTL"),
    ("--authorization-mode", ("authorization", "mode"), str, "AlwaysAllow, Webhook or RBAC"),
    ("--authorization-webhook-cache-authorized-ttl", ("authorization", "webhook", "cacheAuthorizedTTL"),
     _duration, "SubjectAccessReview cache TTL for allowed requests"),
    ("--authorization-webhook-cache-unauthorized-ttl", ("authorization", "webhook", "cacheUnauthorizedTTL"),
     _duration, "SubjectAccessReview cache TTL for denied requests"),
    ("--pod-manifest-path", ("staticPodPath",), str, "directory (or file) of static pod manifests"),
    ("--manifest-url", ("staticPodURL",), str, "URL of a Pod or PodList to run"),
    ("--file-check-frequency", ("fileCheckFrequency",), _duration, "re-scan period of --pod-manifest-path"),
    ("--http-check-frequency", ("httpCheckFrequency",), _duration, "poll period of --manifest-url"),
    ("--sync-frequency", ("syncFrequency",), _duration, "max period between pod syncs"),
    ("--pod-logs-dir", ("podLogsDir",), str, "root directory of container logs"),
    ("--cgroup-root", ("cgroupRoot",), str, "root cgroup for pods"),
    ("--max-pods", ("maxPods",), int, "maximum number of pods on this node"),
    ("--image-gc-high-threshold", ("imageGCHighThresholdPercent",), int,
     "image filesystem usage percent at which image GC runs (default 85; CRI runtime)"),
    ("--image-gc-low-threshold", ("imageGCLowThresholdPercent",), int,
     "image filesystem usage percent image GC frees down to (default 80)"),
    ("--minimum-image-ttl-duration", ("imageMinimumGCAge",), _duration,
     "minimum age of an unused image before image GC may remove it (default 2m)"),
    ("--pod-cidr", ("podCIDR",), str,
     "the pods' address range (standalone mode; with --kubeconfig the Node's spec.podCIDR): pods that are "
     "not hostNetwork get their own network namespace and address from it; empty: every pod uses the node's"),
    ("--enable-debugging-handlers", ("enableDebuggingHandlers",), _bool,
     "serve exec, attach, logs, run, portForward and configz"),
    ("--container-runtime-endpoint", ("containerRuntimeEndpoint",), str, "CRI endpoint (remote runtime)"),
    ("--rotate-certificates", ("rotateCertificates",), _bool,
     "renew the client certificate from the API server before it expires (with --kubeconfig)"),
    ("--register-node", ("registerNode",), _bool, "register the node with the API server (with --kubeconfig)"),
    ("--register-with-taints", ("registerWithTaints",), _taints,
     "taints to register the node with: key=value:Effect, comma-separated"),
    ("--node-status-update-frequency", ("nodeStatusUpdateFrequency",), _duration,
     "how often the node status is computed (patched when it changed)"),
    ("--kube-api-qps", ("kubeAPIQPS",), int, "requests per second to the API server"),
    ("--kube-api-burst", ("kubeAPIBurst",), int, "request burst to the API server"),
    ("--eviction-hard", ("evictionHard",), _map("<"),
     "eviction thresholds that evict a pod when met, e.g. memory.available<100Mi,nodefs.available<10% "
     "(default memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,"
     "imagefs.inodesFree<5%)"),
    ("--eviction-soft", ("evictionSoft",), _map("<"),
     "eviction thresholds that evict a pod when met for their grace period, e.g. memory.available<1.5Gi"),
    ("--eviction-soft-grace-period", ("evictionSoftGracePeriod",), _map("="),
     "grace period of each soft threshold, e.g. memory.available=1m30s"),
    ("--eviction-max-pod-grace-period", ("evictionMaxPodGracePeriod",), int,
     "maximum grace period (seconds) of a pod evicted for a soft threshold"),
    ("--eviction-minimum-reclaim", ("evictionMinimumReclaim",), _map("="),
     "what must be reclaimed beyond a met threshold before it is resolved, e.g. imagefs.available=2Gi"),
    ("--eviction-pressure-transition-period", ("evictionPressureTransitionPeriod",), _duration,
     "how long a pressure condition stays on after its threshold was last met (default 5m0s)"),
    ("--v", ("logging", "verbosity"), int, "log verbosity"),
    ("--memory-manager-policy", ("memoryManagerPolicy",), str,
     "None (default) or Static: Guaranteed pods get their memory from a NUMA node group (cpuset.mems), "
     "kept in <root-dir>/memory_manager_state; Static needs --reserved-memory"),
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"kubeletapi: error: {message}\n")


def _help(text: str) -> str:
    """A help text as argparse wants it: it formats help with %, so a literal % (10%) is %%."""
    return text.replace("%", "%%")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kubeletapi", description="A standalone kubelet-compatible node agent.",
                argument_default=argparse.SUPPRESS, allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"kubeletapi v{__version__}")
    p.add_argument("--config", type=Path, help="KubeletConfiguration file (YAML or JSON); flags override it")
    for flag, _, kind, written in CONFIG_FLAGS:
        text = _help(written)
        if kind is _bool:
            p.add_argument(flag, type=_bool, nargs="?", const=True, help=text)
        elif flag == "--v":
            p.add_argument("-v", "--v", type=int, dest="v", help=text)
        else:
            p.add_argument(flag, type=kind, help=text)
    p.add_argument("--manifest-url-header", type=_header, action="append",
                   help="key:value header for --manifest-url (repeatable)")
    p.add_argument("--reserved-memory", type=_reserved_memory, action="append",
                   help="memory reserved per NUMA node for the Static memory manager, e.g. "
                        "0:memory=1Gi,hugepages-1Gi=2Gi;1:memory=2Gi (repeatable); each type's sum must equal "
                        "kube-reserved + system-reserved + the hard eviction threshold")
    _add_node_options(p)
    influx = p.add_argument_group("InfluxDB sink", "write the stats every housekeeping interval in the schema "
                                  "of Telegraf's kubernetes input (off unless --influxdb-url is given)")
    for flag, kind, text in INFLUXDB_FLAGS:
        influx.add_argument(flag, type=kind, help=_help(text))
    return p


def _add_node_options(p: argparse.ArgumentParser) -> None:
    """The flags of node options: NodeOptions fields, which the --config file does not hold."""
    p.add_argument("--hostname-override", help="node name instead of the hostname")
    p.add_argument("--node-ip", help="node IP address(es), comma-separated")
    p.add_argument("--root-dir", type=Path, help="state directory (default /var/lib/kubelet)")
    p.add_argument("--cert-dir", type=Path,
                   help="directory of generated and issued certificates (default <root-dir>/pki)")
    p.add_argument("--kubeconfig", type=Path,
                   help="kubeconfig of the API server: join it as a node (and use it for the webhooks)")
    p.add_argument("--bootstrap-kubeconfig", type=Path,
                   help="kubeconfig with a bootstrap token: request the node's client certificate with it "
                        "(into --cert-dir) and write --kubeconfig, when --kubeconfig has no valid one")
    p.add_argument("--node-labels", type=_labels, help="labels to register the node with: key=value, comma-separated")
    p.add_argument("--container-runtime", choices=["process", "remote"], help="process (default) or remote (CRI)")
    p.add_argument("--cni-bin-dir", type=_paths,
                   help="directories of the CNI plugins, comma-separated (default /opt/cni/bin)")
    p.add_argument("--cni-conf-dir", type=Path,
                   help="where the pod network's CNI conflist is written for a CRI runtime (default /etc/cni/net.d)")
    p.add_argument("--network-plugin", choices=["", "cni"],
                   help="cni: with --kubeconfig, pods that are not hostNetwork get their own network from the "
                        "Node's spec.podCIDR (CNI plugins); default: the node's network")
    p.add_argument("--pod-bridge", help="the pod network's bridge (default kla<8 hex of the root dir's hash>)")
    p.add_argument("--housekeeping-interval", type=_duration, help="stats sampling period (default 10s)")
    p.add_argument("--minimum-container-ttl-duration", type=_duration,
                   help="minimum age of a dead container before container GC may remove it (default 0)")
    p.add_argument("--maximum-dead-containers-per-container", type=int,
                   help="dead instances each container keeps; <0: no limit (default 1)")
    p.add_argument("--maximum-dead-containers", type=int,
                   help="dead containers the node keeps in all; <0: no limit (default -1)")
    p.add_argument("--runonce", type=_bool, nargs="?", const=True,
                   help="run the static pods (--pod-manifest-path, --manifest-url) once, wait until each runs "
                        "or fails, print the result per pod, remove them and exit: 0 when all ran, else 1; "
                        "no server is started")
    p.add_argument("--enable-pod-submission", type=_bool, nargs="?", const=True,
                   help="accept PUT/POST /submittedpods on the secure port: a v1 Pod or PodList that replaces "
                        "the pods of the api-http source (authorized as nodes/submittedpods; kept in "
                        "<root-dir>/submitted_pods.json across restarts)")
    p.add_argument("--node-log-dir", type=Path, help="the directory /logs/ serves (default /var/log)")
    p.add_argument("--ui-port", type=_port,
                   help="serve the web UI alone (no logs, no authentication) over plain HTTP on this port of "
                        "--address, as cAdvisor's UI on 4194 was (default 0: off; /ui/ is on the secure and "
                        "read-only ports anyway)")
    p.add_argument("--token-auth-file", type=Path, help='static tokens: token,user,uid,"group1,group2"')
    p.add_argument("--authorization-rbac-file", type=Path,
                   help="ClusterRoles and ClusterRoleBindings for --authorization-mode=RBAC")


# (flag, type, help) of the InfluxDB sink's options (InfluxDBOptions fields by name).
INFLUXDB_FLAGS: list[tuple[str, Any, str]] = [
    ("--influxdb-url", str, "InfluxDB base URL, e.g. http://127.0.0.1:8086 (turns the sink on)"),
    ("--influxdb-database", str, "1.x database (default k8s; created when missing)"),
    ("--influxdb-retention-policy", str, "1.x retention policy (default: the database's default)"),
    ("--influxdb-username", str, "1.x user (HTTP basic auth)"),
    ("--influxdb-password", str, "1.x password (or $KUBELETAPI_INFLUXDB_PASSWORD, which keeps it out of ps)"),
    ("--influxdb-token", str, "API token (2.x, or 1.8+ with authentication): Authorization: Token ... "
                              "(or $KUBELETAPI_INFLUXDB_TOKEN)"),
    ("--influxdb-org", str, "2.x organization (with --influxdb-bucket)"),
    ("--influxdb-bucket", str, "2.x bucket: write to /api/v2/write instead of 1.x /write"),
    ("--influxdb-batch-size", int, "points per write request (default 5000)"),
    ("--influxdb-buffer-size", int, "points kept while InfluxDB is down or slow; the oldest are dropped "
                                    "beyond it (default 50000)"),
    ("--influxdb-timeout", _duration, "timeout of one write request (default 5s)"),
]


# Secrets may come from the environment instead of the command line (which every user can read).
INFLUXDB_SECRET_ENV = {"password": "KUBELETAPI_INFLUXDB_PASSWORD", "token": "KUBELETAPI_INFLUXDB_TOKEN"}


def _influxdb_options(ns: dict[str, Any], env: Mapping[str, str]) -> InfluxDBOptions | None:
    given = {flag.removeprefix("--influxdb-").replace("-", "_"): ns[dest] for flag, _, _ in INFLUXDB_FLAGS
             if (dest := flag.lstrip("-").replace("-", "_")) in ns}
    if "url" in given:
        for key, variable in INFLUXDB_SECRET_ENV.items():
            if key not in given and env.get(variable):
                given[key] = env[variable]
    if "url" not in given:
        if given:
            names = ", ".join(f"--influxdb-{k.replace('_', '-')}" for k in given)
            raise ConfigError(f"{names} given without --influxdb-url")
        return None
    if "timeout" in given:
        given["timeout"] = Duration.parse(given["timeout"])
    return InfluxDBOptions(**given)


def parse(argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[NodeOptions, list[FlagValue]]:
    """Flags into node options and config overrides; `env` (default os.environ) supplies secrets."""
    ns = vars(parser().parse_args(argv))
    return _node_options(ns, os.environ if env is None else env), _config_flags(ns)


def _config_flags(ns: dict[str, Any]) -> list[FlagValue]:
    """The flags that override fields of the --config file."""
    flags = []
    for flag, path, _, _ in CONFIG_FLAGS:
        dest = "v" if flag == "--v" else flag.lstrip("-").replace("-", "_")
        if dest in ns:
            flags.append(FlagValue(flag, path, ns[dest]))
    if "manifest_url_header" in ns:
        headers: dict[str, list[str]] = {}
        for name, value in ns["manifest_url_header"]:
            headers.setdefault(name, []).append(value)
        flags.append(FlagValue("--manifest-url-header", ("staticPodURLHeader",), headers))
    if "reserved_memory" in ns:
        reservations = [r for given in ns["reserved_memory"] for r in given]
        flags.append(FlagValue("--reserved-memory", ("reservedMemory",), reservations))
    return flags


def _node_options(ns: dict[str, Any], env: Mapping[str, str]) -> NodeOptions:
    return NodeOptions(
        config_file=ns.get("config"),
        hostname_override=ns.get("hostname_override", ""),
        node_ip=ns.get("node_ip", ""),
        root_dir=ns.get("root_dir", Path("/var/lib/kubelet")),
        cert_dir=ns.get("cert_dir"),
        kubeconfig=ns.get("kubeconfig"),
        bootstrap_kubeconfig=ns.get("bootstrap_kubeconfig"),
        node_labels=ns.get("node_labels", {}),
        container_runtime=ns.get("container_runtime", "process"),
        housekeeping_interval=Duration.parse(ns.get("housekeeping_interval", "10s")),
        token_auth_file=ns.get("token_auth_file"),
        authorization_rbac_file=ns.get("authorization_rbac_file"),
        influxdb=_influxdb_options(ns, env),
        cni_bin_dirs=ns.get("cni_bin_dir", (Path("/opt/cni/bin"),)),
        cni_conf_dir=ns.get("cni_conf_dir", Path("/etc/cni/net.d")),
        pod_bridge=ns.get("pod_bridge", ""),
        network_plugin=ns.get("network_plugin", ""),
        minimum_container_ttl=Duration.parse(ns.get("minimum_container_ttl_duration", "0s")),
        max_dead_per_container=ns.get("maximum_dead_containers_per_container", 1),
        max_dead_containers=ns.get("maximum_dead_containers", -1),
        run_once=ns.get("runonce", False),
        enable_pod_submission=ns.get("enable_pod_submission", False),
        node_log_dir=ns.get("node_log_dir", Path("/var/log")),
        ui_port=ns.get("ui_port", 0),
    )


# Config path -> the flag that sets it, for the messages that name a field.
FLAG_NAMES = {".".join(path): flag for flag, path, _, _ in CONFIG_FLAGS}
FLAG_NAMES["staticPodURLHeader"] = "--manifest-url-header"
FLAG_NAMES["reservedMemory"] = "--reserved-memory"
