/* session.c — an agent session's link: connect through the owner, SYNC, authentication of
 * detached agents, HELLO and the READY that echoes its nonce, PING, loss, reconnect with
 * backoff, giving up (the same failure 3 times in a row, or no proven link for the window). The
 * execs on it are exec.c's. */
#include <sys/random.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/agent/session_int.h"
#include "protocol/sha256.h"

#define SESS_BACKOFF_MIN_MS 100u
#define SESS_BACKOFF_MAX_MS 2000u
#define SESS_READY_LEN      36u
#define SESS_SAME_FAILS     3u   /* the same failure this many times in a row: give up */
#define SESS_SAID_MAX       300u /* of an agent's ERROR text, quoted in messages */

static const struct agent_transport_cbs sess_tcbs;
static void sess_connect(struct agent_session *s);

static void
sess_timer_close_cb(uv_handle_t *h)
{
        struct agent_session *s = h->data;

        buf_free(&s->in);
        buf_free(&s->out);
        free(s->backend);
        free(s->where);
        free(s->error);
        free(s->last_said);
        free(s->fail_why);
        free(s);
}

/* Takes a reference. */
void
agent_session_ref(struct agent_session *s)
{
        s->refs++;
}

/* Drops a reference; the last closes the timer and frees. */
void
agent_session_unref(struct agent_session *s)
{
        if (--s->refs > 0)
                return;
        uv_close((uv_handle_t *) &s->timer, sess_timer_close_cb);
}

static void
sess_random(void *p, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t r = getrandom((char *) p + got, n - got, 0);
                if (r > 0)
                        got += (size_t) r;
                else if (r < 0 && errno != EINTR)
                        abort(); /* no randomness: nothing here could be trusted */
        }
}

/* New session. */
struct agent_session *
agent_session_new(uv_loop_t *loop, const struct agent_session_config *cfg,
                  const struct agent_session_cbs *cbs, void *ctx)
{
        struct agent_session *s = xcalloc(1, sizeof(*s));

        s->loop = loop;
        s->cfg = *cfg;
        s->backend = xstrdup(cfg->backend ? cfg->backend : "agent");
        s->where = xstrdup(cfg->where ? cfg->where : "in the sandbox");
        s->cfg.backend = s->backend;
        s->cfg.where = s->where;
        s->cfg.secret_len = MIN(cfg->secret_len, sizeof(s->secret));
        if (cfg->secret)
                memcpy(s->secret, cfg->secret, s->cfg.secret_len);
        s->cfg.secret = cfg->secret ? s->secret : NULL;
        s->cfg.ready_timeout_ms = cfg->ready_timeout_ms ? cfg->ready_timeout_ms : 10000;
        s->cfg.ping_interval_ms = cfg->ping_interval_ms ? cfg->ping_interval_ms : 5000;
        s->cfg.link_timeout_ms = cfg->link_timeout_ms ? cfg->link_timeout_ms : 20000;
        s->cfg.reconnect_timeout_ms = cfg->reconnect_timeout_ms ? cfg->reconnect_timeout_ms : 60000;
        s->adopting = cfg->adopting;
        s->cbs = cbs;
        s->ctx = ctx;
        s->refs = 1;
        list_init(&s->execs);
        uv_timer_init(loop, &s->timer);
        s->timer.data = s;
        return s;
}

/* Sends one message, stuffed. */
void
agent_session_send(struct agent_session *s, uint32_t id, enum agent_msg type, const void *a,
                   size_t alen, const void *b, size_t blen)
{
        unsigned char h[AGENT_HDR_LEN];
        size_t n;

        if (!s->t || s->state < SESS_AUTH || s->state > SESS_UP)
                return;
        agent_hdr(h, (uint32_t) (alen + blen), id, type);
        buf_consume(&s->out, s->out.len);
        buf_reserve(&s->out, 2 * (sizeof(h) + alen + blen));
        n = agent_stuff((unsigned char *) s->out.data, h, sizeof(h));
        n += agent_stuff((unsigned char *) s->out.data + n, a, alen);
        if (blen)
                n += agent_stuff((unsigned char *) s->out.data + n, b, blen);
        s->t->ops->send(s->t, s->out.data, n);
}

