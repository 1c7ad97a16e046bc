/* parse.c — POSIX sh / bash lexer and parser that yields the simple commands that would run.
 *
 * Not an interpreter: control flow is walked, not evaluated, so every simple command in every
 * branch, body, substitution and heredoc becomes a unit. Words are decoded where the result is
 * deterministic (quotes, escapes, $'…', line continuations, $IFS, brace lists, ~, known
 * variables) and flagged W_DYN where it is not. Work is bounded by a step budget shared by the
 * whole evaluation; running out stops parsing with a parse.limit finding.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        ST_EOF = 1,
        ST_PAREN = 2,
        ST_BRACE = 4,
        ST_CASE = 8,
};

struct pending_hd {
        int unit;
        size_t redir;
        const char *delim;
        bool quoted, strip;
};

struct parser {
        struct eval *ev;
        const char *s;
        size_t n, i;
        int level, depth;
        unsigned uflags;
        struct pending_hd hd[POLICY_MAX_HEREDOCS];
        int nhd;
};

/* A field under construction: bytes plus a parallel "quoted" mask. */
struct field {
        char *s;
        unsigned char *q;
        size_t len, cap;
        unsigned flags;
        bool started;
};

struct wparse {
        struct field *f;
        size_t nf, fcap;
        bool assign;
        int sub_lo;
        bool any;
};

static void p_list(struct parser *p, int stop, int *why);
static void p_dollar(struct parser *p, struct wparse *w, bool dq);
static void p_backtick(struct parser *p, struct wparse *w, bool dq);
static void p_dquote(struct parser *p, struct wparse *w);
static int p_command(struct parser *p);

/* Records the first parse failure and stops. */
void
parse_fail(struct eval *ev, const char *rule, const char *what)
{
        if (!ev->stop)
                analyze_add(ev, -1, rule, what, NULL);
        ev->stop = true;
}

static bool
tick(struct parser *p)
{
        if (p->ev->stop)
                return false;
        if (++p->ev->steps > p->ev->max_steps) {
                parse_fail(p->ev, "parse.limit", "step budget exhausted");
                return false;
        }
        return true;
}

/* New empty unit. */
int
parse_new_unit(struct eval *ev, int level, int depth)
{
        if (ev->nunits >= POLICY_MAX_UNITS) {
                parse_fail(ev, "parse.limit", "too many commands");
                return -1;
        }
        if (ev->nunits == ev->unitcap) {
                ev->unitcap = ev->unitcap ? ev->unitcap * 2 : 16;
                ev->units = xrealloc(ev->units, ev->unitcap * sizeof(*ev->units));
        }
        struct unit *u = &ev->units[ev->nunits];
        memset(u, 0, sizeof(*u));
        u->pipe_prev = -1;
        u->level = level;
        u->depth = depth;
        return (int) ev->nunits++;
}

/* Appends a word to argv of unit k. */
void
parse_unit_push(struct eval *ev, int k, const char *s, unsigned flags)
{
        struct unit *u = &ev->units[k];

        arena_grow(&ev->ar, (void **) &u->argv, &u->argcap, u->argc, sizeof(struct word));
        u->argv[u->argc].s = s;
        u->argv[u->argc].flags = flags;
        u->argv[u->argc].sub_lo = u->argv[u->argc].sub_hi = 0;
        u->argc++;
}

/* ---- fields ---- */

static struct field *
cur(struct wparse *w, struct parser *p)
{
        if (w->nf == 0) {
                arena_grow(&p->ev->ar, (void **) &w->f, &w->fcap, 0, sizeof(struct field));
                memset(&w->f[0], 0, sizeof(w->f[0]));
                w->nf = 1;
        }
        return &w->f[w->nf - 1];
}

static void
put(struct parser *p, struct wparse *w, char c, bool quoted)
{
        struct field *f = cur(w, p);

        if (f->len + 1 >= f->cap) {
                size_t ncap = f->cap ? f->cap * 2 : 32;
                char *ns = arena_alloc(&p->ev->ar, ncap);
                unsigned char *nq = arena_alloc(&p->ev->ar, ncap);
                if (f->len) {
                        memcpy(ns, f->s, f->len);
                        memcpy(nq, f->q, f->len);
                }
                f->s = ns;
                f->q = nq;
                f->cap = ncap;
        }
        f->s[f->len] = c;
        f->q[f->len] = quoted;
        f->len++;
        f->started = true;
        w->any = true;
        if ((unsigned char) c >= 0x80)
                f->flags |= W_NONASCII;
}

static void
puts_q(struct parser *p, struct wparse *w, const char *s, size_t n)
{
        for (size_t k = 0; k < n; k++)
                put(p, w, s[k], true);
}

/* Unquoted field split ($IFS or a known variable's blanks). */
static void
split(struct parser *p, struct wparse *w)
{
        struct field *f = cur(w, p);

        if (!f->started)
                return;
        arena_grow(&p->ev->ar, (void **) &w->f, &w->fcap, w->nf, sizeof(struct field));
        memset(&w->f[w->nf], 0, sizeof(w->f[0]));
        w->nf++;
}

static void
mark(struct parser *p, struct wparse *w, unsigned flags)
{
        cur(w, p)->flags |= flags;
        w->any = true;
}

/* ---- character classes ---- */

static bool
is_meta(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' ||
               c == '>' || c == '(' || c == ')';
}

static bool
is_name_start(char c)
{
        return isalpha((unsigned char) c) || c == '_';
}

static bool
is_name_char(char c)
{
        return isalnum((unsigned char) c) || c == '_';
}

static char
at(struct parser *p, size_t k)
{
        return p->i + k < p->n ? p->s[p->i + k] : '\0';
}

static bool
word_is(struct parser *p, const char *w)
{
        size_t l = strlen(w);

        if (p->i + l > p->n || memcmp(p->s + p->i, w, l) != 0)
                return false;
        return p->i + l == p->n || is_meta(p->s[p->i + l]);
}

/* ---- variables ---- */

static const char *
var_lookup(struct eval *ev, const char *name, size_t n, bool *known)
{
        for (size_t k = ev->nvars; k-- > 0;) {
                if (strlen(ev->vars[k].name) == n && memcmp(ev->vars[k].name, name, n) == 0) {
                        *known = ev->vars[k].value != NULL;
                        return ev->vars[k].value;
                }
        }
        char tmp[128];
        *known = false;
        if (n >= sizeof(tmp))
                return NULL;
        memcpy(tmp, name, n);
        tmp[n] = '\0';
        if (ev->ctx && ev->ctx->env) {
                json_t *v = json_object_get(ev->ctx->env, tmp);
                if (json_is_string(v)) {
                        *known = true;
                        return json_string_value(v);
                }
        }
        if (strcmp(tmp, "HOME") == 0 && ev->home) {
                *known = true;
                return ev->home;
        }
        if (strcmp(tmp, "PWD") == 0 && ev->cwd) {
                *known = true;
                return ev->cwd;
        }
        return NULL;
}

