"""The singularity backend against the fake apptainer (tests/fakes/apptainer/; its self-test is
test_singularity_fake.py): instances, the agent in them, the SIF cache, the environment rules,
restarts. Every case of issue 14's Tests section is here."""
import hashlib
import json
import os
import subprocess
import tempfile
import time
import unittest

from harness import SANDBOXCTL, Daemon, RpcError, class_resource, needs_root, uniq_secs
from singularity_fake import FakeApptainer
from test_identity import as_nobody
from test_local import HungMount

SPEC = {"backend": "singularity", "image": "docker://busybox:1"}


def wait_for(pred, what, tries=500):
    """Polls pred (no timing is asserted: it only bounds a wait for a state)."""
    for _ in range(tries):
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("gave up waiting for " + what)


class FakeDaemonTest(unittest.TestCase):
    extra = ""
    daemon_env = {}

    @classmethod
    def setUpClass(cls):
        cls.fake = class_resource(cls, FakeApptainer, stop="cleanup")
        env = dict(cls.fake.env())
        env.update(cls.daemon_env)
        cls.daemon = class_resource(cls, Daemon, cls.fake.config(cls.extra), env=env)

    def setUp(self):
        self.c = self.daemon.client()

    def tearDown(self):
        for sb in self.c.call("sandbox.list", {"backend": "singularity"})["sandboxes"]:
            self.c.call("sandbox.destroy", {"id": sb["id"]})
        self.c.close()

    def create(self, **kw):
        spec = dict(SPEC)
        spec.update(kw)
        return self.c.call("sandbox.create", spec, timeout=120)

    def run_in(self, sb, command, **kw):
        p = {"sandbox": sb["id"], "command": command}
        p.update(kw)
        return self.c.call("exec", p, timeout=120)


