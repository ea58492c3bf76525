"""A loopback OTLP/HTTP receiver: decodes each POST /v1/traces with opentelemetry-proto's message types."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import LoopbackServer, Request, Response


@dataclass
class SpanView:
    """One received span, flattened for assertions."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status: str  # UNSET, OK or ERROR
    message: str
    resource: dict[str, Any] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


def body_of(req: Request) -> bytes:
    """The request body, gunzipped when the exporter compressed it."""
    return gzip.decompress(req.body) if req.headers.get("content-encoding") == "gzip" else req.body


def decode(req: Request) -> list[SpanView]:
    """The spans of one ExportTraceServiceRequest."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import Status

    message = ExportTraceServiceRequest()
    message.ParseFromString(body_of(req))
    out = []
    for rs in message.resource_spans:
        resource = _attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(SpanView(s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(),
                                    _attributes(s.attributes), Status.StatusCode.Name(s.status.code)[12:],
                                    s.status.message, resource, [e.name for e in s.events]))
    return out


class OtlpReceiver(LoopbackServer):
    """Answers every export with an empty ExportTraceServiceResponse; `spans()` decodes what arrived."""

    def __init__(self) -> None:
        super().__init__(lambda req: Response(200, b"", content_type="application/x-protobuf"))

    @property
    def endpoint(self) -> str:
        """The base URL to put in OTEL_EXPORTER_OTLP_ENDPOINT."""
        return self.url

    def spans(self) -> list[SpanView]:
        """Every span received so far, in arrival order."""
        return [s for req in list(self.requests) if req.path == "/v1/traces" for s in decode(req)]

    def raw(self) -> bytes:
        """Every export body as received (decompressed): what left the process."""
        return b"".join(body_of(r) for r in list(self.requests))
