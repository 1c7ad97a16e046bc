"""Exceptions: one class per sandboxd error code (docs/protocol.md, Errors), and the client's own.

Act on the class and its attributes, not on the message (a sentence for people).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Type

from .types import Finding


class SandboxdError(Exception):
    """An error answer of sandboxd: ``code``, ``message`` and ``data`` as the daemon sent them."""

    code: int = 0

    def __init__(self, message: str, code: Optional[int] = None,
                 data: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data: Dict[str, Any] = data if isinstance(data, dict) else {}


class ParseError(SandboxdError):
    code = -32700


class InvalidRequest(SandboxdError):
    code = -32600


class MethodNotFound(SandboxdError):
    code = -32601


class InvalidParams(SandboxdError):
    """A parameter is missing, unknown, or of the wrong type or value: ``param`` names it."""
    code = -32602

    @property
    def param(self) -> Optional[str]:
        return self.data.get("param")


class InternalError(SandboxdError):
    code = -32603


class BackendUnavailable(SandboxdError):
    """The backend cannot be used now: ``reason`` says why, ``hint`` what to do."""
    code = -32000

    @property
    def backend(self) -> Optional[str]:
        return self.data.get("backend")

    @property
    def reason(self) -> Optional[str]:
        return self.data.get("reason")

    @property
    def hint(self) -> Optional[str]:
        return self.data.get("hint")


class PolicyDenied(SandboxdError):
    """Denied by the policy: ``verdict``, ``resolution`` ("policy", "user", "timeout", "role")
    and the ``findings`` that explain it."""
    code = -32001

    @property
    def verdict(self) -> Optional[str]:
        return self.data.get("verdict")

    @property
    def resolution(self) -> Optional[str]:
        return self.data.get("resolution")

    @property
    def findings(self) -> List[Finding]:
        f = self.data.get("findings")
        return [Finding.from_json(x) for x in f] if isinstance(f, list) else []


class SandboxNotFound(SandboxdError):
    code = -32002


class ProcessNotFound(SandboxdError):
    code = -32003


class LimitReached(SandboxdError):
    """A limit was reached: ``limit`` names it, ``value`` is its value."""
    code = -32004

    @property
    def limit(self) -> Optional[str]:
        return self.data.get("limit")

    @property
    def value(self) -> Any:
        return self.data.get("value")


class BackendFailed(SandboxdError):
    """The backend failed at what it was asked: ``detail`` (and sometimes ``hint``)."""
    code = -32005

    @property
    def backend(self) -> Optional[str]:
        return self.data.get("backend")

    @property
    def detail(self) -> Optional[str]:
        return self.data.get("detail")

    @property
    def hint(self) -> Optional[str]:
        return self.data.get("hint")


class SandboxUnusable(SandboxdError):
    code = -32006

    @property
    def state(self) -> Optional[str]:
        return self.data.get("state")


class StdinClosed(SandboxdError):
    code = -32007


class PermissionDenied(SandboxdError):
    code = -32010


class ConnectionLost(SandboxdError):
    """The link to sandboxd broke. ``exec_id`` names the exec that was running, if any: a
    foreground exec is stopped by the daemon when its connection closes."""

    def __init__(self, message: str, exec_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.exec_id = exec_id


class DaemonNotRunning(SandboxdError):
    """Nothing listens on the socket (or it cannot be opened)."""


class CommandFailed(SandboxdError):
    """Raised by ``ExecResult.check()`` for a command that did not exit 0."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


_BY_CODE: Dict[int, Type[SandboxdError]] = {
    c.code: c for c in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError,
                        BackendUnavailable, PolicyDenied, SandboxNotFound, ProcessNotFound,
                        LimitReached, BackendFailed, SandboxUnusable, StdinClosed,
                        PermissionDenied)
}


def from_error(error: Any) -> SandboxdError:
    """The exception for a JSON-RPC error object."""
    if not isinstance(error, dict):
        return InternalError("malformed error answer: %r" % (error,))
    code = error.get("code")
    cls = _BY_CODE.get(code, SandboxdError) if isinstance(code, int) else SandboxdError
    return cls(str(error.get("message", "error without a message")),
               code if isinstance(code, int) else None, error.get("data"))
