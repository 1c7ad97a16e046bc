/* ctl_exec.c — `sandboxctl exec`: run a command, stream its output live, feed it stdin, exit
 * with its status. */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "client/ctl_conn.h"
#include "client/ctl_util.h"

#define CTL_EXEC_STDIN_INLINE (4u << 20)  /* stdin up to this size goes inline in the request */
#define CTL_EXEC_CHUNK        (64u << 10) /* process.write chunk */
#define CTL_EXEC_MAX_WRITES   4           /* process.write requests in flight */
#define CTL_EXEC_MAX_ENV      1024
#define CTL_EXEC_MAX_TAG      256
#define CTL_EXEC_LIST_MS      25 /* process.list interval while looking for our exec_id */

enum {
        OPT_BACKGROUND = CTL_OPT_LONG,
        OPT_TIMEOUT,
        OPT_PTY,
        OPT_TAG,
        OPT_ARGV,
};

struct ctl_exec_opts {
        const char *sandbox, *cwd, *tag;
        double timeout;
        bool has_timeout, background, pty, argv_mode, no_stdin;
        json_t *env; /* owned object */
};

/* One run: what has been streamed, and the stdin pump. */
struct ctl_exec {
        struct ctl_ctx *ctx;
        struct ctl_conn *conn;
        bool base64;          /* output_encoding base64 was requested */
        char *exec_id;        /* once known */
        char *tag;            /* our tag, to find the exec_id in process.list */
        uint64_t next_off[2]; /* next expected offset of stdout / stderr */
        uint64_t gap[2];      /* bytes missing from the stream */
        bool stream_stdin;    /* stdin goes through process.write */
        bool stdin_done;      /* EOF sent, or stdin closed on the other side */
        struct buf in;        /* stdin read but not yet sent */
        int64_t writes[CTL_EXEC_MAX_WRITES];
        size_t nwrites;
        int64_t list_id; /* process.list in flight, or 0 */
        uint64_t next_list_ms;
        bool raw; /* the terminal is in raw mode (interactive --pty) */
        struct termios saved;
};

static volatile sig_atomic_t ctl_exec_winch;

static const struct ctl_help ctl_exec_help = {
        "exec",
        "exec [OPTIONS] [--] COMMAND [ARG...]",
        "Runs COMMAND in a sandbox (the default sandbox unless -s), streams its output to stdout "
        "and stderr,\nand exits with its exit status (128+N when killed by signal N, 124 when it "
        "timed out, 125\nwhen sandboxctl or sandboxd failed). One word is a shell command; "
        "several words are\nquoted each, so the command runs as typed in a local shell; "
        "--argv runs them without a shell. When stdin is not a terminal it is sent "
        "to the command.",
        "  -s, --sandbox ID      sandbox id or name\n"
        "      --background      start it in the background and print its exec_id\n"
        "      --timeout S       kill it after S seconds (0: none, background only)\n"
        "  -w, --cwd DIR         working directory\n"
        "  -e, --env K=V         environment variable (repeatable)\n"
        "      --pty             run it on a pseudo-terminal (interactive when stdin is one)\n"
        "      --tag T           tag shown by ps\n"
        "      --argv            run the words as an argv, without a shell\n"
        "  -n, --no-stdin        do not read stdin (the command gets EOF)\n",
};

static int
ctl_exec_env(struct ctl_exec_opts *o, const char *arg)
{
        const char *eq = strchr(arg, '=');
        size_t klen = eq ? (size_t) (eq - arg) : 0;

        if (!eq || klen == 0 ||
            strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789_") != klen ||
            (arg[0] >= '0' && arg[0] <= '9'))
                return ctl_util_opt_error("exec", "bad --env '%s' (want NAME=VALUE)", arg);
        if (json_object_size(o->env) >= CTL_EXEC_MAX_ENV)
                return ctl_util_opt_error("exec", "too many --env (max %d)", CTL_EXEC_MAX_ENV);
        char *key = xstrndup(arg, klen);
        json_object_set_new(o->env, key, json_string(eq + 1));
        free(key);
        return 0;
}

