/* check_ssh_agentauth.c — ssh_agentauth_count against an "agent" on the other end of a
 * socketpair: the key count of a real answer, and every way an agent can fail to give one
 * (a refusal, a wrong answer, an oversized one, a closed socket, silence). */
#include <sys/socket.h>

#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/ssh/ssh_agentauth.h"

/* Asks the agent at sv[0] with what sv[1] has queued already (len bytes of answer), after
 * checking the request that arrives is REQUEST_IDENTITIES. */
static int
count_with_answer(const unsigned char *answer, size_t len, bool close_after)
{
        int sv[2], r;
        unsigned char req[5];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ssh_agentauth_timeouts(sv[0], 200);
        if (len)
                ck_assert_int_eq(write(sv[1], answer, len), (ssize_t) len);
        if (close_after)
                shutdown(sv[1], SHUT_WR);
        r = ssh_agentauth_count(sv[0]);
        ck_assert_int_eq(read(sv[1], req, sizeof(req)), 5);
        ck_assert_mem_eq(req, "\0\0\0\1\x0b", 5);
        close(sv[0]);
        close(sv[1]);
        return r;
}

START_TEST(test_counts_the_keys)
{
        /* IDENTITIES_ANSWER, 2 keys: two (blob, comment) pairs of strings */
        static const unsigned char a[] = {0, 0, 0, 21, 12, 0, 0, 0, 2,   0, 0, 0, 1, 'k',
                                          0, 0, 0, 0,  0,  0, 0, 1, 'K', 0, 0, 0, 0};
        static const unsigned char none[] = {0, 0, 0, 5, 12, 0, 0, 0, 0};

        ck_assert_int_eq(count_with_answer(a, sizeof(a), false), 2);
        ck_assert_int_eq(count_with_answer(none, sizeof(none), false), 0);
}
END_TEST

START_TEST(test_every_failure_is_told)
{
        static const unsigned char failure[] = {0, 0, 0, 1, 5};
        static const unsigned char wrong[] = {0, 0, 0, 5, 14, 0, 0, 0, 0};
        static const unsigned char huge[] = {0, 0x10, 0, 0, 12, 0, 0, 0, 0};
        static const unsigned char lies[] = {0, 0, 0, 5, 12, 0xff, 0xff, 0xff, 0xff};
        static const unsigned char cut[] = {0, 0, 0, 9, 12, 0, 0, 0, 1};

        ck_assert_int_eq(count_with_answer(failure, sizeof(failure), false), -EPROTO);
        ck_assert_int_eq(count_with_answer(wrong, sizeof(wrong), false), -EPROTO);
        ck_assert_int_eq(count_with_answer(huge, sizeof(huge), false), -EPROTO);
        ck_assert_int_eq(count_with_answer(lies, sizeof(lies), false), -EPROTO);
        ck_assert_int_eq(count_with_answer(cut, sizeof(cut), true), -EPIPE);
        ck_assert_int_eq(count_with_answer(NULL, 0, true), -EPIPE);
        ck_assert_int_eq(count_with_answer(NULL, 0, false), -ETIMEDOUT); /* silence */
}
END_TEST

static Suite *
agentauth_suite(void)
{
        Suite *s = suite_create("ssh_agentauth");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_counts_the_keys);
        tcase_add_test(tc, test_every_failure_is_told);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(agentauth_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
