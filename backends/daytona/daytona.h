/* daytona.h — the Daytona backend: sandboxes in Daytona's cloud through its REST API and the
 * toolbox of each sandbox (docs/backends/daytona.md). Loop thread only.
 */
#ifndef SANDBOXD_DAYTONA_H
#define SANDBOXD_DAYTONA_H

#include "backends/backend.h"
#include "protocol/error.h"

extern const struct backend_ops daytona_backend_ops;

/* Deletes the sandboxes this daemon created (labels sandboxd=1 and sandboxd.instance) whose
 * sandboxd.sandbox label is not in known_ids (NULL-terminated, borrowed for the call); a
 * persistent one (sandboxd.persistent=1) is stopped instead, to be resumed by name. cb gets
 * how many were deleted or stopped. Without an API key it does nothing (removed 0). */
void daytona_reap_orphans(const char *const *known_ids, void *ctx,
                          void (*cb)(void *ctx, int removed, const struct sbx_error *err));

#endif
