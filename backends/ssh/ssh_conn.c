/* ssh_conn.c — a non-blocking libssh connection on a uv_poll, and its channels (ssh_conn.h). */
#include "backends/ssh/ssh_conn.h"

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
#include "backends/ssh/ssh_window.h"
#include "protocol/list.h"
#include "protocol/util.h"

#define CONN_PUMP_ROUNDS 64 /* libssh reads 4 KiB a round: at most 256 KiB per event */
#define CHAN_WRITE_MAX   (64u << 10)
#define CHAN_READ_MAX    (16u << 10) /* one delivery of what libssh held */
#define CHAN_SIGNAL_MAX  32          /* an exit-signal name kept */

enum conn_state {
        CS_RESOLVE,
        CS_TCP,
        CS_HANDSHAKE,
        CS_AUTH_NONE,
        CS_AUTH_KEY,
        CS_AUTH_AGENT,
        CS_UP,
        CS_DEAD,
};

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

struct conn_attempt {
        uv_tcp_t tcp;
        uv_connect_t req;
        struct ssh_conn *c;
        bool abandoned;
};

struct ssh_conn {
        uv_loop_t *loop;
        char *host, *user, *key_label, *hostkeys;
        unsigned port, timeout_ms, user_timeout_ms;
        ssh_key key;
        const struct ssh_conn_cbs *cbs;
        void *ctx;
        int refs; /* the owner's, one per open handle or pending request, the busy ones */
        enum conn_state state;
        bool owner_gone, in_pump, poll_init, stepping, step_again;
        char *pending_why;   /* an end asked for inside libssh's callbacks (conn_pump ends it) */
        bool cut_off;        /* the server went past a channel's window */
        bool connect_called; /* libssh has taken the socket over */
        uv_getaddrinfo_t gai;
        struct addrinfo *ai, *next_ai;
        struct conn_attempt *attempt;
        char *tcp_error; /* why the last address failed */
        int fd;
        bool had_key; /* a key was offered (it was refused when the agent is asked) */
        uv_poll_t poll;
        int poll_events;
        uv_timer_t timer;
        uv_timer_t kick; /* the step an owner's call asked for, on the next loop turn */
        ssh_session s;
        ssh_event ev;
        struct list chans; /* struct ssh_chan */
        /* ssh-agent authentication: the socket (libssh's once given to the session) */
        int agent_fd;
        char *agent_label;
        uv_work_t work;
        bool agent_given;   /* the session has agent_fd (and closes it) */
        bool working;       /* the session is the worker's: the loop leaves it alone */
        bool agent_counted; /* agent_count holds the agent's answer */
        int agent_count;    /* keys the agent holds, or -errno */
        int agent_rc;       /* ssh_userauth_agent's last answer */
        char *deferred_why; /* an end asked for while working (the worker is stopped first) */
};

enum chan_state { CH_OPENING, CH_PTY, CH_EXEC, CH_OPEN, CH_DONE };

struct ssh_chan {
        struct list link; /* in conn->chans while it has a libssh channel */
        struct ssh_conn *c;
        int refs; /* the list's, and a step's */
        enum chan_state state;
        struct ssh_chan_spec spec; /* strings owned */
        const struct ssh_chan_cbs *cbs;
        void *ctx;
        ssh_channel l;
        struct ssh_channel_callbacks_struct lcb; /* libssh keeps a pointer: it lives here */
        struct buf out;
        bool owner_gone, eof_wanted, eof_sent, resize_pending, remote_closed, paused, drain;
        bool denied;           /* the server refused to open it */
        bool taking;           /* reading out what libssh held: callbacks leave data there */
        char *overflow;        /* why the channel ends: its unread output overflowed */
        struct ssh_window win; /* what libssh holds of it */
        struct buf kept[2];    /* read out of libssh, not yet delivered (stdout, stderr) */
        size_t kept_off[2];
        unsigned open_reason; /* SSH_MSG_CHANNEL_OPEN_FAILURE's reason code, or 0 */
        int exit_status;
        char *exit_signal;
};

