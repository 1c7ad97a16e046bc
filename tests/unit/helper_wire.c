/* helper_wire.c — see helper_wire.h. */
#include "tests/unit/helper_wire.h"

#include <string.h>
#include <unistd.h>

/* One message, header and payload. */
void
wire_msg(struct buf *b, uint32_t id, enum agent_msg type, const void *p, size_t len)
{
        unsigned char h[AGENT_HDR_LEN];

        agent_hdr(h, (uint32_t) len, id, type);
        buf_append(b, h, sizeof(h));
        if (len)
                buf_append(b, p, len);
}

/* The next message, unstuffed. */
int
wire_read(int fd, struct wire_in *w, unsigned *type, uint32_t *id, struct buf *payload)
{
        unsigned char c;

        for (;;) {
                const unsigned char *h = (const unsigned char *) w->in.data;
                if (w->in.len >= AGENT_HDR_LEN && w->in.len >= AGENT_HDR_LEN + agent_get32(h)) {
                        uint32_t len = agent_get32(h);
                        *id = agent_get32(h + 4);
                        *type = h[8];
                        buf_consume(payload, payload->len);
                        buf_append(payload, w->in.data + AGENT_HDR_LEN, len);
                        buf_consume(&w->in, AGENT_HDR_LEN + len);
                        return 1;
                }
                if (read(fd, &c, 1) != 1)
                        return 0;
                if (w->esc && c == AGENT_ESC_SYNC)
                        buf_consume(&w->in, w->in.len);
                else if (w->esc || c != AGENT_ESC)
                        buf_append(&w->in, w->esc ? "\xfe" : (const char *) &c, 1);
                w->esc = !w->esc && c == AGENT_ESC;
        }
}

/* READY: version, pid, the HELLO's nonce, an instance, no flags. */
void
wire_ready(struct buf *b, const void *nonce, uint32_t version, uint32_t pid)
{
        unsigned char r[36] = {0};

        agent_put32(r, version);
        agent_put32(r + 4, pid);
        memcpy(r + 8, nonce, AGENT_NONCE_LEN);
        agent_put64(r + 24, 0x5eed);
        wire_msg(b, 0, AGENT_READY, r, sizeof(r));
}
