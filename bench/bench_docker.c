/* bench_docker.c — the docker backend against the docker CLI, measured in the same run.
 *
 *   exec: round trip of `true` in a running container, backend ops vs `docker exec CID true`
 *         (target ratio <= 0.05 through the agent), in both exec modes: through the resident
 *         sandboxd-agent and its session (backends/agent/session.h; the default;
 *         build/<variant>/sandboxd-agent) and one `docker exec` per command (agent = off)
 *   create: sandbox create (image check, create, mount read-back, start) vs `docker run -d`
 *         (target ratio <= 1.0)
 *   daemon: the same two through a real sandboxd ($SANDBOXD_BIN, default build/std/sandboxd) on
 *         a private socket (agent mode): exec {argv:["true"]}, and {command:"true"} (nothing
 *         to read back) and {command:"cd ."} (the shell-state wrapper's trap writes the state)
 *         against argv alternating in the same run (p50 ratio, target <= 1.3), and
 *         sandbox.create + sandbox.destroy.
 *
 * Needs dockerd and the image from tests/docker/setup.sh; prints "skipped" without them.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/docker/docker.h"
#include "bench/helper_daemon.h"
#include "bench/helper_ops.h"
#include "protocol/util.h"

#define IMAGE "sandboxd-test:busybox"

static const struct backend_ops *ops = &docker_backend_ops;

static int
run_cmd(char *const argv[], char *out, size_t outlen)
{
        int pfd[2], st;
        pid_t pid;
        ssize_t n;
        size_t got = 0;

        if (pipe(pfd) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                dup2(pfd[1], 1);
                close(pfd[0]);
                close(pfd[1]);
                execvp(argv[0], argv);
                _exit(127);
        }
        close(pfd[1]);
        while ((n = read(pfd[0], out ? out + got : (char[256]){0}, out ? outlen - got - 1 : 256)) >
               0)
                if (out)
                        got += (size_t) n;
        if (out)
                out[got] = '\0';
        close(pfd[0]);
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static struct backend_sandbox *
create(int i)
{
        struct backend_identity me = {.uid = getuid(), .gid = getgid()};
        char id[64];
        struct sandbox_spec s = {.id = id,
                                 .name = id,
                                 .image = IMAGE,
                                 .env = json_object(),
                                 .labels = json_object(),
                                 .mounts = json_array(),
                                 .owner = &me};
        struct backend_sandbox *sb;

        snprintf(id, sizeof(id), "sbx_bench%d_%d", (int) getpid(), i);
        sb = bo_create(ops, &s);
        json_decref(s.env);
        json_decref(s.labels);
        json_decref(s.mounts);
        return sb;
}

static void
destroy(struct backend_sandbox *sb)
{
        bo_destroy(ops, sb);
}

static double
bench_backend_exec(struct backend_sandbox *sb, int n)
{
        char *argv[] = {"true", NULL};
        uint64_t total = 0;

        for (int i = 0; i < n; i++)
                total += bo_exec(ops, sb, argv, NULL, i);
        return (double) total / 1e6 / n;
}

static double
bench_cli_exec(const char *cid, int n)
{
        char *argv[] = {"docker", "exec", (char *) cid, "true", NULL};
        uint64_t t0 = util_now_ns();

        for (int i = 0; i < n; i++)
                run_cmd(argv, NULL, 0);
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

static double
bench_backend_create(int n)
{
        uint64_t total = 0;

        for (int i = 0; i < n; i++) {
                uint64_t t0 = util_now_ns();
                struct backend_sandbox *sb = create(100 + i);
                total += util_now_ns() - t0;
                if (!sb)
                        exit(1);
                destroy(sb);
        }
        return (double) total / 1e6 / n;
}

static double
bench_cli_create(int n)
{
        char *run[] = {"docker", "run", "-d",    "--network",  "none",
                       "--init", IMAGE, "sleep", "2147483647", NULL};
        uint64_t total = 0;
        char cid[256];

        for (int i = 0; i < n; i++) {
                uint64_t t0 = util_now_ns();
                run_cmd(run, cid, sizeof(cid));
                total += util_now_ns() - t0;
                cid[strcspn(cid, "\n")] = '\0';
                char *rm[] = {"docker", "rm", "-f", cid, NULL};
                run_cmd(rm, NULL, 0);
        }
        return (double) total / 1e6 / n;
}

/* ---- through the daemon ---- */

