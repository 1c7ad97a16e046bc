"""The local backend checks a caller's workdir as the caller in a helper process, off the
daemon's loop (docs/backends/local.md): a workdir on a mount that never answers (here a real
FUSE file system whose server takes every request and answers none) holds that one create
until [limits] file_timeout_s, never the daemon. Root daemon; the callers are nobody and
root."""
import ctypes
import os
import select
import signal
import struct
import tempfile
import time
import unittest

from harness import Daemon, needs_root
from test_identity import NOBODY
from test_isolation import ISO, client_as

FUSE_LOOKUP, FUSE_INIT = 1, 26
FUSE_IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid
MS_NOSUID, MS_NODEV, MS_NOEXEC, MNT_DETACH = 2, 4, 8, 2
LIBC = ctypes.CDLL(None, use_errno=True)


class HungMount:
    """A FUSE file system mounted on a fresh directory (or over an existing one, hiding what
    it holds) whose server (this object) completes the kernel's INIT and then answers nothing:
    every lookup below it waits, killably, until close() aborts the connection."""

    def __init__(self, uid, over=None):
        self.made = over is None
        self.dir = tempfile.mkdtemp(prefix="sbxhung-") if self.made else over
        os.chmod(self.dir, 0o755)
        self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        opts = "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other" % (self.fd, uid, uid)
        if LIBC.mount(b"sbxhung", self.dir.encode(), b"fuse.sbxhung",
                      MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.encode()) != 0:
            e = ctypes.get_errno()
            os.close(self.fd)
            if self.made:
                os.rmdir(self.dir)
            raise OSError(e, "mount -t fuse on %s: %s (is /dev/fuse usable here?)" %
                          (self.dir, os.strerror(e)))
        hdr = self.next_request()
        assert hdr[1] == FUSE_INIT, hdr
        # fuse_out_header, then fuse_init_out (protocol 7.31, no feature flags).
        body = struct.pack("<IIIIHHIIHHI7I", 7, 31, 0, 0, 0, 0, 4096, 0, 0, 0, 0, *[0] * 7)
        os.write(self.fd, struct.pack("<IiQ", 16 + len(body), 0, hdr[2]) + body)

    def next_request(self, timeout=60):
        """The next request's header (len, opcode, unique, nodeid, uid, gid, pid)."""
        if not select.select([self.fd], [], [], timeout)[0]:
            raise AssertionError("no FUSE request within %ss" % timeout)
        return FUSE_IN_HEADER.unpack_from(os.read(self.fd, 1 << 17))

    def close(self):
        fd, self.fd = self.fd, None
        os.close(fd)  # aborts the connection: whatever waits below fails (ENOTCONN)
        LIBC.umount2(self.dir.encode(), MNT_DETACH)
        if self.made:
            os.rmdir(self.dir)


