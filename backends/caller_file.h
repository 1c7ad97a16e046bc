/* caller_file.h — reading a small file (or connecting to a Unix socket, or resolving a path) a
 * client named, with the client's rights.
 *
 * A daemon running as root must never open a path a client gave it with its own rights (that
 * would hand out /root/.ssh/id_ed25519 or the host keys to anyone who can name them). This
 * reads such a file in a helper process that has become the caller first (spawn_fork_as), and
 * passes the bytes back through a memfd; the daemon never opens the path itself. A daemon that
 * is not root reads as itself (its rights are then the caller's, or less for a root caller).
 *
 * Only regular files, at most max bytes, never blocking the loop: the helper is killed after
 * timeout_ms (a file on a dead network mount) and the read fails. Loop thread only.
 *
 * A killed helper may live on: one stuck in a hung FUSE or network mount dies only when the
 * mount answers or aborts. So every helper counts against the uid that asked (who's, the
 * daemon's own for NULL) until its process has exited, whatever became of its job (a pidfd
 * per helper, polled on that uid's next start; waitid(WNOWAIT) where pidfd_open fails): a uid
 * with caller_file_set_limits' bound alive gets no new helper, the job fails at once (its
 * callback from the loop; caller_job_refused says why) and no uid fills the pid table.
 */
#ifndef SANDBOXD_CALLER_FILE_H
#define SANDBOXD_CALLER_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "backends/backend.h"

/* The outcome: data (borrowed for the call; NULL on failure) or error, a message naming the
 * path and the uid it was read as ("cannot read '/root/k' as uid 1000: Permission denied").
 * missing is set when the file does not exist (the caller may treat that as empty). */
typedef void (*caller_file_cb)(void *ctx, const char *data, size_t len, const char *error,
                               int missing);

/* Reads path (absolute) as who. cb is called exactly once, never before this returns. */
void caller_file_read(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                      size_t max, unsigned timeout_ms, void *ctx, caller_file_cb cb);

/* The outcome of a connect: fd (a connected AF_UNIX stream socket, O_CLOEXEC, the callee's to
 * close; -1 on failure) or error, a message naming the path and the uid ("cannot connect to
 * '/tmp/a' as uid 1000: Connection refused"; "'/tmp/a' is served by uid 0, not by uid 1000"). */
typedef void (*caller_socket_cb)(void *ctx, int fd, const char *error);

/* Connects to the Unix socket at path (absolute) as who, in a helper like caller_file_read's,
 * and takes the connected socket back (SCM_RIGHTS); the process listening on it must run as
 * who's uid (SO_PEERCRED), whatever path led there: a root daemon never becomes a way into
 * root's or another user's ssh-agent. cb is called exactly once, never before this returns. */
void caller_socket_connect(uv_loop_t *loop, const struct backend_identity *who, const char *path,
                           unsigned timeout_ms, void *ctx, caller_socket_cb cb);

/* The outcome of a resolve: real, where path leads (borrowed for the call), with is_dir, or
 * NULL when who cannot reach it (absent, not searchable, a loop: one answer for all); error
 * (NULL otherwise) when there is no answer: the helper did not finish within timeout_ms (a
 * hung FUSE or network mount), died or could not start — a message naming the path, the uid
 * and the bound ("resolving '/mnt/x' as uid 1000 took longer than 1000 ms (…)"). */
typedef void (*caller_path_cb)(void *ctx, const char *real, bool is_dir, const char *error);

/* A job in progress. */
struct caller_job;

/* Resolves path (absolute) as who in a helper like caller_file_read's: what realpath() and
 * stat() would tell who, without the loop ever touching the path. cb is called exactly once,
 * never before this returns, unless the job is cancelled first. Returns the job (borrowed:
 * valid until cb). */
struct caller_job *caller_path_resolve(uv_loop_t *loop, const struct backend_identity *who,
                                       const char *path, unsigned timeout_ms, void *ctx,
                                       caller_path_cb cb);
/* Like caller_path_resolve, but a missing tail is kept as written (Docker and mkdir -p make
 * it): real is where the nearest existing parent leads, followed by the rest of path; NULL
 * when even that cannot be reached by who. is_dir is false when a tail was missing. */
struct caller_job *caller_path_resolve_nearest(uv_loop_t *loop, const struct backend_identity *who,
                                               const char *path, unsigned timeout_ms, void *ctx,
                                               caller_path_cb cb);
/* Ends a job before its callback (its client is gone): the helper is killed at once and the
 * callback follows from the loop, never before this returns, with why (copied) as its error. */
void caller_job_abort(struct caller_job *j, const char *why);
/* Abandons a job before its callback (daemon shutdown): the helper is killed, its handles
 * close, and no callback follows. */
void caller_job_cancel(struct caller_job *j);

/* Whether j (in its callback) failed because its uid had the bound of helpers alive; *max (may
 * be NULL) is that bound. */
bool caller_job_refused(const struct caller_job *j, unsigned *max);

/* At most max_helpers_per_uid helpers of one uid alive at a time (default 128; [limits]
 * max_helpers_per_uid). */
void caller_file_set_limits(unsigned max_helpers_per_uid);
/* The daemon stops: the helpers still counted are forgotten (their pidfds closed), not waited
 * for. */
void caller_file_shutdown(void);

#endif
