"""The toolbox of a fake Daytona sandbox: sessions with asynchronous commands and their logs,
/process/execute, and the file endpoints. Commands run on this machine, as the user running
the fake, in the sandbox's directory; what they see as the sandbox's filesystem is this
machine's.

Sessions follow apps/daemon/pkg/session of Daytona v0.190.0: one shell per session (its own
process group) reads the commands, each sourced from a cmd.sh file with stdin from the
command's input FIFO and stdout/stderr into FIFOs whose lines are labelled \\x01\\x01\\x01 /
\\x02\\x02\\x02 into output.log. The labellers are threads here, with the semantics of
Daytona's `while IFS= read -r line || [ -n "$line" ]; do printf '%s%s\\n' …` (a NUL byte is
dropped, a last line without newline gets one); the exit code file is written once both
labellers have flushed. An asynchronous command's input FIFO is held open for writing until
the command ends, so it never sees EOF.
"""
import os
import shutil
import signal
import stat
import subprocess
import threading
import time
import uuid

STDOUT_PREFIX = b"\x01\x01\x01"
STDERR_PREFIX = b"\x02\x02\x02"
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


def q(path):
    return "'" + path.replace("'", "'\\''") + "'"


def descendants(pid):
    """pid's process tree, and every process in the sessions of its members (walks /proc)."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            procs[int(d)] = (int(fields[1]), int(fields[3]))  # ppid, session
        except (OSError, IndexError, ValueError):
            continue
    tree, grown = {pid}, True
    while grown:
        grown = False
        for p, (ppid, _) in procs.items():
            if p not in tree and ppid in tree:
                tree.add(p)
                grown = True
    sessions = {procs[p][1] for p in tree if p in procs and procs[p][1] in tree}
    tree |= {p for p, (_, sid) in procs.items() if sid in sessions}
    return tree


def kill_tree(pid, grace=1.0):
    tree = descendants(pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in tree:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(os.path.exists("/proc/%d" % p) and
                                                  not _zombie(p) for p in tree):
            time.sleep(0.02)


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class Command:
    def __init__(self, session, cmd_id, command, suppress_echo):
        self.id = cmd_id
        self.command = command
        self.suppress_echo = suppress_echo
        self.dir = os.path.join(session.dir, cmd_id)
        self.log = os.path.join(self.dir, "output.log")
        self.exit_file = os.path.join(self.dir, "exit_code")
        self.input = os.path.join(self.dir, "input.pipe")
        self.exit_code = None
        self.cond = threading.Condition()
        self.log_lock = threading.Lock()
        self.holder = None

    def append(self, data):
        with self.log_lock:
            with open(self.log, "ab") as f:
                f.write(data)
        with self.cond:
            self.cond.notify_all()

    def label(self, fifo, prefix):
        """One labeller: lines of fifo into the log, like Daytona's read/printf loop."""
        with open(fifo, "rb", buffering=0) as f:
            part = b""
            while True:
                chunk = f.read(65536)
                if not chunk:
                    break
                part += chunk.replace(b"\0", b"")
                lines = part.split(b"\n")
                part = lines.pop()
                if lines:
                    self.append(b"".join(prefix + l + b"\n" for l in lines))
            if part:
                self.append(prefix + part + b"\n")

    def info(self):
        out = {"id": self.id, "command": self.command}
        if self.exit_code is not None:
            out["exitCode"] = self.exit_code
        return out


