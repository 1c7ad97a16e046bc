/* check_docker.c — the docker backend's ops on a uv loop against the real dockerd.
 *
 * Needs tests/docker/setup.sh to have run (dockerd up, image sandboxd-test:busybox). Each test
 * creates its own container and removes it; the loop must close cleanly at the end.
 *
 * A failing test cannot remove its container itself: check ends its process at the failed
 * assertion (_exit in CK_FORK mode, before any checked teardown) or at its timeout (SIGKILL).
 * So every container of a run carries the run's instance label, a directory /tmp/sbxtest-XXXXXX
 * whose lock the run holds, and the runner removes what is left after the tests; what a
 * killed run leaves, tests/docker/setup.sh removes (the lock is free then).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/docker/docker.h"
#include "backends/docker/docker_int.h"
#include "backends/http.h"
#include "backends/shell.h"
#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/helper_wire.h"

#define IMAGE "sandboxd-test:busybox"

static uv_loop_t loop;
static const struct backend_ops *ops = &docker_backend_ops;
static struct backend_identity me;
static char run_dir[] = "/tmp/sbxtest-XXXXXX"; /* the run's instance label; made in main() */

/* ---- loop helpers ---- */

static void
run_until(const bool *flag)
{
        while (!*flag) {
                int more = uv_run(&loop, UV_RUN_ONCE);
                ck_assert_msg(more || *flag, "the loop ran dry before the awaited callback");
        }
}

static void
backend_up(const char *config_json)
{
        struct sbx_error err = {0};
        json_t *cfg = json_loads(config_json ? config_json : "{}", 0, NULL);

        if (!json_object_get(cfg, "instance"))
                json_object_set_new(cfg, "instance", json_string(run_dir));
        util_json_alloc_init();
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        me.uid = getuid();
        me.gid = getgid();
        ck_assert_int_eq(ops->init(&loop, cfg, &err), 0);
        json_decref(cfg);
}

/* Exec tests run twice: _i = 0 through the resident sandboxd-agent (build/<variant>/, next to
 * tests/), _i = 1 with one `docker exec` per command (agent = off). */
static const char *
exec_mode(int i)
{
        static char cfg[PATH_MAX + 64];
        char self[PATH_MAX];
        ssize_t n;

        if (i == 1)
                return "{\"agent\": \"off\"}";
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        ck_assert_int_gt(n, 0);
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        snprintf(cfg, sizeof(cfg), "{\"agent\": \"%s/../sandboxd-agent\"}", self);
        return cfg;
}

static void
backend_down(void)
{
        ops->shutdown();
        uv_run(&loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}

/* ---- create / destroy ---- */

struct created {
        bool done;
        struct backend_sandbox *sb;
        struct sbx_error err;
        bool host_access;
        int progress;
        int64_t last_total;
};

static void
create_cb(void *ctx, struct backend_sandbox *bsb, const struct sandbox_info *info,
          const struct sbx_error *err)
{
        struct created *c = ctx;

        c->done = true;
        c->sb = bsb;
        if (err) {
                c->err.code = err->code;
                c->err.message = xstrdup(err->message);
                c->err.data = json_incref(err->data);
        } else {
                c->host_access = info->host_access;
        }
}

static void
progress_cb(void *ctx, const char *phase, const char *message, int64_t current, int64_t total)
{
        struct created *c = ctx;

        c->progress++;
        if (total > 0)
                c->last_total = total;
}

static struct sandbox_spec
spec_default(const char *id)
{
        struct sandbox_spec s = {
                .id = id,
                .name = id,
                .image = IMAGE,
                .env = json_pack("{s:s}", "SBX_TEST", "1"),
                .labels = json_object(),
                .mounts = json_array(),
                .owner = &me,
        };
        return s;
}

static void
spec_free(struct sandbox_spec *s)
{
        json_decref(s->env);
        json_decref(s->labels);
        json_decref(s->mounts);
        json_decref(s->section);
}

static struct backend_sandbox *
create_with(struct sandbox_spec *s, struct created *c)
{
        char id[40];

        if (!s->id) {
                snprintf(id, sizeof(id), "sbx_t%d_%d", (int) getpid(), rand() % 100000);
                s->id = s->name = id;
        }
        ops->create(s, c, progress_cb, create_cb);
        run_until(&c->done);
        s->id = s->name = NULL;
        return c->sb;
}

static struct backend_sandbox *
create_default(void)
{
        struct sandbox_spec s = spec_default(NULL);
        struct created c = {0};
        struct backend_sandbox *sb = create_with(&s, &c);

        ck_assert_msg(sb != NULL, "create failed: %s", c.err.message);
        spec_free(&s);
        return sb;
}

static void
done_cb(void *ctx, const struct sbx_error *err)
{
        bool *done = ctx;

        ck_assert_msg(err == NULL, "destroy: %s", err ? err->message : "");
        *done = true;
}

static void
destroy(struct backend_sandbox *sb)
{
        bool done = false;

        ops->destroy(sb, &done, done_cb);
        run_until(&done);
}

/* ---- raw API calls from the tests ---- */

struct api {
        bool done;
        long status;
        json_t *body;
};

static void
api_cb(void *ctx, long status, json_t *body, const char *raw, size_t len, const char *terr)
{
        struct api *a = ctx;

        a->done = true;
        a->status = status;
        a->body = json_incref(body);
}

static json_t *
api(const char *method, const char *path, json_t *body, long *status)
{
        struct api a = {0};

        ck_assert_int_eq(docker_call(method, path, body, NULL, 0, NULL, api_cb, &a), 0);
        run_until(&a.done);
        if (status)
                *status = a.status;
        return a.body;
}

static json_t *
inspect(struct backend_sandbox *sb)
{
        char *path = xasprintf("/containers/%s/json", docker_sandbox_container(sb));
        long st;
        json_t *j = api("GET", path, NULL, &st);

        free(path);
        ck_assert_int_eq(st, 200);
        return j;
}

/* ---- execs ---- */

struct run {
        struct buf out, err;
        bool done;
        struct exec_exit ex;
        char *state;
        size_t state_len;
        const char *wait_for; /* set started when stdout contains it */
        bool started;
        bool error_seen; /* exec_exit.error */
        int error_code;
        char error_state[32];
        char error_message[256];
};

static void
on_output(void *ctx, enum backend_stream s, const char *data, size_t len)
{
        struct run *r = ctx;

        buf_append(s == BACKEND_STDOUT ? &r->out : &r->err, data, len);
        if (r->wait_for && r->out.data && strstr(r->out.data, r->wait_for))
                r->started = true;
}

static void
on_exit_cb(void *ctx, const struct exec_exit *ex)
{
        struct run *r = ctx;

        r->ex = *ex;
        if (ex->state) {
                r->state = xmalloc(ex->state_len + 1);
                memcpy(r->state, ex->state, ex->state_len);
                r->state_len = ex->state_len;
        }
        r->ex.state = NULL;
        if (ex->error) {
                const char *st = json_string_value(json_object_get(ex->error->data, "state"));
                r->error_seen = true;
                r->error_code = ex->error->code;
                snprintf(r->error_state, sizeof(r->error_state), "%s", st ? st : "");
                snprintf(r->error_message, sizeof(r->error_message), "%s", ex->error->message);
        }
        r->ex.error = NULL;
        r->done = true;
}

static const struct backend_exec_cbs run_cbs = {on_output, on_exit_cb};

static struct backend_proc *
start(struct backend_sandbox *sb, struct exec_spec *spec, struct run *r)
{
        struct backend_proc *p = NULL;
        struct sbx_error err = {0};
        static int n;
        char id[32];

        snprintf(id, sizeof(id), "p_test%d", ++n);
        if (!spec->exec_id)
                spec->exec_id = id;
        ck_assert_msg(ops->exec_start(sb, spec, &run_cbs, r, &p, &err) == 0, "exec_start: %s",
                      err.message);
        spec->exec_id = NULL;
        return p;
}

static void
run_argv(struct backend_sandbox *sb, char *const *argv, struct run *r)
{
        struct exec_spec spec = {.argv = argv};
        struct backend_proc *p = start(sb, &spec, r);

        run_until(&r->done);
        p->ops->release(p);
}

static void
run_free(struct run *r)
{
        buf_free(&r->out);
        buf_free(&r->err);
        free(r->state);
}

/* Runs argv in sb, expects want on stdout, then destroys sb. */
static void
run_expect_destroy(struct backend_sandbox *sb, char *const *argv, const char *want)
{
        struct run r = {0};

        run_argv(sb, argv, &r);
        buf_append(&r.out, "", 1);
        ck_assert_str_eq(r.out.data, want);
        run_free(&r);
        destroy(sb);
}

/* ---- tests ---- */

struct probed {
        bool done, available;
        json_t *details;
        char reason[256];
};

static void
probe_cb(void *ctx, bool available, const char *reason, const char *hint, json_t *details)
{
        struct probed *p = ctx;

        p->done = true;
        p->available = available;
        p->details = details;
        snprintf(p->reason, sizeof(p->reason), "%s", reason ? reason : "");
}

START_TEST(test_probe)
{
        struct probed p = {0};

        backend_up(NULL);
        ops->probe(&p, probe_cb);
        run_until(&p.done);
        ck_assert(p.available);
        ck_assert_ptr_nonnull(json_string_value(json_object_get(p.details, "api_version")));
        ck_assert_ptr_nonnull(json_string_value(json_object_get(p.details, "server_version")));
        /* The probe speaks HTTP by hand: an idle daemon does not set up libcurl/OpenSSL. */
        ck_assert(!http_curl_initialised());
        json_decref(p.details);
        backend_down();
}
END_TEST

START_TEST(test_probe_no_daemon)
{
        struct probed p = {0};

        backend_up("{\"host\": \"unix:///nonexistent/docker.sock\"}");
        ops->probe(&p, probe_cb);
        run_until(&p.done);
        ck_assert(!p.available);
        ck_assert_str_eq(
                p.reason,
                "the Docker daemon is not running (no socket at /nonexistent/docker.sock)");
        json_decref(p.details);
        backend_down();
}
END_TEST

START_TEST(test_hardening)
{
        json_t *cfg = json_loads(exec_mode(_i), 0, NULL);
        char *cs;

        json_object_set_new(cfg, "pids_limit", json_integer(300));
        cs = json_dumps(cfg, 0);
        backend_up(cs);
        free(cs);
        json_decref(cfg);
        struct backend_sandbox *sb = create_default();
        json_t *j = inspect(sb), *hc = json_object_get(j, "HostConfig");
        json_t *labels = json_object_get(json_object_get(j, "Config"), "Labels");
        char uid[32];

        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(hc, "CapDrop"), 0)),
                         "ALL");
        ck_assert_int_le(json_array_size(json_object_get(hc, "CapAdd")), 8);
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(hc, "SecurityOpt"), 0)),
                         "no-new-privileges");
        /* Through the agent, the agent is the init (PID 1, reaping orphans); else docker-init. */
        ck_assert(json_is_true(json_object_get(hc, "Init")) == (_i == 1));
        ck_assert(!json_is_true(json_object_get(hc, "Privileged")));
        ck_assert_int_eq(json_integer_value(json_object_get(hc, "PidsLimit")), 300);
        ck_assert_str_eq(json_string_value(json_object_get(hc, "NetworkMode")), "none");
        ck_assert_ptr_nonnull(json_object_get(json_object_get(hc, "Tmpfs"), "/tmp"));
        ck_assert_str_eq(json_string_value(json_object_get(labels, "sandboxd")), "1");
        snprintf(uid, sizeof(uid), "%u", (unsigned) getuid());
        ck_assert_str_eq(json_string_value(json_object_get(labels, "sandboxd.owner")), uid);
        ck_assert_ptr_nonnull(json_string_value(json_object_get(labels, "sandboxd.sandbox")));
        json_decref(j);
        destroy(sb);
        backend_down();
}
END_TEST

