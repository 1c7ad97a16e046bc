/* exec.c — the agent's execs: spawning, the children's pipes into the spools, output sent
 * within the window, stdin by offset, resume, exit kept until FORGET, process-tree kills. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"
#include "backends/shell_init.h"

_Static_assert(SHELL_STATE_MAX <= AGENT_MAX_STATE, "a shell state must fit in one EXIT");

struct agent_stream {
        struct agent_spool sp; /* [head, total) */
        uint64_t sent;         /* next offset to send in this session */
        int fd;                /* the child's pipe (pty master), -1 once at EOF */
        int bulk;              /* the pipe was enlarged to AGENT_PIPE_BULK */
        int64_t settle_until;  /* us: not read before (0: read when ready) */
};

struct agent_exec {
        char name[AGENT_NAME_MAX + 1];
        uint32_t id; /* in the current session; 0: not bound */
        pid_t pid;   /* also the session id of its tree */
        int reaped, status, tty, ended, exit_sent;
        uint32_t exit_flags;
        struct agent_stream st[2];
        int in_fd;            /* -1 once closed; tty: a dup of the master */
        struct agent_buf inq; /* stdin accepted, not yet written */
        uint64_t in_total;    /* stdin bytes accepted */
        uint64_t in_done;     /* written to the child or dropped */
        uint64_t in_told;     /* last STDIN_ACK */
        int in_eof;           /* close stdin once inq drains */
        char *state_path;     /* shell-state file, or NULL */
        unsigned char *state; /* its bytes after the exit */
        size_t state_len;
        char *oom_file; /* the exec's cgroup oom_kill counter */
        uint64_t oom_base;
        int64_t drain_left; /* ms of output draining left after the exit */
        int64_t drain_mark; /* when the current draining stretch began, or -1 */
};

struct agent_kill {
        uint32_t id, tag; /* id 0: the session that asked is gone, no answer */
        pid_t sid;
        struct agent_pids seen;         /* the tree's members so far */
        int hard;                       /* in the SIGKILL phase */
        int64_t start, grace_end, next; /* ms */
        int64_t step;
};

struct agent_start {
        uint32_t flags, argc, envc;
        uint16_t rows, cols;
        const char *name, *cwd, *state, *path; /* path: NULL, argv[0] by PATH */
        char **argv, **env;
};

struct agent_fds {
        int in[2], out[2], err[2];
        int master, slave;
};

