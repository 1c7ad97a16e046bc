/* check_policy.c — the shell-command policy: a labelled case table (floor, each rule,
 * obfuscations, carriers, wrappers, false-positive traps), argv execs and limits. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/check_policy_cases.h"
#include "tests/unit/helper_policy.h"

static struct policy *pol;

static struct policy_ctx
ctx_default(void)
{
        struct policy_ctx c = {.backend = "local",
                               .host_access = true,
                               .cwd = "/home/user/project",
                               .home = "/home/user",
                               .protected_paths = policy_test_prot};
        return c;
}

static void
setup(void)
{
        pol = policy_new_default();
}

static void
teardown(void)
{
        pol = policy_free(pol);
}

START_TEST(test_case_table)
{
        const struct pcase *c = &cases[_i];
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(pol, &ctx, c->cmd, &r);
        char *d = policy_test_describe(&r);
        ck_assert_msg(r.verdict == c->v, "case %d [%s]: expected %s, got %s (%s)", _i, c->cmd,
                      policy_verdict_name(c->v), policy_verdict_name(r.verdict), d);
        if (c->rule)
                ck_assert_msg(policy_test_has_rule(&r, c->rule),
                              "case %d [%s]: rule %s missing (%s)", _i, c->cmd, c->rule, d);
        for (size_t k = 0; k < r.nfindings; k++) {
                ck_assert_ptr_nonnull(r.findings[k].message);
                ck_assert_ptr_nonnull(r.findings[k].rule);
        }
        free(d);
        policy_result_clear(&r);
}
END_TEST

START_TEST(test_floor_flags)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(pol, &ctx, "rm -rf /", &r);
        ck_assert_int_eq(r.nfindings, 1);
        ck_assert(r.findings[0].flags & POLICY_F_FLOOR);
        ck_assert_str_eq(r.findings[0].subject, "/");
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, "rm -rf src", &r);
        ck_assert(!(r.findings[0].flags & POLICY_F_FLOOR));
        ck_assert(!(r.findings[0].flags & POLICY_F_NO_ALWAYS));
        ck_assert_str_eq(r.findings[0].subject, "/home/user/project/src");
        policy_result_clear(&r);
        /* the same delete inside a carrier may not be remembered forever */
        policy_eval_command(pol, &ctx, "bash -c 'rm -rf src'", &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(r.findings[0].flags & POLICY_F_NO_ALWAYS);
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, "curl x | sh", &r);
        ck_assert(r.findings[0].flags & POLICY_F_NO_ALWAYS);
        policy_result_clear(&r);
}
END_TEST

START_TEST(test_strictest_wins)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(pol, &ctx, "rm -rf src; git push -f; reboot", &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(policy_test_has_rule(&r, "delete.recursive"));
        ck_assert(policy_test_has_rule(&r, "git.push-force"));
        ck_assert(policy_test_has_rule(&r, "floor.power"));
        policy_result_clear(&r);
}
END_TEST

START_TEST(test_env_variables)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        json_t *env = json_pack("{s:s,s:s}", "TARGET", "/", "D", "/etc");

        ctx.env = env;
        policy_eval_command(pol, &ctx, "rm -rf $TARGET", &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, "rm -rf \"${D}\"", &r);
        ck_assert(policy_test_has_rule(&r, "floor.rm-system"));
        policy_result_clear(&r);
        /* unknown variable: not provably the root, but still a recursive delete */
        policy_eval_command(pol, &ctx, "rm -rf $UNKNOWN", &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        policy_result_clear(&r);
        json_decref(env);
}
END_TEST

