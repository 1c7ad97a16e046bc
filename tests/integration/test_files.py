"""file.write / file.read: judged like the shell commands that do the same, on the path they
really open (symlinks resolved as the caller), never blocking the daemon, and audited."""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from harness import DaemonTest, RpcError
from test_approval import Answers, audit_records
from test_identity import NOBODY, NobodyTest, as_nobody


def tmpdir(test, mode=0o755):
    d = tempfile.mkdtemp(prefix="sbxfile-")
    os.chmod(d, mode)
    test.addCleanup(shutil.rmtree, d, True)
    return d


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


# FilePolicy and FileLimits are about file operations on the host's own paths (temporary
# directories, startup files, the daemon's state) as a host sandbox judges them, so their
# daemons default to isolation "none"; file ops inside an isolated sandbox's view are
# test_isolation.py's.
HOST = "[backend.local]\nisolation = none\n"


class FilePolicy(DaemonTest):
    config = HOST + "[policy]\napproval_timeout_s = 60\n[limits]\nfile_timeout_s = 1\n"

    def client(self, *answers):
        a = Answers(*answers)
        c = self.daemon.client(on_request=a)
        self.addCleanup(c.close)
        return c, a

    def denied(self, c, method, params):
        with self.assertRaises(RpcError) as cm:
            c.call(method, params)
        self.assertEqual(cm.exception.code, -32001, cm.exception.message)
        return cm.exception.data

    def refused(self, method, params, *words):
        c, a = self.client({"decision": "once"})
        with self.assertRaises(RpcError) as cm:
            c.call(method, params)
        self.assertEqual(cm.exception.code, -32602, cm.exception.message)
        for w in words:
            self.assertIn(w, cm.exception.message)
        self.assertEqual(a.requests, [], "nobody is asked about what is refused anyway")
        return cm.exception

    def test_startup_file_asks_and_deny_writes_nothing(self):
        d = tmpdir(self)
        c, a = self.client({"decision": "deny"})
        data = self.denied(c, "file.write", {"path": d + "/.bashrc", "data": "evil\n"})
        self.assertEqual(data["resolution"], "user")
        self.assertEqual([f["rule"] for f in data["findings"]], ["write.startup"])
        self.assertFalse(os.path.exists(d + "/.bashrc"))
        p = a.requests[0]
        self.assertEqual((p["kind"], p["op"], p["path"]), ("file", "write", d + "/.bashrc"))
        self.assertNotIn("resolved_path", p)

    def test_approved_once_writes(self):
        d = tmpdir(self)
        c, a = self.client({"decision": "once"})
        r = c.call("file.write", {"path": d + "/.bashrc", "data": "alias ll='ls -l'\n"})
        self.assertEqual(r["bytes"], len("alias ll='ls -l'\n"))
        self.assertEqual(read(d + "/.bashrc"), "alias ll='ls -l'\n")
        self.assertEqual(len(a.requests), 1)

    def test_write_through_symlink_judges_the_target(self):
        d = tmpdir(self)
        write(d + "/.profile", "orig\n")
        os.symlink(d + "/.profile", d + "/notes.txt")
        c, a = self.client({"decision": "deny"})
        data = self.denied(c, "file.write", {"path": d + "/notes.txt", "data": "evil\n"})
        self.assertIn("write.startup", [f["rule"] for f in data["findings"]])
        self.assertEqual(a.requests[0]["resolved_path"], d + "/.profile")
        self.assertEqual(read(d + "/.profile"), "orig\n")

    def test_read_through_symlink_of_a_key(self):
        d = tmpdir(self)
        os.mkdir(d + "/.ssh")
        write(d + "/.ssh/id_ed25519", "PRIVATE\n")
        os.symlink(d + "/.ssh/id_ed25519", d + "/paper.txt")
        c, a = self.client({"decision": "deny"})
        data = self.denied(c, "file.read", {"path": d + "/paper.txt"})
        self.assertEqual([f["rule"] for f in data["findings"]], ["read.credential"])
        self.assertEqual(a.requests[0]["op"], "read")

    def test_what_was_judged_is_what_is_written(self):
        # The symlink is swapped while the approval is pending: the write still goes to the
        # file that was shown and approved, not to the new target.
        d = tmpdir(self)
        write(d + "/.profile", "orig\n")
        write(d + "/other", "other\n")
        os.symlink(d + "/.profile", d + "/link")

        def swap(msg):
            os.unlink(d + "/link")
            os.symlink(d + "/other", d + "/link")
            return {"decision": "once"}

        c = self.daemon.client(on_request=swap)
        self.addCleanup(c.close)
        c.call("file.write", {"path": d + "/link", "data": "approved\n"})
        self.assertEqual(read(d + "/.profile"), "approved\n")
        self.assertEqual(read(d + "/other"), "other\n")

    def test_created_file_lands_in_the_judged_directory(self):
        # A symlink planted at the name being created is not followed (O_EXCL|O_NOFOLLOW).
        d = tmpdir(self)
        write(d + "/victim", "victim\n")

        def plant(msg):
            os.symlink(d + "/victim", d + "/.bashrc")
            return {"decision": "once"}

        c = self.daemon.client(on_request=plant)
        self.addCleanup(c.close)
        with self.assertRaises(RpcError) as cm:
            c.call("file.write", {"path": d + "/.bashrc", "data": "x\n"})
        self.assertIn("appeared while the request was being judged", cm.exception.message)
        self.assertEqual(read(d + "/victim"), "victim\n")

    def test_daemon_state_is_never_written(self):
        d = tmpdir(self)
        log = os.path.join(self.daemon.state, "audit", "audit.log")
        os.symlink(log, d + "/log")
        c, a = self.client({"decision": "once"})
        for path in (d + "/log", os.path.join(self.daemon.state, "approvals.json"),
                     os.path.join(self.daemon.state, "x", "y")):
            data = self.denied(c, "file.write", {"path": path, "data": "FORGED\n", "mkdir": True})
            self.assertEqual(data["resolution"], "policy", path)
            self.assertIn("floor.self-protect", [f["rule"] for f in data["findings"]])
        self.assertEqual(a.requests, [])
        self.assertNotIn("FORGED", read(log))
        self.assertFalse(os.path.exists(os.path.join(self.daemon.state, "x")))

    def test_mkdir_creates_nothing_before_the_verdict(self):
        d = tmpdir(self)
        c, a = self.client({"decision": "deny"})
        self.denied(c, "file.write", {"path": d + "/new/.ssh/authorized_keys", "data": "k\n",
                                      "mkdir": True})
        self.assertEqual(a.requests[0]["findings"][0]["rule"], "write.credential")
        self.assertFalse(os.path.exists(d + "/new"))

    def test_mode_and_hard_links(self):
        d = tmpdir(self)
        write(d + "/a", "a\n")
        os.link(d + "/a", d + "/b")
        c, a = self.client()
        rules = lambda data: [f["rule"] for f in data["findings"]]  # noqa: E731
        self.assertIn("write.hardlink", rules(self.denied(c, "file.write",
                                                          {"path": d + "/b", "data": "x"})))
        self.assertIn("perm.chmod", rules(self.denied(c, "file.write", {
            "path": d + "/tool", "data": "#!/bin/sh\n", "mode": 0o4755})))
        self.assertEqual(read(d + "/a"), "a\n")
        self.assertFalse(os.path.exists(d + "/tool"))

    def test_not_regular_files_are_refused_at_once(self):
        d = tmpdir(self)
        os.mkfifo(d + "/fifo")
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(d + "/sock")
        self.addCleanup(srv.close)
        # Today's FIFO write would block the daemon forever: it must answer, and at once.
        self.refused("file.write", {"path": d + "/fifo", "data": "x"}, "FIFO")
        self.refused("file.read", {"path": d + "/fifo"}, "FIFO")
        self.refused("file.write", {"path": d + "/sock", "data": "x"}, "socket")
        self.refused("file.read", {"path": "/dev/zero"}, "character device")
        self.refused("file.write", {"path": "/dev/null", "data": "x"}, "character device")
        self.refused("file.read", {"path": d}, "directory")
        os.symlink(d + "/nowhere", d + "/dangling")
        self.refused("file.write", {"path": d + "/dangling", "data": "x"}, "symbolic link")
        self.assertEqual(self.c.call("daemon.info")["pid"], self.daemon.proc.pid)

    def test_kernel_interfaces_are_refused(self):
        # /proc/self is the helper itself, a copy of the daemon: its memory and environment.
        self.refused("file.read", {"path": "/proc/self/environ"}, "proc")
        self.refused("file.read", {"path": "/proc/self/maps"}, "proc")
        self.refused("file.write", {"path": "/proc/self/comm", "data": "x"}, "proc")
        self.refused("file.read", {"path": "/sys/kernel/mm/transparent_hugepage/enabled"}, "sysfs")

    def test_lease_does_not_block(self):
        d = tmpdir(self)
        write(d + "/leased", "held\n")
        fd = os.open(d + "/leased", os.O_RDONLY)
        self.addCleanup(os.close, fd)
        # The kernel tells the lease holder (us) with SIGIO that someone wants the file.
        old = signal.signal(signal.SIGIO, signal.SIG_IGN)
        self.addCleanup(signal.signal, signal.SIGIO, old)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        # Opening it for writing would wait for the lease break (45 s by default).
        self.refused("file.write", {"path": d + "/leased", "data": "x"}, "lease")
        self.assertEqual(read(d + "/leased"), "held\n")

    def test_stuck_helper_times_out(self):
        # The helper is stopped while its op waits for approval; once approved it cannot go
        # on, and the op fails after file_timeout_s (1 s here) with the helper killed.
        d = tmpdir(self)
        stopped = []

        def stop_helper(msg):
            for pid in self.daemon_children():
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue  # an earlier helper, reaped since
                stopped.append(pid)
            return {"decision": "once"}

        c = self.daemon.client(on_request=stop_helper)
        self.addCleanup(c.close)
        with self.assertRaises(RpcError) as cm:
            c.call("file.write", {"path": d + "/.bashrc", "data": "x\n"})
        self.assertEqual(cm.exception.code, -32005, cm.exception.message)
        self.assertIn("file_timeout_s", cm.exception.message)
        self.assertEqual(len(stopped), 1)
        self.assertFalse(os.path.exists(d + "/.bashrc"))
        self.assertEqual(self.c.call("file.write", {"path": d + "/ok", "data": "1"})["bytes"], 1)

    def daemon_children(self):
        kids = []
        for e in os.listdir("/proc"):
            if e.isdigit():
                try:
                    st = read("/proc/%s/stat" % e)
                    cmdline = read("/proc/%s/cmdline" % e)
                except (OSError, ValueError):
                    continue
                state, ppid = st.rsplit(")", 1)[1].split()[:2]
                # a zombie is an earlier helper, killed and not reaped yet; one with no
                # cmdline has released its memory: an earlier helper in the middle of exiting
                if int(ppid) == self.daemon.proc.pid and state != "Z" and cmdline:
                    kids.append(int(e))
        return kids

    def test_audit_records_every_op_without_data(self):
        d = tmpdir(self)
        os.symlink(d + "/real.txt", d + "/alias.txt")
        write(d + "/real.txt", "")
        c, a = self.client()
        c.call("file.write", {"path": d + "/alias.txt", "data": "SECRET-CONTENT"})
        c.call("file.read", {"path": d + "/real.txt"})
        recs = [r for r in audit_records(self.daemon) if r.get("kind") == "file"]
        w = [r for r in recs if r["path"] == d + "/alias.txt"][-1]
        self.assertEqual((w["op"], w["resolved_path"], w["verdict"], w["allowed"]),
                         ("write", d + "/real.txt", "allow", True))
        self.assertTrue([r for r in recs if r["op"] == "read" and r["path"] == d + "/real.txt"])
        log = "".join(open(os.path.join(self.daemon.state, "audit", n)).read()
                      for n in os.listdir(os.path.join(self.daemon.state, "audit")))
        self.assertNotIn("SECRET-CONTENT", log)


