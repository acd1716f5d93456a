"""The CNI layer: the conflist made from a pod CIDR, the plugin protocol (environment, stdin,
chaining, results), and how plugin failures become one NetworkError. Plugins are small shell
scripts that record what they were given and answer like real plugins do."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.errors import InvalidInput, NetworkError
from kubeletapi.network.cni import Attachment, NetworkList, PluginRunner, error_message, parse_result
from kubeletapi.network.conflist import CONFLIST_NAME, PodNetworkConfig, conflist, write_conflist
from kubeletapi.network.pod import PodNetwork

RESULT = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": "/x"}],
          "ips": [{"address": "10.251.200.7/24", "gateway": "10.251.200.1", "interface": 0}]}


def plugin(dirp: Path, name: str, body: str) -> Path:
    """A plugin script: it appends its environment and stdin to <dir>/calls.jsonl, then runs `body`."""
    path = dirp / name
    path.write_text(
        "#!/bin/sh\n"
        "in=$(cat)\n"
        f'printf \'{{"plugin":"{name}","cmd":"%s","id":"%s","netns":"%s","if":"%s","args":"%s","path":"%s",'
        '"conf":%s}\\n\' "$CNI_COMMAND" "$CNI_CONTAINERID" "$CNI_NETNS" "$CNI_IFNAME" "$CNI_ARGS" "$CNI_PATH" '
        f'"$in" >> {dirp}/calls.jsonl\n'
        + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def calls(dirp: Path) -> list[dict[str, Any]]:
    path = dirp / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def cfg(tmp: Path, cidr: str = "10.251.200.0/24") -> PodNetworkConfig:
    return PodNetworkConfig(cidr, "klatest0", tmp / "ipam")


def test_conflist_is_a_bridge_with_host_local_over_the_pod_cidr(tmp_path: Path) -> None:
    assert conflist(cfg(tmp_path)) == {
        "cniVersion": "1.0.0", "name": "kubeletapi",
        "plugins": [{
            "type": "bridge", "bridge": "klatest0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.251.200.0/24"}]],
                     "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(tmp_path / "ipam")},
        }],
    }
    six = conflist(cfg(tmp_path, "fd00:10:251::/64"))
    assert six["plugins"][0]["ipam"]["routes"] == [{"dst": "::/0"}]


@pytest.mark.parametrize(("cidr", "bridge", "why"), [
    pytest.param("10.251.200.0/33", "b", "pod CIDR", id="bad-prefix"),
    pytest.param("10.251.200.5/24", "b", "host bits", id="host-bits"),
    pytest.param("10.251.200.0/31", "b", "too small", id="too-small"),
    pytest.param("nonsense", "b", "pod CIDR", id="not-a-cidr"),
    pytest.param("10.251.200.0/24", "a-very-long-bridge", "bridge name", id="long-bridge"),
    pytest.param("10.251.200.0/24", "", "bridge name", id="no-bridge"),
])
def test_bad_network_config(tmp_path: Path, cidr: str, bridge: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=why):
        PodNetworkConfig(cidr, bridge, tmp_path)


def test_write_conflist_replaces_atomically_and_leaves_an_unchanged_file(tmp_path: Path) -> None:
    path = write_conflist(tmp_path / "net.d", cfg(tmp_path))
    assert path.name == CONFLIST_NAME and json.loads(path.read_text()) == conflist(cfg(tmp_path))
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    write_conflist(tmp_path / "net.d", cfg(tmp_path))
    assert path.stat().st_mtime_ns == before - 10**9  # not rewritten
    write_conflist(tmp_path / "net.d", cfg(tmp_path, "10.251.201.0/24"))
    assert "10.251.201.0/24" in path.read_text()
    assert sorted(p.name for p in path.parent.iterdir()) == [CONFLIST_NAME]


@pytest.mark.parametrize(("raw", "ips"), [
    pytest.param(RESULT, ("10.251.200.7",), id="v1"),
    pytest.param({"ips": [{"address": "10.0.0.2/24"}, {"address": "fd00::2/64"}]}, ("10.0.0.2", "fd00::2"),
                 id="dual-stack"),
    pytest.param({"cniVersion": "1.0.0"}, (), id="none"),
])
def test_parse_result(raw: dict[str, Any], ips: tuple[str, ...]) -> None:
    assert parse_result(raw).ips == ips


def test_parse_result_rejects_a_malformed_address() -> None:
    with pytest.raises(NetworkError, match="malformed ips entry"):
        parse_result({"ips": [{"gateway": "10.0.0.1"}]})


@pytest.mark.parametrize(("stdout", "stderr", "code", "message"), [
    pytest.param(b'{"cniVersion":"1.0.0","code":11,"msg":"failed to allocate","details":"range full"}', b"", 1,
                 "CNI plugin bridge ADD for container 0123456789ab failed (code 11): failed to allocate: range full",
                 id="spec-error"),
    pytest.param(b'{"code":7,"msg":"bad config"}', b"", 1,
                 "CNI plugin bridge ADD for container 0123456789ab failed (code 7): bad config", id="no-details"),
    pytest.param(b"", b"panic: oops\n", 2,
                 "CNI plugin bridge ADD for container 0123456789ab failed (exit status 2): panic: oops", id="stderr"),
    pytest.param(b"not json", b"", 1,
                 "CNI plugin bridge ADD for container 0123456789ab failed (exit status 1)", id="garbage"),
])
def test_error_message(stdout: bytes, stderr: bytes, code: int, message: str) -> None:
    assert error_message("bridge", "ADD", "0123456789abcdef", stdout, stderr, code) == message


def test_chain_add_check_del_per_spec(tmp_path: Path) -> None:
    first = {"cniVersion": "1.0.0", "ips": [{"address": "10.251.200.9/24"}]}
    plugin(tmp_path, "one", f"[ \"$CNI_COMMAND\" = ADD ] && echo '{json.dumps(first)}'; exit 0")
    plugin(tmp_path, "two", "[ \"$CNI_COMMAND\" = ADD ] && echo \"$in\" | python3 -c "
           "'import json,sys; print(json.dumps(json.load(sys.stdin)[\"prevResult\"]))'; exit 0")
    net = NetworkList({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "one", "x": 1}, {"type": "two"}]},
                      PluginRunner([tmp_path / "missing", tmp_path]))
    at = Attachment("c" * 64, "/run/netns/x", "eth0", {"K8S_POD_NAME": "p"})
    result = asyncio.run(net.add(at))
    assert result.ips == ("10.251.200.9",)
    asyncio.run(net.check(at, result.raw))
    asyncio.run(net.delete(at, result.raw))
    seen = [(c["plugin"], c["cmd"]) for c in calls(tmp_path)]
    assert seen == [("one", "ADD"), ("two", "ADD"), ("one", "CHECK"), ("two", "CHECK"), ("two", "DEL"), ("one", "DEL")]
    add1, add2 = calls(tmp_path)[:2]
    assert add1["conf"] == {"type": "one", "x": 1, "name": "n", "cniVersion": "1.0.0"}
    assert add2["conf"]["prevResult"] == first
    assert (add1["id"], add1["netns"], add1["if"], add1["args"]) == ("c" * 64, "/run/netns/x", "eth0", "K8S_POD_NAME=p")
    assert add1["path"] == f"{tmp_path / 'missing'}:{tmp_path}"


def test_del_calls_every_plugin_and_raises_the_first_failure(tmp_path: Path) -> None:
    plugin(tmp_path, "one", "exit 0")
    plugin(tmp_path, "two", """echo '{"code":999,"msg":"cannot delete"}'; exit 1""")
    net = NetworkList({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "one"}, {"type": "two"}]},
                      PluginRunner([tmp_path]))
    with pytest.raises(NetworkError, match=r"two DEL .* \(code 999\): cannot delete"):
        asyncio.run(net.delete(Attachment("c1", "")))
    assert [c["plugin"] for c in calls(tmp_path)] == ["two", "one"]


def test_missing_plugin_slow_plugin_and_bad_output(tmp_path: Path) -> None:
    runner = PluginRunner([tmp_path], timeout_s=0.3)
    with pytest.raises(NetworkError, match="'nope' not found"):
        asyncio.run(runner.call("ADD", {"type": "nope"}, Attachment("c1", "/x")))
    plugin(tmp_path, "slow", "exec sleep 30")
    with pytest.raises(NetworkError, match=r"timed out after 0\.3s"):
        asyncio.run(runner.call("ADD", {"type": "slow"}, Attachment("c1", "/x")))
    plugin(tmp_path, "chatty", "echo hello; exit 0")
    with pytest.raises(NetworkError, match="not JSON"):
        asyncio.run(runner.call("ADD", {"type": "chatty"}, Attachment("c1", "/x")))


def test_pod_network_brings_lo_up_and_undoes_a_failed_add(tmp_path: Path) -> None:
    plugin(tmp_path, "loopback", "exit 0")
    plugin(tmp_path, "host-local", "exit 0")
    fail_add = """[ "$CNI_COMMAND" = ADD ] && { echo '{"code":11,"msg":"no address"}'; exit 1; }; exit 0"""
    plugin(tmp_path, "bridge", fail_add)
    net = PodNetwork(cfg(tmp_path), [tmp_path])
    net.check_plugins()
    with pytest.raises(NetworkError, match=r"bridge ADD .* \(code 11\): no address"):
        asyncio.run(net.attach("c" * 64, "/x", {}))
    assert [(c["plugin"], c["cmd"], c["if"]) for c in calls(tmp_path)] == [
        ("loopback", "ADD", "lo"), ("bridge", "ADD", "eth0"), ("bridge", "DEL", "eth0")]


def test_pod_network_reports_a_missing_plugin(tmp_path: Path) -> None:
    plugin(tmp_path, "loopback", "exit 0")
    with pytest.raises(NetworkError, match="'bridge' not found"):
        PodNetwork(cfg(tmp_path), [tmp_path]).check_plugins()
