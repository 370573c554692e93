#!/bin/sh
# Create (once) a Python venv holding pytest-lsp (and the pygls LSP client it brings), for the
# `crumb lsp` end-to-end test, and print its python's path. The venv lives in the test cache
# ($CRUMB_TEST_CACHE, else ~/.cache/crumb-test), so later runs reuse it offline.
set -eu
cache="${CRUMB_TEST_CACHE:-$HOME/.cache/crumb-test}"
venv="$cache/lsp-venv"
if ! "$venv/bin/python" -c 'import pytest_lsp' >/dev/null 2>&1; then
    mkdir -p "$cache"
    timeout 120 python3 -m venv "$venv" >&2
    timeout 600 "$venv/bin/pip" install --quiet --disable-pip-version-check 'pytest-lsp>=1,<2' >&2
fi
echo "$venv/bin/python"