static void
var_set(struct eval *ev, const char *name, size_t n, const char *value)
{
        arena_grow(&ev->ar, (void **) &ev->vars, &ev->varcap, ev->nvars, sizeof(struct var));
        ev->vars[ev->nvars].name = arena_strndup(&ev->ar, name, n);
        ev->vars[ev->nvars].value = value;
        ev->nvars++;
        if (n == 3 && memcmp(name, "IFS", 3) == 0)
                ev->ifs_changed = true;
}

/* Appends a variable's value (or its source text when unknown). */
static void
expand_var(struct parser *p, struct wparse *w, const char *name, size_t n, const char *src,
           size_t srclen, bool dq)
{
        bool known;

        if (n == 3 && memcmp(name, "IFS", 3) == 0 && !p->ev->ifs_changed) {
                if (!dq && !w->assign)
                        split(p, w);
                else
                        put(p, w, ' ', true);
                return;
        }
        const char *v = var_lookup(p->ev, name, n, &known);
        if (!known || (!dq && !w->assign && p->ev->ifs_changed)) {
                puts_q(p, w, src, srclen);
                mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
                return;
        }
        if (!dq)
                cur(w, p)->started = true;
        for (const char *c = v; *c; c++) {
                if (!dq && !w->assign && (*c == ' ' || *c == '\t' || *c == '\n'))
                        split(p, w);
                else
                        put(p, w, *c, true);
        }
        if (dq)
                cur(w, p)->started = true;
        w->any = true;
}

/* ---- quoting ---- */

static void
utf8_put(struct parser *p, struct wparse *w, uint32_t cp)
{
        if (cp < 0x80) {
                put(p, w, (char) cp, true);
        } else if (cp < 0x800) {
                put(p, w, (char) (0xc0 | (cp >> 6)), true);
                put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        } else if (cp < 0x10000) {
                put(p, w, (char) (0xe0 | (cp >> 12)), true);
                put(p, w, (char) (0x80 | ((cp >> 6) & 0x3f)), true);
                put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        } else if (cp < 0x110000) {
                put(p, w, (char) (0xf0 | (cp >> 18)), true);
                put(p, w, (char) (0x80 | ((cp >> 12) & 0x3f)), true);
                put(p, w, (char) (0x80 | ((cp >> 6) & 0x3f)), true);
                put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        }
}

static uint32_t
read_digits(struct parser *p, int base, int max)
{
        uint32_t v = 0;

        for (int k = 0; k < max; k++) {
                char c = at(p, 0);
                int d;
                if (c >= '0' && c <= '9')
                        d = c - '0';
                else if (base == 16 && isxdigit((unsigned char) c))
                        d = tolower((unsigned char) c) - 'a' + 10;
                else
                        break;
                if (d >= base)
                        break;
                v = v * base + d;
                p->i++;
        }
        return v;
}

/* One escape of $'…' after the backslash; returns false for a NUL (ends the string). */
static bool
ansic_escape(struct parser *p, struct wparse *w)
{
        static const char from[] = "abeEfnrtv\\'\"?";
        static const char to[] = "\a\b\033\033\f\n\r\t\v\\'\"?";
        char c = at(p, 0);
        const char *hit = c ? strchr(from, c) : NULL;
        uint32_t v;

        if (hit) {
                p->i++;
                put(p, w, to[hit - from], true);
                return true;
        }
        p->i++;
        switch (c) {
        case 'x':
                v = read_digits(p, 16, 2);
                break;
        case 'u':
                v = read_digits(p, 16, 4);
                break;
        case 'U':
                v = read_digits(p, 16, 8);
                break;
        case 'c':
                v = at(p, 0) & 0x1f;
                if (at(p, 0))
                        p->i++;
                break;
        default:
                if (c >= '0' && c <= '7') {
                        p->i--;
                        v = read_digits(p, 8, 3) & 0xff;
                        break;
                }
                put(p, w, '\\', true);
                if (c)
                        put(p, w, c, true);
                return true;
        }
        if (v == 0)
                return false;
        if (c == 'u' || c == 'U')
                utf8_put(p, w, v);
        else
                put(p, w, (char) v, true);
        return true;
}

static void
p_ansic(struct parser *p, struct wparse *w)
{
        bool live = true;

        p->i += 2;
        mark(p, w, W_QUOTED | W_OBF);
        cur(w, p)->started = true;
        while (tick(p)) {
                char c = at(p, 0);
                if (!c && p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated $'");
                        return;
                }
                if (c == '\'') {
                        p->i++;
                        return;
                }
                if (c == '\\') {
                        p->i++;
                        size_t before = w->f[w->nf - 1].len;
                        bool ok = ansic_escape(p, w);
                        if (!live)
                                w->f[w->nf - 1].len = before;
                        live = live && ok;
                        continue;
                }
                if (live)
                        put(p, w, c, true);
                p->i++;
        }
}

static void
p_squote(struct parser *p, struct wparse *w)
{
        p->i++;
        mark(p, w, W_QUOTED);
        cur(w, p)->started = true;
        while (tick(p)) {
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated '");
                        return;
                }
                char c = p->s[p->i++];
                if (c == '\'')
                        return;
                put(p, w, c, true);
        }
}

static void
p_dquote(struct parser *p, struct wparse *w)
{
        p->i++;
        mark(p, w, W_QUOTED);
        cur(w, p)->started = true;
        while (tick(p)) {
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated \"");
                        return;
                }
                char c = p->s[p->i];
                if (c == '"') {
                        p->i++;
                        return;
                }
                if (c == '\\') {
                        char d = at(p, 1);
                        p->i += 2;
                        if (d == '\n')
                                continue;
                        if (d == '$' || d == '`' || d == '"' || d == '\\') {
                                put(p, w, d, true);
                                continue;
                        }
                        put(p, w, '\\', true);
                        if (d)
                                put(p, w, d, true);
                        else
                                p->i--;
                        continue;
                }
                if (c == '$') {
                        p_dollar(p, w, true);
                        continue;
                }
                if (c == '`') {
                        p_backtick(p, w, true);
                        continue;
                }
                put(p, w, c, true);
                p->i++;
        }
}

/* ---- substitutions ---- */

