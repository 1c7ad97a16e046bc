"""Removes the docker containers that killed test runs left behind, and nothing else.

A test run's containers carry the label sandboxd.instance=/tmp/sbxtest-XXX[/...]: the state
directory of an integration test daemon (tests/integration/harness.py), or check_docker's run
directory. The run holds an flock on /tmp/sbxtest-XXX/lock for as long as it lives (the kernel
drops it however the run ends), and an integration daemon has its state directory on its
command line. A container is removed only when its label is of that form, the lock is free (or
gone) and no process has the label as an argument: its run was killed. dockerd is shared, so
containers of runs still going, and every other container, stay.

Run by tests/docker/setup.sh; prints what it removed.
"""
import fcntl
import os
import stat
import subprocess
import sys

PREFIX = "/tmp/sbxtest-"


def lock_held(run_dir):
    """True when a live run holds run_dir/lock (a regular file of ours, not a link)."""
    try:
        fd = os.open(os.path.join(run_dir, "lock"),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)


def arguments():
    """Every argument of every process (a daemon's --state-dir value among them)."""
    args = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    args.update(f.read().split(b"\0"))
            except OSError:
                pass  # gone meanwhile
    return args


def left_behind(listing, args):
    """The ids in listing ("ID LABEL" lines) whose run is gone."""
    ids = []
    for line in listing.splitlines():
        cid, _, label = line.partition(" ")
        if not label.startswith(PREFIX):
            continue
        run_dir = PREFIX + label[len(PREFIX):].split("/")[0]
        if not lock_held(run_dir) and label.encode() not in args:
            ids.append((cid, label))
    return ids


def main():
    p = subprocess.run(["docker", "ps", "-a", "--filter", "label=sandboxd.instance",
                        "--format", '{{.ID}} {{.Label "sandboxd.instance"}}'],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print("remove_killed: docker ps failed: %s" % p.stderr.strip(), file=sys.stderr)
        return 1
    for cid, label in left_behind(p.stdout, arguments()):
        r = subprocess.run(["docker", "rm", "-f", cid], capture_output=True, text=True)
        if r.returncode == 0:
            print("setup: removed container %s, left by a killed test run (%s)" % (cid, label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
