/* check_nsbox.c — the plan of an isolated local sandbox (backends/local/nsbox_plan.c): what is
 * bound, covered and hidden, in which order, and that a plan too large fails instead of being
 * cut; and a start that fails (nsbox.c) on a real loop, whichever of the set-up's last word and
 * its reaping the daemon sees first. (The set-up itself runs in
 * tests/integration/test_isolation.py.) */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/local/nsbox.h"
#include "protocol/util.h"
#include "tests/unit/helper_wire.h"

static char *hidden[] = {"~/.ssh", "/srv/secret", NULL};
static char *writable[] = {"/var/cache/shared", NULL};
static char *home_ro[] = {".gitconfig", NULL};
static char *cover[] = {"/var/lib/sandboxd", "/home/bob", "/root", NULL};
static struct nsbox_config cfg = {hidden, writable, home_ro, "64m", cover};
static gid_t groups[] = {100, 27};

static struct nsinit_plan *
plan_for(const char *home, const char *network, struct sbx_error *err, int *rc)
{
        static struct nsinit_plan p;
        static struct backend_identity who;
        static struct sandbox_spec spec;
        static struct nsbox_request req;

        who = (struct backend_identity){
                .uid = 1000, .gid = 1000, .groups = groups, .ngroups = 2, .home = home};
        spec = (struct sandbox_spec){.id = "sbx_1", .name = "my.box", .owner = &who};
        req = (struct nsbox_request){.spec = &spec,
                                     .workdir = "/srv/proj",
                                     .network_host = network && !strcmp(network, "host")};
        *rc = nsbox_plan_build(&p, &req, &cfg, err);
        return &p;
}

static const char *
str(const struct nsinit_plan *p, uint32_t off)
{
        return off ? p->pool + off : "";
}

/* Index of the first op of type at dst, -1 when none. */
static int
find_op(const struct nsinit_plan *p, int type, const char *dst)
{
        for (uint32_t i = 0; i < p->nops; i++)
                if (p->ops[i].type == type && !strcmp(str(p, p->ops[i].dst), dst))
                        return (int) i;
        return -1;
}

/* How many ops of type at dst. */
static int
count_op(const struct nsinit_plan *p, int type, const char *dst)
{
        int n = 0;

        for (uint32_t i = 0; i < p->nops; i++)
                n += p->ops[i].type == type && !strcmp(str(p, p->ops[i].dst), dst);
        return n;
}

static bool
has_rw(const struct nsinit_plan *p, const char *path)
{
        for (uint32_t i = 0; i < p->nrw; i++)
                if (!strcmp(str(p, p->rw[i]), path))
                        return true;
        return false;
}

START_TEST(test_tree)
{
        struct sbx_error err = {0};
        int rc, bind, hide_ssh, hide_srv;
        struct nsinit_plan *p = plan_for("/home/alice", NULL, &err, &rc);

        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(p->magic, NSINIT_MAGIC);
        ck_assert_uint_eq(p->new_net, 1); /* network "none" unless asked */
        ck_assert_str_eq(str(p, p->hostname), "my-box");
        /* Source 0 is the workdir, bound writable at its own path. */
        ck_assert_str_eq(str(p, p->src[0].path), "/srv/proj");
        bind = find_op(p, NSI_BIND, "/srv/proj");
        ck_assert_int_ge(bind, 0);
        ck_assert_int_eq(p->ops[bind].src, 0);
        ck_assert_int_eq(p->ops[bind].rdonly, 0);
        ck_assert_int_eq(p->ops[bind].optional, 0);
        /* The real home's files read-only in the private one; the private home is writable. */
        ck_assert_int_ge(find_op(p, NSI_TMPFS, "/home/alice"), 0);
        ck_assert_int_eq(p->ops[find_op(p, NSI_BIND, "/home/alice/.gitconfig")].rdonly, 1);
        ck_assert(has_rw(p, "/home/alice"));
        ck_assert(has_rw(p, "/srv/proj"));
        ck_assert(has_rw(p, "/var/cache/shared"));
        ck_assert(!has_rw(p, "/"));
        ck_assert(!has_rw(p, "/home"));
        /* Covers: the daemon's directory and other homes, made read-only once populated. */
        ck_assert_int_ge(find_op(p, NSI_TMPFS, "/var/lib/sandboxd"), 0);
        ck_assert_int_gt(find_op(p, NSI_RDONLY, "/home"), find_op(p, NSI_TMPFS, "/home/alice"));
        ck_assert_int_ge(find_op(p, NSI_RDONLY, "/home/bob"), 0);
        /* Secrets last, "~/" in the caller's home: after every bind, so none uncovers them. */
        hide_ssh = find_op(p, NSI_HIDE, "/home/alice/.ssh");
        hide_srv = find_op(p, NSI_HIDE, "/srv/secret");
        ck_assert_int_ge(hide_ssh, 0);
        ck_assert_int_ge(hide_srv, 0);
        for (uint32_t i = 0; i < p->nops; i++)
                if (p->ops[i].type == NSI_BIND)
                        ck_assert_int_lt((int) i, hide_ssh < hide_srv ? hide_ssh : hide_srv);
        ck_assert_int_eq(p->ops[hide_srv].optional, 0); /* a hide that fails fails the sandbox */
        ck_assert_uint_le(p->size, sizeof(*p));
}
END_TEST

