/* docker_exec.c — execs in a container over Docker's hijacked connection.
 *
 * POST /containers/{id}/exec creates the exec; /exec/{id}/start is then written by hand on a
 * libuv stream to the Docker socket with "Connection: Upgrade / Upgrade: tcp". After the 101
 * answer the connection carries stdin one way and, without a tty, 8-byte-framed stdout/stderr
 * the other way ([stream, 0, 0, 0, size32be]). At EOF the exit code comes from /exec/{id}/json.
 *
 * Every user exec runs under a tiny wrapper that records its pid (= its session id: runc makes
 * each exec a session leader) in /tmp/.sandboxd/<exec_id>.pid, so kill/signal can find the whole
 * tree inside the container: everything in that session plus descendants by ppid. Helper execs
 * (kill, state read-back, file fallbacks) run the same engine without the wrapper.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backends/docker_int.h"
#include "backends/http1.h"
#include "backends/remote_sh.h"

#define DX_HELPER_MAX_OUT (64u << 20)
#define DX_HS_MAX         (64u << 10)

enum dx_phase {
        DX_CREATE,
        DX_CONNECT,
        DX_STREAM,
        DX_INSPECT,
        DX_FINISH,
        DX_DONE,
};

struct dx_kill;

struct backend_proc {
        struct backend_sandbox *sb;
        struct backend_exec_cbs cbs;
        void *ctx;
        enum dx_phase phase;
        char *exec_id;
        char *deid; /* docker exec id */
        char *pidfile;
        char *state_path;
        bool tty, attach_stdin, merge_stderr, helper;
        unsigned short rows, cols;
        struct docker_hijack hj;
        uv_timer_t timer;
        bool timer_init;
        struct buf pending_in;
        bool eof_wanted, eof_sent;
        bool paused;
        int refs;
        bool released;
        int signalled; /* last signal we sent to the tree */
        int inspect_tries;
        struct exec_exit ex;
        struct buf state;
        char *fail_msg;
        struct sbx_error fail_err; /* user execs: why the exec never ran */
        /* helper mode */
        docker_helper_cb hcb;
        void *hctx;
        struct buf hout;
        /* agent mode: sub is linked while the agent knows the exec */
        bool agent;
        struct docker_agent *ag;
        struct docker_agent_sub sub;
        char *argv0, *cwd;  /* for error messages */
        uint32_t sid;       /* the exec's pid (= session) in the container, 0 before STARTED */
        uint32_t in_flight; /* stdin bytes sent, not yet acknowledged */
        uint32_t owed;      /* output bytes delivered, not yet credited back */
        int pending_sig;    /* a signal asked for before STARTED */
        struct dx_kill *pending_kill;
};

/* $0 = pid file; the exec becomes its own command through `exec`, keeping the pid. */
static const char dx_wrap[] = "{ echo $$ >\"$0\"; } 2>/dev/null || { mkdir -p \"${0%/*}\" && "
                              "echo $$ >\"$0\"; } 2>/dev/null; exec \"$@\"";

/* $0 = state file ("" none), then files to remove. First line: the cgroup's oom_kill count
 * (memory.events on v2, memory.oom_control on v1), then the state blob. */
static const char dx_finish_script[] =
        "o=0\n"
        "for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do\n"
        "  [ -r \"$f\" ] || continue\n"
        "  while read -r k v; do [ \"$k\" = oom_kill ] && o=$v; done <\"$f\"; break\n"
        "done\n"
        "echo \"$o\"\n"
        "[ -n \"$0\" ] && cat \"$0\" 2>/dev/null\n"
        "rm -f \"$@\" \"$0\"\n";

static void dx_after_stream(struct backend_proc *p);
static void dx_deliver_exit(struct backend_proc *p);

static void
dx_ref(struct backend_proc *p)
{
        p->refs++;
}

static void
dx_unref(struct backend_proc *p)
{
        if (--p->refs > 0)
                return;
        docker_sandbox_unref(p->sb);
        free(p->exec_id);
        free(p->deid);
        free(p->pidfile);
        free(p->state_path);
        free(p->fail_msg);
        free(p->argv0);
        free(p->cwd);
        docker_agent_unref(p->ag);
        sbx_error_clear(&p->fail_err);
        buf_free(&p->hj.hs);
        buf_free(&p->pending_in);
        buf_free(&p->state);
        buf_free(&p->hout);
        free(p);
}

static void
dx_ref_cb(void *ctx)
{
        dx_ref(ctx);
}

static void
dx_unref_cb(void *ctx)
{
        dx_unref(ctx);
}

static void
dx_handle_close_cb(uv_handle_t *h)
{
        dx_unref(h->data);
}

