"""The built-in process runtime: containers as host processes, each owned by a kubeletapi-shim daemon."""
