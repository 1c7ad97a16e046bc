"""Local sandboxes isolated by namespaces (issue 12, docs/backends/local.md): what a command in
one can reach and what it cannot, as an attacker would try it, and that ordinary work still
works. Run as a root daemon with a second uid (nobody) as the caller, and as an unprivileged
daemon (uid nobody, its own caller)."""
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import unittest
import zipfile

import harness
from harness import Client, Daemon, RpcError, uniq_secs
from test_identity import NOBODY

ISO = {"backend": "local", "local": {"isolation": "namespaces"}}
# ctypes ptrace(PTRACE_ATTACH, pid): prints the errno (0: attached).
PTRACE = ("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
          "r=l.ptrace(16,int(sys.argv[1]),0,0); print(ctypes.get_errno() if r else 0)")
CONNECT = ("import socket,sys; a=sys.argv[1]; "
           "s=socket.socket(socket.AF_UNIX if a.startswith('/') else socket.AF_INET); "
           "s.settimeout(5); s.connect(a if a.startswith('/') else ('127.0.0.1',int(a))); "
           "print('connected')")


HOME_LINK = ".sbxiso-link"  # in home_readonly; a test makes it a symlink to a hidden path


def client_as(path, uid):
    """A client whose connection carries uid's credentials (the daemon reads them at
    connect), from this root process: effective ids only, restored at once."""
    if uid is None or os.geteuid() != 0:
        return Client(path, timeout=120)
    os.setgroups([])
    os.setegid(uid)
    os.seteuid(uid)
    try:
        return Client(path, timeout=120)
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups([0])


