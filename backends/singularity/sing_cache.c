/* sing_cache.c — the SIF cache: one file per image reference (CACHE/KEY.sif, KEY the SHA-256
 * of the reference) and an index (CACHE/index.json: reference, size, SHA-256, last use).
 *
 * - Built once: `apptainer build --disable-cache TMP REF` (the tool's own layer cache would
 *   grow without a bound) to a temporary file in the cache directory, checked, digested, then
 *   renamed into place. Creates that want an image being built wait for that build.
 * - Verified before each use: it exists, its header is a SIF header, its size and digest are
 *   the recorded ones. The digest is recomputed whenever the file's identity (device, inode,
 *   size, mtime, ctime — a write always moves ctime) differs from the one this daemon last
 *   verified, so a file purged, truncated or rewritten behind our back is rebuilt, never used.
 * - Capped: after a build and after a release, least-recently-used entries that no sandbox
 *   holds are removed until the total is under the cap; an entry in use is never removed.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/singularity/sing_int.h"
#include "protocol/error.h"

struct centry {
        struct list link;
        char *key, *ref, *file;
        uint64_t size;
        char sha[65];
        uint64_t last_used; /* wall clock, ms */
        int holds;
        bool ready; /* built and recorded */
        /* The identity this daemon last verified the digest of. */
        bool verified;
        dev_t dev;
        ino_t ino;
        int64_t mtime_ns, ctime_ns;
        struct cbuild *build; /* verifying or building, NULL when idle */
};

struct cbuild {
        struct centry *e;
        char *exe, *tmp;
        struct sing_run *run;
        struct list waiters; /* struct sing_cache_get */
        bool building;
};

struct sing_cache_get {
        struct list link;
        void *ctx;
        backend_progress_cb progress;
        sing_image_cb cb;
};

static struct list entries = {&entries, &entries};

static char *
cache_index_path(void)
{
        return xasprintf("%s/index.json", sing.cache_dir);
}

static struct centry *
cache_find(const char *key)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        {
                struct centry *e = LIST_ENTRY(pos, struct centry, link);
                if (!strcmp(e->key, key))
                        return e;
        }
        return NULL;
}

static struct centry *
cache_entry_new(const char *key, const char *ref)
{
        struct centry *e = xcalloc(1, sizeof(*e));

        e->key = xstrdup(key);
        e->ref = xstrdup(ref);
        e->file = xasprintf("%s/%s.sif", sing.cache_dir, key);
        list_add_tail(&entries, &e->link);
        return e;
}

static void
cache_entry_free(struct centry *e)
{
        list_del(&e->link);
        free(e->key);
        free(e->ref);
        free(e->file);
        free(e);
}

/* Writes the index (a temporary file renamed over the old one). */
static void
cache_save(void)
{
        json_t *arr = json_array();
        struct list *pos, *tmp;
        char *path = cache_index_path(), *part = xasprintf("%s.tmp", path);

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        {
                struct centry *e = LIST_ENTRY(pos, struct centry, link);
                if (e->ready)
                        json_array_append_new(
                                arr, json_pack("{s:s,s:s,s:I,s:s,s:I}", "key", e->key, "ref",
                                               e->ref, "size", (json_int_t) e->size, "sha256",
                                               e->sha, "last_used", (json_int_t) e->last_used));
        }
        json_t *doc = json_pack("{s:i,s:o}", "version", 1, "entries", arr);
        if (json_dump_file(doc, part, JSON_COMPACT) < 0 || rename(part, path) < 0)
                unlink(part);
        json_decref(doc);
        free(part);
        free(path);
}

static uint64_t
cache_total(void)
{
        struct list *pos, *tmp;
        uint64_t n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        {
                struct centry *e = LIST_ENTRY(pos, struct centry, link);
                if (e->ready)
                        n += e->size;
        }
        return n;
}

/* Whether e may be removed: recorded, and neither in use nor being looked at. */
static bool
cache_idle(const struct centry *e)
{
        return e->ready && !e->holds && !e->build;
}

static void
cache_remove(struct centry *e)
{
        unlink(e->file);
        cache_entry_free(e);
}

