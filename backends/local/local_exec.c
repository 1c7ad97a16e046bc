/* local_exec.c — execs of host sandboxes (isolation "none"): one process tree leader per exec,
 * in its own session, with pipes or a pty, killed by process group; reaped by local.c's SIGCHLD
 * handler (local_exec_reaped). */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cgroup.h"
#include "backends/local/local_int.h"
#include "backends/shell_init.h"
#include "backends/spawn.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define LOCAL_READ_BUF     (256 * 1024)
#define LOCAL_KILL_POLL_MS 20

struct local_pipe {
        uv_pipe_t h;
        struct local_proc *p;
        int stream; /* 0 stdout, 1 stderr, -1 stdin */
        bool open;
};

/* Reads are consumed inside their callback, so every pipe can share one buffer: a process
 * costs a few hundred bytes, not three read buffers. */
static char local_rbuf[LOCAL_READ_BUF];

struct local_kill {
        struct list node;
        struct local_proc *p;
        uv_timer_t timer;
        uint64_t deadline_ms;
        bool killed;
        void *ctx;
        backend_kill_cb cb;
};

struct local_proc {
        struct backend_proc base; /* ops: local_proc_ops */
        struct list node;         /* in local_procs while the leader runs */
        int refs;
        pid_t pid;
        struct backend_sandbox *bsb;
        struct local_pipe out[2];
        struct local_pipe in;
        int nopen; /* open handles */
        bool exited, finished, paused, stdin_eof_pending;
        int status;
        uint64_t oom_before;
        uv_timer_t drain;
        int pty_fd;
        char *state_path;
        uid_t owner;
        const struct backend_exec_cbs *cbs;
        void *ctx;
        struct list kills;
};

static uv_loop_t *local_loop;
static struct list local_procs = {&local_procs, &local_procs};
static uint64_t local_drain_ms = 250;

static void local_try_finish(struct local_proc *p);
static const struct backend_proc_ops local_proc_ops;

static void
local_proc_unref(struct local_proc *p)
{
        if (--p->refs > 0)
                return;
        free(p->state_path);
        free(p);
}

static void
local_handle_close_cb(uv_handle_t *h)
{
        struct local_proc *p = h->data;

        local_proc_unref(p);
}

static void
local_close_pipe(struct local_pipe *lp)
{
        if (!lp->open)
                return;
        lp->open = false;
        uv_close((uv_handle_t *) &lp->h, local_handle_close_cb);
        lp->p->nopen--;
}

/* A child reaped by the SIGCHLD handler: true when it was an exec's leader (then handled). */
bool
local_exec_reaped(pid_t pid, int status)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &local_procs)
        {
                struct local_proc *p = LIST_ENTRY(pos, struct local_proc, node);
                if (p->pid != pid)
                        continue;
                p->exited = true;
                p->status = status;
                list_del(&p->node);
                local_try_finish(p);
                return true;
        }
        return false;
}

/* Sets up host execs: the loop and the drain grace after a leader's exit. */
void
local_exec_init(uv_loop_t *loop, uint64_t drain_ms)
{
        local_loop = loop;
        local_drain_ms = drain_ms;
}

static void
local_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
        buf->base = local_rbuf;
        buf->len = sizeof(local_rbuf);
}

static void
local_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
        struct local_pipe *lp = LIST_ENTRY(s, struct local_pipe, h);
        struct local_proc *p = lp->p;

        if (n > 0) {
                p->cbs->on_output(p->ctx, (enum backend_stream) lp->stream, buf->base, (size_t) n);
                return;
        }
        if (n == 0)
                return;
        /* EOF, or EIO from a pty master whose slave side is gone. */
        local_close_pipe(lp);
        local_try_finish(p);
}

static int
local_open_pipe(struct local_proc *p, struct local_pipe *lp, int fd, int stream)
{
        int r;

        lp->p = p;
        lp->stream = stream;
        uv_pipe_init(local_loop, &lp->h, 0);
        lp->h.data = p;
        p->refs++;
        p->nopen++;
        lp->open = true;
        r = uv_pipe_open(&lp->h, fd);
        if (r < 0) {
                close(fd);
                local_close_pipe(lp);
                return r;
        }
        if (stream >= 0) {
                /* Bigger pipes mean fewer wake-ups for chatty commands; best effort. */
                fcntl(fd, F_SETPIPE_SZ, 1 << 20);
                uv_read_start((uv_stream_t *) &lp->h, local_alloc_cb, local_read_cb);
        }
        return 0;
}

