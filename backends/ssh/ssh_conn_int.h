/* ssh_conn_int.h — what ssh_conn.c (the connection) and ssh_chan.c (its channels) share. */
#ifndef SANDBOXD_SSH_CONN_INT_H
#define SANDBOXD_SSH_CONN_INT_H

#include "backends/ssh/ssh_conn.h"
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

/* ssh_conn.c */
void sshconn_ref(struct ssh_conn *c);
void sshconn_unref(struct ssh_conn *c);
void sshconn_kick(struct ssh_conn *c);
void sshconn_pump(struct ssh_conn *c);
void sshconn_step(struct ssh_conn *c);

/* ssh_chan.c */
void sshchan_unref(struct ssh_chan *ch);
void sshchan_end(struct ssh_chan *ch, const char *error, bool refused);
void sshchan_step(struct ssh_chan *ch);

#endif
