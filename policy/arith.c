/* arith.c — bash arithmetic as code.
 *
 * Bash evaluates an arithmetic expression ($((…)), $[…], ((…)), for ((…)), let, [[ A -eq B ]],
 * the value of an integer variable, an array subscript, a ${x:off:len} offset) by reading
 * each name's value as an expression in turn, and it expands every array subscript like a
 * double-quoted word before it evaluates it: x='a[$(rm -rf ~)]'; (( x )) runs rm. Builtins
 * that take a variable name (declare, printf -v, read, unset, getopts, wait -p, [[ -v ]],
 * test -v, ${!x}) expand the subscript of that name the same way, and ${x@P} expands the value
 * as a prompt. So: a subscript's command substitutions are parsed as commands of the
 * expression (their units are judged like any $(…)), a name's known value is read as an
 * expression itself, and a value that is not known when the command is judged is
 * exec.arith-opaque (ASK): it may hold a subscript that runs anything.
 *
 * Runs while parsing (parse.c, word.c call it), where the script's variables are known.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "policy/parser.h"
#include "protocol/util.h"

#define ARITH_MAX_DEPTH 8 /* names read as expressions in turn */
#define ARITH_MAX_SET   8 /* names an expression assigns, remembered as numbers */

/* How the text reached the expression. */
enum amode {
        AM_RAW,     /* shell source: its substitutions were parsed as units already */
        AM_DECODED, /* a word's or a value's text: its substitutions were never parsed */
};

struct actx {
        struct parser *p;
        enum amode mode;
        bool subs_ok; /* AM_RAW: the substitutions print numbers (nproc, wc -l) */
        int depth;
        const char *set[ARITH_MAX_SET];
        size_t setlen[ARITH_MAX_SET];
        size_t nset;
};

static void arith_scan(struct actx *a, const char *s, size_t n);

static void
opaque(struct parser *p, const char *what, const char *s, size_t n)
{
        char *m = arena_alloc(&p->ev->ar, strlen(what) + n + 4);

        snprintf(m, strlen(what) + n + 4, "%s %.*s", what, (int) n, s);
        analyze_add(p->ev, -1, "exec.arith-opaque", m, m);
}

/* Runs the expansions of s[0..n) as inside double quotes (a subscript, a prompt): its
 * command substitutions become units of the command. */
void
arith_expand(struct parser *p, const char *s, size_t n)
{
        struct parser q = {.ev = p->ev,
                           .s = s,
                           .n = n,
                           .level = p->level,
                           .depth = p->depth,
                           .uflags = p->uflags,
                           .cur_unit = p->cur_unit,
                           .scope = p->scope,
                           .cond = p->cond};
        struct wparse w = {.sub_lo = -1};

        if (!word_nest_enter(p)) {
                p->ev->nest--;
                return;
        }
        while (parse_tick(&q) && q.i < q.n) {
                char c = q.s[q.i];
                if (c == '\\')
                        q.i += 2;
                else if (c == '$')
                        word_dollar(&q, &w, true);
                else if (c == '`')
                        word_backtick(&q, &w, true);
                else
                        q.i++;
        }
        p->ev->nest--;
}

/* Variables bash keeps numeric itself. */
static bool
numeric_special(const char *s, size_t n)
{
        static const char *const nums[] = {"RANDOM",  "SRANDOM",      "SECONDS", "LINENO",
                                           "PPID",    "UID",          "EUID",    "BASHPID",
                                           "OPTIND",  "EPOCHSECONDS", "COLUMNS", "LINES",
                                           "HISTCMD", "SHLVL",        NULL};
        for (const char *const *v = nums; *v; v++)
                if (strlen(*v) == n && !memcmp(*v, s, n))
                        return true;
        return false;
}

static bool
assigned_here(const struct actx *a, const char *s, size_t n)
{
        for (size_t j = 0; j < a->nset; j++)
                if (a->setlen[j] == n && !memcmp(a->set[j], s, n))
                        return true;
        return false;
}

