/* docker_exec.c — execs in a docker sandbox: through its resident sandboxd-agent (the agent
 * session's own procs, backends/agent/session.h) when the container runs one, else one
 * `docker exec` each over Docker's hijacked connection, as below.
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

#include "backends/agent/session.h"
#include "backends/docker/docker_int.h"
#include "backends/http1.h"
#include "backends/remote_sh.h"
#include "backends/shell.h"
#include "protocol/codec.h"

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

struct dx_proc {
        struct backend_proc base; /* ops: dx_ops */
        struct backend_sandbox *sb;
        struct backend_exec_cbs cbs;
        void *ctx;
        enum dx_phase phase;
        char *exec_id;
        char *deid; /* docker exec id */
        char *pidfile;
        char *state_path;
        char *cwd; /* where the wrapper cds ("": the image's WorkingDir) */
        bool tty, attach_stdin, merge_stderr, helper;
        bool got_output; /* a user exec delivered output */
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
};

/* $0 = pid file, $1 = the directory to run in ("": the image's), $2 = where bash's start-up
 * file must be (shell-state execs, shell_init.h; "": none), $3 = how many NAME=VALUE words
 * follow that sh would not pass on (shell_env_carried: they go through `env`). The exec
 * becomes its own command through `exec`, keeping the pid. A directory that is not there is not
 * docker's WorkingDir, whose failure would come back as output: the pid file then says "cwd" and
 * the exit is 126, with nothing on the streams (dx_finish turns that into a cwd error). */
static const char dx_wrap[] =
        "{ echo $$ >\"$0\"; } 2>/dev/null || { mkdir -p \"${0%/*}\" && echo $$ >\"$0\"; } "
        "2>/dev/null; [ -z \"$1\" ] || cd -P -- \"$1\" 2>/dev/null || { echo cwd >\"$0\"; "
        "exit 126; }; [ -z \"$2\" ] || [ -f \"$2\" ] || printf %s '" SHELL_BASH_INIT "' >\"$2\" "
        "2>/dev/null; e=$3; shift 3; if [ \"$e\" -gt 0 ] && command -v env >/dev/null 2>&1; "
        "then exec env \"$@\"; fi; shift \"$e\"; exec \"$@\"";

/* $0 = state file ("" none), $1 = the exec's pid file, $2 = the oom_kill count seen so far when
 * the exec died of SIGKILL (137) without our signal ("" else), then files to remove. First
 * line: the cgroup's oom_kill count (memory.events on v2, memory.oom_control on v1), second:
 * the pid file (a pid, or "cwd" from dx_wrap), then the state blob. The kernel counts an OOM
 * kill only after it sent the SIGKILL (and logged it), so after a 137 the count is read again
 * for up to 0.5 s until it moves. */
static const char dx_finish_script[] =
        "p=$1 m=$2 n=0; shift 2\n"
        "while :; do\n"
        "  o=0\n"
        "  for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do\n"
        "    [ -r \"$f\" ] || continue\n"
        "    while read -r k v; do [ \"$k\" = oom_kill ] && o=$v; done <\"$f\"; break\n"
        "  done\n"
        "  [ -n \"$m\" ] && [ \"$o\" -le \"$m\" ] && [ $n -lt 10 ] || break\n"
        "  n=$((n+1)); sleep 0.05 2>/dev/null || break\n"
        "done\n"
        "echo \"$o\"\n"
        "w=; read -r w <\"$p\" 2>/dev/null; echo \"$w\"\n"
        "[ -n \"$0\" ] && cat \"$0\" 2>/dev/null\n"
        "rm -f \"$p\" \"$@\" \"$0\"\n";

static const struct backend_proc_ops dx_ops;
static void dx_after_stream(struct dx_proc *p);
static void dx_deliver_exit(struct dx_proc *p);

static void
dx_ref(struct dx_proc *p)
{
        p->refs++;
}

static void
dx_unref(struct dx_proc *p)
{
        if (--p->refs > 0)
                return;
        docker_sandbox_unref(p->sb);
        free(p->exec_id);
        free(p->deid);
        free(p->pidfile);
        free(p->state_path);
        free(p->cwd);
        free(p->fail_msg);
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
dx_fail(struct dx_proc *p, const char *msg)
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
dx_output(struct dx_proc *p, int stream, const char *data, size_t len)
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
        p->got_output = true;
        p->cbs.on_output(p->ctx, s, data, len);
}

