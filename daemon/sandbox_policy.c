/* sandbox_policy.c — the policy context of sandbox.create specs (see sandbox_policy.h). */
#include "daemon/sandbox_policy.h"

#include <string.h>

#include "backends/backend.h"
#include "backends/docker/docker.h"
#include "daemon/config.h"
#include "daemon/daemon.h"

/* Whether uid is neither root nor the daemon's own uid. */
bool
sandbox_policy_unprivileged(uid_t uid)
{
        return uid != 0 && uid != g.uid;
}

static const char *
docker_key(const char *key)
{
        const char *v = json_string_value(json_object_get(config_backend(g.config, "docker"), key));

        return v && *v ? v : NULL;
}

/* What dockerd's host offers: the daemon's, or for a dockerd on another host what its GET
 * /info said (until it has answered: 1 CPU and no memory, so the defaults are the least). */
static const struct policy_host *
docker_host(void)
{
        static struct policy_host h;

        h = *config_host();
        return docker_remote_host(&h) ? &h : config_host();
}

/* The maxima of [backend.docker], parsed anew (the config may have been reloaded). */
const struct policy_docker_limits *
sandbox_policy_docker_limits(void)
{
        static struct policy_docker_limits l;
        struct sbx_error err = {0};

        /* checked at load; should it fail now (a remote host smaller than an explicit key
         * allows), l is all zeros: every request is refused */
        policy_docker_limits_parse(config_backend(g.config, "docker"), docker_host(), &l, &err);
        sbx_error_clear(&err);
        return &l;
}

/* The defaults the operator set for what a docker spec leaves out (pids_limit, memory), as
 * resources.*, whether its image may be pulled, and whether it must carry its name. */
void
sandbox_policy_docker_spec(struct sandbox_spec *s, const struct backend_identity *who)
{
        const struct policy_docker_limits *l = sandbox_policy_docker_limits();
        json_t *hc = json_object_get(s->section, "host_config");

        if (!s->res.pids && !json_object_get(hc, "PidsLimit"))
                s->res.pids = l->pids;
        if (!s->res.memory_mb && !json_object_get(hc, "Memory") &&
            !json_object_get(hc, "MemorySwap"))
                s->res.memory_mb = l->memory >> 20;
        s->no_pull = sandbox_policy_unprivileged(who->uid) && !l->allow_pull;
        s->image_named = sandbox_policy_unprivileged(who->uid);
}

/* Fills ctx for judging a spec. */
void
sandbox_policy_ctx(struct policy_ctx *ctx, const char *backend, const struct backend_identity *who,
                   json_t *spec)
{
        const struct backend_ops *ops;
        uid_t uid = who->uid;

        memset(ctx, 0, sizeof(*ctx));
        ctx->backend = backend;
        ops = backend ? backend_lookup(backend) : NULL;
        /* Not for an unknown backend: host access would make the workdir a workspace below.
         * The sandbox's own caps: a local one has host access only with isolation "none". */
        ctx->host_access = ops && (backend_caps(ops, spec) & BACKEND_CAP_HOST);
        ctx->home = who->home;
        ctx->protected_paths = g.protected_paths;
        /* The workdir is a host path only for the local backend; in a container it is the
         * container's, and a client-chosen "workspace" would let it bind any host path
         * without being asked. */
        if (ctx->host_access)
                ctx->workspace = json_string_value(json_object_get(spec, "workdir"));
        ctx->unprivileged = sandbox_policy_unprivileged(uid);
        ctx->caller_uid = (unsigned) uid;
        ctx->unchecked_fields = docker_key("unchecked_host_config_fields");
        ctx->volume_drivers = docker_key("volume_drivers");
        ctx->runtime = docker_key("runtime");
        ctx->docker_limits = sandbox_policy_docker_limits();
        sandbox_policy_resolve_as(ctx, who);
}

/* Host paths are resolved as the caller could resolve them, unless it is root or the daemon's
 * uid (whose rights the daemon has anyway). */
void
sandbox_policy_resolve_as(struct policy_ctx *ctx, const struct backend_identity *who)
{
        ctx->resolve_as = sandbox_policy_unprivileged(who->uid);
        ctx->caller_root = who->uid == 0;
        ctx->who = (struct policy_who){
                .uid = who->uid, .gid = who->gid, .groups = who->groups, .ngroups = who->ngroups};
}

