/* rulesfile.c — the operator's rules file: parsing, matching on effective argv, inline tests.
 *
 * Line format (see docs/policy.md):
 *   # comment
 *   VERDICT ID MATCHER... [-- message]      VERDICT = allow | ask | deny
 *   disable ID                              turns off a built-in ask rule (never a floor rule)
 *   test VERDICT [RULE]: COMMAND            checked when the file is loaded
 * Matchers: cmd= prefix= flag= arg= path= write= env=, values comma-separated (OR), a leading
 * '!' negates; all matchers of a rule must hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/internal.h"
#include "protocol/util.h"

#define RULES_MAX_FILE  (1024 * 1024)
#define RULES_MAX_RULES 4096

enum mkind {
        M_CMD,
        M_PREFIX,
        M_FLAG,
        M_ARG,
        M_PATH,
        M_WRITE,
        M_ENV,
};

struct matcher {
        enum mkind kind;
        bool neg;
        char **vals;
        size_t nvals;
};

struct frule {
        char *id;
        enum policy_verdict verdict;
        char *message;
        struct matcher *m;
        size_t nm;
};

static const struct {
        const char *name;
        enum mkind kind;
} mnames[] = {{"cmd", M_CMD},   {"prefix", M_PREFIX}, {"flag", M_FLAG}, {"arg", M_ARG},
              {"path", M_PATH}, {"write", M_WRITE},   {"env", M_ENV}};

/* Glob where a star crosses slashes; a trailing "/ **" also matches the directory itself. */
bool
rulesfile_glob(const char *pat, const char *s)
{
        size_t l = strlen(pat);

        if (l >= 3 && !strcmp(pat + l - 3, "/**")) {
                char base[4096];
                if (l - 3 >= sizeof(base))
                        return false;
                memcpy(base, pat, l - 3);
                base[l - 3] = '\0';
                if (!base[0])
                        return s[0] == '/';
                if (fnmatch(base, s, 0) == 0)
                        return true;
                char pre[4096];
                size_t bl = strlen(s);
                for (size_t k = 1; k < bl && k < sizeof(pre); k++) {
                        if (s[k] != '/')
                                continue;
                        memcpy(pre, s, k);
                        pre[k] = '\0';
                        if (fnmatch(base, pre, FNM_PATHNAME) == 0)
                                return true;
                }
                return false;
        }
        return fnmatch(pat, s, 0) == 0;
}

/* ---- matching ---- */

static bool
any_val(const struct matcher *m, const char *s)
{
        for (size_t v = 0; v < m->nvals; v++)
                if (rulesfile_glob(m->vals[v], s))
                        return true;
        return false;
}

static bool
flag_present(const struct word *av, size_t ac, const char *f)
{
        for (size_t k = 1; k < ac; k++) {
                const char *s = av[k].s;
                if (!strcmp(s, "--"))
                        return false;
                if (s[0] != '-' || !s[1])
                        continue;
                if (s[1] == '-') {
                        size_t l = strlen(f);
                        if (!strncmp(s + 2, f, l) && (s[2 + l] == '\0' || s[2 + l] == '='))
                                return true;
                } else if (f[1] == '\0' && strchr(s + 1, f[0])) {
                        return true;
                }
        }
        return false;
}

static bool
match_one(struct eval *ev, int k, const struct matcher *m, const struct word *av, size_t ac)
{
        const struct unit *u = &ev->units[k];
        const char *b = strrchr(av[0].s, '/');

        b = b && b[1] ? b + 1 : av[0].s;
        switch (m->kind) {
        case M_CMD:
                return any_val(m, b);
        case M_PREFIX:
                if (m->nvals > ac)
                        return false;
                for (size_t v = 0; v < m->nvals; v++)
                        if (!rulesfile_glob(m->vals[v], v == 0 ? b : av[v].s))
                                return false;
                return true;
        case M_FLAG:
                for (size_t v = 0; v < m->nvals; v++)
                        if (flag_present(av, ac, m->vals[v]))
                                return true;
                return false;
        case M_ARG:
                for (size_t a = 1; a < ac; a++)
                        if (any_val(m, av[a].s))
                                return true;
                return false;
        case M_PATH:
                for (size_t a = 1; a < ac; a++) {
                        if (av[a].s[0] == '-' || (av[a].flags & W_DYN))
                                continue;
                        const char *p = analyze_path(ev, av[a].s);
                        if (p && any_val(m, p))
                                return true;
                }
                return false;
        case M_WRITE:
                for (size_t r = 0; r < u->nredir; r++) {
                        if (u->redir[r].kind != RD_OUT)
                                continue;
                        const char *p = analyze_path(ev, u->redir[r].target.s);
                        if (p && any_val(m, p))
                                return true;
                }
                return false;
        case M_ENV:
                for (size_t a = 0; a < u->nassign; a++) {
                        char name[128];
                        size_t l = strcspn(u->assign[a].s, "=");
                        if (l >= sizeof(name))
                                continue;
                        memcpy(name, u->assign[a].s, l);
                        name[l] = '\0';
                        if (any_val(m, name))
                                return true;
                }
                return false;
        }
        return false;
}

