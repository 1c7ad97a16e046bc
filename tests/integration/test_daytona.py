"""Daytona backend through the daemon socket, against the fake Daytona (tests/fakes/daytona).

The fake follows Daytona's wire format (paths, fields, status codes, error bodies, the 202 of
asynchronous commands, labelled logs, the WebSocket follow stream) and runs the commands on
this machine, as the test's user, in a directory per sandbox; so what a command does can be
checked on the host (files, processes). Failures are injected per test.
"""
import base64
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import SANDBOXD, Daemon, RpcError, b64, needs_root
from test_identity import NOBODY, as_nobody

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fakes.daytona import FakeDaytona  # noqa: E402


def private_file(path, text):
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)
    return path


class FakeTest(unittest.TestCase):
    """A fake Daytona and a daemon using it, per class."""

    extra = ""      # more [backend.daytona] lines
    daemon_extra = ""  # more [daemon] lines
    use_file = True  # the key in api_key_file (else DAYTONA_API_KEY in the daemon's environment)
    log_level = "info"

    @classmethod
    def start_daemon(cls, state_dir=None):
        conf = ("[daemon]\nlog_level = %s\n%s[backend.daytona]\napi_url = %s\nremote_dir = %s\n%s"
                % (cls.log_level, cls.daemon_extra, cls.fake.url, cls.remote, cls.extra))
        env = {}
        if cls.use_file:
            conf += "api_key_file = %s\n" % cls.keyfile
        else:
            env["DAYTONA_API_KEY"] = cls.fake.key
        return Daemon(conf, env=env, state_dir=state_dir)

    @classmethod
    def setUpClass(cls):
        # Class cleanups run even when setUpClass fails (a daemon that does not start).
        cls.root = tempfile.mkdtemp(prefix="sbx-daytona-")
        cls.addClassCleanup(shutil.rmtree, cls.root, ignore_errors=True)
        os.chmod(cls.root, 0o755)
        cls.fake = FakeDaytona(os.path.join(cls.root, "fake")).start()
        cls.addClassCleanup(cls.fake.stop)
        cls.keyfile = private_file(os.path.join(cls.root, "key"), cls.fake.key + "\n")
        cls.remote = os.path.join(cls.root, "remote")
        # Outside the daemon's directory, which goes when it stops: a restart keeps it.
        cls.daemon = cls.start_daemon(state_dir=os.path.join(cls.root, "state"))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def setUp(self):
        self.c = self.daemon.client()

    def tearDown(self):
        self.c.close()

    def create(self, **params):
        params.setdefault("backend", "daytona")
        return self.c.call("sandbox.create", params)

    def exec(self, sandbox, **params):
        params["sandbox"] = sandbox
        return self.c.call("exec", params)

    def mark(self):
        """Where the fake's request log is now (counts below are from here)."""
        with self.fake.lock:
            self._mark = len(self.fake.requests)

    def since(self, method, pattern):
        with self.fake.lock:
            return [r for r in self.fake.requests[self._mark:]
                    if r[0] == method and re.search(pattern, r[1])]

    def box(self, sbx):
        """The fake's sandbox behind a sandboxd sandbox object."""
        return self.fake.find(sbx["details"]["sandbox_id"])

    def assertError(self, code, method, params, pattern=None):
        with self.assertRaises(RpcError) as cm:
            self.c.call(method, params)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        if pattern:
            self.assertRegex(cm.exception.message, pattern)
        return cm.exception


