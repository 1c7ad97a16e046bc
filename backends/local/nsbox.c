/* nsbox.c — namespace sandboxes, the daemon's side (nsbox.h): the clone into the namespaces,
 * the hand-over to sandboxd-nsbox (uid/gid maps, cgroup, go), the agent's session over the
 * socketpair, and the end.
 *
 * Start: the plan goes into a memfd; clone(CLONE_VM | CLONE_VFORK | the namespaces) runs
 * sandboxd-nsbox at once (so no page of the daemon is copied, and nothing of its memory is in
 * the sandbox's PID 1 when it is briefly dumpable for the maps). The daemon writes the maps
 * (the caller's uid, gid and groups when it is root; its own otherwise), puts the PID 1 in the
 * sandbox's cgroup, opens the namespaces (for file ops) and says go. The set-up's control
 * socket reaches EOF when the agent runs (the PID 1 goes on as the agent, no exec); the sandbox
 * is ready at the agent's READY (pid 1).
 *
 * End: closing the session closes the agent's stdin, and SIGKILL to the PID 1 (from outside
 * it cannot be ignored) takes every process of the pid namespace with it; the sandbox is gone
 * when the daemon has reaped it. A PID 1 that dies on its own (killed, OOM) ends the session
 * with -32006 {state: "exited"}, so the daemon can recreate the sandbox for the next exec.
 */
#include "backends/local/nsbox.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/session.h"
#include "backends/agent/transport.h"
#include "protocol/list.h"
#include "protocol/util.h"

/* Nothing heard from the agent for this long: its link is lost (and the sandbox made anew). */
#define NSB_LINK_TIMEOUT_MS 120000

#define NSB_STACK (64 * 1024)

struct nsbox {
        struct list node; /* in nsb.all until reaped and released */
        pid_t pid;        /* sandboxd-nsbox, the PID 1's parent (our child); 0 once reaped */
        pid_t pid1;       /* the PID 1, as the host sees it */
        int status;
        int userns, mntns;
        int ctl; /* the set-up's control socket, -1 once it reached EOF */
        uv_poll_t poll;
        bool polling, got_ready, exec_ok, ready, released;
        bool reaping; /* in nsb_exited: a stop from the owner's calls there ends nb after it */
        const char *const *cgroup_procs; /* during the start */
        struct agent_session *session;
        struct agent_transport *t; /* until the session's first connect takes it */
        struct nsinit_plan *plan;  /* for the set-up's errors; freed once ready */
        json_t *info;
        char *lost;        /* why its link was lost, until it is back (for the end's message) */
        nsbox_ready_cb cb; /* pending start */
        void *ctx;
        void (*stop_cb)(void *ctx);
        void *stop_ctx;
        const struct backend_upcalls *up;
        void *up_ctx;
};

static struct {
        uv_loop_t *loop;
        struct nsbox_config cfg;
        char *nsbox;   /* the program's real path */
        char *missing; /* why it is not there */
        int nsbox_fd, null_fd;
        struct list all;
        char *stack;
} nsb = {.nsbox_fd = -1, .null_fd = -1, .all = {&nsb.all, &nsb.all}};

/* ---- configuration ---- */

/* A comma/blank separated list (new, NULL-terminated); "" and NULL give an empty one. */
static char **
nsb_list(const char *v)
{
        size_t n = 0;
        char **out = xcalloc(strlen(v ? v : "") / 2 + 2, sizeof(*out));

        for (const char *p = v; p && *p;) {
                p += strspn(p, ", \t\n");
                size_t l = strcspn(p, ", \t\n");
                if (l)
                        out[n++] = xstrndup(p, l);
                p += l;
        }
        return out;
}

