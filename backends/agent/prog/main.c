/* main.c — sandboxd-agent: options, the three modes, the poll loop.
 *
 *   sandboxd-agent [--runtime-dir DIR] [spool options]
 *       serves one daemon on stdin/stdout: a container's PID 1 (docker), or an ordinary
 *       process under `apptainer exec`, `kubectl exec -i`, ssh (it is then a subreaper).
 *   sandboxd-agent --detach --runtime-dir DIR [--socket PATH] [spool options]
 *       reads a secret (hex) from stdin, listens on a Unix socket (0600, in directories only
 *       its user may enter), daemonizes and outlives every connection; a client must prove it
 *       knows the secret. Prints "listening on PATH pid N" once it does; with --bridge it
 *       prints nothing and the starting process becomes the --connect bridge to the new agent
 *       (the rest of stdin after the secret's line is the session's), saving a second command
 *       on transports where each costs (apptainer exec); when the directory's agent already
 *       runs, it only bridges to it, so the same command can be retried.
 *   sandboxd-agent --connect PATH
 *       copies stdin to the socket and the socket to stdout: the stdio bridge through which a
 *       pipe pair (ssh, kubectl) reaches a detached agent. It knows nothing of the protocol.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"

struct agent_opts agent_opts = {
        .spool_mem = 8u << 20,
        .exec_quota = 64u << 20,
        .agent_quota = 256u << 20,
        .linger_ms = 600000,
};

static int sigfd = -1;

/* ---- util ---- */

/* realloc that exits on failure (the agent has no way to go on without memory). */
void *
agent_realloc(void *p, size_t n)
{
        void *q = realloc(p, n ? n : 1);

        if (!q)
                _exit(70);
        return q;
}

/* Monotonic ms. */
int64_t
agent_now_ms(void)
{
        return agent_now_us() / 1000;
}

/* Monotonic us. */
int64_t
agent_now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Bytes held. */
size_t
agent_buf_used(const struct agent_buf *b)
{
        return b->len - b->off;
}

/* Makes room for more bytes after b->len. */
void
agent_buf_reserve(struct agent_buf *b, size_t more)
{
        size_t cap;

        if (b->off == b->len)
                b->off = b->len = 0;
        if (b->len + more <= b->cap)
                return;
        if (b->off > 0) {
                memmove(b->data, b->data + b->off, b->len - b->off);
                b->len -= b->off;
                b->off = 0;
        }
        if (b->len + more <= b->cap)
                return;
        cap = b->cap ? b->cap : 4096;
        while (cap < b->len + more)
                cap *= 2;
        b->data = agent_realloc(b->data, cap);
        b->cap = cap;
}

/* Frees a buffer. */
void
agent_buf_free(struct agent_buf *b)
{
        free(b->data);
        *b = (struct agent_buf){0};
}

/* Closes *fd once. */
void
agent_close(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* O_NONBLOCK on. */
void
agent_set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);

        if (fl >= 0)
                fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* mkdir -p of path's first len bytes, mode 0700, errors ignored. */
void
agent_mkdir_p(const char *path, size_t len)
{
        char buf[PATH_MAX];

        if (len == 0 || len >= sizeof(buf))
                return;
        memcpy(buf, path, len);
        buf[len] = 0;
        for (size_t i = 1; i <= len; i++) {
                if (buf[i] != '/' && buf[i] != 0)
                        continue;
                buf[i] = 0;
                mkdir(buf, 0700);
                if (i < len)
                        buf[i] = '/';
        }
}

/* Random bytes from the kernel. */
void
agent_random(void *p, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t r = getrandom((char *) p + got, n - got, 0);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        _exit(72);
                got += (size_t) r;
        }
}

/* ---- options ---- */

static int
parse_size(const char *s, uint64_t *out)
{
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        int shift = 0;

        if (end == s)
                return -1;
        if (*end == 'K' || *end == 'k')
                shift = 10;
        else if (*end == 'M' || *end == 'm')
                shift = 20;
        else if (*end == 'G' || *end == 'g')
                shift = 30;
        else if (*end)
                return -1;
        if (shift && end[1])
                return -1;
        *out = (uint64_t) v << shift;
        return 0;
}

