/* check_protocol.c — framing, codecs, params, spool and config parsing. */
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/spool.h"
#include "protocol/codec.h"
#include "protocol/frame.h"
#include "protocol/list.h"
#include "protocol/params.h"
#include "protocol/sockpath.h"
#include "protocol/util.h"

static char *
frame_pop(struct frame *f, enum frame_status *st)
{
        const char *line;
        size_t len;

        *st = frame_next(f, &line, &len);
        return *st == FRAME_LINE ? xstrndup(line, len) : NULL;
}

START_TEST(test_frame_lines)
{
        struct frame f;
        enum frame_status st;
        char *l;

        frame_init(&f, 100);
        frame_feed(&f, "ab", 2);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_int_eq(st, FRAME_NONE);
        frame_feed(&f, "c\r\n\n\r\nxyz\n", 10);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "abc");
        free(l);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "xyz");
        free(l);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_uint_eq(frame_pending(&f), 0);
        frame_free(&f);
}
END_TEST

START_TEST(test_frame_too_long_keeps_connection)
{
        struct frame f;
        enum frame_status st;
        char big[300];
        char *l;

        memset(big, 'x', sizeof(big));
        frame_init(&f, 100);
        frame_feed(&f, big, 150);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_int_eq(st, FRAME_TOO_LONG);
        /* the rest of the long line is dropped, silently */
        frame_feed(&f, big, 150);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_int_eq(st, FRAME_NONE);
        ck_assert_uint_le(f.in.cap, 1024);
        frame_feed(&f, "tail\nok\n", 8);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "ok");
        free(l);
        /* a long line that arrives whole is reported too */
        frame_feed(&f, big, 120);
        frame_feed(&f, "\nnext\n", 6);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_int_eq(st, FRAME_TOO_LONG);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "next");
        free(l);
        frame_free(&f);
}
END_TEST

/* A half-sent line can be dropped (its rest discarded as it comes); complete lines cannot. */
START_TEST(test_frame_drop_partial)
{
        struct frame f;
        enum frame_status st;
        char *l;

        frame_init(&f, 1000);
        frame_feed(&f, "{\"half", 6);
        ck_assert_ptr_null(frame_pop(&f, &st));
        ck_assert_uint_eq(frame_drop_partial(&f), 6);
        ck_assert_uint_eq(frame_pending(&f), 0);
        ck_assert_uint_eq(frame_memory(&f), 0);
        frame_feed(&f, " rest of it\nnext\n", 17);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "next");
        free(l);
        /* complete lines waiting (a congested connection) are left alone */
        frame_feed(&f, "one\ntwo", 7);
        ck_assert_uint_eq(frame_drop_partial(&f), 0);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "one");
        free(l);
        ck_assert_uint_eq(frame_drop_partial(&f), 3);
        ck_assert_uint_eq(frame_drop_partial(&f), 0);
        frame_free(&f);
}
END_TEST

/* Memory goes back: empty buffers are freed, mostly consumed ones shrink to their content. */
START_TEST(test_frame_trim)
{
        static char big[200000];
        struct frame f;
        enum frame_status st;
        char *l;

        memset(big, 'x', sizeof(big));
        frame_init(&f, 1 << 20);
        frame_feed(&f, big, sizeof(big));
        frame_feed(&f, "\nabc", 4);
        ck_assert_uint_ge(frame_memory(&f), sizeof(big));
        l = frame_pop(&f, &st);
        ck_assert_uint_eq(strlen(l), sizeof(big));
        free(l);
        frame_trim(&f, 0);
        ck_assert_uint_le(frame_memory(&f), 4 + 1);
        frame_feed(&f, "d\n", 2);
        l = frame_pop(&f, &st);
        ck_assert_str_eq(l, "abcd");
        free(l);
        frame_trim(&f, 1 << 20); /* small enough to keep */
        ck_assert_uint_gt(frame_memory(&f), 0);
        frame_trim(&f, 0);
        ck_assert_uint_eq(frame_memory(&f), 0);
        frame_free(&f);
}
END_TEST

