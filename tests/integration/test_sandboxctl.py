"""sandboxctl against the real sandboxd: exec streaming and exit codes, stdin, background and
logs, ps/kill/wait, sandboxes, backends/info, call, check, approvals on a terminal and without.
"""
import hashlib
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.environ.get("SANDBOXCTL_BIN", os.path.join(ROOT, "build", "std", "sandboxctl"))
if not os.path.isabs(CTL):
    CTL = os.path.abspath(CTL)
TIMEOUT = 60


def run(args, env=None, **kw):
    kw.setdefault("timeout", TIMEOUT)
    kw.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([CTL] + args, capture_output=True, env=env, **kw)


class NoDaemonTest(unittest.TestCase):
    """Command-line handling and socket lookup; nothing listens on the socket."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ctl-nodaemon-")
        self.sock = os.path.join(self.tmp, "none.sock")
        self.env = dict(os.environ, SANDBOXD_SOCKET=self.sock)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_help_everywhere(self):
        for cmd in (["--help"], ["exec", "--help"], ["ps", "-h"], ["logs", "--help"],
                    ["kill", "--help"], ["wait", "--help"], ["sandbox", "--help"],
                    ["sandbox", "create", "--help"], ["sandbox", "ls", "--help"],
                    ["sandbox", "get", "--help"], ["sandbox", "rm", "--help"],
                    ["backends", "--help"], ["info", "--help"], ["check", "--help"],
                    ["call", "--help"], ["help", "exec"]):
            with self.subTest(cmd=cmd):
                r = run(cmd, env=self.env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(b"Usage: sandboxctl", r.stdout)

    def test_usage_errors_exit_64(self):
        for cmd in (["frobnicate"], ["exec"], ["exec", "--timeout", "soon", "--", "true"],
                    ["exec", "--timeout", "-1", "--", "true"], ["exec", "-e", "NOEQUALS", "true"],
                    ["exec", "-e", "1X=2", "true"], ["exec", "--timeout", "0", "--", "true"],
                    ["exec", "--bogus", "true"], ["exec", "-s"], ["ps", "extra"], ["logs"],
                    ["kill", "a", "b"], ["wait", "--timeout", "x", "p_1"], ["sandbox"],
                    ["sandbox", "explode"], ["sandbox", "get"], ["sandbox", "rm"],
                    ["sandbox", "create", "--spec", "[1]"], ["sandbox", "create", "--spec", "{"],
                    ["check"], ["call"], ["call", "m", "not json"], ["call", "m", "3"],
                    ["call", "a", "{}", "extra"], ["--no-such-global"]):
            with self.subTest(cmd=cmd):
                r = run(cmd, env=self.env)
                self.assertEqual(r.returncode, 64, (r.stdout, r.stderr))
                self.assertIn(b"sandboxctl", r.stderr)

    def test_socket_lookup(self):
        r = run(["ps"], env=self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn(self.sock.encode(), r.stderr)
        other = os.path.join(self.tmp, "other.sock")
        r = run(["--socket", other, "ps"], env=self.env)
        self.assertIn(other.encode(), r.stderr)
        r = run(["ps", "--socket", other], env=self.env)
        self.assertIn(other.encode(), r.stderr)
        if os.geteuid() == 0:
            # The root default, whatever listens there on this host: in a mount namespace of
            # its own, /run is an empty tmpfs (issue 17: a running sandboxd made this fail).
            env = {k: v for k, v in os.environ.items() if k != "SANDBOXD_SOCKET"}
            p = subprocess.run(["unshare", "--mount", "sh", "-c",
                                'mount -t tmpfs none /run && exec "$0" info', CTL],
                               capture_output=True, env=env, timeout=TIMEOUT,
                               stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(b"cannot connect to /run/sandboxd/sandboxd.sock", p.stderr)

    def test_exec_failure_is_125(self):
        r = run(["exec", "--", "true"], env=self.env)
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"cannot connect", r.stderr)


class CtlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ctl-test-")
        os.chmod(cls.tmp, 0o755)
        # The commands share files with the test in cls.tmp, writable in the default sandbox
        # whatever its isolation; and `rm -r` asks there (an isolated sandbox asks too with
        # ask_isolated = ask).
        cls.daemon = harness.Daemon("[backend.local]\nwritable_paths = %s\n"
                                    "[policy]\nask_isolated = ask\n" % cls.tmp)
        cls.env = dict(os.environ, SANDBOXD_SOCKET=cls.daemon.socket)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ctl(self, *args, **kw):
        return run(list(args), env=self.env, **kw)

    def ok(self, *args, **kw):
        r = self.ctl(*args, **kw)
        self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))
        return r

    # exec ------------------------------------------------------------------------------

    def test_exec_output_and_exit_code(self):
        r = self.ctl("exec", "--", "echo out; echo err >&2; exit 7")
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertEqual(r.stdout, b"out\n")
        self.assertEqual(r.stderr, b"err\n")

    def test_exec_words_quoted_and_argv(self):
        r = self.ok("exec", "--", "printf", "%s|", "a", "b")
        self.assertEqual(r.stdout, b"a|b|")
        # As typed in a local shell: each word stays one word (issue 17: not joined ssh-style).
        f = os.path.join(self.tmp, "words.txt")
        with open(f, "w") as fh:
            fh.write("x a b y\n")
        os.chmod(f, 0o644)
        r = self.ok("exec", "--", "grep", "-l", "a b", f)
        self.assertEqual(r.stdout, f.encode() + b"\n")
        r = self.ok("exec", "--", "printf", "[%s]", "it's", "$HOME", "", "*")
        self.assertEqual(r.stdout, b"[it's][$HOME][][*]")
        r = self.ok("exec", "--", "echo $((1+2)) | tr 3 x")
        self.assertEqual(r.stdout, b"x\n", "a single word is a shell command")
        r = self.ok("exec", "--argv", "--", "printf", "%s|", "a b", "$HOME")
        self.assertEqual(r.stdout, b"a b|$HOME|")

    def test_exec_binary_exact(self):
        r = self.ok("exec", "--", r"printf '\377\000\001ok\n'")
        self.assertEqual(r.stdout, b"\xff\x00\x01ok\n")

    def test_exec_streams_live(self):
        p = subprocess.Popen([CTL, "exec", "--", "echo first; sleep 30; echo never"],
                             env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            ready, _, _ = select.select([p.stdout], [], [], 20)
            self.assertTrue(ready, "no output within 20 s")
            self.assertEqual(p.stdout.readline(), b"first\n")
            self.assertIsNone(p.poll())
        finally:
            p.kill()
            p.communicate()

    def test_exec_signal_and_timeout(self):
        r = self.ctl("exec", "--", "kill -KILL $$")
        self.assertEqual(r.returncode, 128 + 9, r.stderr)
        r = self.ctl("exec", "--timeout", "1", "--", "echo before; sleep 30")
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(r.stdout, b"before\n")
        self.assertIn(b"timed out", r.stderr)

    def test_exec_pty_interactive(self):
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(self.env)
            os.execv(CTL, [CTL, "exec", "--pty", "--", "tty; read x; echo got $x; exit 3"])
        out, deadline = b"", time.monotonic() + TIMEOUT
        try:
            while b"/dev/" not in out and time.monotonic() < deadline:
                if select.select([fd], [], [], 1)[0]:
                    out += os.read(fd, 4096)
            os.write(fd, b"abc\r")
            while b"got abc" not in out and time.monotonic() < deadline:
                if select.select([fd], [], [], 1)[0]:
                    try:
                        out += os.read(fd, 4096)
                    except OSError:
                        break
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(fd)
        self.assertIn(b"got abc", out)
        self.assertEqual(os.waitstatus_to_exitcode(status), 3, out)

    def test_exec_env_cwd(self):
        r = self.ok("exec", "-e", "FOO=bar baz", "-w", "/tmp", "--", 'echo "$FOO" "$PWD"')
        self.assertEqual(r.stdout, b"bar baz /tmp\n")

    def test_exec_stdin_pipe(self):
        r = self.ok("exec", "--", "tr a-z A-Z", input=b"hello\n", stdin=None)
        self.assertEqual(r.stdout, b"HELLO\n")
        r = self.ok("exec", "-n", "--", "cat; echo end", input=b"ignored", stdin=None)
        self.assertEqual(r.stdout, b"end\n")

    def test_exec_stdin_large_streamed(self):
        data = os.urandom(1 << 20) * 6  # over the 4 MiB inline limit
        r = self.ok("exec", "--", "sha256sum", input=data, stdin=None, timeout=120)
        self.assertEqual(r.stdout.split()[0].decode(), hashlib.sha256(data).hexdigest())

    def test_exec_stdin_streamed_while_another_exec_runs(self):
        """The exec waits for the sandbox's shell while stdin is streamed (issue 17)."""
        self.ok("sandbox", "create", "-n", "stdin-queue")
        self.addCleanup(self.ctl, "sandbox", "rm", "stdin-queue")
        first = subprocess.Popen([CTL, "exec", "-s", "stdin-queue", "--", "sleep 2"],
                                 env=self.env, stdin=subprocess.DEVNULL)
        self.addCleanup(first.wait, TIMEOUT)
        while not json.loads(self.ok("--json", "ps", "-s", "stdin-queue").stdout)["processes"]:
            pass
        data = b"z" * (10 << 20)
        r = self.ok("exec", "-s", "stdin-queue", "--", "wc -c", input=data, stdin=None,
                    timeout=120)
        self.assertEqual(r.stdout.strip(), str(len(data)).encode())
        self.assertEqual(first.wait(TIMEOUT), 0)

    def test_exec_large_output(self):
        r = self.ok("exec", "--", "head -c 20000000 /dev/zero | tr '\\0' x", timeout=120)
        self.assertEqual(len(r.stdout), 20000000)
        self.assertEqual(r.stdout.strip(b"x"), b"")
        self.assertNotIn(b"incomplete", r.stderr)

    def test_exec_json(self):
        r = self.ctl("--json", "exec", "--", "echo j; exit 5")
        self.assertEqual(r.returncode, 5)
        res = json.loads(r.stdout)
        self.assertEqual(res["stdout"], "j\n")
        self.assertEqual(res["exit_code"], 5)

    def test_exec_error_is_125(self):
        r = self.ctl("exec", "-s", "no-such-sandbox", "--", "true")
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"-32002", r.stderr)

    # background, logs, ps, kill, wait --------------------------------------------------

    def test_background_logs_follow(self):
        r = self.ok("exec", "--background", "--", "for i in 1 2 3; do echo $i; sleep 0.3; done")
        eid = r.stdout.decode().strip()
        self.assertTrue(eid.startswith("p_"), eid)
        r = self.ok("logs", "-f", eid)
        self.assertEqual(r.stdout, b"1\n2\n3\n")
        r = self.ok("logs", eid)
        self.assertEqual(r.stdout, b"1\n2\n3\n")
        r = self.ok("wait", eid)
        self.assertEqual(r.stdout, b"exit 0\n")

    def test_logs_follow_shows_both_streams(self):
        # logs -f is already following when the exec writes anything (it waits on a fifo):
        # stdout goes to stdout, stderr to stderr, both live, until the exec ends.
        gate = os.path.join(self.tmp, "gate-%d" % os.getpid())
        os.mkfifo(gate)
        self.addCleanup(os.unlink, gate)
        eid = self.ok("exec", "--background", "--",
                      "cat %s >/dev/null; echo o1; echo e1 >&2; echo o2; echo e2 >&2; exit 3"
                      % gate).stdout.decode().strip()
        logs = subprocess.Popen([CTL, "logs", "-f", eid], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while True:  # the exec's cat has the fifo open once a writer can open it
            try:
                os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))  # its EOF lets it go on
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline, "the exec never read the gate")
                time.sleep(0.02)
        out, err = logs.communicate(timeout=TIMEOUT)
        self.assertEqual((out, err, logs.returncode), (b"o1\no2\n", b"e1\ne2\n", 0))
        w = self.ctl("wait", eid)
        self.assertEqual((w.stdout, w.returncode), (b"exit 3\n", 3))

    def test_logs_stderr(self):
        eid = self.ok("exec", "--background", "--", "echo o; echo e >&2").stdout.decode().strip()
        self.ok("wait", eid)
        self.assertEqual(self.ok("logs", "--stderr", eid).stdout, b"e\n")

    def test_ps_kill_wait(self):
        tag = "t%d" % os.getpid()
        eid = self.ok("exec", "--background", "--tag", tag, "--", "sleep 60").stdout.decode().strip()
        ps = self.ok("ps").stdout.decode()
        self.assertIn(eid, ps)
        self.assertIn(tag, ps)
        self.assertIn("EXEC_ID", ps.splitlines()[0])
        listed = json.loads(self.ok("ps", "--json").stdout)["processes"]
        self.assertIn(eid, [p["exec_id"] for p in listed])
        r = self.ctl("wait", "--timeout", "0.2", eid)
        self.assertEqual((r.returncode, r.stdout), (124, b"running\n"))
        self.assertEqual(self.ok("kill", "--grace", "500", eid).stdout.decode().strip(), eid)
        r = self.ctl("wait", eid)
        self.assertIn(r.returncode, (128 + signal.SIGTERM, 128 + signal.SIGKILL), r.stdout)
        self.assertNotIn(eid, self.ok("ps").stdout.decode())
        self.assertIn(eid, self.ok("ps", "--all").stdout.decode())

    def test_kill_unknown(self):
        r = self.ctl("kill", "p_doesnotexist")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-32003", r.stderr)

    # sandboxes -------------------------------------------------------------------------

    def test_sandbox_lifecycle(self):
        name = "ctl-box-%d" % os.getpid()
        sid = self.ok("sandbox", "create", "--name", name, "-e", "GREET=hi").stdout.decode().strip()
        self.assertTrue(sid.startswith("sbx_"), sid)
        again = self.ok("sandbox", "create", "-n", name).stdout.decode().strip()
        self.assertEqual(again, sid + " (reused)")
        self.assertIn(sid, self.ok("sandbox", "ls").stdout.decode())
        got = self.ok("sandbox", "get", name).stdout.decode()
        self.assertIn("name:", got)
        self.assertIn(name, got)
        got = json.loads(self.ok("sandbox", "get", "--json", sid).stdout)
        self.assertEqual(got["id"], sid)
        self.assertEqual(self.ok("exec", "-s", name, "--", "echo $GREET").stdout, b"hi\n")
        self.assertEqual(self.ok("sandbox", "rm", name).stdout.decode().strip(), sid)
        r = self.ctl("sandbox", "get", sid)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-32002", r.stderr)

    def test_sandbox_create_spec(self):
        name = "ctl-spec-%d" % os.getpid()
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"name": "overridden", "env": {"A": "1"}}, f)
        res = json.loads(self.ok("sandbox", "create", "--spec", "@" + spec, "--name", name,
                                 "--json").stdout)
        self.assertEqual(res["name"], name)
        self.assertEqual(self.ok("exec", "-s", name, "--", "echo $A").stdout, b"1\n")
        self.ok("sandbox", "rm", name)
        r = self.ctl("sandbox", "create", "--backend", "vmware")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-32602", r.stderr)

    def test_backends_info(self):
        out = self.ok("backends").stdout.decode()
        self.assertIn("NAME", out.splitlines()[0])
        self.assertTrue(any(l.split()[:2] == ["local", "yes"] for l in out.splitlines()), out)
        names = [b["name"] for b in json.loads(self.ok("backends", "--json").stdout)["backends"]]
        self.assertIn("local", names)
        info = json.loads(self.ok("info", "--json").stdout)
        self.assertEqual(info["pid"], self.daemon.proc.pid)
        self.assertIn("version:", self.ok("info").stdout.decode())

    # call, check -----------------------------------------------------------------------

    def test_call(self):
        res = json.loads(self.ok("call", "daemon.info").stdout)
        self.assertEqual(res["protocol"], 1)
        r = self.ok("call", "exec", '{"command":"echo hi"}')
        self.assertEqual(json.loads(r.stdout)["stdout"], "hi\n")
        notes = [json.loads(l) for l in r.stderr.splitlines()]
        self.assertIn("exec.output", [n["method"] for n in notes])
        r = self.ok("call", "policy.check", "-", input=b'{"command":"true"}', stdin=None)
        self.assertEqual(json.loads(r.stdout)["verdict"], "allow")
        r = self.ctl("call", "no.such.method")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"-32601", r.stderr)
        r = self.ctl("call", "exec", '{"command":"true","timeout_s":"x"}')
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"timeout_s", r.stderr)

    def test_check(self):
        r = self.ctl("check", "ls -l")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"verdict: allow", r.stdout)
        r = self.ctl("check", "rm", "-r", "/tmp/some-dir")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(b"verdict: ask", r.stdout)
        self.assertIn(b"delete.recursive", r.stdout)
        r = self.ctl("check", "rm -rf /")
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(b"verdict: deny", r.stdout)
        self.assertEqual(json.loads(self.ctl("check", "--json", "rm -rf /").stdout)["verdict"],
                         "deny")

    # approvals -------------------------------------------------------------------------

    def victim(self):
        d = tempfile.mkdtemp(prefix="victim-", dir=self.tmp)
        os.chmod(d, 0o777)
        return d

    def test_approval_without_terminal_denies(self):
        d = self.victim()
        r = self.ctl("exec", "--", "rm -r " + d, start_new_session=True)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(b"no terminal", r.stderr)
        self.assertIn(b"-32001", r.stderr)
        self.assertTrue(os.path.isdir(d))

    def run_on_pty(self, args, answer):
        """Runs sandboxctl on a new terminal, answers the prompt; returns (status, output)."""
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(self.env)
            os.execv(CTL, [CTL] + args)
        out, deadline = b"", time.monotonic() + TIMEOUT
        try:
            while b"left): " not in out and time.monotonic() < deadline:
                if select.select([fd], [], [], 1)[0]:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:  # EIO: sandboxctl ended without asking
                        chunk = b""
                    if not chunk:
                        break
                    out += chunk
            self.assertIn(b"left): ", out, "no approval prompt")
            os.write(fd, answer)
            while time.monotonic() < deadline:
                if select.select([fd], [], [], 1)[0]:
                    try:
                        chunk = os.read(fd, 4096)
                    except OSError:
                        break
                    if not chunk:
                        break
                    out += chunk
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(fd)
        return os.waitstatus_to_exitcode(status), out

    def test_approval_on_terminal_once(self):
        d = self.victim()
        status, out = self.run_on_pty(["exec", "--", "rm -r %s && echo removed" % d], b"o\n")
        self.assertIn(b"sandboxd asks for approval", out)
        self.assertIn(b"delete.recursive", out)
        self.assertIn(d.encode(), out)
        self.assertEqual(status, 0, out)
        self.assertIn(b"removed", out)
        self.assertFalse(os.path.exists(d))

    def test_approval_on_terminal_deny(self):
        d = self.victim()
        status, out = self.run_on_pty(["exec", "--", "rm -r " + d], b"nonsense\nd\n")
        self.assertIn(b"please answer", out)
        self.assertEqual(status, 125, out)
        self.assertTrue(os.path.isdir(d))


if __name__ == "__main__":
    unittest.main()
