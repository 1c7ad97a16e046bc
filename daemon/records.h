/* records.h — sandbox records: <state_dir>/sandboxes.json lists every ready sandbox whose
 * backend can re-adopt it (ops->save: docker), so a restarted daemon takes its containers back
 * instead of leaking or destroying them. The file goes through statefile.c (atomic, versioned,
 * a corrupt file is moved aside). Loop thread only; writes block briefly (fsync), and happen on
 * create, destroy, recreate and shutdown only.
 *
 * File format, version 1 (docs/backends/docker.md):
 *   {"version": 1, "sandboxes": [{"id", "name", "backend", "owner": {"uid", "gid", "groups"},
 *     "spec", "findings", "host_access", "created_at" (RFC 3339), "created_ms",
 *     "record" (what the backend's save() returned)}, …]}
 */
#ifndef SANDBOXD_RECORDS_H
#define SANDBOXD_RECORDS_H

#include <stdbool.h>

#include "backends/backend.h"

/* Rewrites the file from the registry (plus records kept because their backend could not be
 * reached at start). A no-op while the records are being restored and once the daemon stops
 * (the shutdown writes them with records_save_final). Failures are logged. */
void records_save(void);
/* The shutdown's write: like records_save, also while stopping; later saves are no-ops. */
void records_save_final(void);
/* Start-up: loads the file and re-adopts each record through its backend (a record whose
 * container is gone is dropped, one whose backend cannot be reached is kept for the next
 * start), then removes orphan containers of this daemon when Docker is available. done is
 * called once, when that is over or after a deadline (adoption then goes on). Never fails. */
void records_restore(void (*done)(void *ctx), void *ctx);
/* Frees what records_restore kept (shutdown). */
void records_shutdown(void);
/* Whether [backend.NAME] recreate (default true) allows recreating a vanished container. */
bool records_recreate_enabled(const struct backend_ops *ops);

#endif
