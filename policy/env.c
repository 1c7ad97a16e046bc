/* env.c — variables that change what runs: one table for assignment prefixes (X=… cmd),
 * `env X=…`, `export X=…` and the variables a request sets itself (exec and sandbox.create
 * `env`, policy.check `env`).
 *
 * A variable is judged by its name (the loader's LD_PRELOAD, a shell's BASH_ENV), by its name
 * and value (PATH with something in front of the system directories, a pager that is not a
 * known harmless program, GIT_CONFIG_KEY_n naming a key that runs programs), always with the
 * value in the approval subject, so approving LD_PRELOAD=/a approves nothing else.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum env_how {
        EV_ALWAYS,    /* any non-empty value */
        EV_PATH,      /* directories in front of the system ones */
        EV_PROGRAM,   /* a program other than the known harmless pagers and editors */
        EV_GITKEY,    /* a git config key that runs programs */
        EV_DAEMON,    /* another container daemon */
        EV_MAKEFLAGS, /* make options other than jobs, load, silence and keep-going */
        EV_TRACE,     /* a file or socket to write to (a level or a boolean is harmless) */
        EV_GIT,       /* where git finds its configuration: when the command runs git */
        EV_FORBIDDEN, /* never settable */
};

struct env_rule {
        const char *pat; /* fnmatch pattern on the name */
        enum env_how how;
        const char *rule;
};

