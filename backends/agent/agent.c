/* agent.c — sandboxd-agent: a docker sandbox's main process. Runs every exec of the sandbox
 * over one stdin/stdout stream (wire format: backends/agent_proto.h). Static, libc only,
 * single-threaded poll() loop; SIGCHLD arrives on a signalfd. */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "backends/agent_proto.h"

#define AGENT_MAX_EXECS    4096
#define AGENT_MAX_KILLS    4096
#define AGENT_MAX_ENV      8192
#define AGENT_OUTQ_HIGH    (1u << 20) /* stop reading children above this */
#define AGENT_DRAIN_MS     250
#define AGENT_KILL_STEP_MS 50
#define AGENT_KILL_HARD_MS 2000
#define AGENT_CREDIT_MAX   (1ull << 40)
#define AGENT_STATE_MAX                                                                            \
        (AGENT_MAX_STATE < AGENT_MAX_PAYLOAD - 8 ? AGENT_MAX_STATE : AGENT_MAX_PAYLOAD - 8)

struct agent_buf {
        unsigned char *data;
        size_t off, len, cap;
};

struct agent_exec {
        uint32_t id;
        pid_t pid; /* also the session id of its tree */
        int reaped, status, tty;
        int out_fd, err_fd, in_fd; /* -1 once closed; tty: out_fd = master, in_fd = dup */
        uint64_t credit;
        struct agent_buf inq; /* stdin bytes not yet written */
        int in_eof;           /* close stdin once inq drains */
        uint32_t ack;         /* stdin bytes written or dropped since the last ACK */
        char *state;          /* state file path or NULL */
        int64_t drain_left;   /* ms of output draining left after the exit */
        int64_t drain_mark;   /* when the current draining stretch began, or -1 */
};

struct agent_kill {
        uint32_t id;
        pid_t sid;
        int hard;                       /* in the SIGKILL phase */
        int64_t start, grace_end, next; /* ms */
        int64_t step;                   /* ms to the next scan */
};

struct agent_start {
        uint32_t flags, argc, envc;
        uint16_t rows, cols;
        const char *cwd, *state;
        char **argv, **env;
};

struct agent_fds {
        int in[2], out[2], err[2], rep[2];
        int master, slave;
};

struct agent_proc {
        pid_t pid, ppid, sid;
        int mark;
};

struct agent_slot {
        struct agent_exec *e;
        int which; /* 0 out, 1 err, 2 in */
};

enum agent_step {
        AGENT_STEP_PIPE,
        AGENT_STEP_PTY,
        AGENT_STEP_FORK,
        AGENT_STEP_SETSID,
        AGENT_STEP_DUP,
        AGENT_STEP_CHDIR,
        AGENT_STEP_EXEC,
        AGENT_STEP_LIMIT,
        AGENT_STEP_ENV,
};

static const char *const agent_step_names[] = {
        [AGENT_STEP_PIPE] = "pipe",     [AGENT_STEP_PTY] = "pty",     [AGENT_STEP_FORK] = "fork",
        [AGENT_STEP_SETSID] = "setsid", [AGENT_STEP_DUP] = "dup2",    [AGENT_STEP_CHDIR] = "chdir",
        [AGENT_STEP_EXEC] = "exec",     [AGENT_STEP_LIMIT] = "limit", [AGENT_STEP_ENV] = "env",
};

extern char **environ;

static struct agent_exec *agent_execs[AGENT_MAX_EXECS];
static size_t agent_nexecs;
static struct agent_kill agent_kills[AGENT_MAX_KILLS];
static size_t agent_nkills;
static struct agent_buf agent_in, agent_out;
static int agent_sigfd = -1, agent_devnull = -1;
static uint64_t agent_oom_last;
static struct rlimit agent_nofile;
static struct pollfd *agent_pfd;
static struct agent_slot *agent_slots;
static size_t agent_pfd_cap;
static struct agent_proc *agent_procs;
static size_t agent_procs_cap;

static void *
agent_realloc(void *p, size_t n)
{
        void *q = realloc(p, n ? n : 1);

        if (!q)
                _exit(70);
        return q;
}

static int64_t
agent_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t
agent_buf_used(const struct agent_buf *b)
{
        return b->len - b->off;
}

/* Makes room for more bytes after b->len. */
static void
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

static void
agent_buf_free(struct agent_buf *b)
{
        free(b->data);
        *b = (struct agent_buf){0};
}

static void
agent_send(uint32_t id, enum agent_msg type, const void *a, size_t alen, const void *b, size_t blen)
{
        unsigned char *p;

        agent_buf_reserve(&agent_out, AGENT_HDR_LEN + alen + blen);
        p = agent_out.data + agent_out.len;
        agent_hdr(p, (uint32_t) (alen + blen), id, type);
        if (alen)
                memcpy(p + AGENT_HDR_LEN, a, alen);
        if (blen)
                memcpy(p + AGENT_HDR_LEN + alen, b, blen);
        agent_out.len += AGENT_HDR_LEN + alen + blen;
}