static void
sub_done(struct parser *p, struct wparse *w, size_t start, int lo, bool dq)
{
        puts_q(p, w, p->s + start, p->i - start);
        mark(p, w, W_DYN | W_SUB | (dq || w->assign ? 0 : W_SPLIT));
        if (w->sub_lo < 0)
                w->sub_lo = lo;
}

/* Walks an expansion body up to an unmatched close (not consumed), running nested
 * substitutions. */
static void
p_walk(struct parser *p, char close)
{
        char open = close == ')' ? '(' : close == '}' ? '{' : '[';
        int depth = 0;
        struct wparse scratch = {.sub_lo = -1};

        while (tick(p)) {
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated expansion");
                        return;
                }
                char c = p->s[p->i];
                if (c == '\\') {
                        p->i += p->i + 1 < p->n ? 2 : 1;
                } else if (c == '\'' && close != '}') {
                        const char *e = memchr(p->s + p->i + 1, '\'', p->n - p->i - 1);
                        p->i = e ? (size_t) (e - p->s) + 1 : p->n;
                } else if (c == '"') {
                        p_dquote(p, &scratch);
                } else if (c == '$') {
                        p_dollar(p, &scratch, true);
                } else if (c == '`') {
                        p_backtick(p, &scratch, true);
                } else if (c == open) {
                        depth++;
                        p->i++;
                } else if (c == close) {
                        if (depth == 0)
                                return;
                        depth--;
                        p->i++;
                } else {
                        p->i++;
                }
        }
}

static bool
nest_enter(struct parser *p)
{
        if (++p->ev->nest > POLICY_MAX_NEST) {
                parse_fail(p->ev, "parse.limit", "nesting too deep");
                return false;
        }
        return true;
}

/* The body of $( … ), <( … ) or >( … ): p->i is at the two-character opener. */
static void
p_paren_sub(struct parser *p, struct wparse *w, bool dq, const char *what)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;
        int why = 0;

        p->i += 2;
        if (nest_enter(p)) {
                p->level++;
                p_list(p, ST_PAREN, &why);
                p->level--;
        }
        p->ev->nest--;
        if (p->ev->stop)
                return;
        if (at(p, 0) != ')') {
                parse_fail(p->ev, "parse.error", what);
                return;
        }
        p->i++;
        sub_done(p, w, start, lo, dq);
}

/* $( … ) parsed in place. */
static void
p_cmdsub(struct parser *p, struct wparse *w, bool dq)
{
        p_paren_sub(p, w, dq, "unterminated $(");
}

static void
p_arith(struct parser *p, struct wparse *w, bool dq, size_t skip, char close)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;

        p->i += skip;
        p_walk(p, close);
        if (p->ev->stop)
                return;
        p->i++;
        if (close == ')') {
                if (at(p, 0) != ')') {
                        parse_fail(p->ev, "parse.error", "unterminated $((");
                        return;
                }
                p->i++;
        }
        puts_q(p, w, p->s + start, p->i - start);
        mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
        if (p->ev->nunits > (size_t) lo && w->sub_lo < 0)
                w->sub_lo = lo;
}

/* Parses a separate script (backtick body, heredoc) with the same evaluation. */
static void
sub_parse(struct parser *p, const char *s, size_t n, int level)
{
        struct parser q = {.ev = p->ev,
                           .s = s,
                           .n = n,
                           .level = level,
                           .depth = p->depth,
                           .uflags = p->uflags};
        int why = 0;

        if (!nest_enter(p)) {
                p->ev->nest--;
                return;
        }
        p_list(&q, 0, &why);
        p->ev->nest--;
}

static void
p_backtick(struct parser *p, struct wparse *w, bool dq)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;
        size_t end = p->i + 1;

        while (end < p->n && p->s[end] != '`')
                end += p->s[end] == '\\' ? 2 : 1;
        char *body = arena_alloc(&p->ev->ar, MIN(end, p->n) - p->i + 1);
        size_t bl = 0;

        p->i++;
        while (tick(p)) {
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated `");
                        return;
                }
                char c = p->s[p->i];
                if (c == '`')
                        break;
                if (c == '\\' && p->i + 1 < p->n &&
                    strchr(dq ? "`\\$\"" : "`\\$", p->s[p->i + 1])) {
                        body[bl++] = p->s[p->i + 1];
                        p->i += 2;
                        continue;
                }
                body[bl++] = c;
                p->i++;
        }
        p->i++;
        sub_parse(p, body, bl, p->level + 1);
        if (!p->ev->stop)
                sub_done(p, w, start, lo, dq);
}

static bool
is_special_param(char c)
{
        return (c >= '0' && c <= '9') || c == '@' || c == '*' || c == '#' || c == '?' || c == '$' ||
               c == '!' || c == '-';
}

/* ${ … } */
static void
p_bparam(struct parser *p, struct wparse *w, bool dq)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;

        p->i += 2;
        size_t ns = p->i;
        p_walk(p, '}');
        if (p->ev->stop)
                return;
        size_t ne = p->i;
        p->i++;
        bool simple = ne > ns && is_name_start(p->s[ns]);
        for (size_t k = ns; simple && k < ne; k++)
                simple = is_name_char(p->s[k]);
        if (simple) {
                expand_var(p, w, p->s + ns, ne - ns, p->s + start, p->i - start, dq);
                return;
        }
        puts_q(p, w, p->s + start, p->i - start);
        mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
        if (p->ev->nunits > (size_t) lo) {
                mark(p, w, W_SUB);
                if (w->sub_lo < 0)
                        w->sub_lo = lo;
        }
}

static void
p_dollar(struct parser *p, struct wparse *w, bool dq)
{
        char c1 = at(p, 1);

        if (c1 == '(' && at(p, 2) == '(')
                p_arith(p, w, dq, 3, ')');
        else if (c1 == '(')
                p_cmdsub(p, w, dq);
        else if (c1 == '{')
                p_bparam(p, w, dq);
        else if (c1 == '[')
                p_arith(p, w, dq, 2, ']');
        else if (c1 == '\'' && !dq)
                p_ansic(p, w);
        else if (c1 == '"' && !dq)
                p->i++;
        else if (is_name_start(c1)) {
                size_t s = p->i + 1, e = s;
                while (e < p->n && is_name_char(p->s[e]))
                        e++;
                p->i = e;
                expand_var(p, w, p->s + s, e - s, p->s + s - 1, e - s + 1, dq);
        } else if (c1 && is_special_param(c1)) {
                puts_q(p, w, p->s + p->i, 2);
                p->i += 2;
                mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
        } else {
                put(p, w, '$', dq);
                p->i++;
        }
}