START_TEST(test_unknown_cwd)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        ctx.cwd = NULL;
        policy_eval_command(pol, &ctx, "rm -rf *", &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        policy_result_clear(&r);
        ctx.cwd = "/";
        policy_eval_command(pol, &ctx, "rm -rf *", &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        policy_result_clear(&r);
}
END_TEST

/* A home the policy is not told (a remote sandbox judged before it exists): neither the
 * caller's home nor $HOME in env is taken for it, and a change to a path that may be it asks;
 * the same commands with that home known hit it. */
START_TEST(test_unknown_home)
{
        static const char *const cmds[] = {"mv /srv/agent /tmp/x",
                                           "rsync -a --delete e/ /srv/agent/", "rm -rf /srv/agent",
                                           "chmod -R 777 /srv/agent"};
        struct policy_ctx ctx = ctx_default();
        json_t *env = json_pack("{s:s}", "HOME", "/home/user");
        struct policy_result r;

        ctx.env = env;
        for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
                ctx.home_unknown = true;
                policy_eval_command(pol, &ctx, cmds[i], &r);
                ck_assert_msg(r.verdict == POLICY_ASK && policy_test_has_rule(&r, "home.unknown"),
                              "%s: %s", cmds[i], policy_test_describe(&r));
                policy_result_clear(&r);
                ctx.home_unknown = false;
                ctx.home = "/srv/agent";
                json_object_set_new(env, "HOME", json_string("/srv/agent"));
                policy_eval_command(pol, &ctx, cmds[i], &r);
                ck_assert_msg(r.verdict == POLICY_DENY, "%s: %s", cmds[i],
                              policy_test_describe(&r));
                policy_result_clear(&r);
                ctx.home = "/home/user";
                json_object_set_new(env, "HOME", json_string("/home/user"));
        }
        /* The caller's home is not the unknown one: ~ is still the home, whatever it is. */
        ctx.home_unknown = true;
        policy_eval_command(pol, &ctx, "rm -rf /home/user", &r);
        ck_assert(!policy_test_has_rule(&r, "floor.rm-home"));
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, "rm -rf ~", &r);
        ck_assert(policy_test_has_rule(&r, "floor.rm-home"));
        policy_result_clear(&r);
        /* A program put where that home's PATH may look is a start-up file. */
        policy_eval_command(pol, &ctx, "echo x > /srv/agent/.local/bin/ls", &r);
        ck_assert_msg(policy_test_has_rule(&r, "write.startup"), "%s", policy_test_describe(&r));
        policy_result_clear(&r);
        json_decref(env);
}
END_TEST

START_TEST(test_argv)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        char *rmroot[] = {"rm", "-rf", "/", NULL};
        char *quoted[] = {"echo", "rm -rf /", NULL};
        char *bashc[] = {"/bin/bash", "-c", "reboot", NULL};
        char *sudo[] = {"sudo", "-u", "root", "mkfs.ext4", "/dev/sda", NULL};
        char *git[] = {"git", "push", "--force", NULL};
        char *semi[] = {"ls", ";", "reboot", NULL};
        char *empty[] = {NULL};

        policy_eval_argv(pol, &ctx, rmroot, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        policy_result_clear(&r);
        policy_eval_argv(pol, &ctx, quoted, &r);
        ck_assert_int_eq(r.verdict, POLICY_ALLOW);
        policy_result_clear(&r);
        policy_eval_argv(pol, &ctx, bashc, &r);
        ck_assert(policy_test_has_rule(&r, "floor.power"));
        policy_result_clear(&r);
        policy_eval_argv(pol, &ctx, sudo, &r);
        ck_assert(policy_test_has_rule(&r, "floor.mkfs"));
        policy_result_clear(&r);
        policy_eval_argv(pol, &ctx, git, &r);
        ck_assert(policy_test_has_rule(&r, "git.push-force"));
        policy_result_clear(&r);
        /* no shell: ";" is just an argument to ls */
        policy_eval_argv(pol, &ctx, semi, &r);
        ck_assert_int_eq(r.verdict, POLICY_ALLOW);
        policy_result_clear(&r);
        policy_eval_argv(pol, &ctx, empty, &r);
        ck_assert_int_eq(r.verdict, POLICY_ALLOW);
        policy_result_clear(&r);
        /* Exactly sized words, so ASan sees a read past one: a lone "-" after docker once
         * read two bytes past its terminator (found by the fuzzer in CI). */
        char *dash = xstrdup("-"), *ps = xstrdup("ps");
        char *docker[] = {"docker", dash, ps, NULL};
        policy_eval_argv(pol, &ctx, docker, &r);
        ck_assert_int_eq(r.verdict, POLICY_ALLOW);
        policy_result_clear(&r);
        free(dash);
        free(ps);
}
END_TEST

static char *
repeat(const char *piece, size_t times)
{
        size_t l = strlen(piece);
        char *s = xmalloc(l * times + 1);

        for (size_t k = 0; k < times; k++)
                memcpy(s + k * l, piece, l);
        s[l * times] = '\0';
        return s;
}

