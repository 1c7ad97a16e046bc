/* daytona_log.c — demultiplexes a Daytona session command log and finds the wrapper's markers. */
#include "backends/daytona/daytona_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sets up a reader. */
void
daytona_log_init(struct daytona_log *l, const char *nonce,
                 void (*on_output)(void *ctx, int stream, const char *data, size_t len), void *ctx)
{
        memset(l, 0, sizeof(*l));
        snprintf(l->nonce, sizeof(l->nonce), "%s", nonce);
        l->s[0].hexhi = l->s[1].hexhi = -1;
        l->on_output = on_output;
        l->ctx = ctx;
}

/* Frees the state blob and the queued output. */
void
daytona_log_free(struct daytona_log *l)
{
        buf_free(&l->state);
        buf_free(&l->out[0]);
        buf_free(&l->out[1]);
}

/* Queues output of stream k: labels cut the log at every line, and one callback per line
 * would make an exec.output notification of each. */
static void
log_out(struct daytona_log *l, int k, const char *d, size_t n)
{
        if (n)
                buf_append(&l->out[k], d, n);
}

/* Hands the queued output over. */
static void
log_deliver(struct daytona_log *l)
{
        for (int k = 0; k < 2; k++) {
                if (!l->out[k].len)
                        continue;
                l->on_output(l->ctx, k, l->out[k].data, l->out[k].len);
                l->out[k].len = 0;
        }
}

/* The held bytes were output after all. */
static void
log_unhold(struct daytona_log *l, int k)
{
        struct daytona_log_stream *s = &l->s[k];

        log_out(l, k, s->hold, s->nhold);
        s->nhold = 0;
        s->marker = false;
}

static bool
log_is(const char *rest, size_t n, const char *word)
{
        return n == strlen(word) && memcmp(rest, word, n) == 0;
}

/* A stdout marker after the nonce: " x STATUS", " d", " l" or " f WHAT". false: not ours. */
static bool
log_stdout_marker(struct daytona_log *l, const char *rest, size_t n)
{
        struct daytona_log_stream *s = &l->s[0];
        char tmp[32], *end;
        long v;

        static const struct {
                const char *word;
                enum daytona_log_end end;
        } words[] = {{" d", DAYTONA_LOG_DUP}, {" l", DAYTONA_LOG_EARLIER}};

        for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
                if (log_is(rest, n, words[i].word)) {
                        l->end = words[i].end;
                        s->ended = true;
                        return true;
                }
        }
        if (n > 3 && n < sizeof(tmp) && !memcmp(rest, " f ", 3)) {
                snprintf(l->fail, sizeof(l->fail), "%.*s", (int) (n - 3), rest + 3);
                l->end = DAYTONA_LOG_NOSTART;
                s->ended = true;
                return true;
        }
        if (n <= 3 || n >= sizeof(tmp) || memcmp(rest, " x ", 3))
                return false;
        memcpy(tmp, rest + 3, n - 3);
        tmp[n - 3] = '\0';
        v = strtol(tmp, &end, 10);
        if (*end || end == tmp || v < 0 || v > 255)
                return false;
        l->status = (int) v;
        s->in_state = true;
        return true;
}

/* A complete marker line in hold (its newline consumed, not output). */
static void
log_marker(struct daytona_log *l, int k)
{
        struct daytona_log_stream *s = &l->s[k];
        size_t nlen = strlen(l->nonce);
        const char *rest = s->hold + nlen;
        size_t n = s->nhold - nlen;
        bool ours = k == 1 ? n == 0 : log_stdout_marker(l, rest, n);

        if (!ours) {
                log_unhold(l, k);
                log_out(l, k, "\n", 1);
                return;
        }
        if (k == 1)
                s->ended = true;
        s->nhold = 0;
        s->marker = false;
}

/* Collects a marker line up to its newline; returns the bytes taken. */
static size_t
log_marker_feed(struct daytona_log *l, int k, const char *d, size_t n)
{
        struct daytona_log_stream *s = &l->s[k];

        for (size_t i = 0; i < n; i++) {
                if (d[i] == '\n') {
                        log_marker(l, k);
                        return i + 1;
                }
                if (s->nhold == sizeof(s->hold)) { /* too long: not a marker */
                        log_unhold(l, k);
                        return i;
                }
                s->hold[s->nhold++] = d[i];
        }
        return n;
}

/* How many of the last bytes of d[0..n) are a beginning of the nonce (0..nlen-1). */
static size_t
log_tail_match(const char *nonce, size_t nlen, const char *d, size_t n)
{
        for (size_t m = MIN(nlen - 1, n); m > 0; m--)
                if (!memcmp(d + n - m, nonce, m))
                        return m;
        return 0;
}

/* Output bytes: delivered up to a nonce (then the marker is collected) or up to an end that
 * may begin one (held); returns the bytes taken. */
