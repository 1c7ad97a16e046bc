"""Connections from inside a sandbox are subagents: a process the daemon started cannot answer
its own approval requests, whatever role it asks for; daemon.hello sets the role once.

The commands connect back through the daemon's socket, which an isolated sandbox hides
(test_isolation.py shows it cannot reach it): the sandboxes here run on the host (isolation
"none", HOST)."""
import json
import os
import shlex
import shutil
import tempfile
import textwrap
import time
import unittest

from harness import DaemonTest, RpcError
from test_approval import Answers
from test_identity import NobodyTest, as_nobody

HERE = os.path.dirname(os.path.abspath(__file__))
ASK = "rm -r /tmp/sandboxd-subagent-nothing"

# Runs inside an exec: connects back to the daemon and tries to approve its own ASK.
INNER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, %r)
    from harness import Client, RpcError
    c = Client(sys.argv[1], on_request=lambda m: {"decision": "once"}, hello=False)
    out = {}
    def call(name, method, params):
        try:
            out[name] = {"result": c.call(method, params)}
        except RpcError as e:
            out[name] = {"error": {"code": e.code, "data": e.data, "message": e.message}}
    call("hello", "daemon.hello", {"role": sys.argv[2], "auto_approve": sys.argv[2] == "batch"})
    call("ask", "exec", {"command": %r})
    call("hello2", "daemon.hello", {"role": "interactive"})
    print(json.dumps(out))
""" % (HERE, ASK))


def inner_script(test):
    """INNER as a file: `python3 -c CODE` is itself inline code the policy asks about."""
    d = tempfile.mkdtemp(prefix="sbxsub-")
    os.chmod(d, 0o755)
    test.addCleanup(shutil.rmtree, d, True)
    path = os.path.join(d, "inner.py")
    with open(path, "w") as f:
        f.write(INNER)
    os.chmod(path, 0o644)
    return path


HOST = "[backend.local]\nisolation = none\n"


class InSandbox(DaemonTest):
    config = HOST + "[policy]\nsubagent_auto_approve = true\nbatch_auto_approve_users = root\n"

    def setUp(self):
        super().setUp()
        self.answers = Answers({"decision": "once"})
        self.outer = self.daemon.client(on_request=self.answers)
        self.addCleanup(self.outer.close)

    def inner_argv(self, role):
        return ["/usr/bin/python3", inner_script(self), self.daemon.socket, role]

    def check(self, out):
        self.assertEqual(out["hello"]["result"]["role"], "subagent", out)
        self.assertTrue(out["hello"]["result"]["in_sandbox"])
        self.assertEqual(out["hello"]["result"]["approval"], "deny")
        # subagent_auto_approve is for the operator's agents, never for the daemon's own
        self.assertEqual(out["ask"]["error"]["code"], -32001, out)
        self.assertEqual(out["ask"]["error"]["data"]["resolution"], "role")
        self.assertEqual(out["hello2"]["error"]["code"], -32600)
        self.assertEqual(self.answers.requests, [], "nobody may be asked for an inner request")

    def test_exec_connecting_back_is_a_subagent(self):
        for role in ("interactive", "batch", "subagent"):
            with self.subTest(role=role):
                r = self.outer.call("exec", {"argv": self.inner_argv(role)})
                self.assertEqual(r["exit_code"], 0, r["stderr"])
                self.check(json.loads(r["stdout"]))

    def test_escaping_the_session_does_not_help(self):
        # setsid and a double fork: a new session and process group, re-parented; still ours.
        d = tempfile.mkdtemp(prefix="sbxsub-")
        self.addCleanup(shutil.rmtree, d, True)
        out = os.path.join(d, "out.json")
        cmd = "( setsid %s > %s.tmp && mv %s.tmp %s & )" % (
            " ".join(shlex.quote(a) for a in self.inner_argv("interactive")), out, out, out)
        self.assertEqual(self.outer.call("exec", {"command": cmd})["exit_code"], 0)
        deadline = time.monotonic() + 30
        while not os.path.exists(out):
            self.assertLess(time.monotonic(), deadline, "the detached client did not finish")
            time.sleep(0.05)
        with open(out) as f:
            self.check(json.load(f))

    def test_outside_clients_keep_their_role(self):
        c = self.daemon.client()
        self.addCleanup(c.close)
        h = c.call("daemon.hello", {"role": "subagent"})
        self.assertEqual((h["role"], h["approval"], h["in_sandbox"]), ("subagent", "approve", False))
        with self.assertRaises(RpcError) as cm:
            c.call("daemon.hello", {"role": "interactive"})
        self.assertEqual(cm.exception.code, -32600)
        self.assertIn("once", cm.exception.message)
        # The first role holds: still auto-approved as a subagent, never asked.
        r = c.call("exec", {"command": ASK})
        self.assertEqual(r["policy"]["resolution"], "role")


class InSandboxAsNobody(NobodyTest):
    """The attacker is nobody against a root daemon: its own exec connects back."""
    config = HOST

    def test_nobody_cannot_approve_itself(self):
        res = as_nobody(self.daemon.socket, [
            ["exec", {"argv": ["/usr/bin/python3", inner_script(self), self.daemon.socket,
                               "interactive"]}],
        ])
        r = res[0]["result"]
        self.assertEqual(r["exit_code"], 0, r["stderr"])
        out = json.loads(r["stdout"])
        self.assertEqual(out["hello"]["result"]["role"], "subagent", out)
        self.assertEqual(out["ask"]["error"]["data"]["resolution"], "role")
        self.assertIsNone(res[-1]["unsolicited"])


if __name__ == "__main__":
    unittest.main()