/* Applies the rules file to one effective argv of unit k. */
void
rulesfile_match(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const struct policy *p = ev->pol;

        if (!p || !p->nrules)
                return;
        for (size_t r = 0; r < p->nrules; r++) {
                const struct frule *fr = &p->rules[r];
                bool ok = true;
                for (size_t j = 0; j < fr->nm && ok; j++)
                        ok = match_one(ev, k, &fr->m[j], av, ac) != fr->m[j].neg;
                if (!ok)
                        continue;
                if (fr->verdict == POLICY_ALLOW) {
                        if (ev->allowedcap < ev->nunits) {
                                size_t ncap = ev->nunits + 16;
                                ev->allowed = xrealloc(ev->allowed, ncap);
                                memset(ev->allowed + ev->allowedcap, 0, ncap - ev->allowedcap);
                                ev->allowedcap = ncap;
                        }
                        ev->allowed[k] = true;
                        continue;
                }
                analyze_add_file(ev, k, fr->id, fr->verdict, fr->message, av[0].s);
        }
}

/* Whether the rules file disabled a built-in rule. */
bool
rulesfile_disabled(const struct policy *p, const char *id)
{
        for (size_t k = 0; k < p->ndisabled; k++)
                if (!strcmp(p->disabled[k], id))
                        return true;
        return false;
}

/* Frees n rules. */
void
rulesfile_free(struct frule *r, size_t n)
{
        for (size_t k = 0; k < n; k++) {
                for (size_t j = 0; j < r[k].nm; j++) {
                        for (size_t v = 0; v < r[k].m[j].nvals; v++)
                                free(r[k].m[j].vals[v]);
                        free(r[k].m[j].vals);
                }
                free(r[k].m);
                free(r[k].id);
                free(r[k].message);
        }
        free(r);
}

/* ---- parsing ---- */

struct lp {
        const char *path;
        int line;
        struct sbx_error *err;
};

static int
lerr(struct lp *lp, const char *what, const char *arg)
{
        sbx_error_set(lp->err, SBX_E_PARAMS, NULL, "%s:%d: %s%s%s", lp->path, lp->line, what,
                      arg ? ": " : "", arg ? arg : "");
        return -EINVAL;
}

/* Next whitespace-separated token; "…" groups (\" and \\ escapes). Returns NULL at end. */
static char *
token(char **cur, bool *bad)
{
        char *s = *cur;

        while (*s == ' ' || *s == '\t')
                s++;
        if (!*s)
                return NULL;
        char *out = s, *o = s;
        bool q = false;
        while (*s && (q || (*s != ' ' && *s != '\t'))) {
                if (*s == '"') {
                        q = !q;
                        s++;
                } else if (q && *s == '\\' && (s[1] == '"' || s[1] == '\\')) {
                        *o++ = s[1];
                        s += 2;
                } else {
                        *o++ = *s++;
                }
        }
        if (q)
                *bad = true;
        if (*s)
                s++;
        *o = '\0';
        *cur = s;
        return out;
}

static bool
valid_id(const char *id)
{
        if (!*id || strlen(id) > 64)
                return false;
        for (const char *c = id; *c; c++)
                if (!(*c >= 'a' && *c <= 'z') && !(*c >= '0' && *c <= '9') && !strchr("._-", *c))
                        return false;
        return true;
}

static int
verdict_of(const char *s)
{
        if (!strcmp(s, "allow"))
                return POLICY_ALLOW;
        if (!strcmp(s, "ask"))
                return POLICY_ASK;
        if (!strcmp(s, "deny"))
                return POLICY_DENY;
        return -1;
}

