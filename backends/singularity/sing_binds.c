/* sing_binds.c — the host paths a singularity spec binds (mounts[] binds, singularity.binds),
 * resolved after the approval, right before the instance is made: each in a helper
 * (caller_path_resolve), off the loop, bounded by [limits] file_timeout_s. What the instance
 * binds is where a source led then, judged again (create_recheck); a source below a mount that
 * never answers fails the create with -32005 instead of stalling the daemon. The helpers run as
 * the daemon's user, which is the owner's: the backend makes sandboxes for nobody else
 * (create_usable). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/caller_file.h"
#include "backends/singularity/sing_int.h"

struct sing_bind_one {
        struct sing_binds *b;
        char *src;
        struct caller_job *job; /* NULL once answered */
};

struct sing_binds {
        struct sing_bind_one *v;
        size_t n, pending;
        json_t *paths;
        struct sbx_error err; /* the first source that did not answer */
        void *ctx;
        sing_binds_cb cb;
};

/* The sources spec binds (new object: source as written -> null). */
static json_t *
binds_sources(const struct sandbox_spec *spec)
{
        json_t *out = json_object(), *m;
        size_t i;

        json_array_foreach(spec->mounts, i, m)
        {
                const char *type = json_string_value(json_object_get(m, "type"));
                const char *src = json_string_value(json_object_get(m, "source"));
                if (type && !strcmp(type, "bind") && src && src[0] == '/')
                        json_object_set_new(out, src, json_null());
        }
        json_array_foreach(json_object_get(spec->section, "binds"), i, m)
        {
                const char *s = json_string_value(m);
                char *src = s ? xstrndup(s, strcspn(s, ":")) : NULL;
                if (src && src[0] == '/')
                        json_object_set_new(out, src, json_null());
                free(src);
        }
        return out;
}

/* Sets err to -32005 for a host path whose helper did not answer (why: caller_path_cb's). */
void
sing_hung_path(struct sbx_error *err, const char *path, const char *why)
{
        sbx_error_backend(err, "singularity",
                          "host path '%s' did not answer within %llu s: a hung mount? name "
                          "another path (%s; [limits] file_timeout_s)",
                          path, (unsigned long long) (sing.file_timeout_ms / 1000), why);
}

/* Frees b, telling its callback first when tell (the last lookup answered). */
static void
binds_end(struct sing_binds *b, bool tell)
{
        if (tell && b->err.code)
                b->cb(b->ctx, NULL, &b->err);
        else if (tell)
                b->cb(b->ctx, b->paths, NULL);
        while (b->n--)
                free(b->v[b->n].src);
        free(b->v);
        json_decref(b->paths);
        sbx_error_clear(&b->err);
        free(b);
}

static void
binds_resolved_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct sing_bind_one *o = ctx;
        struct sing_binds *b = o->b;

        (void) is_dir;
        o->job = NULL;
        if (error && !b->err.code)
                sing_hung_path(&b->err, o->src, error);
        else if (!error)
                json_object_set_new(b->paths, o->src, real ? json_string(real) : json_null());
        if (--b->pending == 0)
                binds_end(b, true);
}

/* Resolves spec's bind sources. */
struct sing_binds *
sing_binds_resolve(const struct sandbox_spec *spec, void *ctx, sing_binds_cb cb)
{
        json_t *sources = binds_sources(spec), *v;
        size_t n = json_object_size(sources);
        struct sing_binds *b;
        const char *src;

        if (!n) {
                json_decref(sources);
                return NULL;
        }
        b = xcalloc(1, sizeof(*b));
        *b = (struct sing_binds){.v = xcalloc(n, sizeof(*b->v)),
                                 .pending = n,
                                 .paths = json_object(),
                                 .ctx = ctx,
                                 .cb = cb};
        json_object_foreach(sources, src, v)
        {
                struct sing_bind_one *o = &b->v[b->n++];
                o->b = b;
                o->src = xstrdup(src);
                /* As the daemon's user, the owner's (create_usable); never calls back at once. */
                o->job = caller_path_resolve(sing.loop, NULL, o->src,
                                             (unsigned) sing.file_timeout_ms, o, binds_resolved_cb);
        }
        json_decref(sources);
        return b;
}

/* Abandons the lookups: their helpers are killed, no callback follows. */
void
sing_binds_cancel(struct sing_binds *b)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->v[i].job)
                        caller_job_cancel(b->v[i].job);
        binds_end(b, false);
}