/* An owner that is neither root nor our uid runs as itself (docker_user.c): what its spec may
 * not ask for is -32602 naming the field, and what it may gives a container of its uid. */
static gid_t nobody_groups[] = {100, 65534};
static const struct backend_identity nobody = {65534, 65534,    nobody_groups,
                                               2,     "nobody", "/home/sbxtest-nobody"};

START_TEST(test_unprivileged_owner)
{
        static const struct {
                const char *section, *param; /* param NULL: created */
        } cases[] = {
                {"{'user':'0'}", "docker.user"},
                {"{'user':'root'}", "docker.user"},
                {"{'user':'65534:0'}", "docker.user"},
                {"{'host_config':{'CapAdd':['SETUID']}}", "docker.host_config.CapAdd"},
                {"{'host_config':{'capadd':'SETUID'}}", "docker.host_config.CapAdd"},
                {"{'host_config':{'GroupAdd':['0']}}", "docker.host_config.GroupAdd"},
                {"{'host_config':{'CapDrop':[]}}", "docker.host_config"},
                {"{'host_config':{'SecurityOpt':[]}}", "docker.host_config"},
                {"{'host_config':{'SecurityOpt':['no-new-privileges=0']}}", "docker.host_config"},
                {"{'host_config':{'SecurityOpt':['no-new-privileges','no-new-privileges:f']}}",
                 "docker.host_config"},
                {"{'user':'65534:65534','host_config':{'CapAdd':[],'GroupAdd':null}}", NULL},
                /* the spellings the policy passes (policy_secopt_nnp) are hardened enough */
                {"{'host_config':{'SecurityOpt':['no-new-privileges:1']}}", NULL},
                {"{'host_config':{'SecurityOpt':['no-new-privileges=True']}}", NULL},
        };

        backend_up(exec_mode(1));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct sandbox_spec sp = spec_default(NULL);
                struct created c = {0};
                char *js = xstrdup(cases[i].section);
                for (char *q = js; *q; q++)
                        *q = *q == '\'' ? '"' : *q;
                sp.owner = &nobody;
                sp.section = json_loads(js, 0, NULL);
                free(js);
                struct backend_sandbox *sb = create_with(&sp, &c);
                spec_free(&sp);
                if (cases[i].param) {
                        ck_assert_msg(!sb, "created: %s", cases[i].section);
                        ck_assert_int_eq(c.err.code, -32602);
                        ck_assert_str_eq(json_string_value(json_object_get(c.err.data, "param")),
                                         cases[i].param);
                        ck_assert_ptr_nonnull(strstr(c.err.message, "root_users"));
                        sbx_error_clear(&c.err);
                        continue;
                }
                ck_assert_msg(sb != NULL, "create failed: %s", c.err.message);
                json_t *j = inspect(sb), *hc = json_object_get(j, "HostConfig");
                json_t *cfg = json_object_get(j, "Config");
                const char *home = json_string_value(
                        json_object_get(json_object_get(hc, "Tmpfs"), "/home/sbxtest-nobody"));
                ck_assert_str_eq(json_string_value(json_object_get(cfg, "User")), "65534:65534");
                ck_assert_str_eq(json_string_value(json_object_get(cfg, "WorkingDir")),
                                 "/home/sbxtest-nobody");
                ck_assert_int_eq(json_array_size(json_object_get(hc, "CapAdd")), 0);
                ck_assert_str_eq(
                        json_string_value(json_array_get(json_object_get(hc, "GroupAdd"), 0)),
                        "100");
                ck_assert_int_eq(json_array_size(json_object_get(hc, "GroupAdd")), 1);
                ck_assert_ptr_nonnull(home);
                ck_assert_ptr_nonnull(strstr(home, "uid=65534,gid=65534,mode=0700"));
                json_decref(j);
                destroy(sb);
        }
        backend_down();
}
END_TEST

/* ReadonlyRootfs with a workdir in the image's filesystem: dockerd would refuse the archive PUT
 * that gives the owner its workdir, so the create is refused first, naming both fields and the
 * fix; with the workdir on a tmpfs mount it works and the owner can write there. */
START_TEST(test_readonly_rootfs_workdir)
{
        static const struct {
                const char *section;
                bool ok;
        } cases[] = {
                {"{\"host_config\":{\"ReadonlyRootfs\":true}}", false},
                {"{\"host_config\":{\"ReadonlyRootfs\":true,\"Tmpfs\":{\"/work\":\"\"}}}", true},
        };
        char *argv[] = {"sh", "-c", "touch /work/f && stat -c %u /work/f", NULL};

        backend_up(exec_mode(1));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct sandbox_spec sp = spec_default(NULL);
                struct created c = {0};
                sp.owner = &nobody;
                sp.workdir = "/work";
                sp.section = json_loads(cases[i].section, 0, NULL);
                struct backend_sandbox *sb = create_with(&sp, &c);
                spec_free(&sp);
                if (!cases[i].ok) {
                        ck_assert_msg(!sb, "created: %s", cases[i].section);
                        ck_assert_int_eq(c.err.code, -32602);
                        ck_assert_str_eq(json_string_value(json_object_get(c.err.data, "param")),
                                         "workdir");
                        ck_assert_ptr_nonnull(strstr(c.err.message, "ReadonlyRootfs"));
                        ck_assert_ptr_nonnull(strstr(c.err.message, "tmpfs mount"));
                        sbx_error_clear(&c.err);
                        continue;
                }
                ck_assert_msg(sb != NULL, "create failed: %s", c.err.message);
                run_expect_destroy(sb, argv, "65534\n");
        }
        backend_down();
}
END_TEST

