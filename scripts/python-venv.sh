#!/bin/sh
# Create (once) a Python venv named NAME holding REQUIREMENT (a package from the Python package
# index) for an end-to-end test, and print its python's path. The venv lives in the test cache
# ($CRUMB_TEST_CACHE, else ~/.cache/crumb-test), so later runs reuse it offline; it is made again
# only when MODULE cannot be imported from it.
# Usage: python-venv.sh NAME MODULE REQUIREMENT
set -eu
name="$1" module="$2" requirement="$3"
cache="${CRUMB_TEST_CACHE:-$HOME/.cache/crumb-test}"
venv="$cache/$name"
if ! "$venv/bin/python" -c "import $module" >/dev/null 2>&1; then
    mkdir -p "$cache"
    timeout 120 python3 -m venv "$venv" >&2
    timeout 600 "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
fi
echo "$venv/bin/python"
