/* singularity.c — the singularity backend: Apptainer (or SingularityCE) instances for HPC
 * users who have no Docker. Configuration, the tool's lookup and probe, and the backend_ops
 * table; the work is in sing_instance.c (instances and their agent), sing_cache.c (SIF
 * images), sing_run.c (tool calls) and sing_sif.c (SIF files). docs/backends/singularity.md
 * gives every command line.
 */
#include "backends/singularity/singularity.h"

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backends/remote_file.h"
#include "backends/singularity/sing_int.h"

#define SING_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SING_PROBE_MS     10000
#define SING_PUBLIC_HINT                                                                           \
        "the operator must install Apptainer, or set [backend.singularity] executable"
#define SING_INSTALL_HINT                                                                          \
        "install Apptainer (on a cluster: module load apptainer), or set [backend.singularity] "   \
        "executable = /path/to/apptainer"

struct sing_state sing;
static char **sing_envp;

/* ---- configuration ---- */

static char *
cfg_str(json_t *config, const char *key, const char *dflt)
{
        const char *v = json_string_value(json_object_get(config, key));

        return v && *v ? xstrdup(v) : dflt ? xstrdup(dflt) : NULL;
}

/* Whole numbers, scaled into st. */
static int
cfg_uints(json_t *config, struct sing_state *st, struct sbx_error *err)
{
        static const struct {
                const char *key;
                uint64_t dflt, max, scale;
                size_t off;
        } keys[] = {
                {"cache_max_mb", 20480, 1ull << 30, 1ull << 20,
                 offsetof(struct sing_state, cache_max)},
                {"build_timeout_s", 1800, 86400, 1000,
                 offsetof(struct sing_state, build_timeout_ms)},
                {"start_timeout_s", 120, 3600, 1000, offsetof(struct sing_state, start_timeout_ms)},
                {"stop_timeout_s", 10, 600, 1, offsetof(struct sing_state, stop_timeout_s)},
                /* the daemon's [limits] file_timeout_s */
                {"file_timeout_ms", 60000, 86400000, 1,
                 offsetof(struct sing_state, file_timeout_ms)},
        };

        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                const char *s = json_string_value(json_object_get(config, keys[i].key));
                unsigned long long v = keys[i].dflt;
                char *end;
                if (s && *s) {
                        errno = 0;
                        v = strtoull(s, &end, 10);
                        if (errno || *end || v == 0 || v > keys[i].max) {
                                sbx_error_param(err, keys[i].key,
                                                "singularity %s = '%s' must be from 1 to %llu",
                                                keys[i].key, s, (unsigned long long) keys[i].max);
                                return -EINVAL;
                        }
                }
                *(uint64_t *) ((char *) st + keys[i].off) = v * keys[i].scale;
        }
        return 0;
}

/* mkdir -p, mode 0700 for what it creates. */
static int
mkdir_p(const char *path)
{
        char buf[PATH_MAX];
        size_t n = strlen(path);

        if (n >= sizeof(buf))
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                return -errno;
        return access(buf, W_OK | X_OK) < 0 ? -errno : 0;
}

static bool
writable_dir(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, W_OK | X_OK) == 0;
}

/* scratch_dir, else SCRATCH_BASE/$USER/sandboxd when SCRATCH_BASE (/scratch) or
 * SCRATCH_BASE/$USER is writable, else the state directory's singularity/. */
static int
cfg_scratch(json_t *config, struct sbx_error *err)
{
        char *base = cfg_str(config, "scratch_base", "/scratch");
        char *mine = xasprintf("%s/%s", base, sing.user);
        const char *state = json_string_value(json_object_get(config, "state_dir"));
        int rc;

        sing.scratch = cfg_str(config, "scratch_dir", NULL);
        if (sing.scratch) {
                sing.scratch_how = xstrdup("configured (scratch_dir)");
        } else if (writable_dir(base) || writable_dir(mine)) {
                sing.scratch = xasprintf("%s/sandboxd", mine);
                sing.scratch_how = xasprintf("%s exists and is writable", base);
        } else {
                sing.scratch = xasprintf("%s/singularity", state ? state : "/tmp");
                sing.scratch_how = xasprintf("%s is not writable: the state directory", base);
        }
        free(base);
        free(mine);
        sing.cache_dir = xasprintf("%s/cache", sing.scratch);
        sing.tmp_dir = xasprintf("%s/tmp", sing.scratch);
        sing.overlay_dir = xasprintf("%s/overlays", sing.scratch);
        if ((rc = mkdir_p(sing.cache_dir)) < 0 || (rc = mkdir_p(sing.tmp_dir)) < 0 ||
            (rc = mkdir_p(sing.overlay_dir)) < 0) {
                sbx_error_param(err, "scratch_dir",
                                "singularity scratch directory %s (%s) cannot be used: %s",
                                sing.scratch, sing.scratch_how, strerror(-rc));
                return rc;
        }
        return 0;
}

