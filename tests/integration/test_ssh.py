"""The ssh backend against a real sshd on 127.0.0.1 (tests/integration/ssh_server.py): the
agent installed and driven over direct-streamlocal (or its stdio bridge), host keys, credentials
read as the caller, links cut, black-holed and the serving sshd killed mid-exec, a daemon
restarted while a remote command runs, and plain exec channels where no agent runs.

When sshd cannot run here every test FAILS (never skips), naming the setup step.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import (SANDBOXD, Daemon, RpcError, assert_taken_back_whole, b64, class_resource,
                     uniq_secs)
from ssh_server import Relay, Sshd, kill_under
from test_identity import NOBODY, as_nobody

# Short link timing: a dead link is noticed within a second or two.
TIMING = "ping_ms = 250\nlink_timeout_ms = 1500\nreconnect_ms = 20000\nconnect_timeout_ms = 5000\n"


def entry(name, port, key, extra=""):
    return ("[backend.ssh.%s]\nhost = 127.0.0.1\nport = %d\nuser = root\nidentity_file = %s\n%s"
            % (name, port, key, extra))


class SshEnv:
    """An sshd, a relay in front of it, a directory for the daemon's ssh files."""

    def __init__(self, sshd_extra="", sshd_env=None):
        self.sshd = Sshd(sshd_extra, sshd_env)
        self.relay = Relay(self.sshd.port)
        self.dir = tempfile.mkdtemp(prefix="sbxsshc-")
        os.chmod(self.dir, 0o755)
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        self.remote = os.path.join(self.dir, "remote")  # where the agent gets installed

    def trust(self):
        with open(self.known_hosts, "w") as f:
            f.write(self.sshd.known_hosts_line(self.relay.port))
            f.write(self.sshd.known_hosts_line())

    def config(self, entries, extra=""):
        return ("[backend.ssh]\nknown_hosts = %s\nremote_dir = %s\n%s%s%s"
                % (self.known_hosts, self.remote, TIMING, extra, entries))

    def box(self, name="box", extra=""):
        """An entry through the relay."""
        return entry(name, self.relay.port, self.sshd.user_key, extra)

    def stop(self):
        self.relay.stop()
        self.sshd.stop()
        kill_under(self.remote)  # agents a failed test left behind (a passing one destroys)
        shutil.rmtree(self.dir, ignore_errors=True)


class JumpEnv(SshEnv):
    """The sshd reached two ways: as entry "jump" through relay (the daemon to the jump host:
    the jump leg), and as entry "far" through relay2 (the jump host to the target: the target
    leg), whose jump_host is "jump". The daemon never connects to relay2 itself."""

    def __init__(self, sshd_extra="", sshd_env=None):
        super().__init__(sshd_extra, sshd_env)
        self.relay2 = Relay(self.sshd.port)

    def trust(self):
        super().trust()
        with open(self.known_hosts, "a") as f:
            f.write(self.sshd.known_hosts_line(self.relay2.port))

    def far(self, name="far", jump="jump", extra=""):
        return entry(name, self.relay2.port, self.sshd.user_key,
                     "jump_host = %s\n%s" % (jump, extra))

    def entries(self):
        return self.box("jump") + self.far()

    def stop(self):
        self.relay2.stop()
        super().stop()


class ThroughJump:
    """Mixin for an SshClass: its sandboxes on entry "far" of a JumpEnv."""

    env_class = JumpEnv
    host = "far"

    @classmethod
    def entries(cls):
        return cls.env.entries()


def wait_for(c, pred, what, timeout=30):
    """Reads messages until pred(c) holds (notifications are kept in c.notifications)."""
    deadline = time.monotonic() + timeout
    while not pred(c):
        if time.monotonic() > deadline:
            raise AssertionError("no %s; notifications: %s" % (what, c.notifications[-10:]))
        m = c.read(timeout)
        if isinstance(m, dict) and "method" in m and "id" not in m:
            c.notifications.append(m)
        elif isinstance(m, dict) and "id" in m:
            c.responses[m["id"]] = m


def states(c):
    return [n["params"] for n in c.notifications if n["method"] == "sandbox.state"]


def start_exec(c, params):
    """Sends an exec without waiting; returns its request id."""
    rid = next(c.ids)
    c.send({"jsonrpc": "2.0", "id": rid, "method": "exec", "params": params})
    return rid


def remote_pids(env, marker):
    """Pids of processes whose command line has marker, seen over a second ssh channel."""
    r = env.sshd.ssh("ps -eo pid=,args=")
    assert r.returncode == 0, r.stderr
    return [l.split()[0] for l in r.stdout.splitlines() if marker in l and "ps -eo" not in l]


def daemon_sockets(d):
    """How many sockets the daemon holds open (a connection left open is one more each time)."""
    n = 0
    for f in os.listdir("/proc/%d/fd" % d.proc.pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (d.proc.pid, f)).startswith("socket:")
        except OSError:
            pass
    return n


def cycles_leave_no_socket(test, host, n=3):
    """Creates, uses and destroys n sandboxes on host: the daemon holds as many sockets after
    each as after the first (which may open what stays). A destroy answers once its
    connections are closed."""
    c = test.daemon.client()
    counts = []
    for i in range(n):
        name = "cyc%d" % i
        c.call("sandbox.create", {"backend": "ssh", "name": name, "ssh": {"host": host}},
               timeout=60)
        test.assertEqual(c.call("exec", {"sandbox": name, "argv": ["echo", "x"]})["stdout"],
                         "x\n")
        c.call("sandbox.destroy", {"id": name}, timeout=60)
        counts.append(daemon_sockets(test.daemon))
    c.close()
    test.assertEqual(counts, counts[:1] * n)


class SshClass(unittest.TestCase):
    """One sshd (with sshd_extra), a relay and one daemon with entries() for the class."""

    sshd_extra = ""
    env_class = SshEnv

    @classmethod
    def entries(cls):
        return cls.env.box()

    @classmethod
    def setUpClass(cls):
        cls.env = class_resource(cls, cls.env_class, cls.sshd_extra)
        cls.env.trust()
        cls.daemon = class_resource(cls, Daemon, cls.env.config(cls.entries()))


