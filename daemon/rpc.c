/* rpc.c — JSON-RPC 2.0 dispatch: validation, batches, the method table, answers. */
#include "daemon/rpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/methods.h"
#include "protocol/codec.h"
#include "protocol/util.h"

struct rpc_batch {
        struct conn *conn;
        json_t *responses;
        int pending;
};

struct rpc_method {
        const char *name;
        rpc_handler handler;
};

static const struct rpc_method rpc_methods[] = {
        {"daemon.hello", method_daemon_hello},
        {"daemon.info", method_daemon_info},
        {"backend.list", method_backend_list},
        {"backend.cache", method_backend_cache},
        {"sandbox.create", method_sandbox_create},
        {"sandbox.list", method_sandbox_list},
        {"sandbox.get", method_sandbox_get},
        {"sandbox.destroy", method_sandbox_destroy},
        {"exec", method_exec},
        {"process.list", method_process_list},
        {"process.read", method_process_read},
        {"process.write", method_process_write},
        {"process.signal", method_process_signal},
        {"process.kill", method_process_kill},
        {"process.wait", method_process_wait},
        {"process.attach", method_process_attach},
        {"process.resize", method_process_resize},
        {"file.read", method_file_read},
        {"file.write", method_file_write},
        {"policy.check", method_policy_check},
        {"policy.reload", method_policy_reload},
        {"approval.list", method_approval_list},
        {"approval.revoke", method_approval_revoke},
};

static json_t *
rpc_error_obj(json_t *id, int code, const char *message, json_t *data)
{
        json_t *e = json_pack("{s:i,s:o}", "code", code, "message", json_text(message));

        if (data)
                json_object_set(e, "data", data);
        return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                         e);
}

/* The -32004 answer to a request past max_pending_requests(_per_uid) (new). */
static json_t *
rpc_pending_error(json_t *id, const char *limit, size_t value)
{
        bool uid = strcmp(limit, "max_pending_requests") != 0;
        char *text = xasprintf("limit reached: %zu requests in flight on this %s (%s); wait for "
                               "answers before sending more",
                               value, uid ? "uid's connections" : "connection", limit);
        json_t *data = json_pack("{s:s,s:I}", "limit", limit, "value", (json_int_t) value);
        json_t *e = rpc_error_obj(id, SBX_E_LIMIT, text, data);

        json_decref(data);
        free(text);
        return e;
}

static void
rpc_batch_done(struct rpc_batch *b)
{
        if (json_array_size(b->responses))
                conn_send(b->conn, json_incref(b->responses));
        json_decref(b->responses);
        conn_unref(b->conn);
        free(b);
}

static void
rpc_deliver(struct rpc_req *req, json_t *msg)
{
        if (req->batch) {
                if (msg)
                        json_array_append_new(req->batch->responses, msg);
                if (--req->batch->pending == 0)
                        rpc_batch_done(req->batch);
        } else if (msg) {
                conn_send(req->conn, msg);
        }
}

static void
rpc_req_free(struct rpc_req *req)
{
        conn_inflight_end(req->conn);
        conn_unref(req->conn);
        json_decref(req->id);
        json_decref(req->params);
        free(req->method);
        free(req);
}

/* Answers with a result. */
void
rpc_result(struct rpc_req *req, json_t *result)
{
        json_t *msg = NULL;

        if (!result) {
                /* A result that could not be built (jansson refuses a string that is not
                 * UTF-8): an answer must still go out, or the client waits forever. */
                rpc_error_msg(req, SBX_E_INTERNAL,
                              "internal error: the result of '%s' could not be encoded (a bug: "
                              "please report it)",
                              req->method);
                return;
        }
        if (req->id)
                msg = json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", req->id, "result", result);
        else
                json_decref(result);
        rpc_deliver(req, msg);
        rpc_req_free(req);
}

/* Answers with an error. */
void
rpc_error(struct rpc_req *req, struct sbx_error *err)
{
        json_t *msg = NULL;

        if (req->id)
                msg = rpc_error_obj(req->id, err->code ? err->code : SBX_E_INTERNAL,
                                    err->message ? err->message : "internal error", err->data);
        sbx_error_clear(err);
        rpc_deliver(req, msg);
        rpc_req_free(req);
}

/* Answers with an error from a format. */
void
rpc_error_msg(struct rpc_req *req, int code, const char *fmt, ...)
{
        struct sbx_error err = {0};
        va_list ap;
        char *m;

        va_start(ap, fmt);
        m = xvasprintf(fmt, ap);
        va_end(ap);
        sbx_error_set(&err, code, NULL, "%s", m);
        free(m);
        rpc_error(req, &err);
}