/* A uid of 2^21 or more (LDAP, SSSD) does not fit the tar header's 7 octal digits: the archive
 * PUT that gives the owner its working directory must still give it to that uid, not to the
 * uid its low digits make (2098152 would be 1000). */
static gid_t big_groups[] = {2098152};
static const struct backend_identity big = {2098152, 2098152,       big_groups,
                                            1,       "sbxtest-big", "/home/sbxtest-big"};

START_TEST(test_owner_with_a_large_uid)
{
        struct sandbox_spec sp = spec_default(NULL);
        struct created c = {0};
        char *argv[] = {"stat", "-c", "%u %g", "/work", NULL};

        backend_up(exec_mode(1));
        sp.owner = &big;
        sp.workdir = "/work";
        struct backend_sandbox *sb = create_with(&sp, &c);
        spec_free(&sp);
        ck_assert_msg(sb != NULL, "create failed: %s", c.err.message);
        run_expect_destroy(sb, argv, "2098152 2098152\n");
        backend_down();
}
END_TEST

START_TEST(test_resources_and_section)
{
        backend_up("{\"agent\": \"off\"}");
        struct sandbox_spec s = spec_default(NULL);
        struct created c = {0};
        s.res.memory_mb = 64;
        s.res.cpus = 0.5;
        s.res.pids = 77;
        s.section = json_pack("{s:{s:i}}", "host_config", "ShmSize", 8 << 20);
        struct backend_sandbox *sb = create_with(&s, &c);
        ck_assert_msg(sb != NULL, "%s", c.err.message);
        json_t *j = inspect(sb), *hc = json_object_get(j, "HostConfig");
        ck_assert_int_eq(json_integer_value(json_object_get(hc, "Memory")), 64 << 20);
        ck_assert_int_eq(json_integer_value(json_object_get(hc, "NanoCpus")), 500000000);
        ck_assert_int_eq(json_integer_value(json_object_get(hc, "PidsLimit")), 77);
        ck_assert_int_eq(json_integer_value(json_object_get(hc, "ShmSize")), 8 << 20);
        /* the merge keeps the other defaults */
        ck_assert(json_is_true(json_object_get(hc, "Init")));
        json_decref(j);
        spec_free(&s);
        destroy(sb);
        backend_down();
}
END_TEST

static enum policy_verdict
judge(json_t *spec, json_t *facts)
{
        struct policy *pol = policy_new_default();
        struct policy_ctx pctx = {.backend = "docker"};
        struct policy_result r = {0};
        enum policy_verdict v;

        policy_eval_sandbox(pol, &pctx, spec, facts, &r);
        v = r.verdict;
        policy_result_clear(&r);
        policy_free(pol);
        return v;
}

/* Policy-dependent: fails while policy/policy.c is the allow-all stub. */
START_TEST(test_policy_denies_dangerous_specs)
{
        json_t *sock =
                json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "backend", "docker", "mounts", "type", "bind",
                          "source", "/var/run/docker.sock", "target", "/var/run/docker.sock");
        json_t *priv = json_pack("{s:s,s:{s:{s:b}}}", "backend", "docker", "docker", "host_config",
                                 "Privileged", 1);
        json_t *etc = json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "backend", "docker", "mounts", "type",
                                "bind", "source", "/etc", "target", "/host-etc");

        ck_assert_int_eq(judge(sock, NULL), POLICY_DENY);
        ck_assert_int_eq(judge(priv, NULL), POLICY_DENY);
        ck_assert_int_eq(judge(etc, NULL), POLICY_DENY);
        json_decref(sock);
        json_decref(priv);
        json_decref(etc);
}
END_TEST

struct vols {
        bool done;
        json_t *v;
};

static void
vols_cb(void *ctx, json_t *facts, const struct sbx_error *err)
{
        struct vols *v = ctx;

        ck_assert_msg(err == NULL, "%s", err ? err->message : "");
        v->v = facts; /* new reference, as docker.h says */
        v->done = true;
}

/* The inspection part passes on its own; the final DENY needs the real policy engine. */
START_TEST(test_named_volume_bind_etc)
{
        char name[64];
        long st;

        backend_up(NULL);
        snprintf(name, sizeof(name), "sbxtest-etc-%d", (int) getpid());
        json_t *req = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "Name", name, "Driver", "local",
                                "DriverOpts", "type", "none", "o", "bind", "device", "/etc");
        json_decref(api("POST", "/volumes/create", req, &st));
        json_decref(req);
        ck_assert_int_eq(st, 201);
        json_t *spec = json_pack("{s:s,s:[{s:s,s:s,s:s}]}", "backend", "docker", "mounts", "type",
                                 "volume", "source", name, "target", "/data");
        struct vols v = {0};
        ops->inspect_spec(spec, &v, vols_cb);
        run_until(&v.done);
        json_t *opts = json_object_get(
                json_object_get(json_object_get(json_object_get(v.v, "volumes"), name), "Options"),
                "device");
        ck_assert_str_eq(json_string_value(opts), "/etc");
        char *path = xasprintf("/volumes/%s", name);
        json_decref(api("DELETE", path, NULL, &st));
        free(path);
        enum policy_verdict verdict = judge(spec, v.v);
        json_decref(v.v);
        json_decref(spec);
        backend_down();
        ck_assert_int_eq(verdict, POLICY_DENY);
}
END_TEST

START_TEST(test_swapped_bind_source_rejected)
{
        char dir[] = "/tmp/sbx-bindXXXXXX";
        char src[128], old[128];

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(src, sizeof(src), "%s/src", dir);
        snprintf(old, sizeof(old), "%s/src.old", dir);
        ck_assert_int_eq(mkdir(src, 0700), 0);
        backend_up(NULL);
        struct sandbox_spec s = spec_default("sbx_swap");
        struct created c = {0};
        json_array_append_new(s.mounts, json_pack("{s:s,s:s,s:s}", "type", "bind", "source", src,
                                                  "target", "/work"));
        /* as the daemon resolved it (as the caller) for the judgement */
        s.host_paths = json_pack("{s:s}", src, src);
        ops->create(&s, &c, progress_cb, create_cb);
        /* approved (resolved) now; swap the directory for a symlink to /etc before Docker
         * creates the container and we read its mounts back */
        ck_assert_int_eq(rename(src, old), 0);
        ck_assert_int_eq(symlink("/etc", src), 0);
        run_until(&c.done);
        if (c.sb)
                destroy(c.sb);
        spec_free(&s);
        json_decref(s.host_paths);
        backend_down();
        unlink(src);
        rmdir(old);
        rmdir(dir);
        ck_assert_msg(c.sb == NULL, "a container whose bind source was swapped was created");
        ck_assert_int_eq(c.err.code, SBX_E_DENIED);
        sbx_error_clear(&c.err);
}
END_TEST

START_TEST(test_exec_mode_used)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"sh", "-c", "cat /proc/$PPID/comm", NULL};
        struct run r = {0};

        /* Through the agent the command is the agent's child; a docker exec's parent lies
         * outside the container (PPID 0, no /proc/0). */
        ck_assert(sb->use_agent == (_i == 0));
        run_argv(sb, argv, &r);
        if (_i == 0)
                ck_assert_str_eq(r.out.data ? r.out.data : "", "agent\n");
        else
                ck_assert_msg(!r.out.data || !strstr(r.out.data, "agent"), "%s", r.out.data);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

/* An agent that cannot serve (here busybox: "agent: applet not found") ends the container at
 * once: the create fails naming it, nothing stays behind. */
START_TEST(test_agent_that_dies_fails_the_create)
{
        struct sandbox_spec s = spec_default(NULL);
        struct created c = {0};
        char filter[128];

        backend_up("{\"agent\": \"/bin/busybox\"}");
        ck_assert_ptr_null(create_with(&s, &c));
        ck_assert_int_eq(c.err.code, SBX_E_BACKEND);
        ck_assert_msg(strstr(c.err.message, "did not start in the container: the container is "
                                            "exited: its main process, the agent, ended"),
                      "%s", c.err.message);
        snprintf(filter, sizeof(filter),
                 "/containers/"
                 "json?all=1&filters=%%7B%%22name%%22%%3A%%5B%%22sandboxd-sbx_t%d_%%22%%5D%%7D",
                 (int) getpid());
        long st;
        json_t *left = api("GET", filter, NULL, &st);
        ck_assert_int_eq(st, 200);
        ck_assert_uint_eq(json_array_size(left), 0);
        json_decref(left);
        sbx_error_clear(&c.err);
        spec_free(&s);
        backend_down();
}
END_TEST