class FileLimits(DaemonTest):
    config = HOST + "[limits]\nmax_processes_per_uid = 2\n[policy]\napproval_timeout_s = 60\n"

    def test_pending_ops_count_as_processes(self):
        # Each op in flight keeps a helper process: they are bounded. The three go in one
        # write, so the third is counted before the first two can end (a client slower than
        # the helpers, on a loaded machine, let them end first).
        d = tmpdir(self)
        self.c.send_raw(b"".join(json.dumps(
            {"jsonrpc": "2.0", "id": i, "method": "file.write",
             "params": {"path": "%s/%s" % (d, name), "data": "x"}}).encode() + b"\n"
            for i, name in ((1, ".bashrc"), (2, ".profile"), (3, ".zshrc"))))
        self.assertEqual(self.c.wait_response(3)["error"]["data"],
                         {"limit": "max_processes_per_uid", "value": 2})
        for i in (1, 2):  # asked, and a client without a role is denied (-32001)
            self.assertEqual(self.c.wait_response(i)["error"]["code"], -32001)
        self.assertEqual(self.c.call("file.write", {"path": d + "/ok", "data": "1"})["bytes"], 1)


class Attacker(NobodyTest):
    """A root daemon; the attacker is nobody, with only what it can reach itself."""

    def test_nobody_gets_nothing_of_root(self):
        d = tmpdir(self, 0o1777)
        os.chown(d, NOBODY, NOBODY)
        links = {"to-audit": os.path.join(self.daemon.state, "audit", "audit.log"),
                 "to-root": "/root/.bashrc", "to-shadow": "/etc/shadow"}
        for name, target in links.items():
            subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                            "--clear-groups", "ln", "-s", target, os.path.join(d, name)],
                           check=True)
        res = as_nobody(self.daemon.socket, [
            ["file.write", {"path": d + "/to-audit", "data": "FORGED"}],
            ["file.write", {"path": d + "/to-root", "data": "FORGED"}],
            ["file.read", {"path": d + "/to-shadow"}],
            ["file.read", {"path": "/proc/self/maps"}],
            ["file.read", {"path": "/proc/self/mem"}],
            ["file.write", {"path": "/etc/cron.d/nobody", "data": "* * * * * root id\n"}],
        ])
        codes = [r.get("error", {}).get("code") for r in res]
        # the daemon's state dir lies in root's 0700 temp dir: unreachable, and denied anyway
        self.assertIn(codes[0], (-32602, -32001))
        self.assertEqual(codes[1:6], [-32602] * 5, res)
        self.assertIn("proc", res[3]["error"]["message"])
        self.assertNotIn("FORGED", read(os.path.join(self.daemon.state, "audit", "audit.log")))
        self.assertFalse(os.path.exists("/etc/cron.d/nobody"))


if __name__ == "__main__":
    unittest.main()