static void
agent_send32(uint32_t id, enum agent_msg type, uint32_t a)
{
        unsigned char p[4];

        agent_put32(p, a);
        agent_send(id, type, p, 4, NULL, 0);
}

static void
agent_send_failed(uint32_t id, int err, enum agent_step step)
{
        unsigned char p[4];
        const char *name = agent_step_names[step];

        agent_put32(p, (uint32_t) err);
        agent_send(id, AGENT_FAILED, p, 4, name, strlen(name) + 1);
}

/* Writes queued output; 0, or -errno when the daemon side is gone. */
static int
agent_flush(void)
{
        ssize_t n;

        while (agent_buf_used(&agent_out) > 0) {
                n = write(1, agent_out.data + agent_out.off, agent_buf_used(&agent_out));
                if (n > 0) {
                        agent_out.off += (size_t) n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                return n < 0 ? -errno : -EIO;
        }
        return 0;
}

static void
agent_close(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void
agent_set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);

        if (fl >= 0)
                fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* mkdir -p of path's first len bytes, mode 0700, errors ignored. */
static void
agent_mkdir_p(const char *path, size_t len)
{
        char buf[PATH_MAX];
        size_t i;

        if (len == 0 || len >= sizeof(buf))
                return;
        memcpy(buf, path, len);
        buf[len] = 0;
        for (i = 1; i <= len; i++) {
                if (buf[i] != '/' && buf[i] != 0)
                        continue;
                buf[i] = 0;
                mkdir(buf, 0700);
                if (i < len)
                        buf[i] = '/';
        }
}

/* ---- the container's oom_kill counter ---- */

static uint64_t
agent_oom_parse(const char *buf)
{
        const char *p = buf;

        while (p && *p) {
                if (strncmp(p, "oom_kill ", 9) == 0)
                        return strtoull(p + 9, NULL, 10);
                p = strchr(p, '\n');
                if (p)
                        p++;
        }
        return 0;
}

static uint64_t
agent_oom_count(void)
{
        static const char *const paths[] = {"/sys/fs/cgroup/memory.events",
                                            "/sys/fs/cgroup/memory/memory.oom_control"};
        char buf[4096];
        size_t i;
        ssize_t n;
        int fd;

        for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                fd = open(paths[i], O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n < 0)
                        continue;
                buf[n] = 0;
                return agent_oom_parse(buf);
        }
        return 0;
}

/* ---- process trees from /proc ---- */

static int
agent_proc_read(const char *name, struct agent_proc *p)
{
        char path[64], buf[512];
        const char *rp;
        char state;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%s/stat", name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = 0;
        rp = strrchr(buf, ')');
        if (!rp || sscanf(rp + 1, " %c %d %*d %d", &state, &p->ppid, &p->sid) != 3)
                return -1;
        if (state == 'Z' || state == 'X' || state == 'x')
                return -1;
        p->pid = atoi(name);
        p->mark = 0;
        return 0;
}

/* Fills agent_procs with every live process; returns the count. */
static size_t
agent_proc_scan(void)
{
        struct dirent *d;
        size_t n = 0;
        DIR *dir = opendir("/proc");

        if (!dir)
                return 0;
        while ((d = readdir(dir))) {
                if (d->d_name[0] < '1' || d->d_name[0] > '9')
                        continue;
                if (n == agent_procs_cap) {
                        agent_procs_cap = agent_procs_cap ? agent_procs_cap * 2 : 512;
                        agent_procs =
                                agent_realloc(agent_procs, agent_procs_cap * sizeof(*agent_procs));
                }
                if (agent_proc_read(d->d_name, &agent_procs[n]) == 0)
                        n++;
        }
        closedir(dir);
        return n;
}

static int
agent_pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

static int
agent_proc_cmp(const void *a, const void *b)
{
        return agent_pid_cmp(&((const struct agent_proc *) a)->pid,
                             &((const struct agent_proc *) b)->pid);
}

static int
agent_proc_marked(size_t n, pid_t pid)
{
        struct agent_proc key = {.pid = pid};
        struct agent_proc *p = bsearch(&key, agent_procs, n, sizeof(key), agent_proc_cmp);

        return p && p->mark;
}

