/* docker.h — the Docker backend: the Engine API over libcurl (backends/http.h) plus a hand-driven
 * hijacked connection for exec streams. Loop thread only; see docs/backends/docker.md.
 */
#ifndef SANDBOXD_DOCKER_H
#define SANDBOXD_DOCKER_H

#include <jansson.h>

#include "backends/backend.h"
#include "protocol/error.h"

extern const struct backend_ops docker_backend_ops;

/* What the policy's container checks need before a create. spec is the sandbox.create params
 * object (borrowed): named volumes come from mounts[] entries of type "volume", from
 * docker.host_config Mounts (Type "volume") and Binds ("name:/target"), containers from
 * VolumesFrom, and then the volumes those containers mount. cb gets a new object
 * {"volumes": {name: GET /volumes/{name} body}, "containers": {name: GET
 * /containers/{name}/json body}} (what does not exist is left out: Docker would create a
 * volume empty, and refuse a missing container), or NULL and err. Needs init() first. */
void docker_inspect_spec(json_t *spec, void *ctx,
                         void (*cb)(void *ctx, json_t *facts, const struct sbx_error *err));

/* Removes (force) containers labelled sandboxd=1 (and sandboxd.instance=<instance> when the
 * config sets "instance") whose sandboxd.sandbox label is not in known_ids (NULL-terminated,
 * borrowed for the call). cb gets how many were removed. */
void docker_reap_orphans(const char *const *known_ids, void *ctx,
                         void (*cb)(void *ctx, int removed, const struct sbx_error *err));

/* What the backend knows about the sandbox's container: "running", "exited", "removed", …
 * (borrowed). Updated from Docker's event stream and from failed calls. */
const char *docker_sandbox_state(const struct backend_sandbox *bsb);
/* The container id (borrowed). */
const char *docker_sandbox_container(const struct backend_sandbox *bsb);

#endif
