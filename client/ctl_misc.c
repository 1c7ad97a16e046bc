/* ctl_misc.c — backends, cache, info, check (policy.check) and call (raw JSON-RPC). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl_conn.h"
#include "client/ctl_table.h"
#include "client/ctl_util.h"

#define CTL_MISC_STDIN_MAX (16u << 20) /* params read from stdin by `call METHOD -` */

enum {
        OPT_BACKEND = CTL_OPT_LONG,
        OPT_CWD,
        OPT_ARGV,
        OPT_SANDBOX,
        OPT_PRUNE,
        OPT_ALL,
};

struct ctl_misc_opts {
        const char *backend, *cwd, *sandbox;
        bool argv_mode, prune, all;
};

static int
ctl_misc_opt_cb(void *st, int opt, const char *arg)
{
        struct ctl_misc_opts *o = st;

        if (opt == OPT_ARGV || opt == OPT_PRUNE || opt == OPT_ALL) {
                *(opt == OPT_ARGV ? &o->argv_mode : opt == OPT_PRUNE ? &o->prune : &o->all) = true;
                return 0;
        }
        if (!*arg)
                return ctl_util_opt_error("check", "empty option argument");
        if (opt == OPT_BACKEND || opt == 'b')
                o->backend = arg;
        else if (opt == OPT_CWD || opt == 'w')
                o->cwd = arg;
        else if (opt == OPT_SANDBOX || opt == 's')
                o->sandbox = arg;
        else
                return -1;
        return 0;
}

/* Parses a command without operands. -1 to go on, else an exit code. */
static int
ctl_misc_no_args(struct ctl_ctx *ctx, const struct ctl_help *help, int argc, char **argv)
{
        int first, rc;

        rc = ctl_util_parse(ctx, help, "", NULL, argc, argv, NULL, NULL, &first);
        if (rc < 0 && first < argc)
                rc = ctl_util_usage_error(help->name, "unexpected argument '%s'", argv[first]);
        return rc;
}

static void
ctl_misc_print_backends(const json_t *res)
{
        static const char *const hdr[] = {"NAME", "AVAILABLE", "REASON", "HINT"};
        struct ctl_table *t = ctl_table_new(hdr, ARRAY_SIZE(hdr));
        size_t i;
        json_t *b;

        json_array_foreach(json_object_get(res, "backends"), i, b)
        {
                const char *row[] = {ctl_util_str(b, "name", NULL),
                                     json_is_true(json_object_get(b, "available")) ? "yes" : "no",
                                     ctl_util_str(b, "reason", NULL),
                                     ctl_util_str(b, "hint", NULL)};
                ctl_table_add(t, row);
        }
        ctl_table_print(t, stdout);
        ctl_table_free(t);
}

static const struct ctl_help ctl_misc_backends_help = {
        "backends",
        "backends",
        "Lists the backends and whether each can be used now (and if not, why and what to do).",
        NULL,
};

/* `sandboxctl backends`. */
int
ctl_misc_backends(struct ctl_ctx *ctx, int argc, char **argv)
{
        int rc = ctl_misc_no_args(ctx, &ctl_misc_backends_help, argc, argv);
        json_t *res;

        if (rc >= 0)
                return rc;
        if (!(res = ctl_call(ctx, "backend.list", json_object())))
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_misc_print_backends(res);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_misc_cache_help = {
        "cache",
        "cache [-b BACKEND] [--prune [--all]]",
        "Lists a backend's image cache (default singularity: its SIF files), and with --prune "
        "removes\nthe least recently used entries no sandbox uses until the cache is under its "
        "cap (--all:\nevery entry no sandbox uses). Root and the daemon's owner only.",
        "  -b, --backend B       the backend (default singularity)\n"
        "      --prune           remove unused entries down to the cap\n"
        "      --all             with --prune: remove every unused entry\n",
};

static void
ctl_misc_print_cache(const json_t *res)
{
        static const char *const hdr[] = {"IMAGE", "BYTES", "LAST USED", "IN USE"};
        struct ctl_table *t = ctl_table_new(hdr, ARRAY_SIZE(hdr));
        size_t i;
        json_t *e;

        json_array_foreach(json_object_get(res, "entries"), i, e)
        {
                char bytes[32];
                snprintf(bytes, sizeof(bytes), "%lld",
                         (long long) json_integer_value(json_object_get(e, "bytes")));
                const char *row[] = {ctl_util_str(e, "image", NULL), bytes,
                                     ctl_util_str(e, "last_used", NULL),
                                     json_is_true(json_object_get(e, "in_use")) ? "yes" : "no"};
                ctl_table_add(t, row);
        }
        ctl_table_print(t, stdout);
        ctl_table_free(t);
        json_array_foreach(json_object_get(res, "removed"), i, e)
                printf("removed %s\n", json_string_value(e));
        printf("%lld of %lld bytes in %s\n",
               (long long) json_integer_value(json_object_get(res, "cache_bytes")),
               (long long) json_integer_value(json_object_get(res, "cache_cap_bytes")),
               ctl_util_str(res, "cache_dir", "?"));
}

/* `sandboxctl cache`. */
int
ctl_misc_cache(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"backend", required_argument, NULL, OPT_BACKEND},
                {"prune", no_argument, NULL, OPT_PRUNE},
                {"all", no_argument, NULL, OPT_ALL},
                {NULL, 0, NULL, 0},
        };
        struct ctl_misc_opts o = {.backend = "singularity"};
        int first, rc;
        json_t *res;

        rc = ctl_util_parse(ctx, &ctl_misc_cache_help, "b:", opts, argc, argv, ctl_misc_opt_cb, &o,
                            &first);
        if (rc < 0 && first < argc)
                rc = ctl_util_usage_error("cache", "unexpected argument '%s'", argv[first]);
        if (rc < 0 && o.all && !o.prune)
                rc = ctl_util_usage_error("cache", "--all goes with --prune");
        if (rc >= 0)
                return rc;
        res = ctl_call(
                ctx, "backend.cache",
                json_pack("{s:s,s:b,s:b}", "backend", o.backend, "prune", o.prune, "all", o.all));
        if (!res)
                return CTL_EXIT_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_misc_print_cache(res);
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_misc_info_help = {
        "info",
        "info",
        "Shows the daemon's version, uptime, socket, counts, policy and backends.",
        NULL,
};

