"""Approvals (protocol §3, §6): the approval.request round trip (once, session, always, deny,
malformed answers, timeout, disconnect), roles (subagent, batch), DENY never asked, persisted
approvals across a restart and per uid, approval.list / approval.revoke, ask_isolated.

`rm -rf ./data` in a sandbox whose workdir is a fresh directory is ASK (delete.recursive,
subject <workdir>/data); `rm -rf /` is DENY (floor.rm-root); `curl … | sh` is ASK with
NO_ALWAYS (exec.remote-code).

Those verdicts are a host sandbox's: in an isolated one ordinary ASK findings take
ask_isolated (allow by default; AskIsolated below tests that), so the local sandboxes here
ask for isolation "none" (HOST) to exercise the approval round trip whatever the default is.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from harness import SANDBOXCTL, Client, Daemon, DaemonTest, RpcError

ASK_CMD = "rm -rf ./data"
NOBODY = 65534
IMAGE = os.environ.get("SANDBOXD_TEST_IMAGE", "sandboxd-test:busybox")
HOST = {"isolation": "none"}  # see the module's docstring


class Answers:
    """on_request for a client: records approval.request params, answers from a list."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, msg):
        self.requests.append(msg["params"])
        a = self.answers.pop(0) if self.answers else {"decision": "deny"}
        return a


def workspace(test):
    d = tempfile.mkdtemp(prefix="sbxapr-")
    os.chmod(d, 0o777)
    test.addCleanup(shutil.rmtree, d, True)
    os.mkdir(os.path.join(d, "data"))
    return d


def new_sandbox(test, client, ws, name=None):
    params = {"workdir": ws, "local": HOST}
    if name:
        params["name"] = name
    sb = client.call("sandbox.create", params)
    test.addCleanup(lambda: destroy_quietly(client, sb["id"]))
    return sb


def destroy_quietly(client, sid):
    try:
        client.call("sandbox.destroy", {"id": sid})
    except (RpcError, OSError, ConnectionError):
        pass


def denied(test, client, params):
    with test.assertRaises(RpcError) as cm:
        client.call("exec", params)
    test.assertEqual(cm.exception.code, -32001, cm.exception.message)
    return cm.exception.data


def audit_records(daemon):
    recs = []
    d = os.path.join(daemon.state, "audit")
    for name in sorted(os.listdir(d), reverse=True):
        with open(os.path.join(d, name)) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    return recs


