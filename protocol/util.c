/* util.c — aborting allocators, byte buffers, clocks, random ids. */
#include "protocol/util.h"

#include <sys/random.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
util_oom(size_t n)
{
        fprintf(stderr, "sandboxd: out of memory allocating %zu bytes\n", n);
        abort();
}

/* Allocates n bytes or aborts. */
void *
xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);

        if (!p)
                util_oom(n);
        return p;
}

/* Allocates a zeroed array or aborts. */
void *
xcalloc(size_t nmemb, size_t size)
{
        void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

        if (!p)
                util_oom(nmemb * size);
        return p;
}

/* Resizes p or aborts. */
void *
xrealloc(void *p, size_t n)
{
        void *q = realloc(p, n ? n : 1);

        if (!q)
                util_oom(n);
        return q;
}

/* Duplicates a string or aborts. */
char *
xstrdup(const char *s)
{
        return xstrndup(s, strlen(s));
}

/* Duplicates at most n bytes of s, NUL-terminated, or aborts. */
char *
xstrndup(const char *s, size_t n)
{
        size_t len = strnlen(s, n);
        char *p = xmalloc(len + 1);

        memcpy(p, s, len);
        p[len] = '\0';
        return p;
}

/* Formats a va_list into a new string or aborts. */
char *
xvasprintf(const char *fmt, va_list ap)
{
        char *s;

        if (vasprintf(&s, fmt, ap) < 0)
                util_oom(strlen(fmt));
        return s;
}

/* Formats into a new string or aborts. */
char *
xasprintf(const char *fmt, ...)
{
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = xvasprintf(fmt, ap);
        va_end(ap);
        return s;
}

/* Sets jansson's allocator to the aborting one. */
void
util_json_alloc_init(void)
{
        json_set_alloc_funcs(xmalloc, free);
}

/* Makes room for extra more bytes (plus a NUL the callers may rely on). */
void
buf_reserve(struct buf *b, size_t extra)
{
        size_t need = b->len + extra + 1;

        if (need <= b->cap)
                return;
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need)
                cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
}

/* Appends n bytes; the buffer stays NUL-terminated. */
void
buf_append(struct buf *b, const void *p, size_t n)
{
        buf_reserve(b, n);
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
}

/* Appends formatted text. */
void
buf_appendf(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        buf_reserve(b, (size_t) n);
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t) n;
}

/* Drops the first n bytes. */
void
buf_consume(struct buf *b, size_t n)
{
        if (n >= b->len) {
                b->len = 0;
        } else {
                memmove(b->data, b->data + n, b->len - n);
                b->len -= n;
        }
        if (b->data)
                b->data[b->len] = '\0';
}

/* Releases the buffer's memory. */
void
buf_free(struct buf *b)
{
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
}

/* Monotonic milliseconds. */
uint64_t
util_now_ms(void)
{
        return util_now_ns() / 1000000u;
}

/* Monotonic nanoseconds. */
uint64_t
util_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Wall-clock milliseconds since the epoch. */
uint64_t
util_wall_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* RFC 3339 UTC with milliseconds. */
void
util_rfc3339(uint64_t epoch_ms, char *out, size_t outlen)
{
        time_t t = (time_t) (epoch_ms / 1000);
        struct tm tm;

        gmtime_r(&t, &tm);
        snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (unsigned) (epoch_ms % 1000));
}

/* n random hex digits. */
void
util_random_hex(char *out, size_t n)
{
        static const char hex[] = "0123456789abcdef";
        unsigned char raw[64];
        size_t done = 0;

        while (done < n) {
                size_t chunk = MIN((n - done + 1) / 2, sizeof(raw));
                if (getrandom(raw, chunk, 0) != (ssize_t) chunk)
                        abort();
                for (size_t i = 0; i < chunk && done < n; i++) {
                        out[done++] = hex[raw[i] >> 4];
                        if (done < n)
                                out[done++] = hex[raw[i] & 15];
                }
        }
        out[n] = '\0';
}

/* Whether s is one of the NULL-terminated list. */
bool
strv_contains(const char *const *list, const char *s)
{
        for (; list && *list; list++)
                if (!strcmp(*list, s))
                        return true;
        return false;
}
