"""OpenTelemetry export of a run: spans run -> task -> step -> model call / tool call with GenAI attributes.

It owns `setup.py` (whether to export, the OTLP exporter from the standard OTEL_* settings), `attributes.py`
(what a span may carry, and the redaction that keeps keys and Authorization headers out of it) and
`otel.py` (the spans, a ChatModel wrapper for model calls and the agent's events for steps and tools).
It may import everything below run/ (agent.py and the layers under it); only run/ imports it. The
opentelemetry packages are imported only when an endpoint is set.
"""
