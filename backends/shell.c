/* shell.c — the shell-state wrapper: how a `command` exec is started (state parser:
 * shell_state.c). */
#include "backends/shell.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* The EXIT trap, run by the shell itself at its end: builtins only, one file written, the
 * command's exit status untouched (a trap without `exit` keeps it). xtrace and errexit the
 * command may have set are switched off first (every expansion has a default, so nounset does
 * not matter) and stderr goes nowhere from the start, so not even `set +x` is traced and a
 * file that cannot be written says nothing; `command` skips functions the
 * command defined under the same names. Both `pwd -P` and $PWD are written: when the working
 * directory was removed, pwd -P has nothing to say and the daemon goes by $PWD. %s is the
 * state file, single-quoted. */
static const char shell_trap_fmt[] =
        "{ set +x; set +e; umask 077; { printf 'sandboxd-state 2\\0%%s\\0' \"${__sbx_k:-sh}\"; "
        "command pwd -P; printf '\\0%%s\\0' \"${PWD-}\"; command export -p; printf '\\0'; "
        "[ -z \"${BASH_VERSION-}\" ] || builtin declare -fx; printf '\\0end\\0'; } >|%s; "
        "} 2>/dev/null";

/* The first line of a command for shells other than bash: sets the trap, on the same line
 * as the command so that its line numbers stay the caller's. */
static const char shell_prefix[] = "trap -- \"$SANDBOXD_TRAP\" EXIT;unset SANDBOXD_TRAP;";

/* A container whose shell is not known yet: bash when it has one, else sh. $1 is the command
 * for bash (which reads BASH_ENV), $2 the command with the prefix for sh. */
static const char shell_pick[] = "command -v bash >/dev/null 2>&1 && exec bash -c \"$1\"\n"
                                 "unset BASH_ENV; [ -z \"${SANDBOXD_BASH_ENV+x}\" ] || export "
                                 "BASH_ENV=\"$SANDBOXD_BASH_ENV\"; unset SANDBOXD_BASH_ENV\n"
                                 "exec sh -c \"$2\"\n";

/* The same without the start-up file: a background exec, or a bash in POSIX mode. */
static const char shell_pick_plain[] =
        "command -v bash >/dev/null 2>&1 && exec bash -c \"$1\"; exec sh -c \"$1\"";

/* Single-quotes s for sh (new). */
static char *
shell_quote(const char *s)
{
        struct buf b = {0};

        buf_append(&b, "'", 1);
        for (; *s; s++) {
                if (*s == '\'')
                        buf_append(&b, "'\\''", 4);
                else
                        buf_append(&b, s, 1);
        }
        buf_append(&b, "'", 2); /* and the NUL */
        return b.data;
}

static void
shell_env_set(json_t *env, const char *k, const char *v)
{
        json_object_set_new(env, k, json_string_nocheck(v));
}

/* bash in POSIX mode (POSIXLY_CORRECT, SHELLOPTS=…posix…) reads no BASH_ENV. */
static bool
shell_posix_mode(json_t *env)
{
        const char *opts = json_string_value(json_object_get(env, "SHELLOPTS"));

        return json_object_get(env, "POSIXLY_CORRECT") || (opts && strstr(opts, "posix"));
}

/* The start-up file goes in BASH_ENV; a BASH_ENV of the caller's waits in SANDBOXD_BASH_ENV. */
static void
shell_env_bash(json_t *env, const char *init)
{
        json_t *own = json_object_get(env, "BASH_ENV");

        if (own)
                json_object_set(env, "SANDBOXD_BASH_ENV", own);
        else
                json_object_del(env, "SANDBOXD_BASH_ENV");
        shell_env_set(env, "BASH_ENV", init);
}

static char **
shell_argv(const char *a0, const char *a1, const char *a2, const char *a3, const char *a4,
           const char *a5)
{
        const char *v[] = {a0, a1, a2, a3, a4, a5};
        char **argv = xcalloc(ARRAY_SIZE(v) + 1, sizeof(*argv));

        for (size_t i = 0; i < ARRAY_SIZE(v) && v[i]; i++)
                argv[i] = xstrdup(v[i]);
        return argv;
}

