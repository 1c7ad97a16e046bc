"""Docker backend through the daemon socket, against the real dockerd.

Needs dockerd and the image sandboxd-test:busybox (tests/docker/setup.sh). When dockerd is not
reachable every test here FAILS (it is never skipped): run tests/docker/setup.sh first.
"""
import base64
import fcntl
import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import termios
import threading
import time
import unittest

from harness import Daemon, DaemonTest, RpcError, assert_taken_back_whole, b64, class_resource

IMAGE = os.environ.get("SANDBOXD_TEST_IMAGE", "sandboxd-test:busybox")
DOCKER_SOCK = "/var/run/docker.sock"
SETUP_HINT = "run tests/docker/setup.sh (it starts dockerd and builds %s)" % IMAGE


def docker_api(method, path):
    """(status, parsed body) of one Engine API call over the Unix socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(DOCKER_SOCK)
    s.sendall(("%s %s HTTP/1.0\r\nHost: docker\r\n\r\n" % (method, path)).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, body


def require_docker():
    """Fails (never skips) when dockerd or the test image is missing."""
    try:
        status, _ = docker_api("GET", "/_ping")
    except OSError as e:
        raise AssertionError("dockerd is not reachable at %s (%s): %s"
                             % (DOCKER_SOCK, e, SETUP_HINT))
    if status != 200:
        raise AssertionError("dockerd answered _ping with HTTP %d: %s" % (status, SETUP_HINT))
    status, _ = docker_api("GET", "/images/%s/json" % IMAGE)
    if status != 200:
        raise AssertionError("the test image %s is missing: %s" % (IMAGE, SETUP_HINT))


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), check=check, capture_output=True, text=True)


def inspect(cid):
    status, body = docker_api("GET", "/containers/%s/json" % cid)
    return body if status == 200 else None


def remove_instance_containers(state_dir):
    """Removes every container a test daemon with this state directory labelled."""
    out = docker("ps", "-aq", "--filter", "label=sandboxd.instance=%s" % state_dir).stdout
    ids = out.split()
    if ids:
        docker("rm", "-f", *ids, check=False)


def stop_removing_containers(daemon):
    """Stops a test daemon, then removes the containers it labelled (also when it did not
    stop cleanly)."""
    try:
        daemon.stop()
    finally:
        remove_instance_containers(daemon.state)


def config(extra=""):
    return "[backend.docker]\nimage = %s\npids_limit = 300\nmemory = 256m\n%s" % (IMAGE, extra)


class DockerDaemonTest(DaemonTest):
    """A daemon whose docker containers are removed after the class."""

    @classmethod
    def setUpClass(cls):
        require_docker()
        # DaemonTest's, with the containers removed by the class cleanup (after tearDownClass
        # stopped the daemon, or when a subclass's setUpClass fails after this).
        cls.daemon = class_resource(cls, Daemon, cls.config, stop=stop_removing_containers)

    def create(self, **params):
        params.setdefault("backend", "docker")
        return self.c.call("sandbox.create", params, timeout=120)

    def exec(self, sandbox, timeout=120, **params):
        params["sandbox"] = sandbox
        return self.c.call("exec", params, timeout=timeout)


class DockerSandbox(DockerDaemonTest):
    """Execs through the resident sandboxd-agent (the default)."""
    config = config()
    agent = True

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = cls.daemon.client()
        cls.sb = c.call("sandbox.create", {"backend": "docker", "name": "main"}, timeout=120)
        cls.cid = cls.sb["details"]["container_id"]
        c.close()

    def test_destroy_leaves_no_state_directory(self):
        # What the daemon made for a destroyed sandbox is gone before the answer: only the
        # class's own sandbox has a directory (create/destroy in a loop used to grow it).
        sandboxes = os.path.join(self.daemon.state, "sandboxes")
        for _ in range(2):
            sb = self.create()
            self.assertTrue(os.path.isdir(os.path.join(sandboxes, sb["id"])))
            self.assertTrue(self.c.call("sandbox.destroy", {"id": sb["id"]},
                                        timeout=120)["destroyed"])
            self.assertEqual(os.listdir(sandboxes), [self.sb["id"]], self.daemon.read_log())

    def test_hardening_visible_in_docker_inspect(self):
        info = inspect(self.cid)
        self.assertIsNotNone(info, "container %s not found" % self.cid)
        hc = info["HostConfig"]
        self.assertEqual(hc["CapDrop"], ["ALL"])
        self.assertNotIn("SYS_ADMIN", hc["CapAdd"] or [])
        self.assertNotIn("NET_RAW", hc["CapAdd"] or [])
        self.assertIn("no-new-privileges", hc["SecurityOpt"])
        # Through the agent, the agent is the init (PID 1, it reaps orphans); else docker-init.
        self.assertEqual(hc["Init"], not self.agent)
        self.assertEqual(hc["PidsLimit"], 300)  # from the config, not hard-coded
        # the operator's default memory limit when the spec gives none, without swap
        self.assertEqual((hc["Memory"], hc["MemorySwap"]), (256 << 20, 256 << 20))
        self.assertEqual(hc["NetworkMode"], "none")
        self.assertFalse(hc["Privileged"])
        self.assertEqual(hc["CgroupnsMode"], "private")
        self.assertIn("/tmp", hc["Tmpfs"])
        labels = info["Config"]["Labels"]
        self.assertEqual(labels["sandboxd"], "1")
        self.assertEqual(labels["sandboxd.sandbox"], self.sb["id"])
        self.assertEqual(labels["sandboxd.owner"], str(os.getuid()))
        self.assertEqual(labels["sandboxd.instance"], self.daemon.state)
        self.assertTrue(info["State"]["Running"])
        self.assertEqual(self.sb["backend"], "docker")
        self.assertFalse(self.sb["host_access"])

    def test_interleaved_stdout_stderr_streamed(self):
        cmd = "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done"
        r = self.exec("main", command=cmd)
        self.assertEqual(r["exit_code"], 0, r)
        want_out = "".join("out%d\n" % i for i in range(1, 6))
        want_err = "".join("err%d\n" % i for i in range(1, 6))
        self.assertEqual(r["stdout"], want_out)
        self.assertEqual(r["stderr"], want_err)
        self.assertEqual(self.c.output(r["exec_id"], "stdout"), want_out)
        self.assertEqual(self.c.output(r["exec_id"], "stderr"), want_err)

    def test_stdin_round_trip_binary(self):
        data = bytes(range(256)) * 64 + os.urandom(1000)
        r = self.exec("main", argv=["cat"], stdin_base64=b64(data), output_encoding="base64")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(base64.b64decode(r["stdout"]), data)

    def test_stdin_open_process_write(self):
        r = self.exec("main", argv=["sh", "-c", "read l; echo got:$l"], stdin_open=True,
                      background=True)
        eid = r["exec_id"]
        self.c.call("process.write", {"exec_id": eid, "data": "hello\n", "eof": True})
        w = self.c.call("process.wait", {"exec_id": eid, "timeout_ms": 30000}, timeout=60)
        self.assertEqual(w["exit_code"], 0, w)
        rd = self.c.call("process.read", {"exec_id": eid})
        self.assertEqual(rd["data"], "got:hello\n")

    def test_100mb_output_counted(self):
        n = 100 * 1024 * 1024
        t = time.monotonic()
        r = self.exec("main", command="head -c %d /dev/zero | tr '\\0' a" % n, timeout=300)
        elapsed = time.monotonic() - t
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout_bytes"], n)
        self.assertTrue(r["truncated"])
        streamed = sum(len(m["params"]["data"]) for m in self.c.notifications
                       if m["method"] == "exec.output"
                       and m["params"]["exec_id"] == r["exec_id"])
        self.assertEqual(streamed, n)
        print("\n    100 MB through a docker exec: %.2f s" % elapsed, end=" ")

    def test_shell_state_persists(self):
        self.exec("main", command="mkdir -p /work/sub && cd /work/sub && export SBX_T=42")
        r = self.exec("main", command="pwd; echo $SBX_T")
        self.assertEqual(r["stdout"], "/work/sub\n42\n")

    def test_timeout_kills_tree_inside_container(self):
        cmd = "sleep 4241 & (sleep 4242 &); sh -c 'sleep 4243'; wait"
        r = self.exec("main", command=cmd, timeout_s=1)
        self.assertTrue(r["timed_out"], r)
        ps = docker("exec", self.cid, "ps", "-o", "pid,args").stdout
        self.assertNotIn("sleep 424", ps)

    def test_process_kill_tree_inside_container(self):
        r = self.exec("main", command="sleep 5251 & sleep 5252", background=True)
        eid = r["exec_id"]
        deadline = time.monotonic() + 20
        while "sleep 5252" not in docker("exec", self.cid, "ps", "-o", "args").stdout:
            self.assertLess(time.monotonic(), deadline, "exec did not start")
            time.sleep(0.05)
        k = self.c.call("process.kill", {"exec_id": eid, "grace_ms": 500}, timeout=60)
        self.assertEqual(k["survivors"], 0, k)
        self.assertNotIn("sleep 525", docker("exec", self.cid, "ps", "-o", "args").stdout)

    def test_file_round_trip_binary(self):
        data = os.urandom(200000) + bytes(range(256))
        for path in ("/work/blob.bin", "/tmp/blob.bin"):  # image layer, then the tmpfs
            with self.subTest(path=path):
                w = self.c.call("file.write", {"sandbox": "main", "path": path,
                                               "data_base64": b64(data)}, timeout=60)
                self.assertEqual(w["bytes"], len(data))
                r = self.c.call("file.read", {"sandbox": "main", "path": path,
                                              "max_bytes": len(data),
                                              "output_encoding": "base64"}, timeout=60)
                self.assertEqual(base64.b64decode(r["data"]), data)
                self.assertEqual(r["size"], len(data))
                self.assertTrue(r["eof"])
                e = self.exec("main", command="md5sum %s" % path)
                self.assertEqual(e["stdout"].split()[0], hashlib.md5(data).hexdigest())

    def test_pull_error_reaches_the_client(self):
        """The registry's own message and a hint, not "pull IMAGE: failed" (issue 17). The
        registry is a closed port on 127.0.0.1: nothing leaves this machine."""
        with self.assertRaises(RpcError) as cm:
            self.create(image="127.0.0.1:9/sandboxd-test/none:latest")
        e = cm.exception
        self.assertEqual(e.code, -32005, e.message)
        self.assertIn("connection refused", e.message)
        self.assertIn("connection refused", e.data["detail"])
        self.assertIn("unreachable", e.data["hint"])

    def test_file_write_refuses_fifo(self):
        # The helper behind tmpfs paths and appends would block on a FIFO forever.
        self.exec("main", command="mkfifo /tmp/fifo /work/fifo")
        for path, append in (("/tmp/fifo", False), ("/work/fifo", True)):
            with self.subTest(path=path):
                with self.assertRaises(RpcError) as cm:
                    self.c.call("file.write", {"sandbox": "main", "path": path, "data": "x",
                                               "append": append}, timeout=60)
                self.assertEqual(cm.exception.code, -32602, cm.exception.message)
                self.assertIn("not a regular file", cm.exception.message)

    def test_backend_list_shows_docker(self):
        bl = self.c.call("backend.list")["backends"]
        d = [b for b in bl if b["name"] == "docker"][0]
        self.assertTrue(d["available"], d)
        self.assertRegex(d["details"]["api_version"], r"^1\.\d+$")
        self.assertEqual(d["details"]["exec"], "agent" if self.agent else "docker exec")

    def test_exec_mode_visible(self):
        info = inspect(self.cid)
        agent_mounts = [m for m in info["Mounts"] if m["Destination"] == "/.sandboxd/agent"]
        # Through the agent a command is the agent's child; a docker exec's parent is outside
        # the container's pid namespace.
        parent = self.exec("main", argv=["sh", "-c", "cat /proc/$PPID/comm"])["stdout"]
        if self.agent:
            self.assertEqual(info["Config"]["Cmd"],
                             ["/.sandboxd/agent", "--runtime-dir", "/tmp/.sandboxd"])
            self.assertFalse(info["Config"]["Entrypoint"])
            self.assertEqual(info["Config"]["Labels"]["sandboxd.agent"], "1")
            self.assertEqual(info["HostConfig"]["LogConfig"]["Type"], "none")
            self.assertEqual(len(agent_mounts), 1, info["Mounts"])
            self.assertFalse(agent_mounts[0]["RW"])
            self.assertEqual(parent, "agent\n")
        else:
            self.assertEqual(agent_mounts, [])
            self.assertNotIn("sandboxd.agent", info["Config"]["Labels"])
            self.assertNotEqual(parent, "agent\n")

    def test_missing_program_and_bad_cwd(self):
        if not self.agent:
            # One docker exec per command runs it through sh: exit 127 and sh's message.
            r = self.exec("main", argv=["/no/such/program"])
            self.assertEqual(r["exit_code"], 127, r)
            return
        with self.assertRaises(RpcError) as e:
            self.exec("main", argv=["/no/such/program"])
        self.assertEqual(e.exception.code, -32602)
        self.assertIn("cannot execute '/no/such/program' in the container", e.exception.message)
        with self.assertRaises(RpcError) as e:
            self.exec("main", argv=["true"], cwd="/no/such/dir")
        self.assertEqual(e.exception.code, -32602)
        self.assertIn("/no/such/dir", e.exception.message)
        self.assertEqual(self.exec("main", argv=["true"])["exit_code"], 0)
        # In the background the answer comes first: the failure ends the process afterwards.
        r = self.exec("main", argv=["/no/such/program"], background=True)
        w = self.c.call("process.wait", {"exec_id": r["exec_id"], "timeout_ms": 30000},
                        timeout=60)
        self.assertEqual(w["exit_code"], 125, w)
        rd = self.c.call("process.read", {"exec_id": r["exec_id"], "stream": "stderr"})
        self.assertEqual(rd["data"], "sandboxd: cannot execute '/no/such/program' in the "
                                     "container: No such file or directory\n")

    def test_agent_requests_not_writable_from_inside(self):
        if not self.agent:
            return
        # Only the agent holds the container's stdio: it is PID 1 (no docker-init, no
        # entrypoint shell in between, both dumpable) and not dumpable itself, and the
        # container has no CAP_SYS_PTRACE, so root in the container (the same uid) can open
        # none of the stream's ends.
        find = ("for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = agent ] && "
                "echo ${p#/proc/}; done")
        self.assertEqual(self.exec("main", command=find)["stdout"].split(), ["1"])
        for fd in ("0", "1"):
            r = self.exec("main", command="printf 'AAAAAAAAAAAAAAAA' > /proc/1/fd/%s" % fd)
            self.assertNotEqual(r["exit_code"], 0, r)
            self.assertIn("ermission denied", r["stderr"])
        r = self.exec("main", command="head -c 12 /proc/1/fd/0")
        self.assertNotEqual(r["exit_code"], 0, r)
        self.assertEqual(self.exec("main", argv=["echo", "still fine"])["stdout"],
                         "still fine\n")

    def test_orphans_are_reaped(self):
        # A double fork leaves `sleep` to the init: the agent (or docker-init) must reap it.
        self.exec("main", command="(sleep 0.2 &); echo spawned")
        deadline = time.monotonic() + 20
        while True:
            ps = self.exec("main", argv=["ps", "-o", "stat,args"])["stdout"]
            if "sleep 0.2" not in ps:
                break
            self.assertLess(time.monotonic(), deadline, ps)
            time.sleep(0.1)
        self.assertNotIn("Z", [line.split()[0] for line in ps.splitlines()[1:]], ps)

    def test_oom_reported(self):
        self.create(name="oom", resources={"memory_mb": 32})
        r = self.exec("oom", command="x=$(head -c 200000000 /dev/zero | tr '\\0' a); "
                                     "echo ${#x}")
        self.assertTrue(r["oom_killed"], r)
        self.assertEqual(r["signal"], "SIGKILL")
        r = self.exec("oom", command="exit 137")
        self.assertFalse(r["oom_killed"], r)
        self.assertEqual(r["exit_code"], 137)


class DockerSandboxExecMode(DockerSandbox):
    """The same tests with one `docker exec` per command (agent = off)."""
    config = config("agent = off\n")
    agent = False


def make_tls_material(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, in the layout of
    DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem) plus server-cert.pem/server-key.pem."""
    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=sandboxd-test-ca")
    for name, subj, ext in (("server", "/CN=127.0.0.1",
                             "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                            ("client", "/CN=sandboxd-test-client",
                             "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        run("req", *ec, "-keyout", name + "-key.pem", "-out", name + ".csr", "-subj", subj)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
            "-CAcreateserial", "-out", name + "-cert.pem", "-days", "2",
            "-extfile", name + ".ext")
    os.rename(os.path.join(d, "client-cert.pem"), os.path.join(d, "cert.pem"))
    os.rename(os.path.join(d, "client-key.pem"), os.path.join(d, "key.pem"))


class TLSProxy:
    """dockerd behind mutual TLS on 127.0.0.1: socat terminates TLS (client certificate
    required) and forwards to the Unix socket, hijacked streams included."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sbx-tls-")
        make_tls_material(self.dir)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen(
            ["socat", "OPENSSL-LISTEN:%d,bind=127.0.0.1,reuseaddr,fork,cert=%s,key=%s,"
             "cafile=%s,verify=1" % (self.port, os.path.join(self.dir, "server-cert.pem"),
                                     os.path.join(self.dir, "server-key.pem"),
                                     os.path.join(self.dir, "ca.pem")),
             "UNIX-CONNECT:%s" % DOCKER_SOCK], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.close()  # the caller gets no proxy to close
                    raise AssertionError("socat did not listen on %d" % self.port)
                time.sleep(0.05)

    def config(self, extra=""):
        return config("host = tcp://127.0.0.1:%d\ncert_path = %s\n%s"
                      % (self.port, self.dir, extra))

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class DockerTLS(DockerDaemonTest):
    """tcp:// with TLS client certificates: API calls through libcurl, and the agent's attach
    (a hijacked stream) on libcurl's TLS connection."""

    @classmethod
    def setUpClass(cls):
        cls.proxy = class_resource(cls, TLSProxy, stop="close")
        cls.config = cls.proxy.config()
        super().setUpClass()

    def test_proxy_requires_a_client_certificate(self):
        import ssl
        ctx = ssl.create_default_context(cafile=os.path.join(self.proxy.dir, "ca.pem"))
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError)):
            with socket.create_connection(("127.0.0.1", self.proxy.port), 5) as raw:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as t:
                    t.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
                    if not t.recv(100):
                        raise ConnectionError("closed")

    def test_sandbox_over_tls(self):
        d = [b for b in self.c.call("backend.list")["backends"] if b["name"] == "docker"][0]
        self.assertTrue(d["available"], d)
        self.assertEqual(d["details"]["host"], "tcp://127.0.0.1:%d" % self.proxy.port)
        self.create(name="t")
        r = self.exec("t", command="echo over-tls; echo err >&2; exit 4")
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("over-tls\n", "err\n", 4))
        data = os.urandom(300000)
        r = self.exec("t", argv=["cat"], stdin_base64=b64(data), output_encoding="base64")
        self.assertEqual(base64.b64decode(r["stdout"]), data)
        b = self.exec("t", command="sleep 6161 & sleep 6162", background=True)
        k = self.c.call("process.kill", {"exec_id": b["exec_id"], "grace_ms": 300}, timeout=60)
        self.assertEqual(k["survivors"], 0, k)
        self.assertNotIn("616", self.exec("t", argv=["ps", "-o", "args"])["stdout"])
        w = self.c.call("file.write", {"sandbox": "t", "path": "/work/f", "data": "tls\n"})
        self.assertEqual(w["bytes"], 4)
        self.assertEqual(self.c.call("file.read", {"sandbox": "t", "path": "/work/f"})["data"],
                         "tls\n")

    def test_docker_exec_mode_over_tls_refuses_stdin(self):
        d = Daemon(self.proxy.config("agent = off\n"))
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "docker", "name": "x"}, timeout=120)
            r = c.call("exec", {"sandbox": "x", "argv": ["echo", "fine"]})
            self.assertEqual(r["stdout"], "fine\n")
            with self.assertRaises(RpcError) as e:
                c.call("exec", {"sandbox": "x", "argv": ["cat"], "stdin": "x"})
            self.assertEqual(e.exception.code, -32602, e.exception)
            self.assertIn("over TLS", e.exception.message)
            c.close()
        finally:
            stop_removing_containers(d)