START_TEST(test_identity_and_network)
{
        struct sbx_error err = {0};
        int rc;
        struct nsinit_plan *p = plan_for("/home/alice", "host", &err, &rc);

        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(p->new_net, 0);
        if (geteuid() == 0) {
                /* Root maps the caller: its uid, gid and groups, never root. */
                ck_assert_uint_eq(p->uid, 1000);
                ck_assert_uint_eq(p->gid, 1000);
                ck_assert_uint_eq(p->set_groups, 1);
                ck_assert_uint_eq(p->ngroups, 2);
                ck_assert_uint_eq(p->groups[0], 100);
        } else {
                /* Unprivileged: its own single uid and gid are all a map may hold. */
                ck_assert_uint_eq(p->uid, (uint32_t) geteuid());
                ck_assert_uint_eq(p->set_groups, 0);
        }
}
END_TEST

START_TEST(test_home_that_is_a_cover_stays_writable)
{
        struct sbx_error err = {0};
        char *opts;
        int rc;
        struct nsinit_plan *p = plan_for("/root", NULL, &err, &rc);

        ck_assert_int_eq(rc, 0);
        ck_assert_int_lt(find_op(p, NSI_RDONLY, "/root"), 0);
        ck_assert_int_ge(find_op(p, NSI_RDONLY, "/home"), 0);
        ck_assert(has_rw(p, "/root"));
        /* One tmpfs on it, the home's (private to the caller), not a cover under it too. */
        ck_assert_int_eq(count_op(p, NSI_TMPFS, "/root"), 1);
        opts = xasprintf("mode=0700,uid=%u,gid=%u,size=64m", p->uid, p->gid);
        ck_assert_str_eq(str(p, p->ops[find_op(p, NSI_TMPFS, "/root")].data), opts);
        free(opts);
}
END_TEST

