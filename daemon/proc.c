/* proc.c — exec jobs: validation, policy/approval, start, output streaming, retention, results,
 * and the process.* methods. */
#include "daemon/proc.h"

#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/shell.h"
#include "daemon/approval.h"
#include "daemon/daemon.h"
#include "daemon/execrec.h"
#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/records.h"
#include "daemon/sandbox.h"
#include "daemon/shellstate.h"
#include "daemon/spool.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define PROC_MAX_ARGV    4096
#define PROC_MAX_ENV     1024
#define PROC_MAX_COMMAND (1u << 20)
#define PROC_CHUNK       (64 * 1024)
#define PROC_MAX_WAIT_MS (24LL * 3600 * 1000)
#define PROC_ID_MAX      42 /* a client-chosen exec_id: "p_" and up to 40 of [A-Za-z0-9_-] */
#define PROC_MAX_PARKED  64 /* process.write requests held for an exec not started yet */

enum proc_state {
        PROC_PENDING,
        PROC_POLICY,
        PROC_APPROVAL,
        PROC_STARTING,
        PROC_RUNNING,
        PROC_EXITED,
        PROC_FAILED,
};

struct pstream {
        uint64_t total; /* raw bytes seen */
        struct spool *spool;
        struct buf head; /* first head_cap bytes (foreground only) */
        char *tail;      /* ring of the last tail_cap bytes */
        size_t tail_cap;
        size_t head_cap;
        uint64_t tail_total; /* bytes written into the ring */
        char carry[4];       /* incomplete UTF-8 sequence held back (text mode) */
        size_t ncarry;
};

struct proc;

/* A connection receiving a process's output notifications. */
struct proc_sub {
        struct list node; /* in proc->subs */
        struct conn_watch watch;
        struct conn *conn;
        struct proc *proc;
        bool foreground; /* the requester of a foreground exec: its close kills the tree */
        bool lagging;    /* notifications were skipped while its queue was full */
};

struct read_args {
        int stream;
        uint64_t offset;
        size_t max;
        bool base64;
};

enum proc_wait_kind {
        PROC_WAIT_EXIT,   /* process.wait */
        PROC_WAIT_READ,   /* process.read long-poll */
        PROC_WAIT_REPEAT, /* exec repeating a client-chosen exec_id: the foreground result */
};

/* A request waiting on a process. */
struct proc_waiter {
        struct read_args ra;
        struct list node;
        struct proc *proc;
        struct rpc_req *req;
        uv_timer_t timer;
        enum proc_wait_kind kind;
        bool done;
};

/* A process.write that came before its exec started (queued behind another command). */
struct proc_parked {
        struct list node;
        struct rpc_req *req;
        struct buf data;
        struct conn_acct *acct; /* data is charged to the writer's input budget */
        bool eof;
};

struct proc {
        struct list node;
        struct list lnode; /* in proc_live_list until it ends */
        struct list qnode; /* in sandbox->shell_queue while waiting for the shell */
        bool holds_shell;
        int refs;
        char id[PROC_ID_MAX + 1]; /* what clients name it: ours, or theirs (exec_id param) */
        char key[24];             /* ours, always: spool files, shell state, backends */
        bool started_sent;        /* exec.started went out */
        uid_t owner;
        struct sandbox *sb;
        enum proc_state state;
        char *command;
        json_t *argv;
        char *tag;
        char *cwd;
        json_t *env; /* exec env override (owned, may be NULL) */
        bool background, stream, base64, pty, stdin_open, merge;
        uint64_t timeout_ms;
        uint64_t max_output;
        struct buf stdin_data;
        uint64_t start_ns, started_wall, ended_wall;
        double duration_ms;
        struct pstream out[2];
        struct backend_proc *bp;
        const struct backend_ops *ops;
        int exit_code, sig;
        bool timed_out, oom, stdin_closed;
        bool recreated;      /* its sandbox's container was recreated to run it */
        struct rpc_req *req; /* foreground requester until answered */
        struct policy_result pr;
        const char *resolution;
        char *state_path;
        json_t *shell_base; /* command execs with state: the env it started from, before env */
        char *cwd_lost;     /* the removed cwd it was to start in (shellstate_cwd_gone) */
        bool cwd_noted;     /* and the caller was told where it runs instead */
        struct list subs;
        struct list waiters;
        struct list parked; /* struct proc_parked, until it starts or fails */
        uv_timer_t timer;
        bool paused;
        unsigned short rows, cols;
        /* Execs that outlive the daemon (execrec.h): its record is on disk. */
        bool persist;
        bool keep_files;      /* shutdown: record and spools stay for the next daemon */
        json_t *brecord;      /* the backend's save() (owned) */
        json_t *policy_saved; /* a restored exec's policy object (owned) */
        char *lost;           /* exec_exit.lost: how it ended is unknown */
};

static void proc_persist(struct proc *p);
static void proc_start_persist(struct proc *p);
static json_t *proc_restored; /* exec records loaded at start, waiting for their sandbox */

static struct list proc_all = {&proc_all, &proc_all};
/* The processes not yet ended: the per-uid limit is checked on every exec, and walking the
 * thousands of exited processes kept for process.read there would make execs slower as they
 * accumulate. */
static struct list proc_live_list = {&proc_live_list, &proc_live_list};
static uv_timer_t proc_gc_timer;
static char *proc_spool_dir;

static const char *const exec_keys[] = {"sandbox",
                                        "command",
                                        "argv",
                                        "cwd",
                                        "env",
                                        "timeout_s",
                                        "stdin",
                                        "stdin_base64",
                                        "stdin_open",
                                        "background",
                                        "stream",
                                        "merge_stderr",
                                        "output_encoding",
                                        "max_output_bytes",
                                        "pty",
                                        "pty_size",
                                        "tag",
                                        "exec_id",
                                        NULL};
static const char *const encodings[] = {"text", "base64", NULL};

static const struct {
        const char *name;
        int sig;
} proc_signals[] = {
        {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
        {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP},
        {"CONT", SIGCONT}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"ABRT", SIGABRT},
        {"SEGV", SIGSEGV}, {"BUS", SIGBUS},   {"FPE", SIGFPE},   {"ILL", SIGILL},
        {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ}, {"SYS", SIGSYS},
};

static json_t *
proc_signal_json(int sig)
{
        for (size_t i = 0; i < ARRAY_SIZE(proc_signals); i++)
                if (proc_signals[i].sig == sig)
                        return json_sprintf("SIG%s", proc_signals[i].name);
        return sig ? json_sprintf("SIG%d", sig) : json_null();
}

static void
proc_ref(struct proc *p)
{
        p->refs++;
}

static void
proc_unref(struct proc *p)
{
        if (--p->refs > 0)
                return;
        for (int i = 0; i < 2; i++) {
                spool_free(p->out[i].spool);
                buf_free(&p->out[i].head);
                free(p->out[i].tail);
        }
        if (p->bp)
                p->bp->ops->release(p->bp);
        if (p->sb)
                sandbox_unref(p->sb);
        policy_result_clear(&p->pr);
        buf_free(&p->stdin_data);
        json_decref(p->argv);
        json_decref(p->env);
        json_decref(p->brecord);
        json_decref(p->policy_saved);
        free(p->lost);
        free(p->command);
        free(p->tag);
        free(p->cwd);
        free(p->state_path);
        json_decref(p->shell_base);
        free(p->cwd_lost);
        free(p);
}

static void
proc_timer_close_cb(uv_handle_t *h)
{
        proc_unref(h->data);
}

/* Drops a process from the registry: its spools go, and memory once nothing refers to it. */
static void
proc_forget(struct proc *p)
{
        if (p->persist && !p->keep_files)
                execrec_drop(p->key);
        list_del(&p->node);
        list_del(&p->lnode);
        uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
}

/* Number of processes known. */
unsigned
proc_count(void)
{
        return list_count(&proc_all);
}

static bool
proc_live(const struct proc *p)
{
        return p->state < PROC_EXITED;
}

/* Marks p exited or failed and takes it off the live list. */
static void
proc_set_ended(struct proc *p, enum proc_state state)
{
        p->state = state;
        list_del(&p->lnode);
}

/* Number of processes not yet ended. */
unsigned
proc_running_count(void)
{
        return list_count(&proc_live_list);
}

/* Processes of uid not yet ended. */
unsigned
proc_running_uid(uid_t uid)
{
        struct list *pos, *tmp;
        unsigned n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &proc_live_list)
        {
                if (LIST_ENTRY(pos, struct proc, lnode)->owner == uid)
                        n++;
        }
        return n;
}

/* The process uid calls id: its own first (ids chosen by clients are unique per owner only),
 * then, for root, anyone's. */
static struct proc *
proc_find(uid_t uid, const char *id)
{
        struct list *pos, *tmp;
        struct proc *other = NULL;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (strcmp(p->id, id) != 0)
                        continue;
                if (p->owner == uid)
                        return p;
                if (uid == 0 && !other)
                        other = p;
        }
        return other;
}

/* ---- output ---- */

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
static json_t *
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

static void
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
static void
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
static void
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

static void proc_wake_readers(struct proc *p);
static void proc_cwd_note(struct proc *p);

static void
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
static void
proc_cwd_note(struct proc *p)
{
        char *note;

        if (!p->cwd_lost || p->cwd_noted)
                return;
        p->cwd_noted = true;
        note = shellstate_cwd_note(p->sb, p->cwd_lost);
        proc_output_cb(p, BACKEND_STDERR, note, strlen(note));
        free(note);
}

/* ---- results ---- */

static json_t *
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

static json_t *
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

static json_t *
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

static void
proc_sub_free(struct proc_sub *s)
{
        list_del(&s->node);
        conn_watch_del(&s->watch);
        conn_unref(s->conn);
        free(s);
}

static void
proc_kill_done_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        struct proc *p = ctx;

        if (err)
                log_warn("exec %s: kill: %s", p->id, err->message);
        proc_unref(p);
}

