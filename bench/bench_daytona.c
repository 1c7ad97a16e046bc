/* bench_daytona.c — the daytona backend against the API itself, measured in the same run on the
 * fake Daytona (tests/fakes/daytona, started here as a process):
 *   baseline  POST {toolbox}/process/execute {"command":"true"}: in process with libcurl on a
 *             kept-alive connection (backends/http.c), and with the curl CLI
 *   sandboxd  exec {argv:["true"]} and {command:"true"} (shell-state wrapper) through a real
 *             daemon ($SANDBOXD_BIN) on a private socket: a session command, its log followed
 *             over a WebSocket, the end markers
 * Ratios are p50 over BENCH_N rounds (default 200); target: sandboxd argv <= 1.2 x libcurl.
 * Needs /usr/bin/python3 and the tests/ directory ($SANDBOXD_TESTS, default "tests").
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/daytona/daytona_ws.h"
#include "backends/http.h"
#include "bench/helper_daemon.h"
#include "protocol/util.h"

struct bench {
        char dir[64], key[40], url[256], toolbox[512];
        pid_t fake;
        struct bd d; /* bench/helper_daemon.c; its own directory */
};

static int
cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static double
p50_ms(uint64_t *v, int n)
{
        qsort(v, (size_t) n, sizeof(*v), cmp_u64);
        return (double) v[n / 2] / 1e6;
}

static int
write_file(const char *path, const char *text, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));

        if (fd >= 0)
                close(fd);
        return n == (ssize_t) strlen(text) ? 0 : -1;
}

/* Starts the fake and waits for the URL it writes once it listens. */
static int
fake_start(struct bench *b)
{
        const char *tests = getenv("SANDBOXD_TESTS") ? getenv("SANDBOXD_TESTS") : "tests";
        char kf[128], uf[128], root[128];
        FILE *f = NULL;

        snprintf(kf, sizeof(kf), "%s/key", b->dir);
        snprintf(uf, sizeof(uf), "%s/url", b->dir);
        snprintf(root, sizeof(root), "%s/fake", b->dir);
        util_random_hex(b->key, 32);
        if (write_file(kf, b->key, 0600) < 0)
                return -1;
        b->fake = fork();
        if (b->fake == 0) {
                if (chdir(tests) < 0)
                        _exit(127);
                execl("/usr/bin/python3", "python3", "-m", "fakes.daytona", "--key-file", kf,
                      "--url-file", uf, "--root", root, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 1000 && !(f = fopen(uf, "r")); i++)
                usleep(10000);
        if (!f || !fgets(b->url, sizeof(b->url), f))
                return -1;
        fclose(f);
        b->url[strcspn(b->url, "\n")] = '\0';
        return 0;
}

/* Starts sandboxd with the fake as its Daytona. */
static int
daemon_start(struct bench *b)
{
        char text[1024];

        snprintf(text, sizeof(text),
                 "[backend.daytona]\napi_url = %s\napi_key_file = %s/key\nremote_dir = %s/remote\n",
                 b->url, b->dir, b->dir);
        return bd_start(&b->d, text, NULL);
}

static json_t *
rpc(struct bench *b, const char *method, json_t *params /* steals */)
{
        return bd_call(&b->d, method, params);
}

/* One exec of params (borrowed) that must succeed; its result (new). */
static json_t *
rpc_exec(struct bench *b, json_t *params)
{
        json_t *r = rpc(b, "exec", json_deep_copy(params));

        if (!r || json_integer_value(json_object_get(r, "exit_code")) != 0)
                exit(1);
        return r;
}

/* ---- the baselines: requests of our own on a libuv loop, through backends/http.c ---- */

struct direct {
        struct bench *b;
        uv_loop_t loop;
        struct http_multi *m;
        char auth[96];
        char session[600];
        long status;
        bool ended;
        char cmd_id[64];
};

static void
direct_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct direct *d = ctx;
        json_t *j = res->body ? json_loads(res->body, 0, NULL) : NULL;
        const char *id = json_string_value(json_object_get(j, "cmdId"));

        d->status = res->error ? -1 : res->status;
        snprintf(d->cmd_id, sizeof(d->cmd_id), "%s", id ? id : "");
        json_decref(j);
}

/* One request, run to its end: its status. */
static long
direct_call(struct direct *d, const char *method, const char *url, const char *body)
{
        static const struct http_cbs cbs = {.on_done = direct_done_cb};
        const char *hdrs[] = {d->auth, "Content-Type: application/json", NULL};
        struct http_req_spec s = {.method = method,
                                  .url = url,
                                  .headers = hdrs,
                                  .body = body,
                                  .body_len = body ? strlen(body) : 0};

        d->status = 0;
        if (http_request(d->m, &s, &cbs, d, NULL) < 0)
                exit(1);
        while (!d->status && uv_run(&d->loop, UV_RUN_ONCE))
                ;
        return d->status;
}

