/* check_agent.c — sandboxd-agent driven over pipes with the wire format of
 * backends/agent/proto.h, byte by byte (the session's own tests are check_session.c). The
 * agent binary is build/<variant>/sandboxd-agent next to build/<variant>/tests/. No sleeps:
 * every wait blocks on the agent's stdout (or a FIFO) with a poll timeout as a safety net. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/agent/proto.h"
#include "backends/shell_init.h"
#include "protocol/util.h"

#define MAX_RUNS   1100
#define TIMEOUT_MS 30000 /* a safety net for a stuck agent, not a speed bound (tcase: 60 s) */

struct msg {
        uint32_t id, len;
        unsigned type;
        unsigned char *p;
};

struct run {
        int started, failed, exited, bad, resumed, unknown;
        uint32_t pid, err, flags;
        uint64_t acked, totals[2], heads[2], in_off;
        int32_t status;
        char step[32];
        struct buf out, errb, state;
        uint32_t max_chunk;
        int gap; /* an output offset other than the next expected */
};

static struct {
        pid_t pid;
        int in, out;
} ag = {0, -1, -1};

static struct run runs[MAX_RUNS];
static int killed_got[MAX_RUNS];
static uint32_t killed_n[MAX_RUNS];
static uint64_t stdin_sent[MAX_RUNS]; /* offsets of the next STDIN per id */
static int ready_count, error_count;
static uint32_t ready_version, ready_pid;
static char error_text[256];
static char tmpdir[64];

