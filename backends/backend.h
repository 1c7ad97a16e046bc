/* backend.h — the one interface every execution backend implements.
 *
 * Threading: every op is called on the loop thread and every callback is delivered on the loop
 * thread. Ops never block for long (no network round trip, no waiting for a child); anything
 * slow is asynchronous and completes through a callback.
 *
 * Ownership: the daemon owns struct sandbox_spec / exec_spec and everything they point to; a
 * backend copies what it needs to keep past the call. A backend owns its private per-sandbox
 * state (bsb) and per-process state (bproc) and frees them in destroy / after on_exit returns
 * plus release.
 */
#ifndef SANDBOXD_BACKEND_H
#define SANDBOXD_BACKEND_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "protocol/error.h"

struct backend_sandbox; /* backend-private, per sandbox */
struct backend_proc;    /* backend-private, per exec */

/* Who a sandbox or exec acts for (from SO_PEERCRED / SO_PEERGROUPS). */
struct backend_identity {
        uid_t uid;
        gid_t gid;
        gid_t *groups; /* supplementary groups */
        size_t ngroups;
        const char *user; /* login name, may be NULL */
        const char *home; /* home directory, may be NULL */
};

/* Resource limits requested by a client; 0 = not requested. */
struct backend_resources {
        double cpus;
        int64_t memory_mb;
        int64_t pids;
        int64_t disk_mb;
};

/* sandbox.create, validated and merged with defaults by the daemon. */
struct sandbox_spec {
        const char *id;      /* "sbx_…" */
        const char *name;    /* unique per owner */
        const char *image;   /* may be NULL */
        const char *workdir; /* may be NULL: backend default */
        const char *network; /* "none" | "bridge" | "host" | NULL (backend default) */
        json_t *env;         /* object of strings, borrowed, never NULL */
        json_t *labels;      /* object of strings, borrowed, never NULL */
        json_t *mounts;      /* array, borrowed, never NULL */
        json_t *section; /* the backend's own section ("docker": {...}), borrowed, may be NULL */
        struct backend_resources res;
        uint64_t timeout_s;    /* maximum lifetime (0: none); the daemon enforces it, a cloud
                                  backend also hands it to the provider as a backstop */
        const char *state_dir; /* this sandbox's private directory on the host (exists, 0700) */
        const struct backend_identity *owner;
};

/* What a backend reports about a created sandbox. */
struct sandbox_info {
        char *workdir;    /* new; effective working directory */
        char *image;      /* new; may be NULL */
        bool host_access; /* does anything from the host show inside */
        json_t *enforced; /* new; object: limit name -> mechanism ("cgroup", "rlimit", …)
                             or null when requested but not enforceable; may be NULL */
        json_t *details;  /* new; backend-specific extra fields; may be NULL */
};

enum backend_stream {
        BACKEND_STDOUT = 0,
        BACKEND_STDERR = 1,
};

/* One exec, fully resolved by the daemon. */
struct exec_spec {
        const char *exec_id; /* "p_…" */
        char *const *argv;   /* NULL-terminated; for command execs see shell_* below */
        char *const *envp;   /* NULL-terminated "K=V", complete (no inheritance) */
        const char *cwd;     /* absolute, may be NULL: sandbox workdir */
        bool pty;
        unsigned short pty_rows, pty_cols;
        bool stdin_open;        /* keep stdin open for process.write */
        const void *stdin_data; /* initial stdin bytes (closed after unless stdin_open) */
        size_t stdin_len;
        bool merge_stderr; /* stderr goes to the stdout stream */
        /* Shell-state capture: when non-NULL the exec is `command` run through the shell
         * wrapper (backends/shell.h); the backend makes state_path writable for the child and
         * hands the file's content back in exec_exit.state. */
        const char *state_path;
        const struct backend_identity *who;
};

/* How an exec ended. */
struct exec_exit {
        int exit_code;     /* valid when signal == 0 */
        int signal;        /* terminating signal number, 0 if exited normally */
        bool oom_killed;   /* the kernel killed it for memory */
        const char *state; /* shell state captured by the wrapper, borrowed, may be NULL */
        size_t state_len;
        /* Set when the exec could not be started after exec_start returned 0 (the container
         * vanished, the backend connection failed, …): the process never ran, no output was
         * delivered and the other fields are meaningless. Borrowed, NULL normally. */
        const struct sbx_error *error;
};

/* Callbacks from a running exec to the daemon (loop thread). ctx is the daemon's job. */
struct backend_exec_cbs {
        /* Output bytes of one stream, in order. The data is borrowed for the call. */
        void (*on_output)(void *ctx, enum backend_stream stream, const char *data, size_t len);
        /* The process has ended and all its output has been delivered (or the drain grace after
         * the main process ended has passed). Called exactly once; no callback follows. */
        void (*on_exit)(void *ctx, const struct exec_exit *ex);
};

/* Completion of an asynchronous sandbox create. On failure info is NULL and err set. */
typedef void (*backend_create_cb)(void *ctx, struct backend_sandbox *bsb,
                                  const struct sandbox_info *info, const struct sbx_error *err);
/* Completion of destroy / kill_tree / file ops: err NULL on success. */
typedef void (*backend_done_cb)(void *ctx, const struct sbx_error *err);
/* kill_tree completion: survivors is how many processes of the tree are still alive. */
typedef void (*backend_kill_cb)(void *ctx, int survivors, const struct sbx_error *err);
/* file_read completion: data borrowed for the call; size is the file's total size. */
typedef void (*backend_read_cb)(void *ctx, const char *data, size_t len, uint64_t size, bool eof,
                                const struct sbx_error *err);
