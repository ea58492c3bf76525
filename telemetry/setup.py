"""Whether a run exports traces, and its Tracing when it does: the OpenTelemetry SDK is imported only then."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from config import Settings
from core.errors import ConfigError
from telemetry.attributes import Redactor, secret_values

if TYPE_CHECKING:
    from telemetry.otel import Tracing

INSTALL_HINT = "pip install -r requirements-otel.txt"


def tracing_enabled(settings: Settings) -> bool:
    """True when an OTLP endpoint is set and OTEL_SDK_DISABLED is not."""
    return bool(settings.otel_traces_endpoint or settings.otel_endpoint) and not settings.otel_disabled


def start_tracing(settings: Settings, environ: Mapping[str, str] | None = None) -> Tracing | None:
    """The run's Tracing, or None (nothing imported, nothing spent) when no endpoint is set.

    ConfigError (exit 2, before any model call) when an endpoint is set but the packages are missing.
    """
    if not tracing_enabled(settings):
        return None
    try:
        from telemetry.otel import Tracing, make_exporter  # the opentelemetry SDK: only with an endpoint
    except ImportError as exc:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry packages are not "
                          f"installed ({exc.name}): {INSTALL_HINT}", "otel_endpoint") from exc
    redact = Redactor(secret_values(settings, os.environ if environ is None else environ))
    return Tracing(make_exporter(settings), redact, settings.otel_service_name)
