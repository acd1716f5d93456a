"""HTTP benchmark of the secure port: requests/s and p50/p99 latency over TLS keep-alive.

Starts kubeletapi (one process, one event loop) on loopback, drives it with wrk (Debian package;
`make bench` installs it) using the generated bearer token, and writes bench/results.md with the
machine and date. Goal (issue 2): >= 3,000 req/s for /healthz on one worker.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ports import free_ports
from results_md import update_section

DURATION_S = int(os.environ.get("BENCH_SECONDS", "10"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
PATHS = ["/healthz", "/configz"]


def to_ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url: str, token: str) -> dict[str, float]:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{DURATION_S}s", "--latency",
         "-H", f"Authorization: Bearer {token}", url],
        capture_output=True, text=True, check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    lat = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": to_ms(lat["50"]), "p99": to_ms(lat["99"]),
            "non2xx": float(errors.group(1)) if errors else 0.0}


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is not installed (run `make bench` as root, or apt-get install wrk)", file=sys.stderr)
        return 1
    secure, healthz = free_ports(2)
    with tempfile.TemporaryDirectory() as tmp:
        agent = subprocess.Popen(
            [sys.executable, "-m", "kubeletapi", "--address", "127.0.0.1", "--port", str(secure),
             "--healthz-port", str(healthz), "--cert-dir", f"{tmp}/certs", "--root-dir", f"{tmp}/root",
             "--hostname-override", "bench", "--node-ip", "127.0.0.1"],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{healthz}/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            token = Path(f"{tmp}/certs/tokens.csv").read_text().split(",", 1)[0]
            results = {p: wrk(f"https://127.0.0.1:{secure}{p}", token) for p in PATHS}
        finally:
            agent.terminate()
            agent.wait(30)
    write(results)
    return 0


def write(results: dict[str, dict[str, float]]) -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    lines = [
        f"## HTTP, secure port (TLS keep-alive, bearer token), {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}. One kubeletapi process, one event loop; wrk -t1 -c{CONNECTIONS} -d{DURATION_S}s "
        "on the same machine (it shares the 2 cores). `make bench` reproduces it.",
        "",
        "| path | requests/s | p50 ms | p99 ms | non-2xx |",
        "|---|---:|---:|---:|---:|",
    ]
    for path, r in results.items():
        lines.append(f"| {path} | {r['rps']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['non2xx']:.0f} |")
    lines += ["", "Goal: >= 3,000 req/s for /healthz on one worker.", ""]
    section = "\n".join(lines)
    print(section)
    update_section("HTTP, secure port", section)


if __name__ == "__main__":
    raise SystemExit(main())
