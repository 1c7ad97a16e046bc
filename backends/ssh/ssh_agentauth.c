/* ssh_agentauth.c — asking an ssh-agent how many keys it holds (ssh_agentauth.h), in the
 * agent protocol (draft-miller-ssh-agent: a 4-byte length, then the message). */
#include "backends/ssh/ssh_agentauth.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define AGENTC_REQUEST_IDENTITIES 11
#define AGENT_IDENTITIES_ANSWER   12
#define AGENT_ANSWER_MAX          (256u << 10) /* libssh's own limit */

void
ssh_agentauth_timeouts(int fd, unsigned timeout_ms)
{
        struct timeval tv = {.tv_sec = timeout_ms / 1000,
                             .tv_usec = (suseconds_t) (timeout_ms % 1000) * 1000};

        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Exactly len bytes in (or out); 0 or -errno. */
static int
agentauth_io(int fd, void *b, size_t len, int reading)
{
        size_t pos = 0;
        ssize_t n;

        while (pos < len) {
                n = reading ? recv(fd, (char *) b + pos, len - pos, 0)
                            : send(fd, (char *) b + pos, len - pos, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                if (n == 0)
                        return -EPIPE;
                pos += (size_t) n;
        }
        return 0;
}

static uint32_t
agentauth_be32(const unsigned char *p)
{
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/* The answer's length, then its first 5 bytes (type, count); the rest is read and dropped. */
int
ssh_agentauth_count(int fd)
{
        static const unsigned char req[] = {0, 0, 0, 1, AGENTC_REQUEST_IDENTITIES};
        unsigned char head[4], body[5], drop[4096];
        uint32_t len, left;
        int r = agentauth_io(fd, (void *) req, sizeof(req), 0);

        if (r == 0)
                r = agentauth_io(fd, head, sizeof(head), 1);
        if (r < 0)
                return r;
        len = agentauth_be32(head);
        if (len < sizeof(body) || len > AGENT_ANSWER_MAX)
                return -EPROTO;
        r = agentauth_io(fd, body, sizeof(body), 1);
        for (left = len - (uint32_t) sizeof(body); r == 0 && left > 0;) {
                size_t n = left < sizeof(drop) ? left : sizeof(drop);
                r = agentauth_io(fd, drop, n, 1);
                left -= (uint32_t) n;
        }
        explicit_bzero(drop, sizeof(drop));
        if (r < 0)
                return r;
        if (body[0] != AGENT_IDENTITIES_ANSWER || agentauth_be32(body + 1) > len / 4)
                return -EPROTO;
        return (int) agentauth_be32(body + 1);
}
