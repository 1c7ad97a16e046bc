/* check_caller_file.c — caller_path_resolve (backends/caller_file.h) on a real loop with real
 * helpers: where a path leads and whether it is a directory, as the caller. (A path that
 * never answers needs a hung mount: tests/integration/test_local.py.) */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/caller_file.h"
#include "protocol/util.h"

struct seen {
        int calls;
        bool is_dir;
        char real[PATH_MAX], error[512];
        bool has_real, has_error;
        struct caller_job *job; /* set: whether it was refused is asked in the callback */
        bool refused;
        unsigned max;
};

static void
seen_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct seen *s = ctx;

        s->calls++;
        s->is_dir = is_dir;
        s->has_real = real != NULL;
        s->has_error = error != NULL;
        snprintf(s->real, sizeof(s->real), "%s", real ? real : "");
        snprintf(s->error, sizeof(s->error), "%s", error ? error : "");
        if (s->job)
                s->refused = caller_job_refused(s->job, &s->max);
}

/* Resolves path as who (NULL: as this process) and waits for the answer; with nearest, a
 * missing tail is kept (caller_path_resolve_nearest). */
static struct seen
resolve_how(const struct backend_identity *who, const char *path, bool nearest)
{
        uv_loop_t loop;
        struct seen s = {0};

        ck_assert_int_eq(uv_loop_init(&loop), 0);
        (nearest ? caller_path_resolve_nearest : caller_path_resolve)(&loop, who, path, 30000, &s,
                                                                      seen_cb);
        ck_assert_int_eq(s.calls, 0); /* never before it returns */
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        ck_assert_int_eq(s.calls, 1);
        while (waitpid(-1, NULL, WNOHANG) > 0) /* the daemon's SIGCHLD reaper does this */
                ;
        return s;
}

static struct seen
resolve(const struct backend_identity *who, const char *path)
{
        return resolve_how(who, path, false);
}

static char dir[PATH_MAX];

static void
make_tree(void)
{
        char p[PATH_MAX + 16];

        snprintf(dir, sizeof(dir), "/tmp/check-caller-file-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(p, sizeof(p), "%s/d", dir);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/f", dir);
        fclose(fopen(p, "w"));
        snprintf(p, sizeof(p), "%s/link", dir);
        ck_assert_int_eq(symlink("d/../d", p), 0);
}

static void
remove_tree(void)
{
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_where_it_leads)
{
        char p[PATH_MAX + 16], want[PATH_MAX + 16];
        struct seen s;

        make_tree();
        snprintf(p, sizeof(p), "%s/link/.", dir);
        snprintf(want, sizeof(want), "%s/d", dir);
        s = resolve(NULL, p);
        ck_assert(s.has_real && !s.has_error && s.is_dir);
        ck_assert_str_eq(s.real, want);
        snprintf(p, sizeof(p), "%s/f", dir);
        s = resolve(NULL, p);
        ck_assert(s.has_real && !s.is_dir);
        ck_assert_str_eq(s.real, p);
        /* Absent: no answer to give, and no error either (one answer for out of reach). */
        snprintf(p, sizeof(p), "%s/absent/x", dir);
        s = resolve(NULL, p);
        ck_assert(!s.has_real && !s.has_error && !s.is_dir);
        /* Not absolute: refused before any helper. */
        s = resolve(NULL, "relative");
        ck_assert(!s.has_real && s.has_error);
        ck_assert_msg(strstr(s.error, "cannot resolve 'relative'") &&
                              strstr(s.error, "the path must be absolute"),
                      "%s", s.error);
        remove_tree();
}
END_TEST

/* The nearest existing parent is resolved, the missing rest kept as written (what Docker and
 * mkdir -p would make); a path that exists is resolved whole. */
START_TEST(test_nearest_parent)
{
        char p[PATH_MAX + 16], want[PATH_MAX + 16];
        struct seen s;

        make_tree();
        snprintf(p, sizeof(p), "%s/link/new/deeper", dir);
        snprintf(want, sizeof(want), "%s/d/new/deeper", dir);
        s = resolve_how(NULL, p, true);
        ck_assert(s.has_real && !s.has_error && !s.is_dir);
        ck_assert_str_eq(s.real, want);
        snprintf(p, sizeof(p), "%s/link", dir);
        snprintf(want, sizeof(want), "%s/d", dir);
        s = resolve_how(NULL, p, true);
        ck_assert(s.has_real && s.is_dir);
        ck_assert_str_eq(s.real, want);
        /* Below the root: "/" and the rest, not "//…". */
        s = resolve_how(NULL, "/sandboxd-absent-top/x", true);
        ck_assert(s.has_real);
        ck_assert_str_eq(s.real, "/sandboxd-absent-top/x");
        /* Below a file: ENOTDIR, not a missing tail: out of reach. */
        snprintf(p, sizeof(p), "%s/f/x", dir);
        s = resolve_how(NULL, p, true);
        ck_assert(!s.has_real && !s.has_error);
        remove_tree();
}
END_TEST