static void
proc_kill_tree(struct proc *p)
{
        if (!p->bp || p->state != PROC_RUNNING)
                return;
        proc_ref(p);
        p->bp->ops->kill(p->bp, (unsigned) g.config->kill_grace_ms, p, proc_kill_done_cb);
}

static void
proc_sub_close_cb(struct conn_watch *w)
{
        struct proc_sub *s = LIST_ENTRY(w, struct proc_sub, watch);
        struct proc *p = s->proc;
        bool fg = s->foreground;

        list_init(&s->watch.node); /* already unlinked by conn */
        proc_sub_free(s);
        /* At shutdown the daemon goes, not the client: what outlives it is left running. */
        if (fg && p->state == PROC_RUNNING && !(g.stopping && p->persist)) {
                log_info("exec %s: client disconnected during a foreground exec: killing its "
                         "process tree",
                         p->id);
                proc_kill_tree(p);
        }
}

static void
proc_sub_drain_cb(struct conn_watch *w)
{
        struct proc_sub *s = LIST_ENTRY(w, struct proc_sub, watch);

        proc_update_pause(s->proc);
}

static void
proc_subscribe(struct proc *p, struct conn *c, bool foreground)
{
        struct proc_sub *s = xcalloc(1, sizeof(*s));

        s->conn = c;
        conn_ref(c);
        s->proc = p;
        s->foreground = foreground;
        s->watch.on_close = proc_sub_close_cb;
        s->watch.on_drain = proc_sub_drain_cb;
        list_add_tail(&p->subs, &s->node);
        conn_watch_add(c, &s->watch);
}

static void proc_waiter_answer(struct proc_waiter *w);
static const char *proc_state_name(const struct proc *p);
static json_t *proc_wait_json(struct proc *p);
static void proc_wait_on(struct proc *p, struct rpc_req *req, uint64_t timeout_ms,
                         const struct read_args *ra, enum proc_wait_kind kind);
static void proc_repeat_answer(struct proc *p, struct rpc_req *req);
static void proc_flush_parked(struct proc *p);
static void proc_fail_waiters(struct proc *p, const struct sbx_error *err);

static void
proc_wake_all(struct proc *p, bool readers_only)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->waiters)
        {
                struct proc_waiter *w = LIST_ENTRY(pos, struct proc_waiter, node);
                if (!readers_only || w->kind == PROC_WAIT_READ)
                        proc_waiter_answer(w);
        }
}

static void
proc_wake_readers(struct proc *p)
{
        if (!list_empty(&p->waiters))
                proc_wake_all(p, true);
}

static void
proc_apply_shell_state(struct proc *p, const struct exec_exit *ex)
{
        char *note = shellstate_apply(p->sb, ex, p->shell_base, p->env, !p->cwd);

        if (note) {
                log_info("exec %s: %s", p->id, note + strlen("sandboxd: "));
                proc_output_cb(p, BACKEND_STDERR, note, strlen(note));
                free(note);
        }
        json_decref(p->shell_base);
        p->shell_base = NULL;
}

static void proc_start(struct proc *p);

/* Hands the sandbox's shell to the next queued command exec. */
static void
proc_release_shell(struct proc *p)
{
        struct sandbox *sb = p->sb;
        struct proc *next;

        if (!p->holds_shell)
                return;
        p->holds_shell = false;
        sb->shell_busy = false;
        while (!sb->shell_busy && !list_empty(&sb->shell_queue)) {
                next = LIST_ENTRY(sb->shell_queue.next, struct proc, qnode);
                list_del(&next->qnode);
                proc_start(next);
                proc_unref(next);
        }
}

/* A foreground exec's answer: its result, or -32005 when how it ended is unknown (the link
 * to it was lost for good): the output it made stays readable (process.read). */
static void
proc_reply(struct proc *p)
{
        struct sbx_error err = {0};

        if (!p->lost) {
                rpc_result(p->req, proc_result_json(p));
                return;
        }
        sbx_error_set(&err, SBX_E_BACKEND,
                      json_pack("{s:s,s:s,s:s}", "backend", p->sb->ops->name, "detail", p->lost,
                                "exec_id", p->id),
                      "%s backend: exec %s: %s", p->sb->ops->name, p->id, p->lost);
        rpc_error(p->req, &err);
        sbx_error_clear(&err);
}

static void
proc_finish(struct proc *p)
{
        struct list *pos, *tmp;

        p->ended_wall = util_wall_ms();
        p->duration_ms = (double) (util_now_ns() - p->start_ns) / 1e6;
        uv_timer_stop(&p->timer);
        for (int i = 0; i < 2; i++)
                if (p->stream && p->out[i].ncarry)
                        proc_stream_chunk(p, i, "", 0, p->out[i].total, true);
        if (p->req) {
                proc_reply(p);
                p->req = NULL;
        }
        /* The result is out: what is kept of the output from now on is the spool. */
        for (int i = 0; i < 2; i++) {
                buf_free(&p->out[i].head);
                free(p->out[i].tail);
                p->out[i].tail = NULL;
                p->out[i].head_cap = p->out[i].tail_cap = 0;
        }
        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        {
                struct proc_sub *s = LIST_ENTRY(pos, struct proc_sub, node);
                if (p->background || !s->foreground)
                        conn_notify(s->conn, "exec.exit", proc_exit_fields(p));
                proc_sub_free(s);
        }
        proc_wake_all(p, false);
        proc_flush_parked(p);
        if (p->sb->running)
                p->sb->running--;
        sandbox_touch(p->sb);
        proc_release_shell(p);
        proc_persist(p); /* before the backend forgets the exit (after on_exit returns) */
}

static void proc_start_error(struct proc *p, const struct sbx_error *error);

static void
proc_exit_cb(void *ctx, const struct exec_exit *ex)
{
        struct proc *p = ctx;

        if (ex->error) {
                /* It never ran: run it in a recreated container, or say why it could not. */
                proc_start_error(p, ex->error);
                proc_unref(p); /* the backend's reference */
                return;
        }
        proc_cwd_note(p);
        proc_set_ended(p, PROC_EXITED);
        p->exit_code = ex->exit_code;
        p->sig = ex->signal;
        p->oom = ex->oom_killed;
        if (ex->lost) {
                p->lost = xstrdup(ex->lost);
                log_warn("exec %s: lost: %s", p->id, ex->lost);
        }
        if (p->shell_base)
                proc_apply_shell_state(p, ex);
        log_debug("exec %s: exited (code %d, signal %d%s)", p->id, p->exit_code, p->sig,
                  p->timed_out ? ", timed out" : "");
        proc_finish(p);
        proc_unref(p); /* the backend's reference */
}

static void
proc_timeout_cb(uv_timer_t *t)
{
        struct proc *p = t->data;

        if (p->state != PROC_RUNNING)
                return;
        p->timed_out = true;
        log_info("exec %s: timeout of %llu ms reached: killing its process tree", p->id,
                 (unsigned long long) p->timeout_ms);
        proc_kill_tree(p);
}

static void
proc_drop_subs(struct proc *p)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->subs)
        proc_sub_free(LIST_ENTRY(pos, struct proc_sub, node));
}

static void
proc_fail(struct proc *p, struct sbx_error *err)
{
        proc_set_ended(p, PROC_FAILED);
        proc_drop_subs(p);
        proc_release_shell(p);
        proc_fail_waiters(p, err);
        proc_flush_parked(p);
        if (p->req) {
                rpc_error(p->req, err);
                p->req = NULL;
        }
        sbx_error_clear(err);
        /* A process that never ran is not worth keeping. */
        list_del(&p->node);
        list_init(&p->node);
        if (p->sb->running)
                p->sb->running--;
        uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
}

/* An exec that never ran, after its request was answered (background) or not. */
static void
proc_start_failed(struct proc *p, struct sbx_error *err)
{
        char *m;

        if (p->req) {
                proc_fail(p, err);
                return;
        }
        /* The client holds its exec_id already: it ends like Docker's own runtime failure. */
        m = xasprintf("sandboxd: %s\n", err->message);
        proc_output_cb(p, BACKEND_STDERR, m, strlen(m));
        free(m);
        sbx_error_clear(err);
        proc_set_ended(p, PROC_EXITED);
        p->exit_code = 125;
        proc_finish(p);
}

/* Whether an exec that could not start because of err may run in a recreated container. */
static bool
proc_may_recreate(struct proc *p, const struct sbx_error *err)
{
        static const char *const gone[] = {"removed", "exited", "dead"};
        const char *st = json_string_value(json_object_get(err->data, "state"));
        bool vanished = false;

        for (size_t i = 0; st && i < ARRAY_SIZE(gone); i++)
                vanished = vanished || !strcmp(st, gone[i]);
        return err->code == SBX_E_UNUSABLE && vanished && !p->recreated && !g.stopping &&
               sandbox_persistent(p->sb) && records_recreate_enabled(p->sb->ops);
}

static void
proc_recreated_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct proc *p = ctx;
        struct sbx_error e = {0};

        if (err) {
                sbx_error_move(&e, err);
                sbx_error_prefix(&e,
                                 "the container of sandbox '%s' vanished and could not be "
                                 "recreated",
                                 p->sb->id);
        } else if (g.stopping) {
                sbx_error_set(&e, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "stopping"),
                              "exec '%s' was not started: the daemon is shutting down", p->id);
        }
        if (e.code) {
                proc_start_failed(p, &e);
        } else {
                p->recreated = true;
                proc_start(p);
        }
        proc_unref(p);
}

/* Starts p again once its sandbox has a new container. */
static void
proc_wait_recreate(struct proc *p)
{
        p->state = PROC_STARTING;
        proc_ref(p);
        sandbox_recreate(p->sb, proc_recreated_cb, p);
}

