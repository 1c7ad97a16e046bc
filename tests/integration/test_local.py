"""The local backend checks a caller's workdir as the caller in a helper process, off the
daemon's loop (docs/backends/local.md): a workdir on a mount that never answers (here a real
FUSE file system whose server takes every request and answers none) holds that one create
until [limits] file_timeout_s, never the daemon. Root daemon; the callers are nobody and
root."""
import ctypes
import os
import select
import struct
import tempfile
import unittest

from harness import Daemon, needs_root
from test_identity import NOBODY
from test_isolation import client_as

FUSE_INIT, FUSE_IN_HEADER = 26, struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid
MS_NOSUID, MS_NODEV, MS_NOEXEC, MNT_DETACH = 2, 4, 8, 2
LIBC = ctypes.CDLL(None, use_errno=True)


class HungMount:
    """A FUSE file system mounted on a fresh directory whose server (this object) completes
    the kernel's INIT and then answers nothing: every lookup below it waits, killably, until
    close() aborts the connection."""

    def __init__(self, uid):
        self.dir = tempfile.mkdtemp(prefix="sbxhung-")
        os.chmod(self.dir, 0o755)
        self.fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        opts = "fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other" % (self.fd, uid, uid)
        if LIBC.mount(b"sbxhung", self.dir.encode(), b"fuse.sbxhung",
                      MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.encode()) != 0:
            e = ctypes.get_errno()
            os.close(self.fd)
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
        os.close(self.fd)  # aborts the connection: whatever waits below fails (ENOTCONN)
        LIBC.umount2(self.dir.encode(), MNT_DETACH)
        os.rmdir(self.dir)


@needs_root("needs root to mount a FUSE file system and to act as a second uid")
class HungWorkdir(unittest.TestCase):
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

    def test_nobody_on_the_host(self):
        self.hang(NOBODY, "none")

    def test_nobody_isolated(self):
        self.hang(NOBODY, "namespaces")

    def test_root_on_the_host(self):
        self.hang(None, "none")


if __name__ == "__main__":
    unittest.main()
