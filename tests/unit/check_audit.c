/* check_audit.c — the audit log: secret redaction (a labelled case table, argv, limits), the
 * hash chain across reopen and rotation, torn lines, file modes and write failures. */
#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/audit.h"
#include "policy/policy.h"
#include "protocol/util.h"

static const struct {
        const char *in;
        const char *out;
} redact_cases[] = {
        /* assignments */
        {"TOKEN=abc123 make", "TOKEN=*** make"},
        {"export GITHUB_TOKEN=ghp_x; git push", "export GITHUB_TOKEN=***; git push"},
        {"AWS_SECRET_ACCESS_KEY='a b c' aws s3 ls", "AWS_SECRET_ACCESS_KEY=*** aws s3 ls"},
        {"PGPASSWORD=pw psql", "PGPASSWORD=*** psql"},
        {"env Db_Passwd=x ./run", "env Db_Passwd=*** ./run"},
        {"MY_CREDENTIALS=c x", "MY_CREDENTIALS=*** x"},
        {"GH_AUTH=c x", "GH_AUTH=*** x"},
        /* options */
        {"mysql --password=hunter2 db", "mysql --password=*** db"},
        {"app --api-key hunter2 run", "app --api-key *** run"},
        {"app --token 'abc def' run", "app --token *** run"},
        {"app --password --verbose", "app --password --verbose"},
        {"curl -u alice:s3cret https://h/", "curl -u alice:*** https://h/"},
        {"curl --user alice:s3cret https://h/", "curl --user alice:*** https://h/"},
        /* headers and schemes */
        {"curl -H \"Authorization: Bearer abc.def\" https://x",
         "curl -H \"Authorization: ***\" https://x"},
        {"curl -H 'X-Api-Key: k1' https://x", "curl -H 'X-Api-Key: ***' https://x"},
        {"curl -H 'Cookie: session=1' https://x", "curl -H 'Cookie: ***' https://x"},
        {"curl -H 'Proxy-Authorization: Basic dXNlcjpwdw==' u",
         "curl -H 'Proxy-Authorization: ***' u"},
        {"http GET x 'bearer zzz'", "http GET x 'bearer ***'"},
        /* URL passwords */
        {"git clone https://user:pw@github.com/x", "git clone https://user:***@github.com/x"},
        {"psql postgres://u:p@db:5432/x", "psql postgres://u:***@db:5432/x"},
        /* nested payloads */
        {"bash -c \"DB_PASSWORD=x ./run\"", "bash -c \"DB_PASSWORD=*** ./run\""},
        {"sh -c 'curl -H \"Authorization: t\" u'", "sh -c 'curl -H \"Authorization: ***\" u'"},
        /* left alone */
        {"rm -rf ./build", "rm -rf ./build"},
        {"echo hello world", "echo hello world"},
        {"grep key file.txt", "grep key file.txt"},
        {"PATH=/usr/bin:/bin make", "PATH=/usr/bin:/bin make"},
        {"echo basic usage", "echo basic usage"},
        {"git clone https://github.com/x/y", "git clone https://github.com/x/y"},
        {"ssh user@host ls", "ssh user@host ls"},
        {"KEY= make", "KEY= make"},
        {"", ""},
};

START_TEST(test_redact_table)
{
        char *r = audit_redact_command(redact_cases[_i].in);

        ck_assert_msg(!strcmp(r, redact_cases[_i].out), "case %d: '%s' -> '%s', want '%s'", _i,
                      redact_cases[_i].in, r, redact_cases[_i].out);
        free(r);
}
END_TEST

START_TEST(test_redact_argv)
{
        json_t *in = json_pack("[s,s,s,s,s,s,s,s,s]", "curl", "-H", "Authorization: Bearer zzz",
                               "https://a:b@h/", "--password", "pw", "-c", "TOKEN=q run", "ok");
        json_t *out = audit_redact_argv(in);
        char *s = json_dumps(out, JSON_COMPACT);

        ck_assert_str_eq(s, "[\"curl\",\"-H\",\"Authorization: ***\",\"https://a:***@h/\","
                            "\"--password\",\"***\",\"-c\",\"TOKEN=*** run\",\"ok\"]");
        free(s);
        json_decref(in);
        json_decref(out);
}
END_TEST