static const struct env_rule env_rules[] = {
        /* the dynamic loader */
        {"LD_PRELOAD", EV_ALWAYS, "env.inject"},
        {"LD_LIBRARY_PATH", EV_ALWAYS, "env.inject"},
        {"LD_AUDIT", EV_ALWAYS, "env.inject"},
        {"LD_PROFILE", EV_ALWAYS, "env.inject"},
        {"LD_DEBUG_OUTPUT", EV_ALWAYS, "env.inject"},
        {"GCONV_PATH", EV_ALWAYS, "env.inject"},
        {"GLIBC_TUNABLES", EV_ALWAYS, "env.inject"},
        {"DYLD_*", EV_ALWAYS, "env.inject"},
        /* shells */
        {"BASH_ENV", EV_ALWAYS, "env.inject"},
        {"ENV", EV_ALWAYS, "env.inject"},
        {"PROMPT_COMMAND", EV_ALWAYS, "env.inject"},
        {"PS0", EV_ALWAYS, "env.inject"},
        {"PS1", EV_ALWAYS, "env.inject"},
        {"PS4", EV_ALWAYS, "env.inject"},
        {"SHELLOPTS", EV_ALWAYS, "env.inject"},
        {"BASHOPTS", EV_ALWAYS, "env.inject"},
        {"BASH_FUNC_*", EV_ALWAYS, "env.inject"},
        {"BASH_XTRACEFD", EV_ALWAYS, "env.inject"},
        {"CDPATH", EV_ALWAYS, "env.inject"},
        {"ZDOTDIR", EV_ALWAYS, "env.inject"},
        /* interpreters */
        {"PYTHONSTARTUP", EV_ALWAYS, "env.inject"},
        {"PYTHONPATH", EV_ALWAYS, "env.inject"},
        {"PYTHONHOME", EV_ALWAYS, "env.inject"},
        {"PYTHONINSPECT", EV_ALWAYS, "env.inject"},
        {"PYTHONBREAKPOINT", EV_ALWAYS, "env.inject"},
        {"PYTHONUSERBASE", EV_ALWAYS, "env.inject"},
        {"PYTHONWARNINGS", EV_ALWAYS, "env.inject"}, /* a category imports its module */
        {"LUA_INIT*", EV_ALWAYS, "env.inject"},      /* code or @file run first */
        {"LUA_PATH*", EV_ALWAYS, "env.inject"},
        {"LUA_CPATH*", EV_ALWAYS, "env.inject"},
        {"NODE_OPTIONS", EV_ALWAYS, "env.inject"},
        {"NODE_PATH", EV_ALWAYS, "env.inject"},
        {"PERL5OPT", EV_ALWAYS, "env.inject"},
        {"PERL5LIB", EV_ALWAYS, "env.inject"},
        {"PERLLIB", EV_ALWAYS, "env.inject"},
        {"PERL5DB", EV_ALWAYS, "env.inject"},
        {"RUBYOPT", EV_ALWAYS, "env.inject"},
        {"RUBYLIB", EV_ALWAYS, "env.inject"},
        {"JAVA_TOOL_OPTIONS", EV_ALWAYS, "env.inject"},
        {"_JAVA_OPTIONS", EV_ALWAYS, "env.inject"},
        {"JDK_JAVA_OPTIONS", EV_ALWAYS, "env.inject"},
        {"MAKEFLAGS", EV_MAKEFLAGS, "env.inject"},
        {"MFLAGS", EV_MAKEFLAGS, "env.inject"},
        {"npm_config_script_shell", EV_ALWAYS, "env.inject"},
        {"NPM_CONFIG_SCRIPT_SHELL", EV_ALWAYS, "env.inject"},
        /* git: config injection and the programs it runs */
        {"GIT_CONFIG_PARAMETERS", EV_ALWAYS, "env.inject"},
        {"GIT_CONFIG_GLOBAL", EV_ALWAYS, "env.inject"},
        {"GIT_CONFIG_SYSTEM", EV_ALWAYS, "env.inject"},
        {"GIT_CONFIG", EV_ALWAYS, "env.inject"},
        {"GIT_CONFIG_KEY_*", EV_GITKEY, "env.inject"},
        {"GIT_SSH", EV_ALWAYS, "env.inject"},
        {"GIT_SSH_COMMAND", EV_ALWAYS, "env.inject"},
        {"GIT_EXTERNAL_DIFF", EV_ALWAYS, "env.inject"},
        {"GIT_EXEC_PATH", EV_ALWAYS, "env.inject"},
        {"GIT_PROXY_COMMAND", EV_ALWAYS, "env.inject"},
        {"GIT_ASKPASS", EV_ALWAYS, "env.inject"},
        {"GIT_TEMPLATE_DIR", EV_ALWAYS, "env.inject"},
        {"GIT_DIR", EV_ALWAYS, "env.inject"},
        {"GIT_WORK_TREE", EV_ALWAYS, "env.inject"},
        {"GIT_TRACE*", EV_TRACE, "env.inject"},
        {"HOME", EV_GIT, "env.inject"},
        {"XDG_CONFIG_HOME", EV_GIT, "env.inject"},
        {"GIT_PAGER", EV_PROGRAM, "env.inject"},
        {"GIT_EDITOR", EV_PROGRAM, "env.inject"},
        {"GIT_SEQUENCE_EDITOR", EV_PROGRAM, "env.inject"},
        /* options and programs other tools take from the environment */
        {"TAR_OPTIONS", EV_ALWAYS, "env.inject"}, /* --to-command, --use-compress-program */
        {"RSYNC_RSH", EV_ALWAYS, "env.inject"},   /* as rsync -e */
        {"RSYNC_CONNECT_PROG", EV_ALWAYS, "env.inject"},
        {"RUSTC_WRAPPER", EV_ALWAYS, "env.inject"},
        {"RUSTC_WORKSPACE_WRAPPER", EV_ALWAYS, "env.inject"},
        {"CARGO_BUILD_RUSTC_WRAPPER", EV_ALWAYS, "env.inject"},
        {"RUSTC", EV_ALWAYS, "env.inject"},
        {"CARGO_TARGET_*_RUNNER", EV_ALWAYS, "env.inject"},
        {"GOFLAGS", EV_ALWAYS, "env.inject"}, /* -toolexec */
        {"CURL_HOME", EV_ALWAYS, "env.inject"},
        {"WGETRC", EV_ALWAYS, "env.inject"},
        {"PSQLRC", EV_ALWAYS, "env.inject"},
        {"VIMINIT", EV_ALWAYS, "env.inject"},
        {"EXINIT", EV_ALWAYS, "env.inject"},
        {"MYVIMRC", EV_ALWAYS, "env.inject"},
        /* other programs run on someone's behalf */
        {"SSH_ASKPASS", EV_ALWAYS, "env.inject"},
        {"SUDO_ASKPASS", EV_ALWAYS, "env.inject"},
        {"LESSOPEN", EV_ALWAYS, "env.inject"},
        {"LESSCLOSE", EV_ALWAYS, "env.inject"},
        {"BROWSER", EV_ALWAYS, "env.inject"},
        {"PAGER", EV_PROGRAM, "env.inject"},
        {"MANPAGER", EV_PROGRAM, "env.inject"},
        {"SYSTEMD_PAGER", EV_PROGRAM, "env.inject"},
        {"EDITOR", EV_PROGRAM, "env.inject"},
        {"VISUAL", EV_PROGRAM, "env.inject"},
        /* where programs are found */
        {"PATH", EV_PATH, "env.path"},
        /* other container daemons */
        {"DOCKER_HOST", EV_DAEMON, "docker.daemon-redirect"},
        {"DOCKER_CONTEXT", EV_DAEMON, "docker.daemon-redirect"},
        {"CONTAINER_HOST", EV_DAEMON, "docker.daemon-redirect"},
        {"CONTAINER_CONNECTION", EV_DAEMON, "docker.daemon-redirect"},
};

