/* docker.h — the Docker backend: the Engine API over libcurl (backends/http.h) plus a hand-driven
 * hijacked connection for exec streams. Loop thread only; see docs/backends/docker.md.
 */
#ifndef SANDBOXD_DOCKER_H
#define SANDBOXD_DOCKER_H

#include <jansson.h>
#include <stdbool.h>

#include "backends/backend.h"
#include "protocol/error.h"

/* Its inspect_spec (named volumes and VolumesFrom containers for the policy) and reap_orphans
 * (containers of this instance no sandbox claims) are vtable entries; see backends/backend.h. */
extern const struct backend_ops docker_backend_ops;

/* What the backend knows about the sandbox's container: "running", "exited", "removed", …
 * (borrowed). Updated from Docker's event stream and from failed calls. */
const char *docker_sandbox_state(const struct backend_sandbox *bsb);
struct policy_host;
/* For a dockerd on another host (tcp://): true, with h's cpus, mem and cgroup2 as its GET
 * /info (NCPU, MemTotal, CgroupVersion) last said, 0 CPUs and memory while it has not
 * answered (pid_max is left alone). false for a local socket. */
bool docker_remote_host(struct policy_host *h);
/* The container id (borrowed). */
const char *docker_sandbox_container(const struct backend_sandbox *bsb);

#endif