static void
nsb_close_fds(const int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

static void
nsb_strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static const char nsb_default_hidden[] =
        "~/.ssh, ~/.gnupg, ~/.aws, ~/.azure, ~/.config/gcloud, ~/.kube, ~/.docker, ~/.netrc, "
        "~/.modal.toml, ~/.git-credentials, ~/.config/gh, ~/.password-store, ~/.pypirc, "
        "~/.npmrc, ~/.cargo/credentials.toml, ~/.config/sandboxd, ~/.local/state/sandboxd";

/* Paths in a list must be absolute or "~/…": a relative one would mean wherever the set-up
 * happens to stand. */
static int
nsb_check_paths(char **v, const char *key, bool tilde, struct sbx_error *err)
{
        for (size_t i = 0; v && v[i]; i++) {
                if (v[i][0] != '/' && !(tilde && !strncmp(v[i], "~/", 2))) {
                        sbx_error_param(err, key,
                                        "[backend.local] %s: '%s' is not an absolute "
                                        "path%s",
                                        key, v[i], tilde ? " or ~/…" : "");
                        return -1;
                }
                /* Writable: as written, and again where it leads at each create (nsinit.h). */
                if (!tilde && nsinit_place(v[i])) {
                        nsbox_place_error(key, v[i], nsinit_place(v[i]), err);
                        return -1;
                }
        }
        return 0;
}

static const char *
nsb_key(json_t *config, const char *key, const char *def)
{
        const char *v = json_string_value(json_object_get(config, key));

        return v ? v : def;
}

/* Appends a copy of path to the NULL-ended *v (n entries). */
static void
nsb_push(char ***v, size_t *n, const char *path)
{
        *v = xrealloc(*v, (*n + 2) * sizeof(char *));
        (*v)[(*n)++] = xstrdup(path);
        (*v)[*n] = NULL;
}

/* Other users' homes in the passwd database: directories that exist and belong to their user
 * (system accounts' "homes" such as /bin or /nonexistent are not). Every one: no cap. */
static void
nsb_other_homes(char ***cover, size_t *n)
{
        struct passwd *pw;
        struct stat st;

        setpwent();
        while ((pw = getpwent())) {
                if (!pw->pw_dir || pw->pw_dir[0] != '/' || !strcmp(pw->pw_dir, "/") ||
                    stat(pw->pw_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != pw->pw_uid)
                        continue;
                nsb_push(cover, n, pw->pw_dir);
        }
        endpwent();
}

/* The directories covered in every sandbox: the daemon's state and socket directories, other
 * users' homes (the caller's own is replaced by its private one anyway). */
static void
nsb_covers(json_t *config)
{
        const char *state = nsb_key(config, "state_dir", NULL);
        const char *sock = nsb_key(config, "daemon_socket", NULL);
        size_t n = 0;

        nsb.cfg.cover = xcalloc(1, sizeof(char *));
        if (state)
                nsb_push(&nsb.cfg.cover, &n, state);
        if (sock && strrchr(sock, '/') && strrchr(sock, '/') != sock) {
                char *dir = xstrndup(sock, (size_t) (strrchr(sock, '/') - sock));
                nsb_push(&nsb.cfg.cover, &n, dir);
                free(dir);
        }
        nsb_other_homes(&nsb.cfg.cover, &n);
}

/* sandboxd-nsbox, which holds the agent's code too (its PID 1 goes on as the agent). */
static int
nsb_programs(json_t *config, struct sbx_error *err)
{
        const char *v = nsb_key(config, "nsbox", NULL);
        char *where = NULL;

        nsb.nsbox = v && *v ? agent_locate_file(v) : agent_locate_named("sandboxd-nsbox", &where);
        if (!nsb.nsbox && v && *v) {
                sbx_error_param(err, "nsbox",
                                "[backend.local] nsbox = '%s' is not an executable file", v);
                return -1;
        }
        if (!nsb.nsbox)
                nsb.missing = xasprintf("sandboxd-nsbox is not installed (looked %s)", where);
        free(where);
        if (nsb.nsbox)
                nsb.nsbox_fd = open(nsb.nsbox, O_PATH | O_CLOEXEC);
        nsb.null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        return 0;
}

/* Reads the configuration (nsbox.h). */
int
nsbox_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        nsb.loop = loop;
        nsb.cfg.hidden = nsb_list(nsb_key(config, "hidden_paths", nsb_default_hidden));
        nsb.cfg.writable = nsb_list(nsb_key(config, "writable_paths", ""));
        nsb.cfg.home_ro = nsb_list(nsb_key(config, "home_readonly", ".gitconfig, .config/git"));
        nsb.cfg.tmpfs_size = xstrdup(nsb_key(config, "tmpfs_size", "1g"));
        if (nsb_check_paths(nsb.cfg.hidden, "hidden_paths", true, err) < 0 ||
            nsb_check_paths(nsb.cfg.writable, "writable_paths", false, err) < 0)
                return -1;
        for (char **f = nsb.cfg.home_ro; *f; f++) {
                if ((*f)[0] == '/' || strstr(*f, "..")) {
                        sbx_error_param(err, "home_readonly",
                                        "[backend.local] home_readonly: '%s' must be a path "
                                        "relative to the home, without '..'",
                                        *f);
                        return -1;
                }
        }
        if (strspn(nsb.cfg.tmpfs_size, "0123456789kmgKMG%") != strlen(nsb.cfg.tmpfs_size) ||
            !nsb.cfg.tmpfs_size[0]) {
                sbx_error_param(err, "tmpfs_size",
                                "[backend.local] tmpfs_size = '%s' is not a size (e.g. 1g, "
                                "512m, 25%%)",
                                nsb.cfg.tmpfs_size);
                return -1;
        }
        nsb_covers(config);
        return nsb_programs(config, err);
}

/* Why sandboxes cannot be made (NULL: they can). */
const char *
nsbox_unavailable(const char **hint)
{
        const char *reason;

        if (!nsbox_probe(NULL, &reason, hint))
                return reason;
        if (nsb.nsbox_fd < 0 || nsb.null_fd < 0) {
                *hint = "build it with make (or install it: make install), or set [backend.local] "
                        "isolation = none";
                return nsb.missing ? nsb.missing : "sandboxd-nsbox cannot be opened";
        }
        return NULL;
}

/* backend.list details. */
json_t *
nsbox_details(void)
{
        json_t *d = NULL;
        const char *reason, *hint;

        nsbox_probe(&d, &reason, &hint);
        json_object_set_new(d, "nsbox", nsb.nsbox ? json_string(nsb.nsbox) : json_null());
        return d;
}

/* ---- the life of one sandbox ---- */

static void
nsb_free(struct nsbox *nb)
{
        list_del(&nb->node);
        if (nb->ctl >= 0)
                close(nb->ctl);
        if (nb->t)
                nb->t->ops->close(nb->t);
        if (nb->userns >= 0)
                close(nb->userns);
        if (nb->mntns >= 0)
                close(nb->mntns);
        free(nb->plan);
        free(nb->lost);
        json_decref(nb->info);
        free(nb);
}

static void
nsb_poll_close_cb(uv_handle_t *h)
{
        struct nsbox *nb = h->data;

        close(nb->ctl);
        nb->ctl = -1;
        nb->polling = false;
        if (nb->released && !nb->pid)
                nsb_free(nb);
}

/* The set-up's control socket is done with. */
static void
nsb_ctl_done(struct nsbox *nb)
{
        if (nb->polling && !uv_is_closing((uv_handle_t *) &nb->poll))
                uv_close((uv_handle_t *) &nb->poll, nsb_poll_close_cb);
}

/* The pending start ends: with err (what was made goes), or ready. */
static void
nsb_finish_start(struct nsbox *nb, const struct sbx_error *err)
{
        nsbox_ready_cb cb = nb->cb;
        struct agent_session *s = nb->session;

        if (!cb)
                return;
        nb->cb = NULL;
        if (!err) {
                free(nb->plan);
                nb->plan = NULL;
                cb(nb->ctx, nb, NULL);
                return;
        }
        /* Nobody will own it: it goes once reaped. */
        nb->released = true;
        nb->session = NULL;
        if (s)
                agent_session_close(s, NULL, true);
        if (nb->t)
                nb->t->ops->close(nb->t);
        nb->t = NULL;
        if (nb->pid)
                kill(nb->pid, SIGKILL);
        nsb_ctl_done(nb);
        cb(nb->ctx, NULL, err);
}

static void
nsb_fail_msg(struct nsbox *nb, const char *what, const char *why)
{
        struct sbx_error err = {0};

        sbx_error_backend(&err, "local", "%s: %s", what, why);
        nsb_finish_start(nb, &err);
        sbx_error_clear(&err);
}

static void
nsb_fail_errno(struct nsbox *nb, const char *what, int e)
{
        nsb_fail_msg(nb, what, strerror(e));
}

/* ---- the hand-over ---- */

static int
nsb_write_file(pid_t pid, const char *name, const char *data)
{
        char path[64];
        int fd, r = 0;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, name);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, data, strlen(data)) != (ssize_t) strlen(data))
                r = -errno;
        close(fd);
        return r;
}