START_TEST(test_each_cover_once)
{
        struct sbx_error err = {0};
        int rc;
        /* /root is both a fixed cover and in the configured list. */
        struct nsinit_plan *p = plan_for("/home/alice", NULL, &err, &rc);

        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(count_op(p, NSI_TMPFS, "/root"), 1);
        ck_assert_int_eq(count_op(p, NSI_RDONLY, "/root"), 1);
        ck_assert_int_eq(count_op(p, NSI_TMPFS, "/home"), 1);
        ck_assert_int_eq(count_op(p, NSI_TMPFS, "/home/bob"), 1);
        ck_assert_int_eq(count_op(p, NSI_RDONLY, "/home/bob"), 1);
        /* The caller's home is not covered under its own tmpfs. */
        p = plan_for("/home/bob", NULL, &err, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(count_op(p, NSI_TMPFS, "/home/bob"), 1);
        ck_assert_int_eq(count_op(p, NSI_RDONLY, "/home/bob"), 0);
        ck_assert_int_eq(count_op(p, NSI_RDONLY, "/home"), 1);
}
END_TEST

START_TEST(test_too_large_fails_whole)
{
        char **many = xcalloc(NSINIT_MAX_OPS + 2, sizeof(char *));
        char **saved = cfg.hidden;
        struct sbx_error err = {0};
        int rc;

        for (int i = 0; i <= NSINIT_MAX_OPS; i++)
                many[i] = xasprintf("/srv/s%d", i);
        cfg.hidden = many;
        plan_for("/home/alice", NULL, &err, &rc);
        cfg.hidden = saved;
        ck_assert_int_eq(rc, -1);
        ck_assert_ptr_nonnull(strstr(err.message, "hidden_paths"));
        sbx_error_clear(&err);
        for (int i = 0; i <= NSINIT_MAX_OPS; i++)
                free(many[i]);
        free(many);
}
END_TEST

START_TEST(test_errors_name_the_step_and_path)
{
        struct sbx_error err = {0};
        int rc;
        struct nsinit_plan *p = plan_for("/home/alice", NULL, &err, &rc);
        struct nsinit_msg m = {.type = NSI_MSG_FAIL, .step = NSI_STEP_SOURCE, .err = ENOENT};

        ck_assert_int_eq(rc, 0);
        nsbox_plan_error(p, &m, &err);
        ck_assert_int_eq(err.code, -32602); /* the caller's workdir */
        ck_assert_ptr_nonnull(strstr(err.message, "/srv/proj"));
        sbx_error_clear(&err);
        m.step = NSI_STEP_OP;
        m.index = find_op(p, NSI_HIDE, "/srv/secret");
        m.err = EPERM;
        nsbox_plan_error(p, &m, &err);
        ck_assert_ptr_nonnull(strstr(err.message, "hide '/srv/secret'"));
        sbx_error_clear(&err);
        m.step = 999; /* out of range: still a message, no read past the table */
        m.index = 100000;
        nsbox_plan_error(p, &m, &err);
        ck_assert_ptr_nonnull(err.message);
        sbx_error_clear(&err);
}
END_TEST

/* What a workdir or writable path may be (nsinit.h): below /tmp or /var/tmp, or anywhere that
 * is neither one of the sandbox's own places, above one, nor inside /run, /dev, /proc, /sys. */
START_TEST(test_places)
{
        static const char *const refused[] = {
                "/",          "/tmp",           "/tmp/",        "/var/tmp", "/var",
                "/run",       "/run/user/1000", "/run/user",    "/dev",     "/dev/shm",
                "/dev/shm/x", "/proc",          "/proc/1/root", "/sys",     "/sys/fs/cgroup",
                "//",
        };
        static const char *const allowed[] = {
                "/tmp/x",           "/tmp/x/y",  "/var/tmp/build", "/home/alice",
                "/home/alice/proj", "/srv/proj", "/var/lib/x",     "/tmpfoo",
                "/runner",          "/device",   "/var/tmpx",      "/usr",
        };
        struct nsinit_msg m = {.type = NSI_MSG_FAIL, .step = NSI_STEP_PLACE, .index = 0};
        struct sbx_error err = {0};
        int rc;
        struct nsinit_plan *p;

        for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
                ck_assert_msg(nsinit_place(refused[i]) != 0, "%s allowed", refused[i]);
        for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
                ck_assert_msg(nsinit_place(allowed[i]) == 0, "%s refused", allowed[i]);
        /* The answer names the place and whether the path is inside it or above it. */
        ck_assert_int_eq(nsinit_place("/var"), nsinit_place("/var/tmp"));
        ck_assert_int_ne(nsinit_place("/run"), nsinit_place("/run/user/1000"));
        /* The workdir and the writable paths are checked where they lead; nothing else is. */
        p = plan_for("/home/alice", NULL, &err, &rc);
        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(p->src[0].placed, 1);
        ck_assert_uint_eq(p->src[p->ops[find_op(p, NSI_BIND, "/var/cache/shared")].src].placed, 1);
        ck_assert_uint_eq(p->src[p->ops[find_op(p, NSI_BIND, "/home/alice/.gitconfig")].src].placed,
                          0);
        m.err = nsinit_place("/run/user/1000");
        nsbox_plan_error(p, &m, &err);
        ck_assert_int_eq(err.code, -32602);
        ck_assert_ptr_nonnull(strstr(err.message, "'/srv/proj' leads into /run"));
        ck_assert_ptr_nonnull(strstr(err.message, "below /tmp or in your home"));
        sbx_error_clear(&err);
}
END_TEST

/* ---- a start that fails ---- */

struct start_seen {
        int calls;
        bool nb;
        char msg[256];
};

static void
start_cb(void *ctx, struct nsbox *nb, const struct sbx_error *err)
{
        struct start_seen *seen = ctx;

        seen->calls++;
        seen->nb = nb != NULL;
        snprintf(seen->msg, sizeof(seen->msg), "%s", err ? err->message : "");
}

/* A loop and nsbox with prog as its sandboxd-nsbox, starting one sandbox of ours (returned:
 * NULL when its start failed at once). */
static struct nsbox *
start_with(uv_loop_t *loop, const char *prog, struct start_seen *seen)
{
        static struct backend_identity who;
        static struct sandbox_spec spec;
        struct nsbox_request req = {.spec = &spec, .workdir = "/srv"};
        struct sbx_error err = {0};
        json_t *conf = json_pack("{s:s,s:s}", "nsbox", prog, "hidden_paths", "");

        ck_assert_int_eq(uv_loop_init(loop), 0);
        ck_assert_int_eq(nsbox_init(loop, conf, &err), 0);
        json_decref(conf);
        ck_assert_msg(!nsbox_unavailable(&(const char *){NULL}),
                      "namespace sandboxes are unavailable here: %s",
                      nsbox_unavailable(&(const char *){NULL}));
        who = (struct backend_identity){.uid = geteuid(), .gid = getegid(), .home = "/"};
        spec = (struct sandbox_spec){.id = "sbx_1", .name = "box", .owner = &who};
        struct nsbox *nb = nsbox_start(&req, start_cb, seen);
        ck_assert_int_eq(seen->calls, 0);
        return nb;
}

/* An "nsbox" that is executable but no program (a broken install): the set-up's clone
 * reports ENOEXEC on its control socket and exits 127 before nsbox_start returns
 * (CLONE_VFORK). Starts one sandbox; returns the set-up's pid, reaped. */
static pid_t
start_broken(uv_loop_t *loop, char *dir, struct start_seen *seen, int *status)
{
        char prog[64];
        int fd;
        pid_t pid;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(prog, sizeof(prog), "%s/sandboxd-nsbox", dir);
        fd = open(prog, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "not a program\n", 14), 14);
        close(fd);
        start_with(loop, prog, seen);
        pid = waitpid(-1, status, 0);
        ck_assert_int_gt(pid, 0);
        ck_assert(WIFEXITED(*status) && WEXITSTATUS(*status) == 127);
        unlink(prog);
        rmdir(dir);
        return pid;
}