static void conn_step(struct ssh_conn *c);
static void conn_kick(struct ssh_conn *c);
static void conn_io_cb(uv_poll_t *p, int status, int events);
static void conn_die(struct ssh_conn *c, char *why);
static void conn_nonblock(struct ssh_conn *c);
static void conn_agent_start(struct ssh_conn *c);

static void
conn_ref(struct ssh_conn *c)
{
        c->refs++;
}

static void
conn_unref(struct ssh_conn *c)
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
        conn_unref(h->data);
}

/* ---- channels ---- */

static void
chan_unref(struct ssh_chan *ch)
{
        if (--ch->refs > 0)
                return;
        free((char *) ch->spec.command);
        free((char *) ch->spec.path);
        free((char *) ch->spec.host);
        free(ch->exit_signal);
        free(ch->overflow);
        buf_free(&ch->out);
        buf_free(&ch->kept[0]);
        buf_free(&ch->kept[1]);
        conn_unref(ch->c);
        free(ch);
}

/* Lets go of the libssh channel (the session may be gone already: l is NULL then). */
static void
chan_teardown(struct ssh_chan *ch)
{
        if (ch->l) {
                ssh_remove_channel_callbacks(ch->l, &ch->lcb);
                /* Not one the server refused: libssh 0.10 would send EOF for it, and OpenSSH
                 * ends the whole connection for an EOF on a channel it does not know. */
                if (!ch->denied)
                        ssh_channel_close(ch->l);
                ssh_channel_free(ch->l);
                ch->l = NULL;
        }
        ch->state = CH_DONE;
        if (ch->link.next != &ch->link) {
                list_del(&ch->link);
                chan_unref(ch);
        }
}

/* The channel's end, told to its owner once. */
static void
chan_end(struct ssh_chan *ch, const char *error, bool refused)
{
        struct ssh_chan_end end = {
                .opened = ch->state == CH_OPEN,
                .exit_status = ch->exit_status,
                .signal = ch->exit_signal,
                .error = error,
                .refused = refused,
                .open_reason = ch->open_reason,
        };
        bool tell = !ch->owner_gone && ch->state != CH_DONE;

        ch->owner_gone = true;
        chan_teardown(ch);
        if (tell)
                ch->cbs->on_close(ch->ctx, &end);
}

/* Bytes read out of libssh and not yet delivered. */
static size_t
chan_kept(const struct ssh_chan *ch)
{
        return ch->kept[0].len - ch->kept_off[0] + ch->kept[1].len - ch->kept_off[1];
}

/* libssh held more than any window for the channel. With one stream that is the server
 * sending past the window: the whole connection ends once libssh has returned (this runs
 * inside whichever libssh call handled the packet: conn_pump or conn_step end it), and its
 * owner can tell it was cut off (ssh_conn_cut_off). A command's two streams prove nothing:
 * libssh 0.10 widens the window when one stream's packet arrives while the other's data waits
 * (channel_rcv_data counts that stream's buffer only), so an honest server can get there;
 * only that channel ends (chan_step). */
static void
chan_past_window(struct ssh_chan *ch, size_t past)
{
        struct ssh_conn *c = ch->c;

        if (ch->spec.kind == SSH_CHAN_EXEC && !ch->spec.pty) {
                if (!ch->overflow)
                        ch->overflow = xasprintf(
                                "more than %zu bytes of the command's output waited unread on "
                                "%s:%u (libssh 0.10 lets a server interleaving stdout and "
                                "stderr send on past the window): the channel is closed; "
                                "read the output as it comes, or run it with a pty",
                                SSH_WINDOW_MAX, c->host, c->port);
                return;
        }
        if (c->pending_why)
                return;
        c->cut_off = true;
        c->pending_why = xasprintf("%s:%u sent %zu bytes past the window of a channel the daemon "
                                   "was not reading (at most %zu bytes may wait there): a broken "
                                   "or hostile server, the connection is closed",
                                   c->host, c->port, past, SSH_WINDOW_MAX);
}

