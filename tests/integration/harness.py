"""Integration test harness: the real sandboxd on a private socket, and a JSON-RPC client.

The daemon is started with a private socket and state directory; readiness is READY=1 on a
test NOTIFY_SOCKET (no sleeps). Teardown sends SIGTERM and expects exit status 0.
"""
import base64
import fcntl
import functools
import itertools
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

SANDBOXD = os.environ.get("SANDBOXD_BIN", os.path.abspath("build/std/sandboxd"))
SANDBOXCTL = os.environ.get("SANDBOXCTL_BIN", os.path.abspath("build/std/sandboxctl"))


class Daemon:
    """One sandboxd process with its own socket, state directory and notify socket."""

    # Subclasses with their own __init__ (test_systemd's Launched) start from these.
    stopped_log = None
    run_lock = None

    def __init__(self, config=None, args=(), env=None, state_dir=None, uid=None):
        """state_dir: use this state directory (kept after stop, e.g. for a restart test)
        instead of a fresh one inside the daemon's temporary directory. uid: run the daemon
        as this uid (and its own gid), as a user service would (the test must be root)."""
        self.dir = tempfile.mkdtemp(prefix="sbxtest-")
        # Held while this test process lives: when a killed run leaves containers labelled
        # with the state directory, tests/docker/remove_killed.py sees the lock free.
        self.run_lock = open(os.path.join(self.dir, "lock"), "w")
        fcntl.flock(self.run_lock, fcntl.LOCK_EX)
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "run", "sandboxd.sock")
        self.state = state_dir if state_dir is not None else os.path.join(self.dir, "state")
        self.notify_path = os.path.join(self.dir, "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notifications = []
        cmd = [SANDBOXD, "--socket", self.socket, "--state-dir", self.state]
        if config is not None:
            self.config = os.path.join(self.dir, "sandboxd.conf")
            with open(self.config, "w") as f:
                f.write(config)
            cmd += ["--config", self.config]
        cmd += list(args)
        e = dict(os.environ)
        # Never the host's /etc/sandboxd/sandboxd.conf: a test without a config gets defaults.
        e["SANDBOXD_CONFIG"] = os.path.join(self.dir, "no-such.conf")
        e["NOTIFY_SOCKET"] = self.notify_path
        e.pop("LISTEN_FDS", None)
        e.update(env or {})
        if uid is not None:
            os.chown(self.dir, uid, -1)
            os.chmod(self.notify_path, 0o777)
            cmd = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] + cmd
        self.log = open(os.path.join(self.dir, "daemon.log"), "w+")
        self.proc = subprocess.Popen(cmd, env=e, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_notify("READY=1", 20)
        except BaseException:
            # Not ready: nobody will stop it (the caller gets no Daemon), so it goes now.
            self.proc.kill()
            self.proc.wait()
            self.notify.close()
            self.log.close()
            shutil.rmtree(self.dir, ignore_errors=True)
            self.run_lock.close()
            raise

    def wait_notify(self, what, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            for n in self.notifications:
                if what in n:
                    return n
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError("no %r from sandboxd (exit %s); log:\n%s"
                                     % (what, self.proc.poll(), self.read_log()))
            r, _, _ = select.select([self.notify], [], [], left)
            if r:
                self.notifications.append(self.notify.recv(4096).decode())

    def read_log(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def client(self, **kw):
        return Client(self.socket, **kw)

    def stop(self, expect=0, timeout=30):
        """SIGTERM, then the exit status must be expect; returns the log. A second stop
        (a class cleanup after the class's own) returns the log again."""
        if self.stopped_log is not None:
            return self.stopped_log
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("sandboxd did not stop within %ss" % timeout)
        self.notify.setblocking(False)
        while True:
            try:
                self.notifications.append(self.notify.recv(4096).decode())
            except BlockingIOError:
                break
        self.notify.close()
        log = self.stopped_log = self.read_log()
        self.log.close()
        if rc != expect:
            raise AssertionError("sandboxd exited %s, expected %s; log:\n%s" % (rc, expect, log))
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.run_lock is not None:
            self.run_lock.close()
        return log


class RpcError(Exception):
    def __init__(self, error):
        super().__init__("%s: %s" % (error.get("code"), error.get("message")))
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class Client:
    """Blocking NDJSON JSON-RPC client that keeps notifications and answers server requests."""

    def __init__(self, path, on_request=None, timeout=60, hello=None):
        """hello: send daemon.hello (role interactive) first; by default when on_request is
        given, since only a connection that said hello is asked for approvals."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.ids = itertools.count(1)
        self.notifications = []
        self.responses = {}
        self.on_request = on_request
        self.timeout = timeout
        if hello if hello is not None else on_request is not None:
            self.call("daemon.hello", {"client": "harness", "role": "interactive"})

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def _read_message(self, timeout):
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.sock], [], [], timeout)
            if not r:
                raise TimeoutError("no message within %ss" % timeout)
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("sandboxd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def read(self, timeout=None):
        """Next message of any kind, dispatching server requests."""
        msg = self._read_message(self.timeout if timeout is None else timeout)
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            self._answer(msg)
        return msg

    def _answer(self, msg):
        if self.on_request is None:
            result = {"decision": "deny"}
        else:
            result = self.on_request(msg)
        if result is not None:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def wait_response(self, rid, timeout=None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while rid not in self.responses:
            msg = self.read(max(0.01, deadline - time.monotonic()))
            if isinstance(msg, list):
                for m in msg:
                    self.responses[m.get("id")] = m
            elif "method" in msg and "id" not in msg:
                self.notifications.append(msg)
            elif "id" in msg and "method" not in msg:
                self.responses[msg["id"]] = msg
        return self.responses.pop(rid)

    def request(self, method, params=None, timeout=None):
        rid = next(self.ids)
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_response(rid, timeout)

    def call(self, method, params=None, timeout=None):
        resp = self.request(method, params, timeout)
        if "error" in resp:
            raise RpcError(resp["error"])
        return resp["result"]

    def output(self, exec_id, stream="stdout"):
        out = [n["params"] for n in self.notifications
               if n["method"] == "exec.output" and n["params"]["exec_id"] == exec_id
               and n["params"]["stream"] == stream]
        return "".join(p["data"] for p in out)


def needs_root(reason):
    """Decorator of a test class or a test method that must run as root. Outside CI it
    skips when not root; in CI (SANDBOXD_CI=1, which runs as root) not being root fails the
    class or the test, so a skip is never passed off as a pass."""
    def wrap(obj):
        if os.geteuid() == 0:
            return obj
        if os.environ.get("SANDBOXD_CI") != "1":
            return unittest.skip(reason)(obj)

        def refuse(*args, **kw):
            raise AssertionError("SANDBOXD_CI=1 but not root (%s): run as root" % reason)
        if isinstance(obj, type):
            obj.setUpClass = classmethod(refuse)
            return obj
        return functools.wraps(obj)(refuse)
    return wrap


def class_resource(cls, start, *args, stop="stop", **kw):
    """Starts something a test class owns besides its tests (an extra server, a fake
    service, a relay, the class's daemon, a directory) and guarantees its teardown:
    start(*args, **kw) returns it, and stop (the name of its method, or a function given it)
    becomes a class cleanup. unittest runs class cleanups after tearDownClass, and also when
    setUpClass fails after this call, most recent first: whatever fails halfway, everything
    started so far goes, and what was started later (a daemon that uses a server) goes
    first. Returns the resource."""
    r = start(*args, **kw)
    if isinstance(stop, str):
        cls.addClassCleanup(getattr(r, stop))
    else:
        cls.addClassCleanup(stop, r)
    return r


def b64(s):
    return base64.b64encode(s if isinstance(s, bytes) else s.encode()).decode()


def workdir_sandbox(test, client, **spec):
    """A sandbox whose workdir is a fresh host directory (removed after the test), and that
    directory. Files a test shares with its commands live there: the sandbox sees the workdir
    at the same path whatever its isolation (an isolated one has a /tmp of its own). The
    sandbox ends with the test's daemon."""
    d = tempfile.mkdtemp(prefix="sbxwd-")
    test.addCleanup(shutil.rmtree, d, True)
    sb = client.call("sandbox.create", dict(spec, workdir=d))
    return sb, d


def assert_taken_back_whole(test, client, exec_id, stdout, exit_code=0):
    """process.wait on an exec a restarted daemon took back: it exited with exit_code (not
    lost), its stdout from offset 0 is exactly stdout and its stderr is empty."""
    w = client.call("process.wait", {"exec_id": exec_id, "timeout_ms": 20000}, timeout=60)
    test.assertEqual((w["state"], w.get("exit_code"), w.get("lost")),
                     ("exited", exit_code, None), w)
    test.assertEqual(client.call("process.read", {"exec_id": exec_id})["data"], stdout)
    test.assertEqual(client.call("process.read", {"exec_id": exec_id, "stream": "stderr"})
                     ["data"], "")


class DaemonTest(unittest.TestCase):
    """One daemon per test class."""

    config = None

    @classmethod
    def setUpClass(cls):
        # A class cleanup too: a subclass's setUpClass that fails after this leaves nothing.
        cls.daemon = class_resource(cls, Daemon, cls.config)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def setUp(self):
        self.c = self.daemon.client()

    def tearDown(self):
        self.c.close()

    def assertRpcError(self, code, method, params=None, param=None):
        with self.assertRaises(RpcError) as cm:
            self.c.call(method, params)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        if param is not None:
            self.assertEqual((cm.exception.data or {}).get("param"), param,
                             cm.exception.message)
        return cm.exception


_uniq = itertools.count(1)


def uniq_secs(base):
    """A sleep duration no other test run on this host uses ("100.004217000001"), so that
    pgrep/pkill -f of it find only this test's processes."""
    return "%d.%06d%06d" % (base, os.getpid() % 1000000, next(_uniq))
