/* chan.c — the agent's side of the daemon's connection: unstuffing and SYNC, framing, the
 * message table, authentication of detached agents, HELLO/READY, PING, and the output queue.
 *
 * On stdio (a container's attach stream, a pipe pair) there is one connection for the agent's
 * life: a new daemon session starts with SYNC + HELLO, an error makes the agent ignore input
 * up to the next SYNC. Detached (a Unix socket) a client must first prove it knows the secret
 * the daemon gave at start (proto.h, "Detached agents"); the connection that does replaces the
 * current one. Execs never depend on a connection: they go on and spool their output. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/agent/prog/agent.h"
#include "protocol/sha256.h"

struct agent_conn {
        int rfd, wfd; /* stdio: 0 and 1; socket: the same fd twice */
        struct agent_buf in, out;
        int authed;   /* may say HELLO */
        int hello;    /* a session is on */
        int desync;   /* after an error on stdio: input is ignored up to the next SYNC */
        int esc;      /* the last input byte was AGENT_ESC */
        int wpipe;    /* wfd is a pipe: output from the spool is vmspliced into it */
        int wblocked; /* the pipe was full: no output message until POLLOUT */
        unsigned char nonce[AGENT_AUTH_LEN];
        int64_t deadline; /* to authenticate by */
};

static struct agent_conn cur = {.rfd = -1, .wfd = -1};  /* carries the session */
static struct agent_conn cand = {.rfd = -1, .wfd = -1}; /* detached: authenticating */
static struct agent_conn *in_conn;                      /* the one being dispatched */
static int listen_fd = -1;
static uint64_t instance;
static int64_t last_session;

static void
conn_queue(struct agent_conn *c, uint32_t id, enum agent_msg type, const void *a, size_t alen,
           const void *b, size_t blen)
{
        unsigned char *p;

        agent_buf_reserve(&c->out, AGENT_HDR_LEN + alen + blen);
        p = c->out.data + c->out.len;
        agent_hdr(p, (uint32_t) (alen + blen), id, type);
        if (alen)
                memcpy(p + AGENT_HDR_LEN, a, alen);
        if (blen)
                memcpy(p + AGENT_HDR_LEN + alen, b, blen);
        c->out.len += AGENT_HDR_LEN + alen + blen;
}

/* Queues a message of the session. */
void
agent_send(uint32_t id, enum agent_msg type, const void *a, size_t alen, const void *b, size_t blen)
{
        if (agent_session_on())
                conn_queue(&cur, id, type, a, alen, b, blen);
}

/* Queues a message with a u32 payload. */
void
agent_send32(uint32_t id, enum agent_msg type, uint32_t v)
{
        unsigned char p[4];

        agent_put32(p, v);
        agent_send(id, type, p, 4, NULL, 0);
}

static int conn_flush(struct agent_conn *c);

static size_t pending_hdr; /* offset in cur.out of the header agent_send_begin wrote */

/* Room for a message built in place. */
unsigned char *
agent_send_begin(uint32_t id, enum agent_msg type, size_t len)
{
        unsigned char *p;

        if (!agent_session_on())
                return NULL;
        agent_buf_reserve(&cur.out, AGENT_HDR_LEN + len);
        pending_hdr = cur.out.len;
        p = cur.out.data + cur.out.len;
        agent_hdr(p, 0, id, type);
        return p + AGENT_HDR_LEN;
}

/* Queues the message agent_send_begin started, with len payload bytes. */
void
agent_send_commit(size_t len)
{
        agent_put32(cur.out.data + pending_hdr, (uint32_t) len);
        cur.out.len += AGENT_HDR_LEN + len;
}

/* Queues what writev left of the message (skip bytes of it went out already). */
static void
queue_rest(const struct iovec *v, int nv, size_t skip)
{
        for (int i = 0; i < nv; i++) {
                size_t k = v[i].iov_len;
                if (skip >= k) {
                        skip -= k;
                        continue;
                }
                agent_buf_reserve(&cur.out, k - skip);
                memcpy(cur.out.data + cur.out.len, (char *) v[i].iov_base + skip, k - skip);
                cur.out.len += k - skip;
                skip = 0;
        }
}

