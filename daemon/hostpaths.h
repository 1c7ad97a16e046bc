/* hostpaths.h — the host paths a judgement needs, resolved before it: as the caller, in
 * helpers (caller_path_resolve_nearest), off the loop, each bounded by [limits]
 * file_timeout_s. A bind source below a FUSE or network mount that never answers then fails
 * the request that named it, naming the path, instead of stalling the daemon for everyone;
 * and the daemon never resolves a path a client named with its own rights.
 *
 * Use: judge once with policy_ctx.host_paths and host_paths_wanted empty objects
 * (nothing is looked up; what the judgement would resolve is collected), resolve what is
 * wanted, judge again with the answers. Loop thread only. */
#ifndef SANDBOXD_HOSTPATHS_H
#define SANDBOXD_HOSTPATHS_H

#include <jansson.h>

#include "backends/backend.h"
#include "policy/policy.h"

/* The most paths one request may have resolved (-32004 {limit: "host_paths_per_request"}
 * beyond). One uid's requests have at most [limits]
 * max_path_lookups_per_uid at a time: each is a helper process of that uid for up to
 * file_timeout_s, however many requests name hung paths. */
#define HOSTPATHS_MAX 64

/* A judgement: fills out with host_paths and wanted as policy_ctx.host_paths and
 * host_paths_wanted (wanted may be NULL). */
typedef void (*hostpaths_eval_fn)(void *ctx, json_t *host_paths, json_t *wanted,
                                  struct policy_result *out);
/* Its outcome: r (cleared after the call: move what is kept) with the paths it was judged
 * with (borrowed), or err (r and paths NULL; the callee may move it, hostpaths_fail): -32005
 * naming the path that did not answer, or -32004 {limit, value} for a request past
 * max_path_lookups_per_uid or HOSTPATHS_MAX. */
typedef void (*hostpaths_judged_fn)(void *ctx, struct policy_result *r, json_t *paths,
                                    struct sbx_error *err);

struct conn;

/* Judges once with nothing resolved, resolves what that named as who, judges again with the
 * answers: done is called exactly once, at once when no host path is named. c (borrowed, may
 * be NULL: no client) is the connection that asked: when it closes, the lookups end at once
 * (their helpers killed, their slots free) and done follows from the loop with -32005. */
void hostpaths_judge(struct conn *c, const struct backend_identity *who, hostpaths_eval_fn eval,
                     hostpaths_judged_fn done, void *ctx);

/* The error a request whose host paths were not resolved fails with: err (hostpaths_judged_fn's,
 * moved into out) with "cannot judge WHAT: " before its message, and a -32005's data {backend,
 * detail}. */
void hostpaths_fail(struct sbx_error *out, struct sbx_error *err, const char *backend,
                    const char *what);

/* Ends every resolution still waiting (the daemon stops): its callback follows at once, with
 * an error. */
void hostpaths_shutdown(void);

#endif
