"""What integrators trip on (issue 17): routing live output (exec.started), idempotent execs
(client-chosen exec_id), stdin of a queued exec, stream offsets, answers that hold bytes that
are not UTF-8, and clients that never said daemon.hello."""
import base64
import os
import shutil
import tempfile

from harness import DaemonTest, RpcError, workdir_sandbox


def raw_len(text):
    """Bytes of raw output behind a sanitised chunk in which each U+FFFD stood for one byte."""
    return len(text.encode()) - 2 * text.count("\ufffd")


class Started(DaemonTest):
    def test_started_comes_first_and_names_the_request(self):
        self.c.send({"jsonrpc": "2.0", "id": "req-7", "method": "exec",
                     "params": {"command": "echo out", "tag": "t1"}})
        msgs = []
        while True:
            m = self.c.read()
            msgs.append(m)
            if m.get("id") == "req-7":
                break
        started = [m for m in msgs if m.get("method") == "exec.started"]
        self.assertEqual(len(started), 1, msgs)
        self.assertEqual(msgs[0]["method"], "exec.started", "exec.started before any output")
        p = started[0]["params"]
        self.assertEqual(p["request_id"], "req-7")
        self.assertEqual(p["tag"], "t1")
        self.assertEqual(p["exec_id"], msgs[-1]["result"]["exec_id"])
        self.assertEqual(p["sandbox"], msgs[-1]["result"]["sandbox"])

    def test_kill_a_running_foreground_exec_by_its_started_id(self):
        self.c.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                     "params": {"command": "sleep 60", "timeout_s": 120}})
        m = self.c.read()
        self.assertEqual(m.get("method"), "exec.started", m)
        other = self.daemon.client()
        self.addCleanup(other.close)
        other.call("process.kill", {"exec_id": m["params"]["exec_id"], "grace_ms": 200})
        res = self.c.wait_response(1)["result"]
        self.assertEqual(res["signal"], "SIGTERM")

    def test_no_request_id_for_a_notification_exec(self):
        self.c.send({"jsonrpc": "2.0", "method": "exec", "params": {"command": "true"}})
        m = self.c.read()
        self.assertEqual(m.get("method"), "exec.started", m)
        self.assertNotIn("request_id", m["params"])


class ClientExecId(DaemonTest):
    def test_repeat_returns_the_first_result(self):
        params = {"command": "echo $RANDOM$RANDOM; echo err >&2", "exec_id": "p_mine-1"}
        first = self.c.call("exec", params)
        self.assertEqual(first["exec_id"], "p_mine-1")
        again = self.c.call("exec", params)
        self.assertEqual(again["stdout"], first["stdout"], "a repeat must not run it again")
        self.assertEqual(again["stderr"], "err\n")
        self.assertTrue(again["repeated"])
        runs = [p for p in self.c.call("process.list")["processes"]
                if p["exec_id"] == "p_mine-1"]
        self.assertEqual(len(runs), 1)

    def test_repeat_while_running_waits_for_the_same_process(self):
        other = self.daemon.client()
        self.addCleanup(other.close)
        other.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                    "params": {"command": "sleep 0.5; echo once", "exec_id": "p_wait-1"}})
        self.assertEqual(other.read()["method"], "exec.started")
        again = self.c.call("exec", {"command": "sleep 0.5; echo once", "exec_id": "p_wait-1"})
        self.assertEqual(again["stdout"], "once\n")
        self.assertEqual(other.wait_response(1)["result"]["stdout"], "once\n")

    def test_background_repeat_gives_its_state(self):
        params = {"command": "sleep 30", "background": True, "exec_id": "p_bg-1"}
        self.assertEqual(self.c.call("exec", params)["exec_id"], "p_bg-1")
        again = self.c.call("exec", params)
        self.assertEqual((again["exec_id"], again["state"], again["repeated"]),
                         ("p_bg-1", "running", True))
        self.c.call("process.kill", {"exec_id": "p_bg-1", "grace_ms": 100})
        again = self.c.call("exec", params)
        self.assertEqual(again["state"], "exited")
        self.assertEqual(again["signal"], "SIGTERM")

    def test_invalid_and_conflicting_ids(self):
        for bad in ("x_1", "p_", "p_a b", "p_" + "a" * 80, "p_../x", 7):
            with self.subTest(bad=bad):
                self.assertRpcError(-32602, "exec", {"command": "true", "exec_id": bad},
                                    param="exec_id")
        self.c.call("exec", {"command": "true", "exec_id": "p_taken"})
        e = self.assertRpcError(-32602, "exec", {"command": "false", "exec_id": "p_taken"},
                                param="exec_id")
        self.assertIn("another command", e.message)


class QueuedStdin(DaemonTest):
    def test_stdin_of_an_exec_waiting_for_the_shell(self):
        """A foreground exec queued behind another one accepts process.write (issue 17)."""
        sb = self.c.call("sandbox.create", {"name": "queue"})["id"]
        blocker = self.daemon.client()
        self.addCleanup(blocker.close)
        blocker.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                      "params": {"sandbox": sb, "command": "sleep 1"}})
        self.assertEqual(blocker.read()["method"], "exec.started")
        self.c.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                     "params": {"sandbox": sb, "command": "wc -c", "stdin_open": True,
                                "exec_id": "p_queued-wc", "stream": False}})
        listed = [p for p in self.c.call("process.list", {"sandbox": sb})["processes"]
                  if p["exec_id"] == "p_queued-wc"]
        self.assertEqual(listed[0]["state"], "queued")
        chunk = base64.b64encode(b"x" * 300000).decode()
        for i in range(3):
            r = self.c.call("process.write", {"exec_id": "p_queued-wc", "data_base64": chunk,
                                              "eof": i == 2})
            self.assertEqual(r["written"], 300000)
        res = self.c.wait_response(1)["result"]
        self.assertEqual(res["stdout"].strip(), "900000")
        self.assertEqual(blocker.wait_response(1)["result"]["exit_code"], 0)


