"""Runs the fake on its own: python3 -m fakes.daytona --root DIR --key-file FILE --url-file FILE

The API key is read from --key-file; the API URL is written to --url-file once it listens (the
benchmark uses this). Runs until SIGTERM or SIGINT, or until its parent dies (a crashed
benchmark must not leave a fake behind).
"""
import argparse
import os
import signal
import sys
import tempfile
import threading

from . import FakeDaytona


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=None)
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--url-file", required=True)
    a = ap.parse_args()
    with open(a.key_file) as f:
        key = f.read().strip()
    fake = FakeDaytona(a.root or tempfile.mkdtemp(prefix="fake-daytona-"), key).start()
    tmp = a.url_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(fake.url + "\n")
    os.rename(tmp, a.url_file)
    parent = os.getppid()
    while not STOP.wait(1.0):
        if os.getppid() != parent:
            break
    fake.stop()
    return 0


# Handlers, not a blocked mask: the session shells and their commands inherit a signal mask,
# and a command with TERM blocked would outlive every kill.
STOP = threading.Event()

if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: STOP.set())
    sys.exit(main())
