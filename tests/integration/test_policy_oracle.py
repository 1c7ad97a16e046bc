"""Differential check of the policy parser against bash itself (issue 10).

A generated corpus of shell snippets (dangerous and harmless commands run through the
obfuscations, carriers, wrappers and control structures bash accepts) runs under the real
bash in a throwaway bwrap root where every program on the PATH is a stub that records its argv
and cwd (tests/oracle/stub.c) and `kill` is not a builtin. What bash actually executed is then
judged (policy.check with the argv and the cwd it ran in) and compared with the verdict on the
snippet itself:

- decodable snippets: the snippet's verdict is never weaker than the verdict of anything it ran;
- snippets with parts only known at run time (${u:-rm}, read, a custom IFS): at least ASK when
  what ran is ASK or DENY (the engine says it cannot know; it must not say ALLOW).

Carriers include bash's arithmetic (`let 'a[$(…)]'`, `(( x ))` with x='a[$(…)]', printf -v,
read, unset, ${x@P}) and mapfile -C, a for loop's word. Bounded: a fixed seed, about 1200 snippets, 5 s per snippet, one bwrap run.
"""
import os
import pwd
import random
import shlex
import shutil
import subprocess
import tempfile
import unittest

from harness import DaemonTest

HERE = os.path.dirname(os.path.abspath(__file__))
STUB_SRC = os.path.join(HERE, "..", "oracle", "stub.c")
RANK = {"allow": 0, "ask": 1, "deny": 2}
SEED = 1010

STUBS = """rm mkfs mkfs.ext4 mke2fs dd reboot shutdown poweroff halt init telinit systemctl kill
chmod chown git curl wget cat ls sudo env nice timeout nohup setsid stdbuf xargs busybox find make
python3 node sed awk tee cp mv ln tar nc ssh scp wipefs sfdisk parted pkill killall mount crontab
sleep touch mkdir grep head wc at doas su runuser flock ionice chrt taskset chroot strace
perl ruby gdb vim sqlite3 psql rsync zip base64 id whoami uname date sort jq""".split()

# Base commands: lists of words that are already valid shell words.
DANGEROUS = [
    ["rm", "-rf", "/"], ["rm", "-rf", "~"], ["rm", "-fr", "/etc"],
    ["rm", "--recursive", "--force", "/usr"], ["rm", "-r", "-f", "--", "/home"],
    ["reboot"], ["shutdown", "-h", "now"], ["systemctl", "poweroff"], ["init", "0"],
    ["mkfs.ext4", "/dev/sda"], ["dd", "if=/dev/zero", "of=/dev/sda"], ["kill", "-9", "-1"],
    ["chmod", "-R", "777", "/"], ["wipefs", "-a", "/dev/sda"], ["git", "push", "--force"],
    ["git", "reset", "--hard"], ["rm", "-rf", "./src"], ["pkill", "sandboxd"],
    ["chown", "-R", "nobody", "/usr"], ["sfdisk", "/dev/sda"],
]
HARMLESS = [["ls", "-la"], ["git", "status"], ["cat", "README"], ["make"], ["grep", "x", "f"],
            ["touch", "a.txt"], ["date"], ["wc", "-l", "f"]]


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def char_op(rng, word, how):
    """Re-spell one character of a word (quotes, backslash, $'…', continuation)."""
    plain = [i for i, c in enumerate(word) if c.isalnum() or c in "-./"]
    if not plain or word == "~":
        return word
    i = rng.choice(plain)
    c = word[i]
    enc = {"empty": c + "''", "dq": '"%s"' % c, "bs": "\\" + c,
           "hex": "$'\\x%02x'" % ord(c), "oct": "$'\\%03o'" % ord(c),
           "uni": "$'\\u%04x'" % ord(c), "cont": c + "\\\n"}[how]
    return word[:i] + enc + word[i + 1:]


def words_op(rng, words):
    how = rng.choice(["empty", "dq", "bs", "hex", "oct", "uni", "cont"])
    i = rng.randrange(len(words))
    out = list(words)
    out[i] = char_op(rng, words[i], how)
    return out


def join(words):
    return " ".join(words)


# Operators on a command string that keep everything decodable.
def op_ifs(rng, w):
    return "${IFS}".join(w) if all("'" not in x and "$" not in x for x in w) else join(w)


def op_brace(rng, w):
    ok = len(w) > 1 and all(x and not any(c in x for c in ",{}' \"$\\\n") for x in w)
    return "{" + ",".join(w) + "}" if ok else join(w)


