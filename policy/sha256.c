/* sha256.c — the policy's public digest helper, on protocol/sha256.c. */
#include "protocol/sha256.h"

#include "policy/policy.h"

/* Public hex SHA-256 (policy.h), for the daemon's audit-log hash chain. */
void
policy_sha256_hex(const void *data, size_t len, char out[65])
{
        sha256_hex(data, len, out);
}
