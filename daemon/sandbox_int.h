/* sandbox_int.h — what the pieces of the sandbox module (daemon/sandbox*.c) share: a create in
 * progress, the registry's lists, and the functions one file calls in another. Internal to
 * daemon/sandbox*.c; the API is sandbox.h. Loop thread only.
 *
 * Files: sandbox.c (the registry: identity, references, lookup, the sandbox object, waiters,
 * expiry, sandbox.list/get), sandbox_params.c (create params, reuse by name),
 * sandbox_create.c (judgement, approval, the backend's create and its cancel, sandbox.create,
 * the default sandbox), sandbox_preview.c (what policy.check judges against before a sandbox
 * exists), sandbox_budget.c (the docker per-uid budget), sandbox_destroy.c (destroy, shutdown),
 * sandbox_adopt.c (re-adoption, recreate). sandbox_policy.c is the container checks' context. */
#ifndef SANDBOXD_SANDBOX_INT_H
#define SANDBOXD_SANDBOX_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "backends/backend.h"
#include "daemon/conn.h"
#include "daemon/rpc.h"
#include "daemon/sandbox.h"
#include "policy/policy.h"
#include "protocol/list.h"

/* One create in progress. */
struct sandbox_create {
        struct sandbox *sb;
        struct conn *conn; /* referenced; for approval and progress */
        struct policy_result pr;
        struct sandbox_spec spec;
        /* What runs once the spec's volumes and containers are inspected: first judgement or
         * re-judgement. */
        void (*judge)(struct sandbox_create *sc, json_t *facts);
        json_t *facts;      /* held while the host paths are resolved */
        json_t *host_paths; /* resolved before the judgement (hostpaths.h); NULL: none yet */
        /* While the backend creates (or adopts): in sandbox_in_backend; a close of conn
         * cancels it, and so does the shutdown (ended is then told). */
        struct list link;
        struct conn_watch watch;
        void (*ended)(void *ctx);
        void *ended_ctx;
};

/* Every sandbox, in creation order (sandbox.c). */
extern struct list sandbox_all;
/* The creates (and adopts) a backend is working on, which can be cancelled (sandbox.c). */
extern struct list sandbox_in_backend;

/* sandbox.c */
void sandbox_identity_of(uid_t uid, gid_t gid, const gid_t *groups, size_t n,
                         struct backend_identity *who);
void sandbox_notify_waiters(struct sandbox *sb, struct sbx_error *err);
void sandbox_add_waiter(struct sandbox *sb, sandbox_ready_cb cb, void *ctx);
/* New, with the registry's reference; sandbox_alloc_unlisted's is not in the registry. */
struct sandbox *sandbox_alloc_unlisted(json_t *params, const struct backend_ops *ops);
struct sandbox *sandbox_alloc(json_t *params, const struct backend_ops *ops);
struct sandbox *sandbox_new(struct conn *c, json_t *params, const struct backend_ops *ops,
                            const char *name);
void sandbox_seq_above(const char *name);
struct sandbox *sandbox_from_params(struct rpc_req *req, const char *const *keys);
void sandbox_expiry_stop(void);

/* sandbox_params.c (params borrowed) */
int sandbox_validate(json_t *p, struct sbx_error *err);
json_t *sandbox_spec_of(json_t *params, const struct backend_ops *ops);
int sandbox_reuse_check(struct sandbox *sb, json_t *params, const struct backend_ops *ops,
                        struct sbx_error *err);

/* sandbox_create.c: sc is freed by sandbox_create_fail and sandbox_created_cb. */
struct sandbox_create *sandbox_create_new(struct sandbox *sb, struct conn *c);
void sandbox_in_backend_add(struct sandbox_create *sc);
void sandbox_create_fail(struct sandbox_create *sc, struct sbx_error *err);
void sandbox_remove_state_dir(struct sandbox *sb);
void sandbox_created_cb(void *ctx, struct backend_sandbox *bsb, const struct sandbox_info *info,
                        const struct sbx_error *berr);
void sandbox_spec_fields(struct sandbox *sb, struct sandbox_spec *s);
int sandbox_fill_spec(struct sandbox_create *sc, struct sbx_error *err);
void sandbox_start_backend(struct sandbox_create *sc);
bool sandbox_invalid(struct sandbox_create *sc);
/* Judges sb's spec with facts (may be NULL) and host_paths/wanted as policy_ctx's. */
void sandbox_eval_spec(struct sandbox *sb, json_t *facts, json_t *host_paths, json_t *wanted,
                       struct policy_result *r);
/* Whether sb has host access by the judgement r of its spec or by its backend's caps. */
bool sandbox_judged_host_access(struct sandbox *sb, const struct policy_result *r);
/* One judgement of sc's spec with sc->facts (a hostpaths_eval_fn, ctx sc). */
void sandbox_judge_eval(void *ctx, json_t *host_paths, json_t *wanted, struct policy_result *r);
void sandbox_inspect_then(struct sandbox_create *sc,
                          void (*judge)(struct sandbox_create *, json_t *));
json_t *sandbox_default_params(const char *backend);

/* sandbox_budget.c */
int sandbox_docker_budget(const struct sandbox *self, struct sbx_error *err);

/* sandbox_destroy.c */
void sandbox_destroy(struct sandbox *sb, struct rpc_req *req, void (*done)(void *), void *ctx);

#endif
