/* analyze.c — judges the units the parser produced: peels wrappers, recurses into carriers,
 * applies the built-in command rules and the rules file, and collects findings. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

typedef int (*handler_fn)(struct eval *ev, int k, const struct word *av, size_t ac);

static void view(struct eval *ev, int k, const struct word *av, size_t ac, int peel);

/* ---- findings ---- */

static bool
rule_disabled(struct eval *ev, const struct builtin_rule *r)
{
        return !(r->flags & POLICY_F_FLOOR) && ev->pol && rulesfile_disabled(ev->pol, r->id);
}

static void
add_raw(struct eval *ev, struct ifinding *nf)
{
        for (size_t j = 0; j < ev->nf; j++) {
                struct ifinding *o = &ev->f[j];
                if (strcmp(o->rule, nf->rule) == 0 && o->verdict == nf->verdict &&
                    !strcmp(o->subject ? o->subject : "", nf->subject ? nf->subject : "") &&
                    !strcmp(o->match ? o->match : "", nf->match ? nf->match : ""))
                        return;
        }
        if (ev->nf >= POLICY_MAX_FINDINGS) {
                /* Full: a stricter finding still counts, in place of a weaker one, so that a
                 * flood of ASK findings cannot hide a DENY. */
                for (size_t j = 0; j < ev->nf; j++)
                        if (ev->f[j].verdict < nf->verdict) {
                                ev->f[j] = *nf;
                                return;
                        }
                return;
        }
        arena_grow(&ev->ar, (void **) &ev->f, &ev->fcap, ev->nf, sizeof(struct ifinding));
        ev->f[ev->nf++] = *nf;
}

static const char *
clip(struct eval *ev, const char *s)
{
        if (!s)
                return NULL;
        size_t n = strlen(s);
        /* copied: matches may point into JSON built and freed by the container checks */
        return arena_strndup(&ev->ar, s, n > 200 ? 200 : n);
}

/* Adds a built-in finding for unit (or -1). */
void
analyze_add(struct eval *ev, int unit, const char *rule, const char *match, const char *subject)
{
        const struct builtin_rule *r = builtin_find(rule);
        struct ifinding nf = {.rule = rule, .unit = unit, .builtin = true};

        if (!r || rule_disabled(ev, r))
                return;
        nf.verdict = r->verdict;
        nf.flags = r->flags;
        nf.message = r->message;
        nf.match = clip(ev, match);
        nf.subject = clip(ev, subject ? subject : match);
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
                              .subject = clip(ev, match),
                              .unit = unit};

        if (unit >= 0 && (ev->units[unit].flags & U_CARRIED))
                nf.flags |= POLICY_F_NO_ALWAYS;
        add_raw(ev, &nf);
}

/* ---- helpers ---- */

static const char *
base(const char *s)
{
        const char *b = strrchr(s, '/');

        return b && b[1] ? b + 1 : s;
}

static bool
lit(const struct word *w)
{
        return !(w->flags & W_DYN);
}

