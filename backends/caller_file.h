/* caller_file.h — reading a small file a client named, with the client's rights.
 *
 * A daemon running as root must never open a path a client gave it with its own rights (that
 * would hand out /root/.ssh/id_ed25519 or the host keys to anyone who can name them). This
 * reads such a file in a helper process that has become the caller first (spawn_fork_as), and
 * passes the bytes back through a memfd; the daemon never opens the path itself. A daemon that
 * is not root reads as itself (its rights are then the caller's, or less for a root caller).
 *
 * Only regular files, at most max bytes, never blocking the loop: the helper is killed after
 * timeout_ms (a file on a dead network mount) and the read fails. Loop thread only.
 */
#ifndef SANDBOXD_CALLER_FILE_H
#define SANDBOXD_CALLER_FILE_H

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

#endif