START_TEST(test_agent_config_errors)
{
        struct sbx_error err = {0};
        json_t *cfg = json_pack("{s:s}", "agent", "/nonexistent/sandboxd-agent");

        util_json_alloc_init();
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        ck_assert_int_eq(ops->init(&loop, cfg, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/sandboxd-agent"));
        ck_assert_ptr_nonnull(strstr(err.message, "agent = off"));
        sbx_error_clear(&err);
        json_decref(cfg);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static void
collect_cb(void *ctx, const char *key, const char *message)
{
        json_array_append_new(ctx, json_pack("[s?,s]", key, message));
}

/* validate reports every problem of a section with its key, and touches nothing. */
START_TEST(test_validate_reports_every_problem)
{
        json_t *cfg = json_pack("{s:s,s:s,s:s,s:s,s:s}", "host", "bogus://x", "pids_limit", "many",
                                "tls", "maybe", "agent_ping_ms", "-3", "hots", "unix:///x");
        json_t *got = json_array();
        static const char *const keys[] = {"host", "pids_limit", "tls", "agent_ping_ms", "hots"};

        util_json_alloc_init();
        ck_assert_ptr_nonnull(ops->validate);
        ck_assert_int_eq(ops->validate(cfg, collect_cb, got), 5);
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
                bool found = false;
                size_t j;
                json_t *v;
                json_array_foreach(got, j, v)
                {
                        const char *k = json_string_value(json_array_get(v, 0));
                        found |= k && !strcmp(k, keys[i]) &&
                                 strstr(json_string_value(json_array_get(v, 1)), keys[i]);
                }
                ck_assert_msg(found, "no report for %s", keys[i]);
        }
        json_decref(got);
        json_decref(cfg);
        got = json_array();
        cfg = json_pack("{s:s,s:s}", "host", "tcp://127.0.0.1:2375", "agent", "off");
        ck_assert_int_eq(ops->validate(cfg, collect_cb, got), 0);
        ck_assert_int_eq(json_array_size(got), 0);
        json_decref(got);
        json_decref(cfg);
}
END_TEST

START_TEST(test_demux_interleaved)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"sh", "-c",
                        "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done; exit 3", NULL};
        struct run r = {0};

        run_argv(sb, argv, &r);
        ck_assert_str_eq(r.out.data, "out1\nout2\nout3\nout4\nout5\n");
        ck_assert_str_eq(r.err.data, "err1\nerr2\nerr3\nerr4\nerr5\n");
        ck_assert_int_eq(r.ex.exit_code, 3);
        ck_assert_int_eq(r.ex.signal, 0);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_stdin_round_trip)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"cat", NULL};
        struct exec_spec spec = {
                .argv = argv, .stdin_open = true, .stdin_data = "hello ", .stdin_len = 6};
        struct run r = {0};
        struct backend_proc *p = start(sb, &spec, &r);

        ck_assert_int_eq(p->ops->write(p, "world\n", 6, true), 0);
        ck_assert_int_eq(p->ops->write(p, "late", 4, false), -EPIPE);
        run_until(&r.done);
        p->ops->release(p);
        ck_assert_str_eq(r.out.data, "hello world\n");
        ck_assert_int_eq(r.ex.exit_code, 0);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

static size_t big_count;

static void
count_output(void *ctx, enum backend_stream s, const char *data, size_t len)
{
        if (s == BACKEND_STDOUT)
                big_count += len;
}

START_TEST(test_100mb_output)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"head", "-c", "104857600", "/dev/zero", NULL};
        struct exec_spec spec = {.argv = argv, .exec_id = "p_big"};
        static const struct backend_exec_cbs cbs = {count_output, on_exit_cb};
        struct backend_proc *p = NULL;
        struct sbx_error err = {0};
        struct run r = {0};

        ck_assert_int_eq(ops->exec_start(sb, &spec, &cbs, &r, &p, &err), 0);
        run_until(&r.done);
        p->ops->release(p);
        ck_assert_uint_eq(big_count, 104857600u);
        ck_assert_int_eq(r.ex.exit_code, 0);
        destroy(sb);
        backend_down();
}
END_TEST

struct killed {
        bool done;
        int survivors;
};

static void
kill_cb(void *ctx, int survivors, const struct sbx_error *err)
{
        struct killed *k = ctx;

        ck_assert_msg(err == NULL, "%s", err ? err->message : "");
        k->survivors = survivors;
        k->done = true;
}

START_TEST(test_kill_tree_inside_container)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"sh", "-c",
                        "sleep 1001 & (sleep 1002 &) ; sh -c 'sleep 1003' & echo started; wait",
                        NULL};
        struct exec_spec spec = {.argv = argv};
        struct run r = {.wait_for = "started"};
        struct backend_proc *p = start(sb, &spec, &r);
        struct killed k = {0};

        run_until(&r.started);
        p->ops->kill(p, 300, &k, kill_cb);
        run_until(&k.done);
        run_until(&r.done);
        p->ops->release(p);
        ck_assert_int_eq(k.survivors, 0);
        ck_assert_int_ne(r.ex.signal, 0);

        char *ps[] = {"ps", "-o", "pid,args", NULL};
        struct run pr = {0};
        run_argv(sb, ps, &pr);
        ck_assert_ptr_nonnull(strstr(pr.out.data, "ps"));
        ck_assert_msg(strstr(pr.out.data, "sleep 100") == NULL, "left behind:\n%s", pr.out.data);
        run_free(&pr);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_oom_reported)
{
        backend_up(exec_mode(_i));
        struct sandbox_spec s = spec_default(NULL);
        struct created c = {0};
        s.res.memory_mb = 32;
        struct backend_sandbox *sb = create_with(&s, &c);
        ck_assert_msg(sb != NULL, "%s", c.err.message);
        char *argv[] = {"sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}",
                        NULL};
        struct run r = {0};
        run_argv(sb, argv, &r);
        ck_assert_msg(r.ex.oom_killed,
                      "not reported as OOM-killed: exit %d signal %d, out '%s' err '%s'",
                      r.ex.exit_code, r.ex.signal, r.out.data ? r.out.data : "",
                      r.err.data ? r.err.data : "");
        ck_assert_int_eq(r.ex.signal, SIGKILL);

        /* a plain exit 137 afterwards is not an OOM */
        char *argv2[] = {"sh", "-c", "exit 137", NULL};
        struct run r2 = {0};
        run_argv(sb, argv2, &r2);
        ck_assert(!r2.ex.oom_killed);
        ck_assert_int_eq(r2.ex.exit_code, 137);
        run_free(&r);
        run_free(&r2);
        spec_free(&s);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_container_removed_behind_our_back)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *path = xasprintf("/containers/%s?force=1", docker_sandbox_container(sb));
        long st;

        json_decref(api("DELETE", path, NULL, &st));
        free(path);
        ck_assert_int_eq(st, 204);
        /* The event stream reports it; no polling, no sleep. */
        while (strcmp(docker_sandbox_state(sb), "removed") != 0)
                ck_assert_int_ne(uv_run(&loop, UV_RUN_ONCE), 0);
        char *argv[] = {"true", NULL};
        struct exec_spec spec = {.argv = argv, .exec_id = "p_gone"};
        struct backend_proc *p = NULL;
        struct sbx_error err = {0};
        struct run r = {0};
        ck_assert_int_lt(ops->exec_start(sb, &spec, &run_cbs, &r, &p, &err), 0);
        ck_assert_int_eq(err.code, SBX_E_UNUSABLE);
        ck_assert_str_eq(json_string_value(json_object_get(err.data, "state")), "removed");
        sbx_error_clear(&err);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_save_adopt_after_restart)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        json_t *rec = ops->save(sb);
        char *cid = xstrdup(docker_sandbox_container(sb));
        char *sid = xstrdup(sb->id);
        char *argv[] = {"sh", "-c", "echo kept >/root/mark", NULL};
        struct run r = {0};

        run_argv(sb, argv, &r);
        run_free(&r);
        /* "restart": the backend goes away with its loop; the container stays. */
        backend_down();
        backend_up(NULL);
        /* A record naming a container of another sandbox is not taken over. */
        struct sandbox_spec other = spec_default("sbx_other");
        struct created co = {0};
        ops->adopt(&other, rec, &co, create_cb);
        run_until(&co.done);
        ck_assert(co.sb == NULL);
        ck_assert_int_eq(co.err.code, SBX_E_UNUSABLE);
        sbx_error_clear(&co.err);
        struct sandbox_spec s = spec_default(sid);
        struct created c = {0};
        ops->adopt(&s, rec, &c, create_cb);
        run_until(&c.done);
        ck_assert_msg(c.sb != NULL, "adopt: %s", c.err.message);
        ck_assert_str_eq(docker_sandbox_container(c.sb), cid);
        char *cat[] = {"cat", "/root/mark", NULL};
        struct run r2 = {0};
        run_argv(c.sb, cat, &r2);
        ck_assert_str_eq(r2.out.data, "kept\n");
        run_free(&r2);
        destroy(c.sb);
        json_decref(rec);
        free(cid);
        free(sid);
        spec_free(&s);
        spec_free(&other);
        backend_down();
}
END_TEST

