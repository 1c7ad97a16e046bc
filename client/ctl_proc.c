/* ctl_proc.c — process commands: ps, logs, kill, wait. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl_conn.h"
#include "client/ctl_table.h"
#include "client/ctl_util.h"

#define CTL_PROC_READ_MAX   65536
#define CTL_PROC_FOLLOW_MS  10000 /* process.read long-poll per request */
#define CTL_PROC_WAIT_CHUNK 60000 /* process.wait per request when waiting without a limit */
#define CTL_PROC_CMD_MAX    60    /* bytes of a command shown in ps */

enum {
        OPT_ALL = CTL_OPT_LONG,
        OPT_STDERR,
        OPT_STDOUT,
        OPT_TIMEOUT,
        OPT_GRACE,
};

struct ctl_proc_opts {
        const char *cmd;
        const char *sandbox, *signal;
        bool all, follow, err_only, out_only, has_timeout;
        double timeout;
        long long grace_ms;
};

static int
ctl_proc_opt_cb(void *st, int opt, const char *arg)
{
        struct ctl_proc_opts *o = st;

        switch (opt) {
        case 's':
                o->sandbox = arg;
                return *arg ? 0 : ctl_util_opt_error(o->cmd, "empty --sandbox");
        case 'a':
        case OPT_ALL:
                o->all = true;
                return 0;
        case 'f':
                o->follow = true;
                return 0;
        case OPT_STDERR:
                o->err_only = true;
                return 0;
        case OPT_STDOUT:
                o->out_only = true;
                return 0;
        case OPT_TIMEOUT:
                o->has_timeout = true;
                if (ctl_util_parse_seconds(arg, &o->timeout) == 0 && o->timeout <= 2e6)
                        return 0;
                return ctl_util_opt_error(o->cmd, "bad --timeout '%s' (seconds)", arg);
        case OPT_GRACE:
                if (ctl_util_parse_uint(arg, 3600000, &o->grace_ms) == 0)
                        return 0;
                return ctl_util_opt_error(o->cmd, "bad --grace '%s' (milliseconds)", arg);
        case 'S':
                o->signal = arg;
                return *arg ? 0 : ctl_util_opt_error(o->cmd, "empty --signal");
        }
        return -1;
}

/* Parses options and exactly `want` operands (want < 0: any number). Returns -1 to go on. */
static int
ctl_proc_parse(struct ctl_ctx *ctx, const struct ctl_help *help, const char *shortopts,
               const struct option *opts, struct ctl_proc_opts *o, int argc, char **argv, int want,
               int *first)
{
        int rc;

        o->cmd = argv[0];
        rc = ctl_util_parse(ctx, help, shortopts, opts, argc, argv, ctl_proc_opt_cb, o, first);
        if (rc < 0 && want >= 0 && argc - *first != want)
                rc = ctl_util_usage_error(
                        argv[0], want ? "expected %d argument(s)" : "unexpected argument", want);
        return rc;
}

static char *
ctl_proc_status(const json_t *p)
{
        json_t *code = json_object_get(p, "exit_code");
        const char *sig = ctl_util_str(p, "signal", NULL);

        if (json_is_true(json_object_get(p, "timed_out")))
                return xstrdup("timed out");
        if (json_is_integer(code))
                return xasprintf("exit %lld", (long long) json_integer_value(code));
        if (sig)
                return xstrdup(sig);
        return xstrdup("-");
}

static char *
ctl_proc_command(const json_t *p)
{
        json_t *argv = json_object_get(p, "argv");
        struct buf b = {0};
        size_t i;
        json_t *w;

        if (!json_is_array(argv))
                return xstrdup(ctl_util_str(p, "command", "-"));
        buf_append(&b, "", 0);
        json_array_foreach(argv, i, w)
        {
                if (i)
                        buf_append(&b, " ", 1);
                buf_appendf(&b, "%s", json_is_string(w) ? json_string_value(w) : "?");
        }
        return b.data;
}

