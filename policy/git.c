/* git.c — git: its global options, config that runs programs, transports and the
 * subcommands that destroy work or history.
 *
 * Config injection: -c KEY=VALUE, --config-env=KEY=ENVVAR, `git config KEY VALUE`, clone -c,
 * and the GIT_CONFIG_* variables (env.c) with a key that runs a program (core.pager,
 * core.sshCommand, core.fsmonitor, alias.X=!…, …) are exec.embedded, and a literal command
 * value is parsed too (so a floor command in it stays DENY); pagers and editors that are known
 * harmless programs pass. ext:: URLs and --upload-pack/--receive-pack/--exec run programs.
 * rebase -x, submodule foreach and bisect run carry commands.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        G_OTHER = 256,
        G_CONFIG_ENV,
        G_EXEC_PATH,
        G_HARD,
        G_FORCE_LEASE,
        G_FORCE_INCLUDES,
        G_MIRROR,
        G_PRUNE,
        G_DELETE,
        G_EXEC,
        G_UPLOAD,
        G_EXTDIFF,
        G_DRY,
        G_EXPIRE,
        G_ALL,
};

static const struct lopt global_longs[] = {{"exec-path", OPT_OPT, G_EXEC_PATH},
                                           {"html-path", OPT_NONE, G_OTHER},
                                           {"man-path", OPT_NONE, G_OTHER},
                                           {"info-path", OPT_NONE, G_OTHER},
                                           {"paginate", OPT_NONE, 'p'},
                                           {"no-pager", OPT_NONE, 'P'},
                                           {"git-dir", OPT_REQ, G_OTHER},
                                           {"work-tree", OPT_REQ, G_OTHER},
                                           {"namespace", OPT_REQ, G_OTHER},
                                           {"super-prefix", OPT_REQ, G_OTHER},
                                           {"bare", OPT_NONE, G_OTHER},
                                           {"no-replace-objects", OPT_NONE, G_OTHER},
                                           {"literal-pathspecs", OPT_NONE, G_OTHER},
                                           {"glob-pathspecs", OPT_NONE, G_OTHER},
                                           {"noglob-pathspecs", OPT_NONE, G_OTHER},
                                           {"icase-pathspecs", OPT_NONE, G_OTHER},
                                           {"no-optional-locks", OPT_NONE, G_OTHER},
                                           {"list-cmds", OPT_REQ, G_OTHER},
                                           {"config-env", OPT_REQ, G_CONFIG_ENV},
                                           {"attr-source", OPT_REQ, G_OTHER},
                                           {"version", OPT_NONE, G_OTHER},
                                           {"help", OPT_NONE, G_OTHER},
                                           {NULL, 0, 0}};
static const struct optspec global_spec = {"C:c:pPvh", global_longs, OS_STOP};

/* One KEY=VALUE of git config for unit k. */
static void
git_config(struct eval *ev, int k, const char *kv, bool dyn, const char *shown)
{
        char key[256];
        size_t l = strcspn(kv, "=");
        const char *v = kv[l] == '=' ? kv + l + 1 : NULL;

        if (l >= sizeof(key)) {
                analyze_add(ev, k, "exec.embedded", shown, kv);
                return;
        }
        memcpy(key, kv, l);
        key[l] = '\0';
        if (!env_git_key_runs(key))
                return;
        bool pager = !strcasecmp(key, "core.pager") || !strcasecmp(key, "core.editor") ||
                     !strcasecmp(key, "sequence.editor") || !strncasecmp(key, "pager.", 6);
        if (v && !dyn && pager &&
            (env_harmless_program(v) || !strcmp(v, "false") || !strcmp(v, "true")))
                return;
        if (v && !dyn && !strcasecmp(key, "core.fsmonitor") &&
            (!strcmp(v, "false") || !strcmp(v, "0")))
                return;
        if (v && !dyn && !strncasecmp(key, "alias.", 6) && v[0] != '!') {
                /* an alias of git subcommands runs them: judged as git BODY */
                size_t n = strlen(v) + 5;
                char *c = arena_alloc(&ev->ar, n);
                snprintf(c, n, "git %s", v);
                struct word w = {.s = c};
                carrier_payload(ev, k, &w, "git alias");
                return;
        }
        size_t n = strlen(key) + (v ? strlen(v) : 0) + 2;
        char *subj = arena_alloc(&ev->ar, n);
        snprintf(subj, n, "%s=%s", key, v ? v : "");
        analyze_add(ev, k, "exec.embedded", shown, subj);
        if (v && !dyn && *v) {
                /* the command it runs is judged too (alias bodies after the '!') */
                struct word w = {.s = v[0] == '!' ? v + 1 : v};
                carrier_payload(ev, k, &w, "git config");
        }
}