/* Ends an exec that could not run. A user exec reports it as exec_exit.error (a -32005
 * backend error unless the caller set a more precise one); a helper gets it as its error. The
 * exit code 125 is Docker's own "the runtime failed" convention. */
static void
dx_fail(struct backend_proc *p, const char *msg)
{
        free(p->fail_msg);
        p->fail_msg = xstrdup(msg);
        if (!p->fail_err.code)
                sbx_error_backend(&p->fail_err, "docker", "%s", msg);
        p->ex.exit_code = 125;
        docker_hijack_close(&p->hj);
        dx_deliver_exit(p);
}

static void
dx_output(struct backend_proc *p, int stream, const char *data, size_t len)
{
        enum backend_stream s = stream == 2 ? BACKEND_STDERR : BACKEND_STDOUT;

        if (!len || p->phase == DX_DONE)
                return;
        if (p->merge_stderr)
                s = BACKEND_STDOUT;
        if (p->helper) {
                if (s == BACKEND_STDOUT && p->hout.len + len <= DX_HELPER_MAX_OUT)
                        buf_append(&p->hout, data, len);
                return;
        }
        p->cbs.on_output(p->ctx, s, data, len);
}

static void dx_agent_flush_stdin(struct backend_proc *p);

static void
dx_flush_stdin(struct backend_proc *p)
{
        if (p->agent) {
                dx_agent_flush_stdin(p);
                return;
        }
        if (p->phase != DX_STREAM)
                return;
        if (p->pending_in.len) {
                docker_hijack_send(&p->hj, p->pending_in.data, p->pending_in.len);
                buf_consume(&p->pending_in, p->pending_in.len);
        }
        if (p->eof_wanted && !p->eof_sent) {
                p->eof_sent = true;
                if (p->tty)
                        docker_hijack_send(&p->hj, "\004", 1); /* a pty has no half-close: ^D */
                else
                        docker_hijack_shutdown(&p->hj);
        }
}

static void
dx_open_cb(void *ctx)
{
        struct backend_proc *p = ctx;

        p->phase = DX_STREAM;
        dx_flush_stdin(p);
}

static void
dx_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        dx_output(ctx, stream, data, len);
}

static void
dx_end_cb(void *ctx, const char *error)
{
        struct backend_proc *p = ctx;

        if (error)
                dx_fail(p, error);
        else if (p->phase == DX_STREAM)
                dx_after_stream(p);
}

static const struct docker_hijack_cbs dx_hijack_cbs = {
        .ref = dx_ref_cb,
        .unref = dx_unref_cb,
        .on_open = dx_open_cb,
        .on_data = dx_data_cb,
        .on_end = dx_end_cb,
};

static void
dx_connect(struct backend_proc *p)
{
        char *body = xasprintf("{\"Detach\":false,\"Tty\":%s}", p->tty ? "true" : "false");
        char *path = xasprintf("/exec/%s/start", p->deid);
        int rc;

        p->phase = DX_CONNECT;
        p->hj.cbs = &dx_hijack_cbs;
        p->hj.ctx = p;
        if (p->paused)
                docker_hijack_pause(&p->hj);
        /* Docker takes stdin EOF as a half-close, which a TLS stream cannot do. */
        rc = docker.tls && p->attach_stdin && !p->tty && !p->helper
                     ? -EPROTONOSUPPORT
                     : docker_hijack_open(&p->hj, "exec start", path, body, p->tty);
        free(path);
        free(body);
        if (rc == -EPROTONOSUPPORT)
                sbx_error_param(&p->fail_err, "stdin",
                                "stdin of a `docker exec` cannot be closed over TLS: use the "
                                "agent (remove agent = off from [backend.docker])");
        if (rc < 0)
                dx_fail(p, rc == -EPROTONOSUPPORT ? p->fail_err.message
                           : rc == -EAFNOSUPPORT
                                   ? "docker exec over plain tcp:// needs a numeric address"
                                   : strerror(-rc));
}

static void
dx_created_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct backend_proc *p = ctx;
        const char *id = json_string_value(json_object_get(body, "Id"));

        if (p->phase != DX_CREATE) {
                dx_unref(p);
                return;
        }
        if (status == 404)
                docker_sandbox_mark(p->sb, "removed");
        else if (status == 409)
                docker_sandbox_mark(p->sb, "exited");
        if (status != 201 || !id) {
                struct sbx_error e = {0};
                docker_error(&e, "docker exec create", status, body, terr);
                /* The container vanished or stopped between our last event and this exec. */
                if (status == 404 || status == 409)
                        sbx_error_set(&p->fail_err, SBX_E_UNUSABLE,
                                      json_pack("{s:s}", "state", p->sb->state),
                                      "docker container of sandbox %s is %s: %s", p->sb->id,
                                      p->sb->state, e.message);
                dx_fail(p, e.message);
                sbx_error_clear(&e);
                dx_unref(p);
                return;
        }
        p->deid = xstrdup(id);
        dx_connect(p);
        dx_unref(p);
}

