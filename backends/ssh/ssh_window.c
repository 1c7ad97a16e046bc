/* ssh_window.c — the bytes a server made libssh hold for a channel (ssh_window.h). */
#include "backends/ssh/ssh_window.h"

/* Counts what libssh holds of stream; past the window plus a packet, how far past. */
size_t
ssh_window_hold(struct ssh_window *w, int stream, size_t len)
{
        size_t total;

        w->held[stream ? 1 : 0] = len;
        total = ssh_window_held(w);
        return total > SSH_WINDOW_MAX + SSH_PACKET_MAX ? total - SSH_WINDOW_MAX : 0;
}

/* Bytes read out of libssh. */
void
ssh_window_take(struct ssh_window *w, int stream, size_t n)
{
        size_t *h = &w->held[stream ? 1 : 0];

        *h = n < *h ? *h - n : 0;
}

/* Both streams. */
size_t
ssh_window_held(const struct ssh_window *w)
{
        return w->held[0] + w->held[1];
}
