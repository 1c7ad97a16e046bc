/* local_file.c — file.read / file.write on the local backend: done by a helper process running
 * as the caller (never with the daemon's rights) and never waited for on the loop.
 *
 * The helper (a fork of the daemon, spawn_fork_as) first resolves the path with O_PATH opens,
 * as the caller: symlinks followed and ".." resolved by the kernel, nothing opened for reading
 * or writing, so a FIFO, a device or a lease cannot block it. It reports what it found — the
 * real path (readlink of /proc/self/fd/N), its type, link count and filesystem — and waits.
 * The daemon refuses what is not a regular file on an ordinary filesystem, has it judged
 * (backend_judge_fn: policy, maybe an approval) and only then lets the helper go on; the helper
 * then reopens the very inode it reported (/proc/self/fd/N), or creates the file with
 * O_CREAT|O_EXCL|O_NOFOLLOW in the very directory it reported, so what was judged is what is
 * written or read, whatever is renamed or relinked meanwhile. Each phase (resolving, doing the
 * I/O) is bounded by the timeout: a helper stuck on a slow filesystem is killed and the op
 * fails; the time an approval takes is not counted.
 */
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/local_int.h"
#include "backends/local/nsbox.h"
#include "backends/spawn.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define LF_FILE_MAX  (64u << 20) /* bytes one read returns */
#define LF_MAX_COMPS 1024        /* components of one path */

/* What the helper found (one SOCK_SEQPACKET message, path NUL-terminated). */
struct lf_report {
        int32_t err;     /* 0, or the errno that ended resolving */
        uint32_t mode;   /* st_mode of the file, 0 when it does not exist yet */
        uint32_t nlink;  /* its hard links */
        uint32_t dangle; /* err is ENOENT because the last component is a dangling symlink */
        int64_t fstype;  /* statfs f_type of the file, or of its nearest existing directory */
        char path[PATH_MAX];
};

/* The helper's view of a resolved path (its own memory only). */
struct lf_walk {
        char buf[PATH_MAX];
        char *comp[LF_MAX_COMPS];
        size_t ncomp;
        size_t first_missing; /* index of the first directory to create; ncomp - 1 if none */
        int dir;              /* O_PATH fd of the deepest existing directory */
        int target;           /* O_PATH fd of the existing file, -1 when it is to be created */
};

enum lf_phase { LF_RESOLVE, LF_JUDGE, LF_RUN, LF_DONE };

struct lf_job {
        struct list node; /* in lf_jobs until the helper is reaped */
        int refs;         /* helper alive, poll handle, timer handle, a judge in progress */
        pid_t pid;
        int ctl, child_ctl; /* SOCK_SEQPACKET pair: our end (non-blocking), the helper's */
        int memfd;          /* reads: [u64 size][data] written by the helper */
        uv_poll_t poll;
        uv_timer_t timer;
        enum lf_phase phase;
        bool reaped;
        int status;
        bool have_report;
        struct lf_report rep;
        /* the request (the helper uses its copy of data, taken at fork) */
        bool write, append, mkdir;
        bool in_ns; /* an isolated sandbox: resolve in its namespaces */
        struct local_file_ns ns;
        int mode;
        char *path;
        const void *data;
        size_t len;
        uint64_t offset;
        size_t max;
        void *ctx;
        backend_judge_fn judge;
        backend_read_cb rcb;
        backend_done_cb wcb;
};

static uv_loop_t *lf_loop;
static uint64_t lf_timeout_ms = 60000;
static struct list lf_jobs = {&lf_jobs, &lf_jobs};

/* ---- the helper (async-signal-safe calls only: it is a fork of a threaded process) ---- */

/* The helper's /proc, opened before it enters an isolated sandbox's namespaces (whose procfs
 * does not show the helper): the magic links below go through it. */
static int lf_proc = -1;

/* "self/fd/N" (below lf_proc) into out (32 bytes). */
static void
lf_fd_path(int fd, char *out)
{
        nsinit_fd_path("self/fd/", fd, out);
}

