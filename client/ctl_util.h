/* ctl_util.h — small pure helpers for sandboxctl: option parsing with the common options,
 * base64, number parsing, terminal-safe text, error printing, exit codes of results.
 * Single-threaded (getopt state). */
#ifndef SANDBOXCTL_CTL_UTIL_H
#define SANDBOXCTL_CTL_UTIL_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "client/ctl.h"
#include "protocol/error.h"
#include "protocol/util.h"

/* A client-side failure that is not a JSON-RPC error (connection lost, bad local input). */
#define CTL_E_LOCAL 1

/* Long-option values for options without a short letter start here. */
#define CTL_OPT_LONG 1000

/* Help of one subcommand. */
struct ctl_help {
        const char *name;    /* "sandbox create" */
        const char *usage;   /* "exec [OPTIONS] -- COMMAND..." */
        const char *summary; /* one sentence */
        const char *options; /* option lines, each ending in \n; may be NULL */
};

/* Handles one command-specific option; returns 0, or -1 after printing a usage error. */
typedef int (*ctl_util_opt_cb)(void *st, int opt, const char *arg);

/* Parses argv (argv[0] = subcommand) with getopt_long plus --json, --socket, --help. Returns -1
 * to continue with argv[*first...] as operands, or an exit code to return at once (0 after
 * --help, CTL_EXIT_USAGE after an error it printed). shortopts may start with '+'. */
int ctl_util_parse(struct ctl_ctx *ctx, const struct ctl_help *help, const char *shortopts,
                   const struct option *longopts, int argc, char **argv, ctl_util_opt_cb cb,
                   void *st, int *first);
/* Prints "sandboxctl: CMD: message" and a hint to use --help; returns CTL_EXIT_USAGE. */
int ctl_util_usage_error(const char *cmd, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Like ctl_util_usage_error() but returns -1, for option callbacks. */
int ctl_util_opt_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the usage/help of a command to f. */
void ctl_util_print_help(FILE *f, const char *cmd, const struct ctl_help *help);

/* Base64 (RFC 4648, padded) of n bytes (new string). */
char *ctl_util_b64_encode(const void *data, size_t n);
/* Decodes base64 text of length n and appends the bytes to out. 0, or -EINVAL on bad input. */
int ctl_util_b64_decode(const char *s, size_t n, struct buf *out);

/* Parses a non-negative decimal number of seconds (at most 1e9). 0 or -EINVAL. */
int ctl_util_parse_seconds(const char *s, double *out);
/* Parses a non-negative integer no greater than max. 0 or -EINVAL. */
int ctl_util_parse_uint(const char *s, long long max, long long *out);

/* Copy of s for a terminal: control characters and invalid UTF-8 shown as \n, \t, \xHH; at
 * most max bytes of s are shown, then "…" (max 0 = no limit). New string. */
char *ctl_util_escape(const char *s, size_t max);
/* Display width of a UTF-8 string in terminal columns (one per code point). */
size_t ctl_util_width(const char *s);

/* Prints err on stderr: "sandboxctl: message" plus its data as JSON when present. */
void ctl_util_print_error(const struct sbx_error *err);
/* Prints a JSON value compactly on one line to f. */
void ctl_util_print_json(FILE *f, const json_t *v);

/* Signal number of a name such as "SIGKILL" or "KILL"; 0 when unknown. */
int ctl_util_signum(const char *name);
/* Exit status a finished-process object implies: 124 when timed_out, exit_code, else 128 +
 * signal, else CTL_EXIT_EXEC_ERROR when neither is known. */
int ctl_util_exit_status(const json_t *res);

/* String member of an object or def when absent / not a string (borrowed). */
const char *ctl_util_str(const json_t *obj, const char *key, const char *def);

#endif
