/* ssh_jump.h — a byte stream to a host reached through a jump host: a connection to the jump
 * host (an ssh_conn of its own, its host key judged by the owner like any host's), a
 * direct-tcpip channel on it to the target, and a socketpair between that channel and a
 * descriptor the owner hands to the target's ssh_conn as its socket (ssh_conn_config.fd).
 *
 * Driven from the loop without blocking it: our end of the socketpair is a non-blocking
 * uv_pipe; each direction stops at 1 MiB queued (the channel paused, or the pipe not read)
 * and starts again below 256 KiB, so neither a slow target nor a slow jump host makes memory
 * grow. Every failure names the hop: the jump host unreachable, its key refused, the key
 * refused there, forwarding refused (AllowTcpForwarding no), the target unreachable from it,
 * the jump leg lost.
 *
 * Closing: ssh_jump_close (the owner, after closing the target's connection, whose socket
 * then closes) ends the channel, the jump connection and our end of the socketpair at once,
 * without waiting for any of them; no callback follows. Loop thread only.
 */
#ifndef SANDBOXD_SSH_JUMP_H
#define SANDBOXD_SSH_JUMP_H

#include <stdbool.h>
#include <uv.h>

#include "backends/ssh/ssh_conn.h"

struct ssh_jump;

struct ssh_jump_config {
        struct ssh_conn_config conn; /* the jump host (fd -1) */
        const char *name;            /* the jump host's entry name, for messages (copied) */
        const char *host;            /* the target as the jump host resolves it (copied) */
        unsigned port;
        unsigned open_timeout_ms; /* for the jump host to connect to the target */
};

struct ssh_jump_cbs {
        /* The jump host's key, as ssh_conn_cbs.check_hostkey. */
        char *(*check_hostkey)(void *ctx, ssh_key key);
        /* Once: a connected stream to the target (fd, stolen: it becomes the target
         * connection's socket), or fd -1 and why not (borrowed). */
        void (*on_stream)(void *ctx, int fd, const char *error);
        /* After a stream: the way to the target is gone (why, borrowed). */
        void (*on_down)(void *ctx, const char *why);
};

/* Starts; callbacks come later, never from inside this call. The handle is the owner's
 * until ssh_jump_close. */
struct ssh_jump *ssh_jump_open(uv_loop_t *loop, const struct ssh_jump_config *cfg,
                               const struct ssh_jump_cbs *cbs, void *ctx);
/* Whether the jump host's connection was cut off for sending past a channel's window
 * (ssh_conn_cut_off): a broken or hostile jump host. NULL is fine. */
bool ssh_jump_cut_off(const struct ssh_jump *j);
/* The owner lets go: everything ends now, no callback follows. NULL is fine. */
void ssh_jump_close(struct ssh_jump *j);

#endif
