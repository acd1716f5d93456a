"""kubeletapi: a standalone node agent that speaks the kubelet's HTTP API and metrics on the wire."""

__version__ = "0.1.0"
