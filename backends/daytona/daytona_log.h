/* daytona_log.h — the reader of a Daytona session command log. Pure (no I/O, no loop).
 *
 * A session command's log (GET …/command/{id}/logs, raw with X-Daytona-Split-Output) labels
 * each line its labeller wrote with \x01\x01\x01 (stdout) or \x02\x02\x02 (stderr); a label may
 * also appear in the middle of a line when long lines of the two streams interleave, and data
 * after a label belongs to that stream until the next label (as in Daytona's own
 * DemuxLogBytes). The follow stream replays the log from its first byte, so the reader is fed
 * the bytes once, in order, by a caller that counts them (daytona_log_fed).
 *
 * The exec wrapper (daytona_cmd.h) ends each stream with a marker carrying a per-exec nonce,
 * written right after the command's output: on a line of its own when the output ended with a
 * newline, else at the end of the output's last line, to which the labeller then adds the
 * newline. So the reader finds the nonce anywhere in a line, delivers what precedes it and
 * drops that newline: the output comes out exactly as the command wrote it, save for NUL
 * bytes, which the labeller drops. Output is delivered as it comes, except a line's last bytes
 * that could be the start of a marker. Markers:
 *   stdout  "<nonce> x <status>\n", then the shell state as od hex lines, then "<nonce> z\n"
 *           "<nonce> d\n"          the exec was started before (a retried request)
 *           "<nonce> l\n"          a session it was posted to before names it (not started)
 *           "<nonce> f <what>\n"   it could not start: what = cwd | argv | stdin
 *   stderr  "<nonce>\n"
 * The exec has ended when both streams have their marker.
 */
#ifndef SANDBOXD_DAYTONA_LOG_H
#define SANDBOXD_DAYTONA_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/util.h"

#define DAYTONA_NONCE_LEN 32
/* Bounds on what the reader keeps: a marker line, the shell state. */
#define DAYTONA_LOG_MARKER_MAX 128
#define DAYTONA_LOG_STATE_MAX  (1u << 20)

enum daytona_log_end {
        DAYTONA_LOG_RUNNING = 0,
        DAYTONA_LOG_EXITED,  /* status and state are set */
        DAYTONA_LOG_DUP,     /* the wrapper found the exec started already */
        DAYTONA_LOG_NOSTART, /* it could not start: see fail */
        DAYTONA_LOG_EARLIER, /* a session it was posted to before names it: not started here */
};

struct daytona_log_stream {
        /* Held bytes: the end of the output that may begin a marker, or a marker line
         * without its newline yet. */
        char hold[DAYTONA_NONCE_LEN + DAYTONA_LOG_MARKER_MAX];
        size_t nhold;
        bool marker;   /* hold is a marker (the nonce matched), waiting for its newline */
        bool in_state; /* stdout: reading the state's hex lines */
        bool ended;
        int hexhi; /* state: the high nibble waiting for its low one, or -1 */
};

struct daytona_log {
        char nonce[DAYTONA_NONCE_LEN + 1];
        int cur;              /* stream the bytes now belong to: 0 stdout, 1 stderr */
        unsigned char lab[3]; /* bytes that may start a label */
        size_t nlab;
        struct daytona_log_stream s[2];
        enum daytona_log_end end;
        int status;       /* the wrapper's $? of the command (EXITED) */
        char fail[16];    /* NOSTART: "cwd", "argv", "stdin" */
        struct buf state; /* the shell state blob (EXITED, may be empty) */
        bool state_too_big;
        uint64_t fed;      /* bytes fed so far */
        struct buf out[2]; /* output of the current feed, delivered at its end */
        /* Output in order, borrowed for the call. stream: 0 stdout, 1 stderr. */
        void (*on_output)(void *ctx, int stream, const char *data, size_t len);
        void *ctx;
};

/* Sets up a reader for nonce (copied; at most DAYTONA_NONCE_LEN characters, the first of which
 * appears nowhere else in it, as in "~" and hex digits: a failed match never hides another). */
void daytona_log_init(struct daytona_log *l, const char *nonce,
                      void (*on_output)(void *ctx, int stream, const char *data, size_t len),
                      void *ctx);
/* Frees what the reader holds. */
void daytona_log_free(struct daytona_log *l);
/* Feeds the next bytes of the log; the output they hold is delivered before it returns, at
 * most one callback per stream. */
void daytona_log_feed(struct daytona_log *l, const char *data, size_t len);
/* Whether both streams have their end marker. */
bool daytona_log_done(const struct daytona_log *l);
/* The log ended without the markers (the wrapper was killed): delivers what is held back. */
void daytona_log_flush(struct daytona_log *l);

#endif