/* DELETE /containers/{cid}?force=1 on a blocking socket: the loop does not run, so the backend
 * cannot see the container's "destroy" event before the next exec. Returns the HTTP status. */
static int
blocking_remove(const char *cid)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), status = 0;
        char *req =
                xasprintf("DELETE /containers/%s?force=1 HTTP/1.0\r\nHost: docker\r\n\r\n", cid);
        char resp[256] = {0};
        ssize_t n;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "/var/run/docker.sock");
        ck_assert_int_eq(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t) strlen(req));
        n = read(fd, resp, sizeof(resp) - 1);
        ck_assert_int_gt(n, 0);
        sscanf(resp, "HTTP/1.%*d %d", &status);
        close(fd);
        free(req);
        return status;
}

START_TEST(test_container_vanished_before_event)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"true", NULL};
        struct exec_spec spec = {.argv = argv, .exec_id = "p_race"};
        struct backend_proc *p = NULL;
        struct sbx_error err = {0};
        struct run r = {0};

        ck_assert_int_eq(blocking_remove(docker_sandbox_container(sb)), 204);
        ck_assert_str_eq(docker_sandbox_state(sb), "running"); /* not seen yet */
        /* exec_start cannot know: the failure arrives as exec_exit.error, not as output. */
        ck_assert_int_eq(ops->exec_start(sb, &spec, &run_cbs, &r, &p, &err), 0);
        run_until(&r.done);
        ck_assert(r.error_seen);
        ck_assert_int_eq(r.error_code, SBX_E_UNUSABLE);
        /* "removed" from the exec create (or the attach) that finds it gone; through the agent
         * the "die" event that precedes "destroy" may be seen first: "exited". Either way the
         * daemon recreates the container for it. */
        ck_assert_msg(!strcmp(r.error_state, "removed") ||
                              (_i == 0 && !strcmp(r.error_state, "exited")),
                      "state %s", r.error_state);
        ck_assert_uint_eq(r.out.len + r.err.len, 0);
        p->ops->release(p);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

struct reaped {
        bool done;
        int removed;
};

static void
reap_cb(void *ctx, int removed, const struct sbx_error *err)
{
        struct reaped *r = ctx;

        ck_assert_msg(err == NULL, "%s", err ? err->message : "");
        r->removed = removed;
        r->done = true;
}

START_TEST(test_reap_orphans)
{
        char inst[sizeof(run_dir) + 32];

        /* Its own instance below the run's: what failed tests left is not this test's. */
        snprintf(inst, sizeof(inst), "{\"instance\": \"%s/reap\"}", run_dir);
        backend_up(inst);
        struct backend_sandbox *keep = create_default();
        struct backend_sandbox *orphan = create_default();
        char *ocid = xstrdup(docker_sandbox_container(orphan));
        const char *known[] = {NULL, NULL};
        struct reaped rp = {0};
        long st;

        known[0] = keep->id;
        ops->reap_orphans(known, &rp, reap_cb);
        run_until(&rp.done);
        ck_assert_int_eq(rp.removed, 1);
        char *path = xasprintf("/containers/%s/json", ocid);
        json_decref(api("GET", path, NULL, &st));
        ck_assert_int_eq(st, 404);
        json_decref(inspect(keep));
        free(path);
        free(ocid);
        destroy(orphan);
        destroy(keep);
        backend_down();
}
END_TEST

struct rd {
        bool done;
        struct buf data;
        uint64_t size;
        bool eof;
        int code;
};

static void
read_cb(void *ctx, const char *data, size_t len, uint64_t size, bool eof,
        const struct sbx_error *err)
{
        struct rd *r = ctx;

        r->done = true;
        r->code = err ? err->code : 0;
        if (!err)
                buf_append(&r->data, data, len);
        r->size = size;
        r->eof = eof;
}

static int judged;
static const struct sbx_error *judge_deny;

/* backend_judge_fn: counts the calls, answers with judge_deny (NULL: go ahead). */
static void
judge_cb(void *ctx, const struct backend_file_target *t, backend_verdict_cb done, void *op)
{
        judged++;
        ck_assert_ptr_nonnull(t->path);
        done(op, judge_deny);
}

static void
file_round_trip(struct backend_sandbox *sb, const char *path)
{
        char blob[70000];
        struct backend_file_write w = {
                .path = path, .data = blob, .len = sizeof(blob), .mode = 0600, .mkdir = true};
        bool done = false;
        struct rd r = {0}, r2 = {0};

        for (size_t i = 0; i < sizeof(blob); i++)
                blob[i] = (char) (i * 7 + i / 256);
        judged = 0;
        ops->file_write(sb, &w, &done, judge_cb, done_cb);
        run_until(&done);
        ck_assert_int_eq(judged, 1);
        ops->file_read(sb, path, 0, 1 << 20, &r, judge_cb, read_cb);
        run_until(&r.done);
        ck_assert_int_eq(judged, 2);
        ck_assert_int_eq(r.code, 0);
        ck_assert_uint_eq(r.data.len, sizeof(blob));
        ck_assert_uint_eq(r.size, sizeof(blob));
        ck_assert(r.eof);
        ck_assert(memcmp(r.data.data, blob, sizeof(blob)) == 0);
        ops->file_read(sb, path, 1000, 100, &r2, judge_cb, read_cb);
        run_until(&r2.done);
        ck_assert_uint_eq(r2.data.len, 100);
        ck_assert(!r2.eof);
        ck_assert(memcmp(r2.data.data, blob + 1000, 100) == 0);
        buf_free(&r.data);
        buf_free(&r2.data);
}

struct wr {
        bool done;
        int code;
};

static void
wr_cb(void *ctx, const struct sbx_error *err)
{
        struct wr *w = ctx;

        w->done = true;
        w->code = err ? err->code : 0;
}

/* A denied op touches nothing and completes with the daemon's error. */
static void
file_denied(struct backend_sandbox *sb)
{
        struct sbx_error deny = {0};
        struct backend_file_write w = {.path = "/root/denied", .data = "x", .len = 1, .mode = -1};
        struct rd r = {0};
        struct wr res = {0};

        sbx_error_set(&deny, SBX_E_DENIED, NULL, "denied by policy (test)");
        judge_deny = &deny;
        ops->file_write(sb, &w, &res, judge_cb, wr_cb);
        run_until(&res.done);
        ck_assert_int_eq(res.code, SBX_E_DENIED);
        judge_deny = NULL;
        ops->file_read(sb, "/root/denied", 0, 10, &r, judge_cb, read_cb);
        run_until(&r.done);
        ck_assert_int_eq(r.code, SBX_E_PARAMS); /* never written */
        sbx_error_clear(&deny);
}

