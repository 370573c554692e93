#!/bin/sh
# The cached venv holding the official MCP Python SDK (`mcp` on PyPI) for the MCP end-to-end test;
# prints its python's path (see python-venv.sh).
exec "$(dirname "$0")/python-venv.sh" mcp-venv mcp 'mcp>=1.10'