/* libssh offers everything it holds of the stream. Taken at once while the owner reads and
 * nothing waits before it; left with libssh (which then grants no window) and counted while
 * the channel is paused, not open yet, or being read out. */
static int
chan_data_cb(ssh_session s, ssh_channel l, void *data, uint32_t len, int is_stderr, void *ud)
{
        struct ssh_chan *ch = ud;
        int stream = is_stderr ? 1 : 0;
        size_t past;

        if (ch->owner_gone || ch->c->pending_why || ch->overflow) {
                ssh_window_take(&ch->win, stream, len);
                return (int) len; /* nobody reads it any more */
        }
        if (ch->paused || ch->taking || ch->state != CH_OPEN || chan_kept(ch) ||
            ssh_window_held(&ch->win)) {
                past = ssh_window_hold(&ch->win, stream, len);
                if (past)
                        chan_past_window(ch, past);
                else if (!ch->paused && !ch->taking)
                        ch->drain = true; /* the step delivers it after what waits before it */
                conn_kick(ch->c);
                return 0;
        }
        if (len)
                ch->cbs->on_data(ch->ctx, stream, data, len);
        return (int) len;
}

static void
chan_eof_cb(ssh_session s, ssh_channel l, void *ud)
{
        struct ssh_chan *ch = ud;

        if (!ch->owner_gone && ch->cbs->on_eof)
                ch->cbs->on_eof(ch->ctx);
}

static void
chan_close_cb(ssh_session s, ssh_channel l, void *ud)
{
        ((struct ssh_chan *) ud)->remote_closed = true;
}

static void
chan_exit_status_cb(ssh_session s, ssh_channel l, int status, void *ud)
{
        ((struct ssh_chan *) ud)->exit_status = status;
}

static void
chan_exit_signal_cb(ssh_session s, ssh_channel l, const char *sig, int core, const char *msg,
                    const char *lang, void *ud)
{
        struct ssh_chan *ch = ud;

        free(ch->exit_signal);
        ch->exit_signal = xstrndup(sig ? sig : "?", CHAN_SIGNAL_MAX);
}

/* Opens a channel. */
struct ssh_chan *
ssh_chan_open(struct ssh_conn *c, const struct ssh_chan_spec *spec, const struct ssh_chan_cbs *cbs,
              void *ctx)
{
        struct ssh_chan *ch;
        ssh_channel l;

        if (!ssh_conn_up(c) || c->pending_why || !(l = ssh_channel_new(c->s)))
                return NULL;
        ch = xcalloc(1, sizeof(*ch));
        ch->c = c;
        conn_ref(c);
        ch->refs = 1;
        ch->spec = *spec;
        ch->spec.command = spec->command ? xstrdup(spec->command) : NULL;
        ch->spec.path = spec->path ? xstrdup(spec->path) : NULL;
        ch->spec.host = spec->host ? xstrdup(spec->host) : NULL;
        ch->cbs = cbs;
        ch->ctx = ctx;
        ch->exit_status = -1;
        ch->l = l;
        ch->lcb = (struct ssh_channel_callbacks_struct){
                .userdata = ch,
                .channel_data_function = chan_data_cb,
                .channel_eof_function = chan_eof_cb,
                .channel_close_function = chan_close_cb,
                .channel_exit_status_function = chan_exit_status_cb,
                .channel_exit_signal_function = chan_exit_signal_cb,
        };
        ssh_callbacks_init(&ch->lcb);
        ssh_set_channel_callbacks(l, &ch->lcb);
        list_add_tail(&c->chans, &ch->link);
        conn_kick(c);
        return ch;
}

/* Queues bytes. */
void
ssh_chan_write(struct ssh_chan *ch, const void *data, size_t len)
{
        if (ch->state == CH_DONE || ch->eof_wanted || !len)
                return;
        buf_append(&ch->out, data, len);
        if (ch->state == CH_OPEN)
                conn_kick(ch->c);
}

