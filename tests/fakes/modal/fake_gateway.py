#!/usr/bin/python3
"""A fake of the managed Modal tool gateway for sandboxd's tests: the REST API of
shared/reference/hermes-terminal-layer.md §2.5 (Bearer token, JSON bodies), plus the readiness
check sandboxd makes (GET /v1/health), serving commands as local processes.

  POST /v1/sandboxes                         x-idempotency-key; {image, cwd, cpu, memoryMiB,
                                             diskMiB?, timeoutMs, idleTimeoutMs,
                                             persistentFilesystem, logicalKey} -> {id, status}
  POST /v1/sandboxes/{id}/execs              {execId, command, cwd, timeoutMs, stdinData?}
                                             -> {execId, status[, output, returncode]}
  GET  /v1/sandboxes/{id}/execs/{execId}     -> {execId, status, output, returncode}
  POST /v1/sandboxes/{id}/execs/{execId}/cancel
  POST /v1/sandboxes/{id}/terminate          {snapshotBeforeTerminate}
Errors are {"error": "..."} with the HTTP status. `output` is stdout and stderr together, as
the gateway returns it, and grows while the exec runs.

Failure injection through the control port: see INJECTIONS.
Usage: fake_gateway.py --token TOKEN. Prints "READY gateway=PORT control=PORT".
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fakelib  # noqa: E402

INJECTIONS = {
    "health": "ok",        # ok | error (503) | slow (answers after health_delay_s) | garbage
    "health_delay_s": 5,
    "poll_errors": 0,      # N: the next N exec polls fail with HTTP 502
    "drop_polls": 0,       # N: the next N exec polls get the connection closed, no answer
    "echo_secrets": False, # a 401 repeats the token it was sent: the client must redact it
    "create_delay_s": 0,   # a new sandbox exists at once, its create answers this much later
}

TERMINAL = ("completed", "failed", "cancelled", "timeout")


class Exec:
    def __init__(self, proc, timeout_ms):
        self.proc = proc
        self.cancelled = False
        self.timed_out = False
        if timeout_ms:
            t = threading.Timer(timeout_ms / 1000.0, self.expire)
            t.daemon = True
            t.start()

    def expire(self):
        if not self.proc.done():
            self.timed_out = True
            self.proc.kill()

    def status(self):
        if not self.proc.done():
            return "running"
        self.proc.drain(2.0)
        if self.cancelled:
            return "cancelled"
        if self.timed_out:
            return "timeout"
        return "completed" if self.proc.exit_code == 0 else "failed"

    def body(self, exec_id):
        st = self.status()
        out = bytes(self.proc.out[1]).decode("utf-8", "replace")
        b = {"execId": exec_id, "status": st, "output": out}
        if st in TERMINAL:
            rc = self.proc.exit_code
            b["returncode"] = rc if rc is not None else 128 + (self.proc.exit_signal or 9)
        return b


class Gateway:
    def __init__(self, token):
        self.token = token
        self.ctl = fakelib.Control(INJECTIONS)
        self.ctl.state_fn = self.state
        self.lock = threading.Lock()
        self.sandboxes = {}
        self.keys = {}

    def state(self):
        with self.lock:
            return {"last_command": getattr(self, "last_command", None),
                    "sandboxes": [{"id": k, "status": v["status"], "create": v["create"],
                                   "execs": len(v["execs"])}
                                  for k, v in self.sandboxes.items()]}


def handler_class(gw):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def body(self):
            n = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(n) if n else b""
            try:
                return json.loads(raw or b"{}")
            except ValueError:
                return None

        def authorized(self):
            gw.ctl.count("requests")
            if self.headers.get("Authorization") != "Bearer " + gw.token:
                gw.ctl.count("unauthorized")
                msg = "invalid or missing gateway token"
                if gw.ctl.get("echo_secrets"):
                    msg += " (got %s)" % self.headers.get("Authorization")
                self.reply(401, {"error": msg})
                return False
            return True

        def sandbox(self, sid):
            sb = gw.sandboxes.get(sid)
            if sb is None:
                self.reply(404, {"error": "sandbox not found"})
            elif sb["status"] != "running":
                self.reply(409, {"error": "sandbox is %s" % sb["status"]})
                sb = None
            return sb

        def do_GET(self):
            if not self.authorized():
                return
            if self.path == "/v1/health":
                return self.health()
            m = re.fullmatch(r"/v1/sandboxes/([\w-]+)/execs/([\w-]+)", self.path)
            if not m:
                return self.reply(404, {"error": "no such endpoint"})
            if gw.ctl.take("drop_polls"):
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if gw.ctl.take("poll_errors"):
                return self.reply(502, {"message": "injected: bad gateway"})
            sb = gw.sandboxes.get(m.group(1))
            ex = sb["execs"].get(m.group(2)) if sb else None
            if ex is None:
                return self.reply(404, {"error": "exec not found"})
            gw.ctl.count("polls")
            self.reply(200, ex.body(m.group(2)))

        def health(self):
            h = gw.ctl.get("health")
            if h == "slow":
                time.sleep(gw.ctl.get("health_delay_s"))
            if h == "error":
                return self.reply(503, {"error": "injected: gateway not ready"})
            if h == "garbage":
                self.send_response(200)
                self.send_header("Content-Length", "3")
                self.end_headers()
                return self.wfile.write(b"no!")
            self.reply(200, {"status": "ok"})

        def do_POST(self):
            if not self.authorized():
                return
            body = self.body()
            if not isinstance(body, dict):
                return self.reply(400, {"error": "body must be a JSON object"})
            for pattern, fn in ((r"/v1/sandboxes", self.create),
                                (r"/v1/sandboxes/([\w-]+)/execs", self.exec_start),
                                (r"/v1/sandboxes/([\w-]+)/execs/([\w-]+)/cancel", self.cancel),
                                (r"/v1/sandboxes/([\w-]+)/terminate", self.terminate)):
                m = re.fullmatch(pattern, self.path)
                if m:
                    return fn(body, *m.groups())
            self.reply(404, {"error": "no such endpoint"})

        def create(self, body):
            key = self.headers.get("x-idempotency-key")
            if not key:
                return self.reply(400, {"error": "x-idempotency-key is required"})
            if not isinstance(body.get("image"), str):
                return self.reply(400, {"error": "image is required"})
            with gw.lock:
                if key in gw.keys:
                    sid = gw.keys[key]
                    return self.reply(200, {"id": sid, "status": gw.sandboxes[sid]["status"]})
                sid = "msb-" + secrets.token_hex(8)
                root = tempfile.mkdtemp(prefix="fake-gw-sb-")
                cwd = body.get("cwd") or root
                os.makedirs(cwd, exist_ok=True)
                gw.sandboxes[sid] = {"status": "running", "create": body, "root": root,
                                     "cwd": cwd, "execs": {}, "files": set()}
                gw.keys[key] = sid
            time.sleep(gw.ctl.get("create_delay_s"))
            self.reply(200, {"id": sid, "status": "running"})

        def exec_start(self, body, sid):
            sb = self.sandbox(sid)
            if sb is None:
                return
            exec_id, command = body.get("execId"), body.get("command")
            if not isinstance(exec_id, str) or not isinstance(command, str):
                return self.reply(400, {"error": "execId and command are required"})
            with gw.lock:
                if exec_id in sb["execs"]:
                    return self.reply(200, sb["execs"][exec_id].body(exec_id))
                cwd = body.get("cwd") or sb["cwd"]
                env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
                try:
                    proc = fakelib.LocalProcess(["/bin/sh", "-c", command], cwd, env,
                                                merge_stderr=True)
                except OSError as e:
                    return self.reply(400, {"error": "cannot run: %s" % e})
                gw.last_command = command
                stdin = body.get("stdinData")
                proc.write_stdin(0, stdin.encode() if isinstance(stdin, str) else b"", True)
                ex = sb["execs"][exec_id] = Exec(proc, body.get("timeoutMs") or 0)
                sb["files"] |= fakelib.state_files(command)
            self.reply(200, ex.body(exec_id))

        def cancel(self, body, sid, exec_id):
            sb = gw.sandboxes.get(sid)
            ex = sb["execs"].get(exec_id) if sb else None
            if ex is None:
                return self.reply(404, {"error": "exec not found"})
            if not ex.proc.done():
                ex.cancelled = True
                ex.proc.kill()
                ex.proc.wait(5)
            gw.ctl.count("cancels")
            self.reply(200, ex.body(exec_id))

        def terminate(self, body, sid):
            sb = gw.sandboxes.get(sid)
            if sb is None:
                return self.reply(404, {"error": "sandbox not found"})
            sb["status"] = "terminated"
            for ex in sb["execs"].values():
                ex.proc.kill()
            fakelib.remove_state_files(sb["files"])
            shutil.rmtree(sb["root"], ignore_errors=True)
            gw.ctl.count("terminates")
            self.reply(200, {"id": sid, "status": "terminated"})

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--token", required=True)
    args = ap.parse_args()
    gw = Gateway(args.token)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler_class(gw))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    control_port = gw.ctl.serve()
    print("READY gateway=%d control=%d" % (srv.server_address[1], control_port), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    fakelib.serve_until_stopped(stop)
    for sb in gw.sandboxes.values():
        for ex in sb["execs"].values():
            ex.proc.kill()
        fakelib.remove_state_files(sb["files"])
        shutil.rmtree(sb["root"], ignore_errors=True)
    os._exit(0)  # the exec timers are threads: do not wait for them


if __name__ == "__main__":
    main()
