/* docker_agent.c — the channel to a sandbox's resident sandboxd-agent.
 *
 * A docker sandbox's main process is sandboxd-agent (mounted read-only from the host at
 * AGENT_PATH). The daemon attaches once to the container's stdin/stdout and speaks the
 * protocol of backends/agent_proto.h over that stream; every exec of the sandbox then costs one
 * fork in the container instead of a `runc exec`. This file owns the connection, the HELLO/
 * READY handshake and message framing, and routes each incoming message by id to whoever
 * registered it (an exec, a kill request). The attach stream is reachable only through the
 * Docker API: nothing inside the container can open it, and the agent is not dumpable, so a
 * process in the container cannot write requests into the agent's stdin either.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/agent_proto.h"
#include "backends/docker_int.h"

#define AGENT_READY_TIMEOUT_MS 10000u

struct docker_agent {
        struct backend_sandbox *sb; /* borrowed; NULL once the sandbox is gone */
        struct docker_hijack hj;
        int refs;
        enum { AGENT_CONNECTING, AGENT_UP, AGENT_DOWN } state;
        struct buf in;    /* a partial incoming message */
        struct buf early; /* messages queued before READY */
        uint32_t next_id;
        char nonce[AGENT_NONCE_LEN + 1]; /* hex, NUL-terminated; the first 16 bytes are sent */
        struct list subs;                /* struct docker_agent_sub */
        uv_timer_t timer;                /* READY timeout */
        docker_agent_ready_cb ready_cb;
        void *ready_ctx;
        char *error; /* why the channel is down */
};

static void
agent_ref_cb(void *ctx)
{
        struct docker_agent *ag = ctx;

        ag->refs++;
}

static void
agent_unref_cb(void *ctx)
{
        struct docker_agent *ag = ctx;

        if (--ag->refs > 0)
                return;
        buf_free(&ag->in);
        buf_free(&ag->early);
        free(ag->error);
        free(ag);
}

static void
agent_timer_close_cb(uv_handle_t *h)
{
        agent_unref_cb(h->data);
}

static void
agent_ready_done(struct docker_agent *ag, const char *error)
{
        docker_agent_ready_cb cb = ag->ready_cb;

        if (!uv_is_closing((uv_handle_t *) &ag->timer))
                uv_close((uv_handle_t *) &ag->timer, agent_timer_close_cb);
        ag->ready_cb = NULL;
        if (cb)
                cb(ag->ready_ctx, error);
}

/* Takes the channel down: every registered party hears why, once. */
static void
agent_down(struct docker_agent *ag, const char *why)
{
        if (ag->state == AGENT_DOWN)
                return;
        ag->state = AGENT_DOWN;
        ag->error = xstrdup(why);
        docker_hijack_close(&ag->hj);
        agent_ref_cb(ag);
        agent_ready_done(ag, why);
        /* One at a time from the head: an on_gone may unlink others. */
        while (!list_empty(&ag->subs)) {
                struct docker_agent_sub *s =
                        LIST_ENTRY(ag->subs.next, struct docker_agent_sub, link);
                list_del(&s->link);
                s->on_gone(s->ctx, ag->error);
        }
        agent_unref_cb(ag);
}

static struct docker_agent_sub *
agent_find(struct docker_agent *ag, uint32_t id)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &ag->subs)
        {
                struct docker_agent_sub *s = LIST_ENTRY(pos, struct docker_agent_sub, link);
                if (s->id == id)
                        return s;
        }
        return NULL;
}

static void
agent_on_ready(struct docker_agent *ag, const unsigned char *p, uint32_t len)
{
        if (len != 8 + AGENT_NONCE_LEN || agent_get32(p) != AGENT_PROTO_VERSION) {
                agent_down(ag, "sandboxd-agent in the container speaks another protocol version "
                               "(recreate the sandbox)");
                return;
        }
        if (agent_get32(p + 4) != 1) {
                /* Something else is the container's init and holds its stdio (an image
                 * entrypoint that does not exec, PidMode host): the stream is not private. */
                char *why = xasprintf("sandboxd-agent runs as pid %u, not as the container's "
                                      "init (pid 1), so other processes share its request stream",
                                      agent_get32(p + 4));
                agent_down(ag, why);
                free(why);
                return;
        }
        ag->state = AGENT_UP;
        if (ag->early.len)
                docker_hijack_send(&ag->hj, ag->early.data, ag->early.len);
        buf_free(&ag->early);
        agent_ready_done(ag, NULL);
}

