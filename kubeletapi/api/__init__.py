"""Wire models only: the JSON shapes kubeletapi reads and writes (pydantic, camelCase aliases).

Nothing here talks to a runtime, a clock or a file: decoding rules that need context (defaults,
validation, static pod identity) live in `kubeletapi.pods`.
"""