/* exec_exit.error: the backend could not start the exec after exec_start returned. */
static void
proc_start_error(struct proc *p, const struct sbx_error *error)
{
        struct sbx_error e = {0};

        sbx_error_set(&e, error->code, json_incref(error->data), "%s", error->message);
        log_info("exec %s: the backend could not start it: %s", p->id, error->message);
        if (p->bp) {
                p->bp->ops->release(p->bp);
                p->bp = NULL;
        }
        uv_timer_stop(&p->timer);
        p->state = PROC_STARTING;
        if ((!p->cwd && shellstate_cwd_gone(p->sb, &e, &p->cwd_lost)) ||
            (p->command && shellstate_shell_gone(p->sb, &e))) {
                sbx_error_clear(&e);
                proc_start(p);
                return;
        }
        if (proc_may_recreate(p, &e)) {
                sbx_error_clear(&e);
                proc_wait_recreate(p);
                return;
        }
        proc_start_failed(p, &e);
}

/* ---- start ---- */

static void
env_add(json_t *env, const char *k, const char *v)
{
        if (v)
                json_object_set_new(env, k, json_string(v));
}

/* The minimal environment of a command run as who (new object). */
json_t *
proc_base_env(const struct backend_identity *who, bool pty)
{
        json_t *env = json_object();

        env_add(env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        env_add(env, "HOME", who->home);
        env_add(env, "USER", who->user);
        env_add(env, "LOGNAME", who->user);
        env_add(env, "LANG", "C.UTF-8");
        env_add(env, "TERM", pty ? "xterm-256color" : "dumb");
        return env;
}

/* The environment an exec in sb starts with (new object): the sandbox's shell state, or the
 * minimal environment plus the sandbox's env; then the exec's own env (borrowed, may be NULL).
 * The policy judges the command against exactly this. */
json_t *
proc_exec_env(const struct sandbox *sb, json_t *exec_env, bool pty)
{
        json_t *env;

        if (sb->shell_env) {
                env = json_object();
                json_object_update(env, sb->shell_env);
        } else {
                env = proc_base_env(&sb->who, pty);
                json_object_update(env, sb->env);
        }
        if (exec_env)
                json_object_update(env, exec_env);
        return env;
}

/* envp (new, NULL-terminated) from an object of strings. */
static char **
proc_envp(json_t *env)
{
        char **envp = xcalloc(json_object_size(env) + 1, sizeof(*envp));
        const char *k;
        json_t *v;
        size_t i = 0;

        json_object_foreach(env, k, v) envp[i++] = xasprintf("%s=%s", k, json_string_value(v));
        return envp;
}

static void
proc_strv_free(char **v)
{
        shell_argv_free(v);
}

static char **
proc_argv_plain(struct proc *p)
{
        char **argv = xcalloc(json_array_size(p->argv) + 1, sizeof(*argv));
        size_t i;
        json_t *a;

        json_array_foreach(p->argv, i, a) argv[i] = xstrdup(json_string_value(a));
        return argv;
}

/* The directory a command in sb starts in: cwd if given, else the sandbox's current one. */
static const char *
proc_cwd_in(const struct sandbox *sb, const char *cwd)
{
        if (cwd)
                return cwd;
        return sb->cwd ? sb->cwd : sb->workdir;
}

/* argv and *envp (both new) of p, the program when it is not argv[0] (borrowed), and where
 * its shell state is written (borrowed, NULL: nowhere). A command exec whose state is read
 * back keeps the env it starts from. */
static char **
proc_build_exec(struct proc *p, char ***envp, const char **path, const char **state)
{
        json_t *base = proc_exec_env(p->sb, NULL, p->pty), *env = json_copy(base);
        char **argv;

        if (p->env)
                json_object_update(env, p->env);
        *path = NULL;
        *state = p->state_path;
        if (p->command)
                argv = shellstate_argv(p->sb, p->command, state, env, path);
        else
                argv = proc_argv_plain(p);
        *envp = proc_envp(env);
        json_decref(p->shell_base);
        p->shell_base = *state ? json_incref(base) : NULL;
        json_decref(base);
        json_decref(env);
        return argv;
}

static const char *
proc_effective_cwd(struct proc *p)
{
        return proc_cwd_in(p->sb, p->cwd);
}

/* Tells the requester which process its exec became, before any of its output (protocol §10):
 * a client can route live output and kill a foreground exec by its id. */
static void
proc_send_started(struct proc *p)
{
        json_t *params;

        if (p->started_sent || !p->req || conn_closing(p->req->conn))
                return;
        p->started_sent = true;
        params = json_pack("{s:s,s:s}", "exec_id", p->id, "sandbox", p->sb->id);
        if (p->req->id)
                json_object_set(params, "request_id", p->req->id);
        if (p->tag)
                json_object_set_new(params, "tag", json_string(p->tag));
        conn_notify(p->req->conn, "exec.started", params);
}

static void
proc_start(struct proc *p)
{
        static const struct backend_exec_cbs cbs = {proc_output_cb, proc_exit_cb};
        struct sbx_error err = {0};
        struct exec_spec spec = {0};
        char **argv, **envp;
        int r;

        if (p->sb->state == SANDBOX_CREATING && p->sb->recreating) {
                proc_wait_recreate(p);
                return;
        }
        if (p->sb->state != SANDBOX_READY || (p->req && conn_closing(p->req->conn))) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "exec '%s' was not started: %s", p->id,
                              p->sb->state != SANDBOX_READY ? "its sandbox was destroyed"
                                                            : "the client disconnected");
                proc_fail(p, &err);
                return;
        }
        p->state = PROC_STARTING;
        p->ops = p->sb->ops;
        /* A retry after a recreate holds the shell already. */
        if (p->command && !p->background && !p->holds_shell) {
                if (p->sb->shell_busy) {
                        proc_ref(p);
                        list_add_tail(&p->sb->shell_queue, &p->qnode);
                        return;
                }
                p->sb->shell_busy = true;
                p->holds_shell = true;
                p->state_path = shellstate_path(p->sb, p->key, &err);
                if (!p->state_path) {
                        proc_fail(p, &err);
                        return;
                }
        }
        argv = proc_build_exec(p, &envp, &spec.path, &spec.state_path);
        spec.exec_id = p->key;
        spec.argv = argv;
        spec.envp = envp;
        spec.cwd = proc_effective_cwd(p);
        spec.pty = p->pty;
        spec.pty_rows = p->rows;
        spec.pty_cols = p->cols;
        spec.stdin_open = p->stdin_open;
        spec.stdin_data = p->stdin_data.data;
        spec.stdin_len = p->stdin_data.len;
        spec.merge_stderr = p->merge;
        spec.who = &p->sb->who;
        p->start_ns = util_now_ns();
        p->started_wall = util_wall_ms();
        proc_send_started(p);
        proc_ref(p); /* the backend's, dropped in proc_exit_cb */
        r = p->ops->exec_start(p->sb->bsb, &spec, &cbs, p, &p->bp, &err);
        proc_strv_free(argv);
        proc_strv_free(envp);
        if (r < 0) {
                proc_unref(p);
                if (!err.code)
                        sbx_error_backend(&err, p->ops->name, "cannot start: %s", strerror(-r));
                if ((!p->cwd && shellstate_cwd_gone(p->sb, &err, &p->cwd_lost)) ||
                    (p->command && shellstate_shell_gone(p->sb, &err))) {
                        /* Its inherited cwd was removed: one directory up (depth-bounded);
                         * or the container's shell went: pick again (once). */
                        sbx_error_clear(&err);
                        proc_start(p);
                        return;
                }
                if (proc_may_recreate(p, &err)) {
                        /* stdin_data is kept for the retry. */
                        sbx_error_clear(&err);
                        proc_wait_recreate(p);
                        return;
                }
                proc_fail(p, &err);
                return;
        }
        buf_free(&p->stdin_data);
        p->state = PROC_RUNNING;
        p->stdin_closed = !p->stdin_open;
        proc_flush_parked(p);
        proc_start_persist(p);
        if (p->timeout_ms)
                uv_timer_start(&p->timer, proc_timeout_cb, p->timeout_ms, 0);
        if (p->background && p->req) {
                json_t *res = json_pack("{s:s,s:b,s:s,s:o}", "exec_id", p->id, "background", 1,
                                        "sandbox", p->sb->id, "policy", proc_policy_json(p));
                if (p->recreated)
                        json_object_set_new(res, "sandbox_recreated", json_true());
                rpc_result(p->req, res);
                p->req = NULL;
        }
}

static void
proc_approval_cb(void *ctx, bool allowed, const char *resolution)
{
        struct proc *p = ctx;
        struct sbx_error err = {0};

        p->resolution = resolution;
        if (!allowed) {
                approval_deny_error(&err, &p->pr, resolution, p->req ? p->req->conn : NULL);
                proc_fail(p, &err);
                proc_unref(p);
                return;
        }
        if (p->sb->state != SANDBOX_READY) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "sandbox '%s' is no longer usable", p->sb->id);
                proc_fail(p, &err);
                proc_unref(p);
                return;
        }
        proc_start(p);
        proc_unref(p);
}

/* Fills ctx to judge a command in sb as an exec with this cwd (NULL: the sandbox's) and env
 * (borrowed, may be NULL) would run; *env (new) is the environment the command starts with,
 * for the caller to release after the evaluation. */
void
proc_policy_ctx(struct sandbox *sb, const char *cwd, json_t *exec_env, struct policy_ctx *ctx,
                json_t **env)
{
        *env = proc_exec_env(sb, exec_env, false);
        ctx->backend = sb->ops->name;
        ctx->host_access = sb->host_access;
        ctx->cwd = proc_cwd_in(sb, cwd);
        ctx->home = sb->who.home;
        ctx->env = *env;
        /* on the host the exec gets exactly this environment; an image adds its own */
        ctx->env_complete = (sb->caps & BACKEND_CAP_EXACT_ENV) != 0;
        ctx->request_env = exec_env;
        ctx->protected_paths = g.protected_paths;
        ctx->workspace = sb->workdir;
        ctx->daemon_pid = (long) getpid();
}

