/* session_int.h — private to backends/agent/session.c (the link) and exec.c (the execs on it).
 * Loop thread only. */
#ifndef SANDBOXD_AGENT_SESSION_INT_H
#define SANDBOXD_AGENT_SESSION_INT_H

#include "backends/agent/proto.h"
#include "backends/agent/session.h"
#include "protocol/list.h"
#include "protocol/util.h"

enum sess_state {
        SESS_IDLE,       /* not opened yet */
        SESS_CONNECTING, /* the owner is opening a transport */
        SESS_AUTH,       /* detached agent: CHALLENGE / AUTH_OK */
        SESS_HELLO,      /* HELLO sent, looking for its READY */
        SESS_UP,
        SESS_RETRY, /* lost; the next connect is due */
        SESS_GONE,
};

struct agent_session {
        uv_loop_t *loop;
        struct agent_session_config cfg; /* strings and secret point into the fields below */
        char *backend, *where;
        unsigned char secret[64];
        const struct agent_session_cbs *cbs;
        void *ctx;
        int refs;
        enum sess_state state;
        bool owner_gone; /* closed or detached: no owner callback any more */
        bool connecting; /* a connect callback is pending */
        bool ever_up, adopting, synced;
        bool proven;  /* a PONG came on this link since its READY (sess_proven) */
        bool told_up; /* the owner's last word from us about the link was BACK */
        struct agent_transport *t;
        unsigned gen;   /* bumped on every transport change */
        struct buf in;  /* incoming bytes not yet parsed */
        struct buf out; /* stuffing scratch */
        unsigned char nonce[AGENT_NONCE_LEN];
        unsigned char anonce[AGENT_AUTH_LEN], cnonce[AGENT_AUTH_LEN];
        struct agent_ready ready;
        uint64_t instance; /* of the agent last seen, 0 before */
        uint32_t next_id;
        struct list execs; /* struct agent_exec */
        uv_timer_t timer;  /* handshake timeout, retry backoff, ping */
        uint64_t last_rx, down_since;
        unsigned backoff_ms;
        char *error;     /* why it is gone */
        char *last_said; /* the last ERROR seen before READY (for messages) */
        char *fail_why;  /* the last failure after a connect, and how many in a row */
        unsigned fails;
};

/* Sends one message (stuffed) when a transport is open. */
void agent_session_send(struct agent_session *s, uint32_t id, enum agent_msg type, const void *a,
                        size_t alen, const void *b, size_t blen);
/* An exec id unused in this session. */
uint32_t agent_session_new_id(struct agent_session *s);
/* The link is up (READY accepted): every exec is started or resumed on it. */
void agent_exec_link_up(struct agent_session *s);
/* The link went: no exec has an id any more. */
void agent_exec_link_down(struct agent_session *s);
/* The agent restarted: what ran in the old one is lost (killed: its processes are dead). */
void agent_exec_agent_restarted(struct agent_session *s, bool killed);
/* The session is gone for good: every exec ends (see agent_session_close). */
void agent_exec_fail_all(struct agent_session *s, const struct sbx_error *err, bool killed,
                         const char *why);
/* A message for exec id; NULL, or the protocol error (the link is then dropped). */
const char *agent_exec_dispatch(struct agent_session *s, uint32_t id, unsigned type,
                                const unsigned char *p, uint32_t len);
void agent_session_ref(struct agent_session *s);
void agent_session_unref(struct agent_session *s);

#endif
