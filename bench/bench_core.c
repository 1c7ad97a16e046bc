/* bench_core.c — the core daemon against baselines measured in the same run:
 *   1. exec round trip of argv ["/bin/true"] vs posix_spawn + waitpid (p50 ratio, target <= 1.3),
 *      and of command "true" (a command that cannot change the shell state) and "cd ." (one
 *      that can: the wrapper's trap writes the state, the daemon reads it back) vs posix_spawn
 *      of the daemon's shell (`bash -c true`, /bin/sh without bash) + waitpid (p50 ratio,
 *      target <= 1.3)
 *   2. 1 GiB of text streamed through exec vs the same bytes through a plain pipe
 *      (throughput ratio, target >= 0.5)
 *   3. daemon RSS idle (target <= 8 MiB) and with 1000 background processes and 100
 *      connections (target <= 64 MiB)
 * The daemon's default sandbox is on the host ([backend.local] isolation = none): this is the
 * daemon's own cost; bench_local measures isolated sandboxes.
 * Usage: SANDBOXD_BIN=build/std/sandboxd bench_core [rounds] [stream_mib]
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

extern char **environ;

struct bconn {
        int fd;
        struct buf in;
        size_t pos;
};

static pid_t daemon_pid;
static char sock_path[100];

static void
die(const char *what)
{
        perror(what);
        if (daemon_pid > 0)
                kill(daemon_pid, SIGKILL);
        exit(2);
}

static int
bconn_open(struct bconn *c)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        memset(c, 0, sizeof(*c));
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -1;
        return 0;
}

static void
bconn_send(struct bconn *c, const char *s)
{
        size_t n = strlen(s), off = 0;

        while (off < n) {
                ssize_t w = write(c->fd, s + off, n - off);
                if (w <= 0)
                        die("write");
                off += (size_t) w;
        }
}

/* Next line (borrowed until the next call), NULL on EOF. */
static char *
bconn_line(struct bconn *c, size_t *len)
{
        for (;;) {
                char *start = c->in.data ? c->in.data + c->pos : NULL;
                char *nl = start ? memchr(start, '\n', c->in.len - c->pos) : NULL;
                if (nl) {
                        *nl = '\0';
                        *len = (size_t) (nl - start);
                        c->pos += *len + 1;
                        return start;
                }
                if (c->pos) {
                        buf_consume(&c->in, c->pos);
                        c->pos = 0;
                }
                buf_reserve(&c->in, 1 << 20);
                ssize_t r = read(c->fd, c->in.data + c->in.len, 1 << 20);
                if (r <= 0)
                        return NULL;
                c->in.len += (size_t) r;
        }
}

/* What a C client does with an exec.output line: find "data" and unescape it. Returns the
 * number of decoded bytes. */
static uint64_t
data_bytes(const char *line)
{
        const char *p = strstr(line, "\"data\":\"");
        uint64_t n = 0;

        if (!p)
                return 0;
        for (p += 8; *p && *p != '"'; p++, n++) {
                if (*p != '\\')
                        continue;
                p++;
                if (*p == 'u') {
                        unsigned cp =
                                (unsigned) strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
                        n += cp < 0x80 ? 0 : cp < 0x800 ? 1 : 2;
                        p += 4;
                }
        }
        return n;
}

/* Reads until the response with id; returns the total "data" bytes of exec.output seen. */
static uint64_t
bconn_wait(struct bconn *c, int id, bool parse_output)
{
        char want[32];
        size_t len;
        char *line;
        uint64_t bytes = 0;

        snprintf(want, sizeof(want), "\"id\":%d,", id);
        while ((line = bconn_line(c, &len))) {
                if (strstr(line, want) && !strstr(line, "\"method\""))
                        return bytes;
                if (parse_output)
                        bytes += data_bytes(line);
        }
        die("daemon closed the connection");
        return 0;
}

/* The core daemon on the host: its default sandbox is a local one with isolation "none", whose
 * execs are the daemon's own spawns (isolated sandboxes: bench_local). */
static const char core_config[] = "[backend.local]\nisolation = none\n";

