/* bench_modal.c — the modal backend (direct mode) against the raw API calls it makes, both
 * against the same fake of Modal's API (tests/fakes/modal/fake_modal.py), in the same run.
 *
 *   exec: round trip of `true` through a real sandboxd ($SANDBOXD_BIN) — JSON-RPC, policy,
 *         spool, the backend — vs the calls that exec needs, made directly with the backend's
 *         own gRPC layer: TaskExecStart with the very argv, env and workdir the daemon sent
 *         (read back from the fake), then the stdout and stderr streams, the stdin EOF and
 *         TaskExecWait, concurrently as the backend makes them. Target ratio <= 1.2, for
 *         {argv: ["true"]} and for {command: "true"} (the shell wrapper and its state).
 *
 * Needs /usr/bin/python3 with grpcio and protoc (scripts/install-deps.sh --test); prints
 * "skipped" without them.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/http.h"
#include "backends/modal/modal_int.h"
#include "backends/modal/modal_pb.h"
#include "bench/helper_daemon.h"

#define TOKEN_ID     "ak-bench-id"
#define TOKEN_SECRET "as-bench-secret-0123456789"

static uv_loop_t loop;

struct fake {
        pid_t pid;
        int api, router, control;
};

static int
fake_start(struct fake *f)
{
        int pfd[2];
        char line[256] = {0};
        FILE *in;

        if (pipe(pfd) < 0)
                return -1;
        f->pid = fork();
        if (f->pid == 0) {
                dup2(pfd[1], 1);
                close(pfd[0]);
                execl("/usr/bin/python3", "python3", "tests/fakes/modal/fake_modal.py",
                      "--token-id", TOKEN_ID, "--token-secret", TOKEN_SECRET, (char *) NULL);
                _exit(127);
        }
        close(pfd[1]);
        in = fdopen(pfd[0], "r");
        if (!fgets(line, sizeof(line), in) || sscanf(line, "READY api=%d router=%d control=%d",
                                                     &f->api, &f->router, &f->control) != 3) {
                fclose(in);
                kill(f->pid, SIGKILL);
                waitpid(f->pid, NULL, 0);
                return -1;
        }
        fclose(in);
        return 0;
}

static void
fake_stop(struct fake *f)
{
        kill(f->pid, SIGTERM);
        waitpid(f->pid, NULL, 0);
        f->pid = 0;
}

/* An exit(1) on the way must not leave the fake or the daemon running. */
static struct fake *cleanup_fake;
static struct bd *cleanup_bd;

static void
cleanup(void)
{
        if (cleanup_bd && cleanup_bd->pid > 0)
                kill(cleanup_bd->pid, SIGTERM);
        if (cleanup_fake && cleanup_fake->pid > 0)
                fake_stop(cleanup_fake);
}

/* GET /state of the fake's control port (plain HTTP/1.0, blocking): new object or NULL. */
static json_t *
fake_state(struct fake *f)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) f->control)};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        static const char req[] = "GET /state HTTP/1.0\r\n\r\n";
        struct buf b = {0};
        char *body;
        ssize_t n;
        json_t *j;

        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            write(fd, req, sizeof(req) - 1) < 0) {
                close(fd);
                return NULL;
        }
        do {
                buf_reserve(&b, 65536);
                n = read(fd, b.data + b.len, 65536);
                if (n > 0)
                        b.len += (size_t) n;
        } while (n > 0);
        close(fd);
        buf_append(&b, "", 1);
        body = strstr(b.data, "\r\n\r\n");
        j = body ? json_loads(body + 4, 0, NULL) : NULL;
        buf_free(&b);
        return j;
}

/* ---- the raw calls of one exec ---- */

struct raw {
        struct modal_router *rt;
        const char *task;
        json_t *start; /* {args, env, workdir, stderr_config} as the daemon sent them */
        char exec_id[40];
        int pending;
        bool failed;
};

static void
raw_end_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct raw *r = ctx;

        if (st->code != GRPC_OK) {
                fprintf(stderr, "raw call: %s: %s\n", grpc_code_name(st->code), st->message);
                r->failed = true;
        }
        r->pending--;
}

static void
raw_msg_cb(void *ctx, const unsigned char *msg, size_t len)
{
}

/* The stdin EOF: sent, not waited for (the backend does not wait for it either). */
static void
raw_stdin_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
}

static struct buf
raw_ids(struct raw *r)
{
        struct buf b = {0};

        pb_put_str(&b, 1, r->task);
        pb_put_str(&b, 2, r->exec_id);
        return b;
}

/* After the start: the streams, the stdin EOF and the wait, concurrently. */
static void
raw_started_cb(void *ctx, const struct grpc_status *st, const unsigned char *msg, size_t len)
{
        struct raw *r = ctx;
        bool merged = json_integer_value(json_object_get(r->start, "stderr_config")) == 2;
        struct buf b;

        raw_end_cb(ctx, st, msg, len);
        if (r->failed)
                return;
        for (int fd = 0; fd < (merged ? 1 : 2); fd++) {
                b = raw_ids(r);
                pb_put_varint(&b, 3, 0);
                pb_put_varint(&b, 4, (uint64_t) fd);
                r->pending++;
                modal_router_stream(r->rt, "TaskExecStdioRead", &b, raw_msg_cb, raw_end_cb, r);
                buf_free(&b);
        }
        b = raw_ids(r);
        pb_put_varint(&b, 3, 0);
        pb_put_bytes(&b, 4, "", 0);
        pb_put_bool(&b, 5, true);
        modal_router_unary(r->rt, "TaskExecStdinWrite", &b, 60000, raw_stdin_cb, r);
        buf_free(&b);
        b = raw_ids(r);
        r->pending++;
        modal_router_unary(r->rt, "TaskExecWait", &b, 60000, raw_end_cb, r);
        buf_free(&b);
}