/* Marks members of the sessions sids[0..nsids) (sorted) and their descendants. */
static void
agent_tree_mark(size_t n, const pid_t *sids, size_t nsids)
{
        pid_t self = getpid();
        size_t i;
        int changed = 1;

        for (i = 0; i < n; i++)
                agent_procs[i].mark = bsearch(&agent_procs[i].sid, sids, nsids, sizeof(pid_t),
                                              agent_pid_cmp) != NULL;
        while (changed) {
                changed = 0;
                for (i = 0; i < n; i++) {
                        if (agent_procs[i].mark || !agent_proc_marked(n, agent_procs[i].ppid))
                                continue;
                        agent_procs[i].mark = changed = 1;
                }
        }
        for (i = 0; i < n; i++)
                if (agent_procs[i].pid == self || agent_procs[i].pid <= 1)
                        agent_procs[i].mark = 0;
}

/* Sends sig (0: none) to the trees of sessions sids (sorted); returns how many were alive. */
static uint32_t
agent_tree_signal(const pid_t *sids, size_t nsids, int sig)
{
        size_t i, n = agent_proc_scan();
        uint32_t alive = 0;

        qsort(agent_procs, n, sizeof(*agent_procs), agent_proc_cmp);
        agent_tree_mark(n, sids, nsids);
        for (i = 0; i < n; i++) {
                if (!agent_procs[i].mark)
                        continue;
                alive++;
                if (sig > 0)
                        kill(agent_procs[i].pid, sig);
        }
        return alive;
}

/* Checks sid is a session that may be signalled (not ours, not init's). */
static int
agent_sid_ok(pid_t sid)
{
        return sid > 1 && sid != getsid(0);
}

static uint32_t
agent_sid_signal(pid_t sid, int sig)
{
        return agent_sid_ok(sid) ? agent_tree_signal(&sid, 1, sig) : 0;
}

/* ---- execs ---- */

static struct agent_exec *
agent_find(uint32_t id)
{
        size_t i;

        for (i = 0; i < agent_nexecs; i++)
                if (agent_execs[i]->id == id)
                        return agent_execs[i];
        return NULL;
}

static void
agent_exec_free(struct agent_exec *e)
{
        size_t i;

        agent_close(&e->out_fd);
        agent_close(&e->err_fd);
        agent_close(&e->in_fd);
        agent_buf_free(&e->inq);
        free(e->state);
        for (i = 0; i < agent_nexecs; i++) {
                if (agent_execs[i] != e)
                        continue;
                agent_execs[i] = agent_execs[--agent_nexecs];
                break;
        }
        free(e);
}

/* SIGKILLs every exec's tree and forgets all execs and kills in progress. */
static void
agent_kill_all(void)
{
        pid_t sids[AGENT_MAX_EXECS];
        size_t i, n = 0;

        for (i = 0; i < agent_nexecs; i++) {
                if (!agent_execs[i]->reaped)
                        kill(agent_execs[i]->pid, SIGKILL);
                if (agent_sid_ok(agent_execs[i]->pid))
                        sids[n++] = agent_execs[i]->pid;
        }
        if (n) {
                qsort(sids, n, sizeof(pid_t), agent_pid_cmp);
                agent_tree_signal(sids, n, SIGKILL);
        }
        while (agent_nexecs > 0)
                agent_exec_free(agent_execs[0]);
        agent_nkills = 0;
}

static void __attribute__((noreturn)) agent_exit(int code)
{
        agent_kill_all();
        _exit(code);
}

/* Sends ERROR, writes out what is queued (blocking), kills every tree and exits 1. */
static void __attribute__((noreturn)) agent_fatal(const char *what)
{
        int fl = fcntl(1, F_GETFL);

        agent_send(0, AGENT_ERROR, what, strlen(what) + 1, NULL, 0);
        if (fl >= 0)
                fcntl(1, F_SETFL, fl & ~O_NONBLOCK);
        agent_flush();
        agent_exit(1);
}

/* Reads the state file into the out queue after a reserved EXIT header; returns its size. */
static size_t
agent_state_read(const char *path, unsigned char *dst, size_t max)
{
        struct stat st;
        size_t got = 0;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

        if (fd < 0)
                return 0;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
                while (got < max) {
                        n = read(fd, dst + got, max - got);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                break;
                        got += (size_t) n;
                }
        }
        close(fd);
        unlink(path);
        return got;
}

static uint32_t
agent_exit_flags(int status)
{
        uint64_t oom = agent_oom_count();
        uint32_t flags = 0;

        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && oom > agent_oom_last)
                flags |= AGENT_EXIT_OOM;
        agent_oom_last = oom;
        return flags;
}

/* Closes the exec's fds, sends EXIT (with the state file) and forgets it. */
static void
agent_exec_finish(struct agent_exec *e)
{
        unsigned char *p;
        size_t state = 0;

        agent_close(&e->out_fd);
        agent_close(&e->err_fd);
        agent_buf_reserve(&agent_out, AGENT_HDR_LEN + 8 + (e->state ? AGENT_STATE_MAX : 0));
        p = agent_out.data + agent_out.len;
        if (e->state)
                state = agent_state_read(e->state, p + AGENT_HDR_LEN + 8, AGENT_STATE_MAX);
        agent_hdr(p, (uint32_t) (8 + state), e->id, AGENT_EXIT);
        agent_put32(p + AGENT_HDR_LEN, (uint32_t) e->status);
        agent_put32(p + AGENT_HDR_LEN + 4, agent_exit_flags(e->status));
        agent_out.len += AGENT_HDR_LEN + 8 + state;
        agent_exec_free(e);
}

