/* setup.c — sandboxd-nsbox: the set-up of a namespace sandbox (nsinit.h), from the plan the
 * daemon computed (backends/local/nsbox_plan.c).
 *
 * sandboxd-nsbox: a user namespace, its maps from the daemon, the caller's identity there
 * (keeping the namespace's capabilities for the set-up only: every host path is opened with
 * the caller's rights), the other namespaces, hostname and loopback, then the fork of the
 * PID 1, which opens the host paths to bind (and copies their trees) and builds the tree: a copy of
 * the host's root made read-only, nosuid and nodev before it is attached, the plan's steps inside
 * it, one pivot into it, drop the old root; then rlimits and every capability gone for good. The
 * filters of filter.c (no_new_privs, Landlock, seccomp) come last, just before sandboxd-agent runs.
 */
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/securebits.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/init/nsinit_int.h"

/* Where the new root is attached while it is built: a directory of the host's root, covered
 * in this mount namespace only. No bind shows it: the sources are copied before it is there. */
#define NSI_BASE "/tmp"

static int nsi_src_fd[NSINIT_MAX_SRC];

/* Fails the set-up with a report. */
_Noreturn void
nsinit_fail(int step, int e, int index)
{
        struct nsinit_msg m = {
                .type = NSI_MSG_FAIL, .step = step, .err = e ? e : EIO, .index = index};

        while (send(NSINIT_FD_CTL, &m, sizeof(m), MSG_NOSIGNAL) < 0 && errno == EINTR)
                ;
        _exit(127);
}

static int
open_in(int dirfd, const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };

        return (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Splits a copy of path into buf at its last '/': the parent (or "/") and the name. */
static int
split(const char *path, char *buf, const char **parent, const char **name)
{
        size_t n = strlen(path);
        char *slash;

        if (n >= PATH_MAX)
                return errno = ENAMETOOLONG, -1;
        memcpy(buf, path, n + 1);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        slash = strrchr(buf, '/');
        if (!slash || !slash[1])
                return errno = EINVAL, -1;
        *slash = '\0';
        *parent = slash == buf ? "/" : buf;
        *name = slash + 1;
        return 0;
}

/* The directory path (inside root) as an O_PATH fd, created with what is missing above it when
 * mk; -1 with errno. */
static int
dir_in(int root, const char *path, bool mk)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        int fd, pfd;

        fd = open_in(root, path, O_PATH | O_DIRECTORY);
        if (fd >= 0 || errno != ENOENT || !mk)
                return fd;
        if (split(path, buf, &parent, &name) < 0 || (pfd = dir_in(root, parent, true)) < 0)
                return -1;
        if (mkdirat(pfd, name, 0755) < 0 && errno != EEXIST) {
                int e = errno;
                close(pfd);
                return errno = e, -1;
        }
        fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(pfd);
        return fd;
}

/* The file path (inside root), created empty when absent (a mount point for a file). */
static int
file_in(int root, const char *path)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        int fd, pfd;

        fd = open_in(root, path, O_PATH);
        if (fd >= 0 || errno != ENOENT)
                return fd;
        if (split(path, buf, &parent, &name) < 0 || (pfd = dir_in(root, parent, true)) < 0)
                return -1;
        fd = openat(pfd, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) {
                close(fd);
                fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        }
        close(pfd);
        return fd;
}

/* Mounts through the target fd's magic link: exactly what was resolved is mounted on. */
static int
mount_on(int tfd, const char *src, const char *type, unsigned long flags, const char *data)
{
        char target[40];

        /* The host's procfs: the new root is built before the pivot. */
        nsinit_fd_path("/proc/self/fd/", tfd, target);
        return mount(src, target, type, flags, data);
}

static int
setattr(int tfd, unsigned int recursive, uint64_t set)
{
        struct mount_attr a = {.attr_set = set};

        return mount_setattr(tfd, "", AT_EMPTY_PATH | recursive, &a, sizeof(a));
}

/* A bind of a source's tree, copied before anything was mounted (nosuid, nodev; read-only when
 * asked): the detached copy gets its attributes before it is attached, so it is never
 * writable. */