static void __attribute__((noreturn)) usage(int code)
{
        fprintf(code ? stderr : stdout,
                "usage: sandboxd-agent [--runtime-dir DIR] [--spool-mem N] [--exec-quota N] "
                "[--agent-quota N]\n"
                "       sandboxd-agent --detach --runtime-dir DIR [--socket PATH] "
                "[--linger SECONDS] [--bridge] (secret in hex on stdin)\n"
                "       sandboxd-agent --connect PATH\n");
        exit(code);
}

enum mode { MODE_STDIO, MODE_DETACH, MODE_CONNECT };

static enum mode
parse_args(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"runtime-dir", 1, 0, 'r'}, {"socket", 1, 0, 's'},    {"detach", 0, 0, 'd'},
                {"connect", 1, 0, 'c'},     {"spool-mem", 1, 0, 'm'}, {"exec-quota", 1, 0, 'e'},
                {"agent-quota", 1, 0, 'a'}, {"linger", 1, 0, 'l'},    {"bridge", 0, 0, 'b'},
                {"version", 0, 0, 'V'},     {"help", 0, 0, 'h'},      {0, 0, 0, 0}};
        enum mode mode = MODE_STDIO;
        uint64_t v;
        int c;

        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case 'r':
                        agent_opts.runtime_dir = optarg;
                        break;
                case 's':
                        agent_opts.socket = optarg;
                        break;
                case 'd':
                        mode = MODE_DETACH;
                        break;
                case 'c':
                        mode = MODE_CONNECT, agent_opts.socket = optarg;
                        break;
                case 'm':
                        if (parse_size(optarg, &agent_opts.spool_mem) < 0)
                                usage(2);
                        break;
                case 'e':
                        if (parse_size(optarg, &agent_opts.exec_quota) < 0)
                                usage(2);
                        break;
                case 'a':
                        if (parse_size(optarg, &agent_opts.agent_quota) < 0)
                                usage(2);
                        break;
                case 'l':
                        if (parse_size(optarg, &v) < 0)
                                usage(2);
                        agent_opts.linger_ms = (int64_t) v * 1000;
                        break;
                case 'b':
                        agent_opts.bridge = 1;
                        break;
                case 'V':
                        printf("sandboxd-agent protocol %u\n", AGENT_PROTO_VERSION);
                        exit(0);
                case 'h':
                        usage(0);
                default:
                        usage(2);
                }
        }
        if (optind < argc || (mode == MODE_DETACH && !agent_opts.runtime_dir) ||
            (agent_opts.bridge && mode != MODE_DETACH))
                usage(2);
        return mode;
}

/* ---- set-up ---- */

static void
setup_common(void)
{
        sigset_t set;
        struct rlimit nofile, raised;

        signal(SIGPIPE, SIG_IGN);
        /* Nothing of the same uid may ptrace us, read our memory (the secret) or open our
         * stdio through /proc/PID/fd. */
        prctl(PR_SET_DUMPABLE, 0);
        if (getpid() != 1) /* an ordinary process: orphans of our execs come back to us */
                prctl(PR_SET_CHILD_SUBREAPER, 1);
        if (fcntl(2, F_GETFD) < 0)
                open("/dev/null", O_WRONLY);
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
        getrlimit(RLIMIT_NOFILE, &nofile);
        agent_exec_set_nofile(&nofile);
        raised = nofile;
        raised.rlim_cur = raised.rlim_max;
        setrlimit(RLIMIT_NOFILE, &raised);
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        if (getpid() != 1) { /* as PID 1 these stay ignored: nothing inside may stop us */
                sigaddset(&set, SIGTERM);
                sigaddset(&set, SIGINT);
                sigaddset(&set, SIGHUP);
        }
        sigprocmask(SIG_BLOCK, &set, NULL);
        sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (sigfd < 0)
                _exit(71);
        agent_exec_init();
        if (agent_opts.runtime_dir)
                agent_mkdir_p(agent_opts.runtime_dir, strlen(agent_opts.runtime_dir));
}

