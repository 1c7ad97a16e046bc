"""A fake Daytona (API + toolbox proxy) on 127.0.0.1, Python stdlib only.

Wire format as in ../shared/reference/peer-apis.md §2 and Daytona v0.190.0:
  API      http://127.0.0.1:PORT/api     Authorization: Bearer KEY
           POST /sandbox -> 200 Sandbox; GET /sandbox/{idOrName}; GET /sandbox?labels=&limit=
           &cursor= -> {items, nextCursor}; DELETE /sandbox/{id} -> 200; POST /sandbox/{id}/start
           | stop | archive -> 200; PUT /sandbox/{id}/labels -> 200 {labels};
           GET /api-keys/current. Errors (NestJS): {path, timestamp, statusCode, error, message}.
  toolbox  http://127.0.0.1:PORT/toolbox/{sandboxId}/…   (toolboxProxyUrl + "/" + id)
           /process/session…, /process/execute, /files…, /user-home-dir, /work-dir, /version.
           Errors (common-go): {statusCode, message, code, timestamp, path, method}.
State changes advance one step per GET of the sandbox (no timers), so tests are deterministic.

Failures are injected by the test (FakeDaytona.fail): a status (401, 404, 408, 429 with
Retry-After, 500, …), a connection reset before or after the request took effect, a reset of
a log stream after N bytes, an answer held back until the test releases it; connections that
have not sent a request yet can be counted and reset (a proxy dropping idle connections);
and sandbox-level: slow start (start_polls), the error state
(create_error), build_failed (build_error), a stop behind sandboxd's back (stop_sandbox).
"""
import http.server
import json
import os
import re
import shutil
import socket
import struct
import threading
import time
import urllib.parse
import uuid

from . import toolbox, wsock

REASONS = http.server.BaseHTTPRequestHandler.responses
TB_CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND",
            408: "REQUEST_TIMEOUT", 409: "CONFLICT", 410: "GONE", 429: "TOO_MANY_REQUESTS",
            500: "INTERNAL_SERVER_ERROR", 502: "BAD_GATEWAY", 503: "SERVICE_UNAVAILABLE"}
CREATE_FIELDS = {"name", "snapshot", "user", "env", "labels", "public", "networkBlockAll",
                 "networkAllowList", "domainAllowList", "target", "cpu", "gpu", "gpuType",
                 "memory", "disk", "autoStopInterval", "autoArchiveInterval",
                 "autoDeleteInterval", "volumes", "buildInfo", "linkedSandbox"}
# The steps a state goes through on its way, one per GET of the sandbox.
NEXT = {"pending_build": "building_snapshot", "building_snapshot": "starting",
        "creating": "starting", "starting": "started", "restoring": "started",
        "stopping": "stopped", "archiving": "archived"}