/* Remembers that assigning NAME (s up to '=' or '[') is evaluated: 'i' as an expression, 'n'
 * as a variable name. */
static void
attr_note(struct eval *ev, const char *s, char kind)
{
        size_t n = strcspn(s, "=[+");

        if (ev->nattr < ATTR_MAX) {
                ev->attr[ev->nattr] = arena_strndup(&ev->ar, s, n);
                ev->attrkind[ev->nattr] = kind;
        }
        ev->nattr++;
}

/* How assigning NAME (s[0..n)) is evaluated: 'i', 'n', 0 as a string; '?' when too many
 * names were declared to remember them all. */
static char
attr_of(const struct eval *ev, const char *s, size_t n)
{
        for (size_t j = 0; j < MIN(ev->nattr, (size_t) ATTR_MAX); j++)
                if (strlen(ev->attr[j]) == n && !memcmp(ev->attr[j], s, n))
                        return ev->attrkind[j];
        return ev->nattr > ATTR_MAX ? '?' : 0;
}

/* A name read as a number: its value is an expression too. */
static void
read_name(struct actx *a, const char *s, size_t n)
{
        bool known;

        if (numeric_special(s, n) || assigned_here(a, s, n))
                return;
        /* a variable declared -i holds a number once assigned (the assignments to it are
         * judged as expressions, assigns()); one a reader filled may not be integer there */
        if (attr_of(a->p->ev, s, n) == 'i' && !word_var_from_reader(a->p->ev, s, n))
                return;
        const char *v = word_var_lookup(a->p->ev, s, n, &known);
        if (!known && !word_var_inherited(a->p->ev, s, n)) {
                opaque(a->p, "the value of", s, n);
                return;
        }
        if (!known)
                return; /* the environment's: not chosen by this command (the request's
                         * own variables are known and judged) */
        if (strspn(v, "0123456789 \t+-") == strlen(v))
                return;
        if (a->depth >= ARITH_MAX_DEPTH) {
                opaque(a->p, "too deep:", s, n);
                return;
        }
        struct actx in = {.p = a->p, .mode = AM_DECODED, .depth = a->depth + 1};
        arith_scan(&in, v, strlen(v));
}

/* The matching close of the bracket at s[i] (n when there is none). */
static size_t
close_of(const char *s, size_t n, size_t i, char open, char close)
{
        int d = 0;

        for (size_t j = i; j < n; j++) {
                if (s[j] == '\\')
                        j++;
                else if (s[j] == open)
                        d++;
                else if (s[j] == close && --d == 0)
                        return j;
        }
        return n;
}

/* A subscript: expanded like a double-quoted word, then evaluated. */
static void
subscript(struct actx *a, const char *s, size_t n)
{
        /* its expansions run: in decoded text arith_scan expands the substitutions */
        struct actx in = *a;
        in.depth++;
        if (in.depth <= ARITH_MAX_DEPTH)
                arith_scan(&in, s, n);
        else
                opaque(a->p, "too deep:", s, n);
}

/* A name, maybe with a subscript, at s[i]; returns the index after it. */
static size_t
name_at(struct actx *a, const char *s, size_t n, size_t i)
{
        size_t e = i;

        while (e < n && word_name_char(s[e]))
                e++;
        size_t after = e;
        if (e < n && s[e] == '[') {
                size_t c = close_of(s, n, e, '[', ']');
                subscript(a, s + e + 1, (c < n ? c : n) - e - 1);
                after = c < n ? c + 1 : n;
        }
        size_t k = after;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
                k++;
        if (k < n && s[k] == '=' && (k + 1 >= n || s[k + 1] != '=')) {
                if (a->nset < ARITH_MAX_SET) {
                        a->set[a->nset] = s + i;
                        a->setlen[a->nset++] = e - i;
                }
                return after;
        }
        read_name(a, s + i, e - i);
        return after;
}