static void
agent_reap(void)
{
        struct signalfd_siginfo si;
        struct agent_exec *e;
        size_t i;
        pid_t pid;
        int st;

        while (read(agent_sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                ;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                for (i = 0, e = NULL; i < agent_nexecs && !e; i++)
                        if (agent_execs[i]->pid == pid && !agent_execs[i]->reaped)
                                e = agent_execs[i];
                if (!e)
                        continue;
                e->reaped = 1;
                e->status = st;
                e->drain_left = AGENT_DRAIN_MS;
                e->drain_mark = -1;
                agent_close(&e->in_fd);
                agent_buf_free(&e->inq);
        }
}

/* ---- spawning ---- */

static void __attribute__((noreturn)) agent_child_fail(int rep, enum agent_step step)
{
        int msg[2] = {errno, (int) step};

        if (write(rep, msg, sizeof(msg)) < 0)
                _exit(127);
        _exit(127);
}

static void
agent_child_signals(void)
{
        sigset_t none;
        int sig;

        for (sig = 1; sig < NSIG; sig++)
                signal(sig, SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
}

static void __attribute__((noreturn))
agent_child(const struct agent_start *s, const struct agent_fds *f, char **envp)
{
        int in, out, err;

        agent_child_signals();
        setrlimit(RLIMIT_NOFILE, &agent_nofile);
        if (setsid() < 0)
                agent_child_fail(f->rep[1], AGENT_STEP_SETSID);
        in = f->slave >= 0 ? f->slave : f->in[0] >= 0 ? f->in[0] : agent_devnull;
        out = f->slave >= 0 ? f->slave : f->out[1];
        err = f->slave >= 0 ? f->slave : f->err[1] >= 0 ? f->err[1] : f->out[1];
        if (f->slave >= 0 && ioctl(f->slave, TIOCSCTTY, 0) < 0)
                agent_child_fail(f->rep[1], AGENT_STEP_PTY);
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                agent_child_fail(f->rep[1], AGENT_STEP_DUP);
        if (s->cwd[0] && chdir(s->cwd) < 0)
                agent_child_fail(f->rep[1], AGENT_STEP_CHDIR);
        environ = envp;
        execvp(s->argv[0], s->argv);
        agent_child_fail(f->rep[1], AGENT_STEP_EXEC);
}

static void
agent_fds_close(struct agent_fds *f)
{
        int *all[] = {&f->in[0],  &f->in[1],  &f->out[0], &f->out[1], &f->err[0],
                      &f->err[1], &f->rep[0], &f->rep[1], &f->master, &f->slave};
        size_t i;

        for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                agent_close(all[i]);
}

static int
agent_open_pty(struct agent_fds *f, uint16_t rows, uint16_t cols)
{
        struct winsize ws = {.ws_row = rows, .ws_col = cols};
        char name[128];

        f->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (f->master < 0)
                return -1;
        if (grantpt(f->master) < 0 || unlockpt(f->master) < 0 ||
            ptsname_r(f->master, name, sizeof(name)) != 0)
                return -1;
        f->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (f->slave < 0)
                return -1;
        if (rows || cols)
                ioctl(f->master, TIOCSWINSZ, &ws);
        return 0;
}

/* Opens pipes or the pty; -1 with errno set and *step on failure. */
static int
agent_fds_open(struct agent_fds *f, uint32_t flags, uint16_t rows, uint16_t cols,
               enum agent_step *step)
{
        *f = (struct agent_fds){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, -1, -1};
        *step = AGENT_STEP_PTY;
        if ((flags & AGENT_START_TTY) && agent_open_pty(f, rows, cols) < 0)
                return -1;
        *step = AGENT_STEP_PIPE;
        if (!(flags & AGENT_START_TTY)) {
                if (pipe2(f->out, O_CLOEXEC) < 0)
                        return -1;
                if (!(flags & AGENT_START_MERGE) && pipe2(f->err, O_CLOEXEC) < 0)
                        return -1;
                if ((flags & AGENT_START_STDIN) && pipe2(f->in, O_CLOEXEC) < 0)
                        return -1;
        }
        return pipe2(f->rep, O_CLOEXEC);
}

/* environ with each "K=V" of env laid over it; borrows every string. */
static char **
agent_env_build(char **env, uint32_t envc)
{
        size_t n = 0, i, j, k;
        char **out;

        while (environ[n])
                n++;
        out = agent_realloc(NULL, (n + envc + 1) * sizeof(*out));
        memcpy(out, environ, n * sizeof(*out));
        for (i = 0; i < envc; i++) {
                k = strcspn(env[i], "=");
                for (j = 0; j < n; j++)
                        if (strncmp(out[j], env[i], k) == 0 && out[j][k] == '=')
                                break;
                out[j] = env[i];
                if (j == n)
                        n++;
        }
        out[n] = NULL;
        return out;
}

static struct agent_exec *
agent_exec_new(uint32_t id, pid_t pid, const struct agent_start *s, struct agent_fds *f)
{
        struct agent_exec *e = agent_realloc(NULL, sizeof(*e));

        *e = (struct agent_exec){.id = id, .pid = pid, .credit = AGENT_OUT_WINDOW};
        e->tty = f->master >= 0;
        e->out_fd = e->tty ? f->master : f->out[0];
        e->err_fd = f->err[0];
        e->in_fd = e->tty ? fcntl(f->master, F_DUPFD_CLOEXEC, 3) : f->in[1];
        f->master = f->out[0] = f->err[0] = f->in[1] = -1;
        e->state = s->state[0] ? strdup(s->state) : NULL;
        e->drain_mark = -1;
        agent_set_nonblock(e->out_fd);
        if (e->err_fd >= 0)
                agent_set_nonblock(e->err_fd);
        if (e->in_fd >= 0)
                agent_set_nonblock(e->in_fd);
        agent_execs[agent_nexecs++] = e;
        return e;
}

/* Forks the child; reports FAILED or STARTED. */
static void
agent_spawn(uint32_t id, const struct agent_start *s)
{
        struct agent_fds f;
        enum agent_step step;
        char **envp;
        int rep[2];
        ssize_t n;
        pid_t pid;

        if (agent_fds_open(&f, s->flags, s->rows, s->cols, &step) < 0) {
                agent_send_failed(id, errno, step);
                agent_fds_close(&f);
                return;
        }
        if (strrchr(s->state, '/'))
                agent_mkdir_p(s->state, (size_t) (strrchr(s->state, '/') - s->state));
        envp = agent_env_build(s->env, s->envc);
        pid = fork();
        if (pid == 0)
                agent_child(s, &f, envp);
        free(envp);
        if (pid < 0) {
                agent_send_failed(id, errno, AGENT_STEP_FORK);
                agent_fds_close(&f);
                return;
        }
        agent_close(&f.rep[1]);
        do
                n = read(f.rep[0], rep, sizeof(rep));
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t) sizeof(rep)) {
                agent_send_failed(id, rep[0], (enum agent_step) rep[1]);
                agent_fds_close(&f);
                return;
        }
        agent_exec_new(id, pid, s, &f);
        agent_fds_close(&f);
        agent_send32(id, AGENT_STARTED, (uint32_t) pid);
}