static json_t *
dx_strv(char *const *v)
{
        json_t *a = json_array();

        for (; v && *v; v++)
                json_array_append_new(a, json_string(*v));
        return a;
}

static json_t *
dx_create_body(struct backend_proc *p, const struct exec_spec *spec)
{
        json_t *cmd = json_array();
        json_t *body;

        if (!p->helper) {
                /* A pty gets its size before the command runs; the resize API would race. */
                char *wrap = p->tty && p->rows && p->cols
                                     ? xasprintf("stty rows %u cols %u 2>/dev/null; %s", p->rows,
                                                 p->cols, dx_wrap)
                                     : xstrdup(dx_wrap);
                json_array_append_new(cmd, json_string("sh"));
                json_array_append_new(cmd, json_string("-c"));
                json_array_append_new(cmd, json_string(wrap));
                json_array_append_new(cmd, json_string(p->pidfile));
                free(wrap);
        }
        json_t *args = dx_strv(spec->argv);
        json_array_extend(cmd, args);
        json_decref(args);
        body = json_pack("{s:b,s:b,s:b,s:b,s:o}", "AttachStdin", p->attach_stdin, "AttachStdout", 1,
                         "AttachStderr", 1, "Tty", p->tty, "Cmd", cmd);
        if (spec->envp)
                json_object_set_new(body, "Env", dx_strv(spec->envp));
        if (p->helper)
                json_object_set_new(body, "WorkingDir", json_string("/"));
        else if (spec->cwd)
                json_object_set_new(body, "WorkingDir", json_string(spec->cwd));
        else if (p->sb->workdir)
                json_object_set_new(body, "WorkingDir", json_string(p->sb->workdir));
        if (p->helper)
                json_object_set_new(body, "User", json_string("0"));
        return body;
}

static struct backend_proc *
dx_new(struct backend_sandbox *sb, const struct exec_spec *spec)
{
        struct backend_proc *p = xcalloc(1, sizeof(*p));

        p->sb = sb;
        docker_sandbox_ref(sb);
        p->refs = 1;
        p->phase = DX_CREATE;
        p->tty = spec->pty;
        p->rows = spec->pty_rows;
        p->cols = spec->pty_cols;
        p->merge_stderr = spec->merge_stderr;
        p->attach_stdin = spec->stdin_open || spec->stdin_len > 0;
        if (spec->stdin_len)
                buf_append(&p->pending_in, spec->stdin_data, spec->stdin_len);
        p->eof_wanted = !spec->stdin_open;
        return p;
}

static int
dx_launch(struct backend_proc *p, const struct exec_spec *spec, struct sbx_error *err)
{
        json_t *body = dx_create_body(p, spec);
        char *path = xasprintf("/containers/%s/exec", p->sb->cid);
        int rc;

        dx_ref(p);
        rc = docker_call("POST", path, body, NULL, 0, NULL, dx_created_cb, p);
        free(path);
        json_decref(body);
        if (rc < 0) {
                dx_unref(p);
                sbx_error_backend(err, "docker", "cannot start an API request: %s", strerror(-rc));
        }
        return rc;
}

/* ---- agent mode: the exec runs through the sandbox's resident sandboxd-agent ---- */

struct dx_kill {
        struct backend_proc *p;
        backend_kill_cb cb;
        void *ctx;
        int sig;
        unsigned grace_ms;
        struct docker_agent_sub sub;
};

static bool
dx_agent_linked(const struct backend_proc *p)
{
        return p->agent && !list_empty(&p->sub.link);
}

static void
dx_agent_send(struct backend_proc *p, enum agent_msg type, const void *data, size_t len)
{
        if (dx_agent_linked(p))
                docker_agent_send(p->ag, type, p->sub.id, data, len, NULL, 0);
}

static void
dx_agent_flush_stdin(struct backend_proc *p)
{
        while (p->pending_in.len && p->in_flight < AGENT_STDIN_WINDOW && dx_agent_linked(p)) {
                size_t n = MIN(p->pending_in.len, (size_t) (AGENT_STDIN_WINDOW - p->in_flight));
                n = MIN(n, (size_t) AGENT_OUT_CHUNK);
                dx_agent_send(p, AGENT_STDIN, p->pending_in.data, n);
                p->in_flight += (uint32_t) n;
                buf_consume(&p->pending_in, n);
        }
        if (!p->pending_in.len && p->eof_wanted && !p->eof_sent && p->attach_stdin) {
                p->eof_sent = true;
                dx_agent_send(p, AGENT_EOF, NULL, 0);
        }
}