static bool
streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static bool
in_list(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

static const char *
join(struct eval *ev, const struct word *av, size_t ac)
{
        size_t n = 1;

        for (size_t k = 0; k < ac; k++)
                n += strlen(av[k].s) + 1;
        char *s = arena_alloc(&ev->ar, n);
        for (size_t k = 0; k < ac; k++) {
                if (k)
                        strcat(s, " ");
                strcat(s, av[k].s);
        }
        return s;
}

static bool
is_opt(const struct word *w)
{
        return w->s[0] == '-' && w->s[1] != '\0';
}

/* Short option letter c present in a bundle, or long option name (also --name=…), before "--". */
static bool
has_flag(const struct word *av, size_t ac, size_t from, char c, const char *lng)
{
        for (size_t k = from; k < ac; k++) {
                const char *s = av[k].s;
                if (streq(s, "--"))
                        return false;
                if (s[0] != '-' || s[1] == '\0')
                        continue;
                if (s[1] == '-') {
                        size_t l = lng ? strlen(lng) : 0;
                        if (lng && !strncmp(s + 2, lng, l) && (s[2 + l] == '\0' || s[2 + l] == '='))
                                return true;
                        continue;
                }
                if (c && strchr(s + 1, c))
                        return true;
        }
        return false;
}

/* Index of the first operand at or after from; shortval lists short options taking a value,
 * longval long options taking a separate value. */
static size_t
skip_opts(const struct word *av, size_t ac, size_t from, const char *shortval,
          const char *const *longval)
{
        size_t k = from;

        while (k < ac) {
                const char *s = av[k].s;
                if (streq(s, "--"))
                        return k + 1;
                if (s[0] != '-' || s[1] == '\0')
                        return k;
                k++;
                if (s[1] == '-') {
                        if (!strchr(s, '=') && longval && in_list(s + 2, longval))
                                k++;
                        continue;
                }
                for (const char *c = s + 1; *c; c++) {
                        if (shortval && strchr(shortval, *c)) {
                                if (c[1] == '\0')
                                        k++;
                                break;
                        }
                }
        }
        return k;
}

/* Value of option -c / --lng (separate, attached or =), or NULL. */
static const struct word *
opt_value(struct eval *ev, const struct word *av, size_t ac, size_t from, char c, const char *lng,
          struct word *tmp)
{
        for (size_t k = from; k < ac; k++) {
                const char *s = av[k].s;
                if (streq(s, "--"))
                        return NULL;
                if (lng && s[0] == '-' && s[1] == '-' && !strncmp(s + 2, lng, strlen(lng))) {
                        const char *r = s + 2 + strlen(lng);
                        if (*r == '=') {
                                *tmp = av[k];
                                tmp->s = r + 1;
                                return tmp;
                        }
                        if (*r == '\0' && k + 1 < ac)
                                return &av[k + 1];
                }
                if (c && s[0] == '-' && s[1] == c) {
                        if (s[2]) {
                                *tmp = av[k];
                                tmp->s = arena_strdup(&ev->ar, s + 2);
                                return tmp;
                        }
                        if (k + 1 < ac)
                                return &av[k + 1];
                }
        }
        return NULL;
}

/* ---- paths ---- */

static const char *
norm(struct eval *ev, const char *s)
{
        size_t n = strlen(s);
        char *out = arena_alloc(&ev->ar, n + 2);
        size_t o = 0;
        const char *p = s;
        bool tilde = s[0] == '~';

        if (tilde) {
                out[o++] = '~';
                p++;
        }
        while (*p) {
                while (*p == '/')
                        p++;
                const char *e = strchr(p, '/');
                size_t l = e ? (size_t) (e - p) : strlen(p);
                if (l == 0)
                        break;
                if (l == 1 && p[0] == '.') {
                        /* skip */
                } else if (l == 2 && p[0] == '.' && p[1] == '.') {
                        while (o > (size_t) tilde && out[o - 1] != '/')
                                o--;
                        if (o > (size_t) tilde)
                                o--;
                } else {
                        out[o++] = '/';
                        memcpy(out + o, p, l);
                        o += l;
                }
                p += l;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = '\0';
        return out;
}

/* Normalised absolute path for a word, or NULL if it cannot be known. */
const char *
analyze_path(struct eval *ev, const char *s)
{
        if (s[0] == '/' || s[0] == '~')
                return norm(ev, s);
        if (!ev->cwd)
                return NULL;
        size_t n = strlen(ev->cwd) + strlen(s) + 2;
        char *j = arena_alloc(&ev->ar, n);
        snprintf(j, n, "%s/%s", ev->cwd, s);
        return norm(ev, j);
}

static bool
below(const char *path, const char *dir)
{
        size_t l = strlen(dir);

        if (streq(dir, "/"))
                return path[0] == '/';
        return !strncmp(path, dir, l) && (path[l] == '\0' || path[l] == '/');
}

static const char *const sysroots[] = {
        "/bin",      "/boot",      "/dev",     "/etc",     "/home",      "/lib",
        "/lib32",    "/lib64",     "/libx32",  "/media",   "/mnt",       "/opt",
        "/proc",     "/root",      "/run",     "/sbin",    "/snap",      "/srv",
        "/sys",      "/usr",       "/var",     "/usr/bin", "/usr/lib",   "/usr/local",
        "/usr/sbin", "/usr/share", "/var/lib", "/var/log", "/usr/lib64", "/usr/include",
        NULL};

static bool
is_home(struct eval *ev, const char *path)
{
        return streq(path, "~") || (ev->home && streq(path, norm(ev, ev->home)));
}

static bool
protected_hit(struct eval *ev, const char *path, bool ancestor)
{
        if (!ev->ctx || !ev->ctx->protected_paths)
                return false;
        for (const char *const *pp = ev->ctx->protected_paths; *pp; pp++) {
                const char *d = norm(ev, *pp);
                if (below(path, d) || (ancestor && below(d, path)))
                        return true;
        }
        return false;
}

enum target {
        T_NONE,
        T_ROOT,
        T_SYSTEM,
        T_HOME,
        T_SELF,
};

static enum target
classify_path(struct eval *ev, const char *path, bool ancestor)
{
        if (streq(path, "/"))
                return T_ROOT;
        if (in_list(path, sysroots))
                return T_SYSTEM;
        if (is_home(ev, path))
                return T_HOME;
        if (protected_hit(ev, path, ancestor))
                return T_SELF;
        return T_NONE;
}

/* What a destructive operand would hit, looking through globs (/ *, ~/ *, /etc/ *). */
static enum target
classify(struct eval *ev, const struct word *w, bool ancestor)
{
        const char *s = w->s;

        if (w->flags & W_DYN) {
                if (!strncmp(s, "$HOME", 5) || !strncmp(s, "${HOME}", 7)) {
                        const char *r = s + (s[1] == '{' ? 7 : 5);
                        if (!*r || streq(r, "/") || streq(r, "/*") || streq(r, "/.*"))
                                return T_HOME;
                }
                return T_NONE;
        }
        if (w->flags & W_GLOB) {
                size_t g = strcspn(s, "*?[");
                const char *slash = NULL;
                for (size_t k = 0; k < g; k++)
                        if (s[k] == '/')
                                slash = s + k;
                const char *dir = slash ? arena_strndup(&ev->ar, s, slash - s + 1) : ".";
                const char *p = analyze_path(ev, dir);
                return p ? classify_path(ev, p, true) : T_NONE;
        }
        const char *p = analyze_path(ev, s);
        return p ? classify_path(ev, p, ancestor) : T_NONE;
}

/* ---- write targets ---- */

static const char *const cred_dirs[] = {".ssh", ".aws", ".gnupg", ".kube", ".azure", NULL};
static const char *const cred_files[] = {".netrc",      ".git-credentials", ".pgpass", ".pypirc",
                                         "credentials", "authorized_keys",  NULL};
static const char *const startup_files[] = {
        ".bashrc",   ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
        ".zprofile", ".zshenv",       ".zlogin",     ".kshrc",       ".cshrc",   ".tcshrc",
        ".xprofile", ".xinitrc",      ".xsessionrc", "config.fish",  NULL};
static const char *const startup_dirs[] = {"/.config/autostart/", "/.config/systemd/",
                                           "/etc/profile.d/",     "/etc/cron",
                                           "/var/spool/cron",     "/.git/hooks/",
                                           "/etc/systemd/",       "/etc/init.d/",
                                           "/etc/rc.local",       NULL};
static const char *const sys_write[] = {"/etc",      "/usr",     "/bin",       "/sbin", "/lib",
                                        "/lib32",    "/lib64",   "/boot",      "/root", "/sys",
                                        "/proc/sys", "/var/lib", "/var/spool", NULL};
static const char *const harmless_dev[] = {"/dev/null",   "/dev/stdout",  "/dev/stderr",
                                           "/dev/tty",    "/dev/zero",    "/dev/full",
                                           "/dev/random", "/dev/urandom", NULL};

static bool
is_blockdev(const char *p)
{
        static const char *const pre[] = {
                "/dev/sd",      "/dev/hd",    "/dev/vd",    "/dev/xvd",  "/dev/nvme",
                "/dev/mmcblk",  "/dev/md",    "/dev/dm-",   "/dev/loop", "/dev/nbd",
                "/dev/mapper/", "/dev/disk/", "/dev/rdisk", "/dev/disk", "/dev/sr",
                "/dev/mem",     "/dev/kmem",  "/dev/port",  NULL};
        for (const char *const *q = pre; *q; q++)
                if (!strncmp(p, *q, strlen(*q)) && p[strlen(*q)] != '\0')
                        return true;
        return streq(p, "/dev/mem") || streq(p, "/dev/kmem") || streq(p, "/dev/port");
}

static bool
has_component(const char *path, const char *const *names)
{
        for (const char *const *n = names; *n; n++) {
                size_t l = strlen(*n);
                for (const char *p = strstr(path, *n); p; p = strstr(p + 1, *n))
                        if (p > path && p[-1] == '/' && (p[l] == '/' || p[l] == '\0'))
                                return true;
        }
        return false;
}

static void
note_written(struct eval *ev, const char *p)
{
        if (ev->nwritten >= 256)
                return;
        arena_grow(&ev->ar, (void **) &ev->written, &ev->writtencap, ev->nwritten, sizeof(char *));
        ev->written[ev->nwritten++] = p;
}

/* Judges one path the command writes (or deletes when del). */
static void
check_write(struct eval *ev, int k, const struct word *w, bool del)
{
        if (w->flags & W_DYN)
                return;
        const char *p = analyze_path(ev, w->s);
        const char *key = p ? p : w->s;
        const char *b = base(w->s);

        if (!del)
                note_written(ev, key);
        if (p && in_list(p, harmless_dev))
                return;
        if (p && (!strncmp(p, "/dev/tcp/", 9) || !strncmp(p, "/dev/udp/", 9))) {
                analyze_add(ev, k, "net.dev-tcp", w->s, p);
                return;
        }
        if (p && is_blockdev(p) && !del) {
                analyze_add(ev, k, "floor.write-dev", w->s, p);
                return;
        }
        if (p && protected_hit(ev, p, false))
                analyze_add(ev, k, "floor.self-protect", w->s, p);
        if (has_component(key, cred_dirs) || in_list(b, cred_files))
                analyze_add(ev, k, "write.credential", w->s, key);
        bool startup = in_list(b, startup_files);
        for (const char *const *d = startup_dirs; *d && !startup; d++)
                startup = strstr(key, *d) != NULL || (p && !strncmp(p, *d, strlen(*d) - 1) &&
                                                      (*d)[0] == '/' && (*d)[1] == 'e');
        if (startup)
                analyze_add(ev, k, "write.startup", w->s, key);
        for (const char *const *d = sys_write; p && *d; d++) {
                if (below(p, *d)) {
                        analyze_add(ev, k, "write.system", w->s, p);
                        break;
                }
        }
}

/* Whether path is a credential file or lies in a credential directory (the lists above):
 * file.read (policy/pathcheck.c) asks before handing one to a client. */
bool
analyze_is_credential(const char *path)
{
        return has_component(path, cred_dirs) || in_list(base(path), cred_files);
}

static bool
was_written(struct eval *ev, const struct word *w)
{
        if (w->flags & W_DYN)
                return false;
        const char *p = analyze_path(ev, w->s);
        const char *key = p ? p : w->s;
        for (size_t j = 0; j < ev->nwritten; j++)
                if (streq(ev->written[j], key))
                        return true;
        return false;
}

static void
check_runs_file(struct eval *ev, int k, const struct word *w)
{
        if (was_written(ev, w))
                analyze_add(ev, k, "exec.write-then-run", w->s, w->s);
}

/* ---- environment ---- */

static const char *const inject_vars[] = {"LD_PRELOAD",
                                          "LD_LIBRARY_PATH",
                                          "LD_AUDIT",
                                          "DYLD_INSERT_LIBRARIES",
                                          "DYLD_LIBRARY_PATH",
                                          "BASH_ENV",
                                          "ENV",
                                          "PROMPT_COMMAND",
                                          "PS4",
                                          "GIT_SSH_COMMAND",
                                          "GIT_SSH",
                                          "GIT_EXTERNAL_DIFF",
                                          "GIT_EXEC_PATH",
                                          "GIT_CONFIG_PARAMETERS",
                                          "GIT_CONFIG_GLOBAL",
                                          "GIT_PAGER",
                                          "NODE_OPTIONS",
                                          "PYTHONSTARTUP",
                                          "PERL5OPT",
                                          "RUBYOPT",
                                          "SHELLOPTS",
                                          "BASHOPTS",
                                          NULL};
static const char *const docker_vars[] = {"DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST",
                                          "CONTAINER_CONNECTION", NULL};

/* Judges NAME=VALUE (assignment, env argument, export argument). */
static void
check_assign(struct eval *ev, int k, const char *s)
{
        const char *eq = strchr(s, '=');

        if (!eq)
                return;
        char name[64];
        size_t n = (size_t) (eq - s);
        if (n >= sizeof(name))
                return;
        memcpy(name, s, n);
        name[n] = '\0';
        if (n && name[n - 1] == '+')
                name[--n] = '\0';
        const char *v = eq + 1;
        if (in_list(name, inject_vars) || !strncmp(name, "BASH_FUNC_", 10))
                analyze_add(ev, k, "env.inject", s, name);
        else if (in_list(name, docker_vars))
                analyze_add(ev, k, "docker.daemon-redirect", s, name);
        else if (streq(name, "PATH")) {
                const char *old = NULL;
                if (ev->ctx && ev->ctx->env)
                        old = json_string_value(json_object_get(ev->ctx->env, "PATH"));
                bool append = !strncmp(v, "$PATH", 5) || !strncmp(v, "${PATH}", 7) ||
                              (old && *old && !strncmp(v, old, strlen(old)));
                if (!append)
                        analyze_add(ev, k, "env.path", s, "PATH");
        }
}

/* ---- streams into shells and interpreters ---- */

static const char *const fetchers[] = {"curl",   "wget",  "fetch", "aria2c", "nc",   "ncat",
                                       "netcat", "socat", "http",  "https",  "lynx", "w3m",
                                       "ssh",    "ftp",   "tftp",  NULL};
static const char *const decoders[] = {"base64",  "base32",   "base16", "basenc", "xxd",
                                       "openssl", "uudecode", "gunzip", "zcat",   "bzcat",
                                       "xzcat",   "rev",      "tr",     NULL};
static const char *const wrappers_skip[] = {"sudo",    "env",  "nice",   "nohup", "timeout",
                                            "command", "exec", "stdbuf", "time",  NULL};

static const char *
unit_name(const struct unit *u)
{
        size_t k = 0;

        while (k < u->argc && (in_list(base(u->argv[k].s), wrappers_skip) ||
                               (k > 0 && is_opt(&u->argv[k])) || strchr(u->argv[k].s, '=')))
                k++;
        return k < u->argc ? base(u->argv[k].s) : "";
}

static bool
units_have(struct eval *ev, int lo, int hi, const char *const *names)
{
        for (int j = lo; j < hi && j < (int) ev->nunits; j++)
                if (in_list(unit_name(&ev->units[j]), names))
                        return true;
        return false;
}

/* A literal `echo WORDS | sh`: returns the script, else NULL. */
static const char *
echo_payload(struct eval *ev, const struct unit *u)
{
        if (u->argc < 1 || !streq(base(u->argv[0].s), "echo"))
                return NULL;
        size_t k = 1;
        if (k < u->argc && streq(u->argv[k].s, "-n"))
                k++;
        for (size_t j = k; j < u->argc; j++)
                if (!lit(&u->argv[j]) || u->argv[j].s[0] == '-')
                        return NULL;
        return join(ev, u->argv + k, u->argc - k);
}

static void
stream_code(struct eval *ev, int k, const char *who)
{
        const struct unit *u = &ev->units[k];
        bool fetch = false, decode = false;

        if (u->pipe_prev == -2) {
                analyze_add(ev, k, "exec.stdin-code", who, who);
                return;
        }
        const char *echo = u->pipe_prev >= 0 && ev->units[u->pipe_prev].pipe_prev < 0
                                   ? echo_payload(ev, &ev->units[u->pipe_prev])
                                   : NULL;
        if (echo) {
                analyze_payload(ev, k, echo);
                return;
        }
        for (int j = u->pipe_prev, n = 0; j >= 0 && n < 64; j = ev->units[j].pipe_prev, n++) {
                const char *nm = unit_name(&ev->units[j]);
                fetch = fetch || in_list(nm, fetchers);
                decode = decode || in_list(nm, decoders);
        }
        if (fetch)
                analyze_add(ev, k, "exec.remote-code", who, who);
        else if (decode)
                analyze_add(ev, k, "exec.decode-run", who, who);
        else
                analyze_add(ev, k, "exec.stdin-code", who, who);
}

/* stdin of a shell (is_shell) or interpreter that has no script operand. */
static void
check_stdin(struct eval *ev, int k, const char *who, bool is_shell)
{
        const struct unit *u = &ev->units[k];

        for (size_t r = 0; r < u->nredir; r++) {
                const struct redir *rd = &u->redir[r];
                if (rd->fd > 0)
                        continue;
                if (rd->kind == RD_HEREDOC || rd->kind == RD_HERESTR) {
                        bool dyn = rd->kind == RD_HEREDOC ? rd->body_dyn : !lit(&rd->target);
                        const char *code = rd->kind == RD_HEREDOC ? rd->body : rd->target.s;
                        if (dyn)
                                analyze_add(ev, k, "exec.stdin-code", who, who);
                        else if (is_shell)
                                analyze_payload(ev, k, code ? code : "");
                        else
                                analyze_add(ev, k, "exec.inline-code", who, who);
                        return;
                }
                if (rd->kind == RD_IN) {
                        if (rd->target.flags & W_SUB) {
                                bool f = units_have(ev, rd->target.sub_lo, rd->target.sub_hi,
                                                    fetchers);
                                analyze_add(ev, k, f ? "exec.remote-code" : "exec.stdin-code", who,
                                            who);
                        } else if (!strcmp(rd->target.s, "/dev/stdin") ||
                                   !strcmp(rd->target.s, "/dev/fd/0")) {
                                analyze_add(ev, k, "exec.stdin-code", who, who);
                        } else if (!strncmp(rd->target.s, "/dev/tcp/", 9) ||
                                   !strncmp(rd->target.s, "/dev/udp/", 9)) {
                                analyze_add(ev, k, "exec.remote-code", rd->target.s, who);
                        } else {
                                check_runs_file(ev, k, &rd->target);
                        }
                        return;
                }
        }
        if (u->pipe_prev != -1)
                stream_code(ev, k, who);
}

/* A script operand that is a process substitution or other dynamic word. */
static bool
check_script_word(struct eval *ev, int k, const struct word *w, const char *who)
{
        if (w->flags & W_SUB) {
                bool f = units_have(ev, w->sub_lo, w->sub_hi, fetchers);
                analyze_add(ev, k, f ? "exec.remote-code" : "exec.stdin-code", w->s, who);
                return true;
        }
        if (streq(w->s, "/dev/stdin") || streq(w->s, "-")) {
                check_stdin(ev, k, who, true);
                return true;
        }
        check_runs_file(ev, k, w);
        return false;
}

/* Parses and analyses a payload at depth + 1. */
void
analyze_payload(struct eval *ev, int unit, const char *script)
{
        int depth = unit >= 0 ? ev->units[unit].depth + 1 : 1;

        if (depth > POLICY_MAX_CARRIER) {
                analyze_add(ev, unit, "parse.limit", "carriers nested too deep", NULL);
                return;
        }
        parse_script(ev, script, strlen(script), depth);
}

static void
payload_word(struct eval *ev, int k, const struct word *w, const char *who)
{
        if (!lit(w)) {
                bool f = (w->flags & W_SUB) && units_have(ev, w->sub_lo, w->sub_hi, fetchers);
                analyze_add(ev, k, f ? "exec.remote-code" : "exec.opaque-payload", w->s, who);
                return;
        }
        analyze_payload(ev, k, w->s);
}

/* ---- wrappers: return the index of the command they run, 0 when none ---- */

static int
h_sudo(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"user",  "group", "host", "prompt",          "close-from",
                                         "chdir", "role",  "type", "command-timeout", "other-user",
                                         NULL};
        if (has_flag(av, ac, 1, 'S', "stdin") || has_flag(av, ac, 1, 'A', "askpass"))
                analyze_add(ev, k, "priv.sudo-stdin", av[0].s, av[0].s);
        if (has_flag(av, ac, 1, 'l', "list") || has_flag(av, ac, 1, 'v', "validate") ||
            has_flag(av, ac, 1, 'e', "edit"))
                return 0;
        size_t i = skip_opts(av, ac, 1, "ugpCDrtTUh", lv);
        while (i < ac && strchr(av[i].s, '=') && lit(&av[i])) {
                check_assign(ev, k, av[i].s);
                i++;
        }
        return (int) i;
}

static int
h_env(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;

        while (i < ac) {
                const char *s = av[i].s;
                if (streq(s, "--")) {
                        i++;
                        break;
                }
                if (!strncmp(s, "-S", 2) || !strncmp(s, "--split-string", 14)) {
                        const char *str = s[1] == 'S' && s[2] ? s + 2 : strchr(s, '=');
                        struct word w = av[i];
                        if (str && str[0] == '=')
                                str++;
                        if (!str) {
                                if (i + 1 >= ac)
                                        return 0;
                                w = av[++i];
                        } else {
                                w.s = str;
                        }
                        struct word all = w;
                        all.s = join(ev, &w, 1);
                        if (i + 1 < ac) {
                                const char *rest = join(ev, av + i + 1, ac - i - 1);
                                char *c = arena_alloc(&ev->ar, strlen(all.s) + strlen(rest) + 2);
                                sprintf(c, "%s %s", all.s, rest);
                                all.s = c;
                        }
                        for (size_t j = i + 1; j < ac; j++)
                                all.flags |= av[j].flags & W_DYN;
                        payload_word(ev, k, &all, "env -S");
                        return 0;
                }
                if (streq(s, "-u") || streq(s, "-C") || streq(s, "--unset") || streq(s, "--chdir"))
                        i += 2;
                else if (s[0] == '-')
                        i++;
                else if (strchr(s, '=')) {
                        check_assign(ev, k, s);
                        i++;
                } else
                        break;
        }
        return (int) i;
}

static int
h_simplewrap(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"adjustment", "signal", "kill-after", "input",  "output",
                                         "error",      "format", "userspec",   "groups", NULL};
        const char *n = base(av[0].s);
        const char *sv = streq(n, "nice")                                      ? "n"
                         : streq(n, "stdbuf")                                  ? "ioe"
                         : streq(n, "time")                                    ? "fo"
                         : streq(n, "exec")                                    ? "a"
                         : streq(n, "ionice")                                  ? "cnt"
                         : streq(n, "timeout")                                 ? "sk"
                         : streq(n, "caffeinate")                              ? "wt"
                         : streq(n, "proxychains") || streq(n, "proxychains4") ? "f"
                                                                               : "";
        if ((streq(n, "command") &&
             (has_flag(av, ac, 1, 'v', NULL) || has_flag(av, ac, 1, 'V', NULL))) ||
            (streq(n, "ionice") && has_flag(av, ac, 1, 'p', "pid")))
                return 0;
        size_t i = skip_opts(av, ac, 1, sv, lv);
        if (streq(n, "timeout") || streq(n, "chroot") || streq(n, "faketime"))
                i++;
        (void) ev;
        (void) k;
        return (int) i;
}

