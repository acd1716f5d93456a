"""--reserved-memory's syntax, the kubelet's ReservedMemoryVar (pkg/util/flag/flags.go):
`0:memory=1Gi,hugepages-2Mi=4Mi;1:memory=2Gi`, NUMA nodes separated by `;`. The errors are
the kubelet's words (typos included: they are what its users search for)."""

from __future__ import annotations

from typing import Any

from kubeletapi.api.quantity import Quantity, QuantityError


def parse_reserved_memory(text: str) -> list[dict[str, Any]]:
    """The reservations as reservedMemory entries; ValueError with the kubelet's message."""
    out: list[dict[str, Any]] = []
    for reservation in text.split(";") if text else []:
        parts = reservation.split(":")
        if len(parts) != 2:
            raise ValueError("the reserved memory has incorrect format, expected "
                             f"numaNodeID:type=quantity[,type=quantity...], got {reservation}")
        try:
            node = int(parts[0], 10)
        except ValueError:
            raise ValueError(f"failed to convert the NUMA node ID, exptected integer, got {parts[0]}") from None
        limits: dict[str, str] = {}
        for item in parts[1].split(","):
            pair = item.split("=")
            if len(pair) != 2:
                raise ValueError(f"the reserved limit has incorrect value, expected type=quantatity, got {item}")
            name, value = pair
            if name != "memory" and not name.startswith("hugepages-"):
                raise ValueError(f'memory type conversion error, unknown type: "{name}"')
            try:
                Quantity.parse(value)
            except QuantityError:
                raise ValueError(f"failed to parse the quantatity, expected quantatity, got {value}") from None
            limits[name] = value
        out.append({"numaNode": node, "limits": limits})
    return out