class DockerPolicy(DockerDaemonTest):
    config = config()

    def assertDenied(self, **params):
        with self.assertRaises(RpcError) as cm:
            self.create(**params)
        self.assertEqual(cm.exception.code, -32001, cm.exception.message)
        self.assertEqual(cm.exception.data["verdict"], "deny", cm.exception.data)
        self.assertEqual(self.c.call("sandbox.list", {"backend": "docker"})["sandboxes"], [])

    def test_docker_socket_bind_denied(self):
        self.assertDenied(docker={"host_config": {
            "Binds": ["/var/run/docker.sock:/var/run/docker.sock"]}})
        self.assertDenied(mounts=[{"type": "bind", "source": "/var/run/docker.sock",
                                   "target": "/var/run/docker.sock"}])

    def test_privileged_denied(self):
        self.assertDenied(docker={"host_config": {"Privileged": True}})

    def test_host_config_cannot_undo_resources(self):
        # docker.host_config merges over the defaults: a limit there would silently replace
        # resources.* while the sandbox still reports it as enforced by docker.
        for res, hc, key in (({"memory_mb": 64}, {"Memory": 0}, "Memory"),
                             ({"memory_mb": 64}, {"MemorySwap": -1}, "MemorySwap"),
                             ({"cpus": 1}, {"NanoCpus": 0}, "NanoCpus"),
                             ({"cpus": 0.5}, {"CpuQuota": -1}, "CpuQuota")):
            with self.subTest(key=key), self.assertRaises(RpcError) as cm:
                self.create(resources=res, docker={"host_config": hc})
            self.assertEqual(cm.exception.code, -32602, cm.exception.message)
            self.assertIn("docker.host_config.%s" % key, cm.exception.message)
            self.assertIn("resources.%s" % next(iter(res)), cm.exception.message)
        self.assertEqual(self.c.call("sandbox.list", {"backend": "docker"})["sandboxes"], [])

    def test_etc_bind_denied(self):
        self.assertDenied(mounts=[{"type": "bind", "source": "/etc", "target": "/hostetc"}])

    def test_named_volume_binding_etc_denied(self):
        name = "sbxtest-etc-%d" % os.getpid()
        docker("volume", "create", "--driver", "local", "-o", "type=none", "-o", "o=bind",
               "-o", "device=/etc", name)
        try:
            self.assertDenied(mounts=[{"type": "volume", "source": name, "target": "/v"}])
            self.assertDenied(docker={"host_config": {"Binds": ["%s:/v" % name]}})
        finally:
            docker("volume", "rm", "-f", name, check=False)
        self.assertIsNone(inspect("sandboxd-" + name))


