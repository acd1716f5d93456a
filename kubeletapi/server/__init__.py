"""The HTTP layer: FastAPI apps for the secure, read-only and healthz listeners (thin routes)."""
