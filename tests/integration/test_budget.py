"""Memory per uid is bounded across connections, half-sent lines included
(max_input_bytes_per_uid), and daemon.info shows an unprivileged caller only its own counts."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from harness import Client, DaemonTest, RpcError
from test_identity import NOBODY, NobodyTest, as_nobody

MIB = 1 << 20
CONFIG = "[limits]\nmax_message_bytes = 4M\nmax_input_bytes_per_uid = 10M\n"
HALF = b'{"jsonrpc":"2.0","id":7,"method":"policy.check","params":{"command":"' + b"a" * (3 * MIB)
REST = b'"}}\n'


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def sanitized(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def wait_for(cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def answered(c):
    """The id of the response to a whole message (policy.check refuses a 3 MiB command with
    -32602: what matters is that the message arrived whole, not -32004)."""
    msg = c.read()
    assert msg.get("error", {}).get("code") != -32004, msg
    return msg["id"]


class InputBudget(DaemonTest):
    config = CONFIG

    def held(self):
        return self.c.call("daemon.info")["input_bytes"]

    def half_sent(self, n):
        """n connections, each holding a 3 MiB unfinished line once the daemon has read it."""
        conns = []
        for _ in range(n):
            before = self.held()
            c = self.daemon.client()
            self.addCleanup(c.close)
            c.send_raw(HALF)
            wait_for(lambda: self.held() >= before + len(HALF),
                     "the daemon to read a half-sent line")
            conns.append(c)
        return conns

    def test_crossing_line_is_dropped_with_a_limit_error(self):
        c1, c2 = self.half_sent(2)
        c3 = self.daemon.client()
        self.addCleanup(c3.close)
        c3.send_raw(HALF)
        err = c3.read()["error"]
        self.assertEqual(err["code"], -32004)
        self.assertEqual(err["data"], {"limit": "max_input_bytes_per_uid", "value": 10 * MIB})
        self.assertIn("max_input_bytes_per_uid", err["message"])
        self.assertLessEqual(self.held(), 10 * MIB)
        # The rest of the dropped line is discarded; the connection goes on.
        c3.send_raw(b"b" * MIB + REST)
        self.assertEqual(c3.call("daemon.hello")["server"], "sandboxd")
        # The others finish their messages normally, which frees the budget.
        for c in (c1, c2):
            c.send_raw(REST)
            self.assertEqual(answered(c), 7)
        wait_for(lambda: self.held() < MIB, "the buffers to be given back")

    def test_many_connections_stay_within_the_budget(self):
        # 24 connections, each with a 3 MiB line half sent: 72 MiB of the daemon's memory before
        # (~72 MiB more RSS, measured); now at most 10 MiB of buffers, whatever the order.
        base = rss(self.daemon.proc.pid)
        conns = []
        for _ in range(24):
            c = self.daemon.client()
            self.addCleanup(c.close)
            c.send_raw(HALF)
            c.sock.setblocking(False)
            conns.append(c)
        refused, deadline = set(), time.monotonic() + 30
        while len(refused) < 21 and time.monotonic() < deadline:
            for i, c in enumerate(conns):
                try:
                    if b"-32004" in c.sock.recv(65536):
                        refused.add(i)
                except BlockingIOError:
                    pass
            time.sleep(0.02)
        self.assertGreaterEqual(len(refused), 21, "at most three 3 MiB lines fit in 10 MiB")
        self.assertLessEqual(self.held(), 10 * MIB)
        # Under AddressSanitizer freed memory stays in its quarantine: RSS says nothing there.
        if not sanitized(self.daemon.proc.pid):
            self.assertLess(rss(self.daemon.proc.pid) - base, 20 * MIB)


    def test_writes_waiting_for_their_exec_count_in_the_budget(self):
        """process.write data parked for a queued stdin_open exec is charged to the uid's
        budget (before: 14 writes of 1 MiB were all kept, ~28 MiB with their request text)."""
        tmp = tempfile.mkdtemp(prefix="sbx-parked-")
        self.addCleanup(shutil.rmtree, tmp, True)
        fifo = os.path.join(tmp, "gate")
        os.mkfifo(fifo)
        # The gate lives in the sandbox's workdir: the sandbox sees it there whatever its
        # isolation (an isolated sandbox has a /tmp of its own).
        sb = self.c.call("sandbox.create", {"name": "parked", "workdir": tmp})["id"]
        self.c.send({"jsonrpc": "2.0", "id": 1, "method": "exec",
                     "params": {"sandbox": sb, "command": "cat gate"}})
        self.c.send({"jsonrpc": "2.0", "id": 2, "method": "exec",
                     "params": {"sandbox": sb, "command": "wc -c", "stdin_open": True,
                                "exec_id": "p_parked-wc", "stream": False}})
        chunk = base64.b64encode(b"x" * MIB).decode()
        ids = range(100, 114)
        for i in ids:
            self.c.send({"jsonrpc": "2.0", "id": i, "method": "process.write",
                         "params": {"exec_id": "p_parked-wc", "data_base64": chunk}})
        held = self.held()  # answered after every write was taken or refused
        self.assertLessEqual(held, 10 * MIB)
        with open(fifo, "w"):
            pass  # the blocker ends; the queued exec starts and takes its parked writes
        self.c.call("process.write", {"exec_id": "p_parked-wc", "eof": True})
        out = int(self.c.wait_response(2)["result"]["stdout"])
        got = {i: self.c.responses.pop(i) for i in ids if i in self.c.responses}
        taken = [i for i, r in got.items() if r.get("result", {}).get("written") == MIB]
        refused = [r["error"] for r in got.values() if "error" in r]
        refused += [self.c.responses.pop(None)["error"]] if None in self.c.responses else []
        self.assertEqual(out, len(taken) * MIB)
        self.assertGreater(len(taken), 0)
        self.assertLessEqual(len(taken) * MIB, 10 * MIB)
        self.assertTrue(refused, "some of 14 MiB must be refused with a 10 MiB budget")
        for e in refused:
            self.assertEqual((e["code"], e["data"]["limit"]), (-32004, "max_input_bytes_per_uid"))
        wait_for(lambda: self.held() < MIB, "the parked bytes to be given back")


# Holds connections with half-sent lines as nobody until stdin closes.
HOG = textwrap.dedent("""
    import json, socket, sys, time
    half = b'{"jsonrpc":"2.0","id":7,"method":"policy.check","params":{"command":"' + \\
        b"a" * (3 << 20)
    conns, errors = [], 0
    for _ in range(6):
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        s.sendall(half)
        conns.append(s)
    deadline = time.monotonic() + 30
    while errors < 4 and time.monotonic() < deadline:
        for s in conns:
            try:
                if b"-32004" in s.recv(65536, 0x40):
                    errors += 1
            except BlockingIOError:
                pass
        time.sleep(0.02)
    print(json.dumps({"refused": errors}), flush=True)
    sys.stdin.read()
