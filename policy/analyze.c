/* analyze.c — judges the units the parser produced: dispatches each effective argv to the
 * command tables of the rule modules (wrappers peel off until the command they run), applies
 * the rules file, runs the passes that need the whole command (fork bombs, secrets leaving)
 * and collects the findings, strictest first when the list is full. */
#include <arpa/inet.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

static void analyze_unit(struct eval *ev, int k);

/* ---- findings ---- */

static bool
rule_disabled(struct eval *ev, const struct builtin_rule *r)
{
        return !(r->flags & POLICY_F_FLOOR) && ev->pol && rulesfile_disabled(ev->pol, r->id);
}

static bool
same_finding(const struct ifinding *o, const struct ifinding *n)
{
        return strcmp(o->rule, n->rule) == 0 && o->verdict == n->verdict &&
               !strcmp(o->subject ? o->subject : "", n->subject ? n->subject : "") &&
               !strcmp(o->match ? o->match : "", n->match ? n->match : "");
}

static void
add_raw(struct eval *ev, struct ifinding *nf)
{
        for (size_t j = 0; j < ev->nf; j++)
                if (same_finding(&ev->f[j], nf))
                        return;
        if (ev->nf >= POLICY_MAX_FINDINGS) {
                /* full: a stricter finding replaces a weaker one, so the verdict stays right */
                ev->dropped = true;
                for (size_t j = 0; j < ev->nf; j++) {
                        if (ev->f[j].verdict < nf->verdict) {
                                ev->f[j] = *nf;
                                return;
                        }
                }
                return;
        }
        arena_grow(&ev->ar, (void **) &ev->f, &ev->fcap, ev->nf, sizeof(struct ifinding));
        ev->f[ev->nf++] = *nf;
}

/* A copy of s for display: at most 200 bytes, "…" when cut. */
static const char *
clip(struct eval *ev, const char *s)
{
        if (!s)
                return NULL;
        size_t n = strlen(s);
        if (n <= 200)
                return arena_strndup(&ev->ar, s, n);
        char *c = arena_alloc(&ev->ar, 204);
        memcpy(c, s, 197);
        memcpy(c + 197, "\xe2\x80\xa6", 3);
        return c;
}

/* A subject for approval keys: the text itself, or for long text a prefix and its digest,
 * never a cut that two different commands could share. */
static const char *
subject_of(struct eval *ev, const char *s)
{
        if (!s)
                return NULL;
        size_t n = strlen(s);
        if (n <= 200)
                return arena_strndup(&ev->ar, s, n);
        char hex[65];
        sha256_hex(s, n, hex);
        char *c = arena_alloc(&ev->ar, 128 + 8 + 64 + 1);
        memcpy(c, s, 128);
        memcpy(c + 128, " sha256:", 8);
        memcpy(c + 136, hex, 65);
        return c;
}

/* Adds a built-in finding for unit (or -1). */
void
analyze_add(struct eval *ev, int unit, const char *rule, const char *match, const char *subject)
{
        const struct builtin_rule *r = builtin_find(rule);
        struct ifinding nf = {.rule = rule, .unit = unit, .builtin = true};

        if (!r || rule_disabled(ev, r))
                return;
        if (!strcmp(rule, "parse.limit")) {
                ev->limited = true;
                ev->nlimits++;
        }
        nf.verdict = r->verdict;
        nf.flags = r->flags;
        nf.message = r->message;
        nf.match = clip(ev, match);
        nf.subject = subject_of(ev, subject ? subject : match);
        if (unit >= 0 && (ev->units[unit].flags & U_CARRIED))
                nf.flags |= POLICY_F_NO_ALWAYS;
        if (ev->downgrade > 0 && nf.verdict == POLICY_DENY) {
                char *m = arena_alloc(&ev->ar, strlen(r->message) + 40);
                strcpy(m, "possibly run through a wrapper: ");
                strcat(m, r->message);
                nf.verdict = POLICY_ASK;
                nf.flags = (nf.flags & ~POLICY_F_FLOOR) | POLICY_F_NO_ALWAYS;
                nf.message = m;
        }
        add_raw(ev, &nf);
}

