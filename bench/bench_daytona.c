/* bench_daytona.c — the daytona backend against the API itself, measured in the same run on the
 * fake Daytona (tests/fakes/daytona, started here as a process):
 *   baseline  POST {toolbox}/process/execute {"command":"true"}: in process with libcurl on a
 *             kept-alive connection (backends/http.c; the strict reading of the target), and
 *             with the curl CLI (the literal wording: a process per call)
 *   reference the API's own session command path: POST …/exec (runAsync), follow its log over
 *             a WebSocket to the end; for "true" (a builtin of the session shell) and for
 *             "/bin/true" (a program started, as every argv exec must)
 *   sandboxd  exec {argv:["true"]} and {command:"true"} (shell-state wrapper) through a real
 *             daemon ($SANDBOXD_BIN) on a private socket: a session command, its log followed
 *             over a WebSocket, the end markers
 * Each of BENCH_N rounds (default 200) runs all six back to back, each round starting with the
 * next one; reported are the p50 and the p10-p90 spread of the times and of the per-round
 * ratios. Target: <= 1.2. An exec is a session command (streaming, stdin, resume need it), so
 * the daemon's own cost is exec argv / session command; the ratios to execute are the issue's
 * wording (docs/backends/daytona.md, "Which ratio answers the target").
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

/* What a client of the API itself does for a session command (a JSON string): POST …/exec
 * (runAsync), then follow its log until the stream ends (the exit code exists). */