static void
proc_judge(struct proc *p)
{
        struct policy_ctx pctx = {0};
        json_t *info, *env;

        p->state = PROC_POLICY;
        proc_policy_ctx(p->sb, p->cwd, p->env, &pctx, &env);
        pctx.stdin_data = p->stdin_data.data;
        pctx.stdin_len = p->stdin_data.len;
        pctx.stdin_open = p->stdin_open;
        if (p->command) {
                policy_eval_command(g.policy, &pctx, p->command, &p->pr);
        } else {
                char **argv = proc_argv_plain(p);
                policy_eval_argv(g.policy, &pctx, argv, &p->pr);
                proc_strv_free(argv);
        }
        json_decref(env);
        p->state = PROC_APPROVAL;
        info = json_pack("{s:s,s:s,s:s}", "kind", "exec", "sandbox", p->sb->id, "backend",
                         p->sb->ops->name);
        if (p->command)
                json_object_set_new(info, "command", json_string(p->command));
        else
                json_object_set(info, "argv", p->argv);
        if (pctx.cwd)
                json_object_set_new(info, "cwd", json_text(pctx.cwd));
        proc_ref(p);
        approval_decide(p->req ? p->req->conn : NULL, p->sb, p->sb->host_access, info, &p->pr,
                        proc_approval_cb, p);
}

static void
proc_sandbox_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct proc *p = ctx;

        if (err) {
                struct sbx_error e = {0};
                sbx_error_move(&e, err);
                sbx_error_prefix(&e, "default sandbox");
                /* No sandbox: pretend it never existed. */
                proc_set_ended(p, PROC_FAILED);
                proc_drop_subs(p);
                proc_fail_waiters(p, &e);
                proc_flush_parked(p);
                rpc_error(p->req, &e);
                p->req = NULL;
                list_del(&p->node);
                list_init(&p->node);
                uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
                return;
        }
        p->sb = sb;
        sandbox_ref(sb);
        sb->running++;
        sandbox_touch(sb);
        proc_judge(p);
}

/* ---- exec params ---- */

static int
proc_parse_stdin(struct proc *p, json_t *params, struct sbx_error *err)
{
        const char *s = NULL, *b64 = NULL;

        if (params_str(params, "stdin", g.config->max_stdin_bytes, &s, err) < 0 ||
            params_str(params, "stdin_base64", g.config->max_stdin_bytes / 3 * 4 + 4, &b64, err) <
                    0)
                return -1;
        if (s && b64) {
                sbx_error_param(err, "stdin_base64",
                                "invalid params: give either 'stdin' or 'stdin_base64', not both");
                return -1;
        }
        if (s)
                buf_append(&p->stdin_data, s, strlen(s));
        if (b64 && base64_decode(&p->stdin_data, b64, strlen(b64)) < 0) {
                sbx_error_param(err, "stdin_base64",
                                "invalid params: 'stdin_base64' is not valid "
                                "base64");
                return -1;
        }
        return 0;
}

static int
proc_parse_pty(struct proc *p, json_t *params, struct sbx_error *err)
{
        static const char *const keys[] = {"rows", "cols", NULL};
        json_t *size = NULL;
        int64_t rows = 24, cols = 80;

        p->rows = 24;
        p->cols = 80;
        if (params_obj(params, "pty_size", &size, err) < 0)
                return -1;
        if (!size)
                return 0;
        if (params_known(size, keys, err) < 0 ||
            params_int(size, "rows", 1, 1000, &rows, err) < 0 ||
            params_int(size, "cols", 1, 1000, &cols, err) < 0)
                return -1;
        p->rows = (unsigned short) rows;
        p->cols = (unsigned short) cols;
        return 0;
}

static int
proc_parse_mode(struct proc *p, json_t *params, struct sbx_error *err)
{
        int64_t timeout = (int64_t) g.config->default_timeout_s, maxout;
        int enc = 0;

        p->stream = true;
        maxout = (int64_t) g.config->default_max_output_bytes;
        if (params_bool(params, "background", &p->background, err) < 0 ||
            params_bool(params, "stream", &p->stream, err) < 0 ||
            params_bool(params, "merge_stderr", &p->merge, err) < 0 ||
            params_bool(params, "stdin_open", &p->stdin_open, err) < 0 ||
            params_bool(params, "pty", &p->pty, err) < 0 ||
            params_enum(params, "output_encoding", encodings, &enc, err) < 0 ||
            params_int(params, "max_output_bytes", 0, (int64_t) g.config->max_output_bytes_limit,
                       &maxout, err) < 0 ||
            params_int(params, "timeout_s", 0, 31536000, &timeout, err) < 0 ||
            proc_parse_pty(p, params, err) < 0)
                return -1;
        if (timeout == 0 && !p->background) {
                sbx_error_param(err, "timeout_s",
                                "invalid params: 'timeout_s' 0 (no timeout) is allowed only with "
                                "'background': true");
                return -1;
        }
        if (!p->background && (uint64_t) timeout > g.config->max_foreground_timeout_s) {
                sbx_error_param(err, "timeout_s",
                                "invalid params: 'timeout_s' %lld is above the foreground maximum "
                                "of %llu s (max_foreground_timeout_s); run it with 'background': "
                                "true",
                                (long long) timeout,
                                (unsigned long long) g.config->max_foreground_timeout_s);
                return -1;
        }
        p->timeout_ms = (uint64_t) timeout * 1000;
        p->base64 = enc == 1;
        p->max_output = (uint64_t) maxout;
        return 0;
}

static int
proc_parse(struct proc *p, json_t *params, struct sbx_error *err)
{
        const char *command = NULL, *cwd = NULL, *tag = NULL;
        json_t *argv = NULL, *env = NULL;

        if (params_known(params, exec_keys, err) < 0 ||
            params_str(params, "command", PROC_MAX_COMMAND, &command, err) < 0 ||
            params_str_array(params, "argv", PROC_MAX_ARGV, &argv, err) < 0 ||
            params_str(params, "cwd", 4096, &cwd, err) < 0 ||
            params_str_map(params, "env", PROC_MAX_ENV, &env, err) < 0 ||
            params_str(params, "tag", 256, &tag, err) < 0 || proc_parse_mode(p, params, err) < 0 ||
            proc_parse_stdin(p, params, err) < 0)
                return -1;
        if (!command == !argv) {
                sbx_error_param(err, command ? "argv" : "command",
                                "invalid params: give exactly one of 'command' (a shell string) "
                                "or 'argv' (an array of strings)");
                return -1;
        }
        if (cwd && cwd[0] != '/') {
                sbx_error_param(err, "cwd", "invalid params: 'cwd' must be an absolute path");
                return -1;
        }
        p->command = command ? xstrdup(command) : NULL;
        p->argv = json_incref(argv);
        p->cwd = cwd ? xstrdup(cwd) : NULL;
        p->env = env ? json_deep_copy(env) : NULL;
        p->tag = tag ? xstrdup(tag) : NULL;
        return 0;
}

/* A new process of owner, named id (a client's choice, validated) or, when NULL, as its key. */
static struct proc *
proc_new(uid_t owner, const char *id)
{
        struct proc *p = xcalloc(1, sizeof(*p));
        char rnd[13];

        util_random_hex(rnd, 12);
        snprintf(p->key, sizeof(p->key), "p_%s", rnd);
        snprintf(p->id, sizeof(p->id), "%s", id ? id : p->key);
        p->refs = 1; /* the registry's, dropped by the timer close */
        p->owner = owner;
        list_init(&p->subs);
        list_init(&p->waiters);
        list_init(&p->parked);
        list_init(&p->qnode);
        list_add_tail(&proc_live_list, &p->lnode);
        uv_timer_init(g.loop, &p->timer);
        p->timer.data = p;
        list_add_tail(&proc_all, &p->node);
        return p;
}

static void
proc_setup_streams(struct proc *p)
{
        for (int i = 0; i < 2; i++) {
                char *path = xasprintf("%s/%s.%s", proc_spool_dir, p->key, i ? "err" : "out");
                struct pstream *s = &p->out[i];
                s->spool = spool_new(path, g.config->spool_max_bytes);
                free(path);
                if (!p->background) {
                        s->head_cap = (size_t) (p->max_output / 2);
                        s->tail_cap = (size_t) (p->max_output - s->head_cap);
                        s->tail = s->tail_cap ? xmalloc(s->tail_cap) : NULL;
                }
        }
}

static int
proc_check_limits(uid_t uid, struct sbx_error *err)
{
        if (g.stopping) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "stopping"),
                              "the daemon is shutting down and accepts no new execs");
                return -1;
        }
        if (proc_running_uid(uid) >= g.config->max_processes_per_uid) {
                sbx_error_limit(
                        err, "max_processes_per_uid", (long long) g.config->max_processes_per_uid,
                        "limit reached: uid %u has %llu processes running "
                        "(max_processes_per_uid); wait for or kill some first",
                        (unsigned) uid, (unsigned long long) g.config->max_processes_per_uid);
                return -1;
        }
        return 0;
}

/* A client-chosen exec_id: "p_" and 1 to 40 letters, digits, '_' or '-' (no path, no
 * space: it names files nowhere, but it is shown and logged). */
static int
proc_check_id(const char *id, struct sbx_error *err)
{
        static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        size_t n = strlen(id);

        if (n > 2 && n <= PROC_ID_MAX && !strncmp(id, "p_", 2) && strspn(id + 2, ok) == n - 2)
                return 0;
        sbx_error_param(err, "exec_id",
                        "invalid params: 'exec_id' must be \"p_\" followed by 1 to %d letters, "
                        "digits, '_' or '-'",
                        PROC_ID_MAX - 2);
        return -1;
}