START_TEST(test_limits)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        char *big = repeat("a", 300 * 1024);
        char *deep = repeat("$(", 200);
        char *bt = repeat("( ", 5000);
        char *many = repeat("ls;", 20000);
        char *braces = repeat("{a,b}", 20);

        policy_eval_command(pol, &ctx, big, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(policy_test_has_rule(&r, "parse.limit"));
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, deep, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, bt, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(policy_test_has_rule(&r, "parse.limit"));
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, many, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(policy_test_has_rule(&r, "parse.limit"));
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, braces, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK); /* 2^20 words: not expanded, opaque */
        policy_result_clear(&r);
        /* a limit never hides a floor command that was seen before it */
        char *tail = xasprintf("rm -rf /; %s", deep);
        policy_eval_command(pol, &ctx, tail, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        policy_result_clear(&r);
        /* carriers nested deeper than the limit */
        const char *nest = "eval \"eval \\\"eval 'eval \\\\\\\"x\\\\\\\"'\\\"\"";
        policy_eval_command(pol, &ctx, nest, &r);
        ck_assert_int_ne(r.verdict, POLICY_DENY);
        policy_result_clear(&r);
        free(tail);
        free(big);
        free(deep);
        free(bt);
        free(many);
        free(braces);
}
END_TEST

/* a=$a$a doubles a value at each assignment: forty are 2^40 bytes. Each expanded byte is a
 * step, so the budget stops it (parse.limit) in bounded memory, and what came before it is
 * still judged. */
START_TEST(test_value_growth)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        char *dbl = repeat("a=$a$a; ", 40);
        char *echo = xasprintf("a=x; %secho \"$a\"", dbl);
        char *run = xasprintf("a=x; %s$a", dbl);
        char *floor = xasprintf("rm -rf ~; a=x; %secho $a", dbl);

        policy_eval_command(pol, &ctx, echo, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(policy_test_has_rule(&r, "parse.limit"));
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, run, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        policy_result_clear(&r);
        policy_eval_command(pol, &ctx, floor, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(policy_test_has_rule(&r, "floor.rm-home"));
        policy_result_clear(&r);
        free(floor);
        free(run);
        free(echo);
        free(dbl);
}
END_TEST

START_TEST(test_carrier_depth)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;
        struct buf b = {0};

        /* eval eval eval … 'ls' (literal all the way down) beyond the carrier limit */
        for (int k = 0; k < 12; k++)
                buf_append(&b, "eval ", 5);
        buf_append(&b, "ls", 3);
        policy_eval_command(pol, &ctx, b.data, &r);
        ck_assert_int_eq(r.verdict, POLICY_ASK);
        ck_assert(policy_test_has_rule(&r, "parse.limit"));
        policy_result_clear(&r);
        buf_free(&b);
}
END_TEST

START_TEST(test_findings_json)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_result r;

        policy_eval_command(pol, &ctx, "git push --force", &r);
        json_t *j = policy_findings_json(&r);
        ck_assert_int_eq(json_array_size(j), 1);
        json_t *f = json_array_get(j, 0);
        ck_assert_str_eq(json_string_value(json_object_get(f, "rule")), "git.push-force");
        ck_assert_str_eq(json_string_value(json_object_get(f, "verdict")), "ask");
        ck_assert_ptr_nonnull(json_string_value(json_object_get(f, "message")));
        ck_assert_ptr_nonnull(json_string_value(json_object_get(f, "match")));
        json_decref(j);
        policy_result_clear(&r);
        ck_assert_str_eq(policy_verdict_name(POLICY_DENY), "deny");
}
END_TEST

static Suite *
suite(void)
{
        Suite *s = suite_create("policy");
        TCase *tc = tcase_create("commands");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_case_table, 0, (int) ARRAY_SIZE(cases));
        tcase_add_test(tc, test_floor_flags);
        tcase_add_test(tc, test_strictest_wins);
        tcase_add_test(tc, test_env_variables);
        tcase_add_test(tc, test_unknown_cwd);
        tcase_add_test(tc, test_unknown_home);
        tcase_add_test(tc, test_argv);
        tcase_add_test(tc, test_limits);
        tcase_add_test(tc, test_value_growth);
        tcase_add_test(tc, test_carrier_depth);
        tcase_add_test(tc, test_findings_json);
        tcase_set_timeout(tc, 30);
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
