/* spawn.c — fork+exec of one session leader with pipes or a pty, the caller's identity,
 * rlimits and cgroup placement; pre-exec failures come back through a CLOEXEC error pipe.
 *
 * Everything the child needs (exec candidates, fds) is prepared before fork(); the child then
 * only makes async-signal-safe calls. All signals are blocked across fork() so that no handler
 * the daemon (or libuv) installed can run in the child before the dispositions are reset. */
#include "backends/spawn.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "protocol/util.h"

#define SPAWN_MAX_PATH_DIRS 256
#define SPAWN_DEFAULT_PATH  "/usr/bin:/bin"
#define SPAWN_BACKEND       "local"

/* Steps of the child's setup, reported through the error pipe. */
enum spawn_stage {
        STAGE_SETSID = 1,
        STAGE_CGROUP,
        STAGE_TTY,
        STAGE_STDIO,
        STAGE_RLIMIT,
        STAGE_IDENTITY,
        STAGE_VERIFY,
        STAGE_CHDIR,
        STAGE_EXEC,
};

static const char *const spawn_stage_names[] = {
        [STAGE_SETSID] = "setsid",
        [STAGE_CGROUP] = "join cgroup",
        [STAGE_TTY] = "set controlling terminal",
        [STAGE_STDIO] = "set up stdio",
        [STAGE_RLIMIT] = "set rlimit",
        [STAGE_IDENTITY] = "set identity",
        [STAGE_VERIFY] = "verify identity",
        [STAGE_CHDIR] = "chdir",
        [STAGE_EXEC] = "execute",
};

/* What a failing child writes to the error pipe (one write, < PIPE_BUF: atomic). */
struct spawn_report {
        int stage;
        int err;
        int index; /* cgroup file / rlimit / exec candidate, -1 when not applicable */
};

static const struct {
        int resource;
        size_t offset;
        const char *name;
} spawn_rlimits[] = {
        {RLIMIT_AS, offsetof(struct spawn_limits, as_bytes), "RLIMIT_AS"},
        {RLIMIT_NPROC, offsetof(struct spawn_limits, nproc), "RLIMIT_NPROC"},
        {RLIMIT_CPU, offsetof(struct spawn_limits, cpu_s), "RLIMIT_CPU"},
        {RLIMIT_NOFILE, offsetof(struct spawn_limits, nofile), "RLIMIT_NOFILE"},
};

/* Soft RLIMIT_NOFILE children start with (the daemon raised its own); RLIM_INFINITY = leave. */
static rlim_t spawn_child_nofile = RLIM_INFINITY;

/* Descriptors of one spawn; -1 when unused. Child ends are closed in the parent after fork. */
struct spawn_fds {
        int in[2], out[2], err[2], rep[2];
        int master, slave, null;
};

/* Everything the child reads, prepared before fork. */
struct spawn_plan {
        const struct spawn_opts *o;
        char **cands;     /* exec candidates (new), NULL-terminated */
        const char *path; /* PATH searched, NULL when argv[0] has a '/' */
        bool set_identity;
        int fd_in, fd_out, fd_err, tty, report;
};

/* ---- child side: async-signal-safe only ---- */

static _Noreturn void
child_fail(int report, int stage, int e, int index)
{
        struct spawn_report r = {.stage = stage, .err = e ? e : EIO, .index = index};
        ssize_t n;

        do
                n = write(report, &r, sizeof(r));
        while (n < 0 && errno == EINTR);
        _exit(127);
}

/* Default dispositions for every signal; the mask stays fully blocked until exec. glibc
 * refuses to touch its internal signals (32, 33), which an ancestor may have set to SIG_IGN
 * (ignored dispositions survive exec), so those go through the raw system call. */
void
spawn_child_reset_signals(void)
{
        struct {
                void (*handler)(int);
                unsigned long flags;
                void (*restorer)(void);
                uint64_t mask;
        } ksa = {SIG_DFL, 0, NULL, 0};
        struct sigaction sa;
        int sig;

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        for (sig = 1; sig < NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, &sa, NULL) == 0)
                        continue;
                (void) syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask));
        }
}