class DockerRecreate(DockerDaemonTest):
    config = config()

    def test_removed_behind_our_back_is_recreated(self):
        sb = self.create(name="rec")
        self.exec("rec", command="cd /tmp && export REC=1 && echo x > /work/mark")
        docker("rm", "-f", sb["details"]["container_id"])
        r = self.exec("rec", command="pwd; echo ${REC:-unset}; cat /work/mark 2>&1 || true")
        self.assertTrue(r.get("sandbox_recreated"), r)
        self.assertEqual(r["exit_code"], 0, r)
        # A new container: the shell state and the files of the old one are gone.
        self.assertEqual(r["stdout"].splitlines()[:2], ["/", "unset"])
        got = self.c.call("sandbox.get", {"id": "rec"})
        new_cid = got["details"]["container_id"]
        self.assertNotEqual(new_cid, sb["details"]["container_id"])
        self.assertTrue(inspect(new_cid)["State"]["Running"])
        # The record follows the new container.
        with open(os.path.join(self.daemon.state, "sandboxes.json")) as f:
            recs = json.load(f)["sandboxes"]
        self.assertEqual([x["record"]["container_id"] for x in recs if x["id"] == sb["id"]],
                         [new_cid])
        # The next exec runs in it normally.
        r = self.exec("rec", command="echo ok")
        self.assertEqual(r["stdout"], "ok\n")
        self.assertNotIn("sandbox_recreated", r)

    def test_stopped_container_recreated_for_background_exec(self):
        sb = self.create(name="stopped")
        docker("stop", "-t", "0", sb["details"]["container_id"])
        r = self.exec("stopped", argv=["sh", "-c", "echo bg"], background=True)
        w = self.c.call("process.wait", {"exec_id": r["exec_id"], "timeout_ms": 30000},
                        timeout=60)
        self.assertEqual(w["exit_code"], 0, w)
        # Recreated before the immediate answer when the daemon saw the container stop first
        # (the usual case), else while the exec was starting: then only the end says so.
        self.assertTrue(w.get("sandbox_recreated"), w)
        exits = [n["params"] for n in self.c.notifications if n["method"] == "exec.exit"
                 and n["params"]["exec_id"] == r["exec_id"]]
        self.assertTrue(all(e.get("sandbox_recreated") for e in exits), exits)
        self.assertEqual(self.c.call("process.read", {"exec_id": r["exec_id"]})["data"], "bg\n")


