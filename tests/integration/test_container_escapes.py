"""Container specs fail closed (docs/policy.md, "Container checks"), against the real dockerd.

The attacker is an unprivileged uid (nobody) talking to a root daemon, as a real deployment
would have it, and it approves every approval.request it gets: ASK would be worthless here,
so each way to the host must be a DENY (or a -32602 for a field that cannot be judged), and
no container may be left behind. Needs root (to be a second uid) and dockerd with the test
image (tests/docker/setup.sh); without dockerd it fails, it never skips for that.
"""
import base64
import ctypes
import json
import os
import pwd
import subprocess
import tempfile
import unittest

from harness import SANDBOXD, Daemon, RpcError, class_resource, needs_root
from test_identity import NOBODY, as_nobody
from test_docker import (IMAGE, config, docker, docker_api, inspect, require_docker,
                         stop_removing_containers)


def nobody_daemon(extra="", state_dir=None, images=(IMAGE,)):
    """A root daemon (docker section lines in extra) that nobody may use too, with images."""
    d = Daemon(config("images = %s\n%s" % (", ".join(images), extra))
               + "[daemon]\nallow_users = nobody\nsocket_group = nogroup\n", state_dir=state_dir)
    os.chmod(d.dir, 0o755)
    return d


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
        class_resource(cls, docker, "create", "--name", cls.helper, "-v", "/:/h:ro", IMAGE,
                       "true", stop=lambda _: docker("rm", "-f", cls.helper, check=False))
        class_resource(cls, docker, "volume", "create", "-o", "type=none", "-o", "o=bind", "-o",
                       "device=/", cls.rootvol,
                       stop=lambda _: docker("volume", "rm", "-f", cls.rootvol, check=False))
        cls.own = class_resource(cls, tempfile.mkdtemp, prefix="sbxesc-own-", stop=os.rmdir)
        os.chown(cls.own, NOBODY, NOBODY)
        # nobody may run the test image and one that is not on the host (pulls are off)
        cls.absent = "sbxesc-absent-%d:latest" % os.getpid()
        cls.daemon = class_resource(cls, nobody_daemon, "max_pids_per_user = 1000\n",
                                    images=(IMAGE, cls.absent), stop=stop_removing_containers)

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
            # a caller that is not root runs as itself (docker_user.c): nothing more
            ({"docker": {"user": "0"}}, "=docker.user"),
            ({"docker": {"user": "root"}}, "=docker.user"),
            ({"docker": {"user": "%d:0" % NOBODY}}, "=docker.user"),
            (hc(CapAdd=["SETUID", "SETGID"]), "=docker.host_config.CapAdd"),
            (hc(GroupAdd=["0"]), "=docker.host_config.GroupAdd"),
            (hc(User="0"), "=docker.host_config.User"),
            # dockerd stat()s blkio paths as root: "no such file" told what /root holds
            (hc(BlkioDeviceReadBps=[{"Path": "/root/.bashrc", "Rate": 1}]),
             "=docker.host_config.BlkioDeviceReadBps[0].Path"),
            # a fork bomb's pids, no memory limit, more CPU weight than anyone's
            (hc(PidsLimit=4194304), "=docker.host_config.PidsLimit"),
            ({"resources": {"pids": 4194304}}, "=resources.pids"),
            (hc(Memory=0), "=docker.host_config.Memory"),
            (hc(MemorySwap=None), "=docker.host_config.MemorySwap"),  # no default memory
            (hc(ShmSize=1 << 40), "=docker.host_config.ShmSize"),
            (hc(Tmpfs={"/big": "size=1t"}), "=docker.host_config.Tmpfs./big"),
            (hc(CpuShares=262144), "=docker.host_config.CpuShares"),
            # images not listed in [backend.docker] images, and spellings of IDs
            ({"image": "busybox:latest"}, "=image"),
            ({"image": IMAGE.partition(":")[0]}, "=image"),
            ({"image": docker("image", "inspect", "-f", "{{.Id}}", IMAGE).stdout.strip()},
             "=image"),
            ({"image": docker("image", "inspect", "-f", "{{.Id}}", IMAGE).stdout.strip()[7:19]},
             "=image"),
        ]

    def test_every_escape_is_refused(self):
        cases = self.escapes()
        calls = [["sandbox.create", dict({"backend": "docker", "image": IMAGE}, **spec)]
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
            self.assertEqual(res[1]["result"]["stdout"], "%d\n" % NOBODY)
            self.assertEqual(res[4]["result"]["stdout"], "hi\n")
            labels = json.loads(docker("volume", "inspect", vol).stdout)[0]["Labels"]
            self.assertEqual(labels["sandboxd.owner"], str(NOBODY))
        finally:
            docker("volume", "rm", "-f", vol, check=False)


    def test_uid_budget_and_pulls(self):
        """nobody's docker sandboxes share max_pids_per_user; a listed image not on the host
        is not pulled for it."""
        res = as_nobody(self.daemon.socket, decision="once", calls=[
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "big",
                                "resources": {"pids": 900}}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "more"}],
            ["sandbox.create", {"backend": "docker", "image": self.absent, "name": "pull",
                                "resources": {"pids": 50}}],
            ["sandbox.destroy", {"id": "big"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "more"}],
            ["sandbox.destroy", {"id": "more"}],
        ])
        self.assertIn("result", res[0], res[0])
        e = res[1]["error"]
        self.assertEqual(e["code"], -32004, e)
        self.assertEqual(e["data"]["limit"], "max_pids_per_user", e)
        self.assertIn("1200 pids", e["message"])
        e = res[2]["error"]
        self.assertEqual(e["code"], -32005, e)
        self.assertIn("allow_pull", e["message"])
        self.assertIn(self.absent, e["message"])
        self.assertIn("result", res[4], res[4])  # the budget is back once big is gone
        self.assertEqual(docker("image", "ls", "-q", self.absent).stdout.strip(), "")


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