static long
direct_session_exec(struct direct *d, const char *command)
{
        static const struct daytona_ws_cbs cbs = {.on_data = direct_ws_data,
                                                  .on_end = direct_ws_end};
        const char *hdrs[] = {d->auth, "X-Daytona-Split-Output: true", NULL};
        char url[700], body[128];
        struct daytona_ws *ws;

        snprintf(url, sizeof(url), "%s/exec", d->session);
        snprintf(body, sizeof(body), "{\"command\":\"%s\",\"runAsync\":true}", command);
        if (direct_call(d, "POST", url, body) != 202)
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

/* The curl CLI's execute, the literal baseline: argv[7] is set by cli_init. */
struct cli {
        char hf[128], at[130], url[600];
        char *argv[14];
};

static int
cli_init(struct cli *c, struct bench *b)
{
        char hdr[96];
        char *argv[] = {"curl", "-sf",
                        "-o",   "/dev/null",
                        "-X",   "POST",
                        "-H",   NULL,
                        "-H",   "Content-Type: application/json",
                        "-d",   "{\"command\":\"true\"}",
                        c->url, NULL};

        /* The header from a file: the key stays off the command line. */
        snprintf(c->hf, sizeof(c->hf), "%s/auth.hdr", b->dir);
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\n", b->key);
        if (write_file(c->hf, hdr, 0600) < 0)
                return -1;
        snprintf(c->at, sizeof(c->at), "@%s", c->hf);
        snprintf(c->url, sizeof(c->url), "%s/process/execute", b->toolbox);
        memcpy(c->argv, argv, sizeof(argv));
        c->argv[7] = c->at;
        return 0;
}

static void
cli_call(struct cli *c)
{
        int st;
        pid_t pid = fork();

        if (pid == 0) {
                execvp("curl", c->argv);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
                exit(1);
}

/* What one round measures (the machine is shared: the subjects and their baselines run back
 * to back, round after round). */
enum { T_ARGV, T_CMD, T_EXECUTE, T_SESSION, T_SESSION_BIN, T_CLI, T_N };

/* Per-round ratios reported: subject / baseline. */
static const struct {
        int num, den;
        const char *what;
} ratios[] = {
        {T_ARGV, T_EXECUTE, "exec argv / execute (libcurl)"},
        {T_ARGV, T_CLI, "exec argv / execute (curl CLI)"},
        {T_ARGV, T_SESSION, "exec argv / session command"},
        {T_ARGV, T_SESSION_BIN, "exec argv / session /bin/true"},
        {T_CMD, T_EXECUTE, "exec command / execute (libcurl)"},
        {T_CMD, T_SESSION, "exec command / session command"},
};

struct rounds {
        int n;
        double *t[T_N];                /* ms per round */
        double *r[ARRAY_SIZE(ratios)]; /* per-round ratios */
};

/* One measurement of kind k, in ms. */
static double
bench_one(struct bench *b, struct direct *d, struct cli *c, json_t *const ex[2], int k)
{
        uint64_t t0 = util_now_ns();
        char url[600];

        switch (k) {
        case T_ARGV:
        case T_CMD:
                json_decref(rpc_exec(b, ex[k == T_CMD]));
                break;
        case T_EXECUTE:
                snprintf(url, sizeof(url), "%s/process/execute", b->toolbox);
                if (direct_call(d, "POST", url, "{\"command\":\"true\"}") != 200)
                        exit(1);
                break;
        case T_SESSION:
        case T_SESSION_BIN:
                if (direct_session_exec(d, k == T_SESSION ? "true" : "/bin/true") != 200)
                        exit(1);
                break;
        default:
                cli_call(c);
        }
        return (double) (util_now_ns() - t0) / 1e6;
}

/* Round i runs every kind once, starting at kind i % T_N: what an exec leaves behind in the
 * fake (its session draining, the session shell ending Daytona's wrapper) falls on each kind
 * in turn, not always on the one after it. */
static void
bench_round(struct bench *b, struct direct *d, struct cli *c, json_t *const ex[2], int i,
            double t[T_N])
{
        for (int j = 0; j < T_N; j++) {
                int k = (i + T_N + j) % T_N;
                t[k] = bench_one(b, d, c, ex, k);
        }
}

/* n rounds after three to warm up (connections, sessions). */
static void
bench_rounds(struct bench *b, struct rounds *out)
{
        json_t *ex[2] = {
                json_pack("{s:s,s:[s],s:b}", "sandbox", "bench", "argv", "true", "stream", 0),
                json_pack("{s:s,s:s,s:b}", "sandbox", "bench", "command", "true", "stream", 0)};
        struct direct d = {0};
        struct cli c;
        double t[T_N];

        direct_init(&d, b);
        if (cli_init(&c, b) < 0)
                exit(1);
        for (int k = 0; k < T_N; k++)
                out->t[k] = xcalloc((size_t) out->n, sizeof(double));
        for (size_t k = 0; k < ARRAY_SIZE(ratios); k++)
                out->r[k] = xcalloc((size_t) out->n, sizeof(double));
        for (int i = -3; i < out->n; i++) {
                bench_round(b, &d, &c, ex, i, t);
                if (i < 0)
                        continue;
                for (int k = 0; k < T_N; k++)
                        out->t[k][i] = t[k];
                for (size_t k = 0; k < ARRAY_SIZE(ratios); k++)
                        out->r[k][i] = t[ratios[k].num] / t[ratios[k].den];
        }
        direct_free(&d);
        json_decref(ex[0]);
        json_decref(ex[1]);
}

static int
cmp_double(const void *a, const void *b)
{
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Sorts v and prints its median and p10-p90 spread. */
static void
print_dist(const char *what, double *v, int n, const char *unit)
{
        qsort(v, (size_t) n, sizeof(*v), cmp_double);
        printf("  %-36s p50 %6.2f%s  (p10 %.2f, p90 %.2f)\n", what, v[n / 2], unit, v[n / 10],
               v[n - 1 - n / 10]);
}

static void
bench_report(struct rounds *r)
{
        static const char *const names[T_N] = {
                [T_ARGV] = "sandboxd exec {argv:[\"true\"]}",
                [T_CMD] = "sandboxd exec {command:\"true\"}",
                [T_EXECUTE] = "API execute, libcurl in process",
                [T_SESSION] = "API session command (POST, log)",
                [T_SESSION_BIN] = "API session command /bin/true",
                [T_CLI] = "API execute, curl CLI",
        };

        printf("bench_daytona: %d interleaved rounds\n", r->n);
        for (int k = 0; k < T_N; k++) {
                print_dist(names[k], r->t[k], r->n, " ms");
                free(r->t[k]);
        }
        printf("per-round ratios (target <= 1.2; the daemon's own cost: exec argv / session "
               "command):\n");
        for (size_t k = 0; k < ARRAY_SIZE(ratios); k++) {
                print_dist(ratios[k].what, r->r[k], r->n, "x ");
                free(r->r[k]);
        }
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
        static struct bench b = {.fake = -1, .d = {.fd = -1}}; /* atexit reads it */
        struct rounds r = {.n = getenv("BENCH_N") ? atoi(getenv("BENCH_N")) : 200};

        if (r.n < 10)
                r.n = 10;
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
        bench_rounds(&b, &r);
        bench_report(&r);
        json_decref(rpc(&b, "sandbox.destroy", json_pack("{s:s}", "id", "bench")));
        bench_stop(&b);
        return 0;
}
