/* error.c — client-visible error objects. */
#include "protocol/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/codec.h"
#include "protocol/util.h"

static void
error_setv(struct sbx_error *err, int code, json_t *data, const char *fmt, va_list ap)
{
        char *msg = xvasprintf(fmt, ap);

        /* Messages name paths and commands: they must reach the client whatever their bytes. */
        if (!utf8_valid(msg, strlen(msg))) {
                struct buf b = {0};
                utf8_sanitize(&b, msg, strlen(msg));
                buf_append(&b, "", 1);
                free(msg);
                msg = b.data;
        }
        sbx_error_clear(err);
        err->code = code;
        err->message = msg;
        err->data = data;
}

/* Sets code, message and (stolen) data. */
void
sbx_error_set(struct sbx_error *err, int code, json_t *data, const char *fmt, ...)
{
        va_list ap;

        if (!err) {
                json_decref(data);
                return;
        }
        va_start(ap, fmt);
        error_setv(err, code, data, fmt, ap);
        va_end(ap);
}

/* Prepends context to the message. */
void
sbx_error_prefix(struct sbx_error *err, const char *fmt, ...)
{
        va_list ap;
        char *ctx, *msg;

        if (!err || !err->code)
                return;
        va_start(ap, fmt);
        ctx = xvasprintf(fmt, ap);
        va_end(ap);
        msg = xasprintf("%s: %s", ctx, err->message ? err->message : "");
        free(ctx);
        sbx_error_set(err, err->code, json_incref(err->data), "%s", msg);
        free(msg);
}

/* Invalid parameter naming param. */
void
sbx_error_param(struct sbx_error *err, const char *param, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return;
        va_start(ap, fmt);
        error_setv(err, SBX_E_PARAMS, json_pack("{s:s}", "param", param), fmt, ap);
        va_end(ap);
}

/* Limit reached. */
void
sbx_error_limit(struct sbx_error *err, const char *limit, long long value, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return;
        va_start(ap, fmt);
        error_setv(err, SBX_E_LIMIT, json_pack("{s:s,s:I}", "limit", limit, "value", value), fmt,
                   ap);
        va_end(ap);
}

/* Backend operation failed. */
void
sbx_error_backend(struct sbx_error *err, const char *backend, const char *fmt, ...)
{
        va_list ap;
        char *detail;

        if (!err)
                return;
        va_start(ap, fmt);
        detail = xvasprintf(fmt, ap);
        va_end(ap);
        sbx_error_set(err, SBX_E_BACKEND,
                      json_pack("{s:s,s:s}", "backend", backend, "detail", detail),
                      "%s backend: %s", backend, detail);
        free(detail);
}

/* Frees the contents. */
void
sbx_error_clear(struct sbx_error *err)
{
        if (!err)
                return;
        free(err->message);
        json_decref(err->data);
        err->message = NULL;
        err->data = NULL;
        err->code = 0;
}

/* Moves an error. */
void
sbx_error_move(struct sbx_error *dst, struct sbx_error *src)
{
        sbx_error_clear(dst);
        *dst = *src;
        src->code = 0;
        src->message = NULL;
        src->data = NULL;
}
