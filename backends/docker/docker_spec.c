/* docker_spec.c — what a sandbox.create spec asks of Docker: the POST /containers/create body
 * (hardened HostConfig, mounts, labels, the agent as the container's init), the limits
 * docker enforces, and the read-back that judges the created container again. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/docker/docker_int.h"
#include "policy/policy.h"

/* Capabilities added back after CapDrop ALL: what root inside a container needs to own and
 * write files (package managers), switch to an unprivileged user, and signal that user's
 * processes. Everything else (NET_RAW, MKNOD, SYS_CHROOT, AUDIT_WRITE, SETFCAP, …) stays off. */
static const char *const docker_cap_add[] = {"CHOWN",  "DAC_OVERRIDE", "FOWNER", "FSETID",
                                             "SETUID", "SETGID",       "KILL"};

/* The resources.* limits docker enforces for spec (new object, for sandbox_info.enforced). */
json_t *
docker_create_enforced(const struct sandbox_spec *spec)
{
        json_t *e = json_object();

        if (spec->res.memory_mb)
                json_object_set_new(e, "memory_mb", json_string("docker"));
        if (spec->res.cpus > 0)
                json_object_set_new(e, "cpus", json_string("docker"));
        json_object_set_new(e, "pids", json_string("docker"));
        if (spec->res.disk_mb)
                json_object_set_new(e, "disk_mb", json_null());
        return e;
}

/* ---- create: the container body ---- */

/* One mount of the spec; a bind's source is where the policy saw it lead (paths: the spec's
 * host_paths, resolved as the caller before the judgement): never resolved again here. */
static int
docker_mount(struct docker_create *c, json_t *m, json_t *paths, json_t *out, struct sbx_error *err)
{
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *src = json_string_value(json_object_get(m, "source"));
        const char *dst = json_string_value(json_object_get(m, "target"));
        bool ro = json_is_true(json_object_get(m, "readonly"));

        if (!type || !dst || dst[0] != '/') {
                sbx_error_param(err, "mounts", "each mount needs a type and an absolute target");
                return -EINVAL;
        }
        if (strcmp(type, "tmpfs") == 0) {
                json_array_append_new(out, json_pack("{s:s,s:s,s:b}", "Type", "tmpfs", "Target",
                                                     dst, "ReadOnly", ro));
                return 0;
        }
        if (!src || (strcmp(type, "bind") != 0 && strcmp(type, "volume") != 0)) {
                sbx_error_param(err, "mounts", "mount of %s: bad type or no source", dst);
                return -EINVAL;
        }
        if (strcmp(type, "bind") == 0 && !c->preview) {
                char *key = policy_host_path_key(src);
                json_t *r = json_object_get(paths, key ? key : "");
                free(key);
                if (!json_is_string(r)) { /* fail closed: it was not judged as it resolves */
                        sbx_error_param(err, "mounts",
                                        "bind source '%s' was not resolved as the caller before "
                                        "the judgement",
                                        src);
                        return -EINVAL;
                }
                src = json_string_value(r);
                json_object_set_new(c->approved, dst, json_string(src));
        }
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:b}", "Type", type, "Source", src,
                                             "Target", dst, "ReadOnly", ro));
        return 0;
}

/* Volumes Docker creates for a sandbox carry its owner's uid: an unprivileged caller may mount
 * only volumes with its own (policy/container_mounts.c). */
static void
docker_label_volumes(json_t *mounts, const struct sandbox_spec *spec)
{
        json_t *m, *vo, *labels;
        size_t i;

        json_array_foreach(mounts, i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                if (!t || strcmp(t, "volume") != 0)
                        continue;
                if (!json_is_object(vo = json_object_get(m, "VolumeOptions")))
                        json_object_set_new(m, "VolumeOptions", vo = json_object());
                if (!json_is_object(labels = json_object_get(vo, "Labels")))
                        json_object_set_new(vo, "Labels", labels = json_object());
                json_object_set_new(
                        labels, "sandboxd.owner",
                        json_sprintf("%u", spec->owner ? (unsigned) spec->owner->uid : 0u));
        }
}

