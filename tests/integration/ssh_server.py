"""A real sshd for the ssh backend's tests, and a TCP relay in front of it.

Sshd: Debian's openssh-server on 127.0.0.1, on a free port (never port 22, never the system's
sshd or its configuration), with its own sshd_config and host and user keys generated for the
run. The tests log in as root (CI runs as root; sshd can only log in as root when it runs as
root), and everything remote (the installed agent, runtime directories) goes into the test's
directories, so nothing of the host is touched.

Relay: 127.0.0.1:PORT -> sshd, in a thread: cut() resets every connection (RST), blackhole()
stops forwarding on the current ones without closing them (no RST, no FIN: a dead network
path), close() stops accepting too. New connections go through unless closed.
"""
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

SSHD = "/usr/sbin/sshd"
SETUP_HINT = "install openssh-server and openssh-client (scripts/install-deps.sh --test)"


def require_sshd():
    """Fails (never skips) when sshd cannot run here."""
    if not os.access(SSHD, os.X_OK) or not shutil.which("ssh-keygen"):
        raise AssertionError("%s or ssh-keygen missing: %s" % (SSHD, SETUP_HINT))
    if os.geteuid() != 0:
        raise AssertionError("the ssh tests log in as root over a private sshd: run them as "
                             "root (CI does)")


def kill_under(path):
    """Kills the processes whose executable lies under path (agents a test installed there and
    left running, e.g. after a failure): by pid, nothing else is touched."""
    for pid in os.listdir("/proc"):
        try:
            exe = os.readlink("/proc/%s/exe" % pid)
        except (OSError, ValueError):
            continue
        if pid.isdigit() and exe.startswith(path.rstrip("/") + "/"):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def keygen(path, comment="sandboxd-test"):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
                   check=True)
    os.chmod(path, 0o600)


def free_port():
    """A port free a moment ago: whoever binds it next must see that it got it (Sshd does;
    another test process may take it first)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def closed_port(owner):
    """A port on 127.0.0.1 that refuses connections and that no other process can take while
    owner (a test, or a test class) lives: bound, never listening."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    (owner.addClassCleanup if isinstance(owner, type) else owner.addCleanup)(s.close)
    return s.getsockname()[1]


