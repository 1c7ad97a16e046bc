/* peer.h — is a connecting process one of the daemon's own? (protocol rev. 2, docs/protocol.md
 * "daemon.hello"). A process the daemon started — an exec, anything it spawned, double-forked
 * or setsid'd: the daemon is a child subreaper, so orphans are re-parented to it and stay
 * below it — or a process inside one of its containers (its cgroup names the container) may
 * not answer approvals: its connection is a subagent whatever it says. Reads /proc only; no
 * daemon state, so the unit tests drive it directly. */
#ifndef SANDBOXD_PEER_H
#define SANDBOXD_PEER_H

#include <sys/types.h>

#include <stdbool.h>

/* Why pid is inside the process trees of the daemon daemon_pid or of the containers
 * container_ids (NULL-terminated, may be NULL): a static sentence, or NULL when it is outside.
 * Fails closed: a pid that is 0 (not visible in our pid namespace), gone, or whose ancestry
 * cannot be read counts as inside. */
const char *peer_inside(pid_t pid, pid_t daemon_pid, const char *const *container_ids);

/* Whether /proc/PID/cgroup text names one of the containers (pure). */
bool peer_cgroup_match(const char *cgroup_text, const char *const *container_ids);

#endif
