/* check_daytona_ws.c — the WebSocket client of the Daytona backend (daytona_ws.c), in particular
 * a connection opened before its stream's URL is known (daytona_ws_preconnect and
 * daytona_ws_upgrade), against a small server on 127.0.0.1 (forked child). */
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/daytona/daytona_ws.h"
#include "backends/http.h"
#include "protocol/util.h"

static uv_loop_t loop;
static struct http_multi *multi;
static pid_t server;
static int port;
static int accepted[2]; /* the server writes a byte per connection it accepts */

/* One connection: GET /ok upgrades and sends "hi" then a normal close; anything else is a
 * 404. The request heads it got go to the parent through the log pipe (one per line). */
static void
srv_conn(int fd)
{
        char req[8192], accept_key[29], out[512];
        char *key, *eol;
        size_t got = 0;
        ssize_t n;

        while (!memmem(req, got, "\r\n\r\n", 4) &&
               (n = read(fd, req + got, sizeof(req) - 1 - got)) > 0)
                got += (size_t) n;
        req[got] = '\0';
        key = strcasestr(req, "Sec-WebSocket-Key: ");
        if (strncmp(req, "GET /ok ", 8) || !key || !(eol = strstr(key, "\r\n"))) {
                const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope";
                if (write(fd, nf, strlen(nf)) < 0)
                        _exit(2);
                return;
        }
        *eol = '\0';
        daytona_ws_accept(key + 19, accept_key);
        n = snprintf(out, sizeof(out),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
                     "\x82\x02hi\x88\x02\x03\xe8",
                     accept_key);
        if (write(fd, out, (size_t) n) < 0)
                _exit(2);
        while (read(fd, req, sizeof(req)) > 0) /* the client's close frame, then its EOF */
                ;
}

static int
listen_local(int *p)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        *p = ntohs(sa.sin_port);
        return fd;
}

static void
setup(void)
{
        int lfd = listen_local(&port);

        ck_assert_int_eq(listen(lfd, 16), 0);
        ck_assert_int_eq(pipe(accepted), 0);
        server = fork();
        ck_assert_int_ge(server, 0);
        if (server == 0) {
                for (;;) {
                        int fd = accept(lfd, NULL, NULL);
                        if (fd < 0 || write(accepted[1], "a", 1) != 1)
                                _exit(1);
                        if (fork() == 0) {
                                srv_conn(fd);
                                _exit(0);
                        }
                        close(fd);
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
                }
        }
        close(lfd);
        close(accepted[1]);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        multi = http_multi_acquire(&loop);
}

static void
teardown(void)
{
        http_multi_release(multi);
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        close(accepted[0]);
}

struct got {
        struct buf data;
        bool ended;
        long status;
        char error[256];
};

static void
got_data(void *ctx, const char *data, size_t len)
{
        buf_append(&((struct got *) ctx)->data, data, len);
}

static void
got_end(void *ctx, long status, const char *body, size_t blen, const char *error)
{
        struct got *g = ctx;

        g->ended = true;
        g->status = status;
        snprintf(g->error, sizeof(g->error), "%s", error ? error : "");
}

static const struct daytona_ws_cbs cbs = {.on_data = got_data, .on_end = got_end};

static void
run_until_ended(struct got *g)
{
        while (!g->ended)
                ck_assert_msg(uv_run(&loop, UV_RUN_ONCE) || g->ended, "the loop ran dry");
}

static char *
url(int p, const char *path)
{
        return xasprintf("http://127.0.0.1:%d%s", p, path);
}

/* The server has accepted the spare: a few turns of the loop let the client see it connected
 * (either way the upgrade must work; this makes the spare path the one usually taken). */
static void
wait_accepted(void)
{
        char c;

        for (;;) {
                struct pollfd pfd = {.fd = accepted[0], .events = POLLIN};
                uv_run(&loop, UV_RUN_NOWAIT);
                if (poll(&pfd, 1, 10) == 1)
                        break;
        }
        ck_assert_int_eq(read(accepted[0], &c, 1), 1);
        for (int i = 0; i < 3; i++)
                uv_run(&loop, UV_RUN_NOWAIT);
}

