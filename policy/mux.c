/* mux.c — programs that run a command for someone else or type into a shell: terminal
 * multiplexers (tmux new-session, new-window, split-window, respawn-pane, respawn-window,
 * run-shell, if-shell, display-popup, pipe-pane run a shell command; send-keys and screen -X
 * stuff type keys into one), file watchers (entr runs its utility, entr -s a shell command),
 * expect (Tcl that spawns programs). Each command string is a carrier payload: parsed when
 * known, ASK when not.
 */
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

/* A tmux command whose operands are a shell command (or keys typed into a shell). */
struct tmux_cmd {
        const char *name, *alias;
        const char *shorts; /* getopt syntax */
        bool keys;          /* operands are keys (send-keys): key names are dropped */
};

static const struct tmux_cmd tmux_cmds[] = {
        {"new-session", "new", "AdDEPXc:e:F:f:n:s:t:x:y:", false},
        {"new-window", "neww", "abdkPSc:e:F:n:t:", false},
        {"split-window", "splitw", "bdfhIvPZc:e:l:p:t:F:", false},
        {"respawn-pane", "respawnp", "kc:e:t:", false},
        {"respawn-window", "respawnw", "kc:e:t:", false},
        {"run-shell", "run", "bCc:d:t:", false},
        {"if-shell", "if", "bFt:", false},
        {"display-popup", "popup", "BCEkNb:c:d:e:h:s:S:t:T:w:x:y:", false},
        {"pipe-pane", "pipep", "IOot:", false},
        {"send-keys", "send", "FHKlMRXc:N:t:", true},
};

/* tmux key names (send-keys Enter, C-m, M-x …) are not text typed. */
static bool
key_name(const char *s)
{
        static const char *const names[] = {"Enter", "KPEnter", "Escape", "Tab",  "BTab",
                                            "Space", "BSpace",  "Up",     "Down", "Left",
                                            "Right", "Home",    "End",    NULL};
        return analyze_in(s, names) ||
               ((s[0] == 'C' || s[0] == 'M' || s[0] == 'S') && s[1] == '-' && s[2] && !s[3]);
}

/* The operands ops[0..n) as one command string (a word with their flags). */
static struct word
joined(struct eval *ev, const struct word *const *ops, size_t n, bool keys)
{
        struct word *v = arena_alloc(&ev->ar, (n + 1) * sizeof(*v));
        struct word w = {.s = "", .sub_lo = (int) ev->nunits};
        size_t m = 0;

        for (size_t j = 0; j < n; j++) {
                if (keys && analyze_lit(ops[j]) && key_name(ops[j]->s))
                        continue;
                v[m++] = *ops[j];
                w.flags |= ops[j]->flags & (W_DYN | W_SUB | W_STDIN);
                if (ops[j]->flags & W_SUB) {
                        w.sub_lo = MIN(w.sub_lo, ops[j]->sub_lo);
                        w.sub_hi = MAX(w.sub_hi, ops[j]->sub_hi);
                }
        }
        w.s = analyze_join(ev, v, m);
        return w;
}

/* Text typed into a terminal: \\n, \\r (screen), ^M, ^J and a CR end a line. */
static const char *
typed_text(struct eval *ev, const char *s)
{
        char *o = arena_alloc(&ev->ar, strlen(s) + 1), *p = o;

        for (; *s; s++) {
                if ((s[0] == '\\' && (s[1] == 'n' || s[1] == 'r')) ||
                    (s[0] == '^' && (s[1] == 'M' || s[1] == 'J'))) {
                        *p++ = '\n';
                        s++;
                } else {
                        *p++ = *s == '\r' ? '\n' : *s; /* a typed CR is Enter */
                }
        }
        *p = '\0';
        return o;
}

