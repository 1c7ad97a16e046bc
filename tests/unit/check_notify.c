/* check_notify.c — the sd_notify sender and the watchdog timer against a test NOTIFY_SOCKET. */
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "daemon/notify.h"

/* A bound SOCK_DGRAM socket playing the service manager. */
struct manager {
        int fd;
        char path[108];
};

static void
manager_open(struct manager *m, bool abstract)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        socklen_t len;
        char name[64];

        snprintf(name, sizeof(name), "sandboxd-notify-test-%ld-%d", (long) getpid(), rand());
        m->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(m->fd, 0);
        if (abstract) {
                snprintf(m->path, sizeof(m->path), "@%s", name);
                memcpy(sa.sun_path + 1, name, strlen(name));
                len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
        } else {
                snprintf(m->path, sizeof(m->path), "/tmp/%s", name);
                unlink(m->path);
                memcpy(sa.sun_path, m->path, strlen(m->path) + 1);
                len = sizeof(sa);
        }
        ck_assert_int_eq(bind(m->fd, (struct sockaddr *) &sa, len), 0);
        ck_assert_int_eq(setenv("NOTIFY_SOCKET", m->path, 1), 0);
}

static void
manager_close(struct manager *m)
{
        close(m->fd);
        if (m->path[0] == '/')
                unlink(m->path);
}

/* Receives one queued datagram without waiting (AF_UNIX delivery is synchronous); NULL if none. */
static char *
manager_recv(struct manager *m, char *buf, size_t size)
{
        ssize_t n = recv(m->fd, buf, size - 1, MSG_DONTWAIT);

        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

static void
loop_finish(uv_loop_t *loop)
{
        notify_close();
        ck_assert_int_eq(uv_run(loop, UV_RUN_DEFAULT), 0);
        ck_assert_int_eq(uv_loop_close(loop), 0);
}

static void
setup(void)
{
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
}

START_TEST(test_states_arrive)
{
        struct manager m;
        uv_loop_t loop;
        char buf[2048];

        manager_open(&m, false);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        ck_assert(notify_enabled());
        ck_assert_uint_eq(notify_watchdog_usec(), 0);
        ck_assert_ptr_null(getenv("NOTIFY_SOCKET"));

        notify_ready();
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "READY=1");
        notify_status("%d connections, %s", 3, "2 sandboxes");
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "STATUS=3 connections, 2 sandboxes");
        notify_stopping();
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "STOPPING=1");
        ck_assert_ptr_null(manager_recv(&m, buf, sizeof(buf)));

        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

START_TEST(test_reloading_has_monotonic_usec)
{
        struct manager m;
        struct timespec ts;
        uv_loop_t loop;
        uint64_t before, after, got;
        char buf[256];

        manager_open(&m, false);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        before = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        notify_reloading();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        after = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;

        ck_assert_ptr_nonnull(manager_recv(&m, buf, sizeof(buf)));
        ck_assert_int_eq(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%" SCNu64, &got), 1);
        ck_assert_uint_ge(got, before);
        ck_assert_uint_le(got, after);
        notify_ready();
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "READY=1");

        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

START_TEST(test_abstract_socket)
{
        struct manager m;
        uv_loop_t loop;
        char buf[256];

        manager_open(&m, true);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        notify_ready();
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "READY=1");
        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

START_TEST(test_status_is_one_bounded_line)
{
        struct manager m;
        uv_loop_t loop;
        char buf[4096], longtext[3000];

        manager_open(&m, false);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        notify_status("%s", "ok\nREADY=1");
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "STATUS=ok READY=1");

        /* 'é' is two bytes; 1023 ASCII bytes then 'é' must not leave half a character. */
        memset(longtext, 'a', 1023);
        strcpy(longtext + 1023, "\xc3\xa9tail");
        notify_status("%s", longtext);
        ck_assert_ptr_nonnull(manager_recv(&m, buf, sizeof(buf)));
        ck_assert_uint_eq(strlen(buf), strlen("STATUS=") + 1023);
        ck_assert_int_eq(buf[strlen(buf) - 1], 'a');

        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

START_TEST(test_disabled_is_noop)
{
        uv_loop_t loop;

        setenv("WATCHDOG_USEC", "200000", 1);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        ck_assert(!notify_enabled());
        ck_assert_uint_eq(notify_watchdog_usec(), 0);
        ck_assert_ptr_null(getenv("WATCHDOG_USEC"));
        notify_ready();
        notify_status("nobody listens");
        ck_assert_int_eq(notify_send("READY=1"), 0);
        loop_finish(&loop);
}
END_TEST

START_TEST(test_bad_address_rejected)
{
        uv_loop_t loop;

        setenv("NOTIFY_SOCKET", "relative/path", 1);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), -EINVAL);
        ck_assert(!notify_enabled());
        ck_assert_ptr_null(getenv("NOTIFY_SOCKET"));
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

START_TEST(test_init_twice)
{
        struct manager m;
        uv_loop_t loop;

        manager_open(&m, false);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), -EALREADY);
        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

/* Test-side ticker with the same period as the watchdog timer: both are armed at the same loop
 * time, so libuv fires them in the same loop iterations and the pings counted must match the
 * ticks. A watchdog at the wrong rate (e.g. the full period, or a quarter) would not. */