START_TEST(test_preconnect_then_upgrade)
{
        char *base = url(port, "/toolbox/sb"), *u = url(port, "/ok");
        struct daytona_ws *ws = NULL;
        struct got g = {0};

        ck_assert_int_eq(daytona_ws_preconnect(multi, &loop, base, &ws), 0);
        wait_accepted();
        ck_assert_int_eq(daytona_ws_upgrade(ws, u, NULL, &cbs, &g), 0);
        ck_assert(!g.ended); /* nothing from inside the call */
        /* Once only: the handle has its stream. */
        ck_assert_int_eq(daytona_ws_upgrade(ws, u, NULL, &cbs, &g), -EINVAL);
        run_until_ended(&g);
        ck_assert_str_eq(g.error, "");
        ck_assert_int_eq(g.status, 0);
        ck_assert_uint_eq(g.data.len, 2);
        ck_assert(!memcmp(g.data.data, "hi", 2));
        buf_free(&g.data);
        free(base);
        free(u);
}
END_TEST

/* The upgrade asked for while the connection is still being made goes out once it is. */
START_TEST(test_upgrade_while_connecting_and_refusal)
{
        char *ok = url(port, "/ok"), *missing = url(port, "/missing");
        struct daytona_ws *ws = NULL;
        struct got g = {0}, h = {0};

        ck_assert_int_eq(daytona_ws_preconnect(multi, &loop, ok, &ws), 0);
        ck_assert_int_eq(daytona_ws_upgrade(ws, ok, NULL, &cbs, &g), 0);
        run_until_ended(&g);
        ck_assert_str_eq(g.error, "");
        ck_assert_uint_eq(g.data.len, 2);
        /* daytona_ws_open is the same two steps; a refused upgrade says its status. */
        ck_assert_int_eq(daytona_ws_open(multi, &loop, missing, NULL, &cbs, &h, &ws), 0);
        run_until_ended(&h);
        ck_assert_int_eq(h.status, 404);
        buf_free(&g.data);
        buf_free(&h.data);
        free(ok);
        free(missing);
}
END_TEST

/* A spare whose connection failed, or one to another host, takes no upgrade: nothing is sent,
 * no callback runs, and the caller closes it. */
START_TEST(test_dead_or_foreign_spare_refuses)
{
        int closed_port, fd = listen_local(&closed_port); /* bound, not listening: refused */
        char *dead = url(closed_port, "/ok"), *ok = url(port, "/ok");
        char *other = xasprintf("http://localhost:%d/ok", port);
        struct daytona_ws *ws = NULL, *ws2 = NULL;
        struct got g = {0};

        ck_assert_int_eq(daytona_ws_preconnect(multi, &loop, dead, &ws), 0);
        uv_run(&loop, UV_RUN_DEFAULT); /* until the attempt failed and its handles closed */
        ck_assert_int_eq(daytona_ws_upgrade(ws, dead, NULL, &cbs, &g), -EPIPE);
        daytona_ws_close(ws);
        ck_assert_int_eq(daytona_ws_preconnect(multi, &loop, ok, &ws2), 0);
        ck_assert_int_eq(daytona_ws_upgrade(ws2, other, NULL, &cbs, &g), -EPIPE);
        ck_assert_int_eq(daytona_ws_upgrade(ws2, "ftp://x/", NULL, &cbs, &g), -EINVAL);
        daytona_ws_close(ws2);
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert(!g.ended);
        ck_assert_uint_eq(g.data.len, 0);
        close(fd);
        free(dead);
        free(ok);
        free(other);
}
END_TEST

static Suite *
ws_suite(void)
{
        Suite *s = suite_create("daytona_ws");
        TCase *tc = tcase_create("ws");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_preconnect_then_upgrade);
        tcase_add_test(tc, test_upgrade_while_connecting_and_refusal);
        tcase_add_test(tc, test_dead_or_foreign_spare_refuses);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(ws_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
