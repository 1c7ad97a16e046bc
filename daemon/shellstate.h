/* shellstate.h — a sandbox's shell state for `command` execs (cwd, exported variables and
 * functions, the shell a container turned out to have): how a command exec is started from it
 * (backends/shell.h builds the wrapper) and how the state an exec leaves is taken over, with a
 * note for the caller when it cannot be. Loop thread only; proc*.c is the caller.
 */
#ifndef SANDBOXD_SHELLSTATE_H
#define SANDBOXD_SHELLSTATE_H

#include <jansson.h>
#include <stdbool.h>

#include "backends/backend.h"
#include "daemon/sandbox.h"

/* Picks the local shell ([exec] shell, else /bin/bash, else /bin/sh), writes bash's start-up
 * file into state_dir (world-readable, like the directories above the sandboxes; without it,
 * bash runs with the prefix of other shells and a warning says so). The local backend's state
 * files go to a private directory on a tmpfs ($RUNTIME_DIRECTORY, else /dev/shm; else the
 * sandboxes' state directories), made on the first local command exec and recorded in
 * <state dir>/shell-tmp, so that a daemon that was killed has it removed by the next one. */
void shellstate_init(const char *state_dir, const char *configured_shell);
/* Removes that directory and frees what shellstate_init allocated. */
void shellstate_shutdown(void);

/* Where the wrapper of exec exec_id of sb writes its state (new): for local, a file in a
 * directory of the sandbox's owner (made on first use), for the others one in
 * the sandbox's runtime directory. NULL with err set when the directory cannot be made. */
char *shellstate_path(struct sandbox *sb, const char *exec_id, struct sbx_error *err);
/* Removes the local state directory of sb (when it is destroyed). */
void shellstate_forget(struct sandbox *sb);

/* The environment a command or argv exec of sb starts from before its own `env` (new): the
 * captured one, else the defaults and the sandbox's env. */
json_t *shellstate_base_env(struct sandbox *sb, bool pty);
/* The argv (new; shell_argv_free) of a command exec of sb; env (the exec's full environment)
 * gets what the wrapper needs. *state_path NULL: no state is kept (background); it is set to
 * NULL as well for a command that cannot change the state (shell_stateless), which then runs
 * without the trap. *path (borrowed) is the program to execute for exec_spec.path, or NULL:
 * argv[0]. */
char **shellstate_argv(struct sandbox *sb, const char *command, const char **state_path,
                       json_t *env, const char **path);

/* What an exec that ran with base (shellstate_base_env) and its own exec_env (may be NULL)
 * left in ex: becomes sb's state; the cwd only when keep_cwd (the exec had no cwd of its own).
 * Returns a note for the exec's stderr (new, "sandboxd: …\n") when the state could not be
 * kept, else NULL. Nothing changes when the wrapper wrote no state (the shell was killed, or
 * replaced the EXIT trap). */
char *shellstate_apply(struct sandbox *sb, const struct exec_exit *ex, json_t *base,
                       json_t *exec_env, bool keep_cwd);

/* A command exec could not start because of err. When that is its inherited cwd (left by an
 * earlier command, since removed), moves sb's cwd one directory up and returns true: start it
 * again. *lost (new) keeps the first directory that was missing, for shellstate_cwd_note. */
bool shellstate_cwd_gone(struct sandbox *sb, const struct sbx_error *err, char **lost);
/* A command exec could not start because of err. When that is the shell learnt for sb's
 * container (bash removed from it since), forgets it and returns true: start it again, and
 * the wrapper picks again. */
bool shellstate_shell_gone(struct sandbox *sb, const struct sbx_error *err);
/* The note (new) for an exec that runs elsewhere than the removed directory lost. */
char *shellstate_cwd_note(struct sandbox *sb, const char *lost);

#endif
