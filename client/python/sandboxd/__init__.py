"""sandboxd — the Python client of sandboxd (standard library only, Python 3.9+).

    from sandboxd import Client

    with Client() as client:
        result = client.sandbox(name="demo").run("echo hello from $(uname -s)")
        print(result.exit_code, result.stdout)

``Client`` blocks; ``AsyncClient`` is the same for asyncio. ``sandboxd.tools.terminal`` is a
drop-in terminal tool for agent frameworks; ``sandboxd-mcp`` (``python -m sandboxd.mcp``) an
MCP server over stdio.
"""
from .aio import AsyncClient, AsyncProcess, AsyncSandbox, default_socket
from .errors import (BackendFailed, BackendUnavailable, CommandFailed, ConnectionLost,
                     DaemonNotRunning, InternalError, InvalidParams, InvalidRequest, LimitReached,
                     MethodNotFound, ParseError, PermissionDenied, PolicyDenied, ProcessNotFound,
                     SandboxdError, SandboxNotFound, SandboxUnusable, StdinClosed)
from .sync import Client, Files, Process, Sandbox
from .types import (ApprovalRequest, ExecResult, ExitStatus, Finding, OutputChunk, ReadResult)

__version__ = "0.1.0"

__all__ = [
    "Client", "Sandbox", "Process", "Files", "AsyncClient", "AsyncSandbox", "AsyncProcess",
    "default_socket", "ApprovalRequest", "ExecResult", "ExitStatus", "Finding", "OutputChunk",
    "ReadResult", "SandboxdError", "ParseError", "InvalidRequest", "MethodNotFound",
    "InvalidParams", "InternalError", "BackendUnavailable", "PolicyDenied", "SandboxNotFound",
    "ProcessNotFound", "LimitReached", "BackendFailed", "SandboxUnusable", "StdinClosed",
    "PermissionDenied", "ConnectionLost", "DaemonNotRunning", "CommandFailed",
]
