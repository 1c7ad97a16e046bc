/* shell_init.h — what the shell-state wrapper (backends/shell.c) shares with sandboxd-agent
 * (backends/agent/prog/exec.c), which provides the bash start-up file inside a sandbox. Plain
 * constants, no dependencies: the agent is a static libc-only program.
 */
#ifndef SANDBOXD_SHELL_INIT_H
#define SANDBOXD_SHELL_INIT_H

/* The largest shell state (cwd, exported variables and functions) a backend reads back; a
 * bigger one is reported as too big (exec_exit.state_too_big, AGENT_EXIT_STATE_BIG) and not
 * kept. Below the agent's message limit with room for its header. */
#define SHELL_STATE_MAX (960u << 10)

/* bash reads this file first (BASH_ENV) in a `command` exec that keeps shell state: it sets the
 * EXIT trap that writes the state (the trap's text comes in SANDBOXD_TRAP) and gives back a
 * BASH_ENV of the caller's own, which the daemon passed as SANDBOXD_BASH_ENV. The command
 * string itself stays exactly the caller's, so bash reports errors as `bash -c` would. */
#define SHELL_BASH_INIT                                                                            \
        "__sbx_k=bash; trap -- \"$SANDBOXD_TRAP\" EXIT; unset SANDBOXD_TRAP BASH_ENV\n"            \
        "[ -z \"${SANDBOXD_BASH_ENV+x}\" ] || { export BASH_ENV=\"$SANDBOXD_BASH_ENV\"; "          \
        "unset SANDBOXD_BASH_ENV; [ ! -r \"$BASH_ENV\" ] || . \"$BASH_ENV\"; }\n"

/* The start-up file's name in the directory of the state files. Inside a sandbox that is not
 * the host (the backend's runtime directory, sandbox_info.runtime_dir) the agent or the
 * backend's own wrapper writes it there when it is missing, before it starts a shell-state
 * exec. */
#define SHELL_BASH_INIT_NAME "init.bash"

#endif
