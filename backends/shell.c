/* shell.c — shell wrapper for persistent cwd/exports, and its state parser. */
#include "backends/shell.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/util.h"

/* $1 = state file ("" for none), $2 = the command. The trap keeps the command's exit status:
 * a trap without `exit` does not change it. State goes to a temp name first so a reader never
 * sees half a file. */
static const char shell_script[] =
        "__sbx_state=$1; __sbx_cmd=$2; shift 2\n"
        "if [ -n \"$__sbx_state\" ]; then\n"
        "  trap '{ pwd -P; printf \"\\\\000\"; env -0; } >\"$__sbx_state.tmp\" 2>/dev/null &&"
        " mv -f \"$__sbx_state.tmp\" \"$__sbx_state\" 2>/dev/null' EXIT\n"
        "fi\n"
        "eval \"$__sbx_cmd\"\n";

static const char *const shell_skip_vars[] = {"PWD", "OLDPWD",    "SHLVL",
                                              "_",   "__sbx_cmd", "__sbx_state"};

/* Builds the wrapper argv. */
char **
shell_wrap(const char *shell, const char *command, const char *state_path)
{
        char **argv = xcalloc(7, sizeof(*argv));

        argv[0] = xstrdup(shell);
        argv[1] = xstrdup("-c");
        argv[2] = xstrdup(shell_script);
        argv[3] = xstrdup("sandboxd");
        argv[4] = xstrdup(state_path ? state_path : "");
        argv[5] = xstrdup(command);
        return argv;
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

static int
shell_skip(const char *name, size_t len)
{
        for (size_t i = 0; i < ARRAY_SIZE(shell_skip_vars); i++)
                if (strlen(shell_skip_vars[i]) == len && !memcmp(shell_skip_vars[i], name, len))
                        return 1;
        return 0;
}

/* Parses "cwd\n\0K=V\0K=V\0". */
int
shell_state_parse(const char *blob, size_t len, char **cwd, json_t **env)
{
        const char *nul = memchr(blob, '\0', len);
        const char *p, *end = blob + len;
        json_t *e;

        if (!nul || nul == blob || nul[-1] != '\n' || blob[0] != '/')
                return -EINVAL;
        e = json_object();
        for (p = nul + 1; p < end;) {
                const char *z = memchr(p, '\0', (size_t) (end - p));
                const char *eq;
                size_t n = z ? (size_t) (z - p) : (size_t) (end - p);

                eq = memchr(p, '=', n);
                if (eq && eq != p && !shell_skip(p, (size_t) (eq - p))) {
                        char *k = xstrndup(p, (size_t) (eq - p));
                        json_t *v = json_stringn(eq + 1, n - (size_t) (eq - p) - 1);
                        if (v)
                                json_object_set_new(e, k, v);
                        free(k);
                }
                p += n + 1;
        }
        *cwd = xstrndup(blob, (size_t) (nul - blob) - 1);
        *env = e;
        return 0;
}
