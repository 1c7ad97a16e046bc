/* caller_file.c — a small file read, a Unix socket connected, or a path resolved, by a helper
 * that has become the caller (caller_file.h). */
#include "backends/caller_file.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/spawn.h"
#include "protocol/list.h"
#include "protocol/util.h"

enum cf_kind { CF_READ, CF_CONNECT, CF_RESOLVE };

/* How each kind is told in errors: "cannot %s '%s'", "%s '%s' … took longer", and the likely
 * cause of a helper that never answers. */
static const struct {
        const char *verb, *doing, *stuck;
} cf_words[] = {
        [CF_READ] = {"read", "reading", "a dead network filesystem?"},
        [CF_CONNECT] = {"connect to", "connecting to", "a server that accepts no connection?"},
        [CF_RESOLVE] = {"resolve", "resolving", "a hung network or FUSE filesystem?"},
};

/* What the helper says (one SOCK_SEQPACKET message): the data (a read file, a resolved path)
 * is in the memfd, or the connected socket rides along (SCM_RIGHTS). */
struct cf_reply {
        int32_t err;     /* 0 or errno */
        uint32_t notreg; /* the path is not a regular file (CF_RESOLVE: not a directory) */
        uint64_t len;
};

/* The helper's copy of the request (taken at fork). */
struct cf_args {
        const char *path;
        size_t max;
        int ctl, memfd;
        enum cf_kind kind;
        bool nearest; /* a resolve: a missing tail is kept as written */
};

struct caller_job {
        uv_poll_t poll;
        uv_timer_t timer;
        int handles; /* open libuv handles; the job goes with the last */
        int ctl, memfd;
        pid_t pid;
        bool poll_init, done, reported, cancelled;
        bool killed; /* caller_job_abort's SIGKILL is sent: never again (the pid may be reaped) */
        unsigned timeout_ms;
        char *path;
        size_t max;
        unsigned uid;
        void *ctx;
        caller_file_cb cb;
        caller_socket_cb scb;  /* a connect: its callback (cb is NULL) */
        unsigned peer_uid;     /* a connect: whom the socket's server must run as */
        int got;               /* a connect: the socket received, or -1 */
        caller_path_cb pcb;    /* a resolve: its callback (cb is NULL) */
        bool is_dir, answered; /* a resolve: what the helper said, and that it did */
        enum cf_kind kind;
        bool nearest; /* a resolve of the nearest existing parent (caller_path_resolve_nearest) */
        bool refused; /* its uid had max_helpers (refused_max) alive: no helper started */
        unsigned refused_max;
        char *error;
        int missing;
};

/* A helper started and not known to have exited: what max_helpers_per_uid counts. A killed or
 * abandoned job's helper stays here while its process lives (one stuck in a hung FUSE or
 * network mount outlives its SIGKILL until the mount answers or aborts). */
struct cf_alive {
        struct list node;
        uid_t uid; /* whose request started it (who->uid, or the daemon's uid for NULL) */
        pid_t pid;
        int pidfd; /* -1: pidfd_open failed (ENOSYS before Linux 5.3, EMFILE): waitid asks */
};

static struct list cf_helpers = {&cf_helpers, &cf_helpers};
static unsigned cf_max_helpers = 128;

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

/* Sends the reply, with fd (when >= 0) attached. */
static void
cf_reply_send(const struct cf_args *a, const struct cf_reply *r, int fd)
{
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } u;
        struct iovec iov = {(void *) r, sizeof(*r)};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        struct cmsghdr *c;

        if (fd >= 0) {
                memset(&u, 0, sizeof(u));
                m.msg_control = u.b;
                m.msg_controllen = sizeof(u.b);
                c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        (void) !sendmsg(a->ctl, &m, MSG_NOSIGNAL);
}

/* The helper's connect: the socket, or -1 with r->err. */
static int
cf_connect(const struct cf_args *a, struct cf_reply *r)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t n = strlen(a->path);
        int fd;

        if (n >= sizeof(sa.sun_path)) {
                r->err = ENAMETOOLONG;
                return -1;
        }
        memcpy(sa.sun_path, a->path, n);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
                return fd;
        r->err = errno;
        if (fd >= 0)
                close(fd);
        return -1;
}