class SshSandbox(SshClass):
    """Sandbox "main" on host entry "box" via the relay, for the whole class."""

    host = "box"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()  # the daemon and the sshd are class cleanups: they go after
        c = cls.daemon.client()
        cls.sb = c.call("sandbox.create", {"backend": "ssh", "name": "main",
                                           "ssh": {"host": cls.host}}, timeout=60)
        c.close()

    @classmethod
    def tearDownClass(cls):
        c = cls.daemon.client()
        c.call("sandbox.destroy", {"id": "main"}, timeout=60)  # its agent goes too
        c.close()

    def setUp(self):
        self.c = self.daemon.client()

    def tearDown(self):
        self.c.close()

    def exec(self, timeout=60, **params):
        params.setdefault("sandbox", "main")
        return self.c.call("exec", params, timeout=timeout)

    def test_created_with_the_agent(self):
        d = self.sb["details"]
        self.assertEqual((d["exec"], d["link"], d["host_entry"]),
                         ("sandboxd-agent", "direct-streamlocal", self.host))
        self.assertTrue(d["host_key"].startswith("SHA256:"), d)
        self.assertEqual((d["remote_os"], d["remote_arch"]), ("Linux", "x86_64"))
        self.assertTrue(d["agent"].startswith(self.env.remote + "/"), d)
        self.assertTrue(os.access(d["agent"], os.X_OK))
        self.assertEqual(self.sb["workdir"], "/root")
        got = self.c.call("sandbox.get", {"id": "main"})
        self.assertEqual(got["state"], "ready")
        self.assertEqual(got["details"]["exec"], "sandboxd-agent")

    def test_exec_streams_and_exit(self):
        r = self.exec(command="echo out; echo err >&2; exit 3")
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("out\n", "err\n", 3))
        r = self.exec(argv=["sh", "-c", "kill -TERM $$"])
        self.assertEqual((r["exit_code"], r["signal"]), (None, "SIGTERM"))
        r = self.exec(argv=["sh", "-c", "echo $HOME $USER"])
        self.assertEqual(r["stdout"], "/root root\n")  # the remote user's, not the caller's

    def test_shell_state_persists(self):
        self.exec(command="cd /tmp && export SBX_SSH_STATE=kept")
        r = self.exec(command="pwd; echo $SBX_SSH_STATE")
        self.assertEqual(r["stdout"], "/tmp\nkept\n")
        self.exec(command="cd")

    def test_stdin(self):
        r = self.exec(argv=["wc", "-c"], stdin_base64=b64(bytes(range(256)) * 4))
        self.assertEqual(r["stdout"].strip(), "1024")
        bg = self.exec(argv=["cat"], stdin_open=True, background=True)["exec_id"]
        self.c.call("process.write", {"exec_id": bg, "data": "line one\n"})
        self.c.call("process.write", {"exec_id": bg, "data": "two\n", "eof": True})
        w = self.c.call("process.wait", {"exec_id": bg, "timeout_ms": 20000}, timeout=30)
        self.assertEqual(w["exit_code"], 0)
        out = self.c.call("process.read", {"exec_id": bg})
        self.assertEqual(out["data"], "line one\ntwo\n")

    def test_pty_and_resize(self):
        r = self.exec(argv=["stty", "size"], pty=True, pty_size={"rows": 33, "cols": 101})
        self.assertEqual(r["stdout"].strip(), "33 101")
        bg = self.exec(argv=["sh", "-c", "read x; stty size"], pty=True, stdin_open=True,
                       background=True)["exec_id"]
        self.c.call("process.resize", {"exec_id": bg, "rows": 40, "cols": 120})
        self.c.call("process.write", {"exec_id": bg, "data": "go\n"})
        self.c.call("process.wait", {"exec_id": bg, "timeout_ms": 20000}, timeout=30)
        self.assertIn("40 120", self.c.call("process.read", {"exec_id": bg})["data"])

    def test_binary_file_round_trip(self):
        data = bytes(range(256)) * 257 + os.urandom(300000)
        path = os.path.join(self.env.dir, "f", "round.bin")
        self.c.call("file.write", {"sandbox": "main", "path": path, "data_base64": b64(data),
                                   "mkdir": True})
        with open(path, "rb") as f:  # the remote host is this machine: look at the file
            self.assertEqual(f.read(), data)
        got = b""
        while len(got) < len(data):
            r = self.c.call("file.read", {"sandbox": "main", "path": path, "offset": len(got),
                                          "output_encoding": "base64"})
            got += base64.b64decode(r["data"])
            self.assertEqual(r["size"], len(data))
        self.assertEqual(got, data)

    def test_timeout_kills_the_remote_tree(self):
        secs = uniq_secs(300)
        r = self.exec(command="sleep %s & sleep %s; echo never" % (secs, secs), timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual(r["stdout"], "")
        self.assertEqual(remote_pids(self.env, secs), [])

    def test_kill_reports_survivors(self):
        secs = uniq_secs(301)
        bg = self.exec(command="trap '' TERM; setsid sleep %s & sleep %s" % (secs, secs),
                       background=True)["exec_id"]
        deadline = time.monotonic() + 20
        while len(remote_pids(self.env, secs)) < 2:
            self.assertLess(time.monotonic(), deadline, "the tree did not start")
        k = self.c.call("process.kill", {"exec_id": bg, "grace_ms": 300}, timeout=30)
        self.assertEqual((k["killed"], k["survivors"]), (True, 0))
        self.assertEqual(remote_pids(self.env, secs), [])

    def test_destroy_leaves_no_socket(self):
        cycles_leave_no_socket(self, self.host)

    def test_100_concurrent_execs(self):
        rids = [start_exec(self.c, {"sandbox": "main", "argv": ["echo", "n%d" % i]})
                for i in range(100)]
        for i, rid in enumerate(rids):
            resp = self.c.wait_response(rid, 60)
            self.assertEqual(resp["result"]["stdout"], "n%d\n" % i, resp)


class SshJumpSandbox(ThroughJump, SshSandbox):
    """Every test of SshSandbox again, through a jump host: streams, stdin, pty, timeouts, a
    binary file both ways, 100 concurrent execs, nothing left open after a destroy."""

    def test_destroy_leaves_no_socket(self):
        super().test_destroy_leaves_no_socket()
        # The jump legs of the destroyed sandboxes are closed too (the relay saw them end);
        # the one left is the class's sandbox's.
        deadline = time.monotonic() + 20
        while len(self.env.relay.pairs) > 1:
            self.assertLess(time.monotonic(), deadline, "jump legs left open")
            time.sleep(0.05)


class SshLinks(SshClass):
    """Links that die under a running exec: nothing is lost."""

    host = "box"

    def setUp(self):
        self.c = self.daemon.client()
        self.name = self.id().rsplit(".", 1)[1][:40]
        self.sb = self.c.call("sandbox.create", {"backend": "ssh", "name": self.name,
                                                 "ssh": {"host": self.host}}, timeout=60)

    def tearDown(self):
        self.c.call("sandbox.destroy", {"id": self.name}, timeout=60)
        self.c.close()

    def run_through(self, cut):
        """A foreground exec writing 60 numbered lines over ~3 s; cut(self) once it has
        started writing; the exec still returns every line and its exit code."""
        rid = start_exec(self.c, {"sandbox": self.name, "command":
                                  "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo line $i; "
                                  "sleep 0.05; done; exit 7"})
        wait_for(self.c, lambda c: any(n["method"] == "exec.output" for n in c.notifications),
                 "output before the cut")
        cut(self)
        wait_for(self.c, lambda c: rid in c.responses, "the exec's result", 60)
        res = self.c.responses.pop(rid)
        self.assertIn("result", res, res)
        r = res["result"]
        self.assertEqual(r["exit_code"], 7, r)
        self.assertEqual(r["stdout"], "".join("line %d\n" % i for i in range(1, 61)))
        return states(self.c)

    def test_relay_cut_mid_exec(self):
        st = self.run_through(lambda t: self.assertGreater(t.env.relay.cut(), 0))
        self.assertIn("reconnecting", [s["state"] for s in st])
        wait_for(self.c, lambda c: states(c) and states(c)[-1]["state"] == "ready", "ready")

    def test_serving_sshd_killed_mid_exec(self):
        st = self.run_through(lambda t: self.assertTrue(t.env.sshd.kill_sessions()))
        self.assertIn("reconnecting", [s["state"] for s in st])

    def test_blackholed_link_detected(self):
        def hole(t):
            self.assertGreater(t.env.relay.blackhole(), 0)
        st = self.run_through(hole)
        lost = [s for s in st if s["state"] == "reconnecting"]
        self.assertTrue(lost, st)
        # Noticed by the session's own PINGs (link_timeout_ms = 1500), not by a reset: the
        # black-holed connection is still open at the relay.
        self.assertIn("no answer from sandboxd-agent for 1 s (link_timeout)", lost[0]["reason"])
        self.assertGreater(self.env.relay.holes_open(), 0)


class SshBridge(SshLinks):
    """AllowStreamLocalForwarding no: the agent's stdio bridge carries the session."""

    sshd_extra = "AllowStreamLocalForwarding no"
    test_serving_sshd_killed_mid_exec = None
    test_blackholed_link_detected = None

    def test_bridge_takes_over(self):
        self.assertEqual(self.sb["details"]["link"], "sandboxd-agent --connect (exec channel)")
        r = self.c.call("exec", {"sandbox": self.name, "command": "echo via-bridge"})
        self.assertEqual(r["stdout"], "via-bridge\n")


class SshJumpLinks(ThroughJump, SshLinks):
    """Through a jump host: the inherited cuts hit the jump leg (relay; killing the sshd
    sessions ends both legs); the target leg is cut here too. Nothing is lost."""

    def test_exec_through_the_jump_host(self):
        d = self.sb["details"]
        self.assertEqual((d["host_entry"], d["jump_host"], d["exec"], d["port"]),
                         ("far", "jump", "sandboxd-agent", self.env.relay2.port), d)
        self.assertTrue(d["jump_host_key"].startswith("SHA256:"), d)
        before = self.env.relay.accepted
        self.env.relay.cut()  # the next connection must go through the jump leg again
        r = self.c.call("exec", {"sandbox": self.name, "command": "echo far; exit 2"},
                        timeout=60)
        self.assertEqual((r["stdout"], r["exit_code"]), ("far\n", 2))
        self.assertGreater(self.env.relay.accepted, before)

    def test_target_leg_cut_mid_exec(self):
        st = self.run_through(lambda t: self.assertGreater(t.env.relay2.cut(), 0))
        lost = [s for s in st if s["state"] == "reconnecting"]
        self.assertTrue(lost, st)
        self.assertIn("jump host 'jump'", lost[0]["reason"])



class SshJumpDaemonStop(unittest.TestCase):
    """The daemon stopped (SIGTERM) while a sandbox behind a jump host runs a command: it
    exits 0 at once, and the next daemon takes the sandbox back through the jump host."""

    def test_stop_and_readopt_through_the_jump_host(self):
        env = JumpEnv()
        env.trust()
        state = tempfile.mkdtemp(prefix="sbxstate-")
        cfg = env.config(env.entries())
        try:
            d = Daemon(cfg, state_dir=state)
            try:
                c = d.client()
                c.call("sandbox.create", {"backend": "ssh", "name": "j", "ssh": {"host": "far"}},
                       timeout=60)
                bg = c.call("exec", {"sandbox": "j", "command": "echo begin; sleep 2; echo end",
                                     "background": True})["exec_id"]
                deadline = time.monotonic() + 30
                while c.call("process.read", {"exec_id": bg})["data"] != "begin\n":
                    self.assertLess(time.monotonic(), deadline, "the exec did not start")
                    time.sleep(0.05)
            finally:
                d.stop()  # exit 0 within the harness's timeout: nothing hangs
            d = Daemon(cfg, state_dir=state)
            try:
                c = d.client()
                w = c.call("process.wait", {"exec_id": bg, "timeout_ms": 30000}, timeout=60)
                self.assertEqual(w["exit_code"], 0, w)
                self.assertEqual(c.call("process.read", {"exec_id": bg})["data"],
                                 "begin\nend\n")
                c.call("sandbox.destroy", {"id": "j"}, timeout=60)
            finally:
                d.stop()
        finally:
            env.stop()
            shutil.rmtree(state, ignore_errors=True)


class SshJumpHosts(SshClass):
    """A jump host's key is judged under its own entry's known_hosts and policy; every hop's
    failure names the hop and says what to do."""

    env_class = JumpEnv

    @classmethod
    def setUpClass(cls):
        cls.nofwd = class_resource(cls, Sshd, "AllowTcpForwarding no")
        super().setUpClass()

    @classmethod
    def entries(cls):
        from ssh_server import closed_port
        e, key = cls.env, cls.env.sshd.user_key
        with open(e.known_hosts, "a") as f:
            f.write(cls.nofwd.known_hosts_line())
        cls.empty_kh = os.path.join(e.dir, "empty_known_hosts")
        open(cls.empty_kh, "w").close()
        cls.new_kh = os.path.join(e.dir, "new_known_hosts")
        cls.gone = closed_port(cls)
        return (e.box("jump") +
                entry("strange", e.relay.port, key, "known_hosts = %s\n" % cls.empty_kh) +
                entry("nofwd", cls.nofwd.port, cls.nofwd.user_key) +
                entry("deadjump", closed_port(cls), key) +
                entry("badkey", e.relay.port, e.sshd.other_key) +
                entry("newjump", e.relay.port, key, "known_hosts = %s\nhost_key_policy = "
                      "accept-new\n" % cls.new_kh) + e.far("via_new", "newjump") +
                e.far("via_strange", "strange") + e.far("via_nofwd", "nofwd") +
                e.far("via_dead", "deadjump") + e.far("via_badkey", "badkey") +
                entry("gone", cls.gone, key, "jump_host = jump\n"))

    def create_error(self, host):
        c = self.daemon.client()
        with self.assertRaises(RpcError) as cm:
            c.call("sandbox.create", {"backend": "ssh", "ssh": {"host": host}}, timeout=60)
        c.close()
        self.assertEqual((cm.exception.code, cm.exception.data.get("backend")), (-32005, "ssh"),
                         cm.exception.message)
        return cm.exception.message

    def test_accept_new_jump_host_recorded_in_its_own_file(self):
        c = self.daemon.client()
        sb = c.call("sandbox.create", {"backend": "ssh", "ssh": {"host": "via_new"}}, timeout=60)
        self.assertEqual(sb["details"]["host_key_policy"], "strict")  # the target's own
        with open(self.new_kh) as f:
            self.assertEqual(f.read(), self.env.sshd.known_hosts_line(self.env.relay.port))
        c.call("sandbox.destroy", {"id": sb["id"]}, timeout=60)
        c.close()

    def test_unknown_jump_host_key_under_strict(self):
        msg = self.create_error("via_strange")
        self.assertIn("jump host 'strange'", msg)
        self.assertIn("is not known", msg)
        self.assertIn(self.env.sshd.known_hosts_line(self.env.relay.port).strip(), msg)
        self.assertIn(self.empty_kh, msg)
        with open(self.empty_kh) as f:
            self.assertEqual(f.read(), "")  # strict: nothing recorded

    def test_forwarding_refused_on_the_jump_host(self):
        msg = self.create_error("via_nofwd")
        self.assertIn("jump host 'nofwd'", msg)
        self.assertIn("refused to forward a connection to 127.0.0.1:%d" % self.env.relay2.port,
                      msg)
        self.assertIn("AllowTcpForwarding", msg)

    def test_target_unreachable_from_the_jump_host(self):
        msg = self.create_error("gone")
        self.assertIn("jump host 'jump'", msg)
        self.assertIn("cannot reach 127.0.0.1:%d" % self.gone, msg)

    def test_jump_host_unreachable(self):
        msg = self.create_error("via_dead")
        self.assertIn("jump host 'deadjump'", msg)
        self.assertIn("refused (is sshd running there", msg)

    def test_key_refused_on_the_jump_host(self):
        msg = self.create_error("via_badkey")
        self.assertIn("jump host 'badkey'", msg)
        self.assertIn("refused the key", msg)
        self.assertIn(self.env.sshd.other_key, msg)


class SshStalledHost(unittest.TestCase):
    """A host that answers nothing any more (relay black-holed and not accepting: a hung sshd,
    or a target leg behind a jump host that swallows everything, which no TCP timeout of the
    daemon sees): a destroy gives up instead of waiting for ever, and a daemon stopped while
    one waits exits at once."""

    def setUp(self):
        self.env = JumpEnv()
        self.env.trust()
        # connect 1 s + link 1.5 s + the stop script's 10 s: the destroy gives up after 12.5 s.
        cfg = self.env.config(self.env.entries()).replace("connect_timeout_ms = 5000",
                                                          "connect_timeout_ms = 1000")
        self.daemon = Daemon(cfg)
        self.c = self.daemon.client()

    def tearDown(self):
        try:
            self.c.close()
            if self.daemon.proc.poll() is None:
                self.daemon.stop()
        finally:
            self.env.stop()

    def stall(self, host, relay):
        sb = self.c.call("sandbox.create", {"backend": "ssh", "ssh": {"host": host}},
                         timeout=60)
        relay.set_accepting(False)
        self.assertGreater(relay.blackhole(), 0)
        return sb["id"]

    def test_destroy_gives_up_on_a_stalled_target_leg(self):
        sid = self.stall("far", self.env.relay2)
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.destroy", {"id": sid}, timeout=60)
        self.assertEqual(cm.exception.code, -32005, cm.exception.message)
        self.assertIn("no answer from the host in time", cm.exception.message)
        self.assertIn("exits after", cm.exception.message)

    def test_stop_while_a_destroy_waits(self):
        sid = self.stall("jump", self.env.relay)
        rid = next(self.c.ids)
        self.c.send({"jsonrpc": "2.0", "id": rid, "method": "sandbox.destroy",
                     "params": {"id": sid}})
        # Requests on a connection are taken in order: once this one is answered, the destroy
        # has started (a sandbox being destroyed is not found any more).
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.get", {"id": sid})
        self.assertEqual(cm.exception.code, -32002, cm.exception.message)
        log = self.daemon.stop()  # exit 0 within the harness's timeout
        self.assertIn("the daemon is stopping", log)


class SshTrustAndCredentials(unittest.TestCase):
    """Host keys, keys and who may use what; every failure says what happened and what to do."""

    @classmethod
    def setUpClass(cls):
        cls.env = class_resource(cls, SshEnv)

    def setUp(self):
        if os.path.exists(self.env.known_hosts):
            os.unlink(self.env.known_hosts)
        self.daemons = []

    def tearDown(self):
        for d in self.daemons:
            d.stop()

    def daemon(self, entries, extra="", daemon_extra=""):
        d = Daemon(daemon_extra + self.env.config(entries, extra))
        self.daemons.append(d)
        return d

    def create_error(self, d, ssh, code=-32005):
        c = d.client()
        with self.assertRaises(RpcError) as cm:
            c.call("sandbox.create", {"backend": "ssh", "ssh": ssh}, timeout=60)
        c.close()
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        return cm.exception.message

    def test_unknown_host_refused_under_strict(self):
        d = self.daemon(self.env.box())
        msg = self.create_error(d, {"host": "box"})
        line = self.env.sshd.known_hosts_line(self.env.relay.port).strip()
        self.assertIn("is not known", msg)
        self.assertIn("SHA256:", msg)
        self.assertIn(line, msg)  # the line to add, after checking the fingerprint
        self.assertIn("accept-new", msg)
        self.assertFalse(os.path.exists(self.env.known_hosts))

    def test_request_cannot_weaken_an_entry(self):
        d = self.daemon(self.env.box())
        c = d.client()
        for ssh, param in (({"host": "box", "host_key_policy": "accept-new"},
                            "ssh.host_key_policy"),
                           ({"host": "box", "identity_file": "/etc/shadow"}, "ssh"),
                           ({"host": "box", "port": 22}, "ssh"),
                           ({"host": "elsewhere.example"}, "ssh.host"),
                           ({"host": "box", "password": "x"}, "ssh"),
                           ({"host": "box", "jump_host": "box"}, "ssh")):
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "ssh", "ssh": ssh})
            self.assertEqual((cm.exception.code, cm.exception.data.get("param")),
                             (-32602, param), cm.exception.message)
        c.close()

    def test_wrong_key_refused(self):
        self.env.trust()
        d = self.daemon(entry("box", self.env.relay.port, self.env.sshd.other_key))
        msg = self.create_error(d, {"host": "box"})
        self.assertIn("refused the key", msg)
        self.assertIn("offers: publickey", msg)
        self.assertIn(self.env.sshd.other_key, msg)

    def test_unreachable_port_and_unknown_name(self):
        from ssh_server import closed_port
        d = self.daemon(entry("closed", closed_port(self), self.env.sshd.user_key) +
                        entry("nowhere", 22, self.env.sshd.user_key).replace(
                            "127.0.0.1", "no-such-host.invalid"))
        self.assertIn("refused (is sshd running there", self.create_error(d, {"host": "closed"}))
        self.assertIn("cannot resolve the host name 'no-such-host.invalid'",
                      self.create_error(d, {"host": "nowhere"}))

    def test_accept_new_records_then_refuses_a_changed_key(self):
        sshd = Sshd()
        relay = Relay(sshd.port)
        try:
            d = self.daemon(entry("fresh", relay.port, sshd.user_key,
                                  "host_key_policy = accept-new\n"))
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "ssh", "ssh": {"host": "fresh"}},
                        timeout=60)
            with open(self.env.known_hosts) as f:
                self.assertEqual(f.read(), sshd.known_hosts_line(relay.port))
            c.call("sandbox.destroy", {"id": sb["id"]}, timeout=60)
            sshd.new_host_key()
            msg = self.create_error(d, {"host": "fresh"})
            self.assertIn("HAS CHANGED", msg)
            self.assertIn(self.env.known_hosts + " line 1", msg)
            with open(self.env.known_hosts) as f:  # never overwritten
                self.assertEqual(f.read().count("\n"), 1)
            c.close()
        finally:
            relay.stop()
            sshd.stop()

    def test_entry_closed_to_other_uids(self):
        self.env.trust()
        d = self.daemon(self.env.box(), daemon_extra="[daemon]\nallow_users = nobody\n"
                        "socket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        res = as_nobody(d.socket, [["sandbox.create", {"backend": "ssh",
                                                       "ssh": {"host": "box"}}]])[0]
        self.assertEqual(res["error"]["code"], -32010, res)
        self.assertIn("allow_users", res["error"]["message"])

    def test_client_cannot_use_files_it_cannot_read(self):
        """nobody names root's key (and other spellings of it): read as nobody, refused."""
        self.env.trust()
        link = os.path.join(self.env.dir, "innocent")
        os.symlink(self.env.sshd.user_key, link)
        d = self.daemon("", "client_hosts = 127.0.0.1\n",
                        "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        keys = (self.env.sshd.user_key, link, "/proc/self/root" + self.env.sshd.user_key,
                "/proc/1/root" + self.env.sshd.user_key)
        calls = [["sandbox.create", {"backend": "ssh", "ssh": {
            "host": "127.0.0.1", "port": self.env.relay.port, "user": "root",
            "identity_file": key, "known_hosts": self.env.known_hosts}}] for key in keys]
        results = as_nobody(d.socket, calls)[:-1]  # the last is the harness's "unsolicited"
        self.assertEqual(len(results), len(keys))
        for res in results:
            self.assertEqual(res["error"]["code"], -32005, res)
            self.assertIn("as uid %d" % NOBODY, res["error"]["message"])
            self.assertIn("Permission denied", res["error"]["message"])

    def test_client_own_host_with_own_key(self):
        """A client's own host: its key and known_hosts read as itself; accept-new records in
        the daemon's file for that uid, never in the client's."""
        key = os.path.join(self.env.dir, "nobody_key")
        shutil.copy(self.env.sshd.user_key, key)
        os.chown(key, NOBODY, NOBODY)
        os.chmod(key, 0o600)
        d = self.daemon("", "client_hosts = 127.0.0.1\n",
                        "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        ssh = {"host": "127.0.0.1", "port": self.env.relay.port, "user": "root",
               "identity_file": key, "host_key_policy": "accept-new"}
        res = as_nobody(d.socket, [["sandbox.create", {"backend": "ssh", "name": "own",
                                                        "ssh": ssh}],
                                   ["exec", {"sandbox": "own", "argv": ["echo", "mine"]}],
                                   ["sandbox.destroy", {"id": "own"}]])
        self.assertEqual(res[1].get("result", {}).get("stdout"), "mine\n", res)
        with open(self.env.known_hosts + ".d/%d" % NOBODY) as f:
            self.assertEqual(f.read(), self.env.sshd.known_hosts_line(self.env.relay.port))
        self.assertFalse(os.path.exists(self.env.known_hosts))
        res = as_nobody(d.socket, [["sandbox.create", {"backend": "ssh", "ssh": dict(
            ssh, host="localhost")}]])[0]
        self.assertEqual(res["error"]["code"], -32602, res)  # not in client_hosts
        self.assertIn("client_hosts", res["error"]["message"])


