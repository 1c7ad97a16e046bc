/* check_session.c — the agent session (backends/agent/session.h) against the real
 * sandboxd-agent over pipes, socketpairs and a Unix socket, no dockerd: execs, binary output
 * with exact byte counts, stdin, kills, links cut mid-frame and resumed, a bridge killed and
 * replaced, spool quota backpressure, a detached agent's authentication, a restarted agent,
 * version mismatches, torn and forged frames. No sleeps: everything waits on the loop, with
 * deadlines as a safety net only. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
#include <unistd.h>
#include <uv.h>

#include "backends/agent/proto.h"
#include "backends/agent/session.h"
#include "backends/agent/session_int.h" /* the session's timer: nothing left armed */
#include "protocol/util.h"
#include "tests/unit/helper_wire.h"

#define DEADLINE_MS 20000

static uv_loop_t loop;
static char agent_bin[PATH_MAX];
static char tmpdir[64];

/* ---- the loop ---- */

static void
run_until(const bool *flag)
{
        uint64_t end = util_now_ms() + DEADLINE_MS;

        while (!*flag) {
                ck_assert_msg(util_now_ms() < end, "timed out waiting on the loop");
                uv_run(&loop, UV_RUN_ONCE);
        }
}

static void
timer_cb(uv_timer_t *t)
{
        *(bool *) t->data = true;
}

/* Runs the loop for ms (lets a session notice a cut, or an agent run on). */
static void
run_for(unsigned ms)
{
        uv_timer_t t;
        bool done = false;

        uv_timer_init(&loop, &t);
        t.data = &done;
        uv_timer_start(&t, timer_cb, ms, 0);
        run_until(&done);
        uv_close((uv_handle_t *) &t, NULL);
        uv_run(&loop, UV_RUN_NOWAIT);
}

/* ---- the owner of a session ---- */

/* VIA_DETACH_BRIDGE: the first connect starts `--detach --bridge` (secret sent first), later
 * ones are VIA_BRIDGE. VIA_EARLY: a transport that holds the agent's first bytes. */
enum conn_kind {
        VIA_SPAWN,
        VIA_FDS,
        VIA_UNIX,
        VIA_BRIDGE,
        VIA_PROXY,
        VIA_FAKE,
        VIA_DETACH_BRIDGE,
        VIA_EARLY,
};

struct owner {
        enum conn_kind kind;
        int links[4]; /* counts per enum backend_link */
        char last_reason[512];
        char reasons[4][512]; /* the last reason per enum backend_link */
        int connects;
        bool fail_connect; /* the next connects fail */
        struct agent_session *s;
        pid_t agent_pid; /* VIA_FDS: the agent we forked */
        int agent_in, agent_out;
        char sock[PATH_MAX];  /* VIA_UNIX, VIA_BRIDGE, VIA_DETACH_BRIDGE */
        struct proxy *px;     /* VIA_PROXY */
        char **extra;         /* VIA_FDS: more agent options */
        void (*fake)(int fd); /* VIA_FAKE: plays the agent in a child on a socketpair */
        pid_t fake_pid;
};

static char *agent_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", NULL};

static void
owner_link(void *ctx, enum backend_link st, const char *reason)
{
        struct owner *o = ctx;

        o->links[st]++;
        snprintf(o->last_reason, sizeof(o->last_reason), "%s", reason ? reason : "");
        snprintf(o->reasons[st], sizeof(o->reasons[st]), "%s", reason ? reason : "");
}

/* The agent on a fresh pipe pair, forked here (VIA_FDS). */
static struct agent_transport *
fork_agent(struct owner *o, char *const *extra)
{
        int in[2], out[2];
        char *argv[16] = {agent_bin, "--runtime-dir", tmpdir};
        int n = 3;

        for (; extra && *extra && n < 15; extra++)
                argv[n++] = *extra;
        argv[n] = NULL;
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        o->agent_pid = fork();
        ck_assert_int_ge(o->agent_pid, 0);
        if (o->agent_pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execve(agent_bin, argv, agent_env);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        o->agent_in = in[1];
        o->agent_out = out[0];
        return agent_transport_fds(&loop, out[0], in[1]);
}

struct proxy;
static void proxy_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx);
static void early_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx);
static void fake_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx);

static const char secret_hex[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* `sandboxd-agent --detach --bridge` on o->sock, the secret's line sent first. */
static void
detach_bridge_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx)
{
        char rt[PATH_MAX], line[sizeof(secret_hex) + 1];
        char *argv[] = {agent_bin,  "--detach", "--runtime-dir", rt,  "--socket", o->sock,
                        "--linger", "60",       "--bridge",      NULL};

        snprintf(rt, sizeof(rt), "%s/rt", tmpdir);
        snprintf(line, sizeof(line), "%s\n", secret_hex);
        o->kind = VIA_BRIDGE;
        agent_transport_spawn_first(&loop, argv, agent_env, line, strlen(line), cb_ctx, cb);
}

static void
owner_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        struct owner *o = ctx;
        char *bridge[] = {agent_bin, "--connect", o->sock, NULL};
        char *spawn[] = {agent_bin, "--runtime-dir", tmpdir, NULL};

        o->connects++;
        if (o->fail_connect) {
                cb(cb_ctx, NULL, "refused by the test");
                return;
        }
        switch (o->kind) {
        case VIA_SPAWN:
                agent_transport_spawn(&loop, spawn, agent_env, cb_ctx, cb);
                break;
        case VIA_FDS:
                cb(cb_ctx, fork_agent(o, o->extra), NULL);
                break;
        case VIA_UNIX:
                agent_transport_unix(&loop, o->sock, cb_ctx, cb);
                break;
        case VIA_BRIDGE:
                agent_transport_spawn(&loop, bridge, agent_env, cb_ctx, cb);
                break;
        case VIA_PROXY:
                proxy_connect(o, cb, cb_ctx);
                break;
        case VIA_FAKE:
                fake_connect(o, cb, cb_ctx);
                break;
        case VIA_DETACH_BRIDGE:
                detach_bridge_connect(o, cb, cb_ctx);
                break;
        case VIA_EARLY:
                early_connect(o, cb, cb_ctx);
                break;
        }
}

static const struct agent_session_cbs owner_cbs = {.connect = owner_connect, .on_link = owner_link};

static struct agent_session_config base_cfg = {
        .backend = "test",
        .where = "in the test",
        .ready_timeout_ms = 5000,
        .ping_interval_ms = 200,
        .link_timeout_ms = 2000,
        .reconnect_timeout_ms = 8000,
};

static void
owner_open(struct owner *o, enum conn_kind kind, const struct agent_session_config *cfg)
{
        o->kind = kind;
        o->s = agent_session_new(&loop, cfg ? cfg : &base_cfg, &owner_cbs, o);
        agent_session_open(o->s);
}

/* Waits until the link is up (count BACK reports). */
static void
wait_back(struct owner *o, int n)
{
        uint64_t end = util_now_ms() + DEADLINE_MS;

        while (o->links[BACKEND_LINK_BACK] < n && !o->links[BACKEND_LINK_GONE]) {
                ck_assert_msg(util_now_ms() < end, "no READY (last: %s)", o->last_reason);
                uv_run(&loop, UV_RUN_ONCE);
        }
        ck_assert_msg(o->links[BACKEND_LINK_BACK] >= n, "session gone: %s", o->last_reason);
}

