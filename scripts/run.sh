#!/bin/sh
# Installs what is missing, builds, and runs sandboxd in the foreground on the user socket
# ($XDG_RUNTIME_DIR/sandboxd/sandboxd.sock, or /run/sandboxd/sandboxd.sock as root) with the
# local backend. Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)"
exec build/std/sandboxd "$@"
