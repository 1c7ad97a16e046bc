/* probe_view.h — what backend.list and daemon.info show of a backend's probe to a caller that
 * is neither root nor the daemon's owner. */
#ifndef SANDBOXD_PROBE_VIEW_H
#define SANDBOXD_PROBE_VIEW_H

#include <jansson.h>

/* The details shown to such a caller: the keys of the backend's allowlist (its config's
 * choices, versions, whether it is ready), new; anything else of the daemon's (paths, its
 * environment, credential sources, other users' sockets) is left out. */
json_t *probe_view_details(const char *backend, json_t *details);

/* The reason and hint shown to such a caller of an unavailable backend: the public ones the
 * backend gave (backend_probe_public), else a generic pair naming the backend. New strings. */
void probe_view_reason(const char *backend, json_t *pub, char **reason, char **hint);

#endif