class DockerNoRecreate(DockerDaemonTest):
    config = config("recreate = false\n")

    def test_vanished_container_reports_32006(self):
        sb = self.create(name="norec")
        docker("rm", "-f", sb["details"]["container_id"])
        # The daemon learns of the kill ("die") and of the removal ("destroy") from Docker's
        # event stream: an exec between the two is told "exited", one after it "removed".
        deadline = time.monotonic() + 20
        while True:
            with self.assertRaises(RpcError) as cm:
                self.exec("norec", command="echo hi")
            self.assertEqual(cm.exception.code, -32006, cm.exception.message)
            state = cm.exception.data["state"]
            self.assertIn(state, ("exited", "removed"))
            if state == "removed" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(state, "removed")
        self.assertIsNone(inspect("sandboxd-" + sb["id"]))


class EndlessRegistry:
    """A registry on 127.0.0.1 whose every answer is a body that never ends (a space now and
    then): a pull from it lasts until whoever pulls gives up, so a create stays in its pull
    phase until the daemon cancels it."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        # dockerd tries TLS first; a plain answer makes it fall back to HTTP (127.0.0.0/8 is
        # an insecure registry by default), which gets the same endless answer.
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Docker-Distribution-API-Version: registry/2.0\r\n"
                         b"Content-Length: 1000000000\r\n\r\n")
            self.connected.set()
            while not self.stopping.wait(0.2):
                conn.sendall(b" ")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping.set()
        self.sock.close()


class DockerCancel(unittest.TestCase):
    """The daemon cancels a create whose client is gone, or at SIGTERM: nothing is left."""

    def setUp(self):
        require_docker()
        self.reg = EndlessRegistry()
        self.d = Daemon(config())
        self.state = self.d.state

    def tearDown(self):
        if self.d.proc.poll() is None:
            self.d.stop()
        self.reg.close()
        remove_instance_containers(self.state)

    def start_create(self):
        c = self.d.client()
        c.send({"jsonrpc": "2.0", "id": 1, "method": "sandbox.create",
                "params": {"backend": "docker", "name": "slow",
                           "image": "127.0.0.1:%d/sandboxd-test/slow:latest" % self.reg.port}})
        # dockerd is pulling for this create now (and would be until the test gives up).
        self.assertTrue(self.reg.connected.wait(60), self.d.read_log())
        return c

    def containers(self):
        return docker("ps", "-aq", "--filter",
                      "label=sandboxd.instance=%s" % self.state).stdout.split()

    def test_client_gone_during_a_pull(self):
        c = self.start_create()
        c.close()
        probe = self.d.client()
        deadline = time.monotonic() + 60
        # The cancelled create ends (while the pull would still hang): nothing is listed.
        while "cancelling" not in self.d.read_log() or probe.call("sandbox.list")["sandboxes"]:
            self.assertLess(time.monotonic(), deadline, self.d.read_log())
            time.sleep(0.05)
        probe.close()
        log = self.d.stop()
        self.assertIn("its client disconnected while it was being created: cancelling", log)
        self.assertEqual(self.containers(), [])

    def test_sigterm_during_a_pull(self):
        c = self.start_create()
        log = self.d.stop()
        c.close()
        self.assertIn("cancelling its creation (shutting down)", log)
        self.assertEqual(self.containers(), [])


class RestartTest(unittest.TestCase):
    """Daemons started one after the other on the same state directory."""

    def setUp(self):
        require_docker()
        self.state = tempfile.mkdtemp(prefix="sbxstate-")
        self.others = []

    def tearDown(self):
        remove_instance_containers(self.state)
        for cid in self.others:
            docker("rm", "-f", cid, check=False)
        shutil.rmtree(self.state, ignore_errors=True)

    def start(self, extra=""):
        return Daemon(config(extra), state_dir=self.state)

    def orphan(self, instance, sandbox_id):
        return docker("run", "-d", "--network", "none", "--label", "sandboxd=1",
                      "--label", "sandboxd.instance=%s" % instance,
                      "--label", "sandboxd.sandbox=%s" % sandbox_id,
                      IMAGE, "sleep", "1000").stdout.strip()


class DockerRestart(RestartTest):
    """Restarts with the same state directory: sandboxes are re-adopted, orphans removed."""

    def test_restart_readopts_and_removes_orphans(self):
        d = self.start()
        try:
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "docker", "name": "keep"}, timeout=120)
            gone = c.call("sandbox.create", {"backend": "docker", "name": "gone"}, timeout=120)
            c.call("file.write", {"sandbox": "keep", "path": "/work/f", "data": "kept\n"})
            c.call("exec", {"sandbox": "keep", "command": "cd /work && export K=v"})
            c.close()
        finally:
            log = d.stop()
        self.assertIn("kept for re-adoption", log)
        cid = sb["details"]["container_id"]
        self.assertTrue(inspect(cid)["State"]["Running"], "SIGTERM must not remove it")
        docker("rm", "-f", gone["details"]["container_id"])
        orphan = self.orphan(self.state, "sbx_00000000")
        foreign = self.orphan("/some/other/daemon", "sbx_00000001")
        self.others.append(foreign)

        t = time.monotonic()
        d = self.start()
        startup = time.monotonic() - t
        try:
            c = d.client()
            lst = c.call("sandbox.list", {"backend": "docker"})["sandboxes"]
            self.assertEqual([(x["id"], x["name"]) for x in lst], [(sb["id"], "keep")])
            self.assertEqual(lst[0]["created_at"], sb["created_at"])
            r = c.call("exec", {"sandbox": "keep", "command": "cat /work/f"})
            self.assertEqual(r["stdout"], "kept\n")
            got = c.call("sandbox.get", {"id": "keep"})
            self.assertEqual(got["details"]["container_id"], cid)
            self.assertFalse(got["host_access"], got)  # the agent's own mount is not the host's
            self.assertIsNone(inspect(orphan), "the orphan was not removed")
            self.assertIsNotNone(inspect(foreign), "another daemon's container was removed")
            c.call("sandbox.destroy", {"id": "keep"}, timeout=60)
            self.assertIsNone(inspect(cid))
            c.close()
        finally:
            log = d.stop()
        self.assertIn("re-adopted", log)
        self.assertIn("record dropped", log)
        self.assertIn("docker: removed 1 orphan sandbox of this daemon", log)
        with open(os.path.join(self.state, "sandboxes.json")) as f:
            self.assertEqual(json.load(f), {"version": 1, "sandboxes": []})
        print("\n    restart with 2 records + 1 orphan: READY after %.2f s" % startup, end=" ")

    def test_killed_daemon_mid_stream_then_agent_resyncs(self):
        """SIGKILL while the agent streams output: the next daemon's attach starts mid-message
        and must find the READY that answers its own HELLO; the exec is taken back and goes
        on (its output was spooled meanwhile, as far as the agent's quota allows)."""
        d = self.start()
        try:
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "docker", "name": "s"}, timeout=120)
            r = c.call("exec", {"sandbox": "s", "command": "yes streaming-7373",
                                "background": True})
            deadline = time.monotonic() + 30
            while not c.output(r["exec_id"]):
                self.assertLess(time.monotonic(), deadline, "no output streamed")
                msg = c.read(5)
                if "method" in msg and "id" not in msg:
                    c.notifications.append(msg)
            d.proc.kill()
        finally:
            d.stop(expect=-9)
        cid = sb["details"]["container_id"]
        self.assertIn("streaming-7373", docker("exec", cid, "ps", "-o", "args").stdout)
        d = self.start()
        try:
            c = d.client()
            for i in range(5):
                e = c.call("exec", {"sandbox": "s", "argv": ["echo", "after-%d" % i]})
                self.assertEqual(e["stdout"], "after-%d\n" % i)
            lst = c.call("process.list", {"state": "running"})["processes"]
            self.assertEqual([p["exec_id"] for p in lst], [r["exec_id"]])
            first = c.call("process.read", {"exec_id": r["exec_id"], "max_bytes": 40})
            self.assertTrue(first["data"].startswith("streaming-7373\n"), first)
            k = c.call("process.kill", {"exec_id": r["exec_id"], "grace_ms": 300}, timeout=60)
            self.assertEqual(k["survivors"], 0, k)
            self.assertNotIn("streaming-7373", docker("exec", cid, "ps", "-o", "args").stdout)
            c.close()
        finally:
            d.stop()

    def test_corrupt_records_moved_aside(self):
        os.makedirs(self.state, exist_ok=True)
        path = os.path.join(self.state, "sandboxes.json")
        with open(path, "w") as f:
            f.write('{"version": 1, "sandboxes": [')
        d = self.start()
        try:
            aside = glob.glob(path + ".corrupt-*")
            self.assertEqual(len(aside), 1, os.listdir(self.state))
            with open(aside[0]) as f:
                self.assertEqual(f.read(), '{"version": 1, "sandboxes": [')
            with open(path) as f:  # replaced by a valid, empty one
                self.assertEqual(json.load(f), {"version": 1, "sandboxes": []})
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "docker", "name": "after"}, timeout=120)
            with open(path) as f:
                self.assertEqual([x["id"] for x in json.load(f)["sandboxes"]], [sb["id"]])
            c.close()
        finally:
            log = d.stop()
        self.assertIn("moved it to", log)

    def test_dockerd_unreachable_keeps_records(self):
        d = self.start()
        try:
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "docker", "name": "k"}, timeout=120)
            c.close()
        finally:
            d.stop()
        path = os.path.join(self.state, "sandboxes.json")
        with open(path) as f:
            before = json.load(f)
        # The same state directory, dockerd "down" (a socket path with nothing behind it).
        d = Daemon(config("host = unix://%s/no-docker.sock\n" % self.state),
                   state_dir=self.state)
        try:
            c = d.client()
            self.assertEqual(c.call("sandbox.list")["sandboxes"], [])
            bl = {b["name"]: b for b in c.call("backend.list")["backends"]}
            self.assertFalse(bl["docker"]["available"])
            self.assertIn("not running", bl["docker"]["reason"])
            c.close()
        finally:
            log = d.stop()
        self.assertIn("cannot re-adopt it now", log)
        self.assertIn("docker backend unavailable", log)
        self.assertIn("orphan sandboxes not looked for", log)
        with open(path) as f:
            self.assertEqual(json.load(f), before)  # kept for the next start
        d = self.start()  # dockerd back: re-adopted
        try:
            c = d.client()
            lst = c.call("sandbox.list")["sandboxes"]
            self.assertEqual([x["id"] for x in lst], [sb["id"]])
            c.close()
        finally:
            d.stop()
        self.assertIsNotNone(inspect(sb["details"]["container_id"]))

    def test_bad_records_dropped_good_kept(self):
        os.makedirs(self.state, exist_ok=True)
        recs = {"version": 1, "sandboxes": [
            {"id": "../../etc", "name": "x", "backend": "docker"},
            {"id": "sbx_1234abcd", "name": "y", "backend": "local", "owner": {},
             "spec": {}, "record": {}},
            "not an object",
        ]}
        with open(os.path.join(self.state, "sandboxes.json"), "w") as f:
            json.dump(recs, f)
        d = self.start()
        try:
            c = d.client()
            self.assertEqual(c.call("sandbox.list")["sandboxes"], [])
            c.close()
        finally:
            log = d.stop()
        self.assertEqual(log.count("dropped"), 3, log)


