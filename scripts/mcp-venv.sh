#!/bin/sh
# Create (once) a Python venv holding the official MCP Python SDK (`mcp` on PyPI), for the MCP
# end-to-end test, and print its python's path. The venv lives in the test cache
# ($CRUMB_TEST_CACHE, else ~/.cache/crumb-test), so later runs reuse it offline.
set -eu
cache="${CRUMB_TEST_CACHE:-$HOME/.cache/crumb-test}"
venv="$cache/mcp-venv"
if ! "$venv/bin/python" -c 'import mcp' >/dev/null 2>&1; then
    mkdir -p "$cache"
    timeout 120 python3 -m venv "$venv" >&2
    timeout 600 "$venv/bin/pip" install --quiet --disable-pip-version-check 'mcp>=1.10' >&2
fi
echo "$venv/bin/python"