AS_NOBODY = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]


def as_nobody_popen(argv, **kw):
    return subprocess.Popen(AS_NOBODY + argv, **kw)


# A Unix socket of nobody's that accepts connections and never answers: a stalled agent.
STALLED_AGENT = """
import select, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("listening", flush=True)
held, asked = [], set()
while True:
    for r in select.select([s] + [c for c in held if c not in asked], [], [])[0]:
        if r is s:
            held.append(s.accept()[0])
            print("accepted", flush=True)
        else:
            asked.add(r)  # a request came: never answered, never read again
            print("asked", flush=True)
"""


class SshAgentAuth(unittest.TestCase):
    """A client's own host through the client's own ssh-agent (started as nobody against a
    root daemon): a passphrase-protected key in it works; root's agent, an agent with no keys
    or only keys the server refuses, and a stalled agent are refused with the cause, and a
    stalled agent never stops the daemon from answering."""

    PASSPHRASE = "correct horse battery staple"

    @classmethod
    def setUpClass(cls):
        from ssh_server import keygen
        cls.env = class_resource(cls, SshEnv)
        cls.env.trust()
        cls.procs = []
        # nobody's: its agents' sockets
        cls.home = class_resource(cls, tempfile.mkdtemp, prefix="sbxagent-",
                                  stop=lambda d: shutil.rmtree(d, ignore_errors=True))
        os.chown(cls.home, NOBODY, NOBODY)
        os.chmod(cls.home, 0o700)
        cls.key = os.path.join(cls.home, "pp_ed25519")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", cls.PASSPHRASE, "-C",
                        "sbx-agent-test", "-f", cls.key], check=True)
        with open(cls.env.sshd.authorized, "a") as f:
            f.write(open(cls.key + ".pub").read())
        cls.other = os.path.join(cls.home, "other_ed25519")  # the server knows no such key
        keygen(cls.other)
        cls.askpass = os.path.join(cls.home, "askpass")
        with open(cls.askpass, "w") as f:
            f.write("#!/bin/sh\necho '%s'\n" % cls.PASSPHRASE)
        os.chmod(cls.askpass, 0o700)
        for path in (cls.key, cls.key + ".pub", cls.other, cls.other + ".pub", cls.askpass):
            os.chown(path, NOBODY, NOBODY)
        cls.daemon = class_resource(cls, Daemon, "[daemon]\nallow_users = nobody\n"
                                    "socket_group = nogroup\n" +
                                    cls.env.config("", "client_hosts = 127.0.0.1\n"
                                              "ask_isolated = ask\n"))
        os.chmod(cls.daemon.dir, 0o755)

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:  # the agents the tests started; the class cleanups do the rest
            p.kill()
            p.wait()

    @classmethod
    def agent(cls, name, keys=(), root=False):
        """An ssh-agent of nobody's (or root's) at HOME/name holding keys; its socket."""
        sock = os.path.join(cls.home, name)
        argv = ["ssh-agent", "-D", "-a", sock]
        # root's agent refuses nobody itself too ("uid mismatch"): not needed to be heard
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
            if root else as_nobody_popen(argv, stdout=subprocess.DEVNULL)
        cls.procs.append(p)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        env = dict(os.environ, SSH_AUTH_SOCK=sock, SSH_ASKPASS=cls.askpass,
                   SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
        for k in keys:
            add = ["ssh-add", "-q", k]
            subprocess.run(add if root else AS_NOBODY + add, env=env, check=True,
                           stdin=subprocess.DEVNULL)
        return sock

    def ssh(self, sock, **kw):
        return dict({"host": "127.0.0.1", "port": self.env.relay.port, "user": "root",
                     "agent_socket": sock, "known_hosts": self.env.known_hosts}, **kw)

    def create_as_nobody(self, ssh):
        return as_nobody(self.daemon.socket, [["sandbox.create", {"backend": "ssh",
                                                                   "ssh": ssh}]])[0]

    def test_passphrase_key_through_the_agent(self):
        sock = self.agent("good", [self.key])
        res = as_nobody(self.daemon.socket, [
            ["sandbox.create", {"backend": "ssh", "name": "viaagent", "ssh": self.ssh(sock)}],
            ["exec", {"sandbox": "viaagent", "argv": ["echo", "through the agent"]}],
            ["sandbox.destroy", {"id": "viaagent"}]])
        self.assertIn("result", res[0], res)
        self.assertEqual(res[1].get("result", {}).get("stdout"), "through the agent\n", res)
        self.assertIn("result", res[2], res)
        # the key passed from the agent to the server only: nothing of it in the log
        blob = open(self.key + ".pub").read().split()[1]
        self.assertNotIn(blob, self.daemon.read_log())
        self.assertNotIn(self.PASSPHRASE, self.daemon.read_log())

    def test_agent_of_another_uid_refused(self):
        """root's agent, reachable by nobody (any spelling of its path): its server is uid 0,
        so it is refused; one nobody cannot reach is refused by the kernel."""
        sock = self.agent("roots", [self.env.sshd.user_key], root=True)
        os.chmod(sock, 0o777)
        open_dir = tempfile.mkdtemp(prefix="sbxagent-open-", dir=self.env.dir)
        os.chmod(open_dir, 0o755)
        link = os.path.join(open_dir, "innocent")
        os.symlink(sock, link)
        os.chmod(self.home, 0o711)  # nobody's own dir; root's socket in it, reachable
        try:
            for spelling in (sock, link, "/proc/self/root" + sock):
                res = self.create_as_nobody(self.ssh(spelling))
                self.assertEqual(res.get("error", {}).get("code"), -32005, res)
                self.assertIn("is served by uid 0", res["error"]["message"])
                self.assertIn("not by uid %d" % NOBODY, res["error"]["message"])
            os.chmod(sock, 0o600)
            res = self.create_as_nobody(self.ssh(sock))
            self.assertEqual(res.get("error", {}).get("code"), -32005, res)
            self.assertIn("cannot connect to '%s' as uid %d: Permission denied"
                          % (sock, NOBODY), res["error"]["message"])
        finally:
            os.chmod(self.home, 0o700)

    def test_agent_without_keys_then_with_refused_keys(self):
        sock = self.agent("empty")
        res = self.create_as_nobody(self.ssh(sock))
        self.assertEqual(res.get("error", {}).get("code"), -32005, res)
        self.assertIn("the ssh-agent at %s holds no keys" % sock, res["error"]["message"])
        self.assertIn("ssh-add", res["error"]["message"])
        env = dict(os.environ, SSH_AUTH_SOCK=sock)
        subprocess.run(AS_NOBODY + ["ssh-add", "-q", self.other], env=env, check=True)
        res = self.create_as_nobody(self.ssh(sock))
        self.assertEqual(res.get("error", {}).get("code"), -32005, res)
        msg = res["error"]["message"]
        self.assertIn("refused the 1 key of the ssh-agent at %s" % sock, msg)
        self.assertIn("offers: publickey", msg)
        res = self.create_as_nobody(self.ssh(os.path.join(self.home, "none")))
        self.assertIn("No such file or directory", res.get("error", {}).get("message"), res)

    def stalled_agent(self, name):
        """An "agent" of nobody's at ~/NAME that accepts and never answers: (path, process)."""
        sock = os.path.join(self.home, name)
        p = as_nobody_popen(["/usr/bin/python3", "-c", STALLED_AGENT, sock],
                            stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.assertEqual(p.stdout.readline(), "listening\n")
        return sock, p

    def test_stalled_agent_times_out_while_the_daemon_answers(self):
        import threading
        sock, p = self.stalled_agent("stalled")
        out = {}
        t = threading.Thread(target=lambda: out.update(res=self.create_as_nobody(
            self.ssh(sock))))
        t.start()
        self.assertEqual(p.stdout.readline(), "accepted\n")  # the daemon is waiting on it
        c = self.daemon.client()
        for _ in range(3):
            self.assertIn("version", c.call("daemon.info", timeout=10))
        self.assertTrue(t.is_alive(), "the create ended before the agent could time out")
        c.close()
        t.join(60)
        res = out["res"]
        self.assertEqual(res.get("error", {}).get("code"), -32005, res)
        self.assertIn("the ssh-agent at %s did not answer within 5 s" % sock,
                      res["error"]["message"])

    def test_stalled_agents_hold_at_most_two_worker_threads(self):
        """Two creates waiting on a stalled agent take the two worker slots for agent steps;
        a third is refused at once with the reason, instead of taking the thread pool that name
        lookups need."""
        import threading
        sock, p = self.stalled_agent("stalled-many")
        threads = []
        for _ in range(2):
            t = threading.Thread(target=lambda: self.create_as_nobody(self.ssh(sock)))
            t.start()
            threads.append(t)
            self.assertEqual(p.stdout.readline(), "accepted\n")
            self.assertEqual(p.stdout.readline(), "asked\n")  # its worker waits on the agent
        res = self.create_as_nobody(self.ssh(sock))
        self.assertTrue(all(t.is_alive() for t in threads), "the stalled creates ended early")
        self.assertIn("other ssh-agent authentications are in progress (at most 2",
                      res.get("error", {}).get("message", ""), res)
        for t in threads:
            t.join(60)

    def test_daemon_stopped_while_a_create_waits(self):
        """A stop cancels the create waiting on a stalled agent (the create is told so) and
        the daemon exits cleanly (ssh_cancel once took the daemon's context for its own)."""
        import threading
        d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n" +
                   self.env.config("", "client_hosts = 127.0.0.1\n"))
        os.chmod(d.dir, 0o755)
        sock, p = self.stalled_agent("stalled-at-stop")
        out = {}
        t = threading.Thread(target=lambda: out.update(res=as_nobody(d.socket, [[
            "sandbox.create", {"backend": "ssh", "ssh": self.ssh(sock)}]])[0]))
        t.start()
        self.assertEqual(p.stdout.readline(), "accepted\n")
        d.stop()  # raises unless it exits 0
        t.join(60)
        self.assertEqual(out["res"].get("error", {}).get("data"), {"state": "cancelled"},
                         out["res"])


class SshRestart(unittest.TestCase):
    """Daemons one after the other on one state directory: killed (SIGKILL) or stopped
    (SIGTERM) mid-command, mid-start or mid-destroy; the next one takes back what is left."""

    def setUp(self):
        self.env = SshEnv()
        self.env.trust()
        self.state = tempfile.mkdtemp(prefix="sbxstate-")

    def tearDown(self):
        self.env.stop()
        shutil.rmtree(self.state, ignore_errors=True)

    def start(self):
        return Daemon(self.env.config(self.env.box()), state_dir=self.state)

    def test_daemon_killed_and_restarted_mid_command(self):
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "ssh", "name": "r", "ssh": {"host": "box"}},
                   timeout=60)
            c.call("exec", {"sandbox": "r", "command": "cd /tmp && export KEEP=1"})
            os.mkfifo(os.path.join(self.env.dir, "go"))
            rid = start_exec(c, {"sandbox": "r", "command":
                                 "echo begin; read x <%s/go; echo got $x; exit 5"
                                 % self.env.dir})

            def started(c):
                ids = [n["params"]["exec_id"] for n in c.notifications
                       if n["method"] == "exec.started"
                       and n["params"].get("request_id") == rid]
                return ids and c.output(ids[0]) == "begin\n" and ids[0]
            wait_for(c, started, "begin")
            eid = started(c)
            d.proc.kill()
        finally:
            d.stop(expect=-9)
        with open(os.path.join(self.env.dir, "go"), "w") as f:
            f.write("after\n")  # the command goes on while no daemon runs
        d = self.start()
        try:
            c = d.client()
            w = c.call("process.wait", {"exec_id": eid, "timeout_ms": 30000}, timeout=60)
            self.assertEqual(w["exit_code"], 5, w)
            out = c.call("process.read", {"exec_id": eid})
            self.assertEqual(out["data"], "begin\ngot after\n")
            r = c.call("exec", {"sandbox": "r", "command": "pwd; echo $KEEP"})
            self.assertEqual(r["stdout"], "/tmp\n1\n")
            c.call("sandbox.destroy", {"id": "r"}, timeout=60)
        finally:
            log = d.stop()
        self.assertIn("re-adopted", log)

    def test_daemon_stopped_while_the_exec_starts(self):
        """SIGTERM after the agent ran a background exec but before its STARTED reached the
        daemon (the relay holds what the server sends, so the race is not left to timing): the
        next daemon takes the exec back whole. The one that stopped must not count a line of
        its own ("could not start it") as the exec's output, or the next one resumes from
        beyond what the agent has."""
        tok = "t%s" % os.urandom(6).hex()
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "ssh", "name": "s", "ssh": {"host": "box"}},
                   timeout=60)
            self.env.relay.hold_replies(True)
            # It ends once go exists (made while no daemon runs; or the test's directory
            # went): seen running however slowly the ps below answers.
            go = os.path.join(self.env.dir, "go")
            eid = c.call("exec", {"sandbox": "s", "background": True, "command":
                                  ": %s; echo begin; while [ -d %s ] && [ ! -e %s ]; do "
                                  "sleep 0.05; done; echo end" % (tok, self.env.dir, go)}
                         )["exec_id"]
            deadline = time.monotonic() + 30
            while not remote_pids(self.env, tok):
                self.assertLess(time.monotonic(), deadline, "the exec never ran")
                time.sleep(0.02)
        finally:
            log = d.stop()
            self.env.relay.hold_replies(False)
        self.assertNotIn("could not start", log)
        open(go, "w").close()
        d = self.start()
        try:
            c = d.client()
            assert_taken_back_whole(self, c, eid, "begin\nend\n")
            c.call("sandbox.destroy", {"id": "s"}, timeout=60)
        finally:
            log = d.stop()
        self.assertNotIn("RESUME", log)

    def test_daemon_stopped_while_a_destroy_waits(self):
        """SIGTERM while sandbox.destroy waits for an exec whose link is down: the destroy is
        given up with an error saying so (not carried on into a backend already shut down:
        a use after free), and the next daemon re-adopts the sandbox and destroys it."""
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "ssh", "name": "k", "ssh": {"host": "box"}},
                   timeout=60)
            c.call("exec", {"sandbox": "k", "background": True, "command": "sleep 600"})
            self.env.relay.set_accepting(False)
            self.assertGreater(self.env.relay.blackhole(), 0)
            wait_for(c, lambda c: any(s["state"] == "reconnecting" for s in states(c)),
                     "reconnecting")
            rid = next(c.ids)
            c.send({"jsonrpc": "2.0", "id": rid, "method": "sandbox.destroy",
                    "params": {"id": "k"}})
            c.call("sandbox.list", {})  # the destroy is under way
            d.proc.send_signal(signal.SIGTERM)
            wait_for(c, lambda c: rid in c.responses, "the destroy's answer")
            res = c.responses.pop(rid)
        finally:
            log = d.stop()
            self.env.relay.set_accepting(True)
        self.assertEqual(res["error"]["code"], -32006, res)
        self.assertIn("kept for the next daemon", res["error"]["message"])
        self.assertNotIn("destroy:", log)
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.destroy", {"id": "k"}, timeout=60)
        finally:
            log = d.stop()
        self.assertIn("re-adopted", log)
        self.assertEqual(remote_pids(self.env, self.env.remote), [])