/* One complete message. */
static void
agent_dispatch(struct docker_agent *ag, uint32_t id, int type, const unsigned char *p, uint32_t len)
{
        struct docker_agent_sub *s;

        if (type == AGENT_READY && id == 0) {
                agent_on_ready(ag, p, len);
                return;
        }
        if (type == AGENT_ERROR) {
                char *why = xasprintf("sandboxd-agent reported a protocol error: %.*s",
                                      (int) MIN(len, 200u), (const char *) p);
                agent_down(ag, why);
                free(why);
                return;
        }
        s = agent_find(ag, id);
        if (s)
                s->on_msg(s->ctx, type, p, len);
}

/* Before READY: drops everything ahead of the READY that echoes our nonce (the stream may
 * start with the tail of an earlier session's output, even mid-message). Returns whether it
 * is at the start of ag->in. */
static bool
agent_sync(struct docker_agent *ag)
{
        unsigned char want[AGENT_HDR_LEN + 8 + AGENT_NONCE_LEN];
        const size_t keep = sizeof(want) - 1;
        size_t off = 0;

        agent_hdr(want, 8 + AGENT_NONCE_LEN, 0, AGENT_READY);
        while (ag->in.len - off >= sizeof(want)) {
                const char *hit = memmem(ag->in.data + off, ag->in.len - off, want, AGENT_HDR_LEN);
                if (!hit) {
                        off = ag->in.len - keep;
                        break;
                }
                off = (size_t) (hit - ag->in.data);
                if (ag->in.len - off < sizeof(want))
                        break;
                if (agent_get32((const unsigned char *) hit + AGENT_HDR_LEN) ==
                            AGENT_PROTO_VERSION &&
                    memcmp(hit + AGENT_HDR_LEN + 8, ag->nonce, AGENT_NONCE_LEN) == 0) {
                        buf_consume(&ag->in, off);
                        return true;
                }
                off++;
        }
        buf_consume(&ag->in, off);
        return false;
}

static void
agent_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct docker_agent *ag = ctx;
        size_t off = 0;

        if (stream != 1 || ag->state == AGENT_DOWN)
                return; /* docker-init's own warnings, if any, go to stderr */
        buf_append(&ag->in, data, len);
        if (ag->state == AGENT_CONNECTING && !agent_sync(ag))
                return;
        while (ag->state != AGENT_DOWN && ag->in.len - off >= AGENT_HDR_LEN) {
                const unsigned char *h = (const unsigned char *) ag->in.data + off;
                uint32_t mlen = agent_get32(h);
                if (mlen > AGENT_MAX_PAYLOAD) {
                        agent_down(ag, "sandboxd-agent sent an oversized message");
                        break;
                }
                if (ag->in.len - off < AGENT_HDR_LEN + mlen)
                        break;
                off += AGENT_HDR_LEN + mlen;
                agent_dispatch(ag, agent_get32(h + 4), h[8], h + AGENT_HDR_LEN, mlen);
        }
        buf_consume(&ag->in, MIN(off, ag->in.len));
}

static void
agent_open_cb(void *ctx)
{
        struct docker_agent *ag = ctx;
        unsigned char m[AGENT_HDR_LEN + 4 + AGENT_NONCE_LEN];

        agent_hdr(m, 4 + AGENT_NONCE_LEN, 0, AGENT_HELLO);
        agent_put32(m + AGENT_HDR_LEN, AGENT_PROTO_VERSION);
        memcpy(m + AGENT_HDR_LEN + 4, ag->nonce, AGENT_NONCE_LEN);
        docker_hijack_send(&ag->hj, m, sizeof(m));
}

static void
agent_end_cb(void *ctx, const char *error)
{
        struct docker_agent *ag = ctx;
        char *why = xasprintf("the connection to sandboxd-agent ended: %s",
                              error ? error : "the container's main process exited");

        agent_down(ag, why);
        free(why);
}

