"""Runs every ```jsonrpc example of docs/protocol.md against a live sandboxd.

Block syntax (documented in docs/protocol.md, "Reading the examples"):
  '> LINE'  is sent verbatim, after replacing "$name" with a value captured earlier;
  '< JSON'  is expected. Consecutive '<' lines may arrive in any order. In expected JSON,
            "…" matches any value, a member "…": "…" allows other members, an array whose
            last element is "…" may be longer, and "$name" captures (or, once captured,
            must equal) a value. Notifications nobody expects are ignored; any other
            unexpected message fails the block.
Each block runs on a new connection to one daemon, in document order.
"""
import json
import os
import re
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "protocol.md")
ANY = "\u2026"  # …
GROUP_TIMEOUT_S = 20
MIN_BLOCKS = 20  # the page has at least this many tested examples


def extract_blocks(text):
    """Returns [(line_number, [lines])] for every ```jsonrpc block."""
    blocks, cur, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if cur is None and line.strip() == "```jsonrpc":
            cur, start = [], n
        elif cur is not None and line.strip() == "```":
            blocks.append((start, cur))
            cur = None
        elif cur is not None and line.strip():
            cur.append(line)
    if cur is not None:
        raise ValueError("unterminated ```jsonrpc block at line %d" % start)
    return blocks


def _var(v):
    if isinstance(v, str) and re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", v):
        return v[1:]
    return None


def match(exp, act, env):
    """Structural match of expected against actual; captures go into env (only on success)."""
    trial = dict(env)
    if not _match(exp, act, trial):
        return False
    env.update(trial)
    return True


def _match(exp, act, env):
    if exp == ANY:
        return True
    name = _var(exp)
    if name is not None:
        if name in env:
            return env[name] == act
        env[name] = act
        return True
    if isinstance(exp, dict):
        return _match_obj(exp, act, env)
    if isinstance(exp, list):
        return _match_list(exp, act, env)
    if type(exp) is not type(act) and not (
        isinstance(exp, (int, float)) and isinstance(act, (int, float))
        and not isinstance(exp, bool) and not isinstance(act, bool)
    ):
        return False
    return exp == act


def _match_obj(exp, act, env):
    if not isinstance(act, dict):
        return False
    loose = exp.get(ANY) == ANY
    keys = [k for k in exp if k != ANY]
    if not loose and set(keys) != set(act):
        return False
    return all(k in act and _match(exp[k], act[k], env) for k in keys)


def _match_list(exp, act, env):
    if not isinstance(act, list):
        return False
    loose = bool(exp) and exp[-1] == ANY
    items = exp[:-1] if loose else exp
    if len(act) < len(items) or (not loose and len(act) != len(items)):
        return False
    return all(_match(e, a, env) for e, a in zip(items, act))


def match_message(exp, act, env):
    """A top-level batch response may list its responses in any order."""
    if isinstance(exp, list) and isinstance(act, list) and len(exp) == len(act):
        trial, rest = dict(env), list(act)
        for e in exp:
            for i, a in enumerate(rest):
                if match(e, a, trial):
                    del rest[i]
                    break
            else:
                return False
        env.update(trial)
        return True
    return match(exp, act, env)


def substitute(line, env):
    def rep(m):
        name = m.group(1)
        if name not in env:
            raise AssertionError("example uses $%s before capturing it" % name)
        return json.dumps(env[name])
    return re.sub(r'"\$([A-Za-z_][A-Za-z0-9_]*)"', rep, line)


def is_notification(msg):
    return isinstance(msg, dict) and "method" in msg and "id" not in msg


class LineConn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, line):
        self.sock.sendall(line.encode() + b"\n")

    def recv(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError
            if not data:
                raise ConnectionError("daemon closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def run_block(path, start, lines):
    """Runs one example; raises AssertionError naming the doc line on a mismatch."""
    env, conn, i = {}, LineConn(path), 0
    try:
        while i < len(lines):
            kind, body = lines[i][:1], lines[i][1:].strip()
            if kind == ">":
                conn.send(substitute(body, env))
                i += 1
                continue
            if kind != "<":
                raise AssertionError("docs/protocol.md:%d: line must start with > or <" % start)
            group = []
            while i < len(lines) and lines[i].startswith("<"):
                group.append(json.loads(lines[i][1:].strip()))
                i += 1
            expect_group(conn, env, group, start)
    finally:
        conn.close()


def expect_group(conn, env, group, start):
    pending, seen = list(group), []
    deadline = time.monotonic() + GROUP_TIMEOUT_S
    while pending:
        try:
            msg = conn.recv(deadline)
        except TimeoutError:
            raise AssertionError(
                "docs/protocol.md block at line %d: still waiting for %s\nreceived: %s"
                % (start, json.dumps(pending), json.dumps(seen)))
        seen.append(msg)
        for k, exp in enumerate(pending):
            if match_message(exp, msg, env):
                del pending[k]
                break
        else:
            if not is_notification(msg):
                raise AssertionError(
                    "docs/protocol.md block at line %d: unexpected %s\nexpected one of %s"
                    % (start, json.dumps(msg), json.dumps(pending)))


class MatcherTest(unittest.TestCase):
    """The checker itself must be able to fail."""

    def test_exact_members(self):
        self.assertTrue(match({"a": 1}, {"a": 1}, {}))
        self.assertFalse(match({"a": 1}, {"a": 1, "b": 2}, {}))
        self.assertFalse(match({"a": 1}, {"a": 2}, {}))
        self.assertTrue(match({"a": 1, ANY: ANY}, {"a": 1, "b": 2}, {}))
        self.assertFalse(match({"a": 1, ANY: ANY}, {"b": 2}, {}))

    def test_types(self):
        self.assertFalse(match(True, 1, {}))
        self.assertFalse(match(None, 0, {}))
        self.assertFalse(match("1", 1, {}))
        self.assertTrue(match(1, 1.0, {}))

    def test_lists(self):
        self.assertTrue(match([1, ANY], [1, 2, 3], {}))
        self.assertFalse(match([1], [1, 2], {}))
        self.assertFalse(match([2, ANY], [1, 2], {}))

    def test_captures(self):
        env = {}
        self.assertTrue(match({"id": "$x"}, {"id": "p_1"}, env))
        self.assertEqual(env, {"x": "p_1"})
        self.assertFalse(match({"id": "$x"}, {"id": "p_2"}, env))
        self.assertFalse(match({"id": "$y", "n": 1}, {"id": "p_3", "n": 2}, env))
        self.assertNotIn("y", env)
        self.assertEqual(substitute('{"id":"$x"}', env), '{"id":"p_1"}')

    def test_batch_order(self):
        env = {}
        self.assertTrue(match_message([{"id": "a"}, {"id": "b"}], [{"id": "b"}, {"id": "a"}],
                                      env))
        self.assertFalse(match_message([{"id": "a"}, {"id": "a"}], [{"id": "b"}, {"id": "a"}],
                                       env))

    def test_extract(self):
        text = "x\n```jsonrpc\n> {}\n\n< {}\n```\n```\n> no\n```\n"
        self.assertEqual(extract_blocks(text), [(2, ["> {}", "< {}"])])


class ProtocolDocTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC, encoding="utf-8") as f:
            cls.blocks = extract_blocks(f.read())
        cls.daemon = harness.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_examples(self):
        self.assertGreaterEqual(len(self.blocks), MIN_BLOCKS)
        for start, lines in self.blocks:
            with self.subTest(line=start):
                run_block(self.daemon.socket, start, lines)


if __name__ == "__main__":
    unittest.main()