def hard_reset(sock):
    """Closes a socket with a TCP reset (SO_LINGER 0), now: socket.close() would wait for the
    handler's file objects, and another thread may be reading it."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    try:
        sock.shutdown(socket.SHUT_RD)  # wakes a thread blocked in recv (it holds the socket)
    except OSError:
        pass
    os.close(sock.detach())


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class Sandbox:
    def __init__(self, fake, body):
        self.fake = fake
        self.id = str(uuid.uuid4())
        self.name = body.get("name") or self.id
        self.body = body
        self.labels = dict(body.get("labels") or {})
        self.state = "pending_build" if body.get("buildInfo") else "creating"
        self.error_reason = None
        self.extra_polls = fake.start_polls
        self.fail_with = fake.create_error
        self.build_fail = fake.build_error
        self.dir = os.path.join(fake.root, self.id)
        self.home = os.path.join(self.dir, "home")
        self.workdir = self.home
        self.config_dir = os.path.join(self.dir, ".daytona")
        os.makedirs(self.home)
        self.sessions = {}
        self.created = now()

    def environ(self):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": self.home, "USER": "daytona", "LANG": "C.UTF-8",
               "DAYTONA_SANDBOX_ID": self.id}
        env.update(self.body.get("env") or {})
        return env

    def advance(self):
        """One step towards where the sandbox is going (on each GET)."""
        if self.state == "starting" and self.extra_polls > 0:
            self.extra_polls -= 1
            return
        if self.state == "building_snapshot" and self.build_fail:
            self.state, self.error_reason = "build_failed", self.build_fail
            return
        if self.state == "starting" and self.fail_with:
            self.state, self.error_reason = "error", self.fail_with
            return
        self.state = NEXT.get(self.state, self.state)

    def stop_sessions(self):
        for s in list(self.sessions.values()):
            s.terminate()
        self.sessions.clear()

    def json(self):
        b = self.body
        return {"id": self.id, "organizationId": "org-fake", "name": self.name,
                "snapshot": b.get("snapshot") or "daytonaio/sandbox:fake", "user": "daytona",
                "env": b.get("env") or {}, "labels": self.labels, "public": False,
                "networkBlockAll": bool(b.get("networkBlockAll")),
                "target": b.get("target") or "us", "cpu": b.get("cpu", 1), "gpu": 0,
                "memory": b.get("memory", 1), "disk": b.get("disk", 3), "state": self.state,
                "desiredState": "started", "errorReason": self.error_reason,
                "recoverable": False, "backupState": "None",
                "autoStopInterval": b.get("autoStopInterval", 15),
                "autoArchiveInterval": b.get("autoArchiveInterval", 10080),
                "autoDeleteInterval": b.get("autoDeleteInterval", -1),
                "buildInfo": b.get("buildInfo"), "createdAt": self.created, "updatedAt": now(),
                "sandboxClass": "container", "daemonVersion": "0.190.0-fake",
                "runnerId": "runner-fake", "toolboxProxyUrl": self.fake.toolbox_url}


class Rule:
    def __init__(self, method, path, status, times, retry_after, reset, after, mid,
                 ws_reset_after, message, hold):
        self.method, self.path = method, re.compile(path)
        self.status, self.times, self.retry_after = status, times, retry_after
        self.reset, self.after, self.mid = reset, after, mid
        self.ws_reset_after, self.message = ws_reset_after, message
        self.hold = hold  # a threading.Event: the request waits for it before it is handled
        self.hits = 0
        self.held = 0  # requests waiting for hold now


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except OSError:
            pass  # the client went away (or a test's reset): nothing to tell anyone

    def setup(self):
        super().setup()
        # Go's servers answer without Nagle's delay; http.server writes head and body apart.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.dispatched = False
        self.server.fake.track(self, True)

    def finish(self):
        self.server.fake.track(self, False)
        try:
            super().finish()
        except OSError:
            pass  # reset by reset_fresh_connections

    # ---- plumbing ----

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, body=b"", ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        if getattr(self, "mid_reset", False):
            self.cut = len(body) // 2
        self.send_response(status)
        if body or status not in (204, 304):
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if getattr(self, "mid_reset", False):  # the head and half the body, then a reset
            self.wfile.write(body[:self.cut])
            self.wfile.flush()
            self.mid_reset = False
            self.reset()
            return
        if body:
            self.wfile.write(body)

    def api_error(self, status, message, headers=()):
        self.send(status, {"path": self.path, "timestamp": now(), "statusCode": status,
                           "error": REASONS.get(status, ("Error",))[0], "message": message},
                  headers=headers)

    def tb_error(self, status, message, headers=()):
        self.send(status, {"statusCode": status, "message": message,
                           "code": TB_CODES.get(status, REASONS.get(status, ("Error",))[0]),
                           "timestamp": now(), "path": urllib.parse.urlsplit(self.path).path,
                           "method": self.command}, headers=headers)

    def reset(self):
        """Drops the connection with a TCP reset, at once."""
        self.close_connection = True
        hard_reset(self.connection)

    def _dispatch(self):
        fake = self.server.fake
        self.dispatched = True
        url = urllib.parse.urlsplit(self.path)
        self.query = urllib.parse.parse_qs(url.query)
        self.req_body = self._body()
        fake.record(self.command, self.path, dict(self.headers), self.req_body)
        is_api = url.path.startswith("/api/")
        err = self.api_error if is_api else self.tb_error
        rule = fake.match(self.command, url.path)
        if rule and rule.hold:
            fake.wait_hold(rule)
        if rule and rule.reset and not rule.after:
            self.reset()
            return
        if rule and rule.status:
            hdrs = [("Retry-After", str(rule.retry_after))] if rule.retry_after is not None else []
            err(rule.status, rule.message or REASONS.get(rule.status, ("error",))[0], hdrs)
            return
        self.ws_reset_after = rule.ws_reset_after if rule else None
        self.mid_reset = bool(rule and rule.mid)
        if self.headers.get("Authorization") != "Bearer " + fake.key:
            err(401, "Unauthorized")
            return
        if rule and rule.reset and rule.after:
            self.wfile = _Discard()  # it takes effect; its answer is lost in the reset
        if is_api:
            fake.api.handle(self, url.path[len("/api"):])
        elif url.path.startswith("/toolbox/"):
            fake.tb.handle(self, url.path[len("/toolbox/"):])
        else:
            err(404, "Cannot %s %s" % (self.command, url.path))
        if rule and rule.reset and rule.after:
            self.reset()

    do_GET = do_POST = do_PUT = do_DELETE = _dispatch

    def json_body(self):
        try:
            v = json.loads(self.req_body or b"null")
        except ValueError:
            return None
        return v


class _Discard:
    closed = False

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeDaytona:
    """The fake: start() serves on 127.0.0.1 (a free port); the test drives it in process."""

    def __init__(self, root, key="dtn_fake_key_0123456789abcdef"):
        from .api import Api
        from .tbapi import ToolboxApi
        self.root = root
        self.key = key
        self.lock = threading.RLock()
        self.sandboxes = {}
        self.rules = []
        self.requests = []
        self.conns = set()  # live connections (their handlers)
        self.start_polls = 0
        self.create_error = None
        self.build_error = None
        self.permissions = ["write:sandboxes", "delete:sandboxes"]
        self.api = Api(self)
        self.tb = ToolboxApi(self)
        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.fake = self
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d/api" % self.port
        self.toolbox_url = "http://127.0.0.1:%d/toolbox" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.lock:
            for sb in self.sandboxes.values():
                sb.stop_sessions()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- for the tests ----

    def fail(self, method, path, status=None, times=1, retry_after=None, reset=False,
             after=False, mid=False, ws_reset_after=None, message=None, hold=None):
        """The next `times` requests matching method and the path regex fail: with status
        (and a Retry-After), or a reset before the request takes effect, after it (after=True:
        the answer is lost), or in the middle of the answer (mid=True: the head and half the
        body), or for log streams a reset after ws_reset_after bytes; or (hold, an Event) are
        handled only once the test sets it. Returns the rule (rule.hits counts the matches,
        rule.held the requests waiting for hold)."""
        r = Rule(method, path, status, times, retry_after, reset, after, mid, ws_reset_after,
                 message, hold)
        with self.lock:
            self.rules.append(r)
        return r

    def match(self, method, path):
        with self.lock:
            for r in self.rules:
                if r.times and (r.method in (None, method)) and r.path.search(path):
                    r.times -= 1
                    r.hits += 1
                    return r
        return None

    def wait_hold(self, rule):
        with self.lock:
            rule.held += 1
        rule.hold.wait()
        with self.lock:
            rule.held -= 1

    def track(self, handler, live):
        with self.lock:
            (self.conns.add if live else self.conns.discard)(handler)

    def fresh_connections(self):
        """Connections accepted that have not sent a whole request head yet."""
        with self.lock:
            return [h for h in self.conns if not h.dispatched]

    def reset_fresh_connections(self):
        """Resets those (what a proxy does to idle connections); how many."""
        fresh = self.fresh_connections()
        for h in fresh:
            try:
                hard_reset(h.connection)
            except OSError:
                pass
        return len(fresh)

    def record(self, method, path, headers, body):
        with self.lock:
            self.requests.append((method, path, headers, body))

    def requests_to(self, method, pattern):
        with self.lock:
            return [r for r in self.requests if r[0] == method and re.search(pattern, r[1])]

    def find(self, key):
        with self.lock:
            for sb in self.sandboxes.values():
                if key in (sb.id, sb.name):
                    return sb
        return None

    def add_sandbox(self, body, state="started"):
        """A sandbox made behind sandboxd's back (e.g. an orphan of a previous run)."""
        with self.lock:
            sb = Sandbox(self, body)
            sb.state = state
            self.sandboxes[sb.id] = sb
            return sb

    def stop_sandbox(self, key):
        """What Daytona's auto-stop does: the sandbox stops, its processes die."""
        with self.lock:
            sb = self.find(key)
            sb.stop_sessions()
            sb.state = "stopped"
