/* modal_pb.h — the protobuf wire format, by hand, for the few Modal messages the backend uses.
 *
 * Why not protobuf-c: it cannot compile proto3 `optional` (Modal's api.proto has over a hundred
 * of them), and the backend needs about twenty messages. The encoder appends fields to a
 * struct buf; nested messages are built in their own buffer and appended as bytes. The decoder
 * walks one message's fields in order without allocating; unknown fields are skipped, a
 * truncated or malformed message is an error (never a partial read taken for a whole one).
 * Pure; no state.
 */
#ifndef SANDBOXD_MODAL_PB_H
#define SANDBOXD_MODAL_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/util.h"

enum pb_wire {
        PB_VARINT = 0,
        PB_FIXED64 = 1,
        PB_LEN = 2,
        PB_FIXED32 = 5,
};

/* Encoders: each appends one field (tag + value). Zero values are written too: proto3 readers
 * treat a present zero like an absent field, and `optional` fields need the presence. */
void pb_put_varint(struct buf *b, uint32_t field, uint64_t v);
void pb_put_bool(struct buf *b, uint32_t field, bool v);
void pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len);
void pb_put_str(struct buf *b, uint32_t field, const char *s); /* NULL writes nothing */
void pb_put_float(struct buf *b, uint32_t field, float v);
void pb_put_double(struct buf *b, uint32_t field, double v);
/* A nested message (sub's bytes, borrowed). */
void pb_put_msg(struct buf *b, uint32_t field, const struct buf *sub);
/* A message {1: key, 2: value}: a map<string,string> entry, or a pair like Modal's SandboxTag. */
void pb_put_map_entry(struct buf *b, uint32_t field, const char *key, const char *value);

/* Decoder over one message (borrowed bytes). */
struct pb_reader {
        const unsigned char *p, *end;
        bool error; /* set by pb_next on malformed input; stays set */
};

struct pb_field {
        uint32_t num;
        enum pb_wire wire;
        uint64_t varint;           /* PB_VARINT, PB_FIXED64 (raw bits), PB_FIXED32 (raw bits) */
        const unsigned char *data; /* PB_LEN */
        size_t len;
};

void pb_reader_init(struct pb_reader *r, const void *data, size_t len);
/* The next field: true and *f filled, or false at the end or on malformed input (r->error). */
bool pb_next(struct pb_reader *r, struct pb_field *f);
/* A PB_LEN field's bytes as a new NUL-terminated string (cut at an embedded NUL); "" for a
 * field of another wire type. */
char *pb_strdup(const struct pb_field *f);
/* The string field num of a message (the last occurrence, as protobuf has it), new; NULL when
 * absent or when the message is malformed. */
char *pb_get_string(const void *msg, size_t len, uint32_t num);
/* A PB_LEN field as a nested reader. */
void pb_sub(const struct pb_field *f, struct pb_reader *sub);
float pb_float(const struct pb_field *f);
double pb_double(const struct pb_field *f);

#endif