static void
ctl_proc_print_ps(const json_t *res)
{
        static const char *const hdr[] = {"EXEC_ID", "SANDBOX", "STATE",  "STATUS",
                                          "STARTED", "TAG",     "COMMAND"};
        struct ctl_table *t = ctl_table_new(hdr, ARRAY_SIZE(hdr));
        size_t i;
        json_t *p;

        json_array_foreach(json_object_get(res, "processes"), i, p)
        {
                char *status = ctl_proc_status(p), *cmd = ctl_proc_command(p);
                char *cmd_cut = xstrndup(cmd, CTL_PROC_CMD_MAX);
                char *started = xstrndup(ctl_util_str(p, "started_at", "-"), 19);
                const char *row[] = {ctl_util_str(p, "exec_id", NULL),
                                     ctl_util_str(p, "sandbox", NULL),
                                     ctl_util_str(p, "state", NULL),
                                     status,
                                     started,
                                     ctl_util_str(p, "tag", NULL),
                                     cmd_cut};
                ctl_table_add(t, row);
                free(status);
                free(cmd);
                free(cmd_cut);
                free(started);
        }
        ctl_table_print(t, stdout);
        ctl_table_free(t);
}

static const struct ctl_help ctl_proc_ps_help = {
        "ps",
        "ps [-s SANDBOX] [-a|--all]",
        "Lists your running processes (with --all, exited ones too).",
        "  -s, --sandbox ID      only processes of this sandbox\n"
        "  -a, --all             include exited processes\n",
};

/* `sandboxctl ps`. */
int
ctl_proc_ps(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"sandbox", required_argument, NULL, 's'},
                {"all", no_argument, NULL, OPT_ALL},
                {NULL, 0, NULL, 0},
        };
        struct ctl_proc_opts o = {0};
        int first, rc;
        json_t *params, *res;

        rc = ctl_proc_parse(ctx, &ctl_proc_ps_help, "s:a", opts, &o, argc, argv, 0, &first);
        if (rc >= 0)
                return rc;
        params = json_object();
        if (o.sandbox)
                json_object_set_new(params, "sandbox", json_string(o.sandbox));
        if (!o.all)
                json_object_set_new(params, "state", json_string("running"));
        if (!(res = ctl_call(ctx, "process.list", params)))
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_proc_print_ps(res);
        json_decref(res);
        return CTL_EXIT_OK;
}

static void
ctl_proc_write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return;
                p += w;
                n -= (size_t) w;
        }
}

/* Writes process.read data to fd: base64 decoded unless it came as text. */
static void
ctl_proc_print_data(const json_t *res, int fd)
{
        json_t *data = json_object_get(res, "data");
        struct buf b = {0};

        if (!json_is_string(data))
                return;
        if (strcmp(ctl_util_str(res, "output_encoding", "base64"), "base64") != 0 ||
            ctl_util_b64_decode(json_string_value(data), json_string_length(data), &b) < 0) {
                buf_free(&b);
                buf_append(&b, json_string_value(data), json_string_length(data));
        }
        ctl_proc_write_all(fd, b.data, b.len);
        buf_free(&b);
}

/* One stream of `logs`: the process.read in flight and where the next one starts. */
struct ctl_logs_stream {
        const char *name;
        int fd;
        int64_t req; /* in flight, or 0 */
        long long offset;
        bool done;
};

static int
ctl_proc_logs_send(struct ctl_ctx *ctx, const struct ctl_proc_opts *o, const char *id,
                   struct ctl_logs_stream *s, struct sbx_error *err)
{
        json_t *p = json_pack("{s:s, s:s, s:I, s:i, s:i}", "exec_id", id, "stream", s->name,
                              "offset", (json_int_t) s->offset, "max_bytes", CTL_PROC_READ_MAX,
                              "wait_ms", o->follow ? CTL_PROC_FOLLOW_MS : 0);

        /* Exact bytes on a terminal or pipe; readable text in --json. */
        json_object_set_new(p, "output_encoding", json_string(ctx->json ? "text" : "base64"));
        s->req = ctl_conn_send(ctx->conn, "process.read", p, err);
        return s->req < 0 ? -1 : 0;
}