/* An id no exec of this session uses (ids are not reused within a session). */
uint32_t
agent_session_new_id(struct agent_session *s)
{
        if (++s->next_id == 0)
                s->next_id = 1;
        return s->next_id;
}

static void
sess_notify(struct agent_session *s, enum backend_link st, const char *why)
{
        if (!s->owner_gone && s->cbs->on_link)
                s->cbs->on_link(s->ctx, st, why);
}

static void
sess_drop_transport(struct agent_session *s)
{
        if (s->t) {
                s->t->ops->close(s->t);
                s->t = NULL;
        }
        s->gen++;
        buf_consume(&s->in, s->in.len);
}

/* Gone for good: execs end, the owner hears it (unless it said so itself). */
static void
sess_gone(struct agent_session *s, const char *why, const struct sbx_error *err, bool killed)
{
        if (s->state == SESS_GONE)
                return;
        s->state = SESS_GONE;
        free(s->error);
        s->error = xstrdup(why);
        uv_timer_stop(&s->timer);
        sess_drop_transport(s);
        agent_session_ref(s);
        agent_exec_fail_all(s, err, killed, s->error);
        sess_notify(s, BACKEND_LINK_GONE, s->error);
        agent_session_unref(s);
}

/* A delay between half and all of ms: sessions that lost their links together (a host or a
 * network gone) do not all come back in the same millisecond. */
static unsigned
sess_jitter(unsigned ms)
{
        uint32_t r;

        sess_random(&r, sizeof(r));
        return ms / 2 + r % (ms / 2 + 1);
}

static void
sess_retry_cb(uv_timer_t *t)
{
        sess_connect(t->data);
}

/* A failure the agent's side gave (the transport had connected): true when it is the
 * SESS_SAME_FAILS-th in a row with the same text and no proven link between — the agent
 * answers every attempt the same way, and trying again cannot help. */
static bool
sess_same_again(struct agent_session *s, const char *why)
{
        if (s->fail_why && strcmp(s->fail_why, why) == 0)
                return ++s->fails >= SESS_SAME_FAILS;
        free(s->fail_why);
        s->fail_why = xstrdup(why);
        s->fails = 1;
        return false;
}

/* How long the session may go without a proven link. */
static uint64_t
sess_window(const struct agent_session *s)
{
        return s->ever_up ? s->cfg.reconnect_timeout_ms : s->cfg.ready_timeout_ms;
}

/* Why to give up instead of trying again (allocated), or NULL: the same failure
 * SESS_SAME_FAILS times in a row, or no proven link for the whole window. */
static char *
sess_give_up(struct agent_session *s, const char *why, bool counted, uint64_t now)
{
        uint64_t limit = sess_window(s);

        if (counted && sess_same_again(s, why))
                return xasprintf("%s: sandboxd-agent %s failed the same way %u times in a row, "
                                 "giving up: %s",
                                 s->backend, s->where, s->fails, why);
        if (now - s->down_since >= limit)
                return xasprintf("%s: lost the link to sandboxd-agent %s for %llu s, giving up: "
                                 "%s",
                                 s->backend, s->where,
                                 (unsigned long long) (now - s->down_since) / 1000, why);
        return NULL;
}

/* The link broke (or never came up): try again with backoff, until sess_give_up says no. A
 * connect that failed is not counted as the agent's answer (a host or network may come back
 * within the window); everything after a transport connected is. */
