# crumb — the two commands a newcomer needs:
#   make demo   run the main job
#   make test   everything CI runs (fmt, clippy, tests, schema drift)

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test fmt lint unit schemas bench deps release

deps:
	@./scripts/ensure-chromium.sh

release:
	$(CARGO) build --release --locked

# Until `crumb run` lands, the demo validates the shipped pipelines and prints the casual graph.
demo: deps release
	./target/release/crumb validate pipelines/ presets/
	./target/release/crumb graph pipelines/casual.yaml

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --all-targets -- -D warnings

unit:
	$(CARGO) test --locked --all-targets

# The committed schemas must equal what the types generate.
schemas:
	$(CARGO) run --quiet --locked -- schema pipeline | diff -u schemas/pipeline.schema.json -
	$(CARGO) run --quiet --locked -- schema preset | diff -u schemas/preset.schema.json -
	$(CARGO) run --quiet --locked -- schema transcript | diff -u schemas/transcript.schema.json -

test: deps fmt lint unit schemas

bench: release
	$(CARGO) bench --locked
