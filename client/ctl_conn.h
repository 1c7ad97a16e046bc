/* ctl_conn.h — sandboxctl's blocking JSON-RPC connection to sandboxd (protocol §1): socket
 * lookup, newline-delimited framing, request ids, responses in any order, notifications and
 * server-to-client requests (approval.request is answered on the terminal, anything else with
 * -32601). Plain poll(); no event library. Single-threaded. */
#ifndef SANDBOXCTL_CTL_CONN_H
#define SANDBOXCTL_CTL_CONN_H

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

/* Longest line accepted from the server. */
#define CTL_CONN_MAX_LINE (256u << 20)

struct ctl_conn;

/* Called for every notification; params is borrowed (may be NULL). */
typedef void (*ctl_conn_notify_cb)(void *arg, const char *method, json_t *params);

/* Socket path by protocol §1 (minus systemd): opt, $SANDBOXD_SOCKET, the root default, the
 * per-user default (protocol/sockpath.h). 0 and a new string in *out (*is_default: neither
 * opt nor the environment chose it), or negative errno with err set. */
int ctl_conn_socket_path(const char *opt, char **out, bool *is_default, struct sbx_error *err);
/* Connects to path (new), or NULL with err set (and errno: why connect failed). */
struct ctl_conn *ctl_conn_open(const char *path, struct sbx_error *err);
/* Closes and frees; NULL is fine. */
void ctl_conn_free(struct ctl_conn *c);
/* Sets the notification handler (default: ignore). */
void ctl_conn_set_notify(struct ctl_conn *c, ctl_conn_notify_cb cb, void *arg);
/* Sends a request (params stolen, may be NULL). Returns its id (> 0), or a negative errno with
 * err set when the connection failed. */
int64_t ctl_conn_send(struct ctl_conn *c, const char *method, json_t *params,
                      struct sbx_error *err);
/* Sends a notification (params stolen). 0 or negative errno with err set. */
int ctl_conn_notify(struct ctl_conn *c, const char *method, json_t *params, struct sbx_error *err);
/* Waits up to timeout_ms (-1: no limit) for input on the socket or on the extra fds, handles
 * every complete message that arrived, leaves the extra fds' revents set. 0, or a negative
 * errno with err set when the connection closed or failed. */
int ctl_conn_poll(struct ctl_conn *c, struct pollfd *extra, size_t nextra, int timeout_ms,
                  struct sbx_error *err);
/* If the response to id has arrived: returns 1 with *result set (new) or err set (result
 * NULL). Returns 0 when it has not arrived yet. */
int ctl_conn_take(struct ctl_conn *c, int64_t id, json_t **result, struct sbx_error *err);
/* Drops the response to id when it arrives (for requests whose answer does not matter). */
void ctl_conn_forget(struct ctl_conn *c, int64_t id);
/* Sends a request and waits for its response: the result (new), or NULL with err set. */
json_t *ctl_conn_call(struct ctl_conn *c, const char *method, json_t *params,
                      struct sbx_error *err);

#endif
