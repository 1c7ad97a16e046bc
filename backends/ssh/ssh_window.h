/* ssh_window.h — what a server can make libssh hold for a channel the daemon is not reading.
 *
 * A channel's data callback that takes nothing (a paused channel, one not open yet) leaves the
 * packet in libssh's buffer of its stream, and libssh then grants no more window: an honest
 * server stops. libssh 0.10.6 does not stop a dishonest one: channel_rcv_data buffers a DATA
 * packet bigger than the window left ("Data packet too big for our window", then
 * local_window = 0 "buggy remote"), up to 256 MiB a stream (buffer.c BUFFER_SIZE_MAX). So the
 * daemon counts what libssh holds, as each callback sees it (libssh offers the whole buffer of
 * the stream every time), and a server that has made it hold more than any window libssh
 * grants plus one packet is cut off.
 *
 * SSH_WINDOW_MAX: libssh 0.10 tops the window up to 1,280,000 bytes (WINDOWBASE) when the
 * window left and the buffer of the packet's stream fall below half of that; libssh 0.11
 * grants 2 MiB counting both streams (WINDOW_DEFAULT). 4 MiB is past either for one stream.
 * Two streams (an exec's stdout and stderr) are not bounded by 0.10 at all: a packet of one
 * while the other's data waits widens the window again (the caller ends only that channel
 * then, ssh_conn.c). SSH_PACKET_MAX is libssh's MAX_PACKET_LEN: the most one packet can
 * carry, accepted before it is counted.
 * Pure; loop thread only.
 */
#ifndef SANDBOXD_SSH_WINDOW_H
#define SANDBOXD_SSH_WINDOW_H

#include <stddef.h>

#define SSH_WINDOW_MAX ((size_t) 4 << 20)
#define SSH_PACKET_MAX ((size_t) 256 << 10)

/* Bytes libssh holds for one channel: stdout (0) and stderr (1). Zeroed: nothing. */
struct ssh_window {
        size_t held[2];
};

/* The callback left len bytes of stream with libssh: all it holds of that stream now. 0 while
 * that is within the window, else how many bytes both streams hold past SSH_WINDOW_MAX. */
size_t ssh_window_hold(struct ssh_window *w, int stream, size_t len);
/* n bytes of stream left libssh (read out, or taken by the callback). */
void ssh_window_take(struct ssh_window *w, int stream, size_t n);
/* What libssh holds of both streams. */
size_t ssh_window_held(const struct ssh_window *w);

#endif