/* Framing-level error with id null. */
void
rpc_protocol_error(struct conn *c, int code, const char *fmt, ...)
{
        va_list ap;
        char *m;

        va_start(ap, fmt);
        m = xvasprintf(fmt, ap);
        va_end(ap);
        conn_send(c, rpc_error_obj(NULL, code, m, NULL));
        free(m);
}

static const struct rpc_method *
rpc_lookup(const char *name)
{
        for (size_t i = 0; i < ARRAY_SIZE(rpc_methods); i++)
                if (!strcmp(rpc_methods[i].name, name))
                        return &rpc_methods[i];
        return NULL;
}

/* Checks the envelope; returns NULL and fills *why when it is not a valid request. */
static const char *
rpc_check_envelope(json_t *msg, json_t **idp)
{
        json_t *id = json_object_get(msg, "id");
        json_t *ver = json_object_get(msg, "jsonrpc");
        json_t *params = json_object_get(msg, "params");

        if (id && (json_is_integer(id) || json_is_string(id) || json_is_null(id)))
                *idp = id;
        if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0"))
                return "invalid request: \"jsonrpc\" must be \"2.0\"";
        if (id && !json_is_integer(id) && !json_is_string(id) && !json_is_null(id))
                return "invalid request: \"id\" must be a string, an integer or null";
        if (!json_is_string(json_object_get(msg, "method")))
                return "invalid request: \"method\" must be a string";
        if (params && !json_is_object(params) && !json_is_array(params))
                return "invalid request: \"params\" must be an object";
        return NULL;
}

/* Returns true when the message produced an answer slot in the batch (a request with id). */
static void
rpc_dispatch_one(struct conn *c, json_t *msg, struct rpc_batch *batch)
{
        json_t *id = NULL, *params;
        const char *why, *limit;
        const struct rpc_method *m;
        struct rpc_req *req;
        size_t value;

        if (!json_is_object(msg)) {
                json_t *e = rpc_error_obj(NULL, SBX_E_INVALID_REQUEST,
                                          "invalid request: a message must be a JSON object "
                                          "(or an array of them)",
                                          NULL);
                if (batch)
                        json_array_append_new(batch->responses, e);
                else
                        conn_send(c, e);
                return;
        }
        if (!json_object_get(msg, "method") &&
            (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
                conn_handle_response(c, msg);
                return;
        }
        why = rpc_check_envelope(msg, &id);
        if (why) {
                json_t *e = rpc_error_obj(id, SBX_E_INVALID_REQUEST, why, NULL);
                if (batch)
                        json_array_append_new(batch->responses, e);
                else
                        conn_send(c, e);
                return;
        }
        if ((limit = conn_inflight_begin(c, &value))) {
                json_t *e = rpc_pending_error(id, limit, value);
                if (batch)
                        json_array_append_new(batch->responses, e);
                else if (id)
                        conn_send(c, e);
                else
                        json_decref(e);
                return;
        }
        req = xcalloc(1, sizeof(*req));
        req->conn = c;
        conn_ref(c);
        req->id = json_incref(json_object_get(msg, "id"));
        req->method = xstrdup(json_string_value(json_object_get(msg, "method")));
        params = json_object_get(msg, "params");
        req->params = params ? json_incref(params) : json_object();
        if (batch && req->id) {
                req->batch = batch;
                batch->pending++;
        }
        if (json_is_array(req->params)) {
                rpc_error_msg(req, SBX_E_PARAMS,
                              "invalid params: \"params\" must be an object of named parameters");
                return;
        }
        m = rpc_lookup(req->method);
        if (!m) {
                rpc_error_msg(req, SBX_E_METHOD, "method '%s' not found", req->method);
                return;
        }
        m->handler(req);
}

/* Handles one message or batch. */
void
rpc_dispatch(struct conn *c, json_t *msg)
{
        struct rpc_batch *b;
        size_t i;
        json_t *v;

        if (!json_is_array(msg)) {
                rpc_dispatch_one(c, msg, NULL);
                return;
        }
        if (json_array_size(msg) == 0) {
                rpc_protocol_error(c, SBX_E_INVALID_REQUEST, "invalid request: empty batch");
                return;
        }
        b = xcalloc(1, sizeof(*b));
        b->conn = c;
        conn_ref(c);
        b->responses = json_array();
        b->pending = 1; /* held until every member was dispatched */
        json_array_foreach(msg, i, v) rpc_dispatch_one(c, v, b);
        if (--b->pending == 0)
                rpc_batch_done(b);
}