/* ---- messages from the daemon ---- */

static const char *
agent_next_str(const unsigned char **cur, const unsigned char *end)
{
        const unsigned char *s = *cur;
        const unsigned char *nul = s < end ? memchr(s, 0, (size_t) (end - s)) : NULL;

        if (!nul)
                return NULL;
        *cur = nul + 1;
        return (const char *) s;
}

static const char *
agent_parse_strs(char **v, uint32_t n, const unsigned char **cur, const unsigned char *end)
{
        uint32_t i;

        for (i = 0; i < n; i++) {
                v[i] = (char *) agent_next_str(cur, end);
                if (!v[i])
                        return "START: unterminated string";
        }
        v[n] = NULL;
        return NULL;
}

static const char *
agent_parse_start(const unsigned char *p, uint32_t len, struct agent_start *s)
{
        const unsigned char *cur = p + 16, *end = p + len;
        const char *err;

        s->flags = agent_get32(p);
        s->rows = agent_get16(p + 4);
        s->cols = agent_get16(p + 6);
        s->argc = agent_get32(p + 8);
        s->envc = agent_get32(p + 12);
        if (s->flags & ~(uint32_t) (AGENT_START_TTY | AGENT_START_STDIN | AGENT_START_MERGE))
                return "START: unknown flags";
        if (s->argc == 0 || (uint64_t) s->argc + s->envc + 2 > len - 16)
                return "START: bad argc/envc";
        s->cwd = agent_next_str(&cur, end);
        s->state = agent_next_str(&cur, end);
        if (!s->cwd || !s->state)
                return "START: unterminated string";
        s->argv = agent_realloc(NULL, (s->argc + 1) * sizeof(char *));
        s->env = agent_realloc(NULL, (s->envc + 1) * sizeof(char *));
        err = agent_parse_strs(s->argv, s->argc, &cur, end);
        if (!err)
                err = agent_parse_strs(s->env, s->envc, &cur, end);
        if (!err && cur != end)
                err = "START: trailing bytes";
        return err;
}

