#!/usr/bin/env bash
# Installs Debian's tmux when it is missing: `crumb watch` is tested in a real terminal (tmux at
# 80×24 and 200×50). Never fails the caller; the watch tests then fail saying tmux is missing.
set -u
if command -v tmux >/dev/null 2>&1; then exit 0; fi
exec "$(dirname "$0")/apt-install.sh" tmux