static double
bd_exec(struct bd *d, json_t *params, int n)
{
        uint64_t t0 = util_now_ns();

        for (int i = 0; i < n; i++) {
                json_t *r = bd_call(d, "exec", json_deep_copy(params));
                if (!r)
                        exit(1);
                json_decref(r);
        }
        json_decref(params);
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

static int
cmp_double(const void *a, const void *b)
{
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* p50 round trips (ms) of params a and b, alternating, so both see the same machine. */
static void
bd_exec_pair(struct bd *d, json_t *a, json_t *b, int n, double *pa, double *pb)
{
        double *va = xcalloc((size_t) n, sizeof(double)), *vb = xcalloc((size_t) n, sizeof(double));

        for (int i = 0; i < n; i++) {
                va[i] = bd_exec(d, json_incref(a), 1);
                vb[i] = bd_exec(d, json_incref(b), 1);
        }
        qsort(va, (size_t) n, sizeof(double), cmp_double);
        qsort(vb, (size_t) n, sizeof(double), cmp_double);
        *pa = va[n / 2];
        *pb = vb[n / 2];
        free(va);
        free(vb);
        json_decref(a);
        json_decref(b);
}

static double
bd_create(struct bd *d, int n)
{
        uint64_t total = 0;

        for (int i = 0; i < n; i++) {
                uint64_t t0 = util_now_ns();
                json_t *r = bd_call(d, "sandbox.create", json_pack("{s:s}", "backend", "docker"));
                total += util_now_ns() - t0;
                if (!r)
                        exit(1);
                json_decref(bd_call(d, "sandbox.destroy",
                                    json_pack("{s:O}", "id", json_object_get(r, "id"))));
                json_decref(r);
        }
        return (double) total / 1e6 / n;
}

/* Exec and create through a real daemon, against the CLI numbers ce and cc. */
static void
bench_daemon(int n, double ce, double cc)
{
        struct bd d = {0};
        json_t *sb;

        char *conf = xasprintf("[backend.docker]\nimage = %s\n", IMAGE);
        int rc = bd_start(&d, conf, NULL);

        free(conf);
        if (rc < 0) {
                printf("daemon:     skipped (cannot start sandboxd; set SANDBOXD_BIN)\n");
                return;
        }
        sb = bd_call(&d, "sandbox.create",
                     json_pack("{s:s,s:s}", "backend", "docker", "name", "b"));
        if (!sb)
                exit(1);
        bd_exec(&d, json_pack("{s:s,s:[s]}", "sandbox", "b", "argv", "true"), 3);
        bd_exec(&d, json_pack("{s:s,s:s}", "sandbox", "b", "command", "true"), 3);
        double ea = bd_exec(&d, json_pack("{s:s,s:[s]}", "sandbox", "b", "argv", "true"), n);
        double pa, pc;
        double pa2, pd;
        bd_exec_pair(&d, json_pack("{s:s,s:[s]}", "sandbox", "b", "argv", "true"),
                     json_pack("{s:s,s:s}", "sandbox", "b", "command", "true"), 3 * n, &pa, &pc);
        bd_exec_pair(&d, json_pack("{s:s,s:[s]}", "sandbox", "b", "argv", "true"),
                     json_pack("{s:s,s:s}", "sandbox", "b", "command", "cd ."), 3 * n, &pa2, &pd);
        json_decref(bd_call(&d, "sandbox.destroy", json_pack("{s:s}", "id", "b")));
        json_decref(sb);
        double dc = bd_create(&d, n / 3 + 1);
        printf("daemon exec argv true:    %.2f ms, docker exec CLI %.1f ms, ratio %.3f "
               "(target <= 0.05)\n",
               ea, ce, ea / ce);
        printf("daemon exec command true: p50 %.2f ms (shell state on, nothing to read back) vs "
               "argv true p50 %.2f ms in the same run: ratio %.2f (target <= 1.3)\n",
               pc, pa, pc / pa);
        printf("daemon exec command cd .: p50 %.2f ms (shell state read back) vs argv true p50 "
               "%.2f ms in the same run: ratio %.2f (target <= 1.3)\n",
               pd, pa2, pd / pa2);
        printf("daemon sandbox.create:    %.1f ms, docker run -d   %.1f ms, ratio %.2f "
               "(target <= 1.0)\n",
               dc, cc, dc / cc);
        bd_stop(&d);
}

struct bench_mode {
        const char *name;
        double exec, create;
};

/* Exec and create through the backend itself in one exec mode: agent = path or "off". */
static int
bench_mode(struct bench_mode *m, const char *agent, int n)
{
        struct sbx_error err = {0};
        json_t *cfg = json_pack("{s:s}", "agent", agent);
        struct backend_sandbox *sb;

        if (ops->init(&bo_loop, cfg, &err) < 0) {
                fprintf(stderr, "init: %s\n", err.message);
                return -1;
        }
        json_decref(cfg);
        sb = create(m->name[0] == 'a' ? 0 : 1);
        if (!sb)
                return -1;
        bench_backend_exec(sb, 3); /* warm up */
        m->exec = bench_backend_exec(sb, n);
        destroy(sb);
        m->create = bench_backend_create(n / 3 + 1);
        ops->shutdown();
        uv_run(&bo_loop, UV_RUN_NOWAIT);
        return 0;
}

int
main(void)
{
        char *info[] = {"docker", "image", "inspect", IMAGE, NULL};
        char *run[] = {"docker", "run", "-d",    "--rm", "--init", "--network",
                       "none",   IMAGE, "sleep", "600",  NULL};
        int n = getenv("BENCH_N") ? atoi(getenv("BENCH_N")) : 30;
        struct bench_mode modes[] = {{.name = "agent (default)"},
                                     {.name = "docker exec (agent = off)"}};
        char self[4096], agent[4200], cid[256];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

        util_json_alloc_init();
        if (run_cmd(info, NULL, 0) != 0) {
                printf("bench_docker: skipped (no dockerd or no %s; run tests/docker/setup.sh)\n",
                       IMAGE);
                return 0;
        }
        if (len <= 0)
                return 1;
        self[len] = '\0';
        *strrchr(self, '/') = '\0';
        snprintf(agent, sizeof(agent), "%s/../sandboxd-agent", self); /* build/<variant>/ */
        uv_loop_init(&bo_loop);
        if (bench_mode(&modes[0], agent, n) < 0 || bench_mode(&modes[1], "off", n) < 0)
                return 1;
        /* The CLI baseline in a plain container, measured in this run. */
        run_cmd(run, cid, sizeof(cid));
        cid[strcspn(cid, "\n")] = '\0';
        bench_cli_exec(cid, 3);
        double ce = bench_cli_exec(cid, n);
        char *rm[] = {"docker", "rm", "-f", cid, NULL};
        run_cmd(rm, NULL, 0);
        double cc = bench_cli_create(n / 3 + 1);
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
                printf("exec true   [%s]: backend %.2f ms, docker exec CLI %.1f ms, ratio %.3f "
                       "(target %s)\n",
                       modes[i].name, modes[i].exec, ce, modes[i].exec / ce,
                       i == 0 ? "<= 0.05" : "none: the fallback");
                printf("create      [%s]: backend %.1f ms, docker run -d %.1f ms, ratio %.2f "
                       "(target <= 1.0)\n",
                       modes[i].name, modes[i].create, cc, modes[i].create / cc);
        }
        bench_daemon(n, ce, cc);
        uv_loop_close(&bo_loop);
        return 0;
}
