/* sandboxctl.c — command-line client of sandboxd: global options and the command table. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl.h"
#include "client/ctl_conn.h"
#include "client/ctl_util.h"
#include "protocol/sockpath.h"

static const struct {
        const char *name;
        ctl_run_fn run;
        const char *summary;
} sandboxctl_cmds[] = {
        {"exec", ctl_exec_main, "run a command in a sandbox, streaming its output"},
        {"ps", ctl_proc_ps, "list processes"},
        {"logs", ctl_proc_logs, "print (or follow) the retained output of a process"},
        {"kill", ctl_proc_kill, "kill a process tree (TERM, grace, KILL)"},
        {"wait", ctl_proc_wait, "wait for a process to end; exit with its status"},
        {"sandbox", ctl_sandbox_main, "create, list, show, remove sandboxes"},
        {"backends", ctl_misc_backends, "list backends and whether they can be used"},
        {"cache", ctl_misc_cache, "list or prune a backend's image cache (singularity)"},
        {"info", ctl_misc_info, "show daemon status"},
        {"check", ctl_misc_check, "ask the policy about a command without running it"},
        {"approvals", ctl_approvals_main, "list or revoke persisted approvals"},
        {"call", ctl_misc_call, "send a raw JSON-RPC request and print its result"},
};

static void
sandboxctl_usage(FILE *f)
{
        fputs("Usage: sandboxctl [--socket PATH] [--json] COMMAND [ARGS...]\n\n"
              "Client of sandboxd, the sandbox daemon.\n\nCommands:\n",
              f);
        for (size_t i = 0; i < ARRAY_SIZE(sandboxctl_cmds); i++)
                fprintf(f, "  %-10s %s\n", sandboxctl_cmds[i].name, sandboxctl_cmds[i].summary);
        fputs("\nGlobal options:\n"
              "      --socket PATH  sandboxd socket (default: $SANDBOXD_SOCKET, else\n"
              "                     /run/sandboxd/sandboxd.sock as root, else\n"
              "                     $XDG_RUNTIME_DIR/sandboxd/sandboxd.sock)\n"
              "      --json         print raw JSON results\n"
              "  -h, --help         show this help ('sandboxctl COMMAND --help' for a command)\n"
              "      --version      show the version\n\n"
              "Exit status: 0 success; 2 error from sandboxd or the connection; 64 usage error.\n"
              "exec and wait exit with the command's status (124 timed out, 125 failure).\n",
              f);
}

/* Says daemon.hello (role interactive: approvals are asked on the terminal) without waiting for
 * its answer: the daemon handles a connection's requests in order. */
static void
ctl_hello(struct ctl_conn *c)
{
        struct sbx_error err = {0};
        int64_t id = ctl_conn_send(
                c, "daemon.hello",
                json_pack("{s:s,s:s}", "client", "sandboxctl", "role", "interactive"), &err);

        if (id > 0)
                ctl_conn_forget(c, id);
        sbx_error_clear(&err);
}

/* Opens the connection on first use. */
struct ctl_conn *
ctl_connect(struct ctl_ctx *ctx)
{
        struct sbx_error err = {0};
        char *path = NULL;
        bool is_default = false;

        if (ctx->conn)
                return ctx->conn;
        if (ctl_conn_socket_path(ctx->socket_opt, &path, &is_default, &err) == 0)
                ctx->conn = ctl_conn_open(path, &err);
        /* A user of the system daemon (group sandboxd) has no daemon of their own. */
        if (!ctx->conn && is_default && (errno == ENOENT || errno == ECONNREFUSED) &&
            strcmp(path, SOCKPATH_SYSTEM) != 0 && access(SOCKPATH_SYSTEM, F_OK) == 0) {
                struct sbx_error e2 = {0};
                ctx->conn = ctl_conn_open(SOCKPATH_SYSTEM, &e2);
                if (!ctx->conn && errno != ENOENT && errno != ECONNREFUSED)
                        sbx_error_move(&err, &e2);
                sbx_error_clear(&e2);
        }
        if (!ctx->conn)
                ctl_util_print_error(&err);
        else if (!ctx->no_hello)
                ctl_hello(ctx->conn);
        sbx_error_clear(&err);
        free(path);
        return ctx->conn;
}

/* Calls method; prints the error and returns NULL on failure. */
json_t *
ctl_call(struct ctl_ctx *ctx, const char *method, json_t *params)
{
        struct sbx_error err = {0};
        struct ctl_conn *c = ctl_connect(ctx);
        json_t *res;

        if (!c) {
                json_decref(params);
                return NULL;
        }
        res = ctl_conn_call(c, method, params, &err);
        if (!res)
                ctl_util_print_error(&err);
        sbx_error_clear(&err);
        return res;
}

