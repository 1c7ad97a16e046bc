/* sha256.h — SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104). Pure, libc only: shared by the
 * policy (rules-file digest), the daemon (audit chain, agent sessions) and sandboxd-agent. */
#ifndef SANDBOXD_SHA256_H
#define SANDBOXD_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

/* An incremental digest (files hashed in pieces): init, update*, final. */
struct sha256_ctx {
        uint32_t h[8];
        unsigned char buf[64];
        size_t used;
        uint64_t len;
};
void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, unsigned char out[SHA256_LEN]);

/* Digest of data into out. */
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
/* Lower-case hex digest of data (64 characters and a NUL). */
void sha256_hex(const void *data, size_t len, char out[65]);
/* HMAC-SHA-256 of the concatenation of parts[0..n) (each len bytes) under key. */
void hmac_sha256(const void *key, size_t klen, const void *const *parts, const size_t *lens,
                 size_t n, unsigned char out[SHA256_LEN]);
/* Constant-time comparison of n bytes: 1 when equal. */
int sha256_equal(const void *a, const void *b, size_t n);

#endif