START_TEST(test_redact_limits)
{
        char *big = xmalloc(20001), *r;
        json_t *argv = json_array(), *out;

        memset(big, 'a', 20000);
        /* a two-byte character across the cut must not be split */
        big[AUDIT_MAX_TEXT - 1] = (char) 0xc3;
        big[AUDIT_MAX_TEXT] = (char) 0xa9;
        big[20000] = '\0';
        r = audit_redact_command(big);
        ck_assert_uint_eq(strlen(r), AUDIT_MAX_TEXT - 1);
        free(r);
        for (int i = 0; i < 1000; i++)
                json_array_append_new(argv, json_string("x"));
        out = audit_redact_argv(argv);
        ck_assert_uint_le(json_array_size(out), 257);
        ck_assert_str_eq(json_string_value(json_array_get(out, json_array_size(out) - 1)),
                         "(744 more)");
        json_decref(out);
        json_decref(argv);
        free(big);
}
END_TEST

START_TEST(test_spec_summary)
{
        json_t *spec = json_pack("{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s}],s:{s:{s:b}}}", "backend",
                                 "docker", "image", "alpine", "env", "API_TOKEN", "sekrit",
                                 "mounts", "type", "bind", "source", "/srv", "target", "/w",
                                 "docker", "host_config", "Privileged", 1);
        json_t *s = audit_spec_summary(spec);
        char *t = json_dumps(s, JSON_COMPACT | JSON_SORT_KEYS);

        ck_assert_ptr_null(strstr(t, "sekrit"));
        ck_assert_ptr_nonnull(strstr(t, "\"env_names\":[\"API_TOKEN\"]"));
        ck_assert_ptr_nonnull(strstr(t, "\"host_config_keys\":[\"Privileged\"]"));
        ck_assert_ptr_nonnull(strstr(t, "\"source\":\"/srv\""));
        free(t);
        json_decref(s);
        json_decref(spec);
}
END_TEST

/* ---- the log ---- */

static char tmpdir[64];

