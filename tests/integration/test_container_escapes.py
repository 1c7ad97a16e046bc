"""Container specs fail closed (docs/policy.md, "Container checks"), against the real dockerd.

The attacker is an unprivileged uid (nobody) talking to a root daemon, as a real deployment
would have it, and it approves every approval.request it gets: ASK would be worthless here,
so each way to the host must be a DENY (or a -32602 for a field that cannot be judged), and
no container may be left behind. Needs root (to be a second uid) and dockerd with the test
image (tests/docker/setup.sh); without dockerd it fails, it never skips for that.
"""
import json
import os
import subprocess
import tempfile
import unittest

from harness import SANDBOXD, Daemon, RpcError, class_resource, needs_root
from test_identity import NOBODY, as_nobody
from test_docker import IMAGE, config, docker, docker_api, require_docker, stop_removing_containers


def rules(error):
    return [f["rule"] for f in (error.get("data") or {}).get("findings", [])]


@needs_root("needs root to act as a second uid")
class UnprivilegedEscapes(unittest.TestCase):
    """nobody against a root daemon: every spelling that reaches host root is refused."""

    @classmethod
    def setUpClass(cls):
        require_docker()
        tag = "sbxesc-%d" % os.getpid()
        cls.helper = tag + "-hostroot"
        cls.rootvol = tag + "-rootvol"
        # Another container that sees / (made by root, not through the daemon) and a local
        # volume bound to /: both exist on the host before the attacker asks.
        # Class cleanups: they go whatever fails later (the shared dockerd keeps nothing).
        class_resource(cls, docker, "create", "--name", cls.helper, "-v", "/:/h:ro", IMAGE,
                       "true", stop=lambda _: docker("rm", "-f", cls.helper, check=False))
        class_resource(cls, docker, "volume", "create", "-o", "type=none", "-o", "o=bind", "-o",
                       "device=/", cls.rootvol,
                       stop=lambda _: docker("volume", "rm", "-f", cls.rootvol, check=False))
        cls.own = class_resource(cls, tempfile.mkdtemp, prefix="sbxesc-own-", stop=os.rmdir)
        os.chown(cls.own, NOBODY, NOBODY)
        cls.daemon = class_resource(cls, Daemon, config() + "[daemon]\nallow_users = nobody\n"
                                    "socket_group = nogroup\n", stop=stop_removing_containers)
        os.chmod(cls.daemon.dir, 0o755)

    def escapes(self):
        def hc(**fields):
            return {"docker": {"host_config": fields}}

        def anon(opts):
            return hc(Mounts=[{"Type": "volume", "Target": "/h", "VolumeOptions": {
                "DriverConfig": {"Name": "local", "Options": opts}}}])
        return [
            ({"mounts": [{"type": "bind", "source": "/", "target": "/h"}]},
             "container.mount-unprivileged"),
            ({"mounts": [{"type": "bind", "source": self.own, "target": "/h"}]},
             "container.mount-unprivileged"),
            (hc(Binds=["//:/h"]), "container.mount-unprivileged"),
            (hc(Binds=["/proc/self/root/:/h"]), "container.mount-unprivileged"),
            (hc(Mounts=[{"Type": "bind", "Source": "/etc", "Target": "/h"}]),
             "container.mount-unprivileged"),
            (anon({"type": "none", "o": "bind", "device": "/"}), "container.mount-unprivileged"),
            (anon({"type": "none", "o": "bind", "device": "/proc/self/root/dev/sda"}),
             "container.mount-unprivileged"),
            (anon({"type": "ext4", "device": "//dev/sda"}), "container.volume-device"),
            (anon({"type": "overlay", "device": "overlay",
                   "o": "lowerdir=/,upperdir=/tmp/u,workdir=/tmp/w"}),
             "container.mount-unprivileged"),
            (anon({"type": "nfs", "o": "addr=127.0.0.1", "device": ":/"}),
             "container.volume-netfs"),
            (anon({"TYPE": "none"}), "container.volume-option"),
            (hc(Mounts=[{"Type": "volume", "Source": self.rootvol, "Target": "/h",
                         "VolumeOptions": {"DriverConfig": {"Name": "local"}}}]),
             "container.volume-foreign"),
            (hc(Binds=["%s:/h" % self.rootvol]), "container.volume-foreign"),
            ({"mounts": [{"type": "volume", "source": self.rootvol, "target": "/h"}]},
             "container.volume-foreign"),
            (hc(VolumesFrom=[self.helper]), "container.volumes-from"),
            (hc(Mounts=[{"Type": "npipe", "Source": "/var/run/docker.sock", "Target": "/s"}]),
             "container.mount-type"),
            (hc(Privileged=True), "container.privileged"),
            (hc(CapAdd=["SYS_ADMIN"]), "container.cap"),
            (hc(CapAdd=["MKNOD"], DeviceCgroupRules=["b *:* rwm"]), "container.device"),
            (hc(CapDrop=[]), "container.cap-drop"),
            (hc(SecurityOpt=["seccomp=unconfined", "no-new-privileges"]), "container.secopt"),
            (hc(SecurityOpt=["apparmor=unconfined", "no-new-privileges"]), "container.secopt"),
            (hc(SecurityOpt=[]), "container.secopt"),
            (hc(MaskedPaths=[]), "container.unmask"),
            (hc(ReadonlyPaths=[]), "container.unmask"),
            (hc(Devices=[{"PathOnHost": "/dev/sda", "PathInContainer": "/dev/sda",
                          "CgroupPermissions": "rwm"}]), "container.device"),
            (hc(DeviceRequests=[{"Count": -1, "Capabilities": [["gpu"]]}]), "container.device"),
            (hc(PidMode="host"), "container.host-ns"),
            (hc(IpcMode="host"), "container.host-ns"),
            (hc(NetworkMode="host"), "container.host-ns"),
            ({"network": "host"}, "container.host-ns"),
            (hc(UTSMode="host"), "container.host-ns"),
            (hc(UsernsMode="host"), "container.host-ns"),
            (hc(CgroupnsMode="host"), "container.host-ns"),
            (hc(PidMode="container:" + self.helper), "container.join-ns"),
            (hc(CgroupParent="/"), "container.cgroup-parent"),
            (hc(Sysctls={"kernel.core_pattern": "|/tmp/x"}), "container.sysctl"),
            (hc(PidsLimit=-1), "container.pids-limit"),
            (hc(OomKillDisable=True), "container.oom"),
            (hc(OomScoreAdj=-1000), "container.oom"),
            (hc(Runtime="runc"), "container.runtime"),
            (hc(Annotations={"org.systemd.property.DeviceAllow": "/dev/sda rwm"}),
             "container.annotations"),
            (hc(LogConfig={"Type": "syslog", "Config": {"syslog-address": "udp://127.0.0.1:1"}}),
             "container.log-driver"),
            (hc(PortBindings={"22/tcp": [{"HostIp": "127.0.0.1", "HostPort": "22"}]}),
             "container.publish-privileged"),
            # fields Docker would read, but not as written: refused naming the field
            (hc(privileged=True), "=docker.host_config.privileged"),
            (hc(**{"\u017fecurityOpt": ["seccomp=unconfined"]}),
             "=docker.host_config.\u017fecurityOpt"),
            (hc(Mounts=[{"type": "bind", "source": "/", "target": "/h"}]),
             "=docker.host_config.Mounts[0].type"),
            (hc(Foo=1), "=docker.host_config.Foo"),
            # dockerd stat()s blkio paths as root: "no such file" told what /root holds
            (hc(BlkioDeviceReadBps=[{"Path": "/root/.bashrc", "Rate": 1}]),
             "=docker.host_config.BlkioDeviceReadBps[0].Path"),
        ]

    def test_every_escape_is_refused(self):
        cases = self.escapes()
        calls = [["sandbox.create", dict(spec, backend="docker", image=IMAGE)]
                 for spec, _ in cases]
        res = as_nobody(self.daemon.socket, calls, decision="once")
        for (spec, want), r in zip(cases, res):
            with self.subTest(spec=spec):
                self.assertIn("error", r, "created: %s" % r)
                e = r["error"]
                if want.startswith("="):
                    self.assertEqual(e["code"], -32602, e)
                    self.assertEqual(e["data"]["param"], want[1:], e)
                else:
                    self.assertEqual(e["code"], -32001, e)
                    self.assertEqual(e["data"]["verdict"], "deny", e)
                    self.assertEqual(e["data"]["resolution"], "policy", e)
                    self.assertIn(want, rules(e), e)
        left = docker("ps", "-aq", "--filter",
                      "label=sandboxd.instance=%s" % self.daemon.state).stdout.split()
        self.assertEqual(left, [], "a refused spec left a container behind")

    def test_plain_sandbox_and_own_volume_work(self):
        """The control: nobody may have a container, and its own volume twice."""
        vol = "sbxesc-%d-nobody" % os.getpid()
        mounts = [{"type": "volume", "source": vol, "target": "/data"}]
        try:
            res = as_nobody(self.daemon.socket, decision="once", calls=[
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "a",
                                    "mounts": mounts}],
                ["exec", {"sandbox": "a", "command": "id -u; echo hi > /data/f"}],
                ["sandbox.destroy", {"id": "a"}],
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "b",
                                    "mounts": mounts}],
                ["exec", {"sandbox": "b", "command": "cat /data/f"}],
                ["sandbox.destroy", {"id": "b"}],
            ])
            for r in res[:-1]:  # the last one is what came unsolicited
                self.assertIn("result", r, r)
            self.assertFalse(res[0]["result"]["host_access"])
            self.assertEqual(res[1]["result"]["stdout"], "0\n")
            self.assertEqual(res[4]["result"]["stdout"], "hi\n")
            labels = json.loads(docker("volume", "inspect", vol).stdout)[0]["Labels"]
            self.assertEqual(labels["sandboxd.owner"], str(NOBODY))
        finally:
            docker("volume", "rm", "-f", vol, check=False)