static void
daemon_start(const char *bin, const char *dir)
{
        char state[300], conf[300];
        FILE *f;

        snprintf(sock_path, sizeof(sock_path), "%s/s.sock", dir);
        snprintf(state, sizeof(state), "%s/state", dir);
        snprintf(conf, sizeof(conf), "%s/sandboxd.conf", dir);
        f = fopen(conf, "w");
        if (!f || fputs(core_config, f) < 0 || fclose(f) != 0)
                die("cannot write the daemon's configuration");
        daemon_pid = fork();
        if (daemon_pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                dup2(null, 2);
                execl(bin, bin, "--socket", sock_path, "--state-dir", state, "--config", conf,
                      (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 500; i++) {
                struct bconn c;
                if (bconn_open(&c) == 0) {
                        close(c.fd);
                        return;
                }
                usleep(10000);
        }
        die("daemon did not start");
}

static int
cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static uint64_t
p50(uint64_t *v, int n)
{
        qsort(v, (size_t) n, sizeof(*v), cmp_u64);
        return v[n / 2];
}

/* One exec round trip of params through c (ns). */
static uint64_t
exec_once(struct bconn *c, const char *params, int id)
{
        char req[512];
        uint64_t t0 = util_now_ns();

        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"exec\",\"params\":%s}\n", id, params);
        bconn_send(c, req);
        bconn_wait(c, id, false);
        return util_now_ns() - t0;
}

/* One posix_spawn + waitpid of argv (ns). */
static uint64_t
spawn_once(char *const *argv)
{
        uint64_t t0 = util_now_ns();
        pid_t pid;
        int st;

        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
                die("posix_spawn");
        waitpid(pid, &st, 0);
        return util_now_ns() - t0;
}

/* A command exec with shell state against a bare `bash -c COMMAND`, alternating one of each
 * so that a busy moment on the shared machine weighs on both columns alike. */
static void
bench_command(int rounds, const char *command, const char *what)
{
        const char *sh = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
        char *argv[] = {(char *) sh, "-c", (char *) command, NULL};
        uint64_t *base = xcalloc((size_t) rounds, sizeof(uint64_t));
        uint64_t *via = xcalloc((size_t) rounds, sizeof(uint64_t));
        char params[256];
        struct bconn c;

        snprintf(params, sizeof(params), "{\"command\":\"%s\",\"stream\":false}", command);
        if (bconn_open(&c) < 0)
                die("connect");
        for (int i = 0; i < 5; i++) /* warm up */
                exec_once(&c, params, 1000000 + i);
        for (int i = 0; i < rounds; i++) {
                base[i] = spawn_once(argv);
                via[i] = exec_once(&c, params, 1000010 + i);
        }
        uint64_t b = p50(base, rounds), d = p50(via, rounds);
        printf("exec round trip command \"%s\" (shell state on; %s): %s -c '%s' "
               "posix_spawn+waitpid p50 %.1f us, sandboxd p50 %.1f us, ratio %.2f (target <= 1.3) "
               "over %d rounds\n",
               command, what, sh, command, b / 1e3, d / 1e3, (double) d / (double) b, rounds);
        close(c.fd);
        buf_free(&c.in);
        free(base);
        free(via);
}

static void
bench_round_trip(int rounds)
{
        uint64_t *base = xcalloc((size_t) rounds, sizeof(uint64_t));
        uint64_t *via = xcalloc((size_t) rounds, sizeof(uint64_t));
        char *argv[] = {"/bin/true", NULL};
        char req[256];
        struct bconn c;

        if (bconn_open(&c) < 0)
                die("connect");
        /* warm up: creates the default sandbox */
        bconn_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"exec\",\"params\":{\"argv\":"
                       "[\"/bin/true\"]}}\n");
        bconn_wait(&c, 0, false);
        for (int i = 0; i < rounds; i++) {
                pid_t pid;
                int st;
                uint64_t t0 = util_now_ns();
                if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) != 0)
                        die("posix_spawn");
                waitpid(pid, &st, 0);
                base[i] = util_now_ns() - t0;
                snprintf(req, sizeof(req),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"exec\",\"params\":"
                         "{\"argv\":[\"/bin/true\"],\"stream\":false}}\n",
                         i + 1);
                t0 = util_now_ns();
                bconn_send(&c, req);
                bconn_wait(&c, i + 1, false);
                via[i] = util_now_ns() - t0;
        }
        uint64_t b = p50(base, rounds), d = p50(via, rounds);
        for (int i = 0; i < rounds; i++) {
                uint64_t t0 = util_now_ns();
                snprintf(req, sizeof(req),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"approval.list\"}\n",
                         rounds + i + 1);
                bconn_send(&c, req);
                bconn_wait(&c, rounds + i + 1, false);
                base[i] = util_now_ns() - t0;
        }
        /* daemon.hello may be sent once per connection: time a request as cheap as it. */
        printf("approval.list round trip p50 %.1f us (the protocol's share of an exec)\n",
               p50(base, rounds) / 1e3);
        printf("exec round trip /bin/true: posix_spawn+waitpid p50 %.1f us, sandboxd p50 %.1f us, "
               "ratio %.2f (target <= 1.3) over %d rounds\n",
               b / 1e3, d / 1e3, (double) d / (double) b, rounds);
        close(c.fd);
        buf_free(&c.in);
        free(base);
        free(via);
}

static double
pipe_baseline(const char *cmd, uint64_t *bytes)
{
        FILE *f = popen(cmd, "r");
        static char b[1 << 16];
        uint64_t t0 = util_now_ns();
        size_t n;

        *bytes = 0;
        while ((n = fread(b, 1, sizeof(b), f)) > 0)
                *bytes += n;
        pclose(f);
        return (double) (util_now_ns() - t0) / 1e9;
}

