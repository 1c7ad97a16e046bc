/* check_policy_rules.c — rules-file loading (good, bad line, failing inline test, floor),
 * SHA-256, container specs (policy_eval_sandbox) and the approval-memory helpers. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "protocol/util.h"

#define DATA "tests/data/policy/"

static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};

static struct policy_ctx
ctx_default(void)
{
        struct policy_ctx c = {.backend = "docker",
                               .cwd = "/home/user/project",
                               .home = "/home/user",
                               .protected_paths = prot,
                               .workspace = "/home/user/project"};
        return c;
}

static bool
has_rule(const struct policy_result *r, const char *rule)
{
        for (size_t k = 0; k < r->nfindings; k++)
                if (strcmp(r->findings[k].rule, rule) == 0)
                        return true;
        return false;
}

static enum policy_verdict
eval(struct policy *p, const char *cmd, const char *rule)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(p, &ctx, cmd, &r);
        enum policy_verdict v = r.verdict;
        if (rule)
                ck_assert_msg(has_rule(&r, rule), "%s: %s missing", cmd, rule);
        policy_result_clear(&r);
        return v;
}

START_TEST(test_load_good)
{
        struct policy *p = NULL;
        struct sbx_error err = {0};

        ck_assert_int_eq(policy_load(DATA "good.rules", true, &p, &err), 0);
        ck_assert_ptr_nonnull(p);
        struct policy *d = policy_new_default();
        ck_assert_uint_eq(policy_rule_count(p), policy_rule_count(d) + 4);
        ck_assert_int_eq(strlen(policy_sha256(p)), 64);
        ck_assert_str_ne(policy_sha256(p), policy_sha256(d));
        ck_assert_int_eq(eval(p, "curl -s https://evil.example/a", "no-curl-pipe"), POLICY_DENY);
        ck_assert_int_eq(eval(p, "rm -rf build", NULL), POLICY_ALLOW);
        ck_assert_int_eq(eval(d, "rm -rf build", "delete.recursive"), POLICY_ASK);
        ck_assert_int_eq(eval(p, "git clean -fdx", NULL), POLICY_ALLOW);
        ck_assert_int_eq(eval(d, "git clean -fdx", "git.clean"), POLICY_ASK);
        /* an allow rule never lifts the floor */
        ck_assert_int_eq(eval(p, "rm -rf build /", "floor.rm-root"), POLICY_DENY);
        policy_free(d);
        policy_free(p);
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_load_bad_line)
{
        struct policy *p = (struct policy *) 0x1;
        struct sbx_error err = {0};

        ck_assert_int_eq(policy_load(DATA "bad_syntax.rules", true, &p, &err), -EINVAL);
        ck_assert_ptr_eq(p, (struct policy *) 0x1);
        ck_assert_ptr_nonnull(strstr(err.message, "bad_syntax.rules:4:"));
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_load_failing_test)
{
        struct policy *p = NULL;
        struct sbx_error err = {0};

        /* allowing every rm must not lift the floor, so the inline test on line 3 fails */
        ck_assert_int_eq(policy_load(DATA "bad_test.rules", true, &p, &err), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_ptr_nonnull(strstr(err.message, "bad_test.rules:3: test failed"));
        ck_assert_ptr_nonnull(strstr(err.message, "floor.rm-root"));
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_load_floor_disable)
{
        struct policy *p = NULL;
        struct sbx_error err = {0};

        ck_assert_int_eq(policy_load(DATA "floor_lift.rules", true, &p, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "floor_lift.rules:1:"));
        sbx_error_clear(&err);
}
END_TEST

START_TEST(test_load_missing)
{
        struct policy *p = NULL;
        struct sbx_error err = {0};

        ck_assert_int_eq(policy_load(DATA "nope.rules", false, &p, &err), 0);
        ck_assert_str_eq(policy_sha256(p),
                         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        policy_free(p);
        p = NULL;
        ck_assert_int_eq(policy_load(DATA "nope.rules", true, &p, &err), -ENOENT);
        ck_assert_ptr_null(p);
        ck_assert_ptr_nonnull(strstr(err.message, "nope.rules"));
        sbx_error_clear(&err);
}
END_TEST

static const char *const bad_lines[] = {
        "frobnicate x cmd=ls",
        "allow BadId cmd=ls",
        "allow x",
        "allow x foo=bar",
        "allow x cmd=",
        "ask floor.mkfs cmd=x",
        "allow dup cmd=a\nallow dup cmd=b",
        "test maybe: ls",
        "test allow ls",
        "test allow:",
        "disable nosuch.rule",
        "disable parse.error",
        "allow x prefix=\"rm -rf",
        "test deny: ls",
};

START_TEST(test_load_bad_variants)
{
        char path[] = "/tmp/check_policy_rules_XXXXXX";
        int fd = mkstemp(path);
        struct policy *p = NULL;
        struct sbx_error err = {0};

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, bad_lines[_i], strlen(bad_lines[_i])), strlen(bad_lines[_i]));
        close(fd);
        ck_assert_msg(policy_load(path, true, &p, &err) < 0, "accepted: %s", bad_lines[_i]);
        ck_assert_ptr_null(p);
        char *want = xasprintf("%s:", path);
        ck_assert_ptr_nonnull(strstr(err.message, want));
        free(want);
        sbx_error_clear(&err);
        unlink(path);
}
END_TEST

