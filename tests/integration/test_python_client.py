"""The Python client (client/python, package sandboxd) against the real daemon: the README
example as written, sync and asyncio calls, live output, background processes, approvals,
errors, the terminal tool, a reconnect that resumes a stream, and pip install in a venv."""
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

from harness import DaemonTest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "client", "python")
sys.path.insert(0, PYDIR)
import sandboxd  # noqa: E402
from sandboxd import AsyncClient, Client  # noqa: E402
from sandboxd.tools import terminal  # noqa: E402

ASK = "rm -r /tmp/sandboxd-py-nothing"


def readme_example(path):
    """The first ```python block of a README that uses Client."""
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    return next(b for b in blocks if "from sandboxd import Client" in b)


class Relay:
    """A Unix-socket relay whose links can be cut, to lose the connection on purpose."""

    def __init__(self, target, path):
        self.target, self.path = target, path
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(path)
        self.srv.listen(8)
        self.links = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                a, _ = self.srv.accept()
            except OSError:
                return
            b = socket.socket(socket.AF_UNIX)
            b.connect(self.target)
            self.links.append((a, b))
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pump, args=(x, y), daemon=True).start()

    @staticmethod
    def _pump(x, y):
        try:
            while True:
                d = x.recv(65536)
                if not d:
                    break
                y.sendall(d)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        for a, b in self.links:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.links = []

    def close(self):
        self.cut()
        self.srv.close()


