/* hostpaths.c — host paths resolved as the caller, off the loop (hostpaths.h). */
#include "daemon/hostpaths.h"

#include <stdlib.h>

#include "backends/caller_file.h"
#include "daemon/config.h"
#include "daemon/conn.h"
#include "daemon/daemon.h"
#include "protocol/list.h"
#include "protocol/util.h"

/* The outcome of resolving a request's paths: paths (borrowed for the call), path -> where it
 * leads or null (the caller cannot reach it), with every wanted path in it; or err (paths
 * NULL; the callee may move it), naming the path that did not answer and the cause, or the
 * limit the request would pass. */
typedef void (*hostpaths_cb)(void *ctx, json_t *paths, struct sbx_error *err);

struct hostpaths {
        json_t *paths;
        struct sbx_error err; /* the first failure */
        size_t pending;
        struct conn *conn;       /* referenced, NULL: no client (a recreate) */
        struct conn_watch watch; /* on conn while lookups wait: a client gone ends them */
        bool gone;               /* it went */
        void *ctx;
        hostpaths_cb cb;
};

/* One path's job. */
struct hostpath_one {
        struct hostpaths *h;
        char *path;
        uid_t uid; /* whose lookup it is */
        struct caller_job *job;
        struct list node; /* in hostpaths_pending, or hostpaths_ending once aborted */
};

/* Every path being resolved (what counts for max_path_lookups_per_uid), and those whose client
 * went (their helpers killed, their callbacks due from the loop): both for hostpaths_shutdown. */
static struct list hostpaths_pending = {&hostpaths_pending, &hostpaths_pending};
static struct list hostpaths_ending = {&hostpaths_ending, &hostpaths_ending};

static void
hostpaths_done(struct hostpaths *h)
{
        if (--h->pending)
                return;
        conn_watch_del(&h->watch);
        h->cb(h->ctx, h->err.code ? NULL : h->paths, h->err.code ? &h->err : NULL);
        if (h->conn)
                conn_unref(h->conn);
        json_decref(h->paths);
        sbx_error_clear(&h->err);
        free(h);
}

/* The client went: each lookup's helper is killed now and its slot is free at once; the
 * callbacks follow from the loop (not from inside conn_close, whose watch list the request's
 * failure may change). */
static void
hostpaths_conn_closed_cb(struct conn_watch *w)
{
        struct hostpaths *h = LIST_ENTRY(w, struct hostpaths, watch);
        struct list *pos, *tmp;

        list_init(&w->node); /* unlinked by conn already */
        h->gone = true;
        LIST_FOREACH_SAFE(pos, tmp, &hostpaths_pending)
        {
                struct hostpath_one *o = LIST_ENTRY(pos, struct hostpath_one, node);
                if (o->h != h)
                        continue;
                list_del(&o->node);
                list_add_tail(&hostpaths_ending, &o->node);
                caller_job_abort(o->job, "its client disconnected");
        }
}

static unsigned
hostpaths_timeout_ms(void)
{
        return (unsigned) (g.config->file_timeout_s ? g.config->file_timeout_s : 1) * 1000;
}

static void
hostpath_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct hostpath_one *o = ctx;
        struct hostpaths *h = o->h;
        unsigned max;

        (void) is_dir;
        list_del(&o->node);
        if (error && !h->err.code && caller_job_refused(o->job, &max))
                sbx_error_limit(&h->err, "max_helpers_per_uid", (long long) max, "%s", error);
        else if (error && h->gone && !h->err.code)
                sbx_error_set(&h->err, SBX_E_BACKEND, NULL,
                              "host path '%s' was not resolved: the client disconnected", o->path);
        else if (error && !h->err.code)
                sbx_error_set(&h->err, SBX_E_BACKEND, NULL,
                              "host path '%s' did not answer within %llu s: a hung mount? name "
                              "another path (%s; [limits] file_timeout_s)",
                              o->path, (unsigned long long) g.config->file_timeout_s, error);
        else if (!error)
                json_object_set_new(h->paths, o->path, real ? json_string(real) : json_null());
        free(o->path);
        free(o);
        hostpaths_done(h);
}

static void hostpaths_resolve(json_t *wanted, struct conn *c, const struct backend_identity *who,
                              void *ctx, hostpaths_cb cb);

struct hostpaths_judging {
        hostpaths_eval_fn eval;
        hostpaths_judged_fn done;
        void *ctx;
};

static void
hostpaths_judged(void *ctx, json_t *paths, struct sbx_error *err)
{
        struct hostpaths_judging *j = ctx;
        struct policy_result r = {0};

        if (err) {
                j->done(j->ctx, NULL, NULL, err);
        } else {
                j->eval(j->ctx, paths, NULL, &r);
                j->done(j->ctx, &r, paths, NULL);
                policy_result_clear(&r);
        }
        free(j);
}

