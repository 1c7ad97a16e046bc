/* ctl_util.c — option parsing, base64, numbers, terminal-safe text and errors for sandboxctl. */
#include "client/ctl_util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
        OPT_JSON = CTL_OPT_LONG - 1,
        OPT_SOCKET = CTL_OPT_LONG - 2,
};

static const struct option ctl_util_common_opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"socket", required_argument, NULL, OPT_SOCKET},
        {"help", no_argument, NULL, 'h'},
};

/* Prints the usage/help of a command. */
void
ctl_util_print_help(FILE *f, const char *cmd, const struct ctl_help *help)
{
        fprintf(f, "Usage: sandboxctl %s\n\n%s\n\nOptions:\n", help->usage, help->summary);
        if (help->options)
                fputs(help->options, f);
        fputs("      --json            print raw JSON results\n"
              "      --socket PATH     sandboxd socket (default: $SANDBOXD_SOCKET, then the\n"
              "                        system or per-user socket)\n"
              "  -h, --help            show this help\n",
              f);
        (void) cmd;
}

static void
ctl_util_verror(const char *cmd, const char *fmt, va_list ap)
{
        fprintf(stderr, "sandboxctl: %s: ", cmd);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry 'sandboxctl %s --help'.\n", cmd);
}

/* Prints a usage error for cmd and returns CTL_EXIT_USAGE. */
int
ctl_util_usage_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        ctl_util_verror(cmd, fmt, ap);
        va_end(ap);
        return CTL_EXIT_USAGE;
}

/* Prints a usage error for cmd and returns -1. */
int
ctl_util_opt_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        ctl_util_verror(cmd, fmt, ap);
        va_end(ap);
        return -1;
}

static struct option *
ctl_util_merge_opts(const struct option *longopts)
{
        size_t n = 0, k = ARRAY_SIZE(ctl_util_common_opts);
        struct option *all;

        while (longopts && longopts[n].name)
                n++;
        all = xcalloc(n + k + 1, sizeof(*all));
        if (n)
                memcpy(all, longopts, n * sizeof(*all));
        memcpy(all + n, ctl_util_common_opts, k * sizeof(*all));
        return all;
}

static int
ctl_util_bad_opt(const char *cmd, int c, char **argv)
{
        const char *what = argv[optind - 1];

        if (c == ':')
                return ctl_util_usage_error(cmd, "option '%s' needs an argument", what);
        if (optopt && optopt < 256)
                return ctl_util_usage_error(cmd, "unknown option '-%c'", optopt);
        return ctl_util_usage_error(cmd, "unknown option '%s'", what);
}

/* getopt_long over the command's options plus the common ones. */
int
ctl_util_parse(struct ctl_ctx *ctx, const struct ctl_help *help, const char *shortopts,
               const struct option *longopts, int argc, char **argv, ctl_util_opt_cb cb, void *st,
               int *first)
{
        struct option *all = ctl_util_merge_opts(longopts);
        bool plus = shortopts[0] == '+';
        char *so = xasprintf("%s:h%s", plus ? "+" : "", shortopts + plus);
        int c, rc = -1;

        optind = 0; /* full re-initialisation of glibc getopt */
        opterr = 0;
        while (rc < 0 && (c = getopt_long(argc, argv, so, all, NULL)) != -1) {
                if (c == OPT_JSON) {
                        ctx->json = true;
                } else if (c == OPT_SOCKET) {
                        ctx->socket_opt = optarg;
                } else if (c == 'h') {
                        ctl_util_print_help(stdout, help->name, help);
                        rc = CTL_EXIT_OK;
                } else if (c == '?' || c == ':') {
                        rc = ctl_util_bad_opt(help->name, c, argv);
                } else if (!cb || cb(st, c, optarg) < 0) {
                        rc = CTL_EXIT_USAGE;
                }
        }
        *first = optind;
        free(so);
        free(all);
        return rc;
}

static const char ctl_util_b64_chars[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard padded base64. */
char *
ctl_util_b64_encode(const void *data, size_t n)
{
        const unsigned char *p = data;
        char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;

        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned) p[i] << 16;
                if (i + 1 < n)
                        v |= (unsigned) p[i + 1] << 8;
                if (i + 2 < n)
                        v |= p[i + 2];
                *o++ = ctl_util_b64_chars[(v >> 18) & 63];
                *o++ = ctl_util_b64_chars[(v >> 12) & 63];
                *o++ = i + 1 < n ? ctl_util_b64_chars[(v >> 6) & 63] : '=';
                *o++ = i + 2 < n ? ctl_util_b64_chars[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

static int
ctl_util_b64_value(unsigned char c)
{
        const char *p = c ? strchr(ctl_util_b64_chars, c) : NULL;

        return p ? (int) (p - ctl_util_b64_chars) : -1;
}

/* Decodes base64 (padding optional, no whitespace) and appends to out. */
int
ctl_util_b64_decode(const char *s, size_t n, struct buf *out)
{
        unsigned acc = 0;
        int bits = 0;
        size_t i;

        while (n > 0 && s[n - 1] == '=')
                n--;
        if (n % 4 == 1)
                return -EINVAL;
        buf_reserve(out, n / 4 * 3 + 3);
        for (i = 0; i < n; i++) {
                int v = ctl_util_b64_value((unsigned char) s[i]);
                if (v < 0)
                        return -EINVAL;
                acc = (acc << 6) | (unsigned) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        char byte = (char) ((acc >> bits) & 0xff);
                        buf_append(out, &byte, 1);
                }
        }
        return 0;
}

/* Non-negative finite seconds, at most 1e9. */
int
ctl_util_parse_seconds(const char *s, double *out)
{
        char *end;
        double v;

        if (!s || !*s || strchr(" \t\n+-", s[0]))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno || *end || !isfinite(v) || v < 0 || v > 1e9)
                return -EINVAL;
        *out = v;
        return 0;
}

