/* spool.c — ring-file output retention. */
#include "daemon/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct spool {
        char *path;
        int fd;
        uint64_t cap;
        uint64_t total;
        int error;
};

/* New spool. */
struct spool *
spool_new(const char *path, uint64_t cap)
{
        struct spool *s = xcalloc(1, sizeof(*s));

        s->path = xstrdup(path);
        s->fd = -1;
        s->cap = cap ? cap : 1;
        return s;
}

/* Ring write: position = offset mod cap. */
int
spool_write(struct spool *s, const char *data, size_t len)
{
        if (s->fd < 0 && !s->error) {
                s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (s->fd < 0)
                        s->error = -errno;
        }
        /* Only the last cap bytes of a large write can be retained. */
        if (len > s->cap) {
                s->total += len - s->cap;
                data += len - s->cap;
                len = s->cap;
        }
        while (len && !s->error) {
                uint64_t pos = s->total % s->cap;
                size_t n = (size_t) MIN((uint64_t) len, s->cap - pos);
                ssize_t w = pwrite(s->fd, data, n, (off_t) pos);
                if (w <= 0) {
                        s->error = w < 0 ? -errno : -EIO;
                        break;
                }
                s->total += (uint64_t) w;
                data += w;
                len -= (size_t) w;
        }
        if (s->error)
                s->total += len;
        return s->error;
}

/* Total written. */
uint64_t
spool_total(const struct spool *s)
{
        return s->total;
}

/* First retained offset. */
uint64_t
spool_first(const struct spool *s)
{
        return s->total > s->cap ? s->total - s->cap : 0;
}

/* Reads retained bytes. */
int
spool_read(const struct spool *s, uint64_t offset, size_t max, struct buf *out, uint64_t *start)
{
        uint64_t first = spool_first(s);
        size_t got = 0;

        if (offset < first)
                offset = first;
        if (offset > s->total)
                offset = s->total;
        *start = offset;
        if (s->fd < 0 || s->error)
                return s->fd < 0 && !s->error ? 0 : s->error;
        max = (size_t) MIN((uint64_t) max, s->total - offset);
        buf_reserve(out, max);
        while (got < max) {
                uint64_t pos = (offset + got) % s->cap;
                size_t n = (size_t) MIN((uint64_t) (max - got), s->cap - pos);
                ssize_t r = pread(s->fd, out->data + out->len, n, (off_t) pos);
                if (r <= 0)
                        return r < 0 ? -errno : -EIO;
                out->len += (size_t) r;
                got += (size_t) r;
        }
        out->data[out->len] = '\0';
        return 0;
}

/* Closes and unlinks. */
void
spool_free(struct spool *s)
{
        if (!s)
                return;
        if (s->fd >= 0) {
                close(s->fd);
                unlink(s->path);
        }
        free(s->path);
        free(s);
}
