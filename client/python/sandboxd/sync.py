"""The blocking client: the asyncio client on an event loop of its own thread, so that a plain
program (or an agent framework's synchronous tool) gets the same connection, routing,
approvals and reconnects.

    with Client() as client:
        result = client.sandbox(name="demo").run("echo hello")

Callbacks (``on_stdout``, ``on_stderr``) run on that thread: keep them short. A synchronous
``approver`` runs in a worker thread, so it may block (ask a person) while output keeps
flowing.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine, Dict, Iterator, List, Optional, Sequence, TypeVar, Union

from .aio import Approver, AsyncClient, AsyncFiles, AsyncProcess, AsyncSandbox, OutputCallback
from .types import ExecResult, ExitStatus, Output, OutputChunk, ReadResult

__all__ = ["Client", "Sandbox", "Process", "Files"]

T = TypeVar("T")


class Client:
    """One connection to sandboxd (see AsyncClient for the parameters)."""

    def __init__(self, socket: Optional[str] = None, *, role: str = "interactive",
                 approver: Optional[Approver] = None, auto_approve: bool = False,
                 client_name: str = "sandboxd-python", reconnect: bool = True,
                 reconnect_timeout: float = 30.0) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sandboxd-client",
                                        daemon=True)
        self._thread.start()
        self.aio = AsyncClient(socket, role=role, approver=approver, auto_approve=auto_approve,
                               client_name=client_name, reconnect=reconnect,
                               reconnect_timeout=reconnect_timeout)
        try:
            self._run(self.aio.connect())
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _stop_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()

    @property
    def hello(self) -> Dict[str, Any]:
        """What daemon.hello answered: version, role, approval mode, backends."""
        return self.aio.hello

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self.aio.close(), 10)
        finally:
            self._stop_loop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """One raw request (any method of docs/protocol.md)."""
        return self._run(self.aio.call(method, params))

    def sandbox(self, name: Optional[str] = None, backend: Optional[str] = None,
                image: Optional[str] = None, **spec: Any) -> "Sandbox":
        """Your default sandbox (no arguments), or a sandbox created (or reused) by name."""
        return Sandbox(self, self._run(self.aio.sandbox(name, backend, image, **spec)))

    def sandboxes(self) -> List[Dict[str, Any]]:
        return self._run(self.aio.sandboxes())

    def process(self, exec_id: str) -> "Process":
        return Process(self, self._run(self.aio.process(exec_id)))

    def processes(self, state: Optional[str] = None) -> List[Dict[str, Any]]:
        return self._run(self.aio.processes(state))


class Files:
    def __init__(self, client: Client, files: AsyncFiles) -> None:
        self._c, self._f = client, files

    def read(self, path: str, binary: bool = False, max_bytes: int = 64 << 20) -> Output:
        return self._c._run(self._f.read(path, binary, max_bytes))

    def write(self, path: str, data: Union[str, bytes], mode: Optional[int] = None,
              append: bool = False, mkdir: bool = False) -> int:
        return self._c._run(self._f.write(path, data, mode, append, mkdir))


class Sandbox:
    """A sandbox (see AsyncSandbox)."""

    def __init__(self, client: Client, sb: AsyncSandbox) -> None:
        self._c = client
        self.aio = sb
        self.files = Files(client, sb.files)

    @property
    def id(self) -> Optional[str]:
        return self.aio.id

    @property
    def name(self) -> Optional[str]:
        return self.aio.name

    @property
    def info(self) -> Dict[str, Any]:
        return self.aio.info

    def run(self, command: Union[str, Sequence[str]], *, timeout: Optional[float] = None,
            cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
            stdin: Optional[Union[str, bytes]] = None,
            on_stdout: Optional[OutputCallback] = None,
            on_stderr: Optional[OutputCallback] = None, merge_stderr: bool = False,
            binary: bool = False, max_output_bytes: Optional[int] = None,
            exec_id: Optional[str] = None, tag: Optional[str] = None) -> ExecResult:
        """Runs a command until it ends (see AsyncSandbox.run)."""
        return self._c._run(self.aio.run(
            command, timeout=timeout, cwd=cwd, env=env, stdin=stdin, on_stdout=on_stdout,
            on_stderr=on_stderr, merge_stderr=merge_stderr, binary=binary,
            max_output_bytes=max_output_bytes, exec_id=exec_id, tag=tag))

    def start(self, command: Union[str, Sequence[str]], *, timeout: Optional[float] = 0,
              cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
              stdin: Optional[Union[str, bytes]] = None, stdin_open: bool = False,
              binary: bool = False, exec_id: Optional[str] = None,
              tag: Optional[str] = None) -> "Process":
        """Starts a background process (see AsyncSandbox.start)."""
        return Process(self._c, self._c._run(self.aio.start(
            command, timeout=timeout, cwd=cwd, env=env, stdin=stdin, stdin_open=stdin_open,
            binary=binary, exec_id=exec_id, tag=tag)))

    def destroy(self) -> None:
        self._c._run(self.aio.destroy())

    def get(self) -> Dict[str, Any]:
        return self._c._run(self.aio.get())


class Process:
    """A background process (see AsyncProcess)."""

    def __init__(self, client: Client, p: AsyncProcess) -> None:
        self._c = client
        self.aio = p

    @property
    def exec_id(self) -> str:
        return self.aio.exec_id

    def __repr__(self) -> str:
        return "<Process %s>" % self.exec_id

    def read(self, stream: str = "stdout", offset: Optional[int] = None,
             max_bytes: int = 65536, wait_ms: int = 0) -> ReadResult:
        return self._c._run(self.aio.read(stream, offset, max_bytes, wait_ms))

    def output(self, stream: str = "stdout") -> Output:
        return self._c._run(self.aio.output(stream))

    def iter_output(self) -> Iterator[OutputChunk]:
        """Live output of both streams until the process ends."""
        agen = self.aio.iter_output()
        while True:
            try:
                yield self._c._run(agen.__anext__())
            except StopAsyncIteration:
                return

    def attach(self) -> None:
        self._c._run(self.aio.attach())

    def write(self, data: Union[str, bytes], eof: bool = False) -> int:
        return self._c._run(self.aio.write(data, eof))

    def close_stdin(self) -> None:
        self._c._run(self.aio.close_stdin())

    def wait(self, timeout: Optional[float] = None) -> ExitStatus:
        return self._c._run(self.aio.wait(timeout))

    def kill(self, grace_ms: int = 2000) -> Dict[str, Any]:
        return self._c._run(self.aio.kill(grace_ms))

    def signal(self, sig: Union[str, int]) -> None:
        self._c._run(self.aio.signal(sig))