/* The real path of an O_PATH fd into out (PATH_MAX); errno on failure. */
static int
lf_real_path(int fd, char *out)
{
        static const char deleted[] = " (deleted)";
        char link[32];
        ssize_t n;

        lf_fd_path(fd, link);
        n = readlinkat(lf_proc, link, out, PATH_MAX - 1);
        if (n < 0)
                return errno;
        if (n >= PATH_MAX - 1 || out[0] != '/')
                return ENAMETOOLONG;
        out[n] = '\0';
        /* Unlinked while we looked: it is not where the client said any more. */
        if ((size_t) n >= sizeof(deleted) - 1 && !strcmp(out + n - (sizeof(deleted) - 1), deleted))
                return ENOENT;
        return 0;
}

/* Appends "/" name to out (PATH_MAX); ENAMETOOLONG when it does not fit. */
static int
lf_append(char *out, const char *name)
{
        size_t l = strlen(out), n = strlen(name);

        if (l == 1)
                l = 0; /* "/" */
        if (l + 1 + n >= PATH_MAX)
                return ENAMETOOLONG;
        out[l] = '/';
        memcpy(out + l + 1, name, n + 1);
        return 0;
}

static bool
lf_dots(const char *c)
{
        return !strcmp(c, ".") || !strcmp(c, "..");
}

/* Splits path into w->comp; errno when it names no file. */
static int
lf_split(const char *path, struct lf_walk *w)
{
        size_t n = strlen(path);
        char *s;

        if (n >= sizeof(w->buf))
                return ENAMETOOLONG;
        if (n == 0 || path[n - 1] == '/')
                return EISDIR;
        memcpy(w->buf, path, n + 1);
        w->ncomp = 0;
        for (s = w->buf; *s;) {
                while (*s == '/')
                        *s++ = '\0';
                if (!*s)
                        break;
                if (w->ncomp == LF_MAX_COMPS)
                        return ENAMETOOLONG;
                w->comp[w->ncomp++] = s;
                while (*s && *s != '/')
                        s++;
        }
        if (w->ncomp == 0 || lf_dots(w->comp[w->ncomp - 1]))
                return EISDIR;
        return 0;
}

/* Moves w->dir down to its directory name (flags: extra open flags); errno on failure. */
static int
lf_enter(struct lf_walk *w, const char *name, int flags)
{
        int fd = openat(w->dir, name, O_PATH | O_DIRECTORY | O_CLOEXEC | flags);

        if (fd < 0)
                return errno;
        close(w->dir);
        w->dir = fd;
        return 0;
}

/* Walks the directories as the caller; with mkdir, notes where the missing ones start. */
static int
lf_walk_dirs(struct lf_walk *w, bool mkdir)
{
        w->first_missing = w->ncomp - 1;
        w->dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w->dir < 0)
                return errno;
        for (size_t i = 0; i + 1 < w->ncomp; i++) {
                int e = lf_enter(w, w->comp[i], 0);
                if (e == ENOENT && mkdir) {
                        w->first_missing = i;
                        /* What is created is judged lexically below the last real directory:
                         * ".." there would leave it. */
                        for (size_t k = i; k + 1 < w->ncomp; k++)
                                if (lf_dots(w->comp[k]))
                                        return ENOENT;
                        return 0;
                }
                if (e)
                        return e;
        }
        return 0;
}

/* Whether the caller may (access(2) mode) use what fd refers to: nobody is asked to approve
 * what the kernel would refuse anyway. The open after the verdict is checked again. */
static int
lf_may(int fd, int mode)
{
        char link[32];

        lf_fd_path(fd, link);
        return faccessat(lf_proc, link, mode, AT_EACCESS) < 0 ? errno : 0;
}