static void
wait_gone(struct owner *o)
{
        uint64_t end = util_now_ms() + DEADLINE_MS;

        while (!o->links[BACKEND_LINK_GONE]) {
                ck_assert_msg(util_now_ms() < end, "session not gone");
                uv_run(&loop, UV_RUN_ONCE);
        }
}

/* ---- execs ---- */

struct run {
        struct buf out, err;
        bool done, error;
        struct exec_exit ex;
        char msg[512];
        int code;
        char *state;
        size_t state_len;
        const char *wait_for;
        bool seen;
        struct backend_proc *p;
};

static void
run_output(void *ctx, enum backend_stream s, const char *data, size_t len)
{
        struct run *r = ctx;

        buf_append(s == BACKEND_STDOUT ? &r->out : &r->err, data, len);
        if (r->wait_for && r->out.len &&
            memmem(r->out.data, r->out.len, r->wait_for, strlen(r->wait_for)))
                r->seen = true;
}

static void
run_exit(void *ctx, const struct exec_exit *ex)
{
        struct run *r = ctx;

        r->ex = *ex;
        r->ex.state = NULL;
        r->ex.error = NULL;
        r->ex.lost = NULL;
        if (ex->error) {
                r->error = true;
                r->code = ex->error->code;
                snprintf(r->msg, sizeof(r->msg), "%s", ex->error->message);
        }
        if (ex->lost)
                snprintf(r->msg, sizeof(r->msg), "lost: %s", ex->lost);
        if (ex->state) {
                r->state = xmalloc(ex->state_len + 1);
                memcpy(r->state, ex->state, ex->state_len);
                r->state_len = ex->state_len;
        }
        r->done = true;
}

static const struct backend_exec_cbs run_cbs = {run_output, run_exit};

static int exec_seq;

static void
start_spec(struct owner *o, struct exec_spec *spec, struct run *r)
{
        struct sbx_error err = {0};
        char id[32];

        snprintf(id, sizeof(id), "p_t%d", ++exec_seq);
        if (!spec->exec_id)
                spec->exec_id = id;
        ck_assert_msg(agent_exec_start(o->s, spec, &run_cbs, r, &r->p, &err) == 0, "exec_start: %s",
                      err.message);
        spec->exec_id = NULL;
}

static void
start_argv(struct owner *o, char *const *argv, struct run *r)
{
        struct exec_spec spec = {.argv = argv};

        start_spec(o, &spec, r);
}

static void
finish(struct run *r)
{
        run_until(&r->done);
        r->p->ops->release(r->p);
        r->p = NULL;
}

static void
run_free(struct run *r)
{
        buf_free(&r->out);
        buf_free(&r->err);
        free(r->state);
}

static void
owner_close(struct owner *o)
{
        agent_session_close(o->s, NULL, false);
        o->s = NULL;
        if (o->fake_pid > 0) {
                kill(o->fake_pid, SIGKILL);
                waitpid(o->fake_pid, NULL, 0);
                o->fake_pid = 0;
        }
        if (o->agent_pid > 0) {
                close(o->agent_in);
                waitpid(o->agent_pid, NULL, 0);
                o->agent_pid = 0;
        }
}

/* ---- fixture ---- */

static void
setup(void)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        ck_assert_int_gt(n, 0);
        exe[n] = 0;
        snprintf(agent_bin, sizeof(agent_bin), "%s/../sandboxd-agent", dirname(exe));
        ck_assert_msg(access(agent_bin, X_OK) == 0, "%s: %s", agent_bin, strerror(errno));
        util_json_alloc_init();
        signal(SIGPIPE, SIG_IGN);
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_session.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        exec_seq = 0;
}

static void
teardown(void)
{
        char cmd[128];

        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "cleanup of %s failed\n", tmpdir);
}

/* ---- tests ---- */

START_TEST(test_exec_over_pipes)
{
        char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
        struct owner o = {0};
        struct run r = {0};

        owner_open(&o, _i == 0 ? VIA_SPAWN : VIA_FDS, NULL);
        start_argv(&o, argv, &r);
        finish(&r);
        ck_assert_msg(!r.error, "%s", r.msg);
        ck_assert_int_eq(r.ex.exit_code, 3);
        ck_assert_uint_eq(r.out.len, 4);
        ck_assert_mem_eq(r.out.data, "out\n", 4);
        ck_assert_uint_eq(r.err.len, 4);
        ck_assert_int_eq(o.links[BACKEND_LINK_BACK], 1);
        run_free(&r);
        owner_close(&o);
}
END_TEST

/* ---- a man in the middle that can cut the link at any byte (VIA_PROXY) ---- */

struct proxy {
        struct owner *o;
        uv_pipe_t a; /* our end of the session's socketpair */
        uv_pipe_t b; /* to the detached agent's socket */
        uv_connect_t creq;
        uint64_t to_daemon; /* bytes forwarded agent -> daemon */
        uint64_t cut_at;    /* forward this many in total, then cut (0: never) */
        int handles;
        bool cut;
};

static char proxy_slab[65536];

static void
proxy_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
        b->base = proxy_slab;
        b->len = sizeof(proxy_slab);
}

static void
proxy_closed(uv_handle_t *h)
{
        struct proxy *px = h->data;

        if (--px->handles == 0) {
                if (px->o->px == px)
                        px->o->px = NULL;
                free(px);
        }
}

static void
proxy_cut(struct proxy *px)
{
        if (px->cut)
                return;
        px->cut = true;
        uv_close((uv_handle_t *) &px->a, proxy_closed);
        uv_close((uv_handle_t *) &px->b, proxy_closed);
}

static void
proxy_written(uv_write_t *w, int status)
{
        free(w);
}

static void
proxy_forward(struct proxy *px, uv_stream_t *to, const char *data, size_t n)
{
        uv_write_t *w = xmalloc(sizeof(*w) + n);
        uv_buf_t b = uv_buf_init((char *) (w + 1), (unsigned) n);

        memcpy(w + 1, data, n);
        if (uv_write(w, to, &b, 1, proxy_written) < 0)
                free(w);
}

static void
proxy_read(uv_stream_t *from, ssize_t n, const uv_buf_t *buf)
{
        struct proxy *px = from->data;
        bool down = from == (uv_stream_t *) &px->b;
        size_t k = n > 0 ? (size_t) n : 0;

        if (px->cut)
                return;
        if (n < 0) {
                proxy_cut(px);
                return;
        }
        if (down && px->cut_at && px->to_daemon + k >= px->cut_at)
                k = (size_t) (px->cut_at - px->to_daemon); /* the cut falls inside this chunk */
        if (down)
                px->to_daemon += k;
        if (k)
                proxy_forward(px, down ? (uv_stream_t *) &px->a : (uv_stream_t *) &px->b, buf->base,
                              k);
        if (down && px->cut_at && px->to_daemon >= px->cut_at)
                proxy_cut(px);
}