class PythonClient(DaemonTest):
    # ASK must ask in the default sandbox whatever its isolation (ask_isolated = ask).
    config = "[policy]\napproval_timeout_s = 30\nask_isolated = ask\n"

    def client(self, **kw):
        c = Client(self.daemon.socket, **kw)
        self.addCleanup(c.close)
        return c

    def test_readme_example_as_written(self):
        for readme in (os.path.join(ROOT, "README.md"), os.path.join(PYDIR, "README.md")):
            with self.subTest(readme=readme):
                env = dict(os.environ, SANDBOXD_SOCKET=self.daemon.socket, PYTHONPATH=PYDIR)
                p = subprocess.run([sys.executable, "-c", readme_example(readme)], env=env,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout, "0 hello from Linux\n\n")

    def test_run_result_streams_and_argv(self):
        c = self.client()
        sb = c.sandbox(name="py")
        seen = {"out": [], "err": []}
        r = sb.run("echo out; echo err >&2; exit 3", on_stdout=seen["out"].append,
                   on_stderr=seen["err"].append)
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, "out\n", "err\n"))
        self.assertEqual(("".join(seen["out"]), "".join(seen["err"])), ("out\n", "err\n"))
        self.assertFalse(r.ok)
        with self.assertRaises(sandboxd.CommandFailed):
            r.check()
        self.assertEqual(sb.run(["printf", "%s|", "a b", "$HOME"]).stdout, "a b|$HOME|")
        self.assertEqual(sb.run("wc -c", stdin=b"\x00\x01\x02").stdout.strip(), "3")
        self.assertEqual(sb.run(["printf", "\\377"], binary=True).stdout, b"\xff")
        sb.run("cd /tmp && export PYVAR=kept")
        self.assertEqual(sb.run('echo "$PWD $PYVAR"').stdout, "/tmp kept\n")
        self.assertTrue(sb.run("sleep 5", timeout=1).timed_out)

    def test_background_process(self):
        c = self.client()
        sb = c.sandbox(name="py")
        p = sb.start("echo one; echo two >&2; sleep 0.2; echo three")
        chunks = list(p.iter_output())
        out = "".join(ch.data for ch in chunks if ch.stream == "stdout")
        self.assertEqual(out, "one\nthree\n")
        self.assertEqual([ch.data for ch in chunks if ch.stream == "stderr"], ["two\n"])
        st = p.wait()
        self.assertEqual((st.state, st.exit_code), ("exited", 0))
        self.assertEqual(p.output(), "one\nthree\n")
        cat = sb.start(["cat"], stdin_open=True)
        cat.write("abc")
        cat.close_stdin()
        self.assertEqual(cat.wait(timeout=10).exit_code, 0)
        self.assertEqual(cat.read().data, "abc")
        slow = sb.start("sleep 60")
        self.assertTrue(slow.wait(timeout=0.2).running)
        slow.kill(grace_ms=200)
        self.assertEqual(slow.wait().signal, "SIGTERM")
        self.assertEqual(c.process(slow.exec_id).wait().signal, "SIGTERM")

    def test_files(self):
        c = self.client()
        sb = c.sandbox(name="py")
        d = tempfile.mkdtemp(prefix="sbx-py-files-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "sub", "f.bin")
        self.assertEqual(sb.files.write(path, b"\x00\xff" * 700000, mkdir=True), 1400000)
        self.assertEqual(sb.files.read(path, binary=True), b"\x00\xff" * 700000)
        sb.files.write(path, "text\n")
        sb.files.write(path, "more\n", append=True)
        self.assertEqual(sb.files.read(path), "text\nmore\n")

    def test_approvals(self):
        with self.assertRaises(sandboxd.PolicyDenied) as cm:
            self.client().sandbox().run(ASK)
        e = cm.exception
        self.assertEqual((e.verdict, e.resolution), ("ask", "user"))
        self.assertEqual([f.rule for f in e.findings], ["delete.recursive"])
        asked = []

        def approver(req):
            asked.append(req)
            return "once"
        self.assertEqual(self.client(approver=approver).sandbox().run(ASK).exit_code, 1)
        self.assertEqual(asked[0].command, ASK)
        self.assertIn("delete.recursive", asked[0].describe())

        def broken(req):
            raise RuntimeError("no")
        with self.assertRaises(sandboxd.PolicyDenied):
            self.client(approver=broken).sandbox().run(ASK)
        with self.assertRaises(sandboxd.PolicyDenied) as cm:
            self.client(approver=lambda r: "yes please").sandbox().run(ASK)
        with self.assertRaises(sandboxd.PolicyDenied) as cm:
            self.client(role="subagent").sandbox().run(ASK)
        self.assertEqual(cm.exception.resolution, "role")
        with self.assertRaises(sandboxd.PolicyDenied) as cm:
            self.client(approver=approver).sandbox().run("rm -rf /")
        self.assertEqual(cm.exception.verdict, "deny")

    def test_errors_by_code(self):
        c = self.client()
        with self.assertRaises(sandboxd.SandboxNotFound):
            c.call("sandbox.get", {"id": "no-such-sandbox"})
        with self.assertRaises(sandboxd.InvalidParams) as cm:
            c.sandbox().run("true", timeout="soon")
        self.assertEqual(cm.exception.param, "timeout_s")
        with self.assertRaises(sandboxd.BackendUnavailable) as cm:
            c.sandbox(name="remote", backend="ssh")
        self.assertEqual(cm.exception.backend, "ssh")
        self.assertTrue(cm.exception.hint)
        with self.assertRaises(sandboxd.ProcessNotFound):
            c.process("p_nothing").wait()
        with self.assertRaises(sandboxd.DaemonNotRunning):
            Client(os.path.join(self.daemon.dir, "none.sock"))

    def test_idempotent_exec_id(self):
        sb = self.client().sandbox(name="py")
        first = sb.run("echo $RANDOM$RANDOM", exec_id="p_py-once")
        self.assertEqual(sb.run("echo $RANDOM$RANDOM", exec_id="p_py-once").stdout,
                         first.stdout)

    def test_asyncio(self):
        async def main():
            async with AsyncClient(self.daemon.socket) as c:
                sb = await c.sandbox(name="py-async")
                rs = await asyncio.gather(*(sb.run(["sh", "-c", "sleep 0.2; echo %d" % i])
                                            for i in range(8)))
                p = await sb.start("echo a; sleep 0.1; echo b")
                out = [ch.data async for ch in p.iter_output()]
                return [r.stdout for r in rs], out
        outs, live = asyncio.run(main())
        self.assertEqual(outs, ["%d\n" % i for i in range(8)])
        self.assertEqual("".join(live), "a\nb\n")

    def test_terminal_tool(self):
        c = self.client()
        r = terminal("echo out; echo err >&2; exit 2", client=c)
        self.assertEqual(r, {"output": "out\nerr\n", "exit_code": 2, "error": None})
        r = terminal("sleep 5", timeout=1, client=c)
        self.assertEqual(r["exit_code"], 124)
        self.assertIn("[Command timed out after 1s]", r["output"])
        r = terminal("head -c 200000 /dev/zero | tr '\\0' x", client=c, max_output_chars=1000)
        self.assertIn("[OUTPUT TRUNCATED - 199000 chars omitted out of 200000 total]",
                      r["output"])
        self.assertTrue(r["output"].startswith("x" * 400))
        r = terminal("rm -rf /", client=c)
        self.assertEqual((r["exit_code"], r["status"]), (-1, "blocked"))
        self.assertIn("root filesystem", r["error"])
        r = terminal("sleep 0.1; echo bg", background=True, client=c)
        self.assertEqual(c.process(r["session_id"]).wait().exit_code, 0)
        self.assertEqual(terminal("pwd", workdir="/tmp", client=c)["output"], "/tmp\n")
        self.assertEqual(terminal(42, client=c)["exit_code"], -1)

    def test_reconnect_resumes_the_stream(self):
        d = tempfile.mkdtemp(prefix="sbx-relay-")
        self.addCleanup(shutil.rmtree, d, True)
        relay = Relay(self.daemon.socket, os.path.join(d, "relay.sock"))
        self.addCleanup(relay.close)
        c = Client(relay.path)
        self.addCleanup(c.close)
        p = c.sandbox(name="py").start("for i in $(seq 1 40); do echo line $i; sleep 0.05; done")
        got = []
        for ch in p.iter_output():
            got.append(ch.data)
            if len(got) == 5:
                relay.cut()  # the client reconnects and re-attaches from its offsets
        self.assertEqual("".join(got), "".join("line %d\n" % i for i in range(1, 41)))
        self.assertEqual(p.wait().exit_code, 0)


class PipInstall(DaemonTest):
    def test_pip_install_in_a_venv(self):
        venv = tempfile.mkdtemp(prefix="sbx-venv-")
        self.addCleanup(shutil.rmtree, venv, True)
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True, timeout=120)
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
        env.pop("PYTHONPATH", None)
        p = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", PYDIR],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.access(os.path.join(venv, "bin", "sandboxd-mcp"), os.X_OK))
        env["SANDBOXD_SOCKET"] = self.daemon.socket
        code = readme_example(os.path.join(ROOT, "README.md"))
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd=venv,
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "0 hello from Linux\n\n")
        p = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import sandboxd, os; print(os.path.exists(os.path.join("
                            "os.path.dirname(sandboxd.__file__), 'py.typed')))"],
                           cwd=venv, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout, "True\n", p.stderr)