/* <( … ) and >( … ) */
static void
p_procsub(struct parser *p, struct wparse *w)
{
        p_paren_sub(p, w, true, "unterminated process substitution");
}

/* ---- words ---- */

static bool
tilde_here(struct parser *p, struct wparse *w)
{
        struct field *f = cur(w, p);

        if (w->nf == 1 && f->len == 0 && !f->started)
                return true;
        if (!w->assign || f->len == 0 || f->q[f->len - 1])
                return false;
        return f->s[f->len - 1] == '=' || f->s[f->len - 1] == ':';
}

static void
p_tilde(struct parser *p, struct wparse *w)
{
        size_t s = p->i + 1, e = s;

        while (e < p->n && !is_meta(p->s[e]) && p->s[e] != '/' && !(w->assign && p->s[e] == ':'))
                e++;
        const char *home = p->ev->home;
        if (e == s && home) {
                puts_q(p, w, home, strlen(home));
        } else if (e - s == 4 && memcmp(p->s + s, "root", 4) == 0) {
                puts_q(p, w, "/root", 5);
        } else if (e == s) {
                put(p, w, '~', true);
        } else {
                puts_q(p, w, p->s + p->i, e - p->i);
                mark(p, w, W_DYN);
        }
        p->i = e;
}

static bool
is_assign_prefix(struct field *f)
{
        if (f->len == 0 || !is_name_start(f->s[0]) || f->q[0])
                return false;
        size_t e = f->len;
        if (e > 1 && f->s[e - 1] == '+')
                e--;
        for (size_t k = 0; k < e; k++)
                if (f->q[k] || !is_name_char(f->s[k]))
                        return false;
        return true;
}

static void
p_extglob(struct parser *p, struct wparse *w)
{
        size_t start = p->i;

        p->i += 2;
        p_walk(p, ')');
        if (p->ev->stop)
                return;
        p->i++;
        for (size_t k = start; k < p->i; k++)
                put(p, w, p->s[k], false);
        mark(p, w, W_GLOB);
}

/* One unquoted character that is not a quote or expansion opener. */
static void
p_plain(struct parser *p, struct wparse *w, char c)
{
        if (c == '=' && !w->assign && w->nf == 1 && is_assign_prefix(cur(w, p))) {
                w->assign = true;
                mark(p, w, W_ASSIGN);
        }
        if (c == '*' || c == '?' || c == '[')
                mark(p, w, W_GLOB);
        put(p, w, c, false);
        p->i++;
}

static void
p_backslash(struct parser *p, struct wparse *w)
{
        char d = at(p, 1);

        if (d == '\n') {
                p->i += 2;
                return;
        }
        if (!d && p->i + 1 >= p->n) {
                put(p, w, '\\', false);
                p->i++;
                return;
        }
        put(p, w, d, true);
        mark(p, w, W_QUOTED | W_OBF);
        p->i += 2;
}

/* Reads one word into w (fields before brace expansion). Returns false if none. */
static bool
p_word_raw(struct parser *p, struct wparse *w)
{
        while (tick(p) && p->i < p->n) {
                char c = p->s[p->i];
                if ((c == '<' || c == '>') && at(p, 1) == '(') {
                        p_procsub(p, w);
                        continue;
                }
                if (is_meta(c)) {
                        if (c == '(' && w->any && strchr("@!+*?", p->s[p->i - 1]))
                                break;
                        break;
                }
                if (c && strchr("@!+*?", c) && at(p, 1) == '(') {
                        p_extglob(p, w);
                        continue;
                }
                switch (c) {
                case '\\':
                        p_backslash(p, w);
                        break;
                case '\'':
                        p_squote(p, w);
                        break;
                case '"':
                        p_dquote(p, w);
                        break;
                case '$':
                        p_dollar(p, w, false);
                        break;
                case '`':
                        p_backtick(p, w, false);
                        break;
                case '~':
                        if (tilde_here(p, w)) {
                                p_tilde(p, w);
                                break;
                        }
                        /* fall through */
                default:
                        p_plain(p, w, c);
                }
        }
        return w->any && !p->ev->stop;
}

/* ---- brace expansion ---- */

struct bout {
        struct parser *p;
        struct word *out;
        size_t n, cap;
        unsigned flags;
        int sub_lo, sub_hi;
        bool overflow;
};

static void
bout_emit(struct bout *b, const char *s, size_t len)
{
        struct eval *ev = b->p->ev;

        if (b->n >= POLICY_MAX_BRACE) {
                b->overflow = true;
                return;
        }
        if (++ev->nwords > POLICY_MAX_WORDS) {
                parse_fail(ev, "parse.limit", "too many words");
                b->overflow = true;
                return;
        }
        arena_grow(&ev->ar, (void **) &b->out, &b->cap, b->n, sizeof(struct word));
        struct word *wd = &b->out[b->n++];
        wd->s = arena_strndup(&ev->ar, s, len);
        wd->flags = b->flags;
        wd->sub_lo = b->sub_lo;
        wd->sub_hi = b->sub_hi;
        for (size_t k = 0; k < len; k++)
                if ((unsigned char) s[k] >= 0x80)
                        wd->flags |= W_NONASCII;
}

/* Finds the first expandable {…}: sets *a, *b; returns false if none. */
static bool
brace_find(const char *s, const unsigned char *q, size_t len, size_t *a, size_t *b)
{
        for (size_t k = 0; k < len; k++) {
                if (s[k] != '{' || q[k])
                        continue;
                int depth = 0;
                bool comma = false;
                for (size_t j = k; j < len; j++) {
                        if (q[j])
                                continue;
                        if (s[j] == '{')
                                depth++;
                        else if (s[j] == '}' && --depth == 0) {
                                bool seq = j - k > 4 && memmem(s + k, j - k, "..", 2);
                                if (comma || seq) {
                                        *a = k;
                                        *b = j;
                                        return true;
                                }
                                break;
                        } else if (s[j] == ',' && depth == 1)
                                comma = true;
                }
        }
        return false;
}

static void brace_rec(struct bout *b, const char *s, const unsigned char *q, size_t len, int depth);

