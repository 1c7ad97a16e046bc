/* ssh_conn.c — a non-blocking libssh connection on a uv_poll (ssh_conn.h); its channels are
 * ssh_chan.c. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/ssh/ssh_agentauth.h"
#include "backends/ssh/ssh_conn_int.h"

static const char *const conn_stage[] = {
        [CS_RESOLVE] = "resolving the host name",
        [CS_TCP] = "the TCP connection",
        [CS_HANDSHAKE] = "the SSH handshake",
        [CS_AUTH_NONE] = "authentication",
        [CS_AUTH_KEY] = "authentication",
        [CS_AUTH_AGENT] = "authentication with the ssh-agent's keys",
        [CS_UP] = "",
        [CS_DEAD] = "",
};

/* At most this many agent steps on worker threads at once, for all connections: libuv's pool has 4
 * threads and a stalled agent (the client's own) holds one up to the connect timeout; name lookups
 * need the others. */
#define CONN_AGENT_WORKERS_MAX 2
static unsigned conn_agent_workers;

static void conn_io_cb(uv_poll_t *p, int status, int events);
static void conn_die(struct ssh_conn *c, char *why);
static void conn_nonblock(struct ssh_conn *c);
static void conn_agent_start(struct ssh_conn *c);

void
sshconn_ref(struct ssh_conn *c)
{
        c->refs++;
}

void
sshconn_unref(struct ssh_conn *c)
{
        if (--c->refs > 0)
                return;
        if (c->ai)
                uv_freeaddrinfo(c->ai);
        free(c->host);
        free(c->user);
        free(c->key_label);
        free(c->hostkeys);
        free(c->tcp_error);
        free(c->pending_why);
        free(c->deferred_why);
        free(c->agent_label);
        if (c->agent_fd >= 0) /* never given to a session */
                close(c->agent_fd);
        free(c);
}

static void
conn_handle_close_cb(uv_handle_t *h)
{
        sshconn_unref(h->data);
}

/* ---- channels ---- */

static void
conn_update_poll(struct ssh_conn *c)
{
        int ev = UV_READABLE;

        if (!c->poll_init || c->state == CS_DEAD || c->working)
                return;
        if (c->s && (ssh_get_poll_flags(c->s) & SSH_WRITE_PENDING))
                ev |= UV_WRITABLE;
        if (ev != c->poll_events) {
                c->poll_events = ev;
                uv_poll_start(&c->poll, ev, conn_io_cb);
        }
}

/* Every channel moves on once; a snapshot, since owners' callbacks may open and close
 * channels. */
static void
conn_step_once(struct ssh_conn *c)
{
        struct ssh_chan **snap = xcalloc(list_count(&c->chans) + 1, sizeof(*snap));
        struct list *pos;
        size_t n = 0, i;

        for (pos = c->chans.next; pos != &c->chans; pos = pos->next) {
                snap[n] = LIST_ENTRY(pos, struct ssh_chan, link);
                snap[n++]->refs++;
        }
        for (i = 0; i < n; i++) {
                if (c->state == CS_UP && !c->pending_why && snap[i]->state != CH_DONE)
                        sshchan_step(snap[i]);
                sshchan_unref(snap[i]);
        }
        free(snap);
}

/* Moves every channel on, again while a callback asked for more (never recursively). */
void
sshconn_step(struct ssh_conn *c)
{
        if (c->state != CS_UP)
                return;
        if (c->stepping) {
                c->step_again = true;
                return;
        }
        sshconn_ref(c);
        c->stepping = true;
        do {
                c->step_again = false;
                conn_step_once(c);
        } while (c->step_again && c->state == CS_UP && !c->pending_why);
        c->stepping = false;
        if (c->pending_why && c->state == CS_UP) { /* asked for inside a libssh call */
                char *why = c->pending_why;
                c->pending_why = NULL;
                conn_die(c, why);
        }
        conn_update_poll(c);
        sshconn_unref(c);
}

static void
conn_kick_cb(uv_timer_t *t)
{
        sshconn_step(t->data);
}

