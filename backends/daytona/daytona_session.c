/* daytona_session.c — the pool of toolbox sessions of a sandbox.
 *
 * A session's shell runs its commands one after another, and a command is over for it only
 * when its exit code file exists, which can be long after sandboxd saw the command's end
 * markers (a background process may hold its output open). So every exec takes a session of
 * its own: an idle one, else a new one; after the exec the session drains (its command is
 * looked at with backoff until the exit code shows) before it is idle again. At most
 * DAYTONA_POOL_IDLE idle sessions are kept, and a session is replaced after DAYTONA_POOL_USES
 * commands so its log directory in the sandbox does not grow without bound.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_cmd.h"
#include "backends/daytona/daytona_int.h"

#define SESSION_POLL_FIRST_MS 20
#define SESSION_POLL_MAX_MS   2000
#define SESSION_POLL_SLOW_MS  30000
#define SESSION_POLL_SLOW_AT  64  /* polls before the slow pace */
#define SESSION_POLL_GIVE_UP  200 /* polls before the session is forgotten */
#define SPENT_BATCH           32  /* ended execs whose files go with one rm */

static void session_check(struct daytona_session *s);

static void
session_free_cb(uv_handle_t *h)
{
        struct daytona_session *s = h->data;

        daytona_sandbox_unref(s->sb);
        free(s->id);
        free(s->cmd_id);
        free(s);
}

static struct daytona_session *
session_new(struct backend_sandbox *sb, const char *id)
{
        struct daytona_session *s = xcalloc(1, sizeof(*s));

        s->id = xstrdup(id);
        s->sb = sb;
        s->gen = sb->gen;
        list_init(&s->link);
        uv_timer_init(daytona.loop, &s->timer);
        s->timer.data = s;
        s->timer_init = true;
        daytona_sandbox_ref(sb);
        return s;
}

/* Frees a session without telling Daytona: its shell stays idle in the sandbox, or is gone. */
static void
session_forget(struct daytona_session *s)
{
        list_del(&s->link);
        if (s->call)
                daytona_call_cancel(s->call);
        s->call = NULL;
        uv_timer_stop(&s->timer);
        uv_close((uv_handle_t *) &s->timer, session_free_cb);
}

static void
session_deleted_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_session *s = ctx;

        s->call = NULL;
        session_forget(s);
}

/* Deletes a session whose command is over (DELETE /process/session/{id}); its guard file goes
 * with the next spent files. */
static void
session_delete(struct daytona_session *s)
{
        struct daytona_req r = {.method = "DELETE", .idempotent = true};

        list_del(&s->link);
        daytona_sandbox_spent(s->sb, s->id);
        daytona_send(&r, daytona_tb_url(s->sb, "/process/session/%s", s->id), session_deleted_cb, s,
                     &s->call);
}

/* The command is over: the session is idle again, or replaced. */
static void
session_idle(struct daytona_session *s)
{
        struct backend_sandbox *sb = s->sb;

        list_del(&s->link);
        if (sb->destroyed || s->gen != sb->gen) {
                session_forget(s);
                return;
        }
        if (s->uses >= DAYTONA_POOL_USES) {
                session_delete(s);
                return;
        }
        if (list_count(&sb->idle) >= DAYTONA_POOL_IDLE) {
                session_forget(s);
                return;
        }
        list_add_tail(&sb->idle, &s->link);
}

static void
session_timer_cb(uv_timer_t *t)
{
        session_check(t->data);
}

static void
session_later(struct daytona_session *s)
{
        uint64_t d = SESSION_POLL_FIRST_MS << MIN(s->polls, 7u);

        if (++s->polls > SESSION_POLL_GIVE_UP) {
                session_forget(s); /* a background process keeps it: leave it be */
                return;
        }
        d = s->polls > SESSION_POLL_SLOW_AT ? SESSION_POLL_SLOW_MS : MIN(d, SESSION_POLL_MAX_MS);
        uv_timer_start(&s->timer, session_timer_cb, d, 0);
}

static void
session_checked_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_session *s = ctx;

        s->call = NULL;
        if (res->status == 200 && json_is_integer(json_object_get(res->body, "exitCode")))
                session_idle(s);
        else if (res->status == 200)
                session_later(s);
        else
                session_forget(s); /* gone (404), or the toolbox is unwell */
}

