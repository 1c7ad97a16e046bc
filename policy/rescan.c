/* rescan.c — what a limit left unjudged, scanned for floor targets.
 *
 * A parser limit (256 KiB of input, words, commands, steps, nesting of wrappers) makes the
 * verdict ASK (parse.limit), but must never weaken a DENY: `rm -rf <60 000 operands> /` or
 * 30 000 `sudo -E` before `rm -rf /` still delete the root. So when a limit was hit, the whole
 * input is scanned again by a flat lexer that has no limits of its own: it splits commands at
 * ; & | newlines ( ) and substitutions, looks through wrapper chains (sudo, env, nice, …) to
 * the command they run, and keeps of each command its name, its options, its first operands,
 * the operands that name the root, a system directory, home or a device, and its output
 * redirections. Each such bounded command (identical ones once) is judged by the ordinary
 * handlers, so the strictest finding stands. Linear in the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

#define RS_OPTS  128 /* options kept per command */
#define RS_FIRST 8   /* first operands kept per command */
#define RS_KEEP  256 /* operands kept per command */
#define RS_REDIR 8   /* output redirections kept per command */
#define RS_SEEN  8192

struct rscmd {
        struct word w[1 + RS_OPTS + RS_KEEP];
        size_t nw, nopt, nop, nkept;
        struct redir rd[RS_REDIR];
        size_t nrd;
        bool chain;     /* the first word is a wrapper: looking for the command it runs */
        int redir_next; /* the next word is a redirection target: 1 input, 2 output */
        bool dashdash;
};

struct rescan {
        struct eval *ev;
        int carrier; /* the unit whose payload is rescanned, -1 for the whole input */
        struct rscmd c;
        char *buf; /* the word being read */
        size_t len, cap;
        unsigned flags;
        bool tilde;     /* the word began with an unquoted ~ */
        uint64_t *seen; /* hashes of the commands judged (open addressing) */
        size_t nseen;   /* its size: RS_SEEN for the input, less for a payload */
};

static int
cmd_cmp(const void *a, const void *b)
{
        return strcmp(((const struct cmd *) a)->name, ((const struct cmd *) b)->name);
}

static bool
is_wrapper(const char *name)
{
        struct cmd key = {.name = name};

        return bsearch(&key, wrap_cmds.cmds, wrap_cmds.n, sizeof(struct cmd), cmd_cmp) != NULL;
}

static bool
skip_first(const char *s)
{
        static const char *const words[] = {"if",    "then",  "else", "elif", "fi", "do",   "done",
                                            "while", "until", "{",    "}",    "!",  "time", NULL};
        size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        return analyze_in(s, words) || (n > 0 && s[n] == '=');
}

/* An operand worth keeping beyond the first few: what the floor rules look for. */
static bool
floor_operand(struct eval *ev, const struct word *w)
{
        static const char *const pre[] = {"/dev/", "/proc/", "/sys/", NULL};

        for (const char *const *p = pre; *p; p++)
                if (!strncmp(w->s, *p, strlen(*p)))
                        return true;
        return (w->flags & (W_DYN | W_GLOB)) || paths_classify(ev, w, true) != T_NONE;
}

static void
keep(struct rscmd *c, const struct word *w)
{
        c->w[c->nw++] = *w;
}

/* One word of the current command. */
static void
cmd_word(struct rescan *r, const struct word *w)
{
        struct rscmd *c = &r->c;

        if (c->redir_next) {
                if (c->redir_next == 2 && c->nrd < RS_REDIR)
                        c->rd[c->nrd++] = (struct redir){.kind = RD_OUT, .fd = -1, .target = *w};
                c->redir_next = 0;
                return;
        }
        const char *base = analyze_base(w->s);
        if (c->nw == 0) {
                if (skip_first(w->s))
                        return;
                keep(c, w);
                c->chain = is_wrapper(base);
                return;
        }
        if (c->chain) {
                if (!(w->flags & W_DYN) && !is_wrapper(base) && analyze_lookup(base)) {
                        c->nw = c->nopt = c->nop = c->nkept = 0;
                        c->chain = false;
                        keep(c, w);
                }
                return;
        }
        bool opt = w->s[0] == '-' && w->s[1] && !c->dashdash;
        if (opt && !strcmp(w->s, "--"))
                c->dashdash = true;
        if (opt && c->nopt < RS_OPTS) {
                c->nopt++;
                keep(c, w);
        } else if (!opt && (c->nop++ < RS_FIRST || floor_operand(r->ev, w)) && c->nkept < RS_KEEP) {
                c->nkept++;
                keep(c, w);
        }
}