/* One tmux command av[0..ac) (after the global options or a ';'). */
static void
tmux_one(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t j = 0; j < ARRAY_SIZE(tmux_cmds); j++) {
                const struct tmux_cmd *t = &tmux_cmds[j];
                if (strcmp(av[0].s, t->name) && strcmp(av[0].s, t->alias))
                        continue;
                const struct optspec sp = {t->shorts, NULL, OS_STOP | OS_TAIL};
                struct optres r;
                opts_parse(ev, &sp, av, ac, 1, &r);
                /* if-shell COND [THEN [ELSE]]: COND is a shell command (THEN/ELSE are tmux) */
                size_t n = !strcmp(t->name, "if-shell") ? MIN(r.nops, (size_t) 1) : r.nops;
                if (n == 0 || opts_has(&r, 'F'))
                        return;
                struct word w = joined(ev, r.ops, n, t->keys);
                if (t->keys)
                        w.s = typed_text(ev, w.s);
                if (*w.s)
                        carrier_payload(ev, k, &w, "tmux");
                return;
        }
}

/* tmux [-2CDlNuVv] [-c CMD] [-f F] [-L S] [-S P] [-T F] [COMMAND [ARGS] [; COMMAND …]] */
static int
h_tmux(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"2CDlNuVvc:f:L:S:T:", NULL, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        const struct word *c = opts_val(&r, 'c');
        if (c)
                carrier_payload(ev, k, c, "tmux -c");
        for (size_t i = r.stop; i < ac;) {
                size_t e = i;
                while (e < ac && strcmp(av[e].s, ";") && strcmp(av[e].s, "\\;"))
                        e++;
                if (e > i)
                        tmux_one(ev, k, av + i, e - i);
                i = e + 1;
        }
        return 0;
}

/* screen [opts] [CMD ARGS]: runs CMD; screen -X/-Q stuff TEXT types TEXT into a window. */
static int
h_screen(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"aAdDfilLmOqrRUxXQc:e:h:p:s:S:t:T:", NULL,
                                          OS_STOP | OS_TAIL};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'X') || opts_has(&r, 'Q')) {
                if (r.nops >= 2 && analyze_lit(r.ops[0]) && !strcmp(r.ops[0]->s, "stuff")) {
                        struct word w = joined(ev, r.ops + 1, r.nops - 1, false);
                        w.s = typed_text(ev, w.s);
                        carrier_payload(ev, k, &w, "screen -X stuff");
                } else if (r.nops >= 1 && analyze_lit(r.ops[0]) &&
                           (!strcmp(r.ops[0]->s, "exec") || !strcmp(r.ops[0]->s, "screen"))) {
                        analyze_add(ev, k, "exec.opaque-payload", analyze_join(ev, av, ac),
                                    analyze_join(ev, av, ac));
                }
                return 0;
        }
        if (opts_has(&r, 'c'))
                carrier_script(ev, k, opts_val(&r, 'c'), "screen", false);
        return r.stop < ac && !opts_has(&r, 'r') && !opts_has(&r, 'x') ? (int) r.stop : 0;
}

/* entr [-acdnprsz] UTILITY [ARGS]: runs UTILITY on each change; -s: a shell command. */
static int
h_entr(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"acdnprsz", NULL, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (r.stop >= ac)
                return 0;
        if (opts_has(&r, 's')) {
                carrier_payload(ev, k, &av[r.stop], "entr -s");
                return 0;
        }
        return (int) r.stop;
}

/* expect [-c CMDS] [-f FILE | FILE]: Tcl whose spawn/exec/system run programs. */
static int
h_expect(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"c:f:bdDinNv", NULL, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'c' && r.o[j].val)
                        analyze_add(ev, k, "exec.inline-code", r.o[j].val->s,
                                    analyze_digest(ev, "expect -c", r.o[j].val->s));
        const struct word *f = opts_val(&r, 'f');
        if (!f && r.nops > 0)
                f = r.ops[0];
        if (f)
                carrier_script(ev, k, f, "expect", false);
        else if (!opts_has(&r, 'c') && !opts_has(&r, 'v'))
                carrier_stdin(ev, k, "expect", false);
        return 0;
}

static const struct cmd cmds[] = {
        {"entr", h_entr},
        {"expect", h_expect},
        {"screen", h_screen},
        {"tmux", h_tmux},
};

const struct cmd_table mux_cmds = {cmds, ARRAY_SIZE(cmds)};