NUMBERED = ("i=0; while [ $i -lt %d ]; do echo line-$i; i=$((i+1)); "
            "[ $((i %% 200)) = 0 ] && sleep 0.05; done; exit %d")


def read_all(c, exec_id, stream="stdout"):
    """Everything retained of a stream, from offset 0, through process.read."""
    out, off = "", 0
    while True:
        r = c.call("process.read", {"exec_id": exec_id, "stream": stream, "offset": off,
                                    "max_bytes": 1 << 20})
        if r["offset"] != off:
            raise AssertionError("output from %d is gone (offset %d)" % (off, r["offset"]))
        out += r["data"]
        off = r["next_offset"]
        if r["eof"] or not r["data"]:
            return out, r


def lines_ok(text, n):
    return text.splitlines() == ["line-%d" % i for i in range(n)]


class DockerResume(RestartTest):
    """Execs outlive the daemon (SIGKILL) and the container's attach connection (cut)."""

    def wait_output(self, c, eid, need):
        deadline = time.monotonic() + 60
        while len(c.call("process.read", {"exec_id": eid, "max_bytes": 1 << 20})["data"]) < need:
            self.assertLess(time.monotonic(), deadline, "no output from %s" % eid)
            time.sleep(0.05)

    def test_sigkill_daemon_background_exec_keeps_every_line(self):
        d = self.start()
        try:
            c = d.client()
            cid = c.call("sandbox.create", {"backend": "docker", "name": "r"},
                         timeout=120)["details"]["container_id"]
            bg = c.call("exec", {"sandbox": "r", "command": NUMBERED % (6000, 3),
                                 "background": True})["exec_id"]
            # One that ends while the daemon is down (it waits for /tmp/go, made only after
            # the kill); its real status must come back.
            quick = c.call("exec", {"sandbox": "r", "command": "until [ -e /tmp/go ]; do "
                                    "sleep 0.05; done; echo finished; touch /tmp/gone; exit 5",
                                    "background": True})["exec_id"]
            self.wait_output(c, bg, 2000)
            d.proc.kill()
        finally:
            d.stop(expect=-9)
        docker("exec", cid, "touch", "/tmp/go")
        deadline = time.monotonic() + 60
        while docker("exec", cid, "test", "-e", "/tmp/gone", check=False).returncode:
            self.assertLess(time.monotonic(), deadline, "the quick exec never ended")
            time.sleep(0.05)
        d = self.start()
        try:
            c = d.client()
            running = {p["exec_id"]: p for p in c.call("process.list")["processes"]}
            self.assertIn(bg, running)
            self.assertIn(quick, running)
            w = c.call("process.wait", {"exec_id": bg, "timeout_ms": 60000}, timeout=90)
            self.assertEqual((w["state"], w["exit_code"], w["signal"]), ("exited", 3, None), w)
            out, last = read_all(c, bg)
            self.assertTrue(lines_ok(out, 6000), out[-200:])
            self.assertEqual(last["dropped_bytes"], 0)
            w = c.call("process.wait", {"exec_id": quick, "timeout_ms": 60000}, timeout=90)
            self.assertEqual(w["exit_code"], 5, w)
            self.assertEqual(read_all(c, quick)[0], "finished\n")
            c.close()
        finally:
            log = d.stop()
        self.assertIn("taken back", log)

    def test_sigterm_restart_keeps_running_and_ended_execs(self):
        """An orderly restart (systemctl restart) does not stop docker execs either; ended
        ones stay listed with their output."""
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "docker", "name": "t"}, timeout=120)
            done = c.call("exec", {"sandbox": "t", "command": "echo early; exit 6"})
            bg = c.call("exec", {"sandbox": "t", "command": NUMBERED % (3000, 2),
                                 "background": True})["exec_id"]
            self.wait_output(c, bg, 500)
            c.close()
        finally:
            log = d.stop()
        self.assertIn("kept for re-adoption", log)
        d = self.start()
        try:
            c = d.client()
            w = c.call("process.wait", {"exec_id": bg, "timeout_ms": 60000}, timeout=90)
            self.assertEqual(w["exit_code"], 2, w)
            self.assertTrue(lines_ok(read_all(c, bg)[0], 3000))
            old = c.call("process.wait", {"exec_id": done["exec_id"], "timeout_ms": 0})
            self.assertEqual((old["state"], old["exit_code"]), ("exited", 6), old)
            self.assertEqual(read_all(c, done["exec_id"])[0], "early\n")
            c.close()
        finally:
            d.stop()

    def test_sigkill_daemon_foreground_exec_reattached(self):
        d = self.start()
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "docker", "name": "f"}, timeout=120)
            c.send({"jsonrpc": "2.0", "id": 777, "method": "exec",
                    "params": {"sandbox": "f", "command": NUMBERED % (4000, 0)}})
            eid, deadline = None, time.monotonic() + 60
            while eid is None:
                self.assertLess(time.monotonic(), deadline, "no output")
                m = c.read(10)
                if m.get("method") == "exec.output":
                    eid = m["params"]["exec_id"]
            d.proc.kill()
        finally:
            d.stop(expect=-9)
        d = self.start()
        try:
            c = d.client()
            att = c.call("process.attach", {"exec_id": eid})
            self.assertEqual(att["replayed_from"], {"stdout": 0, "stderr": 0})
            deadline = time.monotonic() + 60
            while not any(n["method"] == "exec.exit" for n in c.notifications):
                self.assertLess(time.monotonic(), deadline, "no exec.exit")
                m = c.read(30)
                if "method" in m and "id" not in m:
                    c.notifications.append(m)
            outs = [n["params"] for n in c.notifications if n["method"] == "exec.output"]
            self.assertEqual([o["offset"] for o in outs],
                             [sum(len(x["data"]) for x in outs[:i]) for i in range(len(outs))])
            self.assertTrue(lines_ok("".join(o["data"] for o in outs), 4000))
            ex = [n["params"] for n in c.notifications if n["method"] == "exec.exit"][0]
            self.assertEqual(ex["exit_code"], 0, ex)
            c.close()
        finally:
            d.stop()

    def test_sigterm_before_the_agent_answers_start(self):
        """SIGTERM after a background exec's START reached the agent but before its STARTED
        reached the daemon (the agent is stopped until the START waits in its stdin: no race
        left to timing). The next daemon takes the exec back whole; the one that stopped must
        not count a line of its own ("could not start it") as the exec's output, or the next
        one resumes from beyond what the agent has."""
        d = self.start()
        try:
            c = d.client()
            cid = c.call("sandbox.create", {"backend": "docker", "name": "s"},
                         timeout=120)["details"]["container_id"]
            agent = inspect(cid)["State"]["Pid"]
            stdin = os.open("/proc/%d/fd/0" % agent, os.O_RDONLY | os.O_NONBLOCK)
        except BaseException:
            d.stop()
            raise
        os.kill(agent, signal.SIGSTOP)
        try:
            before = queued(stdin)
            eid = c.call("exec", {"sandbox": "s", "background": True, "command":
                                  "echo begin; sleep 1; echo end"})["exec_id"]
            deadline = time.monotonic() + 30
            while queued(stdin) < before + 64:  # the START; a PING is 20 bytes
                self.assertLess(time.monotonic(), deadline, "no START in the agent's stdin")
                time.sleep(0.02)
        finally:
            try:
                log = d.stop()
            finally:
                os.kill(agent, signal.SIGCONT)
                os.close(stdin)
        self.assertNotIn("could not start", log)
        d = self.start()
        try:
            c = d.client()
            assert_taken_back_whole(self, c, eid, "begin\nend\n")
            c.close()
        finally:
            log = d.stop()
        self.assertNotIn("RESUME", log)

    def test_restart_resumes_without_the_daemons_own_note(self):
        """An exec whose inherited cwd was removed starts elsewhere with a note of the daemon's
        in its stderr; a restarted daemon resumes the agent's stderr without counting the note
        as the agent's (the RESUME would be beyond its output, or skip its first bytes)."""
        d = self.start()
        try:
            c = d.client()
            cid = c.call("sandbox.create", {"backend": "docker", "name": "n"},
                         timeout=120)["details"]["container_id"]
            c.call("exec", {"sandbox": "n", "command": "mkdir /tmp/d && cd /tmp/d"})
            c.call("exec", {"sandbox": "n", "command": "rmdir /tmp/d", "cwd": "/"})
            eid = c.call("exec", {"sandbox": "n", "background": True, "command":
                                  "echo begin; until [ -e /tmp/go ]; do sleep 0.05; done; "
                                  "echo late >&2; echo end"})["exec_id"]
            self.wait_output(c, eid, len("begin\n"))
            note = c.call("process.read", {"exec_id": eid, "stream": "stderr"})["data"]
            self.assertIn("/tmp/d", note)
            d.proc.kill()
        finally:
            d.stop(expect=-9)
        docker("exec", cid, "touch", "/tmp/go")
        d = self.start()
        try:
            c = d.client()
            w = c.call("process.wait", {"exec_id": eid, "timeout_ms": 20000}, timeout=60)
            self.assertEqual((w["state"], w.get("exit_code"), w.get("lost")),
                             ("exited", 0, None), w)
            self.assertEqual(read_all(c, eid)[0], "begin\nend\n")
            self.assertEqual(read_all(c, eid, "stderr")[0], note + "late\n")
            c.close()
        finally:
            d.stop()

    def test_attach_connection_cut_loses_nothing(self):
        proxy = os.path.join(self.state, "docker-proxy.sock")
        sp = self.proxy(proxy)
        try:
            d = self.start("host = unix://%s\n" % proxy)
            try:
                self.cut_run(d, sp.pid)
            finally:
                d.stop()
        finally:
            kill_proxy(sp)

    def proxy(self, path):
        """socat in front of dockerd, in a process group of its own (kill_proxy ends it and
        every connection it forked)."""
        sp = subprocess.Popen(["socat", "UNIX-LISTEN:%s,fork,mode=0600,unlink-early" % path,
                               "UNIX-CONNECT:%s" % DOCKER_SOCK], start_new_session=True)
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            self.assertLess(time.monotonic(), deadline, "socat did not listen")
            time.sleep(0.02)
        return sp

    def wait_state(self, c, want):
        deadline = time.monotonic() + 30
        while True:
            states = [n["params"]["state"] for n in c.notifications
                      if n["method"] == "sandbox.state"]
            if want in states:
                return states
            self.assertLess(time.monotonic(), deadline, "no sandbox.state %s: %s"
                            % (want, states))
            m = c.read(30)
            if "method" in m and "id" not in m:
                c.notifications.append(m)

    def test_link_gone_is_lost_then_next_exec_is_back(self):
        path = os.path.join(self.state, "docker-proxy.sock")
        sp = self.proxy(path)
        d = self.start("host = unix://%s\nagent_reconnect_ms = 1500\n" % path)
        try:
            c = d.client()
            c.call("sandbox.create", {"backend": "docker", "name": "l"}, timeout=120)
            bg = c.call("exec", {"sandbox": "l", "command": "echo up; sleep 30",
                                 "background": True})["exec_id"]
            self.wait_output(c, bg, 3)  # it runs: it did not merely fail to start
            kill_proxy(sp)  # dockerd is out of reach: the listener and every connection go
            states = self.wait_state(c, "lost")
            self.assertEqual(states[:2], ["reconnecting", "lost"], states)
            self.assertEqual(c.call("sandbox.get", {"id": "l"})["state"], "lost")
            w = c.call("process.wait", {"exec_id": bg, "timeout_ms": 30000}, timeout=60)
            self.assertEqual((w["state"], w["exit_code"], w["signal"]), ("exited", None, None))
            self.assertIn("giving up", w["lost"])
            sp = self.proxy(path)  # back: the next exec reattaches
            r = c.call("exec", {"sandbox": "l", "argv": ["echo", "back"]}, timeout=60)
            self.assertEqual(r["stdout"], "back\n")
            self.wait_state(c, "ready")
            self.assertEqual(c.call("sandbox.get", {"id": "l"})["state"], "ready")
            c.close()
        finally:
            d.stop()
            kill_proxy(sp)

    def cut_run(self, d, socat_pid):
        c = d.client()
        sb = c.call("sandbox.create", {"backend": "docker", "name": "cut"}, timeout=120)
        eid = c.call("exec", {"sandbox": "cut", "command": NUMBERED % (8000, 4),
                              "background": True, "stream": False})["exec_id"]
        self.wait_output(c, eid, 1000)
        # Every connection through the proxy (the attach stream among them) is cut.
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                    open_stat(p).get("ppid") == socat_pid]
        self.assertTrue(children, "no connection through the proxy")
        for pid in children:
            os.kill(pid, 9)
        w = c.call("process.wait", {"exec_id": eid, "timeout_ms": 60000}, timeout=90)
        self.assertEqual(w["exit_code"], 4, w)
        out, last = read_all(c, eid)
        self.assertTrue(lines_ok(out, 8000), out[-200:])
        states = [n["params"] for n in c.notifications if n["method"] == "sandbox.state"]
        self.assertIn({"sandbox": sb["id"], "state": "ready"},
                      [{k: v for k, v in s.items() if k != "reason"} for s in states])
        self.assertEqual(states[0]["state"], "reconnecting", states)
        self.assertEqual(c.call("sandbox.get", {"id": "cut"})["state"], "ready")
        e = c.call("exec", {"sandbox": "cut", "argv": ["echo", "after the cut"]})
        self.assertEqual(e["stdout"], "after the cut\n")
        c.close()


def queued(fd):
    """Bytes waiting in the pipe fd (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def kill_proxy(sp):
    """Ends a proxy() socat and the connections it forked."""
    try:
        os.killpg(sp.pid, 9)
    except ProcessLookupError:
        pass
    sp.wait()


def open_stat(pid):
    """{ppid} of a /proc entry (empty when it went meanwhile)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return {"ppid": int(rest[1])}
    except (OSError, IndexError, ValueError):
        return {}


if __name__ == "__main__":
    unittest.main()