/* Everything nsbox made is gone: the loop closes with no handle left. */
static void
start_end(uv_loop_t *loop)
{
        nsbox_shutdown();
        uv_run(loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(loop), 0);
}

/* The set-up's exit is reaped before its report is read (both come in the same turn of the
 * loop, in either order): the reaping reads the report, the start fails once with it, and the
 * agent's session is closed once (it was closed twice: uv_close on a closing timer). */
START_TEST(test_reaped_before_its_report)
{
        uv_loop_t loop;
        char dir[] = "/tmp/check-nsbox-XXXXXX";
        struct start_seen seen = {0};
        int status;
        pid_t pid = start_broken(&loop, dir, &seen, &status);

        ck_assert(nsbox_reaped(pid, status));
        ck_assert_int_eq(seen.calls, 1);
        ck_assert(!seen.nb);
        ck_assert_msg(strstr(seen.msg, "execute sandboxd-nsbox: Exec format error"), "%s",
                      seen.msg);
        start_end(&loop);
        ck_assert_int_eq(seen.calls, 1);
}
END_TEST

/* The usual order: the report is read on the loop, the reaping comes after. */
START_TEST(test_report_before_its_reaping)
{
        uv_loop_t loop;
        char dir[] = "/tmp/check-nsbox-XXXXXX";
        struct start_seen seen = {0};
        int status;
        pid_t pid = start_broken(&loop, dir, &seen, &status);

        while (!seen.calls)
                uv_run(&loop, UV_RUN_ONCE);
        ck_assert(!seen.nb);
        ck_assert_msg(strstr(seen.msg, "execute sandboxd-nsbox: Exec format error"), "%s",
                      seen.msg);
        ck_assert(nsbox_reaped(pid, status));
        start_end(&loop);
        ck_assert_int_eq(seen.calls, 1);
}
END_TEST

/* ---- this binary as sandboxd-nsbox: up to an agent whose READY is refused ---- */

/* Sends m on ctl with the fds (SCM_RIGHTS). */
static bool
fake_send(const struct nsinit_msg *m, const int fds[2])
{
        char cbuf[CMSG_SPACE(2 * sizeof(int))] = {0};
        struct iovec iov = {(void *) m, sizeof(*m)};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cbuf,
                            .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(2 * sizeof(int));
        memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
        return sendmsg(NSINIT_FD_CTL, &mh, MSG_NOSIGNAL) == (ssize_t) sizeof(*m);
}

/* What sandboxd-nsbox does with the daemon (nsinit.h) — its user namespace and maps, READY
 * with its namespaces, ctl closed — and then an agent that answers HELLO with a READY whose
 * pid is not 1, which the daemon refuses: the agent's session goes GONE during the start. */