static void
agent_path(char *out, size_t n)
{
        char exe[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        ck_assert_int_gt(len, 0);
        exe[len] = 0;
        snprintf(out, n, "%s/../sandboxd-agent", dirname(exe));
}

static void
spawn_agent(void)
{
        char path[PATH_MAX + 32];
        int in[2], out[2];

        agent_path(path, sizeof(path));
        ck_assert_msg(access(path, X_OK) == 0, "agent binary %s: %s", path, strerror(errno));
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        ag.pid = fork();
        ck_assert_int_ge(ag.pid, 0);
        if (ag.pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execl(path, "sandboxd-agent", "--runtime-dir", tmpdir, (char *) NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        ag.in = in[1];
        ag.out = out[0];
}

static void
write_all(const void *p, size_t n)
{
        size_t off = 0;
        ssize_t w;

        while (off < n) {
                w = write(ag.in, (const char *) p + off, n - off);
                ck_assert_msg(w > 0, "write to agent: %s", strerror(errno));
                off += (size_t) w;
        }
}

/* Writes raw (already stuffed) bytes. */
static void
send_raw(const void *p, size_t n)
{
        write_all(p, n);
}

static void
send_sync(void)
{
        static const unsigned char sync[2] = {AGENT_ESC, AGENT_ESC_SYNC};

        send_raw(sync, 2);
}

/* Stuffs and writes one message. */
static void
send_msg(uint32_t id, unsigned type, const void *p, uint32_t len)
{
        unsigned char h[AGENT_HDR_LEN];
        unsigned char *st = xmalloc(2 * (AGENT_HDR_LEN + (size_t) len) + 1);
        size_t n;

        agent_hdr(h, len, id, (enum agent_msg) type);
        n = agent_stuff(st, h, sizeof(h));
        if (len)
                n += agent_stuff(st + n, p, len);
        write_all(st, n);
        free(st);
}

/* STDIN messages of at most AGENT_STDIN_CHUNK bytes, each with its offset. */
static void
send_stdin(uint32_t id, const void *p, uint32_t len)
{
        unsigned char *m = xmalloc(8 + AGENT_STDIN_CHUNK);

        while (len) {
                uint32_t n = len < AGENT_STDIN_CHUNK ? len : AGENT_STDIN_CHUNK;
                agent_put64(m, stdin_sent[id]);
                memcpy(m + 8, p, n);
                send_msg(id, AGENT_STDIN, m, 8 + n);
                stdin_sent[id] += n;
                p = (const char *) p + n;
                len -= n;
        }
        free(m);
}

static void
send_eof(uint32_t id)
{
        unsigned char m[8];

        agent_put64(m, stdin_sent[id]);
        send_msg(id, AGENT_EOF, m, 8);
}

static void
send_ack(uint32_t id, uint64_t out, uint64_t err)
{
        unsigned char m[16];

        agent_put64(m, out);
        agent_put64(m + 8, err);
        send_msg(id, AGENT_ACK, m, 16);
}

/* HELLO with a nonce of the given fill byte; READY must echo it. */
static unsigned char hello_nonce[AGENT_NONCE_LEN];

static void
send_hello(uint32_t version, unsigned char fill)
{
        unsigned char p[8 + AGENT_NONCE_LEN] = {0};

        agent_put32(p, version);
        memset(hello_nonce, fill, sizeof(hello_nonce));
        memcpy(p + 4, hello_nonce, sizeof(hello_nonce));
        send_sync();
        send_msg(0, AGENT_HELLO, p, sizeof(p));
}

/* KILL of exec id's tree; the answer (WAIT mode) carries tag = id. */
static void
send_kill(uint32_t id, uint32_t sig, uint32_t grace, uint32_t mode)
{
        unsigned char p[16];

        agent_put32(p, sig);
        agent_put32(p + 4, grace);
        agent_put32(p + 8, mode);
        agent_put32(p + 12, id);
        send_msg(id, AGENT_KILL, p, 16);
}

static void
send_resume(uint32_t id, const char *name, uint64_t out, uint64_t err)
{
        unsigned char p[16 + AGENT_NAME_MAX + 1];

        agent_put64(p, out);
        agent_put64(p + 8, err);
        memcpy(p + 16, name, strlen(name) + 1);
        send_msg(id, AGENT_RESUME, p, (uint32_t) (16 + strlen(name) + 1));
}

/* The program's path a START with AGENT_START_PATH carries. */
static const char *start_path = "/bin/sh";

static void
send_start(uint32_t id, uint32_t flags, uint16_t rows, uint16_t cols, const char *cwd,
           const char *state, const char *const *argv, const char *const *env)
{
        unsigned char fixed[16];
        struct buf b = {0};
        uint32_t argc = 0, envc = 0, i;
        char name[32];

        while (argv[argc])
                argc++;
        while (env && env[envc])
                envc++;
        agent_put32(fixed, flags);
        agent_put16(fixed + 4, rows);
        agent_put16(fixed + 6, cols);
        agent_put32(fixed + 8, argc);
        agent_put32(fixed + 12, envc);
        buf_append(&b, fixed, sizeof(fixed));
        snprintf(name, sizeof(name), "p_%u", id);
        buf_append(&b, name, strlen(name) + 1);
        buf_append(&b, cwd, strlen(cwd) + 1);
        buf_append(&b, state, strlen(state) + 1);
        if (flags & AGENT_START_PATH)
                buf_append(&b, start_path, strlen(start_path) + 1);
        for (i = 0; i < argc; i++)
                buf_append(&b, argv[i], strlen(argv[i]) + 1);
        for (i = 0; i < envc; i++)
                buf_append(&b, env[i], strlen(env[i]) + 1);
        send_msg(id, AGENT_START, b.data, (uint32_t) b.len);
        buf_free(&b);
}

static int64_t
now_ms(void)
{
        return (int64_t) (util_now_ns() / 1000000);
}

/* Reads exactly n bytes within timeout_ms; -1 on EOF or timeout. */
static int
read_full(int fd, void *dst, size_t n, int64_t deadline)
{
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        size_t got = 0;
        ssize_t r;

        while (got < n) {
                int64_t left = deadline - now_ms();

                if (left <= 0 || poll(&pfd, 1, (int) left) <= 0)
                        return -1;
                r = read(fd, (char *) dst + got, n - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -1;
                got += (size_t) r;
        }
        return 0;
}

/* Reads one message; -1 on EOF or timeout. */
static int
recv_msg(struct msg *m, int timeout_ms)
{
        unsigned char h[AGENT_HDR_LEN];
        int64_t deadline = now_ms() + timeout_ms;

        if (read_full(ag.out, h, sizeof(h), deadline) < 0)
                return -1;
        m->len = agent_get32(h);
        m->id = agent_get32(h + 4);
        m->type = h[8];
        ck_assert_uint_le(m->len, AGENT_MAX_PAYLOAD);
        m->p = xrealloc(m->p, m->len + 1);
        ck_assert_int_eq(read_full(ag.out, m->p, m->len, deadline), 0);
        m->p[m->len] = 0;
        return 0;
}

static void
run_output(struct run *r, const struct msg *m)
{
        struct buf *b = m->type == AGENT_STDOUT ? &r->out : &r->errb;
        uint64_t off = agent_get64(m->p);

        if (off != b->len)
                r->gap = 1;
        buf_append(b, m->p + 8, m->len - 8);
        r->max_chunk = m->len - 8 > r->max_chunk ? m->len - 8 : r->max_chunk;
}

static void
run_apply(struct run *r, const struct msg *m)
{
        if (r->exited || r->failed ||
            (!r->started && !r->resumed && m->type != AGENT_STARTED && m->type != AGENT_FAILED &&
             m->type != AGENT_RESUMED && m->type != AGENT_UNKNOWN))
                r->bad = 1;
        switch (m->type) {
        case AGENT_STARTED:
                r->started = 1;
                r->pid = agent_get32(m->p);
                r->in_off = agent_get64(m->p + 4);
                break;
        case AGENT_RESUMED:
                r->resumed = 1;
                r->pid = agent_get32(m->p);
                r->flags = agent_get32(m->p + 4);
                r->heads[0] = agent_get64(m->p + 8);
                r->heads[1] = agent_get64(m->p + 16);
                r->in_off = agent_get64(m->p + 24);
                break;
        case AGENT_UNKNOWN:
                r->unknown = 1;
                break;
        case AGENT_FAILED:
                r->failed = 1;
                r->err = agent_get32(m->p);
                snprintf(r->step, sizeof(r->step), "%s", (const char *) m->p + 4);
                break;
        case AGENT_STDOUT:
        case AGENT_STDERR:
                run_output(r, m);
                break;
        case AGENT_STDIN_ACK:
                r->acked = agent_get64(m->p);
                break;
        case AGENT_EXIT:
                r->exited = 1;
                r->status = (int32_t) agent_get32(m->p);
                r->flags = agent_get32(m->p + 4);
                r->totals[0] = agent_get64(m->p + 8);
                r->totals[1] = agent_get64(m->p + 16);
                buf_append(&r->state, m->p + 24, m->len - 24);
                break;
        default:
                ck_abort_msg("unexpected message type %u for id %u", m->type, m->id);
        }
}

static void
apply(const struct msg *m)
{
        ck_assert_uint_lt(m->id, MAX_RUNS);
        switch (m->type) {
        case AGENT_READY:
                ck_assert_uint_eq(m->len, 36);
                ck_assert_mem_eq(m->p + 8, hello_nonce, AGENT_NONCE_LEN);
                ready_count++;
                ready_version = agent_get32(m->p);
                ready_pid = agent_get32(m->p + 4);
                break;
        case AGENT_ERROR:
                error_count++;
                snprintf(error_text, sizeof(error_text), "%s", (const char *) m->p);
                break;
        case AGENT_KILLED:
                ck_assert_uint_eq(agent_get32(m->p), m->id); /* the tag */
                killed_got[m->id] = 1;
                killed_n[m->id] = agent_get32(m->p + 4);
                break;
        case AGENT_PONG:
                break;
        default:
                ck_assert_uint_ne(m->id, 0);
                run_apply(&runs[m->id], m);
        }
}

/* Handles one message, failing the test if none comes within timeout_ms. */
static void
pump_within(int timeout_ms)
{
        static struct msg m;

        ck_assert_msg(recv_msg(&m, timeout_ms) == 0, "no message from the agent within %d ms",
                      timeout_ms);
        apply(&m);
}

static void
pump(void)
{
        pump_within(TIMEOUT_MS);
}

/* After a second HELLO: like the daemon, skip whatever the last session left (possibly a
 * message cut short) up to the READY that echoes our nonce. */
static void
sync_ready(void)
{
        unsigned char want[AGENT_HDR_LEN], win[AGENT_HDR_LEN + 36];
        size_t have = 0;
        int64_t deadline = now_ms() + TIMEOUT_MS;

        agent_hdr(want, 36, 0, AGENT_READY);
        for (;;) {
                ck_assert_int_eq(read_full(ag.out, win + have, 1, deadline), 0);
                have++;
                if (have < sizeof(win))
                        continue;
                if (memcmp(win, want, sizeof(want)) == 0 &&
                    memcmp(win + AGENT_HDR_LEN + 8, hello_nonce, AGENT_NONCE_LEN) == 0)
                        break;
                memmove(win, win + 1, --have);
        }
        ready_count++;
}

static struct run *
wait_exit(uint32_t id)
{
        while (!runs[id].exited && !runs[id].failed)
                pump();
        ck_assert_msg(!runs[id].bad, "messages for id %u out of order", id);
        ck_assert_msg(!runs[id].gap, "output of id %u with a gap", id);
        if (runs[id].exited) {
                ck_assert_uint_eq(runs[id].totals[0], runs[id].out.len);
                ck_assert_uint_eq(runs[id].totals[1], runs[id].errb.len);
        }
        return &runs[id];
}

static void
wait_output(uint32_t id, const char *needle)
{
        for (;;) {
                buf_append(&runs[id].out, "", 1);
                runs[id].out.len--;
                if (strstr(runs[id].out.data, needle))
                        return;
                ck_assert_msg(!runs[id].exited, "exec %u ended without printing %s", id, needle);
                pump();
        }
}

static const char *
out_str(struct run *r)
{
        buf_append(&r->out, "", 1);
        r->out.len--;
        return r->out.data;
}

/* Counts live (non-zombie) processes of session sid. */
static int
session_count(pid_t sid)
{
        char path[300], buf[512], state;
        struct dirent *d;
        int n = 0, fd, psid;
        DIR *dir = opendir("/proc");
        ssize_t r;
        char *rp;

        ck_assert_ptr_nonnull(dir);
        while ((d = readdir(dir))) {
                if (d->d_name[0] < '1' || d->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                r = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (r <= 0)
                        continue;
                buf[r] = 0;
                rp = strrchr(buf, ')');
                if (rp && sscanf(rp + 1, " %c %*d %*d %d", &state, &psid) == 2 && psid == sid &&
                    state != 'Z')
                        n++;
        }
        closedir(dir);
        return n;
}

/* 1 if pid is gone or a zombie. */
static int
proc_dead(pid_t pid)
{
        char path[64], buf[512];
        ssize_t r;
        char *rp;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 1;
        r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r <= 0)
                return 1;
        buf[r] = 0;
        rp = strrchr(buf, ')');
        return rp && rp[1] == ' ' && rp[2] == 'Z';
}

static void
setup(void)
{
        memset(runs, 0, sizeof(runs));
        memset(killed_got, 0, sizeof(killed_got));
        memset(stdin_sent, 0, sizeof(stdin_sent));
        ready_count = error_count = 0;
        signal(SIGPIPE, SIG_IGN);
        setenv("CHECK_AGENT_INHERITED", "inh-value", 1);
        setenv("CHECK_AGENT_OVR", "old", 1);
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_agent.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        spawn_agent();
        send_hello(AGENT_PROTO_VERSION, 0xa1);
        while (ready_count == 0)
                pump();
}

static void
teardown(void)
{
        char cmd[128];
        int st;

        if (ag.in >= 0)
                close(ag.in);
        if (ag.pid > 0)
                waitpid(ag.pid, &st, 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "cleanup of %s failed\n", tmpdir);
}

START_TEST(test_hello)
{
        ck_assert_uint_eq(ready_version, AGENT_PROTO_VERSION);
        ck_assert_uint_eq(ready_pid, (uint32_t) ag.pid);
}
END_TEST

START_TEST(test_exit_status_and_streams)
{
        const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
        struct run *r;

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        r = wait_exit(1);
        ck_assert(r->started);
        ck_assert_uint_gt(r->pid, 1);
        ck_assert_str_eq(out_str(r), "out\n");
        ck_assert_uint_eq(r->errb.len, 4);
        ck_assert_mem_eq(r->errb.data, "err\n", 4);
        ck_assert(WIFEXITED(r->status));
        ck_assert_int_eq(WEXITSTATUS(r->status), 3);
        ck_assert_uint_eq(r->flags, 0);
}
END_TEST

START_TEST(test_merge)
{
        const char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
        struct run *r;

        send_start(1, AGENT_START_MERGE, 0, 0, "", "", argv, NULL);
        r = wait_exit(1);
        ck_assert_str_eq(out_str(r), "out\nerr\n");
        ck_assert_uint_eq(r->errb.len, 0);
}
END_TEST

START_TEST(test_stdin_roundtrip)
{
        const char *argv[] = {"cat", NULL};
        static char big[100000];
        struct buf sent = {0};
        struct run *r;
        size_t i;

        for (i = 0; i < sizeof(big); i++)
                big[i] = (char) ('a' + i % 26);
        send_start(1, AGENT_START_STDIN, 0, 0, "", "", argv, NULL);
        send_stdin(1, "hello ", 6);
        send_stdin(1, big, sizeof(big));
        send_stdin(1, "world\n", 6);
        buf_append(&sent, "hello ", 6);
        buf_append(&sent, big, sizeof(big));
        buf_append(&sent, "world\n", 6);
        send_eof(1);
        r = wait_exit(1);
        ck_assert_uint_eq(r->out.len, sent.len);
        ck_assert_mem_eq(r->out.data, sent.data, sent.len);
        ck_assert_uint_eq(r->acked, sent.len);
        ck_assert_int_eq(WEXITSTATUS(r->status), 0);
        buf_free(&sent);
}
END_TEST

START_TEST(test_stdin_devnull)
{
        const char *argv[] = {"sh", "-c", "cat; echo done", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        ck_assert_str_eq(out_str(wait_exit(1)), "done\n");
}
END_TEST

START_TEST(test_stdin_closed_acked)
{
        const char *argv[] = {"sh", "-c", "exec 0<&-; echo ready; exec sleep 100", NULL};
        static char data[5000];

        send_start(1, AGENT_START_STDIN, 0, 0, "", "", argv, NULL);
        wait_output(1, "ready");
        send_stdin(1, data, sizeof(data));
        while (runs[1].acked < sizeof(data))
                pump();
        ck_assert_uint_eq(runs[1].acked, sizeof(data));
        send_kill(1, SIGKILL, 0, AGENT_KILL_SIGNAL);
        ck_assert_int_eq(WTERMSIG(wait_exit(1)->status), SIGKILL);
}
END_TEST

START_TEST(test_env_overlay)
{
        const char *argv[] = {"sh", "-c",
                              "echo \"$CHECK_AGENT_SET/$CHECK_AGENT_INHERITED/$CHECK_AGENT_OVR\"; "
                              "env | grep -c ^CHECK_AGENT_OVR=",
                              NULL};
        const char *env[] = {"CHECK_AGENT_SET=from-msg", "CHECK_AGENT_OVR=new", NULL};

        send_start(1, 0, 0, 0, "", "", argv, env);
        ck_assert_str_eq(out_str(wait_exit(1)), "from-msg/inh-value/new\n1\n");
}
END_TEST

START_TEST(test_cwd)
{
        const char *argv[] = {"pwd", NULL};
        char want[128];

        snprintf(want, sizeof(want), "%s\n", tmpdir);
        send_start(1, 0, 0, 0, tmpdir, "", argv, NULL);
        ck_assert_str_eq(out_str(wait_exit(1)), want);
}
END_TEST

START_TEST(test_failed_exec)
{
        const char *missing[] = {"/nonexistent/program", NULL};
        const char *nopath[] = {"check-agent-no-such-program", NULL};
        const char *ok[] = {"true", NULL};

        send_start(1, 0, 0, 0, "", "", missing, NULL);
        send_start(2, 0, 0, 0, "", "", nopath, NULL);
        send_start(3, 0, 0, 0, "", "", ok, NULL);
        wait_exit(1);
        wait_exit(2);
        wait_exit(3);
        ck_assert(runs[1].failed && !runs[1].started);
        ck_assert_uint_eq(runs[1].err, ENOENT);
        ck_assert_str_eq(runs[1].step, "exec");
        ck_assert(runs[2].failed && !runs[2].started);
        ck_assert_uint_eq(runs[2].err, ENOENT);
        ck_assert_str_eq(runs[2].step, "exec");
        ck_assert(runs[3].exited);
        ck_assert(!runs[1].bad && !runs[2].bad);
}
END_TEST

START_TEST(test_failed_chdir)
{
        const char *argv[] = {"true", NULL};
        const char *ok[] = {"true", NULL};

        send_start(1, 0, 0, 0, "/nonexistent-check-agent-dir", "", argv, NULL);
        send_start(2, 0, 0, 0, "", "", ok, NULL);
        wait_exit(1);
        wait_exit(2);
        ck_assert(runs[1].failed);
        ck_assert_uint_eq(runs[1].err, ENOENT);
        ck_assert_str_eq(runs[1].step, "chdir");
        ck_assert(!runs[1].bad);
}
END_TEST

/* Output stops at the window until acknowledged; every byte arrives once, in order. */
/* Pumps until exec id exits, acknowledging its stdout as it arrives (acked so far). */
static void
pump_acking(uint32_t id, uint64_t acked)
{
        struct run *r = &runs[id];

        while (!r->exited) {
                if (r->out.len > acked) {
                        acked = r->out.len;
                        send_ack(id, acked, 0);
                }
                pump();
        }
        wait_exit(id);
}

START_TEST(test_window_and_ack)
{
        const char *argv[] = {"head", "-c", "2097152", "/dev/zero", NULL};
        const char *probe[] = {"true", NULL};
        struct run *r = &runs[1];
        uint64_t acked = 0;

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (r->out.len < AGENT_OUT_WINDOW)
                pump();
        /* a full round trip of another exec: the agent had every chance to overrun */
        send_start(2, 0, 0, 0, "", "", probe, NULL);
        wait_exit(2);
        ck_assert_uint_eq(r->out.len, AGENT_OUT_WINDOW);
        send_ack(1, AGENT_OUT_WINDOW, 0);
        acked = AGENT_OUT_WINDOW;
        while (r->out.len < 2 * AGENT_OUT_WINDOW)
                pump();
        send_start(3, 0, 0, 0, "", "", probe, NULL);
        wait_exit(3);
        ck_assert_uint_eq(r->out.len, 2 * AGENT_OUT_WINDOW);
        pump_acking(1, acked);
        ck_assert_uint_eq(r->out.len, 2u << 20);
        ck_assert_uint_le(r->max_chunk, AGENT_OUT_CHUNK);
        for (size_t i = 0; i < r->out.len; i++)
                if (r->out.data[i] != 0)
                        ck_abort_msg("byte %zu is not zero", i);
        ck_assert_int_eq(WEXITSTATUS(r->status), 0);
}
END_TEST

/* Output through a pipe to the daemon that is full most of the time (4 pages): header
 * writes refused, vmspliced payloads cut short and their rest queued must still make whole
 * frames, and binary output arrives byte for byte while acknowledgements recycle the spool
 * memory the pipe took pages of. */
START_TEST(test_output_through_a_full_pipe)
{
        char cmd[PATH_MAX + 64], path[PATH_MAX];
        const char *argv[] = {"sh", "-c", cmd, NULL};
        struct run *r = &runs[1];
        struct buf want = {0};
        char b[65536];
        size_t n;
        FILE *f;

        ck_assert_int_eq(fcntl(ag.out, F_SETPIPE_SZ, 16384), 16384);
        snprintf(path, sizeof(path), "%s/want", tmpdir);
        snprintf(cmd, sizeof(cmd), "head -c 3000000 /dev/urandom | tee '%s'", path);
        send_start(1, 0, 0, 0, "", "", argv, NULL);
        pump_acking(1, 0);
        ck_assert_int_eq(WEXITSTATUS(r->status), 0);
        f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        while ((n = fread(b, 1, sizeof(b), f)) > 0)
                buf_append(&want, b, n);
        fclose(f);
        ck_assert_uint_eq(want.len, 3000000);
        ck_assert_uint_eq(r->out.len, want.len);
        ck_assert_msg(memcmp(r->out.data, want.data, want.len) == 0, "output differs");
        buf_free(&want);
}
END_TEST

/* KILL WAIT on runs[1]'s session; returns once KILLED and EXIT are in. */
static void
kill_wait(uint32_t sig, uint32_t grace)
{
        send_kill(1, sig, grace, AGENT_KILL_WAIT);
        while (!killed_got[1] || !runs[1].exited)
                pump();
        ck_assert_uint_eq(killed_n[1], 0);
        ck_assert_int_eq(session_count((pid_t) runs[1].pid), 0);
}

START_TEST(test_kill_tree)
{
        const char *argv[] = {"sh", "-c", "sleep 100 & sleep 100 & echo ready; wait", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        wait_output(1, "ready");
        ck_assert_int_ge(session_count((pid_t) runs[1].pid), 3);
        kill_wait(SIGTERM, 5000);
        ck_assert(WIFSIGNALED(runs[1].status));
        ck_assert_int_eq(WTERMSIG(runs[1].status), SIGTERM);
}
END_TEST

START_TEST(test_kill_setsid_grandchild)
{
        const char *argv[] = {"sh", "-c", "setsid sh -c 'echo $$; exec sleep 100' & wait", NULL};
        pid_t gpid;

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        wait_output(1, "\n");
        gpid = (pid_t) atoi(out_str(&runs[1]));
        ck_assert_int_gt(gpid, 1);
        ck_assert_int_eq(getsid(gpid), gpid);
        ck_assert_int_ne(gpid, (pid_t) runs[1].pid);
        kill_wait(SIGTERM, 5000);
        ck_assert(proc_dead(gpid));
}
END_TEST

START_TEST(test_kill_term_ignored)
{
        const char *argv[] = {"sh", "-c", "trap '' TERM; sleep 100 & echo ready; wait", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        wait_output(1, "ready");
        kill_wait(SIGTERM, 100);
        ck_assert(WIFSIGNALED(runs[1].status));
        ck_assert_int_eq(WTERMSIG(runs[1].status), SIGKILL);
}
END_TEST

START_TEST(test_kill_signal_mode)
{
        const char *argv[] = {"sleep", "100", NULL};
        const char *probe[] = {"true", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (!runs[1].started)
                pump();
        send_kill(1, SIGINT, 0, AGENT_KILL_SIGNAL);
        wait_exit(1);
        ck_assert_int_eq(WTERMSIG(runs[1].status), SIGINT);
        send_start(2, 0, 0, 0, "", "", probe, NULL);
        wait_exit(2);
        ck_assert(!killed_got[1]);
}
END_TEST

START_TEST(test_tty)
{
        const char *argv[] = {"sh", "-c", "tty; stty size", NULL};
        const char *out;

        send_start(1, AGENT_START_TTY, 30, 100, "", "", argv, NULL);
        out = out_str(wait_exit(1));
        ck_assert_msg(strncmp(out, "/dev/pts/", 9) == 0, "tty said %s", out);
        ck_assert_msg(strstr(out, "30 100") != NULL, "stty size said %s", out);
        ck_assert_int_eq(WEXITSTATUS(runs[1].status), 0);
}
END_TEST

START_TEST(test_tty_resize_and_eof)
{
        const char *argv[] = {"sh", "-c", "stty size; read x; stty size; cat; echo cat-done", NULL};
        unsigned char rs[4];

        send_start(1, AGENT_START_TTY, 30, 100, "", "", argv, NULL);
        wait_output(1, "30 100");
        agent_put16(rs, 50);
        agent_put16(rs + 2, 120);
        send_msg(1, AGENT_RESIZE, rs, 4);
        send_stdin(1, "\n", 1);
        wait_output(1, "50 120");
        send_stdin(1, "abc\n", 4);
        send_eof(1);
        wait_exit(1);
        ck_assert_ptr_nonnull(strstr(out_str(&runs[1]), "abc"));
        ck_assert_ptr_nonnull(strstr(out_str(&runs[1]), "cat-done"));
        ck_assert_uint_eq(runs[1].acked, 5);
}
END_TEST

START_TEST(test_state_file)
{
        const char *argv[] = {"sh", "-c", "printf 'cwd=%s' \"$PWD\" > \"$P\"", NULL};
        char state[256], env[300], sub[128], want[128];
        const char *envv[] = {env, NULL};
        struct stat st;
        struct run *r;

        snprintf(sub, sizeof(sub), "%s/sub/dir", tmpdir);
        snprintf(state, sizeof(state), "%s/state", sub);
        snprintf(env, sizeof(env), "P=%s", state);
        snprintf(want, sizeof(want), "cwd=%s", tmpdir);
        send_start(1, 0, 0, 0, tmpdir, state, argv, envv);
        r = wait_exit(1);
        ck_assert_int_eq(WEXITSTATUS(r->status), 0);
        ck_assert_uint_eq(r->state.len, strlen(want));
        ck_assert_mem_eq(r->state.data, want, strlen(want));
        ck_assert_int_eq(access(state, F_OK), -1);
        ck_assert_int_eq(stat(sub, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0700);
}
END_TEST

/* A state file over SHELL_STATE_MAX is not sent, and the EXIT says so; bash's start-up file
 * is written beside the state file (and rewritten when a command changed it). */
START_TEST(test_state_too_big_and_bash_init)
{
        const char *argv[] = {"sh", "-c", "head -c $((N + 1)) /dev/zero > \"$P\"", NULL};
        char state[256], env[300], n[64], init[300], got[sizeof(SHELL_BASH_INIT)] = {0};
        const char *envv[] = {env, n, NULL};
        struct run *r;
        int fd;

        snprintf(state, sizeof(state), "%s/st/p.state", tmpdir);
        snprintf(init, sizeof(init), "%s/st/" SHELL_BASH_INIT_NAME, tmpdir);
        snprintf(env, sizeof(env), "P=%s", state);
        snprintf(n, sizeof(n), "N=%u", SHELL_STATE_MAX);
        send_start(1, 0, 0, 0, tmpdir, state, argv, envv);
        r = wait_exit(1);
        ck_assert_int_eq(WEXITSTATUS(r->status), 0);
        ck_assert_uint_eq(r->flags & AGENT_EXIT_STATE_BIG, AGENT_EXIT_STATE_BIG);
        ck_assert_uint_eq(r->state.len, 0);
        ck_assert_int_eq(access(state, F_OK), -1);
        fd = open(init, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read(fd, got, sizeof(got)), (ssize_t) strlen(SHELL_BASH_INIT));
        ck_assert_str_eq(got, SHELL_BASH_INIT);
        close(fd);
        ck_assert_int_eq(truncate(init, 3), 0);
        argv[2] = "true";
        send_start(2, 0, 0, 0, tmpdir, state, argv, envv);
        ck_assert_uint_eq(wait_exit(2)->flags & AGENT_EXIT_STATE_BIG, 0);
        fd = open(init, O_RDONLY);
        ck_assert_int_eq(read(fd, got, sizeof(got)), (ssize_t) strlen(SHELL_BASH_INIT));
        close(fd);
        unlink(init);
}
END_TEST

START_TEST(test_state_missing)
{
        const char *argv[] = {"true", NULL};
        char state[128];

        snprintf(state, sizeof(state), "%s/none", tmpdir);
        send_start(1, 0, 0, 0, "", state, argv, NULL);
        ck_assert_uint_eq(wait_exit(1)->state.len, 0);
}
END_TEST

/* Starts id as a sleep holding the write end of a FIFO; returns the read end, which reports
 * EOF once the sleep is dead. */
static int
start_fifo_holder(uint32_t id)
{
        const char *argv[] = {"sh", "-c", "exec 3>\"$F\"; echo ready; exec sleep 100", NULL};
        char fifo[128], env[160];
        const char *envv[] = {env, NULL};
        int fd;

        snprintf(fifo, sizeof(fifo), "%s/fifo%u", tmpdir, id);
        snprintf(env, sizeof(env), "F=%s", fifo);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        send_start(id, 0, 0, 0, "", "", argv, envv);
        wait_output(id, "ready");
        return fd;
}

static void
wait_fifo_eof(int fd)
{
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        char c;

        ck_assert_int_eq(poll(&pfd, 1, TIMEOUT_MS), 1);
        ck_assert_int_eq(read(fd, &c, 1), 0);
        close(fd);
}

/* A new session (HELLO) keeps every exec; RESUME_END kills those nobody resumed. */
START_TEST(test_new_session_resume_end)
{
        const char *probe[] = {"true", NULL};
        int kept = start_fifo_holder(1), dropped = start_fifo_holder(2);
        struct pollfd pfd = {.fd = kept, .events = POLLIN};

        send_hello(AGENT_PROTO_VERSION, 0xa2);
        sync_ready();
        send_resume(11, "p_1", runs[1].out.len, 0);
        send_msg(0, AGENT_RESUME_END, NULL, 0);
        while (!runs[11].resumed)
                pump();
        ck_assert_uint_eq(runs[11].pid, runs[1].pid);
        ck_assert_uint_eq(runs[11].heads[0], runs[1].out.len);
        wait_fifo_eof(dropped); /* not resumed: killed */
        send_start(12, 0, 0, 0, "", "", probe, NULL);
        wait_exit(12);
        ck_assert_int_eq(poll(&pfd, 1, 0), 0); /* the resumed one still runs */
        send_kill(11, SIGKILL, 0, AGENT_KILL_SIGNAL);
        wait_fifo_eof(kept);
        ck_assert(!runs[2].exited); /* forgotten: no EXIT from the old session */
}
END_TEST

/* RESUME replays from the given offsets exactly (binary, with 0xFE bytes), then EXIT again. */
START_TEST(test_resume_replays_exact)
{
        char path[128], cmd[160];
        const char *argv[] = {"sh", "-c", cmd, NULL};
        unsigned char data[300000];
        FILE *f;

        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (unsigned char) (i * 7 + (i >> 8));
        snprintf(path, sizeof(path), "%s/blob", tmpdir);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, sizeof(data), f), sizeof(data));
        fclose(f);
        snprintf(cmd, sizeof(cmd), "cat %s; exit 4", path);
        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (runs[1].out.len < 100000)
                pump();
        send_hello(AGENT_PROTO_VERSION, 0xa3);
        sync_ready();
        buf_append(&runs[7].out, data, 50000); /* what the daemon had */
        send_resume(7, "p_1", 50000, 0);
        while (!runs[7].exited) {
                if (runs[7].out.len > 60000)
                        send_ack(7, runs[7].out.len, 0);
                pump();
        }
        wait_exit(7);
        ck_assert_uint_eq(runs[7].heads[0], 50000);
        ck_assert_uint_eq(runs[7].out.len, sizeof(data));
        ck_assert_mem_eq(runs[7].out.data, data, sizeof(data));
        ck_assert_int_eq(WEXITSTATUS(runs[7].status), 4);
        /* Kept until FORGET: a third session gets the EXIT again, then it is gone. */
        send_hello(AGENT_PROTO_VERSION, 0xa4);
        sync_ready();
        send_resume(8, "p_1", sizeof(data), 0);
        while (!runs[8].exited)
                pump();
        ck_assert(runs[8].flags & AGENT_RESUMED_ENDED || WIFEXITED(runs[8].status));
        send_msg(8, AGENT_FORGET, NULL, 0);
        send_resume(9, "p_1", 0, 0);
        while (!runs[9].unknown)
                pump();
}
END_TEST

/* A START sent again after a lost link (same name) is answered like the first: one process. */
START_TEST(test_start_again_is_idempotent)
{
        const char *argv[] = {"sleep", "100", NULL};
        unsigned char fixed[16] = {0};
        struct buf b = {0};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (!runs[1].started)
                pump();
        send_hello(AGENT_PROTO_VERSION, 0xa5);
        sync_ready();
        agent_put32(fixed + 8, 2); /* argc */
        buf_append(&b, fixed, sizeof(fixed));
        buf_append(&b,
                   "p_1\0\0\0sleep\0"
                   "100",
                   16);
        send_msg(4, AGENT_START, b.data, (uint32_t) b.len);
        while (!runs[4].started)
                pump();
        ck_assert_uint_eq(runs[4].pid, runs[1].pid);
        ck_assert_int_eq(session_count((pid_t) runs[1].pid), 1);
        send_kill(4, SIGKILL, 0, AGENT_KILL_SIGNAL);
        wait_exit(4);
        buf_free(&b);
}
END_TEST

/* An orphan of an exec comes back to the agent (a subreaper when it is not PID 1). */
START_TEST(test_subreaper)
{
        char path[128], cmd[256], line[32] = "";
        const char *argv[] = {"sh", "-c", cmd, NULL};
        pid_t orphan, ppid = 0;
        char stat[512], *rp;
        FILE *f;

        snprintf(path, sizeof(path), "%s/orphan", tmpdir);
        snprintf(cmd, sizeof(cmd), "sh -c 'sleep 30 & echo $! > %s'", path);
        send_start(1, 0, 0, 0, "", "", argv, NULL);
        wait_exit(1);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
        fclose(f);
        orphan = (pid_t) atoi(line);
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) orphan);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(stat, sizeof(stat), f));
        fclose(f);
        rp = strrchr(stat, ')');
        ck_assert_int_eq(sscanf(rp + 1, " %*c %d", &ppid), 1);
        ck_assert_int_eq(ppid, ag.pid);
        kill(orphan, SIGKILL);
}
END_TEST

/* ERROR (containing want) ends the session; the agent lives on and ignores input up to the
 * next SYNC, after which a new HELLO starts a session in which execs run again. */
static void
expect_error_then_recover(const char *want)
{
        const char *probe[] = {"echo", "again", NULL};
        int readies = ready_count;

        while (error_count == 0)
                pump();
        ck_assert_msg(strstr(error_text, want), "error %s, want %s", error_text, want);
        send_msg(0, AGENT_PING, "12345678", 8); /* ignored: no SYNC yet */
        send_hello(AGENT_PROTO_VERSION, 0xb1);
        sync_ready();
        ck_assert_int_eq(ready_count, readies + 1);
        send_start(50, 0, 0, 0, "", "", probe, NULL);
        ck_assert_str_eq(out_str(wait_exit(50)), "again\n");
}

START_TEST(test_oversized_payload)
{
        unsigned char h[AGENT_HDR_LEN];

        agent_hdr(h, AGENT_MAX_PAYLOAD + 1, 1, AGENT_STDIN);
        send_raw(h, sizeof(h));
        expect_error_then_recover("payload larger");
}
END_TEST

START_TEST(test_unknown_type)
{
        send_msg(0, 99, NULL, 0);
        expect_error_then_recover("unknown message type 99");
}
END_TEST

START_TEST(test_bad_version)
{
        send_hello(AGENT_PROTO_VERSION + 1, 0x5a);
        expect_error_then_recover("protocol version 3 is not supported; this sandboxd-agent "
                                  "speaks 2");
}
END_TEST

START_TEST(test_malformed_start)
{
        unsigned char p[20] = {0};

        agent_put32(p + 8, 1); /* argc 1, but no strings at all */
        send_msg(1, AGENT_START, p, sizeof(p));
        expect_error_then_recover("START:");
}
END_TEST

/* With a path, that program runs and argv[0] is only its name (not looked up by PATH); a
 * missing one fails at exec, a relative one is refused. */
START_TEST(test_exec_path)
{
        const char *argv[] = {"check-agent-not-a-program", "-c", "echo \"$0\"", NULL};
        const char *ok[] = {"true", NULL};

        send_start(1, AGENT_START_PATH, 0, 0, "", "", argv, NULL);
        ck_assert_str_eq(out_str(wait_exit(1)), "check-agent-not-a-program\n");
        start_path = "/nonexistent/sh";
        send_start(2, AGENT_START_PATH, 0, 0, "", "", argv, NULL);
        wait_exit(2);
        ck_assert(runs[2].failed && !runs[2].started);
        ck_assert_uint_eq(runs[2].err, ENOENT);
        ck_assert_str_eq(runs[2].step, "exec");
        start_path = "sh";
        send_start(3, AGENT_START_PATH, 0, 0, "", "", ok, NULL);
        expect_error_then_recover("START: the program's path is not absolute");
        start_path = "/bin/sh";
}
END_TEST

START_TEST(test_bad_escape)
{
        static const unsigned char bad[2] = {AGENT_ESC, 0x37};

        send_raw(bad, 2);
        expect_error_then_recover("bad escape");
}
END_TEST

/* A message cut in the middle (the daemon died while writing it) is dropped at the next SYNC;
 * an exec of the earlier session still runs and is resumed. */
START_TEST(test_torn_message_dropped_at_sync)
{
        const char *argv[] = {"cat", NULL}, *probe[] = {"echo", "fine", NULL};
        unsigned char h[AGENT_HDR_LEN];
        char part[5000] = {0};

        send_start(1, AGENT_START_STDIN, 0, 0, "", "", argv, NULL);
        while (!runs[1].started)
                pump();
        agent_hdr(h, 100000, 1, AGENT_STDIN);
        send_raw(h, sizeof(h));
        send_raw(part, sizeof(part)); /* 5000 of 100000 bytes, then the writer is gone */
        send_hello(AGENT_PROTO_VERSION, 0xc1);
        sync_ready();
        send_start(2, 0, 0, 0, "", "", probe, NULL);
        ck_assert_str_eq(out_str(wait_exit(2)), "fine\n");
        send_resume(3, "p_1", 0, 0);
        while (!runs[3].resumed)
                pump();
        ck_assert_uint_eq(runs[3].in_off, 0); /* the torn STDIN never counted */
        stdin_sent[3] = 0;
        send_stdin(3, "x\n", 2);
        send_eof(3);
        ck_assert_str_eq(out_str(wait_exit(3)), "x\n");
}
END_TEST

START_TEST(test_protocol_misuse_errors)
{
        const char *argv[] = {"sleep", "100", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (!runs[1].started)
                pump();
        switch (_i) {
        case 0:
                send_msg(1, AGENT_FORGET, NULL, 0);
                expect_error_then_recover("FORGET: the exec is still running");
                break;
        case 1:
                send_ack(1, 1, 0);
                expect_error_then_recover("ACK: beyond what was sent");
                break;
        case 2:
                stdin_sent[1] = 10; /* a gap */
                send_stdin(1, "x", 1);
                expect_error_then_recover("STDIN: offset beyond");
                break;
        }
        send_resume(60, "p_1", 0, 0);
        while (!runs[60].resumed)
                pump();
        send_kill(60, SIGKILL, 0, AGENT_KILL_SIGNAL);
        wait_exit(60);
}
END_TEST

START_TEST(test_eof_kills_and_exits)
{
        int fd = start_fifo_holder(1);
        int st;

        close(ag.in);
        ag.in = -1;
        ck_assert_int_eq(waitpid(ag.pid, &st, 0), ag.pid);
        ag.pid = 0;
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        wait_fifo_eof(fd);
}
END_TEST

START_TEST(test_drain_background_holder)
{
        const char *argv[] = {"sh", "-c", "sleep 5 & echo hi", NULL};

        send_start(1, 0, 0, 0, "", "", argv, NULL);
        while (!runs[1].exited)
                pump_within(3000);
        ck_assert(!runs[1].bad);
        ck_assert_str_eq(out_str(&runs[1]), "hi\n");
        ck_assert_int_eq(WEXITSTATUS(runs[1].status), 0);
        send_kill(1, SIGKILL, 0, AGENT_KILL_SIGNAL);
}
END_TEST

START_TEST(test_many_concurrent)
{
        const char *argv[] = {"true", NULL};
        uint32_t id;

        for (id = 1; id <= 200; id++)
                send_start(id, 0, 0, 0, "", "", argv, NULL);
        for (id = 1; id <= 200; id++) {
                wait_exit(id);
                ck_assert(runs[id].started && runs[id].exited);
                ck_assert(WIFEXITED(runs[id].status));
                ck_assert_int_eq(WEXITSTATUS(runs[id].status), 0);
        }
}
END_TEST

START_TEST(test_thousand_live)
{
        const char *argv[] = {"cat", NULL};
        uint32_t id;
        char line[32];

        for (id = 1; id <= 1000; id++)
                send_start(id, AGENT_START_STDIN, 0, 0, "", "", argv, NULL);
        for (id = 1; id <= 1000; id++) {
                while (!runs[id].started && !runs[id].failed)
                        pump();
                ck_assert_msg(runs[id].started, "exec %u failed: %s", id, runs[id].step);
        }
        for (id = 1; id <= 1000; id++) {
                snprintf(line, sizeof(line), "%u\n", id);
                send_stdin(id, line, (uint32_t) strlen(line));
                send_eof(id);
        }
        for (id = 1; id <= 1000; id++) {
                snprintf(line, sizeof(line), "%u\n", id);
                ck_assert_str_eq(out_str(wait_exit(id)), line);
                ck_assert_int_eq(WEXITSTATUS(runs[id].status), 0);
        }
}
END_TEST

START_TEST(test_stdin_window)
{
        const char *argv[] = {"sleep", "100", NULL};
        static char data[200 << 10];

        send_start(1, AGENT_START_STDIN, 0, 0, "", "", argv, NULL);
        send_stdin(1, data, sizeof(data));
        send_stdin(1, data, sizeof(data));
        expect_error_then_recover("STDIN: window exceeded");
}
END_TEST

static Suite *
agent_suite(void)
{
        Suite *s = suite_create("agent");
        TCase *tc = tcase_create("agent");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_hello);
        tcase_add_test(tc, test_exit_status_and_streams);
        tcase_add_test(tc, test_merge);
        tcase_add_test(tc, test_stdin_roundtrip);
        tcase_add_test(tc, test_stdin_devnull);
        tcase_add_test(tc, test_stdin_closed_acked);
        tcase_add_test(tc, test_env_overlay);
        tcase_add_test(tc, test_cwd);
        tcase_add_test(tc, test_failed_exec);
        tcase_add_test(tc, test_exec_path);
        tcase_add_test(tc, test_failed_chdir);
        tcase_add_test(tc, test_window_and_ack);
        tcase_add_test(tc, test_output_through_a_full_pipe);
        tcase_add_test(tc, test_kill_tree);
        tcase_add_test(tc, test_kill_setsid_grandchild);
        tcase_add_test(tc, test_kill_term_ignored);
        tcase_add_test(tc, test_kill_signal_mode);
        tcase_add_test(tc, test_tty);
        tcase_add_test(tc, test_tty_resize_and_eof);
        tcase_add_test(tc, test_state_file);
        tcase_add_test(tc, test_state_missing);
        tcase_add_test(tc, test_new_session_resume_end);
        tcase_add_test(tc, test_resume_replays_exact);
        tcase_add_test(tc, test_start_again_is_idempotent);
        tcase_add_test(tc, test_subreaper);
        tcase_add_test(tc, test_state_too_big_and_bash_init);
        tcase_add_test(tc, test_oversized_payload);
        tcase_add_test(tc, test_unknown_type);
        tcase_add_test(tc, test_bad_version);
        tcase_add_test(tc, test_malformed_start);
        tcase_add_test(tc, test_bad_escape);
        tcase_add_test(tc, test_torn_message_dropped_at_sync);
        tcase_add_loop_test(tc, test_protocol_misuse_errors, 0, 3);
        tcase_add_test(tc, test_eof_kills_and_exits);
        tcase_add_test(tc, test_drain_background_holder);
        tcase_add_test(tc, test_many_concurrent);
        tcase_add_test(tc, test_thousand_live);
        tcase_add_test(tc, test_stdin_window);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(agent_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