/* Non-negative decimal integer <= max. */
int
ctl_util_parse_uint(const char *s, long long max, long long *out)
{
        char *end;
        long long v;

        if (!s || s[0] < '0' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || *end || v > max)
                return -EINVAL;
        *out = v;
        return 0;
}

/* Length of the valid UTF-8 sequence at s (1–4), or 0 when invalid. */
static size_t
ctl_util_utf8_len(const unsigned char *s)
{
        size_t n;

        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4;
        else
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
                return 0;
        if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
                return 0;
        return n;
}

static void
ctl_util_escape_byte(struct buf *b, unsigned char c)
{
        static const char names[] = "\nn\rr\tt\\\\";
        const char *p = c ? strchr(names, c) : NULL;

        if (p && (p - names) % 2 == 0)
                buf_appendf(b, "\\%c", p[1]);
        else
                buf_appendf(b, "\\x%02x", c);
}

/* Terminal-safe copy: escapes C0/C1 controls, DEL, backslash and invalid UTF-8. */
char *
ctl_util_escape(const char *s, size_t max)
{
        const unsigned char *p = (const unsigned char *) s;
        struct buf b = {0};
        size_t i = 0, n;

        buf_reserve(&b, 16);
        while (p[i] && (max == 0 || i < max)) {
                if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
                        buf_append(&b, p + i++, 1);
                } else if (p[i] >= 0x80 && (n = ctl_util_utf8_len(p + i)) > 0 &&
                           !(p[i] == 0xc2 && p[i + 1] < 0xa0)) {
                        buf_append(&b, p + i, n);
                        i += n;
                } else {
                        ctl_util_escape_byte(&b, p[i++]);
                }
        }
        if (p[i])
                buf_append(&b, "…", strlen("…"));
        return b.data;
}

/* Counts code points (continuation bytes excluded). */
size_t
ctl_util_width(const char *s)
{
        size_t w = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xc0) != 0x80)
                        w++;
        return w;
}

/* "sandboxctl: message" and data on stderr. */
void
ctl_util_print_error(const struct sbx_error *err)
{
        char *msg = ctl_util_escape(err->message ? err->message : "unknown error", 0);

        if (err->code && err->code != CTL_E_LOCAL)
                fprintf(stderr, "sandboxctl: error %d: %s\n", err->code, msg);
        else
                fprintf(stderr, "sandboxctl: %s\n", msg);
        if (err->data && !json_is_null(err->data)) {
                fputs("sandboxctl: error data: ", stderr);
                ctl_util_print_json(stderr, err->data);
        }
        free(msg);
}

/* Compact JSON and a newline. */
void
ctl_util_print_json(FILE *f, const json_t *v)
{
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);

        fprintf(f, "%s\n", s ? s : "null");
        free(s);
}

static const struct {
        const char *name;
        int num;
} ctl_util_signals[] = {
        {"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"ILL", SIGILL},
        {"TRAP", SIGTRAP},     {"ABRT", SIGABRT}, {"BUS", SIGBUS},     {"FPE", SIGFPE},
        {"KILL", SIGKILL},     {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
        {"PIPE", SIGPIPE},     {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
        {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
        {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
        {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
        {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

/* Signal number of "SIGKILL" / "KILL"; 0 when unknown. */
int
ctl_util_signum(const char *name)
{
        if (!name)
                return 0;
        if (strncmp(name, "SIG", 3) == 0)
                name += 3;
        for (size_t i = 0; i < ARRAY_SIZE(ctl_util_signals); i++)
                if (strcmp(name, ctl_util_signals[i].name) == 0)
                        return ctl_util_signals[i].num;
        return 0;
}

/* 124 on timeout, the exit code, 128 + signal, else CTL_EXIT_EXEC_ERROR. */
int
ctl_util_exit_status(const json_t *res)
{
        const json_t *code = json_object_get(res, "exit_code");
        const json_t *sig = json_object_get(res, "signal");
        int num;

        if (json_is_true(json_object_get(res, "timed_out")))
                return CTL_EXIT_TIMEOUT;
        if (json_is_integer(code))
                return (int) (json_integer_value(code) & 0xff);
        if (json_is_integer(sig))
                return 128 + (int) (json_integer_value(sig) & 0x7f);
        num = ctl_util_signum(json_string_value(sig));
        return num ? 128 + num : CTL_EXIT_EXEC_ERROR;
}

/* String member or def. */
const char *
ctl_util_str(const json_t *obj, const char *key, const char *def)
{
        const char *s = json_string_value(json_object_get(obj, key));

        return s ? s : def;
}
