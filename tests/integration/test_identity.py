"""Identity and ownership (protocol §2): run as root with a second uid (nobody)."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from harness import SANDBOXCTL, Daemon, RpcError, needs_root
from test_policy import assert_check_is_exec, check_variants

NOBODY = 65534

CLIENT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, %r)
    from harness import Client, RpcError
    decision = json.loads(sys.argv[3])
    c = Client(sys.argv[1], timeout=120,
               on_request=(lambda msg: {"decision": decision}) if decision else None)
    out = []
    for method, params in json.loads(sys.stdin.read()):
        try:
            out.append({"result": c.call(method, params)})
        except RpcError as e:
            out.append({"error": {"code": e.code, "message": e.message, "data": e.data}})
        except ConnectionError as e:
            out.append({"closed": str(e)})
            break
    out.append({"unsolicited": c.responses.get(None)})
    print(json.dumps(out))
""" % os.path.dirname(os.path.abspath(__file__)))


def as_nobody(socket_path, calls, decision=None):
    """Runs calls as uid nobody; decision: what it answers to every approval.request (None:
    the harness default, deny)."""
    p = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "/usr/bin/python3", "-c", CLIENT, socket_path,
                        "-", json.dumps(decision)],
                       input=json.dumps(calls), capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("client as nobody failed: %s" % p.stderr)
    return json.loads(p.stdout)


@needs_root("needs root to act as a second uid")
class NobodyTest(unittest.TestCase):
    """A root daemon that nobody may use too (extra config lines in `config`)."""
    config = ""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n" +
                            cls.config)
        os.chmod(cls.daemon.dir, 0o755)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()


class NobodyCheckIsExec(NobodyTest):
    """policy.check judges what exec would for nobody too (its home /nonexistent is no
    directory: the default sandbox works in /tmp/work), before the default sandbox exists and
    once it does."""
    config = "[policy]\nask_isolated = ask\n"

    def test_check_is_exec(self):
        variants = check_variants()
        hello = [["daemon.hello", {"role": "subagent"}]]
        phase = [["policy.check", v] for v in variants] + [["exec", v] for v in variants]
        out = as_nobody(self.daemon.socket, hello + phase + phase + [["sandbox.list", {}]])
        n = len(variants)
        for start in (1, 1 + 2 * n):
            assert_check_is_exec(self, variants, out[start:start + n],
                                 out[start + n:start + 2 * n])
        self.assertEqual([s["name"] for s in out[-2]["result"]["sandboxes"]], ["default"])


class SecondUid(NobodyTest):

    def test_runs_as_caller_and_cannot_see_others(self):
        root = self.daemon.client()
        mine = root.call("sandbox.create", {"name": "roots"})
        bg = root.call("exec", {"sandbox": mine["id"], "argv": ["sleep", "30"],
                                "background": True})["exec_id"]
        res = as_nobody(self.daemon.socket, [
            ["exec", {"argv": ["id", "-u"]}],
            ["exec", {"argv": ["id", "-G"]}],
            ["exec", {"command": "touch /root/owned-by-nobody"}],
            ["sandbox.get", {"id": mine["id"]}],
            ["sandbox.get", {"id": "roots"}],
            ["exec", {"sandbox": mine["id"], "command": "true"}],
            ["process.read", {"exec_id": bg}],
            ["process.kill", {"exec_id": bg}],
            ["sandbox.destroy", {"id": mine["id"]}],
            ["sandbox.list", {}],
            ["process.list", {}],
            ["file.read", {"sandbox": mine["id"], "path": "/etc/hostname"}],
            ["file.read", {"path": "/etc/shadow"}],
            ["policy.reload", {}],
            ["exec", {"command": "cd /tmp && export NOBODY_VAR=kept"}],
            ["exec", {"command": 'pwd; echo "$NOBODY_VAR"'}],
        ])
        self.assertEqual(res[0]["result"]["stdout"], "%d\n" % NOBODY)
        self.assertEqual(res[1]["result"]["stdout"], "%d\n" % NOBODY)
        self.assertNotEqual(res[2]["result"]["exit_code"], 0, "nobody must not write /root")
        self.assertFalse(os.path.exists("/root/owned-by-nobody"))
        for i, code in ((3, -32002), (4, -32002), (5, -32002), (6, -32003), (7, -32003),
                        (8, -32002), (11, -32002), (13, -32010)):
            self.assertEqual(res[i].get("error", {}).get("code"), code, (i, res[i]))
        self.assertEqual([s["name"] for s in res[9]["result"]["sandboxes"]], ["default"])
        ids = [p["exec_id"] for p in res[10]["result"]["processes"]]
        self.assertNotIn(bg, ids)
        self.assertEqual(res[12]["error"]["code"], -32602)
        self.assertIn("Permission denied", res[12]["error"]["message"])
        self.assertEqual(res[15]["result"]["stdout"], "/tmp\nkept\n",
                         "shell state persists for an unprivileged caller")
        # root sees everything, and its process is untouched
        running = root.call("process.list", {"state": "running"})["processes"]
        self.assertIn(bg, [p["exec_id"] for p in running])
        root.call("process.kill", {"exec_id": bg})
        root.close()


    def test_paths_are_resolved_as_the_caller(self):
        """A root daemon does not tell nobody where a link in a directory closed to it leads."""
        closed = tempfile.mkdtemp(prefix="sbxid-closed-")  # 0700, root's
        link = os.path.join(closed, "l")
        os.symlink("/etc", link)
        checks = [["policy.check", {"sandbox": {"backend": "local", "mounts": [
                      {"type": "bind", "source": link, "target": "/h"}]}}],
                  ["policy.check", {"command": "docker run -v %s:/h img true" % link}]]
        try:
            res = as_nobody(self.daemon.socket, checks)
            os.chmod(closed, 0o755)
            opened = as_nobody(self.daemon.socket, checks)
        finally:
            os.unlink(link)
            os.rmdir(closed)
        for r, o in zip(res[:2], opened[:2]):
            self.assertNotIn("/etc", json.dumps(r), "the answer tells where the link leads")
            self.assertEqual(r["result"]["verdict"], "deny", r)
            self.assertEqual([f["rule"] for f in r["result"]["findings"]],
                             ["container.mount-unresolved"], r)
            # the control: once nobody may look, the link is followed as before
            self.assertIn("container.mount-system",
                          [f["rule"] for f in o["result"]["findings"]], o)


