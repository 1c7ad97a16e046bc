/* codec.h — UTF-8 sanitising for streamed text and base64. Pure. */
#ifndef SANDBOXD_CODEC_H
#define SANDBOXD_CODEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/util.h"

/* Length of the longest prefix of p[0..n) that does not end inside a possibly valid but
 * incomplete UTF-8 sequence. Bytes after it (at most 3) should be carried to the next chunk. */
size_t utf8_complete_prefix(const char *p, size_t n);
/* Appends p[0..n) to out as valid UTF-8: every invalid byte becomes U+FFFD. */
void utf8_sanitize(struct buf *out, const char *p, size_t n);
/* True when p[0..n) is valid UTF-8. */
bool utf8_valid(const char *p, size_t n);
/* A JSON string of s (new) with every invalid UTF-8 byte replaced by U+FFFD, so that text from
 * the system (paths, messages) can always be sent; JSON null for NULL. */
json_t *json_text(const char *s);
/* Largest k <= n such that p[0..k) does not split a UTF-8 sequence (for head truncation). */
size_t utf8_floor(const char *p, size_t n);
/* Smallest k >= 0 such that p[k..n) starts on a character boundary (for tail truncation). */
size_t utf8_ceil_start(const char *p, size_t n);

/* Appends p[0..n) as the inside of a JSON string (no quotes): valid UTF-8 is copied, invalid
 * bytes become U+FFFD, '"', '\\' and control characters are escaped. One pass. */
void json_escape_text(struct buf *out, const char *p, size_t n);

/* Appends the base64 encoding of p[0..n) to out. */
void base64_encode(struct buf *out, const void *p, size_t n);
/* Decodes standard base64 (padding optional, no whitespace) into out. Returns 0 or -EINVAL. */
int base64_decode(struct buf *out, const char *p, size_t n);

#endif