/* Adds a finding of a rules-file rule. */
void
analyze_add_file(struct eval *ev, int unit, const char *id, enum policy_verdict v,
                 const char *message, const char *match)
{
        struct ifinding nf = {.rule = id,
                              .verdict = v,
                              .message = message,
                              .match = clip(ev, match),
                              .subject = subject_of(ev, match),
                              .unit = unit};

        if (unit >= 0 && (ev->units[unit].flags & U_CARRIED))
                nf.flags |= POLICY_F_NO_ALWAYS;
        add_raw(ev, &nf);
}

/* "who payload": subject_of() turns it into a prefix and a digest when it is long. */
const char *
analyze_digest(struct eval *ev, const char *who, const char *payload)
{
        size_t a = strlen(who), b = strlen(payload);
        char *s = arena_alloc(&ev->ar, a + b + 2);

        memcpy(s, who, a);
        s[a] = ' ';
        memcpy(s + a + 1, payload, b + 1);
        return s;
}

/* ---- helpers ---- */

/* The last path component (the whole string when it ends in '/'). */
const char *
analyze_base(const char *s)
{
        const char *b = strrchr(s, '/');

        return b && b[1] ? b + 1 : s;
}

/* Whether s is in the NULL-terminated list. */
bool
analyze_in(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

/* Whether the word's text is what the program will see. */
bool
analyze_lit(const struct word *w)
{
        return !(w->flags & W_DYN);
}

/* A word with w's flags and text s. */
struct word
analyze_word(const struct word *w, const char *s)
{
        struct word n = *w;

        n.s = s;
        return n;
}

/* The words joined by blanks. */
const char *
analyze_join(struct eval *ev, const struct word *av, size_t ac)
{
        size_t n = 1;

        for (size_t k = 0; k < ac; k++)
                n += strlen(av[k].s) + 1;
        char *s = arena_alloc(&ev->ar, n), *o = s;
        for (size_t k = 0; k < ac; k++) {
                size_t l = strlen(av[k].s);
                if (k)
                        *o++ = ' ';
                memcpy(o, av[k].s, l);
                o += l;
        }
        *o = '\0';
        return s;
}

/* Normalised absolute path for a word, or NULL if it cannot be known. */
const char *
analyze_path(struct eval *ev, const char *s)
{
        return paths_resolve(ev, s);
}

/* Wrappers skipped to find the program a unit runs. */
static const char *const name_skip[] = {
        "sudo",     "env",      "nice",        "nohup",        "timeout", "command",
        "exec",     "stdbuf",   "time",        "setsid",       "ionice",  "chrt",
        "taskset",  "doas",     "builtin",     "xargs",        "busybox", "toybox",
        "unbuffer", "torsocks", "proxychains", "proxychains4", NULL};

static bool
skippable(const struct word *w)
{
        const char *s = w->s;

        /* wrappers, options, assignments, numbers and durations (timeout 5s) */
        return analyze_in(analyze_base(s), name_skip) || s[0] == '-' || strchr(s, '=') ||
               (isdigit((unsigned char) s[0]) && strspn(s, "0123456789.smhd") == strlen(s));
}

/* The program a unit runs after the usual wrappers. */
const char *
analyze_unit_name(struct eval *ev, const struct unit *u)
{
        (void) ev;
        for (size_t k = 0; k < u->argc; k++)
                if (!skippable(&u->argv[k]) || k + 1 == u->argc)
                        return analyze_base(u->argv[k].s);
        return "";
}

/* ---- scopes ---- */

/* A new scope inside parent. */
int
analyze_scope_new(struct eval *ev, int parent)
{
        arena_grow(&ev->ar, (void **) &ev->scopes, &ev->scopecap, ev->nscopes,
                   sizeof(struct scope));
        ev->scopes[ev->nscopes].parent = parent;
        ev->scopes[ev->nscopes].has_cwd = false;
        ev->scopes[ev->nscopes].cwd = NULL;
        ev->scopes[ev->nscopes].cwd_alt = NULL;
        return (int) ev->nscopes++;
}

/* The cwd unit k runs in: the nearest scope (itself or an enclosing one) that changed it;
 * *alt where a cd of it that may have failed left it instead. */
static const char *
scope_cwd(struct eval *ev, int scope, const char *start, const char **alt)
{
        *alt = NULL;
        for (int s = scope, n = 0; s >= 0 && (size_t) s < ev->nscopes && n < 256; n++) {
                if (ev->scopes[s].has_cwd) {
                        *alt = ev->scopes[s].cwd_alt;
                        return ev->scopes[s].cwd;
                }
                s = ev->scopes[s].parent;
        }
        return start;
}

/* ---- command tables ---- */

static const struct cmd_table *const tables[] = {
        &wrap_cmds,  &carrier_cmds, &shbuiltin_cmds, &embed_cmds, &git_cmds,
        &fsops_cmds, &system_cmds,  &net_cmds,       &mux_cmds,   &rewrite_cmds};

static int
cmd_cmp(const void *a, const void *b)
{
        return strcmp(((const struct cmd *) a)->name, ((const struct cmd *) b)->name);
}

static cmd_fn
lookup_exact(const char *name)
{
        struct cmd key = {.name = name};

        for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
                const struct cmd *c =
                        bsearch(&key, tables[t]->cmds, tables[t]->n, sizeof(struct cmd), cmd_cmp);
                if (c)
                        return c->fn;
        }
        return NULL;
}