/* limits = auto | on | off: cgroup limits need cgroups v2, and for a user systemd's session
 * bus (Apptainer delegates to systemd). */
static int
cfg_limits(json_t *config, struct sing_state *st, struct sbx_error *err)
{
        char *v = cfg_str(config, "limits", "auto");
        const char *rt = getenv("XDG_RUNTIME_DIR");
        char *bus = rt ? xasprintf("%s/bus", rt) : NULL;
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        int rc = 0;

        if (!strcasecmp(v, "on")) {
                st->limits = true;
        } else if (!strcasecmp(v, "off")) {
                st->limits_note = xstrdup("limits = off in [backend.singularity]");
        } else if (!strcasecmp(v, "auto")) {
                st->limits = v2 && (geteuid() == 0 || (bus && access(bus, F_OK) == 0));
                if (!st->limits)
                        st->limits_note =
                                xstrdup(v2 ? "no systemd user session bus ($XDG_RUNTIME_DIR/bus)"
                                           : "the host has no cgroups v2");
        } else {
                sbx_error_param(err, "limits", "singularity limits = '%s' is not auto, on or off",
                                v);
                rc = -EINVAL;
        }
        free(bus);
        free(v);
        return rc;
}

static int
cfg_agent(json_t *config, struct sing_state *st, struct sbx_error *err)
{
        const char *v = json_string_value(json_object_get(config, "agent"));
        char *looked = NULL;

        if (v && *v) {
                st->agent = agent_locate_file(v);
                if (!st->agent) {
                        sbx_error_param(err, "agent",
                                        "singularity agent '%s' is not an executable file", v);
                        return -EINVAL;
                }
                return 0;
        }
        st->agent = agent_locate(&looked);
        if (!st->agent)
                st->agent_note = xasprintf("sandboxd-agent not found %s", looked);
        free(looked);
        return 0;
}

/* The tool's environment: ours, never the daemon's. */
static void
build_env(void)
{
        char *v[] = {
                xasprintf("PATH=%s", sing.path),
                xasprintf("HOME=%s", sing.home),
                xasprintf("USER=%s", sing.user),
                xasprintf("LOGNAME=%s", sing.user),
                xstrdup("LANG=C.UTF-8"),
                xasprintf("APPTAINER_CACHEDIR=%s/apptainer", sing.scratch),
                xasprintf("APPTAINER_TMPDIR=%s", sing.tmp_dir),
                xasprintf("SINGULARITY_CACHEDIR=%s/apptainer", sing.scratch),
                xasprintf("SINGULARITY_TMPDIR=%s", sing.tmp_dir),
        };

        sing_envp = xcalloc(ARRAY_SIZE(v) + 1, sizeof(char *));
        memcpy(sing_envp, v, sizeof(v));
}

/* The environment of every tool call. */
char *const *
singularity_env(void)
{
        return sing_envp;
}

static void
sing_free_config(struct sing_state *st)
{
        char **strs[] = {
                &st->exe_cfg,         &st->path,        &st->home,       &st->user,
                &st->scratch,         &st->scratch_how, &st->cache_dir,  &st->tmp_dir,
                &st->overlay_dir,     &st->agent,       &st->agent_note, &st->default_image,
                &st->default_network, &st->limits_note};

        for (size_t i = 0; i < ARRAY_SIZE(strs); i++) {
                free(*strs[i]);
                *strs[i] = NULL;
        }
}

static void
sing_free_env(void)
{
        for (size_t i = 0; sing_envp && sing_envp[i]; i++)
                free(sing_envp[i]);
        free(sing_envp);
        sing_envp = NULL;
}

static void
cfg_identity(json_t *config)
{
        struct passwd *pw = getpwuid(geteuid());
        const char *home = getenv("HOME"), *path = getenv("PATH");
        const char *inst = json_string_value(json_object_get(config, "instance"));
        char digest[65];

        sing.user = xstrdup(pw ? pw->pw_name : "nobody");
        sing.home = xstrdup(home && *home ? home : pw ? pw->pw_dir : "/");
        sing.path = xstrdup(path && *path ? path : SING_DEFAULT_PATH);
        sha256_hex(inst ? inst : "", inst ? strlen(inst) : 0, digest);
        memcpy(sing.tag, digest, 8);
        sing.tag[8] = '\0';
}

/* Every key of [backend.singularity] (docs/backends/singularity.md). */
static const char *const sing_keys[] = {
        "executable",     "agent",        "image",        "network",         "instance",
        "scratch_dir",    "scratch_base", "cache_max_mb", "build_timeout_s", "start_timeout_s",
        "stop_timeout_s", "limits",       NULL,
};