/* The process of uid named id, its own only (client-chosen ids are unique per owner). */
static struct proc *
proc_find_own(uid_t uid, const char *id)
{
        struct proc *p = proc_find(uid, id);

        return p && p->owner == uid ? p : NULL;
}

/* Whether params ask for what p was started with (a retry, not a reuse of the id). */
static bool
proc_same_request(const struct proc *p, json_t *params)
{
        const char *cmd = json_string_value(json_object_get(params, "command"));
        json_t *argv = json_object_get(params, "argv");

        if (json_is_true(json_object_get(params, "background")) != p->background)
                return false;
        if (p->command)
                return cmd && !strcmp(cmd, p->command);
        return argv && json_equal(argv, p->argv);
}

/* The answer to a repeated exec: a foreground exec's result (its output read back from the
 * spool), or a background exec's state. */
static void
proc_repeat_answer(struct proc *p, struct rpc_req *req)
{
        json_t *r;

        if (!p->background) {
                r = proc_result_json(p);
        } else {
                r = proc_wait_json(p);
                json_object_set_new(r, "state", json_string(proc_state_name(p)));
                json_object_set_new(r, "background", json_true());
                json_object_set_new(r, "sandbox", p->sb ? json_string(p->sb->id) : json_null());
        }
        json_object_set_new(r, "repeated", json_true());
        rpc_result(req, r);
}

/* exec with the exec_id of a known process: the same command again is a retry and gets that
 * process's result (once it has ended) instead of a second run. */
static void
proc_repeat(struct proc *p, struct rpc_req *req)
{
        struct sbx_error err = {0};

        if (!proc_same_request(p, req->params)) {
                sbx_error_param(&err, "exec_id",
                                "invalid params: exec_id '%s' was already used for another "
                                "command (a repeat must send the same command; choose a new id)",
                                p->id);
                rpc_error(req, &err);
                return;
        }
        if (!p->background && proc_live(p)) {
                proc_wait_on(p, req, 0, NULL, PROC_WAIT_REPEAT);
                return;
        }
        proc_repeat_answer(p, req);
}

/* exec */
void
method_exec(struct rpc_req *req)
{
        struct sbx_error err = {0};
        uid_t uid = conn_uid(req->conn);
        const char *sbname = NULL, *want = NULL;
        struct sandbox *sb = NULL;
        struct proc *p;

        if (params_str(req->params, "exec_id", 64, &want, &err) < 0 ||
            (want && proc_check_id(want, &err) < 0)) {
                rpc_error(req, &err);
                return;
        }
        if (want && (p = proc_find_own(uid, want))) {
                proc_repeat(p, req);
                return;
        }
        if (proc_check_limits(uid, &err) < 0 ||
            params_str(req->params, "sandbox", 256, &sbname, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (sbname && !(sb = sandbox_find(uid, sbname))) {
                rpc_error_msg(req, SBX_E_NO_SANDBOX,
                              "sandbox '%s' not found (sandbox.list shows yours)", sbname);
                return;
        }
        if (sb && sb->state != SANDBOX_READY && !sb->recreating) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "creating"),
                              "sandbox '%s' is not ready yet", sbname);
                rpc_error(req, &err);
                return;
        }
        p = proc_new(uid, want);
        if (proc_parse(p, req->params, &err) < 0) {
                proc_set_ended(p, PROC_FAILED);
                list_del(&p->node);
                list_init(&p->node);
                uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
                rpc_error(req, &err);
                return;
        }
        p->req = req;
        proc_setup_streams(p);
        if (p->stream || !p->background)
                proc_subscribe(p, req->conn, !p->background);
        if (sb)
                proc_sandbox_cb(p, sb, NULL);
        else
                sandbox_default(req->conn, proc_sandbox_cb, p);
}

/* ---- process.* ---- */

static struct proc *
proc_from_params(struct rpc_req *req, const char *const *keys, struct sbx_error *err)
{
        const char *id = NULL;
        struct proc *p;

        if (params_known(req->params, keys, err) < 0 ||
            params_str(req->params, "exec_id", 64, &id, err) < 0)
                return NULL;
        if (!id) {
                sbx_error_param(err, "exec_id", "invalid params: 'exec_id' is required");
                return NULL;
        }
        p = proc_find(conn_uid(req->conn), id);
        if (!p)
                sbx_error_set(err, SBX_E_NO_PROCESS, NULL,
                              "process '%s' not found (process.list shows yours; exited processes "
                              "are kept for %llu s)",
                              id, (unsigned long long) g.config->exited_retention_s);
        return p;
}

/* A process's state as clients see it: waiting for its turn at the sandbox's shell, not
 * started yet for another reason (policy, approval, sandbox), running, or ended. */
static const char *
proc_state_name(const struct proc *p)
{
        if (!proc_live(p))
                return "exited";
        if (p->state == PROC_RUNNING)
                return "running";
        return list_empty(&p->qnode) ? "starting" : "queued";
}

static json_t *
proc_list_entry(struct proc *p)
{
        char a[40], b[40];
        json_t *o;

        util_rfc3339(p->started_wall, a, sizeof(a));
        util_rfc3339(p->ended_wall, b, sizeof(b));
        o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:b,s:s,s:o,s:I,s:I,s:o,s:b}", "exec_id", p->id,
                      "sandbox", p->sb ? p->sb->id : "", "state", proc_state_name(p), "exit_code",
                      p->state == PROC_EXITED && !p->sig ? json_integer(p->exit_code) : json_null(),
                      "signal", proc_signal_json(p->sig), "timed_out", p->timed_out, "started_at",
                      a, "ended_at", p->state >= PROC_EXITED ? json_string(b) : json_null(),
                      "stdout_bytes", (json_int_t) p->out[0].total, "stderr_bytes",
                      (json_int_t) p->out[1].total, "tag",
                      p->tag ? json_string(p->tag) : json_null(), "background", p->background);
        if (p->command)
                json_object_set_new(o, "command", json_string(p->command));
        else
                json_object_set(o, "argv", p->argv);
        return o;
}

/* process.list */
void
method_process_list(struct rpc_req *req)
{
        static const char *const keys[] = {"sandbox", "state", NULL};
        static const char *const states[] = {"running", "exited", NULL};
        struct sbx_error err = {0};
        const char *sbname = NULL;
        struct sandbox *sb = NULL;
        struct list *pos, *tmp;
        int state = -1;
        json_t *a;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "sandbox", 256, &sbname, &err) < 0 ||
            params_enum(req->params, "state", states, &state, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (sbname && !(sb = sandbox_find(conn_uid(req->conn), sbname))) {
                rpc_error_msg(req, SBX_E_NO_SANDBOX, "sandbox '%s' not found", sbname);
                return;
        }
        a = json_array();
        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if ((p->owner != conn_uid(req->conn) && conn_uid(req->conn) != 0) || !p->sb)
                        continue;
                if ((sb && p->sb != sb) || (state == 0 && !proc_live(p)) ||
                    (state == 1 && proc_live(p)))
                        continue;
                json_array_append_new(a, proc_list_entry(p));
        }
        rpc_result(req, json_pack("{s:o}", "processes", a));
}

static json_t *
proc_read_json(struct proc *p, const struct read_args *a)
{
        struct pstream *s = &p->out[a->stream];
        struct buf b = {0};
        uint64_t start = 0;
        size_t n;
        bool ended = !proc_live(p);
        json_t *r;

        spool_read(s->spool, a->offset, a->max, &b, &start);
        n = b.len;
        /* Do not split a character unless it is the very end of the stream. */
        if (!a->base64 && !(ended && start + n == spool_total(s->spool)))
                n = utf8_complete_prefix(b.data ? b.data : "", n);
        r = json_pack("{s:o,s:I,s:I,s:b,s:s,s:o,s:o,s:I}", "data",
                      proc_encode(a->base64, b.data ? b.data : "", n), "offset", (json_int_t) start,
                      "next_offset", (json_int_t) (start + n), "eof",
                      ended && start + n >= spool_total(s->spool), "state",
                      ended ? "exited" : "running", "exit_code",
                      p->state == PROC_EXITED && !p->sig ? json_integer(p->exit_code) : json_null(),
                      "signal", proc_signal_json(p->sig), "dropped_bytes",
                      (json_int_t) spool_first(s->spool));
        buf_free(&b);
        return r;
}

static json_t *
proc_wait_json(struct proc *p)
{
        json_t *r;

        if (proc_live(p))
                return json_pack("{s:s,s:s}", "exec_id", p->id, "state", "running");
        r = proc_exit_fields(p);
        json_object_set_new(r, "state", json_string("exited"));
        json_object_set_new(
                r, "truncated",
                json_boolean(p->out[0].total > p->max_output || p->out[1].total > p->max_output));
        json_object_set_new(r, "policy", proc_policy_json(p));
        return r;
}

static void
proc_waiter_close_cb(uv_handle_t *h)
{
        struct proc_waiter *w = h->data;

        proc_unref(w->proc);
        free(w);
}

static void
proc_waiter_answer(struct proc_waiter *w)
{
        struct proc *p = w->proc;

        if (w->done)
                return;
        w->done = true;
        list_del(&w->node);
        uv_timer_stop(&w->timer);
        switch (w->kind) {
        case PROC_WAIT_READ:
                rpc_result(w->req, proc_read_json(p, &w->ra));
                break;
        case PROC_WAIT_EXIT:
                rpc_result(w->req, proc_wait_json(p));
                break;
        case PROC_WAIT_REPEAT:
                proc_repeat_answer(p, w->req);
                break;
        }
        uv_close((uv_handle_t *) &w->timer, proc_waiter_close_cb);
}

