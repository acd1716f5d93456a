"""Prometheus metrics: the kubelet_* instruments of /metrics (HTTP, pod lifecycle, runtime
operations) and the InfluxDB sink's counts, the /metrics/probes registry, and the text of
/metrics/cadvisor and /metrics/resource rendered from the stats Snapshot.

Nothing here touches prometheus_client's global default registry: every registry is built by
the composition root and passed in.
"""
