/* shbuiltin.c — shell builtins that run strings or change how names resolve.
 *
 * eval, source / ., trap, at and batch, mapfile/readarray -C, complete/compgen -C and -W,
 * bind -x and -f, fc, export/declare/local/readonly/typeset NAME=VALUE (the env table),
 * alias, hash -p, enable -f, shopt expand_aliases, cd, pushd and popd (the tracked cwd).
 * Payloads go through carrier.c (parsed when known, ASK when not).
 */
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

static int
h_eval(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        if (i < ac && !strcmp(av[i].s, "--"))
                i++;
        if (i >= ac)
                return 0;
        struct word all = av[i];
        all.s = analyze_join(ev, av + i, ac - i);
        all.flags = 0;
        all.sub_lo = (int) ev->nunits;
        all.sub_hi = 0;
        for (size_t j = i; j < ac; j++) {
                all.flags |= av[j].flags & (W_DYN | W_SUB | W_STDIN);
                if (av[j].flags & W_SUB) {
                        all.sub_lo = MIN(all.sub_lo, av[j].sub_lo);
                        all.sub_hi = MAX(all.sub_hi, av[j].sub_hi);
                }
        }
        carrier_payload(ev, k, &all, "eval");
        return 0;
}

static int
h_source(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        if (i < ac && !strcmp(av[i].s, "--"))
                i++;
        if (i < ac)
                carrier_script(ev, k, &av[i], "source", true);
        return 0;
}

/* trap [-lp] [ACTION SIGNAL…]: ACTION runs later, in this shell. */
static int
h_trap(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        if (i < ac && analyze_lit(&av[i]) && (!strcmp(av[i].s, "-l") || !strcmp(av[i].s, "-p")))
                return 0;
        if (i < ac && !strcmp(av[i].s, "--"))
                i++;
        if (ac - i < 2 || (analyze_lit(&av[i]) && !strcmp(av[i].s, "-")))
                return 0;
        carrier_payload(ev, k, &av[i], "trap");
        return 0;
}

/* at / batch: the job is read from stdin (or -f FILE) and runs later, outside this sandbox's
 * process tree. */
static int
h_at(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"Vq:f:mMlrdvt:bc", NULL, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'l') || opts_has(&r, 'r') || opts_has(&r, 'd') || opts_has(&r, 'c') ||
            opts_has(&r, 'V'))
                return 0;
        const struct word *f = opts_val(&r, 'f');
        analyze_add(ev, k, "exec.scheduled", analyze_join(ev, av, ac), analyze_join(ev, av, ac));
        if (f)
                carrier_script(ev, k, f, analyze_base(av[0].s), true);
        else
                carrier_stdin(ev, k, analyze_base(av[0].s), true);
        return 0;
}

/* A payload that is an option's value: mapfile -C CALLBACK, complete/compgen -C COMMAND
 * (run as commands), complete/compgen -W WORDLIST (expanded like words: ": WORDLIST"). */
struct optpayload {
        const char *name;
        const char *shorts;
        const char *run;    /* option letters whose value is a command */
        const char *expand; /* option letters whose value is expanded */
};

static const struct optpayload optpayloads[] = {
        {"mapfile", "d:n:O:s:u:C:c:t", "C", ""},
        {"readarray", "d:n:O:s:u:C:c:t", "C", ""},
        {"complete", "abcdefgjksuvpro:DEIA:G:W:F:C:X:P:S:", "C", "W"},
        {"compgen", "abcdefgjksuvo:A:G:W:F:C:X:P:S:", "C", "W"},
};

static int
h_optpayload(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);

        for (size_t j = 0; j < ARRAY_SIZE(optpayloads); j++) {
                const struct optpayload *o = &optpayloads[j];
                if (strcmp(n, o->name))
                        continue;
                const struct optspec sp = {o->shorts, NULL, 0};
                struct optres r;
                opts_parse(ev, &sp, av, ac, 1, &r);
                for (size_t i = 0; i < r.no; i++) {
                        const struct word *v = r.o[i].val;
                        if (!v || r.o[i].id >= 256)
                                continue;
                        if (strchr(o->run, r.o[i].id)) {
                                carrier_payload(ev, k, v, n);
                        } else if (strchr(o->expand, r.o[i].id)) {
                                struct word w = *v;
                                size_t l = strlen(v->s) + 3;
                                char *t = arena_alloc(&ev->ar, l);
                                snprintf(t, l, ": %s", v->s);
                                w.s = t;
                                carrier_payload(ev, k, &w, n);
                        }
                }
        }
        return 0;
}

/* bind -x 'KEYSEQ: COMMAND' runs COMMAND when the keys are pressed; other bind forms read
 * readline syntax (-f FILE reads bindings, which may hold -x commands). */
static int
h_bind(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"lpsvPSVXm:f:q:u:r:x:", NULL, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t i = 0; i < r.no; i++) {
                const struct word *v = r.o[i].val;
                if (r.o[i].id == 'f' && v) {
                        analyze_add(ev, k, "exec.opaque-payload", v->s, analyze_join(ev, av, ac));
                } else if (r.o[i].id == 'x' && v) {
                        const char *c = strchr(v->s, ':');
                        struct word w = *v;
                        w.s = c ? c + 1 : v->s;
                        w.s += strspn(w.s, " \t");
                        size_t l = strlen(w.s);
                        if (l >= 2 && (w.s[0] == '"' || w.s[0] == '\'') && w.s[l - 1] == w.s[0])
                                w.s = arena_strndup(&ev->ar, w.s + 1, l - 2);
                        carrier_payload(ev, k, &w, "bind -x");
                }
        }
        return 0;
}