/* Bytes not yet taken. */
size_t
ssh_chan_queued(const struct ssh_chan *ch)
{
        return ch->out.len;
}

/* EOF after the queue. */
void
ssh_chan_eof(struct ssh_chan *ch)
{
        ch->eof_wanted = true;
        if (ch->state == CH_OPEN)
                conn_kick(ch->c);
}

/* New pty size. */
void
ssh_chan_resize(struct ssh_chan *ch, unsigned short rows, unsigned short cols)
{
        ch->spec.rows = rows;
        ch->spec.cols = cols;
        ch->resize_pending = true;
        if (ch->state == CH_OPEN)
                conn_kick(ch->c);
}

/* Stops delivering (backpressure). */
void
ssh_chan_pause(struct ssh_chan *ch)
{
        ch->paused = true;
}

/* Delivers again, starting with what libssh kept meanwhile. */
void
ssh_chan_resume(struct ssh_chan *ch)
{
        if (!ch->paused)
                return;
        ch->paused = false;
        ch->drain = true;
        conn_kick(ch->c);
}

/* Reads out everything libssh holds of the channel, at once: libssh 0.10 grows the window
 * on every read whatever it still holds, so reading only what the owner takes would let an
 * honest server pile data up there, one window more each time the owner pauses. Reads only
 * what was counted (a flood meanwhile waits in libssh, counted). Whether it read anything. */
static bool
chan_take(struct ssh_chan *ch)
{
        char b[CHAN_READ_MAX];
        bool any = false;
        int n;

        ch->taking = true;
        for (int stream = 0; stream < 2; stream++) {
                size_t want = ch->win.held[stream];
                while (want && ch->l && !ch->c->pending_why) {
                        n = ssh_channel_read_nonblocking(ch->l, b, MIN(sizeof(b), want), stream);
                        if (n <= 0) {
                                ch->win.held[stream] = 0; /* libssh has none of it left */
                                break;
                        }
                        ssh_window_take(&ch->win, stream, (size_t) n);
                        want -= MIN(want, (size_t) n);
                        buf_append(&ch->kept[stream], b, (size_t) n);
                        any = true;
                }
        }
        ch->taking = false;
        return any;
}

/* Delivers what was read out, while the owner takes it. */
static void
chan_deliver_kept(struct ssh_chan *ch)
{
        for (int stream = 0; stream < 2; stream++) {
                struct buf *k = &ch->kept[stream];
                while (!ch->paused && !ch->owner_gone && k->len > ch->kept_off[stream]) {
                        size_t n = MIN(k->len - ch->kept_off[stream], CHAN_READ_MAX);
                        ch->kept_off[stream] += n;
                        ch->cbs->on_data(ch->ctx, stream, k->data + ch->kept_off[stream] - n, n);
                }
                if (ch->kept_off[stream] == k->len) {
                        buf_free(k);
                        ch->kept_off[stream] = 0;
                }
        }
}

/* What libssh held while the owner did not read: libssh offers it again only when the next
 * packet arrives, which a server whose window is full never sends, so it is read here. A
 * bounded number of rounds a step (a server that keeps sending gets the next step). */
static void
chan_drain(struct ssh_chan *ch)
{
        ch->drain = false;
        ch->c->in_pump = true; /* reading may handle packets: callbacks run */
        for (int i = 0; i < CONN_PUMP_ROUNDS; i++) {
                if (ch->paused || ch->owner_gone || !ch->l || ch->c->pending_why || ch->overflow)
                        break;
                if (!chan_kept(ch) && !chan_take(ch))
                        break;
                chan_deliver_kept(ch);
        }
        ch->c->in_pump = false;
        if (!ch->paused && !ch->owner_gone && (chan_kept(ch) || ssh_window_held(&ch->win))) {
                ch->drain = true;
                conn_kick(ch->c);
        }
}

