/* ssh_link.c — a sandbox's way to its host: the connection (made again whenever the last one
 * died, through the entry's jump host if it has one, every host key checked every time by
 * ssh_trust.c), and the agent session's transport over a channel of it.
 *
 * The agent is reached with a direct-streamlocal channel to its socket; where the server
 * refuses that (AllowStreamLocalForwarding no, DisableForwarding, authorized_keys restrict),
 * with an exec channel running `sandboxd-agent --connect SOCK`, the agent's own stdio bridge.
 * Either way the session authenticates end to end with the sandbox's secret. Every reconnect
 * of the session makes a new SSH connection: a link that went silent (black-holed) is never
 * trusted again.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/ssh/ssh_int.h"
#include "backends/ssh/ssh_jump.h"

struct ssh_waiter {
        struct list link;
        void *ctx;
        ssh_conn_ready_cb cb;
};

/* check_hostkey of sb's host. */
static char *
link_check_hostkey(void *ctx, ssh_key key)
{
        struct backend_sandbox *sb = ctx;

        return ssh_trust_check(sb, &sb->h, key, &sb->fingerprint);
}

/* check_hostkey of its jump host. */
static char *
link_check_jump_hostkey(void *ctx, ssh_key key)
{
        struct backend_sandbox *sb = ctx;

        return ssh_trust_check(sb, sb->h.via, key, &sb->jump_fingerprint);
}

/* ---- the connection ---- */

/* A host (or jump host) that sent past a channel's window is not connected to again for sb:
 * the session's reconnects fail at once with this, until it gives up (its reconnect window),
 * instead of meeting the flood again on every attempt. */
static void
link_note_cut_off(struct backend_sandbox *sb, struct ssh_conn *c, const char *why)
{
        if (sb->cut_off || !(ssh_conn_cut_off(c) || ssh_jump_cut_off(sb->jump)))
                return;
        sb->cut_off = xasprintf("%s; the daemon does not connect %s again (destroy the sandbox "
                                "and create it anew once the server is fixed)",
                                why, sb->where ? sb->where : "to it");
}

static void
link_wake(struct backend_sandbox *sb, struct ssh_conn *c, const char *error)
{
        ssh_sandbox_ref(sb);
        while (!list_empty(&sb->waiters)) {
                struct ssh_waiter *w = LIST_ENTRY(sb->waiters.next, struct ssh_waiter, link);
                list_del(&w->link);
                w->cb(w->ctx, error ? NULL : c, error);
                free(w);
        }
        ssh_sandbox_unref(sb);
}

/* Closes sb's connection, then the jump host's under it: the first closes its socket, and
 * nothing waits for the other side of either. */
static void
link_close(struct backend_sandbox *sb)
{
        struct ssh_conn *c = sb->conn;
        struct ssh_jump *j = sb->jump;

        sb->conn = NULL;
        sb->jump = NULL;
        ssh_conn_close(c);
        ssh_jump_close(j);
}

static void
link_ready_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct backend_sandbox *sb = ctx;

        ssh_sandbox_ref(sb);
        if (error) {
                link_note_cut_off(sb, c, error);
                if (sb->conn == c)
                        link_close(sb);
                link_wake(sb, NULL, error);
        } else {
                sb->conn_fresh = true;
                if (sb->plain)
                        ssh_plain_reap_lost(sb);
                link_wake(sb, c, NULL);
        }
        ssh_sandbox_unref(sb);
        ssh_sandbox_unref(sb); /* the dial's */
}

static void
link_down_cb(void *ctx, struct ssh_conn *c, const char *why)
{
        struct backend_sandbox *sb = ctx;

        link_note_cut_off(sb, c, why);
        if (sb->conn == c)
                link_close(sb);
}

static const struct ssh_conn_cbs link_conn_cbs = {
        .check_hostkey = link_check_hostkey,
        .on_ready = link_ready_cb,
        .on_down = link_down_cb,
};

/* How to connect to h (sb's host or its jump host); *algs (new) is in cfg. */
static void
link_conn_config(const struct backend_sandbox *sb, const struct ssh_host *h, ssh_key key,
                 const char *key_label, struct ssh_conn_config *cfg, char **algs)
{
        *algs = ssh_trust_algorithms(sb, h);
        *cfg = (struct ssh_conn_config){
                .host = h->host,
                .port = h->port,
                .user = h->user,
                .key = key,
                .key_label = key_label,
                .agent_fd = h == &sb->h ? sb->agent_fd : -1, /* a client's host only */
                .agent_label = h == &sb->h ? sb->agent_label : NULL,
                .hostkeys = *algs,
                .connect_timeout_ms = sshb.connect_ms,
                .user_timeout_ms = sshb.link_timeout_ms,
                .fd = -1,
        };
}

