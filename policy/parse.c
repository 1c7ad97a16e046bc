/* parse.c — POSIX sh / bash parser that yields the simple commands that would run.
 *
 * Not an interpreter: control flow is walked, not evaluated, so every simple command in every
 * branch, body, substitution and heredoc becomes a unit (word.c reads the words). Work is
 * bounded by a step budget shared by the whole evaluation; running out stops parsing with a
 * parse.limit finding.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/parser.h"
#include "protocol/util.h"

static int p_command(struct parser *p);

/* Records the first parse failure and stops. */
void
parse_fail(struct eval *ev, const char *rule, const char *what)
{
        if (!ev->stop)
                analyze_add(ev, -1, rule, what, NULL);
        ev->stop = true;
}

bool
parse_tick(struct parser *p)
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
        if (ev->nunits - ev->unit_base >= POLICY_MAX_UNITS) {
                parse_fail(ev, "parse.limit", "too many commands");
                return -1;
        }
        if (ev->nunits == ev->unitcap) {
                ev->unitcap = ev->unitcap ? ev->unitcap * 2 : 16;
                ev->units = xrealloc(ev->units, ev->unitcap * sizeof(*ev->units));
        }
        struct unit *u = &ev->units[ev->nunits];
        memset(u, 0, sizeof(*u));
        u->pipe_prev = PIPE_NONE;
        u->fed_by = -1;
        u->inherit = -1;
        u->level = level;
        u->depth = depth;
        u->var_lo = MAX(MAX(ev->var_floor, ev->var_barrier), ev->var_havoc);
        u->var_hi = ev->nvars;
        u->carrier = ev->var_carrier;
        u->var_closed = u->var_lo > ev->var_floor;
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
        bool heredoc = false, strip = false, dup = false, append = false;

        if (word_at(p, 0) == '{') {
                p->i = (size_t) ((const char *) memchr(p->s + p->i, '}', p->n - p->i) - p->s) + 1;
                dynfd = true;
        } else if (isdigit((unsigned char) word_at(p, 0))) {
                fd = (int) word_digits(p, 10, 4);
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
                append = true;
                p->i += 3;
        } else if (rem >= 2 &&
                   (!memcmp(o, ">>", 2) || !memcmp(o, ">|", 2) || !memcmp(o, "&>", 2))) {
                append = !memcmp(o, ">>", 2);
                p->i += 2;
        } else if (o[0] == '<') {
                kind = RD_IN;
                p->i++;
        } else {
                p->i++;
        }
        while (word_at(p, 0) == ' ' || word_at(p, 0) == '\t')
                p->i++;
        struct word *ws;
        size_t nw = word_read(p, &ws, NULL);
        if (p->ev->stop)
                return;
        if (nw == 0) {
                parse_fail(p->ev, "parse.error", "redirection without a target");
                return;
        }
        struct redir *r = add_redir(p, k);
        r->kind = kind;
        r->fd = dynfd ? -2 : fd >= 0 ? fd : o[0] == '<' ? 0 : 1;
        r->append = append;
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
                           .uflags = p->uflags,
                           .cur_unit = unit,
                           .scope = p->scope,
                           .cond = p->cond};
        struct wparse w = {.sub_lo = -1};

        while (parse_tick(&q) && q.i < q.n) {
                char c = q.s[q.i];
                if (c == '\\' && q.i + 1 < q.n && strchr("$`\\\n", q.s[q.i + 1])) {
                        if (q.s[q.i + 1] != '\n')
                                word_put(&q, &w, q.s[q.i + 1], true);
                        q.i += 2;
                } else if (c == '$') {
                        word_dollar(&q, &w, true);
                } else if (c == '`') {
                        word_backtick(&q, &w, true);
                } else {
                        word_put(&q, &w, c, true);
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
                while (p->i < p->n && parse_tick(p)) {
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
                else if (c == '\\' && word_at(p, 1) == '\n')
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
        while (parse_tick(p)) {
                skip_blanks(p);
                if (word_at(p, 0) == '#')
                        skip_comment(p);
                if (word_at(p, 0) != '\n')
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
                if (*k >= 0) {
                        struct unit *u = &p->ev->units[*k];
                        u->flags |= p->uflags | (p->cond ? U_COND : 0);
                        u->scope = p->scope;
                }
        }
        return *k;
}

/* ---- subshells ---- */

/* Enters a subshell scope. */
void
parse_subshell_enter(struct parser *p, struct subshell *s)
{
        s->scope = p->scope;
        s->nvars = p->ev->nvars;
        s->lo = p->ev->nunits;
        p->scope = analyze_scope_new(p->ev, p->scope);
}

/* Leaves it: what it assigned goes back to the values from before (shadow entries, so that
 * what earlier units saw stays as it was). */
void
parse_subshell_leave(struct parser *p, const struct subshell *s)
{
        struct eval *ev = p->ev;
        size_t top = ev->nvars;

        for (size_t j = s->nvars; j < top && j < s->nvars + 256; j++) {
                const char *name = ev->vars[j].name;
                bool seen = false;
                for (size_t i = s->nvars; i < j && !seen; i++)
                        seen = !strcmp(ev->vars[i].name, name);
                if (seen)
                        continue;
                /* the value from before, as far as it is certain (not across a loop,
                 * a function body or an eval) */
                size_t lo = MAX(MAX(ev->var_floor, ev->var_barrier), ev->var_havoc);
                const char *old = lo > ev->var_floor ? NULL : var_unset;
                for (size_t i = s->nvars; i-- > lo;)
                        if (!strcmp(ev->vars[i].name, name)) {
                                old = ev->vars[i].value;
                                break;
                        }
                word_var_set(ev, name, strlen(name), old);
        }
        if (top > s->nvars + 256)
                ev->ifs_changed = true; /* too many to take back: trust no variable */
        p->scope = s->scope;
}

/* Pushes "unknown" for every variable assigned in vars[from..), at most 256 of them (beyond,
 * no variable is trusted any more). */
static void
vars_forget(struct eval *ev, size_t from)
{
        size_t top = ev->nvars;

        if (top > from + 256) {
                ev->var_havoc = ev->nvars;
                return;
        }
        for (size_t j = from; j < top; j++) {
                bool seen = false;
                for (size_t i = from; i < j && !seen; i++)
                        seen = !strcmp(ev->vars[i].name, ev->vars[j].name);
                if (!seen && ev->vars[j].value)
                        word_var_set(ev, ev->vars[j].name, strlen(ev->vars[j].name), NULL);
        }
}

/* Opens a segment; a loop or a function body also hides what was known before it (it may run
 * again, or later, after anything). */
void
parse_seg_open(struct parser *p, char kind)
{
        struct seg *s;

        if (p->nsegs >= POLICY_MAX_NEST) {
                parse_fail(p->ev, "parse.limit", "compound commands nested too deep");
                return;
        }
        if (!p->segs) /* a parser for a substitution or heredoc body gets its own on use */
                p->segs = arena_alloc(&p->ev->ar, POLICY_MAX_NEST * sizeof *p->segs);
        s = &p->segs[p->nsegs++];
        s->kind = kind;
        s->certain = false;
        s->deferred = false;
        s->start = p->ev->nvars;
        s->barrier = p->ev->var_barrier;
        s->lo = p->ev->nunits;
        if (kind == 'l' || kind == 'f')
                p->ev->var_barrier = p->ev->nvars;
        p->cond++;
}

/* Closes the innermost segment. */
void
parse_seg_close(struct parser *p)
{
        if (p->nsegs == 0)
                return;
        struct seg *s = &p->segs[--p->nsegs];
        struct eval *ev = p->ev;
        p->cond--;
        ev->var_barrier = s->barrier;
        if (s->kind == 'f') {
                /* nothing of the body happened yet: its values go back; a call forgets them */
                struct subshell sub = {.scope = p->scope, .nvars = s->start};
                size_t hi = ev->nvars;
                parse_subshell_leave(p, &sub);
                if (ev->nfuncs > 0) {
                        ev->funcs[ev->nfuncs - 1].var_lo = s->start;
                        ev->funcs[ev->nfuncs - 1].var_hi = hi;
                }
        } else if (!s->certain) {
                vars_forget(ev, s->start);
        }
        if (p->nsegs > 0 && p->segs[p->nsegs - 1].deferred)
                parse_seg_close(p); /* the && that guarded this compound command */
}

/* The units from lo are exactly one `true` or `:` (or `false`): a condition known now. */
static bool
constant_status(struct parser *p, size_t lo, bool *status)
{
        struct eval *ev = p->ev;

        if (ev->nunits != lo + 1 || ev->units[lo].argc != 1 || ev->units[lo].nredir)
                return false;
        const char *c = ev->units[lo].argv[0].s;
        if (ev->units[lo].argv[0].flags & (W_DYN | W_QUOTED))
                return false;
        *status = !strcmp(c, "true") || !strcmp(c, ":");
        return *status || !strcmp(c, "false");
}

/* It was not a subshell: its units and scopes go back to the enclosing scope. */
void
parse_subshell_dissolve(struct parser *p, const struct subshell *s)
{
        struct eval *ev = p->ev;
        int inner = p->scope;

        for (size_t j = s->lo; j < ev->nunits; j++)
                if (ev->units[j].scope == inner)
                        ev->units[j].scope = s->scope;
        for (size_t j = (size_t) inner + 1; j < ev->nscopes; j++)
                if (ev->scopes[j].parent == inner)
                        ev->scopes[j].parent = s->scope;
        p->scope = s->scope;
}

/* Redirections after ( … ), { … } or (( … )): a unit of their own, whose stdin and fds the
 * commands of the group (units from lo) inherit. */
static void
trailing_redirs(struct parser *p, int lo)
{
        int k = -1;

        for (;;) {
                skip_blanks(p);
                if (p->ev->stop || p->i >= p->n || !redir_start(p))
                        break;
                if (unit_for(p, &k) < 0)
                        return;
                p_redir(p, k);
        }
        for (int j = lo; k >= 0 && j < k; j++) {
                struct unit *u = &p->ev->units[j];
                if (u->level == p->level && u->inherit < 0)
                        u->inherit = k;
        }
}

static void
group(struct parser *p, int stop)
{
        int why = 0;
        int lo = (int) p->ev->nunits;
        struct subshell sub;

        if (stop == ST_PAREN)
                parse_subshell_enter(p, &sub);
        if (word_nest_enter(p))
                parse_list(p, stop, &why);
        p->ev->nest--;
        if (stop == ST_PAREN)
                parse_subshell_leave(p, &sub);
        if (p->ev->stop)
                return;
        if (stop == ST_PAREN) {
                if (word_at(p, 0) != ')') {
                        parse_fail(p->ev, "parse.error", "unterminated (");
                        return;
                }
                p->i++;
        } else if (why != ST_BRACE) {
                parse_fail(p->ev, "parse.error", "unterminated {");
                return;
        }
        trailing_redirs(p, lo);
}

static void
discard_words_until_sep(struct parser *p)
{
        struct word *ws;

        while (parse_tick(p)) {
                skip_blanks(p);
                char c = word_at(p, 0);
                if (!c || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')')
                        return;
                if (c == '(' || c == '<' || c == '>') {
                        p->i++;
                        continue;
                }
                if (word_read(p, &ws, NULL) == 0 && !p->ev->stop)
                        p->i++;
        }
}

/* (( … )) at p->i, also for (( …; …; … )): an arithmetic expression. */
static void
p_arith_cmd(struct parser *p)
{
        int lo = (int) p->ev->nunits;
        size_t start = p->i + 2;

        p->i += 2;
        word_walk(p, ')');
        if (p->ev->stop)
                return;
        if (word_at(p, 1) != ')') {
                parse_fail(p->ev, "parse.error", "unterminated ((");
                return;
        }
        arith_source(p, p->s + start, p->i - start, lo);
        p->i += 2;
}

static void
p_for(struct parser *p)
{
        struct word *ws;

        skip_blanks(p);
        if (word_at(p, 0) == '(' && word_at(p, 1) == '(') {
                p_arith_cmd(p);
                return;
        }
        size_t nw = word_read(p, &ws, NULL);
        if (!nw || !word_name_start(ws[0].s[0])) {
                discard_words_until_sep(p);
                return;
        }
        const char *name = ws[0].s, *value = NULL;
        size_t fields = 0;
        skip_blanks(p);
        if (word_is(p, "in")) {
                p->i += 2;
                /* the variable takes the words in turn: one known word is its value (the
                 * body runs once, with it); more, or one only known at run time, is not */
                while (parse_tick(p)) {
                        skip_blanks(p);
                        char c = word_at(p, 0);
                        if (!c || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')')
                                break;
                        size_t n = word_read(p, &ws, NULL);
                        if (n == 0 && !p->ev->stop && c && !word_meta(c))
                                p->i++;
                        else if (n == 0 && word_meta(c))
                                break;
                        fields += n;
                        if (n == 1 && !(ws[0].flags & (W_DYN | W_GLOB | W_SPLIT)))
                                value = ws[0].s;
                }
        } else {
                discard_words_until_sep(p);
        }
        word_var_set(p->ev, name, strlen(name), fields == 1 ? value : NULL);
}

static void
p_case(struct parser *p)
{
        struct word *ws;
        int why = 0;

        skip_blanks(p);
        word_read(p, &ws, NULL);
        skip_space(p);
        if (!word_is(p, "in")) {
                parse_fail(p->ev, "parse.error", "case without in");
                return;
        }
        p->i += 2;
        while (parse_tick(p)) {
                skip_space(p);
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "case without esac");
                        return;
                }
                if (word_is(p, "esac")) {
                        p->i += 4;
                        return;
                }
                if (word_at(p, 0) == '(')
                        p->i++;
                while (parse_tick(p)) {
                        skip_blanks(p);
                        char c = word_at(p, 0);
                        if (c == '|') {
                                p->i++;
                        } else if (c == ')') {
                                p->i++;
                                break;
                        } else if (!c || word_meta(c) || word_read(p, &ws, NULL) == 0) {
                                parse_fail(p->ev, "parse.error", "bad case pattern");
                                return;
                        }
                }
                parse_seg_open(p, 'c');
                parse_list(p, ST_CASE, &why);
                parse_seg_close(p);
                if (p->ev->stop)
                        return;
                if (word_at(p, 0) == ';')
                        p->i += word_at(p, 1) == ';' && word_at(p, 2) == '&' ? 3 : 2;
        }
}

