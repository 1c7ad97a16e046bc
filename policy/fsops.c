/* fsops.c — file operations: deletes, permission changes, copies, links, in-place writers.
 *
 * rm, find -delete/-exec, chmod/chown/chgrp, cp/mv/install/ln, tee, dd, truncate, crontab.
 * Each reads its options with its own table (so rm --recu --forc is rm --recursive --force,
 * and options after operands count), judges every operand (no cap) and names its
 * destinations for the write rules (paths.c). Build output inside the workspace (node_modules,
 * build, dist, target, .venv, …) may be deleted without asking.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        O_OTHER = 256,
        O_HELP,
        O_NOPRESERVE,
        O_REFERENCE,
        O_STRIP_PROGRAM,
};

static const char *const floor_rm[] = {NULL, "floor.rm-root", "floor.rm-system", "floor.rm-home",
                                       "floor.self-protect"};

/* Directory names that hold generated output, safe to delete inside the workspace. */
static const char *const build_output[] = {"node_modules",
                                           "build",
                                           "dist",
                                           "target",
                                           "out",
                                           ".venv",
                                           "venv",
                                           "__pycache__",
                                           ".pytest_cache",
                                           ".mypy_cache",
                                           ".ruff_cache",
                                           ".tox",
                                           ".nox",
                                           "coverage",
                                           ".coverage",
                                           "htmlcov",
                                           ".next",
                                           ".nuxt",
                                           ".cache",
                                           ".parcel-cache",
                                           ".gradle",
                                           ".turbo",
                                           ".svelte-kit",
                                           "_build",
                                           ".eggs",
                                           "*.egg-info",
                                           "cmake-build-*",
                                           "obj",
                                           ".build",
                                           ".angular",
                                           "storybook-static",
                                           ".docusaurus",
                                           "elm-stuff",
                                           ".stack-work",
                                           "dist-newstyle",
                                           "tmp",
                                           ".pnpm-store",
                                           ".yarn/cache",
                                           "*.o",
                                           "*.pyc",
                                           "*.class",
                                           "*.log",
                                           NULL};

/* A path (or glob) inside the workspace with a build-output component below it. */
static bool
is_build_output(struct eval *ev, const struct word *w)
{
        if (!(analyze_lit(w) || (w->flags & W_TREE)) || (w->flags & W_OVERFLOW) ||
            paths_cwd_uncertain(ev, w->s))
                return false; /* find -exec's {} below START/…/NAME is known enough */
        const char *s = w->s;
        if (w->flags & W_GLOB) {
                const char *p = paths_glob_dir(ev, s);
                if (!p || !(paths_in_workspace(ev, p) || (ev->ws && !strcmp(p, ev->ws))))
                        return false;
        } else if (!paths_in_workspace(ev, paths_resolve(ev, s))) {
                return false;
        }
        /* a component below the workspace names build output */
        const char *p = paths_resolve(ev, s);
        const char *ws = paths_resolve(ev, ev->ws);
        const char *rel = p && ws ? p + strlen(ws) : "";
        for (const char *c = rel; *c;) {
                while (*c == '/')
                        c++;
                size_t l = strcspn(c, "/");
                char comp[256];
                if (l == 0 || l >= sizeof(comp))
                        break;
                memcpy(comp, c, l);
                comp[l] = '\0';
                bool glob = strpbrk(comp, "*?[") != NULL;
                for (const char *const *b = build_output; *b; b++)
                        if (glob ? !strcmp(*b, comp) : fnmatch(*b, comp, 0) == 0)
                                return true;
                c += l;
        }
        return false;
}

static bool
all_build_output(struct eval *ev, const struct optres *r)
{
        for (size_t j = 0; j < r->nops; j++)
                if (!is_build_output(ev, r->ops[j]))
                        return false;
        return r->nops > 0;
}

static bool
all_in_workspace(struct eval *ev, const struct optres *r)
{
        for (size_t j = 0; j < r->nops; j++)
                if (!analyze_lit(r->ops[j]) || paths_cwd_uncertain(ev, r->ops[j]->s) ||
                    !paths_in_workspace(ev, paths_resolve(ev, r->ops[j]->s)))
                        return false;
        return r->nops > 0;
}

