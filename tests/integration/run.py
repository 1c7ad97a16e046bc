"""Runs the integration tests (tests/integration/test_*.py) and prints 'N passed, N failed'."""
import os
import sys
import time
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


class TimedResult(unittest.TextTestResult):
    """Also adds up each test class's wall time, for the suite's time budget (the whole CI run
    stays under 20 minutes): its tests, and the gap before its first test (its setUpClass and
    the previous class's tearDownClass)."""
    classes = {}
    current = None
    stopped = None

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

    @staticmethod
    def add(name, seconds):
        TimedResult.classes[name] = TimedResult.classes.get(name, 0) + seconds


def slowest(n=12):
    top = sorted(TimedResult.classes.items(), key=lambda kv: -kv[1])[:n]
    print("slowest classes: " + ", ".join("%s %.0fs" % kv for kv in top))


def main():
    loader = unittest.TestLoader()
    names = sys.argv[1:]
    if names:
        suite = unittest.TestSuite(loader.loadTestsFromName(n) for n in names)
    else:
        suite = loader.discover(here, pattern="test_*.py", top_level_dir=here)
    result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)
    slowest()
    # Subtest failures name the parent test: count each failed test once.
    failed_ids = {t.id().split(" ")[0] for t, _ in result.failures + result.errors}
    failed_ids |= {t.id() for t in result.unexpectedSuccesses}
    failed = len(failed_ids)
    skipped = len(result.skipped)
    passed = max(0, result.testsRun - failed - skipped)
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    if result.testsRun == 0:
        print("no integration test ran", file=sys.stderr)
        return 1
    return 0 if failed == 0 and skipped == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
