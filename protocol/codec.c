/* codec.c — UTF-8 validation/sanitising and base64. */
#include "protocol/codec.h"

#include <errno.h>
#include <string.h>

/* Length of a valid sequence at p (1..4), 0 if invalid, -1 if valid so far but incomplete. */
static int
utf8_seq(const unsigned char *p, size_t n)
{
        unsigned char c = p[0];
        int len;
        unsigned char lo = 0x80, hi = 0xBF;

        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF)
                len = 2;
        else if (c >= 0xE0 && c <= 0xEF)
                len = 3;
        else if (c >= 0xF0 && c <= 0xF4)
                len = 4;
        else
                return 0;
        /* Second-byte ranges exclude overlongs, surrogates and > U+10FFFF. */
        if (c == 0xE0)
                lo = 0xA0;
        else if (c == 0xED)
                hi = 0x9F;
        else if (c == 0xF0)
                lo = 0x90;
        else if (c == 0xF4)
                hi = 0x8F;
        for (int i = 1; i < len; i++) {
                if ((size_t) i >= n)
                        return -1;
                unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
                if (p[i] < lo_i || p[i] > hi_i)
                        return 0;
        }
        return len;
}

/* Prefix that does not end inside an incomplete sequence. */
size_t
utf8_complete_prefix(const char *p, size_t n)
{
        size_t start = n > 3 ? n - 3 : 0;

        for (size_t i = start; i < n; i++) {
                const unsigned char *u = (const unsigned char *) p + i;
                if ((*u & 0xC0) == 0x80)
                        continue;
                if (utf8_seq(u, n - i) == -1)
                        return i;
        }
        return n;
}

/* Appends sanitised text. */
void
utf8_sanitize(struct buf *out, const char *p, size_t n)
{
        static const char repl[] = "\xEF\xBF\xBD";
        const unsigned char *u = (const unsigned char *) p;
        size_t i = 0, run = 0;

        buf_reserve(out, n);
        while (i < n) {
                int len = utf8_seq(u + i, n - i);
                if (len > 0) {
                        i += (size_t) len;
                        continue;
                }
                buf_append(out, p + run, i - run);
                buf_append(out, repl, 3);
                i++;
                run = i;
        }
        buf_append(out, p + run, n - run);
}

/* A JSON string of any bytes. */
json_t *
json_text(const char *s)
{
        struct buf b = {0};
        json_t *v;

        if (!s)
                return json_null();
        if (utf8_valid(s, strlen(s)))
                return json_string(s);
        utf8_sanitize(&b, s, strlen(s));
        v = json_stringn(b.data, b.len);
        buf_free(&b);
        return v;
}

/* Validity check. */
bool
utf8_valid(const char *p, size_t n)
{
        const unsigned char *u = (const unsigned char *) p;

        for (size_t i = 0; i < n;) {
                int len = utf8_seq(u + i, n - i);
                if (len <= 0)
                        return false;
                i += (size_t) len;
        }
        return true;
}

/* Head cut that does not split a character. */
size_t
utf8_floor(const char *p, size_t n)
{
        return utf8_complete_prefix(p, n);
}

/* Tail start on a character boundary. */
size_t
utf8_ceil_start(const char *p, size_t n)
{
        size_t k = 0;

        while (k < n && k < 3 && (((const unsigned char *) p)[k] & 0xC0) == 0x80)
                k++;
        return k;
}

/* Escapes text for a JSON string, sanitising UTF-8 on the way. */
void
json_escape_text(struct buf *out, const char *p, size_t n)
{
        static const char hex[] = "0123456789abcdef";
        const unsigned char *u = (const unsigned char *) p;
        size_t i = 0, run = 0;

        buf_reserve(out, n + n / 8 + 16);
        while (i < n) {
                unsigned char c = u[i];
                int len;

                if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
                        i++;
                        continue;
                }
                if (c >= 0x80 && (len = utf8_seq(u + i, n - i)) > 0) {
                        i += (size_t) len;
                        continue;
                }
                buf_append(out, p + run, i - run);
                if (c >= 0x80) {
                        buf_append(out, "\xEF\xBF\xBD", 3);
                } else if (c == '"' || c == '\\') {
                        char e[2] = {'\\', (char) c};
                        buf_append(out, e, 2);
                } else if (c == '\n') {
                        buf_append(out, "\\n", 2);
                } else if (c == '\t') {
                        buf_append(out, "\\t", 2);
                } else if (c == '\r') {
                        buf_append(out, "\\r", 2);
                } else {
                        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                        buf_append(out, e, 6);
                }
                run = ++i;
        }
        buf_append(out, p + run, n - run);
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 encode. */
void
base64_encode(struct buf *out, const void *in, size_t n)
{
        const unsigned char *p = in;
        size_t i;
        char *o;

        buf_reserve(out, (n + 2) / 3 * 4);
        o = out->data + out->len;
        for (i = 0; i + 2 < n; i += 3) {
                unsigned v = (unsigned) p[i] << 16 | (unsigned) p[i + 1] << 8 | p[i + 2];
                *o++ = b64chars[v >> 18];
                *o++ = b64chars[(v >> 12) & 63];
                *o++ = b64chars[(v >> 6) & 63];
                *o++ = b64chars[v & 63];
        }
        if (i < n) {
                unsigned v = (unsigned) p[i] << 16 | (i + 1 < n ? (unsigned) p[i + 1] << 8 : 0);
                *o++ = b64chars[v >> 18];
                *o++ = b64chars[(v >> 12) & 63];
                *o++ = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
                *o++ = '=';
        }
        out->len = (size_t) (o - out->data);
        out->data[out->len] = '\0';
}

static int
b64val(unsigned char c)
{
        const char *q = c ? strchr(b64chars, c) : NULL;

        return q ? (int) (q - b64chars) : -1;
}

/* Base64 decode. */
int
base64_decode(struct buf *out, const char *p, size_t n)
{
        unsigned v = 0;
        int bits = 0;

        while (n && p[n - 1] == '=')
                n--;
        if (n % 4 == 1)
                return -EINVAL;
        buf_reserve(out, n / 4 * 3 + 3);
        for (size_t i = 0; i < n; i++) {
                int d = b64val((unsigned char) p[i]);
                if (d < 0)
                        return -EINVAL;
                v = (v << 6) | (unsigned) d;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out->data[out->len++] = (char) ((v >> bits) & 0xFF);
                }
        }
        out->data[out->len] = '\0';
        return 0;
}
