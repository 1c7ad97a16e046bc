/* spool.c — ring-file output retention.
 *
 * File layout: a 32-byte header (magic "SBXSPL1\0", u64 cap, u64 total, 8 reserved; host byte
 * order: the file never leaves this machine) and the ring, the byte at stream offset o at
 * 32 + o % cap. The header's total is rewritten after every write, so a restarted daemon can
 * take the spool of an exec back (spool_open) and knows exactly how much it holds. */
#include "daemon/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPOOL_HDR   32
#define SPOOL_MAGIC "SBXSPL1"

struct spool {
        char *path;
        int fd;
        uint64_t cap;
        uint64_t total;
        uint64_t end; /* stopped: where it stopped keeping (total then) */
        int error;
        bool keep;    /* spool_free leaves the file (it outlives the daemon) */
        bool stopped; /* spool_stop: what comes after end is counted, not kept */
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

static int
spool_put_header(struct spool *s)
{
        unsigned char h[SPOOL_HDR] = SPOOL_MAGIC;

        memcpy(h + 8, &s->cap, 8);
        memcpy(h + 16, &s->total, 8);
        return pwrite(s->fd, h, sizeof(h), 0) == (ssize_t) sizeof(h) ? 0 : -EIO;
}

/* Takes back the spool a previous daemon left at path (NULL if unusable; a missing file is an
 * empty spool of cap). */
struct spool *
spool_open(const char *path, uint64_t cap)
{
        unsigned char h[SPOOL_HDR];
        struct spool *s = spool_new(path, cap);
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return errno == ENOENT ? s : (spool_free(s), NULL);
        if (pread(fd, h, sizeof(h), 0) != (ssize_t) sizeof(h) || memcmp(h, SPOOL_MAGIC, 8) != 0) {
                close(fd);
                spool_free(s);
                return NULL;
        }
        s->fd = fd;
        memcpy(&s->cap, h + 8, 8);
        memcpy(&s->total, h + 16, 8);
        if (!s->cap) {
                spool_free(s);
                return NULL;
        }
        return s;
}

/* Ring write: position = offset mod cap. */
int
spool_write(struct spool *s, const char *data, size_t len)
{
        if (s->stopped) {
                s->total += len;
                return 0;
        }
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
                ssize_t w = pwrite(s->fd, data, n, (off_t) (SPOOL_HDR + pos));
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
        else if (spool_put_header(s) < 0)
                s->error = -EIO;
        return s->error;
}

/* Total written. */
uint64_t
spool_total(const struct spool *s)
{
        return s->total;
}

/* Where what is retained ends. */
static uint64_t
spool_end(const struct spool *s)
{
        return s->stopped ? s->end : s->total;
}

/* First retained offset. */
uint64_t
spool_first(const struct spool *s)
{
        return spool_end(s) > s->cap ? spool_end(s) - s->cap : 0;
}

uint64_t
spool_kept(const struct spool *s)
{
        return spool_end(s) - spool_first(s);
}

void
spool_stop(struct spool *s)
{
        if (s && !s->stopped) {
                s->stopped = true;
                s->end = s->total;
        }
}

bool
spool_stopped_at(const struct spool *s, uint64_t *end)
{
        if (s && s->stopped)
                *end = s->end;
        return s && s->stopped;
}

/* Reads retained bytes. */
int
spool_read(const struct spool *s, uint64_t offset, size_t max, struct buf *out, uint64_t *start)
{
        uint64_t first = spool_first(s);
        size_t got = 0;

        if (offset < first)
                offset = first;
        if (offset > s->total || offset >= spool_end(s))
                offset = s->total; /* past what is kept: nothing more to read */
        *start = offset;
        if (s->fd < 0 || s->error)
                return s->fd < 0 && !s->error ? 0 : s->error;
        max = (size_t) MIN((uint64_t) max, spool_end(s) - MIN(offset, spool_end(s)));
        buf_reserve(out, max);
        while (got < max) {
                uint64_t pos = (offset + got) % s->cap;
                size_t n = (size_t) MIN((uint64_t) (max - got), s->cap - pos);
                ssize_t r = pread(s->fd, out->data + out->len, n, (off_t) (SPOOL_HDR + pos));
                if (r <= 0)
                        return r < 0 ? -errno : -EIO;
                out->len += (size_t) r;
                got += (size_t) r;
        }
        out->data[out->len] = '\0';
        return 0;
}

/* spool_free will leave the file in place. */
void
spool_keep(struct spool *s)
{
        if (s)
                s->keep = true;
}

/* Closes and unlinks (unless kept). */
void
spool_free(struct spool *s)
{
        if (!s)
                return;
        if (s->fd >= 0) {
                close(s->fd);
                if (!s->keep)
                        unlink(s->path);
        }
        free(s->path);
        free(s);
}
