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

#define DX_HELPER_MAX_OUT (64u << 20)
#define DX_HS_MAX         (64u << 10)

enum dx_phase {
        DX_CREATE,
        DX_CONNECT,
        DX_HANDSHAKE,
        DX_STREAM,
        DX_INSPECT,
        DX_FINISH,
        DX_DONE,
};

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
        union {
                uv_handle_t h;
                uv_stream_t s;
                uv_pipe_t pipe;
                uv_tcp_t tcp;
        } conn;
        bool conn_init;
        uv_connect_t connect_req;
        uv_shutdown_t shutdown_req;
        uv_timer_t timer;
        bool timer_init;
        struct buf hs;
        unsigned char fh[8];
        size_t fh_len;
        uint32_t frame_left;
        int frame_stream;
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

struct dx_write {
        uv_write_t req;
        struct backend_proc *p;
        char data[];
};

/* $0 = pid file; the exec becomes its own command through `exec`, keeping the pid. */
static const char dx_wrap[] = "{ echo $$ >\"$0\"; } 2>/dev/null || { mkdir -p \"${0%/*}\" && "
                              "echo $$ >\"$0\"; } 2>/dev/null; exec \"$@\"";

/* $0 = mode (signal|kill) $1 = signal number $2 = pid file $3 = grace in 50 ms steps.
 * Prints the number of survivors. Pure POSIX sh plus kill and sleep. */
static const char dx_kill_script[] =
        "mode=$0 sig=$1 f=$2 g=$3 n=0\n"
        "while [ ! -s \"$f\" ]; do n=$((n+1)); [ $n -gt 50 ] && { echo 0; exit 0; }; sleep 0.02; "
        "done\n"
        "read -r sid <\"$f\"\n"
        "tree() {\n"
        "  s=\"|$sid|\" ch=1\n"
        "  while [ $ch = 1 ]; do ch=0\n"
        "    for d in /proc/[0-9]*; do p=${d#/proc/}\n"
        "      case $s in *\"|$p|\"*) continue;; esac\n"
        "      { read -r l <\"$d/stat\"; } 2>/dev/null || continue\n"
        "      set -- ${l##*) }\n"
        "      [ \"$1\" = Z ] && continue\n"
        "      case $s in *\"|$2|\"*|*\"|$3|\"*|*\"|$4|\"*) s=\"$s$p|\" ch=1;; esac\n"
        "    done\n"
        "  done\n"
        "  live='' IFS='|'\n"
        "  for p in $s; do [ -n \"$p\" ] || continue\n"
        "    { read -r l </proc/$p/stat; } 2>/dev/null || continue\n"
        "    IFS=' '; set -- ${l##*) }; IFS='|'\n"
        "    [ \"$1\" = Z ] || live=\"$live $p\"\n"
        "  done\n"
        "  unset IFS\n"
        "}\n"
        "tree\n"
        "[ -n \"$live\" ] && kill -\"$sig\" $live 2>/dev/null\n"
        "[ \"$mode\" = signal ] && { echo 0; exit 0; }\n"
        "i=0\n"
        "while [ -n \"$live\" ] && [ $i -lt \"$g\" ]; do sleep 0.05; i=$((i+1)); tree; done\n"
        "i=0\n"
        "while [ -n \"$live\" ] && [ $i -lt 40 ]; do kill -9 $live 2>/dev/null; sleep 0.05; "
        "i=$((i+1)); tree; done\n"
        "set -- $live; echo $#\n";

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

static void dx_connect(struct backend_proc *p);
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
        sbx_error_clear(&p->fail_err);
        buf_free(&p->hs);
        buf_free(&p->pending_in);
        buf_free(&p->state);
        buf_free(&p->hout);
        free(p);
}

static void
dx_handle_close_cb(uv_handle_t *h)
{
        dx_unref(h->data);
}

