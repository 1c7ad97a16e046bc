/* records.c — sandbox records in the state directory, re-adoption and orphan removal at start. */
#include "daemon/records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/proc.h"
#include "daemon/sandbox.h"
#include "daemon/statefile.h"
#include "protocol/util.h"

#define RECORDS_FILE "sandboxes.json"
/* Records read at start-up; more are dropped with a warning (a limit on what the file holds). */
#define RECORDS_MAX        4096
#define RECORDS_MAX_GROUPS 65536
/* READY=1 does not wait longer than this for re-adoption (a hung dockerd); it goes on. */
#define RECORDS_DEADLINE_MS 15000

static json_t *records_kept; /* records whose backend could not be reached at start (array) */
static json_t *records_last; /* what the file holds now, to skip writes that change nothing */
static bool records_restoring;
static bool records_final;

struct records_restore {
        unsigned pending;
        bool done_called;
        void (*done)(void *ctx);
        void *ctx;
        uv_timer_t deadline;
};

struct records_one {
        struct records_restore *rs;
        json_t *entry;
        char id[24];
};

static char *
records_path(void)
{
        return xasprintf("%s/" RECORDS_FILE, g.state_dir);
}

/* The record of one sandbox (new), or NULL when it is not to be recorded. */
static json_t *
records_entry(struct sandbox *sb)
{
        json_t *groups, *rec, *e;
        char ts[40];

        if (sb->state != SANDBOX_READY || !sb->bsb || !sandbox_persistent(sb))
                return NULL;
        rec = sb->ops->save(sb->bsb);
        if (!rec)
                return NULL;
        groups = json_array();
        for (size_t i = 0; i < sb->who.ngroups; i++)
                json_array_append_new(groups, json_integer((json_int_t) sb->who.groups[i]));
        util_rfc3339(sb->created_wall_ms, ts, sizeof(ts));
        e = json_pack("{s:s,s:s,s:s,s:{s:I,s:I,s:o},s:O,s:b,s:s,s:I,s:o}", "id", sb->id, "name",
                      sb->name, "backend", sb->ops->name, "owner", "uid", (json_int_t) sb->owner,
                      "gid", (json_int_t) sb->who.gid, "groups", groups, "spec", sb->spec,
                      "host_access", sb->host_access, "created_at", ts, "created_ms",
                      (json_int_t) sb->created_wall_ms, "record", rec);
        json_object_set_new(e, "findings", sb->findings ? json_incref(sb->findings) : json_array());
        return e;
}

static void
records_collect_cb(struct sandbox *sb, void *ctx)
{
        json_t *e = records_entry(sb);

        if (e)
                json_array_append_new(ctx, e);
}

/* Writes the file when its content changes. */
static void
records_write(void)
{
        json_t *list = json_array(), *doc;
        struct sbx_error err = {0};
        char *path;

        sandbox_foreach(records_collect_cb, list);
        if (records_kept)
                json_array_extend(list, records_kept);
        doc = json_pack("{s:o}", "sandboxes", list);
        if (records_last && json_equal(doc, records_last)) {
                json_decref(doc);
                return;
        }
        path = records_path();
        if (statefile_save(path, doc, &err) < 0) {
                log_warn("sandbox records not saved (a restart will not re-adopt these "
                         "sandboxes): %s",
                         err.message);
                sbx_error_clear(&err);
                json_decref(doc);
        } else {
                json_decref(records_last);
                records_last = doc;
        }
        free(path);
}

/* Saves unless restoring or stopping. */
void
records_save(void)
{
        if (records_restoring || records_final || g.stopping)
                return;
        records_write();
}

/* The shutdown's save. */
void
records_save_final(void)
{
        if (records_final)
                return;
        records_final = true;
        records_write();
}

/* Frees what is kept. */
void
records_shutdown(void)
{
        json_decref(records_kept);
        json_decref(records_last);
        records_kept = NULL;
        records_last = NULL;
}

/* [backend.NAME] recreate: anything but a clear "false" keeps the default (true); the backend
 * rejects malformed values at start-up. */