static int
ctl_exec_opt_cb(void *st, int opt, const char *arg)
{
        struct ctl_exec_opts *o = st;

        switch (opt) {
        case 's':
                o->sandbox = arg;
                return *arg ? 0 : ctl_util_opt_error("exec", "empty --sandbox");
        case 'w':
                o->cwd = arg;
                return *arg ? 0 : ctl_util_opt_error("exec", "empty --cwd");
        case 'e':
                return ctl_exec_env(o, arg);
        case 'n':
                o->no_stdin = true;
                return 0;
        case OPT_BACKGROUND:
                o->background = true;
                return 0;
        case OPT_TIMEOUT:
                o->has_timeout = true;
                if (ctl_util_parse_seconds(arg, &o->timeout) == 0)
                        return 0;
                return ctl_util_opt_error("exec", "bad --timeout '%s' (seconds)", arg);
        case OPT_PTY:
                o->pty = true;
                return 0;
        case OPT_TAG:
                o->tag = arg;
                if (*arg && strlen(arg) <= CTL_EXEC_MAX_TAG)
                        return 0;
                return ctl_util_opt_error("exec", "bad --tag (1 to %d bytes)", CTL_EXEC_MAX_TAG);
        case OPT_ARGV:
                o->argv_mode = true;
                return 0;
        }
        return -1;
}

/* Appends word to b quoted for the shell, unless it needs no quotes. */
static void
ctl_exec_quote(struct buf *b, const char *w)
{
        static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_@%+=:,./-";

        if (*w && strspn(w, plain) == strlen(w)) {
                buf_append(b, w, strlen(w));
                return;
        }
        buf_append(b, "'", 1);
        for (const char *q; (q = strchr(w, '\'')); w = q + 1) {
                buf_append(b, w, (size_t) (q - w));
                buf_append(b, "'\\''", 4);
        }
        buf_append(b, w, strlen(w));
        buf_append(b, "'", 1);
}

/* One word is a shell command as it is ('cd src && make'); several words are quoted each, so
 * that the command runs exactly as it would typed after `sandboxctl exec --` in a local shell
 * (grep -l "a b" f), not joined ssh-style. */
static json_t *
ctl_exec_command(const struct ctl_exec_opts *o, int argc, char **argv)
{
        json_t *a;
        struct buf b = {0};

        if (o->argv_mode) {
                a = json_array();
                for (int i = 0; i < argc; i++) {
                        json_t *w = json_string(argv[i]);
                        if (!w || json_array_append_new(a, w) < 0) {
                                json_decref(a);
                                return NULL;
                        }
                }
                return a;
        }
        if (argc == 1)
                return json_string(argv[0]);
        for (int i = 0; i < argc; i++) {
                if (i)
                        buf_append(&b, " ", 1);
                ctl_exec_quote(&b, argv[i]);
        }
        buf_append(&b, "", 1);
        a = json_string(b.data);
        buf_free(&b);
        return a;
}

static void
ctl_exec_pty_size(json_t *params)
{
        struct winsize ws;

        if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 ||
             ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) &&
            ws.ws_row > 0 && ws.ws_col > 0)
                json_object_set_new(params, "pty_size",
                                    json_pack("{s:i, s:i}", "rows", ws.ws_row, "cols", ws.ws_col));
}

