#!/bin/sh
# `make deny`: cargo-deny's licence, ban and source checks, which need nothing from the network
# but the crates.io index, then its advisory check, which needs RustSec's advisory database
# (a git repository on GitHub). When that database cannot be fetched, the advisory check is
# skipped with the reason, never passed in silence.
set -eu
cd "$(dirname "$0")/.."
# cargo-deny as installed by `make deny` (into $CRUMB_TOOLS/bin), run as the cargo subcommand.
PATH="${CRUMB_TOOLS:-$HOME/.cache/crumb-tools}/bin:$PATH"
export PATH
deny() { ${CARGO:-cargo} deny --locked "$@"; }
deny check licenses bans sources
log=$(mktemp)
trap 'rm -f "$log"' EXIT INT TERM
if deny fetch db > "$log" 2>&1; then
    deny check --disable-fetch advisories
else
    echo "make deny: advisories NOT checked: RustSec's advisory database could not be fetched:" >&2
    grep -v '^[[:space:]]*$' "$log" | tail -n 3 | sed 's/^/  /' >&2
    echo "  (licences, bans and sources passed; run \`make deny\` where GitHub is reachable for advisories)" >&2
fi
