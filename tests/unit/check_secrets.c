/* check_secrets.c — which variables count as credentials, that moving them out of the
 * environment erases the bytes where they were (what /proc/PID/environ shows) while the
 * backends still get them (credenv_get), and that the process becomes non-dumpable. */
#include <sys/prctl.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "backends/credenv.h"
#include "daemon/secrets.h"
#include "protocol/util.h"

START_TEST(test_credential_names)
{
        static const char *const yes[] = {"DOCKER_HOST",
                                          "DOCKER_CERT_PATH=/x",
                                          "DAYTONA_API_KEY",
                                          "MODAL_TOKEN_ID",
                                          "MODAL_TOKEN_SECRET",
                                          "MODAL_PROFILE",
                                          "GITHUB_TOKEN=ghp_x",
                                          "my_api_key",
                                          "AWS_SECRET_ACCESS_KEY",
                                          "AWS_ACCESS_KEY_ID",
                                          "PGPASSWORD",
                                          "SSH_AUTH_SOCK",
                                          "X_AUTH_HEADER",
                                          "TOOL_GATEWAY_USER_TOKEN",
                                          "GOOGLE_APPLICATION_CREDENTIALS"};
        static const char *const no[] = {"PATH",
                                         "HOME=/root",
                                         "NOTIFY_SOCKET",
                                         "LISTEN_FDS",
                                         "SANDBOXD_SOCKET",
                                         "XDG_RUNTIME_DIR",
                                         "http_proxy",
                                         "JOURNAL_STREAM",
                                         "LANG",
                                         "CREDENTIALS_DIRECTORY",
                                         "TERM",
                                         "MODAL_GATEWAY_URL"};

        for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
                ck_assert_msg(credenv_is_credential(yes[i]), "%s", yes[i]);
        for (size_t i = 0; i < ARRAY_SIZE(no); i++)
                ck_assert_msg(!credenv_is_credential(no[i]), "%s", no[i]);
}
END_TEST

START_TEST(test_capture_erases_in_place)
{
        static char key[] = "MY_SERVICE_API_KEY=hunter2-secret";
        static char docker[] = "DOCKER_HOST=tcp://10.0.0.1:2376";
        static char plain[] = "PLAIN_SETTING=kept";
        const char *value = key + strlen("MY_SERVICE_API_KEY=");

        ck_assert_int_eq(putenv(key), 0);
        ck_assert_int_eq(putenv(docker), 0);
        ck_assert_int_eq(putenv(plain), 0);
        ck_assert_int_ge(credenv_capture(), 2);
        /* gone from the environment and from the bytes it was in ... */
        ck_assert_ptr_null(getenv("MY_SERVICE_API_KEY"));
        ck_assert_ptr_null(getenv("DOCKER_HOST"));
        for (size_t i = 0; i < strlen("hunter2-secret"); i++)
                ck_assert_int_eq(value[i], '\0');
        ck_assert_ptr_null(memmem(docker, sizeof(docker), "10.0.0.1", 8));
        /* ... still there for the backends, and other variables untouched */
        ck_assert_str_eq(credenv_get("MY_SERVICE_API_KEY"), "hunter2-secret");
        ck_assert_str_eq(credenv_get("DOCKER_HOST"), "tcp://10.0.0.1:2376");
        ck_assert_str_eq(credenv_get("PLAIN_SETTING"), "kept");
        ck_assert_str_eq(getenv("PLAIN_SETTING"), "kept");
        ck_assert_ptr_null(credenv_get("NOT_SET_ANYWHERE"));
        credenv_clear();
        ck_assert_ptr_null(credenv_get("DOCKER_HOST"));
}
END_TEST

START_TEST(test_not_dumpable)
{
        int moved = -1;

        ck_assert_int_eq(secrets_protect_process(&moved), 0);
        ck_assert_int_ge(moved, 0);
        ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
        credenv_clear();
}
END_TEST

int
main(void)
{
        Suite *s = suite_create("secrets");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_credential_names);
        tcase_add_test(tc, test_capture_erases_in_place);
        tcase_add_test(tc, test_not_dumpable);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