/* The HostConfig keys that carry a resource limit the sandbox reports as enforced by
 * docker: docker.host_config may not set them when the spec's resources do. */
static const struct {
        const char *resource;
        const char *key;
} docker_res_keys[] = {
        {"memory_mb", "Memory"}, {"memory_mb", "MemorySwap"}, {"cpus", "NanoCpus"},
        {"cpus", "CpuQuota"},    {"cpus", "CpuPeriod"},       {"pids", "PidsLimit"},
};

static bool
docker_res_set(const struct sandbox_spec *spec, const char *resource)
{
        if (!strcmp(resource, "memory_mb"))
                return spec->res.memory_mb > 0;
        if (!strcmp(resource, "cpus"))
                return spec->res.cpus > 0;
        return spec->res.pids > 0;
}

/* Refuses a docker.host_config that would silently override resources.* (-32602). */
static int
docker_res_conflict(const struct sandbox_spec *spec, json_t *over, struct sbx_error *err)
{
        for (size_t i = 0; i < ARRAY_SIZE(docker_res_keys); i++) {
                const char *r = docker_res_keys[i].resource, *k = docker_res_keys[i].key;
                if (!json_object_get(over, k) || !docker_res_set(spec, r))
                        continue;
                sbx_error_param(err, "docker.host_config",
                                "docker.host_config.%s conflicts with resources.%s: set the "
                                "limit in one of them",
                                k, r);
                return -EINVAL;
        }
        return 0;
}

static json_t *
docker_host_config(struct docker_create *c, const struct sandbox_spec *spec, struct sbx_error *err)
{
        json_t *caps = json_array(), *mounts = json_array(), *m, *hc;
        const char *net = spec->network ? spec->network : docker.default_network;
        int64_t pids = spec->res.pids ? spec->res.pids : docker.pids_limit;
        char *tmp = xasprintf("rw,nosuid,nodev,size=%s", docker.tmp_size);
        size_t i;

        for (i = 0; i < ARRAY_SIZE(docker_cap_add); i++)
                json_array_append_new(caps, json_string(docker_cap_add[i]));
        hc = json_pack("{s:[s],s:o,s:[s],s:b,s:s,s:{s:s}}", "CapDrop", "ALL", "CapAdd", caps,
                       "SecurityOpt", "no-new-privileges", "Init", 1, "NetworkMode", net, "Tmpfs",
                       "/tmp", tmp);
        free(tmp);
        /* dockerd's default on cgroup v1 is the host's cgroup namespace: the container would
         * see (and the policy flags) the host's whole cgroup tree. */
        json_object_set_new(hc, "CgroupnsMode", json_string("private"));
        if (pids > 0)
                json_object_set_new(hc, "PidsLimit", json_integer(pids));
        if (spec->res.memory_mb > 0) {
                json_object_set_new(hc, "Memory", json_integer(spec->res.memory_mb << 20));
                json_object_set_new(hc, "MemorySwap", json_integer(spec->res.memory_mb << 20));
        }
        if (spec->res.cpus > 0)
                json_object_set_new(hc, "NanoCpus",
                                    json_integer((json_int_t) (spec->res.cpus * 1e9)));
        json_array_foreach(spec->mounts, i, m)
        {
                if (docker_mount(c, m, spec->host_paths, mounts, err) < 0) {
                        json_decref(mounts);
                        json_decref(hc);
                        return NULL;
                }
        }
        json_object_set_new(hc, "Mounts", mounts);
        /* Exec output travels over the attach stream; a log driver would keep a copy of it. */
        if (docker.agent)
                json_object_set_new(hc, "LogConfig", json_pack("{s:s}", "Type", "none"));
        if (docker.runtime)
                json_object_set_new(hc, "Runtime", json_string(docker.runtime));
        /* docker.host_config merges over the defaults, key by key (a copy: the spec is the
         * sandbox's and stays as it was given). */
        json_t *over = json_deep_copy(json_object_get(spec->section, "host_config"));
        if (docker_res_conflict(spec, over, err) < 0) {
                json_decref(over);
                json_decref(hc);
                return NULL;
        }
        json_object_update(hc, over);
        json_decref(over);
        return hc;
}

