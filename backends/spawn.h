/* spawn.h — start one process tree leader for the local (and singularity) backend.
 *
 * The child gets its own session and process group (setsid), a complete environment (nothing
 * inherited), the caller's identity when the daemon is root (setgroups/setgid/setuid with the
 * caller's supplementary groups, then verified), rlimits, optional cgroup placement, a cwd, and
 * either pipes or a pty for stdio. Every fd it does not need is closed. Failures before exec
 * (chdir, setuid, execve, …) are reported synchronously through a CLOEXEC error pipe, so the
 * caller gets "cwd '/x' does not exist" instead of a mysterious exit code.
 *
 * Called on the loop thread; never blocks longer than the fork+exec handshake.
 */
#ifndef SANDBOXD_SPAWN_H
#define SANDBOXD_SPAWN_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "protocol/error.h"

struct spawn_limits {
        uint64_t as_bytes; /* RLIMIT_AS, 0 = leave */
        uint64_t nproc;    /* RLIMIT_NPROC, 0 = leave */
        uint64_t cpu_s;    /* RLIMIT_CPU, 0 = leave */
        uint64_t nofile;   /* RLIMIT_NOFILE, 0 = leave */
};

struct spawn_opts {
        const char *path; /* the program; NULL: argv[0], looked up in envp's PATH when it has
                           * no '/' (a shell runs as path with argv[0] its plain name) */
        char *const *argv;
        char *const *envp;                  /* complete environment */
        const char *cwd;                    /* NULL: leave as is (the daemon's cwd is "/") */
        const struct backend_identity *who; /* NULL: keep the daemon's identity */
        bool pty;                  /* stdin, stdout and stderr all on the terminal (also without
                                    * stdin_pipe), which is the child's controlling tty */
        unsigned short rows, cols; /* 0: leave the size unset */
        bool stdin_pipe;           /* false: stdin is /dev/null (immediate EOF); in pty mode:
                                    * whether res->stdin_fd (a dup of the master) is returned */
        bool merge_stderr;         /* stderr onto the stdout pipe (pipes mode only) */
        const struct spawn_limits *limits; /* may be NULL */
        const char *const *cgroup_procs;   /* NULL-terminated cgroup.procs files to join */
        int keep_fd; /* an extra fd (> 2) the child keeps at the same number (its
                      * FD_CLOEXEC is cleared in the child), -1 none */
};

struct spawn_result {
        pid_t pid;     /* also the process group id and session id */
        int stdin_fd;  /* write end, -1 if none; non-blocking, CLOEXEC. In pty mode a dup of
                        * the master: closing it is no EOF, write the VEOF byte (^D) */
        int stdout_fd; /* read end (the pty master in pty mode); non-blocking, CLOEXEC */
        int stderr_fd; /* read end, -1 in pty or merge mode */
};

/* Starts the process. Returns 0 and fills *res, or negative errno with err set to a message
 * naming the failing step and the path/program ("cwd '/nope': No such file or directory",
 * "cannot execute 'foo': not found in PATH (/usr/bin:/bin)"), code -32602 (param "cwd"/"argv")
 * for client mistakes, -32005 (data.backend "local") otherwise. PATH defaults to
 * /usr/bin:/bin when envp has none. The child is not reaped: the caller must waitpid() it
 * (libuv only reaps children it spawned itself); on failure it has been reaped already.
 * With who set and the daemon not root, who->uid must be the daemon's uid (else -EPERM). */
int spawn_start(const struct spawn_opts *o, struct spawn_result *res, struct sbx_error *err);

/* Every child started afterwards (spawn_start) gets soft RLIMIT_NOFILE = soft when its
 * inherited soft limit is higher: the daemon raises its own soft limit to the hard one at
 * start and gives the original back to the commands it runs. Call before the first spawn. */
void spawn_set_child_nofile(uint64_t soft);
/* That soft limit, 0 when none was set. */
uint64_t spawn_child_nofile_soft(void);
/* Default dispositions for every signal (the mask is left as it is), for other children of
 * the daemon that set themselves up before an exec (nsbox.c). Async-signal-safe. */
void spawn_child_reset_signals(void);

#define SPAWN_MAX_KEEP 4

/* Forks a child that becomes who (NULL: keeps the daemon's identity; see spawn_start for the
 * rules), changes to "/", closes every descriptor above 2 except keep[0..nkeep) (at most
 * SPAWN_MAX_KEEP) and runs fn(arg), whose return value is its exit code. For jobs of ours done
 * as the caller (file.read / file.write on the local backend). fn runs in a fork of the daemon:
 * async-signal-safe calls only. Returns 0 and *pid as soon as the child has its identity —
 * never waits for fn; the caller reaps the child (waitpid) — or negative errno when the child
 * could not become who (reaped already, fn did not run) or fork failed. */
int spawn_fork_as(const struct backend_identity *who, int (*fn)(void *arg), void *arg,
                  const int *keep, size_t nkeep, pid_t *pid);

/* Children started with uv_spawn, which libuv reaps itself (its exit_cb never comes when another
 * waitpid took the child): registered right after uv_spawn, forgotten in the exit_cb. */
void spawn_uv_child_add(pid_t pid);
void spawn_uv_child_del(pid_t pid);
/* For a reaper of every child (the local backend is a child subreaper): waitpid(-1, status,
 * WNOHANG) that leaves libuv's children alone. The pid reaped, or 0 when none is waiting. */
pid_t spawn_reap_other(int *status);

#endif