static const char *
agent_on_start(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_start s = {0};
        const char *err;

        if (id == 0)
                return "START: id 0";
        if (agent_find(id))
                return "START: id already running";
        err = agent_parse_start(p, len, &s);
        if (!err && agent_nexecs >= AGENT_MAX_EXECS)
                agent_send_failed(id, EAGAIN, AGENT_STEP_LIMIT);
        else if (!err && s.envc > AGENT_MAX_ENV)
                agent_send_failed(id, E2BIG, AGENT_STEP_ENV);
        else if (!err)
                agent_spawn(id, &s);
        free(s.argv);
        free(s.env);
        return err;
}

static const char *
agent_on_hello(uint32_t id, const unsigned char *p, uint32_t len)
{
        unsigned char r[8 + AGENT_NONCE_LEN];

        if (agent_get32(p) != AGENT_PROTO_VERSION)
                return "HELLO: unsupported protocol version";
        agent_kill_all();
        agent_put32(r, AGENT_PROTO_VERSION);
        agent_put32(r + 4, (uint32_t) getpid());
        memcpy(r + 8, p + 4, AGENT_NONCE_LEN);
        agent_send(0, AGENT_READY, r, sizeof(r), NULL, 0);
        return NULL;
}

static const char *
agent_on_stdin(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = agent_find(id);

        if (!e)
                return NULL;
        if (e->in_fd < 0 || e->in_eof) {
                e->ack += len;
                return NULL;
        }
        if (agent_buf_used(&e->inq) + len > AGENT_STDIN_WINDOW)
                return "STDIN: window exceeded";
        agent_buf_reserve(&e->inq, len);
        memcpy(e->inq.data + e->inq.len, p, len);
        e->inq.len += len;
        return NULL;
}

static const char *
agent_on_eof(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = agent_find(id);

        if (e)
                e->in_eof = 1;
        return NULL;
}

static const char *
agent_on_credit(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = agent_find(id);

        if (e) {
                e->credit += agent_get32(p);
                if (e->credit > AGENT_CREDIT_MAX)
                        e->credit = AGENT_CREDIT_MAX;
        }
        return NULL;
}

static const char *
agent_on_resize(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = agent_find(id);
        struct winsize ws = {.ws_row = agent_get16(p), .ws_col = agent_get16(p + 2)};
        int fd;

        if (!e || !e->tty)
                return NULL;
        fd = e->out_fd >= 0 ? e->out_fd : e->in_fd;
        if (fd >= 0)
                ioctl(fd, TIOCSWINSZ, &ws);
        return NULL;
}

static const char *
agent_on_kill(uint32_t id, const unsigned char *p, uint32_t len)
{
        pid_t sid = (pid_t) agent_get32(p);
        uint32_t sig = agent_get32(p + 4), grace = agent_get32(p + 8), mode = agent_get32(p + 12);
        int64_t now = agent_now_ms();

        if (sig >= (uint32_t) NSIG || mode > AGENT_KILL_WAIT || agent_get32(p) > INT_MAX)
                return "KILL: bad signal, sid or mode";
        agent_sid_signal(sid, (int) sig);
        if (mode == AGENT_KILL_SIGNAL)
                return NULL;
        if (agent_nkills == AGENT_MAX_KILLS) {
                agent_send32(id, AGENT_KILLED, agent_sid_signal(sid, SIGKILL));
                return NULL;
        }
        agent_kills[agent_nkills++] = (struct agent_kill){
                .id = id,
                .sid = sid,
                .start = now,
                .grace_end = now + grace,
                .next = now + 1,
                .step = 1,
        };
        return NULL;
}

struct agent_handler {
        const char *(*fn)(uint32_t id, const unsigned char *p, uint32_t len);
        uint32_t min_len, max_len;
};

static const struct agent_handler agent_handlers[] = {
        [AGENT_HELLO] = {agent_on_hello, 4 + AGENT_NONCE_LEN, 4 + AGENT_NONCE_LEN},
        [AGENT_START] = {agent_on_start, 16, AGENT_MAX_PAYLOAD},
        [AGENT_STDIN] = {agent_on_stdin, 0, AGENT_MAX_PAYLOAD},
        [AGENT_EOF] = {agent_on_eof, 0, 0},
        [AGENT_KILL] = {agent_on_kill, 16, 16},
        [AGENT_CREDIT] = {agent_on_credit, 4, 4},
        [AGENT_RESIZE] = {agent_on_resize, 4, 4},
};

