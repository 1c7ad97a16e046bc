/* daytona_cmd.h — the shell text sandboxd sends to a Daytona sandbox. Pure.
 *
 * An exec is one asynchronous command of a toolbox session. Daytona writes the text to a file
 * and sources it in the session's shell (bash or sh) with stdin from the command's input FIFO
 * and stdout/stderr into its line labellers. The text built here is a function the session
 * shell runs itself (one fork fewer than a subshell) with every redirection scoped to a
 * command and its variables and functions removed after it, so the session shell keeps no
 * state of it (the command itself is a child), and:
 *   - refuses to start twice (a retried request after a lost answer): the session's guard file
 *     (daytona_cmd_in_session) names the exec from before its start to the session's next
 *     exec, with its pid while it runs (for the tree kill); a re-post in another session (the
 *     sandbox was started again) also reads the guard files of the sessions it went to before;
 *     one file per session whose first line is written over in place (`1<>`), so no file is
 *     created or truncated per exec (either cost up to 1.5 ms on a busy ext4, the rest of the
 *     wrapper about as much);
 *   - checks the working directory and that argv[0] can be found, and says so with a marker;
 *   - gives stdin: none (/dev/null), a file uploaded before, or a relay that reads the input
 *     FIFO line by line, decodes each numbered "d<n> <printf %b escapes>" line into a pipe and
 *     ends at an "e<n>" line, so stdin is binary-safe, has an EOF and survives a retried input
 *     request although the API's input has none of that;
 *   - starts the command in a process group of its own with only the exec's environment: in
 *     bash a job (set -m) whose subshell sets the environment with builtins, else setsid (when
 *     there is one) and env -i;
 *   - writes the end markers of daytona_log.h, with the command's $? and the shell state (od).
 */
#ifndef SANDBOXD_DAYTONA_CMD_H
#define SANDBOXD_DAYTONA_CMD_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/util.h"

enum daytona_stdin {
        DAYTONA_STDIN_NONE,  /* /dev/null */
        DAYTONA_STDIN_FILE,  /* <pidfile>.in, uploaded before the exec */
        DAYTONA_STDIN_RELAY, /* the input endpoint, through the relay */
};

/* Bounds of execve in the sandbox (Linux: MAX_ARG_STRLEN per string, 2 MiB in all by
 * default), checked before anything is sent. */
#define DAYTONA_ARG_MAX  (128u * 1024 - 1)
#define DAYTONA_ARGS_MAX (1536u * 1024)
/* Raw bytes per input line (each becomes at most 5 characters). */
#define DAYTONA_INPUT_CHUNK (8u * 1024)

struct daytona_cmd {
        const char *nonce;   /* the markers' nonce */
        const char *dir;     /* sandboxd's directory in the sandbox */
        const char *exec_id; /* in the guard; names the files in dir: <exec_id>.pid.in, .pid.fifo */
        const char *state;   /* shell state file to hand back, or NULL */
        const char *cwd;     /* may be NULL: the session's */
        enum daytona_stdin in;
        bool merge_stderr;
        char *const *argv; /* NULL-terminated, argv[0] without '=' */
        char *const *envp; /* NULL-terminated "K=V" */
};

/* The session command text (new), posted as daytona_cmd_in_session makes it. */
char *daytona_cmd_build(const struct daytona_cmd *c);
/* <dir>/<id>.pid: the base of an exec's files (exec id: .pid.in, .pid.fifo, and the pid file
 * of its tree kills), or a session's guard file (session id) (new). */
char *daytona_cmd_pidfile(const char *dir, const char *id);
/* The text to post to session session_id for command (daytona_cmd_build's of exec exec_id):
 * with the session's guard file and, on a re-post in another session, the guard files of the
 * sessions it was posted to before (earlier: their ids, NULL-terminated, or NULL) (new). */
char *daytona_cmd_in_session(const char *command, const char *dir, const char *session_id,
                             const char *exec_id, const char *const *earlier);
/* The /process/execute command that signals (mode "signal") or kills (mode "kill", TERM or
 * sig first, KILL after grace_ms) the process tree of exec exec_id, whose pid it takes from
 * the guard file of its session and writes to pidfile for remote_sh_kill; it prints the
 * survivors (new). */
char *daytona_cmd_kill(const char *mode, int sig, const char *guardfile, const char *exec_id,
                       const char *pidfile, unsigned grace_ms);
/* Relay input line number seq (from 1, rising) for len bytes of stdin (at most
 * DAYTONA_INPUT_CHUNK), or the EOF line when data is NULL (new). Numbered, so a line sent
 * twice (a retried request whose first answer was lost) is taken once. */
char *daytona_cmd_input(uint64_t seq, const void *data, size_t len);
/* The command that removes the files of ended execs in dir (ids NULL-terminated; new). */
char *daytona_cmd_cleanup(const char *dir, const char *const *ids);
/* Appends s in POSIX single quotes. */
void daytona_cmd_quote(struct buf *b, const char *s);
/* Checks argv and envp against the execve bounds; NULL, or what is wrong (static text). */
const char *daytona_cmd_check(char *const *argv, char *const *envp);

#endif