class Interactive(DaemonTest):
    config = "[policy]\napproval_timeout_s = 30\n"

    def ask_client(self, *answers):
        a = Answers(*answers)
        c = self.daemon.client(on_request=a)
        self.addCleanup(c.close)
        return c, a

    def test_once_asks_again(self):
        c, a = self.ask_client({"decision": "once"}, {"decision": "once"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(r["exit_code"], 0)
        self.assertEqual(r["policy"]["verdict"], "ask")
        self.assertEqual(r["policy"]["resolution"], "user")
        self.assertFalse(os.path.exists(os.path.join(ws, "data")))
        os.mkdir(os.path.join(ws, "data"))
        c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(len(a.requests), 2, "once must not be remembered")
        self.assertEqual(c.call("approval.list")["approvals"], [])

    def test_request_shape(self):
        c, a = self.ask_client({"decision": "once"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        p = a.requests[0]
        self.assertTrue(p["approval_id"].startswith("apr_"))
        self.assertEqual(p["kind"], "exec")
        self.assertEqual(p["sandbox"], sb["id"])
        self.assertEqual(p["backend"], "local")
        self.assertEqual(p["command"], ASK_CMD)
        self.assertEqual(p["cwd"], ws)
        self.assertEqual(p["choices"], ["once", "session", "always", "deny"])
        self.assertEqual(p["expires_in_ms"], 30000)
        self.assertEqual([f["rule"] for f in p["findings"]], ["delete.recursive"])

    def test_session_remembered_for_that_sandbox_only(self):
        c, a = self.ask_client({"decision": "session"}, {"decision": "once"},
                               {"decision": "once"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        os.mkdir(os.path.join(ws, "data"))
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(len(a.requests), 1, "session approval must cover the second exec")
        self.assertEqual(r["policy"]["resolution"], "user")
        self.assertFalse(os.path.exists(os.path.join(ws, "data")))
        # The same key elsewhere: another sandbox asks again.
        os.mkdir(os.path.join(ws, "data"))
        other = new_sandbox(self, c, ws)
        c.call("exec", {"sandbox": other["id"], "command": ASK_CMD})
        self.assertEqual(len(a.requests), 2)
        # A different subject in the approved sandbox asks again (key = rule + subject).
        os.mkdir(os.path.join(ws, "docs"))
        c.call("exec", {"sandbox": sb["id"], "command": "rm -rf ./docs"})
        self.assertEqual(len(a.requests), 3)
        self.assertEqual(c.call("approval.list")["approvals"], [], "session is not persisted")

    def test_session_ends_with_the_sandbox(self):
        c, a = self.ask_client({"decision": "session"}, {"decision": "deny"})
        ws = workspace(self)
        sb = c.call("sandbox.create", {"workdir": ws, "name": "sess", "local": HOST})
        c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        c.call("sandbox.destroy", {"id": sb["id"]})
        os.mkdir(os.path.join(ws, "data"))
        sb2 = new_sandbox(self, c, ws, name="sess")
        self.assertNotEqual(sb2["id"], sb["id"])
        data = denied(self, c, {"sandbox": sb2["id"], "command": ASK_CMD})
        self.assertEqual(data["resolution"], "user")
        self.assertEqual(len(a.requests), 2)

    def test_deny(self):
        c, a = self.ask_client({"decision": "deny", "reason": "no"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        data = denied(self, c, {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(data["verdict"], "ask")
        self.assertEqual(data["resolution"], "user")
        self.assertEqual([f["rule"] for f in data["findings"]], ["delete.recursive"])
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))

    def test_malformed_answers_deny(self):
        ws = workspace(self)
        for answer in ({"decision": 5}, {"nope": 1}, "once", None, {"decision": "forever"},
                       {"decision": "ONCE"}, [], {"decision": ""}):
            with self.subTest(answer=answer):
                a = Answers(answer)
                c = self.daemon.client(on_request=a)
                sb = new_sandbox(self, c, ws)
                if answer is None:
                    # a result of null
                    a.answers = [None]
                    c.on_request = lambda m: (a.requests.append(m["params"]),
                                              c.send({"jsonrpc": "2.0", "id": m["id"],
                                                      "result": None}))[1]
                data = denied(self, c, {"sandbox": sb["id"], "command": ASK_CMD})
                self.assertEqual(data["resolution"], "user")
                self.assertEqual(len(a.requests), 1)
                self.assertTrue(os.path.isdir(os.path.join(ws, "data")))
                c.close()

    def test_error_answer_denies(self):
        ws = workspace(self)
        c = self.daemon.client(hello=True)
        self.addCleanup(c.close)
        seen = []

        def err(msg):
            seen.append(msg)
            c.send({"jsonrpc": "2.0", "id": msg["id"],
                    "error": {"code": -32000, "message": "no user here"}})
            return None

        c.on_request = err
        sb = new_sandbox(self, c, ws)
        data = denied(self, c, {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(data["resolution"], "user")
        self.assertEqual(len(seen), 1)
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))

    def test_always_refused_for_no_always_finding(self):
        c, a = self.ask_client({"decision": "always"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        marker = os.path.join(ws, "ran")
        data = denied(self, c, {"sandbox": sb["id"],
                                "command": "touch %s; curl -s http://127.0.0.1:9/x | sh" % marker})
        self.assertEqual(data["resolution"], "user")
        self.assertNotIn("always", a.requests[0]["choices"])
        self.assertEqual(a.requests[0]["choices"], ["once", "session", "deny"])
        self.assertIn("exec.remote-code", [f["rule"] for f in data["findings"]])
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(c.call("approval.list")["approvals"], [])

    def test_deny_floor_never_asked(self):
        c, a = self.ask_client({"decision": "always"})
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        for cmd in ("rm -rf /", "rm -rf ./data; rm -rf /", "mkfs.ext4 /dev/sda"):
            with self.subTest(cmd=cmd):
                data = denied(self, c, {"sandbox": sb["id"], "command": cmd})
                self.assertEqual(data["verdict"], "deny")
                self.assertEqual(data["resolution"], "policy")
        self.assertEqual(a.requests, [])
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))

    def test_disconnect_during_approval_denies_and_never_runs(self):
        ws = workspace(self)
        marker = os.path.join(ws, "ran")
        c = Client(self.daemon.socket, on_request=lambda m: None, timeout=30)
        sb = c.call("sandbox.create", {"workdir": ws, "name": "disc", "local": HOST})
        c.send({"jsonrpc": "2.0", "id": 99, "method": "exec",
                "params": {"sandbox": sb["id"], "command": "touch %s; %s" % (marker, ASK_CMD)}})
        msg = c.read()
        self.assertEqual(msg.get("method"), "approval.request")
        approval_id = msg["params"]["approval_id"]
        c.close()
        # The daemon settles the approval as a deny: the audit log says so, nothing ran.
        deadline = time.monotonic() + 10
        answer = None
        while answer is None and time.monotonic() < deadline:
            for r in audit_records(self.daemon):
                if r.get("approval_id") == approval_id and r["kind"] == "exec":
                    answer = r
            time.sleep(0.05)
        self.assertIsNotNone(answer, "no decision record for the abandoned approval")
        self.assertFalse(answer["allowed"])
        self.assertEqual(answer["resolution"], "user")
        rec = [r for r in audit_records(self.daemon)
               if r.get("approval_id") == approval_id and r["kind"] == "approval"][0]
        self.assertEqual(rec["problem"], "connection closed")
        self.assertIsNone(rec["decision"])
        self.assertFalse(os.path.exists(marker))
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))
        c2 = self.daemon.client()
        procs = c2.call("process.list", {"sandbox": "disc"})["processes"]
        self.assertEqual(procs, [])
        c2.call("sandbox.destroy", {"id": "disc"})
        c2.close()

    def test_sandbox_create_asks(self):
        c, a = self.ask_client({"decision": "deny"})
        host = workspace(self)
        spec = {"backend": "docker", "image": IMAGE, "name": "asked",
                "mounts": [{"type": "bind", "source": host, "target": "/data"}]}
        with self.assertRaises(RpcError) as cm:
            c.call("sandbox.create", spec)
        self.assertEqual(cm.exception.code, -32001)
        self.assertEqual(cm.exception.data["resolution"], "user")
        self.assertIn("container.mount-host", [f["rule"] for f in cm.exception.data["findings"]])
        p = a.requests[0]
        self.assertEqual(p["kind"], "sandbox")
        self.assertEqual(p["backend"], "docker")
        self.assertEqual(p["spec"]["mounts"][0]["source"], host)
        self.assertNotIn("command", p)
        names = [s["name"] for s in c.call("sandbox.list")["sandboxes"]]
        self.assertNotIn("asked", names)

    def test_policy_check_runs_nothing(self):
        c, a = self.ask_client()
        ws = workspace(self)
        r = c.call("policy.check", {"command": ASK_CMD, "cwd": ws})
        self.assertEqual(r["verdict"], "ask")
        self.assertEqual([f["rule"] for f in r["findings"]], ["delete.recursive"])
        self.assertEqual(a.requests, [])
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))


class Timeout(DaemonTest):
    config = "[policy]\napproval_timeout_s = 1\n"

    def test_timeout_denies_and_late_answer_is_ignored(self):
        ws = workspace(self)
        pending = []
        c = self.daemon.client(on_request=lambda m: pending.append(m) and None)
        self.addCleanup(c.close)
        sb = new_sandbox(self, c, ws)
        marker = os.path.join(ws, "ran")
        t0 = time.monotonic()
        data = denied(self, c, {"sandbox": sb["id"], "command": "touch %s; %s" % (marker, ASK_CMD)})
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)
        self.assertEqual(data["resolution"], "timeout")
        self.assertEqual(len(pending), 1)
        self.assertEqual(pending[0]["params"]["expires_in_ms"], 1000)
        # A late "once" changes nothing and the connection stays usable.
        c.send({"jsonrpc": "2.0", "id": pending[0]["id"], "result": {"decision": "once"}})
        self.assertEqual(c.call("exec", {"sandbox": sb["id"], "argv": ["true"]})["exit_code"], 0)
        self.assertFalse(os.path.exists(marker))
        self.assertTrue(os.path.isdir(os.path.join(ws, "data")))
        recs = [r for r in audit_records(self.daemon) if r["kind"] == "approval"]
        self.assertEqual(recs[-1]["problem"], "timeout")
        self.assertEqual(recs[-1]["resolution"], "timeout")


class Roles(DaemonTest):
    config = "[policy]\nbatch_auto_approve_users = root\n"

    def hello(self, **kw):
        a = Answers({"decision": "once"})
        c = self.daemon.client(on_request=a, hello=False)  # says its own hello
        self.addCleanup(c.close)
        h = c.call("daemon.hello", kw)
        return c, a, h

    def test_subagent_denied_without_asking(self):
        c, a, h = self.hello(role="subagent")
        self.assertEqual(h["approval"], "deny")
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        data = denied(self, c, {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(data["resolution"], "role")
        self.assertEqual(a.requests, [])
        # ALLOW still runs.
        self.assertEqual(c.call("exec", {"sandbox": sb["id"], "argv": ["true"]})["exit_code"], 0)

    def test_batch_auto_approve_for_listed_uid(self):
        c, a, h = self.hello(role="batch", auto_approve=True)
        self.assertEqual(h["approval"], "approve")
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(r["policy"]["resolution"], "role")
        self.assertFalse(os.path.exists(os.path.join(ws, "data")))
        # approved once: nothing remembered
        self.assertEqual(c.call("approval.list")["approvals"], [])
        data = denied(self, c, {"sandbox": sb["id"], "command": "rm -rf /"})
        self.assertEqual(data["resolution"], "policy")
        self.assertEqual(a.requests, [])

    def test_batch_without_auto_approve_denied(self):
        c, a, h = self.hello(role="batch")
        self.assertEqual(h["approval"], "deny")
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        data = denied(self, c, {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(data["resolution"], "role")
        self.assertEqual(a.requests, [])

    def test_auto_approve_only_for_batch(self):
        with self.assertRaises(RpcError) as cm:
            self.c.call("daemon.hello", {"role": "subagent", "auto_approve": True})
        self.assertEqual(cm.exception.code, -32602)


class SubagentAutoApprove(DaemonTest):
    config = "[policy]\nsubagent_auto_approve = true\n"

    def test_subagent_auto_approved(self):
        a = Answers()
        c = self.daemon.client(on_request=a, hello=False)  # says its own hello
        self.addCleanup(c.close)
        self.assertEqual(c.call("daemon.hello", {"role": "subagent"})["approval"], "approve")
        ws = workspace(self)
        sb = new_sandbox(self, c, ws)
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(r["policy"]["resolution"], "role")
        self.assertEqual(a.requests, [])
        data = denied(self, c, {"sandbox": sb["id"], "command": "rm -rf /"})
        self.assertEqual(data["resolution"], "policy")


CLIENT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, %r)
    from harness import Client, RpcError
    asked = []
    c = Client(sys.argv[1], on_request=lambda m: asked.append(m["params"]) or {"decision": "deny"})
    out = []
    for method, params in json.loads(sys.argv[2]):
        try:
            out.append({"result": c.call(method, params)})
        except RpcError as e:
            out.append({"error": {"code": e.code, "message": e.message, "data": e.data}})
    out.append({"asked": asked})
    print(json.dumps(out))
""" % os.path.dirname(os.path.abspath(__file__)))


def as_nobody(socket_path, calls):
    p = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", sys.executable, "-c", CLIENT, socket_path,
                        json.dumps(calls)], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("client as nobody failed: %s" % p.stderr)
    return json.loads(p.stdout)


class Persisted(unittest.TestCase):
    """always: persisted in <state>/approvals.json, per uid, survives a restart, revocable."""

    CONFIG = ("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n"
              "[policy]\nbatch_auto_approve_users = root\n")

    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="sbxapr-state-")
        self.addCleanup(shutil.rmtree, self.state, True)
        self.ws = workspace(self)

    def start(self):
        d = Daemon(self.CONFIG, state_dir=self.state)
        os.chmod(d.dir, 0o755)
        self.addCleanup(lambda: d.proc.poll() is None and d.stop())
        return d

    def test_always_survives_restart_and_is_per_uid(self):
        d = self.start()
        a = Answers({"decision": "always"})
        c = d.client(on_request=a)
        sb = c.call("sandbox.create", {"workdir": self.ws, "local": HOST})
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(r["policy"]["resolution"], "user")
        self.assertEqual(len(a.requests), 1)
        path = os.path.join(self.state, "approvals.json")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        lst = c.call("approval.list")["approvals"]
        key = "delete.recursive|%s/data" % os.path.realpath(self.ws)
        self.assertEqual([x["key"] for x in lst], [key])
        self.assertEqual(lst[0]["rule"], "delete.recursive")
        self.assertEqual(lst[0]["subject"], "%s/data" % os.path.realpath(self.ws))
        self.assertEqual(lst[0]["uid"], 0)
        self.assertRegex(lst[0]["created_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        c.close()
        d.stop()

        d = self.start()
        os.mkdir(os.path.join(self.ws, "data"))
        a = Answers()
        c = d.client(on_request=a)
        sb = c.call("sandbox.create", {"workdir": self.ws, "local": HOST})
        r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(a.requests, [], "the persisted approval must cover it after restart")
        self.assertEqual(r["policy"]["resolution"], "user")
        self.assertFalse(os.path.isdir(os.path.join(self.ws, "data")))
        # Also for a subagent of the same uid (memory comes before the role).
        os.mkdir(os.path.join(self.ws, "data"))
        sub = d.client()
        sub.call("daemon.hello", {"role": "subagent"})
        r = sub.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(r["exit_code"], 0)
        sub.close()

        # Another uid with the very same key is asked (and its client denies).
        os.mkdir(os.path.join(self.ws, "data"))
        res = as_nobody(d.socket, [
            ["sandbox.create", {"workdir": self.ws, "name": "nb", "local": HOST}],
            ["exec", {"command": ASK_CMD, "sandbox": "nb"}],
            ["approval.list", {}],
            ["approval.revoke", {"key": key}],
            ["approval.revoke", {"key": key, "uid": 0}],
        ])
        self.assertIn("result", res[0], res[0])
        sandbox_id = res[0]["result"]["id"]
        self.assertEqual(res[1]["error"]["code"], -32001, res[1])
        self.assertEqual(res[1]["error"]["data"]["resolution"], "user")
        self.assertEqual(len(res[-1]["asked"]), 1)
        self.assertEqual(res[-1]["asked"][0]["sandbox"], sandbox_id)
        self.assertEqual(res[2]["result"]["approvals"], [])
        self.assertEqual(res[3]["error"]["code"], -32602)
        self.assertEqual(res[4]["error"]["code"], -32010)
        self.assertTrue(os.path.isdir(os.path.join(self.ws, "data")))
        self.assertEqual([x["key"] for x in c.call("approval.list")["approvals"]], [key])

        # Root revokes: asked again, and the file no longer holds it.
        self.assertEqual(c.call("approval.revoke", {"key": key})["revoked"], True)
        self.assertEqual(c.call("approval.list")["approvals"], [])
        with open(os.path.join(self.state, "approvals.json")) as f:
            self.assertNotIn("delete.recursive", f.read())
        with self.assertRaises(RpcError) as cm:
            c.call("approval.revoke", {"key": key})
        self.assertEqual(cm.exception.code, -32602)
        with self.assertRaises(RpcError):
            c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(len(a.requests), 1)
        c.close()
        d.stop()

    def test_nobody_always_is_nobodys_own(self):
        d = self.start()
        ws = tempfile.mkdtemp(prefix="sbxapr-nb-")
        self.addCleanup(shutil.rmtree, ws, True)
        os.chmod(ws, 0o777)
        script = CLIENT.replace('{"decision": "deny"}', '{"decision": "always"}')
        calls = [["sandbox.create", {"workdir": ws, "name": "nb", "local": HOST}],
                 ["exec", {"command": "mkdir data; " + ASK_CMD, "sandbox": "nb"}],
                 ["approval.list", {}]]
        p = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                            "--clear-groups", sys.executable, "-c", script, d.socket,
                            json.dumps(calls)], capture_output=True, text=True, timeout=60)
        res = json.loads(p.stdout)
        self.assertEqual(res[1]["result"]["exit_code"], 0, res[1])
        mine = res[2]["result"]["approvals"]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["uid"], NOBODY)
        # root sees it (and its uid); root's own request with that key is still asked.
        c = d.client(on_request=Answers())
        allk = c.call("approval.list")["approvals"]
        self.assertEqual([(x["key"], x["uid"]) for x in allk], [(mine[0]["key"], NOBODY)])
        sb = c.call("sandbox.create", {"workdir": ws, "local": HOST})
        os.mkdir(os.path.join(ws, "data"))
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        self.assertEqual(cm.exception.data["resolution"], "user")
        # root revokes it for uid nobody
        self.assertEqual(c.call("approval.revoke", {"key": mine[0]["key"], "uid": NOBODY})
                         ["count"], 1)
        self.assertEqual(c.call("approval.list")["approvals"], [])
        c.close()
        d.stop()

    def test_sandboxctl_approvals(self):
        d = self.start()
        c = d.client(on_request=Answers({"decision": "always"}))
        sb = c.call("sandbox.create", {"workdir": self.ws, "local": HOST})
        c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        key = c.call("approval.list")["approvals"][0]["key"]

        def ctl(*args):
            return subprocess.run([SANDBOXCTL, "--socket", d.socket] + list(args),
                                  capture_output=True, text=True, timeout=60)

        r = ctl("approvals", "ls")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0].split(), ["UID", "CREATED", "KEY"])
        self.assertIn(key, r.stdout)
        r = ctl("--json", "approvals", "ls")
        self.assertEqual(json.loads(r.stdout)["approvals"][0]["key"], key)
        r = ctl("approvals", "rm", key)
        self.assertEqual((r.returncode, r.stdout), (0, "revoked %s\n" % key), r.stderr)
        self.assertEqual(c.call("approval.list")["approvals"], [])
        r = ctl("approvals", "rm", key)
        self.assertEqual(r.returncode, 2)
        self.assertIn("-32602", r.stderr)
        self.assertEqual(ctl("approvals").returncode, 64)
        self.assertEqual(ctl("approvals", "rm").returncode, 64)
        c.close()
        d.stop()

    def test_bad_approvals_file_is_set_aside(self):
        with open(os.path.join(self.state, "approvals.json"), "w") as f:
            f.write("{not json")
        d = self.start()
        c = d.client()
        self.assertEqual(c.call("approval.list")["approvals"], [])
        c.close()
        log = d.stop()
        self.assertIn("persisted approvals unusable", log)
        self.assertTrue(os.path.exists(os.path.join(self.state, "approvals.json.bad")))


class AskIsolated(unittest.TestCase):
    """ASK in a sandbox without host access (docker, no mounts): allowed by default,
    asked with ask_isolated = ask. Needs dockerd and the test image (tests/docker/setup.sh)."""

    def run_isolated(self, extra):
        d = Daemon("[backend.docker]\nimage = %s\n%s" % (IMAGE, extra))
        self.addCleanup(lambda: d.proc.poll() is None and d.stop())
        a = Answers({"decision": "deny"})
        c = d.client(on_request=a)
        sb = c.call("sandbox.create", {"backend": "docker", "workdir": "/tmp"})
        self.assertFalse(sb["host_access"])
        c.call("exec", {"sandbox": sb["id"], "command": "mkdir -p /tmp/data"})
        try:
            r = c.call("exec", {"sandbox": sb["id"], "command": ASK_CMD})
        except RpcError as e:
            r = e
        deny = c.call("policy.check", {"command": "rm -rf /", "backend": "docker"})
        self.assertEqual(deny["verdict"], "deny")
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"sandbox": sb["id"], "command": "rm -rf /"})
        self.assertEqual(cm.exception.data["resolution"], "policy")
        c.call("sandbox.destroy", {"id": sb["id"]})
        c.close()
        d.stop()
        return r, a

    def test_default_allows(self):
        r, a = self.run_isolated("")
        self.assertNotIsInstance(r, RpcError)
        self.assertEqual(r["policy"], {"verdict": "ask", "resolution": "policy",
                                       "findings": r["policy"]["findings"]})
        self.assertEqual(a.requests, [])

    def test_backend_setting_asks(self):
        r, a = self.run_isolated("ask_isolated = ask\n")
        self.assertIsInstance(r, RpcError)
        self.assertEqual(r.data["resolution"], "user")
        self.assertEqual(len(a.requests), 1)
        self.assertEqual(a.requests[0]["backend"], "docker")

    def test_policy_setting_asks_and_backend_overrides(self):
        r, a = self.run_isolated("[policy]\nask_isolated = ask\n")
        self.assertIsInstance(r, RpcError)
        self.assertEqual(len(a.requests), 1)
        r, a = self.run_isolated("ask_isolated = allow\n[policy]\nask_isolated = ask\n")
        self.assertNotIsInstance(r, RpcError)
        self.assertEqual(a.requests, [])

    def test_spec_ask_is_never_isolated(self):
        """ask_isolated is for commands inside an isolated sandbox: an ASK about the sandbox's
        own spec (ports on every host interface, no host access) is asked."""
        d = Daemon("[backend.docker]\nimage = %s\n" % IMAGE)
        self.addCleanup(lambda: d.proc.poll() is None and d.stop())
        a = Answers({"decision": "deny"})
        c = d.client(on_request=a)
        with self.assertRaises(RpcError) as cm:
            c.call("sandbox.create", {"backend": "docker", "docker": {"host_config": {
                "PublishAllPorts": True}}}, timeout=120)
        self.assertEqual(cm.exception.code, -32001)
        self.assertEqual(cm.exception.data["resolution"], "user")
        self.assertEqual([r["kind"] for r in a.requests], ["sandbox"])
        self.assertEqual(c.call("sandbox.list", {"backend": "docker"})["sandboxes"], [])
        c.close()
        d.stop()

    def test_bad_value_refused(self):
        d = None
        with self.assertRaises(AssertionError) as cm:
            d = Daemon("[policy]\nask_isolated = maybe\n")
        if d:
            d.stop()
        self.assertIn("ask_isolated = 'maybe' is not valid", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
