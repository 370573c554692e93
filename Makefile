# crumb — the two commands a newcomer needs:
#   make demo   run the main job
#   make test   everything CI runs (fmt, clippy, tests, schema drift)
# and the others (CONTRIBUTING.md lists them all): lint, unit, bench, bench-readme, soak,
# test-agents, screens, deps, release, docs (the book in docs/), deny (licences, bans, sources,
# advisories).

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: demo test fmt lint unit schemas check bench bench-readme deps release soak test-agents screens docs deny image

deps:
	@./scripts/ensure-chromium.sh
	@./scripts/ensure-tmux.sh
	@./scripts/ensure-neovim.sh

release:
	$(CARGO) build --release --locked

# The main job on a fresh machine: Chromium for execution QA, a release build, then one run of the
# casual pipeline. Without an agent CLI every role runs on the built-in mock adapter; the run ends
# with the verdict and the path of the playable game (exit 0 on PASS).
demo: deps release
	./target/release/crumb run pipelines/casual.yaml "60-second match-3 with combo bonus"

# The container image (Containerfile): podman, else docker with a reachable daemon; says which is
# missing otherwise. TARGET=agents adds Node and the agent CLIs.
TARGET ?= crumb
image:
	@if command -v podman >/dev/null 2>&1; then engine=podman; \
	elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker; \
	else echo "make image: needs podman, or docker with a running daemon" >&2; exit 1; fi; \
	$$engine build -f Containerfile --target $(TARGET) -t crumb:$(if $(filter crumb,$(TARGET)),latest,$(TARGET)) .

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	# Private items too: past a few entry points the crates are read by contributors, not linked
	# against, so their docs are the map of the code (and may link to what is crate-private).
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --workspace --no-deps --document-private-items --quiet

# Benches are `harness = false` programs that time release builds; `make bench` runs them and
# prints one table of their medians with the machine gauge and load (`make bench-readme` also puts
# that table into docs/performance.md). Clippy above still compiles them on every run.
unit:
	$(CARGO) test --locked --workspace --lib --bins --tests

# The committed schemas must equal what the types generate.
schemas:
	$(CARGO) run --quiet --locked -- schema pipeline | diff -u schemas/pipeline.schema.json -
	$(CARGO) run --quiet --locked -- schema preset | diff -u schemas/preset.schema.json -
	$(CARGO) run --quiet --locked -- schema transcript | diff -u schemas/transcript.schema.json -

# Every shipped pipeline proven: every outcome reachable, no dead end, every loop bounded.
check:
	$(CARGO) run --quiet --locked -- check pipelines/ > /dev/null

test: deps fmt lint unit schemas check

# Contract tests against the real claude, codex and gemini CLIs: installed from npm into
# $CRUMB_TEST_CACHE (default ~/.cache/crumb-test/agents) and pointed at a fake model API on
# 127.0.0.1. `make test` runs a small slice of them when node/npm are present (and prints why it
# skips them when not); this runs them all and fails without node/npm.
test-agents:
	@command -v node >/dev/null && command -v npm >/dev/null || { echo "make test-agents: node and npm are required (they install the agent CLIs)" >&2; exit 1; }
	CRUMB_TEST_AGENTS=all CRUMB_TEST_AGENTS_REQUIRED=1 $(CARGO) test --locked --test main agents:: -- --test-threads 2 --nocapture

bench: release
	CARGO=$(CARGO) ./scripts/bench-table.sh

bench-readme: release
	CARGO=$(CARGO) ./scripts/bench-table.sh --readme

# The long chaos soak (see docs/sessions.md, "The chaos suite"): hundreds of seeded random
# SIGKILLs, disks filling up (the home a tmpfs in a private mount namespace) and full or closed
# stdout across every phase of a run, each recovered and checked (same outcome, nothing lost or
# repeated, no process left), then 20 browser sessions at once through kills. `make test` runs a
# CI-sized slice.
SOAK_KILLS ?= 200
SOAK_CONCURRENT ?= 20
SOAK_SEED ?= $(shell date +%s)
soak: deps
	CRUMB_CHAOS_KILLS=$(SOAK_KILLS) CRUMB_CHAOS_CONCURRENT=$(SOAK_CONCURRENT) CRUMB_CHAOS_SEED=$(SOAK_SEED) \
		$(CARGO) test --locked -p crumb --test main run::chaos -- --nocapture --test-threads=1

# The Studio screenshots of docs/studio.md (docs/screens/*.png), written by the e2e tests that
# check every outcome's appearance, the story line, the graph, the waterfall and parallel judges,
# so they can never show a Studio that no longer exists.
screens: deps
	CRUMB_STUDIO_SCREENS=1 $(CARGO) test --locked -p crumb --test main -- studio::outcomes studio::story studio::judges

# Tools the project installs for itself (cargo-deny), kept out of the repository and reused.
CRUMB_TOOLS ?= $(HOME)/.cache/crumb-tools

# The documents in docs/ as a book (book.toml; built into target/book). mdBook is not a
# dependency of `make test`: without it this says so and succeeds, and the pages read as they are.
docs:
	@mdbook=$$(command -v mdbook || { test -x "$(CRUMB_TOOLS)/bin/mdbook" && echo "$(CRUMB_TOOLS)/bin/mdbook"; }); \
	if [ -n "$$mdbook" ]; then "$$mdbook" build; \
	else echo "make docs: mdbook is not installed, so the book was not built (install it with \`cargo install mdbook --locked\`; the pages in docs/ read as plain Markdown)"; fi

# Licences, bans and sources of every dependency (deny.toml), then the security advisories,
# which need RustSec's database from GitHub: when it cannot be fetched, that part is skipped and
# says why. cargo-deny is installed into $(CRUMB_TOOLS) the first time (a long compile).
deny:
	@test -x "$(CRUMB_TOOLS)/bin/cargo-deny" || { echo "make deny: installing cargo-deny into $(CRUMB_TOOLS) (once)"; \
		$(CARGO) install --locked cargo-deny --root "$(CRUMB_TOOLS)"; }
	CARGO=$(CARGO) CRUMB_TOOLS="$(CRUMB_TOOLS)" ./scripts/deny.sh