/* The target itself: exists (w->target) or is to be created in w->dir. */
static int
lf_resolve_target(struct lf_walk *w, bool write, struct lf_report *rep)
{
        const char *last = w->comp[w->ncomp - 1];
        struct stat st;
        struct statfs sf;
        int e;

        w->target = -1;
        if (w->first_missing == w->ncomp - 1) {
                w->target = openat(w->dir, last, O_PATH | O_CLOEXEC);
                if (w->target < 0 && (errno != ENOENT || !write))
                        return errno;
        }
        if (w->target >= 0) {
                if (fstat(w->target, &st) < 0 || fstatfs(w->target, &sf) < 0)
                        return errno;
                if ((e = lf_may(w->target, write ? W_OK : R_OK)) != 0)
                        return e;
                rep->mode = st.st_mode;
                rep->nlink = (uint32_t) st.st_nlink;
                rep->fstype = (int64_t) sf.f_type;
                return lf_real_path(w->target, rep->path);
        }
        if (w->first_missing == w->ncomp - 1 &&
            fstatat(w->dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                rep->dangle = 1;
                return ENOENT;
        }
        if (fstatfs(w->dir, &sf) < 0)
                return errno;
        if ((e = lf_may(w->dir, W_OK | X_OK)) != 0)
                return e;
        rep->fstype = (int64_t) sf.f_type;
        if ((e = lf_real_path(w->dir, rep->path)) != 0)
                return e;
        for (size_t k = w->first_missing; k < w->ncomp; k++)
                if ((e = lf_append(rep->path, w->comp[k])) != 0)
                        return e;
        return 0;
}

static int
lf_reopen(int target, int flags)
{
        char link[32];
        struct stat st;
        int fd;

        lf_fd_path(target, link);
        fd = openat(lf_proc, link, flags | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EINVAL;
        }
        return fd;
}

/* Creates the missing directories, each one really a directory of ours (O_NOFOLLOW). */
static int
lf_make_dirs(struct lf_walk *w)
{
        for (size_t k = w->first_missing; k + 1 < w->ncomp; k++) {
                int e;
                if (mkdirat(w->dir, w->comp[k], 0755) < 0 && errno != EEXIST)
                        return errno;
                if ((e = lf_enter(w, w->comp[k], O_NOFOLLOW)) != 0)
                        return e;
        }
        return 0;
}

/* A new file in the judged directory: O_EXCL|O_NOFOLLOW, so nothing that appeared there since
 * (a symlink planted after the check) is followed or overwritten. */
static int
lf_create(const struct lf_job *j, const struct lf_walk *w)
{
        int fd =
                openat(w->dir, w->comp[w->ncomp - 1],
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
                       j->mode >= 0 ? (mode_t) j->mode : 0644);

        return fd < 0 ? -errno : fd;
}

static int
lf_do_write(const struct lf_job *j, struct lf_walk *w)
{
        int fd, e;
        size_t done = 0;

        if ((e = lf_make_dirs(w)) != 0)
                return e;
        fd = w->target >= 0 ? lf_reopen(w->target, O_WRONLY | (j->append ? O_APPEND : 0))
                            : lf_create(j, w);
        if (fd < 0)
                return -fd;
        if ((w->target >= 0 && !j->append && ftruncate(fd, 0) < 0) ||
            (j->mode >= 0 && fchmod(fd, (mode_t) j->mode) < 0))
                return errno;
        while (done < j->len) {
                ssize_t n = write(fd, (const char *) j->data + done, j->len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                done += (size_t) n;
        }
        return close(fd) < 0 ? errno : 0;
}

static int
lf_put(int fd, const void *p, size_t n)
{
        return write(fd, p, n) == (ssize_t) n ? 0 : EIO;
}

static int
lf_do_read(const struct lf_job *j, struct lf_walk *w)
{
        char buf[65536];
        struct stat st;
        uint64_t size;
        size_t left = j->max;
        int fd = lf_reopen(w->target, O_RDONLY);

        if (fd < 0)
                return -fd;
        if (fstat(fd, &st) < 0)
                return errno;
        size = (uint64_t) st.st_size;
        if (lf_put(j->memfd, &size, sizeof(size)))
                return EIO;
        while (left) {
                ssize_t n = pread(fd, buf, left < sizeof(buf) ? left : sizeof(buf),
                                  (off_t) (j->offset + (j->max - left)));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno;
                if (n == 0)
                        break;
                if (lf_put(j->memfd, buf, (size_t) n))
                        return EIO;
                left -= (size_t) n;
        }
        return 0;
}

/* The helper's main: resolve, report, wait for the daemon's go, do the I/O. */
static int
lf_helper(void *arg)
{
        const struct lf_job *j = arg;
        struct lf_walk w;
        struct lf_report rep = {0};
        char go = 0;
        int e;

        lf_proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        e = lf_proc < 0 ? errno : 0;
        if (!e && j->in_ns)
                e = nsbox_enter(j->ns.userns, j->ns.mntns, &j->ns.who, j->ns.set_groups);
        if (!e)
                e = lf_split(j->path, &w);
        if (!e)
                e = lf_walk_dirs(&w, j->write && j->mkdir);
        if (!e)
                e = lf_resolve_target(&w, j->write, &rep);
        rep.err = e;
        if (send(j->child_ctl, &rep, offsetof(struct lf_report, path) + strlen(rep.path) + 1,
                 MSG_NOSIGNAL) < 0)
                return EIO;
        if (e)
                return e;
        while (recv(j->child_ctl, &go, 1, 0) < 0 && errno == EINTR)
                ;
        if (go != 'g')
                return ECANCELED;
        return j->write ? lf_do_write(j, &w) : lf_do_read(j, &w);
}

/* ---- the daemon's side ---- */

#ifndef CONFIGFS_MAGIC
#define CONFIGFS_MAGIC 0x62656570
#endif
#ifndef FUSECTL_SUPER_MAGIC
#define FUSECTL_SUPER_MAGIC 0x65735543
#endif

/* Kernel interfaces that look like files: a "regular file" there is a knob (/proc/sysrq-trigger,
 * /sys/…, cgroup.procs, binfmt_misc/register) or another process's memory (/proc/PID/mem). */
static const struct {
        int64_t magic;
        const char *name;
} lf_pseudo_fs[] = {
        {PROC_SUPER_MAGIC, "proc"},
        {SYSFS_MAGIC, "sysfs"},
        {DEBUGFS_MAGIC, "debugfs"},
        {TRACEFS_MAGIC, "tracefs"},
        {SECURITYFS_MAGIC, "securityfs"},
        {SELINUX_MAGIC, "selinuxfs"},
        {SMACK_MAGIC, "smackfs"},
        {CGROUP_SUPER_MAGIC, "cgroup"},
        {CGROUP2_SUPER_MAGIC, "cgroup2"},
        {RDTGROUP_SUPER_MAGIC, "resctrl"},
        {BPF_FS_MAGIC, "bpf"},
        {CONFIGFS_MAGIC, "configfs"},
        {EFIVARFS_MAGIC, "efivarfs"},
        {PSTOREFS_MAGIC, "pstore"},
        {BINFMTFS_MAGIC, "binfmt_misc"},
        {FUSECTL_SUPER_MAGIC, "fusectl"},
        {DEVPTS_SUPER_MAGIC, "devpts"},
        {NSFS_MAGIC, "nsfs"},
};

static const struct {
        mode_t fmt;
        const char *name;
} lf_types[] = {
        {S_IFIFO, "a FIFO"},         {S_IFSOCK, "a socket"},   {S_IFCHR, "a character device"},
        {S_IFBLK, "a block device"}, {S_IFDIR, "a directory"},
};

/* errno of the helper -> whether it is the client's to fix (-32602) and what to say. */
static const struct {
        int e;
        bool client;
        const char *why; /* NULL: strerror */
} lf_errnos[] = {
        {ENOENT, true, NULL},
        {ENOTDIR, true, NULL},
        {EISDIR, true, "is a directory"},
        {EACCES, true, NULL},
        {EPERM, true, NULL},
        {ELOOP, true, "too many levels of symbolic links"},
        {ENAMETOOLONG, true, NULL},
        {EROFS, true, NULL},
        {ETXTBSY, true, NULL},
        {EFBIG, true, NULL},
        {EWOULDBLOCK, true, "another process holds a lease on it; it was not opened"},
        {EEXIST, true,
         "it appeared while the request was being judged; nothing was written "
         "(try again)"},
};

static void
lf_unref(struct lf_job *j)
{
        if (--j->refs > 0)
                return;
        if (j->ctl >= 0)
                close(j->ctl);
        if (j->memfd >= 0)
                close(j->memfd);
        free(j->path);
        free(j);
}

static void
lf_close_cb(uv_handle_t *h)
{
        lf_unref(h->data);
}

static const char *
lf_op(const struct lf_job *j)
{
        return j->write ? "write" : "read";
}

static void
lf_errno_error(const struct lf_job *j, int e, struct sbx_error *err)
{
        for (size_t i = 0; i < ARRAY_SIZE(lf_errnos); i++) {
                if (lf_errnos[i].e != e)
                        continue;
                if (lf_errnos[i].client)
                        sbx_error_param(err, "path", "'%s': %s", j->path,
                                        lf_errnos[i].why ? lf_errnos[i].why : strerror(e));
                else
                        sbx_error_backend(err, "local", "%s '%s': %s", lf_op(j), j->path,
                                          lf_errnos[i].why ? lf_errnos[i].why : strerror(e));
                return;
        }
        sbx_error_backend(err, "local", "cannot %s '%s': %s", lf_op(j), j->path, strerror(e));
}

/* Why the reported file may not be touched at all (whatever the policy says), or 0. */
static int
lf_refusal(const struct lf_job *j, struct sbx_error *err)
{
        const struct lf_report *r = &j->rep;

        if (r->dangle) {
                sbx_error_param(err, "path",
                                "'%s' is a symbolic link to nothing: file.write does not create "
                                "what a link points to (write the target path itself)",
                                j->path);
                return -1;
        }
        if (r->err) {
                lf_errno_error(j, r->err, err);
                return -1;
        }
        for (size_t i = 0; r->mode && i < ARRAY_SIZE(lf_types); i++) {
                if ((r->mode & S_IFMT) != lf_types[i].fmt)
                        continue;
                sbx_error_param(err, "path",
                                "'%s' is %s: file.%s only handles regular files (nothing was "
                                "opened; use exec for FIFOs, devices and sockets)",
                                j->path, lf_types[i].name, lf_op(j));
                return -1;
        }
        for (size_t i = 0; i < ARRAY_SIZE(lf_pseudo_fs); i++) {
                if (r->fstype != lf_pseudo_fs[i].magic)
                        continue;
                sbx_error_param(err, "path",
                                "'%s' is on %s, a kernel interface rather than files: file.%s "
                                "refuses it (use exec)",
                                r->path, lf_pseudo_fs[i].name, lf_op(j));
                return -1;
        }
        return 0;
}

/* The result of a read, from the helper's memfd. */
static void
lf_deliver_read(struct lf_job *j)
{
        struct stat st;
        struct buf out = {0};
        struct sbx_error err = {0};
        uint64_t size = 0;

        if (fstat(j->memfd, &st) == 0 && st.st_size >= 8) {
                buf_reserve(&out, (size_t) st.st_size);
                if (pread(j->memfd, out.data, (size_t) st.st_size, 0) == st.st_size)
                        out.len = (size_t) st.st_size;
        }
        if (out.len < 8) {
                sbx_error_backend(&err, "local", "read '%s': the helper returned nothing", j->path);
                j->rcb(j->ctx, NULL, 0, 0, false, &err);
        } else {
                memcpy(&size, out.data, 8);
                j->rcb(j->ctx, out.data + 8, out.len - 8, size, j->offset + (out.len - 8) >= size,
                       NULL);
        }
        sbx_error_clear(&err);
        buf_free(&out);
}

/* Ends the op once: tells the daemon, kills the helper unless it is gone, closes the handles. */
static void
lf_deliver(struct lf_job *j, const struct sbx_error *err)
{
        if (j->phase == LF_DONE)
                return;
        j->phase = LF_DONE;
        if (!j->reaped)
                kill(j->pid, SIGKILL);
        if (j->write)
                j->wcb(j->ctx, err);
        else if (err)
                j->rcb(j->ctx, NULL, 0, 0, false, err);
        else
                lf_deliver_read(j);
        uv_close((uv_handle_t *) &j->poll, lf_close_cb);
        uv_close((uv_handle_t *) &j->timer, lf_close_cb);
}

static void
lf_fail(struct lf_job *j, int e)
{
        struct sbx_error err = {0};

        lf_errno_error(j, e, &err);
        lf_deliver(j, &err);
        sbx_error_clear(&err);
}

/* How the helper ended, as an error (or success). */
static void
lf_conclude(struct lf_job *j)
{
        struct sbx_error err = {0};

        if (WIFEXITED(j->status) && WEXITSTATUS(j->status) == 0 && j->phase == LF_RUN) {
                lf_deliver(j, NULL);
        } else if (WIFEXITED(j->status) && WEXITSTATUS(j->status)) {
                lf_fail(j, WEXITSTATUS(j->status));
        } else {
                sbx_error_backend(&err, "local", "%s '%s': the helper ended unexpectedly (%s)",
                                  lf_op(j), j->path,
                                  WIFSIGNALED(j->status) ? strsignal(WTERMSIG(j->status)) : "?");
                lf_deliver(j, &err);
        }
        sbx_error_clear(&err);
}

static void
lf_verdict_cb(void *op, const struct sbx_error *deny)
{
        struct lf_job *j = op;
        const char go = 'g';

        if (j->phase != LF_JUDGE) {
                lf_unref(j);
                return;
        }
        if (deny) {
                lf_deliver(j, deny);
        } else if (j->reaped) {
                lf_conclude(j);
        } else if (send(j->ctl, &go, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
                lf_fail(j, errno);
        } else {
                j->phase = LF_RUN;
                uv_timer_again(&j->timer); /* a fresh timeout for the I/O */
        }
        lf_unref(j);
}

/* Takes the helper's report if it is there, and acts on it. */
static void
lf_take_report(struct lf_job *j)
{
        struct backend_file_target t;
        struct sbx_error err = {0};
        ssize_t n;

        if (j->have_report || j->phase != LF_RESOLVE)
                return;
        n = recv(j->ctl, &j->rep, sizeof(j->rep), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        uv_poll_stop(&j->poll);
        if (n < (ssize_t) offsetof(struct lf_report, path) + 1)
                return; /* EOF: the helper died; lf_conclude says how once it is reaped */
        j->have_report = true;
        j->rep.path[sizeof(j->rep.path) - 1] = '\0';
        if (lf_refusal(j, &err) < 0) {
                lf_deliver(j, &err);
                sbx_error_clear(&err);
                return;
        }
        j->phase = LF_JUDGE;
        uv_timer_stop(&j->timer);
        t = (struct backend_file_target){j->rep.path, j->rep.mode != 0, j->rep.nlink};
        j->refs++;
        j->judge(j->ctx, &t, lf_verdict_cb, j);
}

static void
lf_poll_cb(uv_poll_t *h, int status, int events)
{
        lf_take_report(h->data);
}

static void
lf_timeout_cb(uv_timer_t *t)
{
        struct lf_job *j = t->data;
        struct sbx_error err = {0};

        sbx_error_backend(&err, "local",
                          "%s '%s' did not finish within %llu s (file_timeout_s; a slow or hung "
                          "filesystem?): given up, its helper was killed",
                          lf_op(j), j->path, (unsigned long long) (lf_timeout_ms / 1000));
        lf_deliver(j, &err);
        sbx_error_clear(&err);
}

/* A reaped child: one of ours? */
bool
local_file_reaped(pid_t pid, int status)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &lf_jobs)
        {
                struct lf_job *j = LIST_ENTRY(pos, struct lf_job, node);
                if (j->pid != pid)
                        continue;
                list_del(&j->node);
                j->reaped = true;
                j->status = status;
                /* The report may still sit in the socket: it says more than the exit code. */
                lf_take_report(j);
                if (j->phase == LF_RESOLVE || j->phase == LF_RUN)
                        lf_conclude(j);
                lf_unref(j);
                return true;
        }
        return false;
}

/* Fails an op before its helper exists. */
static void
lf_abort(struct lf_job *j, const char *what, int e)
{
        struct sbx_error err = {0};

        sbx_error_backend(&err, "local", "%s '%s': %s: %s", lf_op(j), j->path, what, strerror(e));
        if (j->write)
                j->wcb(j->ctx, &err);
        else
                j->rcb(j->ctx, NULL, 0, 0, false, &err);
        sbx_error_clear(&err);
        lf_unref(j);
}

static void
lf_start(struct backend_sandbox *b, struct lf_job *j)
{
        int sv[2], keep[4], r;
        size_t nkeep;

        j->refs = 1;
        j->ctl = j->child_ctl = j->memfd = -1;
        list_init(&j->node);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return lf_abort(j, "socketpair", errno);
        j->ctl = sv[0];
        j->child_ctl = sv[1];
        if (!j->write && (j->memfd = memfd_create("sandboxd-file", MFD_CLOEXEC)) < 0) {
                close(j->child_ctl);
                return lf_abort(j, "memfd_create", errno);
        }
        keep[0] = j->child_ctl;
        nkeep = 1;
        if (!j->write)
                keep[nkeep++] = j->memfd;
        j->in_ns = local_file_ns(b, &j->ns);
        if (j->in_ns && (j->ns.userns < 0 || j->ns.mntns < 0)) {
                close(j->child_ctl);
                return lf_abort(j, "the sandbox is gone", ESRCH);
        }
        if (j->in_ns) {
                keep[nkeep++] = j->ns.userns;
                keep[nkeep++] = j->ns.mntns;
        }
        /* In a sandbox's namespaces the helper becomes its identity there (nsbox_enter):
         * setns needs the daemon's own credentials first. */
        r = spawn_fork_as(j->in_ns ? NULL : local_identity(b), lf_helper, j, keep, nkeep, &j->pid);
        close(j->child_ctl);
        if (r < 0)
                return lf_abort(j, "cannot start a helper as the caller", -r);
        list_add_tail(&lf_jobs, &j->node);
        uv_poll_init(lf_loop, &j->poll, j->ctl);
        uv_timer_init(lf_loop, &j->timer);
        j->poll.data = j->timer.data = j;
        j->refs += 3; /* the helper, the two handles; the start reference goes below */
        uv_poll_start(&j->poll, UV_READABLE, lf_poll_cb);
        uv_timer_start(&j->timer, lf_timeout_cb, lf_timeout_ms, lf_timeout_ms);
        lf_unref(j);
}

static struct lf_job *
lf_new(const char *path, void *ctx, backend_judge_fn judge)
{
        struct lf_job *j = xcalloc(1, sizeof(*j));

        j->path = xstrdup(path);
        j->ctx = ctx;
        j->judge = judge;
        j->mode = -1;
        return j;
}

/* file.read (see backend.h). */
void
local_file_read(struct backend_sandbox *b, const char *path, uint64_t offset, size_t max_bytes,
                void *ctx, backend_judge_fn judge, backend_read_cb cb)
{
        struct lf_job *j = lf_new(path, ctx, judge);

        j->offset = offset;
        j->max = MIN(max_bytes, LF_FILE_MAX);
        j->rcb = cb;
        lf_start(b, j);
}

/* file.write (see backend.h). */
void
local_file_write(struct backend_sandbox *b, const struct backend_file_write *w, void *ctx,
                 backend_judge_fn judge, backend_done_cb cb)
{
        struct lf_job *j = lf_new(w->path, ctx, judge);

        j->write = true;
        j->append = w->append;
        j->mkdir = w->mkdir;
        j->mode = w->mode;
        j->data = w->data;
        j->len = w->len;
        j->wcb = cb;
        lf_start(b, j);
}

/* Sets the loop and the per-phase time bound. */
void
local_file_init(uv_loop_t *loop, uint64_t timeout_ms)
{
        lf_loop = loop;
        if (timeout_ms)
                lf_timeout_ms = timeout_ms;
}

/* Daemon shutdown: fail what is running, kill the helpers, forget them. */
void
local_file_shutdown(void)
{
        struct sbx_error err = {0};

        sbx_error_backend(&err, "local", "the daemon is stopping");
        while (!list_empty(&lf_jobs)) {
                struct lf_job *j = LIST_ENTRY(lf_jobs.next, struct lf_job, node);
                list_del(&j->node);
                kill(j->pid, SIGKILL);
                j->reaped = true;
                lf_deliver(j, &err);
                lf_unref(j);
        }
        sbx_error_clear(&err);
}