class TestLifecycle(FakeTest):
    def test_backend_list(self):
        b = [x for x in self.c.call("backend.list")["backends"] if x["name"] == "daytona"][0]
        self.assertTrue(b["available"], b)
        self.assertEqual(b["details"]["api_url"], self.fake.url)
        self.assertIn("api_key_file", b["details"]["credential_source"])
        self.assertNotIn(self.fake.key, json.dumps(b))

    def test_create_exec_destroy(self):
        sbx = self.create(name="life", image="python:3.12",
                          labels={"team": "t1"},
                          resources={"cpus": 1.5, "memory_mb": 1500, "disk_mb": 3000})
        body = json.loads(self.fake.requests_to("POST", r"/api/sandbox$")[-1][3])
        self.assertEqual(body["buildInfo"], {"dockerfileContent": "FROM python:3.12\n"})
        self.assertEqual((body["cpu"], body["memory"], body["disk"]), (2, 2, 3))
        self.assertEqual((body["autoStopInterval"], body["autoArchiveInterval"],
                          body["autoDeleteInterval"]), (15, 1440, 10080))
        self.assertTrue(body["networkBlockAll"])
        self.assertEqual(body["name"], "sandboxd-" + sbx["id"])
        labels = body["labels"]
        self.assertEqual(labels["team"], "t1")
        self.assertEqual(labels["sandboxd.sandbox"], sbx["id"])
        self.assertEqual(labels["sandboxd.owner"], str(os.getuid()))
        self.assertEqual(labels["sandboxd.instance"], self.daemon.state)
        self.assertNotIn("sandboxd.persistent", labels)
        phases = {n["params"]["phase"] for n in self.c.notifications
                  if n["method"] == "sandbox.progress"}
        self.assertEqual(phases, {"build", "start"})
        self.assertFalse(sbx["host_access"])
        r = self.exec("life", command="echo out; echo err >&2; printf tail; exit 3")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (3, "out\ntail", "err\n"))
        r = self.exec("life", argv=["sh", "-c", "printf '%s' \"$0\"", "a b"], merge_stderr=True)
        self.assertEqual(r["stdout"], "a b")
        box = self.box(sbx)
        self.c.call("sandbox.destroy", {"id": "life"})
        self.assertIsNone(self.fake.find(box.id))
        self.assertEqual(len(self.fake.requests_to("DELETE", r"/api/sandbox/" + box.id)), 1)

    def test_shell_state_and_environment(self):
        sbx = self.create(name="state", env={"FROM_SPEC": "1"})
        home = self.box(sbx).home
        self.exec("state", command="mkdir -p sub && cd sub && export KEEP=kept")
        r = self.exec("state", command='pwd; echo "$KEEP $FROM_SPEC $HOME"; env | grep -c =')
        lines = r["stdout"].split("\n")
        self.assertEqual(lines[0], os.path.realpath(os.path.join(home, "sub")))
        self.assertEqual(lines[1], "kept 1 " + home)
        r = self.exec("state", command="pwd", cwd="/", env={"ONLY": "x"})
        self.assertEqual(r["stdout"], "/\n")
        r = self.exec("state", command='pwd; echo "${ONLY-unset}"')
        self.assertEqual(r["stdout"].split("\n")[1], "unset")
        self.c.call("sandbox.destroy", {"id": "state"})

    def test_streaming_before_the_end(self):
        self.create(name="stream")
        flag = os.path.join(self.root, "go-on")
        rid = 4242
        self.c.send({"jsonrpc": "2.0", "id": rid, "method": "exec", "params": {
            "sandbox": "stream", "command": "echo first; while [ ! -e %s ]; do sleep 0.05; done;"
            " echo second" % flag}})
        while True:  # the first line arrives while the command still runs
            m = self.c.read()
            if m.get("method") == "exec.output":
                self.assertEqual(m["params"]["data"], "first\n")
                break
            self.assertNotEqual(m.get("id"), rid, m)
        open(flag, "w").close()
        r = self.c.wait_response(rid)["result"]
        self.assertEqual(r["stdout"], "first\nsecond\n")
        self.c.call("sandbox.destroy", {"id": "stream"})

    def test_stdin(self):
        self.create(name="in")
        r = self.exec("in", argv=["cat"], stdin="piped text\n")
        self.assertEqual(r["stdout"], "piped text\n")
        raw = bytes(range(256))
        r = self.exec("in", argv=["od", "-An", "-v", "-tx1"], stdin_base64=b64(raw))
        self.assertEqual(bytes.fromhex(r["stdout"].replace("\n", " ")), raw)
        bg = self.exec("in", argv=["sh", "-c", "wc -c; od -An -c | head -1"], stdin_open=True,
                       background=True)
        self.c.call("process.write", {"exec_id": bg["exec_id"], "data": "no newline"})
        self.c.call("process.write", {"exec_id": bg["exec_id"], "data_base64": b64(b"\0\n"),
                                      "eof": True})
        w = self.c.call("process.wait", {"exec_id": bg["exec_id"], "timeout_ms": 30000})
        self.assertEqual(w["exit_code"], 0, w)
        out = self.c.call("process.read", {"exec_id": bg["exec_id"]})["data"]
        self.assertEqual(out.split("\n")[0].strip(), "12")  # what was written, EOF reached
        self.c.call("sandbox.destroy", {"id": "in"})

    def test_timeout_kills_the_tree_not_the_sandbox(self):
        sbx = self.create(name="tmo")
        pidfile = os.path.join(self.box(sbx).home, "bg.pid")
        r = self.exec("tmo", command="sleep 300 & echo $! > %s; wait" % pidfile, timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertIn(r["signal"], ("SIGTERM", "SIGKILL"))
        with open(pidfile) as f:
            pid = int(f.read())
        self.assertFalse(os.path.exists("/proc/%d" % pid) and
                         open("/proc/%d/stat" % pid).read().split(") ")[1][0] != "Z",
                         "the backgrounded sleep survived the timeout")
        self.assertEqual(self.box(sbx).state, "started")
        self.assertEqual(self.exec("tmo", command="echo alive")["stdout"], "alive\n")
        bg = self.exec("tmo", argv=["sh", "-c", "echo up; exec sleep 300"], background=True)
        r = self.c.call("process.read", {"exec_id": bg["exec_id"], "wait_ms": 30000})
        self.assertEqual(r["data"], "up\n")  # it runs: the kill goes to the sandbox
        k = self.c.call("process.kill", {"exec_id": bg["exec_id"], "grace_ms": 500})
        self.assertTrue(k["killed"])
        w = self.c.call("process.wait", {"exec_id": bg["exec_id"], "timeout_ms": 30000})
        self.assertEqual(w["signal"], "SIGTERM", w)
        self.c.call("sandbox.destroy", {"id": "tmo"})

    def test_timed_out_result_comes_after_the_tree_is_gone(self):
        """The shell dies of the TERM at once, its child ignores it and lives on through the
        grace: the exec's result waits for the tree kill's answer, so the child is dead (not
        merely signalled) when the result is out."""
        sbx = self.create(name="tmo2")
        pidfile = os.path.join(self.box(sbx).home, "child.pid")
        r = self.exec("tmo2", timeout_s=1, command="(trap '' TERM; exec sleep 300) & "
                      "echo $! > %s; wait" % pidfile)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual(r["signal"], "SIGTERM")
        with open(pidfile) as f:
            pid = int(f.read())
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(") ", 1)[1][0]
        except FileNotFoundError:
            state = "gone"
        self.assertIn(state, ("Z", "gone"), "the child outlived the exec's result")
        self.c.call("sandbox.destroy", {"id": "tmo2"})

    def test_files(self):
        sbx = self.create(name="files")
        home = self.box(sbx).home
        path = os.path.join(home, "new", "dir", "all.bin")
        raw = bytes(range(256)) * 4
        self.c.call("file.write", {"sandbox": "files", "path": path, "data_base64": b64(raw),
                                   "mkdir": True, "mode": 0o600})
        with open(path, "rb") as f:
            self.assertEqual(f.read(), raw)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        r = self.c.call("file.read", {"sandbox": "files", "path": path,
                                      "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(r["data"]), raw)
        self.assertEqual((r["size"], r["eof"]), (1024, True))
        r = self.c.call("file.read", {"sandbox": "files", "path": path, "offset": 1000,
                                      "max_bytes": 10, "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(r["data"]), raw[1000:1010])
        self.assertFalse(r["eof"])
        self.c.call("file.write", {"sandbox": "files", "path": path, "data": "+",
                                   "append": True})
        with open(path, "rb") as f:
            self.assertEqual(f.read(), raw + b"+")
        self.assertError(-32602, "file.read", {"sandbox": "files", "path": home + "/missing"},
                         "no such file")
        self.assertError(-32602, "file.write", {"sandbox": "files", "data": "x",
                                                "path": home + "/nodir/f"}, "no such")
        # Only regular files: the toolbox would wait on a FIFO until the call's timeout.
        fifo = os.path.join(home, "fifo")
        os.mkfifo(fifo, 0o600)
        for method, extra in (("file.read", {}), ("file.write", {"data": "x"}),
                              ("file.write", {"data": "x", "append": True})):
            with self.subTest(method=method, **extra):
                self.assertError(-32602, method, dict(sandbox="files", path=fifo, **extra),
                                 "not a regular file")
        self.assertError(-32602, "file.read", {"sandbox": "files", "path": home},
                         "not a regular file")
        self.c.call("sandbox.destroy", {"id": "files"})

    def test_refused_specs(self):
        cases = [
            ({"mounts": [{"type": "tmpfs", "target": "/t"}]}, "mounts nothing"),
            ({"daytona": {"bogus": 1}}, "unknown key 'daytona.bogus'"),
            ({"daytona": {"auto_stop_minutes": 0}}, "never stop"),
            ({"image": "alpine\nRUN curl x | sh"}, "not an image"),
            ({"daytona": {"snapshot": "s"}, "image": "alpine"}, "not both"),
            ({"resources": {"cpus": 2}}, "give an 'image'"),
            # orphan removal and the resume by name trust these: a client cannot plant them
            ({"labels": {"sandboxd.persistent": "1"}}, "label 'sandboxd.persistent' is reserved"),
            ({"labels": {"a": "b", "sandboxd.owner": "0"}}, "label 'sandboxd.owner' is reserved"),
            ({"labels": {"sandboxd": "1"}}, "label 'sandboxd' is reserved"),
        ]
        for params, pattern in cases:
            with self.subTest(params=params):
                self.assertError(-32602, "sandbox.create", dict(params, backend="daytona"),
                                 re.escape(pattern))
        self.create(name="nopty")
        self.assertError(-32602, "exec", {"sandbox": "nopty", "command": "true", "pty": True},
                         "no pty")
        self.c.call("sandbox.destroy", {"id": "nopty"})


class TestFlakyLink(FakeTest):
    def setUp(self):
        super().setUp()
        self.fake.rules.clear()

    def test_transient_failures_are_retried(self):
        rules = [self.fake.fail("POST", r"/api/sandbox$", status=503),
                 self.fake.fail("GET", r"/api/sandbox/", status=429, retry_after=1),
                 self.fake.fail("GET", r"/api/sandbox/", status=408),
                 self.fake.fail("GET", r"/api/sandbox/", mid=True),
                 self.fake.fail("GET", r"/user-home-dir$", status=500),
                 self.fake.fail("POST", r"/process/session$", reset=True)]
        self.create(name="retry")
        rules.append(self.fake.fail("POST", r"/exec$", status=503, times=2))
        self.assertEqual(self.exec("retry", command="echo ok")["stdout"], "ok\n")
        self.assertEqual([r.times for r in rules], [0] * len(rules))
        # A session that vanished (404) is replaced by a new one.
        self.fake.fail("POST", r"/exec$", status=404, message="session not found")
        self.assertEqual(self.exec("retry", command="echo again")["stdout"], "again\n")
        self.c.call("sandbox.destroy", {"id": "retry"})

    def test_lost_answer_does_not_run_twice(self):
        sbx = self.create(name="once")
        count = os.path.join(self.box(sbx).home, "count")
        lost = self.fake.fail("POST", r"/exec$", reset=True, after=True)
        r = self.exec("once", command="echo run >> %s; echo done" % count)
        self.assertEqual(lost.hits, 1)
        self.assertEqual(r["stdout"], "done\n")
        with open(count) as f:
            self.assertEqual(f.read(), "run\n")
        self.c.call("sandbox.destroy", {"id": "once"})

    def test_lost_answer_and_a_restart_do_not_run_twice(self):
        """The POST's answer is lost and the sandbox stops before the daemon learns whether the
        command started: after the start it is posted again in a new session, whose wrapper
        finds the old session's guard file naming it. It does not run again: it ends as lost."""
        sbx = self.create(name="once-more")
        box = self.box(sbx)
        count = os.path.join(box.home, "count")
        go = threading.Event()
        self.fake.fail("POST", r"/exec$", reset=True, after=True)
        held = self.fake.fail("GET", r"/process/session/[^/]+$", hold=go)
        rid = next(self.c.ids)
        self.c.send({"jsonrpc": "2.0", "id": rid, "method": "exec",
                     "params": {"sandbox": "once-more", "command": "echo run >> %s" % count}})
        try:
            deadline = time.monotonic() + 30
            while not (held.held == 1 and os.path.exists(count)):
                self.assertLess(time.monotonic(), deadline, "the command did not run")
                time.sleep(0.01)
            self.fake.stop_sandbox(box.id)  # its sessions and their commands go
        finally:
            go.set()
        resp = self.c.wait_response(rid)
        with open(count) as f:
            self.assertEqual(f.read(), "run\n")
        self.assertIn("error", resp, resp.get("result"))
        self.assertEqual(resp["error"]["code"], -32005, resp["error"])
        self.assertRegex(resp["error"]["data"]["detail"],
                         r"^lost the Daytona command: .*guard file of the session")
        self.assertEqual(box.state, "started")
        self.assertEqual(self.exec("once-more", command="echo next")["stdout"], "next\n")
        self.c.call("sandbox.destroy", {"id": "once-more"})

    def test_lost_answer_and_a_failed_look_run_once(self):
        """The look for the command after a lost answer fails too, but the sandbox runs: the
        exec goes again to the session it went to (held back from the pool meanwhile), whose
        guard names it, and the first command is followed to its end."""
        sbx = self.create(name="look")
        count = os.path.join(self.box(sbx).home, "count")
        self.fake.fail("POST", r"/exec$", reset=True, after=True)
        look = self.fake.fail("GET", r"/process/session/[^/]+$", status=404)
        self.mark()
        r = self.exec("look", command="echo run >> %s; echo done" % count)
        self.assertEqual((look.hits, r["exit_code"], r["stdout"]), (1, 0, "done\n"))
        with open(count) as f:
            self.assertEqual(f.read(), "run\n")
        # Two POSTs at least (libcurl may send the lost one again on a fresh connection when
        # it went on a reused one: that second start finds the guard too), all in one session.
        posts = self.since("POST", r"/process/session/[^/]+/exec$")
        self.assertGreaterEqual(len(posts), 2)
        self.assertEqual(len({p[1] for p in posts}), 1, posts)
        self.c.call("sandbox.destroy", {"id": "look"})

    def test_session_of_an_unclear_exec_goes_to_no_other(self):
        """While an exec whose answer was lost waits for its sandbox to be looked at, another
        exec gets a session of its own, not the first one's (its wrapper would write over
        that session's guard line, and the first exec, posted again, could run twice)."""
        sbx = self.create(name="mine")
        count = os.path.join(self.box(sbx).home, "count")
        go = threading.Event()
        self.fake.fail("POST", r"/exec$", reset=True, after=True)
        self.fake.fail("GET", r"/process/session/[^/]+$", status=404)
        held = self.fake.fail("GET", r"/api/sandbox/[^/]+$", hold=go)
        self.mark()
        rid = next(self.c.ids)
        self.c.send({"jsonrpc": "2.0", "id": rid, "method": "exec",
                     "params": {"sandbox": "mine", "command": "echo run >> %s; echo done" % count}})
        other = self.daemon.client()
        try:
            deadline = time.monotonic() + 30
            while held.held != 1:
                self.assertLess(time.monotonic(), deadline, "the sandbox was not looked at")
                time.sleep(0.01)
            r = other.call("exec", {"sandbox": "mine", "argv": ["echo", "y"]})
            self.assertEqual(r["stdout"], "y\n")
        finally:
            go.set()
            other.close()
        resp = self.c.wait_response(rid)
        with open(count) as f:
            self.assertEqual(f.read(), "run\n")
        self.assertIn("result", resp, resp.get("error"))
        self.assertEqual((resp["result"]["exit_code"], resp["result"]["stdout"]), (0, "done\n"))
        sessions = {re.search(r"/session/([^/]+)/exec$", p[1]).group(1)
                    for p in self.since("POST", r"/process/session/[^/]+/exec$")}
        self.assertEqual(len(sessions), 2, sessions)  # the first exec's, the other's
        self.c.call("sandbox.destroy", {"id": "mine"})

    def test_reset_in_the_middle_of_the_output(self):
        self.create(name="reset")
        self.mark()
        want = "".join("%d\n" % i for i in range(1, 20001))
        self.fake.fail("GET", r"/logs$", ws_reset_after=40000, times=2)
        self.fake.fail("GET", r"/logs$", status=502, times=1)
        r = self.exec("reset", command="seq 1 20000; echo end >&2", max_output_bytes=1 << 20)
        self.assertEqual(r["exit_code"], 0)
        self.assertEqual(r["stdout"], want)
        self.assertEqual(r["stderr"], "end\n")
        self.assertEqual(len(self.since("GET", r"/logs\?follow=true")), 4)
        self.c.call("sandbox.destroy", {"id": "reset"})

    def test_log_connection_dropped_before_its_upgrade(self):
        """The log stream's connection is opened while the POST is in flight; a proxy that
        drops it before it was used costs a new one, nothing of the output."""
        self.create(name="spare")
        self.mark()
        go = threading.Event()
        held = self.fake.fail("POST", r"/exec$", hold=go)
        rid = next(self.c.ids)
        self.c.send({"jsonrpc": "2.0", "id": rid, "method": "exec",
                     "params": {"sandbox": "spare", "command": "seq 1 3000; echo end >&2"}})
        try:
            deadline = time.monotonic() + 30
            while not (held.held == 1 and self.fake.fresh_connections()):
                self.assertLess(time.monotonic(), deadline, "no connection made during the POST")
                time.sleep(0.01)
            self.assertEqual(self.fake.reset_fresh_connections(), 1)
        finally:
            go.set()
        resp = self.c.wait_response(rid)
        self.assertIn("result", resp, resp.get("error"))
        r = resp["result"]
        self.assertEqual(r["exit_code"], 0)
        self.assertEqual(r["stdout"], "".join("%d\n" % i for i in range(1, 3001)))
        self.assertEqual(r["stderr"], "end\n")
        # The dropped connection never carried a request; the upgrade went on a new one.
        self.assertEqual(len(self.since("GET", r"/logs\?follow=true")), 1)
        self.c.call("sandbox.destroy", {"id": "spare"})

    def test_rejected_key_is_reported(self):
        self.create(name="auth")
        self.fake.fail("POST", r"/exec$", status=401, times=1)
        e = self.assertError(-32000, "exec", {"sandbox": "auth", "command": "true"},
                             "rejected the API key")
        self.assertIn("hint", e.data)
        self.assertNotIn(self.fake.key, json.dumps(e.data) + e.message)
        self.c.call("sandbox.destroy", {"id": "auth"})

    def test_stopped_sandbox_is_resumed(self):
        sbx = self.create(name="resume")
        self.mark()
        self.fake.stop_sandbox(sbx["details"]["sandbox_id"])
        self.assertEqual(self.exec("resume", command="echo back")["stdout"], "back\n")
        self.assertEqual(self.box(sbx).state, "started")
        self.assertEqual(len(self.since("POST", r"/start$")), 1)
        self.c.call("sandbox.destroy", {"id": "resume"})

    def test_deleted_sandbox_is_recreated(self):
        sbx = self.create(name="gone")
        old = sbx["details"]["sandbox_id"]
        with self.fake.lock:
            del self.fake.sandboxes[old]
        r = self.exec("gone", command="echo again")
        self.assertEqual(r["stdout"], "again\n")
        self.assertTrue(r.get("sandbox_recreated"), r)
        new = self.c.call("sandbox.get", {"id": "gone"})["details"]["sandbox_id"]
        self.assertNotEqual(new, old)
        self.c.call("sandbox.destroy", {"id": "gone"})

    def test_error_and_build_failure_states(self):
        self.fake.create_error = "no capacity in region us"
        try:
            self.assertError(-32005, "sandbox.create", {"backend": "daytona"}, "no capacity")
        finally:
            self.fake.create_error = None
        self.fake.build_error = "pull access denied for nosuch"
        try:
            self.assertError(-32005, "sandbox.create", {"backend": "daytona", "image": "nosuch"},
                             "build_failed.*pull access denied")
        finally:
            self.fake.build_error = None
        with self.fake.lock:
            self.assertEqual(self.fake.sandboxes, {})  # nothing left behind

    def test_create_cancelled_when_its_client_goes(self):
        """A create whose client disconnects is abandoned (backend cancel): the sandbox it
        made on Daytona is deleted, none is left in the daemon."""
        def made():
            with self.fake.lock:
                return [sb for sb in self.fake.sandboxes.values()
                        if sb.labels.get("sandboxd.name") == "gone"]
        self.fake.start_polls = 100000  # it never starts
        try:
            c = self.daemon.client()
            c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                    "params": {"backend": "daytona", "name": "gone"}})
            deadline = time.monotonic() + 20
            while not made():
                self.assertLess(time.monotonic(), deadline, "no sandbox made")
                time.sleep(0.05)
            c.close()
            while made():
                self.assertLess(time.monotonic(), deadline, "the sandbox was not deleted")
                time.sleep(0.05)
        finally:
            self.fake.start_polls = 0
        names = [s["name"] for s in self.c.call("sandbox.list")["sandboxes"]]
        self.assertNotIn("gone", names)

    def test_slow_start(self):
        self.fake.start_polls = 5
        self.mark()
        try:
            self.create(name="slow")
        finally:
            self.fake.start_polls = 0
        msgs = [n["params"]["message"] for n in self.c.notifications
                if n["method"] == "sandbox.progress"]
        self.assertTrue(any(m.endswith(": starting") for m in msgs), msgs)
        self.assertGreaterEqual(len(self.since("GET", r"/api/sandbox/[^/]+$")), 6)
        self.c.call("sandbox.destroy", {"id": "slow"})


def read_all(c, exec_id, stream="stdout"):
    """Everything the daemon kept of a stream, through process.read."""
    out, off = "", 0
    while True:
        r = c.call("process.read", {"exec_id": exec_id, "stream": stream, "offset": off,
                                    "max_bytes": 1 << 20})
        out += r["data"]
        off = r["next_offset"]
        if r["eof"] or not r["data"]:
            return out


class TestRetryBound(FakeTest):
    """Retries end: after `retries` more attempts, or at once for a Retry-After above 60 s; the
    create then fails with Daytona's status and deletes the sandbox it made."""
    extra = "retries = 1\n"

    def gone(self, name):
        with self.fake.lock:
            return not [sb for sb in self.fake.sandboxes.values()
                        if sb.labels.get("sandboxd.name") == name]

    def test_retries_are_bounded(self):
        rule = self.fake.fail("GET", r"/api/sandbox/", status=503, times=3,
                              message="overloaded")
        e = self.assertError(-32005, "sandbox.create", {"backend": "daytona", "name": "bound"},
                             "HTTP 503: overloaded")
        self.assertEqual((rule.hits, rule.times), (2, 1))  # the first try and one retry
        self.assertTrue(self.gone("bound"), e.message)
        self.fake.rules.clear()
        rule = self.fake.fail("GET", r"/api/sandbox/", status=429, retry_after=3600, times=2)
        self.assertError(-32005, "sandbox.create", {"backend": "daytona", "name": "later"},
                         r"HTTP 429: .*asks to wait 3600 s")
        self.assertEqual(rule.hits, 1)  # not retried: waiting an hour would hang the create
        self.assertTrue(self.gone("later"))
        self.fake.rules.clear()
        self.create(name="fine")
        self.c.call("sandbox.destroy", {"id": "fine"})


class TestRestart(FakeTest):
    def wait_for(self, what, cond, timeout=20):
        deadline = time.monotonic() + timeout
        while not cond():
            self.assertLess(time.monotonic(), deadline, what)
            time.sleep(0.05)

    def test_execs_outlive_a_restart(self):
        """An orderly restart (SIGTERM) leaves execs running in the sandbox; the next daemon
        finds them by their nonce and goes on: no line lost or repeated, stdin still open,
        the real status of one that ended meanwhile, the old daemon's idle sessions gone."""
        sbx = self.create(name="run")
        n = 60
        numbered = self.exec("run", background=True, command=(
            "i=0; while [ $i -lt %d ]; do echo out-$i; echo err-$i >&2; i=$((i+1)); "
            "sleep 0.05; done; exit 3" % n))["exec_id"]
        reader = self.exec("run", background=True, stdin_open=True,
                           command="read a; echo got:$a; read b; echo got:$b")["exec_id"]
        self.c.call("process.write", {"exec_id": reader, "data": "one\n"})
        late = self.exec("run", background=True,
                         command="sleep 1; echo late; exit 4")["exec_id"]
        pidfile = os.path.join(self.root, "hold.pid")
        hold = self.exec("run", background=True, command="sleep %d & echo $! > %s; wait" % (
            300 + int.from_bytes(os.urandom(2), "big") % 600, pidfile))["exec_id"]
        self.wait_for("no output yet", lambda: "out-5" in read_all(self.c, numbered))
        self.wait_for("stdin not taken", lambda: "got:one" in read_all(self.c, reader))
        self.exec("run", command="true")  # a pooled session, idle when the daemon stops

        def idle():
            return {sid for sid, ses in list(self.box(sbx).sessions.items())
                    if all("exitCode" in c for c in ses.info()["commands"])}
        self.wait_for("no idle session", idle)
        idle = idle()
        state = self.daemon.state
        self.c.close()
        self.daemon.stop()
        time.sleep(1.5)  # `late` ends while no daemon runs
        type(self).daemon = self.start_daemon(state_dir=state)
        self.c = self.daemon.client()
        w = self.c.call("process.wait", {"exec_id": numbered, "timeout_ms": 60000}, timeout=90)
        self.assertEqual((w["state"], w["exit_code"]), ("exited", 3), w)
        self.assertEqual(read_all(self.c, numbered).splitlines(),
                         ["out-%d" % i for i in range(n)])
        self.assertEqual(read_all(self.c, numbered, "stderr").splitlines(),
                         ["err-%d" % i for i in range(n)])
        self.c.call("process.write", {"exec_id": reader, "data": "two\n", "eof": True})
        w = self.c.call("process.wait", {"exec_id": reader, "timeout_ms": 30000}, timeout=60)
        self.assertEqual((w["exit_code"], read_all(self.c, reader)),
                         (0, "got:one\ngot:two\n"), w)
        w = self.c.call("process.wait", {"exec_id": late, "timeout_ms": 30000}, timeout=60)
        self.assertEqual((w["exit_code"], read_all(self.c, late)), (4, "late\n"), w)
        # Killed after the restart: its tree goes (the pid file is the wrapper's, in remote_dir).
        k = self.c.call("process.kill", {"exec_id": hold, "grace_ms": 500})
        self.assertEqual((k["killed"], k["survivors"]), (True, 0), k)
        w = self.c.call("process.wait", {"exec_id": hold, "timeout_ms": 10000}, timeout=30)
        self.assertEqual(w["signal"], "SIGTERM", w)
        with open(pidfile) as f:
            pid = int(f.read())
        self.assertFalse(os.path.exists("/proc/%d" % pid) and
                         open("/proc/%d/stat" % pid).read().split(") ")[1][0] != "Z")
        self.wait_for("the old idle sessions stay",
                      lambda: not idle & set(self.box(sbx).sessions))
        self.c.call("sandbox.destroy", {"id": "run"})

    def test_readoption_orphans_and_persistence(self):
        keep = self.create(name="keep")
        self.exec("keep", command="cd /tmp")
        parked = self.create(name="park", daytona={"persistent": True})
        home = self.box(parked).home
        self.exec("park", command="echo kept > %s/file" % home)
        self.c.call("sandbox.destroy", {"id": "park"})
        self.assertEqual(self.box(parked).state, "stopping")  # stopped, not deleted
        # A command still running when the daemon stops goes on in the sandbox.
        self.exec("keep", command="sleep 300", background=True)
        state = self.daemon.state
        self.c.close()
        self.daemon.stop()
        self.assertIsNotNone(self.box(keep))  # a daemon stop deletes nothing
        mine = {"sandboxd": "1", "sandboxd.instance": state}
        orphan = self.fake.add_sandbox({"labels": dict(mine, **{"sandboxd.sandbox": "sbx_dead"})})
        other = self.fake.add_sandbox({"labels": {"sandboxd": "1", "sandboxd.sandbox": "sbx_x",
                                                  "sandboxd.instance": "/elsewhere"}})
        type(self).daemon = self.start_daemon(state_dir=state)
        self.c = self.daemon.client()
        self.assertIsNone(self.fake.find(orphan.id))
        self.assertIsNotNone(self.fake.find(other.id))
        self.assertIn(self.box(parked).state, ("stopping", "stopped"))  # parked, not orphan
        got = self.c.call("sandbox.get", {"id": "keep"})
        self.assertEqual(got["id"], keep["id"])
        self.assertEqual(self.exec("keep", command="echo again")["stdout"], "again\n")
        again = self.create(name="park", daytona={"persistent": True})
        self.assertEqual(again["details"]["sandbox_id"], parked["details"]["sandbox_id"])
        self.assertEqual(self.exec("park", command="cat %s/file" % home)["stdout"], "kept\n")
        self.assertEqual(self.box(parked).labels["sandboxd.sandbox"], again["id"])
        for name in ("keep", "park"):
            self.c.call("sandbox.destroy", {"id": name})


class TestSecrets(FakeTest):
    use_file = False  # the key in the daemon's environment
    log_level = "debug"

    def test_key_never_leaks(self):
        key = self.fake.key
        self.assertNotIn(key, json.dumps(self.c.call("backend.list")))
        self.assertNotIn(key, json.dumps(self.c.call("daemon.info")))
        self.create(name="sec")
        r = self.exec("sec", command="env; cat /proc/self/environ | tr '\\0' '\\n'")
        self.assertNotIn(key, r["stdout"])
        self.assertNotIn("DAYTONA_API_KEY", r["stdout"])
        self.fake.fail("POST", r"/exec$", status=401, message="bad key " + key)
        e = self.assertError(-32000, "exec", {"sandbox": "sec", "command": "true"})
        self.assertNotIn(key, e.message + json.dumps(e.data))
        self.assertIn("[redacted]", e.message)
        self.c.call("sandbox.destroy", {"id": "sec"})
        for dirpath, _, files in os.walk(self.daemon.state):
            for name in files:
                try:
                    with open(os.path.join(dirpath, name), "rb") as f:
                        self.assertNotIn(key.encode(), f.read(), name)
                except FileNotFoundError:
                    pass  # a state file's temporary copy, renamed meanwhile: read as the file
        self.assertNotIn(key, self.daemon.read_log())


@needs_root("needs root to act as a second uid")
class TestOtherUser(FakeTest):
    """A root daemon that nobody may use too: nobody gets nothing of root's sandboxes (not
    even a parked one of the same name), cannot steer the API or plant the trusted labels."""
    daemon_extra = "allow_users = nobody\nsocket_group = nogroup\n"

    def test_nobody_gets_nothing_of_root(self):
        mine = self.create(name="mine")
        parked = self.create(name="park", daytona={"persistent": True})
        self.c.call("sandbox.destroy", {"id": "park"})
        res = as_nobody(self.daemon.socket, [
            ["backend.list", {}],
            ["sandbox.get", {"id": "mine"}],
            ["sandbox.get", {"id": mine["id"]}],
            ["exec", {"sandbox": mine["id"], "command": "true"}],
            ["file.read", {"sandbox": mine["id"], "path": "/etc/hostname"}],
            ["sandbox.create", {"backend": "daytona", "name": "x",
                                "daytona": {"api_url": "http://127.0.0.1:1/api"}}],
            ["sandbox.create", {"backend": "daytona", "name": "x",
                                "labels": {"sandboxd.owner": "0"}}],
            ["sandbox.create", {"backend": "daytona", "name": "park",
                                "daytona": {"persistent": True}}],
            ["exec", {"sandbox": "park", "command": "echo hi"}],
            ["sandbox.destroy", {"id": "park"}],
        ])
        self.assertNotIn(self.fake.key, json.dumps(res))
        daytona = [b for b in res[0]["result"]["backends"] if b["name"] == "daytona"][0]
        self.assertTrue(daytona["available"], daytona)
        for i in (1, 2, 3, 4):
            self.assertEqual(res[i].get("error", {}).get("code"), -32002, res[i])  # not found
        self.assertEqual(res[5]["error"]["code"], -32602)
        self.assertIn("unknown key 'daytona.api_url'", res[5]["error"]["message"])
        self.assertEqual(res[6]["error"]["code"], -32602)
        self.assertIn("reserved", res[6]["error"]["message"])
        theirs = res[7]["result"]
        self.assertNotEqual(theirs["details"]["sandbox_id"], parked["details"]["sandbox_id"])
        self.assertEqual(res[8]["result"]["stdout"], "hi\n")
        self.assertEqual(self.box(theirs).labels["sandboxd.owner"], str(NOBODY))
        self.assertEqual(self.box(parked).labels["sandboxd.owner"], "0")
        self.assertEqual(self.box(parked).labels["sandboxd.sandbox"], parked["id"])
        self.assertIn(self.box(parked).state, ("stopping", "stopped"))
        self.assertEqual(self.exec("mine", command="echo still")["stdout"], "still\n")
        again = self.create(name="park", daytona={"persistent": True})
        self.assertEqual(again["details"]["sandbox_id"], parked["details"]["sandbox_id"])
        for name in ("mine", "park"):
            self.c.call("sandbox.destroy", {"id": name})


class TestCredentials(unittest.TestCase):
    """Where the key may come from, and what is said when it cannot be used."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sbx-dtcred-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        os.chmod(self.dir, 0o755)

    def backend(self, conf, env=None):
        d = Daemon("[backend.daytona]\napi_url = http://127.0.0.1:9/api\n" + conf,
                   env=dict(env or {}, DAYTONA_API_KEY=""))
        try:
            c = d.client()
            b = [x for x in c.call("backend.list")["backends"] if x["name"] == "daytona"][0]
            if not b["available"] and not b["details"].get("credential_source"):
                with self.assertRaises(RpcError) as cm:  # no key: nothing is attempted
                    c.call("sandbox.create", {"backend": "daytona"})
                self.assertEqual(cm.exception.code, -32000)
                self.assertEqual(cm.exception.data["reason"], b["reason"])
            c.close()
            return b
        finally:
            d.stop()

    def test_missing_and_unsafe_keys(self):
        b = self.backend("")
        self.assertFalse(b["available"])
        self.assertIn("no Daytona API key", b["reason"])
        self.assertIn("api_key_file", b["hint"])
        loose = os.path.join(self.dir, "loose")
        with open(loose, "w") as f:
            f.write("DAYTONA_API_KEY=k\n")
        os.chmod(loose, 0o644)
        b = self.backend("api_key_file = %s\n" % loose)
        self.assertFalse(b["available"])
        self.assertIn("could be read by others", b["reason"])
        # A key file that is unusable is never replaced by the environment's key.
        b = self.backend("api_key_file = %s\n" % loose, env={"DAYTONA_API_KEY": "k2"})
        self.assertIn("could be read by others", b["reason"])
        b = self.backend("api_key = inline\n")  # the test's config file is 0644
        self.assertFalse(b["available"])
        self.assertIn("which others can read", b["reason"])

    def test_unreachable_api(self):
        key = private_file(os.path.join(self.dir, "k"), "# comment\nDAYTONA_API_KEY='abc'\n")
        b = self.backend("api_key_file = %s\n" % key)
        self.assertFalse(b["available"])
        self.assertIn("cannot reach Daytona", b["reason"])
        self.assertEqual(b["details"]["credential_source"], "api_key_file " + key)

    def test_config_errors_fail_start_up(self):
        for conf, pattern in [("api_url = http://example.com/api\n", "must be https"),
                              ("nosuchkey = 1\n", "unknown key 'nosuchkey'"),
                              ("auto_stop_minutes = -5\n", "auto_stop_minutes")]:
            with self.subTest(conf=conf):
                path = os.path.join(self.dir, "c.conf")
                with open(path, "w") as f:
                    f.write("[backend.daytona]\n" + conf)
                p = subprocess.run([SANDBOXD, "--config", path, "--socket",
                                    os.path.join(self.dir, "s.sock"), "--state-dir",
                                    os.path.join(self.dir, "st")],
                                   capture_output=True, text=True, timeout=30,
                                   env={"PATH": os.environ["PATH"]})
                self.assertNotEqual(p.returncode, 0)
                self.assertRegex(p.stderr, pattern)


class TestDocs(unittest.TestCase):
    """Every key of [backend.daytona] (the daytona_keys[] table) is documented in both places."""

    def test_keys_documented(self):
        from test_systemd import TOP, man_text
        with open(os.path.join(TOP, "backends", "daytona", "daytona.c")) as f:
            src = f.read()
        table = src[src.index("daytona_keys[] = {"):]
        keys = re.findall(r'DKO?\("(\w+)"', table[:table.index("};")])
        self.assertGreater(len(keys), 15)
        page = man_text("sandboxd.conf.5")
        with open(os.path.join(TOP, "docs", "configuration.md")) as f:
            md = f.read()
        for key in keys:
            self.assertTrue(re.search(r"(?m)^\s+%s \(" % key, page),
                            "sandboxd.conf(5) lacks [backend.daytona] %s" % key)
            self.assertIn("`%s`" % key, md)
