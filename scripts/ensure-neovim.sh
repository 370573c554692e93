#!/usr/bin/env bash
# Installs Debian's neovim when it is missing: `crumb lsp` has a smoke test under `nvim --headless`.
# Never fails the caller; that test then fails saying nvim is missing.
set -u
if command -v nvim >/dev/null 2>&1; then exit 0; fi
exec "$(dirname "$0")/apt-install.sh" neovim
