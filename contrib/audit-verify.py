#!/usr/bin/env python3
"""Checks the hash chain of sandboxd's audit log (docs/policy.md, "Audit log").

usage: audit-verify.py [--strict] [DIR | FILE...]

DIR (default /var/lib/sandboxd/audit) is read as audit.log.N ... audit.log.1, audit.log, oldest
first; FILEs are read in the order given. Every line must be a JSON object whose last member is
"hash", the hex SHA-256 of the line's bytes before ',"hash":'; its "prev" must be the hash of
the line before and its "seq" one more. The first line kept may follow a line that was rotated
away (then only its own hash is checked) unless its seq is 1, where prev must be 64 zeros.

A line that is not JSON (a write torn by a crash) is reported as a warning and skipped; the
chain must continue across it. --strict makes warnings errors. Exit status: 0 intact,
1 broken or unreadable, 64 usage.
"""
import hashlib
import json
import os
import re
import sys

GENESIS = "0" * 64
MARK = b',"hash":"'


def files_of(args):
    if len(args) == 1 and os.path.isdir(args[0]):
        d = args[0]
        rotated = []
        for name in os.listdir(d):
            m = re.fullmatch(r"audit\.log\.(\d+)", name)
            if m:
                rotated.append((int(m.group(1)), name))
        names = [n for _, n in sorted(rotated, reverse=True)]
        if os.path.exists(os.path.join(d, "audit.log")):
            names.append("audit.log")
        return [os.path.join(d, n) for n in names]
    return list(args)


def check_line(raw):
    """Returns (record, hash) or raises ValueError saying what is wrong."""
    if not raw.endswith(b'"}'):
        raise ValueError("does not end with the hash member")
    i = raw.rfind(MARK)
    if i < 0:
        raise ValueError("no hash member")
    digest = hashlib.sha256(raw[:i]).hexdigest()
    try:
        rec = json.loads(raw)
    except ValueError as e:
        raise ValueError("not JSON: %s" % e)
    if not isinstance(rec, dict) or rec.get("hash") != digest:
        raise ValueError("hash mismatch (the line was changed)")
    return rec, digest


def verify(paths, strict=False, out=sys.stdout):
    prev = None
    seq = None
    first = None
    count = 0
    errors = 0
    warnings = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            print("%s:%d: warning: last line has no newline (torn write)" % (path, len(lines)),
                  file=out)
            warnings += 1
        for n, raw in enumerate(lines, 1):
            where = "%s:%d" % (path, n)
            try:
                rec, digest = check_line(raw)
            except ValueError as e:
                if raw.startswith(b"{") and MARK not in raw:
                    print("%s: warning: torn record skipped: %s" % (where, e), file=out)
                    warnings += 1
                else:
                    print("%s: error: %s" % (where, e), file=out)
                    errors += 1
                continue
            if prev is None:
                first = rec.get("seq")
                if rec.get("seq") == 1 and rec.get("prev") != GENESIS:
                    print("%s: error: first record must have prev = 64 zeros" % where, file=out)
                    errors += 1
            else:
                if rec.get("prev") != prev:
                    print("%s: error: prev does not match the hash of the record before "
                          "(records removed or reordered)" % where, file=out)
                    errors += 1
                if rec.get("seq") != seq + 1:
                    print("%s: error: seq %s follows %s" % (where, rec.get("seq"), seq),
                          file=out)
                    errors += 1
            prev = digest
            seq = rec.get("seq")
            count += 1
    if errors or (strict and warnings):
        print("BROKEN: %d errors, %d warnings in %d records" % (errors, warnings, count),
              file=out)
        return 1
    print("OK: %d records, seq %s..%s, %d files%s" % (
        count, first, seq, len(paths), ", %d warnings" % warnings if warnings else ""), file=out)
    return 0


def main(argv):
    strict = False
    args = []
    for a in argv:
        if a == "--strict":
            strict = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print("audit-verify: unknown option %s" % a, file=sys.stderr)
            return 64
        else:
            args.append(a)
    paths = files_of(args or ["/var/lib/sandboxd/audit"])
    if not paths:
        print("audit-verify: no audit log found in %s" % (args or ["/var/lib/sandboxd/audit"]),
              file=sys.stderr)
        return 1
    try:
        return verify(paths, strict)
    except OSError as e:
        print("audit-verify: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