static void
proxy_connected(uv_connect_t *req, int status)
{
        struct proxy *px = req->data;

        if (px->cut)
                return;
        if (status < 0) {
                proxy_cut(px);
                return;
        }
        uv_read_start((uv_stream_t *) &px->a, proxy_alloc, proxy_read);
        uv_read_start((uv_stream_t *) &px->b, proxy_alloc, proxy_read);
}

static void
proxy_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx)
{
        struct proxy *px = xcalloc(1, sizeof(*px));
        int sp[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        px->o = o;
        px->handles = 2;
        uv_pipe_init(&loop, &px->a, 0);
        uv_pipe_init(&loop, &px->b, 0);
        px->a.data = px->b.data = px->creq.data = px;
        uv_pipe_open(&px->a, sp[1]);
        uv_pipe_connect(&px->creq, &px->b, o->sock, proxy_connected);
        o->px = px;
        cb(cb_ctx, agent_transport_fds(&loop, sp[0], sp[0]), NULL);
}

/* ---- a fake agent: a child that speaks the wire format by hand (VIA_FAKE) ---- */

static struct wire_in fake_in;

static void
fake_write(int fd, const void *p, size_t n)
{
        if (write(fd, p, n) != (ssize_t) n)
                _exit(2);
}

static int
fake_read(int fd, unsigned *type, uint32_t *id, struct buf *payload)
{
        return wire_read(fd, &fake_in, type, id, payload);
}

/* The stream starts with the tail of an earlier session: a torn message, a forged READY
 * (wrong nonce), stale output; only the READY echoing the HELLO's nonce starts the session,
 * itself split across writes. Then one exec is answered. */
static void
fake_torn_forged(int fd)
{
        unsigned char nonce[AGENT_NONCE_LEN], w[24] = {0};
        struct buf b = {0}, p = {0};
        unsigned type;
        uint32_t id;

        buf_append(&b, "\x07\x00\x01tail of an old message", 25);
        memset(nonce, 'x', sizeof(nonce));
        wire_ready(&b, nonce, AGENT_PROTO_VERSION, 4242); /* forged */
        fake_write(fd, b.data, b.len);
        buf_consume(&b, b.len);
        if (!fake_read(fd, &type, &id, &p) || type != AGENT_HELLO)
                _exit(3);
        agent_put64(w, 0);
        memcpy(w + 8, "stale\n", 6);
        wire_msg(&b, 1, AGENT_STDOUT, w, 14);
        wire_ready(&b, p.data + 4, AGENT_PROTO_VERSION, 4242);
        fake_write(fd, b.data, 17);
        fake_write(fd, b.data + 17, b.len - 17);
        buf_consume(&b, b.len);
        while (fake_read(fd, &type, &id, &p) && type != AGENT_START)
                ;
        memset(w, 0, sizeof(w));
        agent_put32(w, 777);
        wire_msg(&b, id, AGENT_STARTED, w, 12);
        agent_put64(w, 0);
        memcpy(w + 8, "fresh\n", 6);
        wire_msg(&b, id, AGENT_STDOUT, w, 14);
        memset(w, 0, sizeof(w));
        agent_put32(w, 3 << 8);
        agent_put64(w + 8, 6);
        wire_msg(&b, id, AGENT_EXIT, w, 24);
        fake_write(fd, b.data, b.len);
        while (fake_read(fd, &type, &id, &p))
                ;
        _exit(0);
}

/* READY (of fake_version), then silence: PINGs are read and never answered. With fake_said,
 * an ERROR saying it comes first, in the same write (an earlier session's); with fake_refuse,
 * that ERROR is the whole answer to the HELLO (as from an agent of another version). */
static uint32_t fake_version = AGENT_PROTO_VERSION;
static const char *fake_said;
static bool fake_refuse;

static void
fake_ready_then_silent(int fd)
{
        struct buf b = {0}, p = {0};
        unsigned type;
        uint32_t id;

        if (!fake_read(fd, &type, &id, &p) || type != AGENT_HELLO)
                _exit(3);
        if (fake_said)
                wire_msg(&b, 0, AGENT_ERROR, fake_said, strlen(fake_said) + 1);
        if (!fake_refuse)
                wire_ready(&b, p.data + 4, fake_version, 4242);
        fake_write(fd, b.data, b.len);
        while (fake_read(fd, &type, &id, &p))
                ;
        _exit(0);
}

/* How a fake_fails_again agent answers every connection after its first. */
enum fake_fail {
        FAIL_RESUME_ERROR, /* READY, then an ERROR for the RESUME (a session-level error) */
        FAIL_HELLO_ERROR,  /* an ERROR for the HELLO, then silence (a version mismatch) */
        FAIL_CLOSE,        /* closes at once after the HELLO */
};
static enum fake_fail fake_fail;
static int fake_nth; /* which connection this child serves (1: the first) */

static void
fake_error(int fd, const char *text)
{
        struct buf b = {0};

        wire_msg(&b, 0, AGENT_ERROR, text, strlen(text) + 1);
        fake_write(fd, b.data, b.len);
}

/* The first connection is a working agent: READY, STARTED for the exec, a PONG, then the
 * link is cut. Every later one fails the same way (fake_fail), as an agent that cannot
 * resume, was upgraded or dies at once would at every reconnect. */
static void
fake_fails_again(int fd)
{
        unsigned char w[12] = {0};
        struct buf b = {0}, p = {0};
        unsigned type;
        uint32_t id;

        if (!fake_read(fd, &type, &id, &p) || type != AGENT_HELLO)
                _exit(3);
        if (fake_nth > 1 && fake_fail == FAIL_CLOSE)
                _exit(0);
        if (fake_nth > 1 && fake_fail == FAIL_HELLO_ERROR) {
                fake_error(fd, "protocol version 2 is not spoken here");
                while (fake_read(fd, &type, &id, &p))
                        ;
                _exit(0);
        }
        wire_ready(&b, p.data + 4, AGENT_PROTO_VERSION, 4242);
        fake_write(fd, b.data, b.len);
        buf_consume(&b, b.len);
        while (fake_read(fd, &type, &id, &p)) {
                if (type == AGENT_START) {
                        agent_put32(w, 777);
                        wire_msg(&b, id, AGENT_STARTED, w, 12);
                        fake_write(fd, b.data, b.len);
                        buf_consume(&b, b.len);
                } else if (type == AGENT_RESUME) {
                        fake_error(fd, "cannot resume: the spool is unreadable");
                } else if (type == AGENT_PING && fake_nth == 1) {
                        wire_msg(&b, 0, AGENT_PONG, p.data, p.len);
                        fake_write(fd, b.data, b.len);
                        _exit(0); /* the cut */
                }
        }
        _exit(0);
}

static void
fake_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx)
{
        int sp[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        if (o->fake_pid > 0) {
                kill(o->fake_pid, SIGKILL);
                waitpid(o->fake_pid, NULL, 0);
        }
        fake_nth = o->connects;
        o->fake_pid = fork();
        ck_assert_int_ge(o->fake_pid, 0);
        if (o->fake_pid == 0) {
                close(sp[0]);
                o->fake(sp[1]);
        }
        close(sp[1]);
        cb(cb_ctx, agent_transport_fds(&loop, sp[0], sp[0]), NULL);
}

/* ---- detached agents ---- */

static const char other_hex[] = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

static void
secret_bytes(const char *hex, unsigned char *out)
{
        for (size_t i = 0; i < 32; i++)
                sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

/* Starts sandboxd-agent --detach on tmpdir/a.sock with secret; returns its pid. */
static pid_t
start_detached(const char *secret, char *const *extra)
{
        char rt[PATH_MAX], sock[PATH_MAX], line[PATH_MAX + 64] = "";
        char *argv[16] = {agent_bin,  "--detach", "--runtime-dir", rt,
                          "--socket", sock,       "--linger",      "60"};
        int in[2], out[2], n = 8, st;
        pid_t pid;
        ssize_t got = 0, r;

        snprintf(rt, sizeof(rt), "%s/rt", tmpdir);
        snprintf(sock, sizeof(sock), "%s/rt/a.sock", tmpdir);
        for (; extra && *extra && n < 15; extra++)
                argv[n++] = *extra;
        argv[n] = NULL;
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                execve(agent_bin, argv, agent_env);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        ck_assert_int_eq(write(in[1], secret, strlen(secret)), (ssize_t) strlen(secret));
        ck_assert_int_eq(write(in[1], "\n", 1), 1);
        close(in[1]);
        while ((r = read(out[0], line + got, sizeof(line) - 1 - (size_t) got)) > 0)
                got += r;
        close(out[0]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent --detach failed");
        line[got] = 0;
        ck_assert_msg(strstr(line, "listening on "), "agent said: %s", line);
        return (pid_t) atoi(strstr(line, " pid ") + 5);
}

/* Stops a detached agent (SIGTERM: it kills its trees and exits) and waits until it is gone. */
static void
stop_detached(pid_t pid)
{
        uint64_t end = util_now_ms() + DEADLINE_MS;

        if (pid <= 0)
                return;
        kill(pid, SIGTERM);
        while (kill(pid, 0) == 0 && util_now_ms() < end)
                run_for(10);
}

static void
owner_detached(struct owner *o, enum conn_kind kind, const char *secret, bool adopting)
{
        static unsigned char key[32];
        struct agent_session_config cfg = base_cfg;

        secret_bytes(secret, key);
        cfg.secret = key;
        cfg.secret_len = sizeof(key);
        cfg.adopting = adopting;
        snprintf(o->sock, sizeof(o->sock), "%s/rt/a.sock", tmpdir);
        owner_open(o, kind, &cfg);
}

/* ---- a transport that already holds the agent's first bytes (VIA_EARLY) ----
 *
 * Like an ssh channel whose open confirmation came with the agent's CHALLENGE: the bytes are
 * there before the session starts the transport and are handed over from inside start(). */

struct early {
        struct agent_transport base;
        struct agent_transport *inner;
        char held[256];
        size_t nheld;
};

static void
early_start(struct agent_transport *t, const struct agent_transport_cbs *cbs, void *ctx)
{
        struct early *e = (struct early *) t;

        cbs->on_data(ctx, e->held, e->nheld); /* before start returns */
        e->inner->ops->start(e->inner, cbs, ctx);
}

static void
early_send(struct agent_transport *t, const void *data, size_t len)
{
        struct early *e = (struct early *) t;

        e->inner->ops->send(e->inner, data, len);
}

static size_t
early_queued(const struct agent_transport *t)
{
        const struct early *e = (const struct early *) t;

        return e->inner->ops->queued(e->inner);
}

static void
early_nop(struct agent_transport *t)
{
}

static void
early_close(struct agent_transport *t)
{
        struct early *e = (struct early *) t;

        e->inner->ops->close(e->inner);
        free(e);
}

static const struct agent_transport_ops early_ops = {
        .kind = "early",
        .start = early_start,
        .send = early_send,
        .queued = early_queued,
        .pause = early_nop,
        .resume = early_nop,
        .close = early_close,
};

static void
early_connect(struct owner *o, agent_connect_cb cb, void *cb_ctx)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct early *e = xcalloc(1, sizeof(*e));
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        ck_assert_uint_lt(strlen(o->sock), sizeof(sa.sun_path));
        memcpy(sa.sun_path, o->sock, strlen(o->sock));
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(poll(&p, 1, DEADLINE_MS), 1); /* the CHALLENGE is there */
        n = read(fd, e->held, sizeof(e->held));
        ck_assert_int_gt(n, 0);
        e->nheld = (size_t) n;
        e->base.ops = &early_ops;
        e->inner = agent_transport_fds(&loop, fd, fd);
        cb(cb_ctx, &e->base, NULL);
}

/* ---- test data ---- */

/* Writes n pseudo-random bytes (every byte value, including 0xFE) to tmpdir/name. */
static struct buf
make_file(const char *name, size_t n, unsigned seed)
{
        char path[PATH_MAX];
        struct buf b = {0};
        FILE *f;

        buf_reserve(&b, n);
        for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                b.data[i] = (char) (seed >> 16);
        }
        b.len = n;
        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(b.data, 1, n, f), n);
        fclose(f);
        return b;
}