static const struct docker_hijack_cbs agent_hijack_cbs = {
        .ref = agent_ref_cb,
        .unref = agent_unref_cb,
        .on_open = agent_open_cb,
        .on_data = agent_data_cb,
        .on_end = agent_end_cb,
};

static void
agent_timeout_cb(uv_timer_t *t)
{
        agent_down(t->data, "sandboxd-agent did not answer within 10 s");
}

/* Attaches to sb's container and greets the agent; cb (may be NULL) hears when it is ready or
 * why not. The channel is down at once (cb called before returning) if no request can start. */
struct docker_agent *
docker_agent_open(struct backend_sandbox *sb, void *ctx, docker_agent_ready_cb cb)
{
        struct docker_agent *ag = xcalloc(1, sizeof(*ag));
        char *path = xasprintf("/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1", sb->cid);
        int rc;

        ag->sb = sb;
        ag->refs = 1;
        util_random_hex(ag->nonce, AGENT_NONCE_LEN);
        list_init(&ag->subs);
        ag->ready_cb = cb;
        ag->ready_ctx = ctx;
        ag->hj.cbs = &agent_hijack_cbs;
        ag->hj.ctx = ag;
        uv_timer_init(docker.loop, &ag->timer);
        ag->timer.data = ag;
        agent_ref_cb(ag); /* the timer handle */
        uv_timer_start(&ag->timer, agent_timeout_cb, AGENT_READY_TIMEOUT_MS, 0);
        rc = docker_hijack_open(&ag->hj, "attach", path, NULL, false);
        free(path);
        if (rc < 0) {
                char *why = xasprintf("cannot attach to the container: %s",
                                      rc == -EAFNOSUPPORT ? "plain tcp:// needs a numeric address"
                                                          : strerror(-rc));
                agent_down(ag, why);
                free(why);
        }
        return ag;
}

/* Takes a reference (NULL is ignored). */
void
docker_agent_ref(struct docker_agent *ag)
{
        if (ag)
                agent_ref_cb(ag);
}

/* Drops a reference (NULL is ignored). */
void
docker_agent_unref(struct docker_agent *ag)
{
        if (ag)
                agent_unref_cb(ag);
}

/* Whether the channel can still carry requests (connecting or up). */
bool
docker_agent_alive(const struct docker_agent *ag)
{
        return ag && ag->state != AGENT_DOWN;
}

/* Why the channel is down (borrowed), or NULL. */
const char *
docker_agent_error(const struct docker_agent *ag)
{
        return ag ? ag->error : NULL;
}

/* A fresh message id. */
uint32_t
docker_agent_id(struct docker_agent *ag)
{
        if (++ag->next_id == 0)
                ag->next_id = 1;
        return ag->next_id;
}

/* Registers s (caller-owned, s->id set) for messages with its id. */
void
docker_agent_sub(struct docker_agent *ag, struct docker_agent_sub *s)
{
        list_add_tail(&ag->subs, &s->link);
}

/* Sends a message whose payload is a then b (both copied, b may be NULL). Queued before
 * READY; dropped once the channel is down (its subscribers heard on_gone already). */
void
docker_agent_send(struct docker_agent *ag, enum agent_msg type, uint32_t id, const void *a,
                  size_t alen, const void *b, size_t blen)
{
        unsigned char h[AGENT_HDR_LEN];

        agent_hdr(h, (uint32_t) (alen + blen), id, type);
        if (ag->state == AGENT_DOWN)
                return;
        if (ag->state == AGENT_CONNECTING) {
                buf_append(&ag->early, h, sizeof(h));
                buf_append(&ag->early, a, alen);
                if (blen)
                        buf_append(&ag->early, b, blen);
                return;
        }
        if (!blen) {
                docker_hijack_send2(&ag->hj, h, sizeof(h), a, alen);
                return;
        }
        struct buf m = {0};
        buf_append(&m, h, sizeof(h));
        buf_append(&m, a, alen);
        buf_append(&m, b, blen);
        docker_hijack_send(&ag->hj, m.data, m.len);
        buf_free(&m);
}

/* Closes the channel (the sandbox is going away); subscribers hear why. */
void
docker_agent_close(struct docker_agent *ag, const char *why)
{
        if (!ag)
                return;
        ag->sb = NULL;
        agent_down(ag, why);
        agent_unref_cb(ag);
}
