/* local_int.h — what the files of the local backend share (local.c: the ops and sandboxes;
 * local_exec.c: execs on the host; local_file.c: file.read / file.write; nsbox*.c: isolated
 * sandboxes, nsbox.h). Not for other modules. Loop thread only. */
#ifndef SANDBOXD_LOCAL_LOCAL_INT_H
#define SANDBOXD_LOCAL_LOCAL_INT_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/spawn.h"

struct cgroup;
struct nsbox;
struct local_create;

struct backend_sandbox {
        char *id;
        char *workdir;
        char *fresh; /* the workdir made for it in its state directory (removed at destroy) */
        struct cgroup *cg;
        struct spawn_limits limits;
        bool use_limits;
        struct backend_identity who; /* its owner */
        struct nsbox *nb;            /* isolation "namespaces"; NULL: on the host */
        struct local_create *creating;
        bool network_host;
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

/* Where a file op of an isolated sandbox runs: in its namespaces, as its identity. */
struct local_file_ns {
        int userns, mntns;
        struct backend_identity who; /* borrowed groups */
        bool set_groups;
};
/* Whether b is isolated; then *ns says where its file ops run (-1 fds: it is gone). */
bool local_file_ns(struct backend_sandbox *b, struct local_file_ns *ns);

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
