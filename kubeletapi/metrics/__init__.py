"""Prometheus metrics: the kubelet_* instruments and (later) the cadvisor/resource/probes collectors.

Nothing here touches prometheus_client's global default registry: every registry is built by
the composition root and passed in.
"""