static void
dx_agent_credit(struct backend_proc *p)
{
        unsigned char b[4];

        if (p->paused || !p->owed)
                return;
        agent_put32(b, p->owed);
        p->owed = 0;
        dx_agent_send(p, AGENT_CREDIT, b, sizeof(b));
}

static void dx_agent_kill_send(struct dx_kill *k, enum agent_kill_mode mode);
static void dx_kill_done(struct dx_kill *k, int survivors);

/* The agent forgets the exec: no message for its id follows. */
static void
dx_agent_unlink(struct backend_proc *p)
{
        struct dx_kill *k = p->pending_kill;

        list_del(&p->sub.link);
        p->pending_kill = NULL;
        if (k)
                dx_kill_done(k, 0);
}

static void
dx_agent_started(struct backend_proc *p, uint32_t pid)
{
        struct dx_kill *k = p->pending_kill;

        p->sid = pid;
        if (p->pending_sig) {
                struct dx_kill sk = {.p = p, .sig = p->pending_sig};
                p->pending_sig = 0;
                dx_agent_kill_send(&sk, AGENT_KILL_SIGNAL);
        }
        if (k) {
                p->pending_kill = NULL;
                dx_agent_kill_send(k, AGENT_KILL_WAIT);
        }
}

/* The agent's report that the exec never ran, as the error local would give. */
static void
dx_agent_failed(struct backend_proc *p, const unsigned char *m, uint32_t len)
{
        int e = len >= 4 ? (int) agent_get32(m) : EIO;
        char step[32] = "start";

        if (len > 4)
                snprintf(step, sizeof(step), "%.*s", (int) strnlen((const char *) m + 4, len - 4),
                         (const char *) m + 4);
        if (strcmp(step, "chdir") == 0)
                sbx_error_param(&p->fail_err, "cwd", "cwd '%s' in the container: %s", p->cwd,
                                strerror(e));
        else if (strcmp(step, "exec") == 0 && (e == ENOENT || e == EACCES || e == ENOEXEC))
                sbx_error_param(&p->fail_err, "argv", "cannot execute '%s' in the container: %s",
                                p->argv0, strerror(e));
        else if (strcmp(step, "limit") == 0)
                sbx_error_set(
                        &p->fail_err, SBX_E_LIMIT,
                        json_pack("{s:s,s:i}", "limit", "docker_agent_processes", "value", 4096),
                        "sandbox %s already runs the most processes its agent takes "
                        "at once (4096)",
                        p->sb->id);
        else if (strcmp(step, "env") == 0)
                sbx_error_param(&p->fail_err, "env", "more than 8192 environment variables");
        else
                sbx_error_backend(&p->fail_err, "docker", "sandboxd-agent could not %s: %s", step,
                                  strerror(e));
        dx_agent_unlink(p);
        dx_fail(p, p->fail_err.message);
}

static void
dx_agent_exit(struct backend_proc *p, const unsigned char *m, uint32_t len)
{
        int status = len >= 4 ? (int) agent_get32(m) : 0;
        uint32_t flags = len >= 8 ? agent_get32(m + 4) : 0;

        dx_agent_unlink(p);
        if (WIFSIGNALED(status))
                p->ex.signal = WTERMSIG(status);
        else
                p->ex.exit_code = WEXITSTATUS(status);
        p->ex.oom_killed = (flags & AGENT_EXIT_OOM) != 0;
        if (len > 8 && p->state_path)
                buf_append(&p->state, m + 8, len - 8);
        dx_deliver_exit(p);
}

static void
dx_agent_msg_cb(void *ctx, int type, const unsigned char *m, uint32_t len)
{
        struct backend_proc *p = ctx;

        switch (type) {
        case AGENT_STARTED:
                dx_agent_started(p, len >= 4 ? agent_get32(m) : 0);
                break;
        case AGENT_FAILED:
                dx_agent_failed(p, m, len);
                break;
        case AGENT_STDOUT:
        case AGENT_STDERR:
                dx_output(p, type == AGENT_STDERR ? 2 : 1, (const char *) m, len);
                p->owed += len;
                if (p->owed >= AGENT_OUT_WINDOW / 4)
                        dx_agent_credit(p);
                break;
        case AGENT_ACK:
                p->in_flight -= MIN(p->in_flight, len >= 4 ? agent_get32(m) : 0);
                dx_agent_flush_stdin(p);
                break;
        case AGENT_EXIT:
                dx_agent_exit(p, m, len);
                break;
        }
}

