"""sandboxd-mcp: a Model Context Protocol server over stdio that gives an agent sandboxd's tools.

    {"mcpServers": {"sandboxd": {"command": "sandboxd-mcp"}}}

Tools: run (foreground or background), process_output, process_write, process_kill,
process_list, file_read, file_write, sandbox_create, sandbox_destroy, sandbox_list. A policy
refusal is a tool error that says why (the findings) and how to allow it. When the policy
asks, the question goes to the user through MCP elicitation if the client supports it; else
it is denied at once. Cancelling a tool call (notifications/cancelled) kills its command.

Options: --socket PATH, --sandbox NAME (default: your default sandbox), --role ROLE.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from . import __version__
from .aio import AsyncClient, AsyncSandbox
from .errors import PolicyDenied, SandboxdError
from .types import ApprovalRequest

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_TEXT = 100000  # characters of output in one tool result

INSTRUCTIONS = (
    "Commands run in a sandbox managed by sandboxd. The working directory and exported "
    "variables persist between 'run' calls in one sandbox. Use background=true for servers and "
    "long jobs, then process_output / process_kill. Dangerous commands are refused or need the "
    "user's approval.")


def _schema(props: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


S = {"type": "string"}
SANDBOX = {"type": "string", "description": "sandbox id or name (default: the server's)"}
TOOLS: List[Dict[str, Any]] = [
    {"name": "run", "description": "Run a shell command in the sandbox. Foreground: waits and "
     "returns its output (stdout and stderr) and exit code. background=true: returns an "
     "exec_id at once.",
     "inputSchema": _schema({"command": {"type": "string", "description": "shell command"},
                             "background": {"type": "boolean", "default": False},
                             "timeout": {"type": "number", "description": "seconds (default "
                                         "180; 0 = none, background only)"},
                             "cwd": {"type": "string", "description": "absolute directory"},
                             "sandbox": SANDBOX}, ["command"])},
    {"name": "process_output", "description": "Read the output of a (background) process from "
     "an offset; wait_ms waits for new output.",
     "inputSchema": _schema({"exec_id": S, "stream": {"type": "string",
                                                      "enum": ["stdout", "stderr"]},
                             "offset": {"type": "integer", "minimum": 0},
                             "wait_ms": {"type": "integer", "minimum": 0, "maximum": 50000}},
                            ["exec_id"])},
    {"name": "process_write", "description": "Write to the stdin of a process started with "
     "stdin open; eof=true closes it.",
     "inputSchema": _schema({"exec_id": S, "data": S, "eof": {"type": "boolean"}},
                            ["exec_id", "data"])},
    {"name": "process_kill", "description": "Kill a process and everything it started.",
     "inputSchema": _schema({"exec_id": S}, ["exec_id"])},
    {"name": "process_list", "description": "List processes (running by default).",
     "inputSchema": _schema({"all": {"type": "boolean"}, "sandbox": SANDBOX}, [])},
    {"name": "file_read", "description": "Read a text file in the sandbox.",
     "inputSchema": _schema({"path": S, "sandbox": SANDBOX}, ["path"])},
    {"name": "file_write", "description": "Write a text file in the sandbox.",
     "inputSchema": _schema({"path": S, "content": S, "append": {"type": "boolean"},
                             "mkdir": {"type": "boolean"}, "sandbox": SANDBOX},
                            ["path", "content"])},
    {"name": "sandbox_create", "description": "Create (or reuse, by name) a sandbox.",
     "inputSchema": _schema({"name": S, "backend": {"type": "string", "description":
                                                    "local, docker, ..."}, "image": S},
                            ["name"])},
    {"name": "sandbox_destroy", "description": "Destroy a sandbox and its processes.",
     "inputSchema": _schema({"sandbox": SANDBOX}, ["sandbox"])},
    {"name": "sandbox_list", "description": "List your sandboxes.",
     "inputSchema": _schema({}, [])},
]


class ToolError(Exception):
    """A tool call that failed in a way the model should read (isError: true)."""


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    head = MAX_TEXT * 2 // 5
    tail = MAX_TEXT - head
    return "%s\n... [%d characters left out] ...\n%s" % (text[:head], len(text) - MAX_TEXT,
                                                        text[-tail:])


def _denied_text(e: PolicyDenied) -> str:
    lines = ["Refused by the sandbox policy (%s, decided by %s): %s"
             % (e.verdict, e.resolution, e.message)]
    for f in e.findings:
        lines.append("  [%s] %s: %s%s" % (f.verdict, f.rule, f.message,
                                          " (%s)" % f.match if f.match else ""))
    if e.verdict == "ask":
        lines.append("It needs a person's approval, which was not given. If this MCP client "
                     "cannot ask the user (no elicitation), the user can run it with "
                     "'sandboxctl exec' and approve it there, or allow it in the policy "
                     "(docs/policy.md).")
    else:
        lines.append("This is never allowed by the policy; do it another way.")
    return "\n".join(lines)


class Server:
    """One MCP session on stdin/stdout, one sandboxd connection."""

    def __init__(self, socket: Optional[str], sandbox: Optional[str], role: str) -> None:
        self.socket = socket
        self.sandbox_name = sandbox
        self.role = role
        self.client: Optional[AsyncClient] = None
        self.client_caps: Dict[str, Any] = {}
        self.out: Optional[Callable[[bytes], Awaitable[None]]] = None
        self.calls: Dict[Any, asyncio.Task] = {}  # request id -> tool call task
        self.running: Dict[Any, str] = {}  # request id -> exec_id of its command
        self.asks: Dict[str, asyncio.Future] = {}  # our request id -> answer
        self.next_id = 0
        self.handlers: Dict[str, Callable[[Dict[str, Any]], Awaitable[Any]]] = {
            "run": self.t_run, "process_output": self.t_output, "process_write": self.t_write,
            "process_kill": self.t_kill, "process_list": self.t_list, "file_read": self.t_read,
            "file_write": self.t_fwrite, "sandbox_create": self.t_sb_create,
            "sandbox_destroy": self.t_sb_destroy, "sandbox_list": self.t_sb_list,
        }

    # ---- transport ----

    async def send(self, msg: Dict[str, Any]) -> None:
        assert self.out is not None
        await self.out(json.dumps(msg, separators=(",", ":")).encode() + b"\n")

    async def reply(self, rid: Any, result: Any = None, error: Optional[Tuple[int, str]] = None):
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if error:
            msg["error"] = {"code": error[0], "message": error[1]}
        else:
            msg["result"] = result
        await self.send(msg)

    async def ask_client(self, method: str, params: Dict[str, Any], timeout: float) -> Any:
        self.next_id += 1
        rid = "sandboxd-%d" % self.next_id
        fut = asyncio.get_event_loop().create_future()
        self.asks[rid] = fut
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self.asks.pop(rid, None)

    async def handle(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        method, rid = msg.get("method"), msg.get("id")
        if method is None:
            fut = self.asks.get(rid)
            if fut is not None and not fut.done():
                fut.set_result(msg)
            return
        if rid is None:
            await self.notification(method, msg.get("params") or {})
            return
        if method == "tools/call":
            self.calls[rid] = asyncio.ensure_future(self.tool_call(rid, msg.get("params") or {}))
            return
        try:
            result = await self.request(method, msg.get("params") or {})
        except KeyError:
            await self.reply(rid, error=(-32601, "method not found: %s" % method))
            return
        await self.reply(rid, result)

    async def request(self, method: str, params: Dict[str, Any]) -> Any:
        if method == "initialize":
            self.client_caps = params.get("capabilities") or {}
            want = params.get("protocolVersion")
            return {"protocolVersion": want if want in PROTOCOL_VERSIONS
                    else PROTOCOL_VERSIONS[1],
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "sandboxd", "version": __version__},
                    "instructions": INSTRUCTIONS}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        raise KeyError(method)

    async def notification(self, method: str, params: Dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            rid = params.get("requestId")
            eid = self.running.get(rid)
            if eid and self.client is not None:
                try:
                    await self.client.call("process.kill", {"exec_id": eid, "grace_ms": 500})
                except SandboxdError:
                    pass
            task = self.calls.pop(rid, None)
            if task is not None:
                task.cancel()  # cancelled calls get no answer (MCP)

    # ---- approvals ----

    async def approver(self, req: ApprovalRequest) -> Tuple[str, str]:
        if "elicitation" not in self.client_caps:
            return "deny", "the MCP client cannot ask the user (no elicitation capability)"
        choices = [c for c in req.choices if c != "always"] or ["deny"]
        params = {"message": req.describe() + ". Allow it?",
                  "requestedSchema": {"type": "object", "properties": {"decision": {
                      "type": "string", "title": "Decision", "enum": choices,
                      "description": "once: this time; session: until the sandbox is "
                                     "destroyed; deny: do not run it"}},
                      "required": ["decision"]}}
        try:
            ans = await self.ask_client("elicitation/create", params,
                                        max(1.0, req.expires_in_ms / 1000.0 - 1.0))
        except asyncio.TimeoutError:
            return "deny", "the user did not answer in time"
        res = ans.get("result") or {}
        decision = (res.get("content") or {}).get("decision")
        if res.get("action") != "accept" or decision not in choices:
            return "deny", "the user declined (%s)" % res.get("action", "error")
        return decision, "answered by the user through MCP elicitation"

    # ---- tools ----

    async def tool_call(self, rid: Any, params: Dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        handler = self.handlers.get(name)
        try:
            if handler is None:
                raise ToolError("unknown tool %r" % name)
            text, data = await handler(dict(args, _rid=rid))
            result = {"content": [{"type": "text", "text": _clip(text)}], "isError": False}
            if data is not None:
                result["structuredContent"] = data
        except asyncio.CancelledError:
            return
        except PolicyDenied as e:
            result = {"content": [{"type": "text", "text": _denied_text(e)}], "isError": True,
                      "structuredContent": {"error": e.message, "code": e.code,
                                            "data": e.data}}
        except (ToolError, SandboxdError) as e:
            msg = getattr(e, "message", str(e))
            result = {"content": [{"type": "text", "text": "Error: %s" % msg}], "isError": True}
        finally:
            self.calls.pop(rid, None)
            self.running.pop(rid, None)
        await self.reply(rid, result)

    async def sb(self, args: Dict[str, Any]) -> AsyncSandbox:
        assert self.client is not None
        name = args.get("sandbox") or self.sandbox_name
        return await self.client.sandbox(name=name) if name else await self.client.sandbox()

    async def t_run(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        cmd = a.get("command")
        if not isinstance(cmd, str) or not cmd.strip():
            raise ToolError("'command' must be a non-empty string")
        sb = await self.sb(a)
        if a.get("background"):
            p = await sb.start(cmd, timeout=a.get("timeout", 0), cwd=a.get("cwd"))
            return ("Started in the background: exec_id %s. Read its output with "
                    "process_output." % p.exec_id, {"exec_id": p.exec_id, "background": True})
        rid = a["_rid"]
        # Our own exec_id: a cancelled call can kill its command at once.
        eid = "p_mcp-%s" % os.urandom(8).hex()
        self.running[rid] = eid
        r = await sb.run(cmd, timeout=a.get("timeout"), cwd=a.get("cwd"), merge_stderr=True,
                         exec_id=eid)
        status = ("timed out (killed)" if r.timed_out else "killed by %s" % r.signal
                  if r.signal else "exit code %s" % r.exit_code)
        text = "%s\n[%s%s]" % (r.stdout, status, ", output truncated" if r.truncated else "")
        return text, {"exec_id": r.exec_id, "exit_code": r.exit_code, "signal": r.signal,
                      "timed_out": r.timed_out, "truncated": r.truncated}

    async def t_output(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        p = await self.client.process(str(a.get("exec_id", "")))
        r = await p.read(a.get("stream", "stdout"), int(a.get("offset", 0)),
                         wait_ms=int(a.get("wait_ms", 0)))
        state = "exited (exit code %s)" % r.exit_code if r.state == "exited" else r.state
        text = "%s\n[%s; next_offset %d%s]" % (r.data, state, r.next_offset,
                                               ", end of output" if r.eof else "")
        return text, {"data": r.data, "next_offset": r.next_offset, "eof": r.eof,
                      "state": r.state, "exit_code": r.exit_code}

    async def t_write(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        p = await self.client.process(str(a.get("exec_id", "")))
        n = await p.write(str(a.get("data", "")), bool(a.get("eof")))
        return "wrote %d bytes" % n, {"written": n}

    async def t_kill(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        p = await self.client.process(str(a.get("exec_id", "")))
        r = await p.kill()
        return "killed %s" % p.exec_id, r

    async def t_list(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        params: Dict[str, Any] = {} if a.get("all") else {"state": "running"}
        if a.get("sandbox"):
            params["sandbox"] = a["sandbox"]
        procs = (await self.client.call("process.list", params))["processes"]
        lines = ["%s %s %s" % (p["exec_id"], p["state"], p.get("command") or
                               " ".join(p.get("argv") or [])) for p in procs]
        return "\n".join(lines) or "no processes", {"processes": procs}

    async def t_read(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        sb = await self.sb(a)
        text = await sb.files.read(str(a.get("path", "")))
        return str(text), None

    async def t_fwrite(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        sb = await self.sb(a)
        n = await sb.files.write(str(a.get("path", "")), str(a.get("content", "")),
                                 append=bool(a.get("append")), mkdir=bool(a.get("mkdir")))
        return "wrote %d bytes to %s" % (n, a.get("path")), {"bytes": n}

    async def t_sb_create(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        sb = await self.client.sandbox(name=a.get("name"), backend=a.get("backend"),
                                       image=a.get("image"))
        return "sandbox %s (%s, %s)%s" % (sb.id, sb.info.get("name"), sb.info.get("backend"),
                                          " reused" if sb.info.get("reused") else ""), sb.info

    async def t_sb_destroy(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        r = await self.client.call("sandbox.destroy", {"id": a.get("sandbox")})
        return "destroyed %s" % r.get("id"), r

    async def t_sb_list(self, a: Dict[str, Any]) -> Tuple[str, Any]:
        assert self.client is not None
        sbs = await self.client.sandboxes()
        lines = ["%s %s %s %s" % (s["id"], s.get("name"), s.get("backend"), s.get("state"))
                 for s in sbs]
        return "\n".join(lines) or "no sandboxes", {"sandboxes": sbs}

    # ---- main loop ----

    async def serve(self, reader: asyncio.StreamReader,
                    out: Callable[[bytes], Awaitable[None]]) -> None:
        self.out = out
        self.client = AsyncClient(self.socket, role=self.role, approver=self.approver,
                                  client_name="sandboxd-mcp")
        await self.client.connect()
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    await self.send({"jsonrpc": "2.0", "id": None,
                                     "error": {"code": -32700, "message": "parse error"}})
                    continue
                for m in msg if isinstance(msg, list) else [msg]:
                    await self.handle(m)
        finally:
            for t in list(self.calls.values()):
                t.cancel()
            await self.client.close()


async def _stdio() -> Tuple[asyncio.StreamReader, Callable[[bytes], Awaitable[None]]]:
    loop = asyncio.get_event_loop()
    reader = asyncio.StreamReader(limit=64 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    lock = asyncio.Lock()
    fd = sys.stdout.fileno()

    async def out(data: bytes) -> None:
        async with lock:
            await loop.run_in_executor(None, _write_all, fd, data)
    return reader, out


def _write_all(fd: int, data: bytes) -> None:
    while data:
        n = os.write(fd, data)
        data = data[n:]


async def _main(args: argparse.Namespace) -> int:
    server = Server(args.socket, args.sandbox, args.role)
    reader, out = await _stdio()
    try:
        await server.serve(reader, out)
    except SandboxdError as e:
        print("sandboxd-mcp: %s" % e.message, file=sys.stderr)
        return 1
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="sandboxd-mcp", description=__doc__.split("\n")[0])
    ap.add_argument("--socket", help="sandboxd's socket (default: the usual lookup)")
    ap.add_argument("--sandbox", help="sandbox id or name for tools that name none")
    ap.add_argument("--role", default="interactive", choices=["interactive", "subagent",
                                                              "batch"])
    args = ap.parse_args(argv)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
