/* files.c — file.read and file.write through the sandbox's backend. */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/methods.h"
#include "daemon/sandbox.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define FILE_READ_MAX (16u << 20)

struct file_op {
        struct rpc_req *req;
        struct sandbox *sb;
        bool base64;
        size_t bytes;
};

static struct sandbox *
file_sandbox(struct rpc_req *req, const char **path, struct sbx_error *err)
{
        const char *id = NULL;
        struct sandbox *sb;

        if (params_str(req->params, "sandbox", 256, &id, err) < 0 ||
            params_str(req->params, "path", 4096, path, err) < 0)
                return NULL;
        if (!*path || (*path)[0] != '/') {
                sbx_error_param(err, "path", "invalid params: 'path' must be an absolute path");
                return NULL;
        }
        sb = sandbox_find(conn_uid(req->conn), id ? id : "default");
        if (!sb || sb->state != SANDBOX_READY) {
                sbx_error_set(err, SBX_E_NO_SANDBOX, NULL,
                              "sandbox '%s' not found (sandbox.list shows yours)",
                              id ? id : "default");
                return NULL;
        }
        return sb;
}

static void
file_read_cb(void *ctx, const char *data, size_t len, uint64_t size, bool eof,
             const struct sbx_error *err)
{
        struct file_op *op = ctx;
        struct buf b = {0};

        if (err) {
                struct sbx_error e = {0};
                sbx_error_set(&e, err->code, json_incref(err->data), "file.read: %s", err->message);
                rpc_error(op->req, &e);
        } else {
                if (op->base64)
                        base64_encode(&b, data, len);
                else
                        utf8_sanitize(&b, data, len);
                rpc_result(op->req, json_pack("{s:s%,s:I,s:b,s:I}", "data", b.data ? b.data : "",
                                              b.len, "size", (json_int_t) size, "eof", eof, "bytes",
                                              (json_int_t) len));
        }
        buf_free(&b);
        sandbox_unref(op->sb);
        free(op);
}

/* file.read */
void
method_file_read(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox",         "path", "offset", "max_bytes",
                                           "output_encoding", NULL};
        static const char *const enc[] = {"text", "base64", NULL};
        struct sbx_error err = {0};
        const char *path = NULL;
        int64_t offset = 0, max = 1 << 20;
        int e = 0;
        struct sandbox *sb;
        struct file_op *op;

        if (params_known(req->params, keys, &err) < 0 ||
            params_int(req->params, "offset", 0, INT64_MAX, &offset, &err) < 0 ||
            params_int(req->params, "max_bytes", 0, FILE_READ_MAX, &max, &err) < 0 ||
            params_enum(req->params, "output_encoding", enc, &e, &err) < 0 ||
            !(sb = file_sandbox(req, &path, &err))) {
                rpc_error(req, &err);
                return;
        }
        op = xcalloc(1, sizeof(*op));
        op->req = req;
        op->sb = sb;
        op->base64 = e == 1;
        sandbox_ref(sb);
        sandbox_touch(sb);
        sb->ops->file_read(sb->bsb, path, (uint64_t) offset, (size_t) max, op, file_read_cb);
}

static void
file_write_cb(void *ctx, const struct sbx_error *err)
{
        struct file_op *op = ctx;

        if (err) {
                struct sbx_error e = {0};
                sbx_error_set(&e, err->code, json_incref(err->data), "file.write: %s",
                              err->message);
                rpc_error(op->req, &e);
        } else {
                rpc_result(op->req, json_pack("{s:I}", "bytes", (json_int_t) op->bytes));
        }
        sandbox_unref(op->sb);
        free(op);
}

/* file.write */
void
method_file_write(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox", "path",   "data",  "data_base64",
                                           "mode",    "append", "mkdir", NULL};
        struct sbx_error err = {0};
        const char *path = NULL, *data = NULL, *b64 = NULL;
        int64_t mode = -1;
        struct backend_file_write w = {0};
        struct buf b = {0};
        struct sandbox *sb;
        struct file_op *op;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "data", g.config->max_message_bytes, &data, &err) < 0 ||
            params_str(req->params, "data_base64", g.config->max_message_bytes, &b64, &err) < 0 ||
            params_int(req->params, "mode", 0, 07777, &mode, &err) < 0 ||
            params_bool(req->params, "append", &w.append, &err) < 0 ||
            params_bool(req->params, "mkdir", &w.mkdir, &err) < 0 ||
            !(sb = file_sandbox(req, &path, &err))) {
                rpc_error(req, &err);
                return;
        }
        if (!data == !b64) {
                sbx_error_param(&err, "data",
                                "invalid params: give exactly one of 'data' or "
                                "'data_base64'");
                rpc_error(req, &err);
                return;
        }
        if (data)
                buf_append(&b, data, strlen(data));
        else if (base64_decode(&b, b64, strlen(b64)) < 0) {
                sbx_error_param(&err, "data_base64",
                                "invalid params: 'data_base64' is not valid "
                                "base64");
                rpc_error(req, &err);
                return;
        }
        w.path = path;
        w.data = b.data ? b.data : "";
        w.len = b.len;
        w.mode = (int) mode;
        op = xcalloc(1, sizeof(*op));
        op->req = req;
        op->sb = sb;
        op->bytes = b.len;
        sandbox_ref(sb);
        sandbox_touch(sb);
        sb->ops->file_write(sb->bsb, &w, op, file_write_cb);
        buf_free(&b);
}