/* Reads the state file the wrapper left into ex (data new, NUL-terminated) and removes it. */
static char *
local_read_state(struct local_proc *p, struct exec_exit *ex)
{
        int fd = open(p->state_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        char *data = NULL;

        if (fd < 0)
                return NULL;
        /* The file is written by the caller's process: trust it only if it is a regular file
         * of theirs (not a link to something the daemon could read as root). */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != p->owner ||
            st.st_nlink != 1) {
                close(fd);
                unlink(p->state_path);
                return NULL;
        }
        unlink(p->state_path);
        if (st.st_size > (off_t) SHELL_STATE_MAX) {
                ex->state_too_big = true;
        } else {
                data = xmalloc((size_t) st.st_size + 1);
                if (read(fd, data, (size_t) st.st_size) != st.st_size) {
                        free(data);
                        data = NULL;
                } else {
                        data[st.st_size] = '\0';
                        ex->state = data;
                        ex->state_len = (size_t) st.st_size;
                }
        }
        close(fd);
        return data;
}

static void
local_finish(struct local_proc *p)
{
        struct exec_exit ex = {0};
        char *state = NULL;

        p->finished = true;
        uv_timer_stop(&p->drain);
        for (int i = 0; i < 2; i++)
                local_close_pipe(&p->out[i]);
        local_close_pipe(&p->in);
        if (WIFEXITED(p->status))
                ex.exit_code = WEXITSTATUS(p->status);
        else if (WIFSIGNALED(p->status))
                ex.signal = WTERMSIG(p->status);
        /* Any OOM kill in the sandbox's cgroup while this exec ran: a pipeline's victim need
         * not be the exec's main process (the shell then exits 137 on its own). */
        ex.oom_killed = p->bsb->cg && cgroup_oom_kills(p->bsb->cg) > p->oom_before;
        if (p->state_path)
                state = local_read_state(p, &ex);
        p->cbs->on_exit(p->ctx, &ex);
        free(state);
}

static void
local_drain_cb(uv_timer_t *t)
{
        struct local_proc *p = t->data;

        /* The leader exited but something (a background grandchild) still holds the pipes. */
        if (!p->finished)
                local_finish(p);
}

static void
local_try_finish(struct local_proc *p)
{
        if (p->finished || !p->exited)
                return;
        if (!p->out[0].open && !p->out[1].open) {
                local_finish(p);
                return;
        }
        if (!uv_is_active((uv_handle_t *) &p->drain))
                uv_timer_start(&p->drain, local_drain_cb, local_drain_ms, 0);
}

static void
local_write_cb(uv_write_t *req, int status)
{
        struct local_proc *p = req->data;

        free(req);
        if (p->stdin_eof_pending && !uv_stream_get_write_queue_size((uv_stream_t *) &p->in.h)) {
                p->stdin_eof_pending = false;
                local_close_pipe(&p->in);
        }
        local_proc_unref(p);
}

static int
local_exec_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        struct local_proc *p = (struct local_proc *) bp;
        if (!p->in.open || p->stdin_eof_pending)
                return -EPIPE;
        if (len) {
                uv_write_t *req = xmalloc(sizeof(*req) + len);
                uv_buf_t b = uv_buf_init((char *) (req + 1), (unsigned) len);
                memcpy(req + 1, data, len);
                req->data = p;
                if (uv_write(req, (uv_stream_t *) &p->in.h, &b, 1, local_write_cb) < 0) {
                        free(req);
                        return -EPIPE;
                }
                p->refs++;
        }
        if (eof) {
                if (uv_stream_get_write_queue_size((uv_stream_t *) &p->in.h) || len)
                        p->stdin_eof_pending = true;
                else
                        local_close_pipe(&p->in);
        }
        return 0;
}

static void
local_drain_close_cb(uv_handle_t *h)
{
        local_proc_unref(h->data);
}

/* Starts an exec on the host (backend_ops.exec_start of a host sandbox). */
int
local_exec_start(struct backend_sandbox *b, const struct exec_spec *spec,
                 const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                 struct sbx_error *err)
{
        struct spawn_opts o = {0};
        struct spawn_result res;
        struct local_proc *p;
        int r;

        o.path = spec->path;
        o.argv = spec->argv;
        o.envp = spec->envp;
        o.cwd = spec->cwd ? spec->cwd : b->workdir;
        o.who = geteuid() == 0 ? spec->who : NULL;
        o.pty = spec->pty;
        o.rows = spec->pty_rows;
        o.cols = spec->pty_cols;
        o.stdin_pipe = spec->stdin_open || spec->stdin_len;
        o.merge_stderr = spec->merge_stderr;
        o.limits = b->use_limits ? &b->limits : NULL;
        o.cgroup_procs = b->cg ? cgroup_procs_files(b->cg) : NULL;
        o.keep_fd = -1;
        r = spawn_start(&o, &res, err);
        if (r < 0)
                return r;
        p = xcalloc(1, sizeof(*p));
        p->base.ops = &local_proc_ops;
        p->refs = 1; /* the daemon's, dropped by exec_release */
        p->pid = res.pid;
        p->bsb = b;
        p->cbs = cbs;
        p->ctx = ctx;
        p->owner = spec->who->uid;
        p->pty_fd = spec->pty ? res.stdout_fd : -1;
        p->oom_before = b->cg ? cgroup_oom_kills(b->cg) : 0;
        p->state_path = spec->state_path ? xstrdup(spec->state_path) : NULL;
        list_init(&p->kills);
        uv_timer_init(local_loop, &p->drain);
        p->drain.data = p;
        p->refs++;
        list_add_tail(&local_procs, &p->node);
        local_open_pipe(p, &p->out[0], res.stdout_fd, 0);
        if (res.stderr_fd >= 0)
                local_open_pipe(p, &p->out[1], res.stderr_fd, 1);
        if (res.stdin_fd >= 0) {
                local_open_pipe(p, &p->in, res.stdin_fd, -1);
                if (spec->stdin_len || !spec->stdin_open)
                        local_exec_write(&p->base, spec->stdin_data, spec->stdin_len,
                                         !spec->stdin_open);
        }
        *ret = &p->base;
        /* The child may already be gone; SIGCHLD will tell. */
        return 0;
}