class Offsets(DaemonTest):
    def test_offsets_after_a_held_back_partial_character(self):
        # A pipe of 1 MiB and one write: the daemon reads far more than 64 KiB at once.
        sb, wd = workdir_sandbox(self, self.c)  # the script lives where the sandbox sees it
        script = os.path.join(wd, "big.py")
        with open(script, "wb") as f:
            f.write(b"import fcntl, os\nfcntl.fcntl(1, 1031, 1 << 20)\n"
                    b"os.write(1, b'a' * 200000)\n")
        r = self.c.call("exec", {"sandbox": sb["id"],
                                 "command": "printf '\\303'; sleep .3; /usr/bin/python3 %s"
                                 % script})
        chunks = [n["params"] for n in self.c.notifications
                  if n["method"] == "exec.output" and n["params"]["exec_id"] == r["exec_id"]]
        expect = 0
        for ch in chunks:
            self.assertEqual(ch["offset"], expect, [c["offset"] for c in chunks])
            expect += raw_len(ch["data"])
        self.assertEqual(expect, 200001)
        self.assertGreater(max(raw_len(ch["data"]) for ch in chunks), 65536,
                           "the case needs one read of more than 64 KiB")


class NotUtf8(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="sbx-utf8-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_every_answer_goes_out(self):
        # The directories live in the sandbox's workdir: it sees them whatever its isolation.
        sb = self.c.call("sandbox.create", {"name": "bytes", "workdir": self.tmp})["id"]
        d = os.path.join(self.tmp.encode(), b"dir-\xff")
        os.mkdir(d)
        r = self.c.call("exec", {"sandbox": sb, "command": "cd \"$(printf '%s/dir-\\377')\""
                                 % self.tmp, "stream": False})
        self.assertEqual(r["exit_code"], 0)
        got = self.c.call("sandbox.get", {"id": sb}, timeout=10)
        self.assertEqual(got["cwd"], self.tmp + "/dir-\ufffd")
        os.rmdir(d)
        # The directory is gone: the exec runs one directory up, and the note that says so
        # (naming the directory, not UTF-8) goes out with the answer.
        r = self.c.call("exec", {"sandbox": sb, "command": "echo $PWD"}, timeout=10)
        self.assertEqual(r["stdout"], self.tmp + "\n")
        self.assertIn("dir-\ufffd no longer exists", r["stderr"])
        self.assertEqual(self.c.call("sandbox.get", {"id": sb}, timeout=10)["cwd"], self.tmp)
        self.assertEqual(self.c.call("exec", {"sandbox": sb, "command": "echo $PWD",
                                              "cwd": "/"}, timeout=10)["stdout"], "/\n")


class NoHello(DaemonTest):
    # `rm -r` asks in the default sandbox whatever its isolation (ask_isolated = ask).
    config = "[policy]\napproval_timeout_s = 30\nask_isolated = ask\n"

    def test_ask_without_hello_is_denied_at_once_and_says_how(self):
        asked = []
        c = self.daemon.client(on_request=lambda m: asked.append(m), hello=False)
        self.addCleanup(c.close)
        # The answer comes well before approval_timeout_s (30 s): the call's 10 s would fail.
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"command": "rm -r /tmp/sandboxd-no-hello-nothing"}, timeout=10)
        self.assertEqual(asked, [], "nobody is asked on a connection without daemon.hello")
        e = cm.exception
        self.assertEqual((e.code, e.data["resolution"]), (-32001, "role"))
        self.assertIn("daemon.hello", e.message)
        self.assertIn("interactive", e.message)

    def test_late_hello_interactive_is_asked_next_time(self):
        # docs/protocol.md: no hello, no one asked; a hello later makes the next ask a question.
        asked = []

        def answer(m):
            asked.append(m)
            return {"decision": "deny"}
        c = self.daemon.client(on_request=answer, hello=False)
        self.addCleanup(c.close)
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"command": "rm -r /tmp/sandboxd-no-hello-nothing"}, timeout=10)
        self.assertEqual((cm.exception.data["resolution"], asked), ("role", []))
        self.assertEqual(c.call("daemon.hello", {})["role"], "interactive")
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"command": "rm -r /tmp/sandboxd-no-hello-nothing"}, timeout=10)
        self.assertEqual((cm.exception.data["resolution"], len(asked)), ("user", 1))

    def test_hello_interactive_is_asked(self):
        asked = []

        def answer(m):
            asked.append(m)
            return {"decision": "deny"}
        c = self.daemon.client(on_request=answer, hello=True)
        self.addCleanup(c.close)
        with self.assertRaises(RpcError) as cm:
            c.call("exec", {"command": "rm -r /tmp/sandboxd-no-hello-nothing"})
        self.assertEqual(cm.exception.data["resolution"], "user")
        self.assertEqual(len(asked), 1)
