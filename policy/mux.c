/* mux.c — programs that run a command for someone else or type into a shell: terminal
 * multiplexers (tmux new-session, new-window, split-window, respawn-pane, respawn-window,
 * run-shell, if-shell, display-popup, pipe-pane run a shell command; send-keys and screen -X
 * stuff type keys into one), file watchers (entr runs its utility, entr -s a shell command),
 * expect (Tcl that spawns programs), GNU parallel (its command line, run by a shell once per
 * argument, or each argument as a command line when it has none). Each command string is a
 * carrier payload: parsed when known, ASK when not.
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

/* ---- GNU parallel ---- */

enum { P_OTHER = 256, P_REMOTE, P_WRITE };

static const struct lopt parallel_longs[] = {{"jobs", OPT_REQ, 'j'},
                                             {"arg-file", OPT_REQ, 'a'},
                                             {"colsep", OPT_REQ, 'C'},
                                             {"delimiter", OPT_REQ, 'd'},
                                             {"eof", OPT_REQ, 'E'},
                                             {"replace", OPT_OPT, 'i'},
                                             {"max-args", OPT_REQ, 'n'},
                                             {"max-replace-args", OPT_REQ, 'N'},
                                             {"max-lines", OPT_OPT, 'l'},
                                             {"max-chars", OPT_REQ, 's'},
                                             {"sshlogin", OPT_REQ, P_REMOTE},
                                             {"sshloginfile", OPT_REQ, P_REMOTE},
                                             {"slf", OPT_REQ, P_REMOTE},
                                             {"joblog", OPT_REQ, P_WRITE},
                                             {"results", OPT_REQ, P_WRITE},
                                             {"res", OPT_REQ, P_WRITE},
                                             {"output-as-files", OPT_NONE, P_OTHER},
                                             {"timeout", OPT_REQ, P_OTHER},
                                             {"delay", OPT_REQ, P_OTHER},
                                             {"halt", OPT_REQ, P_OTHER},
                                             {"halt-on-error", OPT_REQ, P_OTHER},
                                             {"tmpdir", OPT_REQ, P_OTHER},
                                             {"workdir", OPT_REQ, P_OTHER},
                                             {"wd", OPT_REQ, P_OTHER},
                                             {"retries", OPT_REQ, P_OTHER},
                                             {"memfree", OPT_REQ, P_OTHER},
                                             {"load", OPT_REQ, P_OTHER},
                                             {"nice", OPT_REQ, P_OTHER},
                                             {"tagstring", OPT_REQ, P_OTHER},
                                             {"header", OPT_REQ, P_OTHER},
                                             {"block", OPT_REQ, P_OTHER},
                                             {"block-size", OPT_REQ, P_OTHER},
                                             {"env", OPT_REQ, P_OTHER},
                                             {"basefile", OPT_REQ, P_REMOTE},
                                             {"return", OPT_REQ, P_REMOTE},
                                             {"transferfile", OPT_REQ, P_REMOTE},
                                             {"rpl", OPT_REQ, P_OTHER},
                                             {"shell-quote", OPT_NONE, P_OTHER},
                                             {"quote", OPT_NONE, 'q'},
                                             {"null", OPT_NONE, '0'},
                                             {"keep-order", OPT_NONE, 'k'},
                                             {"pipe", OPT_NONE, P_OTHER},
                                             {"dry-run", OPT_NONE, P_OTHER},
                                             {NULL, 0, 0}};

static bool
parallel_sep(const char *s)
{
        return !strcmp(s, ":::") || !strcmp(s, "::::") || !strcmp(s, ":::+") || !strcmp(s, "::::+");
}

/* s in single quotes, as parallel quotes an argument it appends. */
static const char *
shell_quote(struct eval *ev, const char *s)
{
        size_t n = 3;

        for (const char *c = s; *c; c++)
                n += *c == '\'' ? 4 : 1;
        char *q = arena_alloc(&ev->ar, n), *o = q;
        *o++ = '\'';
        for (const char *c = s; *c; c++) {
                if (*c == '\'') {
                        memcpy(o, "'\\''", 4);
                        o += 4;
                } else {
                        *o++ = *c;
                }
        }
        *o++ = '\'';
        *o = '\0';
        return q;
}