/* Progress notification while creating (image pull, …). */
typedef void (*backend_progress_cb)(void *ctx, const char *phase, const char *message,
                                    int64_t current, int64_t total);
/* probe completion. */
typedef void (*backend_probe_cb)(void *ctx, bool available, const char *reason, const char *hint,
                                 json_t *details /* steals */);

/* What a file op will really touch, once the backend has resolved the path as the caller. */
struct backend_file_target {
        const char *path; /* absolute, symlinks and ".." resolved */
        bool exists;      /* false: the op creates it */
        unsigned nlink;   /* hard links of the existing file */
};
/* The daemon's answer to a backend_judge_fn: deny NULL means go ahead; otherwise the backend
 * touches nothing and completes the op with deny (borrowed for the call). */
typedef void (*backend_verdict_cb)(void *op, const struct sbx_error *deny);
/* Asks the daemon (ctx: the op's ctx) to judge t before anything is opened for writing or
 * read; done(op, …) may run before this returns or much later (an approval). A backend whose
 * paths are host paths calls it exactly once per op, after resolving and before touching the
 * file, while it holds what it resolved (so what is judged is what is opened); backends whose
 * paths live in an isolated sandbox may skip it (the daemon judged the requested path). */
typedef void (*backend_judge_fn)(void *ctx, const struct backend_file_target *t,
                                 backend_verdict_cb done, void *op);

struct backend_file_write {
        const char *path;
        const void *data;
        size_t len;
        int mode; /* -1: default 0644 for new files */
        bool append;
        bool mkdir;
};

struct backend_ops {
        const char *name;

        /* Process-wide setup with the daemon's [backend.NAME] config section (object of strings,
         * may be empty), to which the daemon adds "instance" (its state directory, unless the
         * section sets one) and "drain_grace_ms" ([exec] drain_grace_ms). Fails only for
         * configuration errors. */
        int (*init)(uv_loop_t *loop, json_t *config, struct sbx_error *err);
        /* Whether the backend can be used now; the answer arrives through cb. */
        void (*probe)(void *ctx, backend_probe_cb cb);

        /* Creates a sandbox. progress may be called any number of times before cb. */
        void (*create)(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
                       backend_create_cb cb);
        /* What the backend needs to re-adopt this sandbox after a daemon restart (new object),
         * or NULL when it cannot be re-adopted (local sandboxes are simply recreated). */
        json_t *(*save)(struct backend_sandbox *bsb);
        /* Re-adopts a sandbox from save()'s record (borrowed); cb as for create. May be NULL. */
        void (*adopt)(const struct sandbox_spec *spec, json_t *record, void *ctx,
                      backend_create_cb cb);
        /* Destroys a sandbox; its execs have been killed by the daemon already. bsb is freed. */
        void (*destroy)(struct backend_sandbox *bsb, void *ctx, backend_done_cb cb);

        /* Starts an exec. On success *ret holds the handle and cbs will be called later; on
         * failure (bad cwd, no such program, …) returns negative errno and sets err. */
        int (*exec_start)(struct backend_sandbox *bsb, const struct exec_spec *spec,
                          const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                          struct sbx_error *err);
        /* Queues stdin bytes; eof closes stdin after them. Fails with -EPIPE if closed. */
        int (*exec_write)(struct backend_proc *p, const void *data, size_t len, bool eof);
        /* Sends sig to the exec's whole process tree. */
        int (*exec_signal)(struct backend_proc *p, int sig);
        /* TERM, grace_ms, KILL the whole tree; cb once nothing is left (or it gave up). */
        void (*exec_kill)(struct backend_proc *p, unsigned grace_ms, void *ctx, backend_kill_cb cb);
        /* Backpressure: stop / restart reading the exec's output. */
        void (*exec_pause)(struct backend_proc *p);
        void (*exec_resume)(struct backend_proc *p);
        int (*exec_resize)(struct backend_proc *p, unsigned short rows, unsigned short cols);
        /* Frees the handle after on_exit was delivered. */
        void (*exec_release)(struct backend_proc *p);

        /* File ops refuse what is not a regular file and never block the loop; judge: see
         * backend_judge_fn. */
        void (*file_read)(struct backend_sandbox *bsb, const char *path, uint64_t offset,
                          size_t max_bytes, void *ctx, backend_judge_fn judge, backend_read_cb cb);
        void (*file_write)(struct backend_sandbox *bsb, const struct backend_file_write *w,
                           void *ctx, backend_judge_fn judge, backend_done_cb cb);

        /* Start-up, after re-adoption: removes what this daemon instance (config key
         * "instance") left on the backend for sandboxes it has no record of, i.e. whose id is
         * not in known_ids (NULL-terminated, borrowed for the call). cb gets how many were
         * removed. Called only when probe says the backend is available. May be NULL. */
        void (*reap_orphans)(const char *const *known_ids, void *ctx,
                             void (*cb)(void *ctx, int removed, const struct sbx_error *err));

        /* Daemon shutdown: release process-wide resources. May be NULL. */
        void (*shutdown)(void);
};

/* Registry (backend.c). Names in protocol order. */
const struct backend_ops *backend_lookup(const char *name);
/* Every known backend, NULL-terminated. */
const struct backend_ops *const *backend_all(void);

extern const struct backend_ops local_backend_ops;

#endif