/* Header (and pre) with write, then the payload's pages with vmsplice: the pipe takes
 * references to the spool's memory instead of a copy. A header of at most 28 bytes goes in
 * whole or not at all (writes of up to PIPE_BUF bytes are atomic); the payload may go in
 * part. Returns the bytes of v that went, or -1 when the pipe is full (nothing went). */
static ssize_t
send_spliced(const struct iovec *v, int nv)
{
        ssize_t w, k;

        do
                w = write(cur.wfd, v[0].iov_base, v[0].iov_len);
        while (w < 0 && errno == EINTR);
        if (w < 0 && errno == EAGAIN)
                return -1;
        if (w <= 0)
                return 0; /* a broken stream: queued, the next flush reports it */
        do
                k = vmsplice(cur.wfd, v + 1, (size_t) (nv - 1), SPLICE_F_NONBLOCK);
        while (k < 0 && errno == EINTR);
        if (k < 0 && errno != EAGAIN)
                cur.wpipe = 0; /* a pipe that takes no pages: copy from now on */
        return w + (k > 0 ? k : 0);
}

/* The same with one writev: a socket, or a pipe that refused vmsplice. */
static ssize_t
send_copied(const struct iovec *v, int nv)
{
        ssize_t w;

        do
                w = writev(cur.wfd, v, nv);
        while (w < 0 && errno == EINTR);
        return w > 0 ? w : 0; /* EAGAIN, or a broken stream the next flush reports */
}

/* A message whose payload is in the spool's memory: straight to the fd when nothing is
 * queued, the rest queued. On a pipe nothing is copied unless the pipe fills in the middle
 * of the payload: a full pipe before the message answers 1 (try again after POLLOUT). */
int
agent_send_iov(uint32_t id, enum agent_msg type, const void *pre, size_t prelen,
               const struct iovec *iov, int niov, size_t n)
{
        unsigned char h[AGENT_HDR_LEN + 16];
        struct iovec v[8];
        ssize_t w = 0;
        int nv = 0;

        if (!agent_session_on() || prelen > 16 || niov > 6)
                return -1;
        if (cur.wpipe && agent_buf_used(&cur.out))
                conn_flush(&cur); /* a broken stream is the loop's flush to report */
        if (cur.wpipe && (cur.wblocked || agent_buf_used(&cur.out))) {
                /* Blocked until POLLOUT, also when the loop's flush empties the queue:
                 * nothing else would wake the agent to send the rest. */
                cur.wblocked = 1;
                return 1;
        }
        agent_hdr(h, (uint32_t) (prelen + n), id, type);
        memcpy(h + AGENT_HDR_LEN, pre, prelen);
        v[nv++] = (struct iovec){h, AGENT_HDR_LEN + prelen};
        for (int i = 0; i < niov; i++)
                v[nv++] = iov[i];
        if (agent_buf_used(&cur.out) == 0)
                w = cur.wpipe ? send_spliced(v, nv) : send_copied(v, nv);
        if (w < 0) {
                cur.wblocked = 1;
                return 1;
        }
        queue_rest(v, nv, (size_t) w);
        return 0;
}

/* Bytes queued for the daemon. */
size_t
agent_outq(void)
{
        return agent_session_on() ? agent_buf_used(&cur.out) : 0;
}

/* Whether a session is on. */
int
agent_session_on(void)
{
        return cur.rfd >= 0 && cur.hello;
}

/* When a session was last on (detached linger). */
int64_t
agent_chan_last_session(void)
{
        return agent_session_on() ? agent_now_ms() : last_session;
}

static void
conn_close(struct agent_conn *c)
{
        if (c == &cur && cur.hello) {
                agent_exec_unbind_all();
                last_session = agent_now_ms();
        }
        agent_close(&c->rfd);
        c->wfd = -1;
        agent_buf_free(&c->in);
        agent_buf_free(&c->out);
        *c = (struct agent_conn){.rfd = -1, .wfd = -1};
}