/* The owner lets go. */
void
ssh_chan_close(struct ssh_chan *ch)
{
        ch->owner_gone = true;
        conn_kick(ch->c);
}

static int
chan_open_call(struct ssh_chan *ch)
{
        switch (ch->spec.kind) {
        case SSH_CHAN_EXEC:
                return ssh_channel_open_session(ch->l);
        case SSH_CHAN_UNIX:
                return ssh_channel_open_forward_unix(ch->l, ch->spec.path, "127.0.0.1", 0);
        case SSH_CHAN_TCP:
                return ssh_channel_open_forward(ch->l, ch->spec.host, (int) ch->spec.port,
                                                "127.0.0.1", 0);
        }
        return SSH_ERROR;
}

/* Writes what the window allows, then EOF and a new size when asked. */
static void
chan_flush(struct ssh_chan *ch)
{
        char *why;

        while (ch->out.len) {
                size_t n = MIN(MIN(ch->out.len, ssh_channel_window_size(ch->l)), CHAN_WRITE_MAX);
                int w = n ? ssh_channel_write(ch->l, ch->out.data, (uint32_t) n) : 0;
                if (w < 0) {
                        why = xasprintf("cannot write to the channel: %s", ssh_get_error(ch->c->s));
                        chan_end(ch, why, false);
                        free(why);
                        return;
                }
                if (w == 0)
                        break;
                buf_consume(&ch->out, (size_t) w);
                if (ch->cbs->on_drain && !ch->owner_gone)
                        ch->cbs->on_drain(ch->ctx, ch->out.len);
                if (ch->state != CH_OPEN || ch->owner_gone)
                        return;
        }
        if (!ch->out.len && ch->eof_wanted && !ch->eof_sent) {
                ch->eof_sent = true;
                ssh_channel_send_eof(ch->l);
        }
        if (ch->resize_pending && ch->spec.pty) {
                ch->resize_pending = false;
                ssh_channel_change_pty_size(ch->l, ch->spec.cols, ch->spec.rows);
        }
}

/* One libssh step of the channel's set-up; SSH_OK moves on. */
static int
chan_setup_call(struct ssh_chan *ch)
{
        switch (ch->state) {
        case CH_OPENING:
                return chan_open_call(ch);
        case CH_PTY:
                return ssh_channel_request_pty_size(ch->l, "xterm-256color", ch->spec.cols,
                                                    ch->spec.rows);
        case CH_EXEC:
                return ssh_channel_request_exec(ch->l, ch->spec.command);
        default:
                return SSH_OK;
        }
}

static enum chan_state
chan_next_state(const struct ssh_chan *ch)
{
        if (ch->state == CH_OPENING && ch->spec.kind == SSH_CHAN_EXEC)
                return ch->spec.pty ? CH_PTY : CH_EXEC;
        if (ch->state == CH_PTY)
                return CH_EXEC;
        return CH_OPEN;
}

/* The reason code of a refused open, from libssh 0.10's "Channel opening failure: channel N
 * error (CODE) TEXT" (channels.c), or 0. */
static unsigned
chan_open_reason(const char *error)
{
        const char *p = error ? strstr(error, "error (") : NULL;
        unsigned long code;
        char *end;

        if (!p)
                return 0;
        code = strtoul(p + 7, &end, 10);
        return *end == ')' && code < 256 ? (unsigned) code : 0;
}