/* Normalised operands joined: what a delete approval binds to. */
static const char *
targets(struct eval *ev, const struct optres *r)
{
        struct word *t = arena_alloc(&ev->ar, (r->nops + 1) * sizeof(*t));

        for (size_t j = 0; j < r->nops; j++) {
                const char *p = analyze_lit(r->ops[j]) ? paths_resolve(ev, r->ops[j]->s) : NULL;
                t[j] = analyze_word(r->ops[j], p ? p : r->ops[j]->s);
        }
        return analyze_join(ev, t, r->nops);
}

/* Whether a find start is the workspace or inside it. */
static bool
find_inside(struct eval *ev, const struct word *start)
{
        const char *p = analyze_lit(start) && !paths_cwd_uncertain(ev, start->s)
                                ? paths_resolve(ev, start->s)
                                : NULL;

        return p && (paths_in_workspace(ev, p) || (ev->ws && !strcmp(p, ev->ws)));
}

struct word
fsops_tree_start(struct eval *ev, const struct word *w)
{
        const char *s = w->flags & W_GLOB ? paths_glob_dir(ev, w->s) : w->s;
        struct word st = analyze_word(w, s ? s : w->s);

        st.flags &= ~(W_DYN | W_TREE | W_SOME | W_GLOB);
        return st;
}

/* rm … {} under find -exec deletes what find reaches: judged as find -delete would be
 * (the floor was the caller's: {} may be -r, so the start counts recursively). */
static void
find_tree_delete(struct eval *ev, int k, const struct optres *r, const char *all)
{
        for (size_t j = 0; j < r->nops; j++) {
                if (!(r->ops[j]->flags & W_TREE))
                        continue;
                struct word st = fsops_tree_start(ev, r->ops[j]);
                if (!((r->ops[j]->flags & W_SOME) && find_inside(ev, &st)))
                        analyze_add(ev, k, "delete.find", all, st.s);
        }
}

static bool
find_neutral(const char *s)
{
        /* -prune selects nothing: the start itself is still found (find ~ -prune -exec …) */
        static const char *const neutral[] = {"-depth",  "-mindepth", "-maxdepth",
                                              "-xdev",   "-mount",    "-delete",
                                              "-print",  "-noleaf",   "-ignore_readdir_race",
                                              "-print0", "-daystart", "-follow",
                                              "-warn",   "-nowarn",   "-prune",
                                              NULL};
        return analyze_in(s, neutral);
}

/* Whether an operand may be several words (unquoted $X, "$@"). */
static bool
any_split(const struct optres *r)
{
        for (size_t j = 0; j < r->nops; j++)
                if (r->ops[j]->flags & W_SPLIT)
                        return true;
        return false;
}

/* Whether an operand is find -exec's {} without tests: every file below its start, which is
 * what the command's recursive form reaches. */
static bool
any_tree(const struct optres *r)
{
        for (size_t j = 0; j < r->nops; j++)
                if ((r->ops[j]->flags & (W_TREE | W_SOME)) == W_TREE)
                        return true;
        return false;
}

/* A floor finding when an operand of a (recursive) destructive command is a root. */
static bool
floor_targets(struct eval *ev, int k, const struct word *av, size_t ac, const struct optres *r,
              bool rec, const char *const *rules)
{
        for (size_t j = 0; j < r->nops; j++) {
                enum target t = paths_classify(ev, r->ops[j], rec);
                if (t == T_SELF || (rec && t != T_NONE)) {
                        const char *rule = rules         ? rules[t]
                                           : t == T_SELF ? "floor.self-protect"
                                                         : "floor.perm-root";
                        analyze_add(ev, k, rule, analyze_join(ev, av, ac), r->ops[j]->s);
                        return true;
                }
        }
        return false;
}

