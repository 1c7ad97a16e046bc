/* check_agent_oom.c — the agent's OOM-from-cgroup path (backends/agent/prog/oom.c): which
 * counter file an exec's cgroup has, and its oom_kill count, on a fake cgroup tree. */
#include <sys/stat.h>

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"

static char root[] = "/tmp/check-agent-oom-XXXXXX";

static void
put(const char *rel, const char *text)
{
        char path[PATH_MAX + 64], cmd[3 * PATH_MAX];
        FILE *f;

        snprintf(path, sizeof(path), "%s%s", root, rel);
        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
        ck_assert_int_eq(system(cmd), 0);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

/* This process's own cgroup, as the agent reads it for an exec's pid. */
static void
own_cgroup(char *cg, size_t n, int *v1)
{
        char buf[4096];
        FILE *f = fopen("/proc/self/cgroup", "r");
        size_t r;

        ck_assert_ptr_nonnull(f);
        r = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[r] = 0;
        ck_assert_int_eq(agent_cgroup_parse(buf, cg, n, v1), 0);
}

static void
setup(void)
{
        ck_assert_ptr_nonnull(mkdtemp(root));
}

static void
teardown(void)
{
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(root, "/tmp/check-agent-oom-XXXXXX");
}

START_TEST(test_parse_v2_v1_and_none)
{
        char v2[] = "0::/user.slice/session-1.scope\n";
        char hybrid[] = "12:pids:/a\n4:memory:/docker/abc\n0::/docker/abc\n";
        char none[] = "12:pids:/a\n";
        char path[256];
        int v1;

        ck_assert_int_eq(agent_cgroup_parse(v2, path, sizeof(path), &v1), 0);
        ck_assert_str_eq(path, "/user.slice/session-1.scope");
        ck_assert_int_eq(v1, 0);
        ck_assert_int_eq(agent_cgroup_parse(hybrid, path, sizeof(path), &v1), 0);
        ck_assert_str_eq(path, "/docker/abc");
        ck_assert_int_eq(v1, 1);
        ck_assert_int_eq(agent_cgroup_parse(none, path, sizeof(path), &v1), -1);
}
END_TEST

/* The exec's own cgroup's file is found below the root, and its count read: an OOM kill in
 * that cgroup raises it above the exec's base, which is what marks the exec oom_killed. */
START_TEST(test_own_cgroup_counter)
{
        char cg[PATH_MAX], rel[PATH_MAX + 64], want[2 * PATH_MAX + 64];
        int v1;
        char *file;
        uint64_t base;

        own_cgroup(cg, sizeof(cg), &v1);
        if (strcmp(cg, "/") == 0)
                cg[0] = 0;
        snprintf(rel, sizeof(rel), v1 ? "/memory%s/memory.oom_control" : "%s/memory.events", cg);
        put(rel, v1 ? "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
                    : "low 0\nhigh 0\nmax 4\noom 3\noom_kill 2\noom_group_kill 0\n");
        /* A root file too, which must not be chosen while the cgroup's own exists. */
        if (cg[0])
                put(v1 ? "/memory/memory.oom_control" : "/memory.events", "oom_kill 99\n");
        snprintf(want, sizeof(want), "%s%s", root, rel);
        file = agent_cgroup_events_at(root, getpid());
        ck_assert_ptr_nonnull(file);
        ck_assert_str_eq(file, want);
        base = agent_oom_count(file);
        ck_assert_uint_eq(base, 2);
        put(rel, v1 ? "under_oom 0\noom_kill 3\n" : "oom 4\noom_kill 3\n");
        ck_assert_uint_gt(agent_oom_count(file), base);
        free(file);
}
END_TEST

/* A pid whose cgroup is not visible (pid 0 has no /proc entry) gets the root's counter; no
 * file at all gives NULL, and a NULL or unreadable file counts 0. */
START_TEST(test_root_fallback_and_missing)
{
        char want[PATH_MAX + 64];
        char *file;

        ck_assert_ptr_null(agent_cgroup_events_at(root, 0));
        put("/memory.events", "oom 0\noom_kill 7\n");
        snprintf(want, sizeof(want), "%s/memory.events", root);
        file = agent_cgroup_events_at(root, 0);
        ck_assert_ptr_nonnull(file);
        ck_assert_str_eq(file, want);
        ck_assert_uint_eq(agent_oom_count(file), 7);
        free(file);
        put("/memory.events", "oom 1\n"); /* no oom_kill line (old kernels) */
        ck_assert_uint_eq(agent_oom_count(want), 0);
        ck_assert_uint_eq(agent_oom_count(NULL), 0);
        ck_assert_uint_eq(agent_oom_count("/nonexistent/memory.events"), 0);
}
END_TEST

int
main(void)
{
        Suite *s = suite_create("agent_oom");
        TCase *tc = tcase_create("oom");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_parse_v2_v1_and_none);
        tcase_add_test(tc, test_own_cgroup_counter);
        tcase_add_test(tc, test_root_fallback_and_missing);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