static uint64_t
cmd_hash(const struct rscmd *c)
{
        uint64_t h = 1469598103934665603ULL;

        for (size_t j = 0; j < c->nw; j++)
                for (const char *s = c->w[j].s;; s++) {
                        h = (h ^ (unsigned char) *s) * 1099511628211ULL;
                        if (!*s)
                                break;
                }
        for (size_t j = 0; j < c->nrd; j++)
                for (const char *s = c->rd[j].target.s; *s; s++)
                        h = (h ^ (unsigned char) *s) * 1099511628211ULL;
        return h | 1;
}

/* Whether an identical command was judged already (remembers it when not). */
static bool
seen(struct rescan *r, uint64_t h)
{
        for (size_t i = h % r->nseen, n = 0; n < r->nseen; i = (i + 1) % r->nseen, n++) {
                if (r->seen[i] == h)
                        return true;
                if (r->seen[i] == 0) {
                        r->seen[i] = h;
                        return false;
                }
        }
        return false; /* full: judge it again */
}

/* Ends the current command: a unit of its kept words, judged right away. */
static void
cmd_end(struct rescan *r)
{
        struct rscmd *c = &r->c;
        struct eval *ev = r->ev;

        if (c->nw > 0 && !c->chain && !seen(r, cmd_hash(c)) &&
            (c->nrd || analyze_lookup(analyze_base(c->w[0].s)))) {
                if (ev->nunits == ev->unitcap) { /* beyond POLICY_MAX_UNITS: no limit here */
                        ev->unitcap = ev->unitcap ? ev->unitcap * 2 : 16;
                        ev->units = xrealloc(ev->units, ev->unitcap * sizeof(*ev->units));
                }
                struct unit *u = &ev->units[ev->nunits];
                memset(u, 0, sizeof(*u));
                u->pipe_prev = PIPE_UNKNOWN;
                u->fed_by = u->inherit = u->carrier = -1;
                u->var_closed = true;
                if (r->carrier >= 0) { /* a payload's: at its carrier's place and depth */
                        const struct unit *cu = &ev->units[r->carrier];
                        u->depth = cu->depth + 1;
                        u->scope = cu->scope;
                        u->flags = U_CARRIED;
                        u->carrier = u->inherit = r->carrier;
                }
                u->argv = arena_alloc(&ev->ar, c->nw * sizeof(struct word));
                memcpy(u->argv, c->w, c->nw * sizeof(struct word));
                u->argc = u->argcap = c->nw;
                u->redir = arena_alloc(&ev->ar, (c->nrd + 1) * sizeof(struct redir));
                memcpy(u->redir, c->rd, c->nrd * sizeof(struct redir));
                u->nredir = u->redircap = c->nrd;
                ev->nunits++;
        }
        c->nw = c->nopt = c->nop = c->nkept = c->nrd = 0;
        c->chain = c->dashdash = false;
        c->redir_next = 0;
}

static void
buf_put(struct rescan *r, char ch)
{
        if (r->len + 1 >= r->cap) {
                r->cap = r->cap ? r->cap * 2 : 256;
                r->buf = xrealloc(r->buf, r->cap);
        }
        r->buf[r->len++] = ch;
}

/* Ends the current word. */
static void
word_end(struct rescan *r)
{
        struct eval *ev = r->ev;

        if (r->len == 0 && !(r->flags & W_QUOTED)) {
                r->flags = 0;
                r->tilde = false;
                return;
        }
        r->buf[r->len] = '\0';
        struct word w = {.flags = r->flags};
        if (r->tilde && ev->home && (r->len == 1 || r->buf[1] == '/')) {
                size_t hl = strlen(ev->home);
                char *s = arena_alloc(&ev->ar, hl + r->len);
                memcpy(s, ev->home, hl);
                memcpy(s + hl, r->buf + 1, r->len);
                w.s = s;
        } else {
                w.s = arena_strndup(&ev->ar, r->buf, r->len);
        }
        cmd_word(r, &w);
        r->len = 0;
        r->flags = 0;
        r->tilde = false;
}

