#!/usr/bin/env bash
# Installs Debian's tmux when it is missing: `crumb watch` is tested in a real terminal (tmux at
# 80×24 and 200×50). Never fails the caller; the watch tests then fail saying tmux is missing.
set -u
if command -v tmux >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-tmux: no tmux and no apt-get; install tmux for the crumb watch tests" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "ensure-tmux: not root and no sudo; run: apt-get install tmux" >&2; exit 0; fi
fi
echo "ensure-tmux: installing Debian's tmux…" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null 2>&1 || true
$SUDO apt-get install -y -qq --no-install-recommends tmux >/dev/null 2>&1 \
  || echo "ensure-tmux: apt-get install tmux failed" >&2
exit 0