def make_wheel(path):
    """A minimal pure-Python wheel (zip with METADATA, WHEEL and RECORD)."""
    files = {
        "sbxdemo/__init__.py": "VALUE = 42\n",
        "sbxdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n",
        "sbxdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                                       "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("sbxdemo-1.0.dist-info/RECORD",
                   "".join("%s,,\n" % n for n in files) + "sbxdemo-1.0.dist-info/RECORD,,\n")


class IsolationTest(unittest.TestCase):
    """One daemon, one isolated sandbox of the caller's with its workdir in a fresh host
    directory of the caller's; host fixtures the sandbox must not reach."""
    daemon_uid = None
    caller = None  # the client's uid (None: the test's own)

    @classmethod
    def setUpClass(cls):
        owner = cls.caller if cls.caller is not None else (cls.daemon_uid or os.geteuid())
        cls.owner = owner
        # Not in /tmp (each sandbox has its own): on the host's read-only root, seen inside.
        cls.base = tempfile.mkdtemp(prefix="sbxiso-", dir="/var/lib")
        os.chmod(cls.base, 0o755)
        cls.work = os.path.join(cls.base, "work")
        cls.outside = os.path.join(cls.base, "outside")  # the caller may write it on the host
        for d in (cls.work, cls.outside):
            os.mkdir(d)
            os.chown(d, owner, owner)
        # Secrets: one beside the workdir, one inside it (hidden there too).
        cls.secret = os.path.join(cls.base, "secret.txt")
        cls.inner_secret = os.path.join(cls.work, ".env")
        for path in (cls.secret, cls.inner_secret):
            with open(path, "w") as f:
                f.write("sekrit-isolation\n")
            os.chmod(path, 0o644)
        # A setuid-root program that reports its effective uid (root only can make one).
        cls.suid = None
        if os.geteuid() == 0:
            cls.suid = os.path.join(cls.base, "suid-id")
            shutil.copy("/usr/bin/id", cls.suid)
            os.chmod(cls.suid, 0o4755)
        cls.listener = socket.socket()
        cls.listener.bind(("127.0.0.1", 0))
        cls.listener.listen(8)
        cls.port = cls.listener.getsockname()[1]
        cls.secret_dir = os.path.join(cls.base, "secret-dir")
        os.mkdir(cls.secret_dir)
        cfg = "[backend.local]\nhidden_paths = ~/.ssh, %s, %s, %s\nhome_readonly = .gitconfig, " \
              ".config/git, %s\n" % (cls.secret, cls.inner_secret, cls.secret_dir, HOME_LINK)
        if cls.caller is not None:
            cfg = "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n" + cfg
        # The daemon's directories in base too: not in /tmp, where the sandbox's private /tmp
        # would hide them whether they are covered or not.
        tempfile.tempdir = cls.base
        try:
            cls.daemon = Daemon(cfg, uid=cls.daemon_uid)
        finally:
            tempfile.tempdir = None
        cls.c = client_as(cls.daemon.socket, cls.caller)
        cls.sb = cls.c.call("sandbox.create", dict(ISO, workdir=cls.work))
        # A host process of the caller's, which the sandbox must neither see nor signal.
        cls.host_secs = uniq_secs(300)
        pre = ["setpriv", "--reuid=%d" % owner, "--regid=%d" % owner, "--clear-groups"] \
            if os.geteuid() == 0 and owner != 0 else []
        cls.host_proc = subprocess.Popen(pre + ["sleep", cls.host_secs])

    @classmethod
    def tearDownClass(cls):
        cls.host_proc.kill()
        cls.host_proc.wait()
        cls.listener.close()
        cls.c.close()
        cls.daemon.stop()
        shutil.rmtree(cls.base, ignore_errors=True)

    def sh(self, command, **kw):
        # In a subshell: no test leaves the shell state (cwd) to the next.
        return self.c.call("exec", dict(kw, sandbox=self.sb["id"], command="(%s)" % command))

    def ok(self, command, **kw):
        r = self.sh(command, **kw)
        self.assertEqual(r["exit_code"], 0, "%s: %s%s" % (command, r["stdout"], r["stderr"]))
        return r["stdout"]

    def py(self, code, *args):
        return self.c.call("exec", {"sandbox": self.sb["id"],
                                    "argv": ["/usr/bin/python3", "-c", code] + list(args)})

    # ---- what the sandbox is ----

    def test_sandbox_object_and_identity(self):
        self.assertEqual(self.sb["isolation"], "namespaces")
        self.assertFalse(self.sb["host_access"])
        self.assertEqual(self.sb["workdir"], self.work)
        got = self.sc_ids = self.ok("id -u; id -g; id -G").split()
        self.assertEqual(got[0], str(self.owner), "never root for another caller")
        self.assertEqual(self.ok("pwd").strip(), self.work)
        status = self.ok("grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
        self.assertIn("CapEff:\t0000000000000000", status)
        self.assertIn("CapBnd:\t0000000000000000", status)
        self.assertIn("NoNewPrivs:\t1", status)
        self.assertIn("Seccomp:\t2", status)

    def test_backend_list_says_what_is_available(self):
        local = next(b for b in self.c.call("backend.list")["backends"] if b["name"] == "local")
        ns = local["details"]["isolation"]["namespaces"]
        self.assertTrue(ns["available"], ns)
        self.assertIn("mount", ns["seccomp_denies"])
        self.assertIn("landlock_abi", ns)

    # ---- escapes ----

    def assertNotOnHost(self, path):
        self.assertFalse(os.path.lexists(path), "%s reached the host" % path)

    def test_writes_outside_the_writable_paths_fail(self):
        target = os.path.join(self.outside, "escaped")
        os.symlink(target, os.path.join(self.work, "link-out"))
        os.symlink("/etc", os.path.join(self.work, "etc-link"))
        for cmd in ("echo x > /etc/sbx-escaped", "echo x > /usr/sbx-escaped",
                    "echo x > %s" % target, "echo x > link-out",
                    "echo x > etc-link/sbx-escaped",
                    "echo x > /proc/self/root/etc/sbx-escaped",
                    "echo x > /proc/1/root%s" % target,
                    "echo x > /proc/1/cwd/../outside/escaped"):
            with self.subTest(cmd=cmd):
                r = self.sh(cmd)
                self.assertNotEqual(r["exit_code"], 0, r)
        self.assertNotOnHost(target)
        self.assertNotOnHost("/etc/sbx-escaped")
        self.assertNotOnHost("/usr/sbx-escaped")
        # /tmp is the sandbox's own: what is written there stays in it.
        self.ok("echo x > /tmp/sbx-private-%d" % os.getpid())
        self.assertNotOnHost("/tmp/sbx-private-%d" % os.getpid())

    def test_hidden_paths_are_unreadable(self):
        with open(self.secret) as f:
            self.assertIn("sekrit", f.read())  # readable on the host
        for path in (self.secret, self.inner_secret, ".env", "/proc/1/root" + self.secret,
                     "/proc/self/cwd/.env"):
            with self.subTest(path=path):
                r = self.sh("cat %s" % path)
                self.assertNotIn("sekrit", r["stdout"])
        # The daemon's state and socket directories are empty or absent inside, and so are
        # the other users' homes.
        mine = pwd.getpwuid(self.owner).pw_dir  # its own private home is not another's
        for d in (self.daemon.state, os.path.dirname(self.daemon.socket), "/root", "/home"):
            with self.subTest(d=d):
                if d == mine:
                    continue
                self.assertEqual(self.sh("ls -A %s 2>/dev/null" % d)["stdout"], "")

    def test_daemon_socket_is_unreachable(self):
        r = self.py(CONNECT, self.daemon.socket)
        self.assertNotIn("connected", r["stdout"])
        self.assertNotEqual(r["exit_code"], 0)

    def test_workdir_above_the_daemon_does_not_uncover_it(self):
        # A workdir the client names may hold the daemon's directories (here the fixtures'
        # base, where the test daemon lives): they stay covered, else the sandbox's code could
        # ask the daemon for a sandbox with isolation "none".
        sb = self.c.call("sandbox.create", dict(ISO, workdir=self.base))
        probe = os.path.join(self.outside, "through-base")
        try:
            r = self.c.call("exec", {"sandbox": sb["id"], "argv": [
                "/usr/bin/python3", "-c", CONNECT, self.daemon.socket]})
            self.assertNotIn("connected", r["stdout"])
            for d in (os.path.dirname(self.daemon.socket), self.daemon.state):
                ls = self.c.call("exec", {"sandbox": sb["id"], "command": "ls -A %s" % d})
                self.assertEqual((ls["exit_code"], ls["stdout"]), (0, ""), ls)
            w = self.c.call("exec", {"sandbox": sb["id"], "command": "echo x > %s" % probe})
            self.assertEqual(w["exit_code"], 0, "the workdir itself stays writable: %s" % w)
        finally:
            self.c.call("sandbox.destroy", {"id": sb["id"]})
            if os.path.exists(probe):
                os.unlink(probe)

    def test_a_workdir_that_is_a_hidden_path_by_another_name_is_refused(self):
        alias = os.path.join(self.base, "alias-%s" % type(self).__name__)
        os.symlink(self.secret_dir, alias)
        with self.assertRaises(RpcError) as e:
            self.c.call("sandbox.create", dict(ISO, workdir=alias))
        self.assertIn("hidden_paths", str(e.exception))

    def test_a_workdir_on_a_place_of_the_sandbox_is_refused(self):
        # A bind there would put the host's /tmp, /run (the caller's D-Bus session), /dev,
        # /proc or /sys in place of the sandbox's own; "/" was silently not bound, "/tmp"
        # showed the sandbox's own root. Also under other names, resolved as the caller.
        link = os.path.join(self.base, "run-%s" % type(self).__name__)
        os.symlink("/run", link)
        for wd in ("/", "/tmp", "/var", "/run", "/dev/shm", "/proc/self/root", "/sys", link):
            with self.subTest(workdir=wd):
                r = self.c.request("sandbox.create", dict(ISO, workdir=wd))
                if "result" in r:
                    self.c.call("sandbox.destroy", {"id": r["result"]["id"]})
                self.assertEqual(r.get("error", {}).get("code"), -32602, r)
                self.assertEqual(r["error"]["data"]["param"], "workdir", r)
                self.assertIn("'%s'" % wd, r["error"]["message"])
                self.assertIn("below /tmp or in your home", r["error"]["message"])
        # Below /tmp stays allowed: the host's directory, writable, and the private /tmp.
        below = tempfile.mkdtemp(prefix="sbxiso-below-", dir="/tmp")
        beside = tempfile.NamedTemporaryFile(prefix="sbxiso-beside-", dir="/tmp")
        try:
            os.chown(below, self.owner, self.owner)
            sb = self.c.call("sandbox.create", dict(ISO, workdir=below))
            r = self.c.call("exec", {"sandbox": sb["id"],
                                     "command": "echo in > %s/x && ls -A /tmp" % below})
            self.c.call("sandbox.destroy", {"id": sb["id"]})
            self.assertEqual(r["exit_code"], 0, r)
            self.assertIn(os.path.basename(below), r["stdout"].split())
            self.assertNotIn(os.path.basename(beside.name), r["stdout"].split())
            with open(os.path.join(below, "x")) as f:
                self.assertEqual(f.read(), "in\n")
        finally:
            beside.close()
            shutil.rmtree(below, ignore_errors=True)

    def test_a_home_readonly_symlink_to_a_hidden_path_shows_nothing(self):
        # A home_readonly file of the real home that is a symlink to a hidden path (planted
        # by anything that could write the real home, e.g. a sandbox whose workdir it was).
        # The subclasses' caller (nobody) has no home: they do without this test.
        link = os.path.join(pwd.getpwuid(self.owner).pw_dir, HOME_LINK)
        os.symlink(self.secret, link)
        try:
            sb = self.c.call("sandbox.create", ISO)
            r = self.c.call("exec", {"sandbox": sb["id"], "command": "cat ~/%s" % HOME_LINK})
            self.c.call("sandbox.destroy", {"id": sb["id"]})
            self.assertNotIn("sekrit", r["stdout"])
        finally:
            os.unlink(link)

    def test_host_processes_invisible_and_unsignalled(self):
        ps = self.ok("ps -eo pid,args")
        self.assertNotIn(self.host_secs, ps)
        self.assertNotIn("sandboxd --socket", ps)
        pid = self.host_proc.pid
        r = self.sh("kill -9 %d" % pid)
        self.assertNotEqual(r["exit_code"], 0)
        # kill -9 -1 ends what runs in the sandbox, and only that.
        bg = self.sh("sleep %s" % uniq_secs(301), background=True)
        # The policy refuses `kill -1` it can read; a script it cannot read is the threat.
        with open(os.path.join(self.work, "k.sh"), "w") as f:
            f.write("kill -9 -1\n")
        self.sh("sh k.sh")
        self.assertEqual(self.c.call("process.wait", {"exec_id": bg["exec_id"],
                                                      "timeout_ms": 30000})["signal"],
                         "SIGKILL")
        self.assertIsNone(self.host_proc.poll(), "a host process was killed")
        self.assertEqual(self.ok("echo alive").strip(), "alive")

    def test_ptrace_of_a_host_process_fails(self):
        r = self.py(PTRACE, str(self.host_proc.pid))
        self.assertNotEqual(r["stdout"].strip(), "0", r)
        # Not even of its own processes: ptrace is refused by the filter.
        r = self.c.call("exec", {"sandbox": self.sb["id"], "argv": [
            "sh", "-c", "sleep 30 & /usr/bin/python3 -c \"$0\" $!; kill $!", PTRACE]})
        self.assertEqual(r["stdout"].strip(), "1", r)  # EPERM

    def test_host_loopback_listener_unreachable_with_network_none(self):
        self.assertEqual(self.sb["details"]["network"], "none")
        r = self.py(CONNECT, str(self.port))
        self.assertNotIn("connected", r["stdout"])
        self.assertIn("Connection refused", r["stderr"])
        # Its own loopback works.
        self.ok("/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0));"
                " s.listen(); c=socket.create_connection(s.getsockname()); print(\"ok\")'")

    def test_mount_and_new_user_namespaces_refused(self):
        for cmd in ("mount -t tmpfs none /tmp", "unshare -U true", "unshare -r true",
                    "unshare -m true", "unshare -n true"):
            with self.subTest(cmd=cmd):
                r = self.sh(cmd)
                self.assertNotEqual(r["exit_code"], 0, r)

    @harness.needs_root("root makes the setuid-root program")
    def test_setuid_binary_gives_nothing(self):
        host = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                               "--clear-groups", self.suid, "-u"], capture_output=True, text=True)
        self.assertEqual(host.stdout.strip(), "0", "the control: setuid works on the host")
        self.assertEqual(self.ok("%s -u" % self.suid).strip(), str(self.owner))
        r = self.sh("su -c id root </dev/null")
        self.assertNotEqual(r["exit_code"], 0)

    # ---- same protocol, same behaviour ----

    def test_stdin_pty_shell_state_and_timeout(self):
        sid = self.sb["id"]
        r = self.c.call("exec", {"sandbox": sid, "argv": ["cat"], "stdin": "fed\n"})
        self.assertEqual(r["stdout"], "fed\n")
        r = self.c.call("exec", {"sandbox": sid, "command": "tty && test -t 0", "pty": True})
        self.assertEqual(r["exit_code"], 0, r)
        self.assertIn("/dev/pts/", r["stdout"])
        self.c.call("exec", {"sandbox": sid, "command": "export SBX_KEPT=yes"})
        self.assertEqual(self.c.call("exec", {"sandbox": sid, "command": "echo $SBX_KEPT"})
                         ["stdout"], "yes\n")
        secs = uniq_secs(303)
        r = self.c.call("exec", {"sandbox": sid, "timeout_s": 1,
                                 "command": "sleep %s & sleep %s; wait" % (secs, secs)})
        self.assertTrue(r["timed_out"], r)
        self.assertNotIn(secs, self.ok("ps -eo args"), "the timeout left part of the tree")

    # ---- the policy ----

    def test_policy_knows_it_is_isolated(self):
        # An "ask" verdict runs in an isolated sandbox ([policy] ask_isolated = allow) ...
        r = self.sh("touch m && chmod 777 m")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["policy"]["verdict"], "ask", r["policy"])
        # ... floor rules still deny.
        with self.assertRaises(RpcError) as cm:
            self.sh("rm -rf /")
        self.assertEqual(cm.exception.code, -32001)

    # ---- files in the sandbox's view ----

    def test_file_ops_resolve_inside(self):
        sid = self.sb["id"]
        p = "/tmp/sbx-fileop-%d" % os.getpid()
        self.c.call("file.write", {"sandbox": sid, "path": p, "data": "in"})
        self.assertEqual(self.ok("cat %s" % p), "in")
        self.assertNotOnHost(p)
        with self.assertRaises(RpcError):
            self.c.call("file.write", {"sandbox": sid, "path": "/etc/sbx-escaped", "data": ""})
        self.assertNotOnHost("/etc/sbx-escaped")
        with self.assertRaises(RpcError):
            self.c.call("file.read", {"sandbox": sid, "path": self.secret})
        os.symlink(self.secret, os.path.join(self.work, "secret-link"))
        with self.assertRaises(RpcError):
            self.c.call("file.read", {"sandbox": sid, "path": self.work + "/secret-link"})

    # ---- ordinary work ----

    def test_git_make_and_a_compiler_in_the_workspace(self):
        self.ok("git init -q repo && cd repo && printf 'int main(void){return 0;}\\n' > m.c && "
                "printf 'm: m.c\\n\\tcc -o m m.c\\n' > Makefile && make -s && ./m && "
                "git add . && git -c user.name=t -c user.email=t@e commit -qm one && "
                "git log --oneline | wc -l")
        self.assertTrue(os.path.exists(os.path.join(self.work, "repo", "m")))
        self.assertEqual(os.stat(os.path.join(self.work, "repo", "m")).st_uid, self.owner)

    def test_python_venv_and_pip_install_of_a_local_wheel(self):
        make_wheel(os.path.join(self.work, "sbxdemo-1.0-py3-none-any.whl"))
        out = self.ok("/usr/bin/python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -q "
                      "--no-index --disable-pip-version-check ./sbxdemo-1.0-py3-none-any.whl && "
                      "/tmp/venv/bin/python -c 'import sbxdemo; print(sbxdemo.VALUE)'")
        self.assertEqual(out.strip().splitlines()[-1], "42")

    def test_npm_with_its_cache(self):
        # nobody's passwd home does not exist: its cache goes to a home in the private /tmp.
        home = "$HOME" if os.path.isdir(pwd.getpwuid(self.owner).pw_dir) else "/tmp/home"
        out = self.ok("export HOME=%s && mkdir -p pkg app && cd pkg && npm init -y >/dev/null "
                      "&& npm pack -q && cd ../app && npm init -y >/dev/null && npm install "
                      "-q --offline --no-audit --no-fund ../pkg/pkg-1.0.0.tgz && "
                      "ls node_modules && ls -d ~/.npm/_cacache" % home)
        self.assertIn("pkg", out)
        self.assertTrue(os.path.isdir(os.path.join(self.work, "app", "node_modules", "pkg")))


