/* ctl_conn.c — blocking newline-delimited JSON-RPC over the sandboxd Unix socket. */
#include "client/ctl_conn.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl_approval.h"
#include "client/ctl_util.h"
#include "protocol/sockpath.h"

#define CTL_CONN_READ_CHUNK (256u << 10)

struct ctl_conn {
        int fd;
        struct buf rbuf; /* bytes received, not yet framed */
        size_t scan;     /* rbuf offset from which to look for the next '\n' */
        int64_t next_id;
        json_t *responses;  /* "id" -> response message, until taken */
        json_t *null_error; /* an error response with id null, for the next taker */
        json_t *forgotten;  /* "id" -> true: responses to drop */
        bool eof;
        ctl_conn_notify_cb notify_cb;
        void *notify_arg;
};

/* Socket lookup as in protocol §1, without systemd: the daemon's own (protocol/sockpath.c). */
int
ctl_conn_socket_path(const char *opt, char **out, bool *is_default, struct sbx_error *err)
{
        const char *env = getenv("SANDBOXD_SOCKET");
        bool private_dir = false;
        char *why = NULL;

        *is_default = false;
        if (opt && *opt) {
                *out = xstrdup(opt);
                return 0;
        }
        if (env && *env) {
                *out = xstrdup(env);
                return 0;
        }
        *is_default = true;
        *out = sockpath_default(geteuid(), getenv("XDG_RUNTIME_DIR"), &private_dir);
        if (private_dir && sockpath_check_dir(*out, geteuid(), &why) == -EPERM) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "not connecting to %s: %s", *out, why);
                free(why);
                free(*out);
                *out = NULL;
                return -EPERM;
        }
        return 0;
}

/* Connects to the Unix socket at path. */
struct ctl_conn *
ctl_conn_open(const char *path, struct sbx_error *err)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct ctl_conn *c;
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "socket path too long: %s", path);
                return NULL;
        }
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                if (e == EACCES || e == EPERM)
                        sbx_error_set(err, CTL_E_LOCAL, NULL,
                                      "cannot connect to %s: permission denied: you are not "
                                      "allowed to use this socket (the operator can add you to "
                                      "allow_users / allow_groups and socket_group in "
                                      "sandboxd.conf; see docs/configuration.md)",
                                      path);
                else
                        sbx_error_set(err, CTL_E_LOCAL, NULL,
                                      "cannot connect to %s: %s (is sandboxd running?)", path,
                                      strerror(e));
                errno = e;
                return NULL;
        }
        c = xcalloc(1, sizeof(*c));
        c->fd = fd;
        c->next_id = 1;
        c->responses = json_object();
        c->forgotten = json_object();
        return c;
}

/* Closes the socket and frees everything. */
void
ctl_conn_free(struct ctl_conn *c)
{
        if (!c)
                return;
        close(c->fd);
        buf_free(&c->rbuf);
        json_decref(c->responses);
        json_decref(c->null_error);
        json_decref(c->forgotten);
        free(c);
}

/* Sets the notification handler. */
void
ctl_conn_set_notify(struct ctl_conn *c, ctl_conn_notify_cb cb, void *arg)
{
        c->notify_cb = cb;
        c->notify_arg = arg;
}

/* Reads what is available into rbuf: 1 bytes read, 0 nothing (EAGAIN), -errno on failure;
 * end of stream sets eof and returns 0. */
static int
ctl_conn_read(struct ctl_conn *c)
{
        ssize_t n;

        if (c->eof)
                return 0;
        buf_reserve(&c->rbuf, CTL_CONN_READ_CHUNK);
        n = recv(c->fd, c->rbuf.data + c->rbuf.len, c->rbuf.cap - c->rbuf.len - 1, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0) {
                c->eof = true;
                return 0;
        }
        c->rbuf.len += (size_t) n;
        c->rbuf.data[c->rbuf.len] = '\0';
        return 1;
}