static void
brace_alt(struct bout *b, const char *s, const unsigned char *q, size_t a, size_t bb, size_t len,
          const char *alt, const unsigned char *altq, size_t altlen, int depth)
{
        size_t nl = a + altlen + (len - bb - 1);
        char *ns = arena_alloc(&b->p->ev->ar, nl + 1);
        unsigned char *nq = arena_alloc(&b->p->ev->ar, nl + 1);

        b->p->ev->steps += nl / 16;
        memcpy(ns, s, a);
        memcpy(nq, q, a);
        memcpy(ns + a, alt, altlen);
        memcpy(nq + a, altq, altlen);
        memcpy(ns + a + altlen, s + bb + 1, len - bb - 1);
        memcpy(nq + a + altlen, q + bb + 1, len - bb - 1);
        brace_rec(b, ns, nq, nl, depth + 1);
}

static bool
brace_seq(struct bout *b, const char *s, const unsigned char *q, size_t a, size_t bb, size_t len,
          int depth)
{
        char lo[24], hi[24];
        long x, y, step = 1;
        char *e;
        const char *in = s + a + 1;
        size_t il = bb - a - 1;
        const char *dots = memmem(in, il, "..", 2);

        if (!dots || (size_t) (dots - in) >= sizeof(lo) || il >= sizeof(lo) * 2)
                return false;
        memcpy(lo, in, dots - in);
        lo[dots - in] = '\0';
        size_t rest = il - (dots - in) - 2;
        if (rest >= sizeof(hi))
                return false;
        memcpy(hi, dots + 2, rest);
        hi[rest] = '\0';
        char *d2 = strstr(hi, "..");
        if (d2) {
                *d2 = '\0';
                step = labs(strtol(d2 + 2, NULL, 10));
                step = step ? step : 1;
        }
        bool chars = strlen(lo) == 1 && strlen(hi) == 1 && !isdigit((unsigned char) lo[0]);
        if (chars) {
                x = lo[0];
                y = hi[0];
        } else {
                x = strtol(lo, &e, 10);
                if (*e || !*lo)
                        return false;
                y = strtol(hi, &e, 10);
                if (*e || !*hi)
                        return false;
        }
        static const unsigned char qq[24] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        for (long v = x; !b->overflow && (x <= y ? v <= y : v >= y); v += x <= y ? step : -step) {
                char buf[24];
                int n = chars ? snprintf(buf, sizeof(buf), "%c", (char) v)
                              : snprintf(buf, sizeof(buf), "%ld", v);
                brace_alt(b, s, q, a, bb, len, buf, qq, (size_t) n, depth);
        }
        return true;
}

static void
brace_rec(struct bout *b, const char *s, const unsigned char *q, size_t len, int depth)
{
        size_t a, bb;

        if (b->overflow || b->p->ev->stop)
                return;
        if (depth > 32 || !brace_find(s, q, len, &a, &bb)) {
                bout_emit(b, s, len);
                return;
        }
        bool comma = false;
        int d = 0;
        for (size_t k = a + 1; k < bb; k++) {
                if (q[k])
                        continue;
                if (s[k] == '{')
                        d++;
                else if (s[k] == '}')
                        d--;
                else if (s[k] == ',' && d == 0)
                        comma = true;
        }
        if (!comma) {
                if (!brace_seq(b, s, q, a, bb, len, depth))
                        bout_emit(b, s, len);
                return;
        }
        size_t st = a + 1;
        d = 0;
        for (size_t k = a + 1; k <= bb && !b->overflow; k++) {
                if (k < bb && q[k])
                        continue;
                if (k < bb && s[k] == '{')
                        d++;
                else if (k < bb && s[k] == '}')
                        d--;
                else if (k == bb || (s[k] == ',' && d == 0)) {
                        brace_alt(b, s, q, a, bb, len, s + st, q + st, k - st, depth);
                        st = k + 1;
                }
        }
}

/* Reads a word and returns its fields (after brace expansion) in *out. */
static size_t
p_word(struct parser *p, struct word **out, bool *assign)
{
        struct wparse w = {.sub_lo = -1};
        struct bout b = {.p = p};

        *out = NULL;
        if (assign)
                *assign = false;
        if (!p_word_raw(p, &w))
                return 0;
        if (assign)
                *assign = w.assign;
        for (size_t k = 0; k < w.nf; k++) {
                struct field *f = &w.f[k];
                if (!f->started && f->len == 0)
                        continue;
                b.flags = f->flags | (w.assign ? W_ASSIGN : 0);
                b.sub_lo = w.sub_lo < 0 ? 0 : w.sub_lo;
                b.sub_hi = w.sub_lo < 0 ? 0 : (int) p->ev->nunits;
                /* An empty quoted word ('' or "") has no buffer at all. */
                if (w.assign || f->len == 0 || f->len > 4096 || !memchr(f->s, '{', f->len)) {
                        bout_emit(&b, f->s ? f->s : "", f->len);
                        if (f->len > 4096 && memchr(f->s, '{', f->len))
                                b.out[b.n - 1].flags |= W_DYN;
                        continue;
                }
                size_t first = b.n;
                brace_rec(&b, f->s, f->q, f->len, 0);
                for (size_t j = first; b.overflow && j < b.n; j++)
                        b.out[j].flags |= W_DYN | W_SPLIT; /* too many words: not judged */
        }
        *out = b.out;
        return b.n;
}

/* ---- redirections and heredocs ---- */

static bool
redir_start(struct parser *p)
{
        size_t k = p->i;

        while (k < p->n && isdigit((unsigned char) p->s[k]) && k - p->i < 4)
                k++;
        if (k < p->n && (p->s[k] == '<' || p->s[k] == '>'))
                return !(k + 1 < p->n && p->s[k + 1] == '(');
        if (k == p->i && p->s[k] == '&' && k + 1 < p->n && p->s[k + 1] == '>')
                return true;
        if (k == p->i && p->s[k] == '{') {
                const char *e = memchr(p->s + k, '}', MIN(p->n - k, (size_t) 64));
                return e && e + 1 < p->s + p->n && (e[1] == '<' || e[1] == '>');
        }
        return false;
}

static struct redir *
add_redir(struct parser *p, int k)
{
        struct unit *u = &p->ev->units[k];

        arena_grow(&p->ev->ar, (void **) &u->redir, &u->redircap, u->nredir, sizeof(struct redir));
        struct redir *r = &u->redir[u->nredir++];
        memset(r, 0, sizeof(*r));
        return r;
}