/* A step soon, never from inside the owner's call: its callbacks (on_open, on_data,
 * on_close) find the owner's state as it was left, with the channel handle returned. */
void
sshconn_kick(struct ssh_conn *c)
{
        if (c->state == CS_UP && !uv_is_active((uv_handle_t *) &c->kick))
                uv_timer_start(&c->kick, conn_kick_cb, 0, 0);
}

/* Every channel ends with why (the session is about to go). */
static void
conn_end_chans(struct ssh_conn *c, const char *why)
{
        while (!list_empty(&c->chans)) {
                struct ssh_chan *ch = LIST_ENTRY(c->chans.next, struct ssh_chan, link);
                ch->refs++;
                if (ch->l) {
                        ssh_remove_channel_callbacks(ch->l, &ch->lcb);
                        ch->l = NULL; /* freed with the session */
                }
                sshchan_end(ch, why, false);
                sshchan_unref(ch);
        }
}

/* Frees libssh's side and closes the socket. libssh 0.10 never closes a socket given with
 * SSH_OPTIONS_FD on ssh_disconnect (and forgets it there, so ssh_free does not either); it
 * closes it itself only after a socket error, and then ssh_get_fd says -1. Left open, every
 * connection would keep a descriptor, and a socketpair to a jump host would never tell its
 * other end (client.c, socket.c). */
static void
conn_free_ssh(struct ssh_conn *c)
{
        int fd = c->fd;

        if (c->ev) {
                ssh_event_remove_session(c->ev, c->s);
                ssh_event_free(c->ev);
                c->ev = NULL;
        }
        if (c->s) {
                if (c->connect_called)
                        fd = ssh_get_fd(c->s); /* -1: libssh closed it */
                ssh_disconnect(c->s);
                ssh_free(c->s);
                c->s = NULL;
                if (c->agent_given) /* closed with the session (ssh_agent_free) */
                        c->agent_fd = -1;
        }
        if (fd >= 0)
                close(fd);
        c->fd = -1;
}

/* The connection is over (why is stolen); channels and the owner hear it. */
static void
conn_die(struct ssh_conn *c, char *why)
{
        enum conn_state was = c->state;

        if (c->state == CS_DEAD) {
                free(why);
                return;
        }
        if (c->working) { /* the worker has the session: stop it, end once it is back */
                if (!c->deferred_why)
                        c->deferred_why = why;
                else
                        free(why);
                if (c->agent_fd >= 0)
                        shutdown(c->agent_fd, SHUT_RDWR);
                return;
        }
        c->state = CS_DEAD;
        sshconn_ref(c);
        uv_close((uv_handle_t *) &c->timer, conn_handle_close_cb);
        uv_close((uv_handle_t *) &c->kick, conn_handle_close_cb);
        if (was == CS_RESOLVE)
                uv_cancel((uv_req_t *) &c->gai); /* its callback sees CS_DEAD */
        if (c->attempt) {
                c->attempt->abandoned = true;
                uv_close((uv_handle_t *) &c->attempt->tcp, NULL);
                c->attempt = NULL;
        }
        if (c->poll_init) /* before the fd closes: libuv forgets it now */
                uv_close((uv_handle_t *) &c->poll, conn_handle_close_cb);
        c->poll_init = false;
        conn_end_chans(c, why);
        conn_free_ssh(c);
        if (!c->owner_gone && was == CS_UP && c->cbs->on_down)
                c->cbs->on_down(c->ctx, c, why);
        else if (!c->owner_gone && was != CS_UP)
                c->cbs->on_ready(c->ctx, c, why);
        free(why);
        sshconn_unref(c);
}

/* What the server refused: the key, the agent's keys, or both (new). */
static char *
conn_refused_what(const struct ssh_conn *c)
{
        char *agent =
                c->agent_label
                        ? xasprintf("%s %d key%s of %s", c->agent_count == 1 ? "the" : "all",
                                    c->agent_count, c->agent_count == 1 ? "" : "s", c->agent_label)
                        : NULL;
        char *what;

        if (agent && c->had_key)
                what = xasprintf("the key (%s) and %s", c->key_label, agent);
        else if (agent)
                what = xstrdup(agent);
        else
                what = xasprintf("the key (%s)", c->key_label);
        free(agent);
        return what;
}