static int
h_rm(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"force", OPT_NONE, 'f'},
                                            {"interactive", OPT_OPT, 'I'},
                                            {"one-file-system", OPT_NONE, O_OTHER},
                                            {"no-preserve-root", OPT_NONE, O_NOPRESERVE},
                                            {"preserve-root", OPT_OPT, O_OTHER},
                                            {"recursive", OPT_NONE, 'r'},
                                            {"dir", OPT_NONE, 'd'},
                                            {"verbose", OPT_NONE, 'v'},
                                            {"help", OPT_NONE, O_HELP},
                                            {"version", OPT_NONE, O_HELP},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"dfiIrRv", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, O_HELP))
                return 0;
        /* a word only known at run time may be -r */
        bool rec = opts_has(&r, 'r') || opts_has(&r, 'R') || r.dyn || any_tree(&r);
        if (floor_targets(ev, k, av, ac, &r, rec, floor_rm))
                return 0;
        find_tree_delete(ev, k, &r, analyze_join(ev, av, ac));
        /* $X or "$@" may be several words, -r and any target among them */
        rec = opts_has(&r, 'r') || opts_has(&r, 'R') || (r.dyn && any_split(&r));
        if (!rec)
                for (size_t j = 0; j < r.nops; j++)
                        paths_check_write(ev, k, r.ops[j], true);
        if (rec && !all_build_output(ev, &r))
                analyze_add(ev, k, "delete.recursive", analyze_join(ev, av, ac), targets(ev, &r));
        else if (!rec && opts_has(&r, 'f') && !all_in_workspace(ev, &r) && r.nops > 0)
                analyze_add(ev, k, "delete.force", analyze_join(ev, av, ac), targets(ev, &r));
        return 0;
}

/* A recursive delete of everything below w that is not in the source (rsync --delete):
 * the floor for /, a system directory or home (elsewhere it is the copy's own write). */
void
fsops_delete_tree(struct eval *ev, int k, const struct word *w, const char *all)
{
        enum target t = paths_classify(ev, w, true);

        if (t != T_NONE)
                analyze_add(ev, k, floor_rm[t], all, w->s);
}

/* An archive extracted into dir (NULL: the cwd) may hold any file below it (or, with
 * absolute names, anywhere): judged as writes into that tree. */
void
fsops_extract(struct eval *ev, int k, const struct word *dir, bool absolute, const char *all)
{
        static const char *const rules[] = {NULL, "write.system", "write.system", "write.startup",
                                            "floor.self-protect"};
        static const struct word here = {.s = "."};
        const struct word *d = dir ? dir : &here;

        if (absolute) {
                analyze_add(ev, k, "write.system", all, "absolute names");
                return;
        }
        if (!analyze_lit(d)) {
                analyze_add(ev, k, "write.unknown", all, d->s);
                return;
        }
        enum target t = paths_classify(ev, d, true);
        const char *p = paths_resolve(ev, d->s), *h = ev->acct_home;
        if (t != T_NONE)
                analyze_add(ev, k, rules[t], all, d->s);
        else if (p && h && paths_below(p, h) && strstr(p + strlen(h), "/.") &&
                 !paths_in_workspace(ev, p))
                analyze_add(ev, k, "write.startup", all, p); /* ~/.config/autostart, … */
        else
                paths_check_write(ev, k, d, false);
}

/* cpio -i [-D DIR] (absolute names unless --no-absolute-filenames), cpio -p DIR. */
static int
h_cpio(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"extract", OPT_NONE, 'i'},
                                            {"pass-through", OPT_NONE, 'p'},
                                            {"directory", OPT_REQ, 'D'},
                                            {"file", OPT_REQ, 'F'},
                                            {"no-absolute-filenames", OPT_NONE, O_OTHER},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"iopD:F:E:H:I:O:R:M:C:abcdfmnrtuvBLSV", longs, 0};
        struct optres r;
        const char *all = analyze_join(ev, av, ac);

        opts_parse(ev, &sp, av, ac, 1, &r);
        bool abs = !opts_has(&r, O_OTHER);
        if (opts_has(&r, 'i') && !opts_has(&r, 't'))
                fsops_extract(ev, k, opts_val(&r, 'D'), abs, all);
        else if (opts_has(&r, 'p') && r.nops > 0)
                fsops_extract(ev, k, r.ops[r.nops - 1], false, all);
        return 0;
}

/* unzip ZIP [-d DIR] (-: keeps ../ names); -l -t -v -Z -p only read. */
static int
h_unzip(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"d:x:ltvZpfunocjCKLMNqsTUVWX", NULL, 0};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        for (size_t i = 1; i < ac; i++) {
                if (!strcmp(av[i].s, "-:") || !strcmp(av[i].s, "-^:")) {
                        fsops_extract(ev, k, NULL, true, all);
                        return 0;
                }
        }
        opts_parse(ev, &sp, av, ac, 1, &r);
        for (const char *o = "ltvZp"; *o; o++)
                if (opts_has(&r, *o))
                        return 0;
        fsops_extract(ev, k, opts_val(&r, 'd'), false, all);
        return 0;
}