/* The error of a request whose host paths were not resolved. */
void
hostpaths_fail(struct sbx_error *out, struct sbx_error *err, const char *backend, const char *what)
{
        sbx_error_move(out, err);
        if (out->code == SBX_E_BACKEND && !out->data && backend)
                out->data = json_pack("{s:s,s:s}", "backend", backend, "detail", out->message);
        sbx_error_prefix(out, "cannot judge %s", what);
}

/* Judges with the host paths resolved first. */
void
hostpaths_judge(struct conn *c, const struct backend_identity *who, hostpaths_eval_fn eval,
                hostpaths_judged_fn done, void *ctx)
{
        json_t *none = json_object(), *wanted = json_object();
        struct policy_result r = {0};
        struct hostpaths_judging *j;

        eval(ctx, none, wanted, &r);
        if (!json_object_size(wanted)) { /* nothing looked up: that was the judgement */
                json_decref(wanted);
                done(ctx, &r, none, NULL);
                policy_result_clear(&r);
                json_decref(none);
                return;
        }
        json_decref(none);
        policy_result_clear(&r);
        j = xcalloc(1, sizeof(*j));
        *j = (struct hostpaths_judging){eval, done, ctx};
        hostpaths_resolve(wanted, c, who, j, hostpaths_judged);
        json_decref(wanted);
}

/* Whether uid may start n more lookups: 0, or -1 with err set (-32004). */
static int
hostpaths_budget(uid_t uid, size_t n, struct sbx_error *err)
{
        unsigned busy = LIST_COUNT_UID(&hostpaths_pending, struct hostpath_one, node, uid, uid);
        uint64_t max = g.config->max_path_lookups_per_uid;

        if (busy + n <= max)
                return 0;
        sbx_error_limit(err, "max_path_lookups_per_uid", (long long) max,
                        "limit reached: %u host path lookups of uid %u are in flight and this "
                        "request names %zu more; at most %llu at a time ([limits] "
                        "max_path_lookups_per_uid): wait for the others to end (within [limits] "
                        "file_timeout_s) or name fewer",
                        busy, (unsigned) uid, n, (unsigned long long) max);
        return -1;
}

/* Resolves each path of wanted (object whose keys are absolute paths, borrowed) as who, for
 * c's client (may be NULL). cb is called exactly once: at once when there is nothing to
 * resolve (or too much, or the client is gone), else from the loop. */
static void
hostpaths_resolve(json_t *wanted, struct conn *c, const struct backend_identity *who, void *ctx,
                  hostpaths_cb cb)
{
        struct hostpaths *h = xcalloc(1, sizeof(*h));
        /* A root caller of a root daemon: the daemon's rights are the caller's. */
        const struct backend_identity *as = who->uid == 0 ? NULL : who;
        const char *path;
        json_t *w;

        *h = (struct hostpaths){
                .paths = json_object(), .pending = 1, .conn = c, .ctx = ctx, .cb = cb};
        list_init(&h->watch.node);
        if (c)
                conn_ref(c);
        if (c && conn_closing(c))
                sbx_error_set(&h->err, SBX_E_BACKEND, NULL,
                              "the host paths were not resolved: the client disconnected");
        else if (json_object_size(wanted) > HOSTPATHS_MAX)
                sbx_error_limit(&h->err, "host_paths_per_request", HOSTPATHS_MAX,
                                "limit reached: the request names %zu host paths; at most %d "
                                "are resolved for one request: name fewer",
                                json_object_size(wanted), HOSTPATHS_MAX);
        else
                hostpaths_budget(who->uid, json_object_size(wanted), &h->err);
        json_object_foreach(wanted, path, w)
        {
                if (h->err.code)
                        break;
                struct hostpath_one *o = xcalloc(1, sizeof(*o));
                *o = (struct hostpath_one){.h = h, .path = xstrdup(path), .uid = who->uid};
                h->pending++;
                list_add_tail(&hostpaths_pending, &o->node);
                o->job = caller_path_resolve_nearest(g.loop, as, o->path, hostpaths_timeout_ms(), o,
                                                     hostpath_cb);
        }
        if (c && h->pending > 1) {
                h->watch.on_close = hostpaths_conn_closed_cb;
                conn_watch_add(c, &h->watch);
        }
        /* The first reference: a request with nothing to resolve is answered at once. */
        hostpaths_done(h);
}

static void
hostpaths_end_all(struct list *l)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, l)
        {
                struct hostpath_one *o = LIST_ENTRY(pos, struct hostpath_one, node);
                caller_job_cancel(o->job);
                hostpath_cb(o, NULL, false, "the daemon is stopping");
        }
}

/* The daemon stops: every resolution still waiting ends now, failed (its helper killed). */
void
hostpaths_shutdown(void)
{
        hostpaths_end_all(&hostpaths_pending);
        hostpaths_end_all(&hostpaths_ending);
}