static int
op_bind(int root, const struct nsinit_op *op, const char *dst)
{
        struct stat st;
        int tree = nsi_src_fd[op->src], tfd, r = -1;

        if (tree < 0)
                return errno = ENOENT, -1;
        if (fstat(tree, &st) < 0)
                return -1;
        tfd = S_ISDIR(st.st_mode) ? dir_in(root, dst, op->mkdir) : file_in(root, dst);
        if (tfd < 0)
                return -1;
        if (setattr(tree, AT_RECURSIVE,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (op->rdonly ? MOUNT_ATTR_RDONLY : 0)) ==
            0)
                r = move_mount(tree, "", tfd, "",
                               MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        close(tfd);
        return r;
}

/* Hides what dst resolves to (nothing when it does not exist or cannot be reached). */
static int
op_hide(int root, const char *dst)
{
        struct stat st;
        int tfd = open_in(root, dst, O_PATH), r;

        if (tfd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
        if (fstat(tfd, &st) < 0) {
                close(tfd);
                return -1;
        }
        if (S_ISDIR(st.st_mode))
                r = mount_on(tfd, "tmpfs", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                             "mode=0755,size=4k");
        else
                r = mount_on(tfd, "/dev/null", NULL, MS_BIND, NULL);
        close(tfd);
        return r;
}

static int
op_symlink(int root, const char *dst, const char *target)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        int pfd, r;

        if (split(dst, buf, &parent, &name) < 0 || (pfd = dir_in(root, parent, true)) < 0)
                return -1;
        r = symlinkat(target, pfd, name);
        close(pfd);
        return r < 0 && errno == EEXIST ? 0 : r;
}

/* The mounts of the tmpfs made here: a cover is still ours while its path resolves to one. */
static uint64_t nsi_made[NSINIT_MAX_OPS];
static uint32_t nsi_nmade;

/* Whether fd is the root of a tmpfs made here (unknown: no). */
static bool
made_here(int fd)
{
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 || !(sx.stx_mask & STATX_MNT_ID) ||
            !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
            !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return false;
        for (uint32_t i = 0; i < nsi_nmade; i++)
                if (nsi_made[i] == sx.stx_mnt_id)
                        return true;
        return false;
}

static void
note_made(int root, const char *dst)
{
        struct statx sx;
        int fd = open_in(root, dst, O_PATH | O_DIRECTORY);

        if (fd >= 0 && statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 &&
            (sx.stx_mask & STATX_MNT_ID) && nsi_nmade < NSINIT_MAX_OPS)
                nsi_made[nsi_nmade++] = sx.stx_mnt_id;
        if (fd >= 0)
                close(fd);
}

/* A filesystem of its own on the directory dst. */
static int
op_fs(int root, const struct nsinit_op *op, const char *dst, const char *type, unsigned long flags,
      const char *data)
{
        int tfd = dir_in(root, dst, op->mkdir), r;

        if (tfd < 0)
                return -1;
        r = mount_on(tfd, type, type, flags | (op->rdonly ? MS_RDONLY : 0), data);
        close(tfd);
        if (r == 0 && !strcmp(type, "tmpfs"))
                note_made(root, dst);
        return r;
}

static int
op_dev(int root, const char *dst, const char *node)
{
        int tfd = file_in(root, dst), r;

        if (tfd < 0)
                return -1;
        r = mount_on(tfd, node, NULL, MS_BIND, NULL);
        close(tfd);
        return r;
}

/* The end of a cover: its tmpfs becomes read-only. Where dst no longer resolves to it, a later
 * bind (the workdir or a writable path above it, a home_readonly path) brought the host's
 * directory back: that is hidden again. Nothing there (or nothing the caller may reach): 0. */
static int
op_rdonly(int root, const char *dst)
{
        int tfd = open_in(root, dst, O_PATH | O_DIRECTORY), r;

        if (tfd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
        r = made_here(tfd) ? setattr(tfd, 0, MOUNT_ATTR_RDONLY) : op_hide(root, dst);
        close(tfd);
        return r;
}

static int
op_run(const struct nsinit_plan *p, int root, const struct nsinit_op *op)
{
        const char *dst = nsinit_str(p, op->dst), *data = nsinit_str(p, op->data);

        switch (op->type) {
        case NSI_TMPFS:
                return op_fs(root, op, dst, "tmpfs", MS_NOSUID | MS_NODEV, data);
        case NSI_PROC:
                return op_fs(root, op, dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        case NSI_DEVPTS:
                return op_fs(root, op, dst, "devpts", MS_NOSUID | MS_NOEXEC,
                             "newinstance,ptmxmode=0666,mode=620");
        case NSI_BIND:
                return op_bind(root, op, dst);
        case NSI_DEV:
                return op_dev(root, dst, data);
        case NSI_SYMLINK:
                return op_symlink(root, dst, data);
        case NSI_RDONLY:
                return op_rdonly(root, dst);
        case NSI_HIDE:
                return op_hide(root, dst);
        }
        return errno = EINVAL, -1;
}

/* The caller's identity inside the user namespace; the namespace's capabilities stay (for the
 * set-up) until drop_caps. */
static void
identity(const struct nsinit_plan *p)
{
        gid_t groups[NSINIT_MAX_GROUP];

        for (uint32_t i = 0; i < p->ngroups; i++)
                groups[i] = (gid_t) p->groups[i];
        if (prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0 ||
            (p->set_groups && syscall(SYS_setgroups, (size_t) p->ngroups, groups) < 0) ||
            syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0 ||
            syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
                nsinit_fail(NSI_STEP_IDENTITY, errno, -1);
}

/* The host's real paths of the plan's hidden paths that exist (as the caller sees them). */
static uint32_t
hidden_real(const struct nsinit_plan *p, char (*real)[PATH_MAX])
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < p->nops && n < NSINIT_MAX_SRC; i++)
                if (p->ops[i].type == NSI_HIDE && realpath(nsinit_str(p, p->ops[i].dst), real[n]))
                        n++;
        return n;
}

/* Whether the host's real path real is one of the hidden paths, or inside one, whatever name
 * led to it (a symlink ~/.config/git -> ~/.ssh): the hide by name at the end would not cover
 * it. */
static bool
src_hidden(const char *real, char (*hidden)[PATH_MAX], uint32_t nhidden)
{
        for (uint32_t i = 0; i < nhidden; i++) {
                size_t k = strlen(hidden[i]);
                if (!strncmp(real, hidden[i], k) && (real[k] == '\0' || real[k] == '/' || k == 1))
                        return true;
        }
        return false;
}

/* Where the opened source fd leads on the host (as the caller resolved it); -1 if unknown. */
static int
src_real(int fd, char *real)
{
        char link[40];
        ssize_t n;

        nsinit_fd_path("/proc/self/fd/", fd, link);
        n = readlink(link, real, PATH_MAX - 1);
        if (n < 0)
                return -1;
        real[n] = '\0';
        return 0;
}

/* A detached copy of the tree at the host path of source i, taken before anything of the
 * sandbox is mounted (so that no source shows the new root, whatever it holds); -1 when it is
 * absent (or cannot be copied) and optional. Fails the set-up on one that is refused: a path that
 * leads into a hidden path is not bound (an optional one is left out, the workdir fails), one that
 * leads to a place of the sandbox's own (nsinit_place) fails either way. */
static int
source(const struct nsinit_plan *p, uint32_t i, char (*hidden)[PATH_MAX], uint32_t nhidden)
{
        char real[PATH_MAX];
        int fd = open(nsinit_str(p, p->src[i].path), O_PATH | O_CLOEXEC), e = errno, tree, place;

        if (fd < 0 && !p->src[i].optional)
                nsinit_fail(NSI_STEP_SOURCE, e, (int) i);
        if (fd < 0)
                return -1;
        /* Where it leads is unknown: not shown. */
        if (src_real(fd, real) < 0 || src_hidden(real, hidden, nhidden)) {
                if (!p->src[i].optional)
                        nsinit_fail(NSI_STEP_HIDDEN, EACCES, (int) i);
                close(fd);
                return -1;
        }
        if (p->src[i].placed && (place = nsinit_place(real)) != 0)
                nsinit_fail(NSI_STEP_PLACE, place, (int) i);
        tree = open_tree(fd, "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        e = errno;
        close(fd);
        if (tree < 0 && !p->src[i].optional)
                nsinit_fail(NSI_STEP_SOURCE, e, (int) i);
        return tree;
}

/* The host paths to bind, opened as the caller while the host's root is still ours. */
static void
sources(const struct nsinit_plan *p)
{
        static char hidden[NSINIT_MAX_SRC][PATH_MAX];
        uint32_t nhidden = hidden_real(p, hidden);

        for (uint32_t i = 0; i < p->nsrc; i++)
                nsi_src_fd[i] = source(p, i, hidden, nhidden);
}

/* The new root: a copy of the host's whole tree, made read-only, nosuid and nodev while it is
 * still detached (so it is never writable), then attached at NSI_BASE; an O_PATH fd of it. The
 * host's root stays ours (its /proc, /dev) until the pivot. */
static int
new_root(void)
{
        int tree, root;

        tree = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0 ||
            setattr(tree, AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) <
                    0 ||
            move_mount(tree, "", AT_FDCWD, NSI_BASE, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                nsinit_fail(NSI_STEP_ROOT, errno, -1);
        close(tree);
        root = open(NSI_BASE, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                nsinit_fail(NSI_STEP_ROOT, errno, -1);
        return root;
}

/* Into the new root; the host's goes, with every mount under it. */
static void
pivot(int root)
{
        if (fchdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
            umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                nsinit_fail(NSI_STEP_PIVOT, errno, -1);
}

static void
loopback(void)
{
        struct ifreq ifr;
        int fd;

        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                nsinit_fail(NSI_STEP_LOOPBACK, errno, -1);
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                nsinit_fail(NSI_STEP_LOOPBACK, errno, -1);
        close(fd);
}

static void
rlimits(const struct nsinit_plan *p)
{
        static const int res[NSI_RL_N] = {RLIMIT_AS, RLIMIT_NPROC, RLIMIT_CPU, RLIMIT_NOFILE};
        struct rlimit cur, rl;

        /* The daemon raised its own soft limit: its commands get the one it started with. */
        if (p->nofile_soft && getrlimit(RLIMIT_NOFILE, &cur) == 0 &&
            cur.rlim_cur > p->nofile_soft) {
                rl.rlim_cur = p->nofile_soft;
                rl.rlim_max = cur.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        for (int i = 0; i < NSI_RL_N; i++) {
                if (!p->rlimit[i])
                        continue;
                rl.rlim_cur = rl.rlim_max = p->rlimit[i];
                /* Never above an existing hard limit: that one is stricter already. */
                if (getrlimit(res[i], &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
                    rl.rlim_max > cur.rlim_max)
                        rl.rlim_cur = rl.rlim_max = cur.rlim_max;
                if (setrlimit(res[i], &rl) < 0)
                        nsinit_fail(NSI_STEP_RLIMIT, errno, i);
        }
}

/* Every capability gone, for good: not in the bounding or ambient sets, and no way back
 * through uid 0 or a setuid binary (securebits, locked). */
static void
drop_caps(void)
{
        struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct d[2];
        unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

        if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
                nsinit_fail(NSI_STEP_CAPS, errno, -1);
        /* Capabilities are numbered without gaps: EINVAL is past this kernel's last one. */
        for (int cap = 0; cap <= 63; cap++) {
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
                        continue;
                if (errno != EINVAL || cap == 0)
                        nsinit_fail(NSI_STEP_CAPS, errno, cap);
                break;
        }
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                nsinit_fail(NSI_STEP_CAPS, errno, -1);
        memset(d, 0, sizeof(d));
        if (syscall(SYS_capset, &h, d) < 0)
                nsinit_fail(NSI_STEP_CAPS, errno, -1);
}

/* The user namespace and its maps: every capability in it (none outside), until drop_caps. */
static void
user_namespace(void)
{
        struct nsinit_msg m = {.type = NSI_MSG_MAPS};
        ssize_t n;

        if (unshare(CLONE_NEWUSER) < 0)
                nsinit_fail(NSI_STEP_USERNS, errno, -1);
        m.pid = getpid();
        if (send(NSINIT_FD_CTL, &m, sizeof(m), MSG_NOSIGNAL) < 0)
                _exit(127);
        do
                n = recv(NSINIT_FD_CTL, &m, sizeof(m), 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t) sizeof(m) || m.type != NSI_MSG_GO)
                _exit(127); /* the daemon gave up on this sandbox */
}

/* Mount, pid, ipc, uts (and net) namespaces, owned by the user namespace: hostname, lo. */
static void
namespaces(const struct nsinit_plan *p)
{
        int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;

        if (unshare(flags | (p->new_net ? CLONE_NEWNET : 0)) < 0)
                nsinit_fail(NSI_STEP_NAMESPACES, errno, -1);
        if (p->hostname &&
            sethostname(nsinit_str(p, p->hostname), strlen(nsinit_str(p, p->hostname))) < 0)
                nsinit_fail(NSI_STEP_HOSTNAME, errno, -1);
        if (p->new_net)
                loopback();
}

/* Tells the daemon the PID 1 and hands it the namespaces (for file ops in the sandbox): fds
 * opened before the fork, since the PID 1's pivot moves the root of every process of the
 * mount namespace, this one's too, away from /proc. */
static void
send_ready(pid_t pid1, const int fds[2])
{
        struct nsinit_msg m = {.type = NSI_MSG_READY, .pid = pid1};
        char cbuf[CMSG_SPACE(2 * sizeof(int))];
        struct iovec iov = {&m, sizeof(m)};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf,
                            .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(2 * sizeof(int));
        memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
        if (sendmsg(NSINIT_FD_CTL, &mh, MSG_NOSIGNAL) < 0)
                _exit(127);
        close(fds[0]);
        close(fds[1]);
}

/* sandboxd-nsbox after the fork: the PID 1's parent, with nothing open, until it exits. */
static _Noreturn void
supervise(pid_t pid1)
{
        int st = 0;

        for (int fd = 0; fd < NSINIT_NFDS; fd++)
                close(fd);
        while (waitpid(pid1, &st, 0) < 0 && errno == EINTR)
                ;
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/* The PID 1's set-up, up to the filters. */
static void
pid1(const struct nsinit_plan *p)
{
        int root;

        /* Its parent's death (the daemon killing the sandbox) is its own. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                nsinit_fail(NSI_STEP_FORK, errno, -1);
        /* Private first: the copies of the sources and of the root propagate nothing. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                nsinit_fail(NSI_STEP_ROOT, errno, -1);
        sources(p);
        root = new_root();
        for (uint32_t i = 0; i < p->nops; i++)
                if (op_run(p, root, &p->ops[i]) < 0 && !p->ops[i].optional)
                        nsinit_fail(NSI_STEP_OP, errno, (int) i);
        for (uint32_t i = 0; i < p->nsrc; i++)
                if (nsi_src_fd[i] >= 0)
                        close(nsi_src_fd[i]);
        pivot(root);
        close(root);
        rlimits(p);
        drop_caps();
}

/* Everything up to the filters, in the process that becomes the PID 1 (nsinit_int.h). */
void
nsinit_setup(const struct nsinit_plan *p)
{
        pid_t pid;
        int ns[2];

        /* Out of the daemon's session: its terminal's signals are not the sandbox's. */
        setsid();
        user_namespace();
        identity(p);
        namespaces(p);
        ns[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        ns[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns[0] < 0 || ns[1] < 0)
                nsinit_fail(NSI_STEP_NAMESPACES, errno, -1);
        pid = fork();
        if (pid < 0)
                nsinit_fail(NSI_STEP_FORK, errno, -1);
        if (pid > 0) {
                send_ready(pid, ns);
                supervise(pid);
        }
        close(ns[0]);
        close(ns[1]);
        pid1(p);
}