@harness.needs_root("needs root to act as a second uid")
class RootDaemonOtherCaller(IsolationTest):
    """A root daemon; the caller is nobody: the sandbox runs as nobody, never as root."""
    caller = NOBODY
    test_a_home_readonly_symlink_to_a_hidden_path_shows_nothing = None  # nobody has no home

    def test_a_host_workdir_out_of_reach_says_no_more_than_an_absent_one(self):
        # Checked as the caller, not as the root daemon: whether a path nobody cannot reach
        # exists is not told, neither by the error nor by a sandbox made there.
        private = tempfile.mkdtemp(prefix="private-", dir=self.base)  # root's, 0700
        os.mkdir(os.path.join(private, "dir"))
        answers = []
        for wd in (os.path.join(private, "dir"), os.path.join(private, "absent")):
            r = self.c.request("sandbox.create", {"backend": "local", "workdir": wd,
                                                  "local": {"isolation": "none"}})
            if "result" in r:
                self.c.call("sandbox.destroy", {"id": r["result"]["id"]})
            self.assertEqual(r.get("error", {}).get("code"), -32602, r)
            answers.append(r["error"]["message"].replace(wd, "WD"))
        self.assertEqual(answers[0], answers[1])


@harness.needs_root("needs root to run the daemon as another uid")
class UnprivilegedDaemon(IsolationTest):
    """The daemon as nobody (a user service): unprivileged user namespaces."""
    daemon_uid = NOBODY
    test_a_home_readonly_symlink_to_a_hidden_path_shows_nothing = None  # nobody has no home