static void
log_setup(void)
{
        strcpy(tmpdir, "/tmp/check_audit.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
log_teardown(void)
{
        char *cmd = xasprintf("rm -rf '%s'", tmpdir);

        audit_close();
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
}

static char *
dir_file(const char *name)
{
        return xasprintf("%s/audit/%s", tmpdir, name);
}

/* Checks every line of the named files (oldest first) as one chain; returns the line count
 * and the last hash in last (65 bytes). The first prev must be first_prev. */
static int
verify_chain(const char *const *names, const char *first_prev, char *last)
{
        char prev[65], line[65536];
        int count = 0;
        long long seq = -1;

        strcpy(prev, first_prev);
        for (const char *const *n = names; *n; n++) {
                char *path = dir_file(*n);
                FILE *f = fopen(path, "r");
                ck_assert_msg(f != NULL, "%s missing", path);
                while (fgets(line, sizeof(line), f)) {
                        char *h = strstr(line, ",\"hash\":\""), digest[65];
                        json_t *rec = json_loads(line, 0, NULL);
                        ck_assert_ptr_nonnull(rec);
                        ck_assert_ptr_nonnull(h);
                        policy_sha256_hex(line, (size_t) (h - line), digest);
                        ck_assert_str_eq(json_string_value(json_object_get(rec, "hash")), digest);
                        ck_assert_str_eq(json_string_value(json_object_get(rec, "prev")), prev);
                        if (seq >= 0)
                                ck_assert_int_eq(json_integer_value(json_object_get(rec, "seq")),
                                                 seq + 1);
                        seq = json_integer_value(json_object_get(rec, "seq"));
                        strcpy(prev, digest);
                        json_decref(rec);
                        count++;
                }
                fclose(f);
                free(path);
        }
        strcpy(last, prev);
        return count;
}

static void
write_n(int n)
{
        for (int i = 0; i < n; i++)
                audit_write(json_pack("{s:s,s:i}", "kind", "exec", "i", i));
}

START_TEST(test_chain_and_reopen)
{
        struct sbx_error err = {0};
        char *dir = xasprintf("%s/audit", tmpdir), last[65];
        const char *const names[] = {"audit.log", NULL};
        struct stat st;

        ck_assert_int_eq(audit_open(dir, 1 << 20, 5, &err), 0);
        write_n(3);
        audit_close();
        ck_assert_int_eq(audit_open(dir, 1 << 20, 5, &err), 0);
        write_n(2);
        ck_assert_int_eq(verify_chain(names,
                                      "0000000000000000000000000000000000000000000000000"
                                      "000000000000000",
                                      last),
                         5);
        ck_assert_int_eq(stat(audit_path(), &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        ck_assert_int_eq(stat(dir, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0700);
        ck_assert_uint_eq(audit_errors(), 0);
        free(dir);
}
END_TEST

START_TEST(test_rotation)
{
        struct sbx_error err = {0};
        char *dir = xasprintf("%s/audit", tmpdir), last[65], *gone = dir_file("audit.log.3");
        const char *const two[] = {"audit.log.2", "audit.log.1", "audit.log", NULL};
        char first_prev[65];
        json_t *rec;
        struct stat st;

        ck_assert_int_eq(audit_open(dir, 400, 2, &err), 0);
        write_n(20);
        ck_assert_int_eq(stat(gone, &st), -1);
        /* The oldest kept file starts with the hash of a line that rotated away. */
        {
                char *p = dir_file("audit.log.2"), line[4096];
                FILE *f = fopen(p, "r");
                ck_assert_ptr_nonnull(f);
                ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
                fclose(f);
                rec = json_loads(line, 0, NULL);
                strcpy(first_prev, json_string_value(json_object_get(rec, "prev")));
                ck_assert_int_gt(json_integer_value(json_object_get(rec, "seq")), 1);
                json_decref(rec);
                free(p);
        }
        ck_assert_int_ge(verify_chain(two, first_prev, last), 3);
        ck_assert_int_eq(stat(audit_path(), &st), 0);
        ck_assert_int_le(st.st_size, 400);
        free(gone);
        free(dir);
}
END_TEST

START_TEST(test_torn_tail)
{
        struct sbx_error err = {0};
        char *dir = xasprintf("%s/audit", tmpdir), last[65], good[65], *path;
        const char *const names[] = {"audit.log", NULL};
        FILE *f;
        char line[4096];
        int lines = 0;

        ck_assert_int_eq(audit_open(dir, 1 << 20, 5, &err), 0);
        write_n(2);
        ck_assert_int_eq(verify_chain(names,
                                      "0000000000000000000000000000000000000000000000000"
                                      "000000000000000",
                                      good),
                         2);
        path = xstrdup(audit_path());
        audit_close();
        f = fopen(path, "a");
        fputs("{\"ts\":\"torn", f);
        fclose(f);
        ck_assert_int_eq(audit_open(dir, 1 << 20, 5, &err), 0);
        write_n(1);
        audit_close();
        f = fopen(path, "r");
        while (fgets(line, sizeof(line), f)) {
                lines++;
                if (lines == 4) {
                        json_t *rec = json_loads(line, 0, NULL);
                        ck_assert_str_eq(json_string_value(json_object_get(rec, "prev")), good);
                        ck_assert_int_eq(json_integer_value(json_object_get(rec, "seq")), 3);
                        json_decref(rec);
                }
        }
        fclose(f);
        ck_assert_int_eq(lines, 4);
        (void) last;
        free(path);
        free(dir);
}
END_TEST

START_TEST(test_not_open_counts_errors)
{
        uint64_t before = audit_errors();

        audit_close();
        write_n(2);
        ck_assert_uint_eq(audit_errors(), before + 2);
}
END_TEST

static Suite *
suite(void)
{
        Suite *s = suite_create("audit");
        TCase *t = tcase_create("redact");
        TCase *l = tcase_create("log");

        tcase_add_loop_test(t, test_redact_table, 0, (int) ARRAY_SIZE(redact_cases));
        tcase_add_test(t, test_redact_argv);
        tcase_add_test(t, test_redact_limits);
        tcase_add_test(t, test_spec_summary);
        suite_add_tcase(s, t);
        tcase_add_checked_fixture(l, log_setup, log_teardown);
        tcase_add_test(l, test_chain_and_reopen);
        tcase_add_test(l, test_rotation);
        tcase_add_test(l, test_torn_tail);
        tcase_add_test(l, test_not_open_counts_errors);
        suite_add_tcase(s, l);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(suite());
        int failed;

        util_json_alloc_init();
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