/* Least-recently-used idle entries go until the total is at most cap. */
static json_t *
cache_evict(uint64_t cap)
{
        json_t *removed = json_array();
        uint64_t total = cache_total();

        while (total > cap) {
                struct centry *victim = NULL;
                struct list *pos, *tmp;
                LIST_FOREACH_SAFE(pos, tmp, &entries)
                {
                        struct centry *e = LIST_ENTRY(pos, struct centry, link);
                        if (cache_idle(e) && (!victim || e->last_used < victim->last_used))
                                victim = e;
                }
                if (!victim)
                        break; /* what is left is in use */
                total -= victim->size;
                json_array_append_new(removed, json_string(victim->ref));
                cache_remove(victim);
        }
        if (json_array_size(removed))
                cache_save();
        return removed;
}

/* A file in the cache directory that the index does not know (a build a crash left behind, an
 * entry of an index that was set aside) is removed: it cannot be trusted. */
static void
cache_sweep(void)
{
        uv_fs_t req;
        uv_dirent_t d;

        if (uv_fs_scandir(NULL, &req, sing.cache_dir, 0, NULL) < 0) {
                uv_fs_req_cleanup(&req);
                return;
        }
        while (uv_fs_scandir_next(&req, &d) != UV_EOF) {
                size_t n = strlen(d.name);
                char key[65];
                if (n < 4 || strcmp(d.name + n - 4, ".sif") != 0)
                        continue;
                snprintf(key, sizeof(key), "%.*s", (int) (n - 4), d.name);
                if (d.name[0] == '.' || !cache_find(key)) {
                        char *p = xasprintf("%s/%s", sing.cache_dir, d.name);
                        unlink(p);
                        free(p);
                }
        }
        uv_fs_req_cleanup(&req);
}

static void
cache_load_entry(json_t *j)
{
        const char *key = json_string_value(json_object_get(j, "key"));
        const char *ref = json_string_value(json_object_get(j, "ref"));
        const char *sha = json_string_value(json_object_get(j, "sha256"));
        json_t *size = json_object_get(j, "size");
        struct centry *e;

        if (!key || strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64 || !ref || !sha ||
            strlen(sha) != 64 || !json_is_integer(size) || json_integer_value(size) < 0 ||
            cache_find(key))
                return;
        e = cache_entry_new(key, ref);
        e->size = (uint64_t) json_integer_value(size);
        snprintf(e->sha, sizeof(e->sha), "%s", sha);
        e->last_used = (uint64_t) json_integer_value(json_object_get(j, "last_used"));
        e->ready = true;
}

/* Loads the index; a damaged one is set aside. */
void
sing_cache_init(void)
{
        char *path = cache_index_path();
        json_error_t jerr;
        json_t *doc = json_load_file(path, 0, &jerr), *j;
        size_t i;

        if (!doc && access(path, F_OK) == 0) {
                char *aside = xasprintf("%s.damaged", path);
                rename(path, aside);
                free(aside);
        }
        json_array_foreach(json_object_get(doc, "entries"), i, j) cache_load_entry(j);
        json_decref(doc);
        free(path);
        cache_sweep();
        json_decref(cache_evict(sing.cache_max));
}

/* Forgets the idle entries (files stay); builds in flight are killed, and their completion
 * (with an error for whoever still waits) frees the rest. */
void
sing_cache_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        {
                struct centry *e = LIST_ENTRY(pos, struct centry, link);
                if (!e->build)
                        cache_entry_free(e);
                else if (e->build->run)
                        sing_run_cancel(e->build->run);
        }
}

/* ---- waiting for an image ---- */

static void
cache_progress(struct cbuild *b, const char *phase, const char *msg)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &b->waiters)
        {
                struct sing_cache_get *g = LIST_ENTRY(pos, struct sing_cache_get, link);
                if (g->progress)
                        g->progress(g->ctx, phase, msg, -1, -1);
        }
}

/* Ends a build or verification: every waiter gets the image (held for it) or err. */
static void
cache_finish(struct cbuild *b, const struct sbx_error *err)
{
        struct centry *e = b->e;

        e->build = NULL;
        if (!err) {
                e->last_used = util_wall_ms();
                cache_save();
        }
        while (!list_empty(&b->waiters)) {
                struct sing_cache_get *g = LIST_ENTRY(b->waiters.next, struct sing_cache_get, link);
                list_del(&g->link);
                if (!err)
                        e->holds++;
                g->cb(g->ctx, err ? NULL : e->file, err ? NULL : e->key, err);
                free(g);
        }
        if (b->tmp)
                unlink(b->tmp);
        free(b->tmp);
        free(b->exe);
        free(b);
        if (!e->ready && !e->holds)
                cache_entry_free(e);
        else
                json_decref(cache_evict(sing.cache_max));
}

