/* bench_local.c — isolated local sandboxes (isolation "namespaces", docs/backends/local.md)
 * through the backend's ops, against baselines measured in the same run, interleaved round by
 * round (A B, B A, A B, …) so that the load of a shared machine weighs on both alike; each
 * line gives both medians and the median of the per-round ratios with their p10-p90 spread:
 *   1. exec round trip of `true` in a running sandbox, vs posix_spawn + waitpid of /bin/true
 *      from this process (target <= 1.5); and, every 10 rounds against those rounds' median:
 *      vs what Codex CLI runs per command (target <= 0.1): its outer codex-linux-sandbox stage
 *      (a `bwrap --help` probe, a /proc preflight bwrap, then the real bwrap), its inner stage
 *      (no_new_privs, its seccomp filter, a fork) and the command, all played by codex-stage
 *      (bench/codex/stage.c, next to this bench); vs that bwrap alone; vs the chain running
 *      `bash -lc true`, as Codex's shell_command tool does; with the floor of the ratios:
 *      posix_spawn itself vs the chain and vs the bwrap alone
 *   2. create: sandbox create until its agent is READY (the first exec possible), vs one
 *      `bwrap --ro-bind / / --unshare-all true` (target <= 1.0)
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

/* posix_spawn + waitpid of argv in envp (NULL: this process's); its exit status (-1: not
 * run). */
static int
spawn_wait(char *const argv[], char *const envp[])
{
        pid_t pid;
        int st;

        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp ? envp : environ) != 0)
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