static int
h_sched(struct eval *ev, int k, const struct word *av, size_t ac)
{
        /* chrt [opts] prio cmd / taskset [opts] mask cmd */
        if (has_flag(av, ac, 1, 'p', "pid") || has_flag(av, ac, 1, 'm', "max"))
                return 0;
        size_t i = skip_opts(av, ac, 1, "T", NULL);
        (void) ev;
        (void) k;
        return (int) i + 1;
}

static int
h_nsenter(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"target", "setuid", "setgid", "wd", "root", NULL};
        if (streq(base(av[0].s), "nsenter") && (has_flag(av, ac, 1, 't', "target")))
                analyze_add(ev, k, "exec.remote", join(ev, av, ac), "nsenter");
        return (int) skip_opts(av, ac, 1, "tSGwr", lv);
}

static int
h_tracer(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);
        if (streq(n, "gdb")) {
                if (has_flag(av, ac, 1, 0, "eval-command") || has_flag(av, ac, 1, 0, "ex") ||
                    has_flag(av, ac, 1, 'x', "command"))
                        analyze_add(ev, k, "exec.embedded", join(ev, av, ac), "gdb");
                for (size_t i = 1; i < ac; i++)
                        if (streq(av[i].s, "--args"))
                                return (int) i + 1;
                return 0;
        }
        static const char *const lv[] = {"output", NULL};
        return (int) skip_opts(
                av, ac, 1, streq(n, "strace") || streq(n, "ltrace") ? "oepsuEabIOSXPAn" : "", lv);
}