/* p will never run: a repeat waiting for its result gets err, other waiters its state. */
static void
proc_fail_waiters(struct proc *p, const struct sbx_error *err)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &p->waiters)
        {
                struct proc_waiter *w = LIST_ENTRY(pos, struct proc_waiter, node);
                struct sbx_error e = {0};
                if (w->kind != PROC_WAIT_REPEAT) {
                        proc_waiter_answer(w);
                        continue;
                }
                w->done = true;
                list_del(&w->node);
                uv_timer_stop(&w->timer);
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                rpc_error(w->req, &e);
                uv_close((uv_handle_t *) &w->timer, proc_waiter_close_cb);
        }
}

static void
proc_waiter_timeout_cb(uv_timer_t *t)
{
        proc_waiter_answer(t->data);
}

static void
proc_wait_on(struct proc *p, struct rpc_req *req, uint64_t timeout_ms, const struct read_args *ra,
             enum proc_wait_kind kind)
{
        struct proc_waiter *w = xcalloc(1, sizeof(*w));

        if (ra)
                w->ra = *ra;
        w->proc = p;
        proc_ref(p);
        w->req = req;
        w->kind = kind;
        uv_timer_init(g.loop, &w->timer);
        w->timer.data = w;
        list_add_tail(&p->waiters, &w->node);
        if (timeout_ms)
                uv_timer_start(&w->timer, proc_waiter_timeout_cb, timeout_ms, 0);
}