/* what: a sentence in which the image's reference fits at its start. */
static void
cache_fail(struct cbuild *b, const char *what, const char *why)
{
        struct sbx_error err = {0};
        char *detail = xasprintf("%s: %s: %s", b->e->ref, what, why);

        sbx_error_set(&err, SBX_E_BACKEND,
                      json_pack("{s:s,s:s}", "backend", "singularity", "detail", detail), "%s",
                      detail);
        free(detail);
        cache_finish(b, &err);
        sbx_error_clear(&err);
}

static void
cache_identity(struct centry *e, const struct sing_sif_facts *f)
{
        e->verified = true;
        e->dev = f->dev;
        e->ino = f->ino;
        e->mtime_ns = f->mtime_ns;
        e->ctime_ns = f->ctime_ns;
}

static void cache_build(struct cbuild *b, const char *why);

static void
cache_built_cb(void *ctx, const struct sing_sif_facts *f)
{
        struct cbuild *b = ctx;
        struct centry *e = b->e;
        struct stat st;

        if (f->error[0] || !f->sha256[0]) {
                cache_fail(b, "the SIF built is not valid", f->error);
                return;
        }
        if (rename(b->tmp, e->file) < 0 || stat(e->file, &st) < 0) {
                cache_fail(b, "cannot store the SIF in the cache", strerror(errno));
                return;
        }
        free(b->tmp);
        b->tmp = NULL;
        e->size = f->size;
        memcpy(e->sha, f->sha256, sizeof(e->sha));
        e->ready = true;
        e->verified = true; /* renamed: same inode, but the rename may move ctime */
        e->dev = st.st_dev;
        e->ino = st.st_ino;
        e->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        e->ctime_ns = (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
        cache_finish(b, NULL);
}

static void
cache_line_cb(void *ctx, const char *line)
{
        cache_progress(ctx, "build", line);
}

static void
cache_build_done_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct cbuild *b = ctx;

        b->run = NULL;
        if (code != 0) {
                cache_fail(b, "cannot build a SIF", why[0] ? why : "the build failed");
                return;
        }
        cache_progress(b, "build", "checking the SIF file");
        sing_sif_inspect(b->tmp, true, b, cache_built_cb);
}

static void
cache_build(struct cbuild *b, const char *why)
{
        char rnd[17], *msg;

        util_random_hex(rnd, sizeof(rnd) - 1);
        free(b->tmp);
        b->tmp = xasprintf("%s/.build-%.16s-%s.sif", sing.cache_dir, b->e->key, rnd);
        char *argv[] = {b->exe, "build", "--disable-cache", b->tmp, b->e->ref, NULL};
        msg = xasprintf("building a SIF of %s%s%s", b->e->ref, why ? ": " : "", why ? why : "");
        cache_progress(b, "build", msg);
        free(msg);
        b->building = true;
        b->run = sing_run_start(argv, NULL, 0, sing.build_timeout_ms, cache_line_cb,
                                cache_build_done_cb, b);
}

/* The recorded file is gone or damaged: it is removed and rebuilt. */
static void
cache_rebuild(struct cbuild *b, const char *what, const char *why)
{
        char *msg = xasprintf("the cached SIF of %s %s%s%s: rebuilding it", b->e->ref, what,
                              why ? ": " : "", why ? why : "");

        unlink(b->e->file);
        b->e->ready = false;
        b->e->verified = false;
        cache_save();
        cache_build(b, msg);
        free(msg);
}

static void
cache_hashed_cb(void *ctx, const struct sing_sif_facts *f)
{
        struct cbuild *b = ctx;

        if (f->error[0])
                cache_rebuild(b, "is damaged", f->error);
        else if (f->size != b->e->size || strcmp(f->sha256, b->e->sha) != 0)
                cache_rebuild(b, "differs from the one recorded", "size or SHA-256 changed");
        else {
                cache_identity(b->e, f);
                cache_finish(b, NULL);
        }
}

