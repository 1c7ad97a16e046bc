/* check_statefile.c — atomic versioned state file: round trip, replace, corrupt and missing files.
 */
#include <sys/stat.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/statefile.h"
#include "protocol/util.h"

static char dir[] = "/tmp/sandboxd-statefile-XXXXXX";
static char path[256];

static void
setup(void)
{
        util_json_alloc_init();
        strcpy(dir, "/tmp/sandboxd-statefile-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/state.json", dir);
}

static void
teardown(void)
{
        char cmd[300];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

static void
write_file(const char *p, const char *text)
{
        FILE *f = fopen(p, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* Reads a whole small file (new string). */
static char *
read_file(const char *p)
{
        struct buf b = {0};
        char chunk[4096];
        FILE *f = fopen(p, "r");
        size_t n;

        ck_assert_ptr_nonnull(f);
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                buf_append(&b, chunk, n);
        fclose(f);
        buf_append(&b, "", 0);
        return b.data;
}

/* Number of directory entries other than . and .. */
static int
count_entries(void)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

/* Loads a file expected to be rejected; checks it moved aside intact and what the warning says. */
static void
expect_rejected(const char *content, const char *reason)
{
        json_t *doc = NULL;
        char *warning = NULL, *moved, pattern[300];
        glob_t g;

        write_file(path, content);
        ck_assert_int_eq(statefile_load(path, &doc, &warning), 0);
        ck_assert(json_is_object(doc));
        ck_assert_uint_eq(json_object_size(doc), 0);
        ck_assert_ptr_nonnull(warning);
        ck_assert_ptr_nonnull(strstr(warning, reason));
        ck_assert_int_eq(access(path, F_OK), -1);

        snprintf(pattern, sizeof(pattern), "%s.corrupt-*", path);
        ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
        ck_assert_uint_eq(g.gl_pathc, 1);
        ck_assert_ptr_nonnull(strstr(warning, g.gl_pathv[0]));
        moved = read_file(g.gl_pathv[0]);
        ck_assert_str_eq(moved, content);
        /* UTC stamp: .corrupt-YYYYmmddTHHMMSSZ */
        ck_assert_uint_eq(strlen(g.gl_pathv[0]), strlen(path) + strlen(".corrupt-") + 16);
        ck_assert_int_eq(g.gl_pathv[0][strlen(g.gl_pathv[0]) - 1], 'Z');
        free(moved);
        globfree(&g);
        free(warning);
        json_decref(doc);
}

START_TEST(test_round_trip)
{
        struct sbx_error err = {0};
        json_t *in = json_pack("{s:[{s:s,s:s}],s:{s:b}}", "sandboxes", "id", "sbx_1", "backend",
                               "docker", "approvals", "ls", 1);
        json_t *out = NULL;
        char *warning = (char *) "unset", *text;
        struct stat st;

        ck_assert_int_eq(statefile_save(path, in, &err), 0);
        ck_assert_int_eq(err.code, 0);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        text = read_file(path);
        ck_assert_ptr_nonnull(strstr(text, "\"version\": 1"));
        ck_assert_int_eq(text[strlen(text) - 1], '\n');

        ck_assert_int_eq(statefile_load(path, &out, &warning), 0);
        ck_assert_ptr_null(warning);
        ck_assert(json_equal(in, out));
        ck_assert_ptr_null(json_object_get(out, "version"));
        ck_assert_int_eq(count_entries(), 1);
        free(text);
        json_decref(in);
        json_decref(out);
}
END_TEST

/* A document a start would refuse (over STATEFILE_MAX_BYTES) is not written: before, a client's
 * large labels made sandboxes.json too big to load, and the next start lost every uid's
 * sandboxes. The previous file is kept. */
START_TEST(test_too_large_is_not_saved)
{
        struct sbx_error err = {0};
        json_t *small = json_pack("{s:[{s:s}]}", "sandboxes", "id", "sbx_1"), *big, *out = NULL;
        size_t n = STATEFILE_MAX_BYTES;
        char *pad = malloc(n + 1), *warning = NULL;

        memset(pad, 'a', n);
        pad[n] = '\0';
        big = json_pack("{s:[{s:s,s:s}]}", "sandboxes", "id", "sbx_2", "label", pad);
        free(pad);
        ck_assert_int_eq(statefile_save(path, small, &err), 0);
        ck_assert_int_eq(statefile_save(path, big, &err), -EFBIG);
        ck_assert_int_eq(err.code, -32004);
        ck_assert_ptr_nonnull(strstr(err.message, "the previous one is kept"));
        sbx_error_clear(&err);
        ck_assert_int_eq(statefile_load(path, &out, &warning), 0);
        ck_assert_msg(!warning, "%s", warning);
        ck_assert(json_equal(small, out));
        ck_assert_int_eq(count_entries(), 1);
        json_decref(small);
        json_decref(big);
        json_decref(out);
}
END_TEST

START_TEST(test_atomic_replace)
{
        struct sbx_error err = {0};
        json_t *v1 = json_pack("{s:i}", "generation", 1);
        json_t *v2 = json_pack("{s:i,s:i}", "generation", 2, "version", 7);
        json_t *out = NULL;
        char *warning = NULL, old[256];
        struct stat st1, st2;
        ssize_t n;
        int fd;

        ck_assert_int_eq(statefile_save(path, v1, &err), 0);
        ck_assert_int_eq(stat(path, &st1), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(statefile_save(path, v2, &err), 0);
        ck_assert_int_eq(stat(path, &st2), 0);

        /* Replaced by rename, not rewritten in place: a reader of the old file sees it whole. */
        ck_assert_uint_ne(st1.st_ino, st2.st_ino);
        n = read(fd, old, sizeof(old) - 1);
        ck_assert_int_gt(n, 0);
        old[n] = '\0';
        ck_assert_ptr_nonnull(strstr(old, "\"generation\": 1"));
        close(fd);

        ck_assert_int_eq(statefile_load(path, &out, &warning), 0);
        ck_assert_ptr_null(warning);
        ck_assert_int_eq(json_integer_value(json_object_get(out, "generation")), 2);
        /* The caller's "version" field never overrides the format version. */
        ck_assert_ptr_null(json_object_get(out, "version"));
        ck_assert_int_eq(count_entries(), 1);
        json_decref(v1);
        json_decref(v2);
        json_decref(out);
}
END_TEST

START_TEST(test_save_failure_leaves_nothing)
{
        struct sbx_error err = {0};
        json_t *doc = json_object(), *array = json_array();
        char missing[300];

        snprintf(missing, sizeof(missing), "%s/no-such-dir/state.json", dir);
        ck_assert_int_eq(statefile_save(missing, doc, &err), -ENOENT);
        ck_assert_int_eq(err.code, SBX_E_INTERNAL);
        ck_assert_ptr_nonnull(strstr(err.message, missing));
        sbx_error_clear(&err);

        ck_assert_int_eq(statefile_save(path, array, &err), -EINVAL);
        ck_assert_int_ne(err.code, 0);
        sbx_error_clear(&err);
        ck_assert_int_eq(count_entries(), 0);
        json_decref(array);
        json_decref(doc);
}
END_TEST

START_TEST(test_missing_file)
{
        json_t *doc = NULL;
        char *warning = (char *) "unset";

        ck_assert_int_eq(statefile_load(path, &doc, &warning), 0);
        ck_assert_ptr_null(warning);
        ck_assert(json_is_object(doc));
        ck_assert_uint_eq(json_object_size(doc), 0);
        ck_assert_int_eq(count_entries(), 0);
        json_decref(doc);
}
END_TEST

START_TEST(test_corrupt_json)
{
        expect_rejected("{\"version\": 1, \"sandboxes\": [", "not valid JSON");
}
END_TEST

START_TEST(test_truncated_empty_file)
{
        expect_rejected("", "not valid JSON");
}
END_TEST

START_TEST(test_wrong_version)
{
        expect_rejected("{\"version\": 2, \"sandboxes\": []}\n", "version 2");
}
END_TEST

START_TEST(test_missing_version)
{
        expect_rejected("{\"sandboxes\": []}\n", "no integer \"version\"");
}
END_TEST

START_TEST(test_not_an_object)
{
        expect_rejected("[1, 2, 3]\n", "not a JSON object");
}
END_TEST

START_TEST(test_duplicate_keys)
{
        expect_rejected("{\"version\": 1, \"a\": 1, \"a\": 2}", "not valid JSON");
}
END_TEST

START_TEST(test_second_corrupt_file_same_second)
{
        json_t *doc = NULL;
        char *warning = NULL, pattern[300];
        glob_t g;

        for (int i = 0; i < 2; i++) {
                write_file(path, i ? "second" : "first");
                ck_assert_int_eq(statefile_load(path, &doc, &warning), 0);
                ck_assert_ptr_nonnull(warning);
                free(warning);
                json_decref(doc);
        }
        snprintf(pattern, sizeof(pattern), "%s.corrupt-*", path);
        ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
        /* Both kept, whether or not the two loads fell into the same second. */
        ck_assert_uint_eq(g.gl_pathc, 2);
        globfree(&g);
}
END_TEST

START_TEST(test_stale_temporary_removed)
{
        json_t *doc = json_pack("{s:i}", "n", 1), *out = NULL;
        struct sbx_error err = {0};
        char *warning = NULL, stale[300], other[300];

        ck_assert_int_eq(statefile_save(path, doc, &err), 0);
        /* What a crash between mkostemp() and rename() leaves behind. */
        snprintf(stale, sizeof(stale), "%s.tmp-Ab12Cd", path);
        write_file(stale, "{\"version\": 1, \"n\": 2");
        snprintf(other, sizeof(other), "%s/unrelated.tmp-Ab12Cd", dir);
        write_file(other, "keep");
        ck_assert_int_eq(count_entries(), 3);

        ck_assert_int_eq(statefile_load(path, &out, &warning), 0);
        ck_assert_ptr_null(warning);
        ck_assert_int_eq(json_integer_value(json_object_get(out, "n")), 1);
        ck_assert_int_eq(access(stale, F_OK), -1);
        ck_assert_int_eq(access(other, F_OK), 0);
        ck_assert_int_eq(count_entries(), 2);
        json_decref(doc);
        json_decref(out);
}
END_TEST

START_TEST(test_not_a_regular_file)
{
        json_t *doc = NULL;
        char *warning = NULL;

        ck_assert_int_eq(mkfifo(path, 0600), 0);
        ck_assert_int_eq(statefile_load(path, &doc, &warning), 0);
        ck_assert_ptr_nonnull(warning);
        ck_assert_ptr_nonnull(strstr(warning, "not a regular file"));
        ck_assert_uint_eq(json_object_size(doc), 0);
        ck_assert_int_eq(access(path, F_OK), -1);
        free(warning);
        json_decref(doc);
}
END_TEST

static Suite *
statefile_suite(void)
{
        Suite *s = suite_create("statefile");
        TCase *tc = tcase_create("core");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_round_trip);
        tcase_add_test(tc, test_atomic_replace);
        tcase_add_test(tc, test_too_large_is_not_saved);
        tcase_add_test(tc, test_save_failure_leaves_nothing);
        tcase_add_test(tc, test_missing_file);
        tcase_add_test(tc, test_corrupt_json);
        tcase_add_test(tc, test_truncated_empty_file);
        tcase_add_test(tc, test_wrong_version);
        tcase_add_test(tc, test_missing_version);
        tcase_add_test(tc, test_not_an_object);
        tcase_add_test(tc, test_duplicate_keys);
        tcase_add_test(tc, test_second_corrupt_file_same_second);
        tcase_add_test(tc, test_stale_temporary_removed);
        tcase_add_test(tc, test_not_a_regular_file);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(statefile_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