/* The handler for a command name: exact, a family (mkfs.ext4, newfs_hfs), or with a version
 * suffix folded (python3.11, pip3, ksh93, lua5.4). */
cmd_fn
analyze_lookup(const char *name)
{
        char tmp[64];
        cmd_fn fn = lookup_exact(name);
        size_t n = strlen(name);

        if (fn || n >= sizeof(tmp))
                return fn;
        size_t fam = strcspn(name, "._");
        if (fam < n && fam > 0) {
                memcpy(tmp, name, fam);
                tmp[fam] = '\0';
                if (!strcmp(tmp, "mkfs") || !strcmp(tmp, "newfs") || !strcmp(tmp, "mkfs"))
                        return lookup_exact(tmp);
        }
        size_t e = n;
        while (e > 0 &&
               (isdigit((unsigned char) name[e - 1]) || name[e - 1] == '.' || name[e - 1] == '-'))
                e--;
        if (e == n || e == 0)
                return NULL;
        memcpy(tmp, name, e);
        tmp[e] = '\0';
        return lookup_exact(tmp);
}

/* ---- per unit ---- */

/* Commands that never run their arguments: no suffix scan for them. */
static const char *const harmless[] = {
        "echo",     "printf",    "grep",        "egrep",   "fgrep",  "rg",       "ag",
        "ack",      "man",       "which",       "type",    "whatis", "apropos",  "help",
        "cat",      "less",      "more",        "head",    "tail",   "wc",       "ls",
        "test",     "[",         "true",        "false",   "file",   "stat",     "locate",
        "whereis",  "info",      "jq",          "diff",    "cmp",    "sort",     "uniq",
        "cut",      "logger",    "notify-send", "pwd",     "cd",     "basename", "dirname",
        "readlink", "realpath",  "mkdir",       "touch",   "du",     "df",       "date",
        "sleep",    "read",      "export",      "declare", "local",  "set",      "unset",
        "shift",    "return",    "exit",        "wait",    "ps",     "id",       "whoami",
        "uname",    "hostname",  "tree",        "column",  "fold",   "nl",       "tac",
        "md5sum",   "sha256sum", "python",      "python3", "node",   "git",      "make",
        "npm",      "cargo",     "go",          "pip",     "pip3",   "yarn",     "pnpm",
        "gcc",      "cc",        "clang",       "tr",      "tee",    "paste",    "xxd",
        "od",       "base64",    "hexdump",     NULL};
