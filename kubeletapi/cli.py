"""Command line: the kubelet's flags (kubeletapi.flags) over the --config file, then run the agent.

Flags override the file, as in the kubelet. Bad flags or a bad file exit with code 1 and a
message naming the flag, file and field; so do start-up failures (port in use, unreadable
certificate). SIGTERM and SIGINT stop the agent gracefully (exit 0).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import resource
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from kubeletapi.cgroups import detect
from kubeletapi.config import (
    HostFacts,
    KubeletConfiguration,
    NodeOptions,
    Origin,
    build_config,
    read_config_file,
    validate,
)
from kubeletapi.errors import KubeletError, NotSupported, Unavailable
from kubeletapi.flags import FLAG_NAMES, parse
from kubeletapi.kubelet import Kubelet
from kubeletapi.kubelet.runonce import RunOnce

log = logging.getLogger("kubeletapi")


class KlogFormatter(logging.Formatter):
    """klog's header: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg"""

    LEVELS = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(record.created))
        micros = int((record.created % 1) * 1_000_000)
        level = self.LEVELS.get(record.levelname, "I")
        head = f"{level}{stamp}.{micros:06d} {os.getpid():7d} {record.filename}:{record.lineno}]"
        text = f"{head} {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup_logging(verbosity: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.INFO)
    logging.getLogger("uvicorn.error").setLevel(logging.INFO if verbosity >= 4 else logging.WARNING)
    # every API request at INFO would drown the log (the kubelet logs them from -v=6)
    logging.getLogger("httpx").setLevel(logging.INFO if verbosity >= 6 else logging.WARNING)


async def serve(kubelet: Kubelet) -> None:
    """Run until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await kubelet.start()
    # Everything built at start-up (modules, apps, schemas) lives as long as the process: moving it
    # out of the collector's reach makes each full collection scan only what came after, which
    # cut the full-GC pauses that stalled requests and housekeeping (bench/results.md).
    gc.freeze()
    try:
        await stop.wait()
        log.info("Shutting down")
    finally:
        await kubelet.stop()


def raise_open_file_limit() -> None:
    """The soft RLIMIT_NOFILE up to the hard limit, as Go programs do at start: every idle
    connection holds a descriptor, and the soft default (1024) is a few hundred clients away."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        log.info("Open file limit (RLIMIT_NOFILE): %d (the hard limit)", soft)
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("Open file limit (RLIMIT_NOFILE) stays %d: cannot raise it to the hard limit %d: %s",
                    soft, hard, exc)
        return
    log.info("Open file limit (RLIMIT_NOFILE): raised the soft limit from %d to the hard limit %d", soft, hard)


def _loop_factory() -> Any:
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up

        return uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        return None


def host_facts() -> HostFacts:
    """What validation needs to know about this machine (nothing, when its cgroups cannot be read:
    the agent then runs without isolation, and the cgroup v1 checks are skipped)."""
    try:
        return HostFacts(cgroup_v1=detect().version == 1)
    except (Unavailable, NotSupported):
        return HostFacts()


def configuration(argv: Sequence[str], host: HostFacts | None = None) -> tuple[KubeletConfiguration, NodeOptions]:
    """Flags, then the --config file under them, defaulted and validated (ConfigError if not)."""
    opts, flags = parse(argv)
    file_data = read_config_file(opts.config_file) if opts.config_file else None
    cfg = build_config(
        file_data, str(opts.config_file), flags,
        has_kubeconfig=opts.kubeconfig is not None,
        has_rbac_file=opts.authorization_rbac_file is not None,
    )
    origin = Origin.of(str(opts.config_file), file_data, {".".join(f.path): f.flag for f in flags}, FLAG_NAMES)
    validate(cfg, opts, origin, host_facts() if host is None else host)
    return cfg, opts


def main(argv: Sequence[str] | None = None) -> int:
    setup_logging(0)
    try:
        cfg, opts = configuration(sys.argv[1:] if argv is None else argv)
        setup_logging(cfg.logging.verbosity)
        raise_open_file_limit()
        if opts.run_once:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                return 0 if runner.run(RunOnce(cfg, opts).run()) else 1
        kubelet = Kubelet(cfg, opts)
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(serve(kubelet))
    except KubeletError as exc:
        log.error("%s", exc)
        return 1
    return 0
