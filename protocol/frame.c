/* frame.c — NDJSON line splitter with a maximum line length. */
#include "protocol/frame.h"

#include <string.h>

/* Initialises an empty framer. */
void
frame_init(struct frame *f, size_t max)
{
        memset(f, 0, sizeof(*f));
        f->max = max;
}

/* Frees the buffer. */
void
frame_free(struct frame *f)
{
        buf_free(&f->in);
}

/* Appends bytes, compacting consumed space first so the buffer stays bounded. */
void
frame_feed(struct frame *f, const char *p, size_t n)
{
        if (f->pos) {
                buf_consume(&f->in, f->pos);
                f->pos = 0;
        }
        buf_append(&f->in, p, n);
}

/* Bytes not yet returned. */
size_t
frame_pending(const struct frame *f)
{
        return f->in.len - f->pos;
}

/* Memory held. */
size_t
frame_memory(const struct frame *f)
{
        return f->in.cap;
}

/* Drops the unfinished line when it is all that is buffered. */
size_t
frame_drop_partial(struct frame *f)
{
        size_t avail = f->in.len - f->pos;

        /* Complete lines wait only while the connection is congested, and then nothing more
         * is read: leave them (and the line after them) alone. */
        if (!avail || memchr(f->in.data + f->pos, '\n', avail))
                return 0;
        f->in.len = f->pos = f->scanned = 0;
        f->discarding = true;
        frame_trim(f, 0);
        return avail;
}

/* Frees or shrinks the buffer. */
void
frame_trim(struct frame *f, size_t keep)
{
        size_t pending = f->in.len - f->pos;

        if (f->in.cap <= keep || (pending && pending * 4 > f->in.cap))
                return;
        if (pending == 0) {
                buf_free(&f->in);
                f->pos = f->scanned = 0;
                return;
        }
        buf_consume(&f->in, f->pos);
        f->pos = 0;
        f->in.data = xrealloc(f->in.data, f->in.len + 1);
        f->in.cap = f->in.len + 1;
}

static enum frame_status
frame_overflow(struct frame *f)
{
        /* Keep nothing of the long line; remember we are inside it. */
        f->in.len = f->pos = f->scanned = 0;
        f->discarding = true;
        return FRAME_TOO_LONG;
}

/* Pops the next line or event. */
enum frame_status
frame_next(struct frame *f, const char **line, size_t *len)
{
        for (;;) {
                char *start = f->in.data + f->pos;
                size_t avail = f->in.len - f->pos;
                char *nl = avail > f->scanned ? memchr(start + f->scanned, '\n', avail - f->scanned)
                                              : NULL;
                if (!nl) {
                        f->scanned = avail;
                        if (f->discarding) {
                                f->in.len = f->pos = f->scanned = 0;
                                return FRAME_NONE;
                        }
                        return avail > f->max ? frame_overflow(f) : FRAME_NONE;
                }
                size_t n = (size_t) (nl - start);
                f->pos += n + 1;
                f->scanned = 0;
                if (f->discarding) {
                        f->discarding = false;
                        continue;
                }
                if (n > f->max)
                        return FRAME_TOO_LONG;
                if (n && start[n - 1] == '\r')
                        n--;
                if (n == 0)
                        continue;
                *line = start;
                *len = n;
                return FRAME_LINE;
        }
}