static void
assert_bytes(const struct buf *got, const struct buf *want, const char *what)
{
        ck_assert_msg(got->len == want->len, "%s: %zu bytes, want %zu", what, got->len, want->len);
        for (size_t i = 0; i < want->len; i++)
                if (got->data[i] != want->data[i])
                        ck_abort_msg("%s: byte %zu differs", what, i);
}

START_TEST(test_binary_streams_exact)
{
        struct buf f1 = make_file("f1", 3u << 20, 1), f2 = make_file("f2", 1u << 20, 2), want = {0};
        char cmd[512], *argv[] = {"sh", "-c", cmd, NULL};
        struct owner o = {0};
        struct run r = {0};

        snprintf(cmd, sizeof(cmd), "cat %s/f1; cat %s/f2 >&2; cat %s/f1", tmpdir, tmpdir, tmpdir);
        owner_open(&o, VIA_SPAWN, NULL);
        start_argv(&o, argv, &r);
        finish(&r);
        ck_assert_int_eq(r.ex.exit_code, 0);
        buf_append(&want, f1.data, f1.len);
        buf_append(&want, f1.data, f1.len);
        assert_bytes(&r.out, &want, "stdout");
        assert_bytes(&r.err, &f2, "stderr");
        run_free(&r);
        buf_free(&want);
        buf_free(&f1);
        buf_free(&f2);
        owner_close(&o);
}
END_TEST

START_TEST(test_stdin_binary)
{
        struct buf in = make_file("in", 1u << 20, 3);
        char *argv[] = {"cat", NULL};
        struct exec_spec spec = {.argv = argv, .stdin_open = true};
        struct owner o = {0};
        struct run r = {0};

        owner_open(&o, VIA_FDS, NULL);
        start_spec(&o, &spec, &r);
        /* In pieces, the last with EOF: more than the stdin window in flight. */
        ck_assert_int_eq(r.p->ops->write(r.p, in.data, 300000, false), 0);
        ck_assert_int_eq(r.p->ops->write(r.p, in.data + 300000, in.len - 300000, true), 0);
        ck_assert_int_eq(r.p->ops->write(r.p, "x", 1, false), -EPIPE);
        finish(&r);
        assert_bytes(&r.out, &in, "cat's stdout");
        run_free(&r);
        buf_free(&in);
        owner_close(&o);
}
END_TEST

