"""The toolbox endpoints of the fake (/toolbox/{sandboxId}/…), after apps/daemon/pkg/toolbox
and the runner's proxy of Daytona v0.190.0."""
import os
import re

from . import toolbox, wsock
from .server import hard_reset


def _version(v):
    try:
        return tuple(int(x) for x in v.split("-")[0].split("."))
    except ValueError:
        return None


def log_format(headers):
    """combined (prefixes stripped) | raw | json, as GetSessionCommandLogs decides."""
    sdk = headers.get("X-Daytona-SDK-Version") or ""
    dev = "dev" in sdk
    ver = _version(sdk) if sdk else None
    if (sdk and not dev and ver is not None and ver < (0, 27, 0)) or \
            (not sdk and headers.get("X-Daytona-Split-Output") != "true"):
        return "combined"
    if not sdk or (not dev and (ver is None or ver < (0, 167, 0))):
        return "raw"
    return "json"


def strip(data):
    return data.replace(toolbox.STDOUT_PREFIX, b"").replace(toolbox.STDERR_PREFIX, b"")


def demux(data):
    out, err, cur, i = [], [], None, 0
    for part in re.split(b"(\x01\x01\x01|\x02\x02\x02)", data):
        if part == toolbox.STDOUT_PREFIX:
            cur = out
        elif part == toolbox.STDERR_PREFIX:
            cur = err
        elif cur is not None:
            cur.append(part)
    return b"".join(out), b"".join(err)


