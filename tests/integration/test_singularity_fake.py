"""Self-test of the fake apptainer (tests/fakes/apptainer/): the singularity backend's tests
prove something only if the fake behaves as Apptainer does where the backend depends on it —
output formats, exit codes, environment rules, namespaces, binds, PR_SET_PDEATHSIG."""
import json
import os
import signal
import subprocess
import time
import unittest

from singularity_fake import FakeApptainer


class FakeApptainerSelfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.f = FakeApptainer()
        cls.sif = os.path.join(cls.f.dir, "img.sif")
        p = cls.f.run("build", "--disable-cache", cls.sif, "docker://busybox:self")
        assert p.returncode == 0, p.stderr
        cls.data = os.path.join(cls.f.dir, "data")
        os.makedirs(cls.data)
        with open(os.path.join(cls.data, "f"), "w") as fh:
            fh.write("bound\n")
        p = cls.f.run("instance", "start", "--containall", "--no-home", "--cleanenv",
                      "--no-privs", "--writable-tmpfs", "--net", "--network", "none",
                      "--bind", "%s:/data:ro" % cls.data, cls.sif, "self1")
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        cls.f.cleanup()

    def exec(self, *argv, env=None, flags=()):
        return self.f.run("exec", *flags, "instance://self1", *argv, env=env)

    def test_version_formats(self):
        self.assertEqual(self.f.run("version").stdout, "1.5.0\n")
        self.assertEqual(self.f.run("--version").stdout, "apptainer version 1.5.0\n")

    def test_build_writes_a_real_sif(self):
        with open(self.sif, "rb") as fh:
            head = fh.read(128)
        self.assertEqual(head[:31], b"#!/usr/bin/env run-singularity\n")
        self.assertEqual(head[32:42], b"SIF_MAGIC\0")
        p = subprocess.run(["siftool", "list", self.sif], capture_output=True, text=True)
        self.assertIn("Squashfs", p.stdout)

    def test_build_errors_are_fatal_255(self):
        p = self.f.run("build", self.sif, "docker://busybox:again")
        self.assertEqual(p.returncode, 255)
        self.assertIn("FATAL:   While checking build target", p.stderr)
        p = self.f.run("build", self.sif + "2", "shub://x")
        self.assertEqual(p.returncode, 255)

    def test_instance_list_json_is_go_indented(self):
        p = self.f.run("instance", "list", "--json")
        self.assertTrue(p.stdout.startswith('{\n\t"instances": [\n\t\t{\n\t\t\t"instance": '),
                        p.stdout)
        inst = json.loads(p.stdout)["instances"]
        self.assertEqual([i["instance"] for i in inst], ["self1"])
        self.assertEqual(set(inst[0]), {"instance", "pid", "img", "ip", "logErrPath",
                                        "logOutPath"})
        self.assertEqual(inst[0]["img"], self.sif)

    def test_exit_codes(self):
        self.assertEqual(self.exec("sh", "-c", "exit 3").returncode, 3)
        self.assertEqual(self.exec("sh", "-c", "kill -9 $$").returncode, 137)
        p = self.exec("no-such-program")
        self.assertEqual(p.returncode, 255)
        self.assertIn("executable file not found", p.stderr)
        p = self.f.run("exec", "instance://nope", "true")
        self.assertEqual((p.returncode, p.stderr.strip()),
                         (255, "FATAL:   no instance found with name nope"))
        p = self.f.run("instance", "stop", "nope")
        self.assertEqual(p.returncode, 255)

    def test_environment_rules(self):
        env = {"HOST_VAR": "h", "APPTAINERENV_MAPPED": "m", "APPTAINER_OWN": "o"}
        out = self.exec("env", env=env).stdout
        self.assertIn("HOST_VAR=h\n", out)  # without --cleanenv the host's environment goes in
        self.assertIn("MAPPED=m\n", out)
        self.assertNotIn("APPTAINER_OWN", out)
        out = self.exec("env", env=env, flags=("--cleanenv", "--env", "GIVEN=g")).stdout
        self.assertNotIn("HOST_VAR", out)
        self.assertIn("MAPPED=m\n", out)  # APPTAINERENV_ survives --cleanenv, as in Apptainer
        self.assertIn("GIVEN=g\n", out)
        self.assertIn("LANG=C\n", out)

    def test_namespaces_and_binds(self):
        out = self.exec("sh", "-c", "echo $$; cat /data/f; cat /etc/fake-image; "
                        "touch /data/x 2>&1; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
                        ).stdout.split("\n")
        self.assertLess(int(out[0]), 100)  # its own pid namespace
        self.assertEqual(out[1:3], ["bound", "docker://busybox:self"])
        self.assertIn("Read-only file system", out[3])
        self.assertEqual(out[4:5], ["lo"])  # --net --network none: loopback only

    def test_joined_processes_die_with_apptainer_but_daemons_do_not(self):
        p = subprocess.Popen([self.f.exe, "exec", "instance://self1", "sh", "-c",
                              "(setsid sh -c 'sleep 1000' &) ; echo ready; exec sleep 1001"],
                             stdout=subprocess.PIPE, env={"HOME": self.f.home,
                                                          "PATH": os.environ["PATH"]})
        self.assertEqual(p.stdout.readline(), b"ready\n")
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = ""
        for _ in range(200):  # SIGKILL from PDEATHSIG is asynchronous
            left = self.exec("ps", "-o", "args").stdout
            if "sleep 1001" not in left:
                break
            time.sleep(0.02)
        self.assertNotIn("sleep 1001", left)
        self.assertIn("sleep 1000", left)  # forked twice: no parent-death signal
        self.exec("pkill", "-f", "sleep 1000")

    def test_stop_ends_everything(self):
        p = self.f.run("instance", "start", "--containall", self.sif, "self2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("INFO:    instance started successfully", p.stderr)
        pid = [i["pid"] for i in self.f.instances() if i["instance"] == "self2"][0]
        p = self.f.run("instance", "stop", "self2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Stopping self2 instance of %s (PID=%d)" % (self.sif, pid), p.stderr)
        self.assertFalse(os.path.exists("/proc/%d" % pid))
        self.assertEqual([i["instance"] for i in self.f.instances()], ["self1"])


if __name__ == "__main__":
    unittest.main()