/* Builds the argv of one command exec. */
char **
shell_wrap(const struct shell_exec *x, json_t *env)
{
        enum shell_kind kind = x->kind;
        const char *name = x->name ? x->name : kind == SHELL_BASH ? "bash" : "sh";
        char *quoted, *trap, *prefixed;
        char **argv;

        if (!x->state_path)
                return kind == SHELL_PICK ? shell_argv("/bin/sh", "-c", shell_pick_plain, "sh",
                                                       x->command, NULL)
                                          : shell_argv(name, "-c", x->command, NULL, NULL, NULL);
        quoted = shell_quote(x->state_path);
        trap = xasprintf(shell_trap_fmt, quoted);
        shell_env_set(env, "SANDBOXD_TRAP", trap);
        prefixed = xasprintf("%s%s", shell_prefix, x->command);
        if (kind != SHELL_SH && shell_posix_mode(env))
                argv = kind == SHELL_PICK
                               ? shell_argv("/bin/sh", "-c", shell_pick_plain, "sh", prefixed, NULL)
                               : shell_argv(name, "-c", prefixed, NULL, NULL, NULL);
        else if (kind == SHELL_SH)
                argv = shell_argv(name, "-c", prefixed, NULL, NULL, NULL);
        else if (kind == SHELL_BASH)
                argv = shell_argv(name, "-c", x->command, NULL, NULL, NULL);
        else
                argv = shell_argv("/bin/sh", "-c", shell_pick, "sh", x->command, prefixed);
        if (kind != SHELL_SH && !shell_posix_mode(env))
                shell_env_bash(env, x->bash_init);
        free(quoted);
        free(trap);
        free(prefixed);
        return argv;
}

/* Builtins and keywords that can set a variable, export, unset, or change the directory (of
 * bash, dash and busybox ash); words with other characters are not plain anyway. */
static const char *const shell_stateful_words[] = {
        ".",      "source",   "cd",        "pushd",   "popd",    "declare", "typeset", "local",
        "export", "readonly", "unset",     "eval",    "builtin", "command", "enable",  "let",
        "read",   "printf",   "readarray", "mapfile", "getopts", "coproc",  "time",    "function",
        "select", "if",       "case",      "for",     "while",   "until",
};

static bool
shell_plain_byte(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("_./:@%+,=- ", c));
}

/* The shells whose builtins shell_stateful_words covers. */
static bool
shell_known(const struct shell_exec *x)
{
        static const char *const names[] = {"bash", "sh", "dash", "ash"};

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (!strcmp(x->name ? x->name : "sh", names[i]))
                        return true;
        return false;
}

/* Whether the command cannot change the state. */
bool
shell_stateless(const struct shell_exec *x, json_t *env)
{
        const char *c = x->command, *w;
        size_t n;
        char *fn;
        bool exported;

        if (x->kind == SHELL_PICK || !shell_known(x) || json_object_get(env, "BASH_ENV"))
                return false;
        for (const char *p = c; *p; p++)
                if (!shell_plain_byte(*p))
                        return false;
        w = c + strspn(c, " ");
        n = strcspn(w, " ");
        if (!n || memchr(w, '=', n))
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(shell_stateful_words); i++)
                if (strlen(shell_stateful_words[i]) == n && !memcmp(w, shell_stateful_words[i], n))
                        return false;
        fn = xasprintf("BASH_FUNC_%.*s%%%%", (int) n, w);
        exported = json_object_get(env, fn) != NULL;
        free(fn);
        return !exported;
}

/* Frees a wrapper argv. */
void
shell_argv_free(char **argv)
{
        if (!argv)
                return;
        for (char **a = argv; *a; a++)
                free(*a);
        free(argv);
}

/* The last path component. */
const char *
shell_basename(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

/* Whether a POSIX shell passes a variable of this name on to the programs it runs: a shell
 * name ([A-Za-z_][A-Za-z0-9_]*). dash and busybox ash drop the others. */
static bool
shell_env_name_ok(const char *kv)
{
        size_t n = strcspn(kv, "=");

        if (!n || kv[n] != '=' || (kv[0] >= '0' && kv[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(kv[i] == '_' || (kv[i] >= 'a' && kv[i] <= 'z') ||
                      (kv[i] >= 'A' && kv[i] <= 'Z') || (kv[i] >= '0' && kv[i] <= '9')))
                        return false;
        return true;
}

size_t
shell_env_carried(char *const *argv, char *const *envp, char **out)
{
        size_t n = 0;

        if (strchr(argv[0], '='))
                return 0;
        for (size_t i = 0; envp && envp[i]; i++)
                if (!shell_env_name_ok(envp[i]) && !strchr("-=", envp[i][0]) &&
                    strchr(envp[i], '='))
                        out[n++] = envp[i];
        return n;
}

/* bash's start-up file beside the state file (new). */
char *
shell_bash_init_path(const char *state_path)
{
        const char *slash = strrchr(state_path, '/');
        int dlen = slash ? (int) (slash - state_path) : 1;

        return xasprintf("%.*s/" SHELL_BASH_INIT_NAME, dlen, slash ? state_path : ".");
}

/* bash reads BASH_ENV only when it is not called sh (as sh it is in POSIX mode). */
enum shell_kind
shell_kind_of(const char *path)
{
        return strcmp(shell_basename(path), "bash") == 0 ? SHELL_BASH : SHELL_SH;
}