/* unlink FILE: a delete of one file (a start-up or credential file is a write to it). */
static int
h_unlink(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"", NULL, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (floor_targets(ev, k, av, ac, &r, any_tree(&r), floor_rm))
                return 0; /* find / -exec unlink {} \; */
        find_tree_delete(ev, k, &r, analyze_join(ev, av, ac));
        for (size_t j = 0; j < r.nops; j++)
                paths_check_write(ev, k, r.ops[j], true);
        return 0;
}

/* ---- find ---- */

/* The word find puts for {} in arg: each file at or below the start (W_TREE, only known at
 * run time), START/…/NAME with -name; the text around {} is kept (of={}). */
static struct word
find_brace(struct eval *ev, const struct word *arg, const struct word *start,
           const struct word *name, bool filters)
{
        struct word w = *start;
        const char *b = strstr(arg->s, "{}");

        if (!analyze_lit(start)) {
                w.s = "{}";
                w.flags |= W_DYN;
                return w;
        }
        w.flags |= W_DYN | W_TREE | (filters ? W_SOME : 0);
        const char *at = start->s;
        if (filters && name && analyze_lit(name)) {
                size_t n = strlen(start->s) + strlen(name->s) + 4;
                char *s = arena_alloc(&ev->ar, n);
                snprintf(s, n, "%s/*/%s", start->s, name->s);
                at = s;
                w.flags |= W_GLOB;
        }
        size_t n = strlen(arg->s) + strlen(at) + 1;
        char *s = arena_alloc(&ev->ar, n);
        snprintf(s, n, "%.*s%s%s", (int) (b - arg->s), arg->s, at, b + 2);
        w.s = s;
        return w;
}

/* -exec/-execdir/-ok/-okdir CMD… ; or + : CMD runs with {} for each file found. */
static void
find_exec(struct eval *ev, int k, const struct word *cmd, size_t n, const struct word *starts,
          size_t nstarts, const struct word *name, bool filters)
{
        for (size_t s = 0; s < nstarts && s < 8; s++) {
                struct word *v = arena_alloc(&ev->ar, (n + 1) * sizeof(*v));
                for (size_t j = 0; j < n; j++)
                        v[j] = strstr(cmd[j].s, "{}")
                                       ? find_brace(ev, &cmd[j], &starts[s], name, filters)
                                       : cmd[j];
                analyze_view(ev, k, v, n, 1);
        }
}

struct find_expr {
        bool del, filters;
        const struct word *name;
};

static size_t
find_action(struct eval *ev, int k, const struct word *av, size_t ac, size_t i,
            const struct word *starts, size_t nstarts, struct find_expr *fx)
{
        const char *s = av[i].s;

        if (!strcmp(s, "-exec") || !strcmp(s, "-execdir") || !strcmp(s, "-ok") ||
            !strcmp(s, "-okdir")) {
                size_t j = i + 1;
                while (j < ac && strcmp(av[j].s, ";") && strcmp(av[j].s, "+"))
                        j++;
                if (j > i + 1)
                        find_exec(ev, k, av + i + 1, j - i - 1, starts, nstarts, fx->name,
                                  fx->filters);
                return j;
        }
        if (!strcmp(s, "-fprint") || !strcmp(s, "-fprintf") || !strcmp(s, "-fls") ||
            !strcmp(s, "-fprint0")) {
                if (i + 1 < ac)
                        paths_check_write(ev, k, &av[i + 1], false);
                return i + 1 + !strcmp(s, "-fprintf");
        }
        if (!strcmp(s, "-delete")) {
                fx->del = true;
        } else if ((!strcmp(s, "-name") || !strcmp(s, "-iname")) && i + 1 < ac) {
                fx->name = fx->name ? fx->name : &av[i + 1];
                fx->filters = true;
                return i + 1;
        } else if (s[0] == '-' && !find_neutral(s)) {
                fx->filters = true;
        }
        return i;
}

/* Whether the expression from av[i] selects some files for its first -delete: a -name,
 * -path or -empty test before it, with no -o, ',' or negation that lets everything through
 * (find . -delete -o -true, ! -name nothing), and a pattern that is not all stars. */