static void
dx_flush_stdin(struct dx_proc *p)
{
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
        struct dx_proc *p = ctx;

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
        struct dx_proc *p = ctx;

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
dx_connect(struct dx_proc *p)
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
        struct dx_proc *p = ctx;
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

/* The Engine API takes JSON strings: bytes that are not UTF-8 (an environment value, an
 * argument) reach the container as U+FFFD, as they would through the docker CLI. The agent
 * passes them exactly. */
static json_t *
dx_strv(char *const *v)
{
        json_t *a = json_array();

        for (; v && *v; v++) {
                struct buf b = {0};
                size_t n = strlen(*v);
                if (utf8_valid(*v, n)) {
                        json_array_append_new(a, json_stringn(*v, n));
                        continue;
                }
                utf8_sanitize(&b, *v, n);
                json_array_append_new(a, json_stringn(b.data, b.len));
                buf_free(&b);
        }
        return a;
}

/* The wrapper and its words before the command (user execs) onto cmd. */
static void
dx_wrap_args(struct dx_proc *p, const struct exec_spec *spec, json_t *cmd)
{
        /* A pty gets its size before the command runs; the resize API would race. */
        char *wrap = p->tty && p->rows && p->cols
                             ? xasprintf("stty rows %u cols %u 2>/dev/null; %s", p->rows, p->cols,
                                         dx_wrap)
                             : xstrdup(dx_wrap);
        const char *cwd = spec->cwd ? spec->cwd : p->sb->workdir ? p->sb->workdir : "";
        char *init = p->state_path ? shell_bash_init_path(p->state_path) : xstrdup("");
        size_t ne = 0, carried;
        char **extra;
        json_t *words;

        while (spec->envp && spec->envp[ne])
                ne++;
        extra = xcalloc(ne + 1, sizeof(*extra));
        carried = shell_env_carried(spec->argv, spec->envp, extra);
        words = json_pack("[s,s,s,s,s,s]", "sh", "-c", wrap, p->pidfile, cwd, init);
        json_array_append_new(words, json_sprintf("%zu", carried));
        json_array_extend(cmd, words);
        json_decref(words);
        words = dx_strv(extra);
        json_array_extend(cmd, words);
        json_decref(words);
        free(p->cwd);
        p->cwd = xstrdup(cwd);
        free(extra);
        free(init);
        free(wrap);
}

static json_t *
dx_create_body(struct dx_proc *p, const struct exec_spec *spec)
{
        json_t *cmd = json_array();
        json_t *body;

        if (!p->helper)
                dx_wrap_args(p, spec, cmd);
        json_t *args = dx_strv(spec->argv);
        json_array_extend(cmd, args);
        json_decref(args);
        body = json_pack("{s:b,s:b,s:b,s:b,s:o}", "AttachStdin", p->attach_stdin, "AttachStdout", 1,
                         "AttachStderr", 1, "Tty", p->tty, "Cmd", cmd);
        if (spec->envp)
                json_object_set_new(body, "Env", dx_strv(spec->envp));
        if (p->helper) {
                json_object_set_new(body, "WorkingDir", json_string("/"));
                json_object_set_new(body, "User", json_string(docker_user_helper(p->sb)));
        }
        return body;
}

static struct dx_proc *
dx_new(struct backend_sandbox *sb, const struct exec_spec *spec)
{
        struct dx_proc *p = xcalloc(1, sizeof(*p));

        p->base.ops = &dx_ops;
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
dx_launch(struct dx_proc *p, const struct exec_spec *spec, struct sbx_error *err)
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

/* Starts a user exec: through the agent when the container runs one. */
int
docker_exec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                  const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                  struct sbx_error *err)
{
        struct dx_proc *p;

        if (strcmp(sb->state, "running") != 0) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", sb->state),
                              "docker container of sandbox %s is %s", sb->id, sb->state);
                return -ESRCH;
        }
        if (sb->use_agent)
                return agent_exec_start(docker_agent_session(sb, false), spec, cbs, ctx, ret, err);
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
        if (dx_launch(p, spec, err) < 0) {
                dx_unref(p);
                return -EIO;
        }
        *ret = &p->base;
        return 0;
}

/* Takes back an agent exec of a previous daemon (a `docker exec` cannot be). */
int
docker_exec_adopt(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
                  const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                  struct backend_proc **ret, struct sbx_error *err)
{
        const char *via = json_string_value(json_object_get(record, "via"));

        if (!sb->use_agent || !via || strcmp(via, "agent") != 0) {
                sbx_error_backend(err, "docker",
                                  "exec %s ran as a docker exec: it cannot be "
                                  "taken back after a restart",
                                  spec->exec_id);
                return -ENOTSUP;
        }
        return agent_exec_adopt(docker_agent_session(sb, true), spec, offsets, cbs, ctx, ret, err);
}

/* The daemon took back every exec it knew. */
void
docker_exec_adopt_done(struct backend_sandbox *sb)
{
        if (sb->session)
                agent_session_adopt_done(sb->session);
}

/* Runs a helper command (as root for a docker exec; as the container's user through the
 * agent) and collects its stdout. */