class SshRemoteHome(unittest.TestCase):
    """The policy judges an ssh exec with the HOME it really gets there (the remote account's,
    here a directory of the test's: sshd sets HOME), not the caller's local one (nobody's,
    /nonexistent); before the sandbox exists (policy.check's preview) that home is unknown and
    a change to a path that may be it is asked, never allowed. Root daemon, caller nobody;
    ask_isolated = ask, so that what is asked is settled (nobody approves: denied)."""

    @classmethod
    def setUpClass(cls):
        cls.home = tempfile.mkdtemp(prefix="sbxrhome-")
        cls.addClassCleanup(shutil.rmtree, cls.home, True)
        os.chmod(cls.home, 0o755)
        cls.env = class_resource(cls, SshEnv, "", {"HOME": cls.home})
        key = os.path.join(cls.env.dir, "nobody_key")
        shutil.copy(cls.env.sshd.user_key, key)
        os.chown(key, NOBODY, NOBODY)
        os.chmod(key, 0o600)
        cls.ssh = {"host": "127.0.0.1", "port": cls.env.relay.port, "user": "root",
                   "identity_file": key, "host_key_policy": "accept-new"}
        cls.d = class_resource(cls, Daemon, "[daemon]\nallow_users = nobody\n"
                               "socket_group = nogroup\n" +
                               cls.env.config("", "client_hosts = 127.0.0.1\n"
                                              "ask_isolated = ask\n"))
        os.chmod(cls.d.dir, 0o755)

    def test_judged_with_the_remote_home(self):
        h = self.home
        with open(os.path.join(h, "keep"), "w") as f:
            f.write("x")
        moves = ["mv %s %s.gone" % (h, h), "rsync -a --delete %s/ %s/" % (self.env.dir, h),
                 "rm -rf %s" % h]
        put = "echo x > %s/.local/bin/ls" % h  # a start-up file of the remote home
        calls = [["policy.check", {"command": put, "backend": "ssh"}],
                 ["policy.check", {"command": put, "backend": "local"}]]
        calls += [["policy.check", {"command": c, "backend": "ssh"}] for c in moves]
        calls += [["sandbox.create", {"backend": "ssh", "name": "rh", "ssh": self.ssh}],
                  ["exec", {"sandbox": "rh", "argv": ["sh", "-c", "echo $HOME"]}]]
        calls += [["policy.check", {"command": c, "sandbox": "rh"}] for c in moves]
        # The first command of the sandbox (no shell state yet), as the agent would send it.
        calls += [["exec", {"sandbox": "rh", "command": moves[0]}],
                  ["exec", {"sandbox": "rh", "command": "cd; rm -rf *"}],
                  # A program in the remote home's PATH directories is a start-up file there.
                  ["file.write", {"sandbox": "rh", "path": h + "/.local/bin/ls", "data": "x",
                                  "mkdir": True}],
                  ["sandbox.destroy", {"id": "rh"}]]
        res = as_nobody(self.d.socket, calls)
        for r, want in zip(res[:2], ("ask", "allow")):  # local: nobody's home is elsewhere
            self.assertEqual(r["result"]["verdict"], want, r)
        self.assertIn("write.startup", json.dumps(res[0]), res[0])
        res = res[2:]
        preview, made, (echo,), checks, execs, (put,) = (res[:3], res[3], res[4:5], res[5:8],
                                                         res[8:10], res[10:11])
        for c, r in zip(moves, preview):
            r = r["result"]
            self.assertEqual(r["verdict"], "ask", (c, r))
            self.assertIn("home.unknown", [f["rule"] for f in r["findings"]], (c, r))
        self.assertEqual(made["result"]["workdir"], h, made)
        self.assertEqual(echo["result"]["stdout"], h + "\n", echo)
        for c, r in zip(moves, checks):
            r = r["result"]
            self.assertEqual(r["verdict"], "deny", (c, r))
            self.assertIn("floor.rm-home", [f["rule"] for f in r["findings"]], (c, r))
        for r in execs:
            self.assertEqual(r.get("error", {}).get("code"), -32001, r)
            self.assertEqual(r["error"]["data"]["verdict"], "deny", r)
        self.assertEqual(put.get("error", {}).get("code"), -32001, put)
        self.assertIn("write.startup", json.dumps(put["error"]["data"]), put)
        self.assertIn("keep", os.listdir(h))  # nothing of it was touched
        self.assertFalse(os.path.exists(h + "/.local/bin/ls"))
        self.assertFalse(os.path.exists(h + ".gone"))