static json_t *
docker_labels(const struct sandbox_spec *spec)
{
        json_t *l = json_deep_copy(spec->labels);
        char uid[32];

        if (!json_is_object(l)) {
                json_decref(l);
                l = json_object();
        }
        snprintf(uid, sizeof(uid), "%u", spec->owner ? (unsigned) spec->owner->uid : 0u);
        json_object_set_new(l, "sandboxd", json_string("1"));
        json_object_set_new(l, "sandboxd.owner", json_string(uid));
        json_object_set_new(l, "sandboxd.sandbox", json_string(spec->id));
        json_object_set_new(l, "sandboxd.name", json_string(spec->name ? spec->name : spec->id));
        if (docker.instance)
                json_object_set_new(l, "sandboxd.instance", json_string(docker.instance));
        if (docker.agent)
                json_object_set_new(l, "sandboxd.agent", json_string("1"));
        return l;
}

/* The container's main process is sandboxd-agent, mounted read-only from the host and driven
 * over the attach stream (docker_attach.c). The mount is added after the policy saw the spec:
 * it is the daemon's own, and the read-back checks it separately. */
static void
docker_body_agent(json_t *body, json_t *hc)
{
        json_t *mounts = json_object_get(hc, "Mounts");

        if (!json_is_array(mounts)) {
                mounts = json_array();
                json_object_set_new(hc, "Mounts", mounts);
        }
        json_array_append_new(mounts, json_pack("{s:s,s:s,s:s,s:b}", "Type", "bind", "Source",
                                                docker.agent, "Target", AGENT_PATH, "ReadOnly", 1));
        json_object_set_new(body, "Cmd",
                            json_pack("[sss]", AGENT_PATH, "--runtime-dir", DOCKER_STATE_DIR));
        /* The agent is the container's init (PID 1: it reaps orphans, as docker-init would):
         * any other process holding the container's stdio — docker-init, an entrypoint
         * script that does not exec — is dumpable, so a command could open its
         * /proc/PID/fd/0 and /fd/1 and read or forge the daemon's messages. Set after the
         * docker.host_config merge on purpose; agent = off keeps both. */
        json_object_set_new(body, "Entrypoint", json_array());
        json_object_set_new(hc, "Init", json_false());
        json_object_set_new(body, "OpenStdin", json_true());
        json_object_set_new(body, "StdinOnce", json_false());
        json_object_set_new(body, "AttachStdin", json_true());
        json_object_set_new(body, "AttachStdout", json_true());
        json_object_set_new(body, "Tty", json_false());
}

/* What the read-back (docker_check_policy) compares the created container with: the mounts and
 * the network as requested (copies: the owner labels and the agent's mount added after this
 * are the daemon's own). */
static json_t *
docker_requested(json_t *hc)
{
        static const char *const keys[] = {"Mounts", "Binds", "NetworkMode", "VolumeDriver", NULL};
        json_t *rhc = json_object(), *v;

        for (const char *const *k = keys; *k; k++)
                if ((v = json_object_get(hc, *k)))
                        json_object_set_new(rhc, *k, json_deep_copy(v));
        return json_pack("{s:s,s:{s:o}}", "backend", "docker", "docker", "host_config", rhc);
}

/* The POST /containers/create body for spec (new), or NULL and err; fills c->requested. */
json_t *
docker_body(struct docker_create *c, const struct sandbox_spec *spec, struct sbx_error *err)
{
        json_t *hc = docker_host_config(c, spec, err), *env = json_array(), *v, *body;
        const char *k;

        if (!hc) {
                json_decref(env);
                return NULL;
        }
        json_object_foreach(spec->env, k, v)
        {
                if (json_is_string(v))
                        json_array_append_new(env, json_sprintf("%s=%s", k, json_string_value(v)));
        }
        body = json_pack("{s:s,s:[sss],s:o,s:o,s:o}", "Image", c->image, "Cmd", "sh", "-c",
                         "mkdir -p " DOCKER_STATE_DIR "; exec sleep 2147483647", "Env", env,
                         "Labels", docker_labels(spec), "HostConfig", hc);
        if (spec->workdir)
                json_object_set_new(body, "WorkingDir", json_string(spec->workdir));
        /* docker.user: whom the container runs as; docker_user.c decides whether the owner
         * may name it. */
        if (json_is_string(v = json_object_get(spec->section, "user")))
                json_object_set(body, "User", v);
        c->requested = docker_requested(hc);
        c->paths = backend_rejudge_paths(spec->host_paths);
        docker_label_volumes(json_object_get(hc, "Mounts"), spec);
        if (docker.agent)
                docker_body_agent(body, hc);
        return body;
}