static void
direct_ws_data(void *ctx, const char *data, size_t len)
{
}

static void
direct_ws_end(void *ctx, long status, const char *body, size_t blen, const char *error)
{
        struct direct *d = ctx;

        d->ended = true;
        if (status || error)
                d->status = -1;
}

/* What a client of the API itself does for `true` as a session command: POST …/exec
 * (runAsync), then follow its log until the stream ends (the exit code exists). */
static long
direct_session_exec(struct direct *d)
{
        static const struct daytona_ws_cbs cbs = {.on_data = direct_ws_data,
                                                  .on_end = direct_ws_end};
        const char *hdrs[] = {d->auth, "X-Daytona-Split-Output: true", NULL};
        char url[700];
        struct daytona_ws *ws;

        snprintf(url, sizeof(url), "%s/exec", d->session);
        if (direct_call(d, "POST", url, "{\"command\":\"true\",\"runAsync\":true}") != 202)
                return -1;
        snprintf(url, sizeof(url), "%s/command/%s/logs?follow=true", d->session, d->cmd_id);
        d->ended = false;
        d->status = 200;
        if (daytona_ws_open(d->m, &d->loop, url, hdrs, &cbs, d, &ws) < 0)
                return -1;
        while (!d->ended && uv_run(&d->loop, UV_RUN_ONCE))
                ;
        return d->status;
}

static void
direct_init(struct direct *d, struct bench *b)
{
        char url[600];

        d->b = b;
        snprintf(d->auth, sizeof(d->auth), "Authorization: Bearer %s", b->key);
        uv_loop_init(&d->loop);
        d->m = http_multi_acquire(&d->loop);
        snprintf(url, sizeof(url), "%s/process/session", b->toolbox);
        if (direct_call(d, "POST", url, "{\"sessionId\":\"bench-direct\"}") != 201)
                exit(1);
        snprintf(d->session, sizeof(d->session), "%s/process/session/bench-direct", b->toolbox);
}

static void
direct_free(struct direct *d)
{
        http_multi_release(d->m);
        uv_run(&d->loop, UV_RUN_DEFAULT);
        uv_loop_close(&d->loop);
}

/* Interleaved rounds (the machine is shared): daemon exec argv, daemon exec command, API
 * execute, API session command. Results in ms (p50) into out[4]. */
static void
bench_rounds(struct bench *b, int n, double out[4])
{
        json_t *a = json_pack("{s:s,s:[s],s:b}", "sandbox", "bench", "argv", "true", "stream", 0);
        json_t *c = json_pack("{s:s,s:s,s:b}", "sandbox", "bench", "command", "true", "stream", 0);
        uint64_t *t[4];
        char url[600];
        struct direct d = {0};

        direct_init(&d, b);
        snprintf(url, sizeof(url), "%s/process/execute", b->toolbox);
        for (int k = 0; k < 4; k++)
                t[k] = xcalloc((size_t) n, sizeof(uint64_t));
        for (int i = -3; i < n; i++) { /* three rounds to warm up (connections, sessions) */
                uint64_t t0 = util_now_ns(), t1, t2, t3, t4;
                json_decref(rpc_exec(b, a));
                t1 = util_now_ns();
                json_decref(rpc_exec(b, c));
                t2 = util_now_ns();
                if (direct_call(&d, "POST", url, "{\"command\":\"true\"}") != 200)
                        exit(1);
                t3 = util_now_ns();
                if (direct_session_exec(&d) != 200)
                        exit(1);
                t4 = util_now_ns();
                if (i < 0)
                        continue;
                t[0][i] = t1 - t0;
                t[1][i] = t2 - t1;
                t[2][i] = t3 - t2;
                t[3][i] = t4 - t3;
        }
        for (int k = 0; k < 4; k++) {
                out[k] = p50_ms(t[k], n);
                free(t[k]);
        }
        direct_free(&d);
        json_decref(a);
        json_decref(c);
}