/* System directories: what PATH may start with. */
static const char *const sys_path[] = {
        "/usr/local/sbin", "/usr/local/bin",   "/usr/sbin", "/usr/bin", "/sbin", "/bin",
        "/usr/games",      "/usr/local/games", "/snap/bin", NULL};

/* Programs a pager or editor variable may name without asking. */
static const char *const harmless_programs[] = {
        "cat",     "true",      "less",       "more",        "most",        "head",  "tail", "vi",
        "vim",     "nvim",      "nano",       "ed",          "emacs",       "micro", "code", ":",
        "less -R", "less -FRX", "less -FRSX", "code --wait", "vim -u NONE", NULL};

/* Git config keys whose values run programs or bring in more config. */
static const char *const git_keys[] = {"core.pager",
                                       "pager.*",
                                       "core.sshcommand",
                                       "core.fsmonitor",
                                       "core.hookspath",
                                       "core.editor",
                                       "core.askpass",
                                       "core.gitproxy",
                                       "core.alternaterefscommand",
                                       "sequence.editor",
                                       "diff.external",
                                       "diff.*.textconv",
                                       "diff.*.command",
                                       "merge.*.driver",
                                       "filter.*",
                                       "credential.helper",
                                       "credential.*.helper",
                                       "gpg.program",
                                       "gpg.*.program",
                                       "alias.*",
                                       "uploadpack.packobjectshook",
                                       "protocol.*.allow",
                                       "protocol.allow",
                                       "remote.*.uploadpack",
                                       "remote.*.receivepack",
                                       "remote.*.proxy",
                                       "interactive.difffilter",
                                       "web.browser",
                                       "browser.*.cmd",
                                       "man.*.cmd",
                                       "mergetool.*.cmd",
                                       "difftool.*.cmd",
                                       "init.templatedir",
                                       "include.path",
                                       "includeif.*",
                                       "ssh.variant",
                                       "http.proxy",
                                       "core.worktree",
                                       "sendemail.smtpserver",
                                       "sendemail.*.smtpserver",
                                       NULL};

/* Whether a git config key (section.key) runs a program or loads more config. */
bool
env_git_key_runs(const char *key)
{
        char low[256];
        size_t n = strlen(key);

        if (n >= sizeof(low))
                return true;
        for (size_t j = 0; j <= n; j++)
                low[j] = (char) tolower((unsigned char) key[j]);
        for (const char *const *k = git_keys; *k; k++)
                if (fnmatch(*k, low, 0) == 0)
                        return true;
        return false;
}

/* Whether a pager or editor value is one of the harmless programs. */
bool
env_harmless_program(const char *value)
{
        return analyze_in(value, harmless_programs);
}

/* The value is a PATH whose front holds only system directories: nothing before /usr/bin
 * (or the old $PATH) but other system directories. */
static bool
path_is_safe(struct eval *ev, const char *v, bool request)
{
        const char *old = NULL;

        /* the environment's PATH as a prefix is what was there; not for the request's own
         * PATH, which is in that environment already */
        if (!request && ev->ctx && ev->ctx->env)
                old = json_string_value(json_object_get(ev->ctx->env, "PATH"));
        if (old && *old && !strncmp(v, old, strlen(old)))
                return true;
        while (*v) {
                size_t l = strcspn(v, ":");
                char dir[512];
                if (l == 0 || l >= sizeof(dir))
                        return false; /* an empty entry is the cwd */
                memcpy(dir, v, l);
                dir[l] = '\0';
                if (!strcmp(dir, "$PATH") || !strcmp(dir, "${PATH}") || !strcmp(dir, "/usr/bin"))
                        return true;
                if (!analyze_in(dir, sys_path))
                        return false;
                v += l + (v[l] == ':');
        }
        return true;
}

