/* bench_local.c — isolated local sandboxes (isolation "namespaces", docs/backends/local.md)
 * through the backend's ops, against baselines measured in the same run:
 *   1. create: sandbox create until its agent is READY (the first exec possible), vs one
 *      `bwrap --ro-bind / / --unshare-all true` (p50 ratio, target <= 1.0)
 *   2. exec round trip of `true` in a running sandbox, vs posix_spawn + waitpid of /bin/true
 *      from this process (p50 ratio, target <= 1.5), and vs one bwrap invocation per command,
 *      as Codex CLI does (p50 ratio, target <= 0.1)
 * sandboxd-nsbox and sandboxd-agent are those of build/<variant>/, next to bench/. Prints "skipped"
 * where namespaces or bwrap are unavailable. Usage: bench_local [exec rounds] [create rounds]
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/backend.h"
#include "bench/helper_daemon.h"
#include "bench/helper_ops.h"
#include "protocol/util.h"

extern char **environ;
extern const struct backend_ops local_backend_ops;

static const struct backend_ops *ops = &local_backend_ops;
static char workdir[] = "/tmp/bench-local-XXXXXX";

/* posix_spawn + waitpid of argv; its exit status (-1: not run). */
static int
spawn_wait(char *const argv[])
{
        pid_t pid;
        int st;

        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                return -1;
        while (waitpid(pid, &st, 0) < 0)
                ;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static struct backend_sandbox *
create(int i)
{
        static struct backend_identity me;
        char id[64];
        struct sandbox_spec s = {.id = id, .workdir = workdir, .owner = &me};
        struct backend_sandbox *sb;

        me = (struct backend_identity){.uid = getuid(), .gid = getgid(), .home = getenv("HOME")};
        s.env = json_object();
        s.labels = json_object();
        s.mounts = json_array();
        s.section = json_pack("{s:s}", "isolation", "namespaces");
        snprintf(id, sizeof(id), "sbx_bench%d_%d", (int) getpid(), i);
        s.name = id;
        s.state_dir = workdir;
        sb = bo_create(ops, &s);
        json_decref(s.env);
        json_decref(s.labels);
        json_decref(s.mounts);
        json_decref(s.section);
        return sb;
}

static void
destroy(struct backend_sandbox *sb)
{
        bo_destroy(ops, sb);
}

/* One exec of `true` in sb; its round trip in ns. */
static uint64_t
backend_exec(struct backend_sandbox *sb, int i)
{
        static char *const argv[] = {"true", NULL}, *const envp[] = {"PATH=/usr/bin:/bin", NULL};

        return bo_exec(ops, sb, argv, envp, i);
}

/* One spawn of argv; its round trip in ns. */
static uint64_t
spawn_once(char *const argv[])
{
        uint64_t t0 = util_now_ns();

        if (spawn_wait(argv) != 0) {
                fprintf(stderr, "bench_local: %s failed\n", argv[0]);
                exit(1);
        }
        return util_now_ns() - t0;
}

/* One create until ready (destroyed after, not counted); ns. */
static uint64_t
backend_create(int i)
{
        uint64_t t0 = util_now_ns(), t;
        struct backend_sandbox *sb = create(i + 1);

        t = util_now_ns() - t0;
        if (!sb)
                exit(1);
        destroy(sb);
        return t;
}

/* The helper programs of build/<variant>/, next to this bench/ directory. */
static void
set_program(json_t *cfg, const char *key, const char *name)
{
        char self[PATH_MAX], *path;
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n <= 0)
                return;
        self[n] = '\0';
        path = xasprintf("%s/../%s", dirname(self), name);
        json_object_set_new(cfg, key, json_string(path));
        free(path);
}

static int
init_backend(void)
{
        json_t *cfg = json_pack("{s:s}", "isolation", "namespaces");
        struct sbx_error err = {0};
        bool ok;

        set_program(cfg, "nsbox", "sandboxd-nsbox");
        set_program(cfg, "agent", "sandboxd-agent");

        ok = ops->init(&bo_loop, cfg, &err) == 0;
        json_decref(cfg);
        if (!ok)
                fprintf(stderr, "bench_local: init: %s\n", err.message);
        sbx_error_clear(&err);
        return ok ? 0 : -1;
}

/* The measures, each interleaved with its baseline so that both see the same machine. */
static void
measure(struct backend_sandbox *sb, int rounds, int creates)
{
        static char *const bwrap[] = {"bwrap",         "--ro-bind", "/", "/",
                                      "--unshare-all", "true",      NULL};
        static char *const tru[] = {"/bin/true", NULL};
        int nbw = (rounds + 9) / 10;
        double *ex = xcalloc((size_t) rounds, sizeof(double));
        double *sp = xcalloc((size_t) rounds, sizeof(double));
        double *bw = xcalloc((size_t) (nbw + creates), sizeof(double));
        double *cr = xcalloc((size_t) creates, sizeof(double));
        double e, s, b, c, bc;

        for (int i = 0; i < rounds; i++) {
                ex[i] = (double) backend_exec(sb, i) / 1e3;
                sp[i] = (double) spawn_once(tru) / 1e3;
                if (i % 10 == 0)
                        bw[i / 10] = (double) spawn_once(bwrap) / 1e3;
        }
        destroy(sb);
        for (int i = 0; i < creates; i++) {
                cr[i] = (double) backend_create(i) / 1e3;
                bw[nbw + i] = (double) spawn_once(bwrap) / 1e3;
        }
        e = bd_median(ex, rounds);
        s = bd_median(sp, rounds);
        b = bd_median(bw, nbw);
        c = bd_median(cr, creates);
        bc = bd_median(bw + nbw, creates);
        printf("exec true, p50 of %d: sandbox %.0f us, posix_spawn %.0f us: ratio %.2f (target "
               "<= 1.5)\n",
               rounds, e, s, e / s);
        printf("exec true vs one bwrap per command (p50 of %d: %.0f us): ratio %.3f (target <= "
               "0.1)\n",
               nbw, b, e / b);
        printf("create until ready, p50 of %d: %.2f ms, bwrap --unshare-all true %.2f ms: ratio "
               "%.2f (target <= 1.0)\n",
               creates, c / 1e3, bc / 1e3, c / bc);
        free(ex);
        free(sp);
        free(bw);
        free(cr);
}

int
main(int argc, char **argv)
{
        static char *const bwrap[] = {"bwrap",         "--ro-bind", "/", "/",
                                      "--unshare-all", "true",      NULL};
        int rounds = argc > 1 ? atoi(argv[1]) : 1000, creates = argc > 2 ? atoi(argv[2]) : 30;
        struct backend_sandbox *sb;

        uv_loop_init(&bo_loop);
        if (rounds < 1 || creates < 1) {
                fprintf(stderr, "usage: bench_local [exec rounds] [create rounds]\n");
                return 2;
        }
        if (!mkdtemp(workdir) || init_backend() < 0 || !(sb = create(0))) {
                printf("bench_local: skipped (namespace sandboxes unavailable)\n");
                return 0;
        }
        if (spawn_wait(bwrap) != 0) {
                printf("bench_local: skipped (bwrap --unshare-all does not run here)\n");
                return 0;
        }
        measure(sb, rounds, creates);
        ops->shutdown();
        uv_run(&bo_loop, UV_RUN_NOWAIT);
        rmdir(workdir);
        return 0;
}