static void
kill_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        int *s = ctx;

        *s = survivors;
}

START_TEST(test_kill_tree_and_state)
{
        char *argv[] = {"sh", "-c", "sleep 100 & setsid sleep 101 & echo ready; wait", NULL};
        char state[PATH_MAX], cmd[PATH_MAX + 64], *sargv[] = {"sh", "-c", cmd, NULL};
        struct exec_spec spec = {.argv = sargv, .state_path = state};
        struct owner o = {0};
        struct run r = {0}, s = {0};
        int survivors = -1;

        owner_open(&o, VIA_SPAWN, NULL);
        r.wait_for = "ready";
        start_argv(&o, argv, &r);
        run_until(&r.seen);
        r.p->ops->kill(r.p, 2000, &survivors, kill_cb);
        finish(&r);
        while (survivors < 0)
                uv_run(&loop, UV_RUN_ONCE);
        ck_assert_int_eq(survivors, 0);
        ck_assert_int_eq(r.ex.signal, SIGTERM);
        /* The shell state comes back with the exit, and its file is gone. */
        snprintf(state, sizeof(state), "%s/st/p.state", tmpdir);
        snprintf(cmd, sizeof(cmd), "printf 'cwd=/x' > %s", state);
        start_spec(&o, &spec, &s);
        finish(&s);
        ck_assert_uint_eq(s.state_len, 6);
        ck_assert_mem_eq(s.state, "cwd=/x", 6);
        ck_assert_int_eq(access(state, F_OK), -1);
        run_free(&r);
        run_free(&s);
        owner_close(&o);
}
END_TEST

START_TEST(test_failed_exec_errors)
{
        char *missing[] = {"/no/such/program", NULL};
        char *ok[] = {"true", NULL};
        struct exec_spec bad_cwd = {.argv = ok, .cwd = "/no/such/dir"};
        struct owner o = {0};
        struct run a = {0}, b = {0};

        owner_open(&o, VIA_SPAWN, NULL);
        start_argv(&o, missing, &a);
        start_spec(&o, &bad_cwd, &b);
        finish(&a);
        finish(&b);
        ck_assert(a.error && b.error);
        ck_assert_int_eq(a.code, SBX_E_PARAMS);
        ck_assert_str_eq(a.msg, "cannot execute '/no/such/program' in the test: No such file or "
                                "directory");
        ck_assert_ptr_nonnull(strstr(b.msg, "cwd '/no/such/dir' in the test"));
        run_free(&a);
        run_free(&b);
        owner_close(&o);
}
END_TEST

/* SIGKILLs the stdio bridges (sandboxd-agent --connect SOCK) of this test. */
static int
kill_bridges(const char *sock)
{
        char path[300], cmd[PATH_MAX * 2];
        struct dirent *d;
        DIR *dir = opendir("/proc");
        int n = 0;

        ck_assert_ptr_nonnull(dir);
        while ((d = readdir(dir))) {
                ssize_t len;
                int fd;
                if (d->d_name[0] < '1' || d->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", d->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                len = read(fd, cmd, sizeof(cmd) - 1);
                close(fd);
                if (len <= 0)
                        continue;
                cmd[len] = 0;
                /* argv: agent_bin \0 --connect \0 sock */
                if (strcmp(cmd, agent_bin) == 0 && (size_t) len > strlen(cmd) + 11 &&
                    strcmp(cmd + strlen(cmd) + 1, "--connect") == 0 &&
                    strcmp(cmd + strlen(cmd) + 11, sock) == 0 &&
                    kill(atoi(d->d_name), SIGKILL) == 0)
                        n++;
        }
        closedir(dir);
        return n;
}

/* Output of an exec across two cuts of the link at arbitrary points (mid-frame, usually). */
static void
resume_across_cuts(enum conn_kind kind)
{
        struct buf f1 = make_file("f1", 2u << 20, 7), f2 = make_file("f2", 700000, 8);
        char cmd[512], *argv[] = {"sh", "-c", cmd, NULL};
        pid_t agent = start_detached(secret_hex, NULL);
        struct owner o = {0};
        struct run r = {0};
        int cuts = 0;

        snprintf(cmd, sizeof(cmd), "cat %s/f1; cat %s/f2 >&2; exit 7", tmpdir, tmpdir);
        owner_detached(&o, kind, secret_hex, false);
        wait_back(&o, 1);
        start_argv(&o, argv, &r);
        while (cuts < 2 && !r.done) {
                size_t have = r.out.len + r.err.len;
                while (!r.done && r.out.len + r.err.len < have + 200000)
                        uv_run(&loop, UV_RUN_ONCE);
                if (r.done)
                        break;
                if (kind == VIA_PROXY && o.px)
                        proxy_cut(o.px); /* whatever is in flight is torn */
                else if (kind == VIA_BRIDGE)
                        ck_assert_int_eq(kill_bridges(o.sock), 1);
                cuts++;
                wait_back(&o, 1 + cuts);
        }
        finish(&r);
        ck_assert_msg(!r.error && r.msg[0] == 0, "%s", r.msg);
        ck_assert_int_eq(r.ex.exit_code, 7);
        assert_bytes(&r.out, &f1, "stdout across cuts");
        assert_bytes(&r.err, &f2, "stderr across cuts");
        ck_assert_int_eq(cuts, 2);
        ck_assert_int_eq(o.links[BACKEND_LINK_LOST], 2);
        run_free(&r);
        buf_free(&f1);
        buf_free(&f2);
        owner_close(&o);
        stop_detached(agent);
}

START_TEST(test_resume_after_cut_mid_frame)
{
        resume_across_cuts(VIA_PROXY);
}
END_TEST

START_TEST(test_proxy_cuts_at_exact_bytes)
{
        struct buf f1 = make_file("f1", 1u << 20, 9);
        char cmd[512], *argv[] = {"sh", "-c", cmd, NULL};
        pid_t agent = start_detached(secret_hex, NULL);
        struct owner o = {0};
        struct run r = {0};
        /* Every cut point falls inside a frame: headers are 12 bytes, payloads up to 64 KiB. */
        uint64_t cuts[] = {7, 13, 65541, 200003};
        size_t next = 0;

        snprintf(cmd, sizeof(cmd), "cat %s/f1", tmpdir);
        owner_detached(&o, VIA_PROXY, secret_hex, false);
        wait_back(&o, 1);
        start_argv(&o, argv, &r);
        while (!r.done) {
                if (o.px && !o.px->cut_at && next < ARRAY_SIZE(cuts))
                        o.px->cut_at = o.px->to_daemon + cuts[next++];
                uv_run(&loop, UV_RUN_ONCE);
        }
        finish(&r);
        ck_assert_msg(r.msg[0] == 0, "%s", r.msg);
        ck_assert_int_eq(r.ex.exit_code, 0);
        assert_bytes(&r.out, &f1, "stdout");
        ck_assert_int_ge(o.links[BACKEND_LINK_LOST], 2);
        run_free(&r);
        buf_free(&f1);
        owner_close(&o);
        stop_detached(agent);
}
END_TEST

START_TEST(test_bridge_killed_and_replaced)
{
        resume_across_cuts(VIA_BRIDGE);
}
END_TEST

/* A daemon restart: a second session adopts the exec by name with the offsets the first one
 * had kept; the rest of the output and the real exit status follow. */
START_TEST(test_adopt_after_restart)
{
        struct buf f1 = make_file("f1", 1u << 20, 11), all = {0};
        char cmd[1024], go[128], *argv[] = {"sh", "-c", cmd, NULL};
        char *sleeper[] = {"sleep", "100", NULL};
        pid_t agent = start_detached(secret_hex, NULL);
        struct owner o1 = {0}, o2 = {0};
        struct run r1 = {0}, r2 = {0}, other = {0};
        struct exec_spec spec = {.exec_id = "p_keep", .argv = argv};
        struct sbx_error err = {0};
        uint64_t off[2];
        int fd;

        snprintf(go, sizeof(go), "%s/go", tmpdir);
        ck_assert_int_eq(mkfifo(go, 0600), 0);
        snprintf(cmd, sizeof(cmd), "cat %s/f1; read x <%s; cat %s/f1 >&2; exit 5", tmpdir, go,
                 tmpdir);
        owner_detached(&o1, VIA_UNIX, secret_hex, false);
        start_spec(&o1, &spec, &r1);
        start_argv(&o1, sleeper, &other); /* nobody adopts this one: killed at RESUME_END */
        while (r1.out.len < 300000)
                uv_run(&loop, UV_RUN_ONCE);
        /* The daemon "dies": its handles go, the agent keeps everything. */
        off[0] = r1.out.len;
        off[1] = r1.err.len;
        r1.p->ops->release(r1.p);
        other.p->ops->release(other.p);
        agent_session_detach(o1.s);
        o1.s = NULL;
        /* Meanwhile the exec goes on and ends. */
        fd = open(go, O_WRONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "\n", 1), 1);
        close(fd);
        owner_detached(&o2, VIA_UNIX, secret_hex, true);
        spec.exec_id = "p_keep";
        ck_assert_msg(agent_exec_adopt(o2.s, &spec, off, &run_cbs, &r2, &r2.p, &err) == 0, "%s",
                      err.message);
        agent_session_adopt_done(o2.s);
        finish(&r2);
        ck_assert_msg(r2.msg[0] == 0, "%s", r2.msg);
        ck_assert_int_eq(r2.ex.exit_code, 5);
        buf_append(&all, r1.out.data, (size_t) off[0]);
        buf_append(&all, r2.out.data, r2.out.len);
        assert_bytes(&all, &f1, "stdout before and after the restart");
        assert_bytes(&r2.err, &f1, "stderr after the restart");
        run_free(&r1);
        run_free(&r2);
        run_free(&other);
        buf_free(&all);
        buf_free(&f1);
        owner_close(&o2);
        stop_detached(agent);
}
END_TEST

