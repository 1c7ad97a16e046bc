"""Runs the integration tests (tests/integration/test_*.py) and prints 'N passed, N failed'."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def main():
    loader = unittest.TestLoader()
    names = sys.argv[1:]
    if names:
        suite = unittest.TestSuite(loader.loadTestsFromName(n) for n in names)
    else:
        suite = loader.discover(here, pattern="test_*.py", top_level_dir=here)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
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