def until(cond, why, timeout=30):
    """Waits for cond (polled); fails with why() after timeout s: the bound of a hang, not a
    measure of speed."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(why())
        select.select([], [], [], 0.05)


def alive(pid):
    """Whether pid runs (a zombie, killed and not reaped yet, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped between the open and the read
        return False


def killed(pid):
    """Whether pid has ended or has SIGKILL pending (it dies once its wait ends)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            st = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except FileNotFoundError:
        return True
    pending = int(st["SigPnd"], 16) | int(st["ShdPnd"], 16)
    return not alive(pid) or bool(pending & (1 << (signal.SIGKILL - 1)))


def nobody_daemon_and_mount(test, conf=""):
    """A root daemon nobody may use, with conf, and a hung mount of nobody's (both go with
    test's clean-up, the mount first)."""
    d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n" + conf)
    os.chmod(d.dir, 0o755)
    test.addCleanup(d.stop)
    mount = HungMount(NOBODY)
    test.addCleanup(lambda: mount.fd is None or mount.close())
    return d, mount


@needs_root("needs root to mount a FUSE file system and to act as a second uid")
class HungWorkdir(unittest.TestCase):
    # run.py -j: its FUSE mounts under /tmp never answer; a walk of /tmp (another class's
    # find, du, ls -l) would hang on them.
    run_alone = "mounts file systems that never answer"

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n"
                            "[limits]\nfile_timeout_s = 1\n")
        os.chmod(cls.daemon.dir, 0o755)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def hang(self, caller, isolation):
        uid = 0 if caller is None else caller
        mount = HungMount(uid)
        self.addCleanup(mount.close)
        wd = os.path.join(mount.dir, "work")
        c = client_as(self.daemon.socket, caller)
        other = client_as(self.daemon.socket, caller)
        self.addCleanup(c.close)
        self.addCleanup(other.close)
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": {"backend": "local", "workdir": wd,
                           "local": {"isolation": isolation}}})
        # The check of the workdir is waiting on the mount: asked by a helper running as the
        # caller, not by the daemon.
        req = mount.next_request()
        self.assertEqual((req[4], req[5]), (uid, uid), req)
        self.assertNotEqual(req[6], self.daemon.proc.pid, req)
        # Meanwhile the daemon answers everyone (the lookup is still unanswered).
        self.assertIn("local", [b["name"] for b in other.call(
            "backend.list", timeout=30)["backends"]])
        listed = other.call("sandbox.list", timeout=30)["sandboxes"]
        self.assertEqual([sb["state"] for sb in listed], ["creating"], listed)
        # The create fails once the bound is reached, naming the path.
        r = c.wait_response(1, timeout=60)
        self.assertEqual(r.get("error", {}).get("code"), -32005, r)
        msg = r["error"]["message"]
        self.assertIn("workdir '%s' did not answer" % wd, msg)
        self.assertIn("took longer than 1000 ms", msg)
        self.assertIn("file_timeout_s", msg)
        self.assertEqual(other.call("sandbox.list")["sandboxes"], [])

    def test_shutdown_while_a_check_hangs(self):
        # The helper is killed and the create dropped at once: the daemon neither waits for
        # the bound ([limits] file_timeout_s, 60 s by default here) nor answers into what it
        # has torn down already.
        d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        try:
            mount = HungMount(NOBODY)
            self.addCleanup(mount.close)
            c = client_as(d.socket, NOBODY)
            self.addCleanup(c.close)
            c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                    "params": {"backend": "local", "workdir": os.path.join(mount.dir, "w"),
                               "local": {"isolation": "none"}}})
            self.assertEqual(mount.next_request()[4], NOBODY)
        finally:
            d.stop(timeout=30)  # exit status 0, well before the bound

    def client_gone(self, isolation):
        # The default bound (60 s): the create would wait for it, were it not cancelled.
        d, mount = nobody_daemon_and_mount(self)
        c = client_as(d.socket, NOBODY)
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": {"backend": "local", "workdir": os.path.join(mount.dir, "w"),
                           "local": {"isolation": isolation}}})
        req = mount.next_request()  # the check, as nobody, is waiting on the mount
        helper = req[6]
        other = client_as(d.socket, NOBODY)
        self.addCleanup(other.close)
        [sb] = other.call("sandbox.list")["sandboxes"]
        self.assertEqual(sb["state"], "creating")
        c.close()  # mid-create
        # Well before the bound (the old daemon kept the create until then).
        until(lambda: "its client disconnected while it was being created: cancelling"
              in d.read_log(), d.read_log)
        # Nothing is left: no sandbox, no helper, no directory of it. The helper was killed;
        # a FUSE request its server has read holds it until answered or aborted.
        self.assertEqual(other.call("sandbox.list")["sandboxes"], [])
        self.assertTrue(killed(helper), "the helper (pid %d) was not killed" % helper)
        mount.close()
        until(lambda: not alive(helper), lambda: "helper %d still runs" % helper)
        self.assertFalse(os.path.exists(os.path.join(d.state, "sandboxes", sb["id"])),
                         os.listdir(os.path.join(d.state, "sandboxes")))

    def test_client_gone_while_the_namespaces_start(self):
        # The sandbox's set-up (its PID 1, as nobody) opens a writable path on the mount and
        # waits there: the create is past its checks, starting its namespaces.
        mount = HungMount(NOBODY)
        self.addCleanup(lambda: mount.fd is None or mount.close())
        d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n"
                   "[backend.local]\nwritable_paths = %s\n" % os.path.join(mount.dir, "w"))
        os.chmod(d.dir, 0o755)
        self.addCleanup(d.stop)
        c = client_as(d.socket, NOBODY)
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": {"backend": "local", "local": {"isolation": "namespaces"}}})
        pid1 = mount.next_request()[6]
        other = client_as(d.socket, NOBODY)
        self.addCleanup(other.close)
        [sb] = other.call("sandbox.list")["sandboxes"]
        state = os.path.join(d.state, "sandboxes", sb["id"])
        self.assertTrue(os.path.isdir(os.path.join(state, "work")))  # made for it
        c.close()
        until(lambda: not other.call("sandbox.list")["sandboxes"], d.read_log)
        self.assertIn("its client disconnected while it was being created: cancelling",
                      d.read_log())
        # Its set-up was killed and the workdir made for it removed before the create ended.
        self.assertFalse(os.path.exists(state), [(r, ds, fs) for r, ds, fs in os.walk(state)])
        self.assertTrue(killed(pid1), "the sandbox's PID 1 (%d) was not killed" % pid1)
        mount.close()
        until(lambda: not alive(pid1), lambda: "the sandbox's PID 1 %d still runs" % pid1)

    def test_client_gone_during_the_check_on_the_host(self):
        self.client_gone("none")

    def test_client_gone_during_the_check_isolated(self):
        self.client_gone("namespaces")

    def test_nobody_on_the_host(self):
        self.hang(NOBODY, "none")

    def test_nobody_isolated(self):
        self.hang(NOBODY, "namespaces")

    def test_root_on_the_host(self):
        self.hang(None, "none")