""")


class Attacker(NobodyTest):
    config = CONFIG

    def test_one_uid_cannot_starve_another(self):
        hog = subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                                "--clear-groups", sys.executable, "-c", HOG,
                                self.daemon.socket], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        self.addCleanup(hog.wait)
        self.addCleanup(hog.stdin.close)
        self.assertGreaterEqual(json.loads(hog.stdout.readline())["refused"], 4)
        # nobody is at its budget; root's own 3.5 MiB message goes through.
        root = Client(self.daemon.socket)
        self.addCleanup(root.close)
        root.send_raw(HALF + b"a" * (MIB // 2) + REST)
        self.assertEqual(answered(root), 7)
        info = root.call("daemon.info")
        self.assertEqual(info["counts"], "daemon")
        self.assertGreater(info["input_bytes"], 0)

    def test_info_shows_the_caller_only_its_own_counts(self):
        root = Client(self.daemon.socket)
        self.addCleanup(root.close)
        sb = root.call("sandbox.create", {"name": "roots-info"})
        self.addCleanup(root.call, "sandbox.destroy", {"id": sb["id"]})
        root.call("exec", {"sandbox": sb["id"], "argv": ["sleep", "30"], "background": True})
        mine = root.call("daemon.info")
        self.assertGreaterEqual((mine["sandboxes"], mine["processes"]), (1, 1))
        info = as_nobody(self.daemon.socket, [["daemon.info", {}]])[0]["result"]
        self.assertEqual((info["counts"], info["connections"], info["sandboxes"],
                          info["processes"]), ("caller", 1, 0, 0))
        self.assertLess(info["input_bytes"], 4096, "its own buffer only")


if __name__ == "__main__":
    unittest.main()


class ExitedBudget(DaemonTest):
    """What a uid's exited processes keep is bounded in bytes, not only in number: a client
    cannot make the daemon hold 4096 one-MiB argvs in memory and in its exec journal, or 4096
    full spools on disk, for an hour after it left (max_exited_bytes_per_uid,
    max_spool_bytes_per_uid; the oldest go first, at the next sweep, every 5 s)."""
    config = "[limits]\nmax_exited_bytes_per_uid = 1M\nmax_spool_bytes_per_uid = 1M\n"

    def kept(self):
        return {p["exec_id"] for p in self.c.call("process.list")["processes"]}

    def wait_forgotten(self, ids):
        wait_for(lambda: ids[0] not in self.kept(), "the oldest exec to be forgotten", 20)
        self.assertEqual(self.kept() & set(ids), set(ids[1:]))

    def test_description_bytes(self):
        arg = "a" * 100000
        ids = [self.c.call("exec", {"argv": ["true"] + [arg] * 3})["exec_id"] for _ in range(4)]
        self.wait_forgotten(ids)

    def test_spooled_output_bytes(self):
        ids = [self.c.call("exec", {"command": "head -c 400000 /dev/zero",
                                     "stream": False})["exec_id"] for _ in range(3)]
        self.wait_forgotten(ids)
        spool = os.path.join(self.daemon.state, "spool")
        self.assertEqual(self.c.call("process.read", {"exec_id": ids[2]})["next_offset"], 65536)
        self.assertFalse([f for f in os.listdir(spool) if f.startswith(ids[0])], spool)


class RunningSpoolBudget(DaemonTest):
    """max_spool_bytes_per_uid counts the spools of running execs too: past it (with the exited
    ones forgotten first) the uid's running execs keep no more output, nor do its new ones,
    until it is below again. Before, 2048 running execs could hold 2 x 64 MiB each."""
    config = "[limits]\nmax_spool_bytes_per_uid = 64K\n"

    def written(self, exec_id):
        [p] = [p for p in self.c.call("process.list")["processes"] if p["exec_id"] == exec_id]
        return p["stdout_bytes"]

    def test_running_spools_are_counted(self):
        kept = 100000
        run = self.c.call("exec", {"command": "head -c %d /dev/zero; read x; echo after; read y"
                                   % kept, "background": True, "stdin_open": True})["exec_id"]
        wait_for(lambda: "past max_spool_bytes_per_uid" in self.daemon.read_log(),
                 "the sweep to stop the spools")
        late = self.c.call("exec", {"command": "echo late; read z", "background": True,
                                    "stdin_open": True})["exec_id"]
        self.c.call("process.write", {"exec_id": run, "data": "go\n"})
        # "after" went to the stream (counted), not to the spool.
        wait_for(lambda: self.written(run) > kept,
                 "the exec's second output")
        first = self.c.call("process.read", {"exec_id": run, "max_bytes": 1 << 20})
        self.assertEqual((first["offset"], len(first["data"]), first["not_kept_from"]),
                         (0, kept, kept), {k: v for k, v in first.items() if k != "data"})
        rest = self.c.call("process.read", {"exec_id": run, "offset": kept})
        self.assertEqual((rest["data"], rest["offset"]), ("", kept + len("after\n")), rest)
        wait_for(lambda: self.written(late) == 5,
                 "the new exec's output")
        self.assertEqual(self.c.call("process.read", {"exec_id": late})["not_kept_from"], 0)
        spool = os.path.join(self.daemon.state, "spool")
        self.assertLessEqual(sum(os.path.getsize(os.path.join(spool, f))
                                 for f in os.listdir(spool) if f.startswith((run, late))),
                             kept + 4 * 32)
        for e in (run, late):
            self.c.call("process.kill", {"exec_id": e})


class OutputBudget(DaemonTest):
    """The results a uid's foreground execs may keep in memory are bounded in all: a client
    that starts execs of a large max_output_bytes and never reads made the daemon hold them all
    (8 of 60 MB as nobody: RSS 57 MB -> 880 MB). max_output_bytes_per_uid."""
    config = "[limits]\nmax_output_bytes_per_uid = 5M\n"

    def test_foreground_reservations(self):
        c = self.c
        rid = next(c.ids)
        c.send({"jsonrpc": "2.0", "id": rid, "method": "exec",
                "params": {"command": "cat", "stdin_open": True, "max_output_bytes": 2 * MIB}})
        wait_for(lambda: c.read().get("method") == "exec.started", "the first exec to start")
        with self.assertRaises(RpcError) as e:
            c.call("exec", {"argv": ["true"], "max_output_bytes": MIB})
        self.assertEqual(e.exception.code, -32004)
        self.assertEqual(e.exception.data, {"limit": "max_output_bytes_per_uid",
                                            "value": 5 * MIB})
        self.assertIn("'background': true", e.exception.message)
        # what fits still runs: merged (one stream), a smaller one, and any background exec
        c.call("exec", {"argv": ["true"], "max_output_bytes": MIB, "merge_stderr": True})
        c.call("exec", {"argv": ["true"], "max_output_bytes": 512 * 1024})
        c.call("exec", {"argv": ["true"], "max_output_bytes": MIB, "background": True})
        cat = [p["exec_id"] for p in c.call("process.list", {"state": "running"})["processes"]
               if p.get("command") == "cat"]
        c.call("process.write", {"exec_id": cat[0], "data": "", "eof": True})
        self.assertEqual(c.wait_response(rid)["result"]["exit_code"], 0)
        self.assertEqual(c.call("exec", {"argv": ["true"], "max_output_bytes": MIB})["exit_code"],
                         0)


class SpecBudget(DaemonTest):
    """A sandbox's spec is kept in memory and in sandboxes.json while it lives: nobody's 9
    sandboxes of 8 MB labels made the file 96 MB, which the next start refused, losing every
    uid's sandboxes. max_sandbox_spec_bytes bounds one spec."""
    config = "[limits]\nmax_sandbox_spec_bytes = 4K\n"

    def test_large_spec_is_refused(self):
        with self.assertRaises(RpcError) as e:
            self.c.call("sandbox.create", {"name": "big", "labels": {"a": "x" * 5000}})
        self.assertEqual(e.exception.code, -32004)
        self.assertEqual(e.exception.data, {"limit": "max_sandbox_spec_bytes", "value": 4096})
        self.assertEqual([s["name"] for s in self.c.call("sandbox.list")["sandboxes"]], [])
        self.assertEqual(self.c.call("sandbox.create", {"name": "small",
                                                        "labels": {"a": "x" * 3000}})["name"],
                         "small")