static const char *const suffix_targets[] = {
        "rm",    "mkfs",    "dd",     "shutdown", "reboot",     "poweroff",   "halt", "wipefs",
        "kill",  "shred",   "chmod",  "chown",    "sh",         "bash",       "dash", "zsh",
        "ksh",   "sfdisk",  "parted", "fdisk",    "cryptsetup", "blkdiscard", "init", "systemctl",
        "pkill", "killall", "mkswap", "sudo",     "su",         NULL};

/* argv0 in no table: a later literal word naming a dangerous program may be run by it (with
 * the words after it). Every such suffix is judged, its floor findings as ASK; past 16 of them
 * the rest is parse.limit (ASK as well, so the cap never weakens the verdict). */
static void
unknown_wrapper(struct eval *ev, int k, const struct word *av, size_t ac, const char *name)
{
        int views = 0;

        if (analyze_in(name, harmless))
                return;
        for (size_t j = 1; j < ac; j++) {
                if (!analyze_lit(&av[j]))
                        continue;
                const char *b = analyze_base(av[j].s);
                if (!analyze_in(b, suffix_targets) && strncmp(b, "mkfs.", 5))
                        continue;
                if (++views > 16) {
                        analyze_add(ev, k, "parse.limit", "too many possible wrapped commands",
                                    NULL);
                        return;
                }
                ev->downgrade++;
                analyze_view(ev, k, av + j, ac - j, 1);
                ev->downgrade--;
        }
}

/* Whether host (n bytes) is a metadata service's address in another spelling: IPv4 the way
 * inet_aton(3) and curl read it (0xa9fea9fe, 2852039166, 0251.0376.0251.0376, 169.254.43518),
 * IPv4-mapped IPv6 ([::ffff:169.254.169.254]). */
static bool
metadata_addr(const char *host, size_t n)
{
        static const uint32_t v4[] = {0xA9FEA9FE, 0x646464C8, 0xA9FEAA02}; /* 169.254.169.254 … */
        char b[64];
        struct in_addr a;
        struct in6_addr a6;

        if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
                host++;
                n -= 2;
        }
        if (n == 0 || n >= sizeof(b))
                return false;
        memcpy(b, host, n);
        b[n] = '\0';
        uint32_t v = 0;
        if (inet_pton(AF_INET6, b, &a6) == 1 && IN6_IS_ADDR_V4MAPPED(&a6))
                memcpy(&a.s_addr, a6.s6_addr + 12, 4);
        else if (!inet_aton(b, &a))
                return false;
        v = ntohl(a.s_addr);
        for (size_t j = 0; j < ARRAY_SIZE(v4); j++)
                if (v == v4[j])
                        return true;
        return false;
}

/* The host part of a word that may be a URL or a bare address (scheme://user@HOST:port/…);
 * in a URL, GCE's short name "metadata" too. */
static bool
word_metadata(const char *s)
{
        const char *h = strstr(s, "://");
        bool url = h != NULL;

        h = h ? h + 3 : s;
        size_t end = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, "/:?#");
        const char *at = memchr(h, '@', end);
        if (at) {
                h = at + 1;
                end = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, "/:?#");
        }
        end = MIN(end, strlen(h));
        return metadata_addr(h, end) || (url && end == 8 && !strncasecmp(h, "metadata", 8));
}

