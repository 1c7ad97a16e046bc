/* proc.c — exec jobs: the registry (every process, the live ones), references, retention
 * (the gc timer), kill-all and start-up/shutdown. The rest of proc_*.c: see proc_int.h. */
#include "daemon/proc.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/execrec.h"
#include "daemon/log.h"
#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/shellstate.h"
#include "daemon/spool.h"
#include "protocol/util.h"

struct list proc_all = {&proc_all, &proc_all};

/* The processes not yet ended: the per-uid limit is checked on every exec, and walking the
 * thousands of exited processes kept for process.read there would make execs slower as they
 * accumulate. */
struct list proc_live_list = {&proc_live_list, &proc_live_list};

static uv_timer_t proc_gc_timer;

char *proc_spool_dir;

void
proc_ref(struct proc *p)
{
        p->refs++;
}

void
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

void
proc_timer_close_cb(uv_handle_t *h)
{
        proc_unref(h->data);
}

/* Drops a process from the registry: its spools go, and memory once nothing refers to it. */
void
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

bool
proc_live(const struct proc *p)
{
        return p->state < PROC_EXITED;
}

bool
proc_outlives_daemon(const struct proc *p)
{
        return p->persist && !(p->sb->caps & BACKEND_CAP_ENDS_WITH_DAEMON);
}

/* Marks p exited or failed and takes it off the live list. */
void
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
        return LIST_COUNT_UID(&proc_live_list, struct proc, lnode, owner, uid);
}

/* Requests waiting on uid's processes (process.read, process.wait, repeated execs); every
 * uid's for (uid_t) -1. */
unsigned
proc_waiting_uid(uid_t uid)
{
        struct list *pos, *tmp;
        unsigned n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (uid == (uid_t) -1 || p->owner == uid)
                        n += (unsigned) list_count(&p->waiters);
        }
        return n;
}

/* The process uid calls id: its own first (ids chosen by clients are unique per owner only),
 * then, for root, anyone's. */
struct proc *
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
                if (proc_live(p) && p->state >= PROC_STARTING &&
                    (sb ? p->sb == sb : !proc_outlives_daemon(p)))
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
                if (p->state != PROC_RUNNING || (sb ? p->sb != sb : proc_outlives_daemon(p)))
                        continue;
                p->bp->ops->kill(p->bp, (unsigned) g.config->kill_grace_ms, NULL, proc_killed_cb);
        }
        uv_timer_init(g.loop, &k->timer);
        k->timer.data = k;
        uv_timer_start(&k->timer, proc_killall_tick_cb, 0, 20);
}

/* What one uid's exited processes keep: their number, the bytes of what describes them and
 * the bytes of output their spools hold on disk. */
struct proc_uid_count {
        uid_t uid;
        uint64_t exited, desc_bytes, spool_bytes; /* spool_bytes: running execs' too */
};

/* The uids whose spools (running and exited execs) were past max_spool_bytes_per_uid at the
 * last sweep once their exited execs were forgotten: their execs keep no more output. */
static uid_t *proc_spool_full_uids;
static size_t proc_spool_full_n;

/* The counters of uid in counts (grown as needed). */
static struct proc_uid_count *
proc_uid_slot(struct proc_uid_count **counts, size_t *n, uid_t uid)
{
        for (size_t i = 0; i < *n; i++)
                if ((*counts)[i].uid == uid)
                        return &(*counts)[i];
        *counts = xrealloc(*counts, (*n + 1) * sizeof(**counts));
        (*counts)[*n] = (struct proc_uid_count){.uid = uid};
        return &(*counts)[(*n)++];
}

static uint64_t
proc_json_bytes(json_t *j)
{
        const char *k;
        json_t *v;
        size_t i;
        uint64_t n = 0;

        if (json_is_string(j))
                return json_string_length(j);
        json_array_foreach(j, i, v) n += proc_json_bytes(v);
        json_object_foreach(j, k, v) n += strlen(k) + proc_json_bytes(v);
        return n;
}

/* Bytes of what describes p for as long as it is kept (command or argv, env, cwd, tag), the
 * exec journal's copy of it aside; computed once. */
static uint64_t
proc_desc_bytes(struct proc *p)
{
        if (!p->desc_bytes)
                p->desc_bytes = 1 + (p->command ? strlen(p->command) : 0) +
                                proc_json_bytes(p->argv) + proc_json_bytes(p->env) +
                                (p->cwd ? strlen(p->cwd) : 0) + (p->tag ? strlen(p->tag) : 0);
        return p->desc_bytes;
}