static void
dx_kill_done(struct dx_kill *k, int survivors)
{
        if (k->cb)
                k->cb(k->ctx, survivors, NULL);
        dx_unref(k->p);
        free(k);
}

static void
dx_agent_gone_inspect_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                         const char *terr)
{
        struct backend_proc *p = ctx;
        char *why = p->fail_msg;

        p->fail_msg = NULL;
        if (status == 404)
                docker_sandbox_mark(p->sb, "removed");
        else if (status == 200 &&
                 !json_is_true(json_object_get(json_object_get(body, "State"), "Running")))
                docker_sandbox_mark(p->sb, "exited");
        if (strcmp(p->sb->state, "running") != 0)
                sbx_error_set(&p->fail_err, SBX_E_UNUSABLE,
                              json_pack("{s:s}", "state", p->sb->state),
                              "docker container of sandbox %s is %s", p->sb->id, p->sb->state);
        else
                sbx_error_backend(&p->fail_err, "docker", "%s", why);
        dx_fail(p, why);
        free(why);
        dx_unref(p);
}

/* The channel is gone: so is the container's main process, and with it everything the agent
 * started (its successor's HELLO kills whatever might be left). */
static void
dx_agent_gone_cb(void *ctx, const char *why)
{
        struct backend_proc *p = ctx;
        char *path;

        dx_agent_unlink(p);
        if (p->sid) {
                p->ex.signal = SIGKILL;
                dx_deliver_exit(p);
                return;
        }
        /* It never ran. Say -32006 when the container is gone or stopped (the daemon may then
         * recreate it), else why the channel broke. */
        p->fail_msg = xstrdup(why);
        path = xasprintf("/containers/%s/json", p->sb->cid);
        dx_ref(p);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, dx_agent_gone_inspect_cb, p) < 0)
                dx_agent_gone_inspect_cb(p, 0, NULL, NULL, 0, "cannot start an API request");
        free(path);
}

/* Returns the sandbox's agent channel, (re)attaching when it is down. */
static struct docker_agent *
dx_agent_channel(struct backend_sandbox *sb, struct sbx_error *err)
{
        if (!docker_agent_alive(sb->agent)) {
                docker_agent_close(sb->agent, "reattaching");
                sb->agent = docker_agent_open(sb, NULL, NULL);
        }
        if (!docker_agent_alive(sb->agent)) {
                sbx_error_backend(err, "docker", "%s", docker_agent_error(sb->agent));
                return NULL;
        }
        return sb->agent;
}

static void
dx_agent_strings(struct buf *b, char *const *v, uint32_t *n)
{
        for (*n = 0; v && v[*n]; (*n)++)
                buf_append(b, v[*n], strlen(v[*n]) + 1);
}

static int
dx_agent_launch(struct backend_proc *p, const struct exec_spec *spec, struct sbx_error *err)
{
        const char *cwd = spec->cwd ? spec->cwd : p->sb->workdir ? p->sb->workdir : "";
        unsigned char h[16];
        struct buf b = {0};
        uint32_t argc, envc;

        p->agent = true;
        list_init(&p->sub.link);
        p->cwd = xstrdup(cwd);
        p->argv0 = xstrdup(spec->argv[0]);
        p->ag = dx_agent_channel(p->sb, err);
        if (!p->ag)
                return -EIO;
        docker_agent_ref(p->ag);
        p->sub.id = docker_agent_id(p->ag);
        p->sub.on_msg = dx_agent_msg_cb;
        p->sub.on_gone = dx_agent_gone_cb;
        p->sub.ctx = p;
        buf_append(&b, h, sizeof(h));
        buf_append(&b, cwd, strlen(cwd) + 1);
        buf_append(&b, p->state_path ? p->state_path : "",
                   p->state_path ? strlen(p->state_path) + 1 : 1);
        dx_agent_strings(&b, spec->argv, &argc);
        dx_agent_strings(&b, spec->envp, &envc);
        agent_put32((unsigned char *) b.data, (p->tty ? AGENT_START_TTY : 0) |
                                                      (p->attach_stdin ? AGENT_START_STDIN : 0) |
                                                      (p->merge_stderr ? AGENT_START_MERGE : 0));
        agent_put16((unsigned char *) b.data + 4, p->rows);
        agent_put16((unsigned char *) b.data + 6, p->cols);
        agent_put32((unsigned char *) b.data + 8, argc);
        agent_put32((unsigned char *) b.data + 12, envc);
        if (b.len > AGENT_MAX_PAYLOAD) {
                buf_free(&b);
                sbx_error_param(err, "argv",
                                "command, environment and cwd together exceed %u bytes",
                                AGENT_MAX_PAYLOAD);
                return -E2BIG;
        }
        docker_agent_sub(p->ag, &p->sub);
        dx_agent_send(p, AGENT_START, b.data, b.len);
        buf_free(&b);
        p->phase = DX_STREAM;
        dx_agent_flush_stdin(p);
        return 0;
}