static json_t *
list_json(const char *list)
{
        json_t *a = json_array();

        for (const char *p = list; p && *p;) {
                p += strspn(p, ", \t");
                size_t l = strcspn(p, ", \t");
                if (l)
                        json_array_append_new(a, json_stringn(p, l));
                p += l;
        }
        return a;
}

/* The operator's additions, for backend.list. */
json_t *
sandbox_policy_operator(const char *backend)
{
        if (strcmp(backend, "docker") != 0)
                return NULL;
        return json_pack("{s:o,s:o,s:s?}", "unchecked_host_config_fields",
                         list_json(docker_key("unchecked_host_config_fields")), "volume_drivers",
                         list_json(docker_key("volume_drivers")), "runtime", docker_key("runtime"));
}

/* ---- backend.list: what applies to the caller for docker ---- */

static json_t *
ulimits_json(const struct policy_docker_limits *l)
{
        json_t *o = json_object();

        for (size_t i = 0; i < POLICY_ULIMITS; i++)
                if (l->ulimit_max[i] != POLICY_ULIMIT_REFUSED)
                        json_object_set_new(o, policy_docker_ulimit_name(i),
                                            l->ulimit_max[i] < 0 ? json_string("unlimited")
                                                                 : json_integer(l->ulimit_max[i]));
        return o;
}

/* The maxima and the defaults (sizes in bytes, CPUs as a number; max_disk null: refused). */
static json_t *
docker_limits_json(const struct policy_docker_limits *l)
{
        return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:o,s:o}", "pids_limit",
                         (json_int_t) l->pids, "max_pids", (json_int_t) l->max_pids,
                         "max_pids_per_user", (json_int_t) l->max_pids_user, "memory",
                         (json_int_t) l->memory, "max_memory", (json_int_t) l->max_memory,
                         "max_memory_per_user", (json_int_t) l->max_memory_user, "max_cpus",
                         (double) l->max_nano_cpus / 1e9, "max_cpu_shares",
                         (json_int_t) l->max_cpu_shares, "max_blkio_weight",
                         (json_int_t) l->max_blkio_weight, "max_disk",
                         l->max_disk ? json_integer(l->max_disk) : json_null(), "max_ulimits",
                         ulimits_json(l));
}

/* Why the caller's containers run as the image's user, or NULL when they run as the caller. */
static const char *
docker_root_why(const struct backend_identity *who, json_t *remap)
{
        if (!sandbox_policy_unprivileged(who->uid))
                return "root or the daemon's user";
        if (backend_identity_listed(docker_key("root_users"), docker_key("root_groups"), who))
                return "root_users";
        return json_is_true(remap) ? "userns_remap" : NULL;
}

/* Who the caller's containers run as: "caller" (its uid:gid, no capabilities) or "image" (the
 * image's user or docker.user, root unless they say otherwise), why, and whether uid 0 in them
 * is host root (null while dockerd has not said whether it remaps users). */
static void
docker_runs_as(json_t *o, const struct backend_identity *who, json_t *remap)
{
        const char *why = docker_root_why(who, remap);

        if (!why) {
                json_object_set_new(o, "runs_as", json_string("caller"));
                json_object_set_new(
                        o, "user", json_sprintf("%u:%u", (unsigned) who->uid, (unsigned) who->gid));
                return;
        }
        json_object_set_new(o, "runs_as", json_string("image"));
        json_object_set_new(o, "because", json_string(why));
        json_object_set_new(o, "host_root",
                            json_is_boolean(remap) ? json_boolean(!json_is_true(remap))
                                                   : json_null());
}

/* What applies to who for docker, for backend.list (new object; details borrowed: the probe's,
 * with userns_remap): the maxima and defaults, whether it may pull, the images it may use
 * (null: any), and who its containers run as. */
json_t *
sandbox_policy_docker_caller(const struct backend_identity *who, json_t *details)
{
        const struct policy_docker_limits *l = sandbox_policy_docker_limits();
        bool unpriv = sandbox_policy_unprivileged(who->uid);
        json_t *o = json_pack("{s:I,s:b,s:o,s:b,s:o}", "uid", (json_int_t) who->uid, "unprivileged",
                              unpriv, "limits", docker_limits_json(l), "allow_pull",
                              !unpriv || l->allow_pull, "images",
                              unpriv ? list_json(l->images) : json_null());

        docker_runs_as(o, who, json_object_get(details, "userns_remap"));
        return o;
}
