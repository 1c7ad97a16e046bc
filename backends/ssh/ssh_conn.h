/* ssh_conn.h — one SSH connection driven from the libuv loop without ever blocking it, and the
 * channels on it.
 *
 * libssh is used in non-blocking mode (remote-transports.md §2): the name is resolved with
 * uv_getaddrinfo and the socket connected by libuv (libssh's own ssh_connect would call a
 * blocking getaddrinfo and read ~/.ssh/config), then handed to libssh with SSH_OPTIONS_FD; every
 * libssh call that answers SSH_AGAIN is repeated on the next event of one uv_poll on that
 * socket (writable only while libssh has output pending). The host key is judged by the owner
 * (check_hostkey) before any credential is offered; authentication is by public key only,
 * with a key the owner imported, then with the keys of an ssh-agent socket the owner connected
 * (never a password, never the daemon's own SSH_AUTH_SOCK, never a file libssh would open
 * itself). The agent part runs on a worker thread (ssh_agentauth.h) with the session's uv_poll
 * stopped, so the loop never touches the session meanwhile; the connect timeout ends a
 * stalled agent.
 *
 * Channels deliver their data from libssh's callbacks and consume all of it at once (the
 * window grows again by itself): flow control is the owner's (the agent protocol has its own
 * windows). A paused channel, or one not open yet, leaves data with libssh, which grants no
 * more window then; on resume (or the open) everything libssh holds is read out at once and
 * delivered while the owner takes it. A server that sends past the window anyway (libssh
 * 0.10 keeps such data) is cut off once libssh holds more than SSH_WINDOW_MAX and a packet
 * for a channel (ssh_window.h): the connection ends as lost, with "HOST:PORT sent N bytes
 * past the window…", and ssh_conn_cut_off says so; for an exec without a pty (two streams,
 * which libssh 0.10 does not hold back) only that channel ends, with "more than N bytes of
 * the command's output waited unread…". An exit-signal name is kept to 32 bytes;
 * the banner (libssh: 256 bytes a line, lines before it dropped) and refusals (libssh's
 * 1 KiB error text) bound themselves, and connect_timeout_ms bounds the handshake.
 *
 * Whatever changes libssh state — opens, requests, writes, EOF, close — happens outside
 * libssh's callbacks, in the step that follows each event, so owners may call every
 * function here from their callbacks; and no channel callback ever runs inside an owner's call
 * (a call asks for a step on the next loop turn), so the handle ssh_chan_open returns is
 * always stored before its on_open.
 *
 * Dead links: SO_KEEPALIVE and TCP_USER_TIMEOUT on the socket (unacknowledged data for that
 * long kills it in the kernel); a link that goes silent without unacknowledged data is the
 * owner's to notice (the agent session's PING).
 *
 * Loop thread only. The owner holds the reference ssh_conn_open gave and gives it back with
 * ssh_conn_close; channels are the connection's, handed out as borrowed handles valid until
 * their on_close or ssh_chan_close.
 */
#ifndef SANDBOXD_SSH_CONN_H
#define SANDBOXD_SSH_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "backends/ssh/ssh_dl.h"

struct ssh_conn;
struct ssh_chan;

struct ssh_conn_config {
        const char *host; /* name or address (copied) */
        unsigned port;
        const char *user;        /* copied */
        ssh_key key;             /* the private key, borrowed until on_ready; or NULL */
        const char *key_label;   /* "identity_file /path", for messages (copied) */
        int agent_fd;            /* an ssh-agent's socket (borrowed: the connection uses a dup), or
                                    -1 */
        const char *agent_label; /* "the ssh-agent at /path", for messages (copied) */
        const char *hostkeys;    /* host key algorithms to offer (SSH_OPTIONS_HOSTKEYS), or NULL */
        unsigned connect_timeout_ms; /* resolve, TCP, handshake and authentication */
        unsigned user_timeout_ms;    /* TCP_USER_TIMEOUT (0: the kernel's) */
        int fd; /* a connected stream to use instead of host:port (stolen), or -1 */
};

struct ssh_conn_cbs {
        /* The server's host key, before authentication: NULL accepts it, else why not (new;
         * the connection fails with it). */
        char *(*check_hostkey)(void *ctx, ssh_key key);
        /* Once: authenticated (error NULL), or why the connection could not be made. */
        void (*on_ready)(void *ctx, struct ssh_conn *c, const char *error);
        /* After on_ready said yes: the connection died (every channel has heard already). */
        void (*on_down)(void *ctx, struct ssh_conn *c, const char *why);
};

