/* frame.h — NDJSON framing: feed bytes, pop complete lines, with a hard maximum line length.
 * A line over the limit is reported once and the rest of it discarded up to its newline, so the
 * connection stays usable. Pure; one struct frame per connection. */
#ifndef SANDBOXD_FRAME_H
#define SANDBOXD_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/util.h"

struct frame {
        struct buf in;   /* unconsumed bytes start at in.data + pos */
        size_t pos;      /* start of the next line */
        size_t scanned;  /* bytes after pos already known to hold no newline */
        size_t max;      /* maximum line length, excluding the newline */
        bool discarding; /* inside an over-long line */
};

enum frame_status {
        FRAME_NONE = 0,     /* need more bytes */
        FRAME_LINE = 1,     /* *line / *len: one line without "\n" (and without a final "\r") */
        FRAME_TOO_LONG = 2, /* a line exceeded max; its bytes are being dropped */
};

void frame_init(struct frame *f, size_t max);
void frame_free(struct frame *f);
/* Appends received bytes. */
void frame_feed(struct frame *f, const char *p, size_t n);
/* Pops the next event. A returned line is borrowed until the next frame_* call. Blank lines are
 * skipped. */
enum frame_status frame_next(struct frame *f, const char **line, size_t *len);
/* Bytes buffered and not yet returned. */
size_t frame_pending(const struct frame *f);
/* Bytes of memory the buffer holds (its capacity). */
size_t frame_memory(const struct frame *f);
/* When all that is buffered is an unfinished line, drops it and discards the rest of it as it
 * arrives (as for an over-long line). Returns the bytes dropped (0: complete lines wait). */
size_t frame_drop_partial(struct frame *f);
/* Gives memory back: frees an empty buffer larger than keep, shrinks a mostly consumed one. */
void frame_trim(struct frame *f, size_t keep);

#endif