/* A RESUME from beyond the exec's output (a daemon counted bytes the agent never sent) is
 * refused for that exec alone: it ends lost saying why, its tree is killed at RESUME_END, and
 * the session goes on (an error there would end it, and every reconnect would repeat it). */
START_TEST(test_resume_refused_beyond_output)
{
        char *argv[] = {"sh", "-c", "printf abc; exec sleep 100", NULL};
        char *echo[] = {"echo", "on", NULL};
        pid_t agent = start_detached(secret_hex, NULL);
        struct owner o1 = {0}, o2 = {0}, o3 = {0};
        struct run r1 = {.wait_for = "abc"}, r2 = {0}, r3 = {0}, n = {0};
        struct exec_spec spec = {.exec_id = "p_ahead", .argv = argv};
        struct sbx_error err = {0};
        uint64_t off[2] = {3, 51};

        owner_detached(&o1, VIA_UNIX, secret_hex, false);
        start_spec(&o1, &spec, &r1);
        run_until(&r1.seen);
        r1.p->ops->release(r1.p);
        agent_session_detach(o1.s);
        o1.s = NULL;
        owner_detached(&o2, VIA_UNIX, secret_hex, true);
        spec.exec_id = "p_ahead";
        ck_assert_msg(agent_exec_adopt(o2.s, &spec, off, &run_cbs, &r2, &r2.p, &err) == 0, "%s",
                      err.message);
        agent_session_adopt_done(o2.s);
        finish(&r2);
        ck_assert_msg(strstr(r2.msg, "cannot be resumed") &&
                              strstr(r2.msg, "3 stdout and 51 stderr"),
                      "%s", r2.msg);
        ck_assert_msg(strstr(r2.msg, "has only 3 and 0"), "%s", r2.msg);
        start_argv(&o2, echo, &n);
        finish(&n);
        ck_assert_uint_eq(n.out.len, 3);
        ck_assert_int_eq(o2.links[BACKEND_LINK_LOST], 0);
        ck_assert_int_eq(o2.links[BACKEND_LINK_BACK], 1);
        owner_close(&o2);
        /* Killed at RESUME_END: the right offsets now find nothing. */
        owner_detached(&o3, VIA_UNIX, secret_hex, true);
        spec.exec_id = "p_ahead";
        off[1] = 0;
        ck_assert_msg(agent_exec_adopt(o3.s, &spec, off, &run_cbs, &r3, &r3.p, &err) == 0, "%s",
                      err.message);
        agent_session_adopt_done(o3.s);
        finish(&r3);
        ck_assert_msg(strstr(r3.msg, "no longer knows"), "%s", r3.msg);
        run_free(&r1);
        run_free(&r2);
        run_free(&r3);
        run_free(&n);
        owner_close(&o3);
        stop_detached(agent);
}
END_TEST

/* With the daemon not acknowledging (paused), the agent spools up to its quota and then stops
 * reading the child: the child blocks, nothing is dropped. */
