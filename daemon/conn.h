/* conn.h — one client connection: NDJSON framing, JSON-RPC dispatch, a bounded write queue with
 * backpressure, server-to-client requests, and watchers told when the connection drains or
 * closes. Loop thread only. A conn is refcounted: conn_ref/conn_unref; the memory goes when the
 * handle is closed and the last reference dropped. */
#ifndef SANDBOXD_CONN_H
#define SANDBOXD_CONN_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "protocol/error.h"
#include "protocol/list.h"

struct conn;

enum conn_role {
        CONN_ROLE_INTERACTIVE = 0,
        CONN_ROLE_SUBAGENT,
        CONN_ROLE_BATCH,
};

/* Something that must hear about the connection: jobs streaming to it, waiters. */
struct conn_watch {
        struct list node;
        /* The connection is closing; the watch has been unlinked already. */
        void (*on_close)(struct conn_watch *w);
        /* The write queue went below the low watermark again (may be NULL). */
        void (*on_drain)(struct conn_watch *w);
};

/* Response to a server-to-client request: result or error (one is NULL; both NULL when the
 * connection closed or the call was cancelled). Borrowed for the call. */
typedef void (*conn_call_cb)(void *ctx, json_t *result, json_t *error);

/* Accepts a pending connection on server and reads the peer's credentials (SO_PEERCRED,
 * SO_PEERGROUPS). Returns NULL on failure. */
struct conn *conn_accept(uv_stream_t *server);
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);
/* Starts closing (idempotent): watchers and pending calls are told, then the handle closes. */
void conn_close(struct conn *c);
bool conn_closing(const struct conn *c);

uint64_t conn_id(const struct conn *c);
uid_t conn_uid(const struct conn *c);
gid_t conn_gid(const struct conn *c);
pid_t conn_pid(const struct conn *c);
/* Supplementary groups from SO_PEERGROUPS (borrowed). */
const gid_t *conn_groups(const struct conn *c, size_t *n);
enum conn_role conn_role(const struct conn *c);
/* daemon.hello: sets the role once; false (nothing changed) when it was set before. A confined
 * connection stays CONN_ROLE_SUBAGENT whatever role is asked for. */
bool conn_set_role(struct conn *c, enum conn_role role, bool auto_approve, const char *client);
bool conn_auto_approve(const struct conn *c);
/* Whether the client said daemon.hello on this connection. */
bool conn_said_hello(const struct conn *c);
/* The peer runs inside the daemon's own process trees (daemon/peer.h): from now on its role is
 * subagent, and its ASKs are denied without asking anyone. */
void conn_confine(struct conn *c);
bool conn_confined(const struct conn *c);

/* Queues one message (steals msg). Never blocks; the queue is bounded by the caller's checks:
 * conn_congested() says when producers must pause. */
void conn_send(struct conn *c, json_t *msg);
/* Sends a last message (stolen), discards what the client sends, closes when it goes away
 * (or after a second). */
void conn_reject(struct conn *c, json_t *msg);
/* Queues bytes that are complete NDJSON lines (copied). */
void conn_send_raw(struct conn *c, const char *data, size_t n);
/* Sends a notification {method, params (stolen)}. */
void conn_notify(struct conn *c, const char *method, json_t *params);
/* Bytes queued and not yet written. */
size_t conn_queued(const struct conn *c);
/* True while the write queue is above conn_write_buffer_max. */
bool conn_congested(const struct conn *c);

void conn_watch_add(struct conn *c, struct conn_watch *w);
void conn_watch_del(struct conn_watch *w);

/* Sends a server-to-client request; cb gets the answer exactly once (also on close/cancel).
 * Returns the request id (borrowed, valid until cb runs). */
const char *conn_call(struct conn *c, const char *method, json_t *params, conn_call_cb cb,
                      void *ctx);
/* Routes a response (object with result or error, borrowed) to the pending call of its id. */
void conn_handle_response(struct conn *c, json_t *msg);
/* Cancels a pending call by id; its cb runs with NULL, NULL. */
void conn_call_cancel(struct conn *c, const char *id);

/* Counts a request being handled and returns NULL; or returns the name of the limit it would
 * pass (max_pending_requests, max_pending_requests_per_uid), *value its value. */
const char *conn_inflight_begin(struct conn *c, size_t *value);
void conn_inflight_end(struct conn *c);

/* Sets limits for every new connection, and the per-uid budgets of requests in flight and of
 * input bytes held in read buffers (half-sent messages) for all of them. */
void conn_set_limits(size_t max_message, size_t write_buffer_max, size_t max_pending,
                     size_t pending_per_uid, size_t input_per_uid);
/* Bytes queued to uid's connections and not yet written. */
size_t conn_queued_uid(uid_t uid);
/* Input bytes held in the read buffers of uid's connections ((uid_t) -1: everyone's). */
size_t conn_input_bytes(uid_t uid);
/* Input the daemon keeps for c's uid beyond the read buffers (process.write data waiting for
 * its exec to start) counts in the same budget: conn_charge takes n bytes of it, or returns
 * NULL when that would pass max_input_bytes_per_uid; the budget outlives c until
 * conn_uncharge gives the bytes back. */
struct conn_acct;
struct conn_acct *conn_charge(struct conn *c, size_t n);
void conn_uncharge(struct conn_acct *a, size_t n);
/* Number of open connections (of one uid). */
unsigned conn_count(void);
unsigned conn_count_uid(uid_t uid);
/* Sends a notification to every open connection (shutdown). Steals params. */
void conn_broadcast(const char *method, json_t *params);
/* Sends a notification to every open connection of uid. Steals params. */
void conn_notify_uid(uid_t uid, const char *method, json_t *params);
/* Closes every connection. */
void conn_close_all(void);

#endif
