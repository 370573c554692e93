#!/usr/bin/env bash
# Installs Debian's chromium when no Chromium is found, so browser QA runs for real.
# Honours CRUMB_CHROMIUM. Never fails the caller: without Chromium the browser check reports
# `unavailable` (never a pass), and the tests that need it say so.
set -u
if [ -n "${CRUMB_CHROMIUM:-}" ] && [ -x "${CRUMB_CHROMIUM}" ]; then exit 0; fi
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then exit 0; fi
done
exec "$(dirname "$0")/apt-install.sh" chromium
