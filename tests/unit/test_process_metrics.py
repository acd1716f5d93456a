"""kubeletapi/metrics/process.py: client_golang's extra process families, from a /proc tree of the
test's own and from this process's real one."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from kubeletapi.metrics.process import UNLIMITED, ProcessExtrasCollector, address_space_limit, ip_octets

NETSTAT = ("TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n"
           "IpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 1234 5678\n")
LIMITS = ("Limit                     Soft Limit           Hard Limit           Units\n"
          "Max open files            1024                 4096                 files\n"
          "Max address space         {soft}            unlimited            bytes\n")


def test_figures_from_the_files() -> None:
    assert ip_octets(NETSTAT) == (1234.0, 5678.0)
    assert ip_octets("TcpExt: A\nTcpExt: 1\n") == (0.0, 0.0)
    assert address_space_limit(LIMITS.format(soft="unlimited")) == UNLIMITED == 18446744073709551615.0
    assert address_space_limit(LIMITS.format(soft="1048576")) == 1048576.0


def exposition(proc: Path) -> str:
    registry = CollectorRegistry()
    registry.register(ProcessExtrasCollector(proc))
    return generate_latest(registry).decode()


def test_families_as_client_golang_writes_them(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "netstat").write_text(NETSTAT)
    (tmp_path / "limits").write_text(LIMITS.format(soft="unlimited"))
    text = exposition(tmp_path)
    assert "# HELP process_network_receive_bytes_total Number of bytes received by the process over the network.\n" \
           "# TYPE process_network_receive_bytes_total counter\nprocess_network_receive_bytes_total 1234.0\n" in text
    assert "process_network_transmit_bytes_total 5678.0\n" in text
    assert ("# TYPE process_virtual_memory_max_bytes gauge\n"
            "process_virtual_memory_max_bytes 1.8446744073709552e+19") in text


def test_an_unreadable_file_leaves_its_families_out(tmp_path: Path) -> None:
    (tmp_path / "limits").write_text(LIMITS.format(soft="unlimited"))
    text = exposition(tmp_path)
    assert "process_network" not in text and "process_virtual_memory_max_bytes" in text


def test_this_process() -> None:
    text = exposition(Path("/proc/self"))
    assert "process_network_receive_bytes_total" in text and "process_virtual_memory_max_bytes" in text