/* sb's connection: over its own TCP connection (fd -1), or over fd, a jump host's stream. */
static void
link_dial_target(struct backend_sandbox *sb, int fd)
{
        struct ssh_conn_config cfg;
        char *algs;

        link_conn_config(sb, &sb->h, sb->key, sb->key_label, &cfg, &algs);
        cfg.fd = fd;
        ssh_sandbox_ref(sb); /* until on_ready */
        sb->conn_fresh = false;
        sb->conn = ssh_conn_open(sshb.loop, &cfg, &link_conn_cbs, sb);
        free(algs);
}

static void
link_jump_stream_cb(void *ctx, int fd, const char *error)
{
        struct backend_sandbox *sb = ctx;

        if (!error) {
                link_dial_target(sb, fd);
                return;
        }
        ssh_sandbox_ref(sb);
        link_note_cut_off(sb, NULL, error);
        link_close(sb);
        link_wake(sb, NULL, error);
        ssh_sandbox_unref(sb);
}

/* The jump leg is gone: the connection over it is lost with the reason (its on_down or
 * on_ready closes the jump too). */
static void
link_jump_down_cb(void *ctx, const char *why)
{
        struct backend_sandbox *sb = ctx;

        if (sb->conn)
                ssh_conn_fail(sb->conn, why);
        else
                link_close(sb);
}

static const struct ssh_jump_cbs link_jump_cbs = {
        .check_hostkey = link_check_jump_hostkey,
        .on_stream = link_jump_stream_cb,
        .on_down = link_jump_down_cb,
};

/* A new connection to sb's host, through its jump host if it has one. */
static void
link_dial(struct backend_sandbox *sb)
{
        struct ssh_jump_config jc = {.name = sb->h.jump,
                                     .host = sb->h.host,
                                     .port = sb->h.port,
                                     .open_timeout_ms = sshb.connect_ms};
        char *algs;

        if (!sb->h.via) {
                link_dial_target(sb, -1);
                return;
        }
        link_conn_config(sb, sb->h.via, sb->jump_key, sb->jump_key_label, &jc.conn, &algs);
        sb->conn_fresh = false;
        sb->jump = ssh_jump_open(sshb.loop, &jc, &link_jump_cbs, sb);
        free(algs);
}

/* An authenticated connection. */
void
ssh_link_conn(struct backend_sandbox *sb, void *ctx, ssh_conn_ready_cb cb)
{
        struct ssh_waiter *w;

        if (ssh_conn_up(sb->conn)) {
                cb(ctx, sb->conn, NULL);
                return;
        }
        if (sb->cut_off) {
                cb(ctx, NULL, sb->cut_off);
                return;
        }
        if ((!sb->key && sb->agent_fd < 0) || (sb->h.via && !sb->jump_key)) {
                cb(ctx, NULL, "no credentials for the host (the sandbox is not set up)");
                return;
        }
        w = xcalloc(1, sizeof(*w));
        w->ctx = ctx;
        w->cb = cb;
        list_add_tail(&sb->waiters, &w->link);
        if (!sb->conn && !sb->jump)
                link_dial(sb);
}

/* Drops the connection. */
void
ssh_link_drop(struct backend_sandbox *sb)
{
        sb->conn_fresh = false;
        link_close(sb); /* a dial in progress tells its waiters nothing: they hear it here */
        link_wake(sb, NULL, "the connection was dropped");
}

/* ---- the agent session's transport: a channel ---- */

struct link_tport {
        struct agent_transport base;
        struct backend_sandbox *sb;
        struct ssh_chan *ch;
        agent_connect_cb cb; /* until the channel is open */
        void *cb_ctx;
        const struct agent_transport_cbs *tcbs;
        void *tctx;
        bool started;
        bool bridge;        /* this attempt runs the agent's stdio bridge */
        struct buf early;   /* bytes before start */
        struct buf errtext; /* the bridge's stderr */
};

static void link_open_chan(struct link_tport *t, struct ssh_conn *c);

static void
link_t_free(struct link_tport *t)
{
        ssh_sandbox_unref(t->sb);
        buf_free(&t->early);
        buf_free(&t->errtext);
        free(t);
}

static void
link_t_open_cb(void *ctx)
{
        struct link_tport *t = ctx;
        agent_connect_cb cb = t->cb;

        t->cb = NULL;
        if (t->bridge)
                t->sb->bridge = true; /* from now on, straight to the bridge */
        cb(t->cb_ctx, &t->base, NULL);
}

static void
link_t_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct link_tport *t = ctx;

        if (stream)
                buf_append(&t->errtext, data, MIN(len, 1024 - MIN(t->errtext.len, 1024u)));
        else if (t->started)
                t->tcbs->on_data(t->tctx, data, len);
        else
                buf_append(&t->early, data, len);
}