static int
cfg_network(json_t *config, struct sing_state *st, struct sbx_error *err)
{
        st->exe_cfg = cfg_str(config, "executable", NULL);
        st->default_image = cfg_str(config, "image", "docker://debian:bookworm-slim");
        st->default_network = cfg_str(config, "network", "none");
        if (strcmp(st->default_network, "none") && strcmp(st->default_network, "host") &&
            strcmp(st->default_network, "bridge")) {
                sbx_error_param(err, "network",
                                "singularity network = '%s' is not none, host or bridge",
                                st->default_network);
                return -EINVAL;
        }
        return 0;
}

/* The keys into st, every problem reported (the scratch directory, which init creates, is
 * not among them); returns how many there were. */
static int
sing_config_parse(json_t *config, struct sing_state *st, backend_config_report_fn report, void *ctx)
{
        static int (*const steps[])(json_t *, struct sing_state *, struct sbx_error *) = {
                cfg_network, cfg_uints, cfg_limits, cfg_agent};
        struct backend_config_tally rep = {report, ctx, 0};
        struct sbx_error e = {0};

        backend_config_known(config, "singularity", sing_keys, backend_config_tally_cb, &rep);
        for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
                if (steps[i](config, st, &e) != 0)
                        backend_config_tally_error(&rep, NULL, &e);
        }
        return rep.n;
}

/* backend_ops.validate: the parse into a scratch state. */
static int
sing_validate(json_t *config, backend_config_report_fn report, void *ctx)
{
        struct sing_state scratch = {0};
        int n = sing_config_parse(config, &scratch, report, ctx);

        sing_free_config(&scratch);
        return n;
}

static int
sing_init(uv_loop_t *loop, json_t *config, struct sbx_error *err)
{
        if (sing.initialised)
                return 0;
        sing_free_config(&sing);
        sing_free_env();
        memset(&sing, 0, sizeof(sing));
        list_init(&sing.sandboxes);
        sing.loop = loop;
        cfg_identity(config);
        if (sing_config_parse(config, &sing, backend_config_first_error, err) > 0 ||
            cfg_scratch(config, err) < 0)
                return -EINVAL;
        build_env();
        sing_cache_init();
        sing.initialised = true;
        return 0;
}

static void
sing_shutdown(void)
{
        struct list *pos, *tmp;

        if (!sing.initialised)
                return;
        sing.initialised = false;
        LIST_FOREACH_SAFE(pos, tmp, &sing.sandboxes)
        {
                struct backend_sandbox *sb = LIST_ENTRY(pos, struct backend_sandbox, link);
                if (sb->session) /* the agent keeps every exec for the next daemon */
                        agent_session_detach(sb->session);
                sb->session = NULL;
                if (!sb->destroyed && !sb->creating)
                        sing_sandbox_unref(sb);
        }
        sing_cache_shutdown();
}

/* ---- the tool ---- */

static char *
exe_at(const char *dir, size_t n, const char *name)
{
        char *p = xasprintf("%.*s/%s", (int) n, dir, name), *real = agent_locate_file(p);

        free(p);
        return real;
}

/* The tool to run. */
char *
singularity_find_exe(char **why)
{
        static const char *const names[] = {"apptainer", "singularity"};
        char *found;

        if (sing.exe_cfg) {
                found = agent_locate_file(sing.exe_cfg);
                if (!found && why)
                        *why = xasprintf("[backend.singularity] executable '%s' is not an "
                                         "executable file",
                                         sing.exe_cfg);
                return found;
        }
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                for (const char *p = sing.path; p && *p;) {
                        size_t n = strcspn(p, ":");
                        if (n && p[0] == '/' && (found = exe_at(p, n, names[i])))
                                return found;
                        p += n + (p[n] == ':');
                }
        }
        if (why)
                *why = xasprintf("neither apptainer nor singularity is on PATH (%s)", sing.path);
        return NULL;
}

/* A -32000 error. */
void
singularity_unavailable(struct sbx_error *err, const char *reason, const char *hint)
{
        sbx_error_set(err, SBX_E_BACKEND_UNAVAILABLE,
                      json_pack("{s:s,s:s,s:s}", "backend", "singularity", "reason", reason, "hint",
                                hint),
                      "backend singularity unavailable: %s", reason);
}

struct sing_probe {
        void *ctx;
        backend_probe_cb cb;
        char *exe;
};

static json_t *
probe_details(const char *exe, const char *version)
{
        json_t *d = json_pack("{s:s?,s:s?,s:s,s:s,s:b}", "executable", exe, "version", version,
                              "scratch_dir", sing.scratch, "scratch_reason", sing.scratch_how,
                              "limits", sing.limits);

        if (sing.limits_note)
                json_object_set_new(d, "limits_reason", json_string(sing.limits_note));
        sing_cache_details(d);
        return d;
}