def wait_port(port, proc=None, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise AssertionError("sshd exited with %s" % proc.returncode)
            if time.monotonic() > deadline:
                raise AssertionError("nothing listens on 127.0.0.1:%d" % port)
            time.sleep(0.02)


class Sshd:
    """One sshd with its own keys and configuration (extra: more sshd_config lines; env: more
    variables for its sessions). Sessions get XDG_RUNTIME_DIR in the server's directory, so
    the agents' runtime directories go there too, not into the host's /tmp/sandboxd-UID."""

    def __init__(self, extra="", env=None):
        require_sshd()
        self.dir = tempfile.mkdtemp(prefix="sbxsshd-")
        os.chmod(self.dir, 0o755)
        xdg = os.path.join(self.dir, "xdg")
        os.mkdir(xdg, 0o700)
        setenv = dict(env or {}, XDG_RUNTIME_DIR=xdg)
        self.host_key = os.path.join(self.dir, "host_ed25519")
        self.user_key = os.path.join(self.dir, "user_ed25519")
        self.other_key = os.path.join(self.dir, "other_ed25519")
        for k in (self.host_key, self.user_key, self.other_key):
            keygen(k)
        self.authorized = os.path.join(self.dir, "authorized_keys")
        with open(self.authorized, "w") as f:
            f.write(open(self.user_key + ".pub").read())
        os.chmod(self.authorized, 0o644)
        self.config = os.path.join(self.dir, "sshd_config")
        self.settings = (self.host_key, self.dir, self.authorized,
                         " ".join("%s=%s" % kv for kv in sorted(setenv.items())), extra)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        self.log = open(os.path.join(self.dir, "sshd.log"), "w+")
        # A free port another test process takes first: sshd says so and exits; another.
        for _ in range(5):
            if self.listen(free_port()):
                break
        wait_port(self.port, self.proc)

    def listen(self, port):
        """Starts sshd on port: True once it listens (it wrote its pid file, which it does
        after binding), False when the port was taken meanwhile."""
        self.port = port
        pidfile = os.path.join(self.dir, "sshd.pid")
        with open(self.config, "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile %s/sshd.pid\n"
                    "AuthorizedKeysFile %s\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
                    "UsePAM no\nStrictModes no\nMaxStartups 100\nLogLevel ERROR\nSetEnv %s\n%s\n"
                    % ((port,) + self.settings))
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not os.path.exists(pidfile):
            if self.proc.poll() is not None:
                self.log.flush()
                if "Address already in use" in open(self.log.name).read():
                    return False
                raise AssertionError("sshd exited with %s" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise AssertionError("sshd wrote no pid file within 20 s")
            time.sleep(0.01)
        return True

    def known_hosts_line(self, port=None):
        """The known_hosts line of this server's key as seen on port (default its own)."""
        kind, key = open(self.host_key + ".pub").read().split()[:2]
        return "[127.0.0.1]:%d %s %s\n" % (port or self.port, kind, key)

    def new_host_key(self):
        """Replaces the host key (a reinstalled host, or an attacker) and reloads sshd."""
        os.unlink(self.host_key)
        os.unlink(self.host_key + ".pub")
        keygen(self.host_key)
        self.proc.send_signal(signal.SIGHUP)  # sshd re-executes itself with the new key
        # Until the new key is served: the old listener may still answer for a moment.
        want = open(self.host_key + ".pub").read().split()[1]
        deadline = time.monotonic() + 20
        while True:
            wait_port(self.port, self.proc)
            got = subprocess.run(["ssh-keyscan", "-t", "ed25519", "-p", str(self.port),
                                  "127.0.0.1"], capture_output=True, text=True, timeout=10)
            if want in got.stdout:
                return
            if time.monotonic() > deadline:
                raise AssertionError("sshd does not serve its new host key")
            time.sleep(0.05)

    def session_pids(self):
        """The sshd processes serving connections (children of the listener)."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def kill_sessions(self):
        """Kills every process serving a connection: the links drop."""
        pids = self.session_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def ssh(self, command):
        """Runs command over a connection of its own (the ssh CLI): a second channel."""
        kh = os.path.join(self.dir, "cli_known_hosts")
        with open(kh, "w") as f:
            f.write(self.known_hosts_line())
        return subprocess.run(
            ["ssh", "-p", str(self.port), "-i", self.user_key, "-o", "BatchMode=yes",
             "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + kh,
             "-o", "IdentitiesOnly=yes", "root@127.0.0.1", command],
            capture_output=True, text=True, timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.kill_sessions()
        kill_under(self.dir)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Relay(threading.Thread):
    """127.0.0.1:self.port -> 127.0.0.1:target."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self.target = target
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.pairs = []  # [client, server]
        self.holes = []  # black-holed pairs: open, never read or written
        self.accepting = True
        self.held = False  # hold_replies(): the server's bytes wait in its socket
        self.wake_r, self.wake_w = socket.socketpair()
        self.stopped = False
        self.accepted = 0
        self.start()

    def _wake(self):
        self.wake_w.send(b"x")

    def run(self):
        while not self.stopped:
            with self.lock:
                socks = [s for p in self.pairs for s in (p[:1] if self.held else p)]
                if self.accepting:
                    socks.append(self.lsock)
            r, _, _ = select.select(socks + [self.wake_r], [], [], 1)
            if self.wake_r in r:
                self.wake_r.recv(4096)
            for s in r:
                if s is self.lsock:
                    self._accept()
                elif s is not self.wake_r:
                    self._forward(s)

    def _accept(self):
        try:
            c, _ = self.lsock.accept()
            u = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            return
        with self.lock:
            self.pairs.append([c, u])
            self.accepted += 1

    def _forward(self, s):
        with self.lock:
            pair = next((p for p in self.pairs if s in p), None)
        if pair is None:
            return
        other = pair[1] if s is pair[0] else pair[0]
        try:
            data = s.recv(65536)
            if data:
                other.sendall(data)
                return
        except OSError:
            pass
        with self.lock:
            if pair in self.pairs:
                self.pairs.remove(pair)
        for x in pair:
            x.close()

    @staticmethod
    def _reset(sock):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()

    def cut(self):
        """Every current connection is reset; new ones pass."""
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for p in pairs:
            for s in p:
                self._reset(s)
        self._wake()
        return len(pairs)

    def blackhole(self):
        """Current connections stay open but nothing passes any more; new ones pass."""
        with self.lock:
            self.holes += self.pairs
            n = len(self.pairs)
            self.pairs = []
        self._wake()
        return n

    def holes_open(self):
        """How many black-holed connections are still open (never closed by the relay)."""
        return sum(1 for p in self.holes if p[0].fileno() >= 0 and p[1].fileno() >= 0)

    def hold_replies(self, on):
        """On: what clients send still passes, what the server sends waits (unread) until
        off; the connections stay open."""
        with self.lock:
            self.held = on
        self._wake()

    def set_accepting(self, on):
        """Off: new connections wait in the listen backlog, nothing is forwarded."""
        with self.lock:
            self.accepting = on
        self._wake()

    def stop(self):
        self.stopped = True
        self._wake()
        self.join(5)
        self.cut()
        for p in self.holes:
            for s in p:
                s.close()
        self.lsock.close()


def serve():
    """For bench/bench_ssh.c: starts an Sshd, prints "PORT USER_KEY KNOWN_HOSTS DIR" on one
    line, and stops it when stdin closes."""
    import sys
    sshd = Sshd()
    try:
        kh = os.path.join(sshd.dir, "known_hosts")
        with open(kh, "w") as f:
            f.write(sshd.known_hosts_line())
        print(sshd.port, sshd.user_key, kh, sshd.dir, flush=True)
        sys.stdin.read()
    finally:
        sshd.stop()


if __name__ == "__main__":
    serve()