class GoneWaiters(DaemonTest):
    """Long polls end with their connection. Before, a client that sent 100000 process.read
    with wait_ms of a day on an exec that never ends, and left, had the root daemon keep ~1 KiB
    for each for that day (RSS +94 MB per such connection, unbounded: max_pending_requests
    counts open connections only). daemon.info `waiting` counts them."""

    def test_waiters_of_a_closed_connection_are_freed(self):
        eid = self.c.call("exec", {"command": "cat", "stdin_open": True, "background": True,
                                   "timeout_s": 0})["exec_id"]
        c2 = self.daemon.client()
        for i in range(40):
            c2.send({"jsonrpc": "2.0", "id": "r%d" % i, "method": "process.read",
                     "params": {"exec_id": eid, "wait_ms": 86400000}})
        for i in range(10):
            c2.send({"jsonrpc": "2.0", "id": "w%d" % i, "method": "process.wait",
                     "params": {"exec_id": eid, "timeout_ms": 86400000}})
        self.assertEqual(c2.call("daemon.info")["waiting"], 50)
        c2.close()
        wait_for(lambda: self.c.call("daemon.info")["waiting"] == 0,
                 "the closed connection's long polls to end", 10)
        self.c.call("process.kill", {"exec_id": eid, "grace_ms": 0})