/* process.read */
void
method_process_read(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "stream",          "offset", "max_bytes",
                                           "wait_ms", "output_encoding", NULL};
        static const char *const streams[] = {"stdout", "stderr", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int stream = 0, enc = -1;
        int64_t offset = 0, max = 65536, wait = 0;
        struct read_args a;

        if (!p || params_enum(req->params, "stream", streams, &stream, &err) < 0 ||
            params_int(req->params, "offset", 0, INT64_MAX, &offset, &err) < 0 ||
            params_int(req->params, "max_bytes", 1, 16 << 20, &max, &err) < 0 ||
            params_int(req->params, "wait_ms", 0, PROC_MAX_WAIT_MS, &wait, &err) < 0 ||
            params_enum(req->params, "output_encoding", encodings, &enc, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        a.stream = stream;
        a.offset = (uint64_t) offset;
        a.max = (size_t) max;
        a.base64 = enc < 0 ? p->base64 : enc == 1;
        if (wait && proc_live(p) && (uint64_t) offset >= spool_total(p->out[stream].spool)) {
                proc_wait_on(p, req, (uint64_t) wait, &a, PROC_WAIT_READ);
                return;
        }
        rpc_result(req, proc_read_json(p, &a));
}

/* Writes data to p's stdin and answers req (both stolen: data is freed). */
static void
proc_write_now(struct proc *p, struct rpc_req *req, struct buf *data, bool eof)
{
        int r;

        if (p->state != PROC_RUNNING || p->stdin_closed) {
                buf_free(data);
                rpc_error_msg(req, SBX_E_STDIN_CLOSED,
                              "stdin of '%s' is not open (start the exec with 'stdin_open': "
                              "true; it closes after eof or when the process exits%s)",
                              p->id, p->state == PROC_FAILED ? "; this exec never started" : "");
                return;
        }
        r = p->bp->ops->write(p->bp, data->data, data->len, eof);
        if (eof)
                p->stdin_closed = true;
        if (r < 0) {
                buf_free(data);
                rpc_error_msg(req, SBX_E_STDIN_CLOSED, "stdin of '%s' is closed: %s", p->id,
                              strerror(-r));
                return;
        }
        rpc_result(req, json_pack("{s:I}", "written", (json_int_t) data->len));
        buf_free(data);
}

/* Holds a write for an exec with stdin_open that has not started yet (waiting for the shell,
 * for approval, for its sandbox): it is done, in order, once the exec runs. The writer's
 * answer waits, so a client that waits for answers before sending more stays paced. */
static void
proc_park_write(struct proc *p, struct rpc_req *req, struct buf *data, bool eof)
{
        struct sbx_error err = {0};
        struct conn_acct *acct = NULL;
        struct proc_parked *w;

        if (list_count(&p->parked) >= PROC_MAX_PARKED)
                sbx_error_limit(&err, "parked_writes", PROC_MAX_PARKED,
                                "limit reached: %d process.write requests already wait for '%s' "
                                "to start; wait for their answers before sending more",
                                PROC_MAX_PARKED, p->id);
        else if (!(acct = conn_charge(req->conn, data->len)))
                sbx_error_limit(&err, "max_input_bytes_per_uid",
                                (long long) g.config->max_input_bytes_per_uid,
                                "limit reached: this uid's process.write data waiting for execs "
                                "to start (and unfinished messages) would pass "
                                "max_input_bytes_per_uid; wait for the answers of earlier "
                                "writes before sending more");
        if (!acct) {
                buf_free(data);
                rpc_error(req, &err);
                return;
        }
        /* the decoded copy is what waits; the request's own text goes now */
        json_object_del(req->params, "data");
        json_object_del(req->params, "data_base64");
        w = xcalloc(1, sizeof(*w));
        w->req = req;
        w->data = *data;
        w->acct = acct;
        w->eof = eof;
        list_add_tail(&p->parked, &w->node);
}

/* Does (running) or refuses (ended) the writes that waited for p to start. */
static void
proc_flush_parked(struct proc *p)
{
        while (!list_empty(&p->parked)) {
                struct proc_parked *w = LIST_ENTRY(p->parked.next, struct proc_parked, node);
                list_del(&w->node);
                conn_uncharge(w->acct, w->data.len);
                proc_write_now(p, w->req, &w->data, w->eof);
                free(w);
        }
}

/* process.write */
void
method_process_write(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "data", "data_base64", "eof", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        const char *data = NULL, *b64 = NULL;
        bool eof = false;
        struct buf b = {0};

        if (!p || params_str(req->params, "data", g.config->max_stdin_bytes, &data, &err) < 0 ||
            params_str(req->params, "data_base64", g.config->max_stdin_bytes / 3 * 4 + 4, &b64,
                       &err) < 0 ||
            params_bool(req->params, "eof", &eof, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (data)
                buf_append(&b, data, strlen(data));
        if (b64 && base64_decode(&b, b64, strlen(b64)) < 0) {
                buf_free(&b);
                sbx_error_param(&err, "data_base64",
                                "invalid params: 'data_base64' is not "
                                "valid base64");
                rpc_error(req, &err);
                return;
        }
        if (proc_live(p) && p->state != PROC_RUNNING && p->stdin_open)
                proc_park_write(p, req, &b, eof);
        else
                proc_write_now(p, req, &b, eof);
}

static int
proc_parse_signal(json_t *params, int *sig, struct sbx_error *err)
{
        json_t *v = json_object_get(params, "signal");
        const char *s;

        if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 65) {
                *sig = (int) json_integer_value(v);
                return 0;
        }
        s = json_string_value(v);
        if (s && !strncmp(s, "SIG", 3))
                s += 3;
        for (size_t i = 0; s && i < ARRAY_SIZE(proc_signals); i++) {
                if (!strcmp(proc_signals[i].name, s)) {
                        *sig = proc_signals[i].sig;
                        return 0;
                }
        }
        sbx_error_param(err, "signal",
                        "invalid params: 'signal' must be a name such as \"TERM\", \"KILL\", "
                        "\"INT\", \"HUP\" or a number from 1 to 64");
        return -1;
}

/* process.signal */
void
method_process_signal(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "signal", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int sig = 0, r;

        if (!p || proc_parse_signal(req->params, &sig, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (p->state != PROC_RUNNING) {
                rpc_error_msg(req, SBX_E_NO_PROCESS, "process '%s' is not running", p->id);
                return;
        }
        r = p->bp->ops->signal(p->bp, sig);
        if (r < 0) {
                sbx_error_backend(&err, p->ops->name, "signal: %s", strerror(-r));
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, json_object());
}

struct proc_kill_req {
        struct proc *p;
        struct rpc_req *req;
};

static void
proc_kill_reply_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        struct proc_kill_req *k = ctx;

        if (err) {
                struct sbx_error e = {0};
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                rpc_error(k->req, &e);
        } else {
                rpc_result(k->req, json_pack("{s:s,s:b,s:i}", "exec_id", k->p->id, "killed",
                                             survivors == 0, "survivors", survivors));
        }
        proc_unref(k->p);
        free(k);
}

/* process.kill */
void
method_process_kill(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "grace_ms", NULL};
        struct sbx_error err = {0};
        int64_t grace = (int64_t) g.config->kill_grace_ms;
        struct proc *p = params_int(req->params, "grace_ms", 0, 600000, &grace, &err) < 0
                                 ? NULL
                                 : proc_from_params(req, keys, &err);
        struct proc_kill_req *k;

        if (!p) {
                rpc_error(req, &err);
                return;
        }
        if (p->state != PROC_RUNNING) {
                rpc_result(req, json_pack("{s:s,s:b,s:i,s:b}", "exec_id", p->id, "killed", 1,
                                          "survivors", 0, "already_exited", 1));
                return;
        }
        k = xcalloc(1, sizeof(*k));
        k->p = p;
        proc_ref(p);
        k->req = req;
        p->bp->ops->kill(p->bp, (unsigned) grace, k, proc_kill_reply_cb);
}

/* process.wait */
void
method_process_wait(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "timeout_ms", NULL};
        struct sbx_error err = {0};
        int64_t timeout = -1;
        struct proc *p =
                params_int(req->params, "timeout_ms", 0, PROC_MAX_WAIT_MS, &timeout, &err) < 0
                        ? NULL
                        : proc_from_params(req, keys, &err);

        if (!p) {
                rpc_error(req, &err);
                return;
        }
        if (!proc_live(p) || timeout == 0) {
                rpc_result(req, proc_wait_json(p));
                return;
        }
        /* Without timeout_ms, wait until the process ends. */
        proc_wait_on(p, req, timeout > 0 ? (uint64_t) timeout : 0, NULL, PROC_WAIT_EXIT);
}

static uint64_t
proc_replay(struct proc *p, struct conn *c, int stream, uint64_t from)
{
        struct pstream *s = &p->out[stream];
        /* A replay goes straight into the write queue: at most half of conn_write_buffer_max
         * per stream, the most recent part. The caller reports where it started; the rest is
         * for process.read. */
        uint64_t budget = g.config->conn_write_buffer_max / 2, total = spool_total(s->spool);
        uint64_t off = total > budget && from < total - budget ? total - budget : from;
        uint64_t first = MAX(off, spool_first(s->spool));

        while (off < spool_total(s->spool)) {
                struct buf b = {0};
                uint64_t start;
                size_t n;
                if (spool_read(s->spool, off, PROC_CHUNK, &b, &start) < 0 || !b.len) {
                        buf_free(&b);
                        break;
                }
                n = p->base64 ? b.len : utf8_complete_prefix(b.data, b.len);
                if (!n)
                        n = b.len;
                struct buf line = {0};
                proc_output_line(p, stream, b.data, n, start, &line);
                conn_send_raw(c, line.data, line.len);
                buf_free(&line);
                off = start + n;
                buf_free(&b);
        }
        return first;
}

/* process.attach */
void
method_process_attach(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "offsets", NULL};
        static const char *const okeys[] = {"stdout", "stderr", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        json_t *offsets = NULL;
        int64_t o[2] = {0, 0};
        uint64_t from[2];

        if (!p || params_obj(req->params, "offsets", &offsets, &err) < 0 ||
            (offsets && (params_known(offsets, okeys, &err) < 0 ||
                         params_int(offsets, "stdout", 0, INT64_MAX, &o[0], &err) < 0 ||
                         params_int(offsets, "stderr", 0, INT64_MAX, &o[1], &err) < 0))) {
                rpc_error(req, &err);
                return;
        }
        for (int i = 0; i < 2; i++)
                from[i] = proc_replay(p, req->conn, i, (uint64_t) o[i]);
        if (proc_live(p)) {
                proc_subscribe(p, req->conn, false);
                p->stream = true;
        } else {
                /* Before the result: rpc_result frees req (and its conn reference). */
                conn_notify(req->conn, "exec.exit", proc_exit_fields(p));
        }
        rpc_result(req, json_pack("{s:s,s:s,s:{s:I,s:I}}", "exec_id", p->id, "state",
                                  proc_live(p) ? "running" : "exited", "replayed_from", "stdout",
                                  (json_int_t) from[0], "stderr", (json_int_t) from[1]));
}

/* process.resize */
void
method_process_resize(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "rows", "cols", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        int64_t rows = 0, cols = 0;

        if (!p || params_int(req->params, "rows", 1, 1000, &rows, &err) <= 0 ||
            params_int(req->params, "cols", 1, 1000, &cols, &err) <= 0) {
                if (!err.code)
                        sbx_error_param(&err, rows ? "cols" : "rows",
                                        "invalid params: 'rows' and 'cols' are required");
                rpc_error(req, &err);
                return;
        }
        if (!p->pty || p->state != PROC_RUNNING) {
                rpc_error_msg(req, SBX_E_PARAMS, "process '%s' is not a running pty exec", p->id);
                return;
        }
        p->bp->ops->resize(p->bp, (unsigned short) rows, (unsigned short) cols);
        rpc_result(req, json_object());
}

/* ---- execs that outlive the daemon (execrec.h) ---- */

/* The exec's record (new). */
static json_t *
proc_record_json(struct proc *p)
{
        json_t *r = json_pack(
                "{s:s,s:s,s:s,s:I,s:s,s:b,s:b,s:b,s:i,s:i,s:b,s:b,s:I,s:I,s:I,s:o,s:O}", "key",
                p->key, "exec_id", p->id, "sandbox", p->sb->id, "owner", (json_int_t) p->owner,
                "state", proc_live(p) ? "running" : "exited", "background", p->background, "base64",
                p->base64, "pty", p->pty, "rows", p->rows, "cols", p->cols, "stdin_open",
                p->stdin_open, "merge_stderr", p->merge, "max_output", (json_int_t) p->max_output,
                "timeout_ms", (json_int_t) p->timeout_ms, "started_ms",
                (json_int_t) p->started_wall, "policy", proc_policy_json(p), "record", p->brecord);

        if (p->command)
                json_object_set_new(r, "command", json_string(p->command));
        else
                json_object_set(r, "argv", p->argv);
        if (p->tag)
                json_object_set_new(r, "tag", json_string(p->tag));
        if (p->cwd)
                json_object_set_new(r, "cwd", json_string(p->cwd));
        if (p->env)
                json_object_set(r, "env", p->env);
        if (p->state_path)
                json_object_set_new(r, "state_path", json_string(p->state_path));
        if (!proc_live(p)) {
                json_t *ex = proc_exit_fields(p);
                json_object_update(r, ex);
                json_decref(ex);
                json_object_set_new(r, "ended_ms", json_integer((json_int_t) p->ended_wall));
        }
        return r;
}

/* Writes (or rewrites) the record of an exec that outlives the daemon. */
static void
proc_persist(struct proc *p)
{
        json_t *r;
        int e;

        if (!p->persist || p->keep_files)
                return;
        r = proc_record_json(p);
        e = execrec_put(r);
        if (e < 0)
                log_warn("exec %s: its record was not saved (a restart will not take it back): %s",
                         p->id, strerror(-e));
        json_decref(r);
}

/* A started exec whose backend can take it back after a restart is recorded. */
static void
proc_start_persist(struct proc *p)
{
        json_t *rec;

        if (!p->bp->ops->save || !sandbox_persistent(p->sb) || !execrec_id_ok(p->key))
                return;
        rec = p->bp->ops->save(p->bp);
        if (!rec)
                return;
        json_decref(p->brecord);
        p->brecord = rec;
        p->persist = true;
        proc_persist(p);
}

/* Loads the records a previous daemon left (records_restore calls it first). */
void
proc_restore_load(void)
{
        char *warning = NULL;

        json_decref(proc_restored);
        proc_restored = execrec_open(proc_spool_dir, &warning);
        if (warning)
                log_warn("%s", warning);
        free(warning);
}

static const char *
proc_rec_str(json_t *rec, const char *key)
{
        return json_string_value(json_object_get(rec, key));
}

/* The fields every record has; false when it is malformed. */
static bool
proc_restore_fields(struct proc *p, json_t *rec)
{
        json_t *argv = json_object_get(rec, "argv"), *env = json_object_get(rec, "env");
        const char *cmd = proc_rec_str(rec, "command");

        if (!cmd == !json_is_array(argv) || !json_is_object(json_object_get(rec, "record")))
                return false;
        p->command = cmd ? xstrdup(cmd) : NULL;
        p->argv = json_incref(argv);
        p->tag = proc_rec_str(rec, "tag") ? xstrdup(proc_rec_str(rec, "tag")) : NULL;
        p->cwd = proc_rec_str(rec, "cwd") ? xstrdup(proc_rec_str(rec, "cwd")) : NULL;
        p->env = json_is_object(env) ? json_deep_copy(env) : NULL;
        p->state_path =
                proc_rec_str(rec, "state_path") ? xstrdup(proc_rec_str(rec, "state_path")) : NULL;
        p->background = json_is_true(json_object_get(rec, "background"));
        p->base64 = json_is_true(json_object_get(rec, "base64"));
        p->pty = json_is_true(json_object_get(rec, "pty"));
        p->rows = (unsigned short) json_integer_value(json_object_get(rec, "rows"));
        p->cols = (unsigned short) json_integer_value(json_object_get(rec, "cols"));
        p->stdin_open = json_is_true(json_object_get(rec, "stdin_open"));
        p->merge = json_is_true(json_object_get(rec, "merge_stderr"));
        p->max_output = (uint64_t) json_integer_value(json_object_get(rec, "max_output"));
        p->timeout_ms = (uint64_t) json_integer_value(json_object_get(rec, "timeout_ms"));
        p->started_wall = (uint64_t) json_integer_value(json_object_get(rec, "started_ms"));
        p->policy_saved = json_incref(json_object_get(rec, "policy"));
        p->brecord = json_incref(json_object_get(rec, "record"));
        p->persist = true;
        return true;
}

static int
proc_signal_number(json_t *v)
{
        const char *s = json_string_value(v);

        for (size_t i = 0; s && i < ARRAY_SIZE(proc_signals); i++)
                if (!strcmp(s + 3, proc_signals[i].name))
                        return proc_signals[i].sig;
        return s && !strncmp(s, "SIG", 3) ? atoi(s + 3) : 0;
}

/* An exec that had ended: as it was reported. */
static void
proc_restore_exited(struct proc *p, json_t *rec)
{
        p->exit_code = (int) json_integer_value(json_object_get(rec, "exit_code"));
        p->sig = proc_signal_number(json_object_get(rec, "signal"));
        p->timed_out = json_is_true(json_object_get(rec, "timed_out"));
        p->oom = json_is_true(json_object_get(rec, "oom_killed"));
        p->recreated = json_is_true(json_object_get(rec, "sandbox_recreated"));
        p->lost = proc_rec_str(rec, "lost") ? xstrdup(proc_rec_str(rec, "lost")) : NULL;
        p->ended_wall = (uint64_t) json_integer_value(json_object_get(rec, "ended_ms"));
        p->duration_ms = json_number_value(json_object_get(rec, "duration_ms"));
        proc_set_ended(p, PROC_EXITED);
}

/* A running exec: its backend takes it back from where our spools end. */
static void
proc_restore_running(struct proc *p)
{
        static const struct backend_exec_cbs cbs = {proc_output_cb, proc_exit_cb};
        struct exec_spec spec = {.exec_id = p->key,
                                 .state_path = p->state_path,
                                 .pty = p->pty,
                                 .pty_rows = p->rows,
                                 .pty_cols = p->cols,
                                 .stdin_open = p->stdin_open,
                                 .who = &p->sb->who};
        uint64_t off[2] = {p->out[0].total, p->out[1].total}, now = util_wall_ms();
        uint64_t ran = now > p->started_wall ? now - p->started_wall : 0;
        struct sbx_error err = {0};
        int r = -ENOTSUP;

        p->ops = p->sb->ops;
        p->start_ns = util_now_ns() - ran * 1000000;
        proc_ref(p); /* the backend's, dropped in proc_exit_cb */
        if (p->ops->exec_adopt)
                r = p->ops->exec_adopt(p->sb->bsb, &spec, p->brecord, off, &cbs, p, &p->bp, &err);
        if (r < 0) {
                proc_unref(p);
                p->lost = xasprintf("not taken back after the daemon restarted: %s",
                                    err.message ? err.message : strerror(-r));
                sbx_error_clear(&err);
                p->ended_wall = now;
                proc_set_ended(p, PROC_EXITED);
                proc_persist(p);
                return;
        }
        p->state = PROC_RUNNING;
        p->sb->running++;
        p->stdin_closed = !p->stdin_open;
        if (p->state_path && !p->background) { /* it still holds the sandbox's shell */
                p->holds_shell = true;
                p->sb->shell_busy = true;
                /* what it leaves becomes the state; the env it started from is gone with the
                 * daemon that started it, so its exports are taken as they come */
                p->shell_base = proc_exec_env(p->sb, NULL, p->pty);
        }
        if (p->timeout_ms)
                uv_timer_start(&p->timer, proc_timeout_cb,
                               p->timeout_ms > ran ? p->timeout_ms - ran : 1, 0);
}

static void
proc_restore_one(struct sandbox *sb, json_t *rec)
{
        const char *id = proc_rec_str(rec, "exec_id"), *key = proc_rec_str(rec, "key");
        struct proc *p;

        if (!id || strlen(id) > PROC_ID_MAX || !key || !execrec_id_ok(key)) {
                log_warn("exec record %s is malformed: removed", key ? key : "?");
                execrec_drop(key ? key : "");
                return;
        }
        p = proc_new(sb->owner, id);
        snprintf(p->key, sizeof(p->key), "%s", key); /* spools, the agent: by key */
        p->sb = sb;
        sandbox_ref(sb);
        if (!proc_restore_fields(p, rec)) {
                log_warn("exec record %s is malformed: removed", p->id);
                proc_set_ended(p, PROC_FAILED);
                proc_forget(p);
                return;
        }
        for (int i = 0; i < 2; i++) {
                char *path = xasprintf("%s/%s.%s", proc_spool_dir, p->key, i ? "err" : "out");
                p->out[i].spool = spool_open(path, g.config->spool_max_bytes);
                if (!p->out[i].spool) /* not a spool: start over, nothing of it can be read */
                        p->out[i].spool = spool_new(path, g.config->spool_max_bytes);
                p->out[i].total = spool_total(p->out[i].spool);
                free(path);
        }
        if (!strcmp(proc_rec_str(rec, "state") ?: "", "exited"))
                proc_restore_exited(p, rec);
        else
                proc_restore_running(p);
        log_info("exec %s (sandbox %s) taken back: %s", p->id, sb->id,
                 proc_live(p) ? "running" : "exited");
}

/* Takes back the execs recorded for sb, which was just re-adopted; then its backend may drop
 * what nobody claimed. */
void
proc_restore_sandbox(struct sandbox *sb)
{
        size_t i = 0;

        while (i < json_array_size(proc_restored)) {
                json_t *rec = json_array_get(proc_restored, i);
                if (strcmp(proc_rec_str(rec, "sandbox") ?: "", sb->id) != 0 ||
                    json_integer_value(json_object_get(rec, "owner")) != (json_int_t) sb->owner) {
                        i++;
                        continue;
                }
                proc_restore_one(sb, rec);
                json_array_remove(proc_restored, i);
        }
        if (sb->ops->exec_adopt_done && sb->bsb)
                sb->ops->exec_adopt_done(sb->bsb);
}

/* Every recorded sandbox was adopted or dropped: records of execs whose sandbox is gone go,
 * with their spools (a sandbox kept for a later start keeps its execs' records). */
void
proc_restore_finish(const char *const *kept_sandboxes)
{
        json_t *rec;
        size_t i;

        json_array_foreach(proc_restored, i, rec)
        {
                const char *id = proc_rec_str(rec, "key"), *sb = proc_rec_str(rec, "sandbox");
                bool kept = false;
                for (size_t k = 0; kept_sandboxes && kept_sandboxes[k]; k++)
                        kept = kept || (sb && !strcmp(sb, kept_sandboxes[k]));
                if (kept || !id)
                        continue;
                for (int s = 0; s < 2; s++) {
                        char *path = xasprintf("%s/%s.%s", proc_spool_dir, id, s ? "err" : "out");
                        unlink(path);
                        free(path);
                }
                execrec_drop(id);
        }
        json_decref(proc_restored);
        proc_restored = NULL;
}

/* ---- lifecycle ---- */

struct proc_killall {
        uv_timer_t timer;
        struct sandbox *sb; /* referenced; NULL: every sandbox */
        void (*cb)(void *ctx);
        void *ctx;
};

static void
proc_killed_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        (void) ctx;
}

static bool
proc_any_live(struct sandbox *sb)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                /* At shutdown (sb NULL) execs that outlive the daemon are left running. */
                if (proc_live(p) && p->state >= PROC_STARTING && (sb ? p->sb == sb : !p->persist))
                        return true;
        }
        return false;
}