class SingularityTest(FakeDaemonTest):
    extra = "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n"
    # Neither may reach a container: the fake would hand both in without --cleanenv.
    daemon_env = {"DAEMON_ONLY_MARKER": "daemon-env", "APPTAINERENV_SMUGGLED": "daemon-env"}

    def test_backend_list_shows_tool_and_cache(self):
        b = [b for b in self.c.call("backend.list")["backends"] if b["name"] == "singularity"][0]
        self.assertTrue(b["available"], b)
        d = b["details"]
        self.assertEqual((d["executable"], d["version"]), (self.fake.exe, "1.5.0"))
        self.assertEqual(d["scratch_dir"], self.fake.scratch)
        self.assertEqual(d["cache_dir"], self.fake.scratch + "/cache")
        for k in ("cache_bytes", "cache_cap_bytes", "cache_entries"):
            self.assertIsInstance(d[k], int)

    def test_instance_flags_and_every_exec_clean(self):
        sb = self.create(network="none")
        start = [c["argv"] for c in self.fake.calls("instance", "start")
                 if c["argv"][-1].endswith(sb["id"][4:])][0]
        for flag in ("--containall", "--no-home", "--cleanenv", "--no-privs",
                     "--writable-tmpfs", "--net"):
            self.assertIn(flag, start)
        self.assertEqual(start[start.index("--network") + 1], "none")
        self.assertRegex(" ".join(start), r"--bind \S+/sandboxd-agent:/.sandboxd/sandboxd-agent:ro")
        self.run_in(sb, "true")
        execs = self.fake.calls("exec")
        self.assertTrue(execs)
        for e in execs:
            self.assertEqual(e["argv"][1], "--cleanenv", e["argv"])
        for c in self.fake.calls():
            self.assertNotIn("DAEMON_ONLY_MARKER", c["env"])
            self.assertNotIn("APPTAINERENV_SMUGGLED", c["env"])
        out = self.run_in(sb, "cat /proc/net/dev | tail -n +3 | cut -d: -f1")["stdout"]
        self.assertEqual(out.split(), ["lo"])

    def test_env_passthrough_and_no_daemon_env(self):
        sb = self.create(env={"SBX_LEVEL": "from-sandbox"})
        r = self.run_in(sb, "env", env={"EXEC_LEVEL": "from-exec"})
        self.assertIn("SBX_LEVEL=from-sandbox\n", r["stdout"])
        self.assertIn("EXEC_LEVEL=from-exec\n", r["stdout"])
        self.assertNotIn("daemon-env", r["stdout"])
        self.assertNotIn("SMUGGLED", r["stdout"])
        r = self.c.call("exec", {"sandbox": sb["id"], "argv": ["env"]})
        self.assertNotIn("daemon-env", r["stdout"])

    def test_exec_status_stdin_shell_state_and_files(self):
        sb = self.create()
        self.assertEqual(sb["workdir"], "/tmp")
        r = self.run_in(sb, "cd /var/tmp && export KEPT=yes; cat; exit 4", stdin="in\n")
        self.assertEqual((r["exit_code"], r["stdout"]), (4, "in\n"))
        r = self.run_in(sb, "pwd; echo $KEPT; kill -9 $$")
        self.assertEqual((r["stdout"], r["exit_code"], r["signal"]),
                         ("/var/tmp\nyes\n", None, "SIGKILL"))
        self.c.call("file.write", {"sandbox": sb["id"], "path": "/tmp/d/f.txt", "data": "abc",
                                   "mkdir": True})
        self.assertEqual(self.c.call("file.read", {"sandbox": sb["id"],
                                                   "path": "/tmp/d/f.txt"})["data"], "abc")
        with self.assertRaises(RpcError) as cm:
            self.c.call("exec", {"sandbox": sb["id"], "argv": ["no-such-program"]})
        self.assertEqual(cm.exception.code, -32602, cm.exception.message)

    def test_timeout_kills_the_tree(self):
        sb = self.create()
        secs = uniq_secs(300)
        r = self.run_in(sb, "sleep %s & sleep %s; echo never" % (secs, secs), timeout_s=1)
        self.assertTrue(r["timed_out"])
        self.assertNotIn("never", r["stdout"])
        left = self.run_in(sb, "ps -o args | grep -c '^sleep %s' || true" % secs)["stdout"]
        self.assertEqual(left.strip(), "0")

    def test_pipe_cut_while_running_loses_nothing(self):
        sb = self.create()
        inst = sb["details"]["instance"]
        r = self.c.call("exec", {"sandbox": sb["id"], "background": True, "command":
                                 "echo start; while [ ! -e /tmp/go ]; do sleep 0.05; done; "
                                 "seq 1 3000"})
        pid = r["exec_id"]
        wait_for(lambda: "start" in self.c.call("process.read", {"exec_id": pid})["data"],
                 "the first line")
        # First the command that started the agent and bridges to it, then the --connect
        # bridge of the reconnected session: the pipe of `apptainer exec …` is gone each time.
        for mode in ("--detach", "--connect"):
            bridges = subprocess.run(["pgrep", "-f", "instance://%s .*sandboxd-agent %s"
                                      % (inst, mode)],
                                     capture_output=True, text=True).stdout.split()
            self.assertEqual(len(bridges), 1, (mode, bridges))
            os.kill(int(bridges[0]), 9)
            # The next op rides the reconnected session; the command did not die with the pipe.
            self.c.call("file.write", {"sandbox": sb["id"], "path": "/tmp/cut" + mode,
                                       "data": ""})
        self.c.call("file.write", {"sandbox": sb["id"], "path": "/tmp/go", "data": ""})
        w = self.c.call("process.wait", {"exec_id": pid, "timeout_ms": 60000})
        self.assertEqual(w["exit_code"], 0, w)
        out = self.c.call("process.read", {"exec_id": pid, "max_bytes": 1 << 20})
        self.assertEqual(out["data"], "start\n" + "".join("%d\n" % i for i in range(1, 3001)))

    def test_instance_stopped_behind_our_back(self):
        sb = self.create()
        self.fake.run("instance", "stop", sb["details"]["instance"])
        state = wait_for(lambda: [n["params"] for n in self.c.notifications
                                  if n["method"] == "sandbox.state"
                                  and n["params"]["sandbox"] == sb["id"]
                                  and n["params"]["state"] == "lost"] or
                         self.c.call("daemon.info") and None, "the sandbox to be lost")
        self.assertIn("is gone", state[0]["reason"])
        with self.assertRaises(RpcError) as cm:
            self.run_in(sb, "true")
        self.assertEqual(cm.exception.code, -32006, cm.exception.message)

    def test_idle_timeout_stops_the_instance(self):
        sb = self.create(idle_timeout_s=1)
        inst = sb["details"]["instance"]
        wait_for(lambda: inst not in [i["instance"] for i in self.fake.instances()],
                 "the idle instance to be stopped")
        ids = [s["id"] for s in self.c.call("sandbox.list")["sandboxes"]]
        self.assertNotIn(sb["id"], ids)

    def test_overlay_persists_until_destroy(self):
        sb = self.create(singularity={"overlay": True})
        ov = sb["details"]["overlay"]
        self.assertEqual(ov, "%s/overlays/%s" % (self.fake.scratch, sb["id"]))
        start = self.fake.calls("instance", "start")[-1]["argv"]
        self.assertEqual(start[start.index("--overlay") + 1], ov)
        self.assertNotIn("--writable-tmpfs", start)
        self.run_in(sb, "mkdir -p /kept && echo kept > /kept/f")
        self.assertTrue(os.path.exists(os.path.join(ov, "fake-root/kept/f")))
        self.c.call("sandbox.destroy", {"id": sb["id"]})
        self.assertFalse(os.path.exists(ov))

    def test_binds_pass_the_policy_and_resolve(self):
        data = os.path.join(self.fake.dir, "project")
        os.makedirs(data, exist_ok=True)
        with open(os.path.join(data, "in.txt"), "w") as f:
            f.write("host file\n")
        link = os.path.join(self.fake.dir, "project-link")
        if not os.path.lexists(link):
            os.symlink(data, link)
        approver = self.daemon.client(on_request=lambda m: {"decision": "once"})
        try:  # a host path is asked about
            sb = approver.call("sandbox.create", dict(SPEC, mounts=[
                {"type": "bind", "source": link, "target": "/work", "readonly": True}]),
                timeout=120)
        finally:
            approver.close()
        self.assertTrue(sb["host_access"])
        r = self.run_in(sb, "cat /work/in.txt; touch /work/x 2>&1; true")
        self.assertIn("host file\n", r["stdout"])
        self.assertIn("Read-only file system", r["stdout"])
        start = self.fake.calls("instance", "start")[-1]["argv"]
        self.assertIn("%s:/work:ro" % data, start)  # resolved: a later swap changes nothing
        e = self.assertRpcError(-32001, "sandbox.create",
                                dict(SPEC, mounts=[{"type": "bind", "source": "/etc",
                                                    "target": "/etc2"}]))
        self.assertEqual(e.data["verdict"], "deny")
        self.assertRpcError(-32001, "sandbox.create",
                            dict(SPEC, singularity={"binds": ["/root/.ssh:/k"]}))

    def test_refused_specs_say_why(self):
        cases = [
            (dict(SPEC, singularity={"writable": True}), "singularity.writable"),
            (dict(SPEC, singularity={"overlay": "/home/me/ov.img"}), "true or false"),
            (dict(SPEC, mounts=[{"type": "volume", "source": "myvol", "target": "/v"}]),
             "named volumes are docker's"),
            (dict(SPEC, image="shub://x/y"), "docker://, oras:// and library://"),
            (dict(SPEC, image="mine.sif"), "a local .sif image must be given by its absolute"),
            (dict(SPEC, image="/bin/sh"), "not a SIF file"),
            (dict(SPEC, image="/nonexistent/x.sif"), "No such file or directory"),
            (dict(SPEC, mounts=[{"type": "bind", "source": "/tmp/a:b", "target": "/x"}]),
             "without ',' or ':'"),
        ]
        approver = self.daemon.client(on_request=lambda m: {"decision": "once"})
        try:  # what the policy asks about is approved: the backend's own checks refuse
            for spec, words in cases:
                with self.subTest(spec=spec):
                    with self.assertRaises(RpcError) as cm:
                        approver.call("sandbox.create", spec)
                    self.assertEqual(cm.exception.code, -32602, cm.exception.message)
                    self.assertIn(words, cm.exception.message)
        finally:
            approver.close()
        self.assertEqual(self.fake.instances(), [])

    def test_local_sif_is_used_as_it_is(self):
        sif = os.path.join(self.fake.dir, "mine.sif")
        built = self.fake.run("build", sif, "docker://busybox:local")
        self.assertEqual(built.returncode, 0, built.stderr)
        before = len(self.fake.calls("build"))
        sb = self.create(image=sif)
        self.assertEqual(sb["details"]["sif"], sif)
        self.assertEqual(self.run_in(sb, "cat /etc/fake-image")["stdout"],
                         "docker://busybox:local\n")
        self.assertEqual(len(self.fake.calls("build")), before)  # not built, not cached

    def assertRpcError(self, code, method, params):
        with self.assertRaises(RpcError) as cm:
            self.c.call(method, params)
        self.assertEqual(cm.exception.code, code, cm.exception.message)
        return cm.exception

    def test_concurrent_creates_build_once(self):
        ref = "docker://busybox:concurrent"
        self.fake.hook("hold-build")
        try:
            ids = [self.c.send({"jsonrpc": "2.0", "id": "cc%d" % i, "method": "sandbox.create",
                                "params": dict(SPEC, image=ref, name="cc%d" % i)}) or "cc%d" % i
                   for i in range(3)]
            seen = set()
            while len(seen) < 3:  # each create has reached the build (or its wait)
                m = self.c.read(60)
                if m.get("method") == "sandbox.progress" and m["params"]["phase"] == "build":
                    seen.add(m["params"]["sandbox"])
                elif "id" in m and "method" not in m:
                    self.fail("a create ended before the build was released: %s" % m)
        finally:
            self.fake.unhook("hold-build")
        for rid in ids:
            r = self.c.wait_response(rid, 120)
            self.assertIn("result", r, r)
        builds = [c for c in self.fake.calls("build") if c["argv"][-1] == ref]
        self.assertEqual(len(builds), 1, builds)

    def test_client_gone_during_the_build(self):
        """A create whose client disconnects while its SIF builds is cancelled: nothing is
        listed and no instance is started (the build itself goes on, for the cache)."""
        ref = "docker://busybox:abandoned"
        self.fake.hook("hold-build")
        self.addCleanup(self.fake.unhook, "hold-build")
        c = self.daemon.client()
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": dict(SPEC, image=ref, name="gone")})
        while True:  # the create has reached the build, which waits for the hook
            m = c.read(60)
            if m.get("method") == "sandbox.progress" and m["params"]["phase"] == "build":
                break
            self.assertNotIn("result", m, m)
        c.close()
        wait_for(lambda: "its client disconnected while it was being created: cancelling"
                 in self.daemon.read_log(), "the cancel")
        wait_for(lambda: not self.c.call("sandbox.list")["sandboxes"], "the create's end")
        self.fake.unhook("hold-build")
        self.assertEqual([i for i in self.fake.instances() if "gone" in json.dumps(i)], [])

    def test_purged_and_corrupted_entries_are_rebuilt(self):
        ref = "docker://busybox:damaged"
        self.c.call("sandbox.destroy", {"id": self.create(image=ref)["id"]})
        sif = self.create(image=ref)["details"]["sif"]  # a cache hit
        self.assertEqual(len([c for c in self.fake.calls("build") if c["argv"][-1] == ref]), 1)
        for sb in self.c.call("sandbox.list", {"backend": "singularity"})["sandboxes"]:
            self.c.call("sandbox.destroy", {"id": sb["id"]})
        damages = [("purged", lambda: os.unlink(sif), "is gone"),
                   ("rewritten", lambda: self.flip(sif, 40000), "differs from the one recorded"),
                   ("truncated", lambda: os.truncate(sif, 4096), "is damaged: truncated")]
        for n, (what, damage, words) in enumerate(damages, start=2):
            with self.subTest(what):
                damage()
                cl = self.daemon.client()
                try:
                    sb = cl.call("sandbox.create", dict(SPEC, image=ref), timeout=120)
                    msgs = [m["params"]["message"] for m in cl.notifications
                            if m["method"] == "sandbox.progress"]
                    self.assertTrue(any(words in m for m in msgs), msgs)
                    self.assertEqual(self.run_in(sb, "cat /etc/fake-image")["stdout"], ref + "\n")
                    cl.call("sandbox.destroy", {"id": sb["id"]})
                finally:
                    cl.close()
                builds = [c for c in self.fake.calls("build") if c["argv"][-1] == ref]
                self.assertEqual(len(builds), n)

    @staticmethod
    def flip(path, offset):
        with open(path, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0xFF]))

    def test_cache_list_and_prune(self):
        ref = "docker://busybox:prune-me"
        sb = self.create(image=ref)
        res = self.c.call("backend.cache", {"backend": "singularity"})
        entry = [e for e in res["entries"] if e["image"] == ref][0]
        self.assertTrue(entry["in_use"])
        self.assertEqual(len(entry["sha256"]), 64)
        res = self.c.call("backend.cache", {"backend": "singularity", "prune": True, "all": True})
        self.assertNotIn(ref, res["removed"])  # in use: never removed
        self.c.call("sandbox.destroy", {"id": sb["id"]})
        p = subprocess.run([SANDBOXCTL, "--socket", self.daemon.socket, "cache", "--prune",
                            "--all"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("removed %s" % ref, p.stdout)
        self.assertFalse(os.path.exists(entry["file"]))
        self.assertRaises(RpcError, self.c.call, "backend.cache", {"backend": "local"})

    def test_unprivileged_caller_is_refused(self):
        res = as_nobody(self.daemon.socket, [["sandbox.create", SPEC],
                                             ["backend.cache", {"backend": "singularity"}]])
        err = res[0]["error"]
        self.assertEqual(err["code"], -32000, err)
        self.assertIn("never on behalf of uid 65534", err["data"]["reason"])
        self.assertIn("sandboxd of your own", err["data"]["hint"])
        self.assertEqual(res[1]["error"]["code"], -32010)


class SingularityEvictionTest(FakeDaemonTest):
    extra = "cache_max_mb = 2\n"  # the fake's SIFs are about 1 MiB each

    def cached(self):
        return {e["image"]: e["in_use"] for e in
                self.c.call("backend.cache", {"backend": "singularity"})["entries"]}

    def test_lru_eviction_never_takes_an_image_in_use(self):
        a, b, c = ("docker://busybox:evict-%s" % x for x in "abc")
        self.c.call("sandbox.destroy", {"id": self.create(image=a)["id"]})
        sb_b = self.create(image=b)
        sb_c = self.create(image=c)  # three do not fit: a (unused, oldest) goes
        self.assertEqual(self.cached(), {b: True, c: True})
        sb_a = self.create(image=a)  # over the cap, but b and c are in use
        self.assertEqual(self.cached(), {a: True, b: True, c: True})
        self.run_in(sb_b, "true")
        self.c.call("sandbox.destroy", {"id": sb_b["id"]})  # b released: it goes
        self.assertEqual(self.cached(), {a: True, c: True})
        for sb in (sb_a, sb_c):
            self.c.call("sandbox.destroy", {"id": sb["id"]})


class SingularityAgentFailsTest(FakeDaemonTest):
    # /bin/false is dynamically linked: it cannot run in the fake's busybox root.
    extra = "agent = /bin/false\nstart_timeout_s = 3\n"

    def test_create_fails_naming_the_agent_and_leaves_nothing(self):
        with self.assertRaises(RpcError) as cm:
            self.create()
        self.assertEqual(cm.exception.code, -32005, cm.exception.message)
        self.assertIn("sandboxd-agent", cm.exception.message)
        self.assertIn("did not answer", cm.exception.message)
        self.assertIn("No such file or directory", cm.exception.message)  # the cause, in full
        listed = self.fake.run("instance", "list", "--json")
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertNotIn("sbxd-", listed.stdout)


@needs_root("needs root to mount a FUSE file system")
class SingularityHungBindTest(FakeDaemonTest):
    """The backend resolves its bind sources after the approval (what is bound is where they
    lead then, judged again), in helpers, off the loop, bounded by [limits] file_timeout_s:
    a source below a mount that stops answering meanwhile fails the create with -32005 and
    the daemon answers everyone (the old backend called realpath() on its loop and hung)."""
    # run.py -j: like HungWorkdir's, its FUSE mounts under /tmp never answer.
    run_alone = "mounts file systems that never answer"
    extra = "[limits]\nfile_timeout_s = 1\n"

    def test_bind_source_hangs_after_the_approval(self):
        self.hang_after_approval(lambda src: {
            "mounts": [{"type": "bind", "source": src, "target": "/w"}]})

    def test_section_bind_hangs_after_the_approval(self):  # Apptainer's own spelling
        self.hang_after_approval(lambda src: {"singularity": {"binds": [src + ":/w:ro"]}})

    def hang_after_approval(self, spec):
        top = tempfile.mkdtemp(prefix="hung-", dir=self.fake.dir)
        os.mkdir(os.path.join(top, "w"))
        mounts = []

        def approve(msg):  # judged (resolved) already: from now on top answers nothing
            mounts.append(HungMount(0, over=top))
            self.addCleanup(mounts[-1].close)
            return {"decision": "once"}
        c = self.daemon.client(on_request=approve)
        self.addCleanup(c.close)
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": dict(SPEC, **spec(top + "/w"))})
        while not mounts:
            c.read(timeout=60)  # answers the approval request
        req = mounts[0].next_request()  # the backend's lookup waits on the mount
        self.assertNotEqual(req[6], self.daemon.proc.pid, req)  # asked by a helper
        other = self.daemon.client()
        self.addCleanup(other.close)
        self.assertIn("version", other.call("daemon.info", timeout=30))
        r = c.wait_response(1, timeout=60)
        self.assertEqual(r.get("error", {}).get("code"), -32005, r)
        self.assertIn("host path '%s/w' did not answer within 1 s: a hung mount? name another "
                      "path" % top, r["error"]["message"])
        self.assertEqual(other.call("sandbox.list")["sandboxes"], [])
        self.assertEqual(self.fake.instances(), [])

    def test_local_image_below_a_hung_mount(self):
        # Its header was read on one of libuv's 4 worker threads, unbounded: the create never
        # ended and the thread stayed blocked (four such creates starve every worker job).
        mount = HungMount(0)
        self.addCleanup(mount.close)
        image = os.path.join(mount.dir, "x.sif")
        self.c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                     "params": dict(SPEC, image=image)})
        self.assertNotEqual(mount.next_request()[6], self.daemon.proc.pid)
        r = self.c.wait_response(1, timeout=30)
        self.assertEqual(r.get("error", {}).get("code"), -32005, r)
        self.assertIn("host path '%s' did not answer within 1 s" % image, r["error"]["message"])


