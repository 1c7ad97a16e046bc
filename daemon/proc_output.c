/* proc_output.c — an exec's output: capture (head and tail), streaming as exec.output with
 * back-pressure, and the results built from it (exit fields, text from spool). */
#include <stdlib.h>
#include <string.h>

#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/shellstate.h"
#include "daemon/spool.h"
#include "protocol/codec.h"
#include "protocol/util.h"

static void
pstream_capture(struct pstream *s, const char *data, size_t len)
{
        size_t h = 0;

        if (s->head.len < s->head_cap) {
                h = MIN(len, s->head_cap - s->head.len);
                buf_append(&s->head, data, h);
        }
        data += h;
        len -= h;
        if (!len || !s->tail_cap)
                return;
        if (len > s->tail_cap) {
                s->tail_total += len - s->tail_cap;
                data += len - s->tail_cap;
                len = s->tail_cap;
        }
        while (len) {
                size_t pos = (size_t) (s->tail_total % s->tail_cap);
                size_t n = MIN(len, s->tail_cap - pos);
                memcpy(s->tail + pos, data, n);
                s->tail_total += n;
                data += n;
                len -= n;
        }
}

/* The captured tail in order (new buffer content appended to out). */
static void
pstream_tail(const struct pstream *s, struct buf *out)
{
        size_t n = (size_t) MIN(s->tail_total, (uint64_t) s->tail_cap);
        size_t start = s->tail_total > s->tail_cap ? (size_t) (s->tail_total % s->tail_cap) : 0;

        if (!n)
                return;
        if (!start) {
                buf_append(out, s->tail, n);
                return;
        }
        buf_append(out, s->tail + start, s->tail_cap - start);
        buf_append(out, s->tail, start);
}

/* Encodes raw bytes for the wire in the process's encoding (new string). */
json_t *
proc_encode(bool base64, const char *data, size_t len)
{
        struct buf b = {0};
        json_t *s;

        if (base64)
                base64_encode(&b, data, len);
        else
                utf8_sanitize(&b, data, len);
        s = json_stringn(b.data ? b.data : "", b.len);
        buf_free(&b);
        return s;
}

void
proc_update_pause(struct proc *p)
{
        struct list *pos, *tmp;
        bool congested = false;

        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        {
                struct proc_sub *s = LIST_ENTRY(pos, struct proc_sub, node);
                if (s->foreground && conn_congested(s->conn))
                        congested = true;
        }
        if (!p->bp || p->state != PROC_RUNNING || congested == p->paused)
                return;
        p->paused = congested;
        if (congested)
                p->bp->ops->pause(p->bp);
        else
                p->bp->ops->resume(p->bp);
}

/* Builds one exec.output line by hand: this is the hot path of streaming, and a single
 * escaping pass beats building and dumping a jansson object. */
void
proc_output_line(struct proc *p, int stream, const char *data, size_t len, uint64_t offset,
                 struct buf *line)
{
        buf_appendf(
                line,
                "{\"jsonrpc\":\"2.0\",\"method\":\"exec.output\",\"params\":{\"exec_id\":\"%s\","
                "\"stream\":\"%s\",\"offset\":%llu,\"data\":\"",
                p->id, stream ? "stderr" : "stdout", (unsigned long long) offset);
        if (p->base64)
                base64_encode(line, data, len);
        else
                json_escape_text(line, data, len);
        buf_append(line, "\"}}\n", 4);
}

static void
proc_emit(struct proc *p, int stream, const char *data, size_t len, uint64_t offset)
{
        struct list *pos, *tmp;
        struct buf line = {0};

        if (!len || list_empty(&p->subs))
                return;
        proc_output_line(p, stream, data, len, offset, &line);
        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        {
                struct proc_sub *s = LIST_ENTRY(pos, struct proc_sub, node);
                if (!s->foreground && conn_congested(s->conn)) {
                        s->lagging = true; /* the spool keeps it; process.read catches up */
                        continue;
                }
                conn_send_raw(s->conn, line.data, line.len);
        }
        buf_free(&line);
        proc_update_pause(p);
}

/* Streams a chunk that starts at stream offset off, holding back an incomplete UTF-8 sequence
 * in text mode (what is held back goes out with the next chunk, at its own offset). */
void
proc_stream_chunk(struct proc *p, int stream, const char *data, size_t len, uint64_t off,
                  bool flush)
{
        struct pstream *s = &p->out[stream];
        uint64_t offset = off - s->ncarry;
        char small[PROC_CHUNK + 4];
        const char *src = data;
        size_t n = len, k;

        if (p->base64) {
                proc_emit(p, stream, data, len, off);
                return;
        }
        if (s->ncarry) {
                if (len > PROC_CHUNK) {
                        /* Emit the carry with the first bytes, then the rest separately. */
                        proc_stream_chunk(p, stream, data, PROC_CHUNK, off, false);
                        proc_stream_chunk(p, stream, data + PROC_CHUNK, len - PROC_CHUNK,
                                          off + PROC_CHUNK, flush);
                        return;
                }
                memcpy(small, s->carry, s->ncarry);
                memcpy(small + s->ncarry, data, len);
                src = small;
                n = s->ncarry + len;
                s->ncarry = 0;
        }
        k = flush ? n : utf8_complete_prefix(src, n);
        memcpy(s->carry, src + k, n - k);
        s->ncarry = n - k;
        proc_emit(p, stream, src, k, offset);
}