static void
dx_kill_msg_cb(void *ctx, int type, const unsigned char *m, uint32_t len)
{
        struct dx_kill *k = ctx;

        if (type != AGENT_KILLED)
                return;
        list_del(&k->sub.link);
        dx_kill_done(k, len >= 4 ? (int) agent_get32(m) : 0);
}

static void
dx_kill_gone_cb(void *ctx, const char *why)
{
        dx_kill_done(ctx, 0);
}

static void
dx_agent_kill_send(struct dx_kill *k, enum agent_kill_mode mode)
{
        struct backend_proc *p = k->p;
        unsigned char b[16];
        uint32_t id = 0;

        if (!docker_agent_alive(p->ag)) {
                if (mode == AGENT_KILL_WAIT)
                        dx_kill_done(k, 0);
                return;
        }
        agent_put32(b, p->sid);
        agent_put32(b + 4, (uint32_t) k->sig);
        agent_put32(b + 8, k->grace_ms);
        agent_put32(b + 12, mode);
        if (mode == AGENT_KILL_WAIT) {
                id = docker_agent_id(p->ag);
                k->sub = (struct docker_agent_sub){
                        .id = id, .on_msg = dx_kill_msg_cb, .on_gone = dx_kill_gone_cb, .ctx = k};
                docker_agent_sub(p->ag, &k->sub);
        }
        docker_agent_send(p->ag, AGENT_KILL, id, b, sizeof(b), NULL, 0);
}

/* Signals or kills the exec's tree through the agent; before STARTED the request waits. */
static void
dx_agent_kill(struct backend_proc *p, int sig, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct dx_kill *k;

        if (!cb) {
                struct dx_kill sk = {.p = p, .sig = sig};
                if (p->sid)
                        dx_agent_kill_send(&sk, AGENT_KILL_SIGNAL);
                else if (dx_agent_linked(p))
                        p->pending_sig = sig;
                return;
        }
        k = xcalloc(1, sizeof(*k));
        *k = (struct dx_kill){.p = p, .cb = cb, .ctx = ctx, .sig = sig, .grace_ms = grace_ms};
        list_init(&k->sub.link);
        dx_ref(p);
        if (p->sid)
                dx_agent_kill_send(k, AGENT_KILL_WAIT);
        else if (dx_agent_linked(p) && !p->pending_kill)
                p->pending_kill = k;
        else
                dx_kill_done(k, 0);
}

/* Starts a user exec. */
int
docker_exec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                  const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                  struct sbx_error *err)
{
        struct backend_proc *p;

        if (strcmp(sb->state, "running") != 0) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", sb->state),
                              "docker container of sandbox %s is %s", sb->id, sb->state);
                return -ESRCH;
        }
        if (!spec->argv || !spec->argv[0]) {
                sbx_error_param(err, "argv", "empty argv");
                return -EINVAL;
        }
        p = dx_new(sb, spec);
        p->cbs = *cbs;
        p->ctx = ctx;
        p->exec_id = xstrdup(spec->exec_id ? spec->exec_id : "p_anon");
        p->pidfile = xasprintf(DOCKER_STATE_DIR "/%s.pid", p->exec_id);
        p->state_path = spec->state_path ? xstrdup(spec->state_path) : NULL;
        if ((sb->use_agent ? dx_agent_launch(p, spec, err) : dx_launch(p, spec, err)) < 0) {
                dx_unref(p);
                return -EIO;
        }
        *ret = p;
        return 0;
}