@needs_root("a root daemon whose client is nobody")
class DestroyLeavesNothing(unittest.TestCase):
    """sandbox.destroy removes what the daemon made for the sandbox (its state directory, the
    workdir made for an isolated one) before it answers, and the caller's own content goes as
    the caller: a link planted in the workdir is removed, never what it points at."""

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(cls.d.dir, 0o755)
        cls.c = client_as(cls.d.socket, NOBODY)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.stop()

    def cycle(self, isolation, command):
        victim = os.path.join(self.d.dir, "victim-" + isolation)
        with open(victim, "w") as f:
            f.write("root's\n")
        os.chmod(victim, 0o644)
        sandboxes = os.path.join(self.d.state, "sandboxes")
        for _ in range(3):
            sb = self.c.call("sandbox.create", {"backend": "local",
                                                "local": {"isolation": isolation}})
            r = self.c.call("exec", {"sandbox": sb["id"], "command": command % victim})
            self.assertEqual(r["exit_code"], 0, r)
            self.assertEqual(self.c.call("sandbox.destroy", {"id": sb["id"]})["destroyed"], True)
            self.assertEqual(os.listdir(sandboxes), [], self.d.read_log())
        with open(victim) as f:
            self.assertEqual(f.read(), "root's\n")

    def test_isolated(self):
        # Its workdir (<state>/sandboxes/<id>/work, nobody's) with a file, a directory and
        # links to a root-owned file and to the directory holding it.
        self.cycle("namespaces", "echo x > f && mkdir -p d/e && ln -s %s l && ln -s / r")

    def test_on_the_host(self):
        self.cycle("none", "true %s")