/* Handles the answer of s's process.read: prints it, moves on, says when s is done. */
static void
ctl_proc_logs_got(struct ctl_ctx *ctx, const struct ctl_proc_opts *o, struct ctl_logs_stream *s,
                  json_t *res)
{
        json_t *next = json_object_get(res, "next_offset");
        json_t *dropped = json_object_get(res, "dropped_bytes");

        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_proc_print_data(res, s->fd);
        if (s->offset == 0 && json_integer_value(dropped) > 0 && !ctx->json)
                fprintf(stderr,
                        "sandboxctl: note: the first %lld bytes of %s are no longer "
                        "retained\n",
                        (long long) json_integer_value(dropped), s->name);
        s->done = json_is_true(json_object_get(res, "eof")) || !json_is_integer(next);
        if (json_is_integer(next) && json_integer_value(next) > s->offset)
                s->offset = json_integer_value(next);
        else if (!o->follow)
                s->done = true; /* nothing new and not following */
        s->req = 0;
}

/* Reads the streams of id until each is done: with -f both long-polls are in flight at once,
 * so whichever stream has output first is printed first (like `docker logs -f`). */
static int
ctl_proc_logs_run(struct ctl_ctx *ctx, const struct ctl_proc_opts *o, const char *id,
                  struct ctl_logs_stream *st, size_t n)
{
        struct sbx_error err = {0};
        size_t left = n;

        while (left) {
                bool answered = false;
                for (size_t i = 0; i < n; i++) {
                        json_t *res = NULL;
                        if (!st[i].done && !st[i].req &&
                            ctl_proc_logs_send(ctx, o, id, &st[i], &err) < 0)
                                goto fail;
                        if (!st[i].req || !ctl_conn_take(ctx->conn, st[i].req, &res, &err))
                                continue;
                        if (!res)
                                goto fail;
                        ctl_proc_logs_got(ctx, o, &st[i], res);
                        json_decref(res);
                        left -= st[i].done;
                        answered = true;
                }
                /* Wait only while every live stream has a read in flight: a stream answered
                 * in this pass sends its next read first (else both could sit idle). */
                if (left && !answered && ctl_conn_poll(ctx->conn, NULL, 0, -1, &err) < 0)
                        goto fail;
        }
        fflush(stdout);
        return CTL_EXIT_OK;
fail:
        ctl_util_print_error(&err);
        sbx_error_clear(&err);
        return CTL_EXIT_ERROR;
}

static const struct ctl_help ctl_proc_logs_help = {
        "logs",
        "logs [-f] [--stdout|--stderr] EXEC_ID",
        "Prints the retained output of a process: its stdout on stdout and its stderr on stderr;\n"
        "with -f, keeps printing both as they come until the process ends (like docker logs -f).",
        "  -f, --follow          wait for new output until the process ends\n"
        "      --stdout          only the stdout stream\n"
        "      --stderr          only the stderr stream (printed on stdout)\n",
};

/* `sandboxctl logs`. */
int
ctl_proc_logs(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"follow", no_argument, NULL, 'f'},
                {"stderr", no_argument, NULL, OPT_STDERR},
                {"stdout", no_argument, NULL, OPT_STDOUT},
                {NULL, 0, NULL, 0},
        };
        struct ctl_logs_stream st[2] = {{"stdout", STDOUT_FILENO, 0, 0, false},
                                        {"stderr", STDERR_FILENO, 0, 0, false}};
        struct ctl_proc_opts o = {0};
        int first, rc;

        rc = ctl_proc_parse(ctx, &ctl_proc_logs_help, "f", opts, &o, argc, argv, 1, &first);
        if (rc < 0 && o.out_only && o.err_only)
                rc = ctl_util_usage_error("logs", "--stdout and --stderr exclude each other");
        if (rc >= 0)
                return rc;
        if (!ctl_connect(ctx))
                return CTL_EXIT_ERROR;
        /* One stream alone goes to stdout, for pipes (`logs --stderr ID | grep`). */
        st[1].fd = o.err_only ? STDOUT_FILENO : STDERR_FILENO;
        if (o.err_only)
                return ctl_proc_logs_run(ctx, &o, argv[first], st + 1, 1);
        return ctl_proc_logs_run(ctx, &o, argv[first], st, o.out_only ? 1 : 2);
}

