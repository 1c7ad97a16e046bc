#!/bin/sh
# Installs the Debian 12 packages sandboxd needs to build, run and test. Idempotent: only
# missing packages are installed. Usage: scripts/install-deps.sh [--test]
set -eu

BUILD="build-essential pkg-config libuv1-dev libjansson-dev libcurl4-openssl-dev libssh-dev
libsystemd-dev libinih-dev check"
RUN="bash coreutils procps"
TEST="python3 python3-venv socat systemd clang-format clang libclang-rt-14-dev docker.io
busybox-static bash-static dash iproute2 groff-base man-db openssl python3-grpcio
python3-protobuf protobuf-compiler bubblewrap musl-tools siftool squashfs-tools git openssh-server
openssh-client python3-paramiko"

want="$BUILD $RUN"
[ "${1:-}" = "--test" ] && want="$want $TEST"
# The MCP test runs the official TypeScript SDK client: Debian's node and npm unless a Node.js
# is installed already (a vendor's nodejs package brings npm itself and conflicts with
# Debian's npm).
if [ "${1:-}" = "--test" ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
        want="$want nodejs npm"
fi

missing=""
for p in $want; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                missing="$missing $p"
        fi
done
if [ -z "$missing" ]; then
        echo "install-deps: all packages present"
        exit 0
fi
echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