static void
agent_dispatch(uint32_t id, unsigned type, const unsigned char *p, uint32_t len)
{
        const struct agent_handler *h;
        const char *err;
        char msg[64];

        if (type >= sizeof(agent_handlers) / sizeof(agent_handlers[0]) ||
            !agent_handlers[type].fn) {
                snprintf(msg, sizeof(msg), "unknown message type %u", type);
                agent_fatal(msg);
        }
        h = &agent_handlers[type];
        if (len < h->min_len || len > h->max_len) {
                snprintf(msg, sizeof(msg), "bad length %u for message type %u", len, type);
                agent_fatal(msg);
        }
        err = h->fn(id, p, len);
        if (err)
                agent_fatal(err);
}

/* Reads the daemon's stream and handles every complete message. */
static void
agent_read_input(void)
{
        const unsigned char *h;
        uint32_t len;
        ssize_t n;

        agent_buf_reserve(&agent_in, 64 << 10);
        n = read(0, agent_in.data + agent_in.len, agent_in.cap - agent_in.len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0)
                agent_exit(0);
        agent_in.len += (size_t) n;
        while (agent_buf_used(&agent_in) >= AGENT_HDR_LEN) {
                h = agent_in.data + agent_in.off;
                len = agent_get32(h);
                if (len > AGENT_MAX_PAYLOAD)
                        agent_fatal("payload larger than AGENT_MAX_PAYLOAD");
                if (agent_buf_used(&agent_in) < AGENT_HDR_LEN + len)
                        break;
                agent_in.off += AGENT_HDR_LEN + len;
                agent_dispatch(agent_get32(h + 4), h[8], h + AGENT_HDR_LEN, len);
        }
}

/* ---- child fds ---- */

static int
agent_can_read(const struct agent_exec *e)
{
        return e->credit > 0 && agent_buf_used(&agent_out) < AGENT_OUTQ_HIGH;
}

