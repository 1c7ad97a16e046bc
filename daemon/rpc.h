/* rpc.h — the method table and the request object handlers answer through. Loop thread only.
 *
 * A handler gets a struct rpc_req it owns until it answers with rpc_result() or rpc_error()
 * (each frees the request). Handlers may answer later (asynchronous methods); if the connection
 * closed meanwhile the answer is dropped. */
#ifndef SANDBOXD_RPC_H
#define SANDBOXD_RPC_H

#include <jansson.h>

#include "daemon/conn.h"
#include "protocol/error.h"

struct rpc_batch;

struct rpc_req {
        struct conn *conn; /* referenced */
        json_t *id;        /* NULL for a notification */
        char *method;
        json_t *params;          /* object (empty when absent), owned */
        struct rpc_batch *batch; /* non-NULL inside a batch */
};

/* Answers with a result (stolen) and frees req. */
void rpc_result(struct rpc_req *req, json_t *result);
/* Answers with an error and frees req; err is cleared. */
void rpc_error(struct rpc_req *req, struct sbx_error *err);
/* Answers with an error built from code and message. */
void rpc_error_msg(struct rpc_req *req, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Handles one parsed JSON value from a connection (request, notification, batch or a response to
 * a server request). */
void rpc_dispatch(struct conn *c, json_t *msg);
/* Answers a framing problem (-32700 / -32600 with id null). */
void rpc_protocol_error(struct conn *c, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Handler signature. */
typedef void (*rpc_handler)(struct rpc_req *req);

#endif
