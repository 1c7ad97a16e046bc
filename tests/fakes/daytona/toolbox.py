"""The toolbox of a fake Daytona sandbox: sessions with asynchronous commands and their logs,
/process/execute, and the file endpoints. Commands run on this machine, as the user running
the fake, in the sandbox's directory; what they see as the sandbox's filesystem is this
machine's.

Sessions do what apps/daemon/pkg/session of Daytona v0.190.0 does (create.go, execute.go,
wrapper_linux.go, command.go): one shell per session (its own process group) reads the
commands on its stdin; per command the toolbox makes the command's directory with output.log
and cmd.sh (the command text) and writes Daytona's wrapper to the shell, and the shell does the
rest, with the same processes and files as in a real sandbox: the three FIFOs (rm, mkfifo),
two labeller subshells `while IFS= read -r line || [ -n "$line" ]; do printf '%s%s\n' PREFIX
"$line"; done` appending \x01\x01\x01 / \x02\x02\x02 lines to output.log (a NUL byte is
dropped, a last line without newline gets one), a writer holding the input FIFO open (so an
asynchronous command never sees EOF), `{ . cmd.sh; }` in the session shell itself, and the exit
code file written once both labellers are done. A command's exit code is read from that file,
as GetSessionCommand does. Where Daytona differs on purpose:
  - the input holder is one `sleep infinity`, killed with KILL at the end: Daytona's `while :;
    do sleep 3600; done` loop leaves its sleep behind for an hour when killed, and its TERM can
    reach the holder before the holder dropped the session shell's TERM trap, after which it
    never ends (the session then hangs in `wait`);
  - a follow stream wakes on inotify of the command's directory where Daytona reads the log
    every 20 ms, and ends as soon as the exit code exists where Daytona waits 50 reads (1 s).
"""
import ctypes
import errno
import os
import select
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

# wrapper_linux.go's cmdWrapperFormat, with the holder of the docstring.
WRAPPER = r"""
{
	log=%(log)s
	dir=%(dir)s
	sp="$dir/stdout.pipe"
	ep="$dir/stderr.pipe"
	ip=%(ip)s
	rm -f "$sp" "$ep" "$ip" && mkfifo "$sp" "$ep" "$ip" || exit 1
	cleanup() { rm -f "$sp" "$ep" "$ip"; }
	trap 'cleanup' EXIT HUP INT TERM
	( while IFS= read -r line || [ -n "$line" ]; do printf '\001\001\001%%s\n' "$line"; done < "$sp" ) >> "$log" & r1=$!
	( while IFS= read -r line || [ -n "$line" ]; do printf '\002\002\002%%s\n' "$line"; done < "$ep" ) >> "$log" & r2=$!
	%(holder)s
	ip_pid=$!
	{ . %(cmd)s; } < "$ip" > "$sp" 2> "$ep"
	_ec=$?
	kill -9 "$ip_pid" 2>/dev/null; wait "$ip_pid" 2>/dev/null
	wait "$r1" "$r2"
	echo "$_ec" >> %(exit)s
	cleanup
}
"""
HOLDER = {True: 'sleep infinity > "$ip" &', False: 'cat /dev/null > "$ip" &'}


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
        try:
            os.killpg(pid, sig)  # the session shell's group, as Daytona's Delete does
        except OSError:
            pass
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


_libc = ctypes.CDLL(None, use_errno=True)
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_DELETE_SELF = 0x2, 0x8, 0x80, 0x100, 0x400


class Watch:
    """Wakes a follow stream when its command's log or exit code file changes (inotify on the
    command's directory). Without inotify (the user's instances are all taken: the limit is
    per user, and other programs on the machine count) it reads again every 20 ms, as Daytona
    does."""

    POLL = 0.02

    def __init__(self, path):
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            self.fd = None
            return
        mask = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF
        if _libc.inotify_add_watch(self.fd, os.fsencode(path), mask) < 0:
            e = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(e, "inotify_add_watch " + path)

    def wait(self, timeout, also=()):
        """Until one of the files changed, a file descriptor of also is readable, or timeout
        seconds; which of also are readable."""
        if self.fd is None:
            return select.select(list(also), [], [], min(timeout, self.POLL))[0]
        ready = select.select([self.fd] + list(also), [], [], timeout)[0]
        if self.fd in ready:
            self._drain()
        return [f for f in ready if f != self.fd]

    def _drain(self):
        while True:
            try:
                data = os.read(self.fd, 4096)
            except BlockingIOError:
                return
            if not data:
                return

    def close(self):
        if self.fd is not None:
            os.close(self.fd)


class Command:
    def __init__(self, session, cmd_id, command, suppress_echo):
        self.id = cmd_id
        self.command = command
        self.suppress_echo = suppress_echo
        self.dir = os.path.join(session.dir, cmd_id)
        self.log = os.path.join(self.dir, "output.log")
        self.exit_file = os.path.join(self.dir, "exit_code")
        self.input = os.path.join(self.dir, "input.pipe")
        self.cmd_file = os.path.join(self.dir, "cmd.sh")
        self._exit = None

    @property
    def exit_code(self):
        """From the exit code file, once the wrapper wrote it (GetSessionCommand)."""
        if self._exit is None:
            try:
                with open(self.exit_file) as f:
                    text = f.read()
            except OSError:
                return None
            if not text.endswith("\n"):
                return None  # being written
            try:
                self._exit = int(text.strip())
            except ValueError:
                return None
        return self._exit

    def append(self, data):
        with open(self.log, "ab") as f:
            f.write(data)

    def wait_exit(self, timeout=None):
        """The exit code, waiting for it (Execute of a synchronous command)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        w = Watch(self.dir)
        try:
            while self.exit_code is None:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                w.wait(0.2)
            return self.exit_code
        finally:
            w.close()

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
        with open(os.open(cmd.cmd_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(command)
        with self.lock:
            self.commands[cmd.id] = cmd
            self.order.append(cmd.id)
        text = WRAPPER % {"log": q(cmd.log), "dir": q(cmd.dir), "ip": q(cmd.input),
                          "holder": HOLDER[run_async], "cmd": q(cmd.cmd_file),
                          "exit": q(cmd.exit_file)}
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):  # the shell is gone, or the session being deleted
            return None
        return cmd

    def send_input(self, cmd, data):
        """SendInput: the data (with a newline) into the command's input FIFO, which its
        holder keeps open; the FIFO may not be there yet right after the command was posted."""
        if not data.endswith("\n"):
            data += "\n"
        deadline = time.monotonic() + 10
        while True:
            try:
                fd = os.open(cmd.input, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.ENXIO) or \
                        cmd.exit_code is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
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
        # EOF first: the shell exits once its command is over, where a TERM would only run the
        # wrapper's trap (Daytona waits out its grace period then).
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        kill_tree(self.proc.pid)
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