class PendingPerUid(DaemonTest):
    """Requests in flight are bounded per uid, not only per connection: 256 connections of
    100000 long polls each were 25 GB. max_pending_requests_per_uid."""
    config = "[limits]\nmax_pending_requests_per_uid = 20\n"

    def polls(self, c, eid, n, tag):
        for i in range(n):
            c.send({"jsonrpc": "2.0", "id": "%s%d" % (tag, i), "method": "process.read",
                    "params": {"exec_id": eid, "wait_ms": 86400000}})

    def test_long_polls_across_connections(self):
        eid = self.c.call("exec", {"command": "cat", "stdin_open": True, "background": True,
                                   "timeout_s": 0})["exec_id"]
        c1, c2 = self.daemon.client(), self.daemon.client()
        self.addCleanup(c2.close)
        self.polls(c1, eid, 15, "a")
        self.assertEqual(c1.call("daemon.info")["waiting"], 15)
        self.polls(c2, eid, 6, "b")
        err = c2.wait_response("b5")["error"]  # the 21st: one more than the uid may have
        self.assertEqual(err["code"], -32004)
        self.assertEqual(err["data"], {"limit": "max_pending_requests_per_uid", "value": 20})
        c1.close()
        # until the daemon saw c1 close, the uid is at its limit and daemon.info is refused too
        wait_for(lambda: self.c.request("daemon.info").get("result", {}).get("waiting") == 5,
                 "c1's polls to end", 10)
        self.polls(c2, eid, 10, "c")
        self.assertEqual(c2.call("daemon.info")["waiting"], 15)
        self.c.call("process.kill", {"exec_id": eid, "grace_ms": 0})