static void
dx_close_conn(struct backend_proc *p)
{
        if (!p->conn_init || uv_is_closing(&p->conn.h))
                return;
        uv_close(&p->conn.h, dx_handle_close_cb);
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
        dx_close_conn(p);
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

/* Demultiplexes the framed stream (no tty). */
static void
dx_demux(struct backend_proc *p, const char *data, size_t len)
{
        while (len && p->phase == DX_STREAM) {
                if (p->frame_left) {
                        size_t n = MIN(len, (size_t) p->frame_left);
                        dx_output(p, p->frame_stream, data, n);
                        p->frame_left -= (uint32_t) n;
                        data += n;
                        len -= n;
                        continue;
                }
                size_t n = MIN(len, sizeof(p->fh) - p->fh_len);
                memcpy(p->fh + p->fh_len, data, n);
                p->fh_len += n;
                data += n;
                len -= n;
                if (p->fh_len < sizeof(p->fh))
                        continue;
                p->fh_len = 0;
                p->frame_stream = p->fh[0];
                p->frame_left = (uint32_t) p->fh[4] << 24 | (uint32_t) p->fh[5] << 16 |
                                (uint32_t) p->fh[6] << 8 | p->fh[7];
        }
}

static void
dx_stream_bytes(struct backend_proc *p, const char *data, size_t len)
{
        if (p->tty)
                dx_output(p, 1, data, len);
        else
                dx_demux(p, data, len);
}

static void
dx_write_cb(uv_write_t *req, int status)
{
        struct dx_write *w = (struct dx_write *) req;

        dx_unref(w->p);
        free(w);
}

static void
dx_shutdown_cb(uv_shutdown_t *req, int status)
{
        dx_unref(req->data);
}

static void
dx_send(struct backend_proc *p, const void *data, size_t len)
{
        struct dx_write *w = xmalloc(sizeof(*w) + len);
        uv_buf_t b;

        memcpy(w->data, data, len);
        w->p = p;
        b = uv_buf_init(w->data, (unsigned) len);
        dx_ref(p);
        if (uv_write(&w->req, &p->conn.s, &b, 1, dx_write_cb) < 0) {
                dx_unref(p);
                free(w);
        }
}

static void
dx_flush_stdin(struct backend_proc *p)
{
        if (p->phase != DX_STREAM)
                return;
        if (p->pending_in.len) {
                dx_send(p, p->pending_in.data, p->pending_in.len);
                buf_consume(&p->pending_in, p->pending_in.len);
        }
        if (p->eof_wanted && !p->eof_sent) {
                p->eof_sent = true;
                if (p->tty) {
                        dx_send(p, "\004", 1); /* a pty has no half-close: ^D */
                        return;
                }
                p->shutdown_req.data = p;
                dx_ref(p);
                if (uv_shutdown(&p->shutdown_req, &p->conn.s, dx_shutdown_cb) < 0)
                        dx_unref(p);
        }
}

static void
dx_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
        static char slab[64 * 1024];

        b->base = slab;
        b->len = sizeof(slab);
}

/* Parses the start answer; returns bytes of stream data following it, or -1 on failure. */
static int
dx_handshake(struct backend_proc *p)
{
        struct http1_head h;
        int rc = http1_parse_head(p->hs.data, p->hs.len, DX_HS_MAX, &h);

        if (rc == 0)
                return 0;
        if (rc < 0 || (h.status != 101 && h.status != 200)) {
                char *msg = xasprintf("docker exec start failed: %.*s", (int) MIN(p->hs.len, 300u),
                                      p->hs.data);
                dx_fail(p, msg);
                free(msg);
                return -1;
        }
        size_t hlen = h.head_len;
        p->phase = DX_STREAM;
        dx_flush_stdin(p);
        if (p->hs.len > hlen)
                dx_stream_bytes(p, p->hs.data + hlen, p->hs.len - hlen);
        buf_free(&p->hs);
        return 0;
}

static void
dx_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
        struct backend_proc *p = s->data;

        if (n < 0) {
                uv_read_stop(s);
                dx_close_conn(p);
                if (p->phase == DX_HANDSHAKE)
                        dx_fail(p, "docker closed the exec connection before answering");
                else if (p->phase == DX_STREAM)
                        dx_after_stream(p);
                return;
        }
        if (p->phase == DX_HANDSHAKE) {
                buf_append(&p->hs, b->base, (size_t) n);
                if (dx_handshake(p) < 0 && p->phase == DX_HANDSHAKE)
                        dx_fail(p, "docker exec start: malformed answer");
                return;
        }
        if (p->phase == DX_STREAM)
                dx_stream_bytes(p, b->base, (size_t) n);
}

