#!/bin/sh
# Installs what is missing, starts the services the tests need (dockerd) and runs every
# test: format check, unit and integration tests, then the same again under ASan/UBSan, then
# bounded libFuzzer runs of the policy parser and of the container checks + HTTP helpers.
#
# The passes overlap where one waits and another computes: the ASan/UBSan tree and the
# fuzzers are built (at nice 19) while the std tree's integration tests run. The integration
# test classes run in $SANDBOXD_TEST_JOBS worker processes (tests/integration/run.py -j), the
# unit test binaries side by side (and alone: some bound how long the agent may take). A
# pass's output goes to build/logs/PASS.log and is printed whole when the pass ends; every
# pass of a phase is waited for, and any that failed fails the run.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
# CI runs as root: tests that need root fail instead of skipping (tests/integration/harness.py)
export SANDBOXD_CI=1
export SANDBOXD_TEST_JOBS="${SANDBOXD_TEST_JOBS:-4}"
J=$(nproc)
SAN=SANITIZE=address,undefined
scripts/install-deps.sh --test
if [ -x tests/docker/setup.sh ]; then
        tests/docker/setup.sh
fi
# The MCP SDK client of tests/integration/test_mcp.py, at the version package-lock.json pins.
npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
make format-check
# since NAME: the time into the run, for the budget (the whole run stays under 20 minutes).
since() {
        echo "==== scripts/test.sh: $1, $(($(date +%s) - start)) s into the run"
}
make -j"$J" all
make -j"$J" -Otarget unit-check
since "std unit tests passed"

mkdir -p build/logs
passes=""
# pass NAME FUNCTION: runs FUNCTION in the background, its output in build/logs/NAME.log
# (NAME: letters only, it names a variable).
pass() {
        (set -e; "$2") >"build/logs/$1.log" 2>&1 &
        eval "pid_$1=\$!"
        passes="$passes $1"
}
# phase_end: waits for every pass started, printing each one's output whole; fails the run
# when one failed (after printing them all).
phase_end() {
        failed=""
        for p in $passes; do
                rc=0
                eval "wait \$pid_$p" || rc=$?
                since "$p: exit $rc"
                cat "build/logs/$p.log"
                [ "$rc" -eq 0 ] || failed="$failed $p"
        done
        passes=""
        if [ -n "$failed" ]; then
                echo "scripts/test.sh: failed:$failed" >&2
                exit 1
        fi
}

std_tests() {
        make integration-check
}
san_and_fuzz_build() {
        nice -n 19 make -j"$J" "$SAN" all unit-build
        nice -n 19 make -j"$J" fuzz-build
}

pass std std_tests
pass build san_and_fuzz_build
phase_end
export ASAN_OPTIONS=detect_leaks=1
make -j"$J" -Otarget "$SAN" unit-check
make "$SAN" integration-check
unset ASAN_OPTIONS
since "ASan/UBSan unit and integration tests passed"
# The libFuzzer targets (with ASan/UBSan) for a bounded time each, side by side.
make -j"$J" -Otarget fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
echo "scripts/test.sh: all tests passed in $(($(date +%s) - start)) s"