/* The exec params, without stdin. New; NULL with a printed error when the words are invalid. */
static json_t *
ctl_exec_params(struct ctl_exec *x, const struct ctl_exec_opts *o, int argc, char **argv)
{
        json_t *p = json_object();
        json_t *cmd = ctl_exec_command(o, argc, argv);

        if (!cmd) {
                json_decref(p);
                ctl_util_usage_error("exec", "the command is not valid UTF-8");
                return NULL;
        }
        if (o->sandbox)
                json_object_set_new(p, "sandbox", json_string(o->sandbox));
        json_object_set_new(p, o->argv_mode ? "argv" : "command", cmd);
        if (o->cwd)
                json_object_set_new(p, "cwd", json_string(o->cwd));
        if (json_object_size(o->env))
                json_object_set(p, "env", o->env);
        if (o->has_timeout)
                json_object_set_new(p, "timeout_s",
                                    o->timeout == (double) (long long) o->timeout
                                            ? json_integer((json_int_t) o->timeout)
                                            : json_real(o->timeout));
        if (o->background) {
                /* It prints the exec_id and leaves: output is for `logs` to fetch. */
                json_object_set_new(p, "background", json_true());
                json_object_set_new(p, "stream", json_false());
        }
        if (o->pty) {
                json_object_set_new(p, "pty", json_true());
                ctl_exec_pty_size(p);
        }
        if (x->tag)
                json_object_set_new(p, "tag", json_string(x->tag));
        if (x->ctx->json)
                json_object_set_new(p, "stream", json_false());
        else if (x->base64)
                json_object_set_new(p, "output_encoding", json_string("base64"));
        return p;
}

/* Reads stdin into x->in up to limit bytes; 1 at EOF, 0 when more is left, -errno. */
static int
ctl_exec_slurp(struct ctl_exec *x, size_t limit)
{
        while (x->in.len < limit) {
                buf_reserve(&x->in, MIN(limit - x->in.len, CTL_EXEC_CHUNK));
                ssize_t n = read(STDIN_FILENO, x->in.data + x->in.len,
                                 MIN(limit - x->in.len, x->in.cap - x->in.len - 1));
                if (n == 0)
                        return 1;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                x->in.len += (size_t) n;
        }
        return 0;
}

/* Decides how stdin reaches the command: inline, streamed, interactive, or not at all. */
static int
ctl_exec_stdin(struct ctl_exec *x, const struct ctl_exec_opts *o, json_t *params)
{
        int rc;

        if (o->pty && isatty(STDIN_FILENO) && !o->background && !o->no_stdin) {
                x->stream_stdin = x->raw = true;
        } else if (o->no_stdin || isatty(STDIN_FILENO)) {
                return 0;
        } else if ((rc = ctl_exec_slurp(x, CTL_EXEC_STDIN_INLINE)) < 0) {
                fprintf(stderr, "sandboxctl: exec: cannot read stdin: %s\n", strerror(-rc));
                return -1;
        } else if (rc == 1) {
                char *b64 = ctl_util_b64_encode(x->in.data, x->in.len);
                if (x->in.len)
                        json_object_set_new(params, "stdin_base64", json_string(b64));
                free(b64);
                buf_free(&x->in);
                return 0;
        } else if (o->background) {
                fprintf(stderr,
                        "sandboxctl: exec: stdin over %u bytes cannot go with --background\n",
                        CTL_EXEC_STDIN_INLINE);
                return -1;
        } else {
                x->stream_stdin = true;
        }
        json_object_set_new(params, "stdin_open", json_true());
        return 0;
}

static void
ctl_exec_write_out(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return; /* stdout gone: SIGPIPE already ended us, or it is not writable */
                p += w;
                n -= (size_t) w;
        }
}

/* One exec.output chunk: decode, drop what was already shown, note gaps, write. */
static void
ctl_exec_output(struct ctl_exec *x, json_t *params)
{
        const char *stream = ctl_util_str(params, "stream", "stdout");
        int i = strcmp(stream, "stderr") == 0 ? 1 : 0;
        json_t *data = json_object_get(params, "data");
        json_t *off = json_object_get(params, "offset");
        struct buf b = {0};
        uint64_t o;

        if (!json_is_string(data))
                return;
        if (x->base64) {
                if (ctl_util_b64_decode(json_string_value(data), json_string_length(data), &b) < 0)
                        return;
        } else {
                buf_append(&b, json_string_value(data), json_string_length(data));
        }
        o = json_is_integer(off) && json_integer_value(off) >= 0
                    ? (uint64_t) json_integer_value(off)
                    : x->next_off[i];
        if (o > x->next_off[i])
                x->gap[i] += o - x->next_off[i];
        size_t skip = o < x->next_off[i] ? (size_t) MIN(x->next_off[i] - o, b.len) : 0;
        ctl_exec_write_out(i ? STDERR_FILENO : STDOUT_FILENO, b.data + skip, b.len - skip);
        x->next_off[i] = MAX(x->next_off[i], o + b.len);
        buf_free(&b);
}

