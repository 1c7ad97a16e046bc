/* files.c — file.read and file.write through the sandbox's backend, judged like the shell
 * commands that would do the same (policy_eval_file) and settled like an exec (approval_decide:
 * deny, ask, roles, memory, audit record).
 *
 * The backend resolves the path — on the local backend as the caller, holding what it found —
 * and calls file_judge_cb before it opens anything; the requested and the resolved path are
 * judged together in one decision, so a client is asked at most once per op and a symlink
 * cannot lead a write somewhere the check did not look. */
#include <stdlib.h>
#include <string.h>

#include "daemon/approval.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/proc.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_policy.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define FILE_READ_MAX (16u << 20)

struct file_op {
        struct list node; /* in file_ops until answered */
        uid_t uid;
        struct rpc_req *req;
        struct sandbox *sb; /* referenced once known */
        bool write, base64;
        char *path;
        uint64_t offset; /* read */
        size_t max;
        struct buf data; /* write */
        int mode;
        bool append, mkdir;
        bool judged;              /* the backend asked (fail closed: it must, before touching) */
        struct policy_result pr;  /* valid from the judgement until the op ends */
        backend_verdict_cb vdone; /* the backend's continuation while a decision is pending */
        void *vop;
};

static struct list file_ops = {&file_ops, &file_ops};

/* File ops of uid not answered yet (on the local backend each is a process). */
static unsigned
file_ops_uid(uid_t uid)
{
        return LIST_COUNT_UID(&file_ops, struct file_op, node, uid, uid);
}

static struct file_op *
file_op_new(struct rpc_req *req, bool write)
{
        struct file_op *op = xcalloc(1, sizeof(*op));

        list_init(&op->node);
        op->uid = conn_uid(req->conn);
        op->req = req;
        op->write = write;
        op->mode = -1;
        return op;
}

static void
file_op_free(struct file_op *op)
{
        list_del(&op->node);
        policy_result_clear(&op->pr);
        if (op->sb)
                sandbox_unref(op->sb);
        buf_free(&op->data);
        free(op->path);
        free(op);
}

/* Answers the request with the backend's error, prefixed with the method. */
static void
file_error(struct file_op *op, const struct sbx_error *err)
{
        struct sbx_error e = {0};

        sbx_error_set(&e, err->code, json_incref(err->data), "file.%s: %s",
                      op->write ? "write" : "read", err->message);
        rpc_error(op->req, &e);
}

/* A backend that completes an op it never had judged is a bug: say so, never "success". */
static bool
file_unjudged(struct file_op *op)
{
        if (op->judged)
                return false;
        log_err("backend %s completed file.%s of '%s' without having it judged", op->sb->ops->name,
                op->write ? "write" : "read", op->path);
        rpc_error_msg(op->req, SBX_E_INTERNAL,
                      "internal error: the %s backend did not have the path judged",
                      op->sb->ops->name);
        return true;
}

static void
file_decided_cb(void *ctx, bool allowed, const char *resolution)
{
        struct file_op *op = ctx;
        struct sbx_error err = {0};
        backend_verdict_cb done = op->vdone;

        op->vdone = NULL;
        if (!allowed)
                approval_deny_error(&err, &op->pr, resolution, op->req->conn);
        else if (op->sb->state != SANDBOX_READY)
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "sandbox '%s' is no longer usable", op->sb->id);
        done(op->vop, err.code ? &err : NULL);
        sbx_error_clear(&err);
}

/* backend_judge_fn: what the op really touches, judged with what was asked for. */
static void
file_judge_cb(void *ctx, const struct backend_file_target *t, backend_verdict_cb done, void *vop)
{
        struct file_op *op = ctx;
        struct sandbox *sb = op->sb;
        struct policy_ctx pctx = {.backend = sb->ops->name,
                                  .host_access = sb->host_access,
                                  .home = sandbox_home(sb), /* the remote's on ssh */
                                  .home_unknown = !sandbox_home(sb),
                                  .env = sb->shell_env ? sb->shell_env : sb->env,
                                  .protected_paths = g.protected_paths,
                                  .workspace = sb->workdir};
        struct policy_file_op fo = {op->path, t->path, op->write, op->write ? op->mode : -1,
                                    t->exists ? t->nlink : 0};
        json_t *info =
                json_pack("{s:s,s:s,s:s,s:s,s:s}", "kind", "file", "sandbox", sb->id, "backend",
                          sb->ops->name, "op", op->write ? "write" : "read", "path", op->path);

        sandbox_policy_resolve_as(&pctx, &sb->who);
        op->judged = true;
        op->vdone = done;
        op->vop = vop;
        if (t->path && strcmp(t->path, op->path))
                json_object_set_new(info, "resolved_path", json_string(t->path));
        policy_eval_file(g.policy, &pctx, &fo, &op->pr);
        approval_decide(op->req->conn, sb, sb->host_access, info, &op->pr, file_decided_cb, op);
}

static void
file_read_cb(void *ctx, const char *data, size_t len, uint64_t size, bool eof,
             const struct sbx_error *err)
{
        struct file_op *op = ctx;
        struct buf b = {0};

        if (err) {
                file_error(op, err);
        } else if (!file_unjudged(op)) {
                if (op->base64)
                        base64_encode(&b, data, len);
                else
                        utf8_sanitize(&b, data, len);
                rpc_result(op->req, json_pack("{s:s%,s:I,s:b,s:I}", "data", b.data ? b.data : "",
                                              b.len, "size", (json_int_t) size, "eof", eof, "bytes",
                                              (json_int_t) len));
        }
        buf_free(&b);
        file_op_free(op);
}

static void file_write_cb(void *ctx, const struct sbx_error *err);