static void
check_metadata(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const hosts[] = {"169.254.169.254",
                                            "100.100.100.200",
                                            "metadata.google.internal",
                                            "fd00:ec2::254",
                                            "169.254.170.2",
                                            "metadata.azure.com",
                                            NULL};
        for (size_t j = 0; j < ac; j++) {
                bool hit = false;
                /* one pass per word: only positions that can start a host name */
                for (const char *c = av[j].s; (c = strpbrk(c, "1mf")); c++) {
                        for (const char *const *h = hosts; *h; h++) {
                                if (**h == *c && !strncmp(c, *h, strlen(*h))) {
                                        analyze_add(ev, k, "net.metadata", av[j].s, *h);
                                        hit = true;
                                        break;
                                }
                        }
                }
                if (!hit && j > 0 && word_metadata(av[j].s))
                        analyze_add(ev, k, "net.metadata", av[j].s, av[j].s);
        }
}

/* Whether a command word's last component is a pattern bash expands against the files
 * there (or, for a name without '/', in the cwd): '*', '?' or a '[' closed by a ']'. A lone
 * '[' is the test command; extglob's @(…) and !(…) are patterns too. */
static bool
name_is_pattern(const struct word *w)
{
        const char *b = analyze_base(w->s), *o = strchr(b, '[');

        return (w->flags & W_GLOB) && (strpbrk(b, "*?(") || (o && strchr(o + 1, ']')));
}

/* Judges argv av[0..ac) of unit k: peels wrappers until the command they run. */
void
analyze_view(struct eval *ev, int k, const struct word *av, size_t ac, int peel)
{
        for (; ac > 0 && peel < 24; peel++) {
                /* r[m], /bin/r?: the program is whatever file matches at run time */
                if (!analyze_lit(&av[0]) || name_is_pattern(&av[0])) {
                        analyze_add(ev, k, "exec.opaque-cmd", av[0].s, av[0].s);
                        return;
                }
                if (av[0].flags & W_NONASCII)
                        analyze_add(ev, k, "exec.nonascii", av[0].s, av[0].s);
                const char *name = analyze_base(av[0].s);
                const char *script = NULL;
                if (strchr(av[0].s, '/') && paths_was_written(ev, &av[0], &script)) {
                        analyze_add(ev, k, "exec.write-then-run", av[0].s, av[0].s);
                        if (script)
                                analyze_payload(ev, k, script, false);
                }
                if (!ev->no_file_rules)
                        rulesfile_match(ev, k, av, ac);
                infra_check(ev, k, av, ac);
                cmd_fn fn = analyze_lookup(name);
                if (!fn) {
                        unknown_wrapper(ev, k, av, ac, name);
                        return;
                }
                int next = fn(ev, k, av, ac);
                if (next <= 0 || (size_t) next >= ac)
                        return;
                av += next;
                ac -= next;
        }
        if (ac > 0)
                analyze_add(ev, k, "parse.limit", "wrappers nested too deep", NULL);
}

/* What unit k writes to its stdout when that is known: a literal echo/printf, or cat of a
 * literal heredoc or here-string. */
static const char *
unit_output(struct eval *ev, int k)
{
        const struct unit *u = &ev->units[k];

        if (u->argc == 1 && !strcmp(u->argv[0].s, "cat")) {
                for (size_t r = u->nredir; r-- > 0;) {
                        const struct redir *rd = &u->redir[r];
                        if (rd->fd != 0)
                                continue;
                        if (rd->kind == RD_HEREDOC && !rd->body_dyn)
                                return rd->body ? rd->body : "";
                        if (rd->kind == RD_HERESTR && analyze_lit(&rd->target))
                                return rd->target.s;
                        return NULL;
                }
                return NULL;
        }
        struct unit bare = *u;
        bare.nredir = 0;
        while (bare.argc > 1 &&
               (!strcmp(bare.argv[0].s, "command") || !strcmp(bare.argv[0].s, "builtin"))) {
                bare.argv++; /* command echo …: the same builtin */
                bare.argc--;
        }
        return word_echo_output(ev, &bare);
}

