"""systemd integration: socket activation, the notify protocol, the watchdog, RLIMIT_NOFILE,
$STATE_DIRECTORY/$RUNTIME_DIRECTORY, --check-config, daemon.info and shutdown.

The daemon is started through `sh -c` where a test needs LISTEN_PID or WATCHDOG_PID to name
the daemon's own pid ($$ of the shell that execs it), and with sockets made here as fd 3, 4, ...
"""
import hashlib
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import harness
from harness import SANDBOXD, SANDBOXCTL, Daemon, RpcError

# Exports each variable named in $SBX_PIDVARS with the shell's pid, which is the daemon's pid
# after exec. The fd redirections are appended per test.
LAUNCH = ('for v in $SBX_PIDVARS; do export "$v=$$"; done; unset SBX_PIDVARS; '
          'exec "$0" "$@"')


def clean_env(extra=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("LISTEN_", "WATCHDOG_", "NOTIFY_")) and k not in
         ("SANDBOXD_SOCKET", "STATE_DIRECTORY", "RUNTIME_DIRECTORY")}
    e.update(extra or {})
    return e


def listening_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    return s


class Launched(Daemon):
    """sandboxd started by argv (default: this build's daemon) with a test NOTIFY_SOCKET.

    fds: sockets handed to the daemon as fd 3, 4, ...; pidvars: variables set to the daemon's
    pid; args: daemon arguments; ready: wait for READY=1 (else the caller waits)."""

    def __init__(self, args=(), env=None, fds=(), pidvars=(), ready=True, config=None,
                 prefix=(), preexec_fn=None):
        self.dir = tempfile.mkdtemp(prefix="sbxsd-")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "run", "sandboxd.sock")
        self.state = os.path.join(self.dir, "state")
        self.notify_path = os.path.join(self.dir, "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notifications = []
        self.config = None
        args = list(args)
        if config is not None:
            self.config = os.path.join(self.dir, "sandboxd.conf")
            with open(self.config, "w") as f:
                f.write(config)
            args += ["--config", self.config]
        redir = ""
        for i, s in enumerate(fds):
            n = s.fileno()
            if n != 3 + i:
                redir += " %d<&%d %d<&-" % (3 + i, n, n)
        cmd = ["sh", "-c", LAUNCH + redir] + list(prefix) + [SANDBOXD] + args
        e = clean_env(env)
        e["NOTIFY_SOCKET"] = self.notify_path
        e["SBX_PIDVARS"] = " ".join(pidvars)
        self.log = open(os.path.join(self.dir, "daemon.log"), "w+")
        self.proc = subprocess.Popen(cmd, env=e, stdout=self.log, stderr=subprocess.STDOUT,
                                     pass_fds=[s.fileno() for s in fds],
                                     preexec_fn=preexec_fn)
        if ready:
            self.wait_notify("READY=1", 20)

    def drain(self, seconds):
        """Notifications that arrive within the next `seconds`."""
        got = []
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return got
            r, _, _ = select.select([self.notify], [], [], left)
            if r:
                m = self.notify.recv(4096).decode()
                got.append(m)
                self.notifications.append(m)

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for_path(path, timeout=10):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError("%s did not appear" % path)
        time.sleep(0.02)


# ---- socket activation ------------------------------------------------------------------


class SocketActivation(unittest.TestCase):
    def test_systemd_socket_activate_starts_on_first_connection(self):
        """The real tool: the daemon is exec'd on the first connection, which it serves."""
        tmp = tempfile.mkdtemp(prefix="sbxsd-sa-")
        path = os.path.join(tmp, "activated.sock")
        d = Launched(["--state-dir", os.path.join(tmp, "state")], ready=False,
                     prefix=["systemd-socket-activate", "-E", "NOTIFY_SOCKET", "-l", path])
        try:
            wait_for_path(path)
            self.assertFalse(any("READY" in n for n in d.drain(0.2)),
                             "the daemon must not run before the first connection")
            c = harness.Client(path)
            info = c.call("daemon.info", timeout=20)
            d.wait_notify("READY=1")
            self.assertEqual(info["socket"], path, "daemon.info reports the real socket")
            self.assertEqual(info["pid"], d.proc.pid)
            r = c.call("exec", {"command": "echo activated"})
            self.assertEqual(r["stdout"], "activated\n")
            c.close()
            log = d.stop()
            self.assertIn("(from systemd)", log)
            self.assertIn("STOPPING=1", d.notifications)
            # systemd owns the socket file: the daemon must not unlink it.
            self.assertTrue(os.path.exists(path), "the passed socket's file was removed")
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_passed_fd_with_listen_pid(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-fd-")
        path = os.path.join(tmp, "passed.sock")
        ls = listening_unix(path)
        d = Launched(["--state-dir", os.path.join(tmp, "state")], fds=[ls],
                     env={"LISTEN_FDS": "1"}, pidvars=["LISTEN_PID"])
        ls.close()
        try:
            c = harness.Client(path)
            info = c.call("daemon.info")
            self.assertEqual(info["socket"], path)
            self.assertEqual(c.call("exec", {"command": "echo ok"})["stdout"], "ok\n")
            # LISTEN_* never reach the commands.
            env = c.call("exec", {"command": "env"})["stdout"]
            for var in ("LISTEN_FDS", "LISTEN_PID", "NOTIFY_SOCKET", "WATCHDOG_USEC"):
                self.assertNotIn(var, env)
            c.close()
            self.assertIn("(from systemd)", d.stop())
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_listen_pid_of_another_process_is_ignored(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-fd-")
        ls = listening_unix(os.path.join(tmp, "passed.sock"))
        own = os.path.join(tmp, "own", "sandboxd.sock")
        d = Launched(["--state-dir", os.path.join(tmp, "state")], fds=[ls],
                     env={"LISTEN_FDS": "1", "LISTEN_PID": "1", "SANDBOXD_SOCKET": own})
        ls.close()
        try:
            info = harness.Client(own).call("daemon.info")
            self.assertEqual(info["socket"], own)
            self.assertNotIn("(from systemd)", d.stop())
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_socket_option_and_env_win_over_systemd(self):
        for how in ("option", "env"):
            with self.subTest(how=how):
                tmp = tempfile.mkdtemp(prefix="sbxsd-fd-")
                ls = listening_unix(os.path.join(tmp, "passed.sock"))
                own = os.path.join(tmp, "own", "sandboxd.sock")
                args = ["--state-dir", os.path.join(tmp, "state")]
                env = {"LISTEN_FDS": "1"}
                if how == "option":
                    args += ["--socket", own]
                else:
                    env["SANDBOXD_SOCKET"] = own
                d = Launched(args, fds=[ls], env=env, pidvars=["LISTEN_PID"])
                passed = "socket:[%d]" % os.fstat(ls.fileno()).st_ino
                ls.close()
                try:
                    self.assertEqual(harness.Client(own).call("daemon.info")["socket"], own)
                    fds = "/proc/%d/fd" % d.proc.pid
                    links = []
                    for f in os.listdir(fds):
                        try:
                            links.append(os.readlink(os.path.join(fds, f)))
                        except FileNotFoundError:
                            pass  # closed meanwhile (the listdir fd itself)
                    self.assertNotIn(passed, links, "the ignored socket is closed")
                    log = d.stop()
                    self.assertNotIn("(from systemd)", log)
                    self.assertIn("ignoring 1 socket(s) passed by systemd", log)
                finally:
                    d.cleanup()
                    shutil.rmtree(tmp, ignore_errors=True)

    def refused(self, fds, listen_fds, expect):
        tmp = tempfile.mkdtemp(prefix="sbxsd-bad-")
        d = Launched(["--state-dir", os.path.join(tmp, "state")], fds=fds,
                     env={"LISTEN_FDS": str(listen_fds)}, pidvars=["LISTEN_PID"], ready=False)
        for s in fds:
            s.close()
        try:
            rc = d.proc.wait(20)
            log = d.read_log()
            self.assertEqual(rc, 1, log)
            self.assertRegex(log, expect)
            d.drain(0)
            self.assertFalse(any("READY=1" in n for n in d.notifications))
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_refuses_unix_datagram_socket(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.refused([s], 1, r"fd 3\) is a datagram socket; sandboxd needs a listening Unix "
                             r"stream socket")

    def test_refuses_udp_socket(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        self.refused([s], 1, r"fd 3\) is an IP socket")

    def test_refuses_non_listening_stream_socket(self):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        b.close()
        self.refused([a], 1, r"fd 3\) is a stream socket that is not listening")

    def test_refuses_two_sockets(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-two-")
        try:
            s1 = listening_unix(os.path.join(tmp, "1.sock"))
            s2 = listening_unix(os.path.join(tmp, "2.sock"))
            self.refused([s1, s2], 2, r"systemd passed 2 sockets \(LISTEN_FDS=2\); sandboxd "
                                      r"takes exactly one")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# ---- notify protocol ----------------------------------------------------------------------


def wait_new(d, n, what, timeout=10):
    """The first notification at index >= n that contains what (reads more as needed)."""
    deadline = time.monotonic() + timeout
    while True:
        for x in d.notifications[n:]:
            if what in x:
                return x
        left = deadline - time.monotonic()
        if left <= 0 or d.proc.poll() is not None:
            raise AssertionError("no %r after notification %d: %r; log:\n%s"
                                 % (what, n, d.notifications[n:], d.read_log()))
        r, _, _ = select.select([d.notify], [], [], left)
        if r:
            d.notifications.append(d.notify.recv(4096).decode())


def status_counts(msg):
    m = re.search(r"STATUS=(\d+) connections, (\d+) sandboxes, (\d+) processes running", msg)
    return tuple(int(x) for x in m.groups()) if m else None


class Notify(unittest.TestCase):
    def test_ready_only_after_probes_and_socket_accepts(self):
        d = Daemon()
        try:
            # Connect right after READY=1: the socket must accept at once.
            self.assertEqual(d.client().call("daemon.hello")["server"], "sandboxd")
            log = d.read_log()
            ready_at = log.index("sandboxd: ready")
            for name in ("local", "docker", "ssh", "singularity", "modal", "daytona"):
                self.assertLess(log.index("backend %s: " % name), ready_at,
                                "backend %s probed before READY" % name)
            self.assertEqual(sum("READY=1" in n for n in d.notifications), 1)
        finally:
            d.stop()

    def test_status_reload_and_stopping(self):
        d = Daemon()
        try:
            st = d.wait_notify("STATUS=")
            self.assertIsNotNone(status_counts(st), st)
            c1, c2 = d.client(), d.client()
            c1.call("exec", {"command": "sleep 60", "background": True})
            n = len(d.notifications)
            d.proc.send_signal(signal.SIGHUP)
            wait_new(d, n, "READY=1")
            after = d.notifications[n:]
            kinds = [x.split("=")[0] for x in after]
            self.assertIn("RELOADING", kinds)
            reloading = kinds.index("RELOADING")
            self.assertRegex(after[reloading], r"^RELOADING=1\nMONOTONIC_USEC=\d+$")
            ready = kinds.index("READY", reloading)
            statuses = [status_counts(x) for x in after[reloading:ready] if x.startswith("STATUS")]
            self.assertTrue(statuses, after)
            self.assertEqual(statuses[-1][0], 2, "two connections")
            self.assertGreaterEqual(statuses[-1][1], 1, "the default sandbox")
            self.assertEqual(statuses[-1][2], 1, "one running process")
            c1.close()
            c2.close()
        finally:
            d.stop()
        self.assertIn("STOPPING=1", d.notifications)
        stopping = d.notifications.index("STOPPING=1")
        self.assertNotIn("READY=1", d.notifications[stopping:])

    def test_reload_errors_stay_in_status_until_fixed(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-rl-")
        rules = os.path.join(tmp, "policy.rules")
        good = b"deny no-foo cmd=foo -- no foo\n"
        with open(rules, "wb") as f:
            f.write(good)
        d = Daemon("[policy]\nrules_file = %s\n" % rules)
        try:
            c = d.client()
            sha = c.call("daemon.info")["policy"]["sha256"]
            self.assertEqual(sha, hashlib.sha256(good).hexdigest())
            # A bad policy file: the old policy stays, STATUS and the log say so.
            with open(rules, "w") as f:
                f.write("deny no-foo cmd=foo\nnonsense here\n")
            n = len(d.notifications)
            d.proc.send_signal(signal.SIGHUP)
            st = wait_new(d, n, "policy reload failed")
            self.assertIn("%s:2:" % rules, st)
            self.assertIn("policy reload failed", d.read_log())
            info = c.call("daemon.info")
            self.assertEqual(info["policy"]["sha256"], sha)
            self.assertIn("%s:2:" % rules, info["policy"]["error"])
            self.assertEqual(c.call("policy.check", {"command": "foo"})["verdict"], "deny")
            # A bad configuration file: same, with the configuration's file and line.
            with open(d.config, "w") as f:
                f.write("[policy]\nrules_file = %s\n[limits]\nmax_connections = many\n" % rules)
            n = len(d.notifications)
            d.proc.send_signal(signal.SIGHUP)
            st = wait_new(d, n, "config reload failed")
            self.assertIn("%s:4:" % d.config, st)
            self.assertIn("previous configuration kept", st)
            wait_new(d, n, "READY=1")
            self.assertRegex(d.read_log(), r"configuration reload failed, keeping the previous "
                                           r"one: .*sandboxd.conf:4:")
            # The error stays in the periodic status line.
            n = len(d.notifications)
            st = wait_new(d, n, "STATUS=", 8)
            self.assertIn("config reload failed", st)
            # Fixed files: the errors disappear and the new policy is in force.
            with open(rules, "wb") as f:
                f.write(b"# nothing\n")
            with open(d.config, "w") as f:
                f.write("[policy]\nrules_file = %s\n" % rules)
            n = len(d.notifications)
            d.proc.send_signal(signal.SIGHUP)
            wait_new(d, n, "READY=1")
            st = [x for x in d.notifications[n:] if x.startswith("STATUS=")][-1]
            self.assertNotIn("failed", st)
            info = c.call("daemon.info")
            self.assertNotIn("error", info["policy"])
            self.assertEqual(info["policy"]["sha256"], hashlib.sha256(b"# nothing\n").hexdigest())
            c.close()
        finally:
            d.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_clients_get_daemon_stopping(self):
        d = Daemon()
        c = d.client()
        c.call("daemon.hello")
        d.proc.send_signal(signal.SIGTERM)
        msgs = []
        try:
            while True:
                msgs.append(c.read(timeout=20))
        except (ConnectionError, TimeoutError):
            pass
        # The connection closes before the daemon has exited: a second SIGTERM from stop()
        # would meet the default action (exit -15), so wait for the first to finish.
        d.proc.wait(timeout=30)
        d.stop()
        stopping = [m for m in msgs if m.get("method") == "daemon.stopping"]
        self.assertEqual(len(stopping), 1, msgs)
        self.assertNotIn("id", stopping[0])
        self.assertIn("reason", stopping[0]["params"])


class Watchdog(unittest.TestCase):
    def count_pings(self, d, seconds):
        return sum(n == "WATCHDOG=1" for n in d.drain(seconds))

    def test_pings_at_half_the_period_and_stop_when_the_loop_is_stuck(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-wd-")
        d = Launched(["--socket", os.path.join(tmp, "s.sock"), "--state-dir",
                      os.path.join(tmp, "state")], env={"WATCHDOG_USEC": "400000"},
                     pidvars=["WATCHDOG_PID"])
        try:
            n = self.count_pings(d, 2.0)
            self.assertTrue(7 <= n <= 13, "%d pings in 2 s at WATCHDOG_USEC=400000" % n)
            # A stopped (wedged) loop sends nothing.
            d.proc.send_signal(signal.SIGSTOP)
            deadline = time.monotonic() + 5
            while open("/proc/%d/stat" % d.proc.pid).read().split(") ")[1][0] != "T":
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            d.drain(0.05)
            self.assertEqual(self.count_pings(d, 1.0), 0, "pings while the daemon is stopped")
            d.proc.send_signal(signal.SIGCONT)
            self.assertGreaterEqual(self.count_pings(d, 1.0), 2, "pings resume")
            # The watchdog variables never reach the commands.
            c = harness.Client(os.path.join(tmp, "s.sock"))
            env = c.call("exec", {"command": "env"})["stdout"]
            self.assertNotIn("WATCHDOG", env)
            c.close()
            d.stop()
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_watchdog_for_another_pid_is_ignored(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-wd-")
        d = Launched(["--socket", os.path.join(tmp, "s.sock"), "--state-dir",
                      os.path.join(tmp, "state")],
                     env={"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"})
        try:
            self.assertEqual(self.count_pings(d, 1.0), 0)
            d.stop()
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)


# ---- limits and directories ---------------------------------------------------------------


def proc_nofile(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no Max open files line")


class Nofile(unittest.TestCase):
    def test_daemon_raises_soft_limit_children_get_the_original(self):
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        soft = 256
        self.assertGreater(hard, soft, "the test needs a hard RLIMIT_NOFILE above 256")
        tmp = tempfile.mkdtemp(prefix="sbxsd-nf-")
        path = os.path.join(tmp, "s.sock")
        d = Launched(["--socket", path, "--state-dir", os.path.join(tmp, "state")],
                     preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
        try:
            self.assertEqual(proc_nofile(d.proc.pid), (hard, hard))
            c = harness.Client(path)
            out = c.call("exec", {"command": "ulimit -Sn; ulimit -Hn"})["stdout"].split()
            self.assertEqual(out, [str(soft), str(hard)])
            # A background command as well (same spawn path, long-lived).
            r = c.call("exec", {"command": "ulimit -Sn; sleep 30", "background": True})
            deadline = time.monotonic() + 10
            while True:
                data = c.call("process.read", {"exec_id": r["exec_id"]})
                if data.get("data"):
                    break
                self.assertLess(time.monotonic(), deadline, data)
                time.sleep(0.05)
            c.call("process.kill", {"exec_id": r["exec_id"], "grace_ms": 100})
            c.close()
            d.stop()
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)


class SystemdDirectories(unittest.TestCase):
    def start(self, env, args=(), config=None):
        d = Launched(list(args), env=env, config=config, ready=False)
        d.wait_notify("READY=1", 20)
        return d

    def info(self, path):
        c = harness.Client(path)
        try:
            return c.call("daemon.info")
        finally:
            c.close()

    def test_state_and_runtime_directory_are_the_defaults(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-dirs-")
        st, rt = os.path.join(tmp, "st"), os.path.join(tmp, "rt")
        os.makedirs(rt, mode=0o755)
        env = {"STATE_DIRECTORY": st + ":" + os.path.join(tmp, "second"),
               "RUNTIME_DIRECTORY": rt}
        d = self.start(env)
        try:
            info = self.info(os.path.join(rt, "sandboxd.sock"))
            self.assertEqual(info["state_dir"], st, "first path of $STATE_DIRECTORY")
            self.assertEqual(info["socket"], os.path.join(rt, "sandboxd.sock"))
            self.assertFalse(os.path.exists(os.path.join(tmp, "second")))
            self.assertEqual(os.stat(st).st_mode & 0o777, 0o700)
            d.stop()
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_option_and_config_win_over_state_directory(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-dirs-")
        rt = os.path.join(tmp, "rt")
        os.makedirs(rt, mode=0o755)
        env = {"STATE_DIRECTORY": os.path.join(tmp, "env"), "RUNTIME_DIRECTORY": rt}
        sock = os.path.join(rt, "sandboxd.sock")
        cases = [
            ("option", ["--state-dir", os.path.join(tmp, "opt")], "", os.path.join(tmp, "opt")),
            ("config", [], "[daemon]\nstate_dir = %s\n" % os.path.join(tmp, "conf"),
             os.path.join(tmp, "conf")),
            ("both", ["--state-dir", os.path.join(tmp, "opt2")],
             "[daemon]\nstate_dir = %s\n" % os.path.join(tmp, "conf2"),
             os.path.join(tmp, "opt2")),
        ]
        for name, args, conf, want in cases:
            with self.subTest(name):
                d = self.start(env, args, conf)
                try:
                    self.assertEqual(self.info(sock)["state_dir"], want)
                    d.stop()
                finally:
                    d.cleanup()
        self.assertFalse(os.path.exists(os.path.join(tmp, "env")))
        shutil.rmtree(tmp, ignore_errors=True)

    def test_config_socket_wins_over_runtime_directory(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-dirs-")
        rt = os.path.join(tmp, "rt")
        own = os.path.join(tmp, "conf", "x.sock")
        d = self.start({"RUNTIME_DIRECTORY": rt, "STATE_DIRECTORY": os.path.join(tmp, "st")},
                       config="[daemon]\nsocket = %s\n" % own)
        try:
            self.assertEqual(self.info(own)["socket"], own)
            self.assertFalse(os.path.exists(os.path.join(rt, "sandboxd.sock")))
            d.stop()
        finally:
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)


# ---- operations ----------------------------------------------------------------------------


class CheckConfig(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sbxsd-cc-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def check(self, conf):
        return subprocess.run([SANDBOXD, "--check-config", "--config", conf],
                              capture_output=True, text=True, timeout=30, env=clean_env())

    def test_good_config_and_policy(self):
        rules = self.write("p.rules", "deny no-foo cmd=foo\ntest deny no-foo: foo\n")
        conf = self.write("ok.conf", "[exec]\nkill_grace_ms = 500\n[policy]\nrules_file = %s\n"
                          % rules)
        r = self.check(conf)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stdout)
        self.assertIn(rules, r.stdout)

    def test_bad_config_names_file_and_line_of_every_error(self):
        conf = self.write("bad.conf", "[exec]\n; comment\nkill_grace_ms = soon\n"
                          "[limits]\nmax_connections = many\n")
        r = self.check(conf)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("sandboxd: %s:3: [exec] kill_grace_ms" % conf, r.stderr)
        self.assertIn("sandboxd: %s:5: [limits] max_connections" % conf, r.stderr)

    def test_backend_sections_are_checked_by_the_backends(self):
        # Each of these printed "configuration OK" and then stopped the daemon at start.
        cases = (("[backend.modal]\nmode = sometimes\n", ":2: [backend.modal] mode"),
                 ("[backend.modal]\ngateway_url = http://gw.example.com\n",
                  ":2: [backend.modal] gateway_url = 'http://gw.example.com' is plain http"),
                 ("[backend.docker]\n\nhost = bogus://x\n", ":3: [backend.docker] host"),
                 ("[backend.docker]\nimage = x\nhots = unix:///x\n",
                  ":3: unknown key 'hots' in section [backend.docker]"),
                 ("[backend.local]\nimage = x\n",
                  ":2: unknown key 'image' in section [backend.local]"),
                 ("[backend.local]\nisolation = namespace\n",
                  ":2: [backend.local] isolation = 'namespace' is not valid"),
                 ("[backend.local]\nisolation_fallback = weaker\n",
                  ":2: [backend.local] isolation_fallback = 'weaker' is not valid"))
        for text, want in cases:
            with self.subTest(text=text):
                conf = self.write("bad.conf", text)
                r = self.check(conf)
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertNotIn("configuration OK", r.stdout)
                self.assertIn(conf + want, r.stderr)
                # The daemon refuses the same file at start, with the same words.
                st = os.path.join(self.tmp, "st")
                d = subprocess.run([SANDBOXD, "--config", conf, "--socket",
                                    os.path.join(self.tmp, "s.sock"), "--state-dir", st],
                                   capture_output=True, text=True, timeout=30, env=clean_env())
                self.assertEqual(d.returncode, 1, d.stderr)
                self.assertIn(conf + want, d.stderr)
        conf = self.write("all.conf", "[backend.modal]\nmode = sometimes\n[backend.docker]\n"
                          "host = bogus://x\n")
        r = self.check(conf)
        self.assertIn(conf + ":2:", r.stderr)
        self.assertIn(conf + ":4:", r.stderr)

    def test_unknown_key(self):
        conf = self.write("bad.conf", "[daemon]\n\n\nno_such_key = 1\n")
        r = self.check(conf)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("%s:4:" % conf, r.stderr)

    def test_bad_rules_file_names_its_file_and_line(self):
        rules = self.write("p.rules", "# ok\ndeny no-foo cmd=foo\nfrobnicate everything\n")
        conf = self.write("ok.conf", "[policy]\nrules_file = %s\n" % rules)
        r = self.check(conf)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("%s:3:" % rules, r.stderr)

    def test_missing_files(self):
        r = self.check(os.path.join(self.tmp, "nope.conf"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nope.conf", r.stderr)
        conf = self.write("ok.conf", "[policy]\nrules_file = %s/nope.rules\n" % self.tmp)
        r = self.check(conf)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nope.rules", r.stderr)

    def test_check_config_touches_no_socket_or_state(self):
        conf = self.write("ok.conf", "[daemon]\nsocket = %s/s.sock\nstate_dir = %s/st\n"
                          % (self.tmp, self.tmp))
        r = self.check(conf)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["ok.conf"])


class Info(unittest.TestCase):
    def test_daemon_info_and_sandboxctl_info(self):
        tmp = tempfile.mkdtemp(prefix="sbxsd-info-")
        rules = os.path.join(tmp, "p.rules")
        text = b"deny no-foo cmd=foo -- no foo here\n"
        with open(rules, "wb") as f:
            f.write(text)
        started = time.monotonic()
        d = Daemon("[policy]\nrules_file = %s\n" % rules)
        try:
            version = subprocess.run([SANDBOXD, "--version"], capture_output=True, text=True)
            c1, c2 = d.client(), d.client()
            c1.call("exec", {"command": "sleep 60", "background": True})
            info = c2.call("daemon.info")
            self.assertEqual(version.stdout.split()[1], info["version"])
            self.assertEqual(info["protocol"], 1)
            self.assertEqual(info["pid"], d.proc.pid)
            self.assertEqual(info["socket"], d.socket)
            self.assertIsInstance(info["uptime_s"], int)
            self.assertLessEqual(info["uptime_s"], time.monotonic() - started + 1)
            self.assertEqual(info["connections"], 2)
            self.assertEqual(info["processes"], 1)
            self.assertEqual(info["sandboxes"], 1)
            self.assertEqual(info["policy"]["sha256"], hashlib.sha256(text).hexdigest())
            self.assertGreater(info["policy"]["rules"], 1)
            backends = {b["name"]: b for b in info["backends"]}
            self.assertTrue(backends["local"]["available"])
            for b in backends.values():
                self.assertIsInstance(b["available"], bool)
                self.assertIn("details", b)
                if not b["available"]:
                    self.assertTrue(b.get("reason"), b)
            env = dict(clean_env(), SANDBOXD_SOCKET=d.socket)
            r = subprocess.run([SANDBOXCTL, "info"], capture_output=True, text=True, env=env,
                               timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            for word in (info["version"], info["policy"]["sha256"], d.socket, "local"):
                self.assertIn(word, r.stdout)
            r = subprocess.run([SANDBOXCTL, "--json", "info"], capture_output=True, text=True,
                               env=env, timeout=30)
            j = json.loads(r.stdout)
            self.assertEqual(j["policy"], info["policy"])
            self.assertEqual(j["connections"], 3)
            c1.close()
            c2.close()
        finally:
            d.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class Shutdown(unittest.TestCase):
    """SIGTERM ends every running exec as TimeoutStopSec wants: TERM to its tree, SIGKILL
    after kill_grace_ms, on the host and in an isolated sandbox alike."""

    def start_term_ignoring(self, c, isolation, command):
        wd = tempfile.mkdtemp(prefix="sbxsd-stop-")
        self.addCleanup(shutil.rmtree, wd, True)
        sb = c.call("sandbox.create", {"workdir": wd, "local": {"isolation": isolation}})
        r = c.call("exec", {"sandbox": sb["id"], "command": command, "background": True})
        deadline = time.monotonic() + 10
        while True:
            data = c.call("process.read", {"exec_id": r["exec_id"]}).get("data", "")
            if data.strip():
                return wd, data
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)

    def stop(self, d):
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        d.stop(expect=0, timeout=30)
        return time.monotonic() - t0

    def test_sigterm_kills_term_ignoring_tree_within_timeout_stop_sec(self):
        d = Daemon("[exec]\nkill_grace_ms = 500\n")
        c = d.client()
        # On the host: the pids the shell prints are the host's, which the test then reads in
        # /proc. "$IGN" is empty: the shell and its sleep ignore SIGTERM, only SIGKILL ends
        # them.
        _, data = self.start_term_ignoring(c, "none",
                                           'trap "$IGN" TERM; sleep 300 & echo $$ $!; wait')
        pids = [int(x) for x in data.split()]
        took = self.stop(d)
        self.assertLess(took, 30, "TimeoutStopSec=30")
        self.assertGreaterEqual(took, 0.45, "SIGTERM was ignored: SIGKILL after kill_grace_ms")
        c.close()
        for pid in pids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    state = f.read().split(") ")[1][0]
            except FileNotFoundError:
                continue
            self.assertEqual(state, "Z", "pid %d survived the daemon" % pid)

    def test_sigterm_ends_an_isolated_tree_term_first(self):
        d = Daemon("[exec]\nkill_grace_ms = 500\n")
        c = d.client()
        secs = harness.uniq_secs(303)
        # Its pids are the sandbox's own: what it was sent is written to its workdir, and
        # its sleep is found on the host by its unique duration.
        wd, _ = self.start_term_ignoring(
            c, "namespaces", "trap 'echo term >> got-term' TERM; echo started; "
            "while :; do sleep %s & wait; done" % secs)
        took = self.stop(d)
        c.close()
        self.assertLess(took, 30, "TimeoutStopSec=30")
        with open(os.path.join(wd, "got-term")) as f:
            self.assertIn("term", f.read(), "TERM came before SIGKILL")
        self.assertEqual(subprocess.run(["pgrep", "-f", "sleep " + secs]).returncode, 1,
                         "a process of the isolated sandbox survived the daemon")


# ---- man pages --------------------------------------------------------------------------

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAN = os.path.join(TOP, "docs", "man")


def man_text(page):
    """The page as groff renders it (plain text), so escapes like \\- do not matter."""
    r = subprocess.run(["groff", "-man", "-Tutf8", "-rLL=400n", "-rHY=0", "-P", "-cbou",
                        os.path.join(MAN, page)],
                       capture_output=True, text=True, check=True, env=clean_env())
    return r.stdout.replace("\u2010", "-").replace("\u2212", "-")


def long_options(help_text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", help_text))


class ManPages(unittest.TestCase):
    def test_groff_is_clean(self):
        for page in ("sandboxd.8", "sandboxd.conf.5", "sandboxctl.1"):
            r = subprocess.run(["groff", "-man", "-ww", "-z", os.path.join(MAN, page)],
                               capture_output=True, text=True)
            self.assertEqual((r.returncode, r.stderr), (0, ""), page)
            with open(os.path.join(MAN, page)) as f:
                self.assertNotIn("CHECK:", f.read(), page)

    def test_sandboxd_options_documented(self):
        help_text = subprocess.run([SANDBOXD, "--help"], capture_output=True, text=True).stdout
        opts = long_options(help_text)
        self.assertIn("--check-config", opts)
        page = man_text("sandboxd.8")
        for o in opts:
            self.assertTrue(o in page, "sandboxd --help lists %s, sandboxd(8) does not" % o)

    @staticmethod
    def config_keys():
        with open(os.path.join(TOP, "daemon", "config.c")) as f:
            src = f.read()
        table = src[src.index("config_keys[] = {"):]
        table = table[:table.index("};")]
        return re.findall(r'KL?\("(\w+)",\s*"(\w+)"', table)

    def test_config_keys_in_man_page(self):
        keys = self.config_keys()
        self.assertGreater(len(keys), 20)
        page = man_text("sandboxd.conf.5")
        for section, key in keys:
            self.assertTrue("[%s]" % section in page, section)
            self.assertTrue(re.search(r"(?m)^\s+%s \(" % key, page),
                            "sandboxd.conf(5) lacks [%s] %s" % (section, key))

    def test_config_keys_in_configuration_md(self):
        with open(os.path.join(TOP, "docs", "configuration.md")) as f:
            md = f.read()
        for section, key in self.config_keys():
            self.assertTrue("`%s`" % key in md, "docs/configuration.md lacks %s" % key)

    def test_sandboxctl_commands_and_options_documented(self):
        def ctl_help(*args):
            return subprocess.run([SANDBOXCTL] + list(args) + ["--help"], capture_output=True,
                                  text=True, env=clean_env()).stdout
        top = ctl_help()
        commands = re.findall(r"(?m)^  ([a-z]+)\s{2,}", top[top.index("Commands:"):])
        self.assertIn("exec", commands)
        page = man_text("sandboxctl.1")
        for cmd in commands:
            self.assertTrue(re.search(r"(?m)^ {7}%s\b" % cmd, page),
                            "sandboxctl(1) lacks %s" % cmd)
            h = ctl_help(cmd)
            subs = [(cmd,)]
            if "Commands:" in h:  # sandbox, approvals: document each subcommand
                subs = [(cmd, s) for s in
                        re.findall(r"(?m)^  ([a-z]+)\s{2,}", h[h.index("Commands:"):])]
                self.assertTrue(subs, cmd)
            for sub in subs:
                if len(sub) == 2:
                    self.assertTrue(re.search(r"(?m)^ {7}%s %s\b" % sub, page),
                                    "sandboxctl(1) lacks %s %s" % sub)
                for o in long_options(ctl_help(*sub)):
                    self.assertTrue(o in page, "%s --help lists %s, sandboxctl(1) does not"
                                    % (" ".join(sub), o))


if __name__ == "__main__":
    unittest.main()