class ToolboxApi:
    def __init__(self, fake):
        self.fake = fake

    def handle(self, h, path):
        sid, _, rest = path.partition("/")
        with self.fake.lock:
            sb = self.fake.sandboxes.get(sid)
        if sb is None:
            h.tb_error(400, "failed to get sandbox public status: sandbox %s not found" % sid)
            return
        if sb.state != "started":
            h.tb_error(400, "no IP address found. Is the Sandbox started?")
            return
        routes = [
            ("POST", r"process/session", self.session_create),
            ("GET", r"process/session", self.session_list),
            ("GET", r"process/session/([^/]+)", self.session_get),
            ("DELETE", r"process/session/([^/]+)", self.session_delete),
            ("POST", r"process/session/([^/]+)/exec", self.session_exec),
            ("GET", r"process/session/([^/]+)/command/([^/]+)", self.command_get),
            ("POST", r"process/session/([^/]+)/command/([^/]+)/input", self.command_input),
            ("GET", r"process/session/([^/]+)/command/([^/]+)/logs", self.command_logs),
            ("POST", r"process/execute", self.execute),
            ("GET", r"files/download", self.download),
            ("POST", r"files/upload", self.upload),
            ("POST", r"files/folder", self.folder),
            ("GET", r"files/info", self.info),
            ("POST", r"files/permissions", self.permissions),
            ("DELETE", r"files/?", self.delete_file),
            ("GET", r"user-home-dir", lambda h, sb: h.send(200, {"dir": sb.home})),
            ("GET", r"work-dir", lambda h, sb: h.send(200, {"dir": sb.workdir})),
            ("GET", r"version", lambda h, sb: h.send(200, {"version": "0.190.0-fake"})),
        ]
        for method, pattern, fn in routes:
            m = re.fullmatch(pattern, rest)
            if m and method == h.command:
                fn(h, sb, *m.groups())
                return
        h.tb_error(404, "404 page not found")

    # ---- sessions ----

    def _session(self, h, sb, sid):
        s = sb.sessions.get(sid)
        if s is None:
            h.tb_error(404, "session not found")
        return s

    def _command(self, h, sb, sid, cid):
        s = self._session(h, sb, sid)
        if s is None:
            return None, None
        c = s.commands.get(cid)
        if c is None:
            h.tb_error(404, "command not found")
        return s, c

    def session_create(self, h, sb):
        body = h.json_body()
        sid = body.get("sessionId") if isinstance(body, dict) else None
        if not sid:
            h.tb_error(400, "Key: 'CreateSessionRequest.SessionId' Error:Field validation for "
                            "'SessionId' failed on the 'required' tag")
            return
        with self.fake.lock:
            if sid in sb.sessions:
                h.tb_error(409, "session already exists")
                return
            sb.sessions[sid] = toolbox.Session(sb, sid)
        h.send(201)

    def session_list(self, h, sb):
        h.send(200, [s.info() for s in list(sb.sessions.values())])

    def session_get(self, h, sb, sid):
        s = self._session(h, sb, sid)
        if s:
            h.send(200, s.info())

    def session_delete(self, h, sb, sid):
        s = self._session(h, sb, sid)
        if s:
            with self.fake.lock:
                sb.sessions.pop(sid, None)
            s.terminate()
            h.send(204)

    def session_exec(self, h, sb, sid):
        s = self._session(h, sb, sid)
        body = h.json_body()
        if s is None:
            return
        if not isinstance(body, dict) or not str(body.get("command") or "").strip():
            h.tb_error(400, "command cannot be empty")
            return
        run_async = bool(body.get("runAsync") or body.get("async"))
        cmd = s.execute(body["command"], run_async, bool(body.get("suppressInputEcho")))
        if cmd is None:
            h.tb_error(400, "failed to write command: session shell exited")
            return
        if run_async:
            h.send(202, {"cmdId": cmd.id})
            return
        cmd.wait_exit()
        with open(cmd.log, "rb") as f:
            data = f.read()
        out = {"cmdId": cmd.id, "exitCode": cmd.exit_code}
        if log_format(h.headers) == "combined":
            out["output"] = strip(data).decode("utf-8", "replace")
        else:
            o, e = demux(data)
            out.update(output=data.decode("utf-8", "replace"),
                       stdout=o.decode("utf-8", "replace"), stderr=e.decode("utf-8", "replace"))
        h.send(200, out)

    def command_get(self, h, sb, sid, cid):
        _, c = self._command(h, sb, sid, cid)
        if c:
            h.send(200, c.info())

    def command_input(self, h, sb, sid, cid):
        s, c = self._command(h, sb, sid, cid)
        body = h.json_body()
        if c is None:
            return
        if not isinstance(body, dict) or not isinstance(body.get("data"), str) or not body["data"]:
            h.tb_error(400, "Key: 'SessionSendInputRequest.Data' Error:Field validation for "
                            "'Data' failed on the 'required' tag")
            return
        if c.exit_code is not None:
            h.tb_error(410, "command has already completed with exit code %d" % c.exit_code)
            return
        try:
            s.send_input(c, body["data"])
        except OSError as e:
            h.tb_error(500, "failed to write to input pipe: %s" % e)
            return
        h.send(204)

    def command_logs(self, h, sb, sid, cid):
        _, c = self._command(h, sb, sid, cid)
        if c is None:
            return
        fmt = log_format(h.headers)
        follow = h.query.get("follow", [""])[0] == "true"
        if h.headers.get("Upgrade", "").lower() == "websocket":
            self.follow(h, c, fmt, follow)
            return
        with open(c.log, "rb") as f:
            data = f.read()
        if fmt == "json":
            o, e = demux(data)
            h.send(200, {"output": data.decode("utf-8", "replace"),
                         "stdout": o.decode("utf-8", "replace"),
                         "stderr": e.decode("utf-8", "replace")})
        else:
            h.send(200, strip(data) if fmt == "combined" else data, "text/plain; charset=utf-8")

    def follow(self, h, c, fmt, follow):
        """The WebSocket log stream: the log from byte 0, then what is appended, until the
        exit code exists and nothing more comes; then a normal close."""
        key = h.headers.get("Sec-WebSocket-Key")
        if not key:
            h.tb_error(400, "websocket: not a websocket handshake")
            return
        h.send_response(101)
        h.send_header("Upgrade", "websocket")
        h.send_header("Connection", "Upgrade")
        h.send_header("Sec-WebSocket-Accept", wsock.accept_key(key))
        h.end_headers()
        h.wfile.flush()
        h.close_connection = True
        ws = wsock.WebSocket(h.connection)
        try:
            w = toolbox.Watch(c.dir)
        except OSError:
            ws.send_close(1011)
            return
        try:
            self._stream(h, ws, c, fmt, follow, w)
        except (OSError, wsock.Closed):
            pass
        finally:
            w.close()

    def _stream(self, h, ws, c, fmt, follow, w):
        """Sends the log from its start, then what is appended (woken by w), until the exit
        code exists and all of the log went out, or the client closes."""
        left = h.ws_reset_after
        with open(c.log, "rb") as f:
            while True:
                data = f.read(65536)
                if data:
                    if fmt == "combined":
                        data = strip(data)
                    if left is not None and len(data) >= left:
                        if left:
                            ws.send_binary(data[:left])
                        hard_reset(h.connection)
                        return
                    if left is not None:
                        left -= len(data)
                    ws.send_binary(data)
                    continue
                if not follow or c.exit_code is not None:
                    if f.tell() >= os.path.getsize(c.log):
                        ws.send_close(1000)
                        return
                    continue
                if not os.path.isdir(c.dir):
                    ws.send_close(1000)  # the session was deleted
                    return
                if w.wait(0.2, [h.connection]) and not ws.read_pending():
                    return  # the client closed

    # ---- execute ----

    def execute(self, h, sb):
        body = h.json_body()
        if not isinstance(body, dict) or not str(body.get("command") or "").strip():
            h.tb_error(400, "command cannot be empty or whitespace-only")
            return
        r = toolbox.execute(sb, body["command"], body.get("cwd"), body.get("envs"),
                            body.get("timeout"))
        if r is None:
            h.tb_error(408, "command execution timeout")
            return
        h.send(200, {"exitCode": r[0], "result": r[1]})

    # ---- files ----

    def _path(self, h):
        p = h.query.get("path", [""])[0]
        if not p:
            h.tb_error(400, "path is required")
        return p

    def _stat_error(self, h, e):
        h.tb_error(404 if isinstance(e, FileNotFoundError) else
                   403 if isinstance(e, PermissionError) else 400, str(e))

    def download(self, h, sb):
        p = self._path(h)
        if not p:
            return
        if os.path.isdir(p):
            h.tb_error(400, "path must be a file")
            return
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError as e:
            self._stat_error(h, e)
            return
        h.send(200, data, "application/octet-stream",
               [("Content-Disposition", 'attachment; filename="%s"' % os.path.basename(p)),
                ("Content-Transfer-Encoding", "binary")])

    def upload(self, h, sb):
        p = self._path(h)
        if not p:
            return
        parts = toolbox.parse_multipart(h.headers.get("Content-Type", ""), h.req_body)
        if not parts or "file" not in parts:
            h.tb_error(400, "http: no such file")
            return
        try:
            os.makedirs(os.path.dirname(p) or "/", 0o750, exist_ok=True)
            with open(p, "wb") as f:
                f.write(parts["file"])
        except OSError as e:
            h.tb_error(400, str(e))
            return
        h.send(200)

    def folder(self, h, sb):
        p = self._path(h)
        if not p:
            return
        try:
            os.makedirs(p, int(h.query.get("mode", ["0755"])[0], 8), exist_ok=True)
        except (OSError, ValueError) as e:
            h.tb_error(400, str(e))
            return
        h.send(201)

    def info(self, h, sb):
        p = self._path(h)
        if not p:
            return
        try:
            h.send(200, toolbox.file_info(p))
        except OSError as e:
            self._stat_error(h, e)

    def permissions(self, h, sb):
        p = self._path(h)
        if not p:
            return
        try:
            os.stat(p)
            if h.query.get("mode"):
                os.chmod(p, int(h.query["mode"][0], 8))
        except OSError as e:
            self._stat_error(h, e)
            return
        except ValueError:
            h.tb_error(400, "invalid mode format")
            return
        h.send(200)

    def delete_file(self, h, sb):
        p = self._path(h)
        if not p:
            return
        try:
            if os.path.isdir(p):
                if h.query.get("recursive", [""])[0] != "true":
                    h.tb_error(400, "cannot delete directory without recursive flag")
                    return
                import shutil
                shutil.rmtree(p)
            else:
                os.remove(p)
        except OSError as e:
            self._stat_error(h, e)
            return
        h.send(204)