class BackendViewOfNobody(NobodyTest):
    """backend.list and daemon.info tell an unprivileged caller what is missing and what the
    operator must do, never the daemon's environment: its PATH, home, credential files or the
    socket of another user's dockerd. Root keeps the operator's detail."""
    OTHER_SOCKET = "/run/user/4242/docker.sock"  # another user's rootless dockerd, absent
    config = ("[backend.docker]\nhost = unix://%s\n[backend.daytona]\n"
              "api_key_file = /root/.sbx-no-such-daytona-key\n" % OTHER_SOCKET)

    def leaks(self):
        """What only the daemon's operator may see."""
        return ([p for p in os.environ["PATH"].split(":") if len(p) > 4] +
                ["/root", ".modal.toml", self.OTHER_SOCKET, "docker.sock", "sbx-no-such",
                 self.daemon.dir])

    def test_reasons_and_details_without_the_daemons_environment(self):
        out = as_nobody(self.daemon.socket, [["backend.list", {}], ["daemon.info", {}]])
        for backends in (out[0]["result"]["backends"], out[1]["result"]["backends"]):
            shown = json.dumps(backends)
            for secret in self.leaks():
                self.assertNotIn(secret, shown)
            by = {b["name"]: b for b in backends}
            for name in ("docker", "modal", "daytona", "singularity"):
                self.assertFalse(by[name]["available"], by[name])
                self.assertIn("the operator must", by[name]["hint"], by[name])
            self.assertEqual(by["docker"]["reason"], "the Docker daemon is not running")
            self.assertIn("no usable Daytona API key", by["daytona"]["reason"])
            self.assertIn("no Modal credentials", by["modal"]["reason"])
            self.assertEqual(sorted(by["modal"]["details"]),
                             ["app", "has_direct_credentials", "managed_configured",
                              "managed_ready", "requested_mode", "selected"])
            self.assertTrue(by["local"]["available"])
            self.assertIn("available", by["local"]["details"]["isolation"]["namespaces"])
        # Root (the daemon's operator) sees where it looked.
        root = self.daemon.client()
        self.addCleanup(root.close)
        by = {b["name"]: b for b in root.call("backend.list")["backends"]}
        self.assertIn(self.OTHER_SOCKET, by["docker"]["reason"])
        self.assertIn("/root/.modal.toml", by["modal"]["reason"])
        self.assertNotIn("public", by["modal"]["details"])


@needs_root("needs root to act as a second uid")
class SocketPermission(unittest.TestCase):
    def test_eacces_says_permission_denied(self):
        """A socket the uid may not open: not "is sandboxd running?" (issue 17)."""
        d = Daemon("")
        try:
            os.chmod(d.dir, 0o755)
            os.chmod(os.path.dirname(d.socket), 0o755)
            p = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                                "--clear-groups", SANDBOXCTL, "--socket", d.socket, "info"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("permission denied: you are not allowed to use this socket",
                          p.stderr)
            self.assertIn("allow_groups", p.stderr)
            self.assertNotIn("is sandboxd running", p.stderr)
        finally:
            d.stop()


@needs_root("needs root to act as a second uid")
class NotAllowed(unittest.TestCase):
    def test_unlisted_uid_is_refused(self):
        d = Daemon("[daemon]\nsocket_group = nogroup\n")
        try:
            os.chmod(d.dir, 0o755)
            res = as_nobody(d.socket, [["daemon.hello", {}], ["daemon.info", {}]])
            self.assertIn("closed", res[0])
            self.assertEqual(res[-1]["unsolicited"]["error"]["code"], -32010)
            self.assertIn("allow_users", res[-1]["unsolicited"]["error"]["message"])
        finally:
            d.stop()