/* Opens path (O_PATH) as the helper may; with a->nearest, a missing tail is cut off first, and
 * *cut is where it starts in path (its length when nothing is missing). */
static int
cf_open_nearest(const struct cf_args *a, char *buf, size_t *cut)
{
        size_t n = strlen(a->path);
        int fd;

        *cut = n;
        if (n >= PATH_MAX) {
                errno = ENAMETOOLONG;
                return -1;
        }
        memcpy(buf, a->path, n + 1);
        while ((fd = open(buf, O_PATH | O_CLOEXEC)) < 0 && errno == ENOENT && a->nearest &&
               *cut > 0) {
                *cut = (size_t) (strrchr(buf, '/') - buf);
                buf[*cut ? *cut : 1] = '\0';
        }
        return fd;
}

/* The helper's resolve: where path leads (from the descriptor the kernel opened, so as far
 * as the caller could follow it), into the memfd, and whether it is a directory; with
 * a->nearest, the missing tail follows as written. */
static void
cf_resolve(const struct cf_args *a, struct cf_reply *r)
{
        char link[32] = "/proc/self/fd/", real[PATH_MAX], buf[PATH_MAX];
        struct stat st;
        ssize_t n;
        size_t cut, tail;
        int at = 14, fd = cf_open_nearest(a, buf, &cut);

        if (fd < 0) {
                r->err = errno;
                return;
        }
        /* No snprintf in a fork: the descriptor's number by hand. */
        for (int d = 1000000; d > 0; d /= 10)
                if (fd >= d || d == 1 || at > 14)
                        link[at++] = (char) ('0' + fd / d % 10);
        link[at] = '\0';
        n = readlink(link, real, sizeof(real));
        /* "/" and "/x" make "/x", not "//x". */
        if (n == 1 && cut < strlen(a->path))
                n = 0;
        tail = strlen(a->path) - cut;
        if (fstat(fd, &st) < 0 || n < 0)
                r->err = errno ? errno : EIO;
        else if ((size_t) n + tail >= sizeof(real))
                r->err = ENAMETOOLONG;
        else if (pwrite(a->memfd, real, (size_t) n, 0) != n ||
                 pwrite(a->memfd, a->path + cut, tail, n) != (ssize_t) tail)
                r->err = errno ? errno : EIO;
        else
                r->len = (uint64_t) n + tail;
        if (!r->err)
                r->notreg = tail || !S_ISDIR(st.st_mode);
        close(fd);
}