static void
analyze_redirs(struct eval *ev, int k)
{
        for (size_t r = 0; r < ev->units[k].nredir; r++) {
                const struct redir *rd = &ev->units[k].redir[r];
                if (rd->kind == RD_OUT) {
                        paths_check_write(ev, k, &rd->target, false);
                        const char *out = rd->fd == 1 && !rd->append ? unit_output(ev, k) : NULL;
                        if (out)
                                paths_note_content(ev, &rd->target, out);
                } else if (rd->kind == RD_IN && !strncmp(rd->target.s, "/dev/", 5)) {
                        const char *p = paths_resolve(ev, rd->target.s);
                        if (p && paths_device(p) == DEV_NET) {
                                analyze_add(ev, k, "net.dev-tcp", rd->target.s, p);
                                ev->units[k].net = true;
                        }
                }
        }
}

static void
analyze_unit(struct eval *ev, int k)
{
        const struct unit *u = &ev->units[k];

        if (u->flags & U_DONE)
                return;
        ev->units[k].flags |= U_DONE;
        ev->cwd = scope_cwd(ev, u->scope, ev->start_cwd, &ev->cwd_alt);
        if (u->flags & U_CD_OK)
                ev->cwd_alt = NULL; /* cd DIR && …: the cd succeeded */

        for (size_t a = 0; a < u->nassign; a++)
                env_check_assign(ev, k, &ev->units[k].assign[a]);
        analyze_redirs(ev, k);
        u = &ev->units[k];
        carrier_note_fds(ev, k);
        if (u->argc == 0)
                return;
        check_metadata(ev, k, u->argv, u->argc);
        /* argv may move if units grow; views use a stable copy */
        size_t ac = u->argc;
        struct word *av = arena_alloc(&ev->ar, ac * sizeof(*av));
        memcpy(av, u->argv, ac * sizeof(*av));
        analyze_view(ev, k, av, ac, 0);
}

/* ---- passes over the whole command ---- */

/* The function a unit calls, or -1. */
static int
func_called(struct eval *ev, const struct unit *u)
{
        if (u->argc == 0)
                return -1;
        for (size_t f = 0; f < ev->nfuncs; f++)
                if (!strcmp(u->argv[0].s, ev->funcs[f].name))
                        return (int) f;
        return -1;
}

#define FB_MAX 256 /* functions the fork-bomb pass looks at; more is parse.limit */

struct fb_set {
        uint64_t w[FB_MAX / 64];
};

static bool
fb_has(const struct fb_set *s, size_t i)
{
        return (s->w[i / 64] >> (i % 64)) & 1;
}

/* A function that calls itself (or through others) in a pipe, in the background or twice:
 * reach[f] is every function f's calls lead to (transitive closure, Warshall, O(F^3/64)); the
 * functions of f's cycle are those that also reach f, and one of them calling into the cycle
 * from a pipe or the background, or twice, makes f a fork bomb. */
static void
check_forkbombs(struct eval *ev)
{
        size_t nf = MIN(ev->nfuncs, (size_t) FB_MAX);
        struct fb_set *reach;

        if (nf == 0)
                return;
        if (ev->nfuncs > FB_MAX)
                analyze_add(ev, ev->funcs[FB_MAX].lo, "parse.limit",
                            "too many functions to look for fork bombs", NULL);
        reach = arena_alloc(&ev->ar, nf * sizeof(*reach));
        for (size_t f = 0; f < nf; f++) {
                const struct func_def *d = &ev->funcs[f];
                for (int j = d->lo; j < d->hi && j < (int) ev->nunits; j++) {
                        int g = func_called(ev, &ev->units[j]);
                        if (g >= 0 && (size_t) g < nf)
                                reach[f].w[g / 64] |= (uint64_t) 1 << (g % 64);
                }
        }
        for (size_t k = 0; k < nf; k++)
                for (size_t f = 0; f < nf; f++)
                        if (fb_has(&reach[f], k))
                                for (size_t i = 0; i < FB_MAX / 64; i++)
                                        reach[f].w[i] |= reach[k].w[i];
        for (size_t f = 0; f < nf; f++) {
                bool risky = false;
                if (!fb_has(&reach[f], f))
                        continue;
                for (size_t h = 0; h < nf && !risky; h++) {
                        if (h != f && !(fb_has(&reach[f], h) && fb_has(&reach[h], f)))
                                continue;
                        const struct func_def *d = &ev->funcs[h];
                        int calls = 0;
                        for (int j = d->lo; j < d->hi && j < (int) ev->nunits && !risky; j++) {
                                const struct unit *u = &ev->units[j];
                                int g = func_called(ev, u);
                                if (g < 0 || (size_t) g >= nf ||
                                    ((size_t) g != f && !fb_has(&reach[(size_t) g], f)))
                                        continue;
                                risky = u->pipe_prev != PIPE_NONE || (u->flags & U_BG) ||
                                        ++calls >= 2;
                        }
                }
                if (risky)
                        analyze_add(ev, ev->funcs[f].lo, "floor.forkbomb", ev->funcs[f].name,
                                    ev->funcs[f].name);
        }
}