def op_var(rng, w):
    return "a=%s; $a %s" % (q(w[0]), join(w[1:]))


def op_subst(rng, w):
    form = rng.choice(["$(echo %s)", "`printf %%s %s`", "$(printf %s)"])
    return (form % q(w[0])) + " " + join(w[1:])


CARRIERS = ["bash -c %s", "sh -c %s", "eval %s", "echo %s | bash", "bash <<< %s",
            "source /dev/stdin <<< %s", ". <(echo %s)", "trap %s EXIT",
            "bash /dev/fd/3 3<<<%s", "bash /proc/self/fd/0 <<< %s",
            "echo %s > /tmp/s.sh; bash /tmp/s.sh", "printf '%%s\\n' %s | sh",
            "exec 3<<<%s; bash /dev/fd/3",
            # bash expands array subscripts in arithmetic and in variable names (arith.c)
            "c=%s; let 'a[$(eval \"$c\")]'", "c=%s; x='a[$(eval \"$c\")]'; (( x ))",
            "c=%s; x='a[$(eval \"$c\")]'; [[ $x -eq 1 ]]",
            "c=%s; printf -v 'a[$(eval \"$c\")]' x", "c=%s; read 'a[$(eval \"$c\")]' <<< 1",
            "c=%s; x='$(eval \"$c\")'; : \"${x@P}\"", "c=%s; unset 'a[$(eval \"$c\")]'",
            "mapfile -C %s -c 1 a <<< x", "for c in %s; do eval \"$c\"; done"]
WRAPPERS = ["sudo %s", "env %s", "command %s", "nice -n 5 %s", "timeout 5 %s", "nohup %s",
            "setsid %s", "stdbuf -oL %s", "time %s", "exec %s", "env -i PATH=/usr/bin %s",
            "xargs %s </dev/null", "busybox %s", "sudo -u root -- %s", "doas %s", "flock /tmp/l %s",
            "ionice -c3 %s", "chrt -r 5 %s", "strace -f %s"]
CONTROL = ["(%s)", "{ %s; }", "true && %s", "false || %s", "if true; then %s; fi",
           "for i in 1; do %s; done", "f(){ %s; }; f", "case x in x) %s;; esac", "echo ok\n%s",
           "true; %s", "while true; do %s; break; done", "x=$(%s)", "echo \"$(%s)\"",
           "cat <(%s)", "bash <<'EOF'\n%s\nEOF"]


def strict_snippet(rng, base):
    w = list(base)
    for _ in range(rng.randint(0, 2)):
        w = words_op(rng, w)
    form = rng.choice([op_ifs, op_brace, op_var, op_subst])
    s = form(rng, w) if rng.random() < 0.5 else join(w)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.35:
            s = rng.choice(CARRIERS) % q(s)
        elif kind < 0.7 and "\n" not in s:
            s = rng.choice(WRAPPERS) % s
        else:
            s = rng.choice(CONTROL) % s
    return s


OPAQUE = ["${u:-%s} %s", "read a <<< %s; $a %s", "IFS=,; c=%s; $c", "x=$(cat /dev/null)%s; $x %s"]


def opaque_snippet(rng, base):
    form = rng.choice(OPAQUE)
    if form.startswith("IFS"):
        return form % ",".join(base)
    return form % (q(base[0]) if "read" in form else base[0], join(base[1:]))


def corpus():
    rng = random.Random(SEED)
    strict, opaque = [], []
    for i in range(1000):
        base = rng.choice(DANGEROUS if rng.random() < 0.8 else HARMLESS)
        strict.append(strict_snippet(rng, base))
    for i in range(200):
        opaque.append(opaque_snippet(rng, rng.choice(DANGEROUS)))
    return strict, opaque


