/* bench_session.c — the agent session (backends/agent/session.h) over a pipe pair to
 * sandboxd-agent, against baselines measured in the same run, round by round (A B A B …, so
 * that the load of a shared machine weighs on both), each measure reported as the median of
 * the per-round ratios and their spread:
 *   1. exec round trip of /bin/true: agent_exec_start to on_exit, vs posix_spawn + waitpid of
 *      the same program from this process, one of each in turn (p50 of each round, target
 *      <= 1.5)
 *   2. output throughput: `head -c N /dev/zero` through the session, vs the same command
 *      writing into a plain pipe this process reads, with the pipe size of the agent's stdout
 *      and the read size of the session's transport (target >= 0.5)
 * The agent is build/<variant>/sandboxd-agent next to bench/. Usage: bench_session [execs per
 * round] [MiB per round] [rounds]
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
#include "backends/agent/transport.h"
#include "protocol/util.h"

#define BS_PIPE_SIZE  (1 << 20) /* what the agent makes of its stdout (prog/chan.c) */
#define BS_MAX_ROUNDS 99

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

/* The same command's stdout into a pipe we read, as large as the agent's and read as the
 * session's transport reads; MiB/s. */
static double
pipe_throughput(char *const *argv, uint64_t want)
{
        static char b[AGENT_TRANSPORT_READ];
        posix_spawn_file_actions_t fa;
        uint64_t got = 0, t;
        int p[2], st;
        ssize_t n;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                exit(1);
        fcntl(p[0], F_SETPIPE_SZ, BS_PIPE_SIZE); /* faster than the default 64 KiB here */
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

/* The same through the session; MiB/s. */
static double
session_throughput(struct agent_session *s, char *const *argv, uint64_t want)
{
        struct brun r = {0};
        double t = (double) session_exec(s, argv, &r) / 1e9;

        if (r.bytes != want || r.code != 0)
                fprintf(stderr, "warning: the session got %llu bytes, exit %d\n",
                        (unsigned long long) r.bytes, r.code);
        return (double) r.bytes / (1 << 20) / t;
}

static double
median(double *v, int n)
{
        double c[BS_MAX_ROUNDS];

        memcpy(c, v, (size_t) n * sizeof(*c));
        for (int i = 1; i < n; i++) /* insertion sort: a few rounds */
                for (int j = i; j > 0 && c[j - 1] > c[j]; j--) {
                        double x = c[j];
                        c[j] = c[j - 1];
                        c[j - 1] = x;
                }
        return n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

static void
report(const char *what, const double *ratio, int rounds, const char *target)
{
        double lo = ratio[0], hi = ratio[0];

        for (int i = 1; i < rounds; i++) {
                lo = ratio[i] < lo ? ratio[i] : lo;
                hi = ratio[i] > hi ? ratio[i] : hi;
        }
        printf("%s: ratio %.2f (median of %d rounds; %.2f-%.2f; target %s):", what,
               median((double *) ratio, rounds), rounds, lo, hi, target);
        for (int i = 0; i < rounds; i++)
                printf(" %.2f", ratio[i]);
        printf("\n");
}

/* Round trips, one of each in turn; each round's p50 ratio into ratio[round]. */
static void
bench_round_trip(struct agent_session *s, int n, int rounds, double *ratio)
{
        char *truev[] = {"/bin/true", NULL};
        uint64_t *ts = xcalloc((size_t) n, sizeof(*ts)), *tp = xcalloc((size_t) n, sizeof(*tp));
        double sess[BS_MAX_ROUNDS], spawn[BS_MAX_ROUNDS];
        struct brun r;

        for (int i = 0; i < 20; i++) { /* warm both paths */
                memset(&r, 0, sizeof(r));
                session_exec(s, truev, &r);
                spawn_exec(truev);
        }
        for (int k = 0; k < rounds; k++) {
                for (int i = 0; i < n; i++) {
                        memset(&r, 0, sizeof(r));
                        ts[i] = session_exec(s, truev, &r);
                        tp[i] = spawn_exec(truev);
                }
                sess[k] = p50_us(ts, n);
                spawn[k] = p50_us(tp, n);
                ratio[k] = sess[k] / spawn[k];
        }
        printf("exec /bin/true round trip, p50 of %d per round: posix_spawn+waitpid %.1f us, "
               "session over a pipe pair %.1f us (medians of the rounds)\n",
               n, median(spawn, rounds), median(sess, rounds));
        free(ts);
        free(tp);
}

/* Throughput, the plain pipe then the session in every round. */
static void
bench_throughput(struct agent_session *s, int mib, int rounds, double *ratio)
{
        char size[32];
        char *headv[] = {"/usr/bin/head", "-c", size, "/dev/zero", NULL};
        double sess[BS_MAX_ROUNDS], pipe[BS_MAX_ROUNDS];
        uint64_t want = (uint64_t) mib << 20;

        snprintf(size, sizeof(size), "%llu", (unsigned long long) want);
        for (int k = 0; k < rounds; k++) {
                pipe[k] = pipe_throughput(headv, want);
                sess[k] = session_throughput(s, headv, want);
                ratio[k] = sess[k] / pipe[k];
                printf("  round %d: plain pipe %.0f MiB/s, session %.0f MiB/s\n", k + 1, pipe[k],
                       sess[k]);
        }
        printf("output %d MiB per round: plain pipe %.0f MiB/s, session %.0f MiB/s (medians of "
               "the rounds)\n",
               mib, median(pipe, rounds), median(sess, rounds));
}

int
main(int argc, char **argv)
{
        char exe[PATH_MAX];
        int n = argc > 1 ? atoi(argv[1]) : 300, mib = argc > 2 ? atoi(argv[2]) : 512;
        int rounds = argc > 3 ? atoi(argv[3]) : 5;
        struct agent_session_config cfg = {.backend = "bench", .where = "in the bench"};
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        double rt[BS_MAX_ROUNDS], tput[BS_MAX_ROUNDS];
        struct agent_session *s;

        if (len <= 0 || n < 10 || mib < 16 || mib > 16384 || rounds < 1 || rounds > BS_MAX_ROUNDS) {
                fprintf(stderr, "usage: bench_session [execs per round >= 10] [MiB per round "
                                "16..16384] [rounds 1..99]\n");
                return 2;
        }
        exe[len] = 0;
        snprintf(agent_bin, sizeof(agent_bin), "%s/../sandboxd-agent", dirname(exe));
        signal(SIGPIPE, SIG_IGN);
        util_json_alloc_init();
        uv_loop_init(&loop);
        s = agent_session_new(&loop, &cfg, &b_cbs, NULL);
        agent_session_open(s);
        run_until(&up);
        bench_round_trip(s, n, rounds, rt);
        bench_throughput(s, mib, rounds, tput);
        report("exec round trip, session / posix_spawn", rt, rounds, "<= 1.5");
        report("output throughput, session / plain pipe", tput, rounds, ">= 0.5");
        agent_session_close(s, NULL, false);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        kill(agent_pid, SIGKILL);
        waitpid(agent_pid, NULL, 0);
        return 0;
}
