/* word.c — shell words: quoting, expansions, brace lists, tilde, variables, and the text a
 * literal echo or printf prints.
 *
 * A word is decoded where the result is deterministic (quotes, backslashes, $'…', line
 * continuations, unquoted $IFS as a field split, brace lists and {a..b} up to 256 words, ~,
 * variables known from the context or assigned literally earlier, $(echo …)/$(printf …) of
 * literal text) and flagged W_DYN where it is not. Substitutions ($(…), `…`, <(…), >(…)) are
 * parsed as commands of their own (parse.c); a word records the units they created.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/parser.h"
#include "protocol/util.h"

static void p_dquote(struct parser *p, struct wparse *w);

/* ---- fields ---- */

struct field *
word_cur(struct wparse *w, struct parser *p)
{
        if (w->nf == 0) {
                arena_grow(&p->ev->ar, (void **) &w->f, &w->fcap, 0, sizeof(struct field));
                memset(&w->f[0], 0, sizeof(w->f[0]));
                w->nf = 1;
        }
        return &w->f[w->nf - 1];
}

void
word_put(struct parser *p, struct wparse *w, char c, bool quoted)
{
        struct field *f = word_cur(w, p);

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

void
word_puts(struct parser *p, struct wparse *w, const char *s, size_t n)
{
        for (size_t k = 0; k < n; k++)
                word_put(p, w, s[k], true);
}

/* Unquoted field word_split ($IFS or a known variable's blanks). */
void
word_split(struct parser *p, struct wparse *w)
{
        struct field *f = word_cur(w, p);

        if (!f->started)
                return;
        arena_grow(&p->ev->ar, (void **) &w->f, &w->fcap, w->nf, sizeof(struct field));
        memset(&w->f[w->nf], 0, sizeof(w->f[0]));
        w->nf++;
}

void
word_mark(struct parser *p, struct wparse *w, unsigned flags)
{
        word_cur(w, p)->flags |= flags;
        w->any = true;
}

/* ---- character classes ---- */

bool
word_meta(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' ||
               c == '>' || c == '(' || c == ')';
}

bool
word_name_start(char c)
{
        return isalpha((unsigned char) c) || c == '_';
}

bool
word_name_char(char c)
{
        return isalnum((unsigned char) c) || c == '_';
}

char
word_at(struct parser *p, size_t k)
{
        return p->i + k < p->n ? p->s[p->i + k] : '\0';
}

bool
word_is(struct parser *p, const char *w)
{
        size_t l = strlen(w);

        if (p->i + l > p->n || memcmp(p->s + p->i, w, l) != 0)
                return false;
        return p->i + l == p->n || word_meta(p->s[p->i + l]);
}

/* ---- variables ---- */

const char var_unset[] = "";

/* Variables bash sets itself, and the daemon's shell wrapper: never "unset" by default. */
static bool
var_special(const char *name)
{
        static const char *const specials[] = {
                "RANDOM",   "SRANDOM", "SECONDS",  "LINENO",     "PPID",          "UID",
                "EUID",     "GROUPS",  "HOSTNAME", "HOSTTYPE",   "MACHTYPE",      "OSTYPE",
                "OLDPWD",   "SHLVL",   "OPTIND",   "OPTARG",     "OPTERR",        "PS1",
                "PS2",      "PS3",     "PS4",      "PIPESTATUS", "FUNCNAME",      "REPLY",
                "COLUMNS",  "LINES",   "HISTFILE", "HISTSIZE",   "EPOCHREALTIME", "EPOCHSECONDS",
                "DIRSTACK", "_",       "IFS",      "SHELL",      "TERM",          NULL};
        return analyze_in(name, specials) || !strncmp(name, "BASH", 4) ||
               !strncmp(name, "COMP_", 5) || !strncmp(name, "__sbx", 5);
}

/* A script variable in vars[lo..hi), top down: true when found (*v its value). */
static bool
var_scan(struct eval *ev, size_t lo, size_t hi, const char *name, size_t n, const char **v)
{
        for (size_t k = hi; k-- > lo;) {
                if (strlen(ev->vars[k].name) == n && memcmp(ev->vars[k].name, name, n) == 0) {
                        *v = ev->vars[k].value;
                        return true;
                }
        }
        return false;
}

/* An assignment prefix NAME=VALUE of unit u (the last one): true when found. */
static bool
prefix_scan(const struct unit *u, const char *name, size_t n, const char **v)
{
        for (size_t a = u->nassign; a-- > 0;) {
                const struct word *w = &u->assign[a];
                if (strncmp(w->s, name, n) || w->s[n] != '=')
                        continue;
                *v = (w->flags & W_DYN) ? NULL : w->s + n + 1;
                return true;
        }
        return false;
}

/* Whether the script assigned the variable before this point (*v its value); *closed: a
 * loop, a function body or an eval before it may have. */
static bool
var_find(struct eval *ev, const char *name, size_t n, const char **v, bool *closed)
{
        size_t lo = MAX(MAX(ev->var_floor, ev->var_barrier), ev->var_havoc);
        bool found = var_scan(ev, lo, ev->nvars, name, n, v);

        *closed = lo > ev->var_floor;
        /* a payload also sees what its carrier saw, and so on up: first the carrier's own
         * assignment prefixes (X=1 bash -c '…' exports X to it) */
        for (int c = ev->var_carrier, hops = 0; !found && !*closed && c >= 0 && hops < 16; hops++) {
                found = prefix_scan(&ev->units[c], name, n, v) ||
                        var_scan(ev, ev->units[c].var_lo, ev->units[c].var_hi, name, n, v);
                *closed = ev->units[c].var_closed;
                c = ev->units[c].carrier;
        }
        return found;
}

bool
word_var_from_reader(struct eval *ev, const char *name, size_t n)
{
        const char *v = NULL;
        bool closed;
        size_t lo = MAX(MAX(ev->var_floor, ev->var_barrier), ev->var_havoc);

        if (!var_find(ev, name, n, &v, &closed))
                return closed;
        for (size_t k = ev->nvars; k-- > lo;) /* the definition var_find found, if local */
                if (strlen(ev->vars[k].name) == n && !memcmp(ev->vars[k].name, name, n))
                        return ev->vars[k].from_unit >= 0;
        return true; /* a carrier's: not known how */
}

bool
word_var_inherited(struct eval *ev, const char *name, size_t n)
{
        const char *v = NULL;
        bool closed;
        bool found = var_find(ev, name, n, &v, &closed);

        return (!found || v == var_unset) && !closed;
}

const char *
word_var_lookup(struct eval *ev, const char *name, size_t n, bool *known)
{
        const char *v = NULL;
        bool closed;
        bool found = var_find(ev, name, n, &v, &closed);

        *known = false;
        if (found && v != var_unset) {
                *known = v != NULL;
                return v;
        }
        if (closed && !found)
                return NULL; /* a loop, a function body or an eval may have set it */
        char tmp[128];
        if (n >= sizeof(tmp))
                return NULL;
        memcpy(tmp, name, n);
        tmp[n] = '\0';
        if (ev->ctx && ev->ctx->env) {
                json_t *e = json_object_get(ev->ctx->env, tmp);
                if (json_is_string(e)) {
                        *known = true;
                        return json_string_value(e);
                }
        }
        if (strcmp(tmp, "HOME") == 0 && ev->home) {
                *known = true;
                return ev->home;
        }
        if (strcmp(tmp, "PWD") == 0 && ev->start_cwd && !ev->cd_seen) {
                *known = true;
                return ev->start_cwd;
        }
        if (ev->ctx && ev->ctx->env_complete && !var_special(tmp)) {
                *known = true; /* the whole environment is known: not in it, not set */
                return "";
        }
        return NULL;
}

void
word_var_set(struct eval *ev, const char *name, size_t n, const char *value)
{
        arena_grow(&ev->ar, (void **) &ev->vars, &ev->varcap, ev->nvars, sizeof(struct var));
        ev->vars[ev->nvars].name = arena_strndup(&ev->ar, name, n);
        ev->vars[ev->nvars].value = value;
        ev->vars[ev->nvars].from = (struct word){0};
        ev->vars[ev->nvars].from_unit = -1;
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
                        word_split(p, w);
                else
                        word_put(p, w, ' ', true);
                return;
        }
        const char *v = word_var_lookup(p->ev, name, n, &known);
        if (!known || (!dq && !w->assign && p->ev->ifs_changed)) {
                word_puts(p, w, src, srclen);
                word_mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
                return;
        }
        /* unquoted, an empty value leaves no field (bash drops it); quoted it is one. Each
         * byte is a step: a=$a$a doubles a value at every assignment, and forty of them
         * must exhaust the budget, not the memory. */
        for (const char *c = v; *c && parse_tick(p); c++) {
                if (!dq && !w->assign && (*c == ' ' || *c == '\t' || *c == '\n'))
                        word_split(p, w);
                else
                        word_put(p, w, *c, true);
        }
        if (dq)
                word_cur(w, p)->started = true;
        w->any = true;
}