static void
probe_version_cb(void *ctx, int code, const char *out, size_t len, const char *why)
{
        struct sing_probe *p = ctx;
        char *version = xstrndup(out, strcspn(out, "\n"));
        bool failed = code != 0 || !*version;
        json_t *d = probe_details(p->exe, failed ? NULL : version);
        char *reason = NULL;

        if (failed) {
                reason = xasprintf("`%s version` failed: %s", p->exe, why[0] ? why : "no output");
                backend_probe_public(d,
                                     "Apptainer (or Singularity) does not run on the daemon's "
                                     "machine",
                                     SING_PUBLIC_HINT);
        }
        p->cb(p->ctx, !reason, reason, reason ? SING_INSTALL_HINT : NULL, d);
        free(reason);
        free(version);
        free(p->exe);
        free(p);
}

static void
sing_probe(void *ctx, backend_probe_cb cb)
{
        struct sing_probe *p;
        char *why = NULL, *exe = singularity_find_exe(&why);

        if (!exe || !sing.agent) {
                json_t *d = probe_details(exe, NULL);
                backend_probe_public(d,
                                     exe ? "sandboxd-agent is not installed for the singularity "
                                           "backend"
                                         : "neither apptainer nor singularity is installed where "
                                           "the daemon looks",
                                     exe ? "the operator must install sandboxd-agent (make "
                                           "install) or set [backend.singularity] agent"
                                         : SING_PUBLIC_HINT);
                cb(ctx, false, exe ? sing.agent_note : why,
                   exe ? "install sandboxd-agent (make install) or set [backend.singularity] "
                         "agent = PATH"
                       : SING_INSTALL_HINT,
                   d);
                free(why);
                free(exe);
                return;
        }
        p = xcalloc(1, sizeof(*p));
        p->ctx = ctx;
        p->cb = cb;
        p->exe = exe;
        char *argv[] = {exe, "version", NULL};
        sing_run_start(argv, NULL, 0, SING_PROBE_MS, NULL, probe_version_cb, p);
}

/* ---- execs and files, through the agent ---- */

/* -32006 {state: "gone"}. */
void
sing_sandbox_gone_error(const struct backend_sandbox *sb, struct sbx_error *err)
{
        sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "gone"),
                      "the Apptainer instance %s of sandbox %s is gone", sb->instance, sb->id);
}

static int
sing_exec_start(struct backend_sandbox *sb, const struct exec_spec *spec,
                const struct backend_exec_cbs *cbs, void *ctx, struct backend_proc **ret,
                struct sbx_error *err)
{
        if (sb->gone) {
                sing_sandbox_gone_error(sb, err);
                return -ENODEV;
        }
        return agent_exec_start(sing_session(sb, false), spec, cbs, ctx, ret, err);
}

static int
sing_exec_adopt(struct backend_sandbox *sb, const struct exec_spec *spec, json_t *record,
                const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                struct backend_proc **ret, struct sbx_error *err)
{
        return agent_exec_adopt(sing_session(sb, true), spec, offsets, cbs, ctx, ret, err);
}

static void
sing_exec_adopt_done(struct backend_sandbox *sb)
{
        if (sb->session)
                agent_session_adopt_done(sb->session);
}

static void
sing_file_helper(void *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
                 remote_file_helper_cb cb)
{
        struct backend_sandbox *b = sb;
        struct sbx_error err = {0};

        if (b->gone) {
                sing_sandbox_gone_error(b, &err);
                cb(ctx, -1, NULL, 0, &err);
                sbx_error_clear(&err);
                return;
        }
        agent_helper(sing_session(b, false), argv, in, inlen, ctx, cb);
}

static void
sing_file_ref(void *sb)
{
        ((struct backend_sandbox *) sb)->refs++;
}

static void
sing_file_unref(void *sb)
{
        sing_sandbox_unref(sb);
}

static const struct remote_file_ops sing_file_ops = {
        .helper = sing_file_helper,
        .ref = sing_file_ref,
        .unref = sing_file_unref,
};

/* Paths are the sandbox's: judge gets the requested path. */
REMOTE_FILE_ENTRIES(sing, sing_file_ops)

const struct backend_ops singularity_backend_ops = {
        .name = "singularity",
        .init = sing_init,
        .validate = sing_validate,
        .probe = sing_probe,
        .create = sing_instance_create,
        .cancel = sing_instance_cancel,
        .save = sing_instance_save,
        .adopt = sing_instance_adopt,
        .destroy = sing_instance_destroy,
        .reap_orphans = sing_instance_reap,
        .exec_start = sing_exec_start,
        .exec_adopt = sing_exec_adopt,
        .exec_adopt_done = sing_exec_adopt_done,
        .file_read = sing_file_read,
        .file_write = sing_file_write,
        .cache = sing_cache_list,
        .shutdown = sing_shutdown,
};
