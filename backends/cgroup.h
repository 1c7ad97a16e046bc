/* cgroup.h — per-sandbox cgroups for the local backend: memory, pids and cpu limits, OOM
 * detection, and killing a whole tree even when processes escaped their process group.
 *
 * Works on cgroup v2 (unified, delegated subtree) and on v1 (separate memory/pids/cpu
 * hierarchies); everything degrades to "not available" with a reason when the daemon may not
 * create cgroups. Called on the loop thread; only quick sysfs reads/writes.
 */
#ifndef SANDBOXD_CGROUP_H
#define SANDBOXD_CGROUP_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "protocol/error.h"

struct cgroup;

/* Finds where this daemon may create cgroups (once, at backend init). Returns a new object
 * describing support: {"version": 1|2|null, "memory": bool, "pids": bool, "cpu": bool,
 * "reason": "…" when something is unavailable}. */
json_t *cgroup_probe(void);

/* Creates a cgroup named name (e.g. the sandbox id; [A-Za-z0-9._-], at most 64, no leading
 * '.') with the requested limits (res may be NULL). Sets *enforced (new object) to
 * {memory_mb: "cgroup"|null, pids: …, cpus: …} for the requested ones only. Returns NULL when
 * cgroups are unavailable or the name is not acceptable (not an error; *enforced says so).
 * A cgroup without any limit controller is still returned: it tracks and kills processes. */
struct cgroup *cgroup_create(const char *name, const struct backend_resources *res,
                             json_t **enforced);
/* NULL-terminated list of cgroup.procs paths a child writes its pid to (borrowed). */
const char *const *cgroup_procs_files(const struct cgroup *cg);
/* Current number of OOM kills in this cgroup (memory.events oom_kill / memory.oom_control). */
uint64_t cgroup_oom_kills(const struct cgroup *cg);
/* Sends sig to every process in the cgroup; returns how many were signalled. */
int cgroup_signal_all(const struct cgroup *cg, int sig);
/* Number of processes still in the cgroup. */
int cgroup_count(const struct cgroup *cg);
/* Kills what is left (SIGKILL) and removes the cgroup directories (a few 1 ms retries while
 * the killed processes leave; directories still busy are retried by the next cgroup_create or
 * cgroup_destroy call). NULL is fine: it only retries those pending removals. */
void cgroup_destroy(struct cgroup *cg);

#endif