/* ext::, fd:: transports and program options anywhere after the subcommand. */
static void
git_transports(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const char *const progs[] = {
                "--upload-pack", "--receive-pack", "--exec", "-u", "--ext-diff",
                "--extcmd",      "--tool",         "-x",     NULL};
        for (size_t j = 1; j < n; j++) {
                const char *s = a[j].s;
                if (!strncmp(s, "ext::", 5) || !strncmp(s, "fd::", 4)) {
                        analyze_add(ev, k, "exec.embedded", all, s);
                        continue;
                }
                for (const char *const *p = progs; *p; p++) {
                        size_t l = strlen(*p);
                        if (!strncmp(s, *p, l) && (s[l] == '\0' || s[l] == '=') &&
                            (strcmp(*p, "-u") && strcmp(*p, "-x")))
                                analyze_add(ev, k, "exec.embedded", all, s);
                }
        }
}

struct gsub {
        const char *name;
        void (*fn)(struct eval *ev, int k, const struct word *a, size_t n, const char *all);
};

static void
g_reset(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {{"hard", OPT_NONE, G_HARD},
                                            {"soft", OPT_NONE, G_OTHER},
                                            {"mixed", OPT_NONE, G_OTHER},
                                            {"merge", OPT_NONE, G_OTHER},
                                            {"keep", OPT_NONE, G_OTHER},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"patch", OPT_NONE, 'p'},
                                            {"no-refresh", OPT_NONE, G_OTHER},
                                            {"recurse-submodules", OPT_OPT, G_OTHER},
                                            {"pathspec-from-file", OPT_REQ, G_OTHER},
                                            {"pathspec-file-nul", OPT_NONE, G_OTHER},
                                            {"intent-to-add", OPT_NONE, 'N'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"qpN", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        if (opts_has(&r, G_HARD))
                analyze_add(ev, k, "git.reset-hard", all, all);
}

/* Whether a checkout/restore operand can only be a path: git refuses such a ref name
 * (".", "..", a trailing '/', glob characters, ':' pathspec magic). */
static bool
pathspec_only(const char *s)
{
        size_t l = strlen(s);

        return !strcmp(s, ".") || strstr(s, "..") || (l && s[l - 1] == '/') ||
               strpbrk(s, "*?[:\\") || s[0] == '/';
}

/* checkout/switch -f, checkout [TREE-ISH] [--] PATHS overwrite the working tree's changes;
 * one operand that may be a branch (git checkout main) switches and keeps them. */
static void
g_checkout(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {{"force", OPT_NONE, 'f'},
                                            {"discard-changes", OPT_NONE, 'f'},
                                            {"pathspec-from-file", OPT_REQ, G_ALL},
                                            {"orphan", OPT_REQ, G_OTHER},
                                            {"create", OPT_REQ, 'c'},
                                            {"force-create", OPT_REQ, 'C'},
                                            {"track", OPT_OPT, 't'},
                                            {"conflict", OPT_REQ, G_OTHER},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"detach", OPT_NONE, 'd'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"fb:B:c:C:l::t::qmpd", longs, 0};
        bool dd = false;
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        for (size_t j = 1; j < n && !dd; j++)
                dd = !strcmp(a[j].s, "--") && analyze_lit(&a[j]);
        bool paths = r.nops > 1 || (dd && r.nops > 0) || opts_has(&r, G_ALL) || r.dyn;
        for (size_t j = 0; j < r.nops; j++)
                paths = paths || !analyze_lit(r.ops[j]) || pathspec_only(r.ops[j]->s);
        if (opts_has(&r, 'f') || r.dyn || (paths && strcmp(a[0].s, "switch")))
                analyze_add(ev, k, "git.reset-hard", all, all);
}

/* restore PATHS writes the index's (or --source's) version over the working tree unless
 * only --staged is asked for. */
static void
g_restore(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {{"source", OPT_REQ, 's'},
                                            {"staged", OPT_NONE, 'S'},
                                            {"worktree", OPT_NONE, 'W'},
                                            {"patch", OPT_NONE, 'p'},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"pathspec-from-file", OPT_REQ, G_ALL},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"s:SWpqmU:", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        if (opts_has(&r, 'W') || !opts_has(&r, 'S') || r.dyn)
                analyze_add(ev, k, "git.reset-hard", all, all);
}

/* Words that make a subcommand throw work away: stash drop/clear (stashed work),
 * checkout-index -f, read-tree --reset, worktree remove --force and submodule -f (changes in
 * the working tree), update-ref -d (a ref, as branch -D). first: only as the first word. */
static const struct {
        const char *sub, *word, *rule;
        bool first;
} drop_words[] = {
        {"stash", "drop", "git.reset-hard", true},
        {"stash", "clear", "git.reset-hard", true},
        {"checkout-index", "-f", "git.reset-hard", false},
        {"checkout-index", "--force", "git.reset-hard", false},
        {"read-tree", "--reset", "git.reset-hard", false},
        {"worktree", "-f", "git.reset-hard", false},
        {"worktree", "--force", "git.reset-hard", false},
        {"submodule", "-f", "git.reset-hard", false},
        {"submodule", "--force", "git.reset-hard", false},
        {"update-ref", "-d", "git.branch-delete", false},
        {"update-ref", "--stdin", "git.branch-delete", false},
};

static void
g_drop(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        for (size_t d = 0; d < ARRAY_SIZE(drop_words); d++) {
                if (strcmp(drop_words[d].sub, a[0].s))
                        continue;
                for (size_t j = 1; j < n && (j == 1 || !drop_words[d].first); j++) {
                        if (!analyze_lit(&a[j]) || !strcmp(a[j].s, drop_words[d].word)) {
                                analyze_add(ev, k, drop_words[d].rule, all, all);
                                return;
                        }
                }
        }
}

/* git rm -f deletes files whose changes are not committed (without --cached). */
static void
g_rm(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {{"force", OPT_NONE, 'f'},
                                            {"cached", OPT_NONE, G_OTHER},
                                            {"dry-run", OPT_NONE, 'n'},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"ignore-unmatch", OPT_NONE, G_ALL},
                                            {"sparse", OPT_NONE, G_ALL},
                                            {"pathspec-from-file", OPT_REQ, G_ALL},
                                            {"pathspec-file-nul", OPT_NONE, G_ALL},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"fnqr", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        if ((opts_has(&r, 'f') || r.dyn) && !opts_has(&r, G_OTHER) && !opts_has(&r, 'n'))
                analyze_add(ev, k, "git.reset-hard", all, all);
}

static void
g_push(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {{"force", OPT_NONE, 'f'},
                                            {"force-with-lease", OPT_OPT, G_FORCE_LEASE},
                                            {"force-if-includes", OPT_NONE, G_FORCE_INCLUDES},
                                            {"mirror", OPT_NONE, G_MIRROR},
                                            {"delete", OPT_NONE, 'd'},
                                            {"prune", OPT_NONE, G_PRUNE},
                                            {"all", OPT_NONE, G_OTHER},
                                            {"tags", OPT_NONE, G_OTHER},
                                            {"follow-tags", OPT_NONE, G_OTHER},
                                            {"set-upstream", OPT_NONE, 'u'},
                                            {"dry-run", OPT_NONE, 'n'},
                                            {"porcelain", OPT_NONE, G_OTHER},
                                            {"quiet", OPT_NONE, 'q'},
                                            {"verbose", OPT_NONE, 'v'},
                                            {"repo", OPT_REQ, G_OTHER},
                                            {"receive-pack", OPT_REQ, G_UPLOAD},
                                            {"exec", OPT_REQ, G_UPLOAD},
                                            {"push-option", OPT_REQ, 'o'},
                                            {"signed", OPT_OPT, G_OTHER},
                                            {"atomic", OPT_NONE, G_OTHER},
                                            {"no-verify", OPT_NONE, G_OTHER},
                                            {"recurse-submodules", OPT_REQ, G_OTHER},
                                            {"progress", OPT_NONE, G_OTHER},
                                            {"thin", OPT_NONE, G_OTHER},
                                            {"ipv4", OPT_NONE, '4'},
                                            {"ipv6", OPT_NONE, '6'},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"fdnquvo:46", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        bool force = opts_has(&r, 'f') || opts_has(&r, G_FORCE_LEASE) ||
                     opts_has(&r, G_FORCE_INCLUDES) || opts_has(&r, G_MIRROR) ||
                     opts_has(&r, 'd') || opts_has(&r, G_PRUNE);
        for (size_t j = 0; j < r.nops; j++)
                force = force || ((r.ops[j]->s[0] == '+' || r.ops[j]->s[0] == ':') &&
                                  r.ops[j]->s[1] && j > 0);
        if (force && !opts_has(&r, 'n'))
                analyze_add(ev, k, "git.push-force", all, all);
}

/* git clean -f: fine for a repository inside the workspace, asked elsewhere. */
static void
g_clean(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {
                {"force", OPT_NONE, 'f'},       {"dry-run", OPT_NONE, 'n'},
                {"interactive", OPT_NONE, 'i'}, {"quiet", OPT_NONE, 'q'},
                {"exclude", OPT_REQ, 'e'},      {NULL, 0, 0}};
        static const struct optspec sp = {"fndxXiqe:", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        if (!opts_has(&r, 'f') || opts_has(&r, 'n'))
                return;
        const char *cwd = ev->cwd;
        bool inside = cwd && ev->ws && !ev->cwd_alt &&
                      (paths_in_workspace(ev, cwd) || !strcmp(cwd, ev->ws));
        if (!inside)
                analyze_add(ev, k, "git.clean", all, all);
}

static void
g_branch(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {
                {"delete", OPT_NONE, 'd'},         {"force", OPT_NONE, 'f'},
                {"move", OPT_NONE, 'm'},           {"copy", OPT_NONE, 'c'},
                {"list", OPT_NONE, 'l'},           {"all", OPT_NONE, 'a'},
                {"remotes", OPT_NONE, 'r'},        {"verbose", OPT_NONE, 'v'},
                {"set-upstream-to", OPT_REQ, 'u'}, {NULL, 0, 0}};
        static const struct optspec sp = {"dDfmMcCilarvu:t", longs, 0};
        struct optres r;

        opts_parse(ev, &sp, a, n, 1, &r);
        /* -M/-C (or -m/-c -f) replace an existing branch of the new name */
        if (opts_has(&r, 'D') || opts_has(&r, 'M') || opts_has(&r, 'C') ||
            ((opts_has(&r, 'd') || opts_has(&r, 'm') || opts_has(&r, 'c')) && opts_has(&r, 'f')))
                analyze_add(ev, k, "git.branch-delete", all, all);
}

static void
g_history(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        (void) a;
        (void) n;
        analyze_add(ev, k, "git.history", all, all);
}

/* reflog expire --expire=now / gc --prune=now drop unreachable history for good. */
static void
g_expire(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        for (size_t j = 1; j < n; j++)
                if (!strcmp(a[j].s, "--expire=now") || !strcmp(a[j].s, "--prune=now") ||
                    !strcmp(a[j].s, "--expire-unreachable=now") || !strcmp(a[j].s, "delete"))
                        analyze_add(ev, k, "git.history", all, all);
}

/* rebase -x/--exec CMD runs CMD with the shell after each commit. */
static void
g_rebase(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        static const struct lopt longs[] = {
                {"exec", OPT_REQ, 'x'},         {"onto", OPT_REQ, G_OTHER},
                {"strategy", OPT_REQ, 's'},     {"strategy-option", OPT_REQ, 'X'},
                {"interactive", OPT_NONE, 'i'}, {NULL, 0, 0}};
        static const struct optspec sp = {"x:s:X:iqvnfkr", longs, 0};
        struct optres r;

        (void) all;
        opts_parse(ev, &sp, a, n, 1, &r);
        for (size_t j = 0; j < r.no; j++)
                if (r.o[j].id == 'x' && r.o[j].val)
                        carrier_payload(ev, k, r.o[j].val, "git rebase --exec");
}

/* submodule foreach CMD (a shell string) / bisect run CMD ARGS… (argv). */
static void
g_foreach(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        (void) all;
        for (size_t j = 1; j + 1 < n; j++) {
                if (!strcmp(a[j].s, "foreach")) {
                        size_t i = j + 1;
                        while (i < n && a[i].s[0] == '-')
                                i++;
                        if (i < n) {
                                struct word w = a[i];
                                w.s = analyze_join(ev, a + i, n - i);
                                carrier_payload(ev, k, &w, "git submodule foreach");
                        }
                        return;
                }
                if (!strcmp(a[j].s, "run")) {
                        analyze_view(ev, k, a + j + 1, n - j - 1, 1);
                        return;
                }
        }
}

/* git config [--global] KEY VALUE / git config set KEY VALUE: config that runs later. */
static void
g_config(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        size_t ops[4], no = 0;

        for (size_t j = 1; j < n && no < 4; j++) {
                const char *s = a[j].s;
                if (s[0] == '-') {
                        if (!strcmp(s, "--file") || !strcmp(s, "-f") || !strcmp(s, "--blob") ||
                            !strcmp(s, "--type"))
                                j++;
                        continue;
                }
                ops[no++] = j;
        }
        size_t first =
                no > 0 && (!strcmp(a[ops[0]].s, "set") || !strcmp(a[ops[0]].s, "--add")) ? 1 : 0;
        if (no < first + 2)
                return;
        const struct word *key = &a[ops[first]], *val = &a[ops[first + 1]];
        size_t l = strlen(key->s) + strlen(val->s) + 2;
        char *kv = arena_alloc(&ev->ar, l);
        snprintf(kv, l, "%s=%s", key->s, val->s);
        git_config(ev, k, kv, !analyze_lit(val) || !analyze_lit(key), all);
}

/* clone/fetch/pull/submodule -c KEY=VALUE / --config KEY=VALUE set repository config. */
static void
g_clone(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        for (size_t j = 1; j + 1 < n; j++)
                if (!strcmp(a[j].s, "-c") || !strcmp(a[j].s, "--config"))
                        git_config(ev, k, a[j + 1].s, !analyze_lit(&a[j + 1]), all);
                else if (!strncmp(a[j].s, "--config=", 9))
                        git_config(ev, k, a[j].s + 9, !analyze_lit(&a[j]), all);
}

static const struct gsub subs[] = {
        {"bisect", g_foreach},      {"branch", g_branch},   {"checkout", g_checkout},
        {"checkout-index", g_drop}, {"clean", g_clean},     {"clone", g_clone},
        {"config", g_config},       {"fetch", g_clone},     {"filter-branch", g_history},
        {"filter-repo", g_history}, {"gc", g_expire},       {"pull", g_clone},
        {"push", g_push},           {"read-tree", g_drop},  {"prune", g_history},
        {"rebase", g_rebase},       {"reflog", g_expire},   {"reset", g_reset},
        {"restore", g_restore},     {"rm", g_rm},           {"stash", g_drop},
        {"submodule", g_foreach},   {"submodule", g_drop},  {"switch", g_checkout},
        {"update-ref", g_expire},   {"update-ref", g_drop}, {"worktree", g_drop},
};

static void git_subcommand(struct eval *ev, int k, const struct word *a, size_t n, const char *all);

static int
h_git(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct optres r;
        const char *all = analyze_join(ev, av, ac);

        opts_parse(ev, &global_spec, av, ac, 1, &r);
        for (size_t j = 0; j < r.no; j++) {
                const struct optocc *o = &r.o[j];
                if (o->id == 'c' && o->val)
                        git_config(ev, k, o->val->s, !analyze_lit(o->val), all);
                else if (o->id == G_CONFIG_ENV && o->val)
                        git_config(ev, k, o->val->s, true, all);
                else if (o->id == G_EXEC_PATH && o->val)
                        analyze_add(ev, k, "exec.embedded", all, o->val->s);
        }
        if (r.stop >= ac)
                return 0;
        const char *cwd = ev->cwd;
        const struct word *dir = opts_val(&r, 'C');
        if (dir)
                ev->cwd = analyze_lit(dir) ? paths_resolve(ev, dir->s) : NULL;
        git_subcommand(ev, k, av + r.stop, ac - r.stop, all);
        ev->cwd = cwd;
        return 0;
}

static void
git_subcommand(struct eval *ev, int k, const struct word *a, size_t n, const char *all)
{
        if (!analyze_lit(&a[0])) {
                analyze_add(ev, k, "exec.opaque-cmd", a[0].s, all);
                return;
        }
        for (size_t j = 0; j < ARRAY_SIZE(subs); j++)
                if (!strcmp(subs[j].name, a[0].s))
                        subs[j].fn(ev, k, a, n, all);
        git_transports(ev, k, a, n, all);
}

static const struct cmd cmds[] = {
        {"git", h_git},
};

const struct cmd_table git_cmds = {cmds, ARRAY_SIZE(cmds)};