/* The maps: the caller's uid, gid and groups (root), or the daemon's own uid and gid. */
static int
nsb_maps(pid_t pid, const struct nsinit_plan *p, const char **what)
{
        struct buf g = {0};
        char *u = xasprintf("%u %u 1\n", p->uid, p->uid);
        int r;

        buf_appendf(&g, "%u %u 1\n", p->gid, p->gid);
        for (uint32_t i = 0; i < p->ngroups; i++)
                buf_appendf(&g, "%u %u 1\n", p->groups[i], p->groups[i]);
        buf_append(&g, "", 1);
        *what = "setgroups";
        r = p->set_groups ? 0 : nsb_write_file(pid, "setgroups", "deny");
        if (r == 0) {
                *what = "uid_map";
                r = nsb_write_file(pid, "uid_map", u);
        }
        if (r == 0) {
                *what = "gid_map";
                r = nsb_write_file(pid, "gid_map", g.data);
        }
        free(u);
        buf_free(&g);
        return r;
}

static int
nsb_cgroup(pid_t pid, const char *const *procs)
{
        char v[24];

        snprintf(v, sizeof(v), "%d\n", (int) pid);
        for (size_t i = 0; procs && procs[i]; i++) {
                int fd = open(procs[i], O_WRONLY | O_CLOEXEC), r = 0;
                if (fd < 0)
                        return -errno;
                if (write(fd, v, strlen(v)) < 0)
                        r = -errno;
                close(fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* NSI_MSG_MAPS: sandboxd-nsbox is in its user namespace. */
static void
nsb_on_maps(struct nsbox *nb)
{
        struct nsinit_msg go = {.type = NSI_MSG_GO};
        const char *what = "";
        char *m;
        int r = nsb_maps(nb->pid, nb->plan, &what);

        if (r < 0) {
                m = xasprintf("cannot write the sandbox's %s", what);
                nsb_fail_errno(nb, m, -r);
                free(m);
                return;
        }
        /* Its PID 1 and everything in the sandbox inherit the cgroup. */
        if ((r = nsb_cgroup(nb->pid, nb->cgroup_procs)) < 0) {
                nsb_fail_errno(nb, "cannot put the sandbox in its cgroup", -r);
                return;
        }
        nb->cgroup_procs = NULL;
        if (send(nb->ctl, &go, sizeof(go), MSG_NOSIGNAL) != (ssize_t) sizeof(go))
                nsb_fail_errno(nb, "the sandbox's set-up did not wait", errno);
}

/* NSI_MSG_READY: the PID 1 and the namespaces (fds: what came with it, -1 when missing). */
static void
nsb_on_ready(struct nsbox *nb, const struct nsinit_msg *m, const int *fds)
{
        nb->pid1 = m->pid;
        nb->userns = fds[0];
        nb->mntns = fds[1];
        nb->got_ready = nb->userns >= 0 && nb->mntns >= 0;
        if (!nb->got_ready)
                nsb_fail_msg(nb, "sandbox set-up", "its namespaces did not come with its word");
        else
                json_object_set_new(nb->info, "pid", json_integer(m->pid));
}

static void
nsb_on_fail(struct nsbox *nb, const struct nsinit_msg *m)
{
        struct sbx_error err = {0};

        nsbox_plan_error(nb->plan, m, &err);
        nsb_finish_start(nb, &err);
        sbx_error_clear(&err);
}

/* EOF: every copy of the socket is closed, the last one by the agent's exec. */
static void
nsb_on_eof(struct nsbox *nb)
{
        nsb_ctl_done(nb);
        if (!nb->got_ready) {
                nsb_fail_msg(nb, "sandbox set-up", "sandboxd-nsbox ended without a word");
                return;
        }
        nb->exec_ok = true;
        if (nb->ready)
                nsb_finish_start(nb, NULL);
}

/* One message (and the fds that came with it) from ctl: 1 handled, 0 EOF, -1 nothing now. */
static int
nsb_recv(struct nsbox *nb, struct nsinit_msg *m, int fds[2])
{
        char cbuf[CMSG_SPACE(2 * sizeof(int))];
        struct iovec iov = {m, sizeof(*m)};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf,
                            .msg_controllen = sizeof(cbuf)};
        ssize_t n = recvmsg(nb->ctl, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

        fds[0] = fds[1] = -1;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        memcpy(fds, CMSG_DATA(c), MIN(c->cmsg_len - CMSG_LEN(0), 2 * sizeof(int)));
        if (n != (ssize_t) sizeof(*m))
                return 0;
        return 1;
}

static void
nsb_poll_cb(uv_poll_t *h, int status, int events)
{
        struct nsbox *nb = h->data;
        struct nsinit_msg m;
        int fds[2], got;

        while (nb->cb && (got = nsb_recv(nb, &m, fds)) != -1) {
                if (got == 0) {
                        nsb_on_eof(nb);
                        return;
                }
                if (m.type == NSI_MSG_MAPS) {
                        nsb_on_maps(nb);
                } else if (m.type == NSI_MSG_READY && !nb->got_ready) {
                        nsb_on_ready(nb, &m, fds);
                        continue;
                } else if (m.type == NSI_MSG_FAIL) {
                        nsb_on_fail(nb, &m);
                } else {
                        nsb_fail_msg(nb, "sandbox set-up", "sandboxd-nsbox said something else");
                }
                nsb_close_fds(fds, 2);
        }
}

/* ---- the agent's session ---- */

static void
nsb_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        struct nsbox *nb = ctx;
        struct agent_transport *t = nb->t;

        nb->t = NULL;
        if (t)
                cb(cb_ctx, t, NULL);
        else /* the socketpair was the only way to it: its PID 1 is gone or going */
                cb(cb_ctx, NULL,
                   "the one stream to the sandbox's agent was closed when its link was lost, "
                   "and cannot be opened again");
}

/* The session's word about its link. A session that is gone still holds our reference:
 * closing it gives that back (session.h); reason is the session's, so it is closed last. */
static void
nsb_link(void *ctx, enum backend_link st, const char *reason)
{
        struct nsbox *nb = ctx;
        struct agent_session *gone = st == BACKEND_LINK_GONE ? nb->session : NULL;

        if (nb->cb) { /* starting: a failure closes the session (nsb_finish_start) */
                if (st == BACKEND_LINK_BACK) {
                        nb->ready = true;
                        if (nb->exec_ok)
                                nsb_finish_start(nb, NULL);
                } else if (st == BACKEND_LINK_GONE) {
                        nsb_fail_msg(nb, "the sandbox's agent did not start", reason);
                }
                return;
        }
        if (gone)
                nb->session = NULL;
        if (st == BACKEND_LINK_BACK) {
                free(nb->lost);
                nb->lost = NULL;
        } else if (!nb->lost && reason) { /* the first word: what the retries say follows */
                nb->lost = xstrdup(reason);
        }
        if (nb->up && nb->up->link) /* may stop nb */
                nb->up->link(nb->up_ctx, st, reason);
        agent_session_close(gone, NULL, false);
}

/* The agent must be the pid namespace's init: then nothing else holds its stdio. */
static const char *
nsb_check_ready(void *ctx, const struct agent_ready *r)
{
        return r->pid == 1 ? NULL : "the agent is not the sandbox's PID 1";
}

static const struct agent_session_cbs nsb_session_cbs = {
        .connect = nsb_connect,
        .on_link = nsb_link,
        .check_ready = nsb_check_ready,
};

/* ---- the spawn ---- */

/* The spawned child's fds 0..5: nsinit.h's, and 5, sandboxd-nsbox itself (for the
 * execveat; the program closes it). */
#define NSB_CHILD_FDS (NSINIT_NFDS + 1)

struct nsb_child {
        int fds[NSB_CHILD_FDS];
};

/* Async-signal-safe: the vfork child shares the daemon's memory until its exec. */
static int
nsb_child_main(void *arg)
{
        struct nsb_child *c = arg;
        char *argv[] = {"sandboxd-nsbox", NULL}, *envp[] = {NULL};
        struct nsinit_msg m = {.type = NSI_MSG_FAIL, .step = 0, .index = -1};
        int lifted[NSB_CHILD_FDS], ctl = c->fds[NSINIT_FD_CTL];

        spawn_child_reset_signals();
        for (int i = 0; i < NSB_CHILD_FDS; i++)
                lifted[i] = fcntl(c->fds[i], F_DUPFD_CLOEXEC, 3 * NSB_CHILD_FDS);
        for (int i = 0; i < NSB_CHILD_FDS; i++)
                if (lifted[i] < 0 || dup2(lifted[i], i) < 0)
                        goto fail;
        /* From here the control socket is fd 4 only: close_range takes the lifted copies. */
        ctl = NSINIT_FD_CTL;
        syscall(SYS_close_range, NSB_CHILD_FDS, ~0U, 0);
        syscall(SYS_execveat, NSB_CHILD_FDS - 1, "", argv, envp, AT_EMPTY_PATH);
fail:
        m.err = errno;
        (void) !send(ctl, &m, sizeof(m), MSG_NOSIGNAL);
        _exit(127);
}

/* Runs sandboxd-nsbox like posix_spawn does (no page of the daemon is copied); pid or -1. */
static pid_t
nsb_spawn(struct nsb_child *c)
{
        sigset_t all, saved;
        pid_t pid;
        int e;

        if (!nsb.stack) {
                nsb.stack = mmap(NULL, NSB_STACK, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
                if (nsb.stack == MAP_FAILED) {
                        nsb.stack = NULL;
                        return -1;
                }
        }
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid = clone(nsb_child_main, nsb.stack + NSB_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
        e = errno;
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        errno = e;
        return pid;
}

/* The plan in a memfd (sandboxd-nsbox reads it from fd 3). */
static int
nsb_plan_fd(const struct nsinit_plan *p)
{
        int fd = memfd_create("sandboxd-plan", MFD_CLOEXEC);

        if (fd >= 0 && write(fd, p, p->size) != (ssize_t) p->size) {
                close(fd);
                return -1;
        }
        return fd;
}

/* Spawns sandboxd-nsbox; the sandbox is registered (it is reaped like any child). */
static int
nsb_launch(struct nsbox *nb, struct sbx_error *err)
{
        int sp[2] = {-1, -1}, ctl[2] = {-1, -1}, plan = nsb_plan_fd(nb->plan);
        struct nsb_child c;
        int r = -1;

        if (plan < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
                sbx_error_backend(err, "local", "cannot prepare the sandbox: %s", strerror(errno));
                goto out;
        }
        c = (struct nsb_child){{sp[1], sp[1], nsb.null_fd, plan, ctl[1], nsb.nsbox_fd}};
        nb->pid = nsb_spawn(&c);
        if (nb->pid < 0) {
                nb->pid = 0;
                sbx_error_backend(err, "local", "cannot start sandboxd-nsbox: %s", strerror(errno));
                goto out;
        }
        list_add_tail(&nsb.all, &nb->node);
        nb->ctl = ctl[0];
        ctl[0] = -1;
        nb->t = agent_transport_fds(nsb.loop, sp[0], sp[0]);
        sp[0] = -1;
        r = 0;
out:
        nsb_close_fds((int[]){sp[0], sp[1], ctl[0], ctl[1], plan}, 5);
        return r;
}

/* Starts a sandbox (nsbox.h). */
struct nsbox *
nsbox_start(const struct nsbox_request *req, nsbox_ready_cb cb, void *ctx)
{
        struct nsbox *nb = xcalloc(1, sizeof(*nb));
        struct sbx_error err = {0};
        const char *hint, *why = nsbox_unavailable(&hint);

        list_init(&nb->node);
        nb->userns = nb->mntns = nb->ctl = -1;
        nb->cb = cb;
        nb->ctx = ctx;
        nb->cgroup_procs = req->cgroup_procs;
        nb->plan = xmalloc(sizeof(*nb->plan));
        if (why) {
                sbx_error_set(
                        &err, SBX_E_BACKEND_UNAVAILABLE,
                        json_pack("{s:s,s:s,s:s}", "backend", "local", "reason", why, "hint", hint),
                        "backend unavailable: local sandboxes with isolation "
                        "\"namespaces\": %s (%s)",
                        why, hint);
        } else if (nsbox_plan_build(nb->plan, req, &nsb.cfg, &err) == 0) {
                nb->info = json_pack("{s:s,s:s,s:o}", "isolation", "namespaces", "network",
                                     req->network_host ? "host" : "none", "writable",
                                     nsbox_plan_writable(nb->plan));
                if (nsb_launch(nb, &err) == 0)
                        goto started;
        }
        nb->cb = NULL;
        nsb_free(nb);
        cb(ctx, NULL, &err);
        sbx_error_clear(&err);
        return NULL;
started:
        uv_poll_init(nsb.loop, &nb->poll, nb->ctl);
        nb->poll.data = nb;
        nb->polling = true;
        uv_poll_start(&nb->poll, UV_READABLE, nsb_poll_cb);
        nb->session = agent_session_new(nsb.loop,
                                        &(struct agent_session_config){
                                                .backend = "local",
                                                .where = "in the sandbox",
                                                /* Its only link cannot drop, and counting it
                                                 * lost ends the sandbox and what runs in it:
                                                 * a starved host (a CI run on 2 busy cores
                                                 * went 20 s without an answer) must not. */
                                                .link_timeout_ms = NSB_LINK_TIMEOUT_MS,
                                        },
                                        &nsb_session_cbs, nb);
        agent_session_open(nb->session);
        return nb;
}

/* The owner's upcalls. */
void
nsbox_set_upcalls(struct nsbox *nb, const struct backend_upcalls *up, void *up_ctx)
{
        nb->up = up;
        nb->up_ctx = up_ctx;
}

/* Ends a sandbox (nsbox.h). */
void
nsbox_stop(struct nsbox *nb, void (*cb)(void *ctx), void *ctx)
{
        struct agent_session *s = nb->session;

        nb->released = true;
        nb->up = NULL;
        nb->session = NULL;
        if (s)
                agent_session_close(s, NULL, true);
        nb->stop_cb = cb;
        nb->stop_ctx = ctx;
        /* Stopped by its owner from inside its own end (an exec that failed with it asks for
         * a new sandbox): nsbox_reaped still uses nb, and ends it once that is done. */
        if (nb->reaping)
                return;
        if (!nb->pid) {
                nb->stop_cb = NULL;
                if (!nb->polling)
                        nsb_free(nb);
                cb(ctx);
                return;
        }
        kill(nb->pid, SIGKILL); /* and its PID 1 with it (PR_SET_PDEATHSIG), and so on */
}

/* Abandons a pending start (nsbox.h). */
void
nsbox_cancel(struct nsbox *nb, void (*cb)(void *ctx), void *ctx)
{
        nb->cb = NULL;
        if (nb->t)
                nb->t->ops->close(nb->t);
        nb->t = NULL;
        nsb_ctl_done(nb);
        nsbox_stop(nb, cb, ctx);
}

/* Accessors. */
struct agent_session *
nsbox_session(struct nsbox *nb)
{
        return nb->session;
}

int
nsbox_userns(const struct nsbox *nb)
{
        return nb->pid ? nb->userns : -1;
}

int
nsbox_mntns(const struct nsbox *nb)
{
        return nb->pid ? nb->mntns : -1;
}

json_t *
nsbox_info(const struct nsbox *nb)
{
        return json_deep_copy(nb->info);
}

/* How its PID 1 ended (new), and what the link said before. The agent exits 0 when its
 * stream closes, as the daemon closes it once the link is lost (sess_lost): that status alone
 * would blame the sandbox for what the daemon did. */
static char *
nsb_end_why(const struct nsbox *nb)
{
        bool sig = WIFSIGNALED(nb->status);
        int n = sig ? WTERMSIG(nb->status) : WEXITSTATUS(nb->status);

        if (!nb->lost)
                return xasprintf("its PID 1 (the agent) %s %d",
                                 sig ? "was killed by signal" : "exited with status", n);
        return xasprintf("its PID 1 (the agent) %s %d after its link was lost (%s)%s",
                         sig ? "was killed by signal" : "exited with status", n, nb->lost,
                         !sig && !n ? ": the daemon closes a lost link, and the agent ends with it"
                                    : "");
}

/* It ended by itself: the session ends (-32006 exited), a pending start fails. The owner's
 * calls from here may stop nb (nb->reaping keeps it for nsbox_reaped). */
static void
nsb_exited(struct nsbox *nb)
{
        struct agent_session *s;
        struct sbx_error err = {0};
        char *why;

        /* A last word of the set-up explains it better than the exit status. Reading it may
         * fail the start, which closes the session: it is looked at only afterwards. */
        if (nb->cb && nb->polling)
                nsb_poll_cb(&nb->poll, 0, UV_READABLE);
        s = nb->session;
        why = nsb_end_why(nb);
        if (nb->cb) {
                nsb_fail_msg(nb, "the sandbox ended during its set-up", why);
        } else if (s) {
                nb->session = NULL;
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "exited"),
                              "the local sandbox is gone: %s", why);
                agent_session_close(s, &err, true);
                sbx_error_clear(&err);
                if (nb->up && nb->up->link) /* NULL once the owner stopped nb meanwhile */
                        nb->up->link(nb->up_ctx, BACKEND_LINK_GONE, why);
        }
        free(why);
}

/* A reaped child (nsbox.h). */
bool
nsbox_reaped(pid_t pid, int status)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &nsb.all)
        {
                struct nsbox *nb = LIST_ENTRY(pos, struct nsbox, node);
                void (*cb)(void *);
                void *ctx;
                if (nb->pid != pid)
                        continue;
                nb->pid = 0;
                nb->status = status;
                if (!nb->stop_cb) {
                        nb->reaping = true;
                        nsb_exited(nb);
                        nb->reaping = false;
                }
                cb = nb->stop_cb; /* stopped before, or from inside nsb_exited */
                ctx = nb->stop_ctx;
                nb->stop_cb = NULL;
                if (cb)
                        nsb_ctl_done(nb);
                if (nb->released && !nb->polling)
                        nsb_free(nb);
                if (cb) /* nb may be freed */
                        cb(ctx);
                return true;
        }
        return false;
}