static void
link_t_close_cb(void *ctx, const struct ssh_chan_end *end)
{
        struct link_tport *t = ctx;
        struct backend_sandbox *sb = t->sb;
        char *why;

        t->ch = NULL;
        /* OpenSSH refuses a direct-streamlocal it does not allow with the same "connect
         * failed" as a socket nobody listens on: either way the bridge is tried, and says
         * which it was (its stderr) if it fails too. */
        if (!end->opened && t->cb && !t->bridge && end->refused && ssh_conn_up(sb->conn)) {
                t->bridge = true;
                link_open_chan(t, sb->conn);
                return;
        }
        why = xasprintf("%s%s%.*s", end->error ? end->error : "the channel closed",
                        t->errtext.len ? ": " : "", (int) t->errtext.len,
                        t->errtext.data ? t->errtext.data : "");
        if (t->cb) {
                t->cb(t->cb_ctx, NULL, why);
                link_t_free(t);
        } else if (t->started) {
                t->tcbs->on_end(t->tctx, why);
        }
        free(why);
}

static const struct ssh_chan_cbs link_chan_cbs = {
        .on_open = link_t_open_cb,
        .on_data = link_t_data_cb,
        .on_close = link_t_close_cb,
};

static void
link_open_chan(struct link_tport *t, struct ssh_conn *c)
{
        struct backend_sandbox *sb = t->sb;
        char *qa = ssh_shell_quote(sb->agent_path), *qs = ssh_shell_quote(sb->sock);
        char *cmd = xasprintf("exec %s --connect %s", qa, qs);
        struct ssh_chan_spec spec = {.kind = t->bridge ? SSH_CHAN_EXEC : SSH_CHAN_UNIX,
                                     .command = cmd,
                                     .path = sb->sock};
        agent_connect_cb cb = t->cb;

        free(qa);
        free(qs);
        sb->conn_fresh = false;
        t->ch = ssh_chan_open(c, &spec, &link_chan_cbs, t);
        free(cmd);
        if (!t->ch) {
                cb(t->cb_ctx, NULL, "the connection to the host is not up");
                link_t_free(t);
        }
}

static void
link_t_conn_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct link_tport *t = ctx;

        if (error) {
                t->cb(t->cb_ctx, NULL, error);
                link_t_free(t);
                return;
        }
        link_open_chan(t, c);
}

static void
link_t_start(struct agent_transport *base, const struct agent_transport_cbs *cbs, void *ctx)
{
        struct link_tport *t = (struct link_tport *) base;

        t->tcbs = cbs;
        t->tctx = ctx;
        t->started = true;
        if (t->early.len) {
                struct buf b = t->early;
                t->early = (struct buf){0};
                cbs->on_data(ctx, b.data, b.len);
                buf_free(&b);
        }
}

static void
link_t_send(struct agent_transport *base, const void *data, size_t len)
{
        struct link_tport *t = (struct link_tport *) base;

        if (t->ch)
                ssh_chan_write(t->ch, data, len);
}

static size_t
link_t_queued(const struct agent_transport *base)
{
        const struct link_tport *t = (const struct link_tport *) base;

        return t->ch ? ssh_chan_queued(t->ch) : 0;
}

static void
link_t_nop(struct agent_transport *base)
{
        /* The session's flow control is its own (ACK windows); the channel reads on. */
}

static void
link_t_close(struct agent_transport *base)
{
        struct link_tport *t = (struct link_tport *) base;

        if (t->ch)
                ssh_chan_close(t->ch);
        link_t_free(t);
}

static const struct agent_transport_ops link_t_ops = {
        .kind = "ssh channel",
        .start = link_t_start,
        .send = link_t_send,
        .queued = link_t_queued,
        .pause = link_t_nop,
        .resume = link_t_nop,
        .close = link_t_close,
};

/* The session's connect: a channel on a connection made for it (a fresh one after a loss). */
static void
link_session_connect(void *ctx, agent_connect_cb cb, void *cb_ctx)
{
        struct backend_sandbox *sb = ctx;
        struct link_tport *t = xcalloc(1, sizeof(*t));

        t->base.ops = &link_t_ops;
        t->sb = sb;
        ssh_sandbox_ref(sb);
        t->cb = cb;
        t->cb_ctx = cb_ctx;
        t->bridge = sb->bridge;
        if (!sb->conn_fresh)
                ssh_link_drop(sb);
        ssh_link_conn(sb, t, link_t_conn_cb);
}

static void
link_session_link_cb(void *ctx, enum backend_link st, const char *reason)
{
        struct backend_sandbox *sb = ctx;

        if (sb->creating) {
                if (st == BACKEND_LINK_BACK || st == BACKEND_LINK_GONE)
                        ssh_create_agent_ready(sb->creating,
                                               st == BACKEND_LINK_BACK ? NULL : reason);
                return;
        }
        if (sb->up && sb->up->link)
                sb->up->link(sb->up_ctx, st, reason);
}

static const char *
link_session_check_ready(void *ctx, const struct agent_ready *r)
{
        return r->detached ? NULL
                           : "the sandboxd-agent at the sandbox's socket is not a detached one";
}

const struct agent_session_cbs ssh_link_session_cbs = {
        .connect = link_session_connect,
        .on_link = link_session_link_cb,
        .check_ready = link_session_check_ready,
};