static void
dx_connect_cb(uv_connect_t *req, int status)
{
        struct backend_proc *p = req->data;
        char *body, *hdr;

        dx_unref(p);
        if (p->phase != DX_CONNECT)
                return;
        if (status < 0) {
                char *msg = xasprintf("cannot connect to docker: %s", uv_strerror(status));
                dx_fail(p, msg);
                free(msg);
                return;
        }
        body = xasprintf("{\"Detach\":false,\"Tty\":%s}", p->tty ? "true" : "false");
        hdr = xasprintf("POST /" DOCKER_API "/exec/%s/start HTTP/1.1\r\nHost: docker\r\n"
                        "Content-Type: application/json\r\nConnection: Upgrade\r\n"
                        "Upgrade: tcp\r\nContent-Length: %zu\r\n\r\n%s",
                        p->deid, strlen(body), body);
        p->phase = DX_HANDSHAKE;
        dx_send(p, hdr, strlen(hdr));
        free(hdr);
        free(body);
        if (!p->paused)
                uv_read_start(&p->conn.s, dx_alloc_cb, dx_read_cb);
}

static void
dx_connect(struct backend_proc *p)
{
        int rc;

        p->phase = DX_CONNECT;
        if (docker.sock_path) {
                uv_pipe_init(docker.loop, &p->conn.pipe, 0);
        } else {
                uv_tcp_init(docker.loop, &p->conn.tcp);
        }
        p->conn.h.data = p;
        p->conn_init = true;
        dx_ref(p); /* the handle */
        p->connect_req.data = p;
        dx_ref(p);
        if (docker.sock_path) {
                uv_pipe_connect(&p->connect_req, &p->conn.pipe, docker.sock_path, dx_connect_cb);
                return;
        }
        struct sockaddr_storage ss;
        if (uv_ip4_addr(docker.tcp_host, docker.tcp_port, (struct sockaddr_in *) &ss) < 0 &&
            uv_ip6_addr(docker.tcp_host, docker.tcp_port, (struct sockaddr_in6 *) &ss) < 0) {
                dx_unref(p);
                dx_fail(p, "docker exec over tcp needs a numeric address in DOCKER_HOST");
                return;
        }
        rc = uv_tcp_connect(&p->connect_req, &p->conn.tcp, (struct sockaddr *) &ss, dx_connect_cb);
        if (rc < 0) {
                dx_unref(p);
                dx_fail(p, uv_strerror(rc));
        }
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
        if (dx_launch(p, spec, err) < 0) {
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

struct dx_kill {
        struct backend_proc *p;
        backend_kill_cb cb;
        void *ctx;
};

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
        char sigs[16], steps[16];
        char *argv[] = {"sh",  "-c", (char *) dx_kill_script, (char *) mode, sigs, p->pidfile,
                        steps, NULL};

        snprintf(sigs, sizeof(sigs), "%d", sig);
        snprintf(steps, sizeof(steps), "%u", (grace_ms + 49) / 50);
        k->p = p;
        k->cb = cb;
        k->ctx = ctx;
        dx_ref(p);
        p->signalled = sig;
        docker_helper(p->sb, argv, NULL, 0, k, dx_kill_cb);
}

/* Sends sig to the exec's tree inside the container. */
int
docker_exec_signal(struct backend_proc *p, int sig)
{
        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (strcmp(p->sb->state, "running") != 0)
                return -ESRCH;
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
        dx_kill_run(p, "kill", SIGTERM, grace_ms, ctx, cb);
}

/* Stops reading output. */
void
docker_exec_pause(struct backend_proc *p)
{
        p->paused = true;
        if (p->conn_init && !uv_is_closing(&p->conn.h) && p->phase >= DX_HANDSHAKE)
                uv_read_stop(&p->conn.s);
}

/* Restarts reading output. */
void
docker_exec_resume(struct backend_proc *p)
{
        p->paused = false;
        if (p->conn_init && !uv_is_closing(&p->conn.h) && p->phase >= DX_HANDSHAKE &&
            p->phase <= DX_STREAM)
                uv_read_start(&p->conn.s, dx_alloc_cb, dx_read_cb);
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
        dx_close_conn(p);
        dx_unref(p);
}
