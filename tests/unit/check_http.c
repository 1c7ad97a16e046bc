/* check_http.c — backends/http.c against a tiny HTTP server on a Unix socket (forked child). */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/http.h"
#include "backends/http1.h"
#include "protocol/util.h"

static uv_loop_t loop;
static char sock_path[108];
static pid_t server;

static void
srv_reply(int fd, const char *status, const char *body, size_t len)
{
        char hdr[256];
        int n = snprintf(hdr, sizeof(hdr),
                         "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n",
                         status, len);

        if (write(fd, hdr, (size_t) n) < 0 || (len && write(fd, body, len) < 0))
                _exit(2);
}

static void
srv_raw(int fd, const char *s)
{
        if (write(fd, s, strlen(s)) < 0)
                _exit(2);
}

static void
srv_handle(int fd)
{
        char req[65536];
        size_t got = 0;
        ssize_t n;
        char *end;

        while ((n = read(fd, req + got, sizeof(req) - 1 - got)) > 0) {
                got += (size_t) n;
                req[got] = '\0';
                end = strstr(req, "\r\n\r\n");
                if (!end)
                        continue;
                char *cl = strcasestr(req, "Content-Length: ");
                size_t want = cl ? strtoul(cl + 16, NULL, 10) : 0;
                if (got - (size_t) (end + 4 - req) >= want)
                        break;
        }
        end = strstr(req, "\r\n\r\n");
        if (strncmp(req, "GET /hello ", 11) == 0) {
                srv_reply(fd, "200 OK", "hello", 5);
        } else if (strncmp(req, "POST /echo ", 11) == 0 && end) {
                srv_reply(fd, "200 OK", end + 4, strlen(end + 4));
        } else if (strncmp(req, "GET /big ", 9) == 0) {
                char *b = xmalloc(1 << 20);
                memset(b, 'x', 1 << 20);
                srv_reply(fd, "200 OK", b, 1 << 20);
                free(b);
        } else if (strncmp(req, "GET /chunked ", 13) == 0) {
                srv_raw(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5;ext=1\r\nhello\r\n");
                srv_raw(fd, "7\r\n, world\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n");
        } else if (strncmp(req, "GET /nolen ", 11) == 0) {
                srv_raw(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil eof");
        } else if (strncmp(req, "GET /truncated ", 15) == 0) {
                srv_raw(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
        } else if (strncmp(req, "GET /hang ", 10) == 0) {
                /* Until the client goes away (not pause(): the child would outlive the test). */
                while (read(fd, req, sizeof(req)) > 0)
                        ;
        } else {
                srv_reply(fd, "404 Not Found", "nope", 4);
        }
}

static void
setup(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int lfd;

        snprintf(sock_path, sizeof(sock_path), "/tmp/sbx-http-test-%d.sock", (int) getpid());
        unlink(sock_path);
        memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(lfd, 64), 0);
        server = fork();
        ck_assert_int_ge(server, 0);
        if (server == 0) {
                for (;;) {
                        int fd = accept(lfd, NULL, NULL);
                        if (fd < 0)
                                _exit(1);
                        if (fork() == 0) {
                                srv_handle(fd);
                                _exit(0);
                        }
                        close(fd);
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
                }
        }
        close(lfd);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
}

static void
teardown(void)
{
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        unlink(sock_path);
}

struct res {
        bool done;
        long status;
        int curl_code;
        struct buf body;
        size_t streamed;
        int chunks;
        bool abort_first;
};

static void
done_cb(void *ctx, struct http_req *req, const struct http_result *r)
{
        struct res *x = ctx;

        x->done = true;
        x->status = r->status;
        x->curl_code = r->curl_code;
        if (r->body)
                buf_append(&x->body, r->body, r->body_len);
}

static int
data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        struct res *x = ctx;

        x->streamed += len;
        x->chunks++;
        return x->abort_first ? -1 : 0;
}

static void
run_until(const bool *flag)
{
        while (!*flag) {
                int more = uv_run(&loop, UV_RUN_ONCE);
                ck_assert_msg(more || *flag, "the loop ran dry");
        }
}

static void
request(struct http_multi *m, const char *method, const char *path, const char *body,
        const struct http_cbs *cbs, struct res *x, struct http_req **ret)
{
        char url[128];
        struct http_req_spec s = {.method = method,
                                  .url = url,
                                  .unix_socket = sock_path,
                                  .body = body,
                                  .body_len = body ? strlen(body) : 0};

        snprintf(url, sizeof(url), "http://localhost%s", path);
        ck_assert_int_eq(http_request(m, &s, cbs, x, ret), 0);
}

static void
finish(struct http_multi *m)
{
        http_multi_release(m);
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static const struct http_cbs buffered = {.on_done = done_cb};
static const struct http_cbs streamed = {.on_data = data_cb, .on_done = done_cb};

START_TEST(test_get_buffered)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0};

        request(m, "GET", "/hello", NULL, &buffered, &x, NULL);
        run_until(&x.done);
        ck_assert_int_eq(x.status, 200);
        ck_assert_int_eq(x.curl_code, 0);
        ck_assert_str_eq(x.body.data, "hello");
        ck_assert(http_curl_initialised());
        buf_free(&x.body);
        finish(m);
}
END_TEST

