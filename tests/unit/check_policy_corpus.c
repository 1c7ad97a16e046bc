/* check_policy_corpus.c — the corpus of ordinary agent commands (tests/data/policy/
 * ordinary.txt): at least 400, and every one ALLOW in a project sandbox. A command that asks
 * or is denied is named with its findings. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/helper_policy.h"

#define CORPUS "tests/data/policy/ordinary.txt"

START_TEST(test_ordinary_corpus_allowed)
{
        struct policy_ctx ctx = policy_test_ctx();
        struct policy *p = policy_new_default();
        FILE *f = fopen(CORPUS, "r");
        char line[8192];
        size_t n = 0, bad = 0;
        struct buf msg = {0};

        ck_assert_msg(f != NULL, "%s: cannot open (run from the source tree)", CORPUS);
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (!line[0] || line[0] == '#')
                        continue;
                struct policy_result r;
                policy_eval_command(p, &ctx, line, &r);
                n++;
                if (r.verdict != POLICY_ALLOW) {
                        bad++;
                        buf_appendf(&msg, "\n  %s [%s]:", policy_verdict_name(r.verdict), line);
                        for (size_t k = 0; k < r.nfindings; k++)
                                buf_appendf(&msg, " %s", r.findings[k].rule);
                }
                policy_result_clear(&r);
        }
        fclose(f);
        buf_append(&msg, "", 1);
        ck_assert_msg(n >= 400, "only %zu commands in %s", n, CORPUS);
        ck_assert_msg(bad == 0, "%zu of %zu ordinary commands not allowed:%s", bad, n, msg.data);
        buf_free(&msg);
        policy_free(p);
}
END_TEST

static Suite *
suite(void)
{
        Suite *s = suite_create("policy_corpus");
        TCase *tc = tcase_create("corpus");

        tcase_add_test(tc, test_ordinary_corpus_allowed);
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