static void
p_redir(struct parser *p, int k)
{
        int fd = -1;
        bool dynfd = false;
        enum redir_kind kind = RD_OUT;
        bool heredoc = false, strip = false, dup = false;

        if (at(p, 0) == '{') {
                p->i = (size_t) ((const char *) memchr(p->s + p->i, '}', p->n - p->i) - p->s) + 1;
                dynfd = true;
        } else if (isdigit((unsigned char) at(p, 0))) {
                fd = (int) read_digits(p, 10, 4);
        }
        const char *o = p->s + p->i;
        size_t rem = p->n - p->i;
        if (rem >= 3 && !memcmp(o, "<<<", 3)) {
                kind = RD_HERESTR;
                p->i += 3;
        } else if (rem >= 3 && !memcmp(o, "<<-", 3)) {
                kind = RD_HEREDOC, heredoc = strip = true;
                p->i += 3;
        } else if (rem >= 2 && !memcmp(o, "<<", 2)) {
                kind = RD_HEREDOC, heredoc = true;
                p->i += 2;
        } else if (rem >= 2 && (!memcmp(o, "<&", 2) || !memcmp(o, ">&", 2))) {
                kind = o[0] == '<' ? RD_IN : RD_OUT, dup = true;
                p->i += 2;
        } else if (rem >= 2 && !memcmp(o, "<>", 2)) {
                p->i += 2;
        } else if (rem >= 3 && !memcmp(o, "&>>", 3)) {
                p->i += 3;
        } else if (rem >= 2 &&
                   (!memcmp(o, ">>", 2) || !memcmp(o, ">|", 2) || !memcmp(o, "&>", 2))) {
                p->i += 2;
        } else if (o[0] == '<') {
                kind = RD_IN;
                p->i++;
        } else {
                p->i++;
        }
        while (at(p, 0) == ' ' || at(p, 0) == '\t')
                p->i++;
        struct word *ws;
        size_t nw = p_word(p, &ws, NULL);
        if (p->ev->stop)
                return;
        if (nw == 0) {
                parse_fail(p->ev, "parse.error", "redirection without a target");
                return;
        }
        struct redir *r = add_redir(p, k);
        r->kind = kind;
        r->fd = dynfd ? -2 : fd;
        r->target = ws[0];
        if (nw > 1)
                r->target.flags |= W_DYN;
        if (dup && (strcmp(ws[0].s, "-") == 0 || strspn(ws[0].s, "0123456789") == strlen(ws[0].s)))
                r->kind = RD_DUP;
        if (heredoc) {
                if (p->nhd >= POLICY_MAX_HEREDOCS) {
                        parse_fail(p->ev, "parse.limit", "too many heredocs on one line");
                        return;
                }
                struct pending_hd *h = &p->hd[p->nhd++];
                h->unit = k;
                h->redir = p->ev->units[k].nredir - 1;
                h->delim = ws[0].s;
                h->quoted = (ws[0].flags & W_QUOTED) != 0;
                h->strip = strip;
        }
}

/* Heredoc body in "unquoted" mode: like double quotes without the quote character. */
static void
heredoc_expand(struct parser *p, int unit, size_t ridx, const char *body, size_t n)
{
        struct parser q = {.ev = p->ev,
                           .s = body,
                           .n = n,
                           .level = p->level + 1,
                           .depth = p->depth,
                           .uflags = p->uflags};
        struct wparse w = {.sub_lo = -1};

        while (tick(&q) && q.i < q.n) {
                char c = q.s[q.i];
                if (c == '\\' && q.i + 1 < q.n && strchr("$`\\\n", q.s[q.i + 1])) {
                        if (q.s[q.i + 1] != '\n')
                                put(&q, &w, q.s[q.i + 1], true);
                        q.i += 2;
                } else if (c == '$') {
                        p_dollar(&q, &w, true);
                } else if (c == '`') {
                        p_backtick(&q, &w, true);
                } else {
                        put(&q, &w, c, true);
                        q.i++;
                }
        }
        struct redir *r = &p->ev->units[unit].redir[ridx];
        r->body = w.nf ? arena_strndup(&p->ev->ar, w.f[0].s ? w.f[0].s : "", w.f[0].len) : "";
        r->body_dyn = w.nf && (w.f[0].flags & W_DYN);
}

static void
read_heredocs(struct parser *p)
{
        for (int h = 0; h < p->nhd && !p->ev->stop; h++) {
                struct pending_hd *hd = &p->hd[h];
                size_t body = p->i, end = p->n, dl = strlen(hd->delim);
                while (p->i < p->n && tick(p)) {
                        size_t ls = p->i;
                        const char *nl = memchr(p->s + ls, '\n', p->n - ls);
                        size_t le = nl ? (size_t) (nl - p->s) : p->n;
                        size_t t = ls;
                        while (hd->strip && t < le && p->s[t] == '\t')
                                t++;
                        p->i = nl ? le + 1 : p->n;
                        if (le - t == dl && memcmp(p->s + t, hd->delim, dl) == 0) {
                                end = ls;
                                break;
                        }
                }
                if (hd->quoted)
                        p->ev->units[hd->unit].redir[hd->redir].body =
                                arena_strndup(&p->ev->ar, p->s + body, end - body);
                else
                        heredoc_expand(p, hd->unit, hd->redir, p->s + body, end - body);
        }
        p->nhd = 0;
}

/* ---- commands ---- */

static void
skip_blanks(struct parser *p)
{
        while (p->i < p->n) {
                char c = p->s[p->i];
                if (c == ' ' || c == '\t')
                        p->i++;
                else if (c == '\\' && at(p, 1) == '\n')
                        p->i += 2;
                else
                        break;
        }
}

static void
skip_comment(struct parser *p)
{
        const char *nl = memchr(p->s + p->i, '\n', p->n - p->i);

        p->i = nl ? (size_t) (nl - p->s) : p->n;
}

/* Skips blanks, comments and newlines (reading heredocs at each newline). */
static void
skip_space(struct parser *p)
{
        while (tick(p)) {
                skip_blanks(p);
                if (at(p, 0) == '#')
                        skip_comment(p);
                if (at(p, 0) != '\n')
                        return;
                p->i++;
                read_heredocs(p);
        }
}

static int
unit_for(struct parser *p, int *k)
{
        if (*k < 0) {
                *k = parse_new_unit(p->ev, p->level, p->depth);
                if (*k >= 0)
                        p->ev->units[*k].flags |= p->uflags;
        }
        return *k;
}

static void
trailing_redirs(struct parser *p)
{
        int k = -1;

        for (;;) {
                skip_blanks(p);
                if (p->ev->stop || p->i >= p->n || !redir_start(p))
                        return;
                if (unit_for(p, &k) < 0)
                        return;
                p_redir(p, k);
        }
}

static void
group(struct parser *p, int stop)
{
        int why = 0;

        if (nest_enter(p))
                p_list(p, stop, &why);
        p->ev->nest--;
        if (p->ev->stop)
                return;
        if (stop == ST_PAREN) {
                if (at(p, 0) != ')') {
                        parse_fail(p->ev, "parse.error", "unterminated (");
                        return;
                }
                p->i++;
        } else if (why != ST_BRACE) {
                parse_fail(p->ev, "parse.error", "unterminated {");
                return;
        }
        trailing_redirs(p);
}