static void
due_cb(uv_handle_t *h, void *arg)
{
        if (h->type == UV_TIMER && uv_is_active(h))
                *(uint64_t *) arg += uv_timer_get_due_in((uv_timer_t *) h);
}

/* What the loop would sleep for in timers before its next turn. */
static uint64_t
timers_due(void)
{
        uint64_t due = 0;

        uv_walk(&loop, due_cb, &due);
        return due;
}

/* A request just added (libcurl's 0 ms timeout) goes out on the next loop turn: the loop does
 * not sleep a millisecond first, as a 1 ms timer would make it. */
START_TEST(test_new_request_without_sleep)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0}, y = {0};

        request(m, "GET", "/hello", NULL, &buffered, &x, NULL);
        ck_assert_uint_eq(timers_due(), 0);
        run_until(&x.done);
        ck_assert_int_eq(x.status, 200);
        request(m, "GET", "/hello", NULL, &buffered, &y, NULL);
        ck_assert_uint_eq(timers_due(), 0);
        run_until(&y.done);
        ck_assert_int_eq(y.status, 200);
        buf_free(&x.body);
        buf_free(&y.body);
        finish(m);
}
END_TEST

START_TEST(test_post_echo_and_404)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res a = {0}, b = {0};

        request(m, "POST", "/echo", "{\"k\":1}", &buffered, &a, NULL);
        request(m, "GET", "/missing", NULL, &buffered, &b, NULL);
        run_until(&a.done);
        run_until(&b.done);
        ck_assert_str_eq(a.body.data, "{\"k\":1}");
        ck_assert_int_eq(b.status, 404);
        buf_free(&a.body);
        buf_free(&b.body);
        finish(m);
}
END_TEST

START_TEST(test_stream_and_abort)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res a = {0}, b = {.abort_first = true};

        request(m, "GET", "/big", NULL, &streamed, &a, NULL);
        request(m, "GET", "/big", NULL, &streamed, &b, NULL);
        run_until(&a.done);
        run_until(&b.done);
        ck_assert_uint_eq(a.streamed, 1u << 20);
        ck_assert_int_gt(a.chunks, 1);
        ck_assert_int_eq(b.chunks, 1);
        ck_assert_int_ne(b.curl_code, 0);
        finish(m);
}
END_TEST

START_TEST(test_body_limit)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0};
        char url[128];
        struct http_req_spec s = {.url = url, .unix_socket = sock_path, .max_body = 1000};

        snprintf(url, sizeof(url), "http://localhost/big");
        ck_assert_int_eq(http_request(m, &s, &buffered, &x, NULL), 0);
        run_until(&x.done);
        ck_assert_int_ne(x.curl_code, 0);
        buf_free(&x.body);
        finish(m);
}
END_TEST

