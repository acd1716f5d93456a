"""gowire: Go's encoding/json rules for every wire struct (core/v1 objects and the KubeletConfiguration)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import ConfigDict

from kubeletapi.api.core_v1 import Container, ContainerPort
from kubeletapi.api.gowire import GoStruct, empty, wire_value
from kubeletapi.api.quantity import Quantity
from kubeletapi.config.durations import Duration
from kubeletapi.config.model import KubeletConfiguration


class Inner(GoStruct):
    n: int = 0


class Sample(GoStruct):
    model_config = ConfigDict(strict=True)
    _always: ClassVar[frozenset[str]] = frozenset({"kept"})
    _pointers: ClassVar[frozenset[str]] = frozenset({"flag"})

    kept: str = ""
    flag: bool = True
    maybe: int | None = None
    plain: int = 0
    inner: Inner = Inner()
    labels: dict[str, str] = {}
    raw: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("data", "wire"),
    [
        pytest.param({}, {"kept": "", "flag": True, "inner": {}}, id="zero-values"),
        pytest.param({"flag": False, "maybe": 0}, {"kept": "", "flag": False, "maybe": 0, "inner": {}},
                     id="pointers-keep-false-and-zero"),
        pytest.param({"plain": 3, "maybe": None}, {"kept": "", "flag": True, "plain": 3, "inner": {}},
                     id="null-is-absent"),
        pytest.param({"labels": {"b": "2", "a": "1"}, "raw": {"z": 1, "a": 2}},
                     {"kept": "", "flag": True, "inner": {}, "labels": {"a": "1", "b": "2"}, "raw": {"z": 1, "a": 2}},
                     id="typed-maps-sorted-opaque-kept"),
    ],
)
def test_tags(data: dict[str, Any], wire: dict[str, Any]) -> None:
    encoded = Sample.model_validate(data).to_wire()
    assert encoded == wire
    assert list(encoded) == list(wire)  # declaration order


@pytest.mark.parametrize(
    ("value", "is_empty"),
    [
        pytest.param(False, True, id="false"), pytest.param(0, True, id="zero"), pytest.param("", True, id="empty-str"),
        pytest.param([], True, id="empty-list"), pytest.param({}, True, id="empty-map"),
        pytest.param(Inner(), False, id="struct"), pytest.param(Duration(0), False, id="duration-struct"),
        pytest.param(Quantity.parse("0"), False, id="quantity-struct"), pytest.param(True, False, id="true"),
    ],
)
def test_empty(value: object, is_empty: bool) -> None:
    assert empty(value) is is_empty


def test_values() -> None:
    assert wire_value(Duration.parse("1m30s")) == "1m30s"
    assert wire_value(Quantity.parse("1024Mi")) == "1Gi"
    assert wire_value({"b": [Inner(n=1)], "a": None}, sort=True) == {"a": None, "b": [{"n": 1}]}


def test_both_wire_families_share_the_encoder() -> None:
    port = ContainerPort.model_validate({"containerPort": 80})
    assert port.to_wire() == {"containerPort": 80}  # `always` by Python name
    assert Container.model_validate({"name": "c"}).to_wire() == {"name": "c", "resources": {}}
    cfg = KubeletConfiguration.model_validate({"enableServer": False, "evictionHard": {"nodefs.available": "5%",
                                                                                     "memory.available": "1Gi"}})
    wire = cfg.to_wire()
    assert wire["enableServer"] is False  # a pointer field named by its JSON name keeps false
    assert list(wire["evictionHard"]) == ["memory.available", "nodefs.available"]  # Go sorts map keys
