/* check_http.c — backends/http.c against a tiny HTTP server on a Unix socket (forked child). */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/http.h"
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
        } else if (strncmp(req, "GET /hang ", 10) == 0) {
                pause();
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
        buf_free(&x.body);
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

static void
cancel_timer_cb(uv_timer_t *t)
{
        http_cancel(t->data);
        uv_close((uv_handle_t *) t, NULL);
}

START_TEST(test_cancel_pending)
{
        struct http_multi *m = http_multi_acquire(&loop);
        struct res x = {0}, y = {0};
        struct http_req *req = NULL;
        uv_timer_t t;

        request(m, "GET", "/hang", NULL, &buffered, &x, &req);
        request(m, "GET", "/hello", NULL, &buffered, &y, NULL);
        run_until(&y.done);
        uv_timer_init(&loop, &t);
        t.data = req;
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
        http_multi_release(b);
        finish(a);
}
END_TEST

static Suite *
http_suite(void)
{
        Suite *s = suite_create("http");
        TCase *tc = tcase_create("unix socket server");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_get_buffered);
        tcase_add_test(tc, test_post_echo_and_404);
        tcase_add_test(tc, test_stream_and_abort);
        tcase_add_test(tc, test_body_limit);
        tcase_add_test(tc, test_cancel_pending);
        tcase_add_test(tc, test_connect_refused);
        tcase_add_test(tc, test_shared_multi_and_escape);
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
