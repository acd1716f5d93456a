"""Configuration: the KubeletConfiguration model, its decoding and the node options."""

from kubeletapi.config.durations import Duration
from kubeletapi.config.load import FlagValue, build_config, read_config_file
from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.options import InfluxDBOptions, NodeOptions
from kubeletapi.config.problems import HostFacts, Origin
from kubeletapi.config.validate import redacted, validate

__all__ = [
    "Duration",
    "FlagValue",
    "HostFacts",
    "InfluxDBOptions",
    "KubeletConfiguration",
    "NodeOptions",
    "Origin",
    "build_config",
    "read_config_file",
    "redacted",
    "validate",
]