static int
h_xargs(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"delimiter",        "arg-file",  "max-args", "max-procs",
                                         "max-lines",        "max-chars", "eof",      "replace",
                                         "process-slot-var", NULL};
        size_t i = skip_opts(av, ac, 1, "IndPaELs", lv);
        if (i < ac && streq(base(av[i].s), "rm"))
                analyze_add(ev, k, "delete.xargs", join(ev, av + i, ac - i),
                            join(ev, av + i, ac - i));
        return (int) i;
}

static int
h_busybox(struct eval *ev, int k, const struct word *av, size_t ac)
{
        (void) ev;
        (void) k;
        return ac > 1 && av[1].s[0] != '-' ? 1 : 0;
}

static int
h_flock(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"timeout", "wait", "conflict-exit-code", NULL};
        struct word tmp;
        const struct word *c = opt_value(ev, av, ac, 1, 'c', "command", &tmp);
        if (c) {
                payload_word(ev, k, c, "flock -c");
                return 0;
        }
        size_t i = skip_opts(av, ac, 1, "wE", lv);
        if (i + 1 < ac && streq(av[i + 1].s, "-c")) {
                if (i + 2 < ac)
                        payload_word(ev, k, &av[i + 2], "flock -c");
                return 0;
        }
        return (int) i + 1;
}

static int
h_watch(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"interval", "differences", NULL};
        size_t i = skip_opts(av, ac, 1, "nq", lv);
        if (i >= ac)
                return 0;
        if (has_flag(av, ac, 1, 'x', "exec"))
                return (int) i;
        struct word all = av[i];
        all.s = join(ev, av + i, ac - i);
        for (size_t j = i; j < ac; j++)
                all.flags |= av[j].flags & (W_DYN | W_SUB);
        payload_word(ev, k, &all, "watch");
        return 0;
}

static int
h_carrier_c(struct eval *ev, int k, const struct word *av, size_t ac)
{
        /* su -c, runuser -c, script -c, sg GROUP -c */
        const char *n = base(av[0].s);
        struct word tmp;
        const struct word *c = opt_value(ev, av, ac, 1, 'c', "command", &tmp);
        if (c) {
                payload_word(ev, k, c, n);
                return 0;
        }
        if (streq(n, "runuser") || streq(n, "doas")) {
                size_t i = skip_opts(av, ac, 1, "ugC", NULL);
                return (int) i;
        }
        if (streq(n, "sg") && ac > 2) {
                struct word all = av[2];
                all.s = join(ev, av + 2, ac - 2);
                payload_word(ev, k, &all, n);
        }
        return 0;
}

static int
h_systemd_run(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {
                "unit", "property",    "description",       "slice",  "uid",
                "gid",  "nice",        "working-directory", "setenv", "machine",
                "host", "on-calendar", "on-active",         NULL};
        for (size_t i = 1; i + 1 < ac; i++)
                if (streq(av[i].s, "-E") || streq(av[i].s, "--setenv"))
                        check_assign(ev, k, av[i + 1].s);
        return (int) skip_opts(av, ac, 1, "pEMHu", lv);
}

/* ---- carriers and interpreters ---- */

static int
h_shell(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"rcfile", "init-file", NULL};
        const char *n = base(av[0].s);
        bool c = false, s_flag = false;
        size_t i = 1;

        while (i < ac) {
                const char *s = av[i].s;
                if (streq(s, "--") || streq(s, "-")) {
                        i++;
                        break;
                }
                if ((s[0] != '-' && s[0] != '+') || s[1] == '\0')
                        break;
                i++;
                if (s[1] == '-') {
                        if (in_list(s + 2, lv))
                                i++;
                        continue;
                }
                for (const char *p = s + 1; *p; p++) {
                        if (*p == 'c')
                                c = true;
                        else if (*p == 's' && s[0] == '-')
                                s_flag = true;
                        else if (*p == 'o' || *p == 'O')
                                i++;
                }
        }
        if (c) {
                if (i < ac)
                        payload_word(ev, k, &av[i], n);
                return 0;
        }
        if (i < ac && !s_flag)
                check_script_word(ev, k, &av[i], n);
        else
                check_stdin(ev, k, n, true);
        return 0;
}

struct interp {
        const char *name;
        const char *shortc; /* short options that carry inline code */
        const char *longc;  /* long option that carries inline code */
        const char *shortval;
};

static const struct interp interps[] = {
        {"python", "c", NULL, "WXQ"}, {"pypy", "c", NULL, "WX"},
        {"node", "ep", "eval", "r"},  {"nodejs", "ep", "eval", "r"},
        {"bun", "e", "eval", ""},     {"perl", "eE", NULL, "IM"},
        {"ruby", "e", NULL, "IrC"},   {"php", "rBRE", NULL, "dc"},
        {"lua", "e", NULL, "l"},      {"luajit", "e", NULL, "l"},
        {"pwsh", "c", "command", ""}, {"powershell", "c", "command", ""},
        {"osascript", "e", NULL, ""}, {"Rscript", "e", NULL, ""},
        {"tclsh", "", NULL, ""},      {"deno", "", NULL, ""},
        {"irb", "", NULL, ""},        {"julia", "e", "eval", ""},
};

static const struct interp *
interp_find(const char *n)
{
        for (size_t j = 0; j < ARRAY_SIZE(interps); j++) {
                size_t l = strlen(interps[j].name);
                if (!strncmp(n, interps[j].name, l) &&
                    (n[l] == '\0' || isdigit((unsigned char) n[l])))
                        return &interps[j];
        }
        return NULL;
}

static int
h_interp(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);
        const struct interp *it = interp_find(n);
        size_t i = 1;

        if (!it)
                return 0;
        if (streq(it->name, "deno")) {
                if (ac > 1 && streq(av[1].s, "eval"))
                        analyze_add(ev, k, "exec.inline-code", join(ev, av, ac), n);
                return 0;
        }
        if (streq(it->name, "perl") && has_flag(av, ac, 1, 'i', NULL)) {
                for (size_t j = 1; j < ac; j++)
                        if (!is_opt(&av[j]) && j > 1 && !has_flag(av, j, j - 1, 'e', NULL))
                                check_write(ev, k, &av[j], false);
        }
        while (i < ac) {
                const char *s = av[i].s;
                if (streq(s, "--") || streq(s, "-") || s[0] != '-' || s[1] == '\0')
                        break;
                i++;
                if (s[1] == '-') {
                        if (it->longc && !strncmp(s + 2, it->longc, strlen(it->longc))) {
                                analyze_add(ev, k, "exec.inline-code", join(ev, av, ac), n);
                                return 0;
                        }
                        continue;
                }
                for (const char *p = s + 1; *p; p++) {
                        if (strchr(it->shortc, *p)) {
                                analyze_add(ev, k, "exec.inline-code", join(ev, av, ac), n);
                                return 0;
                        }
                        if (*p == 'm' && streq(it->name, "python"))
                                return 0;
                        if (strchr(it->shortval, *p)) {
                                if (p[1] == '\0')
                                        i++;
                                break;
                        }
                }
        }
        if (i < ac && !streq(av[i].s, "-"))
                check_script_word(ev, k, &av[i], n);
        else
                check_stdin(ev, k, n, false);
        return 0;
}

static int
h_eval(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (ac < 2)
                return 0;
        struct word all = av[1];
        all.s = join(ev, av + 1, ac - 1);
        all.flags = 0;
        all.sub_lo = (int) ev->nunits;
        all.sub_hi = 0;
        for (size_t j = 1; j < ac; j++) {
                all.flags |= av[j].flags & (W_DYN | W_SUB);
                if (av[j].flags & W_SUB) {
                        all.sub_lo = MIN(all.sub_lo, av[j].sub_lo);
                        all.sub_hi = MAX(all.sub_hi, av[j].sub_hi);
                }
        }
        payload_word(ev, k, &all, "eval");
        return 0;
}

static int
h_source(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (ac > 1)
                check_script_word(ev, k, &av[1], "source");
        return 0;
}