/* What the child of a spawn shares with the agent until it execs (clone with CLONE_VM). */
struct agent_child {
        const struct agent_start *s;
        const struct agent_fds *f;
        char **envp;
        int err, step; /* set by the child when a step fails; step -1 otherwise */
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

static const char *const step_names[] = {
        [AGENT_STEP_PIPE] = "pipe",     [AGENT_STEP_PTY] = "pty",     [AGENT_STEP_FORK] = "fork",
        [AGENT_STEP_SETSID] = "setsid", [AGENT_STEP_DUP] = "dup2",    [AGENT_STEP_CHDIR] = "chdir",
        [AGENT_STEP_EXEC] = "exec",     [AGENT_STEP_LIMIT] = "limit", [AGENT_STEP_ENV] = "env",
};

extern char **environ;

static struct agent_exec *execs[AGENT_MAX_EXECS];
static size_t nexecs;
static struct agent_kill kills[AGENT_MAX_KILLS];
static size_t nkills;
static int devnull = -1;
static struct rlimit child_nofile;

/* Number of execs known (running, or ended and not forgotten). */
size_t
agent_exec_count(void)
{
        return nexecs;
}

static struct agent_exec *
exec_by_id(uint32_t id)
{
        for (size_t i = 0; id && i < nexecs; i++)
                if (execs[i]->id == id)
                        return execs[i];
        return NULL;
}

static struct agent_exec *
exec_by_name(const char *name)
{
        for (size_t i = 0; i < nexecs; i++)
                if (strcmp(execs[i]->name, name) == 0)
                        return execs[i];
        return NULL;
}

static void
send_failed(uint32_t id, int err, enum agent_step step)
{
        unsigned char p[4];
        const char *name = step_names[step];

        agent_put32(p, (uint32_t) err);
        agent_send(id, AGENT_FAILED, p, 4, name, strlen(name) + 1);
}

static void
send_started(struct agent_exec *e)
{
        unsigned char p[12];

        agent_put32(p, (uint32_t) e->pid);
        agent_put64(p + 4, e->in_total);
        agent_send(e->id, AGENT_STARTED, p, sizeof(p), NULL, 0);
}

static uint64_t
exec_retained(const struct agent_exec *e)
{
        return e->st[0].sp.total - e->st[0].sp.head + e->st[1].sp.total - e->st[1].sp.head;
}

/* Whether the child's output may be read: the spool quotas are not full (backpressure). */
static int
exec_can_read(const struct agent_exec *e)
{
        return exec_retained(e) < agent_opts.exec_quota &&
               agent_spool_retained() < agent_opts.agent_quota;
}

static void
exec_free(struct agent_exec *e)
{
        for (int s = 0; s < 2; s++) {
                agent_close(&e->st[s].fd);
                agent_spool_free(&e->st[s].sp);
        }
        agent_close(&e->in_fd);
        agent_buf_free(&e->inq);
        free(e->state_path);
        free(e->state);
        free(e->oom_file);
        for (size_t i = 0; i < nexecs; i++) {
                if (execs[i] != e)
                        continue;
                execs[i] = execs[--nexecs];
                break;
        }
        free(e);
}

/* SIGKILLs the trees of execs (all, or those no session has bound) and forgets them. */
static void
exec_kill_some(int unbound_only)
{
        pid_t sids[AGENT_MAX_EXECS];
        size_t i, n = 0;

        for (i = 0; i < nexecs; i++) {
                struct agent_exec *e = execs[i];
                if (unbound_only && e->id)
                        continue;
                if (!e->reaped)
                        kill(e->pid, SIGKILL);
                if (agent_sid_ok(e->pid))
                        sids[n++] = e->pid;
        }
        if (n) {
                qsort(sids, n, sizeof(pid_t), agent_pid_cmp);
                agent_tree_signal(sids, n, SIGKILL);
        }
        for (i = nexecs; i-- > 0;)
                if (!unbound_only || !execs[i]->id)
                        exec_free(execs[i]);
}

/* Kills and forgets everything (the agent is exiting). */
void
agent_exec_kill_all(void)
{
        exec_kill_some(0);
        while (nkills)
                free(kills[--nkills].seen.pids);
}

/* No exec is bound to a session id any more; kills in progress go on without an answer. */
void
agent_exec_unbind_all(void)
{
        for (size_t i = 0; i < nexecs; i++) {
                struct agent_exec *e = execs[i];
                e->id = 0;
                e->exit_sent = 0;
                for (int s = 0; s < 2; s++)
                        e->st[s].sent = e->st[s].sp.head;
        }
        for (size_t i = 0; i < nkills; i++)
                kills[i].id = 0;
}

/* ---- shell state: the wrapper's file, read after the exit (backends/shell_init.h) ---- */

/* Reads the state file the wrapper left and removes it. Only a plain file of one link is
 * read (not a link to something else the agent could read); one over SHELL_STATE_MAX is not
 * sent, and EXIT says so. */
static void
state_collect(struct agent_exec *e)
{
        struct stat st;
        size_t got = 0;
        ssize_t n;
        int fd;

        if (!e->state_path)
                return;
        fd = open(e->state_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) {
                if (st.st_size > (off_t) SHELL_STATE_MAX)
                        e->exit_flags |= AGENT_EXIT_STATE_BIG;
                else if (st.st_size > 0)
                        e->state = agent_realloc(NULL, (size_t) st.st_size);
                while (e->state && got < (size_t) st.st_size) {
                        n = read(fd, e->state + got, (size_t) st.st_size - got);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                break;
                        got += (size_t) n;
                }
                e->state_len = got;
        }
        close(fd);
        unlink(e->state_path);
}

/* bash's start-up file (SHELL_BASH_INIT) in dir, written when it is missing or is not the one
 * this agent writes (a command may have removed or changed it). */
static void
state_bash_init(const char *dir, size_t dlen)
{
        static const char init[] = SHELL_BASH_INIT;
        char path[PATH_MAX];
        struct stat st;
        int fd;

        if (dlen + sizeof(SHELL_BASH_INIT_NAME) + 1 > sizeof(path))
                return;
        memcpy(path, dir, dlen);
        memcpy(path + dlen, "/" SHELL_BASH_INIT_NAME, sizeof(SHELL_BASH_INIT_NAME) + 1);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == sizeof(init) - 1)
                return;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        if (write(fd, init, sizeof(init) - 1) != (ssize_t) (sizeof(init) - 1) ||
            fchmod(fd, 0644) < 0)
                unlink(path);
        close(fd);
}