/* Moves the channel on as far as it goes without waiting. */
static void
chan_step(struct ssh_chan *ch)
{
        static const char *const what[] = {"open the channel", "allocate a pty", "run the command"};
        char *why;
        int rc;

        if (ch->owner_gone) {
                chan_teardown(ch);
                return;
        }
        if (ch->overflow) {
                chan_end(ch, ch->overflow, false);
                return;
        }
        while (ch->state < CH_OPEN) {
                rc = chan_setup_call(ch);
                if (rc == SSH_AGAIN)
                        return;
                if (rc != SSH_OK) {
                        why = xasprintf("the server refused to %s: %s", what[ch->state],
                                        ssh_get_error(ch->c->s));
                        ch->denied = ch->state == CH_OPENING;
                        if (ch->denied)
                                ch->open_reason = chan_open_reason(ssh_get_error(ch->c->s));
                        chan_end(ch, why, ch->denied);
                        free(why);
                        return;
                }
                ch->state = chan_next_state(ch);
                if (ch->state == CH_OPEN && ch->cbs->on_open)
                        ch->cbs->on_open(ch->ctx);
                if (ch->owner_gone) {
                        chan_teardown(ch);
                        return;
                }
        }
        if (ch->state == CH_OPEN && ch->drain)
                chan_drain(ch);
        if (ch->state == CH_OPEN)
                chan_flush(ch);
        if (ch->state == CH_OPEN && ch->remote_closed && !ch->paused && !ch->drain)
                chan_end(ch, NULL, false);
}

/* ---- the connection ---- */

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
                        chan_step(snap[i]);
                chan_unref(snap[i]);
        }
        free(snap);
}

/* Moves every channel on, again while a callback asked for more (never recursively). */
static void
conn_step(struct ssh_conn *c)
{
        if (c->state != CS_UP)
                return;
        if (c->stepping) {
                c->step_again = true;
                return;
        }
        conn_ref(c);
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
        conn_unref(c);
}

static void
conn_kick_cb(uv_timer_t *t)
{
        conn_step(t->data);
}

/* A step soon, never from inside the owner's call: its callbacks (on_open, on_data,
 * on_close) find the owner's state as it was left, with the channel handle returned. */
static void
conn_kick(struct ssh_conn *c)
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
                chan_end(ch, why, false);
                chan_unref(ch);
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
        conn_ref(c);
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
        conn_unref(c);
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
        conn_step(c);
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
        conn_unref(c);
}

/* Hands the session to a worker for one step; the loop stops watching its socket meanwhile. */
static void
conn_agent_start(struct ssh_conn *c)
{
        if (c->working)
                return;
        uv_poll_stop(&c->poll);
        c->poll_events = 0; /* conn_update_poll starts it again */
        c->working = true;
        c->work.data = c;
        conn_ref(c);
        if (uv_queue_work(c->loop, &c->work, conn_agent_work_cb, conn_agent_after_cb) < 0) {
                c->working = false;
                conn_unref(c);
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
static void
conn_pump(struct ssh_conn *c)
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

        conn_ref(c);
        if (status < 0 && c->state != CS_UP) {
                conn_die(c, xasprintf("the connection to %s:%u failed during %s: %s", c->host,
                                      c->port, conn_stage[c->state], uv_strerror(status)));
        } else if (c->state < CS_UP) {
                while (c->state < CS_UP && conn_handshake_step(c))
                        conn_nonblock(c);
                conn_nonblock(c);
                conn_update_poll(c);
        } else if (c->state == CS_UP) {
                conn_pump(c);
                conn_step(c);
        }
        conn_unref(c);
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
        conn_ref(c); /* the poll handle's */
        c->poll_events = UV_READABLE | UV_WRITABLE;
        uv_poll_start(&c->poll, c->poll_events, conn_io_cb);
        c->state = CS_HANDSHAKE;
}

static void conn_tcp_next(struct ssh_conn *c);

static void
conn_attempt_close_cb(uv_handle_t *h)
{
        struct conn_attempt *a = h->data;

        conn_unref(a->c);
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
        conn_ref(c);
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
                conn_unref(c);
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
        conn_unref(c);
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
        conn_ref(c); /* the resolver's */
        if (uv_getaddrinfo(loop, &c->gai, conn_resolved_cb, c->host, port, &hints) < 0) {
                conn_unref(c);
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
        conn_unref(c);
}

/* Ends it as lost. */
void
ssh_conn_fail(struct ssh_conn *c, const char *why)
{
        conn_ref(c);
        conn_end(c, xstrdup(why));
        conn_unref(c);
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