static void
child_unblock_signals(void)
{
        sigset_t none;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Moves fd to a number >= 3 so that dup2 onto 0..2 cannot clobber it. */
static int
child_lift_fd(int fd)
{
        if (fd < 0 || fd > 2)
                return fd;
        return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static int
child_write_pid(const char *path)
{
        char buf[24];
        char *p = buf + sizeof(buf);
        unsigned long v = (unsigned long) getpid();
        ssize_t n;
        int fd, e = 0;

        *--p = '\n';
        do
                *--p = (char) ('0' + v % 10);
        while ((v /= 10) != 0);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        n = write(fd, p, (size_t) (buf + sizeof(buf) - p));
        if (n < 0)
                e = errno;
        close(fd);
        return e;
}

static void
child_join_cgroups(const struct spawn_plan *p)
{
        const char *const *f = p->o->cgroup_procs;
        int i, e;

        for (i = 0; f && f[i]; i++) {
                e = child_write_pid(f[i]);
                if (e)
                        child_fail(p->report, STAGE_CGROUP, e, i);
        }
}

static void
child_stdio(struct spawn_plan *p)
{
        int src[3], i;

        if (p->tty >= 0 && ioctl(p->tty, TIOCSCTTY, 0) < 0)
                child_fail(p->report, STAGE_TTY, errno, -1);
        p->report = child_lift_fd(p->report);
        if (p->report < 0)
                _exit(127);
        src[0] = child_lift_fd(p->fd_in);
        src[1] = child_lift_fd(p->fd_out);
        src[2] = child_lift_fd(p->fd_err);
        for (i = 0; i < 3; i++) {
                if (src[i] < 0 || dup2(src[i], i) < 0)
                        child_fail(p->report, STAGE_STDIO, errno, i);
        }
}

static void
child_rlimits(const struct spawn_plan *p)
{
        const struct spawn_limits *l = p->o->limits;
        struct rlimit cur, rl;
        uint64_t v;
        size_t i;

        /* The daemon's raised soft limit is not the user's: give back the one it started with
         * (lowering a soft limit always works; a limits->nofile below overrides it). */
        if (spawn_child_nofile != RLIM_INFINITY && getrlimit(RLIMIT_NOFILE, &cur) == 0 &&
            cur.rlim_cur > spawn_child_nofile) {
                rl.rlim_cur = spawn_child_nofile;
                rl.rlim_max = cur.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        for (i = 0; l && i < ARRAY_SIZE(spawn_rlimits); i++) {
                memcpy(&v, (const char *) l + spawn_rlimits[i].offset, sizeof(v));
                if (v == 0)
                        continue;
                rl.rlim_cur = rl.rlim_max = (rlim_t) v;
                /* Never above an existing hard limit: that one is stricter already. */
                if (getrlimit(spawn_rlimits[i].resource, &cur) == 0 &&
                    cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max)
                        rl.rlim_cur = rl.rlim_max = cur.rlim_max;
                if (setrlimit(spawn_rlimits[i].resource, &rl) < 0)
                        child_fail(p->report, STAGE_RLIMIT, errno, (int) i);
        }
}

/* Drops to who's uid/gid/groups and proves it cannot come back; 0 or errno, *stage set. */
static int
child_identity(const struct backend_identity *w, int *stage)
{
        uid_t r, e, s;
        gid_t gr, ge, gs;

        /* Raw system calls: the child shares the daemon's memory (CLONE_VM), and glibc's
         * set*id wrappers would try to change the credentials of the daemon's other threads
         * too. The kernel changes only the calling task. */
        *stage = STAGE_IDENTITY;
        if (syscall(SYS_setgroups, w->ngroups, w->groups) < 0 ||
            syscall(SYS_setresgid, w->gid, w->gid, w->gid) < 0 ||
            syscall(SYS_setresuid, w->uid, w->uid, w->uid) < 0)
                return errno;
        *stage = STAGE_VERIFY;
        if (syscall(SYS_getresuid, &r, &e, &s) < 0 || syscall(SYS_getresgid, &gr, &ge, &gs) < 0)
                return errno;
        if (r != w->uid || e != w->uid || s != w->uid || gr != w->gid || ge != w->gid ||
            gs != w->gid)
                return EPERM;
        if (w->uid != 0 && syscall(SYS_setuid, 0) == 0)
                return EPERM;
        return 0;
}

/* Marks [lo, hi] close-on-exec; 0 on success. */
static int
child_cloexec_range(unsigned lo, unsigned hi)
{
        if (lo > hi)
                return 0;
        return (int) syscall(SYS_close_range, lo, hi, CLOSE_RANGE_CLOEXEC);
}

static void
child_cloexec_scan(int keep)
{
        char buf[4096];
        long n, off;
        int dfd, fd;

        dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                for (fd = 3; fd < 65536; fd++)
                        if (fd != keep)
                                (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                return;
        }
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
                for (off = 0; off < n;) {
                        struct dirent64 *d = (struct dirent64 *) (buf + off);
                        const char *c = d->d_name;

                        for (fd = 0; *c >= '0' && *c <= '9'; c++)
                                fd = fd * 10 + (*c - '0');
                        if (!*c && fd > 2 && fd != keep && fd != dfd)
                                (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        off += d->d_reclen;
                }
        }
        close(dfd);
}

/* Every fd above 2 except keep closes at exec (the error pipe must live until then). */
static void
child_close_fds(int keep)
{
        int rc;

        if (keep < 0)
                rc = child_cloexec_range(3, ~0U);
        else
                rc = child_cloexec_range(3, (unsigned) keep - 1) ||
                     child_cloexec_range((unsigned) keep + 1, ~0U);
        if (rc != 0)
                child_cloexec_scan(keep);
        if (keep >= 0)
                (void) fcntl(keep, F_SETFD, 0);
}

static _Noreturn void
child_exec(const struct spawn_plan *p)
{
        bool eacces = false;
        int i;

        for (i = 0; p->cands[i]; i++) {
                execve(p->cands[i], p->o->argv, p->o->envp);
                switch (errno) {
                case EACCES:
                        eacces = true;
                        break;
                case ENOENT:
                case ENOTDIR:
                case ESTALE:
                case ENODEV:
                case ETIMEDOUT:
                        break;
                default:
                        child_fail(p->report, STAGE_EXEC, errno, i);
                }
        }
        child_fail(p->report, STAGE_EXEC, eacces ? EACCES : ENOENT, -1);
}

static _Noreturn void
spawn_child(struct spawn_plan *shared)
{
        /* A private copy: the parent's plan lives in memory we share until exec. */
        struct spawn_plan plan = *shared, *p = &plan;
        int stage, e;

        spawn_child_reset_signals();
        if (setsid() < 0)
                child_fail(p->report, STAGE_SETSID, errno, -1);
        child_join_cgroups(p);
        child_stdio(p);
        child_rlimits(p);
        if (p->set_identity && (e = child_identity(p->o->who, &stage)) != 0)
                child_fail(p->report, stage, e, -1);
        if (p->o->cwd && chdir(p->o->cwd) < 0)
                child_fail(p->report, STAGE_CHDIR, errno, -1);
        child_close_fds(p->o->keep_fd);
        child_unblock_signals();
        child_exec(p);
}

/* ---- parent side ---- */

static void
spawn_close(int *fd)
{
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void
spawn_fds_close_all(struct spawn_fds *f)
{
        int *all[] = {&f->in[0],  &f->in[1],  &f->out[0], &f->out[1], &f->err[0], &f->err[1],
                      &f->rep[0], &f->rep[1], &f->master, &f->slave,  &f->null};
        size_t i;

        for (i = 0; i < ARRAY_SIZE(all); i++)
                spawn_close(all[i]);
}

static void
spawn_fds_close_child_ends(struct spawn_fds *f)
{
        spawn_close(&f->in[0]);
        spawn_close(&f->out[1]);
        spawn_close(&f->err[1]);
        spawn_close(&f->rep[1]);
        spawn_close(&f->slave);
        spawn_close(&f->null);
}

static int
spawn_set_nonblock(int fd)
{
        int fl;

        if (fd < 0)
                return 0;
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

static int
spawn_open_pty(const struct spawn_opts *o, struct spawn_fds *f)
{
        struct winsize ws = {.ws_row = o->rows, .ws_col = o->cols};
        char name[64];
        int e;

        f->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (f->master < 0)
                return -errno;
        if (grantpt(f->master) < 0 || unlockpt(f->master) < 0)
                return -errno;
        if ((e = ptsname_r(f->master, name, sizeof(name))) != 0)
                return -e;
        f->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (f->slave < 0)
                return -errno;
        if (o->rows && o->cols && ioctl(f->master, TIOCSWINSZ, &ws) < 0)
                return -errno;
        if (spawn_set_nonblock(f->master) < 0)
                return -errno;
        if (o->stdin_pipe && (f->in[1] = fcntl(f->master, F_DUPFD_CLOEXEC, 3)) < 0)
                return -errno;
        return 0;
}

static int
spawn_open_pipes(const struct spawn_opts *o, struct spawn_fds *f)
{
        if (o->stdin_pipe && pipe2(f->in, O_CLOEXEC) < 0)
                return -errno;
        if (!o->stdin_pipe && (f->null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                return -errno;
        if (pipe2(f->out, O_CLOEXEC) < 0)
                return -errno;
        if (!o->merge_stderr && pipe2(f->err, O_CLOEXEC) < 0)
                return -errno;
        if (spawn_set_nonblock(f->in[1]) < 0 || spawn_set_nonblock(f->out[0]) < 0 ||
            spawn_set_nonblock(f->err[0]) < 0)
                return -errno;
        return 0;
}

/* Opens every descriptor of the spawn and points the plan's child stdio at them. */
static int
spawn_open_fds(const struct spawn_opts *o, struct spawn_fds *f, struct spawn_plan *p)
{
        int rc;

        if (pipe2(f->rep, O_CLOEXEC) < 0)
                return -errno;
        p->report = f->rep[1];
        rc = o->pty ? spawn_open_pty(o, f) : spawn_open_pipes(o, f);
        if (rc < 0)
                return rc;
        if (o->pty) {
                p->tty = p->fd_in = p->fd_out = p->fd_err = f->slave;
                return 0;
        }
        p->fd_in = o->stdin_pipe ? f->in[0] : f->null;
        p->fd_out = f->out[1];
        p->fd_err = o->merge_stderr ? f->out[1] : f->err[1];
        return 0;
}

static const char *
spawn_env_path(char *const *envp)
{
        size_t i;

        for (i = 0; envp && envp[i]; i++) {
                if (strncmp(envp[i], "PATH=", 5) == 0)
                        return envp[i] + 5;
        }
        return NULL;
}

/* Exec candidates for prog (new array of new strings): prog itself when it has a '/', else
 * PATH's directories in order (an empty entry means the cwd, as for execvp). */
static char **
spawn_candidates(const char *prog, const char *path)
{
        char **c = xcalloc(SPAWN_MAX_PATH_DIRS + 1, sizeof(*c));
        const char *s = path, *e;
        size_t n = 0, len;

        if (strchr(prog, '/')) {
                c[0] = xstrdup(prog);
                return c;
        }
        while (n < SPAWN_MAX_PATH_DIRS) {
                e = strchrnul(s, ':');
                len = (size_t) (e - s);
                if (len + strlen(prog) + 2 <= PATH_MAX)
                        c[n++] = len ? xasprintf("%.*s/%s", (int) len, s, prog)
                                     : xasprintf("./%s", prog);
                if (!*e)
                        break;
                s = e + 1;
        }
        return c;
}

static void
spawn_candidates_free(char **c)
{
        size_t i;

        for (i = 0; c && c[i]; i++)
                free(c[i]);
        free(c);
}

/* Whether to switch identity in the child; -EPERM (err set) when impossible. */
static int
spawn_check_identity(const struct backend_identity *who, bool *set, struct sbx_error *err)
{
        long max = sysconf(_SC_NGROUPS_MAX);

        *set = false;
        if (!who)
                return 0;
        if (geteuid() != 0) {
                if (who->uid == getuid())
                        return 0;
                sbx_error_backend(err, SPAWN_BACKEND,
                                  "cannot run as uid %u: sandboxd runs unprivileged as uid %u",
                                  (unsigned) who->uid, (unsigned) getuid());
                return -EPERM;
        }
        if (max > 0 && who->ngroups > (size_t) max) {
                sbx_error_backend(err, SPAWN_BACKEND, "uid %u has %zu groups (max %ld)",
                                  (unsigned) who->uid, who->ngroups, max);
                return -EINVAL;
        }
        *set = true;
        return 0;
}

static bool
spawn_exec_is_client_error(int e)
{
        static const int resource[] = {ENOMEM, EAGAIN, ENFILE, EMFILE, EIO};
        size_t i;

        for (i = 0; i < ARRAY_SIZE(resource); i++) {
                if (resource[i] == e)
                        return false;
        }
        return true;
}

static void
spawn_exec_error(const struct spawn_plan *p, const struct spawn_report *r, struct sbx_error *err)
{
        const char *prog = p->o->path ? p->o->path : p->o->argv[0];

        if (r->err == ENOENT && p->path)
                sbx_error_param(err, "argv", "cannot execute '%s': not found in PATH (%s)", prog,
                                p->path);
        else if (spawn_exec_is_client_error(r->err))
                sbx_error_param(err, "argv", "cannot execute '%s': %s", prog, strerror(r->err));
        else
                sbx_error_backend(err, SPAWN_BACKEND, "execute '%s': %s", prog, strerror(r->err));
}

/* Turns a child's report into err; returns the negative errno. */
static int
spawn_report_error(const struct spawn_plan *p, const struct spawn_report *r, struct sbx_error *err)
{
        const char *what = "set up child";
        int i = r->index;

        if (r->stage > 0 && (size_t) r->stage < ARRAY_SIZE(spawn_stage_names))
                what = spawn_stage_names[r->stage];
        if (r->stage == STAGE_CHDIR)
                sbx_error_param(err, "cwd", "cwd '%s': %s", p->o->cwd, strerror(r->err));
        else if (r->stage == STAGE_EXEC)
                spawn_exec_error(p, r, err);
        else if (r->stage == STAGE_CGROUP && i >= 0)
                sbx_error_backend(err, SPAWN_BACKEND, "join cgroup '%s': %s", p->o->cgroup_procs[i],
                                  strerror(r->err));
        else if (r->stage == STAGE_RLIMIT && i >= 0 && (size_t) i < ARRAY_SIZE(spawn_rlimits))
                sbx_error_backend(err, SPAWN_BACKEND, "set %s: %s", spawn_rlimits[i].name,
                                  strerror(r->err));
        else if (r->stage == STAGE_IDENTITY || r->stage == STAGE_VERIFY)
                sbx_error_backend(err, SPAWN_BACKEND, "%s (uid %u gid %u): %s", what,
                                  (unsigned) p->o->who->uid, (unsigned) p->o->who->gid,
                                  strerror(r->err));
        else
                sbx_error_backend(err, SPAWN_BACKEND, "%s: %s", what, strerror(r->err));
        return -r->err;
}

/* Reads the child's report: 1 with *r filled when setup failed, 0 on EOF (exec succeeded). */
static int
spawn_read_report(int fd, struct spawn_report *r)
{
        size_t got = 0;
        ssize_t n;

        while (got < sizeof(*r)) {
                n = read(fd, (char *) r + got, sizeof(*r) - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        return got == sizeof(*r);
}

static void
spawn_reap(pid_t pid, int *status)
{
        int st = 0;

        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        if (status)
                *status = st;
}

#define SPAWN_STACK (256 * 1024)

/* fork() with every signal blocked, for children that run code of ours (spawn_fork_as) rather
 * than exec; the parent's mask is restored before returning. */
static pid_t
spawn_fork_plain(sigset_t *saved)
{
        sigset_t all;
        pid_t pid;
        int e;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, saved);
        pid = fork();
        e = errno;
        if (pid != 0)
                pthread_sigmask(SIG_SETMASK, saved, NULL);
        errno = e;
        return pid;
}

static int
spawn_child_entry(void *arg)
{
        spawn_child(arg);
}

/* Starts the child like posix_spawn does: clone(CLONE_VM | CLONE_VFORK) shares the daemon's
 * memory until the child calls execve (or exits), so no page tables are copied and torn down
 * for every exec — that was most of an exec's cost. The parent is suspended meanwhile; every
 * signal is blocked across it and the child resets dispositions before unblocking. */
static pid_t
spawn_fork(struct spawn_plan *p, sigset_t *saved)
{
        static char *stack;
        sigset_t all;
        pid_t pid;
        int e;

        if (!stack) {
                stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
                if (stack == MAP_FAILED) {
                        stack = NULL;
                        return -1;
                }
        }
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, saved);
        pid = clone(spawn_child_entry, stack + SPAWN_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, p);
        e = errno;
        pthread_sigmask(SIG_SETMASK, saved, NULL);
        errno = e;
        return pid;
}

static int
spawn_validate(const struct spawn_opts *o, struct sbx_error *err)
{
        if (!o->argv || !o->argv[0] || !o->argv[0][0]) {
                sbx_error_param(err, "argv", "argv must name a program");
                return -EINVAL;
        }
        if (!o->envp || (o->keep_fd >= 0 && o->keep_fd < 3)) {
                sbx_error_backend(err, SPAWN_BACKEND, "spawn: bad envp or keep_fd");
                return -EINVAL;
        }
        return 0;
}

/* Forks, waits for the exec handshake and fills res; everything is closed on failure. */
static int
spawn_launch(struct spawn_plan *p, struct spawn_fds *f, struct spawn_result *res,
             struct sbx_error *err)
{
        struct spawn_report r;
        sigset_t saved;
        pid_t pid;
        int rc;

        pid = spawn_fork(p, &saved);
        if (pid < 0) {
                rc = -errno;
                sbx_error_backend(err, SPAWN_BACKEND, "clone: %s", strerror(-rc));
                return rc;
        }
        spawn_fds_close_child_ends(f);
        if (spawn_read_report(f->rep[0], &r)) {
                spawn_reap(pid, NULL);
                return spawn_report_error(p, &r, err);
        }
        spawn_close(&f->rep[0]);
        res->pid = pid;
        res->stdout_fd = p->o->pty ? f->master : f->out[0];
        res->stderr_fd = f->err[0];
        res->stdin_fd = f->in[1];
        /* Ownership moved to res. */
        f->master = f->out[0] = f->err[0] = f->in[1] = -1;
        return 0;
}

/* The soft RLIMIT_NOFILE children start with, 0 when it is left as inherited. */
uint64_t
spawn_child_nofile_soft(void)
{
        return spawn_child_nofile == RLIM_INFINITY ? 0 : (uint64_t) spawn_child_nofile;
}

/* Sets the soft RLIMIT_NOFILE every later child starts with. */
void
spawn_set_child_nofile(uint64_t soft)
{
        spawn_child_nofile = (rlim_t) soft;
}

/* Starts the process (see spawn.h). */
int
spawn_start(const struct spawn_opts *o, struct spawn_result *res, struct sbx_error *err)
{
        struct spawn_fds f = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, -1, -1, -1};
        struct spawn_plan p = {.o = o, .tty = -1, .fd_in = -1, .fd_out = -1, .fd_err = -1};
        const char *prog;
        bool search;
        int rc;

        res->pid = -1;
        res->stdin_fd = res->stdout_fd = res->stderr_fd = -1;
        if ((rc = spawn_validate(o, err)) < 0 ||
            (rc = spawn_check_identity(o->who, &p.set_identity, err)) < 0)
                return rc;
        prog = o->path ? o->path : o->argv[0];
        search = !strchr(prog, '/');
        p.path = search ? spawn_env_path(o->envp) : NULL;
        if (search && !p.path)
                p.path = SPAWN_DEFAULT_PATH;
        p.cands = spawn_candidates(prog, p.path);
        rc = spawn_open_fds(o, &f, &p);
        if (rc < 0)
                sbx_error_backend(err, SPAWN_BACKEND, "spawn: open fds: %s", strerror(-rc));
        else
                rc = spawn_launch(&p, &f, res, err);
        spawn_fds_close_all(&f);
        spawn_candidates_free(p.cands);
        return rc;
}

/* Closes every descriptor above 2 except keep[0..n) (n <= SPAWN_MAX_KEEP). */
static void
child_close_except(const int *keep, size_t n)
{
        int k[SPAWN_MAX_KEEP + 1];
        unsigned lo = 3;
        size_t m = 0;

        for (size_t i = 0; i < n && m < SPAWN_MAX_KEEP; i++) {
                size_t j = m++;
                for (; j > 0 && k[j - 1] > keep[i]; j--)
                        k[j] = k[j - 1];
                k[j] = keep[i];
        }
        k[m] = -1;
        for (size_t i = 0; i <= m; i++) {
                unsigned hi = k[i] < 0 ? ~0U : (unsigned) k[i] - 1;
                if (k[i] >= 0 && (unsigned) k[i] < lo)
                        continue;
                if (lo <= hi && syscall(SYS_close_range, lo, hi, 0) < 0)
                        for (unsigned fd = lo; fd <= hi && fd < 65536; fd++)
                                close((int) fd);
                lo = k[i] < 0 ? lo : (unsigned) k[i] + 1;
        }
}

static _Noreturn void
spawn_fork_as_child(const struct backend_identity *who, bool set, int (*fn)(void *), void *arg,
                    const int *keep, size_t nkeep, int report)
{
        int stage, e;

        spawn_child_reset_signals();
        if (set && (e = child_identity(who, &stage)) != 0)
                child_fail(report, stage, e, -1);
        if (chdir("/") < 0)
                child_fail(report, STAGE_CHDIR, errno, -1);
        close(report);
        /* The daemon's sockets, pipes and files are none of this child's business (and a
         * client whose connection it kept open would never see the daemon close it). */
        child_close_except(keep, nkeep);
        child_unblock_signals();
        _exit(fn(arg));
}

/* Forks a child that runs fn(arg) as who (see spawn.h). */
int
spawn_fork_as(const struct backend_identity *who, int (*fn)(void *arg), void *arg, const int *keep,
              size_t nkeep, pid_t *ret)
{
        struct spawn_report r;
        sigset_t saved;
        int rep[2], rc;
        bool set;
        pid_t pid;

        if (nkeep > SPAWN_MAX_KEEP)
                return -EINVAL;
        if ((rc = spawn_check_identity(who, &set, NULL)) < 0)
                return rc;
        if (pipe2(rep, O_CLOEXEC) < 0)
                return -errno;
        pid = spawn_fork_plain(&saved);
        if (pid < 0) {
                rc = -errno;
                close(rep[0]);
                close(rep[1]);
                return rc;
        }
        if (pid == 0)
                spawn_fork_as_child(who, set, fn, arg, keep, nkeep, rep[1]);
        close(rep[1]);
        rc = spawn_read_report(rep[0], &r) ? -r.err : 0;
        close(rep[0]);
        if (rc < 0)
                spawn_reap(pid, NULL);
        else
                *ret = pid;
        return rc;
}

/* ---- children libuv reaps itself ---- */

static pid_t *uv_children;
static size_t uv_nchildren, uv_cap;

/* Registers a child of uv_spawn. */
void
spawn_uv_child_add(pid_t pid)
{
        if (uv_nchildren == uv_cap) {
                uv_cap = uv_cap ? uv_cap * 2 : 16;
                uv_children = xrealloc(uv_children, uv_cap * sizeof(*uv_children));
        }
        uv_children[uv_nchildren++] = pid;
}

/* Forgets it (libuv has reaped it). */
void
spawn_uv_child_del(pid_t pid)
{
        for (size_t i = 0; i < uv_nchildren; i++) {
                if (uv_children[i] == pid) {
                        uv_children[i] = uv_children[--uv_nchildren];
                        break;
                }
        }
        if (!uv_nchildren) {
                free(uv_children);
                uv_children = NULL;
                uv_cap = 0;
        }
}

static bool
spawn_uv_child(pid_t pid)
{
        for (size_t i = 0; i < uv_nchildren; i++)
                if (uv_children[i] == pid)
                        return true;
        return false;
}

/* Reaps the first exited child of one thread's children list that is not libuv's. */
static pid_t
spawn_reap_listed(const char *tid, int *status)
{
        char path[64], list[4096];
        ssize_t n;
        pid_t r = 0;
        int fd;

        snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return 0;
        n = read(fd, list, sizeof(list) - 1);
        close(fd);
        list[n > 0 ? n : 0] = '\0';
        for (char *p = list, *end; *p && r <= 0; p = end) {
                pid_t pid = (pid_t) strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0 && !spawn_uv_child(pid))
                        r = waitpid(pid, status, WNOHANG);
        }
        return r > 0 ? r : 0;
}

/* Reaps one exited child that libuv does not own. */
pid_t
spawn_reap_other(int *status)
{
        struct dirent *de;
        pid_t r = 0;
        DIR *d;

        if (!uv_nchildren)
                return waitpid(-1, status, WNOHANG);
        /* waitpid(-1) would take libuv's children from it: only the others, by pid. */
        if (!(d = opendir("/proc/self/task")))
                return 0;
        while (!r && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        r = spawn_reap_listed(de->d_name, status);
        closedir(d);
        return r;
}