class SingularityMissingToolTest(unittest.TestCase):
    def check(self, config, env, reason):
        d = Daemon(config, env=env)
        try:
            c = d.client()
            b = [b for b in c.call("backend.list")["backends"] if b["name"] == "singularity"][0]
            self.assertFalse(b["available"])
            self.assertIn(reason, b["reason"])
            self.assertIn("install Apptainer", b["hint"])
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", SPEC)
            self.assertEqual(cm.exception.code, -32000)
            self.assertIn(reason, cm.exception.data["reason"])
            c.close()
        finally:
            d.stop()

    def test_no_tool_on_path(self):
        self.check(None, {"PATH": "/nonexistent-bin"},
                   "neither apptainer nor singularity is on PATH (/nonexistent-bin)")

    def test_configured_tool_missing(self):
        self.check("[backend.singularity]\nexecutable = /nonexistent/apptainer\n", {},
                   "executable '/nonexistent/apptainer' is not an executable file")


class SingularityScratchTest(unittest.TestCase):
    def scratch(self, config):
        d = Daemon(config)
        try:
            c = d.client()
            b = [b for b in c.call("backend.list")["backends"] if b["name"] == "singularity"][0]
            c.close()
            return b["details"]["scratch_dir"], d.state
        finally:
            d.stop()

    def test_selection_order(self):
        base = os.path.realpath(FakeApptainer().dir)
        user = "root" if os.geteuid() == 0 else os.environ.get("USER")
        conf = "[backend.singularity]\nscratch_base = %s\n" % base
        got, _ = self.scratch(conf + "scratch_dir = %s/mine\n" % base)
        self.assertEqual(got, base + "/mine")
        got, _ = self.scratch(conf)
        self.assertEqual(got, "%s/%s/sandboxd" % (base, user))
        got, state = self.scratch("[backend.singularity]\nscratch_base = %s/none\n" % base)
        self.assertEqual(got, os.path.realpath(state) + "/singularity")
        subprocess.run(["rm", "-rf", base])


