#!/bin/sh
# The cached venv holding pytest-lsp (and the pygls LSP client it brings) for the `crumb lsp`
# end-to-end test; prints its python's path (see python-venv.sh).
exec "$(dirname "$0")/python-venv.sh" lsp-venv pytest_lsp 'pytest-lsp>=1,<2'