bool
records_recreate_enabled(const struct backend_ops *ops)
{
        static const char *const no[] = {"false", "no", "off", "0"};
        json_t *v = json_object_get(config_backend(g.config, ops->name), "recreate");
        const char *s = json_string_value(v);

        if (json_is_boolean(v))
                return json_is_true(v);
        for (size_t i = 0; s && i < ARRAY_SIZE(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return false;
        return true;
}

/* ---- restore ---- */

static bool
records_id_ok(const char *id)
{
        size_t n = id ? strlen(id) : 0;

        return n > 4 && n < 24 && strncmp(id, "sbx_", 4) == 0 &&
               strspn(id + 4, "0123456789abcdef") == n - 4;
}

static bool
records_name_ok(const char *name)
{
        size_t n = name ? strlen(name) : 0;

        return n > 0 && n <= 128 &&
               strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                       n;
}

static bool
records_uint32(json_t *v)
{
        return json_is_integer(v) && json_integer_value(v) >= 0 &&
               json_integer_value(v) < (json_int_t) UINT32_MAX;
}

/* Reads the owner's groups (new array in *ret); false when malformed. */
static bool
records_groups(json_t *a, gid_t **ret, size_t *n)
{
        json_t *v;
        size_t i;

        *ret = NULL;
        *n = 0;
        if (!json_is_array(a) || json_array_size(a) > RECORDS_MAX_GROUPS)
                return false;
        *ret = xcalloc(json_array_size(a) + 1, sizeof(gid_t));
        json_array_foreach(a, i, v)
        {
                if (!records_uint32(v))
                        return false;
                (*ret)[i] = (gid_t) json_integer_value(v);
        }
        *n = json_array_size(a);
        return true;
}

/* Checks one entry and fills r (borrowing from e); NULL, or what is wrong with it. */
static const char *
records_parse(json_t *e, struct sandbox_record *r, gid_t **groups)
{
        json_t *owner = json_object_get(e, "owner"), *f = json_object_get(e, "findings");
        json_t *created = json_object_get(e, "created_ms");
        const char *backend = json_string_value(json_object_get(e, "backend"));

        memset(r, 0, sizeof(*r));
        *groups = NULL;
        r->id = json_string_value(json_object_get(e, "id"));
        r->name = json_string_value(json_object_get(e, "name"));
        r->ops = backend ? backend_lookup(backend) : NULL;
        r->spec = json_object_get(e, "spec");
        r->record = json_object_get(e, "record");
        if (!records_id_ok(r->id) || !records_name_ok(r->name))
                return "bad id or name";
        if (!r->ops || !r->ops->adopt)
                return "its backend cannot re-adopt sandboxes";
        if (!json_is_object(r->spec) || !json_is_object(r->record) || (f && !json_is_array(f)))
                return "bad spec, record or findings";
        if (!records_uint32(json_object_get(owner, "uid")) ||
            !records_uint32(json_object_get(owner, "gid")) ||
            !records_groups(json_object_get(owner, "groups"), groups, &r->ngroups))
                return "bad owner";
        if (!json_is_integer(created) || json_integer_value(created) < 0)
                return "bad created_ms";
        r->uid = (uid_t) json_integer_value(json_object_get(owner, "uid"));
        r->gid = (gid_t) json_integer_value(json_object_get(owner, "gid"));
        r->groups = *groups;
        r->findings = f;
        r->host_access = json_is_true(json_object_get(e, "host_access"));
        r->created_wall_ms = (uint64_t) json_integer_value(created);
        if (sandbox_find(0, r->id) || sandbox_find(r->uid, r->name))
                return "a sandbox of that id or name exists already";
        return NULL;
}

static void
records_deadline_close_cb(uv_handle_t *h)
{
        free(h->data);
}

static void
records_call_done(struct records_restore *rs)
{
        if (rs->done_called)
                return;
        rs->done_called = true;
        rs->done(rs->ctx);
}

static void
records_finish(struct records_restore *rs)
{
        uv_timer_stop(&rs->deadline);
        records_call_done(rs);
        uv_close((uv_handle_t *) &rs->deadline, records_deadline_close_cb);
}

static void
records_deadline_cb(uv_timer_t *t)
{
        log_warn("re-adopting recorded sandboxes takes longer than %d s: ready anyway, it goes on",
                 RECORDS_DEADLINE_MS / 1000);
        records_call_done(t->data);
}

/* Orphan removal: one per backend that can do it, after its probe says it is available. */
struct records_reap {
        struct records_restore *rs;
        const struct backend_ops *ops;
};

static void
records_reap_step(struct records_restore *rs)
{
        if (--rs->pending == 0)
                records_finish(rs);
}

static void
records_reaped_cb(void *ctx, int removed, const struct sbx_error *err)
{
        struct records_reap *rp = ctx;

        if (err)
                log_warn("%s: removing orphan sandboxes: %s", rp->ops->name, err->message);
        if (removed > 0)
                log_info("%s: removed %d orphan sandbox%s of this daemon (no sandbox record)",
                         rp->ops->name, removed, removed == 1 ? "" : "es");
        records_reap_step(rp->rs);
        free(rp);
}

struct records_known {
        const struct backend_ops *ops;
        const char **ids;
        size_t n;
};

static void
records_known_cb(struct sandbox *sb, void *ctx)
{
        struct records_known *k = ctx;

        if (sb->ops == k->ops && sb->state != SANDBOX_GONE)
                k->ids[k->n++] = sb->id;
}

/* Removes this daemon's sandboxes on one backend that belong to no known sandbox. */
static void
records_probed_cb(void *ctx, bool available, const char *reason, const char *hint, json_t *details)
{
        struct records_reap *rp = ctx;
        struct records_known k = {rp->ops, NULL, 0};
        json_t *e;
        size_t i;

        json_decref(details);
        if (!available) {
                log_info("%s backend unavailable (%s): orphan sandboxes not looked for",
                         rp->ops->name, reason ? reason : "no reason given");
                records_reap_step(rp->rs);
                free(rp);
                return;
        }
        k.ids = xcalloc(sandbox_count() + json_array_size(records_kept) + 1, sizeof(*k.ids));
        sandbox_foreach(records_known_cb, &k);
        /* Sandboxes of records we could not adopt now are not orphans. */
        json_array_foreach(records_kept, i, e)
        {
                if (!strcmp(json_string_value(json_object_get(e, "backend")) ?: "", rp->ops->name))
                        k.ids[k.n++] = json_string_value(json_object_get(e, "id"));
        }
        rp->ops->reap_orphans(k.ids, rp, records_reaped_cb);
        free(k.ids);
}

/* Probes every backend that can reap orphans, and reaps on those available. */
static void
records_reap_all(struct records_restore *rs)
{
        rs->pending = 1;
        for (const struct backend_ops *const *b = backend_all(); *b; b++) {
                struct records_reap *rp;
                if (!(*b)->reap_orphans || !(*b)->probe)
                        continue;
                rp = xcalloc(1, sizeof(*rp));
                rp->rs = rs;
                rp->ops = *b;
                rs->pending++;
                (*b)->probe(rp, records_probed_cb);
        }
        records_reap_step(rs);
}

/* Exec records of sandboxes that are gone go; those of records kept for later stay. */
static void
records_finish_execs(void)
{
        const char **kept = xcalloc(json_array_size(records_kept) + 1, sizeof(*kept));
        size_t i, n = 0;
        json_t *e;

        json_array_foreach(records_kept, i, e)
        {
                const char *id = json_string_value(json_object_get(e, "id"));
                if (id)
                        kept[n++] = id;
        }
        proc_restore_finish(kept);
        free(kept);
}

/* One adoption finished; after the last, saves and looks for orphans in every backend. */
static void
records_step(struct records_restore *rs)
{
        if (--rs->pending > 0)
                return;
        records_restoring = false;
        records_write();
        records_finish_execs();
        records_reap_all(rs);
}

static void
records_adopted_cb(void *ctx, struct sandbox *sb, struct sbx_error *err)
{
        struct records_one *o = ctx;

        if (!err) {
                log_info("sandbox %s ('%s', %s, uid %u) re-adopted", sb->id, sb->name,
                         sb->ops->name, (unsigned) sb->owner);
                proc_restore_sandbox(sb); /* and the execs that ran in it */
        } else if (err->code == SBX_E_UNUSABLE) {
                log_info("sandbox %s: record dropped, it cannot be re-adopted: %s", o->id,
                         err->message);
        } else {
                log_warn("sandbox %s: cannot re-adopt it now (%s); its record is kept for the next "
                         "start",
                         o->id, err->message);
                json_array_append(records_kept, o->entry);
        }
        json_decref(o->entry);
        records_step(o->rs);
        free(o);
}

/* Starts the adoption of one entry of the file. */
static void
records_adopt_one(struct records_restore *rs, json_t *e, size_t idx)
{
        struct sandbox_record r;
        struct records_one *o;
        gid_t *groups = NULL;
        const char *why = records_parse(e, &r, &groups);

        if (why) {
                log_warn("sandbox record %zu (%s) dropped: %s", idx,
                         json_string_value(json_object_get(e, "id")) ?: "no id", why);
                free(groups);
                return;
        }
        o = xcalloc(1, sizeof(*o));
        o->rs = rs;
        o->entry = json_incref(e);
        snprintf(o->id, sizeof(o->id), "%s", r.id);
        rs->pending++;
        sandbox_adopt(&r, records_adopted_cb, o);
        free(groups);
}

/* Loads the records and re-adopts them. */
void
records_restore(void (*done)(void *ctx), void *ctx)
{
        struct records_restore *rs = xcalloc(1, sizeof(*rs));
        char *path = records_path(), *warning = NULL;
        json_t *doc = NULL, *list, *e;
        size_t i;

        rs->done = done;
        rs->ctx = ctx;
        rs->pending = 1;
        uv_timer_init(g.loop, &rs->deadline);
        rs->deadline.data = rs;
        uv_timer_start(&rs->deadline, records_deadline_cb, RECORDS_DEADLINE_MS, 0);
        records_kept = json_array();
        records_restoring = true;
        proc_restore_load();
        statefile_load(path, &doc, &warning);
        if (warning)
                log_warn("%s", warning);
        list = json_object_get(doc, "sandboxes");
        if (list && !json_is_array(list))
                log_warn("%s: \"sandboxes\" is not an array: no sandbox re-adopted", path);
        if (json_array_size(list) > RECORDS_MAX)
                log_warn("%s: %zu records, only the first %d are read", path, json_array_size(list),
                         RECORDS_MAX);
        /* What is on disk now: a save that would write the same is skipped. */
        if (!warning && (!list || json_is_array(list)))
                records_last =
                        json_pack("{s:o}", "sandboxes", list ? json_incref(list) : json_array());
        json_array_foreach(list, i, e)
        {
                if (i >= RECORDS_MAX)
                        break;
                records_adopt_one(rs, e, i);
        }
        json_decref(doc);
        free(path);
        free(warning);
        records_step(rs);
}