static void
sess_lost(struct agent_session *s, const char *why)
{
        uint64_t now = util_now_ms();
        bool was_up = s->state == SESS_UP, counted = s->state != SESS_CONNECTING;
        char *msg;

        if (s->state == SESS_GONE)
                return;
        sess_drop_transport(s);
        uv_timer_stop(&s->timer);
        if (was_up)
                agent_exec_link_down(s);
        if (!s->down_since)
                s->down_since = now;
        if ((msg = sess_give_up(s, why, counted, now))) {
                sess_gone(s, msg, NULL, false);
                free(msg);
                return;
        }
        if (s->told_up) { /* the owner heard BACK for this link */
                s->told_up = false;
                sess_notify(s, BACKEND_LINK_LOST, why);
        }
        s->state = SESS_RETRY;
        s->backoff_ms =
                s->backoff_ms ? MIN(2 * s->backoff_ms, SESS_BACKOFF_MAX_MS) : SESS_BACKOFF_MIN_MS;
        uv_timer_start(&s->timer, sess_retry_cb,
                       MIN(sess_jitter(s->backoff_ms), sess_window(s) - (now - s->down_since)), 0);
        if (s->ever_up)
                sess_notify(s, BACKEND_LINK_RECONNECTING, why);
}

static void
sess_send_ping(struct agent_session *s, uint64_t now)
{
        unsigned char tok[8];

        agent_put64(tok, now);
        agent_session_send(s, 0, AGENT_PING, tok, sizeof(tok), NULL, 0);
}

/* The first PONG after READY: the agent took the resumes and the link carries. Only now
 * does a reconnect count as the link back (the owner hears BACK) and the failure count, the
 * window and the backoff start over — a READY followed by an error every time is a loop. */
static void
sess_proven(struct agent_session *s)
{
        if (s->proven)
                return;
        s->proven = true;
        s->down_since = 0;
        s->backoff_ms = 0;
        s->fails = 0;
        free(s->fail_why);
        s->fail_why = NULL;
        if (!s->told_up) {
                s->told_up = true;
                sess_notify(s, BACKEND_LINK_BACK, NULL);
        }
}

static void
sess_ping_cb(uv_timer_t *t)
{
        struct agent_session *s = t->data;
        uint64_t now = util_now_ms();
        char *why;

        if (now - s->last_rx >= s->cfg.link_timeout_ms) {
                why = xasprintf("no answer from sandboxd-agent for %u s (link_timeout)",
                                s->cfg.link_timeout_ms / 1000);
                sess_lost(s, why);
                free(why);
                return;
        }
        sess_send_ping(s, now);
        uv_timer_start(&s->timer, sess_ping_cb, s->cfg.ping_interval_ms, 0);
}

static void
sess_handshake_cb(uv_timer_t *t)
{
        struct agent_session *s = t->data;
        char *why = xasprintf("sandboxd-agent %s did not answer within %u s%s%s%s", s->where,
                              s->cfg.ready_timeout_ms / 1000, s->last_said ? " (it said: " : "",
                              s->last_said ? s->last_said : "", s->last_said ? ")" : "");

        sess_lost(s, why);
        free(why);
}

static void
sess_hello(struct agent_session *s)
{
        unsigned char m[8 + AGENT_NONCE_LEN] = {0};

        sess_random(s->nonce, sizeof(s->nonce));
        agent_put32(m, AGENT_PROTO_VERSION);
        memcpy(m + 4, s->nonce, AGENT_NONCE_LEN);
        s->state = SESS_HELLO;
        s->synced = false;
        agent_session_send(s, 0, AGENT_HELLO, m, sizeof(m), NULL, 0);
}

static void
sess_connected_cb(void *ctx, struct agent_transport *t, const char *error)
{
        static const unsigned char sync[2] = {AGENT_ESC, AGENT_ESC_SYNC};
        struct agent_session *s = ctx;

        s->connecting = false;
        if (s->state != SESS_CONNECTING) { /* closed meanwhile */
                if (t)
                        t->ops->close(t);
                agent_session_unref(s);
                return;
        }
        if (!t) {
                sess_lost(s, error ? error : "cannot connect");
                agent_session_unref(s);
                return;
        }
        s->t = t;
        s->gen++;
        s->last_rx = util_now_ms();
        t->ops->send(t, sync, sizeof(sync));
        if (s->cfg.secret)
                s->state = SESS_AUTH; /* the agent speaks first */
        else
                sess_hello(s);
        /* Last: a transport may hand over bytes it already holds (a detached agent's
         * CHALLENGE) from inside start, and they find the session waiting for them. */
        t->ops->start(t, &sess_tcbs, s);
        agent_session_unref(s);
}