/* GET /process/session/{id}/command/{cmd}: has the exit code been written? */
static void
session_check(struct daytona_session *s)
{
        struct daytona_req r = {.idempotent = true};

        daytona_send(&r, daytona_tb_url(s->sb, "/process/session/%s/command/%s", s->id, s->cmd_id),
                     session_checked_cb, s, &s->call);
}

/* Gives a session back after its command (cmd_id NULL: it ran none). */
void
daytona_session_put(struct daytona_session *s, const char *cmd_id, bool healthy)
{
        struct backend_sandbox *sb = s->sb;

        if (!healthy || sb->destroyed || s->gen != sb->gen) {
                session_forget(s);
                return;
        }
        if (!cmd_id) {
                list_add_tail(&sb->idle, &s->link);
                session_idle(s);
                return;
        }
        s->uses++;
        s->polls = 0;
        free(s->cmd_id);
        s->cmd_id = xstrdup(cmd_id);
        list_add_tail(&sb->draining, &s->link);
        session_check(s);
}

static void
spent_removed_cb(void *ctx, const struct daytona_res *res)
{
        struct backend_sandbox *sb = ctx;

        /* A failure leaves a few empty files in the sandbox; nothing to tell anyone. */
        sb->cleanup_call = NULL;
        daytona_sandbox_unref(sb);
}

/* Remembers an ended exec (or a deleted session: its guard file); every SPENT_BATCH of them,
 * one rm in the sandbox. */
void
daytona_sandbox_spent(struct backend_sandbox *sb, const char *exec_id)
{
        struct daytona_req r = {.method = "POST", .idempotent = true};
        const char **ids;
        json_t *body, *v;
        char *cmd;
        size_t i;

        if (sb->destroyed)
                return;
        if (!sb->spent)
                sb->spent = json_array();
        json_array_append_new(sb->spent, json_string(exec_id));
        if (json_array_size(sb->spent) < SPENT_BATCH || sb->cleanup_call)
                return;
        ids = xcalloc(json_array_size(sb->spent) + 1, sizeof(*ids));
        json_array_foreach(sb->spent, i, v) ids[i] = json_string_value(v);
        cmd = daytona_cmd_cleanup(daytona.remote_dir, ids);
        body = json_pack("{s:s}", "command", cmd);
        r.json = body;
        json_array_clear(sb->spent);
        daytona_sandbox_ref(sb); /* the cleanup's */
        daytona_send(&r, daytona_tb_url(sb, "/process/execute"), spent_removed_cb, sb,
                     &sb->cleanup_call);
        json_decref(body);
        free(cmd);
        free(ids);
}

/* Forgets every pooled session (the toolbox restarted, or the sandbox goes). */
void
daytona_sandbox_forget_sessions(struct backend_sandbox *sb)
{
        sb->gen++;
        while (!list_empty(&sb->idle))
                session_forget(LIST_ENTRY(sb->idle.next, struct daytona_session, link));
        while (!list_empty(&sb->draining))
                session_forget(LIST_ENTRY(sb->draining.next, struct daytona_session, link));
}

struct daytona_session_req {
        struct daytona_session *s;
        void *ctx;
        daytona_session_cb cb; /* NULL: cancelled */
};

static void
session_created_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_session_req *n = ctx;
        struct sbx_error err = {0};
        bool ok = res->status / 100 == 2 || res->status == 409;

        /* 409: it exists, so an attempt without a clear answer made it (the id is random). */
        n->s->call = NULL;
        if (ok && n->cb) {
                n->cb(n->ctx, n->s, NULL);
        } else if (ok) {
                daytona_session_put(n->s, NULL, true);
        } else {
                daytona_error(&err, "create a toolbox session", res, false);
                session_forget(n->s);
                if (n->cb)
                        n->cb(n->ctx, NULL, &err);
                sbx_error_clear(&err);
        }
        free(n);
}

/* No callback for this request any more. */
void
daytona_session_cancel(struct daytona_session_req *req)
{
        if (req)
                req->cb = NULL;
}