static void
ctl_exec_notify_cb(void *arg, const char *method, json_t *params)
{
        struct ctl_exec *x = arg;
        const char *id = ctl_util_str(params, "exec_id", NULL);

        if (strcmp(method, "sandbox.progress") == 0) {
                char *m = ctl_util_escape(ctl_util_str(params, "message", ""), 300);
                fprintf(stderr, "sandboxctl: %s: %s\n", ctl_util_str(params, "phase", "progress"),
                        m);
                free(m);
                return;
        }
        if (!id || (strcmp(method, "exec.output") != 0 && strcmp(method, "exec.started") != 0))
                return;
        if (!x->exec_id)
                x->exec_id = xstrdup(id);
        if (strcmp(id, x->exec_id) == 0 && strcmp(method, "exec.output") == 0)
                ctl_exec_output(x, params);
}

/* Looks for our tag among running processes (the exec_id of a foreground exec is not known
 * until its first output or its end, but stdin must be fed before that). */
static int
ctl_exec_find_id(struct ctl_exec *x, struct sbx_error *err)
{
        json_t *res = NULL, *p;
        size_t i;

        if (x->list_id && ctl_conn_take(x->conn, x->list_id, &res, err)) {
                x->list_id = 0;
                sbx_error_clear(err); /* a failed look-up is retried */
                json_array_foreach(json_object_get(res, "processes"), i, p)
                {
                        const char *tag = ctl_util_str(p, "tag", "");
                        const char *id = ctl_util_str(p, "exec_id", NULL);
                        if (!x->exec_id && id && strcmp(tag, x->tag) == 0)
                                x->exec_id = xstrdup(id);
                }
                json_decref(res);
        }
        if (x->exec_id || x->list_id || util_now_ms() < x->next_list_ms)
                return 0;
        x->next_list_ms = util_now_ms() + CTL_EXEC_LIST_MS;
        x->list_id =
                ctl_conn_send(x->conn, "process.list", json_pack("{s:s}", "state", "running"), err);
        return x->list_id < 0 ? -1 : 0;
}

/* Sends the next stdin chunk from x->in, or EOF; steals nothing. */
static int
ctl_exec_send_chunk(struct ctl_exec *x, bool eof, struct sbx_error *err)
{
        size_t n = MIN(x->in.len, CTL_EXEC_CHUNK);
        char *b64 = ctl_util_b64_encode(x->in.data, n);
        json_t *p = json_pack("{s:s, s:s}", "exec_id", x->exec_id, "data_base64", b64);
        int64_t id;

        free(b64);
        buf_consume(&x->in, n);
        if (eof && x->in.len == 0) {
                json_object_set_new(p, "eof", json_true());
                x->stdin_done = true;
        }
        id = ctl_conn_send(x->conn, "process.write", p, err);
        if (id < 0)
                return -1;
        x->writes[x->nwrites++] = id;
        return 0;
}

/* Collects process.write answers: "stdin not open" (the command closed it or ended) stops the
 * pump quietly; other errors are shown and stop it too. */
static void
ctl_exec_reap_writes(struct ctl_exec *x)
{
        for (size_t i = 0; i < x->nwrites;) {
                struct sbx_error err = {0};
                json_t *res = NULL;
                if (!ctl_conn_take(x->conn, x->writes[i], &res, &err)) {
                        i++;
                        continue;
                }
                if (err.code && !x->stdin_done) {
                        if (err.code != SBX_E_STDIN_CLOSED)
                                ctl_util_print_error(&err);
                        x->stdin_done = true;
                }
                sbx_error_clear(&err);
                json_decref(res);
                x->writes[i] = x->writes[--x->nwrites];
        }
}

