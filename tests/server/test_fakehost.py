"""FakeHost stays a Host: every member of the protocol is a field, with its parameters and kind.

mypy checks the same (tests/fakehost.py assigns a FakeHost to a Host) when it is run over tests/;
this keeps the check in the test run too.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import fields

import pytest

from kubeletapi.errors import NotFound
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.server.host import Host
from tests.fakehost import FakeHost

MEMBERS = sorted(name for name in dir(Host) if not name.startswith("_"))


def test_every_host_member_is_a_field() -> None:
    assert sorted(f.name for f in fields(FakeHost)) == MEMBERS


@pytest.mark.parametrize("name", [m for m in MEMBERS if not isinstance(getattr(Host, m), property)])
def test_default_answers_take_the_hosts_parameters(name: str) -> None:
    declared = inspect.signature(getattr(Host, name))
    default = inspect.signature(getattr(FakeHost(), name))
    assert list(default.parameters) == [p for p in declared.parameters if p != "self"]
    assert inspect.iscoroutinefunction(getattr(FakeHost(), name)) == inspect.iscoroutinefunction(getattr(Host, name))


def test_defaults_are_a_node_without_pods() -> None:
    host = FakeHost()
    assert host.node_name == "testnode"
    assert [c.name for c in host.health_checks()] == ["ping", "log", "syncloop"]
    assert all(c.check() is None for c in host.health_checks())
    assert host.pod_list()["items"] == [] and host.running_pods()["items"] == []
    assert host.metrics_registry("metrics") is host.metrics_registry("metrics")
    assert host.metrics_registry("metrics") is not FakeHost().metrics_registry("metrics")

    async def lookups() -> list[str]:
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: host.container_logs("ns", "p", "c", PodLogOptions()),
            lambda: host.run_in_container("ns", "p", None, "c", []),
            lambda: host.container_streams("ns", "p", None, "c"),
            lambda: host.pod_ports("ns", "p", None),
        ]
        refused = []
        for call in calls:
            with pytest.raises(NotFound) as caught:
                await call()
            refused.append(str(caught.value))
        return refused

    assert asyncio.run(lookups()) == ['pod "p" does not exist', *["pod does not exist"] * 3]
