/* shell_state.c — parses the state file the shell wrapper writes (layout in shell.h): the
 * output of `export -p` in the quoting of bash, dash, busybox ash and other POSIX shells, and
 * bash's `declare -fx`. The file is written by the caller's own process, so everything in it
 * is untrusted input: every byte is checked, nothing is assumed to be terminated. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/shell.h"
#include "protocol/util.h"

#define SHELL_FIELDS 7

/* Set by the shell itself or by the wrapper, never carried over. */
static const char *const shell_skip_vars[] = {"PWD", "OLDPWD",        "SHLVL",
                                              "_",   "SANDBOXD_TRAP", "SANDBOXD_BASH_ENV"};

struct shell_scan {
        const char *p, *end;
        struct buf word; /* the current decoded word */
};

static bool
shell_alpha(char c)
{
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Whether name is a shell variable name. */
bool
shell_name_valid(const char *name, size_t len)
{
        if (!len || !shell_alpha(name[0]))
                return false;
        for (size_t i = 1; i < len; i++)
                if (!shell_alpha(name[i]) && !(name[i] >= '0' && name[i] <= '9'))
                        return false;
        return true;
}

static bool
shell_skip(const char *name, size_t len)
{
        for (size_t i = 0; i < ARRAY_SIZE(shell_skip_vars); i++)
                if (strlen(shell_skip_vars[i]) == len && !memcmp(shell_skip_vars[i], name, len))
                        return true;
        return false;
}

/* ---- words: '…', "…", $'…', \c and plain bytes, up to an unquoted newline ---- */

static const struct {
        char esc, byte;
} shell_ansi_simple[] = {
        {'a', '\a'}, {'b', '\b'}, {'e', 27},    {'E', 27},    {'f', '\f'}, {'n', '\n'}, {'r', '\r'},
        {'t', '\t'}, {'v', '\v'}, {'\\', '\\'}, {'\'', '\''}, {'"', '"'},  {'?', '?'},
};

static int
shell_digit(char c, int base)
{
        int v = c >= '0' && c <= '9'                     ? c - '0'
                : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                         : 99;

        return v < base ? v : -1;
}

/* Up to max digits of base at s->p; -1 when there is none. */
static long
shell_number(struct shell_scan *s, int base, int max)
{
        long v = -1;
        int d;

        for (int i = 0; i < max && s->p < s->end && (d = shell_digit(*s->p, base)) >= 0; i++) {
                v = (v < 0 ? 0 : v) * base + d;
                s->p++;
        }
        return v;
}

static void
shell_put_utf8(struct buf *b, unsigned long cp)
{
        char u[4];
        size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

        if (cp > 0x10ffff)
                return;
        u[0] = n == 1 ? (char) cp : (char) ((0xf0 << (4 - n)) | (cp >> (6 * (n - 1))));
        for (size_t i = 1; i < n; i++)
                u[i] = (char) (0x80 | ((cp >> (6 * (n - 1 - i))) & 0x3f));
        buf_append(b, u, n);
}

/* One escape of $'…' after the backslash. */
static int
shell_ansi_escape(struct shell_scan *s)
{
        static const struct {
                char esc;
                int base, max;
        } num[] = {{'x', 16, 2}, {'u', 16, 4}, {'U', 16, 8}};
        char c = *s->p++;
        long v;

        for (size_t i = 0; i < ARRAY_SIZE(shell_ansi_simple); i++)
                if (shell_ansi_simple[i].esc == c) {
                        buf_append(&s->word, &shell_ansi_simple[i].byte, 1);
                        return 0;
                }
        if (c >= '0' && c <= '7') {
                s->p--;
                v = shell_number(s, 8, 3);
                buf_append(&s->word, &(char){(char) v}, 1);
                return 0;
        }
        if (c == 'c' && s->p < s->end) {
                buf_append(&s->word, &(char){(char) (*s->p++ & 0x1f)}, 1);
                return 0;
        }
        for (size_t i = 0; i < ARRAY_SIZE(num); i++) {
                if (num[i].esc != c)
                        continue;
                if ((v = shell_number(s, num[i].base, num[i].max)) < 0)
                        return -1;
                if (c == 'x')
                        buf_append(&s->word, &(char){(char) v}, 1);
                else
                        shell_put_utf8(&s->word, (unsigned long) v);
                return 0;
        }
        return -1;
}

static int
shell_ansi(struct shell_scan *s)
{
        while (s->p < s->end && *s->p != '\'') {
                if (*s->p != '\\') {
                        buf_append(&s->word, s->p++, 1);
                        continue;
                }
                if (++s->p >= s->end || shell_ansi_escape(s) < 0)
                        return -1;
        }
        return s->p++ < s->end ? 0 : -1;
}

static int
shell_single(struct shell_scan *s)
{
        const char *q = memchr(s->p, '\'', (size_t) (s->end - s->p));

        if (!q)
                return -1;
        buf_append(&s->word, s->p, (size_t) (q - s->p));
        s->p = q + 1;
        return 0;
}

/* Inside "…" a backslash quotes only $ ` " \ and newline (which it removes). */
static int
shell_double(struct shell_scan *s)
{
        while (s->p < s->end && *s->p != '"') {
                if (*s->p == '\\' && s->p + 1 < s->end && strchr("$`\"\\\n", s->p[1])) {
                        if (s->p[1] != '\n')
                                buf_append(&s->word, s->p + 1, 1);
                        s->p += 2;
                        continue;
                }
                buf_append(&s->word, s->p++, 1);
        }
        return s->p++ < s->end ? 0 : -1;
}

/* Decodes one word into s->word; stops at an unquoted newline (consumed) or the end. */
static int
shell_word(struct shell_scan *s)
{
        int r = 0;

        buf_consume(&s->word, s->word.len);
        while (r == 0 && s->p < s->end && *s->p != '\n') {
                char c = *s->p++;
                bool ansi = c == '$' && s->p < s->end && *s->p == '\'';
                if (c == '\'')
                        r = shell_single(s);
                else if (c == '"')
                        r = shell_double(s);
                else if (ansi) {
                        s->p++;
                        r = shell_ansi(s);
                } else if (c == '\\' && s->p < s->end) {
                        /* \c is c; a backslash-newline joins lines */
                        if (*s->p != '\n')
                                buf_append(&s->word, s->p, 1);
                        s->p++;
                } else {
                        buf_append(&s->word, &c, 1);
                }
        }
        if (s->p < s->end)
                s->p++;
        return r;
}

/* ---- export -p ---- */

struct shell_parse {
        json_t *env;
        char *why; /* new, on failure */
};

static int
shell_add(struct shell_parse *ps, const char *name, size_t nlen, const char *v, size_t vlen)
{
        char *k;

        if (nlen + 1 + vlen > SHELL_VAR_MAX) {
                ps->why = xasprintf("%s %.*s is %zu bytes, more than the %u a program can "
                                    "be given (Linux MAX_ARG_STRLEN)",
                                    strncmp(name, "BASH_FUNC_", 10) ? "variable" : "function",
                                    (int) nlen, name, nlen + 1 + vlen, SHELL_VAR_MAX);
                return -E2BIG;
        }
        if (json_object_size(ps->env) >= SHELL_VARS_MAX) {
                ps->why =
                        xasprintf("more than %u exported variables and functions", SHELL_VARS_MAX);
                return -E2BIG;
        }
        k = xstrndup(name, nlen);
        json_object_set_new_nocheck(ps->env, k, json_stringn_nocheck(v, vlen));
        free(k);
        return 0;
}

/* "declare -x NAME=…", "declare -rx NAME=…", "export NAME='…'", "export NAME" (no value). */
static int
shell_export_line(struct shell_scan *s, struct shell_parse *ps)
{
        static const char *const verbs[] = {"declare ", "export ", "typeset "};
        const char *name;
        bool array = false;
        size_t i, n;

        for (i = 0; i < ARRAY_SIZE(verbs); i++)
                if ((size_t) (s->end - s->p) > strlen(verbs[i]) &&
                    !memcmp(s->p, verbs[i], strlen(verbs[i])))
                        break;
        if (i == ARRAY_SIZE(verbs))
                return -EINVAL;
        s->p += strlen(verbs[i]);
        while (s->p < s->end && *s->p == '-') {
                const char *sp = memchr(s->p, ' ', (size_t) (s->end - s->p));
                if (!sp)
                        return -EINVAL;
                array = array || memchr(s->p, 'a', (size_t) (sp - s->p)) ||
                        memchr(s->p, 'A', (size_t) (sp - s->p));
                s->p = sp + 1;
        }
        for (name = s->p; s->p < s->end && *s->p != '=' && *s->p != '\n';)
                s->p++;
        n = (size_t) (s->p - name);
        if (!shell_name_valid(name, n))
                return -EINVAL;
        if (s->p >= s->end || *s->p == '\n') {
                s->p += s->p < s->end; /* exported but unset: not in the environment */
                return 0;
        }
        s->p++;
        if (shell_word(s) < 0)
                return -EINVAL;
        /* Arrays are never exported to the environment, whatever export -p says. */
        if (array || shell_skip(name, n))
                return 0;
        return shell_add(ps, name, n, s->word.data ? s->word.data : "", s->word.len);
}

static int
shell_exports(const char *p, const char *end, struct shell_parse *ps)
{
        struct shell_scan s = {p, end, {0}};
        int r = 0;

        while (r == 0 && s.p < s.end)
                r = shell_export_line(&s, ps);
        buf_free(&s.word);
        if (r == -EINVAL && !ps->why)
                ps->why = xasprintf("the shell's `export -p` output has a line this parser "
                                    "does not know (byte %zu)",
                                    (size_t) (s.p - p));
        return r;
}

/* ---- declare -fx: "NAME () \n{ …\n}\ndeclare -f[flags] NAME\n", repeated ---- */

static bool
shell_func_header(const char *p, const char *end, const char **name, size_t *nlen)
{
        const char *nl = memchr(p, '\n', (size_t) (end - p));

        if (!nl || nl - p < 5 || memcmp(nl - 4, " () ", 4) || nl + 2 > end || nl[1] != '{')
                return false;
        *name = p;
        *nlen = (size_t) (nl - 4 - p);
        return *nlen > 0;
}

/* Where the definition of name (starting at p) ends: the "\n}\n" before its own
 * "declare -f… NAME" line, followed by the end or by the next definition. A here-document
 * in the body may hold the same lines; the next-definition check tells them apart. */
static const char *
shell_func_end(const char *p, const char *end, const char *name, size_t nlen, const char **next)
{
        for (const char *q = p; (q = memmem(q, (size_t) (end - q), "\n}\ndeclare -f", 13)); q++) {
                const char *line = q + 3, *nl = memchr(line, '\n', (size_t) (end - line));
                /* "declare -f[flags] NAME": the space after the flags */
                const char *sp = memchr(line + 8, ' ', (size_t) (end - line - 8));
                const char *n2;
                size_t l2;
                if (!nl || !sp || sp > nl || (size_t) (nl - sp - 1) != nlen ||
                    memcmp(sp + 1, name, nlen))
                        continue;
                if (nl + 1 == end || shell_func_header(nl + 1, end, &n2, &l2)) {
                        *next = nl + 1;
                        return q + 2;
                }
        }
        return NULL;
}

static int
shell_functions(const char *p, const char *end, struct shell_parse *ps)
{
        while (p < end) {
                const char *name, *stop, *next, *body;
                size_t nlen;
                char *key, *val;
                int r;
                if (!shell_func_header(p, end, &name, &nlen) ||
                    !(stop = shell_func_end(p, end, name, nlen, &next))) {
                        ps->why = xstrdup("the shell's `declare -fx` output is malformed");
                        return -EINVAL;
                }
                body = memchr(p, '\n', (size_t) (end - p)) + 1;
                key = xasprintf("BASH_FUNC_%.*s%%%%", (int) nlen, name);
                val = xasprintf("() %.*s", (int) (stop - body), body);
                r = shell_add(ps, key, strlen(key), val, strlen(val));
                free(key);
                free(val);
                if (r < 0)
                        return r;
                p = next;
        }
        return 0;
}

/* ---- the file ---- */

/* Splits blob into exactly SHELL_FIELDS NUL-terminated fields. */
static int
shell_fields(const char *blob, size_t len, const char *f[SHELL_FIELDS], size_t n[SHELL_FIELDS])
{
        const char *p = blob, *end = blob + len;

        for (int i = 0; i < SHELL_FIELDS; i++) {
                const char *z = memchr(p, '\0', (size_t) (end - p));
                if (!z)
                        return -1;
                f[i] = p;
                n[i] = (size_t) (z - p);
                p = z + 1;
        }
        return p == end ? 0 : -1;
}

static bool
shell_field_is(const char *f, size_t n, const char *s)
{
        return n == strlen(s) && !memcmp(f, s, n);
}

/* cwd: pwd -P's line when it had one, else $PWD (a removed directory: the next exec finds
 * the nearest one that is left). */
static char *
shell_cwd(const char *phys, size_t pn, const char *logical, size_t ln)
{
        if (pn && phys[pn - 1] == '\n')
                pn--;
        if (pn && phys[0] == '/')
                return xstrndup(phys, pn);
        return ln && logical[0] == '/' ? xstrndup(logical, ln) : NULL;
}

/* Parses a state file. */
int
shell_state_parse(const char *blob, size_t len, struct shell_state *st, char **why)
{
        struct shell_parse ps = {0};
        const char *f[SHELL_FIELDS];
        size_t n[SHELL_FIELDS];
        int r;

        memset(st, 0, sizeof(*st));
        *why = NULL;
        if (len > SHELL_STATE_MAX) {
                *why = xasprintf("it is more than the %u bytes a sandbox keeps", SHELL_STATE_MAX);
                return -E2BIG;
        }
        if (shell_fields(blob, len, f, n) < 0 || !shell_field_is(f[0], n[0], "sandboxd-state 2") ||
            !shell_field_is(f[6], n[6], "end") ||
            !(shell_field_is(f[1], n[1], "bash") || shell_field_is(f[1], n[1], "sh"))) {
                *why = xstrdup("the shell did not finish writing it");
                return -EINVAL;
        }
        ps.env = json_object();
        r = shell_exports(f[4], f[4] + n[4], &ps);
        if (r == 0)
                r = shell_functions(f[5], f[5] + n[5], &ps);
        if (r < 0) {
                json_decref(ps.env);
                *why = ps.why;
                return r;
        }
        st->kind = n[1] == 4 ? SHELL_BASH : SHELL_SH;
        st->cwd = shell_cwd(f[2], n[2], f[3], n[3]);
        st->env = ps.env;
        return 0;
}

/* Frees a parsed state. */
void
shell_state_clear(struct shell_state *st)
{
        free(st->cwd);
        json_decref(st->env);
        memset(st, 0, sizeof(*st));
}
