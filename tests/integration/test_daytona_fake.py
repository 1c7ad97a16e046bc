"""Self-test of the fake Daytona (tests/fakes/daytona/): its wire format (paths, status codes,
fields, error bodies, log labels, the WebSocket follow stream) is what Daytona v0.190.0 does,
and its failure injection does what the tests rely on, or test_daytona.py would prove nothing.
Python stdlib clients only; no sandboxd involved."""
import base64
import http.client
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fakes.daytona import FakeDaytona  # noqa: E402
from fakes.daytona.wsock import accept_key  # noqa: E402


class FakeSelfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="fake-daytona-test-")
        cls.addClassCleanup(shutil.rmtree, cls.root, ignore_errors=True)
        cls.fake = FakeDaytona(os.path.join(cls.root, "fake")).start()
        cls.addClassCleanup(cls.fake.stop)

    def setUp(self):
        self.fake.rules.clear()

    def call(self, method, path, body=None, headers=None, raw=None, auth=True):
        """(status, headers, parsed or raw body) of one request on a fresh connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.fake.port, timeout=20)
        h = {"Authorization": "Bearer " + self.fake.key} if auth else {}
        if body is not None:
            raw = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c.request(method, path, body=raw, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            return r.status, r, json.loads(data) if data else None
        except ValueError:
            return r.status, r, data

    def started(self, **body):
        st, _, sb = self.call("POST", "/api/sandbox", body)
        self.assertEqual(st, 200, sb)
        for _ in range(5):
            st, _, sb = self.call("GET", "/api/sandbox/" + sb["id"])
            if sb["state"] == "started":
                break
        self.assertEqual(sb["state"], "started")
        return sb

    def tb(self, sb):
        return urllib.parse.urlsplit(sb["toolboxProxyUrl"]).path + "/" + sb["id"]

    def session(self, sb):
        sid = "s-%d" % time.monotonic_ns()
        st, _, _ = self.call("POST", self.tb(sb) + "/process/session", {"sessionId": sid})
        self.assertEqual(st, 201)
        return self.tb(sb) + "/process/session/" + sid

    def wait_exit(self, cmd_url):
        for _ in range(200):
            st, _, c = self.call("GET", cmd_url)
            if "exitCode" in c:
                return c["exitCode"]
            time.sleep(0.02)
        self.fail("the command did not end")

    def test_auth_and_error_shapes(self):
        st, _, b = self.call("GET", "/api/sandbox", auth=False)
        self.assertEqual(st, 401)
        self.assertEqual(set(b), {"path", "timestamp", "statusCode", "error", "message"})
        st, _, b = self.call("GET", "/api/sandbox/nope")
        self.assertEqual((st, b["statusCode"], b["error"]), (404, 404, "Not Found"))
        self.assertIn("Sandbox with ID or name nope not found", b["message"])
        sb = self.started()
        st, _, b = self.call("GET", self.tb(sb) + "/process/session/none")
        self.assertEqual(st, 404)
        self.assertEqual(set(b), {"statusCode", "message", "code", "timestamp", "path", "method"})
        self.assertEqual(b["code"], "NOT_FOUND")

    def test_sandbox_lifecycle(self):
        # Daytona ignores fields it does not have (there is no "image"); the fake refuses them,
        # so that a client relying on one is caught.
        st, _, b = self.call("POST", "/api/sandbox", {"image": "x"})
        self.assertEqual((st, b["message"]), (400, "property image should not exist"))
        st, _, b = self.call("POST", "/api/sandbox", {"name": "lc", "labels": {"k": "v"},
                                                      "buildInfo": {"dockerfileContent":
                                                                    "FROM alpine:3\n"}})
        self.assertEqual((st, b["state"]), (200, "pending_build"))
        for field in ("id", "name", "state", "labels", "toolboxProxyUrl", "autoStopInterval"):
            self.assertIn(field, b)
        st, _, c = self.call("POST", "/api/sandbox", {"name": "lc"})
        self.assertEqual((st, c["message"]), (409, "Sandbox with name lc already exists"))
        seen = [self.call("GET", "/api/sandbox/lc")[2]["state"] for _ in range(3)]
        self.assertEqual(seen, ["building_snapshot", "starting", "started"])
        st, _, c = self.call("POST", "/api/sandbox/lc/start")
        self.assertEqual((st, c["state"]), (200, "started"))
        st, _, c = self.call("POST", "/api/sandbox/lc/stop")
        self.assertEqual((st, c["state"]), (200, "stopping"))
        self.assertEqual(self.call("POST", "/api/sandbox/lc/stop")[0], 400)  # not started
        self.assertEqual(self.call("GET", "/api/sandbox/lc")[2]["state"], "stopped")
        st, _, c = self.call("PUT", "/api/sandbox/lc/labels", {"labels": {"a": "b"}})
        self.assertEqual((st, c), (200, {"labels": {"a": "b"}}))
        q = urllib.parse.quote(json.dumps({"a": "b"}))
        st, _, c = self.call("GET", "/api/sandbox?labels=%s&limit=1" % q)
        self.assertEqual((st, [i["name"] for i in c["items"]], c["nextCursor"]), (200, ["lc"], None))
        self.assertEqual(self.call("DELETE", "/api/sandbox/lc")[0], 200)
        self.assertEqual(self.call("GET", "/api/sandbox/lc")[0], 404)

    def test_session_commands_and_logs(self):
        sb = self.started()
        s = self.session(sb)
        self.assertEqual(self.call("POST", self.tb(sb) + "/process/session",
                                   {"sessionId": s.rsplit("/", 1)[1]})[0], 409)
        st, _, r = self.call("POST", s + "/exec", {"command": "cd /; printf 'a\\nb'; echo e >&2"},
                             headers={"X-Daytona-SDK-Version": "0.170.0"})
        self.assertEqual((st, r["exitCode"], r["stdout"], r["stderr"]), (200, 0, "a\nb\n", "e\n"))
        st, _, r = self.call("POST", s + "/exec", {"command": "pwd"})  # the session's shell
        self.assertEqual(r["output"], "/\n")
        st, _, r = self.call("POST", s + "/exec", {"command": "sleep 0.2; echo x", "runAsync": True})
        self.assertEqual(st, 202)
        self.assertEqual(list(r), ["cmdId"])
        cmd = s + "/command/" + r["cmdId"]
        self.assertNotIn("exitCode", self.call("GET", cmd)[2])
        self.assertEqual(self.wait_exit(cmd), 0)
        st, resp, raw = self.call("GET", cmd + "/logs", headers={"X-Daytona-Split-Output": "true"})
        self.assertEqual(raw, b"\x01\x01\x01x\n")
        self.assertEqual(self.call("GET", cmd + "/logs")[2], b"x\n")  # old clients: stripped
        st, _, j = self.call("GET", cmd + "/logs", headers={"X-Daytona-SDK-Version": "0.170.0"})
        self.assertEqual(j, {"output": "\x01\x01\x01x\n", "stdout": "x\n", "stderr": ""})

    def test_input_has_no_eof(self):
        sb = self.started()
        s = self.session(sb)
        st, _, r = self.call("POST", s + "/exec", {"command": "read l; echo \"got $l\"; cat",
                                                   "runAsync": True})
        cmd = s + "/command/" + r["cmdId"]
        self.assertEqual(self.call("POST", cmd + "/input", {"data": "one"})[0], 204)
        for _ in range(100):
            _, _, raw = self.call("GET", cmd + "/logs", headers={"X-Daytona-Split-Output": "true"})
            if b"got one" in raw:
                break
            time.sleep(0.02)
        self.assertEqual(raw, b"\x01\x01\x01one\n\x01\x01\x01got one\n")  # echoed input
        self.assertNotIn("exitCode", self.call("GET", cmd)[2])  # cat waits: no EOF ever
        self.call("DELETE", s)

    def test_websocket_follow_replays_from_the_start(self):
        sb = self.started()
        s = self.session(sb)
        _, _, r = self.call("POST", s + "/exec", {"command": "seq 1 3; sleep 0.2; echo end",
                                                  "runAsync": True, "suppressInputEcho": True})
        path = s + "/command/" + r["cmdId"] + "/logs?follow=true"
        for attempt in range(2):  # the second stream replays everything again
            data, code = self.websocket(path)
            self.assertEqual(data, b"".join(b"\x01\x01\x01%s\n" % x for x in
                                            (b"1", b"2", b"3", b"end")))
            self.assertEqual(code, 1000)
        self.fake.fail("GET", r"/logs$", ws_reset_after=5)
        with self.assertRaises(ConnectionResetError):
            self.websocket(path)

    def websocket(self, path):
        """(payload bytes, close code) of a follow stream, read to its end."""
        so = socket.create_connection(("127.0.0.1", self.fake.port), timeout=20)
        key = base64.b64encode(os.urandom(16)).decode()
        so.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                    "X-Daytona-Split-Output: true\r\nAuthorization: Bearer %s\r\n\r\n"
                    % (path, key, self.fake.key)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += so.recv(4096)
        head, buf = buf.split(b"\r\n\r\n", 1)
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        self.assertIn(("Sec-WebSocket-Accept: " + accept_key(key)).encode(), head)
        data = b""
        while True:
            while len(buf) < 2 or len(buf) < 2 + (buf[1] & 0x7F if buf[1] & 0x7F < 126 else 0):
                chunk = so.recv(65536)
                if not chunk:
                    raise ConnectionResetError("closed without a close frame")
                buf += chunk
            n, off = buf[1] & 0x7F, 2
            if n == 126:
                n, off = struct.unpack("!H", buf[2:4])[0], 4
            while len(buf) < off + n:
                buf += so.recv(65536)
            op, payload, buf = buf[0] & 0x0F, buf[off:off + n], buf[off + n:]
            if op == 0x8:
                so.close()
                return data, struct.unpack("!H", payload[:2])[0]
            data += payload

    def test_execute_and_files(self):
        sb = self.started()
        t = self.tb(sb)
        st, _, r = self.call("POST", t + "/process/execute", {"command": "echo hi; exit 4"})
        self.assertEqual((st, r), (200, {"exitCode": 4, "result": "hi\n"}))
        st, _, r = self.call("POST", t + "/process/execute", {"command": "sleep 5", "timeout": 1})
        self.assertEqual((st, r["code"]), (408, "REQUEST_TIMEOUT"))
        home = self.call("GET", t + "/user-home-dir")[2]["dir"]
        path = home + "/deep/er/f.bin"
        body = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\n" + bytes(range(256)) +
                b"\r\n--B--\r\n")
        st, _, _ = self.call("POST", t + "/files/upload?path=" + urllib.parse.quote(path),
                             raw=body, headers={"Content-Type": "multipart/form-data; boundary=B"})
        self.assertEqual(st, 200)
        st, resp, data = self.call("GET", t + "/files/download?path=" + urllib.parse.quote(path))
        self.assertEqual((st, data, resp.getheader("Content-Type")),
                         (200, bytes(range(256)), "application/octet-stream"))
        self.assertEqual(self.call("GET", t + "/files/download?path=/no/such")[0], 404)
        self.assertEqual(self.call("GET", t + "/files/download?path=" + home)[0], 400)
        st, _, info = self.call("GET", t + "/files/info?path=" + urllib.parse.quote(home))
        self.assertTrue(info["isDir"])
        self.assertRegex(info["mode"], r"^d[a-zA-Z]*[r-][w-][x-]")  # Go's FileMode.String()
        fifo = home + "/fifo"
        os.mkfifo(fifo, 0o640)
        try:
            info = self.call("GET", t + "/files/info?path=" + urllib.parse.quote(fifo))[2]
            self.assertEqual((info["mode"], info["isDir"]), ("prw-r-----", False))
        finally:
            os.unlink(fifo)
        info = self.call("GET", t + "/files/info?path=" + urllib.parse.quote(path))[2]
        self.assertEqual((info["mode"], info["size"]), ("-rw-r--r--", 256))
        self.assertEqual(self.call("POST", t + "/files/permissions?path=%s&mode=0600" %
                                   urllib.parse.quote(path))[0], 200)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)

    def test_held_answers_and_fresh_connections(self):
        go = threading.Event()
        rule = self.fake.fail("GET", r"/api/api-keys/current$", hold=go)
        got = []
        t = threading.Thread(target=lambda: got.append(self.call("GET", "/api/api-keys/current")))
        t.start()
        idle = socket.create_connection(("127.0.0.1", self.fake.port), timeout=20)
        try:
            deadline = time.monotonic() + 20
            while rule.held != 1 or len(self.fake.fresh_connections()) != 1:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            self.assertEqual(got, [])  # held: no answer yet
            # Only the connection that sent nothing is reset, not the one waiting for its answer.
            self.assertEqual(self.fake.reset_fresh_connections(), 1)
            try:
                self.assertEqual(idle.recv(1), b"")
            except ConnectionResetError:
                pass
        finally:
            go.set()
            idle.close()
        t.join(20)
        self.assertEqual(got[0][0], 200)
        self.assertEqual((rule.hits, rule.held), (1, 0))

    def test_injected_failures(self):
        r = self.fake.fail("GET", r"/api/api-keys/current$", status=429, retry_after=3)
        st, resp, b = self.call("GET", "/api/api-keys/current")
        self.assertEqual((st, resp.getheader("Retry-After"), r.hits), (429, "3", 1))
        self.assertEqual(self.call("GET", "/api/api-keys/current")[0], 200)  # once only
        self.fake.fail("GET", r"/api/api-keys/current$", reset=True)
        with self.assertRaises((ConnectionResetError, http.client.RemoteDisconnected)):
            self.call("GET", "/api/api-keys/current")
        self.fake.fail("GET", r"/api/api-keys/current$", mid=True)
        with self.assertRaises((ConnectionResetError, http.client.IncompleteRead)):
            self.call("GET", "/api/api-keys/current")
        self.fake.fail("POST", r"/api/sandbox$", reset=True, after=True)
        with self.assertRaises((ConnectionResetError, http.client.RemoteDisconnected)):
            self.call("POST", "/api/sandbox", {"name": "took-effect"})
        self.assertIsNotNone(self.fake.find("took-effect"))  # the answer was lost, not the act
        self.fake.start_polls = 2
        st, _, sb = self.call("POST", "/api/sandbox", {"name": "slow"})
        self.fake.start_polls = 0
        states = [self.call("GET", "/api/sandbox/slow")[2]["state"] for _ in range(4)]
        self.assertEqual(states, ["starting", "starting", "starting", "started"])
        self.fake.create_error = "no capacity"
        self.call("POST", "/api/sandbox", {"name": "bad"})
        self.fake.create_error = None
        states = [self.call("GET", "/api/sandbox/bad")[2] for _ in range(2)]
        self.assertEqual((states[1]["state"], states[1]["errorReason"]), ("error", "no capacity"))