class SshPlain(SshClass):
    """agent = off: one exec channel per command, said in the details; as correct as the
    agent where it can be, and honest where it cannot (a dropped link loses the exec)."""

    @classmethod
    def entries(cls):
        return cls.env.box(extra="agent = off\n")

    def test_plain_exec_channels(self):
        c = self.daemon.client()
        sb = c.call("sandbox.create", {"backend": "ssh", "name": "p", "ssh": {"host": "box"}},
                    timeout=60)
        self.assertEqual(sb["details"]["exec"], "plain exec channels")
        self.assertIn("agent = off", sb["details"]["note"])
        self.assertIn("plain exec channels", c.call("backend.list")["backends"][2]["details"]
                      ["exec"])
        r = c.call("exec", {"sandbox": "p", "command": "echo out; echo err >&2; exit 4"})
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("out\n", "err\n", 4))
        c.call("exec", {"sandbox": "p", "command": "cd /tmp; export PLAIN=yes"})
        r = c.call("exec", {"sandbox": "p", "command": "pwd; echo $PLAIN",
                            "stdin": "ignored"})
        self.assertEqual(r["stdout"], "/tmp\nyes\n")
        r = c.call("exec", {"sandbox": "p", "argv": ["wc", "-c"], "stdin": "12345"})
        self.assertEqual(r["stdout"].strip(), "5")
        secs = uniq_secs(302)
        r = c.call("exec", {"sandbox": "p", "command": "sleep %s & sleep %s" % (secs, secs),
                            "timeout_s": 1}, timeout=60)
        self.assertTrue(r["timed_out"])
        self.assertEqual(remote_pids(self.env, secs), [])
        data = os.urandom(70000)
        path = os.path.join(self.env.dir, "plain.bin")
        c.call("file.write", {"sandbox": "p", "path": path, "data_base64": b64(data)})
        got = c.call("file.read", {"sandbox": "p", "path": path, "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(got["data"]), data)
        c.call("sandbox.destroy", {"id": "p"}, timeout=60)
        c.close()

    def test_plain_exec_lost_with_the_link_and_killed_after(self):
        c = self.daemon.client()
        c.call("sandbox.create", {"backend": "ssh", "name": "q", "ssh": {"host": "box"}},
               timeout=60)
        secs = uniq_secs(303)
        rid = start_exec(c, {"sandbox": "q", "command": "echo started; sleep %s" % secs})
        wait_for(c, lambda c: any(n["method"] == "exec.output" for n in c.notifications),
                 "output")
        self.assertTrue(remote_pids(self.env, secs))  # the shell and sleep, or sleep alone
        self.env.relay.cut()
        wait_for(c, lambda c: rid in c.responses, "the exec's answer")
        err = c.responses.pop(rid)["error"]
        self.assertEqual(err["code"], -32005, err)
        self.assertIn("cannot be resumed", err["message"])
        self.assertIn("127.0.0.1", err["message"])
        r = c.call("exec", {"sandbox": "q", "argv": ["true"]})  # a new connection...
        self.assertEqual(r["exit_code"], 0)
        deadline = time.monotonic() + 20
        while remote_pids(self.env, secs):  # ...kills the lost tree
            self.assertLess(time.monotonic(), deadline, "the lost tree still runs")
        c.call("sandbox.destroy", {"id": "q"}, timeout=60)
        c.close()


class SshForeignArch(unittest.TestCase):
    """A remote system this daemon has no agent for (uname -m says aarch64): plain exec
    channels, and the details say why."""

    def test_plain_where_no_agent_exists(self):
        fake = tempfile.mkdtemp(prefix="sbxfake-")
        os.chmod(fake, 0o755)
        with open(os.path.join(fake, "uname"), "w") as f:
            f.write('#!/bin/sh\ncase "$1" in -m) echo aarch64;; *) exec /bin/uname "$@";; esac\n')
        os.chmod(os.path.join(fake, "uname"), 0o755)
        env = SshEnv(sshd_env={"PATH": "%s:/usr/bin:/bin" % fake})
        env.trust()
        d = Daemon(env.config(env.box()))
        try:
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "ssh", "name": "arm", "ssh": {"host": "box"}},
                        timeout=60)
            self.assertEqual((sb["details"]["exec"], sb["details"]["remote_arch"]),
                             ("plain exec channels", "aarch64"), sb["details"])
            self.assertIn("no sandboxd-agent for Linux aarch64", sb["details"]["note"])
            self.assertFalse(os.path.exists(env.remote))  # nothing was installed
            r = c.call("exec", {"sandbox": "arm", "command": "echo plain; exit 2"})
            self.assertEqual((r["stdout"], r["exit_code"]), ("plain\n", 2))
            c.call("sandbox.destroy", {"id": "arm"}, timeout=60)
            c.close()
        finally:
            d.stop()
            env.stop()
            shutil.rmtree(fake, ignore_errors=True)