static void
state_prepare(const char *path)
{
        const char *slash = strrchr(path, '/');

        if (!slash)
                return;
        agent_mkdir_p(path, (size_t) (slash - path));
        state_bash_init(path, (size_t) (slash - path));
}

/* ---- exit ---- */

/* The main process ended and its output is drained: keep the status until FORGET. */
static void
exec_end(struct agent_exec *e)
{
        agent_close(&e->st[0].fd);
        agent_close(&e->st[1].fd);
        state_collect(e);
        if (WIFSIGNALED(e->status) && WTERMSIG(e->status) == SIGKILL &&
            agent_oom_count(e->oom_file) > e->oom_base)
                e->exit_flags |= AGENT_EXIT_OOM;
        e->ended = 1;
}

static void
send_exit(struct agent_exec *e)
{
        unsigned char *p = agent_send_begin(e->id, AGENT_EXIT, 24 + e->state_len);

        if (!p)
                return;
        agent_put32(p, (uint32_t) e->status);
        agent_put32(p + 4, e->exit_flags);
        agent_put64(p + 8, e->st[0].sp.total);
        agent_put64(p + 16, e->st[1].sp.total);
        if (e->state_len)
                memcpy(p + 24, e->state, e->state_len);
        agent_send_commit(24 + e->state_len);
        e->exit_sent = 1;
}

/* Reaps every child that exited (also orphans re-parented to the agent). */
void
agent_exec_reap(void)
{
        pid_t pid;
        int st;

        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                for (size_t i = 0; i < nexecs; i++) {
                        struct agent_exec *e = execs[i];
                        if (e->pid != pid || e->reaped)
                                continue;
                        e->reaped = 1;
                        e->status = st;
                        e->st[0].settle_until = e->st[1].settle_until = 0; /* drain now */
                        e->drain_left = AGENT_DRAIN_MS;
                        e->drain_mark = -1;
                        agent_close(&e->in_fd);
                        agent_buf_free(&e->inq);
                        e->in_done = e->in_total;
                        break;
                }
        }
}

/* ---- spawning ---- */

static void __attribute__((noreturn)) child_fail(struct agent_child *c, enum agent_step step)
{
        c->err = errno;
        c->step = (int) step;
        _exit(127);
}

/* The child, in the agent's memory until execve: only system calls, nothing that allocates
 * or writes the agent's globals (environ stays the agent's: execvpe takes the child's). */
static int
child_run(void *arg)
{
        struct agent_child *c = arg;
        const struct agent_start *s = c->s;
        const struct agent_fds *f = c->f;
        sigset_t none;
        int in, out, err;

        signal(SIGPIPE, SIG_DFL); /* the only disposition the agent changes */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        setrlimit(RLIMIT_NOFILE, &child_nofile);
        if (setsid() < 0)
                child_fail(c, AGENT_STEP_SETSID);
        in = f->slave >= 0 ? f->slave : f->in[0] >= 0 ? f->in[0] : devnull;
        out = f->slave >= 0 ? f->slave : f->out[1];
        err = f->slave >= 0 ? f->slave : f->err[1] >= 0 ? f->err[1] : f->out[1];
        if (f->slave >= 0 && ioctl(f->slave, TIOCSCTTY, 0) < 0)
                child_fail(c, AGENT_STEP_PTY);
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                child_fail(c, AGENT_STEP_DUP);
        if (s->cwd[0] && chdir(s->cwd) < 0)
                child_fail(c, AGENT_STEP_CHDIR);
        if (s->path)
                execve(s->path, s->argv, c->envp);
        else
                execvpe(s->argv[0], s->argv, c->envp);
        child_fail(c, AGENT_STEP_EXEC);
}

/* Starts the child like posix_spawn: clone(CLONE_VM | CLONE_VFORK) copies no page tables and
 * suspends the agent until the child has exec'd (or failed, said why in c, and exited). */
