"""The asyncio client: one connection to sandboxd, requests in flight at once, live output routed
to the exec that produced it (``exec.started``), approvals answered by a callback, and streams
resumed from their offsets after a reconnect.

    async with AsyncClient() as client:
        sb = await client.sandbox(name="demo")
        result = await sb.run("make test", timeout=600, on_stdout=print)
"""
from __future__ import annotations

import asyncio
import base64
import inspect
import itertools
import json
import os
import stat
from typing import (Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence,
                    Tuple, Union)

from . import errors
from .errors import ConnectionLost, DaemonNotRunning, SandboxdError
from .types import (ApprovalRequest, ExecResult, ExitStatus, Output, OutputChunk, ReadResult)

__all__ = ["AsyncClient", "AsyncSandbox", "AsyncProcess", "default_socket", "Approver"]

#: An approver gets the request and returns "once", "session", "always" or "deny" (or a
#: (decision, reason) pair); it may be a coroutine function.
Approver = Callable[[ApprovalRequest], Union[str, Tuple[str, str], Awaitable[Any]]]
OutputCallback = Callable[[Output], Any]

SYSTEM_SOCKET = "/run/sandboxd/sandboxd.sock"
MAX_LINE = 64 << 20  # longest message accepted from the daemon
WAIT_SLICE_MS = 30000  # process.wait per request, so a reconnect can resume waiting
ROLES = ("interactive", "subagent", "batch")


def default_socket() -> str:
    """The socket sandboxctl and sandboxd use (docs/protocol.md, Connecting): $SANDBOXD_SOCKET,
    /run/sandboxd as root, $XDG_RUNTIME_DIR/sandboxd, /tmp/sandboxd-UID; then the system
    daemon's socket when nothing is at the user's own."""
    env = os.environ.get("SANDBOXD_SOCKET")
    if env:
        return env
    uid = os.geteuid()
    if uid == 0:
        return SYSTEM_SOCKET
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        path = os.path.join(xdg, "sandboxd", "sandboxd.sock")
    else:
        path = "/tmp/sandboxd-%d/sandboxd.sock" % uid
        _check_private_dir(os.path.dirname(path), uid)
    if not os.path.exists(path) and os.path.exists(SYSTEM_SOCKET):
        return SYSTEM_SOCKET
    return path


def _check_private_dir(d: str, uid: int) -> None:
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        raise DaemonNotRunning("not connecting through %s: it is not a directory owned by uid %d "
                               "and writable by it alone (someone else may have put it there); "
                               "set XDG_RUNTIME_DIR or SANDBOXD_SOCKET" % (d, uid))


def _b64(data: Union[str, bytes]) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _decode(data: str, binary: bool) -> Output:
    return base64.b64decode(data) if binary else data


class _Route:
    """Where the live output of one exec goes: callbacks, or the queue of an iterator."""

    def __init__(self, binary: bool = False, on_stdout: Optional[OutputCallback] = None,
                 on_stderr: Optional[OutputCallback] = None) -> None:
        self.binary = binary
        self.on = {"stdout": on_stdout, "stderr": on_stderr}
        self.queue: Optional[asyncio.Queue] = None
        self.next = {"stdout": 0, "stderr": 0}  # next offset expected, to drop replays
        self.exit: Optional[Dict[str, Any]] = None

    def output(self, p: Dict[str, Any]) -> None:
        stream = p.get("stream", "stdout")
        data, off = _decode(p.get("data", ""), self.binary), int(p.get("offset", 0))
        raw_len = len(data) if self.binary else len(data.encode())
        if off + raw_len <= self.next.get(stream, 0) and raw_len:
            return  # replayed after a reconnect: seen already
        self.next[stream] = max(self.next.get(stream, 0), off + raw_len)
        cb = self.on.get(stream)
        if cb is not None:
            cb(data)
        if self.queue is not None:
            self.queue.put_nowait(OutputChunk(stream, data, off))

    def exited(self, p: Dict[str, Any]) -> None:
        self.exit = p
        if self.queue is not None:
            self.queue.put_nowait(None)