static int
cf_helper(void *arg)
{
        const struct cf_args *a = arg;
        struct cf_reply r = {0};
        struct stat st;
        int fd;

        if (a->kind == CF_CONNECT) {
                cf_reply_send(a, &r, cf_connect(a, &r));
                return 0;
        }
        if (a->kind == CF_RESOLVE) {
                cf_resolve(a, &r);
                cf_reply_send(a, &r, -1);
                return 0;
        }
        fd = open(a->path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
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
        struct caller_job *j = h->data;

        if (--j->handles > 0)
                return;
        if (j->got >= 0)
                close(j->got);
        free(j->path);
        free(j->error);
        free(j);
}

/* Tells the outcome to the job's callback. */
static void
cf_tell(struct caller_job *j, const char *data, size_t len)
{
        if (j->scb) {
                j->scb(j->ctx, j->got, j->got >= 0 ? NULL : j->error);
                j->got = -1; /* the callee's now */
        } else if (j->pcb) {
                j->pcb(j->ctx, data, j->is_dir, j->answered ? NULL : j->error);
        } else {
                j->cb(j->ctx, data, len, data ? NULL : j->error, j->missing);
        }
}

/* Delivers the outcome once (unless cancelled: nobody to tell) and lets the job go. */
static void
cf_finish(struct caller_job *j, const char *data, size_t len)
{
        int status;

        if (j->done)
                return;
        j->done = true;
        if (!j->cancelled)
                cf_tell(j, data, len);
        /* Reaped here when it has exited already, else by the daemon's SIGCHLD reaper. */
        if (j->pid > 0 && !j->reported && !j->killed)
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
cf_fail(struct caller_job *j, int e, const char *what)
{
        free(j->error);
        j->missing = e == ENOENT;
        j->error = e == EFBIG ? xasprintf("'%s' is larger than %zu bytes", j->path, j->max)
                              : xasprintf("cannot %s '%s' as uid %u: %s", cf_words[j->kind].verb,
                                          j->path, j->uid, what ? what : strerror(e));
}

static void
cf_deliver(struct caller_job *j, const struct cf_reply *r)
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

/* A resolve's outcome: where the path leads, or NULL when the caller cannot reach it. */
static void
cf_deliver_path(struct caller_job *j, const struct cf_reply *r)
{
        char real[PATH_MAX];
        bool got = !r->err && r->len < sizeof(real) &&
                   pread(j->memfd, real, r->len, 0) == (ssize_t) r->len;

        j->answered = true;
        j->is_dir = got && !r->notreg;
        if (got)
                real[r->len] = '\0';
        cf_finish(j, got ? real : NULL, got ? r->len : 0);
}

/* Whether the process serving the socket fd runs as uid: NULL, or why not (new). */
static char *
cf_peer_check(int fd, const char *path, unsigned uid)
{
        struct ucred cr;
        socklen_t len = sizeof(cr);
        int type = 0;
        socklen_t tl = sizeof(type);

        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
                return xasprintf("'%s' is not a Unix stream socket whose server sandboxd can "
                                 "identify",
                                 path);
        if (cr.uid != uid)
                return xasprintf("'%s' is served by uid %u (pid %d), not by uid %u: only a "
                                 "socket whose server runs as you is used (start your own "
                                 "ssh-agent and name its socket)",
                                 path, (unsigned) cr.uid, (int) cr.pid, uid);
        return NULL;
}

/* A connect's outcome: the socket, once its server is known to be the caller's. */
static void
cf_deliver_sock(struct caller_job *j, const struct cf_reply *r, int fd)
{
        char *why = NULL;

        if (r->err || fd < 0) {
                cf_fail(j, r->err ? r->err : EIO, r->err ? NULL : "the helper sent no socket");
        } else if ((why = cf_peer_check(fd, j->path, j->peer_uid))) {
                free(j->error);
                j->error = why;
        } else {
                j->got = fd;
                fd = -1;
        }
        if (fd >= 0)
                close(fd);
        cf_finish(j, NULL, 0);
}

/* The helper's reply, and the descriptor that came with it (or -1). */
static ssize_t
cf_recv(struct caller_job *j, struct cf_reply *r, int *fd)
{
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(sizeof(int))];
        } u;
        struct iovec iov = {r, sizeof(*r)};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = u.b,
                           .msg_controllen = sizeof(u.b)};
        ssize_t n = recvmsg(j->ctl, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        struct cmsghdr *c;

        *fd = -1;
        for (c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(fd, CMSG_DATA(c), sizeof(int));
        return n;
}

static void
cf_poll_cb(uv_poll_t *p, int status, int events)
{
        struct caller_job *j = p->data;
        struct cf_reply r;
        int fd;
        ssize_t n = cf_recv(j, &r, &fd);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (fd >= 0 && (!j->scb || n != (ssize_t) sizeof(r))) {
                close(fd);
                fd = -1;
        }
        j->reported = true;
        if (n != (ssize_t) sizeof(r)) {
                cf_fail(j, EIO, "the helper reading it died");
                cf_finish(j, NULL, 0);
                return;
        }
        if (j->kind == CF_CONNECT)
                cf_deliver_sock(j, &r, fd);
        else if (j->kind == CF_RESOLVE)
                cf_deliver_path(j, &r);
        else
                cf_deliver(j, &r);
}

static void
cf_timer_cb(uv_timer_t *t)
{
        struct caller_job *j = t->data;

        if (!j->error)
                j->error = xasprintf("%s '%s' as uid %u took longer than %u ms (%s)",
                                     cf_words[j->kind].doing, j->path, j->uid, j->timeout_ms,
                                     cf_words[j->kind].stuck);
        cf_finish(j, NULL, 0);
}

/* ---- the helpers alive, per uid ---- */

/* Whether h's process has exited (a zombie, or reaped already). */
static bool
cf_alive_exited(const struct cf_alive *h)
{
        struct pollfd p = {.fd = h->pidfd, .events = POLLIN};
        siginfo_t si = {0};

        if (h->pidfd >= 0) /* readable once the process has exited, reaped or not */
                return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
        /* No pidfd: ours until reaped (ECHILD: it was); a reused pid of another child of ours
         * counts as alive, never the other way round. */
        if (waitid(P_PID, (id_t) h->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
                return errno == ECHILD;
        return si.si_pid == h->pid;
}

static void
cf_alive_forget(struct cf_alive *h)
{
        list_del(&h->node);
        if (h->pidfd >= 0)
                close(h->pidfd);
        free(h);
}

/* Forgets uid's helpers that have exited; the number still alive. */
static unsigned
cf_alive_count(uid_t uid)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &cf_helpers)
        {
                struct cf_alive *h = LIST_ENTRY(pos, struct cf_alive, node);
                if (h->uid == uid && cf_alive_exited(h))
                        cf_alive_forget(h);
        }
        return LIST_COUNT_UID(&cf_helpers, struct cf_alive, node, uid, uid);
}

/* Counts the helper pid (just forked, not reaped: the loop thread reaps) as uid's. */
static void
cf_alive_add(uid_t uid, pid_t pid)
{
        struct cf_alive *h = xcalloc(1, sizeof(*h));
#ifdef SYS_pidfd_open
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
#else
        int fd = -1;
        errno = ENOSYS;
#endif

        if (fd < 0 && errno == ESRCH) { /* gone already */
                free(h);
                return;
        }
        *h = (struct cf_alive){.uid = uid, .pid = pid, .pidfd = fd};
        list_add_tail(&cf_helpers, &h->node);
}

/* Whether who's uid may start one more helper: 0, or -EAGAIN with j->error set. */
static int
cf_admit(struct caller_job *j, uid_t uid)
{
        unsigned alive = cf_alive_count(uid);

        if (alive < cf_max_helpers)
                return 0;
        j->refused = true;
        j->refused_max = cf_max_helpers;
        free(j->error);
        j->error =
                xasprintf("cannot %s '%s': limit reached: uid %u has %u helpers stuck in the "
                          "filesystem (a hung mount?): unmount it or wait for it to answer; "
                          "at most %u at a time ([limits] max_helpers_per_uid)",
                          cf_words[j->kind].verb, j->path, (unsigned) uid, alive, cf_max_helpers);
        return -EAGAIN;
}

/* Forks the helper; 0, or negative errno with j->error set. */
static int
cf_start(uv_loop_t *loop, struct caller_job *j, const struct backend_identity *who)
{
        int sv[2] = {-1, -1}, keep[2], r;
        struct cf_args a = {j->path, j->max, -1, -1, j->kind, j->nearest};
        uid_t owner = who ? who->uid : geteuid();

        if (j->path[0] != '/') {
                cf_fail(j, EINVAL, "the path must be absolute");
                return -EINVAL;
        }
        if (cf_admit(j, owner) < 0)
                return -EAGAIN;
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
        cf_alive_add(owner, j->pid);
        uv_poll_init(loop, &j->poll, j->ctl);
        j->poll.data = j;
        j->poll_init = true;
        j->handles++;
        uv_poll_start(&j->poll, UV_READABLE, cf_poll_cb);
        return 0;
}

static struct caller_job *
cf_job_new(const struct backend_identity *who, const char *path, unsigned timeout_ms, void *ctx)
{
        struct caller_job *j = xcalloc(1, sizeof(*j));

        j->ctl = j->memfd = j->got = -1;
        j->path = xstrdup(path ? path : "");
        j->timeout_ms = timeout_ms;
        j->uid = geteuid() == 0 && who ? (unsigned) who->uid : (unsigned) geteuid();
        j->peer_uid = who ? (unsigned) who->uid : (unsigned) geteuid();
        j->ctx = ctx;
        return j;
}

static void
cf_job_start(uv_loop_t *loop, struct caller_job *j, const struct backend_identity *who)
{
        uv_timer_init(loop, &j->timer);
        j->timer.data = j;
        j->handles = 1;
        /* A failure to start is told from the loop too: cb never runs before we return. */
        uv_timer_start(&j->timer, cf_timer_cb, cf_start(loop, j, who) < 0 ? 0 : j->timeout_ms, 0);
}

/* Reads a file as who. */
void
caller_file_read(uv_loop_t *loop, const struct backend_identity *who, const char *path, size_t max,
                 unsigned timeout_ms, void *ctx, caller_file_cb cb)
{
        struct caller_job *j = cf_job_new(who, path, timeout_ms, ctx);

        j->max = max;
        j->cb = cb;
        cf_job_start(loop, j, who);
}

/* Connects to a socket as who. */
void
caller_socket_connect(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                      unsigned timeout_ms, void *ctx, caller_socket_cb cb)
{
        struct caller_job *j = cf_job_new(who, path, timeout_ms, ctx);

        j->scb = cb;
        j->kind = CF_CONNECT;
        cf_job_start(loop, j, who);
}

static struct caller_job *
cf_resolve_start(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                 unsigned timeout_ms, void *ctx, caller_path_cb cb, bool nearest)
{
        struct caller_job *j = cf_job_new(who, path, timeout_ms, ctx);

        j->pcb = cb;
        j->kind = CF_RESOLVE;
        j->nearest = nearest;
        cf_job_start(loop, j, who);
        return j;
}

/* Resolves a path as who. */
struct caller_job *
caller_path_resolve(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                    unsigned timeout_ms, void *ctx, caller_path_cb cb)
{
        return cf_resolve_start(loop, who, path, timeout_ms, ctx, cb, false);
}

/* Resolves the nearest existing parent of a path as who, the rest kept as written. */
struct caller_job *
caller_path_resolve_nearest(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                            unsigned timeout_ms, void *ctx, caller_path_cb cb)
{
        return cf_resolve_start(loop, who, path, timeout_ms, ctx, cb, true);
}

/* Ends a job now: its helper is killed, its callback follows from the loop with why. */
void
caller_job_abort(struct caller_job *j, const char *why)
{
        if (j->done || j->killed)
                return;
        free(j->error);
        j->error = xstrdup(why);
        if (j->pid > 0 && !j->reported) {
                kill(j->pid, SIGKILL);
                j->killed = true;
        }
        /* Nothing the helper says any more (its death, a late answer) replaces why. */
        if (j->poll_init)
                uv_poll_stop(&j->poll);
        uv_timer_start(&j->timer, cf_timer_cb, 0, 0);
}

/* Abandons a job whose callback has not come: its helper is killed, no callback follows. */
void
caller_job_cancel(struct caller_job *j)
{
        j->cancelled = true;
        cf_finish(j, NULL, 0);
}

/* Whether j was refused for its uid's helpers alive. */
bool
caller_job_refused(const struct caller_job *j, unsigned *max)
{
        if (j->refused && max)
                *max = j->refused_max;
        return j->refused;
}

/* Sets the bound on one uid's helpers alive. */
void
caller_file_set_limits(unsigned max_helpers_per_uid)
{
        cf_max_helpers = max_helpers_per_uid;
}

/* Forgets every helper still counted (their processes are not waited for). */
void
caller_file_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &cf_helpers)
        {
                cf_alive_forget(LIST_ENTRY(pos, struct cf_alive, node));
        }
}
