"""Core daemon: framing, JSON-RPC, exec on the local backend, processes, files."""
import base64
import json
import os
import socket
import time
import unittest

from harness import Daemon, DaemonTest, RpcError, b64, uniq_secs, workdir_sandbox


def rpc(method, params=None, rid=1):
    m = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        m["params"] = params
    return m


class Framing(DaemonTest):
    def test_invalid_json_then_valid(self):
        self.c.send_raw(b'{"jsonrpc":"2.0",\n')
        msg = self.c.read()
        self.assertEqual(msg["error"]["code"], -32700)
        self.assertIsNone(msg["id"])
        self.assertEqual(self.c.call("daemon.hello")["server"], "sandboxd")

    def test_invalid_utf8(self):
        self.c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"exec","params":{"command":"\xff"}}\n')
        msg = self.c.read()
        self.assertEqual(msg["error"]["code"], -32700)
        self.assertIn("UTF-8", msg["error"]["message"])
        self.assertIsNone(msg["id"])

    def test_non_object_messages(self):
        for raw in (b"42", b'"x"', b"null", b"true"):
            self.c.send_raw(raw + b"\n")
            msg = self.c.read()
            self.assertEqual(msg["error"]["code"], -32600, raw)

    def test_empty_batch(self):
        self.c.send_raw(b"[]\n")
        self.assertEqual(self.c.read()["error"]["code"], -32600)

    def test_missing_or_wrong_jsonrpc(self):
        for env in ({"id": 7, "method": "daemon.info"},
                    {"jsonrpc": "1.0", "id": 7, "method": "daemon.info"},
                    {"jsonrpc": 2, "id": 7, "method": "daemon.info"}):
            self.c.send(env)
            msg = self.c.read()
            self.assertEqual(msg["error"]["code"], -32600)
            self.assertEqual(msg["id"], 7)

    def test_unknown_method(self):
        e = self.assertRpcError(-32601, "no.such.method")
        self.assertIn("no.such.method", e.message)

    def test_params_must_be_object(self):
        self.c.send({"jsonrpc": "2.0", "id": 3, "method": "daemon.info", "params": [1]})
        self.assertEqual(self.c.read()["error"]["code"], -32602)

    def test_crlf_and_blank_lines(self):
        self.c.send_raw(b"\n\r\n" + json.dumps(rpc("daemon.hello", rid=9)).encode() + b"\r\n")
        msg = self.c.read()
        self.assertEqual(msg["id"], 9)
        self.assertIn("result", msg)

    def test_line_over_limit_then_valid_request(self):
        big = b'{"jsonrpc":"2.0","id":1,"method":"exec","params":{"command":"' + \
            b"x" * (17 << 20) + b'"}}\n'
        follow = json.dumps(rpc("daemon.hello", rid=2)).encode() + b"\n"
        self.c.send_raw(big + follow)
        first = self.c.read()
        self.assertEqual(first["error"]["code"], -32600)
        self.assertIsNone(first["id"])
        self.assertIn("max_message_bytes", first["error"]["message"])
        second = self.c.read()
        self.assertEqual(second["id"], 2)
        self.assertEqual(second["result"]["server"], "sandboxd")

    def test_batch(self):
        self.c.send([rpc("daemon.hello", rid=1), {"jsonrpc": "2.0", "method": "daemon.info"},
                     rpc("nope", rid=2), 5])
        msg = self.c.read()
        self.assertIsInstance(msg, list)
        byid = {m.get("id"): m for m in msg}
        self.assertIn("result", byid[1])
        self.assertEqual(byid[2]["error"]["code"], -32601)
        self.assertEqual(byid[None]["error"]["code"], -32600)
        self.assertEqual(len(msg), 3)

    def test_10000_pipelined_requests(self):
        n = 10000
        # daemon.hello may be sent once per connection: pipeline a cheap method instead.
        data = b"".join(json.dumps(rpc("policy.check", {"command": "true"}, rid=i)).encode() +
                        b"\n" for i in range(n))
        self.c.send_raw(data)
        seen = set()
        while len(seen) < n:
            msg = self.c.read(timeout=60)
            self.assertIn("result", msg)
            seen.add(msg["id"])
        self.assertEqual(seen, set(range(n)))


