/* approval.h — turns a policy verdict into allow/deny for one request (protocol §3, §6):
 * DENY stays deny; ASK is settled by memory (session/always), by the connection's role, or by an
 * approval.request to an interactive client with a timeout. Loop thread only. */
#ifndef SANDBOXD_APPROVAL_H
#define SANDBOXD_APPROVAL_H

#include <jansson.h>
#include <stdbool.h>

#include "daemon/conn.h"
#include "policy/policy.h"

struct sandbox;

/* allowed: go ahead or not; resolution: "policy" | "user" | "timeout" | "role". */
typedef void (*approval_cb)(void *ctx, bool allowed, const char *resolution);

/* Decides on r for a request from c. info (stolen) carries the approval.request fields
 * {kind, sandbox, backend, command?, cwd?, spec?}. sb may be NULL (sandbox.create). cb may run
 * before this returns. */
void approval_decide(struct conn *c, struct sandbox *sb, bool host_access, json_t *info,
                     const struct policy_result *r, approval_cb cb, void *ctx);

#endif