def children_of(pid, uid=None):
    """The pids of pid's children (running as uid, when given)."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/status" % d) as f:
                st = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue
        if int(st["PPid"]) == pid and uid in (None, int(st["Uid"].split()[0])):
            found.append(int(d))
    return set(found)


def lookups(mount, k, n):
    """policy.check params naming n host paths below mount (request k's own)."""
    vols = " ".join("-v %s/p%d_%d:/x%d" % (mount.dir, k, i, i) for i in range(n))
    return {"command": "docker run --rm %s alpine true" % vols}


@needs_root("needs root to mount FUSE and to act as a second uid")
class HungHostPaths(unittest.TestCase):
    """A host path a client names (a bind source, `docker run -v SRC:…` in a command) below a
    mount that never answers: resolved as the caller by a helper, never on the daemon's loop;
    the request fails after [limits] file_timeout_s naming the path, and meanwhile the daemon
    answers everyone (the old daemon resolved it with realpath() on its loop and hung)."""
    # run.py -j: like HungWorkdir's, its FUSE mounts under /tmp never answer.
    run_alone = "mounts file systems that never answer"

    @classmethod
    def setUpClass(cls):
        from test_docker import config, require_docker, stop_removing_containers
        require_docker()
        cls.daemon = Daemon(config() + "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n"
                            "[limits]\nfile_timeout_s = 1\nmax_path_lookups_per_uid = 8\n")
        cls.stop_containers = stop_removing_containers
        os.chmod(cls.daemon.dir, 0o755)

    @classmethod
    def tearDownClass(cls):
        cls.stop_containers(cls.daemon)

    def hang(self, caller, params, method="sandbox.create"):
        """Sends method as caller (None: root) with a path below a fresh hung mount (params
        takes it); returns the path and the error the request ended with."""
        uid = 0 if caller is None else caller
        mount = HungMount(uid)
        self.addCleanup(mount.close)
        path = os.path.join(mount.dir, "w")
        c = client_as(self.daemon.socket, caller)
        other = client_as(self.daemon.socket, None if caller else NOBODY)  # another uid
        self.addCleanup(c.close)
        self.addCleanup(other.close)
        c.send({"jsonrpc": "2.0", "id": 1, "method": method, "params": params(path)})
        # The lookup waits on the mount: asked by a helper running as the caller.
        req = mount.next_request()
        self.assertEqual((req[4], req[5]), (uid, uid), req)
        self.assertNotEqual(req[6], self.daemon.proc.pid, req)
        # Meanwhile the daemon answers everyone (the lookup is still unanswered).
        self.assertIn("version", other.call("daemon.info", timeout=30))
        self.assertIsInstance(other.call("sandbox.list", timeout=30)["sandboxes"], list)
        r = c.wait_response(1, timeout=60)
        self.assertEqual(r.get("error", {}).get("code"), -32005, r)
        msg = r["error"]["message"]
        self.assertIn("host path '%s' did not answer within 1 s: a hung mount? name another "
                      "path" % path, msg)
        self.assertIn("file_timeout_s", msg)
        return path, c

    def test_docker_bind_source(self):
        path, c = self.hang(None, lambda p: {
            "backend": "docker", "mounts": [{"type": "bind", "source": p, "target": "/x"}]})
        self.assertEqual(c.call("sandbox.list")["sandboxes"], [])

    def test_docker_host_config_binds(self):
        self.hang(None, lambda p: {"backend": "docker",
                                   "docker": {"host_config": {"Binds": [p + ":/x:ro"]}}})

    def test_policy_check_of_a_spec(self):
        self.hang(None, lambda p: {"sandbox": {
            "backend": "docker", "mounts": [{"type": "bind", "source": p, "target": "/x"}]}},
            method="policy.check")

    def test_policy_check_of_a_command_as_nobody(self):
        self.hang(NOBODY, lambda p: {"command": "docker run --rm -v %s:/x alpine true" % p},
                  method="policy.check")

    def stop_while_it_hangs(self, caller, method, params):
        """The daemon stops while a path of method's request hangs: the helper is killed and
        the request fails at once, answered before the connection closes; the daemon waits
        neither for the bound (60 s by default here) nor answers into what it tore down."""
        from test_docker import config
        d = Daemon(config() + "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n")
        os.chmod(d.dir, 0o755)
        uid = 0 if caller is None else caller
        mount = HungMount(uid)
        self.addCleanup(mount.close)
        try:
            c = client_as(d.socket, caller)
            self.addCleanup(c.close)
            c.send({"jsonrpc": "2.0", "id": 1, "method": method,
                    "params": params(os.path.join(mount.dir, "w"))})
            self.assertEqual(mount.next_request()[4], uid)
        finally:
            d.stop(timeout=30)  # exit status 0, well before the bound
        r = c.wait_response(1, timeout=30)
        self.assertIn("the daemon is stopping", r.get("error", {}).get("message", ""), r)

    def test_stop_while_a_create_hangs(self):
        self.stop_while_it_hangs(None, "sandbox.create", lambda p: {
            "backend": "docker", "mounts": [{"type": "bind", "source": p, "target": "/x"}]})

    def test_stop_while_an_exec_hangs(self):
        self.stop_while_it_hangs(NOBODY, "exec", lambda p: {
            "command": "docker run --rm -v %s:/x alpine true" % p})

    def test_lookups_in_flight_per_uid(self):
        """Each lookup is a helper process of the caller for up to file_timeout_s: one uid has
        at most [limits] max_path_lookups_per_uid (8 here) in flight however many requests
        name hung paths (before, each request added its own: requests naming hung paths could
        fill the host's pid table); past it, -32004 {limit, value} as for the other limits."""
        mount = HungMount(NOBODY)
        self.addCleanup(mount.close)
        c = client_as(self.daemon.socket, NOBODY)
        self.addCleanup(c.close)
        c.send({"jsonrpc": "2.0", "id": 1, "method": "policy.check",
                "params": lookups(mount, 1, 5)})
        mount.next_request()  # the first request's 5 lookups wait on the mount
        c.send({"jsonrpc": "2.0", "id": 2, "method": "policy.check",
                "params": lookups(mount, 2, 4)})
        r = c.wait_response(2, timeout=30)  # at once, not after the bound
        self.assertEqual(r.get("error", {}).get("code"), -32004, r)
        self.assertEqual(r["error"].get("data"),
                         {"limit": "max_path_lookups_per_uid", "value": 8}, r)
        self.assertIn("5 host path lookups of uid %d are in flight and this request names "
                      "4 more; at most 8 at a time ([limits] max_path_lookups_per_uid)" % NOBODY,
                      r["error"]["message"])
        self.assertIn("did not answer", c.wait_response(1, timeout=60)["error"]["message"])
        # once they ended, lookups are possible again
        c.send({"jsonrpc": "2.0", "id": 3, "method": "policy.check",
                "params": lookups(mount, 3, 8)})
        self.assertIn("did not answer", c.wait_response(3, timeout=60)["error"]["message"])

    def test_host_paths_per_request(self):
        """A request naming more than 64 host paths is refused at once, nothing looked up."""
        c = client_as(self.daemon.socket, NOBODY)
        self.addCleanup(c.close)
        r = c.request("policy.check", {"command": "docker run --rm %s alpine true" % " ".join(
            "-v /nonexistent/p%d:/x%d" % (i, i) for i in range(65))})
        self.assertEqual(r.get("error", {}).get("code"), -32004, r)
        self.assertEqual(r["error"].get("data"), {"limit": "host_paths_per_request", "value": 64})
        self.assertIn("the request names 65 host paths; at most 64", r["error"]["message"])

    def test_client_gone_mid_lookup(self):
        """A client that disconnects while its lookups wait: their helpers are killed at once
        and their slots are free at once (before, each lived until file_timeout_s, 60 s by
        default here, holding one of the uid's slots: the next request was refused)."""
        d, mount = nobody_daemon_and_mount(self, "[limits]\nmax_path_lookups_per_uid = 8\n")
        a = client_as(d.socket, NOBODY)
        a.send({"jsonrpc": "2.0", "id": 1, "method": "policy.check",
                "params": lookups(mount, 1, 8)})
        self.assertEqual(mount.next_request()[4], NOBODY)
        until(lambda: len(children_of(d.proc.pid, NOBODY)) >= 8,
              lambda: "helpers: %s" % children_of(d.proc.pid, NOBODY))
        helpers = children_of(d.proc.pid, NOBODY)
        other = client_as(d.socket, None)  # another uid, answered meanwhile
        self.addCleanup(other.close)
        self.assertIn("version", other.call("daemon.info", timeout=30))
        self.assertIsInstance(other.call("sandbox.list", timeout=30)["sandboxes"], list)
        a.close()
        until(lambda: all(killed(h) for h in helpers),
              lambda: "not killed: %s" % [h for h in helpers if not killed(h)])
        # Their slots are free: the uid's next 8 lookups start (and wait on the mount).
        b = client_as(d.socket, NOBODY)
        self.addCleanup(b.close)
        b.send({"jsonrpc": "2.0", "id": 2, "method": "policy.check",
                "params": lookups(mount, 2, 8)})
        def refused():  # (for the message: what came instead)
            try:
                return b.wait_response(2, timeout=0.1)
            except TimeoutError:
                return "no answer"
        until(lambda: len(children_of(d.proc.pid, NOBODY) - helpers) >= 8,
              lambda: "new helpers: %s; instead: %s" % (
                  children_of(d.proc.pid, NOBODY) - helpers, refused()))
        mount.close()  # the mount answers (ENOTCONN): the paths are judged unreachable
        r = b.wait_response(2, timeout=30)
        self.assertIn("verdict", r.get("result", {}), r)
        self.assertIn("version", other.call("daemon.info", timeout=30))

    def test_helpers_alive_per_uid(self):
        """A helper whose lookup a mount took and never answered outlives its SIGKILL, so the
        slots freed at disconnect do not bound processes: one uid has at most [limits]
        max_helpers_per_uid (5 here) alive, counted until each has exited; past it, -32004
        {limit, value} at once while root is answered (before, each round left 2 more: one uid
        could fill the host's pid table). The bound is one above the 4 stuck ones: a helper of
        an earlier request may still be exiting when a lookup starts (seen under ASan)."""
        d, first = nobody_daemon_and_mount(
            self, "[limits]\nmax_path_lookups_per_uid = 2\nmax_helpers_per_uid = 5\n")
        mounts = [first]
        for _ in range(3):  # one lookup each: FUSE takes one at a time per directory
            mounts.append(HungMount(NOBODY))
            self.addCleanup(lambda m=mounts[-1]: m.fd is None or m.close())
        stuck = set()
        for k, pair in ((1, mounts[:2]), (2, mounts[2:])):  # 2 lookups taken, the client gone
            a = client_as(d.socket, NOBODY)
            vols = " ".join("-v %s/p%d:/x%d" % (m.dir, k, i) for i, m in enumerate(pair))
            a.send({"jsonrpc": "2.0", "id": k, "method": "policy.check",
                    "params": {"command": "docker run --rm %s alpine true" % vols}})
            for m in pair:
                self.assertEqual(m.next_request()[1], FUSE_LOOKUP)
            # the two taken by the mounts stay; a helper of the request's that answered at
            # once may still be exiting (seen under ASan)
            until(lambda: len(children_of(d.proc.pid, NOBODY) - stuck) == 2,
                  lambda: "helpers: %s" % (children_of(d.proc.pid, NOBODY) - stuck))
            helpers = children_of(d.proc.pid, NOBODY) - stuck
            a.close()
            until(lambda: all(killed(h) for h in helpers),
                  lambda: "not killed: %s" % [h for h in helpers if not killed(h)])
            stuck |= helpers
        self.assertTrue(all(alive(h) for h in stuck), stuck)  # killed, still there
        c = client_as(d.socket, NOBODY)
        self.addCleanup(c.close)
        # Two paths that answer at once: the first may start a fifth helper, the second
        # (or both) meets the bound, and the request fails with it.
        r = c.request("policy.check", {"command": "docker run --rm -v /nonexistent/a:/x "
                                       "-v /nonexistent/b:/y alpine true"}, timeout=30)
        self.assertEqual(r.get("error", {}).get("code"), -32004, r)
        self.assertEqual(r["error"].get("data"), {"limit": "max_helpers_per_uid", "value": 5})
        self.assertIn("uid %d has 5 helpers stuck in the filesystem (a hung mount?): unmount it "
                      "or wait for it to answer; at most 5 at a time ([limits] "
                      "max_helpers_per_uid)" % NOBODY, r["error"]["message"])
        until(lambda: children_of(d.proc.pid, NOBODY) == stuck,
              lambda: "more than the stuck ones: %s" % (children_of(d.proc.pid, NOBODY) - stuck))
        root = client_as(d.socket, None)  # another uid: its own count
        self.addCleanup(root.close)
        r = root.request("policy.check", {"command": "docker run --rm -v /nonexistent/r:/x "
                                          "-v %s:/y alpine true" % d.dir}, timeout=30)
        self.assertIn("verdict", r.get("result", {}), r)
        for m in mounts:  # the mounts abort: the stuck helpers exit, nobody's count with them
            m.close()
        until(lambda: not any(alive(h) for h in stuck),
              lambda: "alive: %s" % [h for h in stuck if alive(h)])
        r = c.request("policy.check", lookups(first, 5, 2), timeout=30)
        self.assertIn("verdict", r.get("result", {}), r)

    def test_recreate_resolves_its_binds_off_the_loop(self):
        """A sandbox whose container vanished is judged again before it is recreated, its
        bind sources resolved as its owner like a create's: the new container binds them
        (before, the recreate was judged with realpath() on the loop and the backend then
        refused the bind as never resolved), and a source below a mount that stopped
        answering fails the exec that asked with -32005 while the daemon answers everyone."""
        from test_docker import docker
        top = tempfile.mkdtemp(prefix="sbxrec-")
        self.addCleanup(os.rmdir, top)
        os.mkdir(os.path.join(top, "w"))
        self.addCleanup(os.rmdir, os.path.join(top, "w"))
        c = self.daemon.client(on_request=lambda m: {"decision": "once"})
        self.addCleanup(c.close)
        sb = c.call("sandbox.create", {"backend": "docker", "name": "rec-binds", "mounts": [
            {"type": "bind", "source": top + "/w", "target": "/w"}]}, timeout=120)
        exec_ = {"jsonrpc": "2.0", "id": "x", "method": "exec",
                 "params": {"sandbox": sb["id"], "command": "test -d /w && echo bound"}}

        def vanish():
            cid = c.call("sandbox.get", {"id": sb["id"]})["details"]["container_id"]
            docker("rm", "-f", cid)
        vanish()
        c.send(exec_)
        r = c.wait_response("x", timeout=120)  # recreated, with its bind
        self.assertEqual(r.get("result", {}).get("stdout"), "bound\n", r)
        self.assertTrue(r["result"].get("sandbox_recreated"), r)
        vanish()
        mount = HungMount(0, over=top)  # from now on the source answers nothing
        self.addCleanup(mount.close)
        c.send(exec_)
        req = mount.next_request()
        self.assertNotEqual(req[6], self.daemon.proc.pid, req)
        other = client_as(self.daemon.socket, NOBODY)
        self.addCleanup(other.close)
        self.assertIn("version", other.call("daemon.info", timeout=30))
        self.assertIsInstance(other.call("sandbox.list", timeout=30)["sandboxes"], list)
        r = c.wait_response("x", timeout=60)
        self.assertEqual(r.get("error", {}).get("code"), -32005, r)
        self.assertIn("host path '%s/w' did not answer within 1 s" % top, r["error"]["message"])
        # not recreated: the sandbox is gone, as after any recreate that fails
        self.assertNotIn(sb["id"], [s["id"] for s in c.call("sandbox.list")["sandboxes"]])

    def test_exec_of_a_command_as_nobody(self):
        # (its default sandbox is made first: local, whose checks do not touch the path)
        self.hang(NOBODY, lambda p: {"command": "docker run --rm -v %s:/x alpine true" % p},
                  method="exec")


def exe_name(pid):
    """The name of pid's program ("" once it is gone)."""
    try:
        return os.path.basename(os.readlink("/proc/%d/exe" % pid))
    except OSError:
        return ""


class AgentDiesWithExecsWaiting(unittest.TestCase):
    """The PID 1 of an isolated sandbox (its sandboxd-agent) dies while execs wait for its
    answer: they fail as "the local sandbox is gone", and the daemon recreates the sandbox
    for them from inside the sandbox's own end. It used to free that sandbox's namespaces
    there while their reaping still used them (a use-after-free and a double free: SIGSEGV,
    the daemon down for everyone); now the execs run in the new sandbox."""

    def setUp(self):
        self.d = Daemon()
        self.addCleanup(self.d.stop)  # expects exit 0: a crashed daemon fails here
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def agent(self):
        """The sandbox's PID 1: the child of the daemon's sandboxd-nsbox child."""
        nsbox = [p for p in children_of(self.d.proc.pid) if exe_name(p) == "sandboxd-nsbox"]
        self.assertEqual(len(nsbox), 1, nsbox)
        pid1 = children_of(nsbox[0])
        self.assertEqual(len(pid1), 1, pid1)
        return pid1.pop()

    def test_execs_run_in_the_recreated_sandbox(self):
        sb = self.c.call("sandbox.create", ISO)
        agent = self.agent()
        os.kill(agent, signal.SIGSTOP)  # it reads no START: the execs wait for its answer
        ids = [self.c.call("exec", {"sandbox": sb["id"], "command": "echo ran %d" % i,
                                    "background": True})["exec_id"] for i in range(3)]
        os.kill(agent, signal.SIGKILL)
        for i, x in enumerate(ids):
            r = self.c.call("process.wait", {"exec_id": x, "timeout_ms": 30000})
            self.assertEqual((r["state"], r["exit_code"]), ("exited", 0),
                             (r, self.d.read_log()))
            r = self.c.call("process.read", {"exec_id": x})
            self.assertEqual(r["data"], "ran %d\n" % i, r)
        self.assertNotEqual(self.agent(), agent)
        self.assertIn("recreating it", self.d.read_log())


if __name__ == "__main__":
    unittest.main()
