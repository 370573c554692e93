#!/usr/bin/env bash
# apt-get install one Debian package for a test dependency (as root, or through `sudo -n`).
# Never fails the caller: where it cannot install, it says so and the tests that need the
# package say what is missing.
set -u
package="$1"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-install: no apt-get; install $package yourself" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "apt-install: not root and no sudo; run: apt-get install $package" >&2; exit 0; fi
fi
echo "apt-install: installing Debian's $package…" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null 2>&1 || true
$SUDO apt-get install -y -qq --no-install-recommends "$package" >/dev/null 2>&1 \
  || echo "apt-install: apt-get install $package failed" >&2
exit 0
