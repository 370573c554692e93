#!/usr/bin/env bash
# Installs Debian's chromium when no Chromium is found, so browser QA runs for real.
# Honours CRUMB_CHROMIUM. Never fails the caller: without Chromium the browser check reports
# `unavailable` (never a pass), and the tests that need it say so.
set -u
if [ -n "${CRUMB_CHROMIUM:-}" ] && [ -x "${CRUMB_CHROMIUM}" ]; then exit 0; fi
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then exit 0; fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no Chromium and no apt-get; install Chromium and set CRUMB_CHROMIUM" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "ensure-chromium: not root and no sudo; run: apt-get install chromium" >&2; exit 0; fi
fi
echo "ensure-chromium: installing Debian's chromium…" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null 2>&1 || true
if ! $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; then
  echo "ensure-chromium: apt-get install chromium failed; browser checks will report unavailable" >&2
fi
exit 0