/* Runs method for every operand (see ctl.h). */
int
ctl_each_operand(struct ctl_ctx *ctx, const struct ctl_help *help, const char *missing,
                 const char *method, const char *key,
                 void (*show)(json_t *res, const char *operand), int argc, char **argv)
{
        int first, rc;

        rc = ctl_util_parse(ctx, help, "", NULL, argc, argv, NULL, NULL, &first);
        if (rc < 0 && first >= argc)
                rc = ctl_util_usage_error(help->name, "%s", missing);
        if (rc >= 0)
                return rc;
        rc = CTL_EXIT_OK;
        for (int i = first; i < argc; i++) {
                json_t *res = ctl_call(ctx, method, json_pack("{s:s}", key, argv[i]));
                if (!res) {
                        rc = CTL_EXIT_ERROR;
                        continue;
                }
                if (ctx->json)
                        ctl_util_print_json(stdout, res);
                else
                        show(res, argv[i]);
                json_decref(res);
        }
        return rc;
}

static int
ctl_group_usage(FILE *f, const char *group, const struct ctl_subcmd *cmds, size_t n, int rc)
{
        fprintf(f, "Usage: sandboxctl %s COMMAND [OPTIONS]\n\nCommands:\n", group);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
        fprintf(f, "\n'sandboxctl %s COMMAND --help' shows the options of a command.\n", group);
        return rc;
}

/* `sandboxctl GROUP COMMAND ...`. */
int
ctl_group_main(struct ctl_ctx *ctx, const char *group, const struct ctl_subcmd *cmds, size_t n,
               int argc, char **argv)
{
        if (argc < 2)
                return ctl_group_usage(stderr, group, cmds, n, CTL_EXIT_USAGE);
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
                return ctl_group_usage(stdout, group, cmds, n, CTL_EXIT_OK);
        for (size_t i = 0; i < n; i++)
                if (strcmp(argv[1], cmds[i].name) == 0)
                        return cmds[i].run(ctx, argc - 1, argv + 1);
        fprintf(stderr, "sandboxctl: %s: unknown command '%s'\n", group, argv[1]);
        return ctl_group_usage(stderr, group, cmds, n, CTL_EXIT_USAGE);
}

/* Global options before the command; returns -1 to continue, or an exit code. */
static int
sandboxctl_global(struct ctl_ctx *ctx, int argc, char **argv)
{
        static const struct option opts[] = {
                {"socket", required_argument, NULL, 'S'},
                {"json", no_argument, NULL, 'J'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {NULL, 0, NULL, 0},
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                if (c == 'S') {
                        ctx->socket_opt = optarg;
                } else if (c == 'J') {
                        ctx->json = true;
                } else if (c == 'h') {
                        sandboxctl_usage(stdout);
                        return CTL_EXIT_OK;
                } else if (c == 'V') {
                        printf("sandboxctl %s\n", SANDBOXD_VERSION);
                        return CTL_EXIT_OK;
                } else {
                        fprintf(stderr, "sandboxctl: bad option '%s'\n", argv[optind - 1]);
                        sandboxctl_usage(stderr);
                        return CTL_EXIT_USAGE;
                }
        }
        return -1;
}

static int
sandboxctl_run(struct ctl_ctx *ctx, int argc, char **argv)
{
        if (argc < 1) {
                sandboxctl_usage(stderr);
                return CTL_EXIT_USAGE;
        }
        if (strcmp(argv[0], "help") == 0) {
                if (argc < 2) {
                        sandboxctl_usage(stdout);
                        return CTL_EXIT_OK;
                }
                char *help[] = {argv[1], "--help", NULL};
                return sandboxctl_run(ctx, 2, help);
        }
        for (size_t i = 0; i < ARRAY_SIZE(sandboxctl_cmds); i++)
                if (strcmp(argv[0], sandboxctl_cmds[i].name) == 0)
                        return sandboxctl_cmds[i].run(ctx, argc, argv);
        fprintf(stderr, "sandboxctl: unknown command '%s'\n", argv[0]);
        sandboxctl_usage(stderr);
        return CTL_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
        struct ctl_ctx ctx = {0};
        int rc;

        util_json_alloc_init();
        /* Writes to a closed stdout end us like any filter; the socket uses MSG_NOSIGNAL. */
        signal(SIGPIPE, SIG_DFL);
        rc = sandboxctl_global(&ctx, argc, argv);
        if (rc < 0)
                rc = sandboxctl_run(&ctx, argc - optind, argv + optind);
        ctl_conn_free(ctx.conn);
        if (fflush(stdout) != 0 && rc == CTL_EXIT_OK)
                rc = CTL_EXIT_ERROR;
        return rc;
}