static int
h_alias(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);
        bool hit = false;

        if (streq(n, "alias"))
                for (size_t j = 1; j < ac; j++)
                        hit = hit || strchr(av[j].s, '=') != NULL;
        else if (streq(n, "hash"))
                hit = has_flag(av, ac, 1, 'p', NULL);
        else if (streq(n, "enable"))
                hit = has_flag(av, ac, 1, 'f', NULL);
        else if (streq(n, "shopt"))
                for (size_t j = 1; j < ac; j++)
                        hit = hit || streq(av[j].s, "expand_aliases");
        if (hit)
                analyze_add(ev, k, "exec.alias", join(ev, av, ac), n);
        return 0;
}

static int
h_export(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t j = 1; j < ac; j++)
                if (!is_opt(&av[j]))
                        check_assign(ev, k, av[j].s);
        return 0;
}

static int
h_cd(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const struct unit *u = &ev->units[k];
        size_t i = skip_opts(av, ac, 1, "", NULL);

        if (u->level > 0 || (u->flags & U_FUNC)) {
                ev->cwd = NULL;
                return 0;
        }
        if (i >= ac)
                ev->cwd = ev->home;
        else if (!lit(&av[i]) || streq(av[i].s, "-"))
                ev->cwd = NULL;
        else
                ev->cwd = analyze_path(ev, av[i].s);
        return 0;
}

/* ---- deletes and permissions ---- */

static const char *const floor_rm[] = {NULL, "floor.rm-root", "floor.rm-system", "floor.rm-home",
                                       "floor.self-protect"};

static int
h_rm(struct eval *ev, int k, const struct word *av, size_t ac)
{
        bool rec = false, force = false, dd = false;
        const struct word *ops[64];
        size_t nops = 0;

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!dd && streq(s, "--")) {
                        dd = true;
                } else if (!dd && s[0] == '-' && s[1] == '-' && lit(&av[i])) {
                        rec = rec || streq(s, "--recursive");
                        force = force || streq(s, "--force");
                } else if (!dd && s[0] == '-' && s[1] && lit(&av[i])) {
                        rec = rec || strchr(s, 'r') || strchr(s, 'R');
                        force = force || strchr(s, 'f');
                } else if (nops < ARRAY_SIZE(ops)) {
                        ops[nops++] = &av[i];
                }
        }
        const char *subj = NULL;
        for (size_t j = 0; j < nops; j++) {
                enum target t = classify(ev, ops[j], rec);
                if (t == T_SELF || (rec && t != T_NONE)) {
                        analyze_add(ev, k, floor_rm[t], join(ev, av, ac), ops[j]->s);
                        return 0;
                }
                if (!rec)
                        check_write(ev, k, ops[j], true);
                const char *p = lit(ops[j]) ? analyze_path(ev, ops[j]->s) : NULL;
                subj = subj ? arena_strdup(&ev->ar, join(ev, ops[j], 1)) : (p ? p : ops[j]->s);
        }
        const char *s = subj ? subj : "";
        if (nops > 1)
                s = join(ev, av + (ac - nops), nops);
        if (rec)
                analyze_add(ev, k, "delete.recursive", join(ev, av, ac), s);
        else if (force)
                analyze_add(ev, k, "delete.force", join(ev, av, ac), s);
        return 0;
}

static bool
find_is_pred(const char *s)
{
        static const char *const neutral[] = {"-depth", "-mindepth", "-maxdepth",
                                              "-xdev",  "-mount",    "-delete",
                                              "-print", "-noleaf",   "-ignore_readdir_race",
                                              NULL};
        return s[0] == '-' && !in_list(s, neutral);
}

static int
h_find(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = 1;
        bool del = false, filters = false;

        while (i < ac &&
               (!strcmp(av[i].s, "-H") || !strcmp(av[i].s, "-L") || !strcmp(av[i].s, "-P")))
                i++;
        size_t p0 = i;
        while (i < ac && av[i].s[0] != '-' && !streq(av[i].s, "(") && !streq(av[i].s, "!"))
                i++;
        size_t p1 = i;
        for (; i < ac; i++) {
                const char *s = av[i].s;
                if (streq(s, "-delete")) {
                        del = true;
                } else if (streq(s, "-exec") || streq(s, "-execdir") || streq(s, "-ok") ||
                           streq(s, "-okdir")) {
                        size_t j = i + 1;
                        while (j < ac && !streq(av[j].s, ";") && !streq(av[j].s, "+"))
                                j++;
                        if (j > i + 1)
                                view(ev, k, av + i + 1, j - i - 1, 1);
                        i = j;
                        filters = true;
                } else if (streq(s, "-fprint") || streq(s, "-fprintf") || streq(s, "-fls") ||
                           streq(s, "-fprint0")) {
                        if (i + 1 < ac)
                                check_write(ev, k, &av[i + 1], false);
                        filters = true;
                } else if (find_is_pred(s)) {
                        filters = true;
                }
        }
        if (!del)
                return 0;
        for (size_t j = p0; j < p1 && !filters; j++) {
                enum target t = classify(ev, &av[j], true);
                if (t != T_NONE) {
                        analyze_add(ev, k, floor_rm[t], join(ev, av, ac), av[j].s);
                        return 0;
                }
        }
        analyze_add(ev, k, "delete.find", join(ev, av, ac),
                    p1 > p0 ? join(ev, av + p0, p1 - p0) : ".");
        return 0;
}

static bool
mode_is_weak(const char *m)
{
        size_t l = strlen(m);

        if (l && strspn(m, "01234567") == l) {
                int last = m[l - 1] - '0';
                int special = l >= 4 ? m[l - 4] - '0' : 0;
                return (last & 2) || (special & 6);
        }
        for (const char *c = strchr(m, '+'); c; c = strchr(c + 1, '+')) {
                if (strchr(c, 's') && !strchr(c, ','))
                        return true;
        }
        if (strstr(m, "+s") || strstr(m, "=s"))
                return true;
        for (const char *c = m; *c; c++) {
                if ((*c == 'o' || *c == 'a') &&
                    (strstr(c, "+w") || strstr(c, "=w") || strstr(c, "+rw") || strstr(c, "=rw")))
                        return true;
        }
        return false;
}

static int
h_perm(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);
        bool chmod = streq(n, "chmod"), rec = false, dd = false, weak = false;
        size_t first = 0;

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!dd && streq(s, "--")) {
                        dd = true;
                        continue;
                }
                if (!dd && s[0] == '-' &&
                    (s[1] == '-' || strspn(s + 1, "cfvRhHLP") == strlen(s + 1))) {
                        rec = rec || strchr(s, 'R') || streq(s, "--recursive");
                        continue;
                }
                if (first == 0 && (!strncmp(s, "--reference", 11)))
                        continue;
                if (first == 0) {
                        first = i;
                        weak = chmod && mode_is_weak(s);
                        continue;
                }
                enum target t = classify(ev, &av[i], rec);
                if (t == T_SELF) {
                        analyze_add(ev, k, "floor.self-protect", join(ev, av, ac), av[i].s);
                        return 0;
                }
                if (rec && t != T_NONE) {
                        analyze_add(ev, k, "floor.perm-root", join(ev, av, ac), av[i].s);
                        return 0;
                }
        }
        const char *subj = first ? join(ev, av + first, ac - first) : n;
        if (!chmod)
                analyze_add(ev, k, "perm.chown", join(ev, av, ac), subj);
        else if (rec || weak)
                analyze_add(ev, k, "perm.chmod", join(ev, av, ac), subj);
        return 0;
}

/* ---- devices, processes, power ---- */

static bool
any_blockdev(struct eval *ev, const struct word *av, size_t ac, const char **hit)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                const char *eq = strchr(s, '=');
                const char *p = analyze_path(ev, eq && s[0] != '/' ? eq + 1 : s);
                if (p && is_blockdev(p)) {
                        *hit = s;
                        return true;
                }
        }
        return false;
}

static int
h_disk(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s), *hit = NULL;

        if (streq(n, "mkfs") || !strncmp(n, "mkfs.", 5) || streq(n, "mke2fs") ||
            streq(n, "mkdosfs") || streq(n, "mkntfs")) {
                analyze_add(ev, k, "floor.mkfs", join(ev, av, ac), n);
                return 0;
        }
        if (streq(n, "wipefs") && has_flag(av, ac, 1, 'n', "no-act"))
                return 0;
        if (any_blockdev(ev, av, ac, &hit))
                analyze_add(ev, k,
                            streq(n, "mkswap") || !strncmp(n, "newfs", 5) ? "floor.mkfs"
                                                                          : "floor.wipe-dev",
                            join(ev, av, ac), hit);
        else if (streq(n, "shred"))
                analyze_add(ev, k, "delete.force", join(ev, av, ac), join(ev, av + 1, ac - 1));
        return 0;
}

static int
h_dd(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                if (!strncmp(av[i].s, "of=", 3)) {
                        struct word w = av[i];
                        w.s = av[i].s + 3;
                        check_write(ev, k, &w, false);
                }
        }
        return 0;
}

