/* check_peer.c — peer_inside with real processes (children, a double fork, setsid) and the
 * cgroup matching on the cgroup file shapes of cgroup v1/v2, cgroupfs and systemd drivers. */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/peer.h"
#include "protocol/util.h"

/* A child that waits for the pipe to close; with orphan, its own child after it exited (the
 * orphan is re-parented to init or the nearest subreaper) in a new session. */
static pid_t
spawn_waiter(int *wfd, bool orphan)
{
        int p[2], r[2];
        pid_t pid, got = 0;
        char c;

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(pipe(r), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(p[1]);
                close(r[0]);
                if (orphan && fork() != 0)
                        _exit(0);
                if (orphan)
                        setsid();
                got = getpid();
                if (write(r[1], &got, sizeof(got)) != sizeof(got))
                        _exit(1);
                (void) read(p[0], &c, 1);
                _exit(0);
        }
        close(p[0]);
        close(r[1]);
        ck_assert_int_eq(read(r[0], &got, sizeof(got)), sizeof(got));
        close(r[0]);
        if (orphan)
                waitpid(pid, NULL, 0);
        *wfd = p[1];
        return got;
}

static int
prctl_subreaper(void)
{
        return prctl(PR_SET_CHILD_SUBREAPER, 1);
}

#define NO_SUCH_PID 999999999 /* above any pid_max */

START_TEST(test_own_children_are_inside)
{
        int w;
        pid_t kid = spawn_waiter(&w, false);

        ck_assert_ptr_nonnull(peer_inside(kid, getpid(), NULL));
        /* Not a descendant of some other process. */
        ck_assert_ptr_null(peer_inside(kid, NO_SUCH_PID, NULL));
        close(w);
        waitpid(kid, NULL, 0);
}
END_TEST

START_TEST(test_parent_is_outside)
{
        ck_assert_ptr_null(peer_inside(getppid() > 1 ? getppid() : 1, getpid(), NULL));
        ck_assert_ptr_null(peer_inside(getpid(), NO_SUCH_PID, NULL));
}
END_TEST

/* A double-forked, setsid'd grandchild is still ours when we are its subreaper. */
START_TEST(test_orphan_of_a_subreaper_is_inside)
{
        int w;
        pid_t kid;

        ck_assert_int_eq(prctl_subreaper(), 0);
        kid = spawn_waiter(&w, true);
        ck_assert_ptr_nonnull(peer_inside(kid, getpid(), NULL));
        close(w);
        waitpid(kid, NULL, 0);
}
END_TEST

START_TEST(test_fails_closed)
{
        int w;
        pid_t kid = spawn_waiter(&w, false);

        ck_assert_ptr_nonnull(peer_inside(0, getpid(), NULL));
        ck_assert_ptr_nonnull(peer_inside(-1, getpid(), NULL));
        close(w);
        waitpid(kid, NULL, 0);
        /* gone: its ancestry cannot be read */
        ck_assert_ptr_nonnull(peer_inside(kid, 1, NULL));
}
END_TEST

START_TEST(test_cgroup_match)
{
        static const char id[] = "4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b";
        const char *const ids[] = {"0123abcd", id, NULL};
        const char *const none[] = {NULL};
        static const char *const inside[] = {
                "0::/system.slice/"
                "docker-4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d"
                "4c3b.scope\n",
                "0::/docker/4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b\n",
                "12:pids:/docker/4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b\n"
                "1:name=systemd:/docker/"
                "4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d"
                "4c3b\n",
        };
        static const char *const outside[] = {
                "0::/user.slice/user-1000.slice/session-3.scope\n",
                "0::/system.slice/docker-99999999.scope\n",
                "",
        };

        for (size_t i = 0; i < ARRAY_SIZE(inside); i++)
                ck_assert_msg(peer_cgroup_match(inside[i], ids), "%s", inside[i]);
        for (size_t i = 0; i < ARRAY_SIZE(outside); i++)
                ck_assert_msg(!peer_cgroup_match(outside[i], ids), "%s", outside[i]);
        ck_assert(!peer_cgroup_match(inside[0], none));
        ck_assert(!peer_cgroup_match(inside[0], NULL));
}
END_TEST

static Suite *
peer_suite(void)
{
        Suite *s = suite_create("peer");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_own_children_are_inside);
        tcase_add_test(tc, test_parent_is_outside);
        tcase_add_test(tc, test_orphan_of_a_subreaper_is_inside);
        tcase_add_test(tc, test_fails_closed);
        tcase_add_test(tc, test_cgroup_match);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(peer_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