/* Reads what stdin has and sends it; called when poll said stdin is readable. */
static int
ctl_exec_pump(struct ctl_exec *x, bool readable, struct sbx_error *err)
{
        bool eof = false;

        if (readable && x->in.len == 0) {
                buf_reserve(&x->in, CTL_EXEC_CHUNK);
                ssize_t n = read(STDIN_FILENO, x->in.data, CTL_EXEC_CHUNK);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        return 0;
                eof = n <= 0;
                x->in.len = n > 0 ? (size_t) n : 0;
        }
        if (x->in.len == 0 && !eof)
                return 0;
        return ctl_exec_send_chunk(x, eof, err);
}

static void
ctl_exec_winch_cb(int sig)
{
        (void) sig;
        ctl_exec_winch = 1;
}

static void
ctl_exec_resize(struct ctl_exec *x)
{
        struct winsize ws;
        struct sbx_error err = {0};
        int64_t id;

        ctl_exec_winch = 0;
        if (!x->exec_id || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
                return;
        id = ctl_conn_send(x->conn, "process.resize",
                           json_pack("{s:s, s:i, s:i}", "exec_id", x->exec_id, "rows", ws.ws_row,
                                     "cols", ws.ws_col),
                           &err);
        if (id > 0)
                ctl_conn_forget(x->conn, id);
        sbx_error_clear(&err);
}

static void
ctl_exec_raw_on(struct ctl_exec *x)
{
        struct sigaction sa = {.sa_handler = ctl_exec_winch_cb};
        struct termios t;

        if (tcgetattr(STDIN_FILENO, &x->saved) < 0) {
                x->raw = false;
                return;
        }
        t = x->saved;
        cfmakeraw(&t);
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
        sigaction(SIGWINCH, &sa, NULL); /* no SA_RESTART: poll() returns to resize */
}

/* Waits for the exec's response while streaming output and feeding stdin. */
static json_t *
ctl_exec_loop(struct ctl_exec *x, int64_t id, struct sbx_error *err)
{
        json_t *res = NULL;

        while (!ctl_conn_take(x->conn, id, &res, err)) {
                bool feed = x->stream_stdin && !x->stdin_done && x->exec_id &&
                            x->nwrites < CTL_EXEC_MAX_WRITES;
                struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
                int timeout = x->stream_stdin && !x->exec_id ? CTL_EXEC_LIST_MS : -1;

                if (feed && x->in.len > 0)
                        timeout = 0;
                if (ctl_conn_poll(x->conn, &in, feed && x->in.len == 0, timeout, err) < 0)
                        return NULL;
                if (ctl_exec_winch)
                        ctl_exec_resize(x);
                ctl_exec_reap_writes(x);
                if (x->stream_stdin && !x->exec_id && ctl_exec_find_id(x, err) < 0)
                        return NULL;
                if (feed && ctl_exec_pump(x, x->in.len == 0 && in.revents, err) < 0)
                        return NULL;
        }
        return res;
}

/* Notes on stderr what the output alone does not say; returns the exit status. */
static int
ctl_exec_finish(struct ctl_exec *x, json_t *res)
{
        static const char *const names[] = {"stdout", "stderr"};
        int status = ctl_util_exit_status(res);

        for (int i = 0; i < 2; i++) {
                char key[32];
                snprintf(key, sizeof(key), "%s_bytes", names[i]);
                json_t *total = json_object_get(res, key);
                const char *data = ctl_util_str(res, names[i], NULL);
                if (x->next_off[i] == 0 && data && *data) {
                        /* Nothing was streamed: show the result's copy (head and tail). */
                        json_t *copy = json_pack("{s:s, s:s, s:i}", "stream", names[i], "data",
                                                 data, "offset", 0);
                        ctl_exec_output(x, copy);
                        json_decref(copy);
                }
                if (json_is_integer(total) &&
                    (uint64_t) json_integer_value(total) > x->next_off[i] - x->gap[i])
                        fprintf(stderr,
                                "sandboxctl: note: %s incomplete: %llu of %lld bytes shown\n",
                                names[i], (unsigned long long) (x->next_off[i] - x->gap[i]),
                                (long long) json_integer_value(total));
        }
        if (json_is_true(json_object_get(res, "timed_out")))
                fprintf(stderr, "sandboxctl: note: the command timed out and was killed\n");
        if (json_is_true(json_object_get(res, "oom_killed")))
                fprintf(stderr, "sandboxctl: note: the command was killed: out of memory\n");
        return status;
}

static int
ctl_exec_run(struct ctl_exec *x, json_t *params)
{
        struct sbx_error err = {0};
        json_t *res;
        int64_t id;
        int status;

        ctl_conn_set_notify(x->conn, ctl_exec_notify_cb, x);
        if (x->raw)
                ctl_exec_raw_on(x);
        id = ctl_conn_send(x->conn, "exec", params, &err);
        res = id < 0 ? NULL : ctl_exec_loop(x, id, &err);
        if (x->raw)
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &x->saved);
        if (!res) {
                ctl_util_print_error(&err);
                sbx_error_clear(&err);
                return CTL_EXIT_EXEC_ERROR;
        }
        if (x->ctx->json) {
                ctl_util_print_json(stdout, res);
                status = json_is_true(json_object_get(res, "background"))
                                 ? CTL_EXIT_OK
                                 : ctl_util_exit_status(res);
        } else if (json_is_true(json_object_get(res, "background"))) {
                printf("%s\n", ctl_util_str(res, "exec_id", ""));
                status = CTL_EXIT_OK;
        } else {
                status = ctl_exec_finish(x, res);
        }
        json_decref(res);
        return status;
}