START_TEST(test_file_round_trip_binary)
{
        backend_up(NULL);
        struct backend_sandbox *sb = create_default();
        struct rd r = {0};

        file_round_trip(sb, "/root/sub/dir/blob.bin"); /* archive API */
        file_round_trip(sb, "/tmp/blob.bin");          /* tmpfs: exec fallback */
        ops->file_read(sb, "/nope/missing", 0, 10, &r, judge_cb, read_cb);
        run_until(&r.done);
        ck_assert_int_eq(r.code, SBX_E_PARAMS);
        file_denied(sb);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_shell_state)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        struct shell_exec x = {.kind = SHELL_PICK,
                               .command = "cd /root && export FOO=bar && echo ran",
                               .state_path = DOCKER_STATE_DIR "/p_state.state",
                               .bash_init = DOCKER_STATE_DIR "/" SHELL_BASH_INIT_NAME};
        json_t *envj = json_object();
        char **argv = shell_wrap(&x, envj), *envp[8] = {0};
        const char *k;
        json_t *v;
        size_t n = 0;

        json_object_foreach(envj, k, v) envp[n++] = xasprintf("%s=%s", k, json_string_value(v));
        struct exec_spec spec = {.argv = argv, .envp = envp, .state_path = x.state_path};
        struct run r = {0};
        struct backend_proc *p = start(sb, &spec, &r);
        struct shell_state st;
        char *why = NULL;

        run_until(&r.done);
        p->ops->release(p);
        ck_assert_str_eq(r.out.data, "ran\n");
        ck_assert_ptr_nonnull(r.state);
        ck_assert_msg(shell_state_parse(r.state, r.state_len, &st, &why) == 0, "%s", why);
        ck_assert_int_eq(st.kind, SHELL_SH); /* busybox: the picker chose sh */
        ck_assert_str_eq(st.cwd, "/root");
        ck_assert_str_eq(json_string_value(json_object_get(st.env, "FOO")), "bar");
        shell_state_clear(&st);
        shell_argv_free(argv);
        for (size_t i = 0; i < n; i++)
                free(envp[i]);
        json_decref(envj);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

START_TEST(test_pty_and_resize)
{
        backend_up(exec_mode(_i));
        struct backend_sandbox *sb = create_default();
        char *argv[] = {"sh", "-c", "tty; stty size; while read x; do stty size; done", NULL};
        struct exec_spec spec = {
                .argv = argv, .pty = true, .pty_rows = 30, .pty_cols = 100, .stdin_open = true};
        struct run r = {.wait_for = "30 100"};
        struct backend_proc *p = start(sb, &spec, &r);
        int rounds = 0;

        run_until(&r.started);
        ck_assert_ptr_nonnull(strstr(r.out.data, "/dev/pts/"));
        ck_assert_int_eq(p->ops->resize(p, 40, 120), 0);
        /* The resize travels on another connection: ask again until it shows (bounded). */
        r.wait_for = "40 120";
        r.started = false;
        while (!r.started && rounds++ < 200) {
                size_t seen = r.out.len;
                ck_assert_int_eq(p->ops->write(p, "\n", 1, false), 0);
                while (r.out.len == seen || !memchr(r.out.data + seen, '\n', r.out.len - seen))
                        ck_assert_int_ne(uv_run(&loop, UV_RUN_ONCE), 0);
        }
        ck_assert_msg(r.started, "%s", r.out.data);
        ck_assert_int_eq(p->ops->write(p, NULL, 0, true), 0);
        run_until(&r.done);
        p->ops->release(p);
        run_free(&r);
        destroy(sb);
        backend_down();
}
END_TEST

/* ---- pull path against a fake Engine API on a Unix socket ---- */

static const char *fake_pull_lines[] = {
        "{\"status\":\"Pulling from library/tiny\",\"id\":\"latest\"}\n",
        "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":100,\"total\":1000},"
        "\"id\":\"layer1\"}\n",
        "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":1000,\"total\":1000},"
        "\"id\":\"layer1\"}\n",
        "{\"status\":\"Downloading\",\"progressDetail\":{\"current\":50,\"total\":500},"
        "\"id\":\"layer2\"}\n",
        "{\"status\":\"Status: Downloaded newer image for tiny:latest\"}\n",
};

static void
fake_reply(int fd, const char *status, const char *body)
{
        char hdr[256];
        int n = snprintf(hdr, sizeof(hdr),
                         "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: "
                         "%zu\r\nConnection: close\r\n\r\n",
                         status, strlen(body));

        if (write(fd, hdr, (size_t) n) < 0 || write(fd, body, strlen(body)) < 0)
                _exit(2);
}

/* Writes one Docker stdout frame. */
static void
fake_frame(int fd, const void *data, size_t len)
{
        unsigned char h[8] = {1,
                              0,
                              0,
                              0,
                              (unsigned char) (len >> 24),
                              (unsigned char) (len >> 16),
                              (unsigned char) (len >> 8),
                              (unsigned char) len};

        if (write(fd, h, 8) != 8 || write(fd, data, len) != (ssize_t) len)
                _exit(2);
}

static struct wire_in fake_in;

/* An attach whose stream starts with the tail of an earlier session: a torn message, a forged
 * READY with the wrong nonce, and output for exec id 1 queued before the HELLO was read. Only
 * the READY echoing the daemon's nonce starts the session; then one exec is answered. The
 * real READY says the agent runs as pid (1: the container's init). */
static void
fake_agent(int fd, uint32_t pid)
{
        static const char head[] = "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\n"
                                   "Upgrade: tcp\r\n\r\n";
        unsigned char w[24] = {0}, forged[AGENT_NONCE_LEN];
        struct buf b = {0}, p = {0};
        unsigned type;
        uint32_t id;

        if (write(fd, head, strlen(head)) < 0)
                _exit(2);
        buf_append(&b, "\x07\x00\x01tail of an old message", 25);
        memset(forged, 'x', sizeof(forged)); /* forged: a wrong nonce */
        wire_ready(&b, forged, AGENT_PROTO_VERSION, 7);
        fake_frame(fd, b.data, b.len);
        buf_consume(&b, b.len);
        if (!wire_read(fd, &fake_in, &type, &id, &p) || type != AGENT_HELLO)
                _exit(3);
        memcpy(w + 8, "stale\n", 6);
        wire_msg(&b, 1, AGENT_STDOUT, w, 14);
        wire_ready(&b, p.data + 4, AGENT_PROTO_VERSION, pid);
        fake_frame(fd, b.data, 17); /* the READY split across frames, as Docker may */
        fake_frame(fd, b.data + 17, b.len - 17);
        buf_consume(&b, b.len);
        while (wire_read(fd, &fake_in, &type, &id, &p) && type != AGENT_START)
                ;
        memset(w, 0, sizeof(w));
        agent_put32(w, 4242);
        wire_msg(&b, id, AGENT_STARTED, w, 12);
        memcpy(w + 8, "fresh\n", 6);
        agent_put32(w, 0);
        wire_msg(&b, id, AGENT_STDOUT, w, 14);
        memset(w, 0, sizeof(w));
        agent_put32(w, 3 << 8); /* wait status: exit 3 */
        agent_put64(w + 8, 6);
        wire_msg(&b, id, AGENT_EXIT, w, 24);
        fake_frame(fd, b.data, b.len);
        buf_free(&b);
        buf_free(&p);
        while (wire_read(fd, &fake_in, &type, &id, &p))
                ;
}

static char fake_log[80]; /* request lines the fake served, one per line */
/* The fake is a dockerd on another host (tcp://): its GET /info says so. */
static bool fake_remote;

/* Blocks until the client goes (a request that never gets its answer). */
static void
fake_hang(int fd)
{
        char c;

        while (read(fd, &c, 1) > 0)
                ;
}