/* fc re-runs commands from the history (fc -s, fc -e EDITOR, plain fc); fc -l lists. */
static int
h_fc(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"e:lnrs", NULL, OS_STOP};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'l') && !r.unknown && !r.dyn)
                return 0;
        analyze_add(ev, k, "exec.opaque-payload", analyze_join(ev, av, ac),
                    analyze_join(ev, av, ac));
        return 0;
}

static int
h_export(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t j = 1; j < ac; j++)
                if (av[j].s[0] != '-' && strchr(av[j].s, '='))
                        env_check_assign(ev, k, &av[j]);
        return 0;
}

static int
h_alias(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        bool hit = false;

        for (size_t j = 1; j < ac; j++) {
                const char *s = av[j].s;
                if (!strcmp(n, "alias"))
                        hit = hit || strchr(s, '=') != NULL;
                else if (!strcmp(n, "hash"))
                        hit = hit || (s[0] == '-' && strchr(s, 'p'));
                else if (!strcmp(n, "enable"))
                        hit = hit || (s[0] == '-' && (strchr(s, 'f') || strchr(s, 'n')));
                else if (!strcmp(n, "shopt"))
                        hit = hit || !strcmp(s, "expand_aliases");
        }
        if (hit)
                analyze_add(ev, k, "exec.alias", analyze_join(ev, av, ac),
                            analyze_join(ev, av, ac));
        return 0;
}

/* The cwd after cd / pushd / popd (av, options parsed into r), NULL when not known. */
static const char *
cd_target(struct eval *ev, const char *cmd, const struct optres *r)
{
        const struct word *op = r->nops ? r->ops[0] : NULL;
        bool lit = op && analyze_lit(op) && op->s[0] != '+' && op->s[0] != '-';

        if (!strcmp(cmd, "popd")) {
                /* back to the directory the last pushd left (popd +N/-N: not followed) */
                if (op || ev->ndirs == 0 || ev->ndirs > DIRSTACK_MAX)
                        return NULL;
                return ev->dirs[--ev->ndirs];
        }
        if (!strcmp(cmd, "pushd")) {
                /* pushd DIR is cd DIR that remembers where it was; pushd alone swaps */
                if (ev->ndirs < DIRSTACK_MAX)
                        ev->dirs[ev->ndirs] = ev->cwd;
                ev->ndirs++;
                return lit ? paths_resolve(ev, op->s) : NULL;
        }
        if (!op)
                return ev->home;
        return analyze_lit(op) && strcmp(op->s, "-") ? paths_resolve(ev, op->s) : NULL;
}

/* Whether a cd from old to certainly succeeds: / , a system directory, home, the starting
 * cwd, the workspace, or an ancestor of where it is (cd ..). */
static bool
cd_certain(struct eval *ev, const char *old, const char *to)
{
        if (!to)
                return false;
        return paths_classify_path(ev, to, false) != T_NONE ||
               (ev->start_cwd && !strcmp(to, ev->start_cwd)) || (ev->ws && !strcmp(to, ev->ws)) ||
               (old && paths_below(old, to));
}

static int
h_cd(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"LPe@n", NULL, OS_STOP};
        const struct unit *u = &ev->units[k];
        const char *cmd = analyze_base(av[0].s);
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'n') && strcmp(cmd, "cd"))
                return 0; /* pushd -n / popd -n: the stack only */
        const char *old = ev->cwd, *alt = ev->cwd_alt;
        const char *to = cd_target(ev, cmd, &r);
        /* in a conditional or a function the cwd afterwards is not known */
        ev->cwd = (u->flags & (U_FUNC | U_COND)) ? NULL : to;
        /* a cd into a directory that may not exist may fail, and what follows runs where it
         * was (cd node_modules; rm -rf * wipes the project without one) */
        if (!cd_certain(ev, old, ev->cwd))
                ev->cwd_alt = alt ? alt : old;
        else
                ev->cwd_alt = NULL;
        ev->scopes[u->scope].has_cwd = true;
        ev->scopes[u->scope].cwd = ev->cwd;
        ev->scopes[u->scope].cwd_alt = ev->cwd_alt;
        return 0;
}

static const struct cmd cmds[] = {
        {".", h_source},
        {"alias", h_alias},
        {"at", h_at},
        {"batch", h_at},
        {"bind", h_bind},
        {"cd", h_cd},
        {"compgen", h_optpayload},
        {"complete", h_optpayload},
        {"declare", h_export},
        {"enable", h_alias},
        {"eval", h_eval},
        {"export", h_export},
        {"fc", h_fc},
        {"hash", h_alias},
        {"local", h_export},
        {"mapfile", h_optpayload},
        {"popd", h_cd},
        {"pushd", h_cd},
        {"readarray", h_optpayload},
        {"readonly", h_export},
        {"shopt", h_alias},
        {"source", h_source},
        {"trap", h_trap},
        {"typeset", h_export},
};

const struct cmd_table shbuiltin_cmds = {cmds, ARRAY_SIZE(cmds)};
