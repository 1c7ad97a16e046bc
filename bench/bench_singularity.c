/* bench_singularity.c — the singularity backend through a real sandboxd against the fake
 * apptainer (tests/fakes/apptainer/), measured in the same run:
 *
 *   exec:   round trip of exec {argv: ["true"]} in a running instance through the daemon vs
 *           `apptainer exec instance://N true` of the fake (target ratio <= 0.1)
 *   create: sandbox.create with the image in the cache (verified, instance start, agent,
 *           session) vs the fake's `instance start` with the same flags alone, alternating,
 *           medians (target <= 1.2)
 *
 * The fake needs root (unshare, setns); without it, or without its tools, prints "skipped".
 * Usage: bench_singularity [EXECS [CREATES]] (default 300 and 9).
 */
#include <sys/wait.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/helper_daemon.h"
#include "protocol/util.h"

#define FAKE "tests/fakes/apptainer/apptainer"

static char dir[PATH_MAX], exe[PATH_MAX + 16], home[PATH_MAX + 16];

/* Runs the fake with HOME set; its exit code. */
static int
fake(char *const *args)
{
        char *argv[32], henv[PATH_MAX + 32], penv[4096];
        char *envp[] = {henv, penv, NULL};
        size_t n = 0;
        pid_t pid;
        int st;

        argv[n++] = exe;
        while (*args && n < ARRAY_SIZE(argv) - 1)
                argv[n++] = *args++;
        argv[n] = NULL;
        snprintf(henv, sizeof(henv), "HOME=%s", home);
        snprintf(penv, sizeof(penv), "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        if ((pid = fork()) == 0) {
                if (!freopen("/dev/null", "w", stderr))
                        _exit(127);
                execve(exe, argv, envp);
                _exit(127);
        }
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
setup(void)
{
        char cmd[5 * PATH_MAX];

        if (geteuid() != 0 || access(FAKE, R_OK) < 0 ||
            system("command -v siftool unsquashfs "
                   "mksquashfs >/dev/null") != 0)
                return -1;
        snprintf(dir, sizeof(dir), "/tmp/bench-sing-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        snprintf(exe, sizeof(exe), "%s/apptainer", dir);
        snprintf(home, sizeof(home), "%s/home", dir);
        snprintf(cmd, sizeof(cmd), "cp %s %s && chmod 755 %s && mkdir %s", FAKE, exe, exe, home);
        return system(cmd) == 0 ? 0 : -1;
}

static double
bench_daemon_exec(struct bd *d, const char *id, int n)
{
        uint64_t t0 = util_now_ns();

        for (int i = 0; i < n; i++)
                json_decref(bd_call(d, "exec",
                                    json_pack("{s:s,s:[s]}", "sandbox", id, "argv", "true")));
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

static double
bench_fake_exec(const char *inst, int n)
{
        char target[128];
        char *args[] = {"exec", "--cleanenv", target, "true", NULL};
        uint64_t t0 = util_now_ns();

        snprintf(target, sizeof(target), "instance://%s", inst);
        for (int i = 0; i < n; i++)
                fake(args);
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

/* One sandbox.create (image cached) and its destroy; the create's ms, or -1. */
static double
daemon_create(struct bd *d)
{
        uint64_t t0 = util_now_ns();
        json_t *r = bd_call(d, "sandbox.create",
                            json_pack("{s:s,s:s}", "backend", "singularity", "image",
                                      "docker://busybox:bench"));
        double ms = (double) (util_now_ns() - t0) / 1e6;

        if (!r)
                return -1;
        json_decref(
                bd_call(d, "sandbox.destroy", json_pack("{s:O}", "id", json_object_get(r, "id"))));
        json_decref(r);
        return ms;
}

/* One `instance start` of the fake with the backend's flags (the agent's bind included), and
 * its stop; the start's ms, or -1. */
static double
fake_start(int i, const char *sif, const char *agent)
{
        char name[64], bind[PATH_MAX + 64];
        char *start[] = {"instance",
                         "start",
                         "--containall",
                         "--no-home",
                         "--cleanenv",
                         "--no-privs",
                         "--writable-tmpfs",
                         "--net",
                         "--network",
                         "none",
                         "--bind",
                         bind,
                         (char *) sif,
                         name,
                         NULL};
        char *stop[] = {"instance", "stop", "--force", name, NULL};
        uint64_t t0;
        double ms;

        snprintf(bind, sizeof(bind), "%s:/.sandboxd/sandboxd-agent:ro", agent);
        snprintf(name, sizeof(name), "bench-start-%d", i);
        t0 = util_now_ns();
        if (fake(start) != 0) {
                fprintf(stderr, "bench_singularity: the fake's instance start %s failed\n", name);
                return -1;
        }
        ms = (double) (util_now_ns() - t0) / 1e6;
        fake(stop);
        return ms;
}

/* Daemon creates and bare starts alternate one by one, so that the shared machine's load
 * weighs on both alike; the medians are compared. */
static int
bench_create(struct bd *d, int n, const char *sif, const char *agent)
{
        double dv[64], fv[64];

        n = MAX(1, MIN(n, (int) ARRAY_SIZE(dv)));
        for (int i = 0; i < n; i++)
                if ((dv[i] = daemon_create(d)) < 0 || (fv[i] = fake_start(i, sif, agent)) < 0)
                        return -1;
        double dc = bd_median(dv, n), fc = bd_median(fv, n);
        printf("create, image cached: daemon %.1f ms, `instance start` alone (fake) %.1f ms "
               "(medians of %d), ratio %.2f (target <= 1.2)\n",
               dc, fc, n, dc / fc);
        return 0;
}

int
main(int argc, char **argv)
{
        int nexec = argc > 1 ? atoi(argv[1]) : 300, ncreate = argc > 2 ? atoi(argv[2]) : 9;
        char cfg[3 * PATH_MAX], henv[PATH_MAX + 32], sif[PATH_MAX] = "", agent[PATH_MAX];
        char *env[] = {henv, NULL};
        struct bd d;
        json_t *sb;

        if (setup() < 0) {
                printf("bench_singularity: skipped (needs root and siftool, squashfs-tools)\n");
                return 0;
        }
        snprintf(cfg, sizeof(cfg), "[backend.singularity]\nexecutable = %s\nscratch_dir = %s/s\n",
                 exe, dir);
        snprintf(henv, sizeof(henv), "HOME=%s", home);
        if (!realpath("build/std/sandboxd-agent", agent) || bd_start(&d, cfg, env) < 0)
                return 1;
        sb = bd_call(&d, "sandbox.create",
                     json_pack("{s:s,s:s}", "backend", "singularity", "image",
                               "docker://busybox:bench"));
        if (!sb)
                return 1;
        const char *id = json_string_value(json_object_get(sb, "id"));
        const char *inst =
                json_string_value(json_object_get(json_object_get(sb, "details"), "instance"));
        bench_daemon_exec(&d, id, 20); /* warm */
        double dx = bench_daemon_exec(&d, id, nexec), fx = bench_fake_exec(inst, nexec / 10);
        printf("exec true: daemon %.3f ms, `apptainer exec instance://` (fake) %.3f ms, "
               "ratio %.3f (target <= 0.1)\n",
               dx, fx, dx / fx);
        json_decref(bd_call(&d, "sandbox.destroy", json_pack("{s:s}", "id", id)));
        snprintf(sif, sizeof(sif), "%s",
                 json_string_value(json_object_get(json_object_get(sb, "details"), "sif")));
        json_decref(sb);
        int rc = bench_create(&d, ncreate, sif, agent);
        bd_stop(&d);
        snprintf(cfg, sizeof(cfg), "rm -rf %s", dir);
        return system(cfg) == 0 && rc == 0 ? 0 : 1;
}