/* MAKEFLAGS / MFLAGS holding only -jN, -lN, -k, -s, -w and their long names. */
static bool
makeflags_safe(const char *v)
{
        static const char *const longs[] = {
                "--jobs",  "--load-average",       "--keep-going",      "--silent",
                "--quiet", "--no-print-directory", "--print-directory", NULL};
        while (*v) {
                size_t l = strcspn(v, " ");
                char t[64];
                if (l >= sizeof(t))
                        return false;
                memcpy(t, v, l);
                t[l] = '\0';
                char *eq = strchr(t, '=');
                if (eq && strspn(eq + 1, "0123456789.") == strlen(eq + 1))
                        *eq = '\0';
                const char *b = t[0] == '-' ? t + 1 : t;
                bool ok = analyze_in(t, longs) ||
                          (l > 0 && strspn(b, "jlkswnqiB") >= 1 &&
                           strspn(b + strspn(b, "jlkswnqiB"), "0123456789.") ==
                                   strlen(b + strspn(b, "jlkswnqiB")));
                if (l > 0 && !ok)
                        return false;
                v += l + (v[l] == ' ');
        }
        return true;
}

/* A trace variable's value that only sets a level or turns tracing on or off (to stderr). */
static bool
trace_harmless(const char *v)
{
        static const char *const words[] = {"true", "false", "yes", "no", "on", "off", NULL};

        return strspn(v, "0123456789") == strlen(v) || analyze_in(v, words);
}

/* Whether the command runs git (any unit, after the usual wrappers). */
static bool
runs_git(struct eval *ev)
{
        for (size_t j = 0; j < ev->nunits; j++)
                if (!strcmp(analyze_unit_name(ev, &ev->units[j]), "git"))
                        return true;
        return false;
}

static bool
value_risky(struct eval *ev, const struct env_rule *r, const char *v, bool dyn, bool request)
{
        switch (r->how) {
        case EV_TRACE:
                return dyn || !trace_harmless(v);
        case EV_GIT:
                return (dyn || *v) && runs_git(ev);
        case EV_ALWAYS:
        case EV_DAEMON:
                return dyn || *v;
        case EV_PATH:
                return !path_is_safe(ev, v, request);
        case EV_MAKEFLAGS:
                return !makeflags_safe(v);
        case EV_PROGRAM:
                return dyn || (*v && !env_harmless_program(v));
        case EV_GITKEY:
                return dyn || env_git_key_runs(v);
        case EV_FORBIDDEN:
                return true;
        }
        return true;
}

static const struct env_rule *
rule_for(const char *name)
{
        for (size_t j = 0; j < ARRAY_SIZE(env_rules); j++)
                if (fnmatch(env_rules[j].pat, name, 0) == 0)
                        return &env_rules[j];
        return NULL;
}

/* Judges NAME=VALUE (dyn: the value is only known at run time) for unit k. */
static void
check(struct eval *ev, int k, const char *name, const char *value, bool dyn, const char *shown)
{
        const struct env_rule *r = rule_for(name);

        if (!r || !value_risky(ev, r, value, dyn, k < 0))
                return;
        size_t n = strlen(name) + strlen(value) + 2;
        char *subject = arena_alloc(&ev->ar, n);
        snprintf(subject, n, "%s=%s", name, value);
        analyze_add(ev, k, r->rule, shown ? shown : subject, subject);
}

/* Judges one NAME=VALUE word for unit k. */
void
env_check_assign(struct eval *ev, int k, const struct word *w)
{
        const char *eq = strchr(w->s, '=');
        char name[128];

        if (!eq)
                return;
        size_t n = (size_t) (eq - w->s);
        if (n >= sizeof(name))
                n = sizeof(name) - 1;
        memcpy(name, w->s, n);
        name[n] = '\0';
        if (n && name[n - 1] == '+')
                name[--n] = '\0';
        bool dyn = (w->flags & W_DYN) != 0;
        check(ev, k, name, eq + 1, dyn, w->s);
}

/* Judges the variables the request sets (object of strings). */
void
env_check_request(struct eval *ev, json_t *env)
{
        const char *name;
        json_t *v;

        if (!json_is_object(env))
                return;
        json_object_foreach(env, name, v)
        {
                const char *s = json_is_string(v) ? json_string_value(v) : "";
                size_t n = strlen(name) + strlen(s) + 16;
                char *shown = arena_alloc(&ev->ar, n);
                snprintf(shown, n, "env %s=%s", name, s);
                check(ev, -1, name, s, false, shown);
        }
}
