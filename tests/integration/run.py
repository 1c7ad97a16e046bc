"""Runs the integration tests (tests/integration/test_*.py) and prints 'N passed, N failed'.

    run.py [-j N] [--write-weights] [NAME ...]

NAME: a module, class or test (test_core.Exec); none: every test_*.py. -j N (default
$SANDBOXD_TEST_JOBS, else 1) runs the test classes in N worker processes, the longest first
(class_seconds.json; parallel.py); -j 1 runs them here, one after the other.
--write-weights rewrites class_seconds.json with this run's class times (run it after adding
or changing a slow class). The exit status is non-zero when a test failed, erred or was
skipped, when a worker died or hung, or when nothing ran.
"""
import argparse
import json
import os
import sys
import time
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

import parallel  # noqa: E402


class TimedResult(unittest.TextTestResult):
    """Also adds up each test class's wall time, for the suite's time budget (the whole CI run
    stays under 20 minutes): its tests, and the gap before its first test (its setUpClass and
    the previous class's tearDownClass); and counts the tests that passed."""
    classes = {}
    current = None
    stopped = None

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.passed = 0

    def startTest(self, test):
        now = time.monotonic()
        name = type(test).__module__ + "." + type(test).__name__
        if name != TimedResult.current and TimedResult.stopped is not None:
            self.add(name, now - TimedResult.stopped)
        TimedResult.current = name
        self.started = now
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        TimedResult.stopped = time.monotonic()
        self.add(TimedResult.current, TimedResult.stopped - self.started)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.passed += 1

    @staticmethod
    def add(name, seconds):
        TimedResult.classes[name] = TimedResult.classes.get(name, 0) + seconds


def run_suite(suite):
    return unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)


def slowest(seconds, n=12):
    top = sorted(seconds.items(), key=lambda kv: -kv[1])[:n]
    print("slowest classes: " + ", ".join("%s %.0fs" % kv for kv in top))


def summary(totals):
    """Prints the failed tests and 'N passed, N failed[, N skipped]'; the exit status."""
    failed_ids = sorted(i for t in totals for i in t["failed_ids"])
    passed, failed, skipped = (sum(t[k] for t in totals) for k in ("passed", "failed", "skipped"))
    if failed_ids:
        print("failed: " + ", ".join(failed_ids))
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    if passed + failed + skipped == 0:
        print("no integration test ran", file=sys.stderr)
        return 1
    return 0 if failed == 0 and skipped == 0 else 1


def arguments():
    p = argparse.ArgumentParser(description="sandboxd's integration tests")
    p.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("SANDBOXD_TEST_JOBS")
                                                         or 1), help="worker processes")
    p.add_argument("--write-weights", action="store_true",
                   help="rewrite class_seconds.json with this run's class times")
    p.add_argument("--worker", nargs=2, type=int, metavar=("CMD_FD", "RESULT_FD"),
                   help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*")
    return p.parse_args()


def write_weights(seconds):
    weights = dict(parallel.load_weights(), **{k: round(v, 1) for k, v in seconds.items()})
    with open(parallel.WEIGHTS, "w") as f:
        json.dump(weights, f, indent=0, sort_keys=True)
        f.write("\n")


def main():
    args = arguments()
    if args.worker:
        return parallel.worker(*args.worker, run_suite)
    loader = unittest.TestLoader()
    if args.names:
        suite = unittest.TestSuite(loader.loadTestsFromName(n) for n in args.names)
    else:
        suite = loader.discover(here, pattern="test_*.py", top_level_dir=here)
    start = time.monotonic()
    if args.jobs > 1:
        totals, seconds = parallel.run_parallel(suite, args.jobs, os.path.abspath(__file__),
                                                run_suite)
        print("Ran %d tests (%d classes) in %.1f s on %d workers; the classes took %.0f s"
              % (suite.countTestCases(), len(seconds), time.monotonic() - start, args.jobs,
                 sum(seconds.values())))
    else:
        totals = [parallel.tally(run_suite(suite), suite.countTestCases())]
        seconds = TimedResult.classes
    slowest(seconds)
    if args.write_weights:
        write_weights(seconds)
    return summary(totals)


if __name__ == "__main__":
    sys.exit(main())