/* A request of either client to cancel from a timer. */
struct to_cancel {
        struct http_req *req;
        struct http1_req *req1;
};

static void
cancel_timer_cb(uv_timer_t *t)
{
        struct to_cancel *c = t->data;

        if (c->req)
                http_cancel(c->req);
        else
                http1_cancel(c->req1);
        uv_close((uv_handle_t *) t, NULL);
}

START_TEST(test_cancel_pending)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0}, y = {0};
        struct to_cancel c = {0};
        uv_timer_t t;

        request(m, "GET", "/hang", NULL, &buffered, &x, &c.req);
        request(m, "GET", "/hello", NULL, &buffered, &y, NULL);
        run_until(&y.done);
        uv_timer_init(&loop, &t);
        t.data = &c;
        uv_timer_start(&t, cancel_timer_cb, 0, 0);
        uv_run(&loop, UV_RUN_DEFAULT); /* ends only if the cancel released everything */
        ck_assert(!x.done);
        buf_free(&y.body);
        finish(m);
}
END_TEST

START_TEST(test_connect_refused)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0};
        struct http_req_spec s = {.url = "http://localhost/x", .unix_socket = "/nonexistent.sock"};

        ck_assert_int_eq(http_request(m, &s, &buffered, &x, NULL), 0);
        run_until(&x.done);
        ck_assert_int_eq(x.status, 0);
        ck_assert_int_ne(x.curl_code, 0);
        buf_free(&x.body);
        finish(m);
}
END_TEST

START_TEST(test_shared_multi_and_escape)
{
        struct http_multi *a = http_multi_acquire(&loop), *b = http_multi_acquire(&loop);
        char *e = http_escape("a b/c?d=\"e\"");

        ck_assert_ptr_eq(a, b);
        ck_assert_str_eq(e, "a%20b/c%3Fd%3D%22e%22");
        free(e);
        /* An empty string (an empty volume name or image) gives a terminated empty string. */
        e = http_escape("");
        ck_assert_str_eq(e, "");
        free(e);
        e = http_escape("\xff\x01");
        ck_assert_str_eq(e, "%FF%01");
        /* libcurl is set up by the first request, not by acquiring the handle. */
        ck_assert(!http_curl_initialised());
        free(e);
        http_multi_release(b);
        finish(a);
}
END_TEST

/* ---- http1: the hand-written client ---- */

struct res1 {
        bool done;
        int status;
        char error[128];
        struct buf body;
};

static void
done1_cb(void *ctx, const struct http1_result *r)
{
        struct res1 *x = ctx;

        x->done = true;
        x->status = r->status;
        snprintf(x->error, sizeof(x->error), "%s", r->error ? r->error : "");
        if (r->body)
                buf_append(&x->body, r->body, r->body_len);
}

static void
get1(const char *sock, const char *target, size_t max_body, unsigned timeout_ms, struct res1 *x)
{
        ck_assert_int_eq(
                http1_get(&loop, sock, "docker", target, max_body, timeout_ms, done1_cb, x, NULL),
                0);
        run_until(&x->done);
}

static void
finish1(void)
{
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}

START_TEST(test_http1_bodies)
{
        static const struct {
                const char *target;
                int status;
                const char *body;
        } cases[] = {
                {"/hello", 200, "hello"},
                {"/chunked", 200, "hello, world0123456789"},
                {"/nolen", 200, "until eof"},
                {"/missing", 404, "nope"},
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct res1 x = {0};
                get1(sock_path, cases[i].target, 1000, 5000, &x);
                ck_assert_msg(!x.error[0], "%s: %s", cases[i].target, x.error);
                ck_assert_int_eq(x.status, cases[i].status);
                ck_assert_str_eq(x.body.data, cases[i].body);
                buf_free(&x.body);
        }
        ck_assert(!http_curl_initialised());
        finish1();
}
END_TEST