static int
fake_nsbox(void)
{
        struct nsinit_msg m = {.type = NSI_MSG_MAPS, .pid = getpid()};
        struct wire_in w = {0};
        struct buf p = {0}, out = {0};
        unsigned type;
        uint32_t id;
        int ns[2];

        if (unshare(CLONE_NEWUSER) < 0 || send(NSINIT_FD_CTL, &m, sizeof(m), 0) < 0 ||
            recv(NSINIT_FD_CTL, &m, sizeof(m), 0) != (ssize_t) sizeof(m) || m.type != NSI_MSG_GO)
                return 1;
        ns[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        ns[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        m = (struct nsinit_msg){.type = NSI_MSG_READY, .pid = getpid()};
        if (ns[0] < 0 || ns[1] < 0 || !fake_send(&m, ns))
                return 1;
        close(NSINIT_FD_CTL);
        if (!wire_read(0, &w, &type, &id, &p) || type != AGENT_HELLO || p.len < 4 + 16)
                return 1;
        wire_ready(&out, p.data + 4, AGENT_PROTO_VERSION, 2);
        if (write(1, out.data, out.len) != (ssize_t) out.len)
                return 1;
        while (wire_read(0, &w, &type, &id, &p)) /* until the daemon lets go (SIGKILL) */
                ;
        return 0;
}

/* The agent's session goes GONE during the start (a refused READY; also a HELLO/READY that
 * never comes): the start fails with why, and the session is given back (closed) — it was
 * dropped, its timer left in the loop (uv_loop_close: EBUSY). */
START_TEST(test_agent_refused_during_the_start)
{
        uv_loop_t loop;
        struct start_seen seen = {0};
        char self[PATH_MAX] = "";
        int status;
        pid_t pid;

        ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
        start_with(&loop, self, &seen);
        while (!seen.calls)
                uv_run(&loop, UV_RUN_ONCE);
        ck_assert(!seen.nb);
        ck_assert_msg(strstr(seen.msg, "the sandbox's agent did not start: the agent is not the "
                                       "sandbox's PID 1"),
                      "%s", seen.msg);
        /* Killed, or gone on its own at the EOF of its stream that came just before. */
        pid = waitpid(-1, &status, 0);
        ck_assert(nsbox_reaped(pid, status));
        start_end(&loop);
        ck_assert_int_eq(seen.calls, 1);
}
END_TEST

static void
cancelled_cb(void *ctx)
{
        (*(int *) ctx)++;
}

/* A start abandoned before its set-up reported (its client went): the set-up is killed, the
 * start's cb never comes, cancel's cb does once the set-up is reaped, and nothing is left in
 * the loop. */
START_TEST(test_cancel_during_the_start)
{
        uv_loop_t loop;
        struct start_seen seen = {0};
        char self[PATH_MAX] = "";
        struct nsbox *nb;
        int status, cancelled = 0;
        pid_t pid;

        ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
        nb = start_with(&loop, self, &seen);
        ck_assert_ptr_nonnull(nb);
        nsbox_cancel(nb, cancelled_cb, &cancelled);
        ck_assert_int_eq(cancelled, 0); /* not before its set-up is reaped */
        pid = waitpid(-1, &status, 0);
        ck_assert_int_gt(pid, 0);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
        ck_assert(nsbox_reaped(pid, status));
        ck_assert_int_eq(cancelled, 1);
        start_end(&loop);
        ck_assert_int_eq(seen.calls, 0);
        ck_assert_int_eq(cancelled, 1);
}
END_TEST

int
main(int argc, char **argv)
{
        Suite *s = suite_create("nsbox");
        TCase *tc = tcase_create("plan");
        SRunner *sr;
        int failed;

        if (argc > 0 && !strcmp(argv[0], "sandboxd-nsbox"))
                return fake_nsbox(); /* run by the test below as the daemon would */
        signal(SIGPIPE, SIG_IGN);    /* as in the daemon: the session writes to a dead set-up */
        tcase_add_test(tc, test_tree);
        tcase_add_test(tc, test_identity_and_network);
        tcase_add_test(tc, test_home_that_is_a_cover_stays_writable);
        tcase_add_test(tc, test_each_cover_once);
        tcase_add_test(tc, test_too_large_fails_whole);
        tcase_add_test(tc, test_errors_name_the_step_and_path);
        tcase_add_test(tc, test_places);
        suite_add_tcase(s, tc);
        tc = tcase_create("start");
        tcase_add_test(tc, test_reaped_before_its_report);
        tcase_add_test(tc, test_report_before_its_reaping);
        tcase_add_test(tc, test_agent_refused_during_the_start);
        tcase_add_test(tc, test_cancel_during_the_start);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