/* Starts connecting; callbacks come later (never from inside this call). */
struct ssh_conn *ssh_conn_open(uv_loop_t *loop, const struct ssh_conn_config *cfg,
                               const struct ssh_conn_cbs *cbs, void *ctx);
/* The owner lets go: the connection is torn down (its channels hear on_close) and no owner
 * callback follows. */
void ssh_conn_close(struct ssh_conn *c);
/* Ends the connection as lost with why (copied), as a dead socket would: channels hear it,
 * then the owner (on_down, or on_ready before it was up). For a link it rides on (a jump
 * host's) that died. */
void ssh_conn_fail(struct ssh_conn *c, const char *why);
/* Whether it ended because its server sent past a channel's window (a broken or hostile
 * server: not one to connect to again). */
bool ssh_conn_cut_off(const struct ssh_conn *c);
/* Whether it is authenticated and alive. */
bool ssh_conn_up(const struct ssh_conn *c);
/* "OpenSSH_9.2p1 …"-style server banner version, or 0 when not OpenSSH. */
int ssh_conn_openssh_version(const struct ssh_conn *c);

enum ssh_chan_kind {
        SSH_CHAN_EXEC, /* a session channel running command (sshd runs it with the login shell) */
        SSH_CHAN_UNIX, /* direct-streamlocal@openssh.com to a Unix socket on the server */
        SSH_CHAN_TCP,  /* direct-tcpip to host:port as seen from the server (jump hosts) */
};

struct ssh_chan_spec {
        enum ssh_chan_kind kind;
        const char *command; /* EXEC (copied) */
        bool pty;            /* EXEC: a pty of rows x cols, TERM xterm-256color */
        unsigned short rows, cols;
        const char *path; /* UNIX (copied) */
        const char *host; /* TCP (copied) */
        unsigned port;
};

/* How a channel ended. */
struct ssh_chan_end {
        bool opened;          /* it was open (on_open came); else error says why not */
        int exit_status;      /* EXEC: -1 when the server sent none */
        const char *signal;   /* EXEC: "TERM", "KILL", … when it died of a signal, else NULL */
        const char *error;    /* the channel or the connection failed; NULL: a clean close */
        bool refused;         /* the server refused to open it (administratively prohibited…) */
        unsigned open_reason; /* refused: the reason code (RFC 4254 5.1), 0 when unknown */
};

/* RFC 4254 5.1 reason codes of a refused channel. */
enum {
        SSH_OPEN_PROHIBITED = 1, /* OpenSSH: AllowTcpForwarding no, PermitOpen, restrict */
        SSH_OPEN_CONNECT_FAILED = 2,
        SSH_OPEN_UNKNOWN_TYPE = 3,
        SSH_OPEN_RESOURCE_SHORTAGE = 4,
};

struct ssh_chan_cbs {
        void (*on_open)(void *ctx); /* open and, for EXEC, the command started; may be NULL */
        /* Bytes of stream 0 (stdout, or the stream) or 1 (stderr), borrowed for the call. */
        void (*on_data)(void *ctx, int stream, const char *data, size_t len);
        void (*on_eof)(void *ctx); /* the server sent EOF; may be NULL */
        /* libssh took queued bytes; queued are left. May be NULL. */
        void (*on_drain)(void *ctx, size_t queued);
        /* The last call, exactly once unless ssh_chan_close came first. */
        void (*on_close)(void *ctx, const struct ssh_chan_end *end);
};

/* Opens a channel; NULL when the connection is not up. */
struct ssh_chan *ssh_chan_open(struct ssh_conn *c, const struct ssh_chan_spec *spec,
                               const struct ssh_chan_cbs *cbs, void *ctx);
/* Queues bytes (copied) for the channel. */
void ssh_chan_write(struct ssh_chan *ch, const void *data, size_t len);
/* Bytes queued and not yet taken by libssh. */
size_t ssh_chan_queued(const struct ssh_chan *ch);
/* Sends EOF once everything queued has gone. */
void ssh_chan_eof(struct ssh_chan *ch);
/* A pty channel's new size. */
void ssh_chan_resize(struct ssh_chan *ch, unsigned short rows, unsigned short cols);
/* Backpressure: stop delivering data (the server stops once the channel's window is full) and
 * start again. */
void ssh_chan_pause(struct ssh_chan *ch);
void ssh_chan_resume(struct ssh_chan *ch);
/* The owner lets go: the channel is closed, no callback follows. */
void ssh_chan_close(struct ssh_chan *ch);

/* 'word' quoted for a POSIX shell (new): the command string of an EXEC channel is run by the
 * remote user's login shell. */
char *ssh_shell_quote(const char *word);

#endif
