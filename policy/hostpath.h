/* hostpath.h — a host path resolved the way its caller could resolve it.
 *
 * A daemon running as root that resolves a path a client named with realpath() tells that
 * client what lies in directories it may not search (that /srv/private/x is a symlink to /etc,
 * say). This walks the path one component at a time, the way the kernel would for the caller
 * (uid, gid, groups): symlinks are followed (at most 40), ".." goes to the parent of what was
 * resolved so far, a missing tail is kept as written, and a directory the caller may not
 * search (by its mode bits), or a link in /proc (whose targets are the daemon's, or only for
 * who may ptrace the process), ends the walk with -EACCES. Nothing is opened but directories
 * (stat) and symlinks (readlink) the caller could look at itself. Pure apart from those calls.
 */
#ifndef SANDBOXD_POLICY_HOSTPATH_H
#define SANDBOXD_POLICY_HOSTPATH_H

#include <stddef.h>

#include "policy/policy.h"

/* Resolves path (absolute) as who could into out (cap bytes): 0, or negative errno: -EACCES
 * (a directory on the way is closed to who), -ELOOP, -ENAMETOOLONG, another lookup error. */
int hostpath_resolve_as(const struct policy_who *who, const char *path, char *out, size_t cap);

#endif