static bool
find_narrow(const struct word *av, size_t i, size_t ac)
{
        static const char *const tests[] = {"-name",      "-iname",      "-path", "-ipath",
                                            "-wholename", "-iwholename", NULL};
        static const char *const wide[] = {"-o", "-or", ",", "!", "-not", NULL};
        bool narrow = false;

        for (size_t j = i; j < ac && strcmp(av[j].s, "-delete"); j++) {
                const char *s = av[j].s;
                if (!analyze_lit(&av[j]) || analyze_in(s, wide))
                        return false;
                if (!strcmp(s, "-empty"))
                        narrow = true;
                if (analyze_in(s, tests) && j + 1 < ac) {
                        const char *v = av[++j].s;
                        narrow = narrow || (analyze_lit(&av[j]) && strspn(v, "*") != strlen(v));
                }
        }
        return narrow;
}

static int
h_find(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct find_expr fx = {0};
        size_t i = 1;

        while (i < ac &&
               (!strcmp(av[i].s, "-H") || !strcmp(av[i].s, "-L") || !strcmp(av[i].s, "-P") ||
                !strncmp(av[i].s, "-O", 2) || !strcmp(av[i].s, "-D")))
                i += !strcmp(av[i].s, "-D") ? 2 : 1;
        size_t p0 = i;
        while (i < ac && av[i].s[0] != '-' && strcmp(av[i].s, "(") && strcmp(av[i].s, "!"))
                i++;
        size_t p1 = i;
        bool narrow = find_narrow(av, i, ac);
        struct word dot = analyze_word(&av[0], ".");
        const struct word *starts = p1 > p0 ? av + p0 : &dot;
        size_t nstarts = p1 > p0 ? p1 - p0 : 1;
        /* filters first: -exec placed before -name still sees them */
        for (size_t j = i; j < ac; j++) {
                const char *s = av[j].s;
                if (!strncmp(s, "-exec", 5) || !strncmp(s, "-ok", 3)) {
                        while (j < ac && strcmp(av[j].s, ";") && strcmp(av[j].s, "+"))
                                j++;
                } else if ((!strcmp(s, "-name") || !strcmp(s, "-iname")) && j + 1 < ac) {
                        fx.name = fx.name ? fx.name : &av[j + 1];
                        fx.filters = true;
                } else if (s[0] == '-' && !find_neutral(s) && strncmp(s, "-fprint", 7) &&
                           strcmp(s, "-fls")) {
                        fx.filters = true;
                }
        }
        for (; i < ac; i++)
                i = find_action(ev, k, av, ac, i, starts, nstarts, &fx);
        if (!fx.del)
                return 0;
        bool inside = true;
        for (size_t j = 0; j < nstarts; j++) {
                enum target t = paths_classify(ev, &starts[j], true);
                if (t != T_NONE && (!fx.filters || t == T_SELF)) {
                        analyze_add(ev, k, floor_rm[t], analyze_join(ev, av, ac), starts[j].s);
                        return 0;
                }
                inside = inside && find_inside(ev, &starts[j]);
        }
        if (!(inside && narrow))
                analyze_add(ev, k, "delete.find", analyze_join(ev, av, ac),
                            analyze_join(ev, starts, nstarts));
        return 0;
}

/* ---- permissions ---- */

static bool
mode_is_weak(const char *m)
{
        size_t l = strlen(m);

        if (l && strspn(m, "01234567") == l) {
                int last = m[l - 1] - '0';
                int special = l >= 4 ? m[l - 4] - '0' : 0;
                return (last & 2) || (special & 6);
        }
        if (strstr(m, "+s") || strstr(m, "=s") || strstr(m, "s,") || strstr(m, "+t"))
                return true;
        for (const char *c = m; *c; c++) {
                if ((*c == 'o' || *c == 'a') &&
                    (strstr(c, "+w") || strstr(c, "=w") || strstr(c, "+rw") || strstr(c, "=rw") ||
                     strstr(c, "+rwx") || strstr(c, "=rwx")))
                        return true;
        }
        for (const char *c = strchr(m, '+'); c; c = strchr(c + 1, '+'))
                if (strchr(c, 's') && !strchr(c, ','))
                        return true;
        return false;
}

