/* check_caller_file.c — caller_path_resolve (backends/caller_file.h) on a real loop with real
 * helpers: where a path leads and whether it is a directory, as the caller. (A path that
 * never answers needs a hung mount: tests/integration/test_local.py.) */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
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

int
main(void)
{
        Suite *s = suite_create("caller_file");
        TCase *tc = tcase_create("resolve");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_where_it_leads);
        tcase_add_test(tc, test_nearest_parent);
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
