/* daytona_orphans.c — at start-up, this daemon instance's sandboxes that no record names:
 * deleted, or stopped when persistent (those are parked for a create by name, not orphans). */
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define REAP_LIST_PAGES 50

struct reap {
        int pending, removed;
        unsigned pages;
        char **known;
        char *query;
        void *ctx;
        void (*cb)(void *ctx, int removed, const struct sbx_error *err);
        struct sbx_error err;
};

static void reap_page(struct reap *r, const char *cursor);

static void
reap_finish(struct reap *r)
{
        if (--r->pending > 0)
                return;
        r->cb(r->ctx, r->removed, r->err.code ? &r->err : NULL);
        sbx_error_clear(&r->err);
        for (char **k = r->known; k && *k; k++)
                free(*k);
        free(r->known);
        free(r->query);
        free(r);
}

static void
reap_removed_cb(void *ctx, const struct daytona_res *res)
{
        struct reap *r = ctx;

        if (res->status / 100 == 2)
                r->removed++;
        else if (res->status != 404 && res->status != 400 && !r->err.code)
                daytona_error(&r->err, "remove an orphan sandbox", res, false);
        reap_finish(r);
}

static bool
reap_known(char **known, const char *id)
{
        for (; known && *known; known++)
                if (id && !strcmp(*known, id))
                        return true;
        return false;
}

/* One listed sandbox: unknown ones go (persistent ones are stopped if running). */
static void
reap_one(struct reap *r, json_t *o)
{
        json_t *l = json_object_get(o, "labels");
        const char *sid = json_string_value(json_object_get(l, "sandboxd.sandbox"));
        const char *id = json_string_value(json_object_get(o, "id"));
        const char *state = json_string_value(json_object_get(o, "state")), *phase;
        bool parked = json_is_string(json_object_get(l, "sandboxd.persistent"));
        struct daytona_req q = {.method = parked ? "POST" : "DELETE", .idempotent = true};
        enum daytona_class cl = daytona_state_class(state, &phase);

        if (!daytona_id_ok(id) || reap_known(r->known, sid) || (parked && cl != DAYTONA_RUNNING) ||
            cl == DAYTONA_GONE)
                return;
        r->pending++;
        daytona_send(&q,
                     parked ? daytona_api_url("/sandbox/%s/stop", id)
                            : daytona_api_url("/sandbox/%s", id),
                     reap_removed_cb, r, NULL);
}

static void
reap_list_cb(void *ctx, const struct daytona_res *res)
{
        struct reap *r = ctx;
        const char *next = json_string_value(json_object_get(res->body, "nextCursor"));
        json_t *o;
        size_t i;

        if (res->status != 200) {
                if (!r->err.code)
                        daytona_error(&r->err, "list sandboxes", res, false);
                reap_finish(r);
                return;
        }
        json_array_foreach(json_object_get(res->body, "items"), i, o) reap_one(r, o);
        if (next && *next && ++r->pages < REAP_LIST_PAGES)
                reap_page(r, next);
        reap_finish(r);
}

static void
reap_page(struct reap *r, const char *cursor)
{
        struct daytona_req q = {.idempotent = true};
        char *c = cursor ? http_escape(cursor) : NULL;
        char *url = c ? daytona_api_url("/sandbox?labels=%s&limit=100&cursor=%s", r->query, c)
                      : daytona_api_url("/sandbox?labels=%s&limit=100", r->query);

        r->pending++;
        daytona_send(&q, url, reap_list_cb, r, NULL);
        free(c);
}

/* Removes this daemon's sandboxes that belong to no known sandbox. */
void
daytona_reap_orphans(const char *const *known_ids, void *ctx,
                     void (*cb)(void *ctx, int removed, const struct sbx_error *err))
{
        struct reap *r = xcalloc(1, sizeof(*r));
        json_t *f = json_pack("{s:s}", "sandboxd", "1");
        size_t n = 0;
        char *js;

        r->ctx = ctx;
        r->cb = cb;
        r->pending = 1;
        if (!daytona.initialised || !daytona.auth) {
                reap_finish(r);
                json_decref(f);
                return;
        }
        while (known_ids && known_ids[n])
                n++;
        r->known = xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                r->known[i] = xstrdup(known_ids[i]);
        if (daytona.instance)
                json_object_set_new(f, "sandboxd.instance", json_string(daytona.instance));
        js = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
        r->query = http_escape(js);
        free(js);
        json_decref(f);
        reap_page(r, NULL);
        reap_finish(r);
}

/* ---- resume at exec time ---- */