/* ---- container specs ---- */

struct scase {
        const char *spec;
        enum policy_verdict v;
        const char *rule;
        bool host;
};

static const struct scase scases[] = {
        {"{\"backend\":\"docker\"}", POLICY_ALLOW, NULL, false},
        {"{\"backend\":\"local\"}", POLICY_ALLOW, NULL, true},
        {"{\"backend\":\"docker\",\"network\":\"host\"}", POLICY_ASK, "container.host-ns-soft",
         true},
        {"{\"backend\":\"docker\",\"mounts\":[{\"type\":\"bind\",\"source\":\"/\",\"target\":\"/"
         "h\"}]}",
         POLICY_DENY, "container.mount-root", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/var\",\"target\":\"/v\"}]}", POLICY_DENY,
         "container.mount-socket", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/run\",\"target\":\"/v\"}]}", POLICY_DENY,
         "container.mount-socket", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/etc/ssl\",\"target\":\"/s\"}]}",
         POLICY_DENY, "container.mount-system", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/home\",\"target\":\"/h\"}]}", POLICY_DENY,
         "container.mount-credential", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"~/.ssh\",\"target\":\"/s\"}]}", POLICY_DENY,
         "container.mount-credential", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/home/user\",\"target\":\"/h\"}]}",
         POLICY_DENY, "container.mount-credential", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/var/lib\",\"target\":\"/s\"}]}",
         POLICY_DENY, "container.mount-system", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/home/user/project/src\",\"target\":\"/"
         "w\"}]}",
         POLICY_ALLOW, NULL, true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/srv/data\",\"target\":\"/d\"}]}",
         POLICY_ASK, "container.mount-host", true},
        {"{\"mounts\":[{\"type\":\"tmpfs\",\"target\":\"/t\"}]}", POLICY_ALLOW, NULL, false},
        {"{\"mounts\":[{\"type\":\"volume\",\"source\":\"evil\",\"target\":\"/e\"}]}", POLICY_DENY,
         "container.mount-system", true},
        {"{\"mounts\":[{\"type\":\"volume\",\"source\":\"disk\",\"target\":\"/e\"}]}", POLICY_DENY,
         "container.volume-device", true},
        {"{\"mounts\":[{\"type\":\"volume\",\"source\":\"plain\",\"target\":\"/e\"}]}",
         POLICY_ALLOW, NULL, false},
        {"{\"mounts\":[{\"type\":\"volume\",\"source\":\"nfs\",\"target\":\"/e\"}]}", POLICY_ASK,
         "container.volume-netfs", false},
        {"{\"mounts\":[{\"type\":\"volume\",\"source\":\"plug\",\"target\":\"/e\"}]}", POLICY_ASK,
         "container.volume-driver", false},
        {"{\"docker\":{\"host_config\":{\"Privileged\":true}}}", POLICY_DENY,
         "container.privileged", true},
        {"{\"docker\":{\"host_config\":{\"PidMode\":\"host\"}}}", POLICY_DENY, "container.host-ns",
         true},
        {"{\"docker\":{\"host_config\":{\"IpcMode\":\"host\"}}}", POLICY_DENY, "container.host-ns",
         true},
        {"{\"docker\":{\"host_config\":{\"UTSMode\":\"host\"}}}", POLICY_ASK,
         "container.host-ns-soft", true},
        {"{\"docker\":{\"host_config\":{\"NetworkMode\":\"container:abc\"}}}", POLICY_ASK,
         "container.host-ns-soft", false},
        {"{\"docker\":{\"host_config\":{\"CapAdd\":[\"SYS_ADMIN\"]}}}", POLICY_DENY,
         "container.cap", false},
        {"{\"docker\":{\"host_config\":{\"CapAdd\":[\"cap_sys_ptrace\"]}}}", POLICY_DENY,
         "container.cap", false},
        {"{\"docker\":{\"host_config\":{\"CapAdd\":[\"NET_ADMIN\"]}}}", POLICY_ASK,
         "container.cap-soft", false},
        {"{\"docker\":{\"host_config\":{\"CapAdd\":[\"CHOWN\"]}}}", POLICY_ALLOW, NULL, false},
        {"{\"docker\":{\"host_config\":{\"Devices\":[{\"PathOnHost\":\"/dev/sda\"}]}}}",
         POLICY_DENY, "container.device", true},
        {"{\"docker\":{\"host_config\":{\"Devices\":[{\"PathOnHost\":\"/dev/fuse\"}]}}}",
         POLICY_ASK, "container.device-soft", true},
        {"{\"docker\":{\"host_config\":{\"SecurityOpt\":[\"seccomp=unconfined\"]}}}", POLICY_DENY,
         "container.secopt", false},
        {"{\"docker\":{\"host_config\":{\"SecurityOpt\":[\"systempaths=unconfined\"]}}}",
         POLICY_DENY, "container.secopt", false},
        {"{\"docker\":{\"host_config\":{\"SecurityOpt\":[\"label=disable\"]}}}", POLICY_ASK,
         "container.selinux", false},
        {"{\"docker\":{\"host_config\":{\"SecurityOpt\":[\"no-new-privileges\"]}}}", POLICY_ALLOW,
         NULL, false},
        {"{\"docker\":{\"host_config\":{\"Sysctls\":{\"kernel.core_pattern\":\"|x\"}}}}",
         POLICY_ASK, "container.sysctl", false},
        {"{\"docker\":{\"host_config\":{\"Sysctls\":{\"net.ipv4.ip_unprivileged_port_start\":\"0\"}"
         "}}}",
         POLICY_ALLOW, NULL, false},
        {"{\"docker\":{\"host_config\":{\"Binds\":[\"/var/run/docker.sock:/s:ro\"]}}}", POLICY_DENY,
         "container.mount-socket", true},
        {"{\"docker\":{\"host_config\":{\"Binds\":[\"/run/user/1000:/r\"]}}}", POLICY_DENY,
         "container.mount-socket", true},
        {"{\"docker\":{\"host_config\":{\"Binds\":[\"/home/user/project:/w:rshared\"]}}}",
         POLICY_ASK, "container.propagation", true},
        {"{\"docker\":{\"host_config\":{\"Binds\":[\"evil:/x\"]}}}", POLICY_DENY,
         "container.mount-system", true},
        {"{\"docker\":{\"host_config\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/etc\"}]}}}",
         POLICY_DENY, "container.mount-system", true},
        {"{\"docker\":{\"host_config\":{\"Mounts\":[{\"Type\":\"bind\",\"Source\":\"/home/user/"
         "project\","
         "\"BindOptions\":{\"Propagation\":\"shared\"}}]}}}",
         POLICY_ASK, "container.propagation", true},
        {"{\"docker\":{\"host_config\":{\"Mounts\":[{\"Type\":\"volume\",\"Source\":\"v2\","
         "\"VolumeOptions\":{\"DriverConfig\":{\"Options\":{\"type\":\"none\",\"o\":\"bind\","
         "\"device\":\"/root\"}}}}]}}}",
         POLICY_DENY, "container.mount-system", true},
        {"{\"docker\":{\"host_config\":{\"PortBindings\":{\"80/tcp\":[{\"HostIp\":\"\","
         "\"HostPort\":\"8080\"}]}}}}",
         POLICY_ASK, "container.publish", false},
        {"{\"docker\":{\"host_config\":{\"PortBindings\":{\"80/tcp\":[{\"HostIp\":\"127.0.0.1\","
         "\"HostPort\":\"8080\"}]}}}}",
         POLICY_ALLOW, NULL, false},
        {"{\"docker\":{\"host_config\":{\"PublishAllPorts\":true}}}", POLICY_ASK,
         "container.publish", false},
        {"{\"docker\":{\"host_config\":{\"VolumesFrom\":[\"other\"]}}}", POLICY_ASK,
         "container.volumes-from", false},
        {"{\"docker\":{\"host_config\":{\"DeviceCgroupRules\":[\"a *:* rwm\"]}}}", POLICY_DENY,
         "container.device", false},
        {"{\"backend\":\"singularity\",\"singularity\":{\"binds\":[\"/etc:/e\"]}}", POLICY_DENY,
         "container.mount-system", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/etc/sandboxd\",\"target\":\"/c\"}]}",
         POLICY_DENY, "container.mount-system", true},
        {"{\"mounts\":[{\"type\":\"bind\",\"source\":\"/var/lib/sandboxd/x\",\"target\":\"/c\"}]}",
         POLICY_DENY, "container.mount-self", true},
};