/* chmod's "-w", "-x" are modes, not options. */
static bool
chmod_mode_like(const char *s)
{
        return s[0] == '-' && s[1] && strspn(s + 1, "rwxXstugoa=+-,01234567") == strlen(s + 1) &&
               strspn(s + 1, "cfvR") != strlen(s + 1);
}

static int
h_perm(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"changes", OPT_NONE, 'c'},
                                            {"silent", OPT_NONE, 'f'},
                                            {"quiet", OPT_NONE, 'f'},
                                            {"verbose", OPT_NONE, 'v'},
                                            {"recursive", OPT_NONE, 'R'},
                                            {"reference", OPT_REQ, O_REFERENCE},
                                            {"from", OPT_REQ, O_OTHER},
                                            {"dereference", OPT_NONE, O_OTHER},
                                            {"no-dereference", OPT_NONE, 'h'},
                                            {"no-preserve-root", OPT_NONE, O_NOPRESERVE},
                                            {"preserve-root", OPT_NONE, O_OTHER},
                                            {"help", OPT_NONE, O_HELP},
                                            {"version", OPT_NONE, O_HELP},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"cfvRhHLP", longs, 0};
        const char *n = analyze_base(av[0].s);
        bool chmod = !strcmp(n, "chmod");
        struct word *v = arena_alloc(&ev->ar, ac * sizeof(*v));
        const struct word *mode = NULL;
        size_t m = 0;
        struct optres r;

        for (size_t j = 0; j < ac; j++) {
                if (chmod && j > 0 && !mode && analyze_lit(&av[j]) && chmod_mode_like(av[j].s))
                        mode = &av[j];
                else
                        v[m++] = av[j];
        }
        opts_parse(ev, &sp, v, m, 1, &r);
        if (opts_has(&r, O_HELP))
                return 0;
        if (!mode && !opts_has(&r, O_REFERENCE) && r.nops > 0) {
                mode = r.ops[0];
                memmove(r.ops, r.ops + 1, (r.nops - 1) * sizeof(*r.ops));
                r.nops--;
        }
        bool rec = opts_has(&r, 'R') || any_tree(&r); /* find -exec: each file below */
        if (floor_targets(ev, k, av, ac, &r, rec, NULL))
                return 0;
        const char *subj = analyze_join(ev, av + 1, ac - 1);
        if (!chmod)
                analyze_add(ev, k, "perm.chown", analyze_join(ev, av, ac), subj);
        else if (rec || (mode && (!analyze_lit(mode) || mode_is_weak(mode->s))))
                analyze_add(ev, k, "perm.chmod", analyze_join(ev, av, ac), subj);
        return 0;
}

/* ---- copies, moves, links ---- */

struct copy_tool {
        const char *name;
        struct optspec sp;
};

static const struct lopt cp_longs[] = {{"archive", OPT_NONE, 'a'},
                                       {"attributes-only", OPT_NONE, O_OTHER},
                                       {"backup", OPT_OPT, 'b'},
                                       {"copy-contents", OPT_NONE, O_OTHER},
                                       {"dereference", OPT_NONE, 'L'},
                                       {"force", OPT_NONE, 'f'},
                                       {"interactive", OPT_NONE, 'i'},
                                       {"link", OPT_NONE, 'l'},
                                       {"no-clobber", OPT_NONE, 'n'},
                                       {"no-dereference", OPT_NONE, 'P'},
                                       {"preserve", OPT_OPT, 'p'},
                                       {"no-preserve", OPT_REQ, O_OTHER},
                                       {"parents", OPT_NONE, O_OTHER},
                                       {"recursive", OPT_NONE, 'r'},
                                       {"reflink", OPT_OPT, O_OTHER},
                                       {"remove-destination", OPT_NONE, O_OTHER},
                                       {"sparse", OPT_REQ, O_OTHER},
                                       {"strip-trailing-slashes", OPT_NONE, O_OTHER},
                                       {"suffix", OPT_REQ, 'S'},
                                       {"symbolic-link", OPT_NONE, 's'},
                                       {"symbolic", OPT_NONE, 's'},
                                       {"target-directory", OPT_REQ, 't'},
                                       {"no-target-directory", OPT_NONE, 'T'},
                                       {"update", OPT_OPT, 'u'},
                                       {"verbose", OPT_NONE, 'v'},
                                       {"one-file-system", OPT_NONE, 'x'},
                                       {"context", OPT_OPT, 'Z'},
                                       {"keep-directory-symlink", OPT_NONE, O_OTHER},
                                       {"debug", OPT_NONE, O_OTHER},
                                       {"directory", OPT_NONE, 'd'},
                                       {"compare", OPT_NONE, 'C'},
                                       {"group", OPT_REQ, 'g'},
                                       {"mode", OPT_REQ, 'm'},
                                       {"owner", OPT_REQ, 'o'},
                                       {"preserve-timestamps", OPT_NONE, 'p'},
                                       {"strip", OPT_NONE, 's'},
                                       {"strip-program", OPT_REQ, O_STRIP_PROGRAM},
                                       {"relative", OPT_NONE, 'r'},
                                       {"logical", OPT_NONE, 'L'},
                                       {"physical", OPT_NONE, 'P'},
                                       {"exchange", OPT_NONE, O_OTHER},
                                       {"help", OPT_NONE, O_HELP},
                                       {"version", OPT_NONE, O_HELP},
                                       {NULL, 0, 0}};