class WrongTypes(DaemonTest):
    CASES = [
        ("exec", {"command": 5}, "command"),
        ("exec", {"argv": "ls"}, "argv"),
        ("exec", {"argv": ["ls", 3]}, "argv"),
        ("exec", {"command": "true", "cwd": 1}, "cwd"),
        ("exec", {"command": "true", "env": {"A": 1}}, "env"),
        ("exec", {"command": "true", "env": []}, "env"),
        ("exec", {"command": "true", "timeout_s": "10"}, "timeout_s"),
        ("exec", {"command": "true", "timeout_s": -1}, "timeout_s"),
        ("exec", {"command": "true", "background": "yes"}, "background"),
        ("exec", {"command": "true", "stream": 1}, "stream"),
        ("exec", {"command": "true", "merge_stderr": None, "pty": "x"}, "pty"),
        ("exec", {"command": "true", "stdin": 5}, "stdin"),
        ("exec", {"command": "true", "stdin_base64": "@@"}, "stdin_base64"),
        ("exec", {"command": "true", "output_encoding": "hex"}, "output_encoding"),
        ("exec", {"command": "true", "max_output_bytes": "1"}, "max_output_bytes"),
        ("exec", {"command": "true", "pty_size": {"rows": "x"}}, "rows"),
        ("exec", {"command": "true", "tag": []}, "tag"),
        ("exec", {"command": "true", "sandbox": 4}, "sandbox"),
        ("exec", {"command": "true", "bogus": 1}, "bogus"),
        ("exec", {"command": "true", "argv": ["true"]}, "argv"),
        ("exec", {}, "command"),
        ("exec", {"command": "true", "timeout_s": 0}, "timeout_s"),
        ("sandbox.create", {"backend": 1}, "backend"),
        ("sandbox.create", {"backend": "nope"}, "backend"),
        ("sandbox.create", {"name": "a b"}, "name"),
        ("sandbox.create", {"env": "x"}, "env"),
        ("sandbox.create", {"labels": {"a": 2}}, "labels"),
        ("sandbox.create", {"network": "wifi"}, "network"),
        ("sandbox.create", {"resources": {"memory_mb": "big"}}, "resources.memory_mb"),
        ("sandbox.create", {"resources": 5}, "resources"),
        ("sandbox.create", {"mounts": {}}, "mounts"),
        ("sandbox.create", {"timeout_s": "1"}, "timeout_s"),
        ("sandbox.create", {"workdir": "relative"}, "workdir"),
        ("sandbox.create", {"docker": []}, "docker"),
        ("sandbox.get", {}, "id"),
        ("sandbox.get", {"id": 3}, "id"),
        ("sandbox.destroy", {"id": []}, "id"),
        ("sandbox.list", {"backend": 2}, "backend"),
        ("process.read", {"exec_id": 1}, "exec_id"),
        ("process.read", {}, "exec_id"),
        ("process.list", {"state": "zombie"}, "state"),
        ("process.write", {"exec_id": None}, "exec_id"),
        ("process.signal", {"exec_id": 5}, "exec_id"),
        ("process.kill", {"exec_id": "p_x", "grace_ms": "1"}, "grace_ms"),
        ("process.wait", {"exec_id": "p_x", "timeout_ms": -5}, "timeout_ms"),
        ("file.read", {"path": 1}, "path"),
        ("file.read", {"path": "rel"}, "path"),
        ("file.write", {"path": "/tmp/x", "data": 1}, "data"),
        ("file.write", {"path": "/tmp/x", "mode": "0644", "data": ""}, "mode"),
        ("daemon.hello", {"role": "boss"}, "role"),
        ("daemon.hello", {"auto_approve": "yes"}, "auto_approve"),
        ("daemon.hello", {"client": 5}, "client"),
        ("policy.check", {"command": 5}, "command"),
        ("policy.check", {}, "command"),
    ]

    def test_every_wrong_type_names_the_param(self):
        for method, params, param in self.CASES:
            with self.subTest(method=method, params=params):
                resp = self.c.request(method, params)
                self.assertIn("error", resp, resp)
                self.assertEqual(resp["error"]["code"], -32602, resp)
                self.assertEqual(resp["error"]["data"]["param"], param, resp)
                self.assertIn(param.split(".")[-1], resp["error"]["message"])


