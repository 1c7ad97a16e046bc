#!/bin/sh
# Installs what is missing, starts the services the tests need (dockerd) and runs every
# test: format check, unit and integration tests, then the same again under ASan/UBSan, then
# bounded libFuzzer runs of the policy parser and of the container checks + HTTP helpers.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
# CI runs as root: tests that need root fail instead of skipping (tests/integration/harness.py)
export SANDBOXD_CI=1
scripts/install-deps.sh --test
if [ -x tests/docker/setup.sh ]; then
        tests/docker/setup.sh
fi
# The MCP SDK client of tests/integration/test_mcp.py, at the version package-lock.json pins.
npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
make format-check
make -j"$(nproc)" all
make check
make -j"$(nproc)" SANITIZE=address,undefined all
ASAN_OPTIONS=detect_leaks=1 make SANITIZE=address,undefined check
# The libFuzzer targets (with ASan/UBSan) for a bounded time each, side by side.
make -j"$(nproc)" -Otarget fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
echo "scripts/test.sh: all tests passed in $(( $(date +%s) - start )) s"