static int
ctl_conn_write_all(struct ctl_conn *c, const char *p, size_t len, struct sbx_error *err)
{
        while (len > 0) {
                ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n > 0) {
                        p += n;
                        len -= (size_t) n;
                        continue;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        int e = errno;
                        sbx_error_set(err, CTL_E_LOCAL, NULL, "cannot send to sandboxd: %s",
                                      strerror(e));
                        return -e;
                }
                /* Keep reading while the socket is full so that neither side can block the
                 * other; what arrives is framed later. */
                struct pollfd pfd = {.fd = c->fd, .events = POLLOUT | POLLIN};
                if (poll(&pfd, 1, -1) > 0 && (pfd.revents & POLLIN) && ctl_conn_read(c) < 0)
                        continue;
        }
        return 0;
}

static int
ctl_conn_send_msg(struct ctl_conn *c, json_t *msg, struct sbx_error *err)
{
        char *s = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
        struct buf line = {0};
        int rc;

        json_decref(msg);
        if (!s) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "cannot encode the request as JSON");
                return -EINVAL;
        }
        buf_append(&line, s, strlen(s));
        buf_append(&line, "\n", 1);
        free(s);
        rc = ctl_conn_write_all(c, line.data, line.len, err);
        buf_free(&line);
        return rc;
}

/* Sends a request with the next id. */
int64_t
ctl_conn_send(struct ctl_conn *c, const char *method, json_t *params, struct sbx_error *err)
{
        int64_t id = c->next_id++;
        json_t *msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t) id,
                                "method", method);
        int rc;

        if (params)
                json_object_set_new(msg, "params", params);
        rc = ctl_conn_send_msg(c, msg, err);
        return rc < 0 ? rc : id;
}

/* Sends a notification. */
int
ctl_conn_notify(struct ctl_conn *c, const char *method, json_t *params, struct sbx_error *err)
{
        json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);

        if (params)
                json_object_set_new(msg, "params", params);
        return ctl_conn_send_msg(c, msg, err);
}

/* Answers a server-to-client request: approval.request on the terminal, others -32601. */
static void
ctl_conn_answer(struct ctl_conn *c, json_t *id, const char *method, json_t *params)
{
        json_t *reply = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", id);
        struct sbx_error err = {0};

        if (strcmp(method, "approval.request") == 0) {
                json_object_set_new(reply, "result", ctl_approval_answer(params));
        } else {
                json_object_set_new(reply, "error",
                                    json_pack("{s:i, s:s+}", "code", SBX_E_METHOD, "message",
                                              "method not found: ", method));
        }
        if (ctl_conn_send_msg(c, reply, &err) < 0)
                ctl_util_print_error(&err);
        sbx_error_clear(&err);
}

static void
ctl_conn_dispatch(struct ctl_conn *c, json_t *msg)
{
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *id = json_object_get(msg, "id");
        json_t *params = json_object_get(msg, "params");

        if (json_is_array(msg)) {
                size_t i;
                json_t *el;
                json_array_foreach(msg, i, el) ctl_conn_dispatch(c, el);
        } else if (method && id && !json_is_null(id)) {
                ctl_conn_answer(c, id, method, params);
        } else if (method) {
                if (c->notify_cb)
                        c->notify_cb(c->notify_arg, method, params);
        } else if (json_is_integer(id)) {
                char key[32];
                snprintf(key, sizeof(key), "%lld", (long long) json_integer_value(id));
                if (json_object_del(c->forgotten, key) != 0)
                        json_object_set(c->responses, key, msg);
        } else if (json_is_null(id) && json_object_get(msg, "error")) {
                json_decref(c->null_error);
                c->null_error = json_incref(msg);
        }
}

/* Frames and dispatches every complete line in rbuf; returns how many messages it handled or
 * -EMSGSIZE when a line is over the limit. */
static int
ctl_conn_process(struct ctl_conn *c)
{
        size_t start = 0;
        int handled = 0;

        for (;;) {
                char *base = c->rbuf.data;
                char *nl = memchr(base + c->scan, '\n', c->rbuf.len - c->scan);
                if (!nl) {
                        c->scan = c->rbuf.len;
                        break;
                }
                size_t end = (size_t) (nl - base), len = end - start;
                if (len > 0 && base[end - 1] == '\r')
                        len--;
                json_t *msg = len ? json_loadb(base + start, len, JSON_ALLOW_NUL, NULL) : NULL;
                start = c->scan = end + 1;
                if (msg) {
                        ctl_conn_dispatch(c, msg); /* may append to rbuf; offsets stay valid */
                        json_decref(msg);
                        handled++;
                }
        }
        if (start > 0) {
                buf_consume(&c->rbuf, start);
                c->scan -= start;
        }
        return c->rbuf.len > CTL_CONN_MAX_LINE ? -EMSGSIZE : handled;
}

