"""Shell state of `command` execs and the shell's own messages, for every shell and backend.

The same cases run with bash, dash and busybox sh on the local backend, with busybox sh and
bash in docker containers (agent, and one `docker exec` per command), and as a second uid.
Messages are compared with the real shell run as `SHELL -c COMMAND` next to it, not with
strings written down here.
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import Daemon, DaemonTest, RpcError, class_resource, needs_root
import test_docker
from test_identity import NOBODY, as_nobody

BIG = 100000  # an exported variable this size is kept
HUGE = 140000  # over the 131071 bytes a program can be given


class ShellCases:
    """Mixin: what every shell and backend keeps. Subclasses say how to run and compare."""

    bash = False  # the sandbox's shell is bash
    tmp = "/tmp"  # a writable directory in the sandbox
    # docker exec reports a shell killed by a signal as exit 128+N, and its JSON API carries
    # only UTF-8 (agent = off)
    exec_api = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.daemon.client()
        cls.sb = cls.make_sandbox(c)
        c.close()

    @classmethod
    def make_sandbox(cls, c):
        return c.call("sandbox.create", {"name": "shell"})["id"]

    def run_cmd(self, command, **params):
        params.update(sandbox=self.sb, command=command)
        return self.c.call("exec", params, timeout=120)

    def out(self, command, **params):
        r = self.run_cmd(command, **params)
        self.assertEqual(r["exit_code"], 0, r)
        return r["stdout"]

    def reference(self, command):
        """(exit code, stdout, stderr) of the sandbox's shell run as `SHELL -c command`."""
        raise NotImplementedError

    def path(self, name):
        return "%s/sbx-shell-%d-%s" % (self.tmp, os.getpid(), name)

    def test_exit_status_and_signal(self):
        self.assertEqual(self.run_cmd("false")["exit_code"], 1)
        self.assertEqual(self.run_cmd("exit 7")["exit_code"], 7)
        self.assertEqual(self.run_cmd("(exit 3)")["exit_code"], 3)
        r = self.run_cmd("kill -9 $$")
        self.assertEqual((r["exit_code"], r["signal"]),
                         (137, None) if self.exec_api else (None, "SIGKILL"))
        r = self.run_cmd("kill -TERM $$")
        self.assertEqual((r["exit_code"], r["signal"]),
                         (143, None) if self.exec_api else (None, "SIGTERM"))

    def test_exit_inside_keeps_state(self):
        d = self.path("exit")
        r = self.run_cmd("mkdir -p %s && cd %s && export SBX_EXIT=1; exit 4" % (d, d))
        self.assertEqual(r["exit_code"], 4)
        self.assertEqual(self.out('pwd; echo "$SBX_EXIT"'), "%s\n1\n" % d)
        self.out("cd /")

    def test_background_command_starts_from_the_state_and_leaves_it(self):
        d = self.path("bg")
        self.out("mkdir -p %s && cd %s && export SBX_BG=1" % (d, d))
        r = self.run_cmd('echo "$PWD $SBX_BG"; cd / && export SBX_BG=2', background=True)
        w = self.c.call("process.wait", {"exec_id": r["exec_id"], "timeout_ms": 60000})
        self.assertEqual(w["exit_code"], 0, w)
        rd = self.c.call("process.read", {"exec_id": r["exec_id"]})
        self.assertEqual(rd["data"], "%s 1\n" % d)
        self.assertEqual(self.out('echo "$PWD $SBX_BG"'), "%s 1\n" % d)
        self.out("cd /")

    def test_set_e_ends_the_command_and_does_not_carry_over(self):
        r = self.run_cmd("set -e; export SBX_SETE=1; false; echo not-here")
        self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), (1, "", ""))
        self.assertEqual(self.out('echo "$SBX_SETE"; false; echo after'), "1\nafter\n")

    def test_xtrace_shows_only_the_command(self):
        r = self.run_cmd("set -x; true")
        self.assertEqual(r["exit_code"], 0)
        self.assertEqual(r["stderr"], self.reference("set -x; true")[2])

    def test_traps_the_command_sets(self):
        self.assertEqual(self.out("trap 'echo bye' EXIT; echo hi"), "hi\nbye\n")
        self.assertEqual(self.out("trap 'echo got-usr1' USR1; kill -USR1 $$; echo after"),
                         "got-usr1\nafter\n")
        r = self.run_cmd("trap 'echo bye' EXIT; exit 5")
        self.assertEqual((r["exit_code"], r["stdout"]), (5, "bye\n"))
        # A trap is the command's own: it does not outlive it.
        self.out("trap 'echo sbx-usr2' USR2")
        self.assertNotIn("sbx-usr2", self.out("trap"))

    def test_functions(self):
        if self.bash:
            self.out('f() { printf "fn %s|" "$1" "it\'s"; cat <<EOF\n}\ndeclare -fx f\nEOF\n}; '
                     "g() { echo g; }; export -f f g")
            self.assertEqual(self.out("f a"), "fn a|fn it's|}\ndeclare -fx f\n")
            self.assertEqual(self.out("bash -c 'f b; g'"), "fn b|fn it's|}\ndeclare -fx f\ng\n")
            self.out("export -nf f")
            r = self.run_cmd("type f >/dev/null 2>&1 || echo gone; g")
            self.assertEqual(r["stdout"], "gone\ng\n")
        else:
            # POSIX shells export no functions: a definition ends with its command.
            self.out("sbx_fn() { echo fn; }")
            r = self.run_cmd("command -v sbx_fn")
            self.assertNotEqual(r["exit_code"], 0)
            self.assertEqual(r["exit_code"], self.reference("command -v sbx_fn")[0])

    def test_values_with_newlines_quotes_and_equals(self):
        values = {"SBX_NL": "a\nb=c\n", "SBX_EQ": "x=y=z", "SBX_Q": "it's \"q\" $x `y` \\ \\n",
                  "SBX_SP": "  lead and trail  ", "SBX_EMPTY": "", "SBX_UTF8": "é ☃ 🙂"}
        self.out("export " + " ".join("%s=%s" % (k, shq(v)) for k, v in values.items()) +
                 "; export SBX_CTL=\"$(printf '\\t|\\001|\\033|\\177')\"")
        values["SBX_CTL"] = "\t|\x01|\x1b|\x7f"
        got = self.out(" ".join('printf "%%s\\0" "$%s";' % k for k in values))
        self.assertEqual(got.split("\0")[:-1], list(values.values()))

    def test_non_utf8_bytes(self):
        self.out("export SBX_BIN=$(printf '\\377\\376x\\300')")
        r = self.run_cmd('printf %s "$SBX_BIN"', output_encoding="base64")
        # ff fe 78 c0 (through the Engine API: U+FFFD for each invalid byte)
        self.assertEqual(r["stdout"], "77+977+9eO+/vQ==" if self.exec_api else "//54wA==")

    def test_cd_into_a_directory_removed_in_the_same_command(self):
        d = self.path("gone")
        r = self.run_cmd("mkdir -p %s/sub && cd %s/sub && rmdir %s/sub %s && export SBX_RM=1" %
                         (d, d, d, d))
        self.assertEqual(r["exit_code"], 0, r)
        r = self.run_cmd('pwd; echo "$SBX_RM"')
        self.assertEqual(r["stdout"], "%s\n1\n" % self.tmp)
        self.assertEqual(r["stderr"], "sandboxd: the working directory %s/sub no longer "
                                      "exists; this command runs in %s\n" % (d, self.tmp))
        self.assertEqual(self.run_cmd("pwd")["stderr"], "", "said once")
        self.out("cd /")

    def test_cd_into_a_directory_removed_by_another_exec(self):
        d = self.path("gone2")
        self.out("mkdir -p %s/a/b && cd %s/a/b" % (d, d))
        self.c.call("exec", {"sandbox": self.sb, "argv": ["rmdir", d + "/a/b", d + "/a"]})
        r = self.run_cmd("pwd")
        self.assertEqual(r["stdout"], d + "\n")
        self.assertIn("%s/a/b no longer exists" % d, r["stderr"])
        self.out("cd / && rmdir %s" % d)

    def test_unset_of_an_exported_variable(self):
        self.out("export SBX_U1=1 SBX_U2=2")
        self.out("unset SBX_U1")
        self.assertEqual(self.out('echo "${SBX_U1-unset} $SBX_U2"'), "unset 2\n")

    def test_large_environment(self):
        self.out("export SBX_BIG=$(head -c %d /dev/zero | tr '\\0' a)" % BIG)
        self.assertEqual(self.out('echo "${#SBX_BIG}"'), "%d\n" % BIG)
        r = self.run_cmd("cd / && export SBX_HUGE=$(head -c %d /dev/zero | tr '\\0' b)" % HUGE)
        self.assertEqual(r["exit_code"], 0)
        self.assertIn("sandboxd: the shell state this command left", r["stderr"])
        self.assertIn("SBX_HUGE is %d bytes, more than the 131071" % (HUGE + 9), r["stderr"])
        # Nothing of that command's state is kept; the sandbox goes on as before.
        self.assertEqual(self.out('echo "${#SBX_HUGE} ${#SBX_BIG}"'), "0 %d\n" % BIG)
        self.out("unset SBX_BIG")

    def test_too_large_an_environment_in_total(self):
        r = self.run_cmd("v=$(head -c 100000 /dev/zero | tr '\\0' c); "
                         "for i in 1 2 3 4 5 6 7 8 9 10; do export SBX_T$i=$v; done")
        self.assertIn("more than the 983040 bytes a sandbox keeps", r["stderr"])
        self.assertEqual(self.out('echo "${#SBX_T1}"'), "0\n")

    def test_messages_read_as_the_shell_c_would_print_them(self):
        # (A command the policy cannot parse never reaches the shell: it is denied.)
        for cmd in ("sbx_no_such_command", "if then", "echo \"$0 $#\" \"$@\"",
                    "true\nsbx_no_such_command_2", "cd /sbx-no-dir", "set -u; echo $SBX_NOT_SET",
                    "echo $LINENO; (exit 2)"):
            with self.subTest(cmd=cmd):
                r = self.run_cmd(cmd)
                want = self.reference(cmd)
                self.assertEqual((r["exit_code"], r["stdout"], r["stderr"]), want)
                self.assertNotIn("sandboxd", r["stderr"])
                self.assertNotIn("eval", r["stderr"])