static void
discard_words_until_sep(struct parser *p)
{
        struct word *ws;

        while (tick(p)) {
                skip_blanks(p);
                char c = at(p, 0);
                if (!c || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')')
                        return;
                if (c == '(' || c == '<' || c == '>') {
                        p->i++;
                        continue;
                }
                if (p_word(p, &ws, NULL) == 0 && !p->ev->stop)
                        p->i++;
        }
}

static void
p_for(struct parser *p)
{
        struct word *ws;

        skip_blanks(p);
        if (at(p, 0) == '(' && at(p, 1) == '(') {
                p->i += 2;
                p_walk(p, ')');
                p->i += 2;
                return;
        }
        size_t nw = p_word(p, &ws, NULL);
        if (nw && is_name_start(ws[0].s[0]))
                var_set(p->ev, ws[0].s, strlen(ws[0].s), NULL);
        discard_words_until_sep(p);
}

static void
p_case(struct parser *p)
{
        struct word *ws;
        int why = 0;

        skip_blanks(p);
        p_word(p, &ws, NULL);
        skip_space(p);
        if (!word_is(p, "in")) {
                parse_fail(p->ev, "parse.error", "case without in");
                return;
        }
        p->i += 2;
        while (tick(p)) {
                skip_space(p);
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "case without esac");
                        return;
                }
                if (word_is(p, "esac")) {
                        p->i += 4;
                        return;
                }
                if (at(p, 0) == '(')
                        p->i++;
                while (tick(p)) {
                        skip_blanks(p);
                        char c = at(p, 0);
                        if (c == '|') {
                                p->i++;
                        } else if (c == ')') {
                                p->i++;
                                break;
                        } else if (!c || is_meta(c) || p_word(p, &ws, NULL) == 0) {
                                parse_fail(p->ev, "parse.error", "bad case pattern");
                                return;
                        }
                }
                p_list(p, ST_CASE, &why);
                if (p->ev->stop)
                        return;
                if (at(p, 0) == ';')
                        p->i += at(p, 1) == ';' && at(p, 2) == '&' ? 3 : 2;
        }
}

