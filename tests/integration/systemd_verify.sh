#!/bin/sh
# systemd_verify.sh - `systemd-analyze verify` on the units in contrib/systemd, system and user.
#
# Works without systemd as PID 1 (containers, CI): the units are rendered from their templates
# into a temporary directory the way `make install` renders them, with ExecStart= pointing at
# an executable that exists (the built daemon if SANDBOXD_BIN is set, else a stub), and the
# man pages named in Documentation= on a temporary MANPATH, so verify's man page check runs
# against our own docs/man. Exits non-zero on any warning or error about our units.
#
# A self-test first feeds verify a unit with a deliberate mistake and requires it to complain,
# so this test cannot pass because verify stopped reporting.
#
# Usage: tests/integration/systemd_verify.sh        (from anywhere; needs systemd-analyze, man)
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/contrib/systemd
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sandboxd-verify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found" >&2; exit 1; }

# An executable for ExecStart=: verify only checks that it exists and is executable.
mkdir -p "$tmp/sbin" "$tmp/system" "$tmp/user" "$tmp/bad" "$tmp/xdg"
chmod 0700 "$tmp/xdg"
if [ -n "${SANDBOXD_BIN:-}" ] && [ -x "$SANDBOXD_BIN" ]; then
        cp "$SANDBOXD_BIN" "$tmp/sbin/sandboxd"
else
        printf '#!/bin/sh\nexit 0\n' >"$tmp/sbin/sandboxd"
        chmod 0755 "$tmp/sbin/sandboxd"
fi

# Same substitutions as the Makefile's install rule.
render() {
        sed -e "s|@SBINDIR@|$tmp/sbin|g" -e "s|@BINDIR@|$tmp/bin|g" \
            -e "s|@SYSCONFDIR@|/etc|g" "$1" >"$2"
        if grep -n '@[A-Z_]*@' "$2" >&2; then
                echo "FAIL: unsubstituted placeholder in $2" >&2
                exit 1
        fi
}
render "$src/sandboxd.service.in" "$tmp/system/sandboxd.service"
cp "$src/sandboxd.socket" "$tmp/system/sandboxd.socket"
render "$src/user/sandboxd.service.in" "$tmp/user/sandboxd.service"
cp "$src/user/sandboxd.socket" "$tmp/user/sandboxd.socket"

# Our man pages, where `man` (run by verify for Documentation=man:...) finds them.
for sec in 1 5 8; do
        mkdir -p "$tmp/man/man$sec"
        for page in "$top"/docs/man/*."$sec"; do
                [ -e "$page" ] && cp "$page" "$tmp/man/man$sec/"
        done
done
MANPATH=$tmp/man
export MANPATH

# Runs verify in dir on the given units; prints its output; fails on a non-zero status or on
# any line that mentions one of our units (unknown keys only warn, with status 0).
verify() {
        mode=$1 dir=$2
        shift 2
        out=$tmp/verify.out
        rc=0
        (cd "$dir" && XDG_RUNTIME_DIR=$tmp/xdg systemd-analyze $mode verify \
                --recursive-errors=no "$@") >"$out" 2>&1 || rc=$?
        cat "$out"
        if [ "$rc" -ne 0 ] || grep -q 'sandboxd' "$out"; then
                return 1
        fi
        return 0
}

# Self-test: a misspelt key and a missing man page must be reported.
sed -e 's/^KillMode=mixed/KillMode=mixd/' "$tmp/system/sandboxd.service" >"$tmp/bad/sandboxd.service"
echo 'Documentation=man:sandboxd-nonexistent(8)' >"$tmp/bad/x"
sed -e '/^\[Unit\]/r '"$tmp/bad/x" "$tmp/system/sandboxd.socket" >"$tmp/bad/sandboxd.socket"
rm "$tmp/bad/x"
if verify "" "$tmp/bad" ./sandboxd.service ./sandboxd.socket >/dev/null; then
        echo "FAIL: self-test: verify did not report a broken unit" >&2
        exit 1
fi

status=0
echo "== system units"
verify "" "$tmp/system" ./sandboxd.service ./sandboxd.socket || status=1
echo "== user units"
verify --user "$tmp/user" ./sandboxd.service ./sandboxd.socket || status=1

# sysusers.d entry: one group line, as systemd-sysusers would read it.
echo "== sysusers"
if ! grep -Eq '^g[[:space:]]+sandboxd[[:space:]]+-' "$src/sandboxd.sysusers"; then
        echo "FAIL: sandboxd.sysusers does not create group sandboxd" >&2
        status=1
fi
if command -v systemd-sysusers >/dev/null; then
        mkdir -p "$tmp/root/etc"
        : >"$tmp/root/etc/passwd"
        : >"$tmp/root/etc/group"
        if ! systemd-sysusers --root="$tmp/root" "$src/sandboxd.sysusers" >"$tmp/sysusers.out" 2>&1 ||
                ! grep -q '^sandboxd:' "$tmp/root/etc/group"; then
                cat "$tmp/sysusers.out" >&2
                echo "FAIL: systemd-sysusers did not create group sandboxd" >&2
                status=1
        fi
fi

if [ "$status" -eq 0 ]; then
        echo "PASS: systemd units verify cleanly"
else
        echo "FAIL: systemd-analyze verify reported problems with our units" >&2
fi
exit "$status"
