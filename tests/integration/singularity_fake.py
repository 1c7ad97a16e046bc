"""The fake `apptainer` of tests/fakes/apptainer/ set up for one test class: its own bin/
directory (where its test hooks live), HOME (its instances) and scratch directory."""
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "..", "fakes", "apptainer", "apptainer")


class FakeApptainer:
    def __init__(self):
        if os.geteuid() != 0:
            raise AssertionError("the fake apptainer needs root (unshare, setns, chroot): run "
                                 "the tests as root, as CI does")
        for tool in ("siftool", "mksquashfs", "unsquashfs", "unshare", "busybox"):
            if not shutil.which(tool) and not os.path.exists("/bin/" + tool):
                raise AssertionError("%s is missing: run scripts/install-deps.sh --test" % tool)
        self.dir = tempfile.mkdtemp(prefix="fake-apptainer-")
        os.chmod(self.dir, 0o755)
        self.bin = os.path.join(self.dir, "bin")
        self.home = os.path.join(self.dir, "home")
        self.scratch = os.path.join(self.dir, "scratch")
        os.makedirs(self.bin)
        os.makedirs(self.home)
        self.exe = os.path.join(self.bin, "apptainer")
        shutil.copy(FAKE, self.exe)
        os.chmod(self.exe, 0o755)

    def config(self, extra=""):
        return ("[backend.singularity]\nexecutable = %s\nscratch_dir = %s\n%s"
                % (self.exe, self.scratch, extra))

    def env(self):
        return {"HOME": self.home}

    def run(self, *args, env=None, **kw):
        e = {"HOME": self.home, "PATH": os.environ["PATH"]}
        e.update(env or {})
        return subprocess.run([self.exe] + list(args), env=e, capture_output=True, text=True,
                              timeout=120, **kw)

    def calls(self, *prefix):
        """The recorded invocations whose argv starts with prefix."""
        try:
            with open(os.path.join(self.bin, "argv.log")) as f:
                entries = [json.loads(line) for line in f]
        except FileNotFoundError:
            return []
        return [e for e in entries if e["argv"][:len(prefix)] == list(prefix)]

    def hook(self, name, content=""):
        with open(os.path.join(self.bin, name), "w") as f:
            f.write(content)

    def unhook(self, name):
        try:
            os.unlink(os.path.join(self.bin, name))
        except FileNotFoundError:
            pass

    def instances(self):
        p = self.run("instance", "list", "--json")
        return json.loads(p.stdout)["instances"]

    def cleanup(self):
        for inst in self.instances():
            self.run("instance", "stop", "--force", inst["instance"])
        for f in glob.glob(os.path.join(self.home, ".apptainer/instances/app/*/*/*/*.json")):
            try:
                with open(f) as fh:
                    os.kill(json.load(fh)["pid"], signal.SIGKILL)
            except (OSError, ValueError, KeyError):
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