static size_t
log_out_feed(struct daytona_log *l, int k, const char *d, size_t n)
{
        struct daytona_log_stream *s = &l->s[k];
        size_t nlen = strlen(l->nonce), used = 0, m;
        const char *hit;

        if (s->nhold) { /* a held beginning of the nonce: does it go on? */
                while (used < n && s->nhold < nlen && d[used] == l->nonce[s->nhold])
                        s->hold[s->nhold++] = d[used++];
                if (s->nhold == nlen)
                        s->marker = true;
                else if (used < n)
                        log_unhold(l, k); /* the nonce has no repeated start: a fresh search */
                return used;
        }
        hit = memmem(d, n, l->nonce, nlen);
        if (hit) {
                log_out(l, k, d, (size_t) (hit - d));
                memcpy(s->hold, hit, nlen);
                s->nhold = nlen;
                s->marker = true;
                return (size_t) (hit - d) + nlen;
        }
        m = log_tail_match(l->nonce, nlen, d, n);
        log_out(l, k, d, n - m);
        memcpy(s->hold, d + n - m, m);
        s->nhold = m;
        return n;
}

static int
log_hex(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* One line of the state: od's hex bytes, or the "<nonce> z" that ends it. */
static void
log_state_line(struct daytona_log *l)
{
        struct daytona_log_stream *s = &l->s[0];
        size_t nlen = strlen(l->nonce);

        if (s->nhold >= nlen && !memcmp(s->hold, l->nonce, nlen)) {
                if (log_is(s->hold + nlen, s->nhold - nlen, " z")) {
                        s->in_state = false;
                        s->ended = true;
                        l->end = DAYTONA_LOG_EXITED;
                }
                s->nhold = 0;
                return;
        }
        for (size_t i = 0; i < s->nhold; i++) {
                int v = log_hex(s->hold[i]);
                if (v < 0)
                        continue;
                if (s->hexhi < 0) {
                        s->hexhi = v;
                        continue;
                }
                if (l->state.len < DAYTONA_LOG_STATE_MAX) {
                        char b = (char) (s->hexhi << 4 | v);
                        buf_append(&l->state, &b, 1);
                } else {
                        l->state_too_big = true;
                }
                s->hexhi = -1;
        }
        s->nhold = 0;
}

/* Lines of the state, collected in hold; returns the bytes taken. */
static size_t
log_state_feed(struct daytona_log *l, const char *d, size_t n)
{
        struct daytona_log_stream *s = &l->s[0];

        for (size_t i = 0; i < n; i++) {
                if (d[i] == '\n' || s->nhold == sizeof(s->hold))
                        log_state_line(l);
                if (d[i] == '\n') {
                        if (s->ended)
                                return i + 1;
                        continue;
                }
                s->hold[s->nhold++] = d[i];
        }
        return n;
}

/* Bytes of stream k, labels removed. */
static void
log_stream_feed(struct daytona_log *l, int k, const char *d, size_t n)
{
        struct daytona_log_stream *s = &l->s[k];

        while (n && !s->ended) {
                size_t used;
                if (s->in_state)
                        used = log_state_feed(l, d, n);
                else if (s->marker)
                        used = log_marker_feed(l, k, d, n);
                else
                        used = log_out_feed(l, k, d, n);
                d += used;
                n -= used;
        }
}

/* Feeds the next bytes of the log. */
void
daytona_log_feed(struct daytona_log *l, const char *data, size_t len)
{
        size_t i = 0;

        l->fed += len;
        while (i < len) {
                unsigned char c = (unsigned char) data[i];
                if (l->nlab) {
                        if (c == l->lab[0]) {
                                l->lab[l->nlab++] = c;
                                i++;
                                if (l->nlab == 3) {
                                        l->cur = c == 1 ? 0 : 1;
                                        l->nlab = 0;
                                }
                                continue;
                        }
                        /* Not a label: the held bytes were output. */
                        log_stream_feed(l, l->cur, (const char *) l->lab, l->nlab);
                        l->nlab = 0;
                        continue;
                }
                if (c == 1 || c == 2) {
                        l->lab[l->nlab++] = c;
                        i++;
                        continue;
                }
                size_t j = i;
                while (j < len && data[j] != 1 && data[j] != 2)
                        j++;
                log_stream_feed(l, l->cur, data + i, j - i);
                i = j;
        }
        log_deliver(l);
}

/* Whether both streams ended with their marker. */
bool
daytona_log_done(const struct daytona_log *l)
{
        return l->s[0].ended && l->s[1].ended;
}

/* Delivers what is held back when the log ends without markers. */
void
daytona_log_flush(struct daytona_log *l)
{
        if (l->nlab) {
                log_stream_feed(l, l->cur, (const char *) l->lab, l->nlab);
                l->nlab = 0;
        }
        for (int k = 0; k < 2; k++)
                if (!l->s[k].ended && !l->s[k].in_state)
                        log_unhold(l, k);
        log_deliver(l);
}