class Exec(DaemonTest):
    def test_streams_and_result(self):
        resp = self.c.call("exec", {"command": "echo hi; echo oops >&2"})
        self.assertEqual(resp["exit_code"], 0)
        self.assertEqual(resp["stdout"], "hi\n")
        self.assertEqual(resp["stderr"], "oops\n")
        self.assertEqual(resp["stdout_bytes"], 3)
        self.assertEqual(resp["policy"]["verdict"], "allow")
        self.assertTrue(resp["exec_id"].startswith("p_"))
        self.assertEqual(self.c.output(resp["exec_id"]), "hi\n")
        self.assertEqual(self.c.output(resp["exec_id"], "stderr"), "oops\n")
        outs = [n for n in self.c.notifications if n["params"].get("exec_id") == resp["exec_id"]
                and n["method"] == "exec.output"]
        self.assertTrue(all(n["params"]["offset"] == 0 for n in outs))

    def test_exit_code_and_signal(self):
        self.assertEqual(self.c.call("exec", {"command": "exit 7"})["exit_code"], 7)
        r = self.c.call("exec", {"command": "kill -9 $$"})
        self.assertIsNone(r["exit_code"])
        self.assertEqual(r["signal"], "SIGKILL")

    def test_argv_without_shell(self):
        r = self.c.call("exec", {"argv": ["printf", "%s|", "a b", "$HOME"]})
        self.assertEqual(r["stdout"], "a b|$HOME|")

    def test_command_not_found(self):
        r = self.c.call("exec", {"command": "definitely-not-a-command-xyz"})
        self.assertEqual(r["exit_code"], 127)
        self.assertIn("not found", r["stderr"])
        e = self.assertRpcError(-32602, "exec", {"argv": ["definitely-not-a-command-xyz"]},
                                param="argv")
        self.assertIn("definitely-not-a-command-xyz", e.message)

    def test_nonexistent_cwd(self):
        e = self.assertRpcError(-32602, "exec", {"command": "pwd", "cwd": "/nonexistent/dir"},
                                param="cwd")
        self.assertIn("/nonexistent/dir", e.message)

    def test_minimal_environment(self):
        os.environ["SANDBOXD_TEST_SECRET"] = "leak"
        r = self.c.call("exec", {"argv": ["env"], "env": {"EXTRA": "1"}})
        env = dict(l.split("=", 1) for l in r["stdout"].splitlines())
        self.assertEqual(env["TERM"], "dumb")
        self.assertEqual(env["EXTRA"], "1")
        for k in ("PATH", "HOME", "USER", "LOGNAME", "LANG"):
            self.assertIn(k, env)
        self.assertNotIn("NOTIFY_SOCKET", env)
        self.assertNotIn("SANDBOXD_BIN", env)
        self.assertEqual(set(env) - {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM",
                                     "EXTRA"}, set())

    def test_shell_state_persists(self):
        sb = self.c.call("sandbox.create", {"name": "state-test"})["id"]
        self.c.call("exec", {"sandbox": sb, "command": "cd /tmp && export FOO='a b' BAR=1"})
        r = self.c.call("exec", {"sandbox": sb, "command": 'pwd; echo "$FOO"; unset BAR'})
        self.assertEqual(r["stdout"], "/tmp\na b\n")
        r = self.c.call("exec", {"sandbox": sb, "command": 'echo "[$BAR]"', "cwd": "/",
                                 "env": {"FOO": "override"}})
        self.assertEqual(r["stdout"], "[]\n")
        r = self.c.call("exec", {"sandbox": sb, "command": 'pwd; echo "$FOO"'})
        self.assertEqual(r["stdout"], "/tmp\na b\n", "cwd/env overrides hold for one exec only")
        self.c.call("sandbox.destroy", {"id": sb})

    def test_pipelined_commands_run_in_order(self):
        sb = self.c.call("sandbox.create", {"name": "order-test"})["id"]
        ids = []
        for cmd in ("cd /usr", "cd lib", "pwd"):
            rid = len(ids) + 100
            self.c.send(rpc("exec", {"sandbox": sb, "command": cmd}, rid))
            ids.append(rid)
        last = [self.c.wait_response(i) for i in ids][-1]
        self.assertEqual(last["result"]["stdout"], "/usr/lib\n")

    def test_stdin(self):
        r = self.c.call("exec", {"argv": ["cat"], "stdin": "hello\n"})
        self.assertEqual(r["stdout"], "hello\n")
        r = self.c.call("exec", {"argv": ["od", "-An", "-tx1"], "stdin_base64": b64(b"\x00\xff")})
        self.assertEqual(r["stdout"].split(), ["00", "ff"])
        r = self.c.call("exec", {"argv": ["cat"]})
        self.assertEqual(r["stdout"], "", "no stdin means EOF at once")

    def test_timeout_kills_tree_and_keeps_output(self):
        start = time.monotonic()
        t = uniq_secs(100)
        r = self.c.call("exec", {"command": "echo before; sleep %s & sleep %s; echo never"
                                 % (t, t), "timeout_s": 1})
        self.assertLess(time.monotonic() - start, 10)
        self.assertTrue(r["timed_out"])
        self.assertEqual(r["stdout"], "before\n")
        self.assertIn(r["signal"], ("SIGTERM", "SIGKILL"))
        ps = self.c.call("exec", {"argv": ["pgrep", "-f", "sleep " + t]})
        self.assertEqual(ps["stdout"], "", "the tree must be gone")

    def test_background_grandchild_does_not_hang(self):
        start = time.monotonic()
        t = uniq_secs(30)
        r = self.c.call("exec", {"command": "sleep %s & echo started" % t, "timeout_s": 20})
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(r["stdout"], "started\n")
        self.assertFalse(r["timed_out"])
        self.c.call("exec", {"command": "pkill -f 'sleep %s' || true" % t})

    def test_closes_stdout_early(self):
        r = self.c.call("exec", {"command": "exec >&-; sleep 0.2; exit 3"})
        self.assertEqual(r["exit_code"], 3)
        r = self.c.call("exec", {"command": "yes | head -c 100000 >/dev/null; echo ok"})
        self.assertEqual(r["stdout"], "ok\n")

    def test_truncation_head_and_tail(self):
        r = self.c.call("exec", {"command": "echo START; seq 1 100000; echo END",
                                 "max_output_bytes": 1000})
        self.assertTrue(r["truncated"])
        self.assertTrue(r["stdout"].startswith("START\n"))
        self.assertTrue(r["stdout"].endswith("END\n"))
        self.assertIn("truncated", r["stdout"])
        self.assertGreater(r["stdout_bytes"], 500000)
        full = self.c.call("process.read", {"exec_id": r["exec_id"], "max_bytes": 16 << 20})
        self.assertEqual(len(full["data"]), r["stdout_bytes"])

    def test_utf8_chunks_and_invalid_bytes(self):
        r = self.c.call("exec", {"command": "printf 'caf\\303\\251 \\377 end'"})
        self.assertEqual(r["stdout"], "caf\u00e9 \ufffd end")
        r = self.c.call("exec", {"command": "for i in $(seq 1 20000); do printf '\\342\\202\\254'; done"})
        text = self.c.output(r["exec_id"])
        self.assertEqual(text, "\u20ac" * 20000)
        self.assertEqual(r["stdout"], "\u20ac" * 20000)

    def test_base64_mode(self):
        r = self.c.call("exec", {"command": "printf '\\000\\377abc'", "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(r["stdout"]), b"\x00\xffabc")
        self.assertEqual(base64.b64decode(self.c.output(r["exec_id"])), b"\x00\xffabc")

    def test_merge_stderr(self):
        r = self.c.call("exec", {"command": "echo a; echo b >&2", "merge_stderr": True})
        self.assertEqual(r["stdout"], "a\nb\n")
        self.assertEqual(r["stderr"], "")

    def test_pty(self):
        r = self.c.call("exec", {"command": "test -t 1 && stty size", "pty": True,
                                 "pty_size": {"rows": 33, "cols": 101}})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].strip(), "33 101")

    def test_foreground_timeout_limits(self):
        self.assertRpcError(-32602, "exec", {"command": "true", "timeout_s": 999999},
                            param="timeout_s")

    def test_stream_false(self):
        r = self.c.call("exec", {"command": "echo quiet", "stream": False})
        self.assertEqual(r["stdout"], "quiet\n")
        self.assertEqual(self.c.output(r["exec_id"]), "")