static const struct ctl_help ctl_proc_kill_help = {
        "kill",
        "kill [--grace MS] [--signal SIG] EXEC_ID",
        "Kills the process tree of an exec: SIGTERM, then SIGKILL after the grace period. With "
        "--signal,\nsends just that signal (TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT or "
        "a number).",
        "      --grace MS        milliseconds between SIGTERM and SIGKILL (default 2000)\n"
        "  -S, --signal SIG      send only this signal to the process group\n",
};

static json_t *
ctl_proc_signal_value(const char *sig)
{
        long long n;

        if (ctl_util_parse_uint(sig, 64, &n) == 0)
                return json_integer(n);
        return json_string(strncmp(sig, "SIG", 3) == 0 ? sig + 3 : sig);
}

/* `sandboxctl kill`. */
int
ctl_proc_kill(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"grace", required_argument, NULL, OPT_GRACE},
                {"signal", required_argument, NULL, 'S'},
                {NULL, 0, NULL, 0},
        };
        struct ctl_proc_opts o = {.grace_ms = -1};
        int first, rc;
        json_t *p, *res;

        rc = ctl_proc_parse(ctx, &ctl_proc_kill_help, "S:", opts, &o, argc, argv, 1, &first);
        if (rc >= 0)
                return rc;
        p = json_pack("{s:s}", "exec_id", argv[first]);
        if (o.signal)
                json_object_set_new(p, "signal", ctl_proc_signal_value(o.signal));
        else if (o.grace_ms >= 0)
                json_object_set_new(p, "grace_ms", json_integer(o.grace_ms));
        res = ctl_call(ctx, o.signal ? "process.signal" : "process.kill", p);
        if (!res)
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                printf("%s\n", argv[first]);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_proc_wait_help = {
        "wait",
        "wait [--timeout S] EXEC_ID",
        "Waits for a process to end, prints how it ended and exits with its status (like exec). "
        "When\n--timeout passes first it prints \"running\" and exits 124.",
        "      --timeout S       give up after S seconds\n",
};

static void
ctl_proc_print_wait(const json_t *res)
{
        char *status = ctl_proc_status(res);

        printf("%s\n", strcmp(ctl_util_str(res, "state", ""), "running") == 0 ? "running" : status);
        free(status);
}

/* `sandboxctl wait`. */
int
ctl_proc_wait(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"timeout", required_argument, NULL, OPT_TIMEOUT},
                {NULL, 0, NULL, 0},
        };
        struct ctl_proc_opts o = {0};
        int first, rc;
        json_t *res = NULL;
        uint64_t deadline;

        rc = ctl_proc_parse(ctx, &ctl_proc_wait_help, "", opts, &o, argc, argv, 1, &first);
        if (rc >= 0)
                return rc;
        deadline = util_now_ms() + (uint64_t) (o.timeout * 1000);
        do {
                uint64_t now = util_now_ms();
                long long ms = o.has_timeout ? (long long) (deadline > now ? deadline - now : 0)
                                             : CTL_PROC_WAIT_CHUNK;
                json_decref(res);
                res = ctl_call(ctx, "process.wait",
                               json_pack("{s:s, s:I}", "exec_id", argv[first], "timeout_ms",
                                         (json_int_t) MIN(ms, CTL_PROC_WAIT_CHUNK)));
                if (!res)
                        return CTL_EXIT_EXEC_ERROR;
        } while (strcmp(ctl_util_str(res, "state", ""), "running") == 0 &&
                 (!o.has_timeout || util_now_ms() < deadline));
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_proc_print_wait(res);
        rc = strcmp(ctl_util_str(res, "state", ""), "running") == 0 ? CTL_EXIT_TIMEOUT
                                                                    : ctl_util_exit_status(res);
        json_decref(res);
        return rc;
}