/* `sandboxctl exec`. */
int
ctl_exec_main(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"sandbox", required_argument, NULL, 's'},
                {"background", no_argument, NULL, OPT_BACKGROUND},
                {"timeout", required_argument, NULL, OPT_TIMEOUT},
                {"cwd", required_argument, NULL, 'w'},
                {"env", required_argument, NULL, 'e'},
                {"pty", no_argument, NULL, OPT_PTY},
                {"tag", required_argument, NULL, OPT_TAG},
                {"argv", no_argument, NULL, OPT_ARGV},
                {"no-stdin", no_argument, NULL, 'n'},
                {NULL, 0, NULL, 0},
        };
        struct ctl_exec_opts o = {.env = json_object()};
        struct ctl_exec x = {.ctx = ctx, .base64 = true};
        json_t *params = NULL;
        int first, rc;

        rc = ctl_util_parse(ctx, &ctl_exec_help, "+s:w:e:n", opts, argc, argv, ctl_exec_opt_cb, &o,
                            &first);
        if (rc < 0 && first >= argc)
                rc = ctl_util_usage_error("exec", "no command given");
        if (rc < 0 && o.has_timeout && o.timeout == 0 && !o.background)
                rc = ctl_util_usage_error("exec", "--timeout 0 (none) needs --background");
        if (rc < 0) {
                x.tag = o.tag ? xstrdup(o.tag) : NULL;
                params = ctl_exec_params(&x, &o, argc - first, argv + first);
                rc = params ? -1 : CTL_EXIT_USAGE;
        }
        if (rc < 0 && ctl_exec_stdin(&x, &o, params) < 0)
                rc = CTL_EXIT_EXEC_ERROR;
        if (rc < 0 && x.stream_stdin && !x.tag) {
                char hex[17];
                util_random_hex(hex, 16);
                x.tag = xasprintf("sandboxctl-%s", hex);
                json_object_set_new(params, "tag", json_string(x.tag));
        }
        if (rc < 0)
                rc = (x.conn = ctl_connect(ctx)) ? ctl_exec_run(&x, json_incref(params))
                                                 : CTL_EXIT_EXEC_ERROR;
        json_decref(params);
        json_decref(o.env);
        buf_free(&x.in);
        free(x.exec_id);
        free(x.tag);
        return rc;
}