class SingularityRestartTest(unittest.TestCase):
    def test_readopted_after_restart(self):
        fake = FakeApptainer()
        state = os.path.join(fake.dir, "state")
        d = Daemon(fake.config(), env=fake.env(), state_dir=state)
        try:
            c = d.client()
            sb = c.call("sandbox.create", dict(SPEC, name="keep"), timeout=120)
            gone = c.call("sandbox.create", dict(SPEC, name="gone"), timeout=120)
            r = c.call("exec", {"sandbox": "keep", "background": True, "command":
                                "echo before; while [ ! -e /tmp/go ]; do sleep 0.05; done; "
                                "echo after"})
            wait_for(lambda: c.call("process.read", {"exec_id": r["exec_id"]})["data"],
                     "the first line")
            c.close()
            d.stop()
            fake.run("instance", "stop", gone["details"]["instance"])
            # Ours without a record (an orphan) goes; another daemon's stays.
            tag = hashlib.sha256(os.path.realpath(state).encode()).hexdigest()[:8]
            other = "sbxd-%s-0ther000" % ("0" if tag[0] != "0" else "1") + tag[1:]
            for name in ("sbxd-%s-0rphan00" % tag, other):
                p = fake.run("instance", "start", sb["details"]["sif"], name)
                self.assertEqual(p.returncode, 0, p.stderr)
            d = Daemon(fake.config(), env=fake.env(), state_dir=state)
            c = d.client()
            names = [s["name"] for s in c.call("sandbox.list")["sandboxes"]]
            self.assertEqual(names, ["keep"])  # the stopped instance's record was dropped
            wait_for(lambda: len(fake.instances()) == 2, "the orphan to be stopped")
            self.assertEqual(sorted(i["instance"] for i in fake.instances()),
                             sorted([sb["details"]["instance"], other]))
            c.call("file.write", {"sandbox": "keep", "path": "/tmp/go", "data": ""})
            w = c.call("process.wait", {"exec_id": r["exec_id"], "timeout_ms": 60000})
            self.assertEqual(w["exit_code"], 0, w)
            out = c.call("process.read", {"exec_id": r["exec_id"]})["data"]
            self.assertEqual(out, "before\nafter\n")
            c.call("sandbox.destroy", {"id": "keep"})
            self.assertEqual([i["instance"] for i in fake.instances()], [other])
            c.close()
        finally:
            d.stop()
            fake.cleanup()


if __name__ == "__main__":
    unittest.main()