/* Waits for input, handles complete messages. */
int
ctl_conn_poll(struct ctl_conn *c, struct pollfd *extra, size_t nextra, int timeout_ms,
              struct sbx_error *err)
{
        struct pollfd pfds[8];
        int rc, handled;

        if (nextra + 1 > ARRAY_SIZE(pfds))
                return -EINVAL;
        /* Lines read while sending may already be complete. */
        handled = c->rbuf.len > c->scan ? ctl_conn_process(c) : 0;
        if (handled < 0) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "message from sandboxd over %u bytes",
                              CTL_CONN_MAX_LINE);
                return handled;
        }
        if (c->eof && handled == 0) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "connection closed by sandboxd");
                return -ECONNRESET;
        }
        pfds[0] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        if (nextra)
                memcpy(pfds + 1, extra, nextra * sizeof(*extra));
        rc = poll(pfds, nextra + 1, handled > 0 ? 0 : timeout_ms);
        if (rc < 0 && errno != EINTR) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "poll: %s", strerror(errno));
                return -errno;
        }
        for (size_t i = 0; i < nextra; i++)
                extra[i].revents = rc > 0 ? pfds[i + 1].revents : 0;
        if (rc > 0 && pfds[0].revents) {
                rc = ctl_conn_read(c);
                if (rc < 0) {
                        sbx_error_set(err, CTL_E_LOCAL, NULL, "cannot read from sandboxd: %s",
                                      strerror(-rc));
                        return rc;
                }
                rc = ctl_conn_process(c);
                if (rc < 0) {
                        sbx_error_set(err, CTL_E_LOCAL, NULL, "message from sandboxd over %u bytes",
                                      CTL_CONN_MAX_LINE);
                        return rc;
                }
                handled += rc;
        }
        if (c->eof && handled == 0) {
                sbx_error_set(err, CTL_E_LOCAL, NULL, "connection closed by sandboxd");
                return -ECONNRESET;
        }
        return 0;
}

static void
ctl_conn_error_from(const json_t *msg, struct sbx_error *err)
{
        json_t *e = json_object_get(msg, "error");
        json_t *code = json_object_get(e, "code");
        json_t *data = json_object_get(e, "data");

        sbx_error_set(err, json_is_integer(code) ? (int) json_integer_value(code) : SBX_E_INTERNAL,
                      data ? json_deep_copy(data) : NULL, "%s",
                      ctl_util_str(e, "message", "error without a message"));
}

/* Returns 1 with the response to id when it has arrived. */
int
ctl_conn_take(struct ctl_conn *c, int64_t id, json_t **result, struct sbx_error *err)
{
        char key[32];
        json_t *msg;

        snprintf(key, sizeof(key), "%lld", (long long) id);
        msg = json_incref(json_object_get(c->responses, key));
        if (msg) {
                json_object_del(c->responses, key);
        } else if (c->null_error) {
                msg = c->null_error;
                c->null_error = NULL;
        } else {
                return 0;
        }
        *result = NULL;
        if (json_object_get(msg, "error"))
                ctl_conn_error_from(msg, err);
        else
                *result = json_incref(json_object_get(msg, "result"));
        if (!*result && !err->code)
                *result = json_null();
        json_decref(msg);
        return 1;
}

/* Marks id's response to be dropped. */
void
ctl_conn_forget(struct ctl_conn *c, int64_t id)
{
        char key[32];

        snprintf(key, sizeof(key), "%lld", (long long) id);
        if (json_object_del(c->responses, key) != 0)
                json_object_set_new(c->forgotten, key, json_true());
}

/* Request and wait. */
json_t *
ctl_conn_call(struct ctl_conn *c, const char *method, json_t *params, struct sbx_error *err)
{
        int64_t id = ctl_conn_send(c, method, params, err);
        json_t *result = NULL;

        if (id < 0)
                return NULL;
        while (!ctl_conn_take(c, id, &result, err))
                if (ctl_conn_poll(c, NULL, 0, -1, err) < 0)
                        return NULL;
        return result;
}