class Processes(DaemonTest):
    def test_background_lifecycle(self):
        r = self.c.call("exec", {"command": "echo one; sleep 0.3; echo two >&2; exit 4",
                                 "background": True})
        self.assertTrue(r["background"])
        eid = r["exec_id"]
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 10000})
        self.assertEqual(w["exit_code"], 4)
        self.assertEqual(w["state"], "exited")
        # exec.exit arrives after all exec.output of that exec
        while not any(n["method"] == "exec.exit" and n["params"]["exec_id"] == eid
                      for n in self.c.notifications):
            self.c.notifications.append(self.c.read())
        kinds = [n["method"] for n in self.c.notifications if n["params"].get("exec_id") == eid]
        self.assertEqual(kinds[-1], "exec.exit")
        rd = self.c.call("process.read", {"exec_id": eid})
        self.assertEqual(rd["data"], "one\n")
        self.assertTrue(rd["eof"])
        self.assertEqual(rd["next_offset"], 4)
        rd = self.c.call("process.read", {"exec_id": eid, "stream": "stderr", "offset": 1})
        self.assertEqual(rd["data"], "wo\n")
        lst = self.c.call("process.list", {"state": "exited"})["processes"]
        self.assertIn(eid, [p["exec_id"] for p in lst])

    def test_wait_timeout_and_kill(self):
        eid = self.c.call("exec", {"command": "sleep 60", "background": True})["exec_id"]
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 100})
        self.assertEqual(w, {"exec_id": eid, "state": "running"})
        running = self.c.call("process.list", {"state": "running"})["processes"]
        self.assertIn(eid, [p["exec_id"] for p in running])
        k = self.c.call("process.kill", {"exec_id": eid, "grace_ms": 500})
        self.assertEqual(k, {"exec_id": eid, "killed": True, "survivors": 0})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 5000})
        self.assertEqual(w["signal"], "SIGTERM")

    def test_signal_and_stdin_write(self):
        eid = self.c.call("exec", {"argv": ["cat"], "background": True,
                                   "stdin_open": True})["exec_id"]
        self.assertEqual(self.c.call("process.write", {"exec_id": eid, "data": "abc"}),
                         {"written": 3})
        self.c.call("process.write", {"exec_id": eid, "data_base64": b64("\n"), "eof": True})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 5000})
        self.assertEqual(w["exit_code"], 0)
        self.assertEqual(self.c.call("process.read", {"exec_id": eid})["data"], "abc\n")
        self.assertRpcError(-32007, "process.write", {"exec_id": eid, "data": "x"})
        eid = self.c.call("exec", {"command": "sleep 60", "background": True})["exec_id"]
        self.assertRpcError(-32007, "process.write", {"exec_id": eid, "data": "x"})
        self.c.call("process.signal", {"exec_id": eid, "signal": "INT"})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 5000})
        self.assertEqual(w["signal"], "SIGINT")
        self.assertRpcError(-32602, "process.signal", {"exec_id": eid, "signal": "BOGUS"},
                            param="signal")

    def test_long_poll_read(self):
        eid = self.c.call("exec", {"command": "sleep 0.3; echo late", "background": True,
                                   "stream": False})["exec_id"]
        rd = self.c.call("process.read", {"exec_id": eid, "wait_ms": 10000})
        self.assertEqual(rd["data"], "late\n")

    def test_attach_replays_and_streams(self):
        eid = self.c.call("exec", {"command": "echo first; sleep 0.5; echo second",
                                   "background": True, "stream": False})["exec_id"]
        self.c.call("process.read", {"exec_id": eid, "wait_ms": 5000})
        other = self.daemon.client()
        res = other.call("process.attach", {"exec_id": eid})
        self.assertEqual(res["state"], "running")
        while not any(n["method"] == "exec.exit" for n in other.notifications):
            other.notifications.append(other.read())
        self.assertEqual(other.output(eid), "first\nsecond\n")
        other.close()

    def test_attach_twice_streams_once(self):
        """A second attach on the same connection replays, and adds no second subscription:
        each one added did (every chunk came twice; 200000 attaches held 20 MB)."""
        eid = self.c.call("exec", {"command": "cat", "stdin_open": True, "background": True,
                                   "stream": False})["exec_id"]
        other = self.daemon.client()
        for _ in range(3):
            other.call("process.attach", {"exec_id": eid})
        self.c.call("process.write", {"exec_id": eid, "data": "hi\n"})
        # exec.output goes out to every subscriber before a waiting process.read is answered
        self.assertEqual(other.call("process.read", {"exec_id": eid, "wait_ms": 10000})["data"],
                         "hi\n")
        outs = [n for n in other.notifications if n["method"] == "exec.output"]
        self.assertEqual([n["params"]["data"] for n in outs], ["hi\n"])
        self.c.call("process.kill", {"exec_id": eid, "grace_ms": 0})
        other.close()

    def test_unknown_process(self):
        self.assertRpcError(-32003, "process.read", {"exec_id": "p_nope"})
        self.assertRpcError(-32003, "process.kill", {"exec_id": "p_nope"})

    def test_disconnect_kills_foreground_keeps_background(self):
        c2 = self.daemon.client()
        t77, t78 = uniq_secs(77), uniq_secs(78)
        c2.send(rpc("exec", {"command": "sleep %s & sleep %s" % (t77, t78), "timeout_s": 60}))
        bg = c2.call("exec", {"command": "echo kept; sleep 79", "background": True},
                     timeout=10)["exec_id"]
        c2.send(rpc("exec", {"command": "true"}, 99))  # keep the connection busy
        c2.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ps = self.c.call("exec", {"argv": ["pgrep", "-f", "sleep (%s|%s)" % (t77, t78)]})
            if ps["stdout"] == "":
                break
            time.sleep(0.1)
        self.assertEqual(ps["stdout"], "", "foreground tree must be killed")
        running = self.c.call("process.list", {"state": "running"})["processes"]
        self.assertIn(bg, [p["exec_id"] for p in running])
        self.assertEqual(self.c.call("process.read", {"exec_id": bg})["data"], "kept\n")
        self.c.call("process.kill", {"exec_id": bg})

    def test_thousand_background_processes(self):
        ids = []
        for i in range(1000):
            self.c.send(rpc("exec", {"argv": ["sleep", "30"], "background": True,
                                     "stream": False}, 10000 + i))
        for i in range(1000):
            r = self.c.wait_response(10000 + i)
            self.assertIn("result", r, r)
            ids.append(r["result"]["exec_id"])
        running = self.c.call("process.list", {"state": "running"})["processes"]
        self.assertGreaterEqual(len({p["exec_id"] for p in running} & set(ids)), 1000)
        for i, eid in enumerate(ids):
            self.c.send(rpc("process.kill", {"exec_id": eid, "grace_ms": 0}, 20000 + i))
        for i in range(1000):
            r = self.c.wait_response(20000 + i)
            self.assertEqual(r["result"]["survivors"], 0, r)


