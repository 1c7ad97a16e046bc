/* local_int.h — what the files of the local backend share (local.c: sandboxes and execs;
 * local_file.c: file.read / file.write). Not for other modules. Loop thread only. */
#ifndef SANDBOXD_LOCAL_INT_H
#define SANDBOXD_LOCAL_INT_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"

/* Who a sandbox's file ops run as: the owner when the daemon is root, NULL (the daemon's own
 * identity, which is then the caller's) otherwise. Borrowed. */
const struct backend_identity *local_identity(struct backend_sandbox *b);

/* Sets up file ops: each phase of one (resolving the path, doing the I/O) may take at most
 * timeout_ms before its helper is killed and the op fails. */
void local_file_init(uv_loop_t *loop, uint64_t timeout_ms);
/* Fails the ops still running and forgets their helpers (daemon shutdown). */
void local_file_shutdown(void);
/* A child reaped by the SIGCHLD handler: true when it was a file op's helper (then handled). */
bool local_file_reaped(pid_t pid, int status);

/* The backend_ops entries. */
void local_file_read(struct backend_sandbox *b, const char *path, uint64_t offset, size_t max_bytes,
                     void *ctx, backend_judge_fn judge, backend_read_cb cb);
void local_file_write(struct backend_sandbox *b, const struct backend_file_write *w, void *ctx,
                      backend_judge_fn judge, backend_done_cb cb);

#endif