static void
proc_killall_close_cb(uv_handle_t *h)
{
        struct proc_killall *k = h->data;

        if (k->sb)
                sandbox_unref(k->sb);
        free(k);
}

static void
proc_killall_tick_cb(uv_timer_t *t)
{
        struct proc_killall *k = t->data;

        /* Done once every exec has delivered its exit (not merely been signalled): only then
         * may the sandbox's backend state go away. */
        if (proc_any_live(k->sb))
                return;
        uv_timer_stop(t);
        k->cb(k->ctx);
        uv_close((uv_handle_t *) t, proc_killall_close_cb);
}

/* Kills every running exec of sb (NULL: all); cb once all of them have exited. */
void
proc_kill_all(struct sandbox *sb, void (*cb)(void *ctx), void *ctx)
{
        struct proc_killall *k = xcalloc(1, sizeof(*k));
        struct list *pos, *tmp;

        k->cb = cb;
        k->ctx = ctx;
        k->sb = sb;
        if (sb)
                sandbox_ref(sb);
        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (p->state != PROC_RUNNING || (sb ? p->sb != sb : p->persist))
                        continue;
                p->bp->ops->kill(p->bp, (unsigned) g.config->kill_grace_ms, NULL, proc_killed_cb);
        }
        uv_timer_init(g.loop, &k->timer);
        k->timer.data = k;
        uv_timer_start(&k->timer, proc_killall_tick_cb, 0, 20);
}

struct proc_uid_count {
        uid_t uid;
        uint64_t exited;
};

/* The counter of uid in counts (grown as needed). */
static uint64_t *
proc_uid_slot(struct proc_uid_count **counts, size_t *n, uid_t uid)
{
        for (size_t i = 0; i < *n; i++)
                if ((*counts)[i].uid == uid)
                        return &(*counts)[i].exited;
        *counts = xrealloc(*counts, (*n + 1) * sizeof(**counts));
        (*counts)[*n].uid = uid;
        (*counts)[*n].exited = 0;
        return &(*counts)[(*n)++].exited;
}

/* Forgets exited processes past exited_retention_s, then the oldest of any uid that keeps more
 * than max_exited_per_uid. Linear: one pass to count, one to evict (oldest first). */
static void
proc_gc_cb(uv_timer_t *t)
{
        struct list *pos, *tmp;
        uint64_t now = util_wall_ms();
        struct proc_uid_count *counts = NULL;
        size_t n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (p->state != PROC_EXITED)
                        continue;
                if (now - p->ended_wall >= g.config->exited_retention_s * 1000)
                        proc_forget(p);
                else
                        (*proc_uid_slot(&counts, &n, p->owner))++;
        }
        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                uint64_t *c;
                if (p->state != PROC_EXITED)
                        continue;
                c = proc_uid_slot(&counts, &n, p->owner);
                if (*c > g.config->max_exited_per_uid) {
                        proc_forget(p);
                        (*c)--;
                }
        }
        free(counts);
}

/* Sets up the spool directory and the retention timer. */
void
proc_init(uv_loop_t *loop)
{
        proc_spool_dir = xasprintf("%s/spool", g.state_dir);
        if (mkdir(proc_spool_dir, 0700) < 0 && errno != EEXIST)
                log_warn("cannot create '%s': %s (output retention disabled)", proc_spool_dir,
                         strerror(errno));
        shellstate_init(g.state_dir, g.config->shell);
        uv_timer_init(loop, &proc_gc_timer);
        uv_timer_start(&proc_gc_timer, proc_gc_cb, 5000, 5000);
        uv_unref((uv_handle_t *) &proc_gc_timer);
}

/* Forgets every process (shutdown). */
void
proc_shutdown(void)
{
        struct list *pos, *tmp;

        uv_timer_stop(&proc_gc_timer);
        uv_close((uv_handle_t *) &proc_gc_timer, NULL);
        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (p->persist) { /* the next daemon takes it back */
                        p->keep_files = true;
                        spool_keep(p->out[0].spool);
                        spool_keep(p->out[1].spool);
                }
                proc_forget(p);
        }
        json_decref(proc_restored);
        proc_restored = NULL;
        execrec_close();
        free(proc_spool_dir);
        proc_spool_dir = NULL;
        shellstate_shutdown();
}