/* Runs a helper command and collects its stdout. */
void
docker_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
              void *ctx, docker_helper_cb cb)
{
        struct exec_spec spec = {.argv = argv, .stdin_data = in, .stdin_len = inlen};
        struct backend_proc *p = dx_new(sb, &spec);
        struct sbx_error err = {0};

        p->helper = true;
        p->hcb = cb;
        p->hctx = ctx;
        if (dx_launch(p, &spec, &err) < 0) {
                cb(ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
                dx_unref(p);
        }
}

static void
dx_deliver_exit(struct backend_proc *p)
{
        if (p->phase == DX_DONE)
                return;
        p->phase = DX_DONE;
        if (p->helper) {
                struct sbx_error e = {0};
                if (p->fail_msg)
                        sbx_error_backend(&e, "docker", "%s", p->fail_msg);
                p->hcb(p->hctx, p->fail_msg ? -1 : p->ex.exit_code, p->hout.data, p->hout.len,
                       p->fail_msg ? &e : NULL);
                sbx_error_clear(&e);
                dx_unref(p); /* the engine's own reference: helpers have no release */
                return;
        }
        if (p->fail_err.code)
                p->ex.error = &p->fail_err;
        if (p->state.len) {
                p->ex.state = p->state.data;
                p->ex.state_len = p->state.len;
        }
        dx_ref(p); /* on_exit may release */
        p->cbs.on_exit(p->ctx, &p->ex);
        dx_unref(p);
}

/* Exit codes above 128 mean "killed by signal N-128" only when we signalled the tree or the
 * kernel OOM-killed it: Docker reports both a signal death and exit(137) as 137. */
static void
dx_decode_exit(struct backend_proc *p, int code)
{
        p->ex.exit_code = code;
        if (code > 128 && code < 128 + 65 && (p->signalled || p->ex.oom_killed)) {
                p->ex.signal = code - 128;
                p->ex.exit_code = 0;
        }
}

static void
dx_finish_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct backend_proc *p = ctx;
        const char *nl = out ? memchr(out, '\n', len) : NULL;

        if (!err && nl) {
                uint64_t oom = strtoull(out, NULL, 10);
                if (oom > p->sb->oom_seen) {
                        if (p->ex.exit_code == 137)
                                p->ex.oom_killed = true;
                        p->sb->oom_seen = oom;
                }
                if (p->state_path && (size_t) (nl + 1 - out) < len)
                        buf_append(&p->state, nl + 1, len - (size_t) (nl + 1 - out));
        }
        dx_decode_exit(p, p->ex.exit_code);
        dx_deliver_exit(p);
        dx_unref(p);
}

/* Reads back state and the OOM counter, and removes finished pid files, in one helper. */
static void
dx_finish(struct backend_proc *p)
{
        struct backend_sandbox *sb = p->sb;
        bool need = p->state_path || p->ex.exit_code == 137 || sb->ndead >= 32;
        char **argv;
        size_t n = 0;

        if (!need || strcmp(sb->state, "running") != 0) {
                buf_appendf(&sb->dead_pidfiles, "%s ", p->pidfile);
                sb->ndead++;
                dx_decode_exit(p, p->ex.exit_code);
                dx_deliver_exit(p);
                return;
        }
        argv = xcalloc(sb->ndead + 8, sizeof(*argv));
        argv[n++] = "sh";
        argv[n++] = "-c";
        argv[n++] = (char *) dx_finish_script;
        argv[n++] = p->state_path ? p->state_path : "";
        argv[n++] = p->pidfile;
        char *save = NULL;
        for (char *tok = sb->dead_pidfiles.data ? strtok_r(sb->dead_pidfiles.data, " ", &save)
                                                : NULL;
             tok && n < sb->ndead + 7; tok = strtok_r(NULL, " ", &save))
                argv[n++] = tok;
        argv[n] = NULL;
        p->phase = DX_FINISH;
        dx_ref(p);
        docker_helper(sb, argv, NULL, 0, p, dx_finish_cb);
        free(argv);
        buf_consume(&sb->dead_pidfiles, sb->dead_pidfiles.len);
        sb->ndead = 0;
}

static void dx_inspect(struct backend_proc *p);

static void
dx_timer_cb(uv_timer_t *t)
{
        dx_inspect(t->data);
}

static void
dx_inspected_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct backend_proc *p = ctx;
        json_t *code = json_object_get(body, "ExitCode");

        if (status == 200 && json_is_true(json_object_get(body, "Running")) &&
            p->inspect_tries++ < 200) {
                /* The stream can end a moment before Docker records the exit. */
                if (!p->timer_init) {
                        uv_timer_init(docker.loop, &p->timer);
                        p->timer.data = p;
                        p->timer_init = true;
                        dx_ref(p);
                }
                uv_timer_start(&p->timer, dx_timer_cb, 5, 0);
        } else if (status == 200 && json_is_integer(code)) {
                p->ex.exit_code = (int) json_integer_value(code);
                if (p->timer_init && !uv_is_closing((uv_handle_t *) &p->timer))
                        uv_close((uv_handle_t *) &p->timer, dx_handle_close_cb);
                if (p->helper) {
                        dx_deliver_exit(p);
                } else {
                        dx_finish(p);
                }
        } else {
                /* The container went away under the exec: everything in it was killed. */
                if (status == 404)
                        docker_sandbox_mark(p->sb, "removed");
                p->ex.signal = SIGKILL;
                if (p->timer_init && !uv_is_closing((uv_handle_t *) &p->timer))
                        uv_close((uv_handle_t *) &p->timer, dx_handle_close_cb);
                dx_deliver_exit(p);
        }
        dx_unref(p);
}