class Oracle(DaemonTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="sbxoracle-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def build_root(self):
        bwrap = shutil.which("bwrap")
        self.assertIsNotNone(bwrap, "bwrap is required (Debian bubblewrap; scripts/install-deps.sh"
                                    " --test installs it)")
        stubdir = os.path.join(self.tmp, "bin")
        os.mkdir(stubdir)
        stub = os.path.join(self.tmp, "stub")
        subprocess.run(["cc", "-O2", "-o", stub, STUB_SRC], check=True)
        for name in STUBS:
            os.link(stub, os.path.join(stubdir, name))
        for real in ("bash", "dash"):
            shutil.copy(shutil.which(real), os.path.join(stubdir, real))
        os.symlink("dash", os.path.join(stubdir, "sh"))
        tools = os.path.join(self.tmp, "tools")
        os.mkdir(tools)
        shutil.copy(shutil.which("timeout"), os.path.join(tools, "timeout"))
        return bwrap, stubdir, tools

    def run_snippets(self, snippets):
        bwrap, stubdir, tools = self.build_root()
        home = pwd.getpwuid(os.geteuid()).pw_dir
        snip = os.path.join(self.tmp, "snip")
        log = os.path.join(self.tmp, "log")
        os.mkdir(snip)
        os.mkdir(log)
        for i, s in enumerate(snippets):
            with open(os.path.join(snip, str(i)), "w") as f:
                f.write(s)
        with open(os.path.join(snip, "rc"), "w") as f:
            f.write("enable -n kill\n")
        with open(os.path.join(snip, "driver.sh"), "w") as f:
            # builtins only: every program on the PATH is a stub
            f.write('for ((i = 0; i < %d; i++)); do\n'
                    '  cd "$HOME/project" || exit 1\n'
                    '  echo $i > /oracle-log/current\n'
                    '  ORACLE_ID=$i /oracle-tools/timeout -s KILL 5 /usr/bin/bash -c'
                    ' "$(< /oracle-snip/$i)"'
                    ' </dev/null >/dev/null 2>&1\n'
                    'done\n' % len(snippets))
        cmd = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
               "--tmpfs", "/", "--ro-bind", "/usr/lib", "/usr/lib"]
        if os.path.isdir("/usr/lib64"):
            cmd += ["--ro-bind", "/usr/lib64", "/usr/lib64", "--symlink", "usr/lib64", "/lib64"]
        cmd += ["--symlink", "usr/lib", "/lib", "--ro-bind", stubdir, "/usr/bin",
                "--symlink", "bin", "/usr/sbin", "--symlink", "usr/bin", "/bin",
                "--symlink", "usr/bin", "/sbin", "--ro-bind", tools, "/oracle-tools",
                "--ro-bind", snip, "/oracle-snip", "--bind", log, "/oracle-log",
                "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                "--dir", home, "--dir", home + "/project",
                "--clearenv", "--setenv", "HOME", home, "--setenv", "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--setenv", "BASH_ENV", "/oracle-snip/rc",
                "/usr/bin/bash", "/oracle-snip/driver.sh"]
        subprocess.run(cmd, check=True, timeout=900)
        ran = {}
        for name in os.listdir(log):
            if not name.startswith("argv.") or not name[5:].isdigit():
                continue  # a background leftover that ran between two snippets
            i = int(name[5:])
            with open(os.path.join(log, name), "rb") as f:
                for line in f:
                    fields = [bytes.fromhex(x[1:].decode()).decode("utf-8", "replace")
                              for x in line.split()]
                    ran.setdefault(i, []).append((fields[0], fields[1], fields[2:]))
        return ran, home

    def verdict(self, params):
        return self.c.call("policy.check", params)["verdict"]

    def check(self, snippets, strict):
        ran, home = self.run_snippets(snippets)
        self.assertGreater(sum(len(v) for v in ran.values()), len(snippets) // 2,
                           "the oracle saw too few programs run: is bwrap working?")
        problems = []
        for i, s in enumerate(snippets):
            execs = ran.get(i, [])
            if not execs:
                continue
            v_s = self.verdict({"command": s, "cwd": home + "/project"})
            for cwd, exe, args in execs:
                argv = [os.path.basename(exe)] + args
                v_a = self.verdict({"argv": argv, "cwd": cwd})
                weaker = RANK[v_s] < RANK[v_a] if strict else \
                    (RANK[v_a] >= 1 and v_s == "allow")
                if weaker:
                    problems.append("%r judged %s, but bash ran %r (%s)"
                                    % (s, v_s, shlex.join(argv), v_a))
        return problems, len(ran)

    def test_never_weaker_than_what_bash_runs(self):
        strict, opaque = corpus()
        problems, n = self.check(strict, strict=True)
        self.assertGreater(n, 700)
        self.assertEqual(problems, [], "\n".join(problems[:40]))

    def test_opaque_is_never_allow(self):
        strict, opaque = corpus()
        problems, n = self.check(opaque, strict=False)
        self.assertGreater(n, 100)
        self.assertEqual(problems, [], "\n".join(problems[:40]))


if __name__ == "__main__":
    unittest.main()