static uint64_t
proc_spool_bytes(const struct proc *p)
{
        uint64_t n = 0;

        for (int i = 0; i < 2; i++)
                if (p->out[i].spool)
                        n += spool_kept(p->out[i].spool);
        return n;
}

/* Adds p to (sign 1) or takes it from (sign -1) its owner's counters. */
static void
proc_uid_add(struct proc_uid_count *c, struct proc *p, int sign)
{
        c->exited += (uint64_t) sign;
        c->desc_bytes += (uint64_t) sign * proc_desc_bytes(p);
        c->spool_bytes += (uint64_t) sign * proc_spool_bytes(p);
}

static bool
proc_over(const struct proc_uid_count *c)
{
        return c->exited > g.config->max_exited_per_uid ||
               c->desc_bytes > g.config->max_exited_bytes_per_uid ||
               c->spool_bytes > g.config->max_spool_bytes_per_uid;
}

bool
proc_spool_full(uid_t uid)
{
        for (size_t i = 0; i < proc_spool_full_n; i++)
                if (proc_spool_full_uids[i] == uid)
                        return true;
        return false;
}

/* The spools of c's uid are past max_spool_bytes_per_uid with its exited execs forgotten: its
 * running execs keep no more output, nor do the ones it starts until it is below again. */
static void
proc_spool_stop_uid(const struct proc_uid_count *c)
{
        struct list *pos, *tmp;
        unsigned stopped = 0;
        uint64_t end;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (p->owner != c->uid || p->state == PROC_EXITED)
                        continue;
                for (int i = 0; i < 2; i++) {
                        stopped += p->out[i].spool && !spool_stopped_at(p->out[i].spool, &end);
                        spool_stop(p->out[i].spool);
                }
        }
        if (stopped || !proc_spool_full(c->uid))
                log_warn("uid %u: the spools of its running execs hold %llu bytes, past "
                         "max_spool_bytes_per_uid (%llu): their further output is not kept, nor "
                         "that of its new execs, until they are below it",
                         (unsigned) c->uid, (unsigned long long) c->spool_bytes,
                         (unsigned long long) g.config->max_spool_bytes_per_uid);
}

/* After the evictions: which uids are still past max_spool_bytes_per_uid. */
static void
proc_spool_full_note(const struct proc_uid_count *counts, size_t n)
{
        uid_t *full = NULL;
        size_t nfull = 0;

        for (size_t i = 0; i < n; i++) {
                if (counts[i].spool_bytes <= g.config->max_spool_bytes_per_uid)
                        continue;
                proc_spool_stop_uid(&counts[i]);
                full = xrealloc(full, (nfull + 1) * sizeof(*full));
                full[nfull++] = counts[i].uid;
        }
        free(proc_spool_full_uids);
        proc_spool_full_uids = full;
        proc_spool_full_n = nfull;
}

/* Counts what each uid keeps: its exited processes (forgetting those past
 * exited_retention_s) and the spools of its running ones. */
static struct proc_uid_count *
proc_gc_count(size_t *n)
{
        struct list *pos, *tmp;
        uint64_t now = util_wall_ms();
        struct proc_uid_count *counts = NULL;

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                if (p->state != PROC_EXITED)
                        proc_uid_slot(&counts, n, p->owner)->spool_bytes += proc_spool_bytes(p);
                else if (now - p->ended_wall >= g.config->exited_retention_s * 1000)
                        proc_forget(p);
                else
                        proc_uid_add(proc_uid_slot(&counts, n, p->owner), p, 1);
        }
        return counts;
}

/* Forgets exited processes past exited_retention_s, then the oldest of any uid whose exited
 * processes are more than max_exited_per_uid, or keep more than max_exited_bytes_per_uid of
 * description, or whose spools (running and exited) keep more than max_spool_bytes_per_uid;
 * a uid still past that bound keeps no more output (proc_spool_full_note). Linear: one pass
 * to count, one to evict. */
static void
proc_gc_cb(uv_timer_t *t)
{
        struct list *pos, *tmp;
        size_t n = 0;
        struct proc_uid_count *counts = proc_gc_count(&n);

        LIST_FOREACH_SAFE(pos, tmp, &proc_all)
        {
                struct proc *p = LIST_ENTRY(pos, struct proc, node);
                struct proc_uid_count *c;
                if (p->state != PROC_EXITED)
                        continue;
                c = proc_uid_slot(&counts, &n, p->owner);
                if (proc_over(c)) {
                        proc_uid_add(c, p, -1);
                        proc_forget(p);
                }
        }
        proc_spool_full_note(counts, n);
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
        free(proc_spool_full_uids);
        proc_spool_full_uids = NULL;
        proc_spool_full_n = 0;
        shellstate_shutdown();
}
