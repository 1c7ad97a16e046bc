/* error.h — errors that must reach a client: a JSON-RPC code, a message, optional data.
 * Filled only on failure; context is prepended on the way up. Pure; not thread-safe per object. */
#ifndef SANDBOXD_ERROR_H
#define SANDBOXD_ERROR_H

#include <jansson.h>

/* JSON-RPC 2.0 and sandboxd error codes (protocol §8). */
enum sbx_code {
        SBX_E_PARSE = -32700,
        SBX_E_INVALID_REQUEST = -32600,
        SBX_E_METHOD = -32601,
        SBX_E_PARAMS = -32602,
        SBX_E_INTERNAL = -32603,
        SBX_E_BACKEND_UNAVAILABLE = -32000,
        SBX_E_DENIED = -32001,
        SBX_E_NO_SANDBOX = -32002,
        SBX_E_NO_PROCESS = -32003,
        SBX_E_LIMIT = -32004,
        SBX_E_BACKEND = -32005,
        SBX_E_UNUSABLE = -32006,
        SBX_E_STDIN_CLOSED = -32007,
        SBX_E_PERMISSION = -32010,
};

struct sbx_error {
        int code;      /* 0 while unset */
        char *message; /* owned */
        json_t *data;  /* owned, may be NULL */
};

/* Sets code and message (and data, which it steals; may be NULL). Overwrites an earlier error. */
void sbx_error_set(struct sbx_error *err, int code, json_t *data, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* Prepends "context: " to the message of a set error. */
void sbx_error_prefix(struct sbx_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Sets -32602 with data {param} and a message naming it. */
void sbx_error_param(struct sbx_error *err, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Sets -32004 with data {limit, value}. */
void sbx_error_limit(struct sbx_error *err, const char *limit, long long value, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));
/* Sets -32005 with data {backend, detail}. */
void sbx_error_backend(struct sbx_error *err, const char *backend, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Releases message and data; err may be NULL. */
void sbx_error_clear(struct sbx_error *err);
/* Moves src into dst (dst cleared first); src becomes unset. */
void sbx_error_move(struct sbx_error *dst, struct sbx_error *src);

#endif
