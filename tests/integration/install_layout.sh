#!/bin/sh
# install_layout.sh - `make install DESTDIR=... PREFIX=...` puts every file in its place, the
# service units' ExecStart= names the installed daemon, and `make uninstall` removes it all.
#
# Usage: tests/integration/install_layout.sh
#   MAKE            make command (default: make)
#   INSTALL_TARGET  install target (default: install; "install-data" skips the binaries)
#   UNINSTALL_TARGET (default: uninstall)
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
make=${MAKE:-make}
itarget=${INSTALL_TARGET:-install}
utarget=${UNINSTALL_TARGET:-uninstall}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sandboxd-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

fail() {
        echo "FAIL: $*" >&2
        status=1
}

# expect_file PATH MODE
expect_file() {
        if [ ! -f "$tmp/root$1" ]; then
                fail "missing $1"
        elif [ "$(stat -c %a "$tmp/root$1")" != "$2" ]; then
                fail "$1 has mode $(stat -c %a "$tmp/root$1"), expected $2"
        fi
}

for prefix in /usr/local /usr; do
        rm -rf "$tmp/root"
        echo "== $make $itarget PREFIX=$prefix DESTDIR=..."
        (cd "$top" && $make -s "$itarget" PREFIX="$prefix" DESTDIR="$tmp/root") >/dev/null
        units=$prefix/lib/systemd
        expect_file "$units/system/sandboxd.service" 644
        expect_file "$units/system/sandboxd.socket" 644
        expect_file "$units/user/sandboxd.service" 644
        expect_file "$units/user/sandboxd.socket" 644
        expect_file "$prefix/lib/sysusers.d/sandboxd.conf" 644
        expect_file "$prefix/share/man/man1/sandboxctl.1" 644
        expect_file "$prefix/share/man/man5/sandboxd.conf.5" 644
        expect_file "$prefix/share/man/man8/sandboxd.8" 644
        expect_file "/etc/sandboxd/sandboxd.conf.example" 644
        if [ "$itarget" = install ]; then
                expect_file "$prefix/sbin/sandboxd" 755
                expect_file "$prefix/bin/sandboxctl" 755
                expect_file "$prefix/libexec/sandboxd/sandboxd-agent" 755
        fi
        for unit in system user; do
                f=$tmp/root$units/$unit/sandboxd.service
                [ -f "$f" ] || continue
                grep -qx "ExecStart=$prefix/sbin/sandboxd" "$f" ||
                        fail "$unit unit: ExecStart is '$(grep ExecStart= "$f")', expected $prefix/sbin/sandboxd"
                ! grep -n '@[A-Z_]*@' "$f" || fail "$unit unit: unsubstituted placeholder"
                ! grep -q "$tmp" "$f" || fail "$unit unit: DESTDIR leaked into the unit"
        done

        echo "== $make $utarget PREFIX=$prefix DESTDIR=..."
        (cd "$top" && $make -s "$utarget" PREFIX="$prefix" DESTDIR="$tmp/root") >/dev/null
        left=$(find "$tmp/root" -type f)
        [ -z "$left" ] || fail "left behind after $utarget: $left"
done

# A prefix in a home directory: nothing outside it (no /etc: issue 17), and the user unit reads
# the user's own configuration.
rm -rf "$tmp/root"
prefix=/home/someone/.local
echo "== $make $itarget PREFIX=$prefix DESTDIR=..."
(cd "$top" && $make -s "$itarget" PREFIX="$prefix" DESTDIR="$tmp/root") >/dev/null
outside=$(cd "$tmp/root" && find . -type f ! -path ".$prefix/*")
[ -z "$outside" ] || fail "PREFIX=$prefix installed outside the prefix: $outside"
expect_file "$prefix/etc/sandboxd/sandboxd.conf.example" 644
grep -qx 'Environment=SANDBOXD_CONFIG=%E/sandboxd/sandboxd.conf' \
        "$tmp/root$prefix/lib/systemd/user/sandboxd.service" ||
        fail "the user unit does not pass the user's own configuration"
(cd "$top" && $make -s "$utarget" PREFIX="$prefix" DESTDIR="$tmp/root") >/dev/null
left=$(find "$tmp/root" -type f)
[ -z "$left" ] || fail "left behind after $utarget: $left"

if [ "$status" -eq 0 ]; then
        echo "PASS: install layout"
fi
exit "$status"
