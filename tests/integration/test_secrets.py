"""The daemon's own secrets: backend credentials in its environment are erased once read, and
the process is non-dumpable, so a child cannot read them through /proc/$PPID/environ."""
import os
import unittest

from harness import Daemon, needs_root
from test_identity import NOBODY

SECRETS = {"DAYTONA_API_KEY": "sekrit-daytona-1", "MODAL_TOKEN_SECRET": "sekrit-modal-2",
           "ACME_SERVICE_TOKEN": "sekrit-acme-3"}
PEEK = "tr '\\0' '\\n' < /proc/$PPID/environ"


class SecretsTest(unittest.TestCase):
    uid = None
    config = None

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(cls.config, env=SECRETS, uid=cls.uid)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def setUp(self):
        self.c = self.daemon.client()
        self.addCleanup(self.c.close)

    def assertNoSecret(self, text):
        for v in SECRETS.values():
            self.assertNotIn(v, text)


@needs_root("the daemon as root")
class RootDaemon(SecretsTest):
    # A command on the host, where it sees the daemon's process (an isolated sandbox sees no
    # host process at all: test_isolation.py).
    config = "[backend.local]\nisolation = none\n"

    def test_child_reads_no_credentials(self):
        # Root may read any process's environ: only erasing the values protects them.
        r = self.c.call("exec", {"command": PEEK})
        self.assertEqual(r["exit_code"], 0, r["stderr"])
        self.assertIn("DAYTONA_API_KEY=", r["stdout"], "this is the daemon's environment")
        self.assertNoSecret(r["stdout"])
        with open("/proc/%d/environ" % self.daemon.proc.pid, "rb") as f:
            self.assertNoSecret(f.read().decode(errors="replace"))
        self.assertNoSecret(self.c.call("exec", {"argv": ["env"]})["stdout"])


@needs_root("needs root to run the daemon as another uid")
class UserDaemon(SecretsTest):
    """A user service: its commands run as its own uid, which could read a dumpable daemon.
    (The test connects as root, whose home the daemon cannot enter: execs use cwd /tmp.)"""
    uid = NOBODY

    def test_child_of_the_same_uid_cannot_look_inside(self):
        for f in ("environ", "maps", "mem"):
            with self.subTest(f=f):
                r = self.c.call("exec", {"command": "head -c 64 /proc/$PPID/%s" % f,
                                         "cwd": "/tmp"})
                self.assertNotEqual(r["exit_code"], 0, r["stdout"])
                self.assertIn("Permission denied", r["stderr"])
        # Commands themselves are ordinary processes again (the kernel resets it at exec).
        r = self.c.call("exec", {"command": "head -c 4 /proc/self/environ >/dev/null; id -u",
                                 "cwd": "/tmp"})
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "%d\n" % NOBODY), r["stderr"])


if __name__ == "__main__":
    unittest.main()
