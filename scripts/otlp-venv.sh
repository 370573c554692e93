#!/bin/sh
# The official OpenTelemetry protobuf definitions (opentelemetry-proto, with protobuf) in a cached
# venv for the live OTLP export test; prints its python's path (see python-venv.sh).
exec "$(dirname "$0")/python-venv.sh" otlp-venv opentelemetry.proto.collector.trace.v1.trace_service_pb2 'opentelemetry-proto>=1.20,<2'
