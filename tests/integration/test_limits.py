"""Bounded memory with a client that never reads; shutdown with running processes."""
import os
import subprocess
import time
import unittest

from harness import Daemon, DaemonTest, uniq_secs


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class SlowReader(DaemonTest):
    def test_reader_that_never_reads_keeps_memory_bounded(self):
        stuck = self.daemon.client()
        stuck.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                    "params": {"command": "head -c 1073741824 /dev/zero | tr '\\0' a",
                               "tag": "gigabyte", "timeout_s": 600}})
        # Watch from a second connection until the writer stalls behind the full buffer.
        last, stalled_for, eid = -1, 0, None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stalled_for < 5:
            procs = self.c.call("process.list", {"state": "running"})["processes"]
            mine = [p for p in procs if p.get("tag") == "gigabyte"]
            if mine:
                eid = mine[0]["exec_id"]
                n = mine[0]["stdout_bytes"]
                stalled_for = stalled_for + 1 if n == last else 0
                last = n
            time.sleep(0.2)
        self.assertIsNotNone(eid, "the exec did not start")
        self.assertEqual(stalled_for, 5, "the writer never stalled (%d bytes)" % last)
        self.assertLess(last, 256 << 20, "output must stop while nobody reads")
        rss = rss_kib(self.daemon.proc.pid)
        self.assertLess(rss, 64 * 1024, "daemon RSS %d KiB with an unread 1 GiB stream" % rss)
        self.c.call("process.kill", {"exec_id": eid, "grace_ms": 200})
        stuck.close()
        # The reader that held the output back is gone: the rest goes to the spool and the
        # exit comes (through an isolated sandbox's agent too, whose exit follows its output).
        r = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 60000})
        self.assertEqual(r["state"], "exited", r)


class Shutdown(unittest.TestCase):
    def test_sigterm_kills_trees_and_exits_zero(self):
        d = Daemon()
        c = d.client()
        t = [uniq_secs(n) for n in (301, 302, 303)]
        c.call("exec", {"command": "sleep " + t[0], "background": True})
        c.send({"jsonrpc": "2.0", "id": 50, "method": "exec",
                "params": {"command": "sleep %s & sleep %s" % (t[1], t[2]), "timeout_s": 600}})
        time.sleep(0.3)
        log = None
        d.proc.send_signal(15)
        got_stopping = False
        try:
            while True:
                m = c.read(timeout=20)
                if m.get("method") == "daemon.stopping":
                    got_stopping = True
        except (ConnectionError, TimeoutError):
            pass
        log = d.stop(expect=0)
        self.assertTrue(got_stopping, "clients are told the daemon is stopping")
        left = subprocess.run(["pgrep", "-f", "sleep (%s)" % "|".join(t)], capture_output=True, text=True)
        self.assertEqual(left.stdout, "", "processes left behind:\n" + log)
        self.assertTrue(any("STOPPING=1" in n for n in d.notifications))


class Reload(unittest.TestCase):
    def test_bad_config_on_reload_keeps_the_old_one(self):
        d = Daemon("[exec]\ndefault_timeout_s = 1\n")
        try:
            c = d.client()
            r = c.call("exec", {"command": "sleep 5"})
            self.assertTrue(r["timed_out"])
            with open(d.config, "w") as f:
                f.write("[exec]\ndefault_timeout_s = soon\n")
            d.proc.send_signal(1)
            d.wait_notify("RELOADING=1")
            st = d.wait_notify("reload failed")
            self.assertIn("default_timeout_s", st)
            r = c.call("exec", {"command": "sleep 5"})
            self.assertTrue(r["timed_out"], "old configuration kept")
            with open(d.config, "w") as f:
                f.write("[exec]\ndefault_timeout_s = 30\n")
            n = len(d.notifications)
            d.proc.send_signal(1)
            d.wait_notify("configuration reloaded" if False else "READY=1", 10)
            deadline = time.monotonic() + 10
            while not any("READY=1" in x for x in d.notifications[n:]):
                d.wait_notify("READY=1", 1)
                if time.monotonic() > deadline:
                    break
            r = c.call("exec", {"command": "sleep 2"})
            self.assertFalse(r["timed_out"])
            c.close()
        finally:
            d.stop()