/* A quoted string at s[i] (i at the quote); returns the index after it. */
static size_t
quoted(struct rescan *r, const char *s, size_t n, size_t i)
{
        char q = s[i++];

        r->flags |= W_QUOTED;
        for (; i < n && s[i] != q; i++) {
                if (q == '"' && s[i] == '\\' && i + 1 < n)
                        i++;
                else if (q == '"' && (s[i] == '$' || s[i] == '`'))
                        r->flags |= W_DYN;
                buf_put(r, s[i]);
        }
        return i + 1;
}

/* Scans s[0..n), judging every command in it. */
static void
scan(struct rescan *r, const char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                char ch = s[i];
                if (ch == ' ' || ch == '\t') {
                        word_end(r);
                        i++;
                } else if (ch == '#' && r->len == 0) {
                        while (i < n && s[i] != '\n')
                                i++;
                } else if (strchr(";&|()\n`", ch) || (ch == '$' && i + 1 < n && s[i + 1] == '(')) {
                        word_end(r);
                        cmd_end(r);
                        i += ch == '$' ? 2 : 1;
                } else if (ch == '<' || ch == '>') {
                        if (r->len && strspn(r->buf, "0123456789") == r->len)
                                r->len = 0; /* 2> */
                        word_end(r);
                        r->c.redir_next = ch == '>' ? 2 : 1;
                        i += strspn(s + i, "<>&|");
                } else if (ch == '\'' || ch == '"') {
                        i = quoted(r, s, n, i);
                } else {
                        if (ch == '\\' && i + 1 < n)
                                ch = s[++i];
                        else if (ch == '$')
                                r->flags |= W_DYN;
                        else if (strchr("*?[", ch))
                                r->flags |= W_GLOB;
                        else if (ch == '~' && r->len == 0 && !(r->flags & W_QUOTED))
                                r->tilde = true;
                        buf_put(r, ch);
                        i++;
                }
        }
        word_end(r);
        cmd_end(r);
}

static struct rescan *
rescan_new(struct eval *ev, int carrier)
{
        struct rescan *r = xcalloc(1, sizeof(*r));

        r->ev = ev;
        r->carrier = carrier;
        r->nseen = carrier < 0 ? RS_SEEN : RS_SEEN / 64;
        r->seen = xcalloc(r->nseen, sizeof(*r->seen));
        ev->stop = false; /* carriers in the commands found are parsed again */
        ev->nest = 0;
        ev->nwords = 0;
        if (carrier < 0) {
                /* the input's rescan gets a step budget of its own, once; a payload's goes on
                 * with what is left, so nested payloads cannot multiply the work */
                ev->steps = 0;
                ev->cwd = ev->start_cwd; /* a cd is replayed in order */
        }
        return r;
}

static void
rescan_done(struct rescan *r, int first)
{
        r->ev->unit_base = r->ev->nunits; /* the payloads of these get a budget of their own */
        if (r->carrier < 0)
                analyze_units(r->ev, first);
        else
                analyze_range(r->ev, first); /* a payload's: the passes run at the top */
        free(r->buf);
        free(r->seen);
        free(r);
}

/* After a parse.limit: judges what the limit may have left out of the whole input. */
void
rescan_input(struct eval *ev, const char *s, size_t n)
{
        int first = (int) ev->nunits;
        struct rescan *r = rescan_new(ev, -1);

        scan(r, s, n);
        rescan_done(r, first);
}

/* The same for a payload of unit carrier whose parse hit a limit (bash -c '<huge>'). All
 * payload rescans of one evaluation read at most max_steps / 8 bytes (4 per input byte and
 * then some); beyond that the payload's own parse.limit (ASK) is what stands. */
void
rescan_payload(struct eval *ev, int carrier, const char *s)
{
        int first = (int) ev->nunits;
        size_t n = strlen(s);

        if (ev->rescanned + n > ev->max_steps / 8)
                return;
        ev->rescanned += n;
        struct rescan *r = rescan_new(ev, carrier);
        scan(r, s, n);
        rescan_done(r, first);
}

/* The same for an argv exec beyond its limit. */
void
rescan_argv(struct eval *ev, char *const *argv, size_t argc)
{
        int first = (int) ev->nunits;
        struct rescan *r = rescan_new(ev, -1);

        for (size_t i = 0; i < argc; i++) {
                struct word w = {.s = argv[i]};
                cmd_word(r, &w);
        }
        cmd_end(r);
        rescan_done(r, first);
}