static void
sess_connect(struct agent_session *s)
{
        if (s->state == SESS_GONE || s->connecting)
                return;
        s->state = SESS_CONNECTING;
        free(s->last_said);
        s->last_said = NULL;
        uv_timer_start(&s->timer, sess_handshake_cb, s->cfg.ready_timeout_ms, 0);
        s->connecting = true;
        agent_session_ref(s);
        s->cbs->connect(s->ctx, sess_connected_cb, s);
}

/* Connects for the first time. */
void
agent_session_open(struct agent_session *s)
{
        if (s->state == SESS_IDLE)
                sess_connect(s);
}

/* ---- messages about the link ---- */

static void
sess_mac(struct agent_session *s, const char *label, unsigned char out[SHA256_LEN])
{
        const void *parts[] = {label, s->anonce, s->cnonce};
        const size_t lens[] = {strlen(label), AGENT_AUTH_LEN, AGENT_AUTH_LEN};

        hmac_sha256(s->secret, s->cfg.secret_len, parts, lens, 3, out);
}

static const char *
sess_on_challenge(struct agent_session *s, const unsigned char *p, uint32_t len)
{
        unsigned char m[2 * AGENT_AUTH_LEN];
        static char why[160];

        if (s->state != SESS_AUTH || len != 4 + AGENT_AUTH_LEN)
                return "unexpected CHALLENGE";
        if (agent_get32(p) != AGENT_PROTO_VERSION) {
                snprintf(why, sizeof(why),
                         "sandboxd-agent speaks protocol version %u, this daemon %u: start the "
                         "agent of this sandboxd release",
                         agent_get32(p), AGENT_PROTO_VERSION);
                return why;
        }
        memcpy(s->anonce, p + 4, AGENT_AUTH_LEN);
        sess_random(s->cnonce, sizeof(s->cnonce));
        memcpy(m, s->cnonce, AGENT_AUTH_LEN);
        sess_mac(s, AGENT_AUTH_CLIENT, m + AGENT_AUTH_LEN);
        agent_session_send(s, 0, AGENT_AUTH, m, sizeof(m), NULL, 0);
        return NULL;
}

static const char *
sess_on_auth_ok(struct agent_session *s, const unsigned char *p, uint32_t len)
{
        unsigned char want[SHA256_LEN];

        if (s->state != SESS_AUTH || len != SHA256_LEN)
                return "unexpected AUTH_OK";
        sess_mac(s, AGENT_AUTH_AGENT, want);
        if (!sha256_equal(want, p, SHA256_LEN))
                return "the agent could not prove it knows the secret (not the agent this "
                       "daemon started)";
        sess_hello(s);
        return NULL;
}

