"""run.py -j N: the test classes in N worker processes, longest first.

A worker is `run.py --worker CMD_FD RESULT_FD`, a process group of its own. For each class it
reads one JSON line on CMD_FD ({"ids": [...], "out": path}), runs those tests with its fds 1
and 2 on the file path (so what the daemons and tools the tests start print lands there too)
and answers one JSON line on RESULT_FD (tally()). Neither pipe reaches the tests' children
(non-inheritable), and its stdin is /dev/null: a child that reads stdin steals no command.

The parent prints each class's output whole when the class ends. A worker that dies, or holds
one class longer than its bound, fails that class (every test of it): its process group is
killed, its output so far printed with the cause, and a fresh worker takes the next class.
Classes with a `run_alone` attribute (the reason) run one at a time after all the others.
"""
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WEIGHTS = os.path.join(HERE, "class_seconds.json")
# A class held longer than max(BOUND, 10 x its weight) counts as hung.
BOUND = float(os.environ.get("SANDBOXD_TEST_CLASS_TIMEOUT", "300"))
PR_SET_PDEATHSIG = 1


def failed_id(test):
    """The test a failure belongs to: a subtest's parent; a class or module fixture's
    failure ("setUpClass (test_x.Y)") whole."""
    if isinstance(test, unittest.case._SubTest):
        return test.test_case.id()
    return test.id()


def tally(result, ntests):
    """{passed, failed, skipped, failed_ids} of a result over ntests tests: a test that did
    not pass and was not skipped failed (it errored, or never ran: its setUpClass failed), and
    a fixture's error or an unexpected success counts as a failure too."""
    ids = {failed_id(t) for t, _ in result.failures + result.errors}
    ids |= {t.id() for t in result.unexpectedSuccesses}
    passed, skipped = result.passed, len(result.skipped)
    return {"passed": passed, "skipped": skipped, "failed_ids": sorted(ids),
            "failed": max(ntests - passed - skipped, len(ids))}


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def classes_of(suite):
    """[(module.Class, [tests], class)] in discovery order."""
    out = {}
    for t in flatten(suite):
        name = type(t).__module__ + "." + type(t).__qualname__
        out.setdefault(name, (name, [], type(t)))[1].append(t)
    return list(out.values())


def load_weights():
    try:
        with open(WEIGHTS) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def plan(classes, weights):
    """(parallel, alone): [(weight, name, ids, bound)], the longest first. A class the table
    does not know weighs its tests at the table's mean seconds per test."""
    known = [(weights[n], len(tests)) for n, tests, _ in classes if n in weights]
    per_test = sum(w for w, _ in known) / max(1, sum(k for _, k in known)) if known else 1.0
    parallel, alone = [], []
    for name, tests, cls in classes:
        w = weights.get(name, per_test * len(tests))
        job = (w, name, [t.id() for t in tests], max(BOUND, 10 * w))
        (alone if getattr(cls, "run_alone", None) else parallel).append(job)
    return sorted(parallel, reverse=True), sorted(alone, reverse=True)