class HostSandboxAndSpecs(unittest.TestCase):
    """The same "ask" verdict on the host (isolation "none") is settled like any other: with no
    approver it does not run. And what a spec may say."""

    def test_ask_on_the_host_is_not_run(self):
        d = Daemon()
        try:
            c = d.client()
            host = c.call("sandbox.create", {"backend": "local", "local": {"isolation": "none"}})
            self.assertEqual(host["isolation"], "none")
            self.assertTrue(host["host_access"])
            r = c.request("exec", {"sandbox": host["id"], "command": "chmod 777 /nonexistent-x"})
            self.assertIn("error", r, r)
            self.assertEqual(r["error"]["code"], -32001, r)
            # Specs: unknown values and fields are refused; the host's network needs a rule.
            for spec, code, param in (({"isolation": "bogus"}, -32602, "local.isolation"),
                                      ({"isolation": "namespaces", "x": 1}, -32602, "local.x"),
                                      ({"isolation": 1}, -32602, "local.isolation")):
                with self.subTest(spec=spec):
                    r = c.request("sandbox.create", {"backend": "local", "local": spec})
                    self.assertEqual(r["error"]["code"], code, r)
                    self.assertEqual(r["error"]["data"]["param"], param, r)
            r = c.request("sandbox.create", dict(ISO, network="host"))
            self.assertEqual(r["error"]["code"], -32001, r)
            self.assertIn("container.host-ns", json.dumps(r["error"]["data"]))
            c.close()
        finally:
            d.stop()


    def test_writable_paths_on_a_place_of_the_sandbox_fail_start_up(self):
        # An operator's writable path is bound like a workdir: /run would give every sandbox
        # the host's sockets. Refused as written at start-up (and where it leads at create).
        d = tempfile.mkdtemp(prefix="sbxiso-cfg-")
        self.addCleanup(shutil.rmtree, d, True)
        for path in ("/run", "/var", "/dev/shm/"):
            with self.subTest(path=path):
                conf = os.path.join(d, "bad.conf")
                with open(conf, "w") as f:
                    f.write("[backend.local]\nwritable_paths = /srv/cache, %s\n" % path)
                r = subprocess.run([harness.SANDBOXD, "--config", conf, "--socket",
                                    os.path.join(d, "s.sock"), "--state-dir",
                                    os.path.join(d, "state")],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("writable_paths: '%s'" % path, r.stderr)
                self.assertIn("remove it from [backend.local] writable_paths", r.stderr)


@harness.needs_root("needs root: cgroups are made by a root daemon")
class Limits(unittest.TestCase):
    """The sandbox's PID 1 joins its cgroup: limits hold for everything in it, and the OOM
    killer's victim is reported while the sandbox lives on."""

    def test_memory_and_pids(self):
        d = Daemon()
        try:
            c = d.client()
            sb = c.call("sandbox.create", dict(ISO, resources={"memory_mb": 64, "pids": 50}))
            if sb["enforced"].get("memory_mb") != "cgroup":
                self.fail("memory is not enforced by a cgroup here (%r); run as root on a "
                          "machine with the memory controller" % sb["enforced"])
            r = c.call("exec", {"sandbox": sb["id"], "argv": [
                "/usr/bin/python3", "-c", "x = bytearray(300 << 20)"]})
            self.assertTrue(r["oom_killed"], r)
            # A shell's child killed: the shell exits 137, the exec still says why.
            r = c.call("exec", {"sandbox": sb["id"], "command":
                                "head -c 400000000 /dev/zero | tail -c 300000000 >/dev/null"})
            self.assertTrue(r["oom_killed"], r)
            r = c.call("exec", {"sandbox": sb["id"], "command": "exit 137"})
            self.assertFalse(r["oom_killed"], r)
            r = c.call("exec", {"sandbox": sb["id"], "command":
                                "for i in $(seq 80); do sleep 5 & done; wait"})
            self.assertIn("fork", r["stderr"])
            self.assertEqual(c.call("exec", {"sandbox": sb["id"], "command": "echo alive"})
                             ["stdout"], "alive\n")
            c.close()
        finally:
            d.stop()


class Restart(unittest.TestCase):
    """Its processes end with the daemon; a restarted daemon makes the sandbox anew, says so,
    and keeps the workdir it made. A daemon that stops ends them as it ends host execs (TERM,
    then SIGKILL after kill_grace_ms) and records how; one that was killed could not, and the
    next one says they were lost."""

    def run_and_restart(self, stop):
        state = tempfile.mkdtemp(prefix="sbxiso-state-")
        self.addCleanup(shutil.rmtree, state, True)
        d = Daemon(state_dir=state)
        try:
            c = d.client()
            sb = c.call("sandbox.create", ISO)
            self.assertNotIn("sandbox_recreated", sb)
            secs = uniq_secs(302)
            bg = c.call("exec", {"sandbox": sb["id"], "command": "sleep " + secs,
                                 "background": True})
            c.call("exec", {"sandbox": sb["id"], "command": "echo kept > f"})
            c.close()
        finally:
            stop(d)
        self.assertEqual(subprocess.run(["pgrep", "-f", "sleep " + secs]).returncode, 1,
                         "a process of the sandbox outlived the daemon")
        d = Daemon(state_dir=state)
        try:
            c = d.client()
            got = c.call("sandbox.get", {"id": sb["id"]})
            self.assertTrue(got.get("sandbox_recreated"), got)
            self.assertEqual(got["isolation"], "namespaces")
            r = c.call("exec", {"sandbox": sb["id"], "command": "cat f; ps -e | wc -l"})
            self.assertEqual(r["stdout"].split()[0], "kept")
            r = c.call("process.wait", {"exec_id": bg["exec_id"], "timeout_ms": 1000})
            self.assertEqual(r["state"], "exited", r)
            c.close()
        finally:
            d.stop()
        return r

    def test_recreated_after_a_daemon_restart(self):
        r = self.run_and_restart(lambda d: d.stop())
        self.assertEqual((r["exit_code"], r["signal"]), (None, "SIGTERM"), r)
        self.assertNotIn("lost", r)

    def test_recreated_after_the_daemon_was_killed(self):
        def kill(d):
            d.proc.kill()
            d.proc.wait()
            d.stop(expect=-9)
        r = self.run_and_restart(kill)
        self.assertIn("made anew", r["lost"])


class Unavailable(unittest.TestCase):
    """Where the kernel refuses user namespaces (the daemon in a user namespace whose
    user.max_user_namespaces is 0), asking for an isolated
    sandbox fails with -32000 and a hint, and the default sandbox is never quietly unisolated
    unless the operator said so."""

    def daemon(self, config):
        wrap = os.path.join(self.dir, "sandboxd")
        with open(wrap, "w") as f:
            f.write("#!/bin/sh\nexec unshare -U -r sh -c 'echo 0 > "
                    "/proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' %s \"$@\"\n"
                    % harness.SANDBOXD)
        os.chmod(wrap, 0o755)
        saved, harness.SANDBOXD = harness.SANDBOXD, wrap
        try:
            return Daemon(config)
        finally:
            harness.SANDBOXD = saved

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sbxiso-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_create_fails_with_a_hint(self):
        d = self.daemon(None)  # the shipped default: namespaces, no fallback
        try:
            c = d.client()
            local = next(b for b in c.call("backend.list")["backends"] if b["name"] == "local")
            self.assertEqual(local["details"]["isolation"]["default"], "namespaces")
            self.assertIsNone(local["details"]["isolation"]["fallback"])
            ns = local["details"]["isolation"]["namespaces"]
            self.assertFalse(ns["available"])
            self.assertIn("user namespaces", ns["reason"])
            self.assertIn("hint", ns)
            for spec in (ISO, {"backend": "local"}):
                with self.subTest(spec=spec), self.assertRaises(RpcError) as cm:
                    c.call("sandbox.create", spec)
                self.assertEqual(cm.exception.code, -32000, cm.exception.message)
                self.assertIn("namespaces", cm.exception.message)
                self.assertIn("hint", cm.exception.data)
            # The default sandbox of an exec is refused the same way.
            err = c.request("exec", {"command": "true"}).get("error")
            self.assertEqual(err["code"], -32000, err)
            self.assertIn("hint", err["data"])
            c.close()
        finally:
            d.stop()

    def test_fallback_only_when_the_operator_says_so(self):
        d = self.daemon("[backend.local]\nisolation_fallback = none\n")
        try:
            c = d.client()
            self.assertEqual(c.call("sandbox.create", {"backend": "local"})["isolation"], "none")
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", ISO)  # asked for explicitly: never weaker
            self.assertEqual(cm.exception.code, -32000)
            c.close()
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