static void
cache_checked_cb(void *ctx, const struct sing_sif_facts *f)
{
        struct cbuild *b = ctx;
        struct centry *e = b->e;

        if (!f->exists)
                cache_rebuild(b, "is gone", f->error[0] ? f->error : NULL);
        else if (f->error[0])
                cache_rebuild(b, "is damaged", f->error);
        else if (f->size != e->size)
                cache_rebuild(b, "differs from the one recorded", "its size changed");
        else if (e->verified && e->dev == f->dev && e->ino == f->ino &&
                 e->mtime_ns == f->mtime_ns && e->ctime_ns == f->ctime_ns)
                cache_finish(b, NULL); /* unchanged since we digested it */
        else
                sing_sif_inspect(e->file, true, b, cache_hashed_cb);
}

/* Finds, verifies or builds an image. */
struct sing_cache_get *
sing_cache_get(const char *exe, const char *ref, void *ctx, backend_progress_cb progress,
               sing_image_cb cb)
{
        struct sing_cache_get *g = xcalloc(1, sizeof(*g));
        char key[65];
        struct centry *e;
        struct cbuild *b;

        g->ctx = ctx;
        g->progress = progress;
        g->cb = cb;
        sha256_hex(ref, strlen(ref), key);
        e = cache_find(key);
        if (!e)
                e = cache_entry_new(key, ref);
        if (e->build) {
                list_add_tail(&e->build->waiters, &g->link);
                if (progress)
                        progress(ctx, "build",
                                 e->build->building
                                         ? "waiting for the SIF build of this image that "
                                           "another create started"
                                         : "waiting for the check of the cached SIF",
                                 -1, -1);
                return g;
        }
        b = xcalloc(1, sizeof(*b));
        list_init(&b->waiters);
        list_add_tail(&b->waiters, &g->link);
        b->e = e;
        b->exe = xstrdup(exe);
        e->build = b;
        if (e->ready)
                sing_sif_inspect(e->file, false, b, cache_checked_cb);
        else
                cache_build(b, NULL);
        return g;
}

/* Abandons a wait (the build goes on for the others, and for the cache). */
void
sing_cache_get_cancel(struct sing_cache_get *g)
{
        struct sbx_error err = {0};

        list_del(&g->link);
        sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "cancelled"),
                      "the create was cancelled");
        g->cb(g->ctx, NULL, NULL, &err);
        sbx_error_clear(&err);
        free(g);
}

/* Holds an entry (a re-adopted sandbox uses it). */
void
sing_cache_hold(const char *key)
{
        struct centry *e = key ? cache_find(key) : NULL;

        if (e) {
                e->holds++;
                e->last_used = util_wall_ms();
        }
}

/* Releases an entry. */
void
sing_cache_release(const char *key)
{
        struct centry *e = key ? cache_find(key) : NULL;

        if (!e || e->holds <= 0)
                return;
        e->holds--;
        e->last_used = util_wall_ms();
        cache_save();
        json_decref(cache_evict(sing.cache_max));
}

/* Sizes for backend.list. */
void
sing_cache_details(json_t *details)
{
        struct list *pos, *tmp;
        int n = 0;

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        n += LIST_ENTRY(pos, struct centry, link)->ready;
        json_object_set_new(details, "cache_dir", json_string(sing.cache_dir));
        json_object_set_new(details, "cache_bytes", json_integer((json_int_t) cache_total()));
        json_object_set_new(details, "cache_cap_bytes", json_integer((json_int_t) sing.cache_max));
        json_object_set_new(details, "cache_entries", json_integer(n));
}

/* The entries, after an optional prune. */
json_t *
sing_cache_list(bool prune, bool all)
{
        json_t *out = json_object(), *arr = json_array();
        json_t *removed = prune ? cache_evict(all ? 0 : sing.cache_max) : json_array();
        struct list *pos, *tmp;
        char when[40];

        LIST_FOREACH_SAFE(pos, tmp, &entries)
        {
                struct centry *e = LIST_ENTRY(pos, struct centry, link);
                if (!e->ready)
                        continue;
                util_rfc3339(e->last_used, when, sizeof(when));
                json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:s,s:s,s:b}", "image", e->ref,
                                                     "file", e->file, "bytes", (json_int_t) e->size,
                                                     "sha256", e->sha, "last_used", when, "in_use",
                                                     e->holds > 0));
        }
        sing_cache_details(out);
        json_object_set_new(out, "entries", arr);
        json_object_set_new(out, "removed", removed);
        return out;
}