static void
dx_inspect(struct backend_proc *p)
{
        char *path = xasprintf("/exec/%s/json", p->deid);

        dx_ref(p);
        if (docker_call("GET", path, NULL, NULL, 0, NULL, dx_inspected_cb, p) < 0) {
                dx_unref(p);
                p->ex.signal = SIGKILL;
                dx_deliver_exit(p);
        }
        free(path);
}

static void
dx_after_stream(struct backend_proc *p)
{
        p->phase = DX_INSPECT;
        dx_inspect(p);
}

/* Queues stdin. */
int
docker_exec_write(struct backend_proc *p, const void *data, size_t len, bool eof)
{
        if (p->eof_wanted || p->phase >= DX_INSPECT || !p->attach_stdin)
                return -EPIPE;
        if (len)
                buf_append(&p->pending_in, data, len);
        if (eof)
                p->eof_wanted = true;
        dx_flush_stdin(p);
        return 0;
}

static void
dx_kill_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *err)
{
        struct dx_kill *k = ctx;

        if (k->cb)
                k->cb(k->ctx, err ? -1 : (out ? atoi(out) : 0), err);
        dx_unref(k->p);
        free(k);
}

static void
dx_kill_run(struct backend_proc *p, const char *mode, int sig, unsigned grace_ms, void *ctx,
            backend_kill_cb cb)
{
        struct dx_kill *k = xcalloc(1, sizeof(*k));
        struct remote_sh_kill_argv ka;

        remote_sh_kill_args(&ka, mode, sig, p->pidfile, grace_ms);
        k->p = p;
        k->cb = cb;
        k->ctx = ctx;
        dx_ref(p);
        docker_helper(p->sb, ka.argv, NULL, 0, k, dx_kill_cb);
}

/* Sends sig to the exec's tree inside the container. */
int
docker_exec_signal(struct backend_proc *p, int sig)
{
        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (strcmp(p->sb->state, "running") != 0)
                return -ESRCH;
        p->signalled = sig;
        if (p->agent)
                dx_agent_kill(p, sig, 0, NULL, NULL);
        else
                dx_kill_run(p, "signal", sig, 0, NULL, NULL);
        return 0;
}

/* TERM, grace, KILL of the exec's tree inside the container. */
void
docker_exec_kill(struct backend_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        if (strcmp(p->sb->state, "running") != 0) {
                cb(ctx, 0, NULL);
                return;
        }
        p->signalled = SIGTERM;
        if (p->agent)
                dx_agent_kill(p, SIGTERM, grace_ms, ctx, cb);
        else
                dx_kill_run(p, "kill", SIGTERM, grace_ms, ctx, cb);
}

/* Stops reading output (agent mode: stops crediting the agent). */
void
docker_exec_pause(struct backend_proc *p)
{
        p->paused = true;
        if (!p->agent)
                docker_hijack_pause(&p->hj);
}

/* Restarts reading output. */
void
docker_exec_resume(struct backend_proc *p)
{
        p->paused = false;
        if (p->agent)
                dx_agent_credit(p);
        else
                docker_hijack_resume(&p->hj);
}

static void
dx_ignore_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        dx_unref(ctx);
}

/* Resizes the exec's pty. */
int
docker_exec_resize(struct backend_proc *p, unsigned short rows, unsigned short cols)
{
        char *path;
        int rc;

        if (!p->tty)
                return -ENOTTY;
        if (p->agent) {
                unsigned char b[4];
                agent_put16(b, rows);
                agent_put16(b + 2, cols);
                dx_agent_send(p, AGENT_RESIZE, b, sizeof(b));
                return 0;
        }
        if (!p->deid)
                return -EAGAIN;
        path = xasprintf("/exec/%s/resize?h=%u&w=%u", p->deid, rows, cols);
        dx_ref(p);
        rc = docker_call("POST", path, NULL, NULL, 0, NULL, dx_ignore_cb, p);
        if (rc < 0)
                dx_unref(p);
        free(path);
        return rc;
}

/* Drops the daemon's reference after on_exit. */
void
docker_exec_release(struct backend_proc *p)
{
        if (!p || p->released)
                return;
        p->released = true;
        if (p->agent)
                dx_agent_unlink(p);
        docker_hijack_close(&p->hj);
        dx_unref(p);
}