/* $( … ) or ` … ` at s[i]: its output is read as an expression. */
static size_t
cmdsub_at(struct actx *a, const char *s, size_t n, size_t i)
{
        bool tick = s[i] == '`';
        size_t c = tick ? i + 1 : close_of(s, n, i + 1, '(', ')');

        while (tick && c < n && s[c] != '`')
                c += s[c] == '\\' ? 2 : 1;
        c = MIN(c, n);
        if (a->mode == AM_DECODED)
                arith_expand(a->p, s + i, MIN(c + 1, n) - i);
        if (a->mode == AM_DECODED || !a->subs_ok)
                opaque(a->p, "the output of", s + i, MIN(c + 1, n) - i);
        return MIN(c + 1, n);
}

/* ${ … } at s[i]. */
static size_t
brace_at(struct actx *a, const char *s, size_t n, size_t i)
{
        size_t c = close_of(s, n, i + 1, '{', '}'), end = MIN(c + 1, n);
        const char *b = s + i + 2;
        size_t bl = (c < n ? c : n) - i - 2, nl = 0;

        while (nl < bl && word_name_char(b[nl]))
                nl++;
        if (nl == bl && nl && word_name_start(b[0])) {
                read_name(a, b, nl);
                return end;
        }
        if (bl > 1 && b[0] == '#' &&
            strspn(b + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789_") == bl - 1)
                return end; /* ${#x}: a length */
        if (a->mode == AM_DECODED)
                arith_expand(a->p, s + i, end - i);
        opaque(a->p, "the expansion", s + i, end - i);
        return end;
}

/* $… at s[i]. */
static size_t
dollar_at(struct actx *a, const char *s, size_t n, size_t i)
{
        char c = i + 1 < n ? s[i + 1] : '\0';

        if (c == '(' && i + 2 < n && s[i + 2] == '(') {
                size_t e = close_of(s, n, i + 1, '(', ')');
                struct actx in = *a;
                if (++in.depth > POLICY_MAX_NEST) /* decoded text has no parser nesting limit */
                        opaque(a->p, "too deep:", s + i, MIN(e + 1, n) - i);
                else
                        arith_scan(&in, s + i + 3, e > i + 4 ? e - i - 4 : 0);
                return MIN(e + 1, n);
        }
        if (c == '(')
                return cmdsub_at(a, s, n, i);
        if (c == '{')
                return brace_at(a, s, n, i);
        if (c && word_name_start(c))
                return name_at(a, s, n, i + 1);
        if (c && strchr("#?$!-", c))
                return i + 2;
        if (c && isdigit((unsigned char) c)) {
                opaque(a->p, "the parameter", s + i, 2);
                return i + 2;
        }
        if (c == '@' || c == '*') {
                opaque(a->p, "the parameters", s + i, 2);
                return i + 2;
        }
        return i + 1;
}

static void
arith_scan(struct actx *a, const char *s, size_t n)
{
        size_t i = 0;

        while (i < n && parse_tick(a->p)) {
                unsigned char c = (unsigned char) s[i];
                if (c == '$')
                        i = dollar_at(a, s, n, i);
                else if (c == '`')
                        i = cmdsub_at(a, s, n, i);
                else if (isdigit(c))
                        while (i < n && (isalnum((unsigned char) s[i]) || strchr("#@_", s[i])))
                                i++;
                else if (word_name_start((char) c))
                        i = name_at(a, s, n, i);
                else
                        i++;
        }
}

/* Whether units [lo, nunits) all print a number (nproc, getconf, wc reading stdin). */
static bool
subs_numeric(struct parser *p, int lo)
{
        static const char *const nums[] = {"nproc", "getconf", "wc", NULL};

        for (size_t j = (size_t) lo; j < p->ev->nunits; j++) {
                const struct unit *u = &p->ev->units[j];
                if (u->argc == 0 || !analyze_in(analyze_base(u->argv[0].s), nums))
                        return false;
                for (size_t a = 1; a < u->argc; a++)
                        if (u->argv[a].s[0] != '-' || (u->argv[a].flags & W_DYN))
                                if (strcmp(u->argv[0].s, "getconf"))
                                        return false;
        }
        return true;
}

/* Judges shell source s[0..n) of an arithmetic expression whose substitutions were parsed
 * into units [lo, nunits). */
void
arith_source(struct parser *p, const char *s, size_t n, int lo)
{
        struct actx a = {.p = p, .mode = AM_RAW, .subs_ok = subs_numeric(p, lo)};

        arith_scan(&a, s, n);
}

/* Judges the text of a word evaluated as an arithmetic expression. */
void
arith_word(struct parser *p, const struct word *w)
{
        struct actx a = {.p = p, .mode = (w->flags & W_SUB) ? AM_RAW : AM_DECODED};

        arith_scan(&a, w->s, strlen(w->s));
}

/* Judges a word that names a variable (NAME or NAME[SUBSCRIPT], maybe =VALUE after it):
 * the subscript is expanded and evaluated; a name only known at run time may be anything. */
void
arith_name_word(struct parser *p, const struct word *w)
{
        const char *s = w->s;
        size_t n = strlen(s), nl = 0;

        while (nl < n && word_name_char(s[nl]))
                nl++;
        bool named = nl > 0 && word_name_start(s[0]) &&
                     (nl == n || s[nl] == '[' || s[nl] == '=' || !strncmp(s + nl, "+=", 2));
        if (!named) {
                if (w->flags & W_DYN)
                        opaque(p, "the variable name", s, n);
                return;
        }
        if (s[nl] != '[')
                return;
        struct actx a = {.p = p, .mode = (w->flags & W_SUB) ? AM_RAW : AM_DECODED};
        size_t c = close_of(s, n, nl, '[', ']');
        subscript(&a, s + nl + 1, MIN(c, n) - nl - 1);
}

/* ---- builtins whose operands are expressions or variable names ---- */

/* let EXPR… */
static void
b_let(struct parser *p, const struct word *av, size_t ac)
{
        for (size_t j = 1; j < ac; j++)
                arith_word(p, &av[j]);
}

/* NAME=VALUE assignments of unit k to a name declared -i (an expression) or -n (a name). */
static void
assigns(struct parser *p, int k)
{
        const struct unit *u = &p->ev->units[k];

        for (size_t a = 0; a < u->nassign && p->ev->nattr > 0; a++) {
                struct word v = u->assign[a];
                const char *eq = strchr(v.s, '=');
                size_t n = eq ? (size_t) (eq - v.s) - (eq > v.s && eq[-1] == '+') : 0;
                char kind = n ? attr_of(p->ev, v.s, n) : 0;
                v.s = eq ? eq + 1 : v.s;
                if (kind == 'i' || kind == '?')
                        arith_word(p, &v);
                else if (kind == 'n')
                        arith_name_word(p, &v);
        }
}

/* export/readonly NAME[=VALUE]…: bash refuses a subscript in NAME ("not a valid
 * identifier") without expanding it; a VALUE is evaluated as the name's attribute says
 * (declared -i or -n earlier in the command; a name only known at run time may be one). */
static void
b_export(struct parser *p, const struct word *av, size_t ac)
{
        for (size_t j = 1; j < ac; j++) {
                const char *eq = strchr(av[j].s, '=');
                if (!eq || p->ev->nattr == 0)
                        continue;
                char kind = (av[j].flags & W_DYN)
                                    ? '?'
                                    : attr_of(p->ev, av[j].s, (size_t) (eq - av[j].s));
                struct word v = av[j];
                v.s = eq + 1;
                if (kind == 'i' || kind == '?')
                        arith_word(p, &v);
                else if (kind == 'n')
                        arith_name_word(p, &v);
        }
}

/* declare/typeset/local [-aAfFgiIlnprtux] NAME[=VALUE]…: a subscript in NAME is expanded
 * and evaluated; with -i the value is an expression, with -n it is a name. */
static void
b_declare(struct parser *p, const struct word *av, size_t ac)
{
        bool integer = false, ref = false, opts = true;

        for (size_t j = 1; j < ac; j++) {
                const char *s = av[j].s;
                if (opts && (s[0] == '-' || s[0] == '+') && s[1] && !(av[j].flags & W_DYN)) {
                        opts = strcmp(s, "--") != 0;
                        integer = integer || (s[0] == '-' && strchr(s, 'i'));
                        ref = ref || (s[0] == '-' && strchr(s, 'n'));
                        continue;
                }
                opts = false;
                arith_name_word(p, &av[j]);
                if (integer || ref)
                        attr_note(p->ev, s, integer ? 'i' : 'n');
                const char *eq = strchr(s, '=');
                if (!eq || (!integer && !ref))
                        continue;
                struct word v = av[j];
                v.s = eq + 1;
                if (integer)
                        arith_word(p, &v);
                else
                        arith_name_word(p, &v);
        }
}

/* Commands with variable-name options and operands, read as getopt does: shorts in getopt
 * syntax, the option letters whose value is a name, whether operands are names (from). */
struct nameopts {
        const char *name;
        const char *shorts;
        const char *name_opts;
        size_t from, count; /* operands from..from+count (1-based; count 0: all) are names */
};

static const struct nameopts name_cmds[] = {
        {"getopts", "", "", 2, 1},
        {"mapfile", "d:n:O:s:u:C:c:t", "", 1, 0},
        {"printf", "v:", "v", 0, 0},
        {"read", "ersa:d:i:n:N:p:t:u:", "a", 1, 0},
        {"readarray", "d:n:O:s:u:C:c:t", "", 1, 0},
        {"unset", "fvn", "", 1, 0},
        {"wait", "fnp:", "p", 0, 0},
};

static void
b_names(struct parser *p, const struct word *av, size_t ac, const struct nameopts *c)
{
        const struct optspec sp = {c->shorts, NULL, OS_STOP | OS_TAIL};
        struct optres r;

        opts_parse(p->ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].val && r.o[j].id < 256 && strchr(c->name_opts, r.o[j].id))
                        arith_name_word(p, r.o[j].val);
        if (!strcmp(c->name, "unset") && opts_has(&r, 'f'))
                return;
        size_t end = c->count ? MIN(r.nops, c->from - 1 + c->count) : r.nops;
        for (size_t j = c->from ? c->from - 1 : r.nops; j < end; j++)
                arith_name_word(p, r.ops[j]);
}

/* test -v NAME, [ -v NAME ]. */
static void
b_test(struct parser *p, const struct word *av, size_t ac)
{
        for (size_t j = 1; j + 1 < ac; j++)
                if (!strcmp(av[j].s, "-v"))
                        arith_name_word(p, &av[j + 1]);
}

/* Judges the operands of a builtin that bash evaluates as expressions or names (unit k,
 * after parsing it; the builtin and command prefixes are looked through). */
void
arith_unit(struct parser *p, int k)
{
        const struct unit *u = &p->ev->units[k];
        const struct word *av = u->argv;
        size_t ac = u->argc;

        assigns(p, k);
        while (ac > 1 && (!strcmp(av[0].s, "builtin") || !strcmp(av[0].s, "command")))
                av++, ac--;
        if (ac < 2 || (av[0].flags & W_DYN))
                return;
        const char *c = av[0].s;
        if (!strcmp(c, "let"))
                b_let(p, av, ac);
        else if (analyze_in(c, (const char *const[]){"declare", "typeset", "local", NULL}))
                b_declare(p, av, ac);
        else if (!strcmp(c, "export") || !strcmp(c, "readonly"))
                b_export(p, av, ac);
        else if (!strcmp(c, "test") || !strcmp(c, "["))
                b_test(p, av, ac);
        for (size_t j = 0; j < ARRAY_SIZE(name_cmds); j++)
                if (!strcmp(c, name_cmds[j].name))
                        b_names(p, av, ac, &name_cmds[j]);
}

/* The operands of [[ … ]] words[0..n): those of -eq, -ne, -lt, -le, -gt, -ge are
 * expressions, that of -v a name. */
void
arith_dbracket(struct parser *p, const struct word *ws, size_t n)
{
        static const char *const ops[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", NULL};

        for (size_t j = 0; j < n; j++) {
                if (!(ws[j].flags & W_QUOTED) && analyze_in(ws[j].s, ops)) {
                        if (j > 0)
                                arith_word(p, &ws[j - 1]);
                        if (j + 1 < n)
                                arith_word(p, &ws[j + 1]);
                } else if (!(ws[j].flags & W_QUOTED) && !strcmp(ws[j].s, "-v") && j + 1 < n) {
                        arith_name_word(p, &ws[j + 1]);
                }
        }
}

/* ${!x}: the value of x names the variable expanded, subscript and all. */
static void
indirect(struct parser *p, const char *name, size_t n)
{
        bool known;
        const char *v = word_var_lookup(p->ev, name, n, &known);

        if (!known) {
                opaque(p, "the variable named by", name, n);
                return;
        }
        struct word w = {.s = v};
        arith_name_word(p, &w);
}

/* A prompt's backslash escapes decoded first, as bash does before it expands the rest:
 * \$ is $ (for a non-root user), \NNN an octal byte, \\ a backslash; the others (\u, \w …)
 * become a plain character. */
static char *
prompt_decode(struct eval *ev, const char *v)
{
        char *o = arena_alloc(&ev->ar, strlen(v) + 1), *q = o;

        for (; *v; v++) {
                if (*v != '\\' || !v[1]) {
                        *q++ = *v;
                } else if (v[1] >= '0' && v[1] <= '7') {
                        int c = 0, k = 0;
                        for (v++; k < 3 && *v >= '0' && *v <= '7'; k++, v++)
                                c = c * 8 + (*v - '0');
                        v--;
                        *q++ = (char) (c ? c : ' ');
                } else {
                        v++;
                        *q++ = *v == '$' || *v == '\\' ? *v : '_';
                }
        }
        *q = '\0';
        return o;
}

/* ${x@P}: the value is expanded as a prompt string, command substitutions and all. */
static void
prompt(struct parser *p, const char *name, size_t n)
{
        bool known;
        const char *v = word_var_lookup(p->ev, name, n, &known);

        if (!known) {
                analyze_add(p->ev, -1, "exec.opaque-payload", "${…@P}",
                            arena_strndup(&p->ev->ar, name, n));
                return;
        }
        const char *d = prompt_decode(p->ev, v);
        arith_expand(p, d, strlen(d));
}

/* ${ … } other than ${name}: body[0..n) between the braces, its substitutions parsed into
 * units [lo, nunits). Subscripts and offsets are expressions, ${!x} names a variable, ${x@P}
 * expands the value as a prompt. */
void
arith_bparam(struct parser *p, const char *b, size_t n, int lo)
{
        struct actx a = {.p = p, .mode = AM_RAW, .subs_ok = subs_numeric(p, lo)};
        bool bang = n > 0 && b[0] == '!', len = n > 0 && b[0] == '#';
        size_t i = bang || len, e = i;

        while (e < n && word_name_char(b[e]))
                e++;
        if (e == i || !word_name_start(b[i]))
                return; /* special parameters: $1, ${#}, ${@:2} … */
        const char *name = b + i;
        size_t nl = e - i;
        if (e < n && b[e] == '[') {
                size_t c = close_of(b, n, e, '[', ']');
                size_t sl = MIN(c, n) - e - 1;
                if (!(sl == 1 && (b[e + 1] == '@' || b[e + 1] == '*')))
                        subscript(&a, b + e + 1, sl);
                e = MIN(c + 1, n);
        }
        if (bang && e == n)
                indirect(p, name, nl);
        else if (e + 2 == n && b[e] == '@' && b[e + 1] == 'P')
                prompt(p, name, nl);
        else if (e < n && b[e] == ':' && e + 1 < n && !strchr("-=?+", b[e + 1]))
                arith_scan(&a, b + e + 1, n - e - 1); /* offset and length */
}