/* An idle session, or a new one (POST /process/session {sessionId}). */
struct daytona_session_req *
daytona_session_get(struct backend_sandbox *sb, void *ctx, daytona_session_cb cb)
{
        struct daytona_req r = {.method = "POST", .idempotent = true};
        struct daytona_session_req *n;
        char rnd[17], *url, *id;
        json_t *body;

        if (!list_empty(&sb->idle)) {
                struct daytona_session *s = LIST_ENTRY(sb->idle.next, struct daytona_session, link);
                list_del(&s->link);
                cb(ctx, s, NULL);
                return NULL;
        }
        util_random_hex(rnd, 16);
        id = xasprintf("sandboxd-%s", rnd);
        n = xcalloc(1, sizeof(*n));
        n->s = session_new(sb, id);
        n->ctx = ctx;
        n->cb = cb;
        body = json_pack("{s:s}", "sessionId", id);
        url = daytona_tb_url(sb, "/process/session");
        r.url = url;
        r.json = body;
        if (daytona_call(&r, session_created_cb, n, &n->s->call) < 0) {
                struct daytona_res res = {.terr = "cannot start an API request"};
                session_created_cb(n, &res);
                n = NULL;
        }
        json_decref(body);
        free(url);
        free(id);
        return n;
}

/* A session of a previous daemon that an adopted exec's command runs in: it joins the pool
 * once that command is over (daytona_session_put). */
struct daytona_session *
daytona_session_adopt(struct backend_sandbox *sb, const char *id)
{
        return session_new(sb, id);
}

struct session_sweep {
        struct backend_sandbox *sb; /* referenced */
        char **keep;                /* NULL-terminated */
};

static bool
session_known(struct session_sweep *w, const char *id)
{
        struct list *lists[] = {&w->sb->idle, &w->sb->draining};

        for (char **k = w->keep; *k; k++)
                if (!strcmp(*k, id))
                        return true;
        for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
                for (struct list *l = lists[i]->next; l != lists[i]; l = l->next)
                        if (!strcmp(LIST_ENTRY(l, struct daytona_session, link)->id, id))
                                return true;
        return false;
}

/* Whether every command of a session is over (its exit code shows). */
static bool
session_quiet(json_t *s)
{
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(s, "commands"), i, c)
        {
                if (!json_is_integer(json_object_get(c, "exitCode")))
                        return false;
        }
        return true;
}

static void
session_swept_cb(void *ctx, const struct daytona_res *res)
{
        daytona_sandbox_unref(ctx);
}

static void
session_listed_cb(void *ctx, const struct daytona_res *res)
{
        struct session_sweep *w = ctx;
        json_t *s;
        size_t i;

        /* A failure leaves idle shells in the sandbox until it goes; nothing to tell anyone. */
        json_array_foreach(res->status == 200 ? res->body : NULL, i, s)
        {
                const char *id = json_string_value(json_object_get(s, "sessionId"));
                struct daytona_req r = {.method = "DELETE", .idempotent = true};
                if (!daytona_id_ok(id) || strncmp(id, "sandboxd-", 9) || session_known(w, id) ||
                    !session_quiet(s) || w->sb->destroyed)
                        continue;
                daytona_sandbox_spent(w->sb, id);
                daytona_sandbox_ref(w->sb);
                daytona_send(&r, daytona_tb_url(w->sb, "/process/session/%s", id), session_swept_cb,
                             w->sb, NULL);
        }
        for (char **k = w->keep; *k; k++)
                free(*k);
        free(w->keep);
        daytona_sandbox_unref(w->sb);
        free(w);
}

/* Deletes the sandbox's sandboxd sessions that are in neither keep (NULL-terminated) nor the
 * pool and whose commands are all over: the idle pool of a previous daemon. A session with a
 * command still running is left alone (an exec no record names; it ends on its own). */
void
daytona_session_sweep(struct backend_sandbox *sb, const char *const *keep)
{
        struct daytona_req r = {.idempotent = true};
        struct session_sweep *w;
        size_t n = 0;

        if (sb->destroyed)
                return;
        w = xcalloc(1, sizeof(*w));
        while (keep[n])
                n++;
        w->keep = xcalloc(n + 1, sizeof(*w->keep));
        for (size_t i = 0; i < n; i++)
                w->keep[i] = xstrdup(keep[i]);
        w->sb = sb;
        daytona_sandbox_ref(sb);
        daytona_send(&r, daytona_tb_url(sb, "/process/session"), session_listed_cb, w, NULL);
}
