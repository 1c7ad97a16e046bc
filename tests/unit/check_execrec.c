/* check_execrec.c — the exec journal stays replayable however large the records a client makes.
 */
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/execrec.h"
#include "protocol/util.h"

static char dir[] = "/tmp/sandboxd-execrec-XXXXXX";
static char path[256];

static void
setup(void)
{
        util_json_alloc_init();
        strcpy(dir, "/tmp/sandboxd-execrec-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/execs.jsonl", dir);
}

static void
teardown(void)
{
        char cmd[300];

        execrec_close();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

/* A record of exec key, owner 65534, whose argv is one string of size bytes. */
static json_t *
big_record(unsigned key, size_t size)
{
        char id[32], *arg = malloc(size + 1);
        json_t *rec;

        memset(arg, 'a', size);
        arg[size] = '\0';
        snprintf(id, sizeof(id), "p_%012u", key);
        rec = json_pack("{s:s,s:s,s:i,s:s,s:[s],s:{}}", "key", id, "exec_id", id, "owner", 65534,
                        "state", "exited", "argv", arg, "record");
        free(arg);
        return rec;
}

#define JOURNAL_MAX (EXECREC_MAX_BYTES / 64)
#define RECORD      ((4u << 20) / 64)

static off_t
file_size(void)
{
        struct stat st;

        ck_assert_int_eq(stat(path, &st), 0);
        return st.st_size;
}

/* The journal's bound scaled down 64 times (4 MiB, as 256 MiB in the daemon): 64 KiB records
 * (4 MiB ones in the daemon), each started and ended (two lines), 45 of them: 1.4 times the
 * bound. Before, the journal grew past the size a restart replays, and every uid's records were
 * lost with it. */
START_TEST(test_large_records_keep_the_journal_replayable)
{
        char *warning = NULL;
        json_t *all;
        int refused = 0;

        execrec_set_max_bytes(JOURNAL_MAX);
        json_decref(execrec_open(dir, &warning));
        ck_assert_ptr_null(warning);
        for (unsigned i = 0; i < 45; i++) {
                json_t *rec = big_record(i, RECORD);
                ck_assert_int_eq(execrec_put(rec), i < 31 ? 0 : -ENOSPC);
                refused += execrec_put(rec) < 0;
                json_decref(rec);
                ck_assert_int_le(file_size(), JOURNAL_MAX);
        }
        ck_assert_int_eq(refused, 45 - 31);
        /* forgotten ones make room; the appends past the bound compact the journal first */
        for (unsigned i = 0; i < 8; i++) {
                char id[32];
                snprintf(id, sizeof(id), "p_%012u", i);
                execrec_drop(id);
                json_t *rec = big_record(100 + i, RECORD);
                ck_assert_int_eq(execrec_put(rec), 0);
                ck_assert_int_eq(execrec_put(rec), 0);
                json_decref(rec);
                ck_assert_int_le(file_size(), JOURNAL_MAX);
        }
        execrec_close();
        all = execrec_open(dir, &warning);
        ck_assert_msg(!warning, "%s", warning);
        ck_assert_int_eq(json_array_size(all), 31);
        json_decref(all);
}
END_TEST

static Suite *
execrec_suite(void)
{
        Suite *s = suite_create("execrec");
        TCase *tc = tcase_create("journal");

        tcase_set_timeout(tc, 30);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_large_records_keep_the_journal_replayable);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(execrec_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