static char *
conn_auth_refused(struct ssh_conn *c)
{
        static const struct {
                int bit;
                const char *name;
        } methods[] = {
                {SSH_AUTH_METHOD_PUBLICKEY, "publickey"},
                {SSH_AUTH_METHOD_PASSWORD, "password"},
                {SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive"},
                {SSH_AUTH_METHOD_HOSTBASED, "hostbased"},
                {SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic"},
        };
        int m = ssh_userauth_list(c->s, NULL);
        struct buf b = {0};
        char *why, *what = conn_refused_what(c);

        for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
                if (m & methods[i].bit)
                        buf_appendf(&b, "%s%s", b.len ? ", " : "", methods[i].name);
        why = xasprintf("%s@%s:%u refused %s; the server offers: %s. Add the key's public half "
                        "to ~%s/.ssh/authorized_keys there (sandboxd authenticates with keys "
                        "only, never with passwords)",
                        c->user, c->host, c->port, what, b.len ? b.data : "nothing", c->user);
        free(what);
        buf_free(&b);
        return why;
}

static void
conn_up(struct ssh_conn *c)
{
        uv_timer_stop(&c->timer);
        c->ev = ssh_event_new();
        if (!c->ev || ssh_event_add_session(c->ev, c->s) != SSH_OK) {
                conn_die(c, xstrdup("libssh cannot poll the session"));
                return;
        }
        c->key = NULL; /* borrowed until here */
        c->state = CS_UP;
        if (!c->owner_gone)
                c->cbs->on_ready(c->ctx, c, NULL);
        sshconn_step(c);
}

/* The server's key, judged by the owner before anything is offered. */
static bool
conn_check_hostkey(struct ssh_conn *c)
{
        ssh_key k = NULL;
        char *refused;

        if (ssh_get_server_publickey(c->s, &k) != SSH_OK || !k) {
                conn_die(c, xasprintf("%s:%u sent no host key", c->host, c->port));
                return false;
        }
        refused = c->owner_gone ? xstrdup("closed") : c->cbs->check_hostkey(c->ctx, k);
        ssh_key_free(k);
        if (refused)
                conn_die(c, refused);
        return !refused;
}

/* ---- ssh-agent authentication, on a worker thread ---- */

/* Worker thread: the agent's key count once, then one ssh_userauth_agent step (it asks the
 * agent for keys and signatures, blocking; the session is non-blocking towards the server). */
static void
conn_agent_work_cb(uv_work_t *w)
{
        struct ssh_conn *c = w->data;

        c->agent_rc = SSH_AUTH_ERROR;
        if (!c->agent_counted) {
                c->agent_count = ssh_agentauth_count(c->agent_fd);
                c->agent_counted = true;
        }
        if (c->agent_count > 0)
                c->agent_rc = ssh_userauth_agent(c->s, NULL);
}

/* Why the agent could not be used, given its key count (or -errno): new, or NULL when it
 * holds keys. */
static char *
conn_agent_failure(const struct ssh_conn *c, int count)
{
        int e = -count;

        if (count > 0)
                return NULL;
        if (count == 0)
                return xasprintf("%s holds no keys: add yours to it (SSH_AUTH_SOCK=PATH ssh-add "
                                 "KEY) and try again",
                                 c->agent_label);
        if (e == ETIMEDOUT)
                return xasprintf("%s did not answer within %u s (connect_timeout_ms; is it "
                                 "stopped, or waiting for a confirmation?)",
                                 c->agent_label, c->timeout_ms / 1000);
        return xasprintf("%s cannot be used: %s", c->agent_label,
                         e == EPROTO  ? "its answer is not the ssh-agent protocol's"
                         : e == EPIPE ? "it closed the connection"
                                      : strerror(e));
}

/* Back on the loop: the session is the loop's again. */
static void
conn_agent_after_cb(uv_work_t *w, int status)
{
        struct ssh_conn *c = w->data;
        char *why = c->deferred_why;

        conn_agent_workers--;
        c->working = false;
        c->deferred_why = NULL;
        conn_nonblock(c);
        if (!why)
                why = conn_agent_failure(c, c->agent_count);
        if (!why && c->agent_rc == SSH_AUTH_ERROR)
                why = xasprintf("authentication with %s:%u through %s failed: %s", c->host, c->port,
                                c->agent_label, ssh_get_error(c->s));
        if (!why && c->agent_rc != SSH_AUTH_SUCCESS && c->agent_rc != SSH_AUTH_AGAIN)
                why = conn_auth_refused(c); /* denied, or partial: another method wanted */
        if (why)
                conn_die(c, why);
        else if (c->agent_rc == SSH_AUTH_SUCCESS)
                conn_up(c);
        if (c->state != CS_DEAD) /* waits for the server (SSH_AUTH_AGAIN), or is up */
                conn_update_poll(c);
        sshconn_unref(c);
}

/* Hands the session to a worker for one step; the loop stops watching its socket meanwhile. */
static void
conn_agent_start(struct ssh_conn *c)
{
        if (c->working)
                return;
        if (conn_agent_workers >= CONN_AGENT_WORKERS_MAX) {
                conn_die(c, xasprintf("authentication with %s:%u through %s: %u other ssh-agent "
                                      "authentications are in progress (at most %u at once, a "
                                      "stalled agent holds one up to the connect timeout); try "
                                      "again in a moment",
                                      c->host, c->port, c->agent_label, conn_agent_workers,
                                      CONN_AGENT_WORKERS_MAX));
                return;
        }
        uv_poll_stop(&c->poll);
        c->poll_events = 0; /* conn_update_poll starts it again */
        c->working = true;
        c->work.data = c;
        sshconn_ref(c);
        conn_agent_workers++;
        if (uv_queue_work(c->loop, &c->work, conn_agent_work_cb, conn_agent_after_cb) < 0) {
                c->working = false;
                conn_agent_workers--;
                sshconn_unref(c);
                conn_die(c, xstrdup("cannot start a worker thread for the ssh-agent"));
        }
}

/* One step of the handshake or authentication; returns false to wait for the socket. */
static bool
conn_handshake_step(struct ssh_conn *c)
{
        int rc;

        switch (c->state) {
        case CS_HANDSHAKE:
                c->connect_called = true;
                rc = ssh_connect(c->s);
                if (rc == SSH_AGAIN)
                        return false;
                if (rc != SSH_OK) {
                        conn_die(c, xasprintf("the SSH handshake with %s:%u failed: %s", c->host,
                                              c->port, ssh_get_error(c->s)));
                        return false;
                }
                if (conn_check_hostkey(c))
                        c->state = CS_AUTH_NONE;
                return c->state == CS_AUTH_NONE;
        case CS_AUTH_NONE:
                rc = ssh_userauth_none(c->s, NULL);
                if (rc == SSH_AUTH_AGAIN)
                        return false;
                if (rc == SSH_AUTH_SUCCESS) {
                        conn_up(c);
                        return false;
                }
                if (rc == SSH_AUTH_ERROR) {
                        conn_die(c, xasprintf("authentication with %s:%u failed: %s", c->host,
                                              c->port, ssh_get_error(c->s)));
                        return false;
                }
                c->state = c->key ? CS_AUTH_KEY : CS_AUTH_AGENT;
                return true;
        case CS_AUTH_AGENT:
                conn_agent_start(c);
                return false;
        default:
                c->had_key = true;
                rc = ssh_userauth_publickey(c->s, NULL, c->key);
                if (rc == SSH_AUTH_AGAIN)
                        return false;
                if (rc == SSH_AUTH_SUCCESS)
                        conn_up(c);
                else if (rc == SSH_AUTH_ERROR)
                        conn_die(c, xasprintf("authentication with %s:%u failed: %s", c->host,
                                              c->port, ssh_get_error(c->s)));
                else if (c->agent_fd >= 0)
                        c->state = CS_AUTH_AGENT;
                else
                        conn_die(c, conn_auth_refused(c));
                return c->state == CS_AUTH_AGENT;
        }
}

/* Reads and handles what arrived (libssh's callbacks run here), then checks the session. */
void
sshconn_pump(struct ssh_conn *c)
{
        int rc = SSH_OK;

        c->in_pump = true;
        for (int i = 0; i < CONN_PUMP_ROUNDS && rc == SSH_OK && !c->pending_why; i++)
                rc = ssh_event_dopoll(c->ev, 0);
        c->in_pump = false;
        if (c->pending_why) {
                char *why = c->pending_why;
                c->pending_why = NULL;
                conn_die(c, why);
        } else if (rc == SSH_ERROR || !ssh_is_connected(c->s)) {
                conn_die(c, xasprintf("the connection to %s:%u was lost: %s", c->host, c->port,
                                      ssh_get_error(c->s)));
        }
}

/* libssh 0.10 makes the socket blocking once it sees it connected (socket.c, the POLLOUT of
 * a connecting socket), whatever the session's mode: a write bigger than the socket's buffer
 * would then stop the whole loop until the peer reads (a slow link, a full send buffer).
 * Its non-blocking paths handle EAGAIN (seen with an upload through a 200 KiB socketpair),
 * so the flag is put back after every handshake step. */
static void
conn_nonblock(struct ssh_conn *c)
{
        int fl = c->fd >= 0 ? fcntl(c->fd, F_GETFL) : -1;

        if (fl >= 0 && !(fl & O_NONBLOCK))
                fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
}

static void
conn_io_cb(uv_poll_t *p, int status, int events)
{
        struct ssh_conn *c = p->data;

        sshconn_ref(c);
        if (status < 0 && c->state != CS_UP) {
                conn_die(c, xasprintf("the connection to %s:%u failed during %s: %s", c->host,
                                      c->port, conn_stage[c->state], uv_strerror(status)));
        } else if (c->state < CS_UP) {
                while (c->state < CS_UP && conn_handshake_step(c))
                        conn_nonblock(c);
                conn_nonblock(c);
                conn_update_poll(c);
        } else if (c->state == CS_UP) {
                sshconn_pump(c);
                sshconn_step(c);
        }
        sshconn_unref(c);
}

static void
conn_timeout_cb(uv_timer_t *t)
{
        struct ssh_conn *c = t->data;

        if (c->working) { /* a non-blocking session: only the agent can hold the worker */
                conn_die(c, conn_agent_failure(c, -ETIMEDOUT)); /* stops the worker */
                return;
        }
        conn_die(c, xasprintf("no SSH session with %s:%u within %u s (stuck at %s: a firewall "
                              "dropping packets, a wrong address, or a very slow server)",
                              c->host, c->port, c->timeout_ms / 1000, conn_stage[c->state]));
}

static void
conn_sockopts(struct ssh_conn *c, int fd)
{
        int one = 1, idle = (int) MAX(c->user_timeout_ms / 3000, 1u), cnt = 3;
        unsigned ut = c->user_timeout_ms;

        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
        if (ut)
                setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
}

/* The socket is connected: libssh takes it over. */
static void
conn_start_ssh(struct ssh_conn *c, int fd)
{
        bool no = false;
        socket_t sfd = fd;
        unsigned port = c->port;

        c->fd = fd;
        c->s = ssh_new();
        if (!c->s) {
                conn_die(c, xstrdup("libssh cannot create a session"));
                return;
        }
        /* No file of the daemon's user is read: not ~/.ssh/config, not its known_hosts. */
        ssh_options_set(c->s, SSH_OPTIONS_PROCESS_CONFIG, &no);
        ssh_options_set(c->s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null");
        ssh_options_set(c->s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
        ssh_options_set(c->s, SSH_OPTIONS_HOST, c->host);
        ssh_options_set(c->s, SSH_OPTIONS_PORT, &port);
        ssh_options_set(c->s, SSH_OPTIONS_USER, c->user);
        if (c->hostkeys)
                ssh_options_set(c->s, SSH_OPTIONS_HOSTKEYS, c->hostkeys);
        ssh_options_set(c->s, SSH_OPTIONS_FD, &sfd);
        /* Never the daemon's own SSH_AUTH_SOCK, should libssh ever look for an agent itself. */
        ssh_options_set(c->s, SSH_OPTIONS_IDENTITY_AGENT, "/dev/null");
        if (c->agent_fd >= 0 && ssh_set_agent_socket(c->s, c->agent_fd) != SSH_OK) {
                conn_die(c, xstrdup("libssh does not take the ssh-agent's socket"));
                return;
        }
        c->agent_given = c->agent_fd >= 0;
        ssh_set_blocking(c->s, 0);
        uv_poll_init_socket(c->loop, &c->poll, fd);
        c->poll.data = c;
        c->poll_init = true;
        sshconn_ref(c); /* the poll handle's */
        c->poll_events = UV_READABLE | UV_WRITABLE;
        uv_poll_start(&c->poll, c->poll_events, conn_io_cb);
        c->state = CS_HANDSHAKE;
}

static void conn_tcp_next(struct ssh_conn *c);

static void
conn_attempt_close_cb(uv_handle_t *h)
{
        struct conn_attempt *a = h->data;

        sshconn_unref(a->c);
        free(a);
}

static void
conn_tcp_cb(uv_connect_t *req, int status)
{
        struct conn_attempt *a = req->data;
        struct ssh_conn *c = a->c;
        uv_os_fd_t fd = -1;
        int dup = -1;

        if (a->abandoned)
                return; /* closed by conn_die */
        c->attempt = NULL;
        if (status == 0 && uv_fileno((uv_handle_t *) &a->tcp, &fd) == 0)
                dup = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* libssh owns this one; libuv the other */
        if (dup < 0) {
                free(c->tcp_error);
                c->tcp_error = xstrdup(status < 0 ? uv_strerror(status) : strerror(errno));
        }
        uv_close((uv_handle_t *) &a->tcp, conn_attempt_close_cb);
        if (dup < 0) {
                conn_tcp_next(c);
                return;
        }
        conn_sockopts(c, dup);
        conn_start_ssh(c, dup);
}

/* Tries the next address, or gives up with the last error. */
static void
conn_tcp_next(struct ssh_conn *c)
{
        struct conn_attempt *a;
        struct addrinfo *ai = c->next_ai;

        if (!ai) {
                conn_die(c, xasprintf("cannot connect to %s port %u: %s%s", c->host, c->port,
                                      c->tcp_error ? c->tcp_error : "no address",
                                      c->tcp_error && strstr(c->tcp_error, "refused")
                                              ? " (is sshd running there, on that port?)"
                                              : ""));
                return;
        }
        c->next_ai = ai->ai_next;
        a = xcalloc(1, sizeof(*a));
        a->c = c;
        sshconn_ref(c);
        uv_tcp_init(c->loop, &a->tcp);
        a->tcp.data = a;
        a->req.data = a;
        c->attempt = a;
        if (uv_tcp_connect(&a->req, &a->tcp, ai->ai_addr, conn_tcp_cb) < 0) {
                c->attempt = NULL;
                uv_close((uv_handle_t *) &a->tcp, conn_attempt_close_cb);
                conn_tcp_next(c);
        }
}

static void
conn_resolved_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
        struct ssh_conn *c = req->data;

        c->ai = res;
        if (c->state == CS_DEAD) {
                sshconn_unref(c);
                return;
        }
        if (status < 0)
                conn_die(c, xasprintf("cannot resolve the host name '%s': %s (check ssh.host or "
                                      "the host entry's host)",
                                      c->host, uv_strerror(status)));
        else {
                c->state = CS_TCP;
                c->next_ai = res;
                conn_tcp_next(c);
        }
        sshconn_unref(c);
}

static void
conn_no_resolver_cb(uv_timer_t *t)
{
        struct ssh_conn *c = t->data;

        conn_die(c, xasprintf("cannot resolve the host name '%s': the resolver could not start",
                              c->host));
}

/* Starts connecting. */
struct ssh_conn *
ssh_conn_open(uv_loop_t *loop, const struct ssh_conn_config *cfg, const struct ssh_conn_cbs *cbs,
              void *ctx)
{
        struct ssh_conn *c = xcalloc(1, sizeof(*c));
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        char port[16];

        c->loop = loop;
        c->host = xstrdup(cfg->host);
        c->user = xstrdup(cfg->user);
        c->key_label = xstrdup(cfg->key_label ? cfg->key_label : "the key");
        c->hostkeys = cfg->hostkeys ? xstrdup(cfg->hostkeys) : NULL;
        c->port = cfg->port ? cfg->port : 22;
        c->timeout_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
        c->user_timeout_ms = cfg->user_timeout_ms;
        c->key = cfg->key;
        c->cbs = cbs;
        c->ctx = ctx;
        c->fd = -1;
        c->agent_fd = cfg->agent_fd >= 0 ? fcntl(cfg->agent_fd, F_DUPFD_CLOEXEC, 3) : -1;
        c->agent_label = cfg->agent_label ? xstrdup(cfg->agent_label) : NULL;
        if (c->agent_fd >= 0)
                ssh_agentauth_timeouts(c->agent_fd, c->timeout_ms);
        c->refs = 3; /* the owner's and the timers' */
        list_init(&c->chans);
        uv_timer_init(loop, &c->timer);
        c->timer.data = c;
        uv_timer_init(loop, &c->kick);
        c->kick.data = c;
        uv_timer_start(&c->timer, conn_timeout_cb, c->timeout_ms, 0);
        if (cfg->fd >= 0) {
                conn_start_ssh(c, cfg->fd);
                return c;
        }
        snprintf(port, sizeof(port), "%u", c->port);
        c->gai.data = c;
        sshconn_ref(c); /* the resolver's */
        if (uv_getaddrinfo(loop, &c->gai, conn_resolved_cb, c->host, port, &hints) < 0) {
                sshconn_unref(c);
                c->state = CS_TCP; /* nothing to cancel */
                /* On the next turn: the owner has not even stored c yet. */
                uv_timer_start(&c->timer, conn_no_resolver_cb, 0, 0);
        }
        return c;
}

/* Ends c with why (stolen), now or, inside libssh's callbacks, once libssh has returned. */
static void
conn_end(struct ssh_conn *c, char *why)
{
        if (c->in_pump && !c->pending_why)
                c->pending_why = why;
        else if (c->in_pump)
                free(why);
        else
                conn_die(c, why);
}

/* The owner lets go. */
void
ssh_conn_close(struct ssh_conn *c)
{
        if (!c)
                return;
        c->owner_gone = true;
        conn_end(c, xstrdup("the connection was closed"));
        sshconn_unref(c);
}

/* Ends it as lost. */
void
ssh_conn_fail(struct ssh_conn *c, const char *why)
{
        sshconn_ref(c);
        conn_end(c, xstrdup(why));
        sshconn_unref(c);
}

/* Cut off for going past a window. */
bool
ssh_conn_cut_off(const struct ssh_conn *c)
{
        return c && c->cut_off;
}

/* Up and alive. */
bool
ssh_conn_up(const struct ssh_conn *c)
{
        return c && c->state == CS_UP && !c->owner_gone;
}

/* The server's OpenSSH version (0: not OpenSSH). */
int
ssh_conn_openssh_version(const struct ssh_conn *c)
{
        return c && c->s ? ssh_get_openssh_version(c->s) : 0;
}

/* A POSIX shell word. */
char *
ssh_shell_quote(const char *word)
{
        struct buf b = {0};

        buf_append(&b, "'", 1);
        for (const char *p = word; *p; p++) {
                if (*p == '\'')
                        buf_append(&b, "'\\''", 4);
                else
                        buf_append(&b, p, 1);
        }
        buf_append(&b, "'", 2); /* and the NUL */
        return b.data;
}