static double
bench_curl_cli(struct bench *b, int n)
{
        char hf[128], url[600], hdr[96];
        char *argv[] = {"curl", "-sf",
                        "-o",   "/dev/null",
                        "-X",   "POST",
                        "-H",   NULL,
                        "-H",   "Content-Type: application/json",
                        "-d",   "{\"command\":\"true\"}",
                        url,    NULL};
        uint64_t *t = xcalloc((size_t) n, sizeof(*t));
        double ms;

        /* The header from a file: the key stays off the command line. */
        snprintf(hf, sizeof(hf), "%s/auth.hdr", b->dir);
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\n", b->key);
        if (write_file(hf, hdr, 0600) < 0)
                return -1;
        char at[130];
        snprintf(at, sizeof(at), "@%s", hf);
        argv[7] = at;
        snprintf(url, sizeof(url), "%s/process/execute", b->toolbox);
        for (int i = 0; i < n; i++) {
                int st;
                uint64_t t0 = util_now_ns();
                pid_t pid = fork();
                if (pid == 0) {
                        execvp("curl", argv);
                        _exit(127);
                }
                waitpid(pid, &st, 0);
                t[i] = util_now_ns() - t0;
                if (!WIFEXITED(st) || WEXITSTATUS(st))
                        return -1;
        }
        ms = p50_ms(t, n);
        free(t);
        return ms;
}

/* Stops the daemon and the fake and removes both directories; idempotent. */
static void
bench_stop(struct bench *b)
{
        char cmd[128];

        if (b->d.pid > 0) {
                bd_stop(&b->d);
                b->d.pid = 0;
        } else if (b->d.dir[0]) {
                snprintf(cmd, sizeof(cmd), "rm -rf %s", b->d.dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "cannot remove %s\n", b->d.dir);
        }
        b->d.dir[0] = '\0';
        if (b->fake > 0) {
                kill(b->fake, SIGTERM);
                waitpid(b->fake, NULL, 0);
                b->fake = -1;
        }
        if (b->dir[0]) {
                snprintf(cmd, sizeof(cmd), "rm -rf %s", b->dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "cannot remove %s\n", b->dir);
                b->dir[0] = '\0';
        }
}

/* An exit(1) on the way must not leave the fake or the daemon running, nor their files. */
static struct bench *cleanup_bench;

static void
cleanup(void)
{
        if (cleanup_bench)
                bench_stop(cleanup_bench);
}

/* The toolbox URL of the benchmark's sandbox, made through the daemon. */
static int
bench_sandbox(struct bench *b)
{
        json_t *sb = rpc(b, "sandbox.create",
                         json_pack("{s:s,s:s}", "backend", "daytona", "name", "bench"));
        const char *id =
                json_string_value(json_object_get(json_object_get(sb, "details"), "sandbox_id"));
        char *api = strstr(b->url, "/api");

        if (!id || !api)
                return -1;
        snprintf(b->toolbox, sizeof(b->toolbox), "%.*s/toolbox/%s", (int) (api - b->url), b->url,
                 id);
        json_decref(sb);
        return 0;
}

int
main(void)
{
        int n = getenv("BENCH_N") ? atoi(getenv("BENCH_N")) : 200;
        static struct bench b = {.fake = -1, .d = {.fd = -1}}; /* atexit reads it */
        double r[4], cli;

        util_json_alloc_init();
        cleanup_bench = &b;
        atexit(cleanup);
        snprintf(b.dir, sizeof(b.dir), "/tmp/bench-daytona-XXXXXX");
        if (!mkdtemp(b.dir) || access("/usr/bin/python3", X_OK) < 0 || fake_start(&b) < 0 ||
            daemon_start(&b) < 0 || bench_sandbox(&b) < 0) {
                printf("bench_daytona: skipped (cannot start the fake Daytona or sandboxd; set "
                       "SANDBOXD_BIN and SANDBOXD_TESTS)\n");
                bench_stop(&b);
                return 0;
        }
        bench_rounds(&b, n, r);
        cli = bench_curl_cli(&b, n / 4 + 1);
        printf("API /process/execute true:   libcurl p50 %.2f ms, curl CLI p50 %.2f ms\n", r[2],
               cli);
        printf("API session command true:    p50 %.2f ms (POST exec, follow the log to its end)\n",
               r[3]);
        printf("sandboxd exec argv true:     p50 %.2f ms, ratio %.2f to execute (target <= 1.2), "
               "%.2f to the session command, %.2f to curl\n",
               r[0], r[0] / r[2], r[0] / r[3], r[0] / cli);
        printf("sandboxd exec command true:  p50 %.2f ms, ratio %.2f to execute, %.2f to the "
               "session command (shell state read back)\n",
               r[1], r[1] / r[2], r[1] / r[3]);
        json_decref(rpc(&b, "sandbox.destroy", json_pack("{s:s}", "id", "bench")));
        bench_stop(&b);
        return 0;
}