/* One spawn of argv in envp (NULL: this process's); its round trip in ns. */
static uint64_t
spawn_once(char *const argv[], char *const envp[])
{
        uint64_t t0 = util_now_ns();

        if (spawn_wait(argv, envp) != 0) {
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

/* name next to this program's directory (up: the helpers of build/<variant>/), or in it. */
static char *
next_to_self(const char *up, const char *name)
{
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

        if (n <= 0)
                return NULL;
        self[n] = '\0';
        return xasprintf("%s/%s%s", dirname(self), up, name);
}

/* The helper programs of build/<variant>/, next to this bench/ directory. */
static void
set_program(json_t *cfg, const char *key, const char *name)
{
        char *path = next_to_self("../", name);

        if (path)
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

/* Quantile q (0..1) of the n values of v, sorted here: linear between the nearest ranks. */
static double
quantile(double *v, int n, double q)
{
        double pos = q * (n - 1), lo;

        bd_median(v, n); /* sorts */
        lo = v[(int) pos];
        return (int) pos + 1 < n ? lo + (pos - (int) pos) * (v[(int) pos + 1] - lo) : lo;
}

/* One measure: a subject and its baseline taken round by round in the same run. */
struct pairs {
        const char *what;
        int n;
        double *a, *b, *r; /* subject, baseline (us), per-round ratio a/b */
};

static void
pairs_init(struct pairs *p, const char *what, int n)
{
        p->what = what;
        p->n = 0;
        p->a = xcalloc((size_t) n, sizeof(double));
        p->b = xcalloc((size_t) n, sizeof(double));
        p->r = xcalloc((size_t) n, sizeof(double));
}

static void
pairs_add(struct pairs *p, double a, double b)
{
        p->a[p->n] = a;
        p->b[p->n] = b;
        p->r[p->n++] = a / b;
}

static void
pairs_free(struct pairs *p)
{
        free(p->a);
        free(p->b);
        free(p->r);
}

/* The medians of both, then the median of the per-round ratios and their spread (p10-p90). */
static void
pairs_print(struct pairs *p, bool ms, const char *target)
{
        double scale = ms ? 1e3 : 1;
        double a = bd_median(p->a, p->n) / scale, b = bd_median(p->b, p->n) / scale;
        double r = bd_median(p->r, p->n), r10 = quantile(p->r, p->n, 0.1),
               r90 = quantile(p->r, p->n, 0.9);

        printf("%s, %d rounds: p50 %.*f vs %.*f %s; per-round ratio p50 %.3f (p10-p90 "
               "%.3f-%.3f)%s%s\n",
               p->what, p->n, ms ? 2 : 0, a, ms ? 2 : 0, b, ms ? "ms" : "us", r, r10, r90,
               target ? ", target " : "", target ? target : "");
        pairs_free(p);
}

static char *const bwrap_argv[] = {"bwrap", "--ro-bind", "/", "/", "--unshare-all", "true", NULL};
static char *const true_argv[] = {"/bin/true", NULL};

/* The per-command baselines, run once every 10 exec rounds (docs/performance.md, "Which
 * baseline", has the reading of Codex's source behind them). W stands for the workdir, S for
 * codex-stage (bench/codex/stage.c, built next to this bench): main() puts them in. */
static char ph_workdir[] = "W", ph_stage[] = "S";
#define W ph_workdir
#define S ph_stage
static char *codex_argv[] = {S, "--sandbox-policy-cwd", W, "--", "true", NULL};
static char *codex_bash_argv[] = {S, "--sandbox-policy-cwd", W, "--", "bash", "-lc", "true", NULL};
/* The bwrap of that chain alone, running `true` itself: no probe, no preflight, no stages. */
static char *bwrap_codex_argv[] = {"bwrap",
                                   "--as-pid-1",
                                   "--new-session",
                                   "--die-with-parent",
                                   "--ro-bind",
                                   "/",
                                   "/",
                                   "--dev",
                                   "/dev",
                                   "--bind",
                                   W,
                                   W,
                                   "--unshare-user",
                                   "--unshare-pid",
                                   "--unshare-net",
                                   "--proc",
                                   "/proc",
                                   "true",
                                   NULL};
#undef W
#undef S

struct baseline {
        const char *what;
        char **argv;
        int floor;      /* also report posix_spawn itself against it */
        int clean_home; /* run with HOME set to the (empty) workdir */
        char **envp;    /* NULL: this process's */
        struct pairs p, fl;
};

/* Codex's shell_command tool runs the user's shell as a login shell (`bash -lc CMD`): that
 * one runs with an empty HOME, so that it measures the system's profile only. */
static struct baseline baselines[] = {
        {.what = "exec true: sandbox vs Codex CLI's per-command chain",
         .argv = codex_argv,
         .floor = 1},
        {.what = "exec true: sandbox vs the bwrap of that chain alone",
         .argv = bwrap_codex_argv,
         .floor = 1},
        {.what = "exec true: sandbox vs Codex's chain running `bash -lc true`",
         .argv = codex_bash_argv,
         .clean_home = 1},
};
#define NBASE (sizeof(baselines) / sizeof(baselines[0]))

/* This process's environment with HOME=home: a login shell then reads the system's profile
 * alone, not whatever the user running the bench keeps in theirs. Lives as long as the run. */
static char **
env_with_home(const char *home)
{
        size_t n = 0, k = 0;
        char **env;

        while (environ[n])
                n++;
        env = xcalloc(n + 2, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "HOME=", 5) != 0)
                        env[k++] = environ[i];
        env[k] = xasprintf("HOME=%s", home);
        return env;
}

/* Puts the workdir and codex-stage in every baseline's argv; 0, or -1 where one does not run. */
static int
baselines_init(char *stage, int blocks)
{
        for (size_t i = 0; i < NBASE; i++) {
                struct baseline *b = &baselines[i];

                for (char **a = b->argv; *a; a++)
                        *a = *a == ph_workdir ? workdir : *a == ph_stage ? stage : *a;
                if (b->clean_home)
                        b->envp = env_with_home(workdir);
                if (spawn_wait(b->argv, b->envp) != 0)
                        return -1;
                pairs_init(&b->p, b->what, blocks);
                pairs_init(&b->fl, "  (floor: posix_spawn itself vs the same)", blocks);
        }
        return 0;
}

/* Every baseline once, the order turned every block, against the block's medians. */
static void
baselines_round(int block, double exec_p50, double spawn_p50)
{
        for (size_t k = 0; k < NBASE; k++) {
                struct baseline *b = &baselines[(k + (size_t) block) % NBASE];
                double t = (double) spawn_once(b->argv, b->envp) / 1e3;

                pairs_add(&b->p, exec_p50, t);
                pairs_add(&b->fl, spawn_p50, t);
        }
}

static void
baselines_print(void)
{
        for (size_t i = 0; i < NBASE; i++) {
                pairs_print(&baselines[i].p, false, i == 0 ? "<= 0.1" : NULL);
                if (baselines[i].floor)
                        pairs_print(&baselines[i].fl, false, NULL);
                else
                        pairs_free(&baselines[i].fl);
        }
}

/* Exec rounds, the sandbox and posix_spawn in turn (the order swapped every round, so that
 * neither always runs on the heels of the other); every 10 rounds the baselines, compared
 * with the median of those 10 execs (and posix_spawns: the floor, what no sandbox can beat). */
static void
measure_exec(struct backend_sandbox *sb, int rounds)
{
        struct pairs ex;
        double blk_e[10], blk_s[10], e, s;

        pairs_init(&ex, "exec true: sandbox vs posix_spawn+waitpid", rounds);
        for (int i = 0; i < rounds; i++) {
                if (i % 2) {
                        s = (double) spawn_once(true_argv, NULL) / 1e3;
                        e = (double) backend_exec(sb, i) / 1e3;
                } else {
                        e = (double) backend_exec(sb, i) / 1e3;
                        s = (double) spawn_once(true_argv, NULL) / 1e3;
                }
                pairs_add(&ex, e, s);
                blk_e[i % 10] = e;
                blk_s[i % 10] = s;
                if (i % 10 == 9)
                        baselines_round(i / 10, bd_median(blk_e, 10), bd_median(blk_s, 10));
        }
        pairs_print(&ex, false, "<= 1.5");
        baselines_print();
}

/* Create rounds: a create until ready (destroyed after, not counted) and one bwrap, in turn,
 * the order swapped every round. */
static void
measure_create(int creates)
{
        struct pairs cr;
        double c, b;

        pairs_init(&cr, "create until ready vs bwrap --unshare-all true", creates);
        for (int i = 0; i < creates; i++) {
                if (i % 2) {
                        b = (double) spawn_once(bwrap_argv, NULL) / 1e3;
                        c = (double) backend_create(i) / 1e3;
                } else {
                        c = (double) backend_create(i) / 1e3;
                        b = (double) spawn_once(bwrap_argv, NULL) / 1e3;
                }
                pairs_add(&cr, c, b);
        }
        pairs_print(&cr, true, "<= 1.0");
}

/* The end of a run: the sandbox (if any) destroyed, the backend shut down, the workdir gone
 * (on the early ends too); rc. */
static int
finish(struct backend_sandbox *sb, char *stage, int rc)
{
        if (sb)
                destroy(sb);
        ops->shutdown();
        uv_run(&bo_loop, UV_RUN_NOWAIT);
        rmdir(workdir);
        free(stage);
        return rc;
}

int
main(int argc, char **argv)
{
        int rounds = argc > 1 ? atoi(argv[1]) : 1000, creates = argc > 2 ? atoi(argv[2]) : 30;
        struct backend_sandbox *sb = NULL;
        char *stage = NULL;

        uv_loop_init(&bo_loop);
        if (rounds < 1 || creates < 1) {
                fprintf(stderr, "usage: bench_local [exec rounds] [create rounds]\n");
                return 2;
        }
        if (!mkdtemp(workdir) || init_backend() < 0) {
                rmdir(workdir);
                printf("bench_local: skipped (namespace sandboxes unavailable)\n");
                return 0;
        }
        if (!(sb = create(0))) {
                printf("bench_local: skipped (namespace sandboxes unavailable)\n");
                return finish(NULL, stage, 0);
        }
        if (!(stage = next_to_self("", "codex-stage")) || access(stage, X_OK) != 0) {
                fprintf(stderr, "bench_local: no codex-stage next to this bench: make %s\n",
                        stage ? stage : "build/std/bench/codex-stage");
                return finish(sb, stage, 1);
        }
        if (spawn_wait(bwrap_argv, NULL) != 0 || baselines_init(stage, rounds / 10 + 1) < 0) {
                printf("bench_local: skipped (bwrap does not run here)\n");
                return finish(sb, stage, 0);
        }
        measure_exec(sb, rounds);
        destroy(sb);
        measure_create(creates);
        return finish(NULL, stage, 0);
}