static int
local_exec_signal(struct backend_proc *bp, int sig)
{
        struct local_proc *p = (struct local_proc *) bp;
        if (kill(-p->pid, sig) < 0 && errno != ESRCH)
                return -errno;
        return 0;
}

/* How many processes of the group are left (scanning /proc when the group still answers). */
static int
local_group_alive(pid_t pgid)
{
        DIR *d;
        struct dirent *e;
        int n = 0;

        if (kill(-pgid, 0) < 0)
                return 0;
        d = opendir("/proc");
        if (!d)
                return 1;
        while ((e = readdir(d))) {
                char path[300], buf[512], *rp;
                int fd, pg = 0;
                ssize_t len;
                if (e->d_name[0] < '0' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                len = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (len <= 0)
                        continue;
                buf[len] = '\0';
                rp = strrchr(buf, ')');
                /* ") S ppid pgrp": a zombie waiting for its reaper no longer counts. */
                if (rp && sscanf(rp + 2, "%*c %*d %d", &pg) == 1 && pg == pgid && rp[2] != 'Z')
                        n++;
        }
        closedir(d);
        return n;
}

static void
local_kill_close_cb(uv_handle_t *h)
{
        struct local_kill *k = h->data;

        local_proc_unref(k->p);
        free(k);
}

static void
local_kill_tick_cb(uv_timer_t *t)
{
        struct local_kill *k = t->data;
        int alive = local_group_alive(k->p->pid);

        if (alive && util_now_ms() >= k->deadline_ms && !k->killed) {
                kill(-k->p->pid, SIGKILL);
                k->killed = true;
                k->deadline_ms = util_now_ms() + 2000;
                return;
        }
        if (alive && util_now_ms() < k->deadline_ms)
                return;
        uv_timer_stop(t);
        list_del(&k->node);
        k->cb(k->ctx, alive, NULL);
        uv_close((uv_handle_t *) t, local_kill_close_cb);
}

static void
local_exec_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct local_proc *p = (struct local_proc *) bp;
        struct local_kill *k = xcalloc(1, sizeof(*k));

        k->p = p;
        p->refs++;
        k->ctx = ctx;
        k->cb = cb;
        k->deadline_ms = util_now_ms() + grace_ms;
        list_add_tail(&p->kills, &k->node);
        kill(-p->pid, SIGTERM);
        /* A stopped process would never see TERM. */
        kill(-p->pid, SIGCONT);
        if (grace_ms == 0) {
                kill(-p->pid, SIGKILL);
                k->killed = true;
                k->deadline_ms = util_now_ms() + 2000;
        }
        uv_timer_init(local_loop, &k->timer);
        k->timer.data = k;
        uv_timer_start(&k->timer, local_kill_tick_cb, LOCAL_KILL_POLL_MS, LOCAL_KILL_POLL_MS);
}

static void
local_exec_pause(struct backend_proc *bp)
{
        struct local_proc *p = (struct local_proc *) bp;
        for (int i = 0; i < 2; i++)
                if (p->out[i].open)
                        uv_read_stop((uv_stream_t *) &p->out[i].h);
}

static void
local_exec_resume(struct backend_proc *bp)
{
        struct local_proc *p = (struct local_proc *) bp;
        for (int i = 0; i < 2; i++)
                if (p->out[i].open)
                        uv_read_start((uv_stream_t *) &p->out[i].h, local_alloc_cb, local_read_cb);
}

static int
local_exec_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        struct local_proc *p = (struct local_proc *) bp;
        struct winsize ws = {.ws_row = rows, .ws_col = cols};

        if (p->pty_fd < 0 || !p->out[0].open)
                return -ENOTTY;
        return ioctl(p->pty_fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

static void
local_exec_release(struct backend_proc *bp)
{
        struct local_proc *p = (struct local_proc *) bp;
        if (!p->finished)
                list_del(&p->node);
        uv_close((uv_handle_t *) &p->drain, local_drain_close_cb);
        local_proc_unref(p);
}

static const struct backend_proc_ops local_proc_ops = {
        .write = local_exec_write,
        .signal = local_exec_signal,
        .kill = local_exec_kill,
        .pause = local_exec_pause,
        .resume = local_exec_resume,
        .resize = local_exec_resize,
        .release = local_exec_release,
};