void
docker_helper(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
              void *ctx, docker_helper_cb cb)
{
        struct exec_spec spec = {.argv = argv, .stdin_data = in, .stdin_len = inlen};
        struct dx_proc *p;
        struct sbx_error err = {0};

        if (sb->use_agent) {
                agent_helper(docker_agent_session(sb, false), argv, in, inlen, ctx, cb);
                return;
        }
        p = dx_new(sb, &spec);
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
dx_deliver_exit(struct dx_proc *p)
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
dx_decode_exit(struct dx_proc *p, int code)
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
        struct dx_proc *p = ctx;
        const char *nl = out ? memchr(out, '\n', len) : NULL;
        const char *nl2 = nl ? memchr(nl + 1, '\n', len - (size_t) (nl + 1 - out)) : NULL;

        if (!err && nl2) {
                uint64_t oom = strtoull(out, NULL, 10);
                if (oom > p->sb->oom_seen) {
                        if (p->ex.exit_code == 137)
                                p->ex.oom_killed = true;
                        p->sb->oom_seen = oom;
                }
                if (p->ex.exit_code == 126 && !p->got_output && nl2 - nl == 4 &&
                    !memcmp(nl + 1, "cwd", 3))
                        sbx_error_param(&p->fail_err, "cwd", "cwd '%s' in the container: %s",
                                        p->cwd, strerror(ENOENT));
                if (p->state_path && (size_t) (nl2 + 1 - out) < len)
                        buf_append(&p->state, nl2 + 1, len - (size_t) (nl2 + 1 - out));
        }
        dx_decode_exit(p, p->ex.exit_code);
        dx_deliver_exit(p);
        dx_unref(p);
}

/* Reads back state and the OOM counter, and removes finished pid files, in one helper. */
static void
dx_finish(struct dx_proc *p)
{
        struct backend_sandbox *sb = p->sb;
        bool need = p->state_path || p->ex.exit_code == 137 || sb->ndead >= 32 ||
                    (p->ex.exit_code == 126 && !p->got_output);
        char **argv, seen[24] = "";
        size_t n = 0;

        if (!need || strcmp(sb->state, "running") != 0) {
                buf_appendf(&sb->dead_pidfiles, "%s ", p->pidfile);
                sb->ndead++;
                dx_decode_exit(p, p->ex.exit_code);
                dx_deliver_exit(p);
                return;
        }
        if (p->ex.exit_code == 137 && !p->signalled)
                snprintf(seen, sizeof(seen), "%llu", (unsigned long long) sb->oom_seen);
        argv = xcalloc(sb->ndead + 8, sizeof(*argv));
        argv[n++] = "sh";
        argv[n++] = "-c";
        argv[n++] = (char *) dx_finish_script;
        argv[n++] = p->state_path ? p->state_path : "";
        argv[n++] = p->pidfile;
        argv[n++] = seen;
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

static void dx_inspect(struct dx_proc *p);

static void
dx_timer_cb(uv_timer_t *t)
{
        dx_inspect(t->data);
}

static void
dx_inspected_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct dx_proc *p = ctx;
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
dx_inspect(struct dx_proc *p)
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
dx_after_stream(struct dx_proc *p)
{
        p->phase = DX_INSPECT;
        dx_inspect(p);
}

/* Queues stdin. */
static int
dx_op_write(struct backend_proc *bp, const void *data, size_t len, bool eof)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        if (p->eof_wanted || p->phase >= DX_INSPECT || !p->attach_stdin)
                return -EPIPE;
        if (len)
                buf_append(&p->pending_in, data, len);
        if (eof)
                p->eof_wanted = true;
        dx_flush_stdin(p);
        return 0;
}

/* Kills and signals: remote_sh_kill in a helper exec, which walks the tree from the pid file. */
static const struct remote_sh_kill_ops dx_kill_ops = {
        .helper = docker_helper,
        .ref = dx_ref_cb,
        .unref = dx_unref_cb,
};

/* Sends sig to the exec's tree inside the container. */
static int
dx_op_signal(struct backend_proc *bp, int sig)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (strcmp(p->sb->state, "running") != 0)
                return -ESRCH;
        p->signalled = sig;
        remote_sh_signal(&dx_kill_ops, p->sb, p, p->pidfile, sig);
        return 0;
}

/* TERM, grace, KILL of the exec's tree inside the container. */
static void
dx_op_kill(struct backend_proc *bp, unsigned grace_ms, void *ctx, backend_kill_cb cb)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        if (strcmp(p->sb->state, "running") != 0) {
                cb(ctx, 0, NULL);
                return;
        }
        p->signalled = SIGTERM;
        remote_sh_kill_tree(&dx_kill_ops, p->sb, p, p->pidfile, grace_ms, ctx, cb);
}

/* Stops reading output. */
static void
dx_op_pause(struct backend_proc *bp)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        p->paused = true;
        docker_hijack_pause(&p->hj);
}

/* Restarts reading output. */
static void
dx_op_resume(struct backend_proc *bp)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        p->paused = false;
        docker_hijack_resume(&p->hj);
}

static void
dx_ignore_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        dx_unref(ctx);
}

/* Resizes the exec's pty. */
static int
dx_op_resize(struct backend_proc *bp, unsigned short rows, unsigned short cols)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        char *path;
        int rc;

        if (!p->tty)
                return -ENOTTY;
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
static void
dx_op_release(struct backend_proc *bp)
{
        struct dx_proc *p = (struct dx_proc *) bp;

        if (!p || p->released)
                return;
        p->released = true;
        docker_hijack_close(&p->hj);
        dx_unref(p);
}

static const struct backend_proc_ops dx_ops = {
        .write = dx_op_write,
        .signal = dx_op_signal,
        .kill = dx_op_kill,
        .pause = dx_op_pause,
        .resume = dx_op_resume,
        .resize = dx_op_resize,
        .release = dx_op_release,
};
