"""The component-base API checks the kubelet's validation calls: logs/api/v1 Validate (logging) and
tracing/api/v1 ValidateTracingConfiguration (tracing), with field.Error's texts
("logging.vmodule[0]: Required value: ...")."""

from __future__ import annotations

from collections.abc import Iterable

from kubeletapi.api.quantity import QuantityError, coerce_quantity
from kubeletapi.config.featuregates import FeatureGates
from kubeletapi.config.gosyntax import url_error, url_scheme
from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.problems import HostFacts, Problem, problem
from kubeletapi.gofmt import go_quote

TRACING_SCHEMES = ("dns", "unix", "unix-abstract")


def logging(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    """component-base logs/api/v1 Validate, as field errors under logging."""
    conf = cfg.logging
    if conf.format == "json" and not gates.enabled("LoggingBetaOptions"):
        yield problem("logging.format", "logging.format: Forbidden: Log format json is disabled, see "
                      "LoggingBetaOptions feature")
    if conf.vmodule and conf.format not in ("", "text"):
        yield problem("logging.vmodule", "logging.vmodule: Forbidden: Only supported for text log format")
    for i, item in enumerate(conf.vmodule):
        where = f"logging.vmodule[{i}]"
        if not item.file_pattern:
            yield problem("logging.vmodule", f"{where}: Required value: File pattern must not be empty")
        if "=" in item.file_pattern or "," in item.file_pattern:
            yield problem("logging.vmodule", f"{where}: Invalid value: {go_quote(item.file_pattern)}: File pattern "
                          "must not contain equal sign or comma")
    for fmt, routing in (("text", conf.options.text), ("json", conf.options.json_)):
        where = f"logging.options.{fmt}"
        if routing.split_stream and not gates.enabled("LoggingAlphaOptions"):
            yield problem(f"{where}.splitStream", f"{where}.splitStream: Forbidden: Feature LoggingAlphaOptions is "
                          "disabled")
        try:
            size = coerce_quantity(routing.info_buffer_size).value()
        except QuantityError as exc:
            yield problem(f"{where}.infoBufferSize", f"{where}.infoBufferSize: {exc}")
            continue
        if size != 0 and not gates.enabled("LoggingAlphaOptions"):
            yield problem(f"{where}.infoBufferSize", f"{where}.infoBufferSize: Forbidden: Feature LoggingAlphaOptions "
                          "is disabled")


def tracing(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    """component-base tracing/api/v1 ValidateTracingConfiguration, as field errors under tracing."""
    conf = cfg.tracing
    if conf is None:
        return
    rate = conf.sampling_rate_per_million
    if rate is not None and rate < 0:
        yield problem("tracing.samplingRatePerMillion", f"tracing.samplingRatePerMillion: Invalid value: {rate}: "
                      "sampling rate must be positive")
    if rate is not None and rate > 1_000_000:
        yield problem("tracing.samplingRatePerMillion", f"tracing.samplingRatePerMillion: Invalid value: {rate}: "
                      "sampling rate per million must be less than or equal to one million")
    if conf.endpoint is not None:
        endpoint = conf.endpoint if "//" in conf.endpoint else "dns://" + conf.endpoint
        error = url_error(endpoint)
        scheme = url_scheme(endpoint)
        if error is None and scheme not in TRACING_SCHEMES:
            error = (f"unsupported scheme: {scheme}.  Options are none, dns, unix, or unix-abstract.  "
                     "See https://github.com/grpc/grpc/blob/master/doc/naming.md")
        if error is not None:
            yield problem("tracing.endpoint", f"tracing.endpoint: Invalid value: {go_quote(endpoint)}: {error}")
