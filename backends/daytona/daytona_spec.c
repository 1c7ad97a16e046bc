/* daytona_spec.c — what a sandbox.create spec asks of Daytona: the POST /sandbox body (labels,
 * intervals, image or snapshot, resources, network), checked against what Daytona can do. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define SPEC_MINUTES_MAX 525600 /* a year */

static const char *const spec_keys[] = {
        "target",    "snapshot", "auto_stop_minutes", "auto_archive_minutes", "auto_delete_minutes",
        "persistent"};

/* An image or snapshot reference: plain characters only (a newline would add Dockerfile
 * lines to the one-line buildInfo). */
static bool
spec_ref_ok(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        return n > 0 && n <= 255 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@-") ==
                       n;
}

static void
spec_uid(const struct sandbox_spec *spec, char out[32])
{
        snprintf(out, 32, "%u", spec->owner ? (unsigned) spec->owner->uid : 0u);
}

/* The client's labels, then ours. */
static json_t *
spec_labels(const struct sandbox_spec *spec, bool persistent)
{
        json_t *l = json_deep_copy(spec->labels);
        char uid[32];

        spec_uid(spec, uid);
        json_object_set_new(l, "sandboxd", json_string("1"));
        json_object_set_new(l, "sandboxd.owner", json_string(uid));
        json_object_set_new(l, "sandboxd.sandbox", json_string(spec->id));
        json_object_set_new(l, "sandboxd.name", json_string(spec->name ? spec->name : spec->id));
        if (daytona.instance)
                json_object_set_new(l, "sandboxd.instance", json_string(daytona.instance));
        if (persistent)
                json_object_set_new(l, "sandboxd.persistent", json_string("1"));
        return l;
}

/* The section's integer key within [lo, hi]; absent: dflt. */
static int
spec_int(json_t *sec, const char *key, int64_t lo, int64_t hi, int64_t dflt, int64_t *out,
         struct sbx_error *err)
{
        json_t *v = json_object_get(sec, key);

        *out = dflt;
        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
                sbx_error_param(err, "daytona",
                                "invalid params: 'daytona.%s' must be an integer from %lld to "
                                "%lld",
                                key, (long long) lo, (long long) hi);
                return -EINVAL;
        }
        *out = json_integer_value(v);
        return 0;
}

/* Unknown keys of the section and a non-boolean persistent are refused. */
static int
spec_section(json_t *sec, bool *persistent, struct sbx_error *err)
{
        json_t *v;
        const char *k;

        json_object_foreach(sec, k, v)
        {
                bool known = false;
                for (size_t i = 0; i < ARRAY_SIZE(spec_keys); i++)
                        known |= !strcmp(k, spec_keys[i]);
                if (!known) {
                        sbx_error_param(err, "daytona",
                                        "invalid params: unknown key 'daytona.%s' (known: "
                                        "target, snapshot, auto_stop_minutes, "
                                        "auto_archive_minutes, auto_delete_minutes, persistent)",
                                        k);
                        return -EINVAL;
                }
        }
        v = json_object_get(sec, "persistent");
        if (v && !json_is_boolean(v)) {
                sbx_error_param(err, "daytona",
                                "invalid params: 'daytona.persistent' must be true or false");
                return -EINVAL;
        }
        *persistent = v ? json_is_true(v) : daytona.persistent;
        return 0;
}

/* Auto-stop, -archive and -delete minutes; 0 (never stop) only when the operator allows it. */
static int
spec_intervals(json_t *sec, bool persistent, json_t *body, struct sbx_error *err)
{
        int64_t cap = daytona.max_auto_stop ? daytona.max_auto_stop : SPEC_MINUTES_MAX;
        int64_t lo = daytona.max_auto_stop ? 1 : 0, stop, archive, del;
        json_t *asked = json_object_get(sec, "auto_stop_minutes");

        if (spec_int(sec, "auto_stop_minutes", lo, cap, daytona.auto_stop, &stop, err) < 0) {
                if (json_is_integer(asked) && json_integer_value(asked) == 0)
                        sbx_error_param(err, "daytona",
                                        "invalid params: 'daytona.auto_stop_minutes' 0 (never "
                                        "stop) is not allowed: forgotten sandboxes would run "
                                        "forever; the operator allows 1 to %lld ([backend.daytona] "
                                        "max_auto_stop_minutes; 0 there lifts the cap)",
                                        (long long) cap);
                return -EINVAL;
        }
        if (spec_int(sec, "auto_archive_minutes", 0, SPEC_MINUTES_MAX, daytona.auto_archive,
                     &archive, err) < 0 ||
            spec_int(sec, "auto_delete_minutes", -1, SPEC_MINUTES_MAX,
                     persistent ? -1 : daytona.auto_delete, &del, err) < 0)
                return -EINVAL;
        json_object_set_new(body, "autoStopInterval", json_integer(stop));
        json_object_set_new(body, "autoArchiveInterval", json_integer(archive));
        json_object_set_new(body, "autoDeleteInterval", json_integer(del));
        return 0;
}

static void
spec_resources(const struct sandbox_spec *spec, json_t *body)
{
        if (spec->res.cpus > 0) {
                json_int_t cores = (json_int_t) spec->res.cpus; /* whole cores, rounded up */
                json_object_set_new(body, "cpu",
                                    json_integer(cores + ((double) cores < spec->res.cpus)));
        }
        if (spec->res.memory_mb)
                json_object_set_new(body, "memory",
                                    json_integer((spec->res.memory_mb + 1023) / 1024));
        if (spec->res.disk_mb)
                json_object_set_new(body, "disk", json_integer((spec->res.disk_mb + 1023) / 1024));
}

