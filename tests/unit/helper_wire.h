/* helper_wire.h — the agent wire format (backends/agent/proto.h) as tests speak it by hand:
 * fake agents in forked children, blocking I/O. */
#ifndef SANDBOXD_HELPER_WIRE_H
#define SANDBOXD_HELPER_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/agent/proto.h"
#include "protocol/util.h"

/* A daemon -> agent stream being read: unstuffed bytes not yet parsed. */
struct wire_in {
        struct buf in;
        bool esc;
};

/* Appends one agent -> daemon message (not stuffed) to b. */
void wire_msg(struct buf *b, uint32_t id, enum agent_msg type, const void *p, size_t len);
/* Reads the next daemon -> agent message from fd (unstuffing; SYNC drops a partial one) into
 * *payload; 0 at EOF. */
int wire_read(int fd, struct wire_in *w, unsigned *type, uint32_t *id, struct buf *payload);
/* Appends a READY echoing nonce, with version and pid, to b. */
void wire_ready(struct buf *b, const void *nonce, uint32_t version, uint32_t pid);

#endif