static void
fake_serve(int fd)
{
        char req[8192];
        ssize_t n = read(fd, req, sizeof(req) - 1);
        int log;

        if (n <= 0)
                return;
        req[n] = '\0';
        log = open(fake_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (log >= 0) {
                if (write(log, req, strcspn(req, "\r")) < 0 || write(log, "\n", 1) < 0)
                        _exit(2);
                close(log);
        }
        if (strstr(req, "GET /_ping HTTP/1.1\r\n"))
                fake_reply(fd, "200 OK", "OK");
        else if (fake_remote && (strstr(req, "GET /info ") || strstr(req, "GET /v1.41/info ")))
                fake_reply(fd, "200 OK",
                           "{\"NCPU\":64,\"MemTotal\":68719476736,\"CgroupVersion\":\"2\","
                           "\"SecurityOptions\":[\"name=seccomp,profile=builtin\","
                           "\"name=userns\"]}");
        else if (strstr(req, "GET /version HTTP/1.1\r\n")) {
                /* Chunked, as dockerd (Go net/http) sends a body of unknown length; one
                 * request per connection, so the client may not keep it for the next. */
                const char *r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                "11\r\n{\"ApiVersion\":\"1.\r\n"
                                "1d\r\n43\",\"Version\":\"24.0.99-fake\"}\r\n0\r\n\r\n";
                if (write(fd, r, strlen(r)) < 0)
                        _exit(2);
        } else if (strstr(req, "GET /v1.41/images/tiny/json"))
                fake_reply(fd, "404 Not Found", "{\"message\":\"No such image\"}");
        else if (strstr(req, "POST /v1.41/images/create?fromImage=tiny&tag=latest")) {
                const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\n\r\n";
                if (write(fd, h, strlen(h)) < 0)
                        _exit(2);
                for (size_t i = 0; i < ARRAY_SIZE(fake_pull_lines); i++)
                        if (write(fd, fake_pull_lines[i], strlen(fake_pull_lines[i])) < 0)
                                _exit(2);
        } else if (strstr(req, "GET /v1.41/images/ghost:1/json")) {
                /* what dockerd answers when an untagged name matched an image ID prefix */
                fake_reply(fd, "200 OK", "{\"Id\":\"sha256:77\",\"RepoTags\":[\"root-secret:1\"]}");
        } else if (strstr(req, "GET /v1.41/images/slow/json"))
                fake_reply(fd, "404 Not Found", "{\"message\":\"No such image\"}");
        else if (strstr(req, "POST /v1.41/images/create?fromImage=slow")) {
                const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Connection: close\r\n\r\n{\"status\":\"Pulling fs layer\","
                                "\"id\":\"l1\"}\n";
                if (write(fd, h, strlen(h)) < 0)
                        _exit(2);
                fake_hang(fd); /* a pull that takes forever */
        } else if (strstr(req, "POST /v1.41/containers/create?name=sandboxd-sbx_cancel"))
                fake_reply(fd, "201 Created", "{\"Id\":\"cancelid\",\"Warnings\":[]}");
        else if (strstr(req, "GET /v1.41/containers/cancelid/json"))
                fake_reply(fd, "200 OK",
                           "{\"Id\":\"cancelid\",\"Mounts\":[],\"HostConfig\":{\"NetworkMode\":"
                           "\"none\"},\"Config\":{\"WorkingDir\":\"\"}}");
        else if (strstr(req, "POST /v1.41/containers/cancelid/start"))
                fake_reply(fd, "204 No Content", "");
        else if (strstr(req, "POST /v1.41/containers/cancelid/attach")) {
                const char *h = "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\n"
                                "Upgrade: tcp\r\n\r\n";
                if (write(fd, h, strlen(h)) < 0)
                        _exit(2);
                fake_hang(fd); /* an agent that never answers HELLO */
        } else if (strstr(req, "POST /v1.41/containers/create"))
                fake_reply(fd, "201 Created", "{\"Id\":\"fakeid\",\"Warnings\":[]}");
        else if (strstr(req, "GET /v1.41/containers/fakeid/json"))
                fake_reply(fd, "200 OK",
                           "{\"Id\":\"fakeid\",\"Mounts\":[],\"HostConfig\":{\"NetworkMode\":"
                           "\"none\"},\"Config\":{\"WorkingDir\":\"\"}}");
        else if (strstr(req, "GET /v1.41/containers/agentid/json") ||
                 strstr(req, "GET /v1.41/containers/agentpid7/json"))
                fake_reply(fd, "200 OK",
                           "{\"Id\":\"agentid\",\"Name\":\"/sandboxd-sbx_fakeagent\","
                           "\"State\":{\"Running\":true},\"Mounts\":[],\"HostConfig\":{},"
                           "\"Config\":{\"WorkingDir\":\"/\",\"Labels\":{\"sandboxd.sandbox\":"
                           "\"sbx_fakeagent\",\"sandboxd.agent\":\"1\"}}}");
        else if (strstr(req, "POST /v1.41/containers/agentid/attach"))
                fake_agent(fd, 1);
        else if (strstr(req, "POST /v1.41/containers/agentpid7/attach"))
                fake_agent(fd, 7);
        else if (strstr(req, "POST /v1.41/containers/fakeid/start"))
                fake_reply(fd, "204 No Content", "");
        else if (strstr(req, "DELETE /v1.41/containers/fakeid"))
                fake_reply(fd, "204 No Content", "");
        else
                fake_reply(fd, "200 OK", "{}");
}

static pid_t fake_run(int lfd, const char *path);

static pid_t
fake_start(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        unlink(path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        return fake_run(lfd, path);
}

/* The fake on 127.0.0.1 (*port: the one it got), as a dockerd on another host; its request
 * log is path.log. */
static pid_t
fake_start_tcp(const char *path, int *port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t n = sizeof(sa);
        int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_eq(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(getsockname(lfd, (struct sockaddr *) &sa, &n), 0);
        *port = ntohs(sa.sin_port);
        fake_remote = true;
        return fake_run(lfd, path);
}

static pid_t
fake_run(int lfd, const char *path)
{
        pid_t pid;

        ck_assert_int_eq(listen(lfd, 16), 0);
        snprintf(fake_log, sizeof(fake_log), "%s.log", path);
        unlink(fake_log);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) { /* one child per connection: a request may hang while others go on */
                signal(SIGCHLD, SIG_IGN);
                for (;;) {
                        int fd = accept(lfd, NULL, NULL);
                        if (fd < 0)
                                _exit(1);
                        if (fork() == 0) {
                                fake_serve(fd);
                                _exit(0);
                        }
                        close(fd);
                }
        }
        close(lfd);
        return pid;
}

/* Stops the fake started on path and removes its socket and request log. */
static void
fake_stop(pid_t pid, const char *path)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        unlink(path);
        unlink(fake_log);
}

/* Starts the fake on a socket path of this process (written to path, 64 bytes) and brings the
 * backend up on it in docker-exec mode; the fake's pid. */
static pid_t
fake_backend_up(char path[64])
{
        char cfg[128];
        pid_t pid;

        snprintf(path, 64, "/tmp/sbx-fake-docker-%d.sock", (int) getpid());
        pid = fake_start(path);
        snprintf(cfg, sizeof(cfg), "{\"host\": \"unix://%s\", \"agent\": \"off\"}", path);
        backend_up(cfg);
        return pid;
}

START_TEST(test_pull_progress_fake)
{
        char path[64];
        pid_t pid;

        pid = fake_backend_up(path);
        struct sandbox_spec s = spec_default("sbx_fake");
        struct created c = {0};
        s.image = "tiny";
        ops->create(&s, &c, progress_cb, create_cb);
        run_until(&c.done);
        ck_assert_msg(c.sb != NULL, "%s", c.err.message);
        ck_assert_int_ge(c.progress, 5);
        ck_assert_int_eq(c.last_total, 1500); /* layer bytes summed over layers */
        destroy(c.sb);
        spec_free(&s);
        backend_down();
        fake_stop(pid, path);
}
END_TEST

/* _i = 0: the session starts at the right READY only. _i = 1: an agent that is not the
 * container's init (its stream is not private) is refused. */
START_TEST(test_agent_resync_fake)
{
        char path[64];
        pid_t pid;
        json_t *rec = json_pack("{s:s}", "container_id", _i == 0 ? "agentid" : "agentpid7");

        pid = fake_backend_up(path);
        struct sandbox_spec s = spec_default("sbx_fakeagent");
        struct created c = {0};
        ops->adopt(&s, rec, &c, create_cb);
        run_until(&c.done);
        ck_assert_msg(c.sb != NULL, "%s", c.err.message);
        ck_assert(c.sb->use_agent); /* from the label, whatever this daemon's own setting */

        char *argv[] = {"true", NULL};
        struct run r = {0};
        run_argv(c.sb, argv, &r);
        if (_i == 0) {
                ck_assert_msg(!r.error_seen, "exec failed");
                ck_assert_str_eq(r.out.data ? r.out.data : "", "fresh\n");
                ck_assert_int_eq(r.ex.exit_code, 3);
        } else {
                ck_assert(r.error_seen);
                ck_assert_ptr_nonnull(
                        strstr(r.error_message, "pid 7, not as the container's init"));
                ck_assert_uint_eq(r.out.len, 0);
        }
        run_free(&r);
        spec_free(&s); /* the sandbox goes with the backend's shutdown */
        json_decref(rec);
        backend_down();
        fake_stop(pid, path);
}
END_TEST

/* Whether the fake served a request line containing what. */
static bool
fake_saw(const char *what)
{
        char buf[65536];
        int fd = open(fake_log, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return false;
        buf[n] = 0;
        return strstr(buf, what) != NULL;
}

static void
wait_progress(struct created *c)
{
        while (!c->progress && !c->done)
                ck_assert(uv_run(&loop, UV_RUN_ONCE));
}

/* An unprivileged caller's create (_i = 0: no_pull) does not pull a missing image, and (_i =
 * 1: image_named) does not take an image that lacks the name it asked for. */
START_TEST(test_no_pull_and_named_image_fake)
{
        char path[64];
        pid_t pid;

        pid = fake_backend_up(path);
        struct sandbox_spec s = spec_default("sbx_fake");
        struct created c = {0};
        s.image = _i == 0 ? "tiny" : "ghost:1";
        s.no_pull = _i == 0;
        s.image_named = _i == 1;
        ops->create(&s, &c, progress_cb, create_cb);
        run_until(&c.done);
        ck_assert_ptr_null(c.sb);
        ck_assert_int_eq(c.err.code, -32005);
        ck_assert_msg(strstr(c.err.message, _i == 0 ? "allow_pull" : "ID prefix"), "%s",
                      c.err.message);
        ck_assert(!fake_saw("images/create"));
        ck_assert(!fake_saw("containers/create"));
        sbx_error_clear(&c.err);
        spec_free(&s);
        backend_down();
        fake_stop(pid, path);
}
END_TEST

/* _i = 0: cancelled during an image pull (nothing was made). _i = 1: cancelled while the
 * container's agent does not answer; the container is removed. */
START_TEST(test_create_cancelled_leaves_nothing)
{
        char path[64], cfg[PATH_MAX + 200];
        struct created c = {0};
        pid_t pid;

        snprintf(path, sizeof(path), "/tmp/sbx-fake-docker-%d.sock", (int) getpid());
        pid = fake_start(path);
        /* {"host": …, "agent": <the built agent>} */
        snprintf(cfg, sizeof(cfg), "{\"host\": \"unix://%s\", %s", path, exec_mode(0) + 1);
        backend_up(cfg);
        struct sandbox_spec s = spec_default("sbx_cancel");
        s.image = _i == 0 ? "slow" : "agentimg";
        ops->create(&s, &c, progress_cb, create_cb);
        if (_i == 0) {
                wait_progress(&c);
        } else {
                while (!fake_saw("/containers/cancelid/attach") && !c.done)
                        uv_run(&loop, UV_RUN_NOWAIT);
        }
        ck_assert_msg(!c.done, "the create ended early: %s", c.err.message);
        ops->cancel(&c);
        run_until(&c.done);
        ck_assert_ptr_null(c.sb);
        ck_assert_int_eq(c.err.code, SBX_E_UNUSABLE);
        ck_assert_str_eq(json_string_value(json_object_get(c.err.data, "state")), "cancelled");
        if (_i == 0)
                ck_assert(!fake_saw("/containers/create"));
        else
                ck_assert(fake_saw("DELETE /v1.41/containers/cancelid"));
        sbx_error_clear(&c.err);
        spec_free(&s);
        backend_down();
        fake_stop(pid, path);
}
END_TEST

/* _i = 0: the fake on a local socket, whose host is the daemon's. _i = 1: a dockerd on another
 * host (tcp://), whose GET /info gives the CPUs, memory and cgroup version the defaults of the
 * maxima follow, and says it remaps users. */
START_TEST(test_probe_fake)
{
        char path[64], cfg[128];
        struct probed p = {0};
        struct policy_host h = {.pid_max = 7};
        int port;
        pid_t pid;

        snprintf(path, sizeof(path), "/tmp/sbx-fake-docker-%d.%s", (int) getpid(),
                 _i ? "tcp" : "sock");
        pid = _i ? fake_start_tcp(path, &port) : fake_start(path);
        if (_i)
                snprintf(cfg, sizeof(cfg), "{\"host\": \"tcp://127.0.0.1:%d\", \"agent\": \"off\"}",
                         port);
        else
                snprintf(cfg, sizeof(cfg), "{\"host\": \"unix://%s\"}", path);
        backend_up(cfg);
        ops->probe(&p, probe_cb);
        run_until(&p.done);
        ck_assert_msg(p.available, "%s", p.reason);
        ck_assert_str_eq(json_string_value(json_object_get(p.details, "api_version")), "1.43");
        ck_assert_str_eq(json_string_value(json_object_get(p.details, "server_version")),
                         "24.0.99-fake");
        if (!_i) {
                ck_assert(!http_curl_initialised());
                ck_assert(!docker_remote_host(&h));
        } else {
                ck_assert(json_is_true(json_object_get(p.details, "userns_remap")));
                ck_assert_int_eq(json_integer_value(json_object_get(p.details, "ncpu")), 64);
                ck_assert(docker_remote_host(&h));
                ck_assert_int_eq(h.cpus, 64);
                ck_assert_int_eq(h.mem, INT64_C(64) << 30);
                ck_assert(h.cgroup2);
                ck_assert_int_eq(h.pid_max, 7); /* /info does not say: the daemon's stays */
        }
        json_decref(p.details);
        backend_down();
        fake_remote = false;
        fake_stop(pid, path);
}
END_TEST

static Suite *
docker_suite(void)
{
        Suite *s = suite_create("docker");
        TCase *tc = tcase_create("real dockerd");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_probe);
        tcase_add_test(tc, test_probe_no_daemon);
        tcase_add_loop_test(tc, test_hardening, 0, 2);
        tcase_add_test(tc, test_unprivileged_owner);
        tcase_add_test(tc, test_owner_with_a_large_uid);
        tcase_add_test(tc, test_readonly_rootfs_workdir);
        tcase_add_test(tc, test_resources_and_section);
        tcase_add_test(tc, test_policy_denies_dangerous_specs);
        tcase_add_test(tc, test_named_volume_bind_etc);
        tcase_add_test(tc, test_swapped_bind_source_rejected);
        tcase_add_loop_test(tc, test_exec_mode_used, 0, 2);
        tcase_add_test(tc, test_agent_config_errors);
        tcase_add_test(tc, test_validate_reports_every_problem);
        tcase_add_test(tc, test_agent_that_dies_fails_the_create);
        tcase_add_loop_test(tc, test_demux_interleaved, 0, 2);
        tcase_add_loop_test(tc, test_stdin_round_trip, 0, 2);
        tcase_add_loop_test(tc, test_100mb_output, 0, 2);
        tcase_add_loop_test(tc, test_kill_tree_inside_container, 0, 2);
        tcase_add_loop_test(tc, test_oom_reported, 0, 2);
        tcase_add_loop_test(tc, test_container_removed_behind_our_back, 0, 2);
        tcase_add_loop_test(tc, test_container_vanished_before_event, 0, 2);
        tcase_add_loop_test(tc, test_save_adopt_after_restart, 0, 2);
        tcase_add_test(tc, test_reap_orphans);
        tcase_add_test(tc, test_file_round_trip_binary);
        tcase_add_loop_test(tc, test_shell_state, 0, 2);
        tcase_add_loop_test(tc, test_pty_and_resize, 0, 2);
        tcase_add_test(tc, test_pull_progress_fake);
        tcase_add_loop_test(tc, test_no_pull_and_named_image_fake, 0, 2);
        tcase_add_loop_test(tc, test_probe_fake, 0, 2);
        tcase_add_loop_test(tc, test_create_cancelled_leaves_nothing, 0, 2);
        tcase_add_loop_test(tc, test_agent_resync_fake, 0, 2);
        suite_add_tcase(s, tc);
        return s;
}

/* Makes run_dir and takes its lock, held (by this process and the forked tests) until exit: a
 * free lock tells tests/docker/setup.sh that the run is gone. */
static int
run_lock(void)
{
        char path[sizeof(run_dir) + 8];
        int fd;

        if (!mkdtemp(run_dir))
                return -1;
        snprintf(path, sizeof(path), "%s/lock", run_dir);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
                perror(path);
                return -1;
        }
        return fd;
}

/* Removes the containers labelled with the run's instance (or one below it) and run_dir. */
static int
run_cleanup(int lock_fd)
{
        char cmd[512], path[sizeof(run_dir) + 8];
        int rc;

        /* The label's value is run_dir or run_dir/...: a prefix match over docker's listing. */
        snprintf(cmd, sizeof(cmd),
                 "docker ps -a --filter label=sandboxd.instance --format "
                 "'{{.ID}} {{.Label \"sandboxd.instance\"}}' | "
                 "awk -v d=%s '$2 == d || index($2, d \"/\") == 1 { print $1 }' | "
                 "xargs -r docker rm -f >/dev/null",
                 run_dir);
        rc = system(cmd);
        snprintf(path, sizeof(path), "%s/lock", run_dir);
        unlink(path);
        close(lock_fd);
        rmdir(run_dir);
        if (rc != 0)
                fprintf(stderr, "check_docker: '%s' failed (%d)\n", cmd, rc);
        return rc == 0 ? 0 : -1;
}

int
main(void)
{
        SRunner *sr = srunner_create(docker_suite());
        int failed, lock_fd = run_lock();

        if (lock_fd < 0)
                return EXIT_FAILURE;
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        if (run_cleanup(lock_fd) < 0)
                failed++;
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