static void
p_dbracket(struct parser *p)
{
        struct word *ws;

        while (tick(p)) {
                skip_blanks(p);
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated [[");
                        return;
                }
                if (word_is(p, "]]")) {
                        p->i += 2;
                        return;
                }
                char c = at(p, 0);
                if (c == '\n') {
                        p->i++;
                        read_heredocs(p);
                } else if (c && strchr("&|<>()!;", c)) {
                        p->i++;
                } else if (p_word(p, &ws, NULL) == 0 && !p->ev->stop) {
                        p->i++;
                }
        }
}

static void
p_funcbody(struct parser *p, const char *name)
{
        int lo = (int) p->ev->nunits;
        unsigned saved = p->uflags;

        skip_space(p);
        p->uflags |= U_FUNC;
        p_command(p);
        p->uflags = saved;
        struct eval *ev = p->ev;
        arena_grow(&ev->ar, (void **) &ev->funcs, &ev->funccap, ev->nfuncs,
                   sizeof(struct func_def));
        ev->funcs[ev->nfuncs].name = name;
        ev->funcs[ev->nfuncs].lo = lo;
        ev->funcs[ev->nfuncs].hi = (int) ev->nunits;
        ev->nfuncs++;
}

static const char *const skip_words[] = {"!",    "if", "then", "elif",  "else",
                                         "fi",   "do", "done", "while", "until",
                                         "time", "}",  "esac", "coproc"};

/* Reserved word in command position; returns 1 if handled and the command is over, 0 to go on
 * reading words, -1 if not reserved. */
static int
reserved(struct parser *p, const char *w)
{
        for (size_t k = 0; k < ARRAY_SIZE(skip_words); k++) {
                if (strcmp(w, skip_words[k]) == 0) {
                        if (strcmp(w, "time") == 0) {
                                skip_blanks(p);
                                if (word_is(p, "-p"))
                                        p->i += 2;
                        }
                        return 0;
                }
        }
        if (strcmp(w, "{") == 0) {
                group(p, ST_BRACE);
                return 1;
        }
        if (strcmp(w, "for") == 0 || strcmp(w, "select") == 0) {
                p_for(p);
                return 1;
        }
        if (strcmp(w, "case") == 0) {
                p_case(p);
                return 1;
        }
        if (strcmp(w, "[[") == 0) {
                p_dbracket(p);
                return 1;
        }
        if (strcmp(w, "function") == 0) {
                struct word *ws;
                skip_blanks(p);
                if (p_word(p, &ws, NULL) == 0)
                        return 1;
                skip_blanks(p);
                if (at(p, 0) == '(' && at(p, 1) == ')')
                        p->i += 2;
                p_funcbody(p, ws[0].s);
                return 1;
        }
        return -1;
}

/* Script-level variable tracking after a command. */
static void
track_vars(struct parser *p, int k)
{
        struct unit *u = &p->ev->units[k];
        static const char *const setters[] = {"export", "declare", "local", "readonly", "typeset"};

        if (u->argc == 0) {
                for (size_t a = 0; a < u->nassign; a++) {
                        const char *s = u->assign[a].s, *eq = strchr(s, '=');
                        size_t nl = (size_t) (eq - s) - (eq > s && eq[-1] == '+');
                        bool lit = !(u->assign[a].flags & W_DYN) && eq[-1] != '+';
                        var_set(p->ev, s, nl, lit && p->level == 0 ? eq + 1 : NULL);
                }
                return;
        }
        const char *c = u->argv[0].s;
        bool setter = false, reader = strcmp(c, "read") == 0 || strcmp(c, "unset") == 0 ||
                                      strcmp(c, "mapfile") == 0 || strcmp(c, "printf") == 0;
        for (size_t s = 0; s < ARRAY_SIZE(setters); s++)
                setter = setter || strcmp(c, setters[s]) == 0;
        if (!setter && !reader)
                return;
        for (size_t a = 1; a < u->argc; a++) {
                const char *s = u->argv[a].s;
                size_t nl = 0;
                while (is_name_char(s[nl]))
                        nl++;
                if (nl && is_name_start(s[0]) && (s[nl] == '=' || s[nl] == '\0'))
                        var_set(p->ev, s, nl, NULL);
        }
}

static bool
func_def_follows(struct parser *p)
{
        size_t k = p->i;

        while (k < p->n && (p->s[k] == ' ' || p->s[k] == '\t'))
                k++;
        if (k >= p->n || p->s[k] != '(')
                return false;
        k++;
        while (k < p->n && (p->s[k] == ' ' || p->s[k] == '\t'))
                k++;
        if (k >= p->n || p->s[k] != ')')
                return false;
        p->i = k + 1;
        return true;
}

/* Adds the fields of one word to unit k as argv or assignments. */
static void
add_word(struct parser *p, int k, struct word *ws, size_t nw, bool assign)
{
        struct unit *u = &p->ev->units[k];

        for (size_t j = 0; j < nw; j++) {
                if (assign && u->argc == 0) {
                        arena_grow(&p->ev->ar, (void **) &u->assign, &u->assigncap, u->nassign,
                                   sizeof(struct word));
                        u->assign[u->nassign++] = ws[j];
                        continue;
                }
                arena_grow(&p->ev->ar, (void **) &u->argv, &u->argcap, u->argc,
                           sizeof(struct word));
                u->argv[u->argc++] = ws[j];
        }
}

static int
p_simple(struct parser *p)
{
        int k = -1;

        while (tick(p)) {
                skip_blanks(p);
                char c = at(p, 0);
                if (p->i >= p->n || c == '\n' || c == ';' || c == '|' || c == ')' ||
                    (c == '&' && at(p, 1) != '>'))
                        break;
                if (c == '#') {
                        skip_comment(p);
                        break;
                }
                if (unit_for(p, &k) < 0)
                        return -1;
                if (redir_start(p)) {
                        p_redir(p, k);
                        continue;
                }
                if (c == '(') {
                        parse_fail(p->ev, "parse.error", "unexpected (");
                        return k;
                }
                struct word *ws;
                bool assign;
                size_t nw = p_word(p, &ws, &assign);
                if (nw == 0) {
                        if (!p->ev->stop)
                                p->i++;
                        continue;
                }
                struct unit *u = &p->ev->units[k];
                if (u->argc == 0 && nw == 1 && !(ws[0].flags & (W_QUOTED | W_DYN)) && !assign) {
                        int r = reserved(p, ws[0].s);
                        if (r == 0)
                                continue;
                        if (r == 1)
                                return k;
                }
                if (u->argc == 0 && nw == 1 && !assign && func_def_follows(p)) {
                        p_funcbody(p, ws[0].s);
                        return -1;
                }
                add_word(p, k, ws, nw, assign);
        }
        if (k >= 0)
                track_vars(p, k);
        return k;
}

/* One command of a pipeline; returns its last unit at this level or -1. */
static int
p_command(struct parser *p)
{
        int lo = (int) p->ev->nunits;

        skip_blanks(p);
        if (at(p, 0) == '(' && at(p, 1) == '(') {
                int k = -1;
                p->i += 2;
                p_walk(p, ')');
                if (!p->ev->stop && at(p, 1) == ')')
                        p->i += 2;
                else
                        parse_fail(p->ev, "parse.error", "unterminated ((");
                trailing_redirs(p);
                return k;
        }
        if (at(p, 0) == '(') {
                p->i++;
                group(p, ST_PAREN);
        } else {
                int k = p_simple(p);
                if (k >= 0 && k == (int) p->ev->nunits - 1)
                        return k;
        }
        for (int k = (int) p->ev->nunits - 1; k >= lo; k--)
                if (p->ev->units[k].level == p->level)
                        return k;
        return -1;
}

static void
p_pipeline(struct parser *p)
{
        skip_blanks(p);
        if (word_is(p, "!"))
                p->i++;
        int prev = p_command(p);
        while (tick(p)) {
                skip_blanks(p);
                if (at(p, 0) != '|' || at(p, 1) == '|')
                        return;
                p->i += at(p, 1) == '&' ? 2 : 1;
                skip_space(p);
                int lo = (int) p->ev->nunits;
                int next = p_command(p);
                for (int k = lo; k < (int) p->ev->nunits; k++) {
                        struct unit *u = &p->ev->units[k];
                        if (u->level == p->level && u->pipe_prev < 0)
                                u->pipe_prev = prev >= 0 ? prev : -2;
                }
                prev = next;
        }
}

static void
p_andor(struct parser *p)
{
        p_pipeline(p);
        while (tick(p)) {
                skip_blanks(p);
                if (!((at(p, 0) == '&' && at(p, 1) == '&') || (at(p, 0) == '|' && at(p, 1) == '|')))
                        return;
                p->i += 2;
                skip_space(p);
                p_pipeline(p);
        }
}

static void
p_list(struct parser *p, int stop, int *why)
{
        *why = ST_EOF;
        while (tick(p)) {
                skip_space(p);
                if (p->ev->stop || p->i >= p->n)
                        break;
                char c = p->s[p->i];
                if (c == ')') {
                        if (stop & ST_PAREN) {
                                *why = ST_PAREN;
                                return;
                        }
                        parse_fail(p->ev, "parse.error", "unexpected )");
                        return;
                }
                if (c == ';' && (at(p, 1) == ';' || at(p, 1) == '&')) {
                        if (stop & ST_CASE) {
                                *why = ST_CASE;
                                return;
                        }
                        parse_fail(p->ev, "parse.error", "unexpected ;;");
                        return;
                }
                if ((stop & ST_BRACE) && word_is(p, "}")) {
                        p->i++;
                        *why = ST_BRACE;
                        return;
                }
                if ((stop & ST_CASE) && word_is(p, "esac")) {
                        *why = ST_CASE;
                        return;
                }
                if (c == ';' || c == '&' || c == '|') {
                        p->i++;
                        continue;
                }
                int lo = (int) p->ev->nunits;
                p_andor(p);
                skip_blanks(p);
                if (at(p, 0) == '&' && at(p, 1) != '&' && at(p, 1) != '>') {
                        for (int k = lo; k < (int) p->ev->nunits; k++)
                                p->ev->units[k].flags |= U_BG;
                        p->i++;
                } else if (at(p, 0) == ';' && at(p, 1) != ';' && at(p, 1) != '&') {
                        p->i++;
                }
        }
        if (p->nhd && !p->ev->stop)
                read_heredocs(p);
}

/* Parses script into units of ev. */
void
parse_script(struct eval *ev, const char *s, size_t n, int depth)
{
        struct parser p = {
                .ev = ev, .s = s, .n = n, .depth = depth, .uflags = depth > 0 ? U_CARRIED : 0};
        int why = 0;

        p_list(&p, 0, &why);
}