/* Daemon shutdown (nsbox.h). */
void
nsbox_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &nsb.all)
        {
                struct nsbox *nb = LIST_ENTRY(pos, struct nsbox, node);
                struct agent_session *s = nb->session;
                if (nb->pid)
                        kill(nb->pid, SIGKILL); /* its processes cannot outlive the daemon */
                nb->session = NULL;
                if (s)
                        agent_session_close(s, NULL, true);
                nb->pid = 0;
                nb->released = true;
                nb->cb = NULL;
                if (nb->polling)
                        nsb_ctl_done(nb); /* freed by the close callback */
                else
                        nsb_free(nb);
        }
        nsb_strv_free(nsb.cfg.hidden);
        nsb_strv_free(nsb.cfg.writable);
        nsb_strv_free(nsb.cfg.home_ro);
        nsb_strv_free(nsb.cfg.cover);
        free(nsb.cfg.tmpfs_size);
        free(nsb.nsbox);
        free(nsb.missing);
        memset(&nsb.cfg, 0, sizeof(nsb.cfg));
        nsb.nsbox = nsb.missing = NULL;
        nsb_close_fds((int[]){nsb.nsbox_fd, nsb.null_fd}, 2);
        nsb.nsbox_fd = nsb.null_fd = -1;
        if (nsb.stack)
                munmap(nsb.stack, NSB_STACK);
        nsb.stack = NULL;
}