START_TEST(test_spool_quota_backpressure)
{
        struct buf f1 = make_file("f1", 65536, 13), want = {0};
        char cmd[512], *argv[] = {"sh", "-c", cmd, NULL}, prog[PATH_MAX],
                       *extra[] = {"--exec-quota", "1M", "--spool-mem", "128K", NULL};
        struct owner o = {0};
        struct run r = {0};
        int progress = 0;
        FILE *f;

        snprintf(cmd, sizeof(cmd),
                 "i=0; while [ $i -lt 96 ]; do cat %s/f1; i=$((i+1)); echo $i >%s/progress; "
                 "done",
                 tmpdir, tmpdir);
        snprintf(prog, sizeof(prog), "%s/progress", tmpdir);
        o.extra = extra; /* a 1 MiB quota, most of it in the spool file */
        owner_open(&o, VIA_FDS, NULL);
        start_argv(&o, argv, &r);
        r.p->ops->pause(r.p);
        /* Paused: the window arrives (the quota is the same size), nothing is acknowledged. */
        while (r.out.len < AGENT_OUT_WINDOW)
                uv_run(&loop, UV_RUN_ONCE);
        run_for(700);
        f = fopen(prog, "r");
        if (f) {
                if (fscanf(f, "%d", &progress) != 1)
                        progress = 0;
                fclose(f);
        }
        /* What the agent holds (sent or not) is at most its 1 MiB quota and one read of
         * 256 KiB; the child's pipe, enlarged to 1 MiB once that much came through it, holds
         * at most that much more: the child is stuck well before the end (96), however long
         * it runs. */
        int most = (int) (((1u << 20) + (256u << 10) + (1u << 20)) / 65536) + 2;
        ck_assert_msg(progress <= most, "the child went on to file %d (> %d): no backpressure",
                      progress, most);
        ck_assert(!r.done);
        r.p->ops->resume(r.p);
        finish(&r);
        for (int i = 0; i < 96; i++)
                buf_append(&want, f1.data, f1.len);
        assert_bytes(&r.out, &want, "stdout after backpressure");
        run_free(&r);
        buf_free(&f1);
        buf_free(&want);
        owner_close(&o);
}
END_TEST

/* The pid in a detached agent's lock file (tmpdir/rt/agent.lock). */
static pid_t
detached_pid(void)
{
        char path[PATH_MAX];
        int pid = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/rt/agent.lock", tmpdir);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
        fclose(f);
        return (pid_t) pid;
}

/* One command starts the detached agent and bridges to it; the agent outlives that bridge,
 * and the same command run again only bridges to the agent that runs. */
START_TEST(test_detach_bridge_one_command)
{
        char *argv[] = {"sh", "-c", "echo one; sleep 0.3; echo two", NULL};
        struct owner o = {0};
        struct run r = {0}, r2 = {0};
        pid_t agent;

        owner_detached(&o, VIA_DETACH_BRIDGE, secret_hex, false);
        start_argv(&o, argv, &r);
        wait_back(&o, 1);
        agent = detached_pid();
        finish(&r);
        ck_assert_int_eq(r.ex.exit_code, 0);
        ck_assert_uint_eq(r.out.len, 8);
        ck_assert_mem_eq(r.out.data, "one\ntwo\n", 8);
        ck_assert_int_eq(o.connects, 1);
        owner_close(&o); /* SIGKILLs the first bridge: the agent stays */
        ck_assert_int_eq(kill(agent, 0), 0);
        owner_detached(&o, VIA_DETACH_BRIDGE, secret_hex, false); /* runs: only bridges */
        start_argv(&o, argv, &r2);
        finish(&r2);
        ck_assert_int_eq(detached_pid(), agent);
        ck_assert_uint_eq(r2.out.len, 8);
        ck_assert_mem_eq(r2.out.data, "one\ntwo\n", 8);
        run_free(&r);
        run_free(&r2);
        owner_close(&o);
        stop_detached(agent);
}
END_TEST

START_TEST(test_detached_auth)
{
        pid_t agent = start_detached(secret_hex, NULL);
        char *argv[] = {"echo", "authenticated", NULL};
        struct owner bad = {0}, good = {0};
        struct run r = {0};

        owner_detached(&bad, VIA_UNIX, other_hex, false);
        wait_gone(&bad);
        ck_assert_msg(strstr(bad.last_reason, "authentication failed"), "%s", bad.last_reason);
        ck_assert_int_eq(bad.links[BACKEND_LINK_BACK], 0);
        agent_session_close(bad.s, NULL, false);
        owner_detached(&good, VIA_UNIX, secret_hex, false);
        start_argv(&good, argv, &r);
        finish(&r);
        ck_assert_uint_eq(r.out.len, 14);
        run_free(&r);
        owner_close(&good);
        stop_detached(agent);
}
END_TEST

/* A transport that hands over the agent's CHALLENGE from inside start() (an ssh channel whose
 * open confirmation came with it): the session is ready for it. */
START_TEST(test_detached_bytes_held_before_start)
{
        pid_t agent = start_detached(secret_hex, NULL);
        char *argv[] = {"echo", "early", NULL};
        struct owner o = {0};
        struct run r = {0};

        owner_detached(&o, VIA_EARLY, secret_hex, false);
        start_argv(&o, argv, &r);
        finish(&r);
        ck_assert_msg(r.out.len == 6 && !memcmp(r.out.data, "early\n", 6), "stdout: %.*s (%s)",
                      (int) r.out.len, r.out.data ? r.out.data : "", o.last_reason);
        run_free(&r);
        owner_close(&o);
        stop_detached(agent);
}
END_TEST

/* The agent is replaced by a new one: with the same secret the session goes on and reports
 * the execs of the old one lost; with another secret it is refused cleanly. */
START_TEST(test_agent_restarted)
{
        pid_t agent = start_detached(secret_hex, NULL);
        char *sleeper[] = {"sleep", "100", NULL}, *echo[] = {"echo", "new", NULL};
        struct owner o = {0};
        struct run r = {0}, n = {0};

        owner_detached(&o, VIA_UNIX, secret_hex, false);
        r.wait_for = NULL;
        start_argv(&o, sleeper, &r);
        wait_back(&o, 1);
        run_for(50);
        stop_detached(agent);
        agent = start_detached(_i == 0 ? secret_hex : other_hex, NULL);
        finish(&r);
        if (_i == 0) {
                ck_assert_msg(strstr(r.msg, "restarted"), "%s", r.msg);
                start_argv(&o, echo, &n);
                finish(&n);
                ck_assert_uint_eq(n.out.len, 4);
        } else {
                wait_gone(&o);
                ck_assert_msg(strstr(o.last_reason, "authentication failed"), "%s", o.last_reason);
        }
        run_free(&r);
        run_free(&n);
        owner_close(&o);
        stop_detached(agent);
}
END_TEST

START_TEST(test_torn_and_forged_frames)
{
        char *argv[] = {"true", NULL};
        struct owner o = {.fake = fake_torn_forged};
        struct run r = {0};

        owner_open(&o, VIA_FAKE, NULL);
        start_argv(&o, argv, &r);
        finish(&r);
        ck_assert_msg(!r.error, "%s", r.msg);
        ck_assert_uint_eq(r.out.len, 6);
        ck_assert_mem_eq(r.out.data, "fresh\n", 6);
        ck_assert_int_eq(r.ex.exit_code, 3);
        run_free(&r);
        owner_close(&o);
}
END_TEST

START_TEST(test_version_mismatch)
{
        char *argv[] = {"true", NULL};
        struct owner o = {.fake = fake_ready_then_silent};
        struct run r = {0};

        fake_version = 3;
        owner_open(&o, VIA_FAKE, NULL);
        start_argv(&o, argv, &r);
        wait_gone(&o);
        ck_assert_msg(strstr(o.last_reason, "speaks protocol version 3, this daemon 2"), "%s",
                      o.last_reason);
        finish(&r);
        ck_assert(r.error); /* it never ran */
        ck_assert_ptr_nonnull(strstr(r.msg, "version 3"));
        run_free(&r);
        owner_close(&o);
}
END_TEST