/* Writes queued output; -1 when the daemon's side is gone. */
static int
conn_flush(struct agent_conn *c)
{
        while (c->wfd >= 0 && agent_buf_used(&c->out) > 0) {
                ssize_t n = write(c->wfd, c->out.data + c->out.off, agent_buf_used(&c->out));
                if (n > 0) {
                        c->out.off += (size_t) n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                return -1;
        }
        return 0;
}

/* Ends the session: ERROR, then ignore input to the next SYNC (stdio) or close (socket). */
void
agent_chan_error(const char *why)
{
        struct agent_conn *c = in_conn ? in_conn : &cur;

        if (c->rfd < 0)
                return;
        conn_queue(c, 0, AGENT_ERROR, why, strlen(why) + 1, NULL, 0);
        if (listen_fd >= 0) {
                conn_flush(c);
                conn_close(c);
                return;
        }
        if (c->hello)
                agent_exec_unbind_all();
        c->hello = 0;
        c->desync = 1;
        c->in.off = c->in.len = 0;
}

/* ---- messages about the connection itself ---- */

static void
chan_mac(const char *label, const unsigned char *an, const unsigned char *cn,
         unsigned char out[SHA256_LEN])
{
        const void *parts[] = {label, an, cn};
        const size_t lens[] = {strlen(label), AGENT_AUTH_LEN, AGENT_AUTH_LEN};

        hmac_sha256(agent_opts.secret, agent_opts.secret_len, parts, lens, 3, out);
}

static const char *
chan_on_auth(uint32_t id, const unsigned char *p, uint32_t len)
{
        unsigned char want[SHA256_LEN], mine[SHA256_LEN];
        struct agent_conn *c = in_conn;

        chan_mac(AGENT_AUTH_CLIENT, c->nonce, p, want);
        if (!sha256_equal(want, p + AGENT_AUTH_LEN, SHA256_LEN))
                return "authentication failed: the client does not know this agent's secret";
        chan_mac(AGENT_AUTH_AGENT, c->nonce, p, mine);
        conn_queue(c, 0, AGENT_AUTH_OK, mine, sizeof(mine), NULL, 0);
        c->authed = 1;
        c->deadline = 0;
        if (c == &cand) { /* the newest authenticated client wins */
                conn_flush(&cur);
                conn_close(&cur);
                cur = cand;
                cand = (struct agent_conn){.rfd = -1, .wfd = -1};
                in_conn = &cur;
        }
        return NULL;
}

static const char *
chan_on_hello(uint32_t id, const unsigned char *p, uint32_t len)
{
        struct agent_conn *c = in_conn;
        unsigned char r[36];
        static char msg[128];

        if (agent_get32(p) != AGENT_PROTO_VERSION) {
                snprintf(msg, sizeof(msg),
                         "HELLO: protocol version %u is not supported; this sandboxd-agent "
                         "speaks %u",
                         agent_get32(p), AGENT_PROTO_VERSION);
                return msg;
        }
        if (c->hello)
                agent_exec_unbind_all();
        /* Whatever the last session left unsent goes (the daemon skips to our READY). */
        c->out.off = c->out.len = 0;
        c->hello = 1;
        agent_put32(r, AGENT_PROTO_VERSION);
        agent_put32(r + 4, (uint32_t) getpid());
        memcpy(r + 8, p + 4, AGENT_NONCE_LEN);
        agent_put64(r + 24, instance);
        agent_put32(r + 32, listen_fd >= 0 ? AGENT_READY_DETACHED : 0);
        conn_queue(c, 0, AGENT_READY, r, sizeof(r), NULL, 0);
        return NULL;
}

static const char *
chan_on_ping(uint32_t id, const unsigned char *p, uint32_t len)
{
        conn_queue(in_conn, 0, AGENT_PONG, p, len, NULL, 0);
        return NULL;
}

enum { NEED_NONE, NEED_AUTH, NEED_SESSION };

struct handler {
        const char *(*fn)(uint32_t id, const unsigned char *p, uint32_t len);
        uint32_t min_len, max_len;
        int need;
};

static const struct handler handlers[] = {
        [AGENT_AUTH] = {chan_on_auth, 2 * AGENT_AUTH_LEN, 2 * AGENT_AUTH_LEN, NEED_NONE},
        [AGENT_HELLO] = {chan_on_hello, 8 + AGENT_NONCE_LEN, 8 + AGENT_NONCE_LEN, NEED_AUTH},
        [AGENT_PING] = {chan_on_ping, 8, 8, NEED_AUTH},
        [AGENT_START] = {agent_on_start, 16, AGENT_MAX_PAYLOAD, NEED_SESSION},
        [AGENT_STDIN] = {agent_on_stdin, 8, 8 + AGENT_STDIN_CHUNK, NEED_SESSION},
        [AGENT_EOF] = {agent_on_eof, 8, 8, NEED_SESSION},
        [AGENT_KILL] = {agent_on_kill, 16, 16, NEED_SESSION},
        [AGENT_ACK] = {agent_on_ack, 16, 16, NEED_SESSION},
        [AGENT_RESIZE] = {agent_on_resize, 4, 4, NEED_SESSION},
        [AGENT_RESUME] = {agent_on_resume, 18, 16 + AGENT_NAME_MAX + 1, NEED_SESSION},
        [AGENT_RESUME_END] = {agent_on_resume_end, 0, 0, NEED_SESSION},
        [AGENT_FORGET] = {agent_on_forget, 0, 0, NEED_SESSION},
};

static const char *
chan_dispatch(struct agent_conn *c, uint32_t id, unsigned type, const unsigned char *p,
              uint32_t len)
{
        static char msg[96];
        const struct handler *h;

        if (type >= sizeof(handlers) / sizeof(handlers[0]) || !handlers[type].fn) {
                snprintf(msg, sizeof(msg), "unknown message type %u", type);
                return msg;
        }
        h = &handlers[type];
        if (len < h->min_len || len > h->max_len) {
                snprintf(msg, sizeof(msg), "bad length %u for message type %u", len, type);
                return msg;
        }
        if ((h->need == NEED_NONE && c->authed) || (h->need >= NEED_AUTH && !c->authed))
                return "message not allowed before (or after) authentication";
        if (h->need == NEED_SESSION && !c->hello)
                return "message before HELLO";
        return h->fn(id, p, len);
}

/* Handles the complete messages in c->in; stops when c goes away. */
static void
conn_parse(struct agent_conn *c)
{
        while (c->rfd >= 0 && !c->desync && agent_buf_used(&c->in) >= AGENT_HDR_LEN) {
                const unsigned char *h = c->in.data + c->in.off;
                uint32_t len = agent_get32(h);
                const char *err;
                if (len > AGENT_MAX_PAYLOAD) {
                        agent_chan_error("payload larger than AGENT_MAX_PAYLOAD");
                        return;
                }
                if (agent_buf_used(&c->in) < AGENT_HDR_LEN + len)
                        return;
                c->in.off += AGENT_HDR_LEN + len;
                err = chan_dispatch(c, agent_get32(h + 4), h[8], h + AGENT_HDR_LEN, len);
                c = in_conn; /* AUTH may have moved it */
                if (err)
                        agent_chan_error(err);
        }
}

static void
conn_append(struct agent_conn *c, const unsigned char *p, size_t n)
{
        if (c->desync || !n)
                return;
        agent_buf_reserve(&c->in, n);
        memcpy(c->in.data + c->in.len, p, n);
        c->in.len += n;
}

/* Unstuffs input: FE 01 is a literal FE, FE 00 (SYNC) drops any partial message. */
static void
conn_input(struct agent_conn *c, const unsigned char *p, size_t n)
{
        static const unsigned char esc = AGENT_ESC;

        while (n && c->rfd >= 0) {
                if (c->esc) {
                        c->esc = 0;
                        if (*p == AGENT_ESC_SYNC) {
                                c->in.off = c->in.len = 0;
                                c->desync = 0;
                        } else if (*p == AGENT_ESC_LIT) {
                                conn_append(c, &esc, 1);
                        } else {
                                agent_chan_error("bad escape in the input");
                        }
                        p++;
                        n--;
                } else {
                        const unsigned char *e = memchr(p, AGENT_ESC, n);
                        size_t k = e ? (size_t) (e - p) : n;
                        conn_append(c, p, k);
                        p += k;
                        n -= k;
                        if (e) {
                                c->esc = 1;
                                p++;
                                n--;
                        }
                }
                conn_parse(c);
                c = in_conn;
        }
}

/* Reads one chunk from c; EOF ends it (on stdio: the agent). */
static void
conn_read(struct agent_conn *c)
{
        static unsigned char chunk[64 << 10];
        ssize_t n = read(c->rfd, chunk, sizeof(chunk));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                if (listen_fd < 0) { /* stdio: the daemon's end of our stdin is gone */
                        agent_exec_kill_all();
                        _exit(0);
                }
                conn_close(c);
                return;
        }
        in_conn = c;
        conn_input(c, chunk, (size_t) n);
        in_conn = NULL;
}