static pid_t
child_spawn(struct agent_child *c)
{
        static char *stack;
        enum { STACK = 256 << 10 };

        if (!stack) {
                stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
                if (stack == MAP_FAILED) {
                        stack = NULL;
                        return -1;
                }
        }
        return clone(child_run, stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
}

static void
fds_close(struct agent_fds *f)
{
        int *all[] = {&f->in[0],  &f->in[1],  &f->out[0], &f->out[1],
                      &f->err[0], &f->err[1], &f->master, &f->slave};

        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
                agent_close(all[i]);
}

static int
open_pty(struct agent_fds *f, uint16_t rows, uint16_t cols)
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
fds_open(struct agent_fds *f, uint32_t flags, uint16_t rows, uint16_t cols, enum agent_step *step)
{
        *f = (struct agent_fds){{-1, -1}, {-1, -1}, {-1, -1}, -1, -1};
        *step = AGENT_STEP_PTY;
        if ((flags & AGENT_START_TTY) && open_pty(f, rows, cols) < 0)
                return -1;
        *step = AGENT_STEP_PIPE;
        if (!(flags & AGENT_START_TTY)) {
                if (pipe2(f->out, O_CLOEXEC) < 0)
                        return -1;
                /* Fewer wake-ups per MiB of output (capped by fs.pipe-max-size; best effort). */
                fcntl(f->out[0], F_SETPIPE_SZ, AGENT_READ_CHUNK);
                if (!(flags & AGENT_START_MERGE) && pipe2(f->err, O_CLOEXEC) < 0)
                        return -1;
                if ((flags & AGENT_START_STDIN) && pipe2(f->in, O_CLOEXEC) < 0)
                        return -1;
        }
        return 0;
}

/* environ with each "K=V" of env laid over it; borrows every string. */
static char **
env_build(char **env, uint32_t envc)
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
exec_new(uint32_t id, pid_t pid, const struct agent_start *s, struct agent_fds *f)
{
        struct agent_exec *e = agent_realloc(NULL, sizeof(*e));

        *e = (struct agent_exec){.id = id, .pid = pid, .drain_mark = -1};
        snprintf(e->name, sizeof(e->name), "%s", s->name);
        for (int i = 0; i < 2; i++)
                agent_spool_init(&e->st[i].sp);
        e->tty = f->master >= 0;
        e->st[0].fd = e->tty ? f->master : f->out[0];
        e->st[1].fd = f->err[0];
        e->in_fd = e->tty ? fcntl(f->master, F_DUPFD_CLOEXEC, 3) : f->in[1];
        f->master = f->out[0] = f->err[0] = f->in[1] = -1;
        e->state_path = s->state[0] ? strdup(s->state) : NULL;
        for (int i = 0; i < 2; i++)
                if (e->st[i].fd >= 0)
                        agent_set_nonblock(e->st[i].fd);
        if (e->in_fd >= 0)
                agent_set_nonblock(e->in_fd);
        e->oom_file = agent_cgroup_events(pid);
        e->oom_base = agent_oom_count(e->oom_file);
        execs[nexecs++] = e;
        return e;
}

/* Starts the child; reports FAILED or STARTED. */
static void
exec_spawn(uint32_t id, const struct agent_start *s)
{
        struct agent_fds f;
        struct agent_child c = {.s = s, .f = &f, .step = -1};
        enum agent_step step;
        pid_t pid;

        if (fds_open(&f, s->flags, s->rows, s->cols, &step) < 0) {
                send_failed(id, errno, step);
                fds_close(&f);
                return;
        }
        if (s->state[0])
                state_prepare(s->state);
        c.envp = env_build(s->env, s->envc);
        pid = child_spawn(&c);
        free(c.envp);
        if (pid < 0 || c.step >= 0) { /* a failed child exits 127 and is reaped as a stranger */
                send_failed(id, pid < 0 ? errno : c.err,
                            pid < 0 ? AGENT_STEP_FORK : (enum agent_step) c.step);
                fds_close(&f);
                return;
        }
        send_started(exec_new(id, pid, s, &f));
        fds_close(&f);
}

/* ---- messages from the daemon ---- */

static const char *
next_str(const unsigned char **cur, const unsigned char *end)
{
        const unsigned char *s = *cur;
        const unsigned char *nul = s < end ? memchr(s, 0, (size_t) (end - s)) : NULL;

        if (!nul)
                return NULL;
        *cur = nul + 1;
        return (const char *) s;
}

static const char *
parse_strs(char **v, uint32_t n, const unsigned char **cur, const unsigned char *end)
{
        for (uint32_t i = 0; i < n; i++) {
                v[i] = (char *) next_str(cur, end);
                if (!v[i])
                        return "START: unterminated string";
        }
        v[n] = NULL;
        return NULL;
}

static const char *
parse_start(const unsigned char *p, uint32_t len, struct agent_start *s)
{
        const unsigned char *cur = p + 16, *end = p + len;
        const char *err;

        s->flags = agent_get32(p);
        s->rows = agent_get16(p + 4);
        s->cols = agent_get16(p + 6);
        s->argc = agent_get32(p + 8);
        s->envc = agent_get32(p + 12);
        if (s->flags & ~(uint32_t) (AGENT_START_TTY | AGENT_START_STDIN | AGENT_START_MERGE |
                                    AGENT_START_PATH))
                return "START: unknown flags";
        if (s->argc == 0 || (uint64_t) s->argc + s->envc + 3 > len - 16)
                return "START: bad argc/envc";
        s->name = next_str(&cur, end);
        s->cwd = next_str(&cur, end);
        s->state = next_str(&cur, end);
        s->path = s->flags & AGENT_START_PATH ? next_str(&cur, end) : NULL;
        if (!s->name || !s->cwd || !s->state || (s->flags & AGENT_START_PATH && !s->path))
                return "START: unterminated string";
        if (s->path && s->path[0] != '/')
                return "START: the program's path is not absolute";
        if (!agent_name_ok(s->name))
                return "START: bad exec name";
        s->argv = agent_realloc(NULL, (s->argc + 1) * sizeof(char *));
        s->env = agent_realloc(NULL, (s->envc + 1) * sizeof(char *));
        err = parse_strs(s->argv, s->argc, &cur, end);
        if (!err)
                err = parse_strs(s->env, s->envc, &cur, end);
        if (!err && cur != end)
                err = "START: trailing bytes";
        return err;
}

/* Binds a known exec to id for this session and replays from its oldest retained output. */
static const char *
exec_rebind(struct agent_exec *e, uint32_t id)
{
        if (e->id && e->id != id)
                return "START/RESUME: exec already bound to another id";
        if (!e->id && exec_by_id(id))
                return "START/RESUME: id in use";
        e->id = id;
        e->exit_sent = 0;
        return NULL;
}

const char *
agent_on_start(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_start s = {0};
        struct agent_exec *e;
        const char *err;

        if (id == 0)
                return "START: id 0";
        err = parse_start(p, len, &s);
        e = err ? NULL : exec_by_name(s.name);
        if (e) { /* sent again after a lost link: it runs already */
                err = exec_rebind(e, id);
                if (!err)
                        send_started(e);
        } else if (!err && exec_by_id(id)) {
                err = "START: id in use";
        } else if (!err && nexecs >= AGENT_MAX_EXECS) {
                send_failed(id, EAGAIN, AGENT_STEP_LIMIT);
        } else if (!err && s.envc > AGENT_MAX_ENV) {
                send_failed(id, E2BIG, AGENT_STEP_ENV);
        } else if (!err) {
                exec_spawn(id, &s);
        }
        free(s.argv);
        free(s.env);
        return err;
}

const char *
agent_on_resume(uint32_t id, const unsigned char *p, uint32_t len)
{
        const char *name = (const char *) p + 16, *err;
        unsigned char r[32];
        struct agent_exec *e;

        if (id == 0 || p[len - 1] != 0 || !agent_name_ok(name))
                return "RESUME: bad id or name";
        e = exec_by_name(name);
        if (!e) {
                agent_send(id, AGENT_UNKNOWN, name, strlen(name) + 1, NULL, 0);
                return NULL;
        }
        if (agent_get64(p) > e->st[0].sp.total || agent_get64(p + 8) > e->st[1].sp.total) {
                /* Checked before anything is trimmed; this exec only, not the session. */
                agent_put64(r, e->st[0].sp.total);
                agent_put64(r + 8, e->st[1].sp.total);
                agent_send(id, AGENT_REFUSED, r, 16, NULL, 0);
                return NULL;
        }
        for (int s = 0; s < 2; s++) {
                uint64_t off = agent_get64(p + 8 * s);
                if (off > e->st[s].sp.head)
                        agent_spool_trim(&e->st[s].sp, off);
                e->st[s].sent = e->st[s].sp.head;
        }
        if ((err = exec_rebind(e, id)))
                return err;
        agent_put32(r, (uint32_t) e->pid);
        agent_put32(r + 4, e->ended ? AGENT_RESUMED_ENDED : 0);
        agent_put64(r + 8, e->st[0].sp.head);
        agent_put64(r + 16, e->st[1].sp.head);
        agent_put64(r + 24, e->in_total);
        agent_send(id, AGENT_RESUMED, r, sizeof(r), NULL, 0);
        return NULL;
}

const char *
agent_on_resume_end(uint32_t id, const unsigned char *p, uint32_t len)
{
        exec_kill_some(1);
        return NULL;
}

const char *
agent_on_forget(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);

        if (!e)
                return NULL;
        if (!e->ended)
                return "FORGET: the exec is still running";
        exec_free(e);
        return NULL;
}

