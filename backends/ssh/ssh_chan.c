/* ssh_chan.c — the channels of an ssh connection (ssh_conn.h): open, write, pause, drain, end. */
#include <stdlib.h>
#include <string.h>

#include "backends/ssh/ssh_conn_int.h"

void
sshchan_unref(struct ssh_chan *ch)
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
        sshconn_unref(ch->c);
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
                sshchan_unref(ch);
        }
}

/* The channel's end, told to its owner once. */
void
sshchan_end(struct ssh_chan *ch, const char *error, bool refused)
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
 * inside whichever libssh call handled the packet: sshconn_pump or sshconn_step end it), and its
 * owner can tell it was cut off (ssh_conn_cut_off). A command's two streams prove nothing:
 * libssh 0.10 widens the window when one stream's packet arrives while the other's data waits
 * (channel_rcv_data counts that stream's buffer only), so an honest server can get there;
 * only that channel ends (sshchan_step). */
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
                sshconn_kick(ch->c);
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
        sshconn_ref(c);
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
        sshconn_kick(c);
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
                sshconn_kick(ch->c);
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
                sshconn_kick(ch->c);
}

/* New pty size. */
void
ssh_chan_resize(struct ssh_chan *ch, unsigned short rows, unsigned short cols)
{
        ch->spec.rows = rows;
        ch->spec.cols = cols;
        ch->resize_pending = true;
        if (ch->state == CH_OPEN)
                sshconn_kick(ch->c);
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
        sshconn_kick(ch->c);
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
                sshconn_kick(ch->c);
        }
}

/* The owner lets go. */
void
ssh_chan_close(struct ssh_chan *ch)
{
        ch->owner_gone = true;
        sshconn_kick(ch->c);
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
                        sshchan_end(ch, why, false);
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
void
sshchan_step(struct ssh_chan *ch)
{
        static const char *const what[] = {"open the channel", "allocate a pty", "run the command"};
        char *why;
        int rc;

        if (ch->owner_gone) {
                chan_teardown(ch);
                return;
        }
        if (ch->overflow) {
                sshchan_end(ch, ch->overflow, false);
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
                        sshchan_end(ch, why, ch->denied);
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
                sshchan_end(ch, NULL, false);
}

/* ---- the connection ---- */
