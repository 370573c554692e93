#!/bin/sh
# Install (once) axe-core, the accessibility engine, from npm into the test cache ($CRUMB_TEST_CACHE,
# else ~/.cache/crumb-test) for Studio's accessibility test, and print the path of `axe.min.js`.
# Later runs reuse it offline.
set -eu
cache="${CRUMB_TEST_CACHE:-$HOME/.cache/crumb-test}"
dir="$cache/axe-core"
script="$dir/node_modules/axe-core/axe.min.js"
if [ ! -s "$script" ]; then
    mkdir -p "$dir"
    timeout 300 npm install --silent --no-audit --no-fund --prefix "$dir" 'axe-core@4' >&2
fi
echo "$script"