class AsyncClient:
    """One connection to sandboxd.

    ``role``: "interactive" (approvals go to ``approver``), "subagent" or "batch" (never
    asked; see docs/protocol.md). ``approver``: called with an ApprovalRequest when the policy
    asks; the default denies at once. ``reconnect``: after a lost link, connect again and
    resume following background processes from their offsets (a foreground ``run`` that was
    in flight fails with ConnectionLost: the daemon stops it when its connection closes).
    """

    def __init__(self, socket: Optional[str] = None, *, role: str = "interactive",
                 approver: Optional[Approver] = None, auto_approve: bool = False,
                 client_name: str = "sandboxd-python", reconnect: bool = True,
                 reconnect_timeout: float = 30.0) -> None:
        if role not in ROLES:
            raise ValueError("role must be one of %s" % (ROLES,))
        self.socket_path = socket
        self.role = role
        self.approver = approver
        self.auto_approve = auto_approve
        self.client_name = client_name
        self.reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.hello: Dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._pending: Dict[Any, asyncio.Future] = {}
        self._by_request: Dict[Any, _Route] = {}  # request id -> route, until exec.started
        self._routes: Dict[str, _Route] = {}  # exec_id -> route
        self._running: Dict[Any, str] = {}  # request id -> exec_id of a foreground run
        self._attached: Dict[str, _Route] = {}  # followed processes, re-attached on reconnect
        self._reader: Optional[asyncio.StreamReader] = None
        self._writer: Optional[asyncio.StreamWriter] = None
        self._task: Optional[asyncio.Task] = None
        self._closed = False
        self._dead = False  # the link is gone for good
        self._connected: Optional[asyncio.Event] = None
        self._lock: Optional[asyncio.Lock] = None
        self.on_notification: Optional[Callable[[str, Dict[str, Any]], Any]] = None

    # ---- connection ----

    async def connect(self) -> "AsyncClient":
        """Connects and says daemon.hello. Raises DaemonNotRunning when nobody listens."""
        self._connected = asyncio.Event()
        self._lock = asyncio.Lock()
        await self._open()
        self._task = asyncio.ensure_future(self._read_loop())
        await self._say_hello()
        return self

    async def _open(self) -> None:
        path = self.socket_path or default_socket()
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(path, limit=MAX_LINE)
        except PermissionError as e:
            raise DaemonNotRunning(
                "cannot connect to %s: permission denied: you are not allowed to use this "
                "socket (the operator can add you to allow_users / allow_groups and "
                "socket_group in sandboxd.conf)" % path) from e
        except (FileNotFoundError, ConnectionRefusedError) as e:
            raise DaemonNotRunning("cannot connect to %s: %s (is sandboxd running?)"
                                   % (path, e.strerror)) from e
        assert self._connected is not None
        self._connected.set()

    async def _say_hello(self) -> None:
        params: Dict[str, Any] = {"client": self.client_name, "role": self.role}
        if self.role == "batch" and self.auto_approve:
            params["auto_approve"] = True
        self.hello = await self.call("daemon.hello", params)

    async def close(self) -> None:
        """Closes the connection (background processes go on; foreground ones are stopped)."""
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._fail_pending(ConnectionLost("the client closed the connection"))

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _fail_pending(self, exc: SandboxdError) -> None:
        for rid, fut in list(self._pending.items()):
            if not fut.done():
                e = ConnectionLost(str(exc), self._running.get(rid)) \
                    if isinstance(exc, ConnectionLost) else exc
                fut.set_exception(e)
        self._pending.clear()
        self._by_request.clear()
        self._running.clear()

    async def _read_loop(self) -> None:
        while True:
            try:
                assert self._reader is not None
                line = await self._reader.readline()
            except (ConnectionError, ValueError, asyncio.IncompleteReadError) as e:
                line, err = b"", e
            else:
                err = None
            if not line:
                if self._closed:
                    return
                self._fail_pending(ConnectionLost("connection to sandboxd lost%s"
                                                  % (": %s" % err if err else "")))
                if not self.reconnect or not await self._reconnect():
                    self._dead = True
                    assert self._connected is not None
                    self._connected.set()  # wake senders: they fail
                    self._fail_pending(ConnectionLost("connection to sandboxd lost"))
                    for r in list(self._attached.values()):
                        r.exited({"lost": True})
                    return
                continue
            if line.strip():
                try:
                    self._dispatch(json.loads(line))
                except ValueError:
                    continue

    async def _reconnect(self) -> bool:
        assert self._connected is not None
        self._connected.clear()
        loop = asyncio.get_event_loop()
        deadline = loop.time() + self.reconnect_timeout
        delay = 0.05
        while not self._closed and loop.time() < deadline:
            try:
                await self._open()
            except DaemonNotRunning:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            asyncio.ensure_future(self._resume())
            return True
        return False

    async def _resume(self) -> None:
        """After a reconnect: hello again, and re-attach followed processes from their offsets."""
        try:
            await self._say_hello()
            for exec_id, r in list(self._attached.items()):
                self._routes[exec_id] = r
                await self.call("process.attach", {"exec_id": exec_id, "offsets": dict(r.next)})
        except SandboxdError:
            pass

    def _dispatch(self, msg: Any) -> None:
        if isinstance(msg, list):
            for m in msg:
                self._dispatch(m)
            return
        if not isinstance(msg, dict):
            return
        if "method" in msg and "id" in msg:
            asyncio.ensure_future(self._serve(msg))
        elif "method" in msg:
            self._notify(msg["method"], msg.get("params") or {})
        elif msg.get("id") in self._pending:
            fut = self._pending.pop(msg["id"])
            self._by_request.pop(msg["id"], None)
            self._running.pop(msg["id"], None)
            if fut.done():
                return
            if "error" in msg:
                fut.set_exception(errors.from_error(msg["error"]))
            else:
                fut.set_result(msg.get("result"))

    def _notify(self, method: str, p: Dict[str, Any]) -> None:
        eid = p.get("exec_id")
        if method == "exec.started":
            r = self._by_request.pop(p.get("request_id"), None)
            if r is not None and eid:
                self._routes[eid] = r
                self._running[p.get("request_id")] = eid
        elif method == "exec.output" and eid in self._routes:
            self._routes[eid].output(p)
        elif method == "exec.exit" and eid in self._routes:
            self._routes.pop(eid).exited(p)
            self._attached.pop(eid, None)
        if self.on_notification is not None:
            self.on_notification(method, p)

    async def _serve(self, msg: Dict[str, Any]) -> None:
        """Answers a request of the daemon: approval.request through the approver."""
        if msg.get("method") != "approval.request":
            await self._send({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": "method not found: %s" % msg.get("method")}})
            return
        req = ApprovalRequest.from_json(msg.get("params") or {})
        decision, reason = await self._decide(req)
        await self._send({"jsonrpc": "2.0", "id": msg["id"],
                          "result": {"decision": decision, "reason": reason}})

    async def _decide(self, req: ApprovalRequest) -> Tuple[str, str]:
        if self.approver is None:
            return "deny", "no approver (pass approver= to sandboxd.Client to be asked)"
        try:
            if inspect.iscoroutinefunction(self.approver):
                answer = await self.approver(req)
            else:
                loop = asyncio.get_event_loop()
                answer = await loop.run_in_executor(None, self.approver, req)
                if inspect.isawaitable(answer):
                    answer = await answer
        except Exception as e:  # an approver that fails denies
            return "deny", "the approver failed: %s" % e
        decision, reason = (answer if isinstance(answer, tuple) else (answer, ""))
        if decision not in req.choices:
            return "deny", "the approver answered %r, not one of %s" % (decision, req.choices)
        return decision, reason or "approved by the approver callback"

    async def _send(self, msg: Dict[str, Any]) -> None:
        assert self._connected is not None and self._lock is not None
        await self._connected.wait()
        if self._dead or self._closed:
            raise ConnectionLost("not connected to sandboxd")
        async with self._lock:
            assert self._writer is not None
            self._writer.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
            await self._writer.drain()

    async def call(self, method: str, params: Optional[Dict[str, Any]] = None,
                   route: Optional[_Route] = None) -> Any:
        """Sends one request and returns its result; raises the SandboxdError of its code."""
        if self._connected is None:
            raise ConnectionLost("not connected: use 'async with AsyncClient()' or connect()")
        rid = next(self._ids)
        fut = asyncio.get_event_loop().create_future()
        self._pending[rid] = fut
        if route is not None:
            self._by_request[rid] = route
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            await self._send(msg)
        except (ConnectionError, OSError) as e:
            self._pending.pop(rid, None)
            raise ConnectionLost("cannot send to sandboxd: %s" % e) from e
        return await fut

    # ---- sandboxes ----

    async def sandbox(self, name: Optional[str] = None, backend: Optional[str] = None,
                      image: Optional[str] = None, **spec: Any) -> "AsyncSandbox":
        """A sandbox: with no arguments your default sandbox; else sandbox.create (a usable
        sandbox of that name is reused). Other keywords are sandbox.create params."""
        if name is None and backend is None and image is None and not spec:
            return AsyncSandbox(self, None, {})
        params = {k: v for k, v in dict(spec, name=name, backend=backend, image=image).items()
                  if v is not None}
        info = await self.call("sandbox.create", params)
        return AsyncSandbox(self, info["id"], info)

    async def sandboxes(self) -> List[Dict[str, Any]]:
        return (await self.call("sandbox.list", {}))["sandboxes"]

    async def process(self, exec_id: str) -> "AsyncProcess":
        """A handle on a process by its id (after a restart of your program, say)."""
        return AsyncProcess(self, exec_id, None)

    async def processes(self, state: Optional[str] = None) -> List[Dict[str, Any]]:
        params = {"state": state} if state else {}
        return (await self.call("process.list", params))["processes"]


class AsyncFiles:
    """Files of a sandbox (``sandbox.files``)."""

    def __init__(self, sb: "AsyncSandbox") -> None:
        self._sb = sb

    async def read(self, path: str, binary: bool = False, max_bytes: int = 64 << 20) -> Output:
        """The whole file (up to max_bytes), as text or bytes."""
        out, offset = bytearray(), 0
        while True:
            p = self._sb._params(path=path, offset=offset, output_encoding="base64",
                                 max_bytes=min(1 << 20, max_bytes - len(out)))
            r = await self._sb.client.call("file.read", p)
            chunk = base64.b64decode(r.get("data", ""))
            out += chunk
            offset += len(chunk)
            if r.get("eof") or not chunk or len(out) >= max_bytes:
                break
        return bytes(out) if binary else bytes(out).decode("utf-8", "replace")

    async def write(self, path: str, data: Union[str, bytes], mode: Optional[int] = None,
                    append: bool = False, mkdir: bool = False) -> int:
        p = self._sb._params(path=path, data_base64=_b64(data), append=append, mkdir=mkdir)
        if mode is not None:
            p["mode"] = mode
        return int((await self._sb.client.call("file.write", p))["bytes"])


class AsyncSandbox:
    """A sandbox: run commands, start background processes, read and write files."""

    def __init__(self, client: AsyncClient, id: Optional[str], info: Dict[str, Any]) -> None:
        self.client = client
        self.id = id
        self.info = info
        self.files = AsyncFiles(self)

    @property
    def name(self) -> Optional[str]:
        return self.info.get("name", "default" if self.id is None else None)

    def _params(self, **kw: Any) -> Dict[str, Any]:
        p = {k: v for k, v in kw.items() if v is not None}
        if self.id is not None:
            p["sandbox"] = self.id
        return p

    def _exec_params(self, command: Union[str, Sequence[str]], timeout: Optional[float],
                     cwd: Optional[str], env: Optional[Dict[str, str]],
                     stdin: Optional[Union[str, bytes]], **kw: Any) -> Dict[str, Any]:
        p = self._params(cwd=cwd, env=env, **kw)
        if isinstance(command, str):
            p["command"] = command
        else:
            p["argv"] = list(command)
        if timeout is not None:
            p["timeout_s"] = timeout
        if stdin is not None:
            p["stdin_base64"] = _b64(stdin)
        return p

    async def run(self, command: Union[str, Sequence[str]], *, timeout: Optional[float] = None,
                  cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                  stdin: Optional[Union[str, bytes]] = None,
                  on_stdout: Optional[OutputCallback] = None,
                  on_stderr: Optional[OutputCallback] = None, merge_stderr: bool = False,
                  binary: bool = False, max_output_bytes: Optional[int] = None,
                  exec_id: Optional[str] = None, tag: Optional[str] = None) -> ExecResult:
        """Runs a command (a string for the sandbox's shell, a list for an argv) until it ends.

        on_stdout / on_stderr get the output live (str, or bytes with binary=True). A
        non-zero exit is a result, not an exception (``result.check()`` raises). Raises
        PolicyDenied when the policy (or the approver) says no."""
        route = _Route(binary, on_stdout, on_stderr)
        p = self._exec_params(command, timeout, cwd, env, stdin, merge_stderr=merge_stderr or None,
                              max_output_bytes=max_output_bytes, exec_id=exec_id, tag=tag,
                              stream=bool(on_stdout or on_stderr))
        if binary:
            p["output_encoding"] = "base64"
        r = await self.client.call("exec", p, route=route)
        if r.get("exec_id"):
            self.client._routes.pop(r["exec_id"], None)
        return ExecResult.from_json(r, binary)

    async def start(self, command: Union[str, Sequence[str]], *, timeout: Optional[float] = 0,
                    cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                    stdin: Optional[Union[str, bytes]] = None, stdin_open: bool = False,
                    binary: bool = False, exec_id: Optional[str] = None,
                    tag: Optional[str] = None) -> "AsyncProcess":
        """Starts a background process and returns its handle at once (timeout 0: none)."""
        p = self._exec_params(command, timeout, cwd, env, stdin, background=True, stream=False,
                              stdin_open=stdin_open or None, exec_id=exec_id, tag=tag)
        if binary:
            p["output_encoding"] = "base64"
        r = await self.client.call("exec", p)
        return AsyncProcess(self.client, r["exec_id"], self, binary)

    async def destroy(self) -> None:
        if self.id is None:
            raise ValueError("the default sandbox is destroyed by its id (see sandboxes())")
        await self.client.call("sandbox.destroy", {"id": self.id})

    async def get(self) -> Dict[str, Any]:
        return await self.client.call("sandbox.get", {"id": self.id or "default"})


class AsyncProcess:
    """A background process: read its output (from any offset: the daemon keeps it), follow it
    live, feed its stdin, wait for it, kill it. Works across reconnects."""

    def __init__(self, client: AsyncClient, exec_id: str, sandbox: Optional[AsyncSandbox],
                 binary: bool = False) -> None:
        self.client = client
        self.exec_id = exec_id
        self.sandbox = sandbox
        self.binary = binary
        self.offsets = {"stdout": 0, "stderr": 0}  # where read() goes on

    def __repr__(self) -> str:
        return "<AsyncProcess %s>" % self.exec_id

    async def read(self, stream: str = "stdout", offset: Optional[int] = None,
                   max_bytes: int = 65536, wait_ms: int = 0) -> ReadResult:
        """Reads retained output; without offset it goes on where the last read stopped."""
        off = self.offsets[stream] if offset is None else offset
        r = await self._retrying("process.read", {
            "exec_id": self.exec_id, "stream": stream, "offset": off, "max_bytes": max_bytes,
            "wait_ms": wait_ms, "output_encoding": "base64" if self.binary else "text"})
        if offset is None:
            self.offsets[stream] = int(r.get("next_offset", off))
        return ReadResult(_decode(r.get("data", ""), self.binary), int(r.get("offset", 0)),
                          int(r.get("next_offset", 0)), bool(r.get("eof")),
                          r.get("state", ""), r.get("exit_code"), int(r.get("dropped_bytes", 0)),
                          r)

    async def output(self, stream: str = "stdout") -> Output:
        """All retained output of a stream so far."""
        parts: List[Any] = []
        off = 0
        while True:
            r = await self.read(stream, offset=off, max_bytes=1 << 20)
            parts.append(r.data)
            if r.next_offset <= off or r.eof:
                break
            off = r.next_offset
        return b"".join(parts) if self.binary else "".join(parts)

    async def attach(self) -> None:
        """Follows the process on this connection from the offsets seen so far (again after a
        reconnect, which happens by itself)."""
        r = self.client._attached.get(self.exec_id) or _Route(self.binary)
        r.next = {k: max(v, r.next.get(k, 0)) for k, v in self.offsets.items()}
        self.client._attached[self.exec_id] = r
        self.client._routes[self.exec_id] = r
        # An exited process's exec.exit comes before this answer: it ends iter_output.
        await self.client.call("process.attach", {"exec_id": self.exec_id,
                                                  "offsets": dict(r.next)})

    async def iter_output(self) -> AsyncIterator[OutputChunk]:
        """Live output of both streams until the process ends (earlier output first)."""
        r = self.client._attached.get(self.exec_id) or _Route(self.binary)
        r.queue = asyncio.Queue()
        self.client._attached[self.exec_id] = r
        await self.attach()
        while True:
            chunk = await r.queue.get()
            if chunk is None:
                return
            self.offsets[chunk.stream] = max(self.offsets[chunk.stream], chunk.offset +
                                             (len(chunk.data) if self.binary
                                              else len(chunk.data.encode())))
            yield chunk

    async def write(self, data: Union[str, bytes], eof: bool = False) -> int:
        r = await self.client.call("process.write", {"exec_id": self.exec_id,
                                                     "data_base64": _b64(data), "eof": eof})
        return int(r["written"])

    async def close_stdin(self) -> None:
        await self.write(b"", eof=True)

    async def wait(self, timeout: Optional[float] = None) -> ExitStatus:
        """Waits until the process ends (or timeout seconds: then state is "running")."""
        loop = asyncio.get_event_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            left = WAIT_SLICE_MS if deadline is None else \
                max(0, min(WAIT_SLICE_MS, int((deadline - loop.time()) * 1000)))
            r = ExitStatus.from_json(await self._retrying(
                "process.wait", {"exec_id": self.exec_id, "timeout_ms": left}))
            if not r.running or (deadline is not None and loop.time() >= deadline):
                return r

    async def kill(self, grace_ms: int = 2000) -> Dict[str, Any]:
        return await self.client.call("process.kill", {"exec_id": self.exec_id,
                                                       "grace_ms": grace_ms})

    async def signal(self, sig: Union[str, int]) -> None:
        await self.client.call("process.signal", {"exec_id": self.exec_id, "signal": sig})

    async def _retrying(self, method: str, params: Dict[str, Any]) -> Any:
        """An idempotent call, sent again once after a lost link (once reconnected)."""
        try:
            return await self.client.call(method, params)
        except ConnectionLost:
            if not self.client.reconnect:
                raise
            assert self.client._connected is not None
            await asyncio.wait_for(self.client._connected.wait(), self.client.reconnect_timeout)
            return await self.client.call(method, params)
