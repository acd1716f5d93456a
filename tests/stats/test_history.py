"""The web UI's history ring (stats/history.py): bounded, oldest first, the Summary's own figures,
network rates from the summary's counters, series dropped once out of the window, and its memory
at 110 pods of two containers."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.stats.history import NODE_KEY, History, container_key, pod_key
from kubeletapi.stats.summary import full_summary
from tests.stats.fixture import fixture_snapshots

Mi = 1 << 20


def summary(pods: int = 1, containers: int = 2, rx: int = 0, cpu: int = 1_000_000,
            memory: int = 10 * Mi) -> api.Summary:
    """A Summary with `pods` pods of `containers` containers, every figure set."""
    node = api.NodeStats(
        node_name="n", start_time=0, cpu=api.CPUStats(1, usage_nano_cores=cpu * 10),
        memory=api.MemoryStats(1, working_set_bytes=memory * 10),
        network=api.NetworkStats(1, api.InterfaceStats("eth0", rx_bytes=rx, tx_bytes=2 * rx)),
        fs=api.FsStats(1, used_bytes=5 * Mi), image_fs=api.FsStats(1, used_bytes=7 * Mi),
    )
    out = api.Summary(node)
    for p in range(pods):
        pod = api.PodStats(f"p{p}", "default", f"uid-{p}", 0, cpu=api.CPUStats(1, usage_nano_cores=cpu),
                           memory=api.MemoryStats(1, working_set_bytes=memory),
                           network=api.NetworkStats(1, api.InterfaceStats("eth0", rx_bytes=rx, tx_bytes=rx)))
        pod.containers = [api.ContainerStats(f"c{c}", 0, cpu=api.CPUStats(1, usage_nano_cores=cpu // 2),
                                             memory=api.MemoryStats(1, working_set_bytes=memory // 2))
                          for c in range(containers)]
        out.pods.append(pod)
    return out


def test_series_are_the_summarys_figures_oldest_first() -> None:
    history = History(interval_s=10, window_s=30)  # 4 slots
    for i in range(6):
        history.add(i + 1, 100.0 + 10 * i, summary(rx=1000 * i, cpu=(i + 1) * 1_000_000))
    assert history.capacity == 4
    node = history.series(NODE_KEY)
    assert node is not None
    assert node.t == [120.0, 130.0, 140.0, 150.0]  # the last four cycles only
    assert node.values["cpu"] == [0.03, 0.04, 0.05, 0.06]  # usageNanoCores / 1e9
    assert node.values["memory"] == [100 * Mi] * 4
    assert node.values["rx"] == [100.0] * 4 and node.values["tx"] == [200.0] * 4  # bytes/s from the counters
    assert node.values["fs"] == [5 * Mi] * 4 and node.values["imagefs"] == [7 * Mi] * 4
    pod = history.series(pod_key("uid-0"))
    assert pod is not None and pod.values["cpu"] == [0.003, 0.004, 0.005, 0.006]
    box = history.series(container_key("uid-0", "c1"))
    assert box is not None and box.values["memory"] == [5 * Mi] * 4
    latest = history.latest()
    assert (latest.generation, latest.time_s) == (6, 150.0)
    assert latest.summary is not None and latest.summary.pods[0].name == "p0"


def test_first_sample_and_counter_reset_have_no_rate_and_missing_figures_are_none() -> None:
    history = History(interval_s=1, window_s=10)
    history.add(1, 1.0, summary(rx=5000))
    history.add(2, 2.0, summary(rx=100))  # the counter went back (a new sandbox)
    bare = summary(rx=200)
    bare.pods[0].cpu = None  # before a container's second sample the summary has no rate
    history.add(3, 3.0, bare)
    pod = history.series(pod_key("uid-0"))
    assert pod is not None
    assert pod.values["rx"] == [None, None, 100.0]
    assert pod.values["cpu"] == [0.001, 0.001, None]


def test_a_gone_pod_leaves_gaps_then_is_dropped_after_a_window() -> None:
    history = History(interval_s=10, window_s=20)  # 3 slots
    history.add(1, 10.0, summary(pods=2))
    history.add(2, 20.0, summary(pods=1))
    gone = history.series(pod_key("uid-1"))
    assert gone is not None and gone.values["memory"] == [10 * Mi, None]
    for i in range(3):
        history.add(3 + i, 30.0 + 10 * i, summary(pods=1))
    assert history.series(pod_key("uid-1")) is None
    assert history.series(container_key("uid-1", "c0")) is None
    assert pod_key("uid-0") in history.series_keys()


def test_fixture_cycles_carry_the_summary_rates(tmp_path: Path) -> None:
    first, second = fixture_snapshots(tmp_path, 2)
    history = History(interval_s=10)
    for snap in (first, second):
        history.add(snap.generation, snap.time_ns / 1e9, full_summary(snap))
    built = full_summary(second)
    pod = built.pods[0]
    series = history.series(pod_key(pod.uid))
    assert series is not None and pod.cpu is not None and pod.cpu.usage_nano_cores is not None
    assert series.values["cpu"][-1] == pod.cpu.usage_nano_cores / 1e9
    assert series.values["cpu"][0] is None  # the first cycle has no rate, as on /stats/summary


def test_memory_is_bounded_at_110_pods() -> None:
    """110 pods of 2 containers for a whole window at the default 10 s interval: the ring's
    arrays, measured with tracemalloc (the Summary it keeps is the cycle's own); bench/ui_bench.py
    measures 1 s cycles."""
    for interval, bound in ((10.0, 1 * Mi),):
        snap = summary(pods=110)
        tracemalloc.start()
        history = History(interval_s=interval)
        for i in range(history.capacity + 5):
            history.add(i + 1, float(i), snap)
        used, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"history at 110 pods x 2 containers, {interval:g} s interval: {used / Mi:.2f} MiB")
        assert used < bound, (interval, used)
        assert len(history.series_keys()) == 1 + 110 + 220