static const char *
sess_on_ready(struct agent_session *s, const unsigned char *p, uint32_t len)
{
        static char why[200];
        const char *refused;
        uint64_t inst;

        if (s->state != SESS_HELLO || len != SESS_READY_LEN)
                return "unexpected READY";
        if (agent_get32(p) != AGENT_PROTO_VERSION) {
                snprintf(why, sizeof(why),
                         "sandboxd-agent %s speaks protocol version %u, this daemon %u: it is "
                         "from another sandboxd release (recreate the sandbox)",
                         s->where, agent_get32(p), AGENT_PROTO_VERSION);
                sess_gone(s, why, NULL, false);
                return NULL;
        }
        s->ready.version = agent_get32(p);
        s->ready.pid = agent_get32(p + 4);
        s->ready.instance = inst = agent_get64(p + 24);
        s->ready.detached = (agent_get32(p + 32) & AGENT_READY_DETACHED) != 0;
        refused = s->cbs->check_ready && !s->owner_gone ? s->cbs->check_ready(s->ctx, &s->ready)
                                                        : NULL;
        if (refused) {
                snprintf(why, sizeof(why), "%s", refused);
                sess_gone(s, why, NULL, false);
                return NULL;
        }
        if (s->instance && s->instance != inst)
                agent_exec_agent_restarted(s, !s->ready.detached);
        s->instance = inst;
        s->state = SESS_UP;
        s->proven = false;
        uv_timer_start(&s->timer, sess_ping_cb, s->cfg.ping_interval_ms, 0);
        agent_exec_link_up(s);
        if (!s->adopting)
                agent_session_send(s, 0, AGENT_RESUME_END, NULL, 0, NULL, 0);
        sess_send_ping(s, util_now_ms()); /* its PONG proves the link (sess_proven) */
        if (!s->ever_up) { /* the first READY: owners starting a sandbox wait for it */
                s->ever_up = s->told_up = true;
                sess_notify(s, BACKEND_LINK_BACK, NULL);
        }
        return NULL;
}

/* The agent refused something: before READY that ends the session for good. */
static const char *
sess_on_error(struct agent_session *s, const unsigned char *p, uint32_t len)
{
        static char said[340];
        char *why;

        if (s->state == SESS_UP) {
                snprintf(said, sizeof(said), "sandboxd-agent reported: %.*s",
                         (int) strnlen((const char *) p, MIN(len, SESS_SAID_MAX)),
                         (const char *) p);
                return said;
        }
        why = xasprintf("sandboxd-agent %s refused the session: %.*s", s->where,
                        (int) strnlen((const char *) p, MIN(len, SESS_SAID_MAX)), (const char *) p);
        sess_gone(s, why, NULL, false);
        free(why);
        return NULL;
}

static const char *
sess_dispatch(struct agent_session *s, uint32_t id, unsigned type, const unsigned char *p,
              uint32_t len)
{
        if (id != 0)
                return s->state == SESS_UP ? agent_exec_dispatch(s, id, type, p, len)
                                           : "exec message before READY";
        switch (type) {
        case AGENT_READY:
                return sess_on_ready(s, p, len);
        case AGENT_CHALLENGE:
                return sess_on_challenge(s, p, len);
        case AGENT_AUTH_OK:
                return sess_on_auth_ok(s, p, len);
        case AGENT_ERROR:
                return sess_on_error(s, p, len);
        case AGENT_PONG:
                if (s->state == SESS_UP)
                        sess_proven(s);
                return NULL;
        default:
                return "unknown message on channel 0";
        }
}

/* Notes the last complete ERROR (id 0) among the n bytes skipped before READY (a refusal says
 * why there); true when it ends them: nothing came after it, as after the ERROR that answers
 * this attempt's HELLO (the agent then sends nothing until the next SYNC, or closes). An ERROR
 * that more bytes follow is stale, from an earlier session. */
static bool
sess_note_error(struct agent_session *s, const char *from, size_t n)
{
        static const unsigned char tag[8] = {0, 0, 0, 0, AGENT_ERROR, 0, 0, 0};
        const char *hit, *said = NULL;
        size_t at = 0, h, end = 0;
        uint32_t len;

        while ((hit = memmem(from + at, n - at, tag, sizeof(tag)))) {
                h = (size_t) (hit - from);
                at = h + 1;
                if (h < 4)
                        continue;
                len = agent_get32((const unsigned char *) hit - 4);
                if (len == 0 || len > SESS_SAID_MAX || h + 8 + len > n || hit[8 + len - 1])
                        continue;
                said = hit + 8;
                end = h + 8 + len;
        }
        if (!said)
                return false;
        free(s->last_said);
        s->last_said = xstrdup(said);
        return end == n;
}