const char *
agent_on_ack(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);

        for (int s = 0; e && s < 2; s++) {
                uint64_t off = agent_get64(p + 8 * s);
                if (off > e->st[s].sent)
                        return "ACK: beyond what was sent";
                if (off > e->st[s].sp.head)
                        agent_spool_trim(&e->st[s].sp, off);
        }
        return NULL;
}

const char *
agent_on_stdin(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);
        uint64_t off = agent_get64(p), skip;
        size_t n = len - 8;

        if (!e)
                return NULL;
        if (off > e->in_total)
                return "STDIN: offset beyond the bytes received";
        skip = e->in_total - off; /* sent again after a lost link */
        if (skip >= n)
                return NULL;
        p += 8 + skip;
        n -= (size_t) skip;
        if (e->in_fd < 0 || e->in_eof) {
                e->in_total += n;
                e->in_done += n;
                return NULL;
        }
        if (agent_buf_used(&e->inq) + n > AGENT_STDIN_WINDOW)
                return "STDIN: window exceeded";
        agent_buf_reserve(&e->inq, n);
        memcpy(e->inq.data + e->inq.len, p, n);
        e->inq.len += n;
        e->in_total += n;
        return NULL;
}

const char *
agent_on_eof(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);

        if (!e)
                return NULL;
        if (agent_get64(p) != e->in_total)
                return "EOF: at another offset than the stdin received";
        e->in_eof = 1;
        return NULL;
}

