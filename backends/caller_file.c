/* caller_file.c — a small file read by a helper that has become the caller (caller_file.h). */
#include "backends/caller_file.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/spawn.h"
#include "protocol/util.h"

/* What the helper says (one SOCK_SEQPACKET message): the data is in the memfd. */
struct cf_reply {
        int32_t err;     /* 0 or errno */
        uint32_t notreg; /* the path is not a regular file */
        uint64_t len;
};

/* The helper's copy of the request (taken at fork). */
struct cf_args {
        const char *path;
        size_t max;
        int ctl, memfd;
};

struct cf_job {
        uv_poll_t poll;
        uv_timer_t timer;
        int handles; /* open libuv handles; the job goes with the last */
        int ctl, memfd;
        pid_t pid;
        bool poll_init, done, reported;
        unsigned timeout_ms;
        char *path;
        size_t max;
        unsigned uid;
        void *ctx;
        caller_file_cb cb;
        char *error;
        int missing;
};

/* ---- the helper (a fork of the daemon: async-signal-safe calls only) ---- */

static int
cf_copy(int fd, const struct cf_args *a, struct cf_reply *r)
{
        char b[16384];
        ssize_t n;

        while ((n = read(fd, b, sizeof(b))) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                if (r->len + (uint64_t) n > a->max)
                        return EFBIG;
                if (pwrite(a->memfd, b, (size_t) n, (off_t) r->len) != n)
                        return errno ? errno : EIO;
                r->len += (uint64_t) n;
        }
        return 0;
}

static int
cf_helper(void *arg)
{
        const struct cf_args *a = arg;
        struct cf_reply r = {0};
        struct stat st;
        /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
        int fd = open(a->path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

        if (fd < 0)
                r.err = errno;
        else if (fstat(fd, &st) < 0)
                r.err = errno;
        else if (!S_ISREG(st.st_mode))
                r.notreg = 1;
        else if ((uint64_t) st.st_size > a->max)
                r.err = EFBIG;
        else
                r.err = cf_copy(fd, a, &r);
        (void) !send(a->ctl, &r, sizeof(r), MSG_NOSIGNAL);
        return 0;
}

/* ---- the daemon's side ---- */

static void
cf_handle_close_cb(uv_handle_t *h)
{
        struct cf_job *j = h->data;

        if (--j->handles > 0)
                return;
        free(j->path);
        free(j->error);
        free(j);
}

/* Delivers the outcome once and lets the job go. */
static void
cf_finish(struct cf_job *j, const char *data, size_t len)
{
        int status;

        if (j->done)
                return;
        j->done = true;
        j->cb(j->ctx, data, len, data ? NULL : j->error, j->missing);
        /* Reaped here when it has exited already, else by the daemon's SIGCHLD reaper. */
        if (j->pid > 0 && !j->reported)
                kill(j->pid, SIGKILL); /* stuck on a slow filesystem */
        if (j->pid > 0)
                waitpid(j->pid, &status, WNOHANG);
        if (j->ctl >= 0)
                close(j->ctl);
        if (j->memfd >= 0)
                close(j->memfd);
        if (j->poll_init)
                uv_close((uv_handle_t *) &j->poll, cf_handle_close_cb);
        uv_close((uv_handle_t *) &j->timer, cf_handle_close_cb);
}

static void
cf_fail(struct cf_job *j, int e, const char *what)
{
        free(j->error);
        j->missing = e == ENOENT;
        j->error = e == EFBIG ? xasprintf("'%s' is larger than %zu bytes", j->path, j->max)
                              : xasprintf("cannot read '%s' as uid %u: %s", j->path, j->uid,
                                          what ? what : strerror(e));
}

static void
cf_deliver(struct cf_job *j, const struct cf_reply *r)
{
        char *data;

        if (r->notreg)
                cf_fail(j, EINVAL, "not a regular file");
        else if (r->err)
                cf_fail(j, r->err, NULL);
        if (r->notreg || r->err) {
                cf_finish(j, NULL, 0);
                return;
        }
        data = xmalloc(r->len + 1);
        if (pread(j->memfd, data, r->len, 0) != (ssize_t) r->len) {
                cf_fail(j, EIO, NULL);
                cf_finish(j, NULL, 0);
        } else {
                data[r->len] = '\0';
                cf_finish(j, data, r->len);
                explicit_bzero(data, r->len); /* it may be a private key */
        }
        free(data);
}

static void
cf_poll_cb(uv_poll_t *p, int status, int events)
{
        struct cf_job *j = p->data;
        struct cf_reply r;
        ssize_t n = recv(j->ctl, &r, sizeof(r), MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        j->reported = true;
        if (n != (ssize_t) sizeof(r)) {
                cf_fail(j, EIO, "the helper reading it died");
                cf_finish(j, NULL, 0);
                return;
        }
        cf_deliver(j, &r);
}

static void
cf_timer_cb(uv_timer_t *t)
{
        struct cf_job *j = t->data;

        if (!j->error)
                j->error = xasprintf("reading '%s' as uid %u took longer than %u ms (a dead "
                                     "network filesystem?)",
                                     j->path, j->uid, j->timeout_ms);
        cf_finish(j, NULL, 0);
}

/* Forks the helper; 0, or negative errno with j->error set. */
static int
cf_start(uv_loop_t *loop, struct cf_job *j, const struct backend_identity *who)
{
        int sv[2] = {-1, -1}, keep[2], r;
        struct cf_args a = {j->path, j->max, -1, -1};

        if (j->path[0] != '/') {
                cf_fail(j, EINVAL, "the path must be absolute");
                return -EINVAL;
        }
        j->memfd = memfd_create("sandboxd-caller-file", MFD_CLOEXEC);
        if (j->memfd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                cf_fail(j, errno, NULL);
                return -EIO;
        }
        a.ctl = keep[0] = sv[1];
        a.memfd = keep[1] = j->memfd;
        /* A daemon that is not root reads as itself: never more than the caller may. */
        r = spawn_fork_as(geteuid() == 0 ? who : NULL, cf_helper, &a, keep, 2, &j->pid);
        close(sv[1]);
        j->ctl = sv[0];
        if (r < 0) {
                cf_fail(j, -r, "cannot start a helper as that uid");
                return r;
        }
        uv_poll_init(loop, &j->poll, j->ctl);
        j->poll.data = j;
        j->poll_init = true;
        j->handles++;
        uv_poll_start(&j->poll, UV_READABLE, cf_poll_cb);
        return 0;
}

/* Reads a file as who. */
void
caller_file_read(uv_loop_t *loop, const struct backend_identity *who, const char *path, size_t max,
                 unsigned timeout_ms, void *ctx, caller_file_cb cb)
{
        struct cf_job *j = xcalloc(1, sizeof(*j));

        j->ctl = j->memfd = -1;
        j->path = xstrdup(path ? path : "");
        j->max = max;
        j->timeout_ms = timeout_ms;
        j->uid = geteuid() == 0 && who ? (unsigned) who->uid : (unsigned) geteuid();
        j->ctx = ctx;
        j->cb = cb;
        uv_timer_init(loop, &j->timer);
        j->timer.data = j;
        j->handles = 1;
        /* A failure to start is told from the loop too: cb never runs before we return. */
        uv_timer_start(&j->timer, cf_timer_cb, cf_start(loop, j, who) < 0 ? 0 : timeout_ms, 0);
}