START_TEST(test_sandbox_specs)
{
        const struct scase *c = &scases[_i];
        struct policy *p = policy_new_default();
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        json_error_t je;
        json_t *spec = json_loads(c->spec, 0, &je);
        json_t *vols = json_pack(
                "{s:{s:s,s:{s:s,s:s,s:s}},s:{s:s,s:{s:s,s:s}},s:{s:s,s:{}},s:{s:s,s:{s:s,s:s}},"
                "s:{s:s}}",
                "evil", "Driver", "local", "Options", "type", "none", "o", "bind", "device", "/etc",
                "disk", "Driver", "local", "Options", "type", "ext4", "device", "/dev/sda2",
                "plain", "Driver", "local", "Options", "nfs", "Driver", "local", "Options", "type",
                "nfs", "o", "addr=1.2.3.4", "plug", "Driver", "rexray");

        ck_assert_msg(spec != NULL, "bad fixture %d: %s", _i, je.text);
        policy_eval_sandbox(p, &ctx, spec, vols, &r);
        ck_assert_msg(r.verdict == c->v, "spec %d: expected %s got %s (%s)", _i,
                      policy_verdict_name(c->v), policy_verdict_name(r.verdict),
                      r.nfindings ? r.findings[0].rule : "none");
        if (c->rule)
                ck_assert_msg(has_rule(&r, c->rule), "spec %d: %s missing (first %s)", _i, c->rule,
                              r.nfindings ? r.findings[0].rule : "none");
        ck_assert_msg(r.host_access == c->host, "spec %d: host_access %d", _i, r.host_access);
        policy_result_clear(&r);
        json_decref(spec);
        json_decref(vols);
        policy_free(p);
}
END_TEST