const char *
agent_on_resize(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);
        struct winsize ws = {.ws_row = agent_get16(p), .ws_col = agent_get16(p + 2)};
        int fd;

        if (!e || !e->tty)
                return NULL;
        fd = e->st[0].fd >= 0 ? e->st[0].fd : e->in_fd;
        if (fd >= 0)
                ioctl(fd, TIOCSWINSZ, &ws);
        return NULL;
}

const char *
agent_on_kill(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_exec *e = exec_by_id(id);
        uint32_t sig = agent_get32(p), grace = agent_get32(p + 4), mode = agent_get32(p + 8);
        uint32_t tag = agent_get32(p + 12);
        unsigned char r[8];
        int64_t now = agent_now_ms();

        if (sig >= (uint32_t) NSIG || mode > AGENT_KILL_WAIT)
                return "KILL: bad signal or mode";
        if (e && mode == AGENT_KILL_SIGNAL)
                agent_sid_signal(e->pid, (int) sig);
        if (mode == AGENT_KILL_SIGNAL)
                return NULL;
        if (!e || nkills == AGENT_MAX_KILLS) {
                agent_put32(r, tag);
                agent_put32(r + 4, e ? agent_sid_signal(e->pid, SIGKILL) : 0);
                agent_send(id, AGENT_KILLED, r, sizeof(r), NULL, 0);
                return NULL;
        }
        kills[nkills] = (struct agent_kill){.id = id,
                                            .tag = tag,
                                            .sid = e->pid,
                                            .start = now,
                                            .grace_end = now + grace,
                                            .next = now + 1,
                                            .step = 1};
        kills[nkills].seen.pids = agent_realloc(NULL, AGENT_MAX_SEEN * sizeof(pid_t));
        agent_tree_track(e->pid, &kills[nkills++].seen, (int) sig);
        return NULL;
}

/* ---- children's fds ---- */

/* After a read: one that emptied the pipe of a running child waits AGENT_SETTLE_US before
 * the next (a child writing 4 KiB at a time then fills the pipe instead of waking the agent
 * for each write). A stream past AGENT_READ_CHUNK bytes gets a pipe large enough to hold what
 * such a child writes meanwhile, once; idle execs keep the smaller one. Not for a pty: its
 * few KiB of buffer would throttle the child, and its reader is a person. */
static void
read_settle(const struct agent_exec *e, struct agent_stream *st, size_t n, size_t room)
{
        if (e->tty)
                return;
        if (!st->bulk && st->sp.total >= AGENT_READ_CHUNK) {
                fcntl(st->fd, F_SETPIPE_SZ, AGENT_PIPE_BULK); /* best effort */
                st->bulk = 1;
        }
        if (n < room && !e->reaped)
                st->settle_until = agent_now_us() + AGENT_SETTLE_US;
}