static const struct copy_tool copy_tools[] = {
        {"cp", {"abdfHilLnPpRrsS:t:TuvxZ", cp_longs, 0}},
        {"install", {"bcCdDg:m:o:psS:t:TvZ", cp_longs, 0}},
        {"ln", {"bdfFinLPrsS:t:Tv", cp_longs, 0}},
        {"mv", {"bfinS:t:TuvZ", cp_longs, 0}},
};

/* dest/basename(src) when dest is the home directory or a system one: cp .bashrc ~ */
static void
check_into(struct eval *ev, int k, const struct word *dest, const struct word *src)
{
        const char *d = analyze_lit(dest) ? paths_resolve(ev, dest->s) : NULL;

        if (!d || !analyze_lit(src))
                return;
        if (paths_classify_path(ev, d, false) == T_NONE && !paths_below(d, "/etc") &&
            !paths_below(d, "/usr") && !strstr(d, "/.ssh") && !strstr(d, "/.config"))
                return;
        size_t n = strlen(d) + strlen(src->s) + 2;
        char *s = arena_alloc(&ev->ar, n);
        snprintf(s, n, "%s/%s", d, analyze_base(src->s));
        struct word w = analyze_word(dest, s);
        paths_check_write(ev, k, &w, false);
}

/* A copy of src into the directory dest: merge (cp -rT, cp -r x/., rsync x/) puts src's
 * whole tree into dest, names unknown, as an archive extracted there (rsync -a x/ / writes
 * /etc/passwd when x holds etc/passwd); otherwise dest/basename(src). */
void
fsops_copy_into(struct eval *ev, int k, const struct word *dest, const struct word *src, bool merge,
                const char *all)
{
        if (merge)
                fsops_extract(ev, k, dest, false, all);
        else
                check_into(ev, k, dest, src);
}

/* Whether a source word names a directory's contents rather than the directory: x/. */
static bool
src_contents(const struct word *w)
{
        size_t l = strlen(w->s);

        return !strcmp(w->s, ".") || (l >= 2 && !strcmp(w->s + l - 2, "/."));
}