static int
h_kill(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);
        size_t i = 1;

        if (streq(n, "killall5")) {
                analyze_add(ev, k, "floor.kill-all", join(ev, av, ac), n);
                return 0;
        }
        if (!streq(n, "kill")) {
                bool nine = false;
                for (size_t j = 1; j < ac; j++) {
                        const char *s = av[j].s;
                        nine = nine || streq(s, "-9") || streq(s, "-KILL") ||
                               streq(s, "-SIGKILL") || streq(s, "--signal=KILL") ||
                               streq(s, "-r") ||
                               (streq(s, "-s") && j + 1 < ac &&
                                (streq(av[j + 1].s, "KILL") || streq(av[j + 1].s, "9")));
                }
                if (nine)
                        analyze_add(ev, k, "proc.kill", join(ev, av, ac), join(ev, av, ac));
                return 0;
        }
        if (i < ac && (streq(av[i].s, "-s") || streq(av[i].s, "-n")))
                i += 2;
        else if (i + 1 < ac && av[i].s[0] == '-' && !streq(av[i].s, "--"))
                i++;
        if (i < ac && streq(av[i].s, "--"))
                i++;
        for (; i < ac; i++) {
                if (streq(av[i].s, "-1")) {
                        analyze_add(ev, k, "floor.kill-all", join(ev, av, ac), "kill -1");
                        return 0;
                }
        }
        return 0;
}

static int
h_power(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = base(av[0].s);

        if (streq(n, "shutdown") && has_flag(av, ac, 1, 'c', NULL))
                return 0;
        if (has_flag(av, ac, 1, 0, "help"))
                return 0;
        if ((streq(n, "init") || streq(n, "telinit")) &&
            !(ac > 1 && (streq(av[1].s, "0") || streq(av[1].s, "6"))))
                return 0;
        analyze_add(ev, k, "floor.power", join(ev, av, ac), n);
        return 0;
}

static int
h_systemctl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const power[] = {"poweroff", "reboot",    "halt",        "kexec",
                                            "suspend",  "hibernate", "soft-reboot", NULL};
        static const char *const svc[] = {
                "stop",        "restart",           "disable",   "mask",   "kill",    "isolate",
                "try-restart", "reload-or-restart", "emergency", "rescue", "default", NULL};
        size_t i = skip_opts(av, ac, 1, "tpsHMn", NULL);
        const char *n = base(av[0].s);

        if (streq(n, "service")) {
                if (ac > 2 && in_list(av[2].s, svc))
                        analyze_add(ev, k, "service.control", join(ev, av, ac),
                                    join(ev, av + 1, 2));
                return 0;
        }
        if (i >= ac)
                return 0;
        if (in_list(av[i].s, power))
                analyze_add(ev, k, "floor.power", join(ev, av, ac), av[i].s);
        else if (in_list(av[i].s, svc))
                analyze_add(ev, k, "service.control", join(ev, av, ac), join(ev, av + i, ac - i));
        return 0;
}

/* ---- writers ---- */

static int
h_tee(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = skip_opts(av, ac, 1, "", NULL); i < ac; i++)
                check_write(ev, k, &av[i], false);
        return 0;
}

static int
h_copy(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {
                "target-directory", "suffix", "mode", "owner", "group", NULL};
        const char *n = base(av[0].s);
        struct word tmp;
        const struct word *t = opt_value(ev, av, ac, 1, 't', "target-directory", &tmp);
        const struct word *ops[64];
        size_t nops = 0;
        bool dd = false;

        for (size_t i = 1; i < ac && nops < ARRAY_SIZE(ops); i++) {
                const char *s = av[i].s;
                if (!dd && streq(s, "--"))
                        dd = true;
                else if (!dd && s[0] == '-' && s[1]) {
                        bool val = (s[1] == 't' || s[1] == 'S' || s[1] == 'm' || s[1] == 'o' ||
                                    s[1] == 'g') &&
                                   s[2] == '\0';
                        if (s[1] == '-' && !strchr(s, '=') && in_list(s + 2, lv))
                                val = true;
                        i += val && !streq(n, "ln");
                } else
                        ops[nops++] = &av[i];
        }
        if (!t && nops >= 2)
                t = ops[--nops];
        if (t)
                check_write(ev, k, t, false);
        if (streq(n, "mv"))
                for (size_t j = 0; j < nops; j++) {
                        enum target tg = classify(ev, ops[j], true);
                        if (tg != T_NONE)
                                analyze_add(ev, k, floor_rm[tg], join(ev, av, ac), ops[j]->s);
                }
        return 0;
}

static int
h_truncate(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"size", "reference", NULL};
        for (size_t i = skip_opts(av, ac, 1, "sr", lv); i < ac; i++)
                if (!is_opt(&av[i]))
                        check_write(ev, k, &av[i], false);
        return 0;
}

static int
h_sed(struct eval *ev, int k, const struct word *av, size_t ac)
{
        bool inplace = false, script_opt = false;
        size_t first = 0;

        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                if (!strncmp(s, "-i", 2) || !strncmp(s, "--in-place", 10) ||
                    (s[0] == '-' && s[1] != '-' && strchr(s, 'i')))
                        inplace = true;
                if (streq(s, "-e") || streq(s, "-f") || streq(s, "--expression") ||
                    streq(s, "--file")) {
                        script_opt = true;
                        i++;
                        continue;
                }
                if (!is_opt(&av[i]) && !first)
                        first = i;
        }
        if (!inplace || !first)
                return 0;
        for (size_t i = script_opt ? first : first + 1; i < ac; i++)
                if (!is_opt(&av[i]))
                        check_write(ev, k, &av[i], false);
        return 0;
}

static int
h_fetch(struct eval *ev, int k, const struct word *av, size_t ac)
{
        struct word tmp;
        const char *n = base(av[0].s);
        const struct word *o = streq(n, "curl")
                                       ? opt_value(ev, av, ac, 1, 'o', "output", &tmp)
                                       : opt_value(ev, av, ac, 1, 'O', "output-document", &tmp);
        if (o && !streq(o->s, "-"))
                check_write(ev, k, o, false);
        return 0;
}

static int
h_crontab(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (has_flag(av, ac, 1, 'l', NULL))
                return 0;
        analyze_add(ev, k, "write.startup", join(ev, av, ac), "crontab");
        return 0;
}

/* ---- tools ---- */

static void
git_config(struct eval *ev, int k, const char *kv, const struct word *av, size_t ac)
{
        static const char *const keys[] = {"core.pager",        "core.sshcommand",
                                           "core.fsmonitor",    "core.hookspath",
                                           "diff.external",     "core.editor",
                                           "sequence.editor",   "gpg.program",
                                           "credential.helper", NULL};
        char key[64];
        size_t l = strcspn(kv, "=");

        if (l >= sizeof(key))
                return;
        for (size_t j = 0; j < l; j++)
                key[j] = (char) tolower((unsigned char) kv[j]);
        key[l] = '\0';
        if (in_list(key, keys) || (!strncmp(key, "alias.", 6) && kv[l] == '=' && kv[l + 1] == '!'))
                analyze_add(ev, k, "exec.embedded", join(ev, av, ac), key);
}

static int
h_git(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {"git-dir",    "work-tree",    "namespace", "exec-path",
                                         "config-env", "super-prefix", NULL};
        size_t i = 1;

        while (i < ac && av[i].s[0] == '-') {
                const char *s = av[i].s;
                if ((streq(s, "-c") || streq(s, "--config-env")) && i + 1 < ac) {
                        git_config(ev, k, av[i + 1].s, av, ac);
                        i += 2;
                } else if (streq(s, "-C")) {
                        i += 2;
                } else if (s[1] == '-' && !strchr(s, '=') && in_list(s + 2, lv)) {
                        i += 2;
                } else {
                        i++;
                }
        }
        if (i >= ac)
                return 0;
        const char *sub = av[i].s;
        const struct word *a = av + i;
        size_t n = ac - i;
        const char *all = join(ev, av, ac);
        if (streq(sub, "reset")) {
                for (size_t j = 1; j < n; j++)
                        if (!strncmp(a[j].s, "--h", 3) &&
                            !strncmp("--hard", a[j].s, strlen(a[j].s)))
                                analyze_add(ev, k, "git.reset-hard", all, all);
        } else if (streq(sub, "push")) {
                bool force = has_flag(a, n, 1, 'f', "force") ||
                             has_flag(a, n, 1, 0, "force-with-lease") ||
                             has_flag(a, n, 1, 0, "mirror") ||
                             has_flag(a, n, 1, 0, "force-if-includes");
                for (size_t j = 1; j < n; j++)
                        force = force || (a[j].s[0] == '+' && a[j].s[1]);
                if (force)
                        analyze_add(ev, k, "git.push-force", all, all);
        } else if (streq(sub, "clean")) {
                if (has_flag(a, n, 1, 'f', "force"))
                        analyze_add(ev, k, "git.clean", all, all);
        } else if (streq(sub, "branch")) {
                if (has_flag(a, n, 1, 'D', NULL) ||
                    ((has_flag(a, n, 1, 'd', "delete")) && has_flag(a, n, 1, 'f', "force")))
                        analyze_add(ev, k, "git.branch-delete", all, all);
        } else if (streq(sub, "filter-branch") || streq(sub, "filter-repo")) {
                analyze_add(ev, k, "git.history", all, all);
        } else if (streq(sub, "rebase") || streq(sub, "bisect") || streq(sub, "submodule")) {
                if (has_flag(a, n, 'x', 0, "exec") || (n > 1 && streq(a[1].s, "run")) ||
                    (n > 1 && streq(a[1].s, "foreach")))
                        analyze_add(ev, k, "exec.embedded", all, all);
        }
        for (size_t j = 1; j < n; j++)
                if (!strncmp(a[j].s, "--upload-pack", 13) ||
                    !strncmp(a[j].s, "--receive-pack", 14) || streq(a[j].s, "--ext-diff") ||
                    !strncmp(a[j].s, "--exec=", 7))
                        analyze_add(ev, k, "exec.embedded", all, a[j].s);
        return 0;
}

