/* util.h — allocation that aborts on OOM, string buffers, small helpers.
 * Pure libc; used by every module and by sandboxctl. Thread-safe (no state). */
#ifndef SANDBOXD_UTIL_H
#define SANDBOXD_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* <sys/param.h> (pulled in by uv.h) defines MIN/MAX too: take its definitions whatever the
 * include order. */
#include <sys/param.h>

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* Allocators: abort with a message on OOM, never return NULL (new). */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether s is one of the NULL-terminated list. */
bool strv_contains(const char *const *list, const char *s);
/* The same from a va_list (new); aborts on OOM. */
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Points jansson's allocator at xmalloc/free so NULL from jansson means bad input. */
void util_json_alloc_init(void);

/* Growable byte buffer. Zero-initialise to use; buf_free() releases. */
struct buf {
        char *data;
        size_t len;
        size_t cap;
};

void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *p, size_t n);
void buf_appendf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

/* Monotonic clock in milliseconds / nanoseconds. */
uint64_t util_now_ms(void);
uint64_t util_now_ns(void);
/* Writes an RFC 3339 UTC timestamp of a wall-clock epoch time in ms into out (>= 32 bytes). */
void util_rfc3339(uint64_t epoch_ms, char *out, size_t outlen);
uint64_t util_wall_ms(void);

/* Fills out with n random lowercase hex characters (+NUL), from getrandom(). */
void util_random_hex(char *out, size_t n);

#endif