enum sess_sync {
        SESS_SYNC_WAIT,    /* no READY for this HELLO yet */
        SESS_SYNC_READY,   /* s->in starts with it */
        SESS_SYNC_REFUSED, /* the agent answered the HELLO with an ERROR (s->last_said) */
};

/* Before READY: drops everything ahead of the READY that echoes our nonce. What it drops
 * keeps the tail that may begin a READY or an ERROR cut by the read. */
static enum sess_sync
sess_sync(struct agent_session *s)
{
        unsigned char want[AGENT_HDR_LEN];
        size_t off = 0;

        agent_hdr(want, SESS_READY_LEN, 0, AGENT_READY);
        while (s->in.len - off >= AGENT_HDR_LEN + SESS_READY_LEN) {
                const char *hit = memmem(s->in.data + off, s->in.len - off, want, sizeof(want));
                if (!hit) {
                        off = s->in.len - MIN(s->in.len, AGENT_HDR_LEN + SESS_SAID_MAX);
                        break;
                }
                off = (size_t) (hit - s->in.data);
                if (s->in.len - off < AGENT_HDR_LEN + SESS_READY_LEN)
                        break;
                if (memcmp(hit + AGENT_HDR_LEN + 8, s->nonce, AGENT_NONCE_LEN) == 0) {
                        sess_note_error(s, s->in.data, off);
                        buf_consume(&s->in, off);
                        return SESS_SYNC_READY;
                }
                off++;
        }
        if (sess_note_error(s, s->in.data, s->in.len)) /* the answer, or what ended the rest */
                return SESS_SYNC_REFUSED;
        buf_consume(&s->in, off);
        return SESS_SYNC_WAIT;
}

/* The agent answered this attempt's HELLO with an ERROR: the attempt fails now, counted as
 * the agent's answer (giving up when it is the same every time), not at the handshake
 * timeout. */
static void
sess_refused(struct agent_session *s)
{
        char *why =
                xasprintf("sandboxd-agent %s refused the handshake: %s", s->where, s->last_said);

        sess_lost(s, why);
        free(why);
}

/* Dispatches one complete message; false when the link changed under it (stop parsing). */
static bool
sess_message(struct agent_session *s, unsigned gen, const unsigned char *h)
{
        const char *err =
                sess_dispatch(s, agent_get32(h + 4), h[8], h + AGENT_HDR_LEN, agent_get32(h));
        char *why;

        if (err && s->gen == gen) {
                why = xasprintf("protocol error: %s", err);
                if (s->state == SESS_UP)
                        sess_lost(s, why);
                else
                        sess_gone(s, why, NULL, false);
                free(why);
        }
        return s->gen == gen;
}

/* Parses messages out of p (n bytes); returns how many bytes it consumed (a trailing partial
 * message is left). Stops early when the link changes. */
static size_t
sess_parse(struct agent_session *s, unsigned gen, const unsigned char *p, size_t n)
{
        size_t off = 0;

        while (n - off >= AGENT_HDR_LEN) {
                uint32_t mlen = agent_get32(p + off);
                if (mlen > AGENT_MAX_PAYLOAD) {
                        sess_lost(s, "sandboxd-agent sent an oversized message");
                        return n;
                }
                if (n - off < AGENT_HDR_LEN + mlen)
                        break;
                if (!sess_message(s, gen, p + off))
                        return n;
                off += AGENT_HDR_LEN + mlen;
        }
        return off;
}