/* ---- the read-back: the created container against the approved spec ---- */

/* Whether a mount is the daemon's own read-only sandboxd-agent (src resolved). */
static bool
docker_is_agent_mount(const char *dst, const char *src)
{
        return docker.agent && dst && src && strcmp(dst, AGENT_PATH) == 0 &&
               strcmp(src, docker.agent) == 0;
}

/* How many of an adopted container's mounts show something of the host: all but the
 * read-only agent of a container made with one (by this daemon, perhaps from another path
 * before an upgrade). */
size_t
docker_host_mounts(json_t *insp, bool agent)
{
        size_t i, n = 0;
        json_t *m;

        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                if (!agent || !dst || strcmp(dst, AGENT_PATH) != 0 ||
                    json_is_true(json_object_get(m, "RW")))
                        n++;
        }
        return n;
}

/* The mounts Docker actually set up, as a sandbox.create spec for the policy. */
static json_t *
docker_real_spec(json_t *insp)
{
        json_t *hc = json_object_get(insp, "HostConfig");
        json_t *mounts = json_array(), *m;
        size_t i;

        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *type = json_string_value(json_object_get(m, "Type"));
                const char *src = json_string_value(json_object_get(m, "Source"));
                const char *name = json_string_value(json_object_get(m, "Name"));
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                if (docker_is_agent_mount(dst, src) && !json_is_true(json_object_get(m, "RW")))
                        continue;
                if (type && strcmp(type, "volume") == 0 && name)
                        src = name;
                json_array_append_new(mounts, json_pack("{s:s?,s:s?,s:s?,s:b}", "type", type,
                                                        "source", src, "target", dst, "readonly",
                                                        !json_is_true(json_object_get(m, "RW"))));
        }
        /* The other HostConfig fields are what was sent (and judged), plus Docker's defaults
         * for the ones not sent: what can differ from the judged spec is what the mounts
         * resolved to, so that is what is judged again. */
        return json_pack("{s:s,s:o,s:{s:{s:s?}}}", "backend", "docker", "mounts", mounts, "docker",
                         "host_config", "NetworkMode",
                         json_string_value(json_object_get(hc, "NetworkMode")));
}

/* The real container, judged by the built-in policy, must not be stricter than the request. */
int
docker_check_policy(struct docker_create *c, json_t *insp)
{
        json_t *real = docker_real_spec(insp);
        int rc = backend_rejudge("docker", c->requested, real, c->paths,
                                 "the created container differs from the approved spec", &c->err,
                                 &c->host_access);

        c->host_access = c->host_access || json_object_size(c->approved) > 0;
        json_decref(real);
        return rc;
}

/* Notes the container's tmpfs targets (the archive API does not see them) from its inspect. */
void
docker_note_tmpfs(struct backend_sandbox *sb, json_t *insp)
{
        json_t *hc = json_object_get(insp, "HostConfig"), *v, *m;
        const char *k;
        size_t i;

        json_array_clear(sb->tmpfs);
        json_object_foreach(json_object_get(hc, "Tmpfs"), k, v)
                json_array_append_new(sb->tmpfs, json_string(k));
        json_array_foreach(json_object_get(hc, "Mounts"), i, m)
        {
                const char *t = json_string_value(json_object_get(m, "Type"));
                if (t && strcmp(t, "tmpfs") == 0)
                        json_array_append(sb->tmpfs, json_object_get(m, "Target"));
        }
}