class SshGivesUp(unittest.TestCase):
    """A link down past reconnect_ms: the exec fails with -32005 naming the host and the cause,
    the sandbox is "lost"; the next exec reconnects and the old tree is killed there."""

    def test_past_the_window(self):
        env = SshEnv()
        env.trust()
        d = Daemon(env.config(env.box()).replace("reconnect_ms = 20000", "reconnect_ms = 2500"))
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "ssh", "name": "w", "ssh": {"host": "box"}},
                   timeout=60)
            secs = uniq_secs(304)
            rid = start_exec(c, {"sandbox": "w", "command": "echo up; sleep %s" % secs})
            wait_for(c, lambda c: any(n["method"] == "exec.output" for n in c.notifications),
                     "output")
            env.relay.set_accepting(False)
            env.relay.cut()
            wait_for(c, lambda c: rid in c.responses, "the exec's answer", 60)
            err = c.responses.pop(rid)["error"]
            self.assertEqual((err["code"], err["data"]["backend"]), (-32005, "ssh"), err)
            self.assertIn("127.0.0.1", err["data"]["detail"])
            self.assertIn("giving up", err["data"]["detail"])
            wait_for(c, lambda c: states(c) and states(c)[-1]["state"] == "lost", "lost")
            self.assertEqual(c.call("sandbox.get", {"id": "w"})["state"], "lost")
            self.assertTrue(remote_pids(env, secs))  # it still runs over there
            env.relay.set_accepting(True)
            r = c.call("exec", {"sandbox": "w", "argv": ["echo", "back"]}, timeout=60)
            self.assertEqual(r["stdout"], "back\n")
            deadline = time.monotonic() + 20
            while remote_pids(env, secs):
                self.assertLess(time.monotonic(), deadline, "the lost tree was not killed")
            c.call("sandbox.destroy", {"id": "w"}, timeout=60)
            c.close()
        finally:
            d.stop()
            env.stop()