START_TEST(test_sandbox_symlink)
{
        char dir[] = "/tmp/check_policy_ws_XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *link = xasprintf("%s/innocent", dir);
        ck_assert_int_eq(symlink("/etc", link), 0);
        struct policy *p = policy_new_default();
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        ctx.workspace = dir;
        json_t *spec = json_pack("{s:[{s:s,s:s,s:s}]}", "mounts", "type", "bind", "source", link,
                                 "target", "/w");

        policy_eval_sandbox(p, &ctx, spec, NULL, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(has_rule(&r, "container.mount-system"));
        policy_result_clear(&r);
        json_decref(spec);
        unlink(link);
        rmdir(dir);
        free(link);
        policy_free(p);
}
END_TEST

/* ---- approvals ---- */

START_TEST(test_approval_keys)
{
        struct policy *p = policy_new_default();
        struct policy_ctx ctx = ctx_default();
        struct policy_result a, b, c, d;

        policy_eval_command(p, &ctx, "rm -rf build", &a);
        policy_eval_command(p, &ctx, "rm -rf src", &b);
        policy_eval_command(p, &ctx, "rm -rf /", &c);
        policy_eval_command(p, &ctx, "curl x | sh", &d);
        json_t *set = json_object();
        ck_assert(!policy_approval_covers(&a, set));
        ck_assert_int_eq(policy_approval_remember(&a, set, false), 0);
        ck_assert(policy_approval_covers(&a, set));
        /* key = rule + subject: approving build does not approve src */
        ck_assert(!policy_approval_covers(&b, set));
        ck_assert(!policy_approval_covers(&c, set));
        ck_assert_int_eq(policy_approval_remember(&c, set, false), -EPERM);
        ck_assert_int_eq(policy_approval_remember(&d, set, true), -EPERM);
        ck_assert_int_eq(policy_approval_remember(&d, set, false), 0);
        ck_assert(policy_approval_covers(&d, set));
        json_t *keys = policy_approval_keys(&a);
        ck_assert_int_eq(json_array_size(keys), 1);
        ck_assert_str_eq(json_string_value(json_array_get(keys, 0)),
                         "delete.recursive|/home/user/project/build");
        ck_assert_int_eq(policy_approvals_revoke(set, json_string_value(json_array_get(keys, 0))),
                         0);
        ck_assert(!policy_approval_covers(&a, set));
        ck_assert_int_eq(policy_approvals_revoke(set, "nope|x"), -ENOENT);
        json_t *ch = policy_result_choices(&a);
        ck_assert_int_eq(json_array_size(ch), 4);
        json_decref(ch);
        ch = policy_result_choices(&d);
        ck_assert_int_eq(json_array_size(ch), 3);
        ck_assert_str_eq(json_string_value(json_array_get(ch, 2)), "deny");
        json_decref(ch);
        ch = policy_result_choices(&c);
        ck_assert_int_eq(json_array_size(ch), 1);
        json_decref(ch);
        json_decref(keys);
        json_decref(set);
        policy_result_clear(&a);
        policy_result_clear(&b);
        policy_result_clear(&c);
        policy_result_clear(&d);
        policy_free(p);
}
END_TEST

START_TEST(test_approval_persist)
{
        char dir[] = "/tmp/check_policy_appr_XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char *path = xasprintf("%s/approvals.json", dir);
        struct policy *p = policy_new_default();
        struct policy_ctx ctx = ctx_default();
        struct policy_result a;
        struct sbx_error err = {0};
        json_t *set = NULL;

        ck_assert_int_eq(policy_approvals_load(path, &set, &err), 0);
        ck_assert_int_eq(json_object_size(set), 0);
        policy_eval_command(p, &ctx, "git push --force origin main", &a);
        ck_assert(policy_result_allows_always(&a));
        ck_assert_int_eq(policy_approval_remember(&a, set, true), 0);
        ck_assert_int_eq(policy_approvals_save(path, set, &err), 0);
        json_decref(set);
        set = NULL;
        ck_assert_int_eq(policy_approvals_load(path, &set, &err), 0);
        ck_assert(policy_approval_covers(&a, set));
        json_decref(set);
        FILE *f = fopen(path, "w");
        fputs("{\"version\":2}", f);
        fclose(f);
        ck_assert_int_eq(policy_approvals_load(path, &set, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, path));
        sbx_error_clear(&err);
        unlink(path);
        rmdir(dir);
        free(path);
        policy_result_clear(&a);
        policy_free(p);
}
END_TEST

static Suite *
suite(void)
{
        Suite *s = suite_create("policy_rules");
        TCase *tc = tcase_create("rules");

        tcase_add_test(tc, test_load_good);
        tcase_add_test(tc, test_load_bad_line);
        tcase_add_test(tc, test_load_failing_test);
        tcase_add_test(tc, test_load_floor_disable);
        tcase_add_test(tc, test_load_missing);
        tcase_add_loop_test(tc, test_load_bad_variants, 0, (int) ARRAY_SIZE(bad_lines));
        suite_add_tcase(s, tc);
        tc = tcase_create("sandbox");
        tcase_add_loop_test(tc, test_sandbox_specs, 0, (int) ARRAY_SIZE(scases));
        tcase_add_test(tc, test_sandbox_symlink);
        suite_add_tcase(s, tc);
        tc = tcase_create("approval");
        tcase_add_test(tc, test_approval_keys);
        tcase_add_test(tc, test_approval_persist);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(suite());

        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