START_TEST(test_utf8)
{
        struct buf b = {0};

        ck_assert(utf8_valid("caf\xc3\xa9", 5));
        ck_assert(!utf8_valid("\xc3", 1));
        ck_assert(!utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
        ck_assert(!utf8_valid("\xc0\xaf", 2));     /* overlong */
        ck_assert_uint_eq(utf8_complete_prefix("ab\xe2\x82", 4), 2);
        ck_assert_uint_eq(utf8_complete_prefix("ab\xe2\x82\xac", 5), 5);
        ck_assert_uint_eq(utf8_complete_prefix("ab\xff", 3), 3);
        utf8_sanitize(&b,
                      "a\xff"
                      "b\xe2\x82",
                      5);
        ck_assert_str_eq(b.data, "a\xef\xbf\xbd"
                                 "b\xef\xbf\xbd\xef\xbf\xbd");
        buf_free(&b);
        ck_assert_uint_eq(utf8_ceil_start("\x82\xac"
                                          "x",
                                          3),
                          2);
}
END_TEST

START_TEST(test_base64)
{
        struct buf e = {0}, d = {0};
        const char raw[] = "\x00\xff\x10 hello";

        base64_encode(&e, raw, sizeof(raw) - 1);
        ck_assert_str_eq(e.data, "AP8QIGhlbGxv");
        ck_assert_int_eq(base64_decode(&d, e.data, e.len), 0);
        ck_assert_uint_eq(d.len, sizeof(raw) - 1);
        ck_assert(!memcmp(d.data, raw, d.len));
        buf_free(&d);
        ck_assert_int_lt(base64_decode(&d, "a$==", 4), 0);
        ck_assert_int_lt(base64_decode(&d, "abcde", 5), 0);
        buf_free(&d);
        buf_free(&e);
}
END_TEST

START_TEST(test_params)
{
        json_t *p = json_pack("{s:s,s:i,s:b,s:{s:i},s:[s]}", "s", "x", "n", 5, "b", 1, "m", "k", 1,
                              "a", "z");
        struct sbx_error err = {0};
        const char *s = NULL;
        int64_t n = 0;
        json_t *j;
        static const char *const known[] = {"s", "n", "b", "m", "a", NULL};
        static const char *const less[] = {"s", NULL};

        ck_assert_int_eq(params_str(p, "s", 10, &s, &err), 1);
        ck_assert_str_eq(s, "x");
        ck_assert_int_eq(params_str(p, "missing", 10, &s, &err), 0);
        ck_assert_int_eq(params_int(p, "n", 0, 4, &n, &err), -1);
        ck_assert_int_eq(err.code, SBX_E_PARAMS);
        ck_assert_str_eq(json_string_value(json_object_get(err.data, "param")), "n");
        sbx_error_clear(&err);
        ck_assert_int_eq(params_str(p, "n", 10, &s, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.message, "'n' must be a string, not an integer"));
        sbx_error_clear(&err);
        ck_assert_int_eq(params_str_map(p, "m", 10, &j, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.message, "m.k"));
        sbx_error_clear(&err);
        ck_assert_int_eq(params_str_array(p, "a", 10, &j, &err), 1);
        ck_assert_int_eq(params_known(p, known, &err), 0);
        ck_assert_int_eq(params_known(p, less, &err), -1);
        sbx_error_clear(&err);
        json_decref(p);
}
END_TEST

/* A spool of cap at a fresh path (a template, filled in). */
static struct spool *
spool_tmp(char *path, uint64_t cap)
{
        int fd = mkstemp(path);

        ck_assert_int_ge(fd, 0);
        close(fd);
        return spool_new(path, cap);
}

/* spool_read(s, offset, max) returns want (NUL-terminated) from want_start. */
static void
spool_read_is(struct spool *s, uint64_t offset, size_t max, uint64_t want_start, const char *want)
{
        struct buf b = {0};
        uint64_t start = 0;

        ck_assert_int_eq(spool_read(s, offset, max, &b, &start), 0);
        ck_assert_uint_eq(start, want_start);
        ck_assert_uint_eq(b.len, strlen(want));
        ck_assert(!b.len || !strcmp(b.data, want));
        buf_free(&b);
}

START_TEST(test_spool_ring)
{
        char path[] = "/tmp/check-spool-XXXXXX";
        struct spool *s = spool_tmp(path, 10);

        spool_write(s, "0123456789", 10);
        spool_write(s, "abcde", 5);
        ck_assert_uint_eq(spool_total(s), 15);
        ck_assert_uint_eq(spool_first(s), 5);
        spool_read_is(s, 0, 100, 5, "56789abcde");
        spool_read_is(s, 12, 2, 12, "cd");
        spool_write(s, "ZZZZZZZZZZZZZZZZZZZZ_", 21); /* larger than the ring */
        spool_read_is(s, 0, 100, 26, "ZZZZZZZZZ_");
        spool_free(s);
        ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

/* A stopped spool (max_spool_bytes_per_uid) keeps what it had and counts, not keeps, the rest:
 * a read past what it kept jumps to the total, never returns the ring's stale bytes. */
START_TEST(test_spool_stop)
{
        char path[] = "/tmp/check-spool-XXXXXX";
        struct spool *s = spool_tmp(path, 10);
        uint64_t end = 0;

        spool_write(s, "0123", 4);
        ck_assert(!spool_stopped_at(s, &end));
        spool_stop(s);
        ck_assert_int_eq(spool_write(s, "abcdefghij", 10), 0);
        ck_assert(spool_stopped_at(s, &end));
        ck_assert_uint_eq(end, 4);
        ck_assert_uint_eq(spool_total(s), 14);
        ck_assert_uint_eq(spool_kept(s), 4);
        ck_assert_uint_eq(spool_first(s), 0);
        spool_read_is(s, 0, 100, 0, "0123");
        spool_read_is(s, 4, 100, 14, "");
        spool_free(s);
}
END_TEST

static int
write_conf(char *path, const char *text)
{
        int fd = mkstemp(path);
        ssize_t n = write(fd, text, strlen(text));

        close(fd);
        return n == (ssize_t) strlen(text) ? 0 : -1;
}

START_TEST(test_config)
{
        char path[] = "/tmp/check-conf-XXXXXX";
        struct config *c = NULL;
        struct sbx_error err = {0};

        ck_assert_int_eq(write_conf(path, "[limits]\nspool_max_bytes = 2M\n[exec]\n"
                                          "default_timeout_s=7\n[backend.docker]\nimage = y\n"),
                         0);
        ck_assert_int_eq(config_load(path, true, &c, &err), 0);
        ck_assert_uint_eq(c->spool_max_bytes, 2u << 20);
        ck_assert_uint_eq(c->default_timeout_s, 7);
        ck_assert_uint_eq(c->max_message_bytes, 16u << 20);
        ck_assert_str_eq(json_string_value(json_object_get(config_backend(c, "docker"), "image")),
                         "y");
        config_free(c);
        unlink(path);

        strcpy(path, "/tmp/check-conf-XXXXXX");
        ck_assert_int_eq(write_conf(path, "[exec]\n\n# c\nkill_grace_ms = soon\n"), 0);
        ck_assert_int_lt(config_load(path, true, &c, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, ":4: [exec] kill_grace_ms"));
        sbx_error_clear(&err);
        unlink(path);

        strcpy(path, "/tmp/check-conf-XXXXXX");
        ck_assert_int_eq(write_conf(path, "[daemon]\nsokcet = /x\n"), 0);
        ck_assert_int_lt(config_load(path, true, &c, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, ":2: unknown key 'sokcet'"));
        sbx_error_clear(&err);
        unlink(path);

        /* Backend sections are checked too, with the line (issue 17: pids_limit = many passed
         * the check and then stopped the daemon at start). */
        static const struct {
                const char *text, *want;
        } bad[] = {
                {"[backend.docker]\n\npids_limit = many\n",
                 ":3: [backend.docker] pids_limit = 'many' is not valid: expected a whole number"},
                {"[backend.docker]\nrecreate = maybe\n", ":2: [backend.docker] recreate"},
                /* the maxima and images (policy_docker_limits_parse), with their line */
                {"[backend.docker]\npids_limit = 0\n",
                 ":2: [backend.docker] pids_limit = \"0\" is not valid"},
                {"[backend.docker]\nmax_pids = 100\n\npids_limit = 200\n",
                 ":4: [backend.docker] pids_limit (200) is above max_pids (100)"},
                {"[backend.docker]\n\nimages = busybox\n",
                 ":3: [backend.docker] images: 'busybox' is not NAME:TAG"},
                {"[backend.docker]\nallow_pull = maybe\n", ":2: [backend.docker] allow_pull"},
                {"[backend.docker]\npids_limt = 3\n", ":2: unknown key 'pids_limt' in section "
                                                      "[backend.docker]"},
                {"[backend.vmware]\nimage = x\n", ":2: unknown backend 'vmware'"},
                {"[backend.local]\nimage = x\n", ":2: unknown key 'image' in section "
                                                 "[backend.local]"},
                {"[bogus]\nx = 1\n", ":2: unknown section [bogus]"},
                /* Checked by the backend's own parser (issue 17 audit): */
                {"[backend.modal]\nmode = sometimes\n", ":2: [backend.modal] mode = 'sometimes'"},
                {"[backend.modal]\n\ngateway_url = http://gw.example.com\n",
                 ":3: [backend.modal] gateway_url = 'http://gw.example.com' is plain http"},
                {"[backend.docker]\nhost = bogus://x\n",
                 ":2: [backend.docker] host = 'bogus://x' is not valid"},
                {"[backend.docker]\ntls = maybe\n", ":2: [backend.docker] tls = 'maybe'"},
                {"[backend.docker]\ndrain_grace_ms = 5\n", ":2: [backend.docker] drain_grace_ms "
                                                           "is set by the daemon"},
                {"[backend.ssh]\nhost = x\n", ":2: unknown key 'host' in section [backend.ssh]"},
                {"[backend.singularity]\nnetwork = wifi\n", ":2: singularity network = 'wifi'"},
                {"[backend.daytona]\n\nretries = 99\n", ":3: [backend.daytona] retries = '99'"},
                {"[backend.daytona]\nstate_dir = /x\n", ":2: [backend.daytona] state_dir is set "
                                                        "by the daemon"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                strcpy(path, "/tmp/check-conf-XXXXXX");
                ck_assert_int_eq(write_conf(path, bad[i].text), 0);
                ck_assert_int_lt(config_load(path, true, &c, &err), 0);
                ck_assert_msg(strstr(err.message, bad[i].want), "%s", err.message);
                sbx_error_clear(&err);
                unlink(path);
        }
        /* Every problem is reported, each with its line, not only the first. */
        strcpy(path, "/tmp/check-conf-XXXXXX");
        ck_assert_int_eq(write_conf(path, "[exec]\nkill_grace_ms = soon\n[backend.docker]\n"
                                          "pids_limit = many\nhost = bogus://x\nfoo = 1\n"
                                          "[backend.modal]\nmode = sometimes\n"),
                         0);
        ck_assert_int_lt(config_load(path, true, &c, &err), 0);
        static const char *const all[] = {":2: [exec] kill_grace_ms", ":4: [backend.docker] pids",
                                          ":5: [backend.docker] host", ":6: unknown key 'foo'",
                                          ":8: [backend.modal] mode"};
        for (size_t i = 0; i < ARRAY_SIZE(all); i++)
                ck_assert_msg(strstr(err.message, all[i]), "%s not in %s", all[i], err.message);
        sbx_error_clear(&err);
        unlink(path);
        strcpy(path, "/tmp/check-conf-XXXXXX");
        ck_assert_int_eq(write_conf(path, "[backend.docker]\nrecreate = Off\nagent = off\n"
                                          "pids_limit = 1\n[backend.local]\nask_isolated = ask\n"),
                         0);
        ck_assert_int_eq(config_load(path, true, &c, &err), 0);
        config_free(c);
        unlink(path);

        ck_assert_int_eq(config_load("/nonexistent/sandboxd.conf", false, &c, &err), 0);
        config_free(c);
        ck_assert_int_lt(config_load("/nonexistent/sandboxd.conf", true, &c, &err), 0);
        sbx_error_clear(&err);
}
END_TEST

/* One lookup for daemon and client (issue 17: a non-root daemon without XDG_RUNTIME_DIR listened
 * where sandboxctl refused to look). */
START_TEST(test_sockpath)
{
        static const struct {
                uid_t uid;
                const char *xdg, *want;
                bool private_dir;
        } cases[] = {
                {0, "/run/user/0", "/run/sandboxd/sandboxd.sock", false},
                {1000, "/run/user/1000", "/run/user/1000/sandboxd/sandboxd.sock", false},
                {1000, NULL, "/tmp/sandboxd-1000/sandboxd.sock", true},
                {1000, "", "/tmp/sandboxd-1000/sandboxd.sock", true},
                {1000, "relative", "/tmp/sandboxd-1000/sandboxd.sock", true},
        };
        char dir[] = "/tmp/check-sockpath-XXXXXX", *path, *why = NULL;

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                bool priv = !cases[i].private_dir;
                char *p = sockpath_default(cases[i].uid, cases[i].xdg, &priv);
                ck_assert_str_eq(p, cases[i].want);
                ck_assert(priv == cases[i].private_dir);
                free(p);
        }
        ck_assert_ptr_nonnull(mkdtemp(dir));
        path = xasprintf("%s/sandboxd.sock", dir);
        ck_assert_int_eq(sockpath_check_dir(path, geteuid(), &why), 0);
        ck_assert_int_eq(sockpath_check_dir(path, geteuid() + 1, &why), -EPERM);
        ck_assert_ptr_nonnull(strstr(why, "owned by uid"));
        free(why);
        ck_assert_int_eq(chmod(dir, 0777), 0);
        ck_assert_int_eq(sockpath_check_dir(path, geteuid(), &why), -EPERM);
        free(why);
        ck_assert_int_eq(rmdir(dir), 0);
        ck_assert_int_eq(sockpath_check_dir(path, geteuid(), &why), -ENOENT);
        free(path);
}
END_TEST

/* LIST_COUNT_UID counts the entries whose uid field matches, wherever the field and the node
 * lie in the struct (before or after each other). */
struct uid_entry {
        uid_t before;
        struct list node;
        uid_t after;
};

START_TEST(test_list_count_uid)
{
        struct list head;
        struct uid_entry e[5] = {{1, {0}, 7}, {2, {0}, 7}, {1, {0}, 8}, {3, {0}, 7}, {1, {0}, 7}};

        list_init(&head);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, before, 1), 0);
        for (size_t i = 0; i < 5; i++)
                list_add_tail(&head, &e[i].node);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, before, 1), 3);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, before, 3), 1);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, before, 4), 0);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, after, 7), 4);
        list_del(&e[0].node);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, before, 1), 2);
        ck_assert_uint_eq(LIST_COUNT_UID(&head, struct uid_entry, node, after, 8), 1);
}
END_TEST

/* Test entry point. */
int
main(void)
{
        Suite *s = suite_create("protocol");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        util_json_alloc_init();
        tcase_add_test(tc, test_frame_lines);
        tcase_add_test(tc, test_frame_too_long_keeps_connection);
        tcase_add_test(tc, test_frame_drop_partial);
        tcase_add_test(tc, test_frame_trim);
        tcase_add_test(tc, test_utf8);
        tcase_add_test(tc, test_base64);
        tcase_add_test(tc, test_params);
        tcase_add_test(tc, test_spool_ring);
        tcase_add_test(tc, test_spool_stop);
        tcase_add_test(tc, test_config);
        tcase_add_test(tc, test_sockpath);
        tcase_add_test(tc, test_list_count_uid);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