/* No PONG for link_timeout: the link counts as lost; the owner cannot reconnect; gone. */
START_TEST(test_silent_link_times_out)
{
        struct agent_session_config cfg = base_cfg;
        struct owner o = {.fake = fake_ready_then_silent};

        cfg.link_timeout_ms = 600;
        cfg.ping_interval_ms = 100;
        cfg.reconnect_timeout_ms = 500;
        owner_open(&o, VIA_FAKE, &cfg);
        wait_back(&o, 1);
        o.fail_connect = true;
        wait_gone(&o);
        ck_assert_int_eq(o.links[BACKEND_LINK_LOST], 1);
        ck_assert_msg(strstr(o.reasons[BACKEND_LINK_LOST], "no answer from sandboxd-agent"), "%s",
                      o.reasons[BACKEND_LINK_LOST]);
        ck_assert_int_ge(o.connects, 2);
        owner_close(&o);
}
END_TEST

/* An agent that fails the same way at every reconnect: the session gives up after
 * SESS_SAME_FAILS (3) of them — well inside the reconnect window, which alone would take a
 * minute, and which a READY before the error reset on every attempt — the exec that ran ends
 * lost with the agent's words and the backend's name, and nothing is left armed. */
START_TEST(test_same_failure_gives_up)
{
        static const char *const said[] = {
                [FAIL_RESUME_ERROR] = "cannot resume: the spool is unreadable",
                [FAIL_HELLO_ERROR] = "protocol version 2 is not spoken here",
                [FAIL_CLOSE] = "the stream to sandboxd-agent ended",
        };
        struct agent_session_config cfg = base_cfg;
        struct owner o = {.fake = fake_fails_again};
        char *argv[] = {"sleep", "1000", NULL};
        struct run r = {0};
        int connects;

        fake_fail = (enum fake_fail) _i;
        cfg.ready_timeout_ms = 300;
        cfg.ping_interval_ms = 5000;
        cfg.reconnect_timeout_ms = 600000;
        owner_open(&o, VIA_FAKE, &cfg);
        start_argv(&o, argv, &r);
        wait_gone(&o);
        /* The working link, then three identical failures — with FAIL_CLOSE the cut of the
         * working link ends the stream with the same words, and counts as the first. */
        ck_assert_int_eq(o.connects, fake_fail == FAIL_CLOSE ? 3 : 4);
        ck_assert_msg(strstr(o.reasons[BACKEND_LINK_GONE], "failed the same way 3 times"), "%s",
                      o.reasons[BACKEND_LINK_GONE]);
        ck_assert_msg(strstr(o.reasons[BACKEND_LINK_GONE], said[_i]), "%s",
                      o.reasons[BACKEND_LINK_GONE]);
        /* One BACK, one LOST, one GONE: not a line per attempt. */
        ck_assert_int_eq(o.links[BACKEND_LINK_BACK], 1);
        ck_assert_int_eq(o.links[BACKEND_LINK_LOST], 1);
        ck_assert_int_eq(o.links[BACKEND_LINK_GONE], 1);
        finish(&r);
        ck_assert_msg(!r.error && strstr(r.msg, "lost: test: ") && strstr(r.msg, said[_i]), "%s",
                      r.msg);
        ck_assert(!uv_is_active((uv_handle_t *) &o.s->timer));
        connects = o.connects;
        run_for(300);
        ck_assert_int_eq(o.connects, connects);
        run_free(&r);
        owner_close(&o);
}
END_TEST

/* An agent that answers every HELLO with an ERROR: each attempt fails on the ERROR, not at the
 * handshake timeout (here far longer than the test may run), and the third identical one
 * gives up with the agent's words; the exec waiting for the link fails with them. */
START_TEST(test_hello_error_fails_the_attempt_at_once)
{
        static const char hello_refused[] = "HELLO: protocol version 2 is not supported here";
        struct agent_session_config cfg = base_cfg;
        struct owner o = {.fake = fake_ready_then_silent};
        char *argv[] = {"true", NULL};
        struct run r = {0};

        fake_said = hello_refused;
        fake_refuse = true;
        cfg.ready_timeout_ms = 600000;
        owner_open(&o, VIA_FAKE, &cfg);
        start_argv(&o, argv, &r);
        wait_gone(&o);
        ck_assert_int_eq(o.connects, 3);
        ck_assert_int_eq(o.links[BACKEND_LINK_BACK], 0);
        ck_assert_msg(strstr(o.last_reason, "failed the same way 3 times in a row"), "%s",
                      o.last_reason);
        ck_assert_msg(strstr(o.last_reason, "refused the handshake"), "%s", o.last_reason);
        ck_assert_msg(strstr(o.last_reason, hello_refused), "%s", o.last_reason);
        finish(&r);
        ck_assert(r.error); /* it never ran */
        ck_assert_msg(strstr(r.msg, hello_refused), "%s", r.msg);
        run_free(&r);
        owner_close(&o);
        fake_said = NULL;
        fake_refuse = false;
}
END_TEST

/* An ERROR that more bytes follow before READY is an earlier session's: the attempt goes on. */
START_TEST(test_stale_error_before_ready)
{
        struct owner o = {.fake = fake_ready_then_silent};

        fake_said = "bad escape in the input";
        owner_open(&o, VIA_FAKE, NULL);
        wait_back(&o, 1);
        ck_assert_int_eq(o.connects, 1);
        ck_assert_int_eq(o.links[BACKEND_LINK_LOST], 0);
        owner_close(&o);
        fake_said = NULL;
}
END_TEST

static Suite *
session_suite(void)
{
        Suite *s = suite_create("session");
        TCase *tc = tcase_create("session");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, test_exec_over_pipes, 0, 2);
        tcase_add_test(tc, test_binary_streams_exact);
        tcase_add_test(tc, test_stdin_binary);
        tcase_add_test(tc, test_kill_tree_and_state);
        tcase_add_test(tc, test_failed_exec_errors);
        tcase_add_test(tc, test_resume_after_cut_mid_frame);
        tcase_add_test(tc, test_proxy_cuts_at_exact_bytes);
        tcase_add_test(tc, test_bridge_killed_and_replaced);
        tcase_add_test(tc, test_adopt_after_restart);
        tcase_add_test(tc, test_resume_refused_beyond_output);
        tcase_add_loop_test(tc, test_same_failure_gives_up, 0, 3);
        tcase_add_test(tc, test_spool_quota_backpressure);
        tcase_add_test(tc, test_detached_auth);
        tcase_add_test(tc, test_detach_bridge_one_command);
        tcase_add_test(tc, test_detached_bytes_held_before_start);
        tcase_add_loop_test(tc, test_agent_restarted, 0, 2);
        tcase_add_test(tc, test_torn_and_forged_frames);
        tcase_add_test(tc, test_version_mismatch);
        tcase_add_test(tc, test_silent_link_times_out);
        tcase_add_test(tc, test_hello_error_fails_the_attempt_at_once);
        tcase_add_test(tc, test_stale_error_before_ready);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(session_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
