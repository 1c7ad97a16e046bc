/* remote_sh.h — small POSIX sh programs that backends run inside a sandbox they reach only
 * through "run this argv" (a container, a cloud sandbox): signalling or killing an exec's whole
 * process tree, and reading or writing a file. They need only sh, kill, sleep, cat, wc, tail,
 * head, mkdir and chmod (coreutils or busybox). The programs are pure (argv layouts are given
 * with each); remote_sh_signal and remote_sh_kill_tree run the kill through a backend's helper
 * exec (loop thread only).
 */
#ifndef SANDBOXD_REMOTE_SH_H
#define SANDBOXD_REMOTE_SH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "protocol/error.h"

/* argv: sh -c remote_sh_kill MODE SIG PIDFILE STEPS, MODE "signal" or "kill", SIG a signal
 * number, PIDFILE holding the pid of the exec (whose descendants, process group and session
 * are its tree), STEPS the grace before SIGKILL in 50 ms steps. Prints the survivors. */
extern const char remote_sh_kill[];

/* That argv, built in a (which holds its strings). */
struct remote_sh_kill_argv {
        char sig[16], steps[16];
        char *argv[8];
};
void remote_sh_kill_args(struct remote_sh_kill_argv *a, const char *mode, int sig,
                         const char *pidfile, unsigned grace_ms);

/* A helper exec's end: its exit code and stdout (borrowed), or err when it could not run. */
typedef void (*remote_sh_helper_cb)(void *ctx, int exit_code, const char *out, size_t len,
                                    const struct sbx_error *err);

/* What a backend lends a kill: its helper exec (argv borrowed, run in sb, stdout collected) and
 * a reference on the exec (obj) that the kill holds until the helper's end. */
struct remote_sh_kill_ops {
        void (*helper)(struct backend_sandbox *sb, char *const *argv, const void *in, size_t inlen,
                       void *ctx, remote_sh_helper_cb cb);
        void (*ref)(void *obj);
        void (*unref)(void *obj);
};

/* Sends sig to the tree of exec obj in sb, whose pid is in pidfile (borrowed): backend_proc_ops
 * signal, the outcome not awaited. */
void remote_sh_signal(const struct remote_sh_kill_ops *ops, struct backend_sandbox *sb, void *obj,
                      const char *pidfile, int sig);
/* TERM, grace_ms, KILL of that tree: backend_proc_ops kill; cb gets the survivors, or -1 and the
 * error when the helper could not run. */
void remote_sh_kill_tree(const struct remote_sh_kill_ops *ops, struct backend_sandbox *sb,
                         void *obj, const char *pidfile, unsigned grace_ms, void *ctx,
                         backend_kill_cb cb);

/* argv: sh -c remote_sh_read PATH OFFSET+1 MAX: prints the file's size on a line, then up to
 * MAX bytes from OFFSET. Fails (exit != 0) when PATH is not a regular file. */
extern const char remote_sh_read[];

/* Splits remote_sh_read's output: 0 with the file's *size and the bytes read (borrowed from
 * out), or -EINVAL when it is not that output. */
int remote_sh_read_parse(const char *out, size_t len, uint64_t *size, const char **data,
                         size_t *dlen);

/* argv: sh -c remote_sh_write PATH MODE|- APPEND(0|1) MKDIR(0|1), the content on stdin.
 * Exits REMOTE_SH_NOT_REGULAR when PATH exists and is not a regular file (a FIFO would block
 * the writer forever). */
#define REMOTE_SH_NOT_REGULAR 21
extern const char remote_sh_write[];
/* Sets err for remote_sh_write's own exit codes (REMOTE_SH_NOT_REGULAR); false for others. */
bool remote_sh_write_error(struct sbx_error *err, const char *path, int code);

/* argv: sh -c remote_sh_mkdir_parent PATH. */
extern const char remote_sh_mkdir_parent[];

#endif