static int
parse_matcher(struct lp *lp, char *tok, struct matcher *m)
{
        char *eq = strchr(tok, '=');

        if (!eq)
                return lerr(lp, "expected KEY=VALUE", tok);
        *eq = '\0';
        size_t k;
        for (k = 0; k < ARRAY_SIZE(mnames); k++)
                if (!strcmp(mnames[k].name, tok))
                        break;
        if (k == ARRAY_SIZE(mnames))
                return lerr(lp, "unknown matcher", tok);
        m->kind = mnames[k].kind;
        char *v = eq + 1;
        if (*v == '!') {
                m->neg = true;
                v++;
        }
        if (!*v)
                return lerr(lp, "empty matcher value", tok);
        const char *sep = m->kind == M_PREFIX ? " " : ",";
        char *save = NULL;
        for (char *t = strtok_r(v, sep, &save); t; t = strtok_r(NULL, sep, &save)) {
                m->vals = xrealloc(m->vals, (m->nvals + 1) * sizeof(char *));
                m->vals[m->nvals++] = xstrdup(t);
        }
        return m->nvals ? 0 : lerr(lp, "empty matcher value", tok);
}

static int
parse_rule(struct lp *lp, struct policy *p, int verdict, char *rest)
{
        bool bad = false;
        char *msg = strstr(rest, " -- ");
        if (msg) {
                *msg = '\0';
                msg += 4;
                while (*msg == ' ')
                        msg++;
        }
        char *id = token(&rest, &bad);
        if (!id || !valid_id(id))
                return lerr(lp, "bad rule id (lowercase letters, digits, . _ -)", id);
        if (builtin_find(id))
                return lerr(lp, "rule id clashes with a built-in rule", id);
        for (size_t k = 0; k < p->nrules; k++)
                if (!strcmp(p->rules[k].id, id))
                        return lerr(lp, "duplicate rule id", id);
        if (p->nrules >= RULES_MAX_RULES)
                return lerr(lp, "too many rules", NULL);
        p->rules = xrealloc(p->rules, (p->nrules + 1) * sizeof(*p->rules));
        struct frule *r = &p->rules[p->nrules++];
        memset(r, 0, sizeof(*r));
        r->id = xstrdup(id);
        r->verdict = (enum policy_verdict) verdict;
        r->message = xstrdup(msg && *msg ? msg : "matched an operator rule");
        for (char *t; (t = token(&rest, &bad));) {
                r->m = xrealloc(r->m, (r->nm + 1) * sizeof(*r->m));
                memset(&r->m[r->nm], 0, sizeof(r->m[0]));
                r->nm++;
                int rc = parse_matcher(lp, t, &r->m[r->nm - 1]);
                if (rc < 0)
                        return rc;
        }
        if (bad)
                return lerr(lp, "unterminated quote", NULL);
        if (r->nm == 0)
                return lerr(lp, "rule without matchers", id);
        return 0;
}

static int
parse_disable(struct lp *lp, struct policy *p, char *rest)
{
        bool bad = false;
        char *id = token(&rest, &bad);
        const struct builtin_rule *b = id ? builtin_find(id) : NULL;

        if (!b)
                return lerr(lp, "disable: unknown built-in rule", id);
        if ((b->flags & POLICY_F_FLOOR) || b->verdict == POLICY_DENY || !strncmp(id, "parse.", 6))
                return lerr(lp, "disable: floor, deny and parse rules cannot be disabled", id);
        p->disabled = xrealloc(p->disabled, (p->ndisabled + 1) * sizeof(char *));
        p->disabled[p->ndisabled++] = xstrdup(id);
        return 0;
}

struct ltest {
        int line;
        int verdict;
        char *rule;
        char *command;
};

static int
parse_test(struct lp *lp, char *rest, struct ltest *t)
{
        char *colon = strchr(rest, ':');

        if (!colon)
                return lerr(lp, "test: expected 'test VERDICT [RULE]: COMMAND'", NULL);
        *colon = '\0';
        bool bad = false;
        char *v = token(&rest, &bad), *rule = token(&rest, &bad);
        t->verdict = v ? verdict_of(v) : -1;
        if (t->verdict < 0)
                return lerr(lp, "test: verdict must be allow, ask or deny", v);
        if (token(&rest, &bad))
                return lerr(lp, "test: extra words before ':'", NULL);
        char *cmd = colon + 1;
        while (*cmd == ' ' || *cmd == '\t')
                cmd++;
        if (!*cmd)
                return lerr(lp, "test: empty command", NULL);
        t->line = lp->line;
        t->rule = rule ? xstrdup(rule) : NULL;
        t->command = xstrdup(cmd);
        return 0;
}