static void
p_dbracket(struct parser *p)
{
        struct word *ws, *all = NULL;
        size_t n = 0, cap = 0;

        while (parse_tick(p)) {
                skip_blanks(p);
                if (p->i >= p->n) {
                        parse_fail(p->ev, "parse.error", "unterminated [[");
                        return;
                }
                if (word_is(p, "]]")) {
                        p->i += 2;
                        arith_dbracket(p, all, n);
                        return;
                }
                char c = word_at(p, 0);
                if (c == '\n') {
                        p->i++;
                        read_heredocs(p);
                } else if (c && strchr("&|<>()!;", c)) {
                        p->i++;
                } else {
                        size_t nw = word_read(p, &ws, NULL);
                        if (nw == 0 && !p->ev->stop)
                                p->i++;
                        if (nw == 0)
                                continue;
                        /* [[ does not split words: the fields are one operand again */
                        arena_grow(&p->ev->ar, (void **) &all, &cap, n, sizeof(*all));
                        all[n] = ws[0];
                        all[n].s = analyze_join(p->ev, ws, nw);
                        for (size_t j = 1; j < nw; j++)
                                all[n].flags |= ws[j].flags;
                        n++;
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
        struct eval *ev = p->ev;
        arena_grow(&ev->ar, (void **) &ev->funcs, &ev->funccap, ev->nfuncs,
                   sizeof(struct func_def));
        memset(&ev->funcs[ev->nfuncs], 0, sizeof(ev->funcs[0]));
        ev->funcs[ev->nfuncs].name = name;
        ev->funcs[ev->nfuncs].lo = lo;
        ev->nfuncs++;
        size_t f = ev->nfuncs - 1;
        parse_seg_open(p, 'f'); /* runs when called, if ever, with whatever is set then */
        p_command(p);
        ev->funcs[f].hi = (int) ev->nunits;
        parse_seg_close(p);
        p->uflags = saved;
}

/* if/then/elif/else/fi and while/until/done as segments. */
static void
reserved_segments(struct parser *p, const char *w)
{
        struct seg *top = p->nsegs ? &p->segs[p->nsegs - 1] : NULL;
        bool status;

        if (!strcmp(w, "if")) {
                parse_seg_open(p, 'i');
        } else if (!strcmp(w, "while") || !strcmp(w, "until")) {
                parse_seg_open(p, 'l');
        } else if (!strcmp(w, "then") && top && top->kind == 'i') {
                /* the condition ran for sure; the branch runs when it says so */
                top->certain = constant_status(p, top->lo, &status) && status;
                top->start = p->ev->nvars;
        } else if ((!strcmp(w, "elif") || !strcmp(w, "else")) && top && top->kind == 'i') {
                if (!top->certain)
                        vars_forget(p->ev, top->start);
                top->certain = false;
                top->start = p->ev->nvars;
                top->lo = p->ev->nunits;
        } else if ((!strcmp(w, "fi") && top && top->kind == 'i') ||
                   (!strcmp(w, "done") && top && top->kind == 'l')) {
                parse_seg_close(p);
        }
}

static const char *const skip_words[] = {"!",    "if", "then", "elif",  "else",
                                         "fi",   "do", "done", "while", "until",
                                         "time", "}",  "esac", "coproc"};

/* Reserved word in command position; returns 1 if handled and the command is over, 0 to go on
 * reading words, -1 if not reserved. */
static int
reserved(struct parser *p, const char *w)
{
        reserved_segments(p, w);
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
                parse_seg_open(p, 'l'); /* until its done */
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
                if (word_read(p, &ws, NULL) == 0)
                        return 1;
                skip_blanks(p);
                if (word_at(p, 0) == '(' && word_at(p, 1) == ')')
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
                        /* a value is known only when the assignment certainly happened */
                        bool sure = true; /* segments forget what is not certain */
                        word_var_set(p->ev, s, nl, lit && sure ? eq + 1 : NULL);
                        p->ev->vars[p->ev->nvars - 1].from = u->assign[a];
                }
                return;
        }
        const char *c = u->argv[0].s;
        bool setter = false, reader = strcmp(c, "read") == 0 || strcmp(c, "unset") == 0 ||
                                      strcmp(c, "mapfile") == 0 || strcmp(c, "printf") == 0 ||
                                      strcmp(c, "readarray") == 0 || strcmp(c, "getopts") == 0;
        for (size_t s = 0; s < ARRAY_SIZE(setters); s++)
                setter = setter || strcmp(c, setters[s]) == 0;
        if (!setter && !reader)
                return;
        for (size_t a = 1; a < u->argc; a++) {
                const char *s = u->argv[a].s;
                size_t nl = 0;
                while (word_name_char(s[nl]))
                        nl++;
                if (nl && word_name_start(s[0]) && (s[nl] == '=' || s[nl] == '\0')) {
                        word_var_set(p->ev, s, nl, NULL);
                        p->ev->vars[p->ev->nvars - 1].from = u->argv[a];
                        p->ev->vars[p->ev->nvars - 1].from_unit = reader ? k : -1;
                }
        }
}