/* Image (as a one-line Dockerfile) or snapshot, and the resources, which Daytona honours only
 * with an image (a snapshot fixes its own). */
static int
spec_source(const struct sandbox_spec *spec, json_t *sec, struct daytona_spec *out,
            struct sbx_error *err)
{
        const char *snap = json_string_value(json_object_get(sec, "snapshot"));
        const char *image = spec->image;
        bool res = spec->res.cpus > 0 || spec->res.memory_mb || spec->res.disk_mb;

        if (image && snap) {
                sbx_error_param(err, "image",
                                "invalid params: give 'image' or 'daytona.snapshot', not both");
                return -EINVAL;
        }
        if (!image && !snap) {
                image = daytona.image;
                snap = image ? NULL : daytona.snapshot;
        }
        if ((image && !spec_ref_ok(image)) || (snap && !spec_ref_ok(snap))) {
                sbx_error_param(err, image ? "image" : "daytona",
                                "invalid params: '%s' is not an image or snapshot reference "
                                "(letters, digits and ._/:@- only)",
                                image ? image : snap);
                return -EINVAL;
        }
        if (res && !image) {
                sbx_error_param(err, "resources",
                                "invalid params: Daytona takes the resources of a snapshot "
                                "from the snapshot; give an 'image' to set them");
                return -EINVAL;
        }
        if (snap)
                json_object_set_new(out->body, "snapshot", json_string(snap));
        if (image) {
                char *df = xasprintf("FROM %s\n", image);
                json_object_set_new(out->body, "buildInfo",
                                    json_pack("{s:s}", "dockerfileContent", df));
                free(df);
        }
        out->image = image;
        out->snapshot = snap;
        spec_resources(spec, out->body);
        return 0;
}

/* Network and region; mounts are refused (nothing of the host reaches a cloud sandbox). */
static int
spec_placement(const struct sandbox_spec *spec, json_t *sec, json_t *body, struct sbx_error *err)
{
        const char *target = json_string_value(json_object_get(sec, "target"));
        const char *net = spec->network ? spec->network : daytona.network;

        if (json_array_size(spec->mounts)) {
                sbx_error_param(err, "mounts",
                                "invalid params: the daytona backend mounts nothing (no host "
                                "paths reach a cloud sandbox; Daytona volumes are not supported "
                                "yet)");
                return -EINVAL;
        }
        if (strcmp(net, "none") && strcmp(net, "bridge")) {
                sbx_error_param(err, "network",
                                "invalid params: network '%s' is not available on daytona "
                                "(none or bridge)",
                                net);
                return -EINVAL;
        }
        if (target && !daytona_id_ok(target)) {
                sbx_error_param(err, "daytona",
                                "invalid params: 'daytona.target' is not a region name");
                return -EINVAL;
        }
        target = target ? target : daytona.target;
        if (target)
                json_object_set_new(body, "target", json_string(target));
        json_object_set_new(body, "networkBlockAll", json_boolean(!strcmp(net, "none")));
        return 0;
}

/* The POST /sandbox body of a spec. */
int
daytona_spec_build(const struct sandbox_spec *spec, struct daytona_spec *out, struct sbx_error *err)
{
        json_t *sec = spec->section;

        memset(out, 0, sizeof(*out));
        out->body = json_object();
        if (spec_section(sec, &out->persistent, err) < 0 ||
            spec_placement(spec, sec, out->body, err) < 0 ||
            spec_intervals(sec, out->persistent, out->body, err) < 0 ||
            spec_source(spec, sec, out, err) < 0) {
                json_decref(out->body);
                out->body = NULL;
                return -EINVAL;
        }
        out->labels = spec_labels(spec, out->persistent);
        json_object_set(out->body, "labels", out->labels);
        json_object_set_new(out->body, "name", json_sprintf("sandboxd-%s", spec->id));
        return 0;
}

/* What of the resources Daytona enforces (new). */
json_t *
daytona_spec_enforced(const struct sandbox_spec *spec)
{
        json_t *e = json_object();

        if (spec->res.cpus > 0)
                json_object_set_new(e, "cpus", json_string("daytona"));
        if (spec->res.memory_mb)
                json_object_set_new(e, "memory_mb", json_string("daytona"));
        if (spec->res.disk_mb)
                json_object_set_new(e, "disk_mb", json_string("daytona"));
        if (spec->res.pids)
                json_object_set_new(e, "pids", json_null());
        return e;
}

/* The URL-escaped label filter of a parked (persistent) sandbox of this owner and name. */
char *
daytona_spec_parked_query(const struct sandbox_spec *spec)
{
        json_t *f = json_pack("{s:s,s:s,s:s}", "sandboxd", "1", "sandboxd.persistent", "1",
                              "sandboxd.name", spec->name ? spec->name : spec->id);
        char uid[32], *js, *q;

        spec_uid(spec, uid);
        json_object_set_new(f, "sandboxd.owner", json_string(uid));
        if (daytona.instance)
                json_object_set_new(f, "sandboxd.instance", json_string(daytona.instance));
        js = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
        q = http_escape(js);
        free(js);
        json_decref(f);
        return q;
}