START_TEST(test_http1_failures)
{
        static const struct {
                const char *sock, *target;
                size_t max_body;
                unsigned timeout_ms;
                const char *error;
        } cases[] = {
                {NULL, "/big", 1000, 5000, "answer too large"},
                {NULL, "/truncated", 1000, 5000, "malformed or truncated HTTP answer"},
                {NULL, "/hang", 1000, 50, "connection timed out"},
                {"/nonexistent/docker.sock", "/_ping", 1000, 5000, "no such file or directory"},
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct res1 x = {0};
                get1(cases[i].sock ? cases[i].sock : sock_path, cases[i].target, cases[i].max_body,
                     cases[i].timeout_ms, &x);
                ck_assert_int_eq(x.status, 0);
                ck_assert_str_eq(x.error, cases[i].error);
                ck_assert_ptr_null(x.body.data);
        }
        ck_assert_int_eq(
                http1_get(&loop, sock_path, "docker", "/a b", 10, 10, done1_cb, NULL, NULL),
                -EINVAL);
        finish1();
}
END_TEST

START_TEST(test_http1_cancel)
{
        struct res1 x = {0};
        struct to_cancel c = {0};
        uv_timer_t t;

        ck_assert_int_eq(
                http1_get(&loop, sock_path, "docker", "/hang", 10, 60000, done1_cb, &x, &c.req1),
                0);
        uv_timer_init(&loop, &t);
        t.data = &c;
        uv_timer_start(&t, cancel_timer_cb, 20, 0);
        finish1(); /* ends only if the cancel closed everything */
        ck_assert(!x.done);
}
END_TEST

START_TEST(test_http1_parse_head)
{
        static const struct {
                const char *in;
                size_t max;
                int rc, status;
                long long content_len;
                bool chunked;
        } cases[] = {
                {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nbody", 100, 1, 200, 12, false},
                {"HTTP/1.0 101 Switching\r\nupgrade: tcp\r\n\r\n", 100, 1, 101, -1, false},
                {"HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n", 100, 1, 200, -1, true},
                {"HTTP/1.1 204\r\n\r\n", 100, 1, 204, -1, false},
                {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n", 100, 0, 0, 0, false},
                {"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n", 20, -EMSGSIZE, 0, 0, false},
                {"HTTP/2 200 OK\r\n\r\n", 100, -EBADMSG, 0, 0, false},
                {"HTTP/1.1 2x0 OK\r\n\r\n", 100, -EBADMSG, 0, 0, false},
                {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 100, -EBADMSG, 0, 0, false},
                {"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 100, -EBADMSG, 0, 0, false},
                {"garbage\r\n\r\n", 100, -EBADMSG, 0, 0, false},
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct http1_head h = {0};
                int rc = http1_parse_head(cases[i].in, strlen(cases[i].in), cases[i].max, &h);
                ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d", i, rc);
                if (rc <= 0)
                        continue;
                ck_assert_int_eq(h.status, cases[i].status);
                ck_assert_int_eq(h.content_len, cases[i].content_len);
                ck_assert_int_eq(h.chunked, cases[i].chunked);
                ck_assert_ptr_eq(strstr(cases[i].in, "\r\n\r\n") + 4, cases[i].in + h.head_len);
        }
}
END_TEST

static Suite *
http_suite(void)
{
        Suite *s = suite_create("http");
        TCase *tc = tcase_create("unix socket server");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_get_buffered);
        tcase_add_test(tc, test_new_request_without_sleep);
        tcase_add_test(tc, test_post_echo_and_404);
        tcase_add_test(tc, test_stream_and_abort);
        tcase_add_test(tc, test_body_limit);
        tcase_add_test(tc, test_cancel_pending);
        tcase_add_test(tc, test_connect_refused);
        tcase_add_test(tc, test_shared_multi_and_escape);
        tcase_add_test(tc, test_http1_bodies);
        tcase_add_test(tc, test_http1_failures);
        tcase_add_test(tc, test_http1_cancel);
        tcase_add_test(tc, test_http1_parse_head);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(http_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