/* One job: the command line (NULL: the argument is the command line) with arg put where {}
 * is or appended; arg NULL: an argument only known at run time. */
static void
parallel_job(struct eval *ev, int k, const char *cmd, const struct word *arg)
{
        if (!arg && !cmd) {
                struct word w = {.s = "{parallel input}", .flags = W_DYN};
                carrier_payload(ev, k, &w, "parallel");
                return;
        }
        if (!cmd) {
                carrier_payload(ev, k, arg, "parallel");
                return;
        }
        const char *a = arg ? shell_quote(ev, arg->s) : "\"$PARALLEL_ARG\"";
        const char *b = strstr(cmd, "{}");
        size_t n = strlen(cmd) + strlen(a) + 2;
        char *s = arena_alloc(&ev->ar, n);
        if (b)
                snprintf(s, n, "%.*s%s%s", (int) (b - cmd), cmd, a, b + 2);
        else
                snprintf(s, n, "%s %s", cmd, a);
        struct word w = {.s = s, .flags = arg && analyze_lit(arg) ? 0 : W_DYN};
        carrier_payload(ev, k, &w, "parallel");
}

/* A command of plain words with arguments only known at run time: judged as xargs judges
 * its command (the input appended, or where {} is). False when the shell would read the
 * words differently (metacharacters), or there is no command. */
static bool
parallel_argv(struct eval *ev, int k, const struct word *cmd, size_t n)
{
        struct word *v = arena_alloc(&ev->ar, (n + 1) * sizeof(*v));
        bool brace = false;

        for (size_t j = 0; j < n; j++) {
                v[j] = cmd[j];
                if (!analyze_lit(&cmd[j]) || strpbrk(cmd[j].s, " \t\n;&|<>()$`\\\"'*?[~#="))
                        return false;
                if (strstr(cmd[j].s, "{}")) {
                        v[j].flags |= W_DYN | W_SPLIT | W_STDIN;
                        brace = true;
                }
        }
        if (!n)
                return false;
        if (!brace) {
                v[n] = analyze_word(&cmd[0], "{parallel input}");
                v[n++].flags = W_DYN | W_SPLIT | W_STDIN;
        }
        if (!strcmp(analyze_base(v[0].s), "rm"))
                analyze_add(ev, k, "delete.xargs", analyze_join(ev, v, n), analyze_join(ev, v, n));
        analyze_view(ev, k, v, n, 1);
        return true;
}

/* parallel [OPTS] [COMMAND…] (::: ARGS | :::: FILES)…: the command runs through a shell
 * once per argument; without a command each argument is a command line. Arguments from
 * :::: files, -a or stdin are only known at run time. */
static int
h_parallel(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"a:C:d:E:I:i::j:l::L:n:N:P:S:s:W:Xxkqrtuv0mgpe::",
                                          parallel_longs, OS_STOP | OS_TAIL};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'S') || opts_has(&r, P_REMOTE))
                analyze_add(ev, k, "exec.remote", all, all);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == P_WRITE && r.o[j].val)
                        paths_check_write(ev, k, r.o[j].val, false);
        size_t c = r.stop, e = c;
        while (e < ac && !parallel_sep(av[e].s))
                e++;
        const char *cmd = e > c ? analyze_join(ev, av + c, e - c) : NULL;
        bool unknown = opts_has(&r, 'a') || e == ac, lit = true;
        size_t jobs = 0;
        for (size_t j = e; j < ac; j++) {
                if (parallel_sep(av[j].s)) {
                        unknown = unknown || !strncmp(av[j].s, "::::", 4);
                        lit = strncmp(av[j].s, "::::", 4) != 0;
                        continue;
                }
                if (!lit)
                        continue;
                if (++jobs > 64) {
                        analyze_add(ev, k, "parse.limit", "too many parallel arguments", all);
                        break;
                }
                parallel_job(ev, k, cmd, &av[j]);
        }
        if ((unknown || jobs == 0) && !parallel_argv(ev, k, av + c, e - c))
                parallel_job(ev, k, cmd, NULL);
        return 0;
}

static const struct cmd cmds[] = {
        {"entr", h_entr},     {"expect", h_expect}, {"parallel", h_parallel},
        {"screen", h_screen}, {"tmux", h_tmux},
};

const struct cmd_table mux_cmds = {cmds, ARRAY_SIZE(cmds)};
