/* spool.h — retained output of one stream of one process: a ring file in the state directory
 * holding the most recent cap bytes. Offsets are stream offsets (bytes since the process
 * started); the file is created on the first write. Loop thread only; I/O is to the page cache. */
#ifndef SANDBOXD_SPOOL_H
#define SANDBOXD_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/util.h"

struct spool;

/* New spool writing to path (not created yet). */
struct spool *spool_new(const char *path, uint64_t cap);
/* The spool a previous daemon left at path (an empty one of cap when there is no file), or
 * NULL when the file is not a spool. */
struct spool *spool_open(const char *path, uint64_t cap);
/* spool_free leaves the file: its exec outlives the daemon. */
void spool_keep(struct spool *s);
/* Appends; returns 0 or negative errno (the data is then lost from the spool only). */
int spool_write(struct spool *s, const char *data, size_t len);
/* Total bytes ever written. */
uint64_t spool_total(const struct spool *s);
/* First offset still retained. */
uint64_t spool_first(const struct spool *s);
/* Bytes retained (on disk). */
uint64_t spool_kept(const struct spool *s);
/* Stops keeping: later writes are counted in the total, not kept; what was kept stays
 * readable, and a read past it returns nothing from the total on (max_spool_bytes_per_uid).
 * NULL is fine. */
void spool_stop(struct spool *s);
/* Whether s was stopped, and *end where (the total then). */
bool spool_stopped_at(const struct spool *s, uint64_t *end);
/* Reads up to max bytes from offset (clamped to spool_first) into out; *start is the offset of
 * the first byte returned. */
int spool_read(const struct spool *s, uint64_t offset, size_t max, struct buf *out,
               uint64_t *start);
/* Closes and removes the file (unless kept). NULL is fine. */
void spool_free(struct spool *s);

#endif
