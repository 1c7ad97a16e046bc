"""Plain result types: what sandboxd answers, as typed objects (``raw`` keeps the whole JSON)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

Output = Union[str, bytes]


@dataclass(frozen=True)
class Finding:
    """One reason of a policy verdict."""
    rule: str
    verdict: str
    message: str
    match: Optional[str] = None

    @classmethod
    def from_json(cls, o: Any) -> "Finding":
        o = o if isinstance(o, dict) else {}
        return cls(str(o.get("rule", "")), str(o.get("verdict", "")), str(o.get("message", "")),
                   o.get("match"))


@dataclass
class ExecResult:
    """How a command ended, with the output kept in the result (head and tail when it was over
    ``max_output_bytes``; ``truncated`` then says so)."""
    exec_id: str
    exit_code: Optional[int]
    signal: Optional[str]
    timed_out: bool
    oom_killed: bool
    stdout: Output
    stderr: Output
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    duration_ms: float
    sandbox: Optional[str]
    policy: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, r: Dict[str, Any], binary: bool = False) -> "ExecResult":
        import base64

        def text(k: str) -> Output:
            v = r.get(k, "")
            return base64.b64decode(v) if binary else v
        return cls(r.get("exec_id", ""), r.get("exit_code"), r.get("signal"),
                   bool(r.get("timed_out")), bool(r.get("oom_killed")), text("stdout"),
                   text("stderr"), int(r.get("stdout_bytes", 0)), int(r.get("stderr_bytes", 0)),
                   bool(r.get("truncated")), float(r.get("duration_ms", 0)), r.get("sandbox"),
                   r.get("policy") or {}, r)

    @property
    def ok(self) -> bool:
        """Exited with status 0."""
        return self.exit_code == 0

    def check(self) -> "ExecResult":
        """Returns self, or raises CommandFailed when the command did not exit 0."""
        from .errors import CommandFailed
        if not self.ok:
            how = ("timed out" if self.timed_out else "killed by %s" % self.signal if self.signal
                   else "exit status %s" % self.exit_code)
            raise CommandFailed("command %s: %s" % (self.exec_id, how), self)
        return self


@dataclass
class ExitStatus:
    """How a process ended (``process.wait``), without its output."""
    exec_id: str
    state: str
    exit_code: Optional[int]
    signal: Optional[str]
    timed_out: bool
    stdout_bytes: int
    stderr_bytes: int
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, r: Dict[str, Any]) -> "ExitStatus":
        return cls(r.get("exec_id", ""), r.get("state", "exited"), r.get("exit_code"),
                   r.get("signal"), bool(r.get("timed_out")), int(r.get("stdout_bytes", 0)),
                   int(r.get("stderr_bytes", 0)), r)

    @property
    def running(self) -> bool:
        return self.state != "exited"


@dataclass
class OutputChunk:
    """A piece of a process's live output; ``offset`` is its byte offset in its stream."""
    stream: str
    data: Output
    offset: int


@dataclass
class ReadResult:
    """What ``process.read`` returned."""
    data: Output
    offset: int
    next_offset: int
    eof: bool
    state: str
    exit_code: Optional[int]
    dropped_bytes: int
    raw: Dict[str, Any] = field(repr=False)


@dataclass
class ApprovalRequest:
    """The daemon asks whether something may run (``approval.request``). Answer with one of
    ``choices``: "once", "session" (until the sandbox is destroyed), "always", or "deny"."""
    approval_id: str
    kind: str
    sandbox: Optional[str]
    backend: Optional[str]
    command: Optional[str]
    cwd: Optional[str]
    spec: Optional[Dict[str, Any]]
    findings: List[Finding]
    choices: List[str]
    expires_in_ms: int
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, p: Dict[str, Any]) -> "ApprovalRequest":
        return cls(str(p.get("approval_id", "")), str(p.get("kind", "")), p.get("sandbox"),
                   p.get("backend"), p.get("command") or (" ".join(p["argv"]) if isinstance(
                       p.get("argv"), list) else None), p.get("cwd"), p.get("spec"),
                   [Finding.from_json(f) for f in p.get("findings") or []],
                   [c for c in p.get("choices") or [] if isinstance(c, str)],
                   int(p.get("expires_in_ms") or 0), p)

    def describe(self) -> str:
        """One paragraph for a person: what would run, where, and why it is asked."""
        what = self.command if self.kind == "exec" else "a sandbox with spec %s" % (self.spec,)
        why = "; ".join("%s: %s" % (f.rule, f.message) for f in self.findings)
        return "sandboxd asks to run %s (sandbox %s, backend %s): %s" % (
            what, self.sandbox, self.backend, why or "the policy asks")
