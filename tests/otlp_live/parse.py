"""Parse each OTLP/HTTP JSON request body named on the command line with the official
OpenTelemetry protobuf definitions (opentelemetry-proto): every field must be one the
definitions declare, with its type. OTLP's JSON encodes trace and span ids as hex where proto3
JSON has base64, so the ids are turned from hex into bytes first (which fails unless they are
hex) and their lengths checked after. Prints `ok <spans>` per body."""

import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

IDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids(value):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in IDS and isinstance(item, str):
                raw = bytes.fromhex(item)
                assert len(raw) == IDS[key], f"{key} {item!r} is not {IDS[key]} bytes"
                out[key] = base64.b64encode(raw).decode()
            else:
                out[key] = hex_ids(item)
        return out
    if isinstance(value, list):
        return [hex_ids(item) for item in value]
    return value


for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as body:
        document = json.load(body)
    request = ExportTraceServiceRequest()
    json_format.ParseDict(hex_ids(document), request, ignore_unknown_fields=False)
    spans = [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
    assert spans, f"{path}: no spans"
    for span in spans:
        assert len(span.trace_id) == 16 and len(span.span_id) == 8, span.name
        assert span.start_time_unix_nano <= span.end_time_unix_nano, span.name
        assert span.start_time_unix_nano > 0, span.name
    print(f"ok {len(spans)}")
