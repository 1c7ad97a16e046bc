/* sandbox_policy.h — what the daemon tells the container checks about a sandbox.create: who
 * asks (an unprivileged caller of a root daemon gets no host mounts), what the operator accepts
 * beyond the built-in allowlist ([backend.docker] unchecked_host_config_fields, volume_drivers,
 * runtime), and where the workspace is. Loop thread only. */
#ifndef SANDBOXD_SANDBOX_POLICY_H
#define SANDBOXD_SANDBOX_POLICY_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>

#include "policy/policy.h"

struct backend_identity;
struct sandbox_spec;

/* Fills ctx (zeroed first) for judging spec (borrowed) of backend for the caller who
 * (borrowed). The strings point into g.config, who and spec: valid while they are. */
void sandbox_policy_ctx(struct policy_ctx *ctx, const char *backend,
                        const struct backend_identity *who, json_t *spec);
/* Has host paths resolved as who could (ctx->resolve_as) when who is neither root nor the
 * daemon's uid; who's groups are borrowed. */
void sandbox_policy_resolve_as(struct policy_ctx *ctx, const struct backend_identity *who);
/* Whether uid is neither root nor the daemon's own uid. */
bool sandbox_policy_unprivileged(uid_t uid);
/* What the operator of backend accepts beyond the allowlist, for backend.list details (new
 * object), or NULL for a backend without container checks. */
json_t *sandbox_policy_operator(const char *backend);

/* What applies to who (borrowed) for docker, for backend.list: {uid, unprivileged, limits,
 * allow_pull, images, runs_as, user | because, host_root} (new object); details (borrowed)
 * are the probe's, whose userns_remap says whether uid 0 in a container is host root. */
json_t *sandbox_policy_docker_caller(const struct backend_identity *who, json_t *details);
/* The [backend.docker] maxima and images (static; strings borrowed from g.config). */
const struct policy_docker_limits *sandbox_policy_docker_limits(void);
/* A docker sandbox's spec for the backend: the operator's pids_limit and memory where the
 * spec sets no limit; for an unprivileged caller no pull unless allow_pull, and an image
 * that must carry the name asked for. */
void sandbox_policy_docker_spec(struct sandbox_spec *s, const struct backend_identity *who);

#endif