class OperatorAdditions(unittest.TestCase):
    """Fields and drivers an operator accepts unchecked: in the config, and in backend.list."""

    def test_listed_field_is_accepted_and_shown(self):
        d = Daemon(config("unchecked_host_config_fields = Foo, Bar\nvolume_drivers = rexray\n"))
        try:
            c = d.client()
            r = c.call("policy.check", {"sandbox": {"backend": "docker", "docker": {
                "host_config": {"Foo": {"x": 1}}}}})
            self.assertEqual(r["verdict"], "allow", r)
            self.assertTrue(r["host_access"], "an unchecked field may expose anything")
            with self.assertRaises(RpcError) as cm:
                c.call("policy.check", {"sandbox": {"backend": "docker", "docker": {
                    "host_config": {"Baz": 1}}}})
            self.assertEqual(cm.exception.code, -32602)
            self.assertEqual(cm.exception.data["param"], "docker.host_config.Baz")
            self.assertIn("unchecked_host_config_fields", cm.exception.message)
            docker_entry = [b for b in c.call("backend.list")["backends"]
                            if b["name"] == "docker"][0]
            self.assertEqual(docker_entry["details"]["spec_policy"], {
                "unchecked_host_config_fields": ["Foo", "Bar"], "volume_drivers": ["rexray"],
                "runtime": None})
            c.close()
        finally:
            d.stop()

    def test_checked_field_cannot_be_listed(self):
        for value, want in (("Privileged", "Privileged"), ("privileged", "Privileged"),
                            ("\u017fecurityOpt", "SecurityOpt")):
            with self.subTest(value=value):
                with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
                    f.write("[backend.docker]\nunchecked_host_config_fields = %s\n" % value)
                    f.flush()
                    p = subprocess.run([SANDBOXD, "--check-config", "--config", f.name],
                                       capture_output=True, text=True, timeout=30)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("HostConfig." + want, p.stderr)

    def test_configured_runtime_is_the_default_and_the_only_one(self):
        require_docker()
        d = Daemon(config("runtime = runc\n"))
        try:
            c = d.client()
            sb = c.call("sandbox.create", {"backend": "docker", "image": IMAGE,
                                           "docker": {"host_config": {"Runtime": "runc"}}},
                        timeout=120)
            status, body = docker_api("GET", "/containers/%s/json"
                                      % sb["details"]["container_id"])
            self.assertEqual(body["HostConfig"]["Runtime"], "runc")
            with self.assertRaises(RpcError) as cm:
                c.call("sandbox.create", {"backend": "docker", "image": IMAGE, "docker": {
                    "host_config": {"Runtime": ""}}}, timeout=120)
            self.assertIn("container.runtime", rules({"data": cm.exception.data}))
            c.close()
        finally:
            stop_removing_containers(d)