void
proc_output_cb(void *ctx, enum backend_stream stream, const char *data, size_t len)
{
        struct proc *p = ctx;
        struct pstream *s = &p->out[stream];

        if (!len)
                return;
        proc_cwd_note(p);
        s->total += len;
        spool_write(s->spool, data, len);
        if (!p->background)
                pstream_capture(s, data, len);
        if (p->stream)
                proc_stream_chunk(p, stream, data, len, s->total - len, false);
        proc_wake_readers(p);
}

/* Once it runs (output or exit), says where an exec runs whose inherited cwd was removed. */
void
proc_cwd_note(struct proc *p)
{
        char *note;

        if (!p->cwd_lost || p->cwd_noted)
                return;
        p->cwd_noted = true;
        note = shellstate_cwd_note(p->sb, p->cwd_lost);
        proc_output_cb(p, BACKEND_STDERR, note, strlen(note));
        /* Not the exec's own bytes: a restarted daemon resumes the backend's stream without
         * them, so the record says how many there are. */
        p->out[BACKEND_STDERR].own += strlen(note);
        proc_persist(p);
        free(note);
}

/* ---- results ---- */

json_t *
proc_policy_json(struct proc *p)
{
        if (p->policy_saved)
                return json_deep_copy(p->policy_saved);
        return json_pack("{s:s,s:s,s:o}", "verdict", policy_verdict_name(p->pr.verdict),
                         "resolution", p->resolution ? p->resolution : "policy", "findings",
                         policy_findings_json(&p->pr));
}

/* The result text of one stream: all of it (head, then tail) when total fits in max_output,
 * else its first bytes (head), a marker and its last bytes (tail). */
static json_t *
proc_format_text(struct proc *p, const struct buf *head, const struct buf *tail, uint64_t total,
                 bool *truncated)
{
        struct buf raw = {0};
        json_t *v;
        uint64_t omitted = total > p->max_output ? total - p->max_output : 0;

        if (!omitted || p->base64) {
                buf_append(&raw, head->data, head->len);
                buf_append(&raw, tail->data, tail->len);
                v = proc_encode(p->base64, raw.data ? raw.data : "", raw.len);
                *truncated = *truncated || omitted;
                buf_free(&raw);
                return v;
        }
        *truncated = true;
        size_t h = utf8_floor(head->data, head->len);
        size_t t = utf8_ceil_start(tail->data, tail->len);
        utf8_sanitize(&raw, head->data, h);
        buf_appendf(&raw,
                    "\n[... %llu bytes truncated by sandboxd (max_output_bytes=%llu); "
                    "the full output is in process.read ...]\n",
                    (unsigned long long) (omitted + (head->len - h) + t),
                    (unsigned long long) p->max_output);
        utf8_sanitize(&raw, tail->data + t, tail->len - t);
        v = json_stringn(raw.data, raw.len);
        buf_free(&raw);
        return v;
}

/* Head and tail of a stream read back from its spool, once the in-memory capture is gone (the
 * result of a repeated exec_id). */
static void
proc_spool_head_tail(struct proc *p, struct pstream *s, struct buf *head, struct buf *tail)
{
        uint64_t total = spool_total(s->spool), start = 0;
        uint64_t hcap = p->max_output / 2, tcap = p->max_output - hcap;

        if (total <= p->max_output) {
                hcap = total;
                tcap = 0;
        }
        if (hcap && spool_first(s->spool) == 0)
                spool_read(s->spool, 0, (size_t) hcap, head, &start);
        if (tcap)
                spool_read(s->spool, total - tcap, (size_t) tcap, tail, &start);
}

static json_t *
proc_result_text(struct proc *p, int stream, bool *truncated)
{
        struct pstream *s = &p->out[stream];
        struct buf head = {0}, tail = {0};
        json_t *v;

        if (s->head_cap || s->tail_cap) {
                pstream_tail(s, &tail);
                v = proc_format_text(p, &s->head, &tail, s->total, truncated);
        } else {
                proc_spool_head_tail(p, s, &head, &tail);
                v = proc_format_text(p, &head, &tail, s->total, truncated);
        }
        buf_free(&head);
        buf_free(&tail);
        return v;
}

json_t *
proc_exit_fields(struct proc *p)
{
        json_t *r = json_pack(
                "{s:s,s:o,s:o,s:b,s:b,s:I,s:I,s:f}", "exec_id", p->id, "exit_code",
                p->sig || p->lost || p->state == PROC_FAILED ? json_null()
                                                             : json_integer(p->exit_code),
                "signal", proc_signal_json(p->sig), "timed_out", p->timed_out, "oom_killed", p->oom,
                "stdout_bytes", (json_int_t) p->out[0].total, "stderr_bytes",
                (json_int_t) p->out[1].total, "duration_ms", p->duration_ms);

        if (p->recreated)
                json_object_set_new(r, "sandbox_recreated", json_true());
        if (p->lost)
                json_object_set_new(r, "lost", json_string(p->lost));
        return r;
}

json_t *
proc_result_json(struct proc *p)
{
        json_t *r = proc_exit_fields(p);
        bool truncated = false;

        json_object_set_new(r, "stdout", proc_result_text(p, 0, &truncated));
        json_object_set_new(r, "stderr", proc_result_text(p, 1, &truncated));
        json_object_set_new(r, "truncated", json_boolean(truncated));
        json_object_set_new(r, "sandbox", json_string(p->sb->id));
        json_object_set_new(r, "policy", proc_policy_json(p));
        if (p->base64)
                json_object_set_new(r, "output_encoding", json_string("base64"));
        return r;
}