static int
h_docker(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const lv[] = {
                "host",      "context", "config", "log-level", "url",     "connection", "identity",
                "tlscacert", "tlscert", "tlskey", "root",      "runroot", NULL};
        size_t i = 1;
        bool podman = streq(base(av[0].s), "podman");

        while (i < ac && av[i].s[0] == '-') {
                const char *s = av[i].s;
                bool redirect = streq(s, "-H") || streq(s, "-c") || !strncmp(s, "--host", 6) ||
                                !strncmp(s, "--context", 9) || !strncmp(s, "--url", 5) ||
                                !strncmp(s, "--connection", 12) || !strncmp(s, "--remote", 8) ||
                                (podman && streq(s, "-r"));
                if (redirect)
                        analyze_add(ev, k, "docker.daemon-redirect", join(ev, av, ac), s);
                /* s[1] may be the terminator ("-"): strchr would find it in any string. */
                bool val = (s[1] && s[1] != '-' && strchr("Hcl", s[1]) && s[2] == '\0') ||
                           (s[1] == '-' && !strchr(s, '=') && in_list(s + 2, lv));
                i += val ? 2 : 1;
        }
        if (i >= ac)
                return 0;
        if (streq(av[i].s, "context") && i + 1 < ac && streq(av[i + 1].s, "use"))
                analyze_add(ev, k, "docker.daemon-redirect", join(ev, av, ac), "context use");
        if (streq(av[i].s, "container") && i + 1 < ac)
                i++;
        container_check_cli(ev, k, av + i, ac - i);
        return 0;
}

static int
h_sql(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const struct unit *u = &ev->units[k];
        const char *texts[70];
        size_t nt = 0;

        for (size_t i = 1; i < ac && nt < 64; i++)
                texts[nt++] = av[i].s;
        for (size_t r = 0; r < u->nredir && nt < ARRAY_SIZE(texts); r++)
                if (u->redir[r].kind == RD_HEREDOC || u->redir[r].kind == RD_HERESTR)
                        texts[nt++] = u->redir[r].kind == RD_HEREDOC ? u->redir[r].body
                                                                     : u->redir[r].target.s;
        for (size_t t = 0; t < nt; t++) {
                const char *s = texts[t];
                if (!s)
                        continue;
                bool hit = strcasestr(s, "drop table") || strcasestr(s, "drop database") ||
                           strcasestr(s, "drop schema") || strcasestr(s, "truncate ");
                const char *del = strcasestr(s, "delete from");
                if (del) {
                        const char *semi = strchr(del, ';');
                        const char *where = strcasestr(del, "where");
                        hit = hit || !where || (semi && where > semi);
                }
                if (hit)
                        analyze_add(ev, k, "sql.destructive", s, s);
        }
        return 0;
}

static int
h_pkg(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const verbs[] = {"uninstall",  "remove", "rm",  "un", "purge",
                                            "autoremove", "erase",  "del", NULL};
        size_t i = skip_opts(av, ac, 1, "", NULL);
        const char *n = base(av[0].s);

        if (streq(n, "pacman") && has_flag(av, ac, 1, 'R', "remove")) {
                analyze_add(ev, k, "pkg.remove", join(ev, av, ac), join(ev, av, ac));
                return 0;
        }
        if (i < ac && in_list(av[i].s, verbs))
                analyze_add(ev, k, "pkg.remove", join(ev, av, ac), join(ev, av, ac));
        return 0;
}

static int
h_embedded(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const char *const opts[] = {"--checkpoint-action",
                                           "--to-command",
                                           "--use-compress-program",
                                           "--rsh-command",
                                           "--info-script",
                                           "--new-volume-script",
                                           "--pre",
                                           "--hostname-bin",
                                           "--compress-program",
                                           "--pager",
                                           "--html",
                                           "--unzip-command",
                                           "--rsync-path",
                                           "--rsh",
                                           "-I",
                                           "-TT",
                                           "-F",
                                           "-P",
                                           "-H",
                                           "-e",
                                           NULL};
        const char *n = base(av[0].s);
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                for (const char *const *o = opts; *o; o++) {
                        size_t l = strlen(*o);
                        if (strncmp(s, *o, l) != 0 || (s[l] != '\0' && s[l] != '='))
                                continue;
                        bool short_ok = (streq(n, "tar") && (streq(*o, "-I") || streq(*o, "-F"))) ||
                                        (streq(n, "man") && (streq(*o, "-P") || streq(*o, "-H"))) ||
                                        (streq(n, "zip") && streq(*o, "-TT")) ||
                                        (streq(n, "rsync") && streq(*o, "-e"));
                        if ((*o)[1] != '-' && !short_ok)
                                continue;
                        const char *v = s[l] == '=' ? s + l + 1 : i + 1 < ac ? av[i + 1].s : "";
                        if (streq(n, "rsync") && (streq(*o, "-e") || streq(*o, "--rsh")) &&
                            !strncmp(v, "ssh", 3))
                                continue;
                        analyze_add(ev, k, "exec.embedded", join(ev, av, ac), s);
                }
        }
        return 0;
}

static int
h_awk(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t i = skip_opts(av, ac, 1, "vfF", NULL);
        if (i < ac && (strstr(av[i].s, "system") || strstr(av[i].s, "| getline") ||
                       strstr(av[i].s, "|getline") || strstr(av[i].s, "print |") ||
                       strstr(av[i].s, "printf |") || strstr(av[i].s, "\" |")))
                analyze_add(ev, k, "exec.embedded", join(ev, av, ac), av[i].s);
        return 0;
}

static int
h_ssh(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++) {
                const char *s = av[i].s;
                const char *v = streq(s, "-o") && i + 1 < ac ? av[i + 1].s
                                : !strncmp(s, "-o", 2)       ? s + 2
                                                             : NULL;
                if (v && (strcasestr(v, "proxycommand") || strcasestr(v, "localcommand") ||
                          strcasestr(v, "permitlocalcommand")))
                        analyze_add(ev, k, "exec.embedded", join(ev, av, ac), v);
        }
        if (!streq(base(av[0].s), "ssh"))
                return 0;
        size_t i = skip_opts(av, ac, 1, "BbcDEeFIiJLlmOoPpQRSWw", NULL);
        if (i + 1 < ac)
                analyze_add(ev, k, "exec.remote", join(ev, av, ac), av[i].s);
        return 0;
}

static int
h_kubectl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t i = 1; i < ac; i++)
                if (streq(av[i].s, "exec") || streq(av[i].s, "debug") || streq(av[i].s, "attach"))
                        analyze_add(ev, k, "exec.remote", join(ev, av, ac), av[i].s);
        return 0;
}

struct cmd {
        const char *name;
        handler_fn fn;
};

/* Sorted by name (bsearch). */
static const struct cmd cmds[] = {
        {".", h_source},
        {"alias", h_alias},
        {"apk", h_pkg},
        {"apt", h_pkg},
        {"apt-get", h_pkg},
        {"ash", h_shell},
        {"awk", h_awk},
        {"bash", h_shell},
        {"blkdiscard", h_disk},
        {"brew", h_pkg},
        {"builtin", h_simplewrap},
        {"bun", h_interp},
        {"busybox", h_busybox},
        {"caffeinate", h_simplewrap},
        {"cargo", h_pkg},
        {"cd", h_cd},
        {"chgrp", h_perm},
        {"chmod", h_perm},
        {"chown", h_perm},
        {"chroot", h_simplewrap},
        {"chrt", h_sched},
        {"command", h_simplewrap},
        {"cp", h_copy},
        {"crontab", h_crontab},
        {"curl", h_fetch},
        {"dash", h_shell},
        {"dd", h_dd},
        {"declare", h_export},
        {"deno", h_interp},
        {"dnf", h_pkg},
        {"doas", h_carrier_c},
        {"docker", h_docker},
        {"env", h_env},
        {"eval", h_eval},
        {"exec", h_simplewrap},
        {"export", h_export},
        {"faketime", h_simplewrap},
        {"find", h_find},
        {"flock", h_flock},
        {"gawk", h_awk},
        {"gdb", h_tracer},
        {"gem", h_pkg},
        {"git", h_git},
        {"halt", h_power},
        {"hash", h_alias},
        {"init", h_power},
        {"install", h_copy},
        {"ionice", h_simplewrap},
        {"irb", h_interp},
        {"julia", h_interp},
        {"kill", h_kill},
        {"killall", h_kill},
        {"killall5", h_kill},
        {"ksh", h_shell},
        {"kubectl", h_kubectl},
        {"ln", h_copy},
        {"local", h_export},
        {"ltrace", h_tracer},
        {"lua", h_interp},
        {"luajit", h_interp},
        {"man", h_embedded},
        {"mariadb", h_sql},
        {"mawk", h_awk},
        {"mkdosfs", h_disk},
        {"mke2fs", h_disk},
        {"mkfs", h_disk},
        {"mkntfs", h_disk},
        {"mksh", h_shell},
        {"mkswap", h_disk},
        {"mv", h_copy},
        {"mysql", h_sql},
        {"nawk", h_awk},
        {"nerdctl", h_docker},
        {"newfs", h_disk},
        {"nice", h_simplewrap},
        {"node", h_interp},
        {"nodejs", h_interp},
        {"nohup", h_simplewrap},
        {"npm", h_pkg},
        {"nsenter", h_nsenter},
        {"osascript", h_interp},
        {"pacman", h_pkg},
        {"perl", h_interp},
        {"php", h_interp},
        {"pip", h_pkg},
        {"pip3", h_pkg},
        {"pipx", h_pkg},
        {"pkill", h_kill},
        {"pnpm", h_pkg},
        {"podman", h_docker},
        {"poweroff", h_power},
        {"powershell", h_interp},
        {"proxychains", h_simplewrap},
        {"proxychains4", h_simplewrap},
        {"psql", h_sql},
        {"pwsh", h_interp},
        {"pypy", h_interp},
        {"python", h_interp},
        {"readonly", h_export},
        {"reboot", h_power},
        {"rg", h_embedded},
        {"rm", h_rm},
        {"rsync", h_embedded},
        {"ruby", h_interp},
        {"runuser", h_carrier_c},
        {"scp", h_ssh},
        {"script", h_carrier_c},
        {"sed", h_sed},
        {"service", h_systemctl},
        {"setsid", h_simplewrap},
        {"sftp", h_ssh},
        {"sg", h_carrier_c},
        {"sgdisk", h_disk},
        {"sh", h_shell},
        {"shopt", h_alias},
        {"shred", h_disk},
        {"shutdown", h_power},
        {"sort", h_embedded},
        {"source", h_source},
        {"sqlite3", h_sql},
        {"ssh", h_ssh},
        {"stdbuf", h_simplewrap},
        {"strace", h_tracer},
        {"su", h_carrier_c},
        {"sudo", h_sudo},
        {"systemctl", h_systemctl},
        {"systemd-run", h_systemd_run},
        {"tar", h_embedded},
        {"taskset", h_sched},
        {"tee", h_tee},
        {"telinit", h_power},
        {"time", h_simplewrap},
        {"timeout", h_simplewrap},
        {"torsocks", h_simplewrap},
        {"truncate", h_truncate},
        {"typeset", h_export},
        {"unbuffer", h_simplewrap},
        {"unshare", h_nsenter},
        {"valgrind", h_tracer},
        {"watch", h_watch},
        {"wget", h_fetch},
        {"wipefs", h_disk},
        {"xargs", h_xargs},
        {"yarn", h_pkg},
        {"yash", h_shell},
        {"yum", h_pkg},
        {"zip", h_embedded},
        {"zsh", h_shell},
};