class SshConfig(unittest.TestCase):
    """Host entries are sections [backend.ssh.NAME], checked like the others; a jump_host the
    backend cannot follow (no such entry, itself, a chain or a loop) stops the daemon, naming
    the file and line, instead of being ignored."""

    def run_daemon(self, text, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
            f.write(text)
            f.flush()
            state = tempfile.mkdtemp(prefix="sbxcfg-")
            try:
                return subprocess.run([SANDBOXD, "--config", f.name, "--socket",
                                       state + "/s.sock", "--state-dir", state] + list(args),
                                      capture_output=True, text=True, timeout=30)
            finally:
                shutil.rmtree(state, ignore_errors=True)

    def test_sections_checked(self):
        base = "[backend.ssh.box]\nhost = h\nuser = u\nidentity_file = /k\n"
        for text, want in ((base + "hostt = x\n", "unknown key 'hostt' in section "
                            "[backend.ssh.box]"),
                           ("[backend.docker.box]\nhost = x\n",
                            "backend 'docker' has no named sub-sections"),
                           ("[backend.ssh.b/x]\nhost = x\n", "'b/x' is not a valid name"),
                           (base + "port = many\n", "port: a port from 1 to 65535"),
                           ("[backend.ssh]\nping_ms = often\n", "ping_ms must be a whole number"),
                           ("[backend.ssh]\nsections = x\n", "sections is where"),
                           (base + "jump_host = other\n",
                            "jump_host: no host entry [backend.ssh.other]"),
                           (base + "jump_host = box\n", "'box' is this entry itself"),
                           (base + "jump_host = b\n" + base.replace(".box]", ".b]") +
                            "jump_host = box\n", "'b' has a jump_host of its own ('box'): "
                            "chains of jump hosts are not supported")):
            with self.subTest(want=want):
                p = self.run_daemon(text, "--check-config")
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(want, p.stderr)
        self.assertEqual(self.run_daemon(base, "--check-config").returncode, 0)
        self.assertEqual(self.run_daemon(base + "jump_host = b\n" + base.replace(".box]", ".b]"),
                                         "--check-config").returncode, 0)

    def test_bad_jump_host_stops_the_daemon_naming_the_line(self):
        p = self.run_daemon("[backend.ssh.box]\nhost = h\nuser = u\nidentity_file = /k\n"
                            "jump_host = other\n")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(".conf:5: [backend.ssh.box] jump_host: no host entry", p.stderr)


if __name__ == "__main__":
    unittest.main()