def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


class LocalReference:
    """Mixin: the reference is the local shell run next to the daemon. The sandbox is the
    default isolation's (namespaces where the kernel allows them): its configured shell and
    the files the tests share with it live in its workdir, which it sees at the same path
    whatever its isolation (an isolated one has a /tmp of its own)."""
    shell = "/bin/bash"
    name = "bash"
    bash = True
    workdir = None  # None: a fresh directory per class

    @classmethod
    def make_sandbox(cls, c):
        if cls.workdir is None:
            cls.workdir = tempfile.mkdtemp(prefix="sbx-shellwd-")
            cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
            os.chmod(cls.workdir, 0o755)
        return c.call("sandbox.create", {"name": "shell", "workdir": cls.workdir})["id"]

    def reference(self, command):
        p = subprocess.run([self.name, "-c", command], executable=self.shell,
                           capture_output=True, text=True, cwd="/",
                           env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        return p.returncode, p.stdout, p.stderr


class LocalBash(LocalReference, ShellCases, DaemonTest):
    config = None

    def test_syntax_error_names_only_the_command(self):
        r = self.run_cmd("echo a; if then")
        self.assertEqual(r["stderr"], "bash: -c: line 1: syntax error near unexpected token "
                                      "`then'\nbash: -c: line 1: `echo a; if then'\n")

    def bash_env_in(self, sb, path):
        """Sets BASH_ENV=path in sandbox sb (the policy asks about BASH_ENV, which injects
        code: this client says yes once); returns what a command then sees of it."""
        approving = self.daemon.client(on_request=lambda m: {"decision": "once"})
        approving.call("exec", {"sandbox": sb, "command": "export BASH_ENV=" + path})
        approving.close()
        r = self.c.call("exec", {"sandbox": sb,
                                 "command": 'echo "${SBX_FROM_BASH_ENV-unset} $BASH_ENV"'})
        self.assertEqual(r["exit_code"], 0, r)
        self.c.call("exec", {"sandbox": sb, "command": "unset BASH_ENV"})
        return r["stdout"]

    def test_bash_env_of_the_caller_is_read_and_kept(self):
        path = os.path.join(self.workdir, "bash-env.sh")
        with open(path, "w") as f:
            f.write("SBX_FROM_BASH_ENV=read\n")
        self.addCleanup(os.unlink, path)
        self.assertEqual(self.bash_env_in(self.sb, path), "read %s\n" % path)
        self.assertEqual(self.out('echo "[${SBX_FROM_BASH_ENV-}]"'), "[]\n")

    def test_bash_env_is_read_in_the_sandbox_view(self):
        """A BASH_ENV is read inside the sandbox, never by the daemon: a host file an isolated
        sandbox does not see (here in the daemon's state directory, which it hides) is not
        read there; on the host the caller reads it with their own rights."""
        secret = os.path.join(self.daemon.state, "bash-env-secret.sh")
        with open(secret, "w") as f:
            f.write("SBX_FROM_BASH_ENV=leaked\n")
        self.addCleanup(os.unlink, secret)
        iso = self.c.call("sandbox.create", {"local": {"isolation": "namespaces"}})["id"]
        self.assertEqual(self.bash_env_in(iso, secret), "unset %s\n" % secret)
        host = self.c.call("sandbox.create", {"local": {"isolation": "none"}})["id"]
        self.assertEqual(self.bash_env_in(host, secret), "leaked %s\n" % secret)


class LocalDash(LocalReference, ShellCases, DaemonTest):
    shell = "/bin/dash"
    name = "dash"
    bash = False
    config = "[exec]\nshell = /bin/dash\n"


# busybox runs as sh when it is called sh: a link in the sandbox's workdir, where an isolated
# sandbox sees it too (its /tmp is its own).
BUSYBOX_DIR = tempfile.mkdtemp(prefix="sbx-busybox-")
atexit.register(shutil.rmtree, BUSYBOX_DIR, True)
os.chmod(BUSYBOX_DIR, 0o755)
os.symlink(shutil.which("busybox") or "/bin/busybox", os.path.join(BUSYBOX_DIR, "sh"))


class LocalBusybox(LocalReference, ShellCases, DaemonTest):
    shell = os.path.join(BUSYBOX_DIR, "sh")
    name = "sh"
    bash = False
    workdir = BUSYBOX_DIR
    config = "[exec]\nshell = %s\n" % shell

    def test_a_shell_the_isolated_sandbox_cannot_see_is_named(self):
        """The configured shell runs inside an isolated sandbox, resolved in its view: one
        below a path it does not see fails with the path and where it must be."""
        r = self.c.call("sandbox.create", {"local": {"isolation": "namespaces"}})
        with self.assertRaises(RpcError) as cm:
            self.c.call("exec", {"sandbox": r["id"], "command": "true"})
        self.assertEqual(cm.exception.code, -32602, cm.exception.message)
        self.assertIn(self.shell, cm.exception.message)
        self.assertIn("[exec] shell must be a program an isolated sandbox sees",
                      cm.exception.message)


class LocalSecondUid(unittest.TestCase):
    """The state of a caller the daemon runs commands for under their own uid."""

    @needs_root("needs root to act as a second uid")
    def test_state_as_nobody(self):
        from harness import Daemon
        d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        try:
            res = as_nobody(d.socket, [
                ["exec", {"command": "mkdir -p /tmp/sbx-nobody-%d/x && cd /tmp/sbx-nobody-%d/x "
                                     "&& rmdir ../x && f() { echo fn; }; export -f f; "
                                     "export SBX_N=$(printf 'a\\nb')" % (os.getpid(), os.getpid())}],
                ["exec", {"command": 'pwd; f; printf "%s|" "$SBX_N"; id -u'}],
                ["exec", {"command": "sbx_nobody_no_such"}],
            ])
        finally:
            d.stop()
            shutil.rmtree("/tmp/sbx-nobody-%d" % os.getpid(), ignore_errors=True)
        self.assertEqual(res[1]["result"]["stdout"],
                         "/tmp/sbx-nobody-%d\nfn\na\nb|%d\n" % (os.getpid(), NOBODY))
        self.assertEqual(res[2]["result"]["stderr"],
                         "bash: line 1: sbx_nobody_no_such: command not found\n")


HOST = {"local": {"isolation": "none"}}


class LocalStateFiles(unittest.TestCase):
    """The state files of host sandboxes (isolation "none": this is about the daemon's own
    directory on the host) live on a tmpfs; nothing stays behind, even after a daemon was
    killed. An isolated sandbox keeps its state files inside it and makes none on the host."""

    def test_directory_removed_at_stop_and_after_a_kill(self):
        from harness import Daemon
        state = tempfile.mkdtemp(prefix="sbx-shelltmp-")
        self.addCleanup(shutil.rmtree, state, True)
        record = os.path.join(state, "shell-tmp")
        d = Daemon(state_dir=state)
        c = d.client()
        iso = c.call("sandbox.create", {"local": {"isolation": "namespaces"}})["id"]
        c.call("exec", {"sandbox": iso, "command": "cd /tmp"})
        self.assertFalse(os.path.exists(record), "made on the first host command only")
        host = c.call("sandbox.create", HOST)["id"]
        c.call("exec", {"sandbox": host, "command": "cd /tmp"})
        with open(record) as f:
            first = f.read()
        self.assertTrue(os.path.isdir(first), first)
        self.assertEqual(os.stat(first).st_mode & 0o777, 0o711)
        c.close()
        d.proc.kill()  # no chance to clean up
        d.proc.wait()
        d.stop(expect=-9)
        self.assertTrue(os.path.isdir(first))
        d = Daemon(state_dir=state)
        self.assertFalse(os.path.exists(first), "the next daemon removes it")
        c = d.client()
        c.call("exec", {"sandbox": c.call("sandbox.create", HOST)["id"], "command": "cd /tmp"})
        with open(record) as f:
            second = f.read()
        c.close()
        d.stop()
        self.assertFalse(os.path.exists(second))
        self.assertFalse(os.path.exists(record))


class DockerReference:
    """Mixin: one container per class; the reference is `docker exec CID SHELL -c`."""
    config = test_docker.config()

    @classmethod
    def make_sandbox(cls, c):
        sb = c.call("sandbox.create", {"backend": "docker", "name": "shell"}, timeout=120)
        cls.cid = sb["details"]["container_id"]
        return sb["id"]

    def reference(self, command):
        sh = "bash" if self.bash else "sh"
        p = subprocess.run(["docker", "exec", "-w", "/", self.cid, sh, "-c", command],
                           capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr


class DockerBusybox(DockerReference, ShellCases, test_docker.DockerDaemonTest):
    pass


class DockerBusyboxExecMode(DockerReference, ShellCases, test_docker.DockerDaemonTest):
    config = test_docker.config("agent = off\n")
    exec_api = True


class DockerBash(DockerReference, ShellCases, test_docker.DockerDaemonTest):
    bash = True
    config = ("[backend.docker]\nimage = %s\npids_limit = 300\n"
              % test_docker.IMAGE.replace(":busybox", ":bash"))

    def test_bash_removed_from_the_container(self):
        sb = self.c.call("sandbox.create", {"backend": "docker", "name": "no-bash"}, timeout=120)
        try:
            run = lambda cmd: self.c.call("exec", {"sandbox": sb["id"], "command": cmd})
            self.assertEqual(run('export SBX_K=1; echo "$BASH_VERSION" | cut -c1')["stdout"],
                             "5\n")
            subprocess.run(["docker", "exec", sb["details"]["container_id"], "rm", "/bin/bash"],
                           check=True)
            # The shell it had learnt is gone: the wrapper picks again (sh) and state holds.
            r = run('echo "[${BASH_VERSION-}] $SBX_K"')
            self.assertEqual((r["exit_code"], r["stdout"]), (0, "[] 1\n"))
        finally:
            self.c.call("sandbox.destroy", {"id": sb["id"]}, timeout=120)


class DockerBashExecMode(DockerReference, ShellCases, test_docker.DockerDaemonTest):
    """bash in the container, one `docker exec` per command: the wrapper runs in the image's
    sh (busybox), which drops exported functions' BASH_FUNC_* unless handed on through env."""
    bash = True
    exec_api = True
    config = ("[backend.docker]\nimage = %s\npids_limit = 300\nagent = off\n"
              % test_docker.IMAGE.replace(":busybox", ":bash"))


class ModalDirectShell(ShellCases, unittest.TestCase):
    """The modal backend (direct mode) against the gRPC fake, which runs the commands as local
    processes, so the sandbox's shell is the host's bash and the reference `bash -c`. Modal
    reports a signal as exit 128+N (the wrapper runs the command as a child) and carries only
    UTF-8 (protobuf strings)."""

    exec_api = True
    bash = True

    @classmethod
    def setUpClass(cls):
        import test_modal
        cls.fake = class_resource(cls, test_modal.FakeModal)
        cls.env = class_resource(cls, test_modal.Env, stop="close")
        cls.daemon = class_resource(cls, Daemon, "[backend.modal]\nmode = direct\n",
                                    env=test_modal.direct_env(cls.env, cls.fake))
        super().setUpClass()

    @classmethod
    def make_sandbox(cls, c):
        return c.call("sandbox.create", {"backend": "modal", "name": "shell"}, timeout=60)["id"]

    def setUp(self):
        self.c = self.daemon.client()

    def tearDown(self):
        self.c.close()

    def reference(self, command):
        p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd="/",
                           env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        return p.returncode, p.stdout, p.stderr


if __name__ == "__main__":
    unittest.main()