static int
parse_line(struct lp *lp, struct policy *p, char *line, struct ltest **tests, size_t *ntests)
{
        bool bad = false;
        char *rest = line;
        char *kw = token(&rest, &bad);

        if (!kw || kw[0] == '#')
                return 0;
        int v = verdict_of(kw);
        if (v >= 0)
                return parse_rule(lp, p, v, rest);
        if (!strcmp(kw, "disable"))
                return parse_disable(lp, p, rest);
        if (!strcmp(kw, "test")) {
                *tests = xrealloc(*tests, (*ntests + 1) * sizeof(**tests));
                int rc = parse_test(lp, rest, &(*tests)[*ntests]);
                if (rc == 0)
                        (*ntests)++;
                return rc;
        }
        return lerr(lp, "unknown keyword (allow, ask, deny, disable, test)", kw);
}

static int
run_test(struct lp *lp, struct policy *p, const struct ltest *t)
{
        static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};
        struct policy_ctx ctx = {.backend = "local",
                                 .host_access = true,
                                 .cwd = "/home/user/project",
                                 .home = "/home/user",
                                 .protected_paths = prot};
        struct policy_result r;
        bool rule_ok = !t->rule;

        policy_eval_command(p, &ctx, t->command, &r);
        for (size_t k = 0; k < r.nfindings && !rule_ok; k++)
                rule_ok = !strcmp(r.findings[k].rule, t->rule);
        int rc = 0;
        if ((int) r.verdict != t->verdict || !rule_ok) {
                struct buf b = {0};
                for (size_t k = 0; k < r.nfindings; k++)
                        buf_appendf(&b, "%s%s", k ? ", " : "", r.findings[k].rule);
                buf_append(&b, "", 1);
                lp->line = t->line;
                sbx_error_set(lp->err, SBX_E_PARAMS, NULL,
                              "%s:%d: test failed: expected %s%s%s, got %s (findings: %s)",
                              lp->path, t->line, policy_verdict_name(t->verdict),
                              t->rule ? " with rule " : "", t->rule ? t->rule : "",
                              policy_verdict_name(r.verdict), b.len > 1 ? b.data : "none");
                buf_free(&b);
                rc = -EINVAL;
        }
        policy_result_clear(&r);
        return rc;
}

/* Parses text (NUL-terminated, len bytes) into p and runs its tests. */
int
rulesfile_parse(struct policy *p, const char *path, char *text, size_t len, struct sbx_error *err)
{
        struct lp lp = {.path = path, .err = err};
        struct ltest *tests = NULL;
        size_t ntests = 0;
        int rc = 0;

        if (memchr(text, '\0', len))
                return lerr(&lp, "NUL byte in rules file", NULL);
        for (char *s = text, *nl; s && *s && rc == 0; s = nl ? nl + 1 : NULL) {
                nl = strchr(s, '\n');
                if (nl)
                        *nl = '\0';
                lp.line++;
                if (nl && nl > s && nl[-1] == '\r')
                        nl[-1] = '\0';
                rc = parse_line(&lp, p, s, &tests, &ntests);
        }
        for (size_t k = 0; k < ntests && rc == 0; k++)
                rc = run_test(&lp, p, &tests[k]);
        for (size_t k = 0; k < ntests; k++) {
                free(tests[k].rule);
                free(tests[k].command);
        }
        free(tests);
        return rc;
}

/* Reads a whole file (bounded). */
int
rulesfile_read(const char *path, char **text, size_t *len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct buf b = {0};

        if (fd < 0)
                return -errno;
        for (;;) {
                buf_reserve(&b, 65536);
                ssize_t n = read(fd, b.data + b.len, 65536);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = -errno;
                        close(fd);
                        buf_free(&b);
                        return e;
                }
                if (n == 0)
                        break;
                b.len += (size_t) n;
                if (b.len > RULES_MAX_FILE) {
                        close(fd);
                        buf_free(&b);
                        return -EFBIG;
                }
        }
        close(fd);
        buf_reserve(&b, 1);
        b.data[b.len] = '\0';
        *text = b.data;
        *len = b.len;
        return 0;
}