/* ---- set-up, accept, poll ---- */

static void
chan_instance(void)
{
        agent_random(&instance, sizeof(instance));
        if (!instance)
                instance = 1;
}

/* One connection on fds 0 and 1, authenticated by construction (only the daemon holds them). */
void
agent_chan_init_stdio(void)
{
        struct stat st;

        chan_instance();
        cur = (struct agent_conn){.rfd = 0, .wfd = 1, .authed = 1};
        agent_set_nonblock(0);
        agent_set_nonblock(1);
        fcntl(1, F_SETPIPE_SZ, 1 << 20); /* when stdout is a pipe: fewer wake-ups; else no-op */
        cur.wpipe = fstat(1, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* Detached: connections come from lfd and must authenticate. */
void
agent_chan_init_listen(int lfd)
{
        chan_instance();
        listen_fd = lfd;
        last_session = agent_now_ms();
}

static void
chan_accept(void)
{
        struct ucred cr;
        socklen_t crl = sizeof(cr);
        unsigned char ch[4 + AGENT_AUTH_LEN];
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0)
                return;
        /* The socket is 0600 in a 0700 directory; a peer of another uid is refused anyway. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || cr.uid != geteuid()) {
                close(fd);
                return;
        }
        conn_close(&cand);
        cand = (struct agent_conn){.rfd = fd, .wfd = fd};
        cand.deadline = agent_now_ms() + AGENT_AUTH_MS;
        agent_random(cand.nonce, sizeof(cand.nonce));
        agent_put32(ch, AGENT_PROTO_VERSION);
        memcpy(ch + 4, cand.nonce, AGENT_AUTH_LEN);
        conn_queue(&cand, 0, AGENT_CHALLENGE, ch, sizeof(ch), NULL, 0);
}

static void
poll_conn(struct agent_conn *c, struct pollfd *pfd, size_t *n)
{
        if (c->rfd < 0)
                return;
        pfd[(*n)++] = (struct pollfd){.fd = c->rfd, .events = POLLIN};
        if (agent_buf_used(&c->out) || c->wblocked)
                pfd[(*n)++] = (struct pollfd){.fd = c->wfd, .events = POLLOUT};
}

/* Adds the listening socket and connections to the poll set (at most 5 entries). */
void
agent_chan_poll(struct pollfd *pfd, size_t *n)
{
        if (listen_fd >= 0)
                pfd[(*n)++] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
        poll_conn(&cur, pfd, n);
        poll_conn(&cand, pfd, n);
}

/* Handles events on the entries agent_chan_poll added. */
void
agent_chan_handle(const struct pollfd *pfd, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (pfd[i].events == POLLOUT && pfd[i].revents && pfd[i].fd == cur.wfd)
                        cur.wblocked = 0; /* room again (or an error the next write sees) */
                if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) || pfd[i].events != POLLIN)
                        continue;
                if (pfd[i].fd == listen_fd)
                        chan_accept();
                else if (pfd[i].fd == cur.rfd)
                        conn_read(&cur);
                else if (pfd[i].fd == cand.rfd)
                        conn_read(&cand);
        }
}

/* Writes what is queued; a broken stdio means the daemon's side is gone. */
int
agent_chan_flush(void)
{
        struct agent_conn *all[] = {&cur, &cand};

        for (size_t i = 0; i < 2; i++) {
                if (all[i]->rfd < 0 || conn_flush(all[i]) == 0)
                        continue;
                if (listen_fd < 0)
                        return -1;
                conn_close(all[i]);
        }
        return 0;
}

/* Drops a connection that did not authenticate in time. */
int
agent_chan_tick(int timeout, int64_t now)
{
        int64_t left;

        if (cand.rfd < 0 || !cand.deadline)
                return timeout;
        if (now >= cand.deadline) {
                conn_close(&cand);
                return timeout;
        }
        left = cand.deadline - now;
        return timeout < 0 || left < timeout ? (int) left : timeout;
}