/* `sandboxctl info`. */
int
ctl_misc_info(struct ctl_ctx *ctx, int argc, char **argv)
{
        int rc = ctl_misc_no_args(ctx, &ctl_misc_info_help, argc, argv);
        json_t *res;

        if (rc >= 0)
                return rc;
        if (!(res = ctl_call(ctx, "daemon.info", json_object())))
                return CTL_EXIT_ERROR;
        if (ctx->json) {
                ctl_util_print_json(stdout, res);
        } else {
                json_t *backends = json_incref(json_object_get(res, "backends"));
                json_object_del(res, "backends");
                ctl_table_print_fields(stdout, res);
                if (backends) {
                        json_t *wrap = json_pack("{s:o}", "backends", backends);
                        printf("\n");
                        ctl_misc_print_backends(wrap);
                        json_decref(wrap);
                }
        }
        json_decref(res);
        return CTL_EXIT_OK;
}

static const struct ctl_help ctl_misc_check_help = {
        "check",
        "check [-s SANDBOX] [-b BACKEND] [-w DIR] [--argv] COMMAND...",
        "Asks the policy what it would say about COMMAND (nothing runs) and prints the verdict "
        "and the\nfindings, judged as `exec` in that sandbox (default: your default sandbox) "
        "would judge it.\nExit status: 0 allow, 1 ask, 2 deny, 125 failure. The words are "
        "joined with spaces\ninto one shell command unless --argv is given.",
        "  -s, --sandbox NAME    judge in this sandbox (its home, environment, cwd)\n"
        "  -b, --backend B       judge as if run on this backend\n"
        "  -w, --cwd DIR         judge as if run in this directory\n"
        "      --argv            judge the words as an argv (no shell)\n",
};

static void
ctl_misc_print_check(const json_t *res)
{
        size_t i;
        json_t *f;

        printf("verdict: %s\n", ctl_util_str(res, "verdict", "?"));
        json_array_foreach(json_object_get(res, "findings"), i, f)
        {
                char *line =
                        xasprintf("[%s] %s: %s", ctl_util_str(f, "verdict", "?"),
                                  ctl_util_str(f, "rule", "?"), ctl_util_str(f, "message", ""));
                char *e = ctl_util_escape(line, 0);
                printf("  %s", e);
                if (json_is_string(json_object_get(f, "match"))) {
                        char *m = ctl_util_escape(ctl_util_str(f, "match", ""), 200);
                        printf(" (match: %s)", m);
                        free(m);
                }
                printf("\n");
                free(e);
                free(line);
        }
}

static json_t *
ctl_misc_check_params(const struct ctl_misc_opts *o, int argc, char **argv)
{
        json_t *p = json_object(), *words = json_array();
        struct buf b = {0};

        buf_append(&b, "", 0);
        for (int i = 0; i < argc; i++) {
                json_array_append_new(words, json_string(argv[i]));
                buf_appendf(&b, "%s%s", i ? " " : "", argv[i]);
        }
        if (o->argv_mode)
                json_object_set(p, "argv", words);
        else
                json_object_set_new(p, "command", json_string(b.data));
        if (o->backend)
                json_object_set_new(p, "backend", json_string(o->backend));
        if (o->cwd)
                json_object_set_new(p, "cwd", json_string(o->cwd));
        if (o->sandbox)
                json_object_set_new(p, "sandbox", json_string(o->sandbox));
        json_decref(words);
        buf_free(&b);
        return p;
}

