/* shell.h — the shell wrapper that gives `command` execs terminal-like state: the working
 * directory and exported variables left by one exec are the starting point of the next.
 *
 * The wrapper runs the command with `eval` in the shell itself (so `cd` and `export` take
 * effect), and an EXIT trap writes the final state to a file: `pwd -P`, a NUL, then `env -0`.
 * It works with bash, dash and busybox ash (all have `env -0` through coreutils or busybox).
 * Pure; used by every backend that runs commands through a shell.
 */
#ifndef SANDBOXD_SHELL_H
#define SANDBOXD_SHELL_H

#include <jansson.h>
#include <stddef.h>

/* Builds the argv (new, NULL-terminated, free with shell_argv_free) that runs command through
 * shell; when state_path is non-NULL the final cwd and environment are written there. */
char **shell_wrap(const char *shell, const char *command, const char *state_path);
/* Frees an argv from shell_wrap. */
void shell_argv_free(char **argv);
/* Parses a state blob written by the wrapper. On success *cwd (new) and *env (new object of
 * strings, without PWD, OLDPWD, SHLVL, _) are set; returns -EINVAL for a malformed blob. */
int shell_state_parse(const char *blob, size_t len, char **cwd, json_t **env);

#endif