/* sandbox, path: the params every file op has. */
static int
file_params(struct rpc_req *req, struct file_op *op, const char **id, struct sbx_error *err)
{
        const char *path = NULL;

        if (params_str(req->params, "sandbox", 256, id, err) < 0 ||
            params_str(req->params, "path", 4096, &path, err) < 0)
                return -1;
        if (!path || path[0] != '/') {
                sbx_error_param(err, "path", "invalid params: 'path' must be an absolute path");
                return -1;
        }
        op->path = xstrdup(path);
        return 0;
}

/* Hands the op to the backend, which calls file_judge_cb before touching anything. */
static void
file_sandbox_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct file_op *op = ctx;
        struct backend_file_write w = {op->path,     op->data.data ? op->data.data : "",
                                       op->data.len, op->mode,
                                       op->append,   op->mkdir};

        if (err) {
                struct sbx_error e = {0};
                sbx_error_move(&e, err);
                sbx_error_prefix(&e, "default sandbox");
                rpc_error(op->req, &e);
                file_op_free(op);
                return;
        }
        op->sb = sb;
        sandbox_ref(sb);
        sandbox_touch(sb);
        if (op->write)
                sb->ops->file_write(sb->bsb, &w, op, file_judge_cb, file_write_cb);
        else
                sb->ops->file_read(sb->bsb, op->path, op->offset, op->max, op, file_judge_cb,
                                   file_read_cb);
}

/* Finds the sandbox (the caller's default one is created on first use, as for exec). */
static void
file_begin(struct file_op *op, const char *id)
{
        uint64_t max = g.config->max_processes_per_uid;
        struct sandbox *sb;

        /* An op waiting for an approval keeps its helper process: they count as processes. */
        if (proc_running_uid(op->uid) + file_ops_uid(op->uid) >= max) {
                struct sbx_error err = {0};
                sbx_error_limit(&err, "max_processes_per_uid", (long long) max,
                                "limit reached: uid %u has %llu processes and file operations "
                                "running (max_processes_per_uid); wait for some to finish",
                                (unsigned) op->uid, (unsigned long long) max);
                rpc_error(op->req, &err);
                file_op_free(op);
                return;
        }
        list_add_tail(&file_ops, &op->node);
        if (!id) {
                sandbox_default(op->req->conn, file_sandbox_cb, op);
                return;
        }
        sb = sandbox_find(conn_uid(op->req->conn), id);
        if (!sb || sb->state != SANDBOX_READY) {
                rpc_error_msg(op->req, SBX_E_NO_SANDBOX,
                              "sandbox '%s' not found (sandbox.list shows yours)", id);
                file_op_free(op);
                return;
        }
        file_sandbox_cb(op, sb, NULL);
}

/* file.read */
void
method_file_read(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox",         "path", "offset", "max_bytes",
                                           "output_encoding", NULL};
        static const char *const enc[] = {"text", "base64", NULL};
        struct sbx_error err = {0};
        const char *id = NULL;
        int64_t offset = 0, max = 1 << 20;
        int e = 0;
        struct file_op *op = file_op_new(req, false);

        if (params_known(req->params, keys, &err) < 0 ||
            params_int(req->params, "offset", 0, INT64_MAX, &offset, &err) < 0 ||
            params_int(req->params, "max_bytes", 0, FILE_READ_MAX, &max, &err) < 0 ||
            params_enum(req->params, "output_encoding", enc, &e, &err) < 0 ||
            file_params(req, op, &id, &err) < 0) {
                rpc_error(req, &err);
                file_op_free(op);
                return;
        }
        op->base64 = e == 1;
        op->offset = (uint64_t) offset;
        op->max = (size_t) max;
        file_begin(op, id);
}

static void
file_write_cb(void *ctx, const struct sbx_error *err)
{
        struct file_op *op = ctx;

        if (err)
                file_error(op, err);
        else if (!file_unjudged(op))
                rpc_result(op->req, json_pack("{s:I}", "bytes", (json_int_t) op->data.len));
        file_op_free(op);
}

/* The data of a file.write (exactly one of data / data_base64) into b. */
static int
file_data(struct rpc_req *req, struct buf *b, struct sbx_error *err)
{
        const char *data = NULL, *b64 = NULL;

        if (params_str(req->params, "data", g.config->max_message_bytes, &data, err) < 0 ||
            params_str(req->params, "data_base64", g.config->max_message_bytes, &b64, err) < 0)
                return -1;
        if (!data == !b64) {
                sbx_error_param(err, "data",
                                "invalid params: give exactly one of 'data' or 'data_base64'");
                return -1;
        }
        if (data) {
                buf_append(b, data, strlen(data));
                return 0;
        }
        if (base64_decode(b, b64, strlen(b64)) < 0) {
                sbx_error_param(err, "data_base64",
                                "invalid params: 'data_base64' is not valid base64");
                return -1;
        }
        return 0;
}

/* file.write */
void
method_file_write(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox", "path",   "data",  "data_base64",
                                           "mode",    "append", "mkdir", NULL};
        struct sbx_error err = {0};
        const char *id = NULL;
        int64_t mode = -1;
        struct file_op *op = file_op_new(req, true);

        if (params_known(req->params, keys, &err) < 0 ||
            params_int(req->params, "mode", 0, 07777, &mode, &err) < 0 ||
            params_bool(req->params, "append", &op->append, &err) < 0 ||
            params_bool(req->params, "mkdir", &op->mkdir, &err) < 0 ||
            file_data(req, &op->data, &err) < 0 || file_params(req, op, &id, &err) < 0) {
                rpc_error(req, &err);
                file_op_free(op);
                return;
        }
        op->mode = (int) mode;
        file_begin(op, id);
}
