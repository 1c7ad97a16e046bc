/* shell.h — the shell wrapper that gives `command` execs terminal-like state: the working
 * directory, exported variables and (bash) exported functions left by one exec are the
 * starting point of the next.
 *
 * The command string is run as `SHELL -c COMMAND` with argv[0] the shell's plain name (the
 * caller executes the configured path), so `$0`, `$#`, line numbers and error messages are
 * those of a bare `bash -c` (or `sh -c`) typed in a terminal. An EXIT trap, set before the command
 * runs, writes the final state to a file with shell builtins only (no process is started to
 * capture it): bash gets the trap from a start-up file (BASH_ENV, shell_init.h), any other
 * POSIX shell from a short prefix on the command's first line (`trap … EXIT;unset …;`), which
 * leaves line numbers alone and which dash and busybox ash never quote in a message. The trap
 * itself travels in the environment (SANDBOXD_TRAP), and is unset before the command runs.
 *
 * The state file holds NUL-terminated fields: "sandboxd-state 2", the layout that wrote it
 * ("bash" or "sh"), `pwd -P`'s output, the directory the shell was in when that directory was
 * removed, `export -p`, (bash) `declare -fx`, and "end". shell_state_parse() reads it.
 *
 * Pure: no I/O. Used by the daemon for every backend that runs commands through a shell.
 */
#ifndef SANDBOXD_SHELL_H
#define SANDBOXD_SHELL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "backends/shell_init.h"

/* The longest "NAME=value" a program can be given (Linux MAX_ARG_STRLEN less the NUL). */
#define SHELL_VAR_MAX 131071u
/* The most exported variables a sandbox keeps (the docker agent takes 8192 per exec). */
#define SHELL_VARS_MAX 4096u

enum shell_kind {
        SHELL_PICK = 0, /* not known yet (a fresh container): bash when it has one, else sh */
        SHELL_BASH,     /* bash, run as bash: the BASH_ENV layout */
        SHELL_SH,       /* any other POSIX shell (dash, busybox ash, bash as sh): the prefix */
};

/* One `command` exec. */
struct shell_exec {
        enum shell_kind kind;
        const char *name;       /* argv[0]: $0 and the name in its messages ("bash", "dash",
                                   "sh"); NULL: "bash" or "sh", run by PATH (remote) */
        const char *command;    /* the caller's command string */
        const char *state_path; /* where the state goes; NULL: no state (a background exec) */
        const char *bash_init;  /* the start-up file with SHELL_BASH_INIT (BASH and PICK) */
};

/* Builds the argv (new, NULL-terminated, free with shell_argv_free) that runs x->command, and
 * adds to env (object of strings, modified in place) what the wrapper needs: SANDBOXD_TRAP,
 * BASH_ENV (a caller's own BASH_ENV moves to SANDBOXD_BASH_ENV and is given back). The caller
 * executes its configured shell with this argv, or argv[0] by PATH. */
char **shell_wrap(const struct shell_exec *x, json_t *env);
/* Whether x->command cannot change the shell state, so that it can run as a bare `SHELL -c`
 * with no trap and nothing to read back: one simple command of plain literal words
 * ([A-Za-z0-9_./:@%+,=-], no quoting or expansion), whose first word has no '=' and is
 * neither a builtin or keyword that sets variables or the directory (cd, export, read, .,
 * eval, …) nor a function the environment exports, with no BASH_ENV of the caller's to read,
 * in bash, dash, busybox ash or a remote sh. Anything else keeps the state. */
bool shell_stateless(const struct shell_exec *x, json_t *env);
/* Frees an argv from shell_wrap. */
void shell_argv_free(char **argv);
/* The kind of shell for a configured shell path: SHELL_BASH when it is called "bash". */
enum shell_kind shell_kind_of(const char *path);
/* The entries of envp (borrowed, into out, which has room for all of them) that a wrapper
 * running in /bin/sh would drop before the command starts, because their names are no shell
 * names: bash's BASH_FUNC_f%% of exported functions. A wrapper hands them to the command
 * as `env NAME=VALUE… COMMAND…`; none when argv[0] has a '=' (env would take it for one),
 * nor an empty name or one that starts with '-' (an option). Returns how many. */
size_t shell_env_carried(char *const *argv, char *const *envp, char **out);
/* Where bash's start-up file is inside a sandbox for an exec whose state goes to state_path:
 * SHELL_BASH_INIT_NAME in the same directory (new). The agent or the backend's wrapper writes
 * it there when it is missing. */
char *shell_bash_init_path(const char *state_path);
/* The last component of path (borrowed from it). */
const char *shell_basename(const char *path);

/* A state file, parsed. */
struct shell_state {
        enum shell_kind kind; /* the layout that wrote it: SHELL_BASH or SHELL_SH */
        char *cwd;            /* new; NULL when the shell could not tell */
        char *gone;           /* new; the removed directory the shell was in, or NULL */
        json_t *env;          /* new; exported variables and BASH_FUNC_name%% functions */
};

/* Parses a state file of len bytes. Returns 0 and fills *st, or -EINVAL (malformed or cut
 * short), -E2BIG (over SHELL_STATE_MAX, a variable over SHELL_VAR_MAX, more than
 * SHELL_VARS_MAX variables) with *why (new) saying what, in a sentence. PWD, OLDPWD, SHLVL and
 * _ are not kept: the shell sets them itself. */
int shell_state_parse(const char *blob, size_t len, struct shell_state *st, char **why);
/* Frees what a parse filled in; accepts a zeroed state. */
void shell_state_clear(struct shell_state *st);
/* Whether name[0..len) is a shell variable name ([A-Za-z_][A-Za-z0-9_]*): the names a shell
 * can export. Any other name in an environment passes through a shell unchanged (bash) or is
 * dropped by it (dash), so the daemon carries those over itself. */
bool shell_name_valid(const char *name, size_t len);

#endif