/* Completes the partial message held in s->in from data; returns the bytes of data taken. */
static size_t
sess_complete(struct agent_session *s, unsigned gen, const char *data, size_t len)
{
        size_t need = AGENT_HDR_LEN, take;

        if (s->in.len >= AGENT_HDR_LEN) {
                if (agent_get32((const unsigned char *) s->in.data) > AGENT_MAX_PAYLOAD) {
                        sess_lost(s, "sandboxd-agent sent an oversized message");
                        return len;
                }
                need += agent_get32((const unsigned char *) s->in.data);
        }
        take = MIN(need - s->in.len, len);
        buf_append(&s->in, data, take);
        if (s->in.len == AGENT_HDR_LEN && agent_get32((unsigned char *) s->in.data) > 0)
                return take + sess_complete(s, gen, data + take, len - take);
        if (s->in.len < need)
                return take;
        if (sess_message(s, gen, (const unsigned char *) s->in.data) && s->gen == gen)
                buf_consume(&s->in, s->in.len);
        return take;
}

/* Incoming bytes: complete messages are handled where they are (the hot path of output),
 * only a message cut by the read is copied. */
static void
sess_data_cb(void *ctx, const char *data, size_t len)
{
        struct agent_session *s = ctx;
        unsigned gen = s->gen;
        enum sess_sync sync;
        size_t used;

        s->last_rx = util_now_ms();
        agent_session_ref(s);
        if (s->state == SESS_HELLO && !s->synced) {
                buf_append(&s->in, data, len);
                len = 0;
                sync = sess_sync(s);
                if (sync == SESS_SYNC_REFUSED) {
                        sess_refused(s);
                } else if ((s->synced = sync == SESS_SYNC_READY)) {
                        used = sess_parse(s, gen, (unsigned char *) s->in.data, s->in.len);
                        if (s->gen == gen)
                                buf_consume(&s->in, used);
                }
        }
        while (len && s->in.len && s->gen == gen) {
                used = sess_complete(s, gen, data, len);
                data += used;
                len -= used;
        }
        if (len && s->gen == gen) {
                used = sess_parse(s, gen, (const unsigned char *) data, len);
                if (s->gen == gen)
                        buf_append(&s->in, data + used, len - used);
        }
        agent_session_unref(s);
}

static void
sess_end_cb(void *ctx, const char *error)
{
        struct agent_session *s = ctx;
        char *why = xasprintf("the stream to sandboxd-agent ended: %s%s%s%s",
                              error ? error : "end of stream", s->last_said ? " (it said: " : "",
                              s->last_said ? s->last_said : "", s->last_said ? ")" : "");

        sess_lost(s, why);
        free(why);
}

static const struct agent_transport_cbs sess_tcbs = {
        .on_data = sess_data_cb,
        .on_end = sess_end_cb,
};

/* ---- the owner's calls ---- */

/* Whether it can still carry execs. */
bool
agent_session_alive(const struct agent_session *s)
{
        return s && s->state != SESS_GONE;
}

/* Why it went. */
const char *
agent_session_error(const struct agent_session *s)
{
        return s ? s->error : NULL;
}

/* The owner's final word. */
void
agent_session_close(struct agent_session *s, const struct sbx_error *err, bool killed)
{
        if (!s)
                return;
        s->owner_gone = true;
        sess_gone(s, err ? err->message : "the sandbox is going away", err, killed);
        agent_session_unref(s);
}

/* Shutdown: leave everything running in the agent. */
void
agent_session_detach(struct agent_session *s)
{
        struct sbx_error err = {0};

        if (!s)
                return;
        sbx_error_backend(&err, s->backend, "the daemon is shutting down");
        agent_session_close(s, &err, false);
        sbx_error_clear(&err);
}

/* A new round of attempts. */
void
agent_session_retry(struct agent_session *s)
{
        if (s->owner_gone || (s->state != SESS_GONE && s->state != SESS_RETRY))
                return;
        s->state = SESS_RETRY;
        s->down_since = 0;
        s->backoff_ms = 0;
        s->fails = 0;
        sess_connect(s);
}

/* The daemon adopted every exec it knew: the agent may drop the rest. */
void
agent_session_adopt_done(struct agent_session *s)
{
        if (!s || !s->adopting)
                return;
        s->adopting = false;
        if (s->state == SESS_UP)
                agent_session_send(s, 0, AGENT_RESUME_END, NULL, 0, NULL, 0);
}
