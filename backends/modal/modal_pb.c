/* modal_pb.c — protobuf wire encoding and decoding (varint, length-delimited, fixed32/64). */
#include "backends/modal/modal_pb.h"

#include <stdlib.h>
#include <string.h>

#define PB_MAX_FIELD ((1u << 29) - 1)

static void
pb_raw_varint(struct buf *b, uint64_t v)
{
        unsigned char tmp[10];
        size_t n = 0;

        do {
                tmp[n] = (unsigned char) (v & 0x7f);
                v >>= 7;
                if (v)
                        tmp[n] |= 0x80;
                n++;
        } while (v);
        buf_append(b, tmp, n);
}

static void
pb_tag(struct buf *b, uint32_t field, enum pb_wire w)
{
        pb_raw_varint(b, ((uint64_t) field << 3) | (uint64_t) w);
}

/* Appends a varint field. */
void
pb_put_varint(struct buf *b, uint32_t field, uint64_t v)
{
        pb_tag(b, field, PB_VARINT);
        pb_raw_varint(b, v);
}

/* Appends a bool field. */
void
pb_put_bool(struct buf *b, uint32_t field, bool v)
{
        pb_put_varint(b, field, v ? 1 : 0);
}

/* Appends a length-delimited field. */
void
pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len)
{
        pb_tag(b, field, PB_LEN);
        pb_raw_varint(b, len);
        if (len)
                buf_append(b, data, len);
}

/* Appends a string field (nothing for NULL). */
void
pb_put_str(struct buf *b, uint32_t field, const char *s)
{
        if (s)
                pb_put_bytes(b, field, s, strlen(s));
}

static void
pb_put_le(struct buf *b, uint64_t bits, size_t n)
{
        unsigned char tmp[8];

        for (size_t i = 0; i < n; i++)
                tmp[i] = (unsigned char) (bits >> (8 * i));
        buf_append(b, tmp, n);
}

/* Appends a float (fixed32) field. */
void
pb_put_float(struct buf *b, uint32_t field, float v)
{
        uint32_t bits;

        memcpy(&bits, &v, sizeof(bits));
        pb_tag(b, field, PB_FIXED32);
        pb_put_le(b, bits, 4);
}

/* Appends a double (fixed64) field. */
void
pb_put_double(struct buf *b, uint32_t field, double v)
{
        uint64_t bits;

        memcpy(&bits, &v, sizeof(bits));
        pb_tag(b, field, PB_FIXED64);
        pb_put_le(b, bits, 8);
}

/* Appends a nested message. */
void
pb_put_msg(struct buf *b, uint32_t field, const struct buf *sub)
{
        pb_put_bytes(b, field, sub->data, sub->len);
}

/* Appends one map entry {1: key, 2: value}. */
void
pb_put_map_entry(struct buf *b, uint32_t field, const char *key, const char *value)
{
        struct buf e = {0};

        pb_put_str(&e, 1, key);
        pb_put_str(&e, 2, value);
        pb_put_msg(b, field, &e);
        buf_free(&e);
}

/* Starts reading a message. */
void
pb_reader_init(struct pb_reader *r, const void *data, size_t len)
{
        r->p = data;
        r->end = r->p + (data ? len : 0);
        r->error = false;
}

static bool
pb_get_varint(struct pb_reader *r, uint64_t *v)
{
        uint64_t x = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                if (r->p >= r->end)
                        return false;
                unsigned char c = *r->p++;
                x |= (uint64_t) (c & 0x7f) << shift;
                if (!(c & 0x80)) {
                        *v = x;
                        return true;
                }
        }
        return false; /* more than 10 bytes */
}

static bool
pb_get_le(struct pb_reader *r, size_t n, uint64_t *v)
{
        uint64_t x = 0;

        if ((size_t) (r->end - r->p) < n)
                return false;
        for (size_t i = 0; i < n; i++)
                x |= (uint64_t) r->p[i] << (8 * i);
        r->p += n;
        *v = x;
        return true;
}

static bool
pb_get_value(struct pb_reader *r, struct pb_field *f)
{
        uint64_t len;

        switch (f->wire) {
        case PB_VARINT:
                return pb_get_varint(r, &f->varint);
        case PB_FIXED64:
                return pb_get_le(r, 8, &f->varint);
        case PB_FIXED32:
                return pb_get_le(r, 4, &f->varint);
        case PB_LEN:
                if (!pb_get_varint(r, &len) || len > (uint64_t) (r->end - r->p))
                        return false;
                f->data = r->p;
                f->len = (size_t) len;
                r->p += len;
                return true;
        }
        return false; /* groups (3, 4) and unknown wire types */
}

/* Reads the next field. */
bool
pb_next(struct pb_reader *r, struct pb_field *f)
{
        uint64_t tag;

        if (r->error || r->p >= r->end)
                return false;
        memset(f, 0, sizeof(*f));
        if (!pb_get_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > PB_MAX_FIELD) {
                r->error = true;
                return false;
        }
        f->num = (uint32_t) (tag >> 3);
        f->wire = (enum pb_wire)(tag & 7);
        if (!pb_get_value(r, f)) {
                r->error = true;
                return false;
        }
        return true;
}

/* Copies a length-delimited field as a string. */
char *
pb_strdup(const struct pb_field *f)
{
        return f->wire == PB_LEN ? xstrndup((const char *) f->data, f->len) : xstrdup("");
}

/* The last string field num. */
char *
pb_get_string(const void *msg, size_t len, uint32_t num)
{
        struct pb_reader r;
        struct pb_field f;
        char *s = NULL;

        pb_reader_init(&r, msg, len);
        while (pb_next(&r, &f)) {
                if (f.num == num && f.wire == PB_LEN) {
                        free(s);
                        s = pb_strdup(&f);
                }
        }
        if (r.error) {
                free(s);
                return NULL;
        }
        return s;
}

/* Reads a nested message. */
void
pb_sub(const struct pb_field *f, struct pb_reader *sub)
{
        pb_reader_init(sub, f->wire == PB_LEN ? f->data : NULL, f->wire == PB_LEN ? f->len : 0);
}

/* A fixed32 field as a float. */
float
pb_float(const struct pb_field *f)
{
        uint32_t bits = (uint32_t) f->varint;
        float v;

        memcpy(&v, &bits, sizeof(v));
        return v;
}

/* A fixed64 field as a double. */
double
pb_double(const struct pb_field *f)
{
        double v;

        memcpy(&v, &f->varint, sizeof(v));
        return v;
}