class Session:
    def __init__(self, sandbox, session_id):
        self.id = session_id
        self.sandbox = sandbox
        self.dir = os.path.join(sandbox.config_dir, "sessions", session_id)
        os.makedirs(self.dir, exist_ok=True)
        self.commands = {}
        self.order = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen([SHELL], stdin=subprocess.PIPE, cwd=sandbox.workdir,
                                     env=sandbox.environ(), process_group=0,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def execute(self, command, run_async, suppress_echo):
        cmd = Command(self, str(uuid.uuid4()), command, suppress_echo)
        os.makedirs(cmd.dir)
        open(cmd.log, "wb").close()
        cmd_file = os.path.join(cmd.dir, "cmd.sh")
        with open(os.open(cmd_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(command)
        sp, ep, st = (os.path.join(cmd.dir, n) for n in ("stdout.pipe", "stderr.pipe", "st.pipe"))
        for fifo in (sp, ep, cmd.input, st):
            os.mkfifo(fifo)
        labellers = [threading.Thread(target=cmd.label, args=(sp, STDOUT_PREFIX), daemon=True),
                     threading.Thread(target=cmd.label, args=(ep, STDERR_PREFIX), daemon=True)]
        for t in labellers:
            t.start()
        if run_async:
            cmd.holder = os.open(cmd.input, os.O_RDWR)  # a writer until the end: no EOF
        else:
            threading.Thread(target=lambda: os.close(os.open(cmd.input, os.O_WRONLY)),
                             daemon=True).start()
        threading.Thread(target=self._watch, args=(cmd, st, labellers), daemon=True).start()
        with self.lock:
            self.commands[cmd.id] = cmd
            self.order.append(cmd.id)
        line = "{ . %s; } < %s > %s 2> %s; echo $? > %s\n" % (q(cmd_file), q(cmd.input), q(sp),
                                                              q(ep), q(st))
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            return None
        return cmd

    def _watch(self, cmd, st, labellers):
        try:
            with open(st) as f:
                status = int(f.read().strip() or "1")
        except (OSError, ValueError):
            status = 1
        if cmd.holder is not None:
            os.close(cmd.holder)
            cmd.holder = None
        for t in labellers:
            t.join()
        try:
            with open(cmd.exit_file, "w") as f:
                f.write("%d\n" % status)
        except OSError:
            pass  # the session was deleted meanwhile (its directory went with it)
        with cmd.cond:
            cmd.exit_code = status
            cmd.cond.notify_all()

    def send_input(self, cmd, data):
        if not data.endswith("\n"):
            data += "\n"
        fd = os.open(cmd.input, os.O_WRONLY | os.O_NONBLOCK)
        try:
            # The echo goes to the log before the command can read the line and answer it.
            if not cmd.suppress_echo:
                cmd.append(STDOUT_PREFIX + data.encode())
            os.write(fd, data.encode())
        finally:
            os.close(fd)

    def info(self):
        with self.lock:
            return {"sessionId": self.id,
                    "commands": [self.commands[c].info() for c in self.order]}

    def terminate(self):
        kill_tree(self.proc.pid)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def execute(sandbox, command, cwd, envs, timeout):
    """POST /process/execute: the shell reads command on stdin; output combined."""
    env = sandbox.environ()
    env.update(envs or {})
    p = subprocess.Popen([SHELL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, cwd=cwd or sandbox.workdir, env=env,
                         process_group=0)
    try:
        out, _ = p.communicate(command.encode(), timeout=timeout or None)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return p.returncode, out.decode("utf-8", "replace")


def parse_multipart(ctype, body):
    """{name: bytes} of a multipart/form-data body (the parts the toolbox reads)."""
    if "boundary=" not in ctype:
        return None
    boundary = ctype.split("boundary=", 1)[1].split(";")[0].strip().strip('"').encode()
    parts = {}
    for chunk in body.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            return None
        name = None
        for h in head.decode("utf-8", "replace").split("\r\n"):
            if h.lower().startswith("content-disposition:"):
                for item in h.split(";"):
                    item = item.strip()
                    if item.startswith("name="):
                        name = item[5:].strip('"')
        if name is None:
            return None
        parts[name] = data[:-2] if data.endswith(b"\r\n") else data
    return parts


def go_mode(m):
    """Go's FileMode.String() of a stat mode (what the toolbox's /files/info says): the letters
    of "dalTLDpSugct?" whose bits are set ('-' for none), then rwxrwxrwx."""
    kinds = [(stat.S_ISDIR(m), "d"), (stat.S_ISLNK(m), "L"),
             (stat.S_ISBLK(m) or stat.S_ISCHR(m), "D"), (stat.S_ISFIFO(m), "p"),
             (stat.S_ISSOCK(m), "S"), (m & stat.S_ISUID, "u"), (m & stat.S_ISGID, "g"),
             (stat.S_ISCHR(m), "c"), (m & stat.S_ISVTX, "t")]
    head = "".join(c for on, c in kinds if on) or "-"
    return head + "".join(c if m & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def file_info(path):
    st = os.stat(path)
    return {"name": os.path.basename(path), "size": st.st_size,
            "mode": go_mode(st.st_mode), "modTime": time.ctime(st.st_mtime),
            "modifiedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime)),
            "isDir": os.path.isdir(path), "owner": str(st.st_uid), "group": str(st.st_gid),
            "permissions": "%04o" % (st.st_mode & 0o7777)}
