#!/bin/sh
# tests/docker/setup.sh — idempotent: make sure dockerd runs, remove the containers killed test
# runs left behind (remove_killed.py) and make sure the test images exist.
#   sandboxd-test:busybox  a rootfs of busybox-static with applet symlinks, made by `docker import`.
#   sandboxd-test:bash     the same with bash-static as /bin/bash (a container whose shell is bash).
set -eu

IMAGE=${SANDBOXD_TEST_IMAGE:-sandboxd-test:busybox}
BASH_IMAGE=${IMAGE%:*}:bash
LOG=${DOCKERD_LOG:-/var/log/dockerd-test.log}

if ! docker info >/dev/null 2>&1; then
        echo "setup: starting dockerd (log: $LOG)"
        nohup dockerd >"$LOG" 2>&1 &
        i=0
        until docker info >/dev/null 2>&1; do
                i=$((i + 1))
                if [ "$i" -gt 120 ]; then
                        echo "setup: dockerd did not become ready; tail of $LOG:" >&2
                        tail -n 30 "$LOG" >&2
                        exit 1
                fi
                sleep 0.5
        done
fi

# Containers that killed test runs left behind (only theirs: dockerd may be shared).
python3 "$(dirname "$0")/remove_killed.py"

have() { docker image inspect "$1" >/dev/null 2>&1; }
if have "$IMAGE" && have "$BASH_IMAGE"; then
        echo "setup: $IMAGE and $BASH_IMAGE present"
        exit 0
fi

BB=$(command -v busybox || true)
[ -n "$BB" ] || { echo "setup: busybox-static is not installed" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/tmp" "$root/etc" \
        "$root/root" "$root/proc" "$root/sys" "$root/dev" "$root/work"
cp "$BB" "$root/bin/busybox"
for a in $("$BB" --list); do
        [ "$a" = busybox ] && continue
        ln -sf /bin/busybox "$root/bin/$a"
done
chmod 1777 "$root/tmp"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
echo 'nogroup:x:65534:' >>"$root/etc/group"
build_image() {
        tar -C "$root" -c . | docker import -c 'CMD ["/bin/sh"]' \
                -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' - "$1"
        echo "setup: built $1"
}
have "$IMAGE" || build_image "$IMAGE"
if ! have "$BASH_IMAGE"; then
        [ -x /bin/bash-static ] || { echo "setup: bash-static is not installed" >&2; exit 1; }
        cp /bin/bash-static "$root/bin/bash"
        build_image "$BASH_IMAGE"
fi