static void
handle_signals(void)
{
        struct signalfd_siginfo si;
        int stop = 0;

        while (read(sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                if (si.ssi_signo != SIGCHLD)
                        stop = 1;
        agent_exec_reap();
        if (stop) {
                agent_exec_kill_all();
                _exit(0);
        }
}

/* ---- the loop ---- */

static struct pollfd *pfd;
static void **slots;
static size_t pfd_cap;

/* poll() for at most timeout ms (-1: no limit), or less when a child's pipe settles. */
static int
wait_events(struct pollfd *fds, size_t n, int timeout)
{
        int64_t us = agent_exec_settle_us(agent_now_us());
        struct timespec ts;

        if (us < 0 || (timeout >= 0 && (int64_t) timeout * 1000 < us))
                us = timeout < 0 ? -1 : (int64_t) timeout * 1000;
        if (us < 0)
                return ppoll(fds, n, NULL, NULL);
        ts.tv_sec = us / 1000000;
        ts.tv_nsec = us % 1000000 * 1000;
        return ppoll(fds, n, &ts, NULL);
}

static void __attribute__((noreturn)) run(void)
{
        for (;;) {
                int64_t now = agent_now_ms();
                int timeout = agent_chan_tick(agent_exec_tick(-1, now), now);
                size_t need = 8 + 3 * agent_exec_count(), n = 0, nchan;
                if (agent_chan_flush() < 0) { /* stdio: the daemon's side is gone */
                        agent_exec_kill_all();
                        _exit(0);
                }
                if (!agent_session_on() && agent_exec_count() == 0 && agent_opts.socket &&
                    now - agent_chan_last_session() >= agent_opts.linger_ms)
                        _exit(0); /* detached and unused for --linger */
                if (need > pfd_cap) {
                        pfd_cap = need * 2;
                        pfd = agent_realloc(pfd, pfd_cap * sizeof(*pfd));
                        slots = agent_realloc(slots, pfd_cap * sizeof(*slots));
                }
                pfd[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
                agent_chan_poll(pfd, &n);
                nchan = n;
                agent_exec_poll(pfd, slots, &n);
                if (agent_opts.socket && timeout < 0)
                        timeout = 60000; /* re-check the linger */
                if (wait_events(pfd, n, timeout) < 0) {
                        if (errno != EINTR)
                                _exit(1);
                        continue;
                }
                if (pfd[0].revents)
                        handle_signals();
                agent_exec_handle(pfd + nchan, slots + nchan, n - nchan);
                /* Last: a new session or RESUME_END may free execs the slots point to. */
                agent_chan_handle(pfd + 1, nchan - 1);
        }
}

/* ---- detached ---- */

/* "sandboxd-agent: <what><arg>: <errno text>" and exit 1. */
static void __attribute__((noreturn)) die(const char *what, const char *arg)
{
        fprintf(stderr, "sandboxd-agent: %s%s: %s\n", what, arg, strerror(errno));
        exit(1);
}

static int
hexval(int c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The secret: one line of 32 to 128 lower-case hex digits on stdin (never argv or env). */
static void
read_secret(void)
{
        char line[160];
        size_t n = 0;

        while (n < sizeof(line) - 1) {
                ssize_t r = read(0, line + n, 1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0 || line[n] == '\n')
                        break;
                n++;
        }
        if (n < 32 || n > 128 || n % 2)
                errno = EINVAL, die("the secret on stdin must be 32 to 128 hex digits", "");
        for (size_t i = 0; i < n; i += 2) {
                int hi = hexval(line[i]), lo = hexval(line[i + 1]);
                if (hi < 0 || lo < 0)
                        errno = EINVAL, die("the secret on stdin is not hex", "");
                agent_opts.secret[agent_opts.secret_len++] = (unsigned char) (hi << 4 | lo);
        }
        memset(line, 0, sizeof(line));
}

/* dir must be ours and closed to everyone else: the socket's safety rests on it. */
static void
check_private_dir(const char *dir)
{
        struct stat st;

        if (lstat(dir, &st) < 0)
                die("cannot use directory ", dir);
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
                errno = EPERM;
                die("not a directory of this user with mode 0700: ", dir);
        }
}

static int
listen_socket(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char dir[PATH_MAX];
        const char *slash = strrchr(path, '/');
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                errno = ENAMETOOLONG, die("socket path longer than 107 bytes: ", path);
        snprintf(dir, sizeof(dir), "%.*s", slash ? (int) (slash - path) : 1, slash ? path : ".");
        check_private_dir(dir[0] ? dir : "/");
        memcpy(sa.sun_path, path, strlen(path));
        unlink(path); /* stale: the lock says no other agent uses this directory */
        umask(077);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
                die("cannot listen on ", path);
        return fd;
}

static void __attribute__((noreturn)) run_connect(void);

static int lock_fd = -1; /* DIR/agent.lock, held (flock) for the agent's life */

/* The serving process's pid into the lock file (after the forks: the one to signal). */
static void
write_lock_pid(void)
{
        char pid[24];

        snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
        if (ftruncate(lock_fd, 0) < 0 || pwrite(lock_fd, pid, strlen(pid), 0) < 0)
                die("cannot write the pid into agent.lock in ", agent_opts.runtime_dir);
}

static void
lock_runtime_dir(void)
{
        char path[PATH_MAX + 16];
        int fd;

        agent_mkdir_p(agent_opts.runtime_dir, strlen(agent_opts.runtime_dir));
        check_private_dir(agent_opts.runtime_dir);
        snprintf(path, sizeof(path), "%s/agent.lock", agent_opts.runtime_dir);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                die("cannot open ", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK && agent_opts.bridge) {
                close(fd); /* --bridge: the agent of this directory runs; bridge to it */
                run_connect();
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                errno = EBUSY;
                die("another sandboxd-agent runs with runtime directory ", agent_opts.runtime_dir);
        }
        lock_fd = fd;
        write_lock_pid();
}

/* fork, setsid, fork: the grandchild serves; the first process exits once it is listening, or
 * with --bridge becomes the bridge to it (lfd closed). */
static void
daemonize(const char *path, int lfd)
{
        int rep[2], dn;
        char msg[PATH_MAX + 64];
        ssize_t n;
        pid_t pid;

        if (pipe2(rep, O_CLOEXEC) < 0 || (pid = fork()) < 0)
                die("cannot fork", "");
        if (pid > 0) {
                close(rep[1]);
                n = read(rep[0], msg, sizeof(msg) - 1);
                if (n <= 0)
                        exit(1);
                msg[n] = 0;
                if (agent_opts.bridge) {
                        close(lfd);
                        run_connect();
                }
                fputs(msg, stdout);
                exit(0);
        }
        close(rep[0]);
        setsid();
        if (fork() != 0)
                _exit(0);
        write_lock_pid();
        snprintf(msg, sizeof(msg), "listening on %s pid %d\n", path, (int) getpid());
        if (write(rep[1], msg, strlen(msg)) < 0)
                _exit(1);
        close(rep[1]);
        dn = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(dn, 0);
        dup2(dn, 1);
        dup2(dn, 2);
        if (dn > 2)
                close(dn);
        if (chdir("/") < 0)
                _exit(1);
}

static void __attribute__((noreturn)) run_detached(void)
{
        char def[PATH_MAX];
        const char *path = agent_opts.socket;
        int lfd;

        read_secret();
        if (!path) {
                snprintf(def, sizeof(def), "%s/agent.sock", agent_opts.runtime_dir);
                path = agent_opts.socket = def;
        }
        lock_runtime_dir();
        lfd = listen_socket(path);
        daemonize(path, lfd);
        setup_common();
        agent_chan_init_listen(lfd);
        run();
}

/* ---- the stdio bridge ---- */

static int
bridge_copy(int from, int to)
{
        static char b[64 << 10];
        ssize_t n = read(from, b, sizeof(b)), off = 0;

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0)
                return -1;
        while (off < n) { /* blocking writes: the bridge has nothing else to do */
                ssize_t w = write(to, b + off, (size_t) (n - off));
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                off += w;
        }
        return 0;
}

static void __attribute__((noreturn)) run_connect(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        signal(SIGPIPE, SIG_IGN);
        if (strlen(agent_opts.socket) >= sizeof(sa.sun_path))
                errno = ENAMETOOLONG, die("socket path too long: ", agent_opts.socket);
        memcpy(sa.sun_path, agent_opts.socket, strlen(agent_opts.socket));
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("cannot connect to ", agent_opts.socket);
        for (;;) {
                struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        exit(1);
                if ((p[0].revents && bridge_copy(0, fd) < 0) ||
                    (p[1].revents && bridge_copy(fd, 1) < 0))
                        exit(0);
        }
}

/* The agent (agent.h): sandboxd-agent's main (entry.c), and the PID 1 of a namespace sandbox
 * once sandboxd-nsbox has set it up (backends/local/init/main.c). */
int
agent_main(int argc, char **argv)
{
        switch (parse_args(argc, argv)) {
        case MODE_CONNECT:
                run_connect();
        case MODE_DETACH:
                run_detached();
        case MODE_STDIO:
                break;
        }
        setup_common();
        agent_chan_init_stdio();
        run();
}
