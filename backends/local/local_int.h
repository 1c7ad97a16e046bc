/* local_int.h — what the files of the local backend share (local.c: the ops and sandboxes;
 * local_exec.c: execs on the host; local_file.c: file.read / file.write). Not for other
 * modules. Loop thread only. */
#ifndef SANDBOXD_LOCAL_LOCAL_INT_H
#define SANDBOXD_LOCAL_LOCAL_INT_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/spawn.h"

struct cgroup;

struct backend_sandbox {
        char *workdir;
        struct cgroup *cg;
        struct spawn_limits limits;
        bool use_limits;
        struct backend_identity who;
};

/* Execs on the host (local_exec.c). */
void local_exec_init(uv_loop_t *loop, uint64_t drain_ms);
int local_exec_start(struct backend_sandbox *b, const struct exec_spec *spec,
                     const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                     struct sbx_error *err);
/* A child reaped by the SIGCHLD handler: true when it was an exec's leader (then handled). */
bool local_exec_reaped(pid_t pid, int status);

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