class Sandboxes(DaemonTest):
    def test_name_reused_only_for_the_same_backend_and_params(self):
        first = self.c.call("sandbox.create", {"name": "twin", "backend": "local"})
        # by name only: the default backend is local, so that asks for the same thing
        for params in ({"name": "twin"}, {"name": "twin", "backend": "local"}):
            again = self.c.call("sandbox.create", params)
            self.assertTrue(again["reused"])
            self.assertEqual(again["id"], first["id"])
        # a docker sandbox asked for by the name of a local one is not the local one
        for params, what in (({"name": "twin", "backend": "docker"}, "backend 'local'"),
                             ({"name": "twin", "workdir": "/tmp"}, "'workdir'")):
            with self.subTest(params=params):
                e = self.assertRpcError(-32602, "sandbox.create", params, param="name")
                self.assertIn(what, e.message)
        self.assertEqual([s["backend"] for s in self.c.call("sandbox.list")["sandboxes"]
                          if s["name"] == "twin"], ["local"])
        self.c.call("sandbox.destroy", {"id": first["id"]})

    def test_sandboxd_labels_are_reserved_on_every_backend(self):
        # docker's re-adoption trusts sandboxd.agent, orphan removal sandboxd.instance/owner
        for backend in ("local", "docker"):
            for label in ("sandboxd", "sandboxd.agent", "sandboxd.owner", "sandboxdX"):
                with self.subTest(backend=backend, label=label):
                    e = self.assertRpcError(-32602, "sandbox.create",
                                            {"backend": backend, "labels": {label: "1"}},
                                            param="labels")
                    self.assertIn("label '%s' is reserved" % label, e.message)

    def test_create_reuse_list_get_destroy(self):
        # isolation "none" named: host_access is a host sandbox's (test_isolation.py has the
        # isolated one's).
        a = self.c.call("sandbox.create", {"name": "box", "env": {"X": "1"},
                                           "labels": {"k": "v"}, "local": {"isolation": "none"}})
        self.assertEqual(a["backend"], "local")
        self.assertEqual(a["state"], "ready")
        self.assertFalse(a["reused"])
        self.assertEqual(a["isolation"], "none")
        self.assertTrue(a["host_access"])
        self.assertTrue(a["id"].startswith("sbx_"))
        b = self.c.call("sandbox.create", {"name": "box"})
        self.assertTrue(b["reused"])
        self.assertEqual(a["id"], b["id"])
        self.assertIn(a["id"], [s["id"] for s in self.c.call("sandbox.list")["sandboxes"]])
        g = self.c.call("sandbox.get", {"id": "box"})
        self.assertEqual(g["id"], a["id"])
        self.assertIn("processes", g)
        self.assertIn("last_activity", g)
        r = self.c.call("exec", {"sandbox": "box", "command": "echo $X"})
        self.assertEqual(r["stdout"], "1\n")
        self.assertEqual(self.c.call("sandbox.destroy", {"id": a["id"]}),
                         {"id": a["id"], "destroyed": True})
        self.assertRpcError(-32002, "sandbox.get", {"id": a["id"]})
        self.assertRpcError(-32002, "exec", {"sandbox": a["id"], "command": "true"})

    def test_destroy_kills_processes(self):
        sb = self.c.call("sandbox.create", {"name": "killme"})["id"]
        eid = self.c.call("exec", {"sandbox": sb, "argv": ["sleep", "61"],
                                   "background": True})["exec_id"]
        self.c.call("sandbox.destroy", {"id": sb})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 5000})
        self.assertEqual(w["state"], "exited")

    def test_local_refuses_isolation_it_cannot_give(self):
        self.assertRpcError(-32602, "sandbox.create",
                            {"network": "none", "local": {"isolation": "none"}}, param="network")
        self.assertRpcError(-32602, "sandbox.create", {"image": "debian"}, param="image")
        self.assertRpcError(-32602, "sandbox.create", {"workdir": "/nonexistent"},
                            param="workdir")

    def test_unimplemented_backend_fails_closed(self):
        e = self.assertRpcError(-32000, "sandbox.create", {"backend": "ssh"})
        self.assertEqual(e.data["backend"], "ssh")
        self.assertIn("hint", e.data)
        backends = {b["name"]: b for b in self.c.call("backend.list")["backends"]}
        self.assertTrue(backends["local"]["available"])
        self.assertFalse(backends["ssh"]["available"])
        self.assertIn("reason", backends["ssh"])

    def test_resources_reported(self):
        sb = self.c.call("sandbox.create", {"name": "limited",
                                            "resources": {"memory_mb": 256, "pids": 64}})
        self.assertIn(sb["enforced"]["memory_mb"], ("cgroup", "rlimit"))
        self.assertIn(sb["enforced"]["pids"], ("cgroup", "rlimit-per-uid"))
        self.c.call("sandbox.destroy", {"id": sb["id"]})

    def test_idle_timeout(self):
        sb = self.c.call("sandbox.create", {"name": "idle", "idle_timeout_s": 1})["id"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.c.call("sandbox.get", {"id": sb})
            except RpcError as e:
                self.assertEqual(e.code, -32002)
                return
            time.sleep(0.2)
        self.fail("idle sandbox was not destroyed")


class Files(DaemonTest):
    def test_round_trip_binary(self):
        sb, wd = workdir_sandbox(self, self.c)
        path = os.path.join(wd, "sub", "data.bin")
        data = bytes(range(256)) * 40
        w = self.c.call("file.write", {"sandbox": sb["id"], "path": path,
                                       "data_base64": b64(data), "mkdir": True, "mode": 0o600})
        self.assertEqual(w["bytes"], len(data))
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        r = self.c.call("file.read", {"sandbox": sb["id"], "path": path,
                                      "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(r["data"]), data)
        self.assertEqual(r["size"], len(data))
        self.assertTrue(r["eof"])
        r = self.c.call("file.read", {"sandbox": sb["id"], "path": path, "offset": 10,
                                      "max_bytes": 5, "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(r["data"]), data[10:15])
        self.assertFalse(r["eof"])
        self.c.call("file.write", {"sandbox": sb["id"], "path": path, "data": "more",
                                   "append": True})
        self.assertEqual(os.path.getsize(path), len(data) + 4)

    def test_missing_file(self):
        self.c.call("exec", {"command": "true"})
        e = self.assertRpcError(-32602, "file.read", {"path": "/nonexistent/file"})
        self.assertIn("/nonexistent/file", e.message)


class Hello(DaemonTest):
    def test_hello_and_info(self):
        h = self.c.call("daemon.hello", {"client": "test", "role": "subagent"})
        self.assertEqual(h["protocol"], 1)
        self.assertEqual(h["role"], "subagent")
        self.assertEqual(h["approval"], "deny")
        self.assertIn("local", h["backends"])
        i = self.c.call("daemon.info")
        for k in ("version", "protocol", "pid", "uptime_s", "socket", "connections", "sandboxes",
                  "processes", "policy", "backends"):
            self.assertIn(k, i)
        self.assertEqual(i["socket"], self.daemon.socket)
        self.assertEqual(len(i["policy"]["sha256"]), 64)


class Limits(unittest.TestCase):
    def test_connection_and_process_limits(self):
        d = Daemon("[limits]\nmax_connections_per_uid = 2\nmax_processes_per_uid = 3\n"
                   "[exec]\nexited_retention_s = 1\n")
        try:
            a, b = d.client(), d.client()
            a.call("daemon.hello")
            b.call("daemon.hello")
            c = d.client()
            c.send(rpc("daemon.hello"))
            with self.assertRaises((ConnectionError, TimeoutError)):
                while True:
                    m = c.read(timeout=5)
                    if m.get("error"):
                        self.assertEqual(m["error"]["code"], -32004)
                        self.assertIn("max_connections_per_uid", m["error"]["message"])
            c.close()
            ids = [a.call("exec", {"argv": ["sleep", "30"], "background": True})["exec_id"]
                   for _ in range(3)]
            e = None
            try:
                a.call("exec", {"argv": ["true"]})
            except RpcError as err:
                e = err
            self.assertIsNotNone(e, "a fourth running process must be refused")
            self.assertEqual(e.code, -32004)
            self.assertEqual(e.data["limit"], "max_processes_per_uid")
            for i in ids:
                a.call("process.kill", {"exec_id": i, "grace_ms": 0})
            # exited processes are forgotten after exited_retention_s
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                try:
                    a.call("process.read", {"exec_id": ids[0]})
                except RpcError as err:
                    self.assertEqual(err.code, -32003)
                    break
                time.sleep(0.5)
            else:
                self.fail("exited process was kept past exited_retention_s")
            a.close()
            b.close()
        finally:
            d.stop()


class PtyAndOom(DaemonTest):
    def test_resize(self):
        eid = self.c.call("exec", {"command": "read x; stty size", "pty": True,
                                   "stdin_open": True, "background": True,
                                   "pty_size": {"rows": 10, "cols": 20}})["exec_id"]
        self.c.call("process.resize", {"exec_id": eid, "rows": 40, "cols": 132})
        self.c.call("process.write", {"exec_id": eid, "data": "go\n"})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 10000})
        self.assertEqual(w["exit_code"], 0)
        out = self.c.call("process.read", {"exec_id": eid})["data"]
        self.assertIn("40 132", out)
        self.assertRpcError(-32602, "process.resize", {"exec_id": eid, "rows": 0, "cols": 5},
                            param="rows")

    def test_oom_killed_reported(self):
        sb = self.c.call("sandbox.create", {"name": "oom", "resources": {"memory_mb": 64}})
        if sb["enforced"].get("memory_mb") != "cgroup":
            self.fail("memory is not enforced by a cgroup here (%r); run as root on a machine "
                      "with the memory controller" % sb["enforced"])
        r = self.c.call("exec", {"sandbox": "oom", "command":
                                 "head -c 400000000 /dev/zero | tail -c 300000000 >/dev/null"})
        self.assertTrue(r["oom_killed"], r)
        r = self.c.call("exec", {"sandbox": "oom", "command": "exit 137"})
        self.assertFalse(r["oom_killed"])
        self.c.call("sandbox.destroy", {"id": "oom"})


class AttachBound(unittest.TestCase):
    def test_replay_is_bounded_by_the_write_buffer(self):
        d = Daemon("[limits]\nconn_write_buffer_max = 64K\n")
        try:
            c = d.client()
            eid = c.call("exec", {"command": "head -c 300000 /dev/zero | tr '\\0' x",
                                  "background": True, "stream": False})["exec_id"]
            c.call("process.wait", {"exec_id": eid, "timeout_ms": 10000})
            other = d.client()
            # attaching to an exited process: replay, exec.exit, then the result
            res = other.call("process.attach", {"exec_id": eid})
            frm = res["replayed_from"]["stdout"]
            self.assertEqual(res["state"], "exited")
            self.assertEqual(frm, 300000 - 32768, res)
            self.assertTrue(any(n["method"] == "exec.exit" for n in other.notifications))
            self.assertEqual(len(other.output(eid)), 32768)
            first = min(n["params"]["offset"] for n in other.notifications
                        if n["method"] == "exec.output")
            self.assertEqual(first, frm)
            rest = c.call("process.read", {"exec_id": eid, "max_bytes": frm})
            self.assertEqual(len(rest["data"]), frm, "what was not replayed is readable")
            other.close()
            c.close()
        finally:
            d.stop()