/* Prepares an evaluation. */
void
analyze_init(struct eval *ev, const struct policy *p, const struct policy_ctx *ctx,
             size_t input_len)
{
        const char *envhome = NULL;

        memset(ev, 0, sizeof(*ev));
        ev->pol = p;
        ev->ctx = ctx;
        ev->max_steps = 64 * (unsigned long) input_len + 200000;
        if (ctx && ctx->env && !ctx->home_unknown)
                envhome = json_string_value(json_object_get(ctx->env, "HOME"));
        if (ctx && !ctx->home_unknown && ctx->home && ctx->home[0] == '/')
                ev->acct_home = ctx->home;
        /* ~ is what the shell's $HOME says; the account's home stays protected too */
        ev->home = envhome && envhome[0] == '/' ? envhome : ev->acct_home;
        if (!ev->acct_home)
                ev->acct_home = ev->home;
        if (ctx && ctx->cwd && ctx->cwd[0] == '/')
                ev->cwd = ctx->cwd;
        else if (ctx && ctx->env)
                ev->cwd = json_string_value(json_object_get(ctx->env, "PWD"));
        ev->start_cwd = ev->cwd;
        ev->var_carrier = -1;
        analyze_scope_new(ev, -1); /* scope 0: the top level */
        if (ctx && ctx->workspace && ctx->workspace[0] == '/')
                ev->ws = ctx->workspace;
        else
                ev->ws = ev->cwd;
}

/* Analyses units from index from, including those carriers add on the way. */
void
analyze_range(struct eval *ev, int from)
{
        for (size_t k = (size_t) from; k < ev->nunits; k++)
                analyze_unit(ev, (int) k);
}

void
analyze_units(struct eval *ev, int from)
{
        for (size_t k = (size_t) from; k < ev->nunits; k++)
                analyze_unit(ev, (int) k);
        check_forkbombs(ev);
        net_exfil_pass(ev);
}

/* A payload for the shell named who: judged as bash reads it and, for sh, dash, ash and posh
 * (bash or dash, depending on the system), also as a POSIX shell reads it. */
void
analyze_shell_payload(struct eval *ev, int unit, const char *script, const char *who,
                      bool same_shell)
{
        static const char *const posix_shells[] = {"sh", "dash", "ash", "posh", NULL};

        analyze_payload(ev, unit, script, same_shell);
        if (!analyze_in(who, posix_shells) || ev->posix)
                return;
        ev->posix = true;
        analyze_payload(ev, unit, script, same_shell);
        ev->posix = false;
}

/* Parses and analyses a payload at depth + 1, right away: what it runs happens at the point
 * of the carrier (its cwd, the files written so far, the variables visible there). */