/* Root (CI runs as root): as nobody, a directory of root's 0700 is out of reach, though it is
 * there for root. */
START_TEST(test_as_the_caller)
{
        struct backend_identity nobody = {.uid = 65534, .gid = 65534};
        char p[PATH_MAX + 16];
        struct seen s;

        make_tree();
        ck_assert_int_eq(chmod(dir, 0700), 0);
        snprintf(p, sizeof(p), "%s/d", dir);
        s = resolve(NULL, p);
        ck_assert(s.has_real && s.is_dir);
        s = resolve(&nobody, p);
        ck_assert(!s.has_real && !s.has_error && !s.is_dir);
        /* Nor is its missing tail reached through it: no oracle for what it holds. */
        snprintf(p, sizeof(p), "%s/d/absent", dir);
        s = resolve_how(&nobody, p, true);
        ck_assert(!s.has_real && !s.has_error);
        ck_assert_int_eq(chmod(dir, 0755), 0);
        s = resolve(&nobody, p);
        ck_assert(!s.has_real);
        s = resolve_how(&nobody, p, true);
        ck_assert(s.has_real && !s.is_dir);
        remove_tree();
}
END_TEST

struct connected {
        int calls;
        char error[512];
};

static void
connected_cb(void *ctx, int fd, const char *error)
{
        struct connected *c = ctx;

        c->calls++;
        snprintf(c->error, sizeof(c->error), "%s", error ? error : "");
        if (fd >= 0)
                close(fd);
}

/* Starts a resolve of path as who on loop and runs the loop until its callback. */
static struct seen
resolve_on(uv_loop_t *loop, const struct backend_identity *who, const char *path)
{
        struct seen s = {0};

        s.job = caller_path_resolve(loop, who, path, 30000, &s, seen_cb);
        ck_assert_int_eq(s.calls, 0); /* never before it returns, refused or not */
        while (!s.calls)
                uv_run(loop, UV_RUN_ONCE);
        return s;
}

/* A uid with max_helpers_per_uid helpers alive gets no more until they have exited, however
 * their jobs ended. (Here the helpers wait in connect() on a listener whose backlog is full.) */
START_TEST(test_helpers_alive_per_uid)
{
        struct backend_identity nobody = {.uid = 65534, .gid = 65534};
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct connected w[2] = {{0}};
        uv_loop_t loop;
        struct seen s;
        int l, filler;

        make_tree();
        ck_assert_int_lt(strlen(dir) + 6, sizeof(sa.sun_path));
        memcpy(sa.sun_path, dir, strlen(dir));
        memcpy(sa.sun_path + strlen(dir), "/sock", 6);
        l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(bind(l, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(l, 0), 0);
        filler = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); /* fills the backlog */
        ck_assert_int_eq(connect(filler, (struct sockaddr *) &sa, sizeof(sa)), 0);
        caller_file_set_limits(2);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        for (int i = 0; i < 2; i++)
                caller_socket_connect(&loop, NULL, sa.sun_path, 60000, &w[i], connected_cb);
        s = resolve_on(&loop, NULL, dir);
        ck_assert(s.refused && s.max == 2 && s.has_error && !s.has_real);
        ck_assert_msg(strstr(s.error, "has 2 helpers stuck in the filesystem (a hung mount?): "
                                      "unmount it or wait for it to answer; at most 2 at a time "
                                      "([limits] max_helpers_per_uid)"),
                      "%s", s.error);
        if (geteuid() == 0) { /* another uid has its own count */
                s = resolve_on(&loop, &nobody, "/");
                ck_assert(!s.refused && s.has_real);
        }
        ck_assert_int_eq(w[0].calls + w[1].calls, 0);
        close(filler);
        close(l); /* the waiting connects fail: the helpers exit */
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(w[0].calls + w[1].calls, 2);
        ck_assert_ptr_nonnull(strstr(w[0].error, "Connection refused"));
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) /* exited, for sure */
                ;
        s = resolve_on(&loop, NULL, dir); /* pruned: the uid may start helpers again */
        ck_assert(!s.refused && s.has_real && s.is_dir);
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        caller_file_set_limits(128);
        caller_file_shutdown();
        remove_tree();
}
END_TEST

int
main(void)
{
        Suite *s = suite_create("caller_file");
        TCase *tc = tcase_create("resolve");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_where_it_leads);
        tcase_add_test(tc, test_nearest_parent);
        tcase_add_test(tc, test_helpers_alive_per_uid);
        if (geteuid() == 0)
                tcase_add_test(tc, test_as_the_caller);
        else
                fprintf(stderr, "check_caller_file: not root: test_as_the_caller not run\n");
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
