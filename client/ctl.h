/* ctl.h — what every sandboxctl command shares: the invocation context, exit codes and the
 * command signature. Single-threaded; the context lives for the whole run. */
#ifndef SANDBOXCTL_CTL_H
#define SANDBOXCTL_CTL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct ctl_conn;
struct ctl_help;

/* Exit codes (documented in docs/sandboxctl.md). */
enum ctl_exit {
        CTL_EXIT_OK = 0,
        CTL_EXIT_ERROR = 2,       /* sandboxd answered with an error, or the connection failed */
        CTL_EXIT_USAGE = 64,      /* bad command line (EX_USAGE) */
        CTL_EXIT_TIMEOUT = 124,   /* exec/wait: the command timed out, like timeout(1) */
        CTL_EXIT_EXEC_ERROR = 125 /* exec/wait/check: sandboxctl or sandboxd failed */
};

/* The invocation: global options and the connection, opened on first use. */
struct ctl_ctx {
        const char *socket_opt; /* --socket, borrowed from argv, may be NULL */
        bool json;              /* --json: raw JSON output */
        struct ctl_conn *conn;  /* owned; NULL until ctl_connect() */
        bool no_hello;          /* do not send daemon.hello first (`call daemon.hello`) */
};

/* A subcommand: parses its own argv (argv[0] is its name) and returns the exit code. */
typedef int (*ctl_run_fn)(struct ctl_ctx *ctx, int argc, char **argv);

/* Opens the connection if not yet open; on failure prints why and returns NULL (borrowed). */
struct ctl_conn *ctl_connect(struct ctl_ctx *ctx);

/* Calls method on the (opened on demand) connection. Steals params. Returns the result (new)
 * or NULL after printing the error. */
json_t *ctl_call(struct ctl_ctx *ctx, const char *method, json_t *params);

/* What `rm`-style commands do: parses operands (at least one, else usage error with missing),
 * calls method once per operand with {key: operand}, prints each result (JSON, or show()).
 * Returns the exit code: an error on any operand makes it CTL_EXIT_ERROR. */
int ctl_each_operand(struct ctl_ctx *ctx, const struct ctl_help *help, const char *missing,
                     const char *method, const char *key,
                     void (*show)(json_t *res, const char *operand), int argc, char **argv);

/* One subcommand of a group such as `sandboxctl sandbox ...`. */
struct ctl_subcmd {
        const char *name;
        ctl_run_fn run;
        const char *summary;
};

/* Dispatches argv[1] of group to one of cmds (n entries), with usage and --help. */
int ctl_group_main(struct ctl_ctx *ctx, const char *group, const struct ctl_subcmd *cmds, size_t n,
                   int argc, char **argv);

/* Subcommands (one file each group). */
int ctl_exec_main(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_proc_ps(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_proc_logs(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_proc_kill(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_proc_wait(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_sandbox_main(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_misc_backends(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_misc_cache(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_misc_info(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_misc_check(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_misc_call(struct ctl_ctx *ctx, int argc, char **argv);
int ctl_approvals_main(struct ctl_ctx *ctx, int argc, char **argv);

#endif