/* ---- quoting ---- */

static void
utf8_put(struct parser *p, struct wparse *w, uint32_t cp)
{
        if (cp < 0x80) {
                word_put(p, w, (char) cp, true);
        } else if (cp < 0x800) {
                word_put(p, w, (char) (0xc0 | (cp >> 6)), true);
                word_put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        } else if (cp < 0x10000) {
                word_put(p, w, (char) (0xe0 | (cp >> 12)), true);
                word_put(p, w, (char) (0x80 | ((cp >> 6) & 0x3f)), true);
                word_put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        } else if (cp < 0x110000) {
                word_put(p, w, (char) (0xf0 | (cp >> 18)), true);
                word_put(p, w, (char) (0x80 | ((cp >> 12) & 0x3f)), true);
                word_put(p, w, (char) (0x80 | ((cp >> 6) & 0x3f)), true);
                word_put(p, w, (char) (0x80 | (cp & 0x3f)), true);
        }
}

uint32_t
word_digits(struct parser *p, int base, int max)
{
        uint32_t v = 0;

        for (int k = 0; k < max; k++) {
                char c = word_at(p, 0);
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
        char c = word_at(p, 0);
        const char *hit = c ? strchr(from, c) : NULL;
        uint32_t v;

        if (hit) {
                p->i++;
                word_put(p, w, to[hit - from], true);
                return true;
        }
        p->i++;
        switch (c) {
        case 'x':
                v = word_digits(p, 16, 2);
                break;
        case 'u':
                v = word_digits(p, 16, 4);
                break;
        case 'U':
                v = word_digits(p, 16, 8);
                break;
        case 'c':
                v = word_at(p, 0) & 0x1f;
                if (word_at(p, 0))
                        p->i++;
                break;
        default:
                if (c >= '0' && c <= '7') {
                        p->i--;
                        v = word_digits(p, 8, 3) & 0xff;
                        break;
                }
                word_put(p, w, '\\', true);
                if (c)
                        word_put(p, w, c, true);
                return true;
        }
        if (v == 0)
                return false;
        if (c == 'u' || c == 'U')
                utf8_put(p, w, v);
        else
                word_put(p, w, (char) v, true);
        return true;
}

static void
p_ansic(struct parser *p, struct wparse *w)
{
        bool live = true;

        p->i += 2;
        word_mark(p, w, W_QUOTED | W_OBF);
        word_cur(w, p)->started = true;
        while (parse_tick(p)) {
                char c = word_at(p, 0);
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
                        word_put(p, w, c, true);
                p->i++;
        }
}

static void
p_squote(struct parser *p, struct wparse *w)
{
        p->i++;
        word_mark(p, w, W_QUOTED);
        word_cur(w, p)->started = true;
        while (parse_tick(p)) {
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated '");
                        return;
                }
                char c = p->s[p->i++];
                if (c == '\'')
                        return;
                word_put(p, w, c, true);
        }
}

