/* spool.c — one stream's unacknowledged output, kept until the daemon has it. Memory while
 * the agent-wide budget allows (--spool-mem), then an unlinked file in the runtime directory
 * (nothing else can open it, and it disappears with the agent). Order is kept: once bytes went
 * to the file, later bytes follow them there until the file is drained. The memory tier is a
 * chain of fixed blocks that children's output is read into directly and that acknowledgements
 * free whole: no byte is moved within memory. */
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"

#define SEG_SIZE (256u << 10)
#define SEG_KEEP 8 /* blocks kept for reuse (2 MiB) */

struct agent_seg {
        struct agent_seg *next;
        size_t len;
        unsigned char data[SEG_SIZE];
};

static uint64_t spool_mem_used; /* bytes in memory tiers */
static uint64_t spool_retained; /* bytes in all spools */
static struct agent_seg *seg_free;
static unsigned seg_nfree;

static struct agent_seg *
seg_get(void)
{
        struct agent_seg *g = seg_free;

        if (g) {
                seg_free = g->next;
                seg_nfree--;
        } else {
                g = agent_realloc(NULL, sizeof(*g));
        }
        g->next = NULL;
        g->len = 0;
        return g;
}

static void
seg_put(struct agent_seg *g)
{
        if (seg_nfree >= SEG_KEEP) {
                free(g);
                return;
        }
        g->next = seg_free;
        seg_free = g;
        seg_nfree++;
}

/* Empty spool. */
void
agent_spool_init(struct agent_spool *s)
{
        memset(s, 0, sizeof(*s));
        s->fd = -1;
}

/* Releases memory and the file. */
void
agent_spool_free(struct agent_spool *s)
{
        while (s->first) {
                struct agent_seg *g = s->first;
                s->first = g->next;
                seg_put(g);
        }
        spool_mem_used -= s->mem;
        spool_retained -= s->total - s->head;
        agent_close(&s->fd);
        agent_spool_init(s);
}

/* Bytes retained by every spool. */
uint64_t
agent_spool_retained(void)
{
        return spool_retained;
}

/* An unlinked file in <runtime_dir>/spool; -1 when there is no runtime directory. */
static int
spool_open_file(void)
{
        char dir[PATH_MAX], path[PATH_MAX + 32];
        int fd;

        if (!agent_opts.runtime_dir)
                return errno = ENOSPC, -1;
        snprintf(dir, sizeof(dir), "%s/spool", agent_opts.runtime_dir);
        agent_mkdir_p(dir, strlen(dir));
        fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
                return fd;
        snprintf(path, sizeof(path), "%s/s.XXXXXX", dir);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
                unlink(path);
        return fd;
}

static int
spool_file_append(struct agent_spool *s, const void *data, size_t len)
{
        const char *p = data;
        size_t done = 0;

        if (s->fd < 0 && (s->fd = spool_open_file()) < 0)
                return -1;
        if (!s->in_file) {
                if (ftruncate(s->fd, 0) < 0)
                        return -1;
                s->in_file = 1;
                s->fbase = s->total;
        }
        while (done < len) {
                ssize_t n =
                        pwrite(s->fd, p + done, len - done, (off_t) (s->total + done - s->fbase));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                done += (size_t) n;
        }
        s->total += len;
        spool_retained += len;
        return 0;
}

/* Room at the end of the memory tier. */
unsigned char *
agent_spool_tail(struct agent_spool *s, size_t *room)
{
        if (s->in_file ||
            (spool_mem_used + SEG_SIZE > agent_opts.spool_mem && agent_opts.runtime_dir))
                return NULL;
        if (!s->last || s->last->len == SEG_SIZE) {
                struct agent_seg *g = seg_get();
                if (s->last)
                        s->last->next = g;
                else
                        s->first = g;
                s->last = g;
        }
        *room = SEG_SIZE - s->last->len;
        return s->last->data + s->last->len;
}

/* Counts n bytes read into the tail's room. */
void
agent_spool_commit(struct agent_spool *s, size_t n)
{
        s->last->len += n;
        s->mem += n;
        s->total += n;
        spool_mem_used += n;
        spool_retained += n;
}

/* Appends; memory first, the file once the budget is spent (or the file holds older bytes). */
int
agent_spool_append(struct agent_spool *s, const void *data, size_t len)
{
        const unsigned char *p = data;
        unsigned char *dst;
        size_t room;

        while (len && (dst = agent_spool_tail(s, &room))) {
                size_t k = room < len ? room : len;
                memcpy(dst, p, k);
                agent_spool_commit(s, k);
                p += k;
                len -= k;
        }
        return len ? spool_file_append(s, p, len) : 0;
}

/* Copies retained bytes. */
int
agent_spool_copy(const struct agent_spool *s, uint64_t off, void *dst, size_t n)
{
        unsigned char *d = dst;
        const struct agent_seg *g = s->first;
        size_t at = s->skip;
        uint64_t skip = off - s->head;

        for (; g && n && off < s->head + s->mem; g = g->next, at = 0) {
                size_t have = g->len - at, k;
                if (skip >= have) {
                        skip -= have;
                        continue;
                }
                k = have - (size_t) skip < n ? have - (size_t) skip : n;
                memcpy(d, g->data + at + skip, k);
                skip = 0;
                d += k;
                off += k;
                n -= k;
        }
        while (n) {
                ssize_t r = pread(s->fd, d, n, (off_t) (off - s->fbase));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return -1;
                d += r;
                off += (uint64_t) r;
                n -= (size_t) r;
        }
        return 0;
}

/* Up to max iovecs covering bytes [off, off + n) of the memory tier; the count, or -1 when
 * they are not all in memory (then agent_spool_copy). */
int
agent_spool_iov(const struct agent_spool *s, uint64_t off, size_t n, struct iovec *iov, int max)
{
        const struct agent_seg *g = s->first;
        size_t at = s->skip;
        uint64_t skip = off - s->head;
        int k = 0;

        if (off + n > s->head + s->mem)
                return -1;
        for (; g && n; g = g->next, at = 0) {
                size_t have = g->len - at, take;
                if (skip >= have) {
                        skip -= have;
                        continue;
                }
                if (k == max)
                        return -1;
                take = have - (size_t) skip < n ? have - (size_t) skip : n;
                iov[k++] = (struct iovec){(void *) (g->data + at + skip), take};
                skip = 0;
                n -= take;
        }
        return k;
}

/* Drops acknowledged bytes: whole blocks go back, an emptied file is truncated. */
void
agent_spool_trim(struct agent_spool *s, uint64_t off)
{
        uint64_t drop = off - s->head, m = drop < s->mem ? drop : s->mem;

        spool_mem_used -= m;
        spool_retained -= drop;
        s->mem -= m;
        s->skip += (size_t) m;
        while (s->first && (s->skip >= s->first->len) && (s->first != s->last || !s->mem)) {
                struct agent_seg *g = s->first;
                s->skip -= g->len;
                s->first = g->next;
                if (!s->first)
                        s->last = NULL;
                seg_put(g);
        }
        s->head = off;
        if (s->in_file && s->head == s->total) {
                s->in_file = 0;
                if (ftruncate(s->fd, 0) < 0)
                        agent_close(&s->fd);
        }
}