class Worker:
    """One worker process and the class it holds (job, its output file, its deadline)."""

    def __init__(self, run_py):
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, run_py, "--worker", str(cmd_r), str(res_w)],
            pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL, start_new_session=True)
        os.close(cmd_r)
        os.close(res_w)
        self.buf = b""
        self.job = None

    def give(self, job, out):
        self.job, self.out = job, out
        self.started = time.monotonic()
        self.deadline = self.started + job[3]
        os.write(self.cmd_w, json.dumps({"ids": job[2], "out": out}).encode() + b"\n")

    def read(self):
        """The class's tally once its line is in, None before; EOFError when the worker
        went."""
        data = os.read(self.res_r, 65536)
        if not data:
            raise EOFError
        self.buf += data
        if b"\n" not in self.buf:
            return None
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def kill(self):
        """Ends the worker and whatever of its process group is left (its daemons)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.cmd_w)
        os.close(self.res_r)

    def status(self):
        rc = self.proc.wait()
        return "killed by signal %d" % -rc if rc < 0 else "exited with status %d" % rc


class Pool:
    """Runs jobs on workers (run: at most width at a time) and prints each class's output as
    it ends."""

    def __init__(self, run_py):
        self.run_py = run_py
        self.idle, self.busy = [], []
        self.tmp = tempfile.mkdtemp(prefix="sbxrun-")
        self.seconds, self.totals = {}, []

    def run(self, jobs, width):
        jobs = list(jobs)
        while jobs or self.busy:
            while jobs and len(self.busy) < width:
                self.start(jobs.pop(0))
            self.wait()

    def start(self, job):
        w = self.idle.pop() if self.idle else Worker(self.run_py)
        if w.proc.poll() is not None:  # it went while idle (killed from outside)
            w.kill()
            w = Worker(self.run_py)
        w.give(job, os.path.join(self.tmp, "%s.out" % job[1]))
        self.busy.append(w)

    def wait(self):
        left = min(w.deadline for w in self.busy) - time.monotonic()
        ready, _, _ = select.select([w.res_r for w in self.busy], [], [], max(0, left))
        for w in [w for w in self.busy if w.res_r in ready]:
            try:
                t = w.read()
            except EOFError:
                w.proc.wait()
                self.lost(w, "its worker %s" % w.status())
                continue
            if t is not None:
                self.done(w, t, None)
        now = time.monotonic()
        for w in [w for w in self.busy if w.deadline <= now]:
            self.lost(w, "it did not end within %.0f s (hung): its worker was killed"
                      % w.job[3])

    def lost(self, w, why):
        w.kill()
        n = len(w.job[2])
        self.done(w, {"passed": 0, "skipped": 0, "failed": n, "failed_ids": [w.job[1]]},
                  "%s: %s; its %d test%s count as failed" % (w.job[1], why, n, "s"[:n != 1]))

    def done(self, w, t, why):
        secs = time.monotonic() - w.started
        self.busy.remove(w)
        if why is None:
            self.idle.append(w)
        self.seconds[w.job[1]] = secs
        self.totals.append(t)
        self.show(w, t, secs, why)

    def show(self, w, t, secs, why):
        with open(w.out, errors="replace") as f:
            text = f.read()
        os.unlink(w.out)
        status = "FAILED" if t["failed"] else "SKIPPED" if t["skipped"] else "ok"
        n = len(w.job[2])
        print("==== %s: %d test%s, %.1f s, %s" % (w.job[1], n, "s"[:n != 1], secs, status))
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        if why:
            print("FAIL: " + why)
        sys.stdout.flush()

    def close(self):
        for w in self.idle + self.busy:
            w.kill()
        os.rmdir(self.tmp)


def run_parallel(suite, n, run_py, run_here):
    """Runs suite's classes on n workers (the run_alone ones one at a time, last), and here
    (run_here) the modules that failed to import (their tests only say so). Returns (totals,
    {class: seconds})."""
    classes = classes_of(suite)
    broken = [t for _, tests, cls in classes if cls.__module__ == "unittest.loader"
              for t in tests]
    par, alone = plan([c for c in classes if c[2].__module__ != "unittest.loader"],
                      load_weights())
    pool = Pool(run_py)
    # SIGTERM (make interrupted, a CI timeout) ends the workers and their daemons too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if broken:
        pool.totals.append(tally(run_here(unittest.TestSuite(broken)), len(broken)))
    try:
        pool.run(par, n)
        pool.run(alone, 1)
    finally:
        pool.close()
    return pool.totals, pool.seconds


def worker(cmd_fd, res_fd, run_suite):
    """The worker's loop: one class per command line until the parent closes the pipe."""
    os.set_inheritable(cmd_fd, False)
    os.set_inheritable(res_fd, False)
    # The parent gone (killed), the worker ends with its process group (its daemons).
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    res = os.fdopen(res_fd, "w")
    loader = unittest.TestLoader()
    for line in os.fdopen(cmd_fd):
        job = json.loads(line)
        out = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        result = run_suite(loader.loadTestsFromNames(job["ids"]))
        sys.stdout.flush()
        sys.stderr.flush()
        res.write(json.dumps(tally(result, len(job["ids"]))) + "\n")
        res.flush()
    return 0
