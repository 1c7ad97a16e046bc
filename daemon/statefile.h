/* statefile.h — the daemon's versioned JSON state file (sandbox records to re-adopt after a
 * restart, persisted approvals, …).
 *
 * On disk: one JSON object {"version": STATEFILE_VERSION, <the caller's fields>}. Writes are
 * atomic (temporary file in the same directory, fsync, rename, fsync of the directory), so a
 * crash leaves either the old or the new file. A file that cannot be used is moved aside, never
 * deleted, and loading it never fails the daemon. Blocking I/O: call at startup, on shutdown,
 * or for small files only. No global state; any thread.
 */
#ifndef SANDBOXD_STATEFILE_H
#define SANDBOXD_STATEFILE_H

#include <jansson.h>

#include "protocol/error.h"

#define STATEFILE_VERSION 1
/* Files larger than this are not loaded (treated as corrupt and moved aside). */
#define STATEFILE_MAX_BYTES (64u * 1024 * 1024)

/* Atomically replaces path with {"version":1, …fields of doc} (doc borrowed, must be an
 * object; a "version" field in doc is ignored), mode 0600. Returns 0, or negative errno with
 * err set (path and failing step in the message). No temporary file remains on failure; path
 * is untouched unless only the final fsync of the directory failed (then the new file is in
 * place but may not survive a power loss). */
int statefile_save(const char *path, json_t *doc, struct sbx_error *err);

/* Loads path into *ret (new object holding the saved fields, without "version"; never NULL).
 * A missing file gives an empty object. A file that is unreadable, too large, not JSON, not an
 * object or of another version is renamed to "<path>.corrupt-<UTC YYYYmmddTHHMMSSZ>" and
 * *ret is an empty object. *warning (new, may be NULL) then says what was wrong and where the
 * file went, for the log and STATUS; it is NULL when all went well. Also deletes temporary files
 * a crash during statefile_save() left behind (call it before any save). Always returns 0. */
int statefile_load(const char *path, json_t **ret, char **warning);

#endif
