#!/bin/sh
# One command to deploy/topology's HAProxy through its runtime API (the stats socket); prints
# the answer. `deploy/topology/balancer.sh "show servers state app"`, `... "show stat"`,
# `... "set server app/host11 state drain"` (HAProxy's management guide lists them all).
set -eu
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
exec "${PYTHON:-.venv/bin/python}" -c 'import socket, sys
with socket.socket(socket.AF_UNIX) as s:
    s.connect(sys.argv[1])
    s.sendall(sys.argv[2].encode() + b"\n")
    print(s.makefile().read(), end="")' "$dir/haproxy.sock" "$*"