/* A call of a function forgets what its body assigns; eval, source and . may assign anything. */
static void
track_calls(struct parser *p, int k)
{
        struct eval *ev = p->ev;
        const struct unit *u = &ev->units[k];

        if (u->argc == 0 || (u->argv[0].flags & W_DYN))
                return;
        const char *c = u->argv[0].s;
        if (!strcmp(c, "eval") || !strcmp(c, "source") || !strcmp(c, ".")) {
                ev->var_havoc = ev->nvars;
                return;
        }
        for (size_t f = 0; f < ev->nfuncs; f++) {
                if (strcmp(ev->funcs[f].name, c))
                        continue;
                for (size_t j = ev->funcs[f].var_lo; j < ev->funcs[f].var_hi; j++)
                        word_var_set(ev, ev->vars[j].name, strlen(ev->vars[j].name), NULL);
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

        while (parse_tick(p)) {
                skip_blanks(p);
                char c = word_at(p, 0);
                if (p->i >= p->n || c == '\n' || c == ';' || c == '|' || c == ')' ||
                    (c == '&' && word_at(p, 1) != '>'))
                        break;
                if (c == '#') {
                        skip_comment(p);
                        break;
                }
                if (unit_for(p, &k) < 0)
                        return -1;
                p->cur_unit = k;
                if (redir_start(p)) {
                        p_redir(p, k);
                        continue;
                }
                if (c == '(' && p->ev->units[k].argc == 0 && p->ev->units[k].nassign == 0) {
                        /* after then/do/else/!: a subshell or an arithmetic command */
                        if (word_at(p, 1) == '(') {
                                p_arith_cmd(p);
                        } else {
                                p->i++;
                                group(p, ST_PAREN);
                        }
                        return k;
                }
                if (c == '(') {
                        parse_fail(p->ev, "parse.error", "unexpected (");
                        return k;
                }
                struct word *ws;
                bool assign;
                size_t before = p->i;
                size_t nw = word_read(p, &ws, &assign);
                if (nw == 0) {
                        /* a word that expanded to nothing ($EMPTY) is gone, like in bash */
                        if (!p->ev->stop && p->i == before)
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
        if (k >= 0) {
                arith_unit(p, k);
                track_vars(p, k);
                track_calls(p, k);
                const struct unit *u = &p->ev->units[k];
                if (u->argc && (!strcmp(u->argv[0].s, "cd") || !strcmp(u->argv[0].s, "pushd") ||
                                !strcmp(u->argv[0].s, "popd")))
                        p->ev->cd_seen = true; /* $PWD is no longer the starting cwd */
        }
        return k;
}

/* One command of a pipeline; returns its last unit at this level or -1. */
static int
p_command(struct parser *p)
{
        int lo = (int) p->ev->nunits;

        skip_blanks(p);
        if (word_at(p, 0) == '(' && word_at(p, 1) == '(') {
                p_arith_cmd(p);
                trailing_redirs(p, lo);
                return -1;
        }
        if (word_at(p, 0) == '(') {
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
        struct subshell sub;

        skip_blanks(p);
        if (word_is(p, "!"))
                p->i++;
        parse_subshell_enter(p, &sub);
        int prev = p_command(p);
        skip_blanks(p);
        if (word_at(p, 0) != '|' || word_at(p, 1) == '|') {
                parse_subshell_dissolve(p, &sub); /* one command: no subshell */
                return;
        }
        parse_subshell_leave(p, &sub);
        while (parse_tick(p)) {
                skip_blanks(p);
                if (word_at(p, 0) != '|' || word_at(p, 1) == '|')
                        return;
                p->i += word_at(p, 1) == '&' ? 2 : 1;
                skip_space(p);
                int lo = (int) p->ev->nunits;
                parse_subshell_enter(p, &sub);
                int next = p_command(p);
                parse_subshell_leave(p, &sub);
                for (int k = lo; k < (int) p->ev->nunits; k++) {
                        struct unit *u = &p->ev->units[k];
                        if (u->level == p->level && u->pipe_prev < 0)
                                u->pipe_prev = prev >= 0 ? prev : -2;
                }
                prev = next;
        }
}

/* The units from lo are exactly one cd or pushd: what follows its && runs in its target. */
static bool
just_cd(struct parser *p, size_t lo)
{
        const struct unit *u = lo + 1 == p->ev->nunits ? &p->ev->units[lo] : NULL;

        return u && u->argc > 0 && analyze_lit(&u->argv[0]) &&
               (!strcmp(u->argv[0].s, "cd") || !strcmp(u->argv[0].s, "pushd"));
}

static void
p_andor(struct parser *p)
{
        size_t lo = p->ev->nunits;

        p_pipeline(p);
        while (parse_tick(p)) {
                skip_blanks(p);
                if (!((word_at(p, 0) == '&' && word_at(p, 1) == '&') ||
                      (word_at(p, 0) == '|' && word_at(p, 1) == '|')))
                        return;
                bool and_op = word_at(p, 0) == '&';
                bool status;
                bool sure = constant_status(p, lo, &status) && status == and_op;
                bool cd_ok = and_op && just_cd(p, lo);
                p->i += 2;
                skip_space(p);
                /* runs or not, depending on the status before (true && …, false || … do) */
                parse_seg_open(p, 'a');
                int at = p->nsegs - 1;
                if (p->nsegs)
                        p->segs[at].certain = sure;
                lo = p->ev->nunits;
                p_pipeline(p);
                for (size_t j = lo; cd_ok && j < p->ev->nunits; j++)
                        p->ev->units[j].flags |= U_CD_OK;
                /* a compound command (for, while, if, case) still open closes it later */
                if (at >= 0 && p->nsegs - 1 > at)
                        p->segs[at].deferred = true;
                else
                        parse_seg_close(p);
        }
}

void
parse_list(struct parser *p, int stop, int *why)
{
        *why = ST_EOF;
        while (parse_tick(p)) {
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
                if (c == ';' && (word_at(p, 1) == ';' || word_at(p, 1) == '&')) {
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
                struct subshell sub;
                parse_subshell_enter(p, &sub);
                p_andor(p);
                skip_blanks(p);
                if (word_at(p, 0) == '&' && word_at(p, 1) != '&' && word_at(p, 1) != '>') {
                        /* a background list runs in a subshell */
                        for (int k = lo; k < (int) p->ev->nunits; k++)
                                p->ev->units[k].flags |= U_BG;
                        parse_subshell_leave(p, &sub);
                        p->i++;
                        continue;
                }
                parse_subshell_dissolve(p, &sub);
                if (word_at(p, 0) == ';' && word_at(p, 1) != ';' && word_at(p, 1) != '&')
                        p->i++;
        }
        if (p->nhd && !p->ev->stop)
                read_heredocs(p);
}

/* Parses script into units of ev. */
void
parse_script(struct eval *ev, const char *s, size_t n, int depth, int scope)
{
        struct seg segs[POLICY_MAX_NEST];
        struct parser p = {.ev = ev,
                           .scope = scope,
                           .segs = segs,
                           .s = s,
                           .n = n,
                           .depth = depth,
                           .uflags = depth > 0 ? U_CARRIED : 0,
                           .cur_unit = -1};
        int why = 0;

        parse_list(&p, 0, &why);
}
