"""Shared parts of the Modal fakes: compiling the subset protos, local processes that stand in
for sandbox commands, the control endpoint tests use for failure injection."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
# Where sandboxd's wrapper keeps pid and state files inside a sandbox; a fake's "sandbox" is this
# machine, so the fake removes what its commands left there (a killed wrapper cannot).
STATE_FILES = re.compile(r"/tmp/\.sandboxd/[\w.-]+")


def state_files(text):
    """Paths below /tmp/.sandboxd a command line names."""
    return set(STATE_FILES.findall(text))


def remove_state_files(paths):
    for p in paths:
        for f in (p, p + ".tmp"):
            try:
                os.unlink(f)
            except OSError:
                pass


def serve_until_stopped(stop):
    """Waits for SIGTERM/SIGINT (stop is set) or for the parent to die (a crashed test must
    not leave a fake behind)."""
    parent = os.getppid()
    while not stop.wait(1.0):
        if os.getppid() != parent:
            return


def load_protos():
    """Compiles the .proto files next to this file with protoc and imports them."""
    out = tempfile.mkdtemp(prefix="fake-modal-pb-")
    subprocess.run(["protoc", "-I", HERE, "--python_out", out, "modal_api.proto",
                    "task_command_router.proto"], check=True)
    sys.path.insert(0, out)
    try:
        import modal_api_pb2
        import task_command_router_pb2
    finally:
        sys.path.remove(out)
        shutil.rmtree(out, ignore_errors=True)  # imported: the files are not needed any more
    return modal_api_pb2, task_command_router_pb2


def _uptime_ticks():
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


def _sessions():
    """(pid, session id, start time in ticks) of every process."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(d), int(fields[3]), int(fields[19])


class LocalProcess:
    """A command run on this machine for a fake sandbox: output kept in full (readable from any
    offset), stdin fed on demand, its own session so a kill reaches the whole tree."""

    def __init__(self, argv, cwd, env, merge_stderr=False, shell=False):
        self.out = {1: bytearray(), 2: bytearray()}
        self.closed = {1: False, 2: False}
        self.cond = threading.Condition()
        self.exit_code = None
        self.exit_signal = None
        self.stdin_offset = 0
        self.stdin_closed = False
        self.reaped_ticks = None
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, shell=shell, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            start_new_session=True, close_fds=True)
        self.readers = [threading.Thread(target=self._pump, args=(1, self.proc.stdout),
                                         daemon=True)]
        if merge_stderr:
            self.closed[2] = True
        else:
            self.readers.append(threading.Thread(target=self._pump, args=(2, self.proc.stderr),
                                                 daemon=True))
        for t in self.readers:
            t.start()
        threading.Thread(target=self._reap, daemon=True).start()

    def _pump(self, fd, f):
        while True:
            chunk = os.read(f.fileno(), 65536)
            with self.cond:
                if not chunk:
                    self.closed[fd] = True
                    self.cond.notify_all()
                    return
                self.out[fd] += chunk
                self.cond.notify_all()

    def _reap(self):
        rc = self.proc.wait()
        with self.cond:
            self.reaped_ticks = _uptime_ticks()
            if rc < 0:
                self.exit_signal = -rc
            else:
                self.exit_code = rc
            self.cond.notify_all()

    def done(self):
        return self.exit_code is not None or self.exit_signal is not None

    def drain(self, timeout):
        """Waits (bounded: a background child may keep a pipe open) until the readers have
        taken what the exited process wrote, so a terminal status comes with all its output."""
        with self.cond:
            self.cond.wait_for(lambda: all(self.closed.values()), timeout)

    def read_from(self, fd, offset, timeout):
        """Bytes of fd from offset (may be b""), and whether the stream has ended."""
        with self.cond:
            if len(self.out[fd]) <= offset and not self.closed[fd]:
                self.cond.wait(timeout)
            return bytes(self.out[fd][offset:]), self.closed[fd] and len(self.out[fd]) <= offset

    def write_stdin(self, offset, data, eof):
        with self.cond:
            if self.stdin_closed:
                return False
            # Writes are idempotent by offset: bytes already taken are skipped.
            skip = self.stdin_offset - offset
            if skip < 0:
                return False
            data = data[skip:] if skip < len(data) else b""
            self.stdin_offset += len(data)
            try:
                if data:
                    self.proc.stdin.write(data)
                    self.proc.stdin.flush()
                if eof:
                    self.stdin_closed = True
                    self.proc.stdin.close()
            except (BrokenPipeError, ValueError):
                self.stdin_closed = True
            return True

    def wait(self, timeout):
        with self.cond:
            if not self.done():
                self.cond.wait_for(self.done, timeout)
            return self.done()

    def kill(self, sig=signal.SIGKILL):
        """Kills what is left of the session. Once the leader is reaped its pid may be reused
        (pid_max can be 32768): then only members of its session that started before it was
        reaped are ours, found in /proc; never a stale process group."""
        with self.cond:
            reaped = self.reaped_ticks
        if reaped is None:
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            return
        for pid, sid, start in _sessions():
            if sid == self.proc.pid and start <= reaped:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass


class Control:
    """Failure injection and counters, shared by a fake's handlers; served over HTTP on
    127.0.0.1 for the tests (POST /control merges a JSON object, GET /state returns one)."""

    def __init__(self, defaults):
        self.lock = threading.Lock()
        self.values = dict(defaults)
        self.counters = {}
        self.state_fn = None

    def get(self, key, default=None):
        with self.lock:
            return self.values.get(key, default)

    def take(self, key):
        """Consumes one unit of a counting injection (returns True while some are left)."""
        with self.lock:
            n = self.values.get(key, 0)
            if isinstance(n, int) and n > 0:
                self.values[key] = n - 1
                return True
            return False

    def count(self, name, n=1):
        with self.lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def serve(self, port=0):
        ctl = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _reply(self, obj):
                body = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                with ctl.lock:
                    state = {"values": dict(ctl.values), "counters": dict(ctl.counters)}
                if ctl.state_fn:
                    state.update(ctl.state_fn())
                self._reply(state)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                req = json.loads(self.rfile.read(n) or b"{}")
                with ctl.lock:
                    ctl.values.update(req)
                self._reply({"ok": True})

        srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv.server_address[1]