static void
agent_read_child(struct agent_exec *e, int *fd, enum agent_msg type)
{
        size_t want = e->credit < AGENT_OUT_CHUNK ? (size_t) e->credit : AGENT_OUT_CHUNK;
        unsigned char *p;
        ssize_t n;

        if (*fd < 0 || !agent_can_read(e))
                return;
        agent_buf_reserve(&agent_out, AGENT_HDR_LEN + want);
        p = agent_out.data + agent_out.len;
        n = read(*fd, p + AGENT_HDR_LEN, want);
        if (n > 0) {
                agent_hdr(p, (uint32_t) n, e->id, type);
                agent_out.len += AGENT_HDR_LEN + (size_t) n;
                e->credit -= (uint64_t) n;
                return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        agent_close(fd); /* EOF, or EIO from a pty whose slave is closed */
}

static void
agent_write_child(struct agent_exec *e)
{
        size_t used = agent_buf_used(&e->inq);
        ssize_t n = used ? write(e->in_fd, e->inq.data + e->inq.off, used) : 0;

        if (n > 0) {
                e->inq.off += (size_t) n;
                e->ack += (uint32_t) n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                return;
        } else if (n < 0) {
                e->ack += (uint32_t) used;
                agent_buf_free(&e->inq);
                agent_close(&e->in_fd);
                return;
        }
        if (agent_buf_used(&e->inq) || !e->in_eof)
                return;
        if (e->tty && write(e->in_fd, "\004", 1) < 0 && errno == EAGAIN)
                return;
        agent_buf_free(&e->inq);
        agent_close(&e->in_fd);
}

/* ---- the loop ---- */

static void
agent_poll_add(int fd, short events, struct agent_exec *e, int which, size_t *n)
{
        agent_pfd[*n] = (struct pollfd){.fd = fd, .events = events};
        agent_slots[*n] = (struct agent_slot){e, which};
        (*n)++;
}

static size_t
agent_poll_build(void)
{
        size_t i, n = 0, need = 3 + 3 * agent_nexecs;
        struct agent_exec *e;

        if (need > agent_pfd_cap) {
                agent_pfd_cap = need * 2;
                agent_pfd = agent_realloc(agent_pfd, agent_pfd_cap * sizeof(*agent_pfd));
                agent_slots = agent_realloc(agent_slots, agent_pfd_cap * sizeof(*agent_slots));
        }
        agent_poll_add(0, POLLIN, NULL, 0, &n);
        agent_poll_add(agent_sigfd, POLLIN, NULL, 1, &n);
        if (agent_buf_used(&agent_out))
                agent_poll_add(1, POLLOUT, NULL, 2, &n);
        for (i = 0; i < agent_nexecs; i++) {
                e = agent_execs[i];
                if (e->out_fd >= 0 && agent_can_read(e))
                        agent_poll_add(e->out_fd, POLLIN, e, 0, &n);
                if (e->err_fd >= 0 && agent_can_read(e))
                        agent_poll_add(e->err_fd, POLLIN, e, 1, &n);
                if (e->in_fd >= 0 && (agent_buf_used(&e->inq) || e->in_eof))
                        agent_poll_add(e->in_fd, POLLOUT, e, 2, &n);
        }
        return n;
}

static void
agent_poll_handle(size_t n)
{
        struct agent_slot *s;
        size_t i;

        for (i = 1; i < n; i++) {
                if (!agent_pfd[i].revents)
                        continue;
                s = &agent_slots[i];
                if (!s->e && s->which == 1)
                        agent_reap();
                else if (s->e && s->which == 0)
                        agent_read_child(s->e, &s->e->out_fd, AGENT_STDOUT);
                else if (s->e && s->which == 1)
                        agent_read_child(s->e, &s->e->err_fd, AGENT_STDERR);
                else if (s->e && s->e->in_fd >= 0)
                        agent_write_child(s->e);
        }
        if (agent_pfd[0].revents) /* last: HELLO frees execs the slots point to */
                agent_read_input();
}

static int
agent_min_timeout(int timeout, int64_t at, int64_t now)
{
        int64_t t = at > now ? at - now : 0;

        return timeout < 0 || t < timeout ? (int) t : timeout;
}

/* Advances an exited exec's drain; finishes it when its output is done or time is up. */
static int
agent_tick_exec(struct agent_exec *e, int64_t now, int timeout)
{
        if (e->ack) {
                agent_send32(e->id, AGENT_ACK, e->ack);
                e->ack = 0;
        }
        if (!e->reaped)
                return timeout;
        if (e->out_fd < 0 && e->err_fd < 0) {
                agent_exec_finish(e);
                return timeout;
        }
        if (!agent_can_read(e)) {
                if (e->drain_mark >= 0)
                        e->drain_left -= now - e->drain_mark;
                e->drain_mark = -1;
                return timeout;
        }
        if (e->drain_mark < 0)
                e->drain_mark = now;
        if (now - e->drain_mark >= e->drain_left) {
                agent_exec_finish(e);
                return timeout;
        }
        return agent_min_timeout(timeout, e->drain_mark + e->drain_left, now);
}

/* Advances one KILL WAIT; returns 1 when it is done (KILLED sent). */
static int
agent_tick_kill(struct agent_kill *k, int64_t now)
{
        uint32_t alive;

        if (now < k->next)
                return 0;
        if (!k->hard && now >= k->grace_end) {
                k->hard = 1;
                k->start = now;
                k->step = 1;
        }
        alive = agent_sid_signal(k->sid, k->hard ? SIGKILL : 0);
        if (alive == 0 || (k->hard && now - k->start >= AGENT_KILL_HARD_MS)) {
                agent_send32(k->id, AGENT_KILLED, alive);
                return 1;
        }
        k->next = now + k->step;
        if (!k->hard && k->next > k->grace_end)
                k->next = k->grace_end;
        k->step = k->step * 2 < AGENT_KILL_STEP_MS ? k->step * 2 : AGENT_KILL_STEP_MS;
        return 0;
}

/* Periodic work; returns the poll timeout in ms (-1: none). */
static int
agent_tick(void)
{
        int64_t now = agent_now_ms();
        int timeout = -1;
        size_t i;

        for (i = agent_nexecs; i-- > 0;)
                timeout = agent_tick_exec(agent_execs[i], now, timeout);
        for (i = agent_nkills; i-- > 0;) {
                if (agent_tick_kill(&agent_kills[i], now))
                        agent_kills[i] = agent_kills[--agent_nkills];
        }
        for (i = 0; i < agent_nkills; i++)
                timeout = agent_min_timeout(timeout, agent_kills[i].next, now);
        return timeout;
}

static void
agent_setup(void)
{
        sigset_t chld;
        struct rlimit raised;

        signal(SIGPIPE, SIG_IGN);
        prctl(PR_SET_DUMPABLE, 0);
        if (fcntl(2, F_GETFD) < 0)
                open("/dev/null", O_WRONLY);
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
        agent_set_nonblock(0);
        agent_set_nonblock(1);
        agent_mkdir_p("/tmp/.sandboxd", strlen("/tmp/.sandboxd"));
        getrlimit(RLIMIT_NOFILE, &agent_nofile);
        raised = agent_nofile;
        raised.rlim_cur = raised.rlim_max;
        setrlimit(RLIMIT_NOFILE, &raised);
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);
        agent_sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
        agent_devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (agent_sigfd < 0 || agent_devnull < 0)
                _exit(71);
        agent_oom_last = agent_oom_count();
}

/* Serves the daemon on stdin/stdout until stdin closes or a protocol error. */
int
main(void)
{
        int timeout;
        size_t n;

        agent_setup();
        for (;;) {
                timeout = agent_tick();
                if (agent_flush() < 0)
                        agent_exit(0);
                n = agent_poll_build();
                if (poll(agent_pfd, n, timeout) >= 0)
                        agent_poll_handle(n);
                else if (errno != EINTR)
                        agent_exit(1);
        }
}