static void
bench_stream(int mib)
{
        char cmd[256], req[512];
        uint64_t base_bytes, got, t0;
        double base_s, via_s;
        struct bconn c;

        snprintf(cmd, sizeof(cmd), "head -c %d /dev/zero | tr '\\0' a", mib << 20);
        base_s = pipe_baseline(cmd, &base_bytes);
        if (bconn_open(&c) < 0)
                die("connect");
        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"exec\",\"params\":{\"command\":"
                 "\"head -c %d /dev/zero | tr '\\\\0' a\",\"timeout_s\":600}}\n",
                 mib << 20);
        t0 = util_now_ns();
        bconn_send(&c, req);
        got = bconn_wait(&c, 1, true);
        via_s = (double) (util_now_ns() - t0) / 1e9;
        if (got != base_bytes)
                fprintf(stderr, "warning: received %llu bytes, expected %llu\n",
                        (unsigned long long) got, (unsigned long long) base_bytes);
        printf("stream %d MiB: plain pipe %.0f MiB/s, through sandboxd (parsed JSON) %.0f MiB/s, "
               "ratio %.2f (target >= 0.5)\n",
               mib, mib / base_s, mib / via_s, base_s / via_s);
        close(c.fd);
        buf_free(&c.in);
}

/* A field of /proc/PID/status or smaps_rollup, in KiB. */
static long
proc_kib(pid_t pid, const char *file, const char *field)
{
        char path[64], line[256];
        size_t n = strlen(field);
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (!strncmp(line, field, n))
                        kib = strtol(line + n, NULL, 10);
        if (f)
                fclose(f);
        return kib;
}

static long
rss_kib(pid_t pid)
{
        return proc_kib(pid, "status", "VmRSS:");
}

/* The daemon's own memory: RSS less the clean pages of mapped libraries. */
static long
private_kib(pid_t pid)
{
        return proc_kib(pid, "smaps_rollup", "Private_Dirty:");
}

static void
bench_rss(void)
{
        struct bconn conns[100];
        char req[256];
        long idle, loaded;

        /* The daemon trims freed memory every 5 s: measure "idle" as a quiet daemon would be. */
        sleep(6);
        idle = rss_kib(daemon_pid);
        long idle_private = private_kib(daemon_pid);
        for (int i = 0; i < 100; i++)
                if (bconn_open(&conns[i]) < 0)
                        die("connect");
        for (int i = 0; i < 1000; i++) {
                snprintf(req, sizeof(req),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"exec\",\"params\":{\"argv\":"
                         "[\"sleep\",\"60\"],\"background\":true}}\n",
                         i);
                bconn_send(&conns[i % 100], req);
                bconn_wait(&conns[i % 100], i, false);
        }
        loaded = rss_kib(daemon_pid);
        printf("daemon RSS: idle after the runs above and 6 s quiet %.1f MiB (private %.1f MiB; "
               "target <= 8), with 1000 background processes and 100 connections %.1f MiB "
               "(private %.1f MiB; target <= 64)\n",
               idle / 1024.0, idle_private / 1024.0, loaded / 1024.0,
               private_kib(daemon_pid) / 1024.0);
        for (int i = 0; i < 100; i++) {
                close(conns[i].fd);
                buf_free(&conns[i].in);
        }
}

/* Entry point. */
int
main(int argc, char **argv)
{
        const char *bin = getenv("SANDBOXD_BIN");
        int rounds = argc > 1 ? atoi(argv[1]) : 2000;
        int mib = argc > 2 ? atoi(argv[2]) : 1024;
        char dir[] = "/tmp/bench-core-XXXXXX";
        int st;

        if (!bin || !mkdtemp(dir)) {
                fprintf(stderr, "usage: SANDBOXD_BIN=path/to/sandboxd bench_core [rounds] "
                                "[stream_mib]\n");
                return 64;
        }
        daemon_start(bin, dir);
        printf("fresh daemon RSS: %.1f MiB, of which private (not library pages) %.1f MiB "
               "(target <= 8)\n",
               rss_kib(daemon_pid) / 1024.0, private_kib(daemon_pid) / 1024.0);
        bench_round_trip(rounds);
        bench_stream(mib);
        bench_rss();
        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, &st, 0);
        /* A daemon of their own: their thousands of exited execs would weigh on "idle". */
        daemon_start(bin, dir);
        bench_command(rounds, "true", "nothing to read back");
        bench_command(rounds, "cd .", "the state is read back");
        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, &st, 0);
        /* Leave nothing behind: the socket, the state directory and its spool. */
        char *rm[] = {"rm", "-rf", dir, NULL};
        pid_t pid;
        if (posix_spawnp(&pid, "rm", NULL, NULL, rm, environ) == 0)
                waitpid(pid, &st, 0);
        return 0;
}