static void
p_dquote(struct parser *p, struct wparse *w)
{
        p->i++;
        word_mark(p, w, W_QUOTED);
        word_cur(w, p)->started = true;
        while (parse_tick(p)) {
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
                        char d = word_at(p, 1);
                        p->i += 2;
                        if (d == '\n')
                                continue;
                        if (d == '$' || d == '`' || d == '"' || d == '\\') {
                                word_put(p, w, d, true);
                                continue;
                        }
                        word_put(p, w, '\\', true);
                        if (d)
                                word_put(p, w, d, true);
                        else
                                p->i--;
                        continue;
                }
                if (c == '$') {
                        word_dollar(p, w, true);
                        continue;
                }
                if (c == '`') {
                        word_backtick(p, w, true);
                        continue;
                }
                word_put(p, w, c, true);
                p->i++;
        }
}

/* ---- substitutions ---- */

static void
sub_done(struct parser *p, struct wparse *w, size_t start, int lo, bool dq)
{
        word_puts(p, w, p->s + start, p->i - start);
        word_mark(p, w, W_DYN | W_SUB | (dq || w->assign ? 0 : W_SPLIT));
        if (w->sub_lo < 0)
                w->sub_lo = lo;
}

/* Walks an expansion body up to an unmatched close (not consumed), running nested
 * substitutions. */