/* `sandboxctl check`. */
int
ctl_misc_check(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"backend", required_argument, NULL, OPT_BACKEND},
                {"cwd", required_argument, NULL, OPT_CWD},
                {"argv", no_argument, NULL, OPT_ARGV},
                {"sandbox", required_argument, NULL, OPT_SANDBOX},
                {NULL, 0, NULL, 0},
        };
        struct ctl_misc_opts o = {0};
        int first, rc;
        json_t *res;
        const char *verdict;

        rc = ctl_util_parse(ctx, &ctl_misc_check_help, "+b:w:s:", opts, argc, argv, ctl_misc_opt_cb,
                            &o, &first);
        if (rc < 0 && first >= argc)
                rc = ctl_util_usage_error("check", "no command given");
        if (rc >= 0)
                return rc;
        res = ctl_call(ctx, "policy.check", ctl_misc_check_params(&o, argc - first, argv + first));
        if (!res)
                return CTL_EXIT_EXEC_ERROR;
        if (ctx->json)
                ctl_util_print_json(stdout, res);
        else
                ctl_misc_print_check(res);
        verdict = ctl_util_str(res, "verdict", "");
        rc = strcmp(verdict, "allow") == 0  ? 0
             : strcmp(verdict, "ask") == 0  ? 1
             : strcmp(verdict, "deny") == 0 ? 2
                                            : CTL_EXIT_EXEC_ERROR;
        json_decref(res);
        return rc;
}

static const struct ctl_help ctl_misc_call_help = {
        "call",
        "call METHOD [PARAMS]",
        "Sends one JSON-RPC request and prints its result as JSON on one line. PARAMS is a JSON "
        "object\nor array ('-' reads it from stdin). Notifications that arrive meanwhile are "
        "printed on stderr.\nApproval requests are answered on the terminal.",
        NULL,
};

static void
ctl_misc_call_notify_cb(void *arg, const char *method, json_t *params)
{
        json_t *msg =
                json_pack("{s:s, s:s, s:O?}", "jsonrpc", "2.0", "method", method, "params", params);

        (void) arg;
        ctl_util_print_json(stderr, msg);
        json_decref(msg);
}

/* Parses PARAMS (an argument or "-" for stdin) into *out (new). -1 after printing why. */
static int
ctl_misc_call_params(const char *arg, json_t **out)
{
        json_error_t jerr;
        json_t *v;

        if (strcmp(arg, "-") == 0) {
                char *text = xcalloc(1, CTL_MISC_STDIN_MAX + 1);
                size_t n = fread(text, 1, CTL_MISC_STDIN_MAX + 1, stdin);
                v = n <= CTL_MISC_STDIN_MAX ? json_loadb(text, n, 0, &jerr) : NULL;
                if (n > CTL_MISC_STDIN_MAX)
                        snprintf(jerr.text, sizeof(jerr.text), "over %u bytes", CTL_MISC_STDIN_MAX);
                free(text);
        } else {
                v = json_loads(arg, 0, &jerr);
        }
        if (!json_is_object(v) && !json_is_array(v)) {
                ctl_util_usage_error("call", "PARAMS must be a JSON object or array%s%s",
                                     v ? "" : ": ", v ? "" : jerr.text);
                json_decref(v);
                return -1;
        }
        *out = v;
        return 0;
}

/* `sandboxctl call`. */
int
ctl_misc_call(struct ctl_ctx *ctx, int argc, char **argv)
{
        struct sbx_error err = {0};
        int first, rc;
        json_t *params = NULL, *res;

        rc = ctl_util_parse(ctx, &ctl_misc_call_help, "+", NULL, argc, argv, NULL, NULL, &first);
        if (rc < 0 && (argc - first < 1 || argc - first > 2))
                rc = ctl_util_usage_error("call", "expected METHOD [PARAMS]");
        if (rc < 0 && argc - first == 2 && ctl_misc_call_params(argv[first + 1], &params) < 0)
                rc = CTL_EXIT_USAGE;
        if (rc >= 0)
                return rc;
        ctx->no_hello = strcmp(argv[first], "daemon.hello") == 0;
        if (!ctl_connect(ctx)) {
                json_decref(params);
                return CTL_EXIT_ERROR;
        }
        ctl_conn_set_notify(ctx->conn, ctl_misc_call_notify_cb, NULL);
        res = ctl_conn_call(ctx->conn, argv[first], params, &err);
        if (!res) {
                ctl_util_print_error(&err);
                sbx_error_clear(&err);
                return CTL_EXIT_ERROR;
        }
        ctl_util_print_json(stdout, res);
        json_decref(res);
        return CTL_EXIT_OK;
}