static void
raw_exec(struct raw *r)
{
        json_t *v, *env = json_object_get(r->start, "env");
        const char *k, *wd = json_string_value(json_object_get(r->start, "workdir"));
        static int seq;
        struct buf b;
        size_t idx;

        snprintf(r->exec_id, sizeof(r->exec_id), "raw-%d-%d", (int) getpid(), seq++);
        b = raw_ids(r);
        json_array_foreach(json_object_get(r->start, "args"), idx, v)
                pb_put_str(&b, 3, json_string_value(v));
        pb_put_varint(&b, 4, 1);
        pb_put_varint(&b, 5,
                      (uint64_t) json_integer_value(json_object_get(r->start, "stderr_config")));
        if (wd)
                pb_put_str(&b, 7, wd);
        json_object_foreach(env, k, v) pb_put_map_entry(&b, 12, k, json_string_value(v));
        r->pending = 1;
        modal_router_unary(r->rt, "TaskExecStart", &b, 60000, raw_started_cb, r);
        buf_free(&b);
        while (r->pending > 0 && uv_run(&loop, UV_RUN_ONCE))
                ;
        if (r->failed)
                exit(1);
}

/* One exec through the daemon, in ms. */
static double
daemon_exec(struct bd *d, json_t *params)
{
        uint64_t t0 = util_now_ns();
        json_t *res = bd_call(d, "exec", json_deep_copy(params));

        if (!res || json_integer_value(json_object_get(res, "exit_code")) != 0)
                exit(1);
        json_decref(res);
        return (double) (util_now_ns() - t0) / 1e6;
}

/* One exec by the raw calls, in ms. */
static double
raw_exec_ms(struct raw *r)
{
        uint64_t t0 = util_now_ns();

        raw_exec(r);
        return (double) (util_now_ns() - t0) / 1e6;
}

/* One shape of exec: daemon and raw alternate, exec by exec, so that the load of the shared
 * machine weighs on both alike; the medians are compared. */
static void
bench_shape(struct bd *d, struct fake *f, struct raw *r, const char *name, json_t *params, int n)
{
        double *dv = xcalloc((size_t) n, sizeof(double)), *rv = xcalloc((size_t) n, sizeof(double));
        double md, mr;
        json_t *st;

        daemon_exec(d, params); /* warm, and shows what it sends */
        st = fake_state(f);
        r->start = json_incref(json_object_get(st, "last_exec"));
        json_decref(st);
        if (!r->start) {
                fprintf(stderr, "the fake did not report the exec\n");
                exit(1);
        }
        raw_exec(r);
        for (int i = 0; i < n; i++) {
                rv[i] = raw_exec_ms(r);
                dv[i] = daemon_exec(d, params);
        }
        md = bd_median(dv, n);
        mr = bd_median(rv, n);
        printf("exec %-14s daemon %.2f ms, raw API calls %.2f ms (medians of %d), ratio %.2f "
               "(target <= 1.2)\n",
               name, md, mr, n, md / mr);
        free(dv);
        free(rv);
        json_decref(r->start);
        json_decref(params);
}

int
main(void)
{
        int n = getenv("BENCH_N") ? atoi(getenv("BENCH_N")) : 60;
        struct fake f;
        struct bd d = {0};
        char *url, *env[6];
        struct http_multi *m;
        struct modal_api *api;
        struct raw r = {0};
        json_t *sb;

        util_json_alloc_init();
        if (fake_start(&f) < 0) {
                printf("bench_modal: skipped (the Modal fake does not start: python3-grpcio and "
                       "protobuf-compiler missing? scripts/install-deps.sh --test)\n");
                return 0;
        }
        cleanup_fake = &f;
        cleanup_bd = &d;
        atexit(cleanup);
        url = xasprintf("http://127.0.0.1:%d", f.api);
        env[0] = "MODAL_TOKEN_ID=" TOKEN_ID;
        env[1] = "MODAL_TOKEN_SECRET=" TOKEN_SECRET;
        env[2] = xasprintf("MODAL_SERVER_URL=%s", url);
        env[3] = "MODAL_CONFIG_PATH=/nonexistent";
        env[4] = "HOME=/nonexistent";
        env[5] = NULL;
        if (bd_start(&d, "[backend.modal]\nmode = direct\n", env) < 0) {
                printf("bench_modal: skipped (cannot start sandboxd; set SANDBOXD_BIN)\n");
                fake_stop(&f);
                return 0;
        }
        sb = bd_call(&d, "sandbox.create", json_pack("{s:s,s:s}", "backend", "modal", "name", "b"));
        if (!sb)
                return 1;
        uv_loop_init(&loop);
        m = http_multi_acquire(&loop);
        api = modal_api_new(&loop, m, url, TOKEN_ID, TOKEN_SECRET, "bench");
        r.task = json_string_value(json_object_get(json_object_get(sb, "details"), "task_id"));
        r.rt = modal_router_new(api, r.task);
        bench_shape(&d, &f, &r,
                    "argv true:", json_pack("{s:s,s:[s]}", "sandbox", "b", "argv", "true"), n);
        bench_shape(&d, &f, &r,
                    "command true:", json_pack("{s:s,s:s}", "sandbox", "b", "command", "true"), n);
        modal_router_free(r.rt);
        modal_api_unref(api);
        http_multi_release(m);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        json_decref(bd_call(&d, "sandbox.destroy", json_pack("{s:s}", "id", "b")));
        json_decref(sb);
        bd_stop(&d);
        d.pid = 0;
        fake_stop(&f);
        free(env[2]);
        free(url);
        return 0;
}
