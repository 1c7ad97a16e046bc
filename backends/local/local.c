/* local.c — the local backend: processes on the host, as the caller, each in its own session,
 * with per-sandbox cgroups where the machine allows and rlimits otherwise. This file: the
 * backend's ops and its sandboxes; local_exec.c: execs; local_file.c: file.read/file.write. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/cgroup.h"
#include "backends/local/local_int.h"
#include "backends/spawn.h"
#include "protocol/util.h"

static uv_signal_t local_sigchld;
static json_t *local_cgroup_info;

static void
local_sigchld_cb(uv_signal_t *s, int signum)
{
        int status;
        pid_t pid;

        /* We are a child subreaper: reap everything, including orphaned grandchildren. */
        while ((pid = spawn_reap_other(&status)) > 0)
                if (!local_exec_reaped(pid, status))
                        local_file_reaped(pid, status);
}

static int
local_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        const char *drain = json_string_value(json_object_get(config, "drain_grace_ms"));
        const char *ft = json_string_value(json_object_get(config, "file_timeout_ms"));

        local_exec_init(loop, drain ? strtoull(drain, NULL, 10) : 250);
        local_file_init(loop, ft ? strtoull(ft, NULL, 10) : 0);
        uv_signal_init(loop, &local_sigchld);
        uv_signal_start(&local_sigchld, local_sigchld_cb, SIGCHLD);
        uv_unref((uv_handle_t *) &local_sigchld);
        local_cgroup_info = cgroup_probe();
        return 0;
}

static void
local_shutdown(void)
{
        local_file_shutdown();
        uv_close((uv_handle_t *) &local_sigchld, NULL);
        json_decref(local_cgroup_info);
        local_cgroup_info = NULL;
}

static void
local_probe(void *ctx, backend_probe_cb cb)
{
        json_t *d = json_pack("{s:O,s:b}", "cgroups",
                              local_cgroup_info ? local_cgroup_info : json_null(), "runs_as_caller",
                              geteuid() == 0);

        cb(ctx, true, NULL, NULL, d);
}

static int
local_check_spec(const struct sandbox_spec *spec, struct sbx_error *err)
{
        if (spec->network && strcmp(spec->network, "host")) {
                sbx_error_param(err, "network",
                                "invalid params: the local backend cannot restrict the network "
                                "(network \"%s\"); use backend \"docker\" for isolation",
                                spec->network);
                return -1;
        }
        if (json_array_size(spec->mounts)) {
                sbx_error_param(err, "mounts",
                                "invalid params: the local backend has no mounts: it sees the "
                                "host's files directly; use backend \"docker\"");
                return -1;
        }
        if (spec->image) {
                sbx_error_param(err, "image",
                                "invalid params: the local backend runs on the host and takes "
                                "no image; use backend \"docker\"");
                return -1;
        }
        return 0;
}

static void
local_limits(struct backend_sandbox *b, const struct sandbox_spec *spec, json_t *enforced)
{
        const struct backend_resources *r = &spec->res;

        /* What the cgroup could not enforce falls back to an rlimit where one exists. */
        if (r->memory_mb && !json_is_string(json_object_get(enforced, "memory_mb"))) {
                b->limits.as_bytes = (uint64_t) r->memory_mb << 20;
                b->use_limits = true;
                json_object_set_new(enforced, "memory_mb", json_string("rlimit"));
        }
        if (r->pids && !json_is_string(json_object_get(enforced, "pids"))) {
                b->limits.nproc = (uint64_t) r->pids;
                b->use_limits = true;
                json_object_set_new(enforced, "pids", json_string("rlimit-per-uid"));
        }
        if (r->cpus && !json_object_get(enforced, "cpus"))
                json_object_set_new(enforced, "cpus", json_null());
        if (r->disk_mb)
                json_object_set_new(enforced, "disk_mb", json_null());
}

static void
local_create(const struct sandbox_spec *spec, void *ctx, backend_progress_cb progress,
             backend_create_cb cb)
{
        struct backend_sandbox *b;
        struct sbx_error err = {0};
        struct sandbox_info info = {0};
        json_t *enforced = NULL;
        const char *wd = spec->workdir ? spec->workdir : spec->owner->home;
        struct stat st;

        if (local_check_spec(spec, &err) < 0)
                goto fail;
        /* Accounts such as nobody have no home: start in "/" rather than fail. */
        if (!spec->workdir && (!wd || stat(wd, &st) < 0 || !S_ISDIR(st.st_mode)))
                wd = "/";
        if (!wd || stat(wd, &st) < 0 || !S_ISDIR(st.st_mode)) {
                sbx_error_param(&err, "workdir", "invalid params: workdir '%s' is not a directory",
                                wd ? wd : "(none)");
                goto fail;
        }
        b = xcalloc(1, sizeof(*b));
        b->workdir = xstrdup(wd);
        b->who = *spec->owner;
        b->who.groups = xcalloc(spec->owner->ngroups + 1, sizeof(gid_t));
        memcpy(b->who.groups, spec->owner->groups, spec->owner->ngroups * sizeof(gid_t));
        b->who.user = spec->owner->user ? xstrdup(spec->owner->user) : NULL;
        b->who.home = spec->owner->home ? xstrdup(spec->owner->home) : NULL;
        if (spec->res.memory_mb || spec->res.pids || spec->res.cpus)
                b->cg = cgroup_create(spec->id, &spec->res, &enforced);
        if (!enforced)
                enforced = json_object();
        local_limits(b, spec, enforced);
        info.workdir = b->workdir;
        info.host_access = true;
        info.enforced = enforced;
        cb(ctx, b, &info, NULL);
        json_decref(enforced);
        return;
fail:
        cb(ctx, NULL, NULL, &err);
        sbx_error_clear(&err);
}

static void
local_destroy(struct backend_sandbox *b, void *ctx, backend_done_cb cb)
{
        cgroup_destroy(b->cg);
        free(b->workdir);
        free(b->who.groups);
        free((char *) b->who.user);
        free((char *) b->who.home);
        free(b);
        cb(ctx, NULL);
}

/* ---- files (local_file.c) ---- */

/* The identity file ops run as. */
const struct backend_identity *
local_identity(struct backend_sandbox *b)
{
        return geteuid() == 0 ? &b->who : NULL;
}

const struct backend_ops local_backend_ops = {
        .name = "local",
        .caps = BACKEND_CAP_HOST | BACKEND_CAP_EXACT_ENV,
        .init = local_init,
        .probe = local_probe,
        .create = local_create,
        .destroy = local_destroy,
        .exec_start = local_exec_start,
        .file_read = local_file_read,
        .file_write = local_file_write,
        .shutdown = local_shutdown,
};