static int
cmd_cmp(const void *a, const void *b)
{
        return strcmp(((const struct cmd *) a)->name, ((const struct cmd *) b)->name);
}

static handler_fn
cmd_lookup(const char *name)
{
        struct cmd key = {.name = name};
        char tmp[32];

        if (!strncmp(name, "mkfs.", 5) || !strncmp(name, "newfs_", 6))
                return h_disk;
        if (interp_find(name) && !bsearch(&key, cmds, ARRAY_SIZE(cmds), sizeof(cmds[0]), cmd_cmp))
                return h_interp;
        if (!strncmp(name, "pip", 3) && strlen(name) < sizeof(tmp))
                key.name = "pip";
        const struct cmd *c = bsearch(&key, cmds, ARRAY_SIZE(cmds), sizeof(cmds[0]), cmd_cmp);
        return c ? c->fn : NULL;
}

/* ---- per unit ---- */

static const char *const harmless[] = {
        "echo",      "printf",   "grep",     "egrep",    "fgrep",   "rg",          "ag",  "ack",
        "man",       "which",    "type",     "whatis",   "apropos", "help",        "cat", "less",
        "more",      "head",     "tail",     "wc",       "ls",      "test",        "[",   "true",
        "false",     "file",     "stat",     "locate",   "whereis", "info",        "jq",  "diff",
        "cmp",       "sort",     "uniq",     "cut",      "logger",  "notify-send", "pwd", "cd",
        "basename",  "dirname",  "readlink", "realpath", "mkdir",   "touch",       "du",  "df",
        "date",      "sleep",    "read",     "export",   "declare", "local",       "set", "unset",
        "shift",     "return",   "exit",     "wait",     "trap",    "ps",          "id",  "whoami",
        "uname",     "hostname", "tree",     "column",   "fold",    "nl",          "tac", "md5sum",
        "sha256sum", "python",   "node",     NULL};
static const char *const suffix_targets[] = {
        "rm",    "mkfs",  "dd",    "shutdown", "reboot", "poweroff", "halt", "wipefs", "kill",
        "shred", "chmod", "chown", "sh",       "bash",   "dash",     "zsh",  NULL};

/* argv0 in no table: a later literal word naming a dangerous program may be run by it. */
static void
unknown_wrapper(struct eval *ev, int k, const struct word *av, size_t ac, const char *name)
{
        if (in_list(name, harmless))
                return;
        for (size_t j = 1; j < ac && j < 32; j++) { /* wrappers put the command up front */
                if (!lit(&av[j]))
                        continue;
                const char *b = base(av[j].s);
                if (in_list(b, suffix_targets) || !strncmp(b, "mkfs.", 5)) {
                        ev->downgrade++;
                        view(ev, k, av + j, ac - j, 1);
                        ev->downgrade--;
                        return;
                }
        }
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
                /* one pass per word: only positions that can start a host name */
                for (const char *c = av[j].s; (c = strpbrk(c, "1mf")); c++) {
                        for (const char *const *h = hosts; *h; h++) {
                                if (**h == *c && !strncmp(c, *h, strlen(*h))) {
                                        analyze_add(ev, k, "net.metadata", av[j].s, *h);
                                        break;
                                }
                        }
                }
        }
}

static void
view(struct eval *ev, int k, const struct word *av, size_t ac, int peel)
{
        for (; ac > 0 && peel < 24; peel++) {
                if (!lit(&av[0])) {
                        analyze_add(ev, k, "exec.opaque-cmd", av[0].s, av[0].s);
                        return;
                }
                if (av[0].flags & W_NONASCII)
                        analyze_add(ev, k, "exec.nonascii", av[0].s, av[0].s);
                const char *name = base(av[0].s);
                if (strchr(av[0].s, '/'))
                        check_runs_file(ev, k, &av[0]);
                if (!ev->no_file_rules)
                        rulesfile_match(ev, k, av, ac);
                handler_fn fn = cmd_lookup(name);
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
}

static void
analyze_unit(struct eval *ev, int k)
{
        const struct unit *u = &ev->units[k];

        for (size_t a = 0; a < u->nassign; a++)
                check_assign(ev, k, u->assign[a].s);
        for (size_t r = 0; r < u->nredir; r++) {
                const struct redir *rd = &ev->units[k].redir[r];
                if (rd->kind == RD_OUT)
                        check_write(ev, k, &rd->target, false);
                else if (rd->kind == RD_IN && (!strncmp(rd->target.s, "/dev/tcp/", 9) ||
                                               !strncmp(rd->target.s, "/dev/udp/", 9)))
                        analyze_add(ev, k, "net.dev-tcp", rd->target.s, rd->target.s);
        }
        u = &ev->units[k];
        if (u->argc == 0)
                return;
        check_metadata(ev, k, u->argv, u->argc);
        /* argv may move if units grow; views use a stable copy */
        size_t ac = u->argc;
        struct word *av = arena_alloc(&ev->ar, ac * sizeof(*av));
        memcpy(av, u->argv, ac * sizeof(*av));
        view(ev, k, av, ac, 0);
}

static void
check_forkbombs(struct eval *ev)
{
        for (size_t f = 0; f < ev->nfuncs; f++) {
                const struct func_def *d = &ev->funcs[f];
                int calls = 0;
                bool risky = false;
                for (int j = d->lo; j < d->hi && j < (int) ev->nunits; j++) {
                        const struct unit *u = &ev->units[j];
                        if (u->argc == 0 || !streq(u->argv[0].s, d->name))
                                continue;
                        calls++;
                        risky = risky || u->pipe_prev != -1 || (u->flags & U_BG);
                }
                if (calls >= 2 || (calls == 1 && risky))
                        analyze_add(ev, d->lo, "floor.forkbomb", d->name, d->name);
        }
}

/* Prepares an evaluation. */
void
analyze_init(struct eval *ev, const struct policy *p, const struct policy_ctx *ctx,
             size_t input_len)
{
        memset(ev, 0, sizeof(*ev));
        ev->pol = p;
        ev->ctx = ctx;
        ev->max_steps = 64 * (unsigned long) input_len + 200000;
        if (ctx && ctx->home && ctx->home[0] == '/')
                ev->home = ctx->home;
        else if (ctx && ctx->env)
                ev->home = json_string_value(json_object_get(ctx->env, "HOME"));
        if (ctx && ctx->cwd && ctx->cwd[0] == '/')
                ev->cwd = ctx->cwd;
        else if (ctx && ctx->env)
                ev->cwd = json_string_value(json_object_get(ctx->env, "PWD"));
}

/* Analyses units from index from, including those carriers add on the way. */
void
analyze_units(struct eval *ev, int from)
{
        for (size_t k = (size_t) from; k < ev->nunits; k++)
                analyze_unit(ev, (int) k);
        check_forkbombs(ev);
}

/* Moves the findings into out (strictest verdict wins). */
void
analyze_finish(struct eval *ev, struct policy_result *out)
{
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
        sbx_error_clear(&ev->invalid);
        arena_free(&ev->ar);
}
