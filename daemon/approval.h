/* approval.h — turns a policy verdict into allow/deny for one request (protocol §3, §6):
 * DENY stays deny; ASK on a sandbox without host access follows ask_isolated; otherwise ASK is
 * settled by memory (session approvals of the sandbox, persisted "always" approvals of the
 * caller's uid), by the connection's role, or by an approval.request to an interactive client
 * with a timeout. Every decision and every approval answer goes to the audit log.
 * Loop thread only. */
#ifndef SANDBOXD_APPROVAL_H
#define SANDBOXD_APPROVAL_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>

#include "daemon/conn.h"
#include "policy/policy.h"
#include "protocol/error.h"

struct sandbox;

/* A sentence to append to a denial's message (resolution "role": how to be asked), or "".
 * Static string. */
const char *approval_role_hint(struct conn *c, const char *resolution);

/* allowed: go ahead or not; resolution: "policy" | "user" | "timeout" | "role". */
typedef void (*approval_cb)(void *ctx, bool allowed, const char *resolution);

/* Decides on r for a request from c. info (stolen) carries the approval.request fields
 * {kind, sandbox, backend, command? | argv?, cwd?, spec? | op, path, resolved_path?}. sb may be
 * NULL (sandbox.create).
 * r is borrowed and must stay valid until cb has run. cb may run before this returns. */
void approval_decide(struct conn *c, struct sandbox *sb, bool host_access, json_t *info,
                     const struct policy_result *r, approval_cb cb, void *ctx);

/* The -32001 error of a request approval_decide() did not allow: data {verdict, resolution,
 * findings}, message "denied by policy (resolution): first finding" plus the role hint for c
 * (may be NULL). */
void approval_deny_error(struct sbx_error *err, const struct policy_result *r,
                         const char *resolution, struct conn *c);

/* Loads the persisted approvals from state_dir/approvals.json. An unusable file is moved aside
 * (approvals.json.bad) with a warning and the set starts empty; never fails the daemon. */
void approval_init(const char *state_dir);
/* Frees the persisted set. */
void approval_shutdown(void);
/* The persisted approvals uid may see (root: every uid's), as protocol objects
 * [{key, rule, subject, uid, created_at}] (new). */
json_t *approval_list(uid_t uid);
/* Revokes key from uid's persisted approvals; root revokes it from target's set, or from every
 * uid's when target is NULL. Returns how many were removed, or -ENOENT with err set. */
int approval_revoke(uid_t uid, const char *key, const uid_t *target, struct sbx_error *err);

#endif