struct ticker {
        uv_timer_t timer;
        struct manager *m;
        int ticks, pings, max_ticks;
        uint64_t start_ms, end_ms;
};

static void
ticker_cb(uv_timer_t *t)
{
        struct ticker *tk = t->data;
        char buf[64];

        tk->ticks++;
        while (manager_recv(tk->m, buf, sizeof(buf))) {
                ck_assert_str_eq(buf, "WATCHDOG=1");
                tk->pings++;
        }
        if (tk->ticks == tk->max_ticks) {
                tk->end_ms = uv_now(t->loop);
                uv_close((uv_handle_t *) t, NULL);
        }
}

static void
run_watchdog(struct ticker *tk, struct manager *m, uint64_t period_ms)
{
        uv_loop_t loop;

        tk->m = m;
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        uv_update_time(&loop);
        ck_assert_int_eq(notify_init(&loop), 0);
        ck_assert_int_eq(uv_timer_init(&loop, &tk->timer), 0);
        tk->timer.data = tk;
        tk->start_ms = uv_now(&loop);
        /* Armed after the watchdog timer so it runs second within an iteration. */
        ck_assert_int_eq(uv_timer_start(&tk->timer, ticker_cb, period_ms, period_ms), 0);
        ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
        loop_finish(&loop);
}

START_TEST(test_watchdog_pings_at_half_period)
{
        struct ticker tk = {.max_ticks = 5};
        struct manager m;

        manager_open(&m, false);
        setenv("WATCHDOG_USEC", "200000", 1);
        run_watchdog(&tk, &m, 100);
        ck_assert_uint_eq(notify_watchdog_usec(), 0); /* reset by notify_close */
        ck_assert_int_eq(tk.ticks, 5);
        ck_assert_int_ge(tk.pings, tk.ticks - 1);
        ck_assert_int_le(tk.pings, tk.ticks);
        /* Timers never fire early: 5 ticks of 100 ms took at least 500 ms of loop time. */
        ck_assert_uint_ge(tk.end_ms - tk.start_ms, 500);
        ck_assert_ptr_null(getenv("WATCHDOG_USEC"));
        manager_close(&m);
}
END_TEST

START_TEST(test_watchdog_for_other_pid_ignored)
{
        struct ticker tk = {.max_ticks = 3};
        struct manager m;
        char pid[32];

        manager_open(&m, false);
        setenv("WATCHDOG_USEC", "200000", 1);
        snprintf(pid, sizeof(pid), "%ld", (long) getpid() + 1);
        setenv("WATCHDOG_PID", pid, 1);
        run_watchdog(&tk, &m, 100);
        ck_assert_int_eq(tk.pings, 0);
        ck_assert_ptr_null(getenv("WATCHDOG_PID"));
        manager_close(&m);
}
END_TEST

START_TEST(test_watchdog_for_own_pid)
{
        struct ticker tk = {.max_ticks = 3};
        struct manager m;
        char pid[32];

        manager_open(&m, false);
        setenv("WATCHDOG_USEC", "200000", 1);
        snprintf(pid, sizeof(pid), "%ld", (long) getpid());
        setenv("WATCHDOG_PID", pid, 1);
        run_watchdog(&tk, &m, 100);
        ck_assert_int_ge(tk.pings, 2);
        ck_assert_int_le(tk.pings, 3);
        manager_close(&m);
}
END_TEST

START_TEST(test_watchdog_malformed)
{
        struct manager m;
        uv_loop_t loop;
        char buf[64];

        manager_open(&m, false);
        setenv("WATCHDOG_USEC", "12abc", 1);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), -EINVAL);
        /* The notify socket still works; only the watchdog is off. */
        ck_assert(notify_enabled());
        ck_assert_uint_eq(notify_watchdog_usec(), 0);
        notify_ready();
        ck_assert_str_eq(manager_recv(&m, buf, sizeof(buf)), "READY=1");
        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

/* The watchdog timer must not keep an otherwise finished loop running. */
START_TEST(test_watchdog_does_not_hold_loop)
{
        struct manager m;
        uv_loop_t loop;

        manager_open(&m, false);
        setenv("WATCHDOG_USEC", "200000", 1);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(notify_init(&loop), 0);
        ck_assert_uint_eq(notify_watchdog_usec(), 200000);
        ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
        loop_finish(&loop);
        manager_close(&m);
}
END_TEST

static Suite *
notify_suite(void)
{
        Suite *s = suite_create("notify");
        TCase *tc = tcase_create("core");

        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, test_states_arrive);
        tcase_add_test(tc, test_reloading_has_monotonic_usec);
        tcase_add_test(tc, test_abstract_socket);
        tcase_add_test(tc, test_status_is_one_bounded_line);
        tcase_add_test(tc, test_disabled_is_noop);
        tcase_add_test(tc, test_bad_address_rejected);
        tcase_add_test(tc, test_init_twice);
        tcase_add_test(tc, test_watchdog_pings_at_half_period);
        tcase_add_test(tc, test_watchdog_for_other_pid_ignored);
        tcase_add_test(tc, test_watchdog_for_own_pid);
        tcase_add_test(tc, test_watchdog_malformed);
        tcase_add_test(tc, test_watchdog_does_not_hold_loop);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(notify_suite());
        int failed;

        srand((unsigned) getpid());
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