static int
h_copy(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct copy_tool *t = NULL;
        struct optres r;

        for (size_t j = 0; j < ARRAY_SIZE(copy_tools) && !t; j++)
                if (!strcmp(copy_tools[j].name, n))
                        t = &copy_tools[j];
        if (!t)
                return 0;
        opts_parse(ev, &t->sp, av, ac, 1, &r);
        if (opts_has(&r, O_HELP))
                return 0;
        if (opts_has(&r, O_STRIP_PROGRAM))
                analyze_add(ev, k, "exec.embedded", analyze_join(ev, av, ac), "--strip-program");
        const struct word *mode = strcmp(n, "install") ? NULL : opts_val(&r, 'm');
        if (mode && (!analyze_lit(mode) || mode_is_weak(mode->s)))
                analyze_add(ev, k, "perm.chmod", analyze_join(ev, av, ac), mode->s); /* -m 4755 */
        if (!strcmp(n, "install") && opts_has(&r, 'd')) {
                for (size_t j = 0; j < r.nops; j++)
                        paths_check_write(ev, k, r.ops[j], false);
                return 0;
        }
        const struct word *dest = opts_val(&r, 't');
        size_t nsrc = r.nops;
        if (!dest && r.nops >= 2)
                dest = r.ops[--nsrc];
        if (!strcmp(n, "ln")) {
                struct word here = analyze_word(&av[0], ".");
                const struct word *d = dest ? dest : &here;
                size_t dl = strlen(d->s);
                bool dir = !dest || opts_has(&r, 't') || nsrc > 1 || (dl && d->s[dl - 1] == '/');
                for (size_t j = 0; j < nsrc; j++) {
                        struct word l = *d;
                        if (dir) {
                                size_t m = strlen(d->s) + strlen(r.ops[j]->s) + 2;
                                char *s = arena_alloc(&ev->ar, m);
                                snprintf(s, m, "%s/%s", d->s, analyze_base(r.ops[j]->s));
                                l.s = s;
                        }
                        /* the link's own name is what is written (ln -sf x /etc/passwd
                         * replaces /etc/passwd): judged before it resolves to the target */
                        paths_check_write(ev, k, &l, false);
                        paths_add_link(ev, r.ops[j], &l);
                }
                return 0;
        }
        bool rec = opts_has(&r, 'r') || opts_has(&r, 'R') || opts_has(&r, 'a');
        if (dest) {
                paths_check_write(ev, k, dest, false);
                for (size_t j = 0; j < nsrc; j++)
                        if (rec || !opts_has(&r, 'T'))
                                fsops_copy_into(
                                        ev, k, dest, r.ops[j],
                                        rec && (opts_has(&r, 'T') || src_contents(r.ops[j])),
                                        analyze_join(ev, av, ac));
        }
        if (!strcmp(n, "mv")) {
                for (size_t j = 0; j < nsrc; j++) {
                        enum target tg = paths_classify(ev, r.ops[j], true);
                        if (tg != T_NONE)
                                analyze_add(ev, k, floor_rm[tg], analyze_join(ev, av, ac),
                                            r.ops[j]->s);
                        else
                                paths_check_write(ev, k, r.ops[j], true);
                }
        }
        return 0;
}

/* ---- writers ---- */

/* A command whose every operand (options read by sp) is a file it writes. */
static int
write_operands(struct eval *ev, int k, const struct optspec *sp, const struct word *av, size_t ac)
{
        struct optres r;

        opts_parse(ev, sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.nops; j++)
                paths_check_write(ev, k, r.ops[j], false);
        return 0;
}

static int
h_tee(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"append", OPT_NONE, 'a'},
                                            {"ignore-interrupts", OPT_NONE, 'i'},
                                            {"output-error", OPT_OPT, O_OTHER},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"aip", longs, 0};

        return write_operands(ev, k, &sp, av, ac);
}

static int
h_dd(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                if (!strncmp(av[i].s, "of=", 3)) {
                        struct word w = analyze_word(&av[i], av[i].s + 3);
                        paths_check_write(ev, k, &w, false);
                }
        }
        return 0;
}

static int
h_truncate(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"no-create", OPT_NONE, 'c'},
                                            {"io-blocks", OPT_NONE, 'o'},
                                            {"reference", OPT_REQ, 'r'},
                                            {"size", OPT_REQ, 's'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"cor:s:", longs, 0};

        return write_operands(ev, k, &sp, av, ac);
}

/* crontab FILE / - / -e / -r install or remove scheduled jobs; -l only lists. */
static int
h_crontab(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct optspec sp = {"u:lerinsT", NULL, 0};
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_has(&r, 'l') || opts_has(&r, 'T'))
                return 0;
        analyze_add(ev, k, "write.startup", analyze_join(ev, av, ac), "crontab");
        return 0;
}

static const struct cmd cmds[] = {
        {"chgrp", h_perm},   {"chmod", h_perm},        {"chown", h_perm},    {"cp", h_copy},
        {"cpio", h_cpio},    {"crontab", h_crontab},   {"dd", h_dd},         {"find", h_find},
        {"install", h_copy}, {"ln", h_copy},           {"mv", h_copy},       {"rm", h_rm},
        {"tee", h_tee},      {"truncate", h_truncate}, {"unlink", h_unlink}, {"unzip", h_unzip},
};

const struct cmd_table fsops_cmds = {cmds, ARRAY_SIZE(cmds)};