static void
read_child(struct agent_exec *e, int s)
{
        static unsigned char chunk[AGENT_READ_CHUNK];
        struct agent_stream *st = &e->st[s];
        size_t room = AGENT_READ_CHUNK;
        unsigned char *dst;
        ssize_t n;

        if (st->fd < 0 || !exec_can_read(e))
                return;
        /* Straight into the spool's memory when it has room, else through chunk. */
        dst = agent_spool_tail(&st->sp, &room);
        room = dst ? room : sizeof(chunk);
        n = read(st->fd, dst ? dst : chunk, room);
        if (n > 0) {
                /* A failing spool file stops reading (backpressure), it never drops bytes. */
                if (dst)
                        agent_spool_commit(&st->sp, (size_t) n);
                else if (agent_spool_append(&st->sp, chunk, (size_t) n) < 0)
                        agent_chan_error("cannot write the output spool: out of space");
                read_settle(e, st, (size_t) n, room);
                return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        agent_close(&st->fd); /* EOF, or EIO from a pty whose slave is closed */
}

static void
write_child(struct agent_exec *e)
{
        size_t used = agent_buf_used(&e->inq);
        ssize_t n = used ? write(e->in_fd, e->inq.data + e->inq.off, used) : 0;

        if (n > 0) {
                e->inq.off += (size_t) n;
                e->in_done += (uint64_t) n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                return;
        } else if (n < 0) {
                e->in_done += used;
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

struct agent_slot {
        struct agent_exec *e;
        int which; /* 0 out, 1 err, 2 in */
};

static struct agent_slot *slot_store;
static size_t slot_cap;

/* Adds the children's fds to the poll set (slots[i] says whose fd pfd[i] is). */
void
agent_exec_poll(struct pollfd *pfd, void **slots, size_t *n)
{
        int64_t now = agent_now_us();

        if (slot_cap < 3 * nexecs) {
                slot_cap = 3 * nexecs * 2;
                slot_store = agent_realloc(slot_store, slot_cap * sizeof(*slot_store));
        }
        for (size_t i = 0, k = 0; i < nexecs; i++) {
                struct agent_exec *e = execs[i];
                for (int s = 0; s < 3; s++) {
                        int fd = s < 2 ? e->st[s].fd : e->in_fd;
                        int want = s < 2 ? exec_can_read(e) && e->st[s].settle_until <= now
                                         : agent_buf_used(&e->inq) > 0 || e->in_eof;
                        if (fd < 0 || !want)
                                continue;
                        slot_store[k] = (struct agent_slot){e, s};
                        pfd[*n] = (struct pollfd){.fd = fd, .events = s < 2 ? POLLIN : POLLOUT};
                        slots[(*n)++] = &slot_store[k++];
                }
        }
}

/* Handles the children's poll events. */
void
agent_exec_handle(const struct pollfd *pfd, void *const *slots, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct agent_slot *s = slots[i];
                if (!pfd[i].revents)
                        continue;
                if (s->which < 2)
                        read_child(s->e, s->which);
                else if (s->e->in_fd >= 0)
                        write_child(s->e);
        }
}

/* ---- periodic work ---- */

/* Microseconds until the first settling pipe may be read, or -1. */
int64_t
agent_exec_settle_us(int64_t now_us)
{
        int64_t best = -1;

        for (size_t i = 0; i < nexecs; i++)
                for (int s = 0; s < 2; s++) {
                        const struct agent_stream *st = &execs[i]->st[s];
                        int64_t left = st->settle_until - now_us;
                        if (st->fd < 0 || left <= 0 || !exec_can_read(execs[i]))
                                continue; /* a pipe settled is polled as any other */
                        best = best < 0 || left < best ? left : best;
                }
        return best;
}

static int
min_timeout(int timeout, int64_t at, int64_t now)
{
        int64_t t = at > now ? at - now : 0;

        return timeout < 0 || t < timeout ? (int) t : timeout;
}

/* Advances the drain of an exited exec: done once its pipes close or the time is spent
 * (a background grandchild may hold them); the clock stops while the spool is full. */
static int
tick_drain(struct agent_exec *e, int64_t now, int timeout)
{
        if (e->st[0].fd < 0 && e->st[1].fd < 0) {
                exec_end(e);
                return timeout;
        }
        if (!exec_can_read(e)) {
                if (e->drain_mark >= 0)
                        e->drain_left -= now - e->drain_mark;
                e->drain_mark = -1;
                return timeout;
        }
        if (e->drain_mark < 0)
                e->drain_mark = now;
        if (now - e->drain_mark >= e->drain_left) {
                exec_end(e);
                return timeout;
        }
        return min_timeout(timeout, e->drain_mark + e->drain_left, now);
}

/* Sends output within the window while the queue to the daemon has room. */
static void
pump_output(struct agent_exec *e)
{
        for (int s = 0; s < 2; s++) {
                struct agent_stream *st = &e->st[s];
                while (st->sent < st->sp.total && agent_outq() < AGENT_OUTQ_HIGH &&
                       st->sent - st->sp.head < AGENT_OUT_WINDOW) {
                        uint64_t room = AGENT_OUT_WINDOW - (st->sent - st->sp.head);
                        uint64_t left = st->sp.total - st->sent;
                        size_t n = (size_t) (left < room ? left : room);
                        unsigned char *p;
                        struct iovec iov[6];
                        unsigned char off[8];
                        int niov;
                        n = n < AGENT_OUT_CHUNK ? n : AGENT_OUT_CHUNK;
                        niov = agent_spool_iov(&st->sp, st->sent, n, iov, 6);
                        agent_put64(off, st->sent);
                        if (niov >= 0) { /* from memory: no copy when the stream has room */
                                if (agent_send_iov(e->id, s ? AGENT_STDERR : AGENT_STDOUT, off, 8,
                                                   iov, niov, n) != 0)
                                        return; /* no session, or a full pipe */
                                st->sent += n;
                                continue;
                        }
                        p = agent_send_begin(e->id, s ? AGENT_STDERR : AGENT_STDOUT, 8 + n);
                        if (!p)
                                return;
                        memcpy(p, off, 8);
                        if (agent_spool_copy(&st->sp, st->sent, p + 8, n) < 0) {
                                agent_chan_error("cannot read the output spool");
                                return;
                        }
                        agent_send_commit(8 + n);
                        st->sent += n;
                }
        }
}

static int
tick_exec(struct agent_exec *e, int64_t now, int timeout)
{
        if (e->reaped && !e->ended)
                timeout = tick_drain(e, now, timeout);
        if (!e->id || !agent_session_on())
                return timeout;
        if (e->in_done > e->in_told) {
                unsigned char p[8];
                agent_put64(p, e->in_done);
                agent_send(e->id, AGENT_STDIN_ACK, p, 8, NULL, 0);
                e->in_told = e->in_done;
        }
        pump_output(e);
        if (e->ended && !e->exit_sent && e->st[0].sent == e->st[0].sp.total &&
            e->st[1].sent == e->st[1].sp.total)
                send_exit(e);
        return timeout;
}

/* Advances one KILL WAIT; returns 1 when it is done. */
static int
tick_kill(struct agent_kill *k, int64_t now)
{
        unsigned char r[8];
        uint32_t alive;

        if (now < k->next)
                return 0;
        if (!k->hard && now >= k->grace_end) {
                k->hard = 1;
                k->start = now;
                k->step = 1;
        }
        alive = agent_tree_track(k->sid, &k->seen, k->hard ? SIGKILL : 0);
        if (alive == 0 || (k->hard && now - k->start >= AGENT_KILL_HARD_MS)) {
                agent_put32(r, k->tag);
                agent_put32(r + 4, alive);
                if (k->id)
                        agent_send(k->id, AGENT_KILLED, r, sizeof(r), NULL, 0);
                return 1;
        }
        k->next = now + k->step;
        if (!k->hard && k->next > k->grace_end)
                k->next = k->grace_end;
        k->step = k->step * 2 < AGENT_KILL_STEP_MS ? k->step * 2 : AGENT_KILL_STEP_MS;
        return 0;
}

/* Periodic work of every exec and kill; returns the poll timeout in ms (-1: none). */
int
agent_exec_tick(int timeout, int64_t now)
{
        for (size_t i = nexecs; i-- > 0;)
                timeout = tick_exec(execs[i], now, timeout);
        for (size_t i = nkills; i-- > 0;) {
                if (!tick_kill(&kills[i], now))
                        continue;
                free(kills[i].seen.pids);
                kills[i] = kills[--nkills];
        }
        for (size_t i = 0; i < nkills; i++)
                timeout = min_timeout(timeout, kills[i].next, now);
        return timeout;
}

/* Opens /dev/null for children without stdin. */
void
agent_exec_init(void)
{
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0)
                _exit(71);
}

/* The RLIMIT_NOFILE children get (the agent raises its own). */
void
agent_exec_set_nofile(const struct rlimit *rl)
{
        child_nofile = *rl;
}
