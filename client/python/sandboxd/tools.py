"""A drop-in terminal tool for agent frameworks: the shape of the usual ``terminal(command,
background, timeout, workdir)`` tool (stdout and stderr merged, head and tail kept with a
truncation note, exit 124 on timeout, a session id for background processes), run by sandboxd.

    from sandboxd.tools import terminal, TERMINAL_TOOL_SCHEMA
    tools = {"terminal": terminal}          # the framework calls terminal(**arguments)
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional

from .errors import PolicyDenied, SandboxdError
from .sync import Client

__all__ = ["terminal", "truncate_output", "TERMINAL_TOOL_SCHEMA"]

MAX_OUTPUT_CHARS = 50000
DEFAULT_TIMEOUT_S = 180

TERMINAL_TOOL_SCHEMA: Dict[str, Any] = {
    "name": "terminal",
    "description": (
        "Run a shell command in a sandbox and get its output (stdout and stderr together) and "
        "exit code. The working directory and exported variables persist between calls. Use "
        "background=true for servers and other long-running commands: you get a session_id. "
        "Dangerous commands may be refused by the sandbox's policy."),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "the shell command to run"},
            "background": {"type": "boolean", "default": False,
                           "description": "start it in the background and return at once"},
            "timeout": {"type": "integer", "minimum": 1,
                        "description": "seconds before the command is killed (default 180)"},
            "workdir": {"type": "string", "description": "absolute working directory"},
        },
        "required": ["command"],
    },
}

_default: Optional[Client] = None
_default_lock = threading.Lock()


def _client() -> Client:
    global _default
    with _default_lock:
        if _default is None:
            _default = Client(client_name="sandboxd-terminal-tool")
        return _default


def truncate_output(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keeps 40% head and 60% tail of text over limit characters, with a note between."""
    if len(text) <= limit:
        return text
    head, tail = int(limit * 0.4), limit - int(limit * 0.4)
    return ("%s\n\n... [OUTPUT TRUNCATED - %d chars omitted out of %d total] ...\n\n%s"
            % (text[:head], len(text) - head - tail, len(text), text[len(text) - tail:]))


def terminal(command: str, background: bool = False, timeout: Optional[int] = None,
             workdir: Optional[str] = None, *, client: Optional[Client] = None,
             sandbox: Optional[str] = None,
             max_output_chars: int = MAX_OUTPUT_CHARS) -> Dict[str, Any]:
    """Runs command; returns {"output", "exit_code", "error"} (plus "session_id" for a
    background process, "status": "blocked" when the policy refused it). Never raises for
    what the command or the policy did: the agent reads it in the result."""
    if not isinstance(command, str) or not command.strip():
        return {"output": "", "exit_code": -1, "error": "command must be a non-empty string",
                "status": "error"}
    c = client or _client()
    try:
        sb = c.sandbox(name=sandbox) if sandbox else c.sandbox()
        if background:
            p = sb.start(command, cwd=workdir, timeout=timeout or 0)
            return {"output": "Background process started", "session_id": p.exec_id,
                    "exit_code": 0, "error": None}
        t = timeout or DEFAULT_TIMEOUT_S
        r = sb.run(command, timeout=t, cwd=workdir, merge_stderr=True)
    except PolicyDenied as e:
        return {"output": "", "exit_code": -1, "error": e.message, "status": "blocked"}
    except SandboxdError as e:
        return {"output": "", "exit_code": -1, "error": e.message, "status": "error"}
    out = truncate_output(str(r.stdout), max_output_chars)
    res: Dict[str, Any] = {"output": out, "exit_code": r.exit_code, "error": None}
    if r.timed_out:
        res["output"] = out + "\n[Command timed out after %ds]" % t
        res["exit_code"] = 124
    elif r.exit_code is None:
        res["exit_code"] = -1
        res["error"] = "killed by %s" % r.signal
    if r.policy.get("resolution") == "user":
        res["approval"] = "Command required approval and was approved by the user."
    return res
