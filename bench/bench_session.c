/* bench_session.c — the agent session (backends/agent/session.h) over a pipe pair to
 * sandboxd-agent, against baselines measured in the same run:
 *   1. exec round trip of /bin/true: agent_exec_start to on_exit, vs posix_spawn + waitpid of
 *      the same program from this process (p50 ratio, target <= 1.5)
 *   2. output throughput: `head -c N /dev/zero` through the session, vs the same command
 *      writing into a plain pipe this process reads (ratio, target >= 0.5)
 * The agent is build/<variant>/sandboxd-agent next to bench/. Usage: bench_session [rounds]
 * [mib]
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/agent/session.h"
#include "protocol/util.h"

extern char **environ;

static uv_loop_t loop;
static char agent_bin[PATH_MAX];
static pid_t agent_pid;
static bool up;

struct brun {
        bool done;
        uint64_t bytes;
        int code;
};

static void
b_link(void *ctx, enum backend_link st, const char *reason)
{
        if (st == BACKEND_LINK_BACK)
                up = true;
        if (st == BACKEND_LINK_GONE) {
                fprintf(stderr, "bench_session: the session is gone: %s\n", reason);
                exit(1);
        }
}

static void
b_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        char *argv[] = {agent_bin, NULL}, *envp[] = {"PATH=/usr/bin:/bin", NULL};
        int in[2], out[2];

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
                exit(1);
        agent_pid = fork();
        if (agent_pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execve(agent_bin, argv, envp);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        cb(cb_ctx, agent_transport_fds(&loop, out[0], in[1]), NULL);
}

static const struct agent_session_cbs b_cbs = {.connect = b_connect, .on_link = b_link};

static void
b_output(void *ctx, enum backend_stream s, const char *data, size_t len)
{
        ((struct brun *) ctx)->bytes += len;
}

static void
b_exit(void *ctx, const struct exec_exit *ex)
{
        struct brun *r = ctx;

        r->code = ex->error || ex->lost ? -1 : ex->exit_code;
        r->done = true;
}

static const struct backend_exec_cbs b_exec_cbs = {b_output, b_exit};

static void
run_until(const bool *flag)
{
        while (!*flag && uv_run(&loop, UV_RUN_ONCE))
                ;
}

/* One exec through the session; ns. */
static uint64_t
session_exec(struct agent_session *s, char *const *argv, struct brun *r)
{
        static unsigned seq;
        struct exec_spec spec = {.argv = argv};
        struct backend_proc *p;
        struct sbx_error err = {0};
        char id[32];
        uint64_t t = util_now_ns();

        snprintf(id, sizeof(id), "p_b%u", ++seq);
        spec.exec_id = id;
        if (agent_exec_start(s, &spec, &b_exec_cbs, r, &p, &err) < 0) {
                fprintf(stderr, "bench_session: %s\n", err.message);
                exit(1);
        }
        run_until(&r->done);
        t = util_now_ns() - t;
        p->ops->release(p);
        return t;
}

static uint64_t
spawn_exec(char *const *argv)
{
        uint64_t t = util_now_ns();
        pid_t pid;
        int st;

        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                exit(1);
        waitpid(pid, &st, 0);
        return util_now_ns() - t;
}

static int
cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return (x > y) - (x < y);
}

static double
p50_us(uint64_t *v, int n)
{
        qsort(v, (size_t) n, sizeof(*v), cmp_u64);
        return (double) v[n / 2] / 1e3;
}

/* The same command's stdout into a pipe we read; MiB/s. */
static double
pipe_throughput(char *const *argv, uint64_t want)
{
        static char b[64 << 10];
        posix_spawn_file_actions_t fa;
        uint64_t got = 0, t;
        int p[2], st;
        ssize_t n;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                exit(1);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        t = util_now_ns();
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
                exit(1);
        close(p[1]);
        while ((n = read(p[0], b, sizeof(b))) > 0)
                got += (uint64_t) n;
        waitpid(pid, &st, 0);
        t = util_now_ns() - t;
        close(p[0]);
        posix_spawn_file_actions_destroy(&fa);
        if (got != want)
                fprintf(stderr, "warning: pipe got %llu bytes\n", (unsigned long long) got);
        return (double) got / (1 << 20) / ((double) t / 1e9);
}

int
main(int argc, char **argv)
{
        char exe[PATH_MAX], size[32];
        int n = argc > 1 ? atoi(argv[1]) : 300, mib = argc > 2 ? atoi(argv[2]) : 512;
        char *truev[] = {"/bin/true", NULL};
        char *headv[] = {"/usr/bin/head", "-c", size, "/dev/zero", NULL};
        struct agent_session_config cfg = {.backend = "bench", .where = "in the bench"};
        uint64_t *ts = xcalloc((size_t) n, sizeof(*ts)), *tp = xcalloc((size_t) n, sizeof(*tp));
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        struct agent_session *s;
        struct brun r = {0};
        double sess_mibs, pipe_mibs, t;

        if (len <= 0 || n < 10 || mib < 16 || mib > 16384)
                return 2;
        exe[len] = 0;
        snprintf(agent_bin, sizeof(agent_bin), "%s/../sandboxd-agent", dirname(exe));
        snprintf(size, sizeof(size), "%llu", (unsigned long long) mib << 20);
        signal(SIGPIPE, SIG_IGN);
        util_json_alloc_init();
        uv_loop_init(&loop);
        s = agent_session_new(&loop, &cfg, &b_cbs, NULL);
        agent_session_open(s);
        run_until(&up);
        for (int i = 0; i < 20; i++) { /* warm both paths */
                memset(&r, 0, sizeof(r));
                session_exec(s, truev, &r);
                spawn_exec(truev);
        }
        for (int i = 0; i < n; i++) { /* interleaved: both see the same machine load */
                memset(&r, 0, sizeof(r));
                ts[i] = session_exec(s, truev, &r);
                tp[i] = spawn_exec(truev);
        }
        printf("exec /bin/true round trip: posix_spawn+waitpid p50 %.1f us, session over a pipe "
               "pair p50 %.1f us, ratio %.2f (target <= 1.5)\n",
               p50_us(tp, n), p50_us(ts, n), p50_us(ts, n) / p50_us(tp, n));
        pipe_mibs = pipe_throughput(headv, (uint64_t) mib << 20);
        memset(&r, 0, sizeof(r));
        t = (double) session_exec(s, headv, &r) / 1e9;
        sess_mibs = (double) r.bytes / (1 << 20) / t;
        if (r.bytes != (uint64_t) mib << 20 || r.code != 0)
                fprintf(stderr, "warning: the session got %llu bytes, exit %d\n",
                        (unsigned long long) r.bytes, r.code);
        printf("output %d MiB: plain pipe %.0f MiB/s, session %.0f MiB/s, ratio %.2f "
               "(target >= 0.5)\n",
               mib, pipe_mibs, sess_mibs, sess_mibs / pipe_mibs);
        agent_session_close(s, NULL, false);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        kill(agent_pid, SIGKILL);
        waitpid(agent_pid, NULL, 0);
        free(ts);
        free(tp);
        return 0;
}