PROBE_C = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* "inotify": takes inotify instances until the kernel says no, says how many, and holds them
 * (the reviewer's reproducer); else prints the real and the effective uid. */
int
main(int argc, char **argv)
{
        int n = 0;

        if (argc < 2 || strcmp(argv[1], "inotify") != 0) {
                printf("%d %d\n", (int) getuid(), (int) geteuid());
                return 0;
        }
        while (inotify_init1(IN_CLOEXEC) >= 0)
                n++;
        printf("%d %s\n", n, errno == EMFILE ? "EMFILE" : strerror(errno));
        fflush(stdout);
        pause();
        return 0;
}
"""


@needs_root("needs root to act as a second uid")
class RunsAsCaller(unittest.TestCase):
    """A root daemon without userns-remap: nobody's container runs as nobody, root's as root."""
    # run.py -j: test_inotify_exhaustion_stays_the_callers takes every inotify instance of
    # uid 65534 (a host-wide per-uid limit) that other classes' nobody processes may need.
    run_alone = "exhausts uid 65534's inotify instances"

    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tag = "sbxuser-%d" % os.getpid()
        cls.tmp = class_resource(cls, tempfile.mkdtemp, prefix="sbxuser-",
                                 stop=lambda d: subprocess.run(["rm", "-rf", d], check=False))
        src = os.path.join(cls.tmp, "probe.c")
        cls.probe = os.path.join(cls.tmp, "probe")
        with open(src, "w") as f:
            f.write(PROBE_C)
        subprocess.run(["cc", "-static", "-Os", "-s", "-o", cls.probe, src], check=True)
        # an image with a setuid-root copy of the probe (busybox-static has no setuid bit)
        root = os.path.join(cls.tmp, "root")
        os.makedirs(os.path.join(root, "bin"))
        subprocess.run(["cp", subprocess.run(["sh", "-c", "command -v busybox"],
                                             capture_output=True, text=True,
                                             check=True).stdout.strip(),
                        os.path.join(root, "bin/busybox")], check=True)
        for applet in ("sh", "id", "cat", "grep"):
            os.symlink("busybox", os.path.join(root, "bin", applet))
        suid = os.path.join(root, "bin/suid-probe")
        subprocess.run(["cp", cls.probe, suid], check=True)
        os.chown(suid, 0, 0)
        os.chmod(suid, 0o4755)
        cls.image = cls.tag + ":suid"
        class_resource(cls, subprocess.run, "tar -C %s -c . | docker import -c 'ENV PATH=/bin' - %s"
                       % (root, cls.image), shell=True, check=True, capture_output=True,
                       stop=lambda _: docker("rmi", "-f", cls.image, check=False))
        cls.vol = cls.tag + "-vol"
        class_resource(cls, lambda: None,
                       stop=lambda _: docker("volume", "rm", "-f", cls.vol, check=False))
        cls.daemon = class_resource(cls, nobody_daemon, images=(IMAGE, cls.image),
                                    stop=stop_removing_containers)

    def results(self, res):
        for r in res[:-1]:  # the last one is what came unsolicited
            self.assertIn("result", r, r)
        return [r["result"] for r in res[:-1]]

    def test_execs_files_home_and_workdir_are_the_callers(self):
        home = pwd.getpwuid(NOBODY).pw_dir
        vol = [{"type": "volume", "source": self.vol, "target": "/data"}]
        res = self.results(as_nobody(self.daemon.socket, decision="once", calls=[
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "u",
                                "mounts": vol, "workdir": "/data"}],
            ["exec", {"sandbox": "u", "command":
                      'id -u; id -g; echo hi > f; touch "$HOME/h" && echo "$HOME"'}],
            ["file.write", {"sandbox": "u", "path": "/data/g", "data": "x"}],
            ["sandbox.get", {"id": "u"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "w",
                                "workdir": "/work"}],
            ["exec", {"sandbox": "w", "command": "touch x && pwd"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "h"}],
            ["exec", {"sandbox": "h", "command": "pwd; touch x && echo ok"}],
            ["sandbox.destroy", {"id": "u"}],
            ["sandbox.destroy", {"id": "w"}],
            ["sandbox.destroy", {"id": "h"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "r", "mounts": vol,
                                "docker": {"host_config": {"ReadonlyRootfs": True}}}],
            ["exec", {"sandbox": "r", "command": "touch /data/r && echo ok"}],
            ["sandbox.destroy", {"id": "r"}],
        ]))
        self.assertEqual(res[1]["stdout"], "%d\n%d\n%s\n" % (NOBODY, NOBODY, home), res[1])
        details = res[3]["details"]
        self.assertEqual((details["user"], details["uid"], details["gid"]),
                         ("%d:%d" % (NOBODY, NOBODY), NOBODY, NOBODY))
        self.assertIs(details["userns_remap"], False)  # this dockerd: uid 0 would be host root
        self.assertEqual(res[5]["stdout"], "/work\n", res[5])
        self.assertEqual(res[7]["stdout"], "%s\nok\n" % home, res[7])
        self.assertEqual(res[12]["stdout"], "ok\n", res[12])  # a volume under ReadonlyRootfs
        mp = json.loads(docker("volume", "inspect", self.vol).stdout)[0]["Mountpoint"]
        for name in ("f", "g"):  # the host side of the volume
            self.assertEqual(os.stat(os.path.join(mp, name)).st_uid, NOBODY, name)

    def test_readonly_rootfs_workdir_and_nnp_spellings(self):
        """A workdir the read-only rootfs cannot give is refused up front, naming both fields;
        on a tmpfs mount it is nobody's. A no-new-privileges spelling dockerd reads as on (:1)
        passes policy and backend and really sets NoNewPrivs; one it reads as off does not."""
        ro = {"ReadonlyRootfs": True}
        res = as_nobody(self.daemon.socket, decision="once", calls=[
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "ro",
                                "workdir": "/work", "docker": {"host_config": ro}}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "rt",
                                "workdir": "/work", "docker": {"host_config": dict(
                                    ro, Tmpfs={"/work": "size=1m"})}}],
            ["exec", {"sandbox": "rt", "command": "touch x && echo ok"}],
            ["sandbox.destroy", {"id": "rt"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "n1", "docker": {
                "host_config": {"SecurityOpt": ["no-new-privileges:1"]}}}],
            ["exec", {"sandbox": "n1", "command": "grep NoNewPrivs /proc/self/status"}],
            ["sandbox.destroy", {"id": "n1"}],
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "n0", "docker": {
                "host_config": {"SecurityOpt": ["no-new-privileges=0"]}}}],
            # policy.check predicts both answers (the preview asks the backend what the create
            # would refuse before making anything).
            ["policy.check", {"sandbox": {"backend": "docker", "image": IMAGE, "workdir": "/work",
                                          "docker": {"host_config": ro}}}],
            ["policy.check", {"sandbox": {"backend": "docker", "image": IMAGE, "workdir": "/work",
                                          "docker": {"host_config": dict(
                                              ro, Tmpfs={"/work": "size=1m"})}}}],
        ])
        self.assertEqual(res[8].get("error"), res[0]["error"], res[8])
        self.assertIn("verdict", res[9].get("result", {}), res[9])
        c = self.daemon.client()  # root: its container runs as the image's user, as created
        try:
            self.assertIn("verdict", c.call("policy.check", {"sandbox": {
                "backend": "docker", "image": IMAGE, "workdir": "/work",
                "docker": {"host_config": ro}}}))
        finally:
            c.close()
        err = res[0]["error"]
        self.assertEqual((err["code"], err["data"]["param"]), (-32602, "workdir"), err)
        for word in ("ReadonlyRootfs", "tmpfs mount", "volume"):
            self.assertIn(word, err["message"])
        for r in res[1:7]:
            self.assertIn("result", r, r)
        self.assertEqual(res[2]["result"]["stdout"], "ok\n", res[2])
        self.assertEqual(res[5]["result"]["stdout"].split(), ["NoNewPrivs:", "1"], res[5])
        self.assertIn("container.secopt", json.dumps(res[7]["error"]), res[7])

    def test_backend_list_says_what_applies(self):
        """backend.list tells nobody its maxima, images, pulls and that it runs as itself;
        root that its containers run as the image's user, as host root."""
        res = as_nobody(self.daemon.socket, [["backend.list", {}]])
        mine = [b for b in res[0]["result"]["backends"] if b["name"] == "docker"][0]["details"]
        c = self.daemon.client()
        try:
            roots = [b for b in c.call("backend.list")["backends"] if b["name"] == "docker"]
        finally:
            c.close()
        root = roots[0]["details"]
        self.assertIs(mine["userns_remap"], False, mine)
        me = mine["caller"]
        self.assertEqual((me["uid"], me["unprivileged"], me["runs_as"], me["user"],
                          me["allow_pull"], me["images"]),
                         (NOBODY, True, "caller", "%d:%d" % (NOBODY, NOBODY), False,
                          [IMAGE, self.image]), me)
        self.assertEqual((me["limits"]["max_pids"], me["limits"]["pids_limit"],
                          me["limits"]["max_ulimits"]["nofile"], me["limits"]["max_disk"]),
                         (4096, 300, 1048576, None), me["limits"])  # test_docker.config
        self.assertEqual(me["limits"]["max_ulimits"]["rtprio"], 0)
        self.assertNotIn("sigpending", me["limits"]["max_ulimits"])
        them = root["caller"]
        self.assertEqual((them["uid"], them["unprivileged"], them["runs_as"],
                          them["host_root"], them["images"], them["limits"]),
                         (0, False, "image", True, None, me["limits"]), them)

    def test_setuid_root_binary_gives_no_root(self):
        # the control: without no-new-privileges the bit works for uid nobody
        control = docker("run", "--rm", "--user", "%d:%d" % (NOBODY, NOBODY), self.image,
                         "/bin/suid-probe").stdout
        self.assertEqual(control, "%d 0\n" % NOBODY)
        res = self.results(as_nobody(self.daemon.socket, decision="once", calls=[
            ["sandbox.create", {"backend": "docker", "image": self.image, "name": "s"}],
            ["exec", {"sandbox": "s", "command": "/bin/suid-probe; grep Cap /proc/self/status"}],
            ["sandbox.destroy", {"id": "s"}],
        ]))
        out = res[1]["stdout"].splitlines()
        self.assertEqual(out[0], "%d %d" % (NOBODY, NOBODY), res[1])
        self.assertEqual(sorted(set(l.split()[1] for l in out[1:])), ["0000000000000000"],
                         "no capability in any set: %s" % out)

    def test_inotify_exhaustion_stays_the_callers(self):
        with open(self.probe, "rb") as f:
            probe = base64.b64encode(f.read()).decode()
        wait = "while ! grep -q . n; do :; done; cat n"
        res = self.results(as_nobody(self.daemon.socket, decision="once", calls=[
            ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "i",
                                "workdir": "/work"}],
            ["file.write", {"sandbox": "i", "path": "/work/probe", "data_base64": probe,
                            "mode": 0o755}],
            ["exec", {"sandbox": "i", "command": "./probe inotify > n",
                      "background": True, "stream": False}],
            ["exec", {"sandbox": "i", "command": wait}],
        ]))
        try:
            n, why = res[3]["stdout"].split()
            self.assertGreater(int(n), 0)
            self.assertEqual(why, "EMFILE")
            # while the probe holds them, host root can still take one
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(0)
            self.assertGreaterEqual(fd, 0, os.strerror(ctypes.get_errno()))
            os.close(fd)
            running = self.results(as_nobody(self.daemon.socket, calls=[
                ["process.list", {"sandbox": "i", "state": "running"}]]))[0]
            self.assertIn(res[2]["exec_id"], [p["exec_id"] for p in running["processes"]])
        finally:
            as_nobody(self.daemon.socket, [["sandbox.destroy", {"id": "i"}]])

    def test_roots_sandbox_still_runs_as_root(self):
        c = self.daemon.client()
        try:
            sb = c.call("sandbox.create", {"backend": "docker", "image": IMAGE}, timeout=120)
            self.assertEqual(sb["details"]["uid"], 0, sb["details"])
            r = c.call("exec", {"sandbox": sb["id"], "command": "id -u"})
            self.assertEqual(r["stdout"], "0\n")
            c.call("sandbox.destroy", {"id": sb["id"]})
            # root may pick the container's user
            sb = c.call("sandbox.create", {"backend": "docker", "image": IMAGE,
                                           "docker": {"user": "1000:1000"}}, timeout=120)
            r = c.call("exec", {"sandbox": sb["id"], "command": "id -u"})
            self.assertEqual((sb["details"]["uid"], r["stdout"]), (1000, "1000\n"))
            c.call("sandbox.destroy", {"id": sb["id"]})
        finally:
            c.close()

    def test_operator_may_give_root_in_the_container(self):
        d = nobody_daemon("root_users = nobody\n")
        try:
            res = self.results(as_nobody(d.socket, decision="once", calls=[
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "r",
                                    "docker": {"user": "0"}}],
                ["exec", {"sandbox": "r", "command": "id -u"}],
                ["sandbox.destroy", {"id": "r"}],
            ]))
            self.assertEqual(res[0]["details"]["uid"], 0, res[0]["details"])
            self.assertEqual(res[1]["stdout"], "0\n")
        finally:
            stop_removing_containers(d)

    def test_restart_keeps_the_uid(self):
        state = tempfile.mkdtemp(prefix="sbxuser-state-", dir=self.tmp)
        os.chmod(state, 0o755)
        d = nobody_daemon(state_dir=state)
        try:
            self.results(as_nobody(d.socket, decision="once", calls=[
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "k",
                                    "workdir": "/work"}]]))
        finally:
            d.stop()
        d = nobody_daemon(state_dir=state)
        try:
            res = self.results(as_nobody(d.socket, decision="once", calls=[
                ["sandbox.get", {"id": "k"}],
                ["exec", {"sandbox": "k", "command": "id -u; echo a > a"}],
                ["file.write", {"sandbox": "k", "path": "/work/b", "data": "b"}],
                ["exec", {"sandbox": "k", "command": "stat -c %u a b"}],
                ["sandbox.destroy", {"id": "k"}],
            ]))
            self.assertEqual(res[0]["details"]["uid"], NOBODY, res[0]["details"])
            self.assertEqual(res[1]["stdout"], "%d\n" % NOBODY)
            self.assertEqual(res[3]["stdout"], "%d\n%d\n" % (NOBODY, NOBODY))
        finally:
            stop_removing_containers(d)

    def test_root_container_of_a_caller_is_not_readopted_without_the_opt_in(self):
        state = tempfile.mkdtemp(prefix="sbxuser-state-", dir=self.tmp)
        os.chmod(state, 0o755)
        d = nobody_daemon("root_users = nobody\n", state_dir=state)
        try:
            # the image's user, and uid 0 as runc also reads it ("+0" is strconv.Atoi's 0)
            made = self.results(as_nobody(d.socket, decision="once", calls=[
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "k"}],
                ["sandbox.create", {"backend": "docker", "image": IMAGE, "name": "z",
                                    "docker": {"user": "+0"}}]]))
            self.assertEqual([sb["details"]["uid"] for sb in made], [0, 0])
        finally:
            d.stop()
        d = nobody_daemon(state_dir=state)
        try:
            res = as_nobody(d.socket, [["sandbox.get", {"id": "k"}], ["sandbox.get", {"id": "z"}]])
            for r, sb in zip(res, made):
                self.assertEqual(r["error"]["code"], -32002, res)
                self.assertIsNone(inspect(sb["details"]["container_id"]),
                                  "the root container was left running")
            self.assertIn("must run as itself", d.read_log())
        finally:
            stop_removing_containers(d)