void
analyze_payload(struct eval *ev, int unit, const char *script, bool same_shell)
{
        int depth = unit >= 0 ? ev->units[unit].depth + 1 : 1;
        size_t first = ev->nunits, floor = ev->var_floor;
        int carrier = ev->var_carrier;

        if (depth > POLICY_MAX_CARRIER) {
                analyze_add(ev, unit, "parse.limit", "carriers nested too deep", NULL);
                return;
        }
        int scope = unit >= 0 ? ev->units[unit].scope : 0;
        if (!same_shell)
                scope = analyze_scope_new(ev, scope);
        bool stopped = ev->stop;
        ev->stop = false;
        size_t barrier = ev->var_barrier;
        size_t havoc = ev->var_havoc;
        ev->var_floor = ev->nvars;
        ev->var_barrier = ev->nvars;
        ev->var_havoc = ev->nvars;
        ev->var_carrier = unit;
        unsigned limits = ev->nlimits;
        parse_script(ev, script, strlen(script), depth, scope);
        ev->var_floor = floor;
        ev->var_barrier = barrier;
        ev->var_havoc = havoc;
        ev->var_carrier = carrier;
        /* the payload's commands read what the carrier reads */
        for (size_t j = first; j < ev->nunits; j++)
                if (ev->units[j].inherit < 0 && ev->units[j].pipe_prev == PIPE_NONE)
                        ev->units[j].inherit = unit;
        ev->stop = ev->stop || stopped;
        for (size_t j = first; j < ev->nunits; j++)
                analyze_unit(ev, (int) j);
        /* a limit inside the payload hides the rest of it: rescan it (once, not again for the
         * POSIX reading of the same text) */
        if (ev->nlimits != limits && unit >= 0 && !ev->posix) {
                bool was = ev->stop;
                rescan_payload(ev, unit, script);
                ev->stop = ev->stop || was;
        }
}

/* When findings were left out, an approval must not cover a different command that shares the
 * ones shown: one more finding binds it to this command's digest. */
static void
bind_whole_command(struct eval *ev)
{
        const struct builtin_rule *r = builtin_find("parse.limit");
        struct ifinding nf = {.rule = r->id,
                              .verdict = r->verdict,
                              .flags = r->flags,
                              .message = r->message,
                              .match = "more findings than can be shown",
                              .subject = analyze_digest(ev, "command", ev->input ? ev->input : ""),
                              .unit = -1,
                              .builtin = true};
        for (size_t j = ev->nf; j-- > 0;) {
                if (ev->f[j].verdict == POLICY_ASK) {
                        ev->f[j] = nf;
                        return;
                }
        }
}

/* Moves the findings into out (strictest verdict wins). */
void
analyze_finish(struct eval *ev, struct policy_result *out)
{
        if (ev->dropped)
                bind_whole_command(ev);
        memset(out, 0, sizeof(*out));
        out->findings = xcalloc(ev->nf ? ev->nf : 1, sizeof(*out->findings));
        for (size_t j = 0; j < ev->nf; j++) {
                const struct ifinding *f = &ev->f[j];
                bool lifted = f->builtin && f->unit >= 0 && ev->allowed &&
                              (size_t) f->unit < ev->nunits && ev->allowed[f->unit] &&
                              f->verdict == POLICY_ASK && strncmp(f->rule, "parse.", 6) != 0;
                if (lifted)
                        continue;
                struct policy_finding *o = &out->findings[out->nfindings++];
                o->rule = xstrdup(f->rule);
                o->verdict = f->verdict;
                o->message = xstrdup(f->message);
                o->match = f->match ? xstrdup(f->match) : NULL;
                o->subject = f->subject ? xstrdup(f->subject) : NULL;
                o->flags = f->flags;
                if (f->verdict > out->verdict)
                        out->verdict = f->verdict;
        }
        out->host_access = ev->host_access;
        sbx_error_move(&out->invalid, &ev->invalid);
}

/* Frees everything of an evaluation. */
void
analyze_free(struct eval *ev)
{
        free(ev->units);
        free(ev->allowed);
        free(ev->vtaint);
        sbx_error_clear(&ev->invalid);
        arena_free(&ev->ar);
}
