# crumb — the two commands a newcomer needs:
#   make demo   run the main job
#   make test   everything CI runs (fmt, clippy, tests, schema drift)

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test fmt lint unit schemas bench bench-readme deps release

deps:
	@./scripts/ensure-chromium.sh

release:
	$(CARGO) build --release --locked

# The main job on a fresh machine: Chromium for execution QA, a release build, then one run of the
# casual pipeline. Without an agent CLI every role runs on the built-in mock adapter; the run ends
# with the verdict and the path of the playable game (exit 0 on PASS).
demo: deps release
	./target/release/crumb run pipelines/casual.yaml "60-second match-3 with combo bonus"

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

# Benches are `harness = false` programs that time release builds; `make bench` runs them and
# prints one table of their medians with the machine gauge and load (`make bench-readme` also puts
# that table into README.md). Clippy above still compiles them on every run.
unit:
	$(CARGO) test --locked --workspace --lib --bins --tests

# The committed schemas must equal what the types generate.
schemas:
	$(CARGO) run --quiet --locked -- schema pipeline | diff -u schemas/pipeline.schema.json -
	$(CARGO) run --quiet --locked -- schema preset | diff -u schemas/preset.schema.json -
	$(CARGO) run --quiet --locked -- schema transcript | diff -u schemas/transcript.schema.json -

test: deps fmt lint unit schemas

bench: release
	CARGO=$(CARGO) ./scripts/bench-table.sh

bench-readme: release
	CARGO=$(CARGO) ./scripts/bench-table.sh --readme