void
word_walk(struct parser *p, char close)
{
        char open = close == ')' ? '(' : close == '}' ? '{' : '[';
        int depth = 0;
        struct wparse scratch = {.sub_lo = -1};

        while (parse_tick(p)) {
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
                        word_dollar(p, &scratch, true);
                } else if (c == '`') {
                        word_backtick(p, &scratch, true);
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

bool
word_nest_enter(struct parser *p)
{
        if (++p->ev->nest > POLICY_MAX_NEST) {
                parse_fail(p->ev, "parse.limit", "nesting too deep");
                return false;
        }
        return true;
}

/* The value of a substitution whose body was one literal echo/printf: the text is known
 * ($(echo rm) -rf / is rm -rf /). Returns false when it is not such a body. */
static bool
sub_static(struct parser *p, struct wparse *w, int lo, bool dq)
{
        struct eval *ev = p->ev;

        if ((int) ev->nunits != lo + 1 || ev->units[lo].level != p->level + 1)
                return false;
        const char *out = word_echo_output(ev, &ev->units[lo]);
        if (!out)
                return false;
        size_t n = strlen(out);
        while (n > 0 && out[n - 1] == '\n')
                n--; /* command substitution drops trailing newlines */
        word_mark(p, w, W_SUB | W_OBF);
        word_cur(w, p)->started = true;
        for (size_t j = 0; j < n; j++) {
                char c = out[j];
                if (!dq && !w->assign && !ev->ifs_changed && (c == ' ' || c == '\t' || c == '\n'))
                        word_split(p, w);
                else if (!dq && !w->assign && ev->ifs_changed)
                        return false;
                else
                        word_put(p, w, c, true);
        }
        if (w->sub_lo < 0)
                w->sub_lo = lo;
        return true;
}

/* The body of $( … ), <( … ) or >( … ): p->i is at the two-character opener. */
static void
p_paren_sub(struct parser *p, struct wparse *w, bool dq, const char *what)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;
        int why = 0;
        char kind = p->s[p->i];
        int outer = p->cur_unit;
        struct subshell sub;

        p->i += 2;
        parse_subshell_enter(p, &sub);
        if (word_nest_enter(p)) {
                p->level++;
                parse_list(p, ST_PAREN, &why);
                p->level--;
        }
        parse_subshell_leave(p, &sub);
        p->cur_unit = outer;
        p->ev->nest--;
        if (p->ev->stop)
                return;
        if (word_at(p, 0) != ')') {
                parse_fail(p->ev, "parse.error", what);
                return;
        }
        p->i++;
        if (kind == '>') {
                /* >(…) reads what the command writes into it */
                for (int j = lo; j < (int) p->ev->nunits; j++) {
                        struct unit *u = &p->ev->units[j];
                        if (u->level == p->level + 1 && u->pipe_prev == PIPE_NONE && u->fed_by < 0)
                                u->fed_by = outer;
                }
                word_mark(p, w, W_PSUB_OUT);
        }
        if (kind == '$' && sub_static(p, w, lo, dq))
                return;
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
        word_walk(p, close);
        if (p->ev->stop)
                return;
        arith_source(p, p->s + start + skip, p->i - start - skip, lo);
        p->i++;
        if (close == ')') {
                if (word_at(p, 0) != ')') {
                        parse_fail(p->ev, "parse.error", "unterminated $((");
                        return;
                }
                p->i++;
        }
        word_puts(p, w, p->s + start, p->i - start);
        word_mark(p, w, W_DYN | (dq || w->assign ? 0 : W_SPLIT));
        if (p->ev->nunits > (size_t) lo && w->sub_lo < 0)
                w->sub_lo = lo;
}

/* Parses a separate script (backtick body, heredoc) with the same evaluation. */
void
word_sub_script(struct parser *p, const char *s, size_t n, int level)
{
        struct parser q = {.ev = p->ev,
                           .s = s,
                           .n = n,
                           .level = level,
                           .depth = p->depth,
                           .uflags = p->uflags,
                           .cur_unit = p->cur_unit,
                           .scope = p->scope,
                           .cond = p->cond};
        int why = 0;
        struct subshell sub;

        if (!word_nest_enter(p)) {
                p->ev->nest--;
                return;
        }
        parse_subshell_enter(&q, &sub);
        parse_list(&q, 0, &why);
        parse_subshell_leave(&q, &sub);
        p->ev->nest--;
}

void
word_backtick(struct parser *p, struct wparse *w, bool dq)
{
        size_t start = p->i;
        int lo = (int) p->ev->nunits;
        size_t end = p->i + 1;

        while (end < p->n && p->s[end] != '`')
                end += p->s[end] == '\\' ? 2 : 1;
        char *body = arena_alloc(&p->ev->ar, MIN(end, p->n) - p->i + 1);
        size_t bl = 0;

        p->i++;
        while (parse_tick(p)) {
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
        word_sub_script(p, body, bl, p->level + 1);
        if (!p->ev->stop && !sub_static(p, w, lo, dq))
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
        word_walk(p, '}');
        if (p->ev->stop)
                return;
        size_t ne = p->i;
        p->i++;
        bool simple = ne > ns && word_name_start(p->s[ns]);
        for (size_t k = ns; simple && k < ne; k++)
                simple = word_name_char(p->s[k]);
        if (simple) {
                expand_var(p, w, p->s + ns, ne - ns, p->s + start, p->i - start, dq);
                return;
        }
        arith_bparam(p, p->s + ns, ne - ns, lo);
        word_puts(p, w, p->s + start, p->i - start);
        /* "${@}", "${a[@]}", "${a[@]:1}", "${!p@}": one word per element, quoted or not */
        bool many = memchr(p->s + ns, '@', ne - ns) != NULL;
        word_mark(p, w, W_DYN | ((dq && !many) || w->assign ? 0 : W_SPLIT));
        if (p->ev->nunits > (size_t) lo) {
                word_mark(p, w, W_SUB);
                if (w->sub_lo < 0)
                        w->sub_lo = lo;
        }
}

void
word_dollar(struct parser *p, struct wparse *w, bool dq)
{
        char c1 = word_at(p, 1);

        if (c1 == '(' && word_at(p, 2) == '(')
                p_arith(p, w, dq, 3, ')');
        else if (c1 == '(')
                p_cmdsub(p, w, dq);
        else if (c1 == '{')
                p_bparam(p, w, dq);
        else if (c1 == '[')
                p_arith(p, w, dq, 2, ']');
        else if (c1 == '\'' && !dq && !p->ev->posix)
                p_ansic(p, w);
        else if (c1 == '"' && !dq && !p->ev->posix)
                p->i++;
        else if (word_name_start(c1)) {
                size_t s = p->i + 1, e = s;
                while (e < p->n && word_name_char(p->s[e]))
                        e++;
                p->i = e;
                expand_var(p, w, p->s + s, e - s, p->s + s - 1, e - s + 1, dq);
        } else if (c1 && is_special_param(c1)) {
                word_puts(p, w, p->s + p->i, 2);
                p->i += 2;
                /* "$@" is as many words as there are parameters, quoted or not */
                word_mark(p, w, W_DYN | ((dq && c1 != '@') || w->assign ? 0 : W_SPLIT));
        } else {
                word_put(p, w, '$', dq);
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
        struct field *f = word_cur(w, p);

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

        while (e < p->n && !word_meta(p->s[e]) && p->s[e] != '/' && !(w->assign && p->s[e] == ':'))
                e++;
        const char *home = p->ev->home;
        if (memchr(p->s + s, '{', e - s) && !p->ev->posix && !w->assign) {
                /* brace expansion comes first (~{,}, ~{a,b}/x): each word gets its tilde then */
                word_put(p, w, '~', false);
                p->i = s;
                return;
        }
        if (e == s && home) {
                word_puts(p, w, home, strlen(home));
        } else if (e - s == 4 && memcmp(p->s + s, "root", 4) == 0) {
                word_puts(p, w, "/root", 5);
        } else if (e == s) {
                word_put(p, w, '~', true);
        } else {
                word_puts(p, w, p->s + p->i, e - p->i);
                word_mark(p, w, W_DYN);
        }
        p->i = e;
}

static bool
is_assign_prefix(struct field *f)
{
        if (f->len == 0 || !word_name_start(f->s[0]) || f->q[0])
                return false;
        size_t e = f->len;
        if (e > 1 && f->s[e - 1] == '+')
                e--;
        for (size_t k = 0; k < e; k++)
                if (f->q[k] || !word_name_char(f->s[k]))
                        return false;
        return true;
}

static void
p_extglob(struct parser *p, struct wparse *w)
{
        size_t start = p->i;

        p->i += 2;
        word_walk(p, ')');
        if (p->ev->stop)
                return;
        p->i++;
        for (size_t k = start; k < p->i; k++)
                word_put(p, w, p->s[k], false);
        word_mark(p, w, W_GLOB);
}

/* One unquoted character that is not a quote or expansion opener. */
static void
p_plain(struct parser *p, struct wparse *w, char c)
{
        if (c == '=' && !w->assign && w->nf == 1 && is_assign_prefix(word_cur(w, p))) {
                w->assign = true;
                word_mark(p, w, W_ASSIGN);
        }
        if (c == '*' || c == '?' || c == '[')
                word_mark(p, w, W_GLOB);
        word_put(p, w, c, false);
        p->i++;
}

static void
p_backslash(struct parser *p, struct wparse *w)
{
        char d = word_at(p, 1);

        if (d == '\n') {
                p->i += 2;
                return;
        }
        if (!d && p->i + 1 >= p->n) {
                word_put(p, w, '\\', false);
                p->i++;
                return;
        }
        word_put(p, w, d, true);
        word_mark(p, w, W_QUOTED | W_OBF);
        p->i += 2;
}

/* Reads one word into w (fields before brace expansion). Returns false if none. */
static bool
p_word_raw(struct parser *p, struct wparse *w)
{
        while (parse_tick(p) && p->i < p->n) {
                char c = p->s[p->i];
                if ((c == '<' || c == '>') && word_at(p, 1) == '(' && !p->ev->posix) {
                        p_procsub(p, w);
                        continue;
                }
                if (word_meta(c)) {
                        if (c == '(' && w->any && strchr("@!+*?", p->s[p->i - 1]))
                                break;
                        break;
                }
                if (c && strchr("@!+*?", c) && word_at(p, 1) == '(') {
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
                        word_dollar(p, w, false);
                        break;
                case '`':
                        word_backtick(p, w, false);
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
/* The tilde at the start of a word brace expansion made (p_tilde left it). */
static void
brace_tilde(struct eval *ev, struct word *w)
{
        const char *s = w->s;
        size_t n = strcspn(s + 1, "/");
        const char *home = n == 0                                 ? ev->home
                           : n == 4 && !strncmp(s + 1, "root", 4) ? "/root"
                                                                  : NULL;

        if (s[0] != '~')
                return;
        if (!home) {
                w->flags |= W_DYN; /* ~user, or an unknown $HOME */
                return;
        }
        size_t hl = strlen(home), rl = strlen(s + 1 + n);
        char *t = arena_alloc(&ev->ar, hl + rl + 1);
        memcpy(t, home, hl);
        memcpy(t + hl, s + 1 + n, rl + 1);
        w->s = t;
}

size_t
word_read(struct parser *p, struct word **out, bool *assign)
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
                /* no brace expansion in assignments, nor in a POSIX shell */
                if (w.assign || f->len == 0 || f->len > 4096 || !memchr(f->s, '{', f->len) ||
                    p->ev->posix) {
                        bout_emit(&b, f->s ? f->s : "", f->len);
                        if (f->len > 4096 && memchr(f->s, '{', f->len))
                                b.out[b.n - 1].flags |= W_DYN;
                        continue;
                }
                size_t first = b.n;
                brace_rec(&b, f->s, f->q, f->len, 0);
                for (size_t j = first; f->s[0] == '~' && !f->q[0] && j < b.n; j++)
                        brace_tilde(p->ev, &b.out[j]);
                if (b.overflow && !p->ev->stop)
                        analyze_add(p->ev, -1, "parse.limit", "brace expansion beyond 256 words",
                                    NULL);
                for (size_t j = first; b.overflow && j < b.n; j++)
                        /* too many words: not all known; deletes count them as the root */
                        b.out[j].flags |= W_DYN | W_SPLIT | W_OVERFLOW;
        }
        *out = b.out;
        return b.n;
}

/* ---- what a literal echo or printf prints ---- */

#define ECHO_MAX 4096

static void
out_put(char *out, size_t *o, char c)
{
        if (*o < ECHO_MAX)
                out[(*o)++] = c;
}

/* One backslash escape of printf's format (or %b) at *pp; false for \c and unknown ones. */
static bool
out_escape(char *out, size_t *o, const char **pp)
{
        static const char from[] = "\\abfnrtv\"'?";
        static const char to[] = "\\\a\b\f\n\r\t\v\"'?";
        const char *p = *pp;
        const char *hit = *p ? strchr(from, *p) : NULL;

        if (hit) {
                out_put(out, o, to[hit - from]);
                *pp = p + 1;
                return true;
        }
        if (*p >= '0' && *p <= '7') {
                int v = 0, n = 0;
                while (n < 3 && p[n] >= '0' && p[n] <= '7')
                        v = v * 8 + (p[n++] - '0');
                if (v == 0)
                        return false;
                out_put(out, o, (char) v);
                *pp = p + n;
                return true;
        }
        if (*p == 'x' && isxdigit((unsigned char) p[1])) {
                int v = 0, n = 1;
                while (n < 3 && isxdigit((unsigned char) p[n]))
                        v = v * 16 + (isdigit((unsigned char) p[n])
                                              ? p[n] - '0'
                                              : tolower((unsigned char) p[n]) - 'a' + 10),
                        n++;
                if (v == 0)
                        return false;
                out_put(out, o, (char) v);
                *pp = p + n;
                return true;
        }
        return false;
}

/* printf FORMAT ARGS…: %s and %% only, the format reused while arguments remain. */
static bool
printf_output(const struct unit *u, char *out, size_t *o)
{
        const char *fmt = u->argv[1].s;
        size_t a = 2;

        if (fmt[0] == '-' && strcmp(fmt, "--"))
                return false; /* printf -v VAR: assigns, prints nothing we could know */
        if (!strcmp(fmt, "--")) {
                if (u->argc < 3)
                        return false;
                fmt = u->argv[2].s;
                a = 3;
        }
        do {
                bool used = false;
                for (const char *p = fmt; *p;) {
                        if (*p == '\\') {
                                p++;
                                if (!out_escape(out, o, &p))
                                        return false;
                        } else if (*p == '%' && p[1] == '%') {
                                out_put(out, o, '%');
                                p += 2;
                        } else if (*p == '%' && p[1] == 's') {
                                const char *v = a < u->argc ? u->argv[a++].s : "";
                                used = true;
                                while (*v)
                                        out_put(out, o, *v++);
                                p += 2;
                        } else if (*p == '%') {
                                return false;
                        } else {
                                out_put(out, o, *p++);
                        }
                }
                if (!used)
                        break;
        } while (a < u->argc);
        return *o < ECHO_MAX;
}

/* What a literal echo/printf unit prints, or NULL. */
const char *
word_echo_output(struct eval *ev, const struct unit *u)
{
        char out[ECHO_MAX];
        size_t o = 0, a = 1;

        if (u->argc < 1 || u->nredir || u->nassign)
                return NULL;
        for (size_t j = 0; j < u->argc; j++)
                if (u->argv[j].flags & (W_DYN | W_GLOB | W_SUB))
                        return NULL;
        const char *n = u->argv[0].s;
        if (!strcmp(n, "pwd") && (u->argc == 1 || !strcmp(u->argv[1].s, "-L")) && u->argc <= 2) {
                /* the starting cwd until a cd is parsed ($(pwd)/.. is the parent) */
                if (ev->cd_seen || !ev->start_cwd)
                        return NULL;
                size_t l = strlen(ev->start_cwd);
                char *s = arena_alloc(&ev->ar, l + 2);
                memcpy(s, ev->start_cwd, l);
                s[l] = '\n';
                return s;
        }
        if (!strcmp(n, "printf")) {
                if (u->argc < 2 || !printf_output(u, out, &o))
                        return NULL;
                return arena_strndup(&ev->ar, out, o);
        }
        if (strcmp(n, "echo"))
                return NULL;
        bool nl = true;
        for (; a < u->argc; a++) {
                const char *s = u->argv[a].s;
                if (s[0] != '-' || !s[1] || strspn(s + 1, "neE") != strlen(s + 1))
                        break;
                if (strchr(s, 'e'))
                        return NULL; /* escapes interpreted: not worth modelling */
                nl = nl && !strchr(s, 'n');
        }
        for (size_t j = a; j < u->argc; j++) {
                if (j > a)
                        out_put(out, &o, ' ');
                for (const char *c = u->argv[j].s; *c; c++)
                        out_put(out, &o, *c);
        }
        if (nl)
                out_put(out, &o, '\n');
        return o < ECHO_MAX ? arena_strndup(&ev->ar, out, o) : NULL;
}
