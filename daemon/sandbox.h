/* sandbox.h — the sandbox registry: create (through policy, approval and a backend), lookup by
 * owner, default sandbox per caller, idle/lifetime expiry, destroy. Loop thread only.
 * struct sandbox is a plain carrier read by proc*.c and files.c; daemon/sandbox*.c own its lifetime
 * (refcounted: a running exec holds a reference). Files: see sandbox_int.h. */
#ifndef SANDBOXD_SANDBOX_H
#define SANDBOXD_SANDBOX_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/shell.h"
#include "daemon/conn.h"
#include "protocol/list.h"

enum sandbox_state {
        SANDBOX_CREATING,
        SANDBOX_READY,
        SANDBOX_DESTROYING,
        SANDBOX_GONE,
};

struct sandbox {
        struct list node;
        int refs;
        char id[24];
        char *name;
        uid_t owner;
        struct backend_identity who; /* owner identity for the backend (groups owned) */
        const struct backend_ops *ops;
        unsigned caps; /* of this sandbox (backend_caps of its spec) */
        struct backend_sandbox *bsb;
        enum sandbox_state state;
        json_t *spec;     /* the create params as given (owned) */
        json_t *env;      /* sandbox env (object of strings, owned) */
        json_t *findings; /* policy findings at create (owned) */
        json_t *enforced; /* limits really enforced (owned, may be NULL) */
        json_t *details;  /* backend details (owned, may be NULL) */
        char *workdir;
        char *home; /* the HOME its execs get when the backend reports one (sandbox_home) */
        char *image;
        char *state_dir;
        char *runtime_dir; /* inside, for shell-state files (sandbox_info); NULL on the host */
        char *isolation;   /* shown in the sandbox object (sandbox_info); may be NULL */
        bool recreated;    /* made anew at a re-adoption (sandbox_info) */
        bool host_access;
        uint64_t created_wall_ms;
        uint64_t last_activity_ms; /* monotonic */
        uint64_t timeout_s, idle_timeout_s;
        unsigned running; /* execs not yet exited */
        /* Shell state for command execs. */
        char *cwd;                  /* NULL: workdir */
        json_t *shell_env;          /* NULL: not captured yet */
        enum shell_kind shell_kind; /* not local: the shell its container has, once known */
        bool shell_dir_made;        /* local: its state files' directory exists */
        json_t *approvals;          /* session approvals: policy approval set (owned) */
        /* Foreground command execs carry shell state, so they run one at a time, in order,
         * like commands typed into one terminal. */
        bool shell_busy;
        struct list shell_queue;
        struct list waiters; /* requests waiting for CREATING to finish */
        bool recreating;     /* CREATING again: its container vanished (sandbox_recreate) */
        bool kept;           /* GONE at shutdown but alive in its backend (re-adopted later) */
        struct sandbox_destroy *destroying; /* a destroy waiting for its execs, or NULL */
        /* The backend's link while READY (backend_upcalls): NULL ready, "reconnecting" or
         * "lost", shown as the sandbox's state. */
        const char *link;
        char *link_reason;
};

/* A sandbox as recorded in the state directory (records.c), for sandbox_adopt. All borrowed. */
struct sandbox_record {
        const char *id;
        const char *name;
        const struct backend_ops *ops;
        uid_t uid;
        gid_t gid;
        const gid_t *groups;
        size_t ngroups;
        json_t *spec;     /* the sandbox's spec as kept in struct sandbox */
        json_t *findings; /* may be NULL */
        bool host_access;
        uint64_t created_wall_ms;
        json_t *record; /* what the backend's save() returned */
};

/* Called with the ready sandbox (borrowed; take a ref to keep it) or an error. */
typedef void (*sandbox_ready_cb)(void *ctx, struct sandbox *sb, struct sbx_error *err);

/* Finds a sandbox of uid by id or name; root may see every sandbox. NULL: not found. */
struct sandbox *sandbox_find(uid_t uid, const char *id_or_name);
/* Resolves the caller's default sandbox, creating it from the configuration on first use. */
void sandbox_default(struct conn *c, sandbox_ready_cb cb, void *ctx);
/* What sandbox_default would make for c with backend (borrowed; NULL: the configured one),
 * without making it: cb gets a sandbox in state CREATING that is not registered (borrowed for
 * the call: its owner, identity, spec, caps, env, host access, and the workdir the backend's
 * preview_workdir finds, NULL when it cannot tell), for judging a command as an exec in it
 * would be. cb may come before this returns; an error (unknown backend, too many previews
 * waiting for uid) comes with sb NULL. */
void sandbox_preview_default(struct conn *c, const char *backend, sandbox_ready_cb cb, void *ctx);
/* What backend (borrowed) would refuse up front in a sandbox.create of params (borrowed) by
 * c's peer, beyond the policy (backend_ops.check_spec): 0, or -1 with err as the create
 * would fail. */
int sandbox_preview_spec(struct conn *c, const char *backend, json_t *params,
                         struct sbx_error *err);
void sandbox_ref(struct sandbox *sb);
void sandbox_unref(struct sandbox *sb);
/* The HOME execs in sb get (borrowed): the one its backend reported, else the owner's; NULL
 * when it is not known (a preview of a BACKEND_CAP_OWN_HOME backend's sandbox). */
const char *sandbox_home(const struct sandbox *sb);
/* Marks activity (exec start/end) for the idle timeout. */
void sandbox_touch(struct sandbox *sb);
/* The sandbox object of protocol §4 (new). */
json_t *sandbox_json(const struct sandbox *sb, bool reused);
/* Counts. */
unsigned sandbox_count(void);
unsigned sandbox_count_uid(uid_t uid);
/* Starts the expiry timer. */
void sandbox_init(uv_loop_t *loop);
/* Destroys every sandbox (shutdown) and cancels creates in progress; cb when all are gone.
 * Sandboxes that outlive the daemon are kept (GONE for the daemon) until sandbox_shutdown. */
void sandbox_destroy_all(void (*cb)(void *ctx), void *ctx);
/* Frees the kept sandboxes, once the backends have shut down (no upcall can come any more). */
void sandbox_shutdown(void);
/* Calls fn for every sandbox in the registry, in creation order (fn must not destroy). */
void sandbox_foreach(void (*fn)(struct sandbox *sb, void *ctx), void *ctx);
/* Whether sb outlives the daemon: its backend can save and re-adopt it (docker). */
bool sandbox_persistent(const struct sandbox *sb);
/* Registers a recorded sandbox as creating and re-adopts it through its backend's adopt (the
 * spec is not judged again: it was when created). cb gets the ready sandbox, or the error and
 * the sandbox is gone. */
void sandbox_adopt(const struct sandbox_record *r, sandbox_ready_cb cb, void *ctx);
/* Replaces the backend sandbox of sb, whose container vanished or stopped, by a new one made
 * from its spec: the old one is destroyed, the spec judged again (it must still be allowed, or
 * ask for exactly the findings approved at create), then created. Shell state resets. cb as
 * for sandbox_adopt; a sandbox already recreating just gets cb when that is done. */
void sandbox_recreate(struct sandbox *sb, sandbox_ready_cb cb, void *ctx);
/* Identity of a connection's peer (groups copied; free with sandbox_identity_free). */
void sandbox_identity(struct conn *c, struct backend_identity *who);
void sandbox_identity_free(struct backend_identity *who);

#endif
