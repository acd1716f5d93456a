"""The oracle's differ (tests/oracle/diff.py) on hand-made documents: no nodes needed."""

from __future__ import annotations

from typing import Any

from tests.oracle.diff import Comparer, Difference


def keys(real: Any, ours: Any, keyed: dict[str, str] | None = None, values: bool = True) -> list[str]:
    return [d.key for d in Comparer("/doc", keyed or {}, values=values).compare(real, ours)]


def test_equal_documents_have_no_difference() -> None:
    doc = {"a": 1, "b": [{"x": "y"}], "c": None, "d": [1, 2]}
    assert keys(doc, dict(doc)) == []


def test_a_key_only_the_kubelet_has_is_missing_and_one_only_ours_has_is_extra() -> None:
    assert keys({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "d": 3}}) == ["/doc a.c: missing", "/doc a.d: extra"]


def test_a_type_difference_stops_the_walk_there() -> None:
    assert keys({"a": {"b": 1}, "n": None, "f": True}, {"a": [1], "n": 0, "f": 1}) == [
        "/doc a: type", "/doc f: type", "/doc n: type"]


def test_values_are_compared_only_when_asked() -> None:
    assert keys({"a": "x", "n": 1}, {"a": "y", "n": 2}) == ["/doc a: value", "/doc n: value"]
    assert keys({"a": "x", "n": 1}, {"a": "y", "n": 2.5}, values=False) == []


def test_the_detail_says_both_values() -> None:
    (diff,) = Comparer("/doc", {}).compare({"a": "x"}, {"a": "y"})
    assert diff == Difference("/doc", "a", "value", "'x' != 'y'")
    assert str(diff) == "/doc a: value 'x' != 'y'"


def test_unkeyed_lists_of_objects_differ_in_length_and_in_their_elements_shapes() -> None:
    real = {"l": [{"k": 1}, {"k": 2}, {"k": 3}]}
    assert keys(real, {"l": [{"k": 1}, {"k": 2}]}) == ["/doc l[]: length"]
    assert keys(real, {"l": [{"k": 1}, {"k": 2}, {"k": 3, "z": 0}]}) == ["/doc l[].z: extra"]
    assert keys(real, {"l": []}) == ["/doc l[]: missing"]
    assert keys({"l": []}, real) == ["/doc l[]: extra"]


def test_lists_of_scalars_compare_as_multisets() -> None:
    assert keys({"l": [1, 2]}, {"l": [2, 1]}) == []
    assert keys({"l": [1, 2]}, {"l": [1, 3]}) == ["/doc l[]: value"]


def test_keyed_lists_match_elements_by_their_field() -> None:
    real = {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]}
    ours = {"conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"},
                           {"type": "Extra", "status": "True"}]}
    assert keys(real, ours, {"conditions[]": "type"}) == [
        "/doc conditions[type=Extra]: extra", "/doc conditions[type=Ready].status: value"]
    assert keys(real, {"conditions": real["conditions"][:1]}, {"conditions[]": "type"}) == [
        "/doc conditions[type=Initialized]: missing"]


def test_keyed_lists_nest_and_take_dotted_fields() -> None:
    real = {"items": [{"metadata": {"name": "a"}, "spec": {"c": [{"name": "main", "v": 1}]}}]}
    ours = {"items": [{"metadata": {"name": "a"}, "spec": {"c": [{"name": "main", "v": 2}]}}]}
    keyed = {"items[]": "metadata.name", "items[metadata.name=a].spec.c[]": "name"}
    assert keys(real, ours, keyed) == ["/doc items[metadata.name=a].spec.c[name=main].v: value"]


def test_the_normaliser_sees_every_path_before_the_comparison() -> None:
    seen: list[str] = []

    def blank_uid(path: str, value: Any) -> Any:
        seen.append(path)
        return "<uid>" if path.endswith("uid") else value

    comparer = Comparer("/doc", {}, normalise=blank_uid)
    assert comparer.compare({"m": {"uid": "1", "n": "x"}}, {"m": {"uid": "2", "n": "x"}}) == []
    assert {"", "m", "m.uid", "m.n"} <= set(seen)


def test_differences_are_sorted_and_unique() -> None:
    real = {"l": [{"a": 1}, {"a": 1}]}
    ours = {"l": [{"b": 1}, {"b": 1}]}
    assert keys(real, ours) == ["/doc l[].a: missing", "/doc l[].b: extra"]
