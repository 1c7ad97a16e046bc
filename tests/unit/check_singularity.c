/* check_singularity.c — the singularity backend's pure parts: the SIF header check, instance
 * names, and the `instance start` command line built from a spec (the tool itself is faked in
 * tests/integration/test_singularity.py). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/singularity/sing_int.h"

static void
sif_header(unsigned char *h, uint64_t data_off, uint64_t data_len)
{
        memset(h, 0, 128);
        memcpy(h, "#!/usr/bin/env run-singularity\n", 31);
        memcpy(h + 32, "SIF_MAGIC", 10);
        memcpy(h + 42, "01", 3);
        for (int i = 0; i < 8; i++) {
                h[96 + i] = (unsigned char) (((uint64_t) 4096 >> (8 * i)) & 0xff); /* descriptors */
                h[104 + i] = (unsigned char) (((uint64_t) 1024 >> (8 * i)) & 0xff);
                h[112 + i] = (unsigned char) ((data_off >> (8 * i)) & 0xff);
                h[120 + i] = (unsigned char) ((data_len >> (8 * i)) & 0xff);
        }
}

START_TEST(test_sif_header)
{
        unsigned char h[128];
        char why[160];

        sif_header(h, 32768, 1000);
        ck_assert_int_eq(sing_sif_header_check(h, sizeof(h), 33768, why), 0);
        ck_assert_int_eq(sing_sif_header_check(h, sizeof(h), 33767, why), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "truncated"));
        ck_assert_int_eq(sing_sif_header_check(h, 100, 33768, why), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "too short"));
        h[40] = 'X';
        ck_assert_int_eq(sing_sif_header_check(h, sizeof(h), 33768, why), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "SIF_MAGIC"));
        sif_header(h, 32768, 1000);
        h[43] = '2';
        ck_assert_int_eq(sing_sif_header_check(h, sizeof(h), 33768, why), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "version"));
        /* Offsets that overflow when added are truncation, never a pass. */
        sif_header(h, 32768, UINT64_MAX - 10);
        ck_assert_int_eq(sing_sif_header_check(h, sizeof(h), 33768, why), -EINVAL);
}
END_TEST

START_TEST(test_instance_names)
{
        char *n, *id;

        memcpy(sing.tag, "0123abcd", 9);
        n = sing_instance_name("sbx_1a2b3c4d");
        ck_assert_str_eq(n, "sbxd-0123abcd-1a2b3c4d");
        id = sing_instance_id(n);
        ck_assert_str_eq(id, "sbx_1a2b3c4d");
        free(id);
        free(n);
        ck_assert_ptr_null(sing_instance_id("sbxd-ffffffff-1a2b3c4d")); /* another daemon's */
        ck_assert_ptr_null(sing_instance_id("sbxd-0123abcd-"));
        ck_assert_ptr_null(sing_instance_id("mine"));
}
END_TEST

struct argv_case {
        const char *spec;   /* JSON: network, mounts, singularity, resources */
        const char *want;   /* words the argv holds, in order, space separated; NULL: refused */
        const char *refuse; /* words of the error */
};

static char *
argv_build(const char *specjson, json_t *enforced, struct sbx_error *err)
{
        json_t *j = json_loads(specjson, 0, NULL);
        json_t *res = json_object_get(j, "resources");
        struct sandbox_spec spec = {
                .network = json_string_value(json_object_get(j, "network")),
                .mounts =
                        json_object_get(j, "mounts") ? json_object_get(j, "mounts") : json_array(),
                .section = json_object_get(j, "singularity"),
                .res = {.memory_mb = json_integer_value(json_object_get(res, "memory_mb")),
                        .pids = json_integer_value(json_object_get(res, "pids")),
                        .cpus = json_number_value(json_object_get(res, "cpus"))},
        };
        /* where the sources lead (sing_binds.c resolves them; never the argv itself) */
        json_t *real = json_array(),
               *paths = json_pack("{s:s,s:s}", "/tmp", "/tmp", "/lnk", "/tmp");
        char **argv, *line = NULL;
        struct buf b = {0};

        ck_assert_ptr_nonnull(j);
        argv = sing_instance_argv("/x/apptainer", &spec, "/c/img.sif", "sbxd-t-1", NULL, paths,
                                  enforced, real, err);
        for (size_t i = 0; argv && argv[i]; i++)
                buf_appendf(&b, "%s%s", i ? " " : "", argv[i]);
        if (argv)
                line = xstrndup(b.data, b.len);
        buf_free(&b);
        sing_argv_free(argv);
        if (!json_object_get(j, "mounts"))
                json_decref(spec.mounts);
        json_decref(real);
        json_decref(paths);
        json_decref(j);
        return line;
}

START_TEST(test_instance_argv)
{
        static const struct argv_case cases[] = {
                {"{}",
                 "/x/apptainer instance start --containall --no-home --cleanenv --no-privs "
                 "--writable-tmpfs --net --network none --bind /a/agent:/.sandboxd/"
                 "sandboxd-agent:ro /c/img.sif sbxd-t-1",
                 NULL},
                {"{\"network\": \"host\"}", "--writable-tmpfs --bind", NULL},
                {"{\"singularity\": {\"writable_tmpfs\": false}}", "--no-privs --net", NULL},
                {"{\"mounts\": [{\"type\": \"bind\", \"source\": \"/tmp\", \"target\": \"/w\", "
                 "\"readonly\": true}, {\"type\": \"tmpfs\", \"target\": \"/scr\"}]}",
                 "sandboxd-agent:ro --bind /tmp:/w:ro --scratch /scr /c/img.sif", NULL},
                {"{\"singularity\": {\"binds\": [\"/tmp\", \"/tmp:/t2:ro\"]}}",
                 "--bind /tmp:/tmp:rw --bind /tmp:/t2:ro", NULL},
                {"{\"mounts\": [{\"type\": \"bind\", \"source\": \"/lnk\", \"target\": \"/w\"}]}",
                 "--bind /tmp:/w:rw", NULL},
                {"{\"resources\": {\"memory_mb\": 64, \"pids\": 50, \"cpus\": 1.5}}",
                 "--memory 64M --cpus 1.5 --pids-limit 50", NULL},
                {"{\"mounts\": [{\"type\": \"bind\", \"source\": \"/tmp,x\", \"target\": "
                 "\"/w\"}]}",
                 NULL, "without ',' or ':'"},
                {"{\"mounts\": [{\"type\": \"bind\", \"source\": \"/nonexistent-src\", "
                 "\"target\": \"/w\"}]}",
                 NULL, "bind source '/nonexistent-src' does not exist or uid"},
                {"{\"mounts\": [{\"type\": \"volume\", \"source\": \"v1\", \"target\": \"/w\"}]}",
                 NULL, "named volumes"},
                {"{\"singularity\": {\"binds\": [\"/tmp:/x:rx\"]}}", NULL, "not ro or rw"},
                {"{\"singularity\": {\"fakeroot\": true}}", NULL, "singularity.fakeroot"},
                {"{\"singularity\": {\"overlay\": \"/img\"}}", NULL, "true or false"},
        };

        sing.agent = "/a/agent";
        sing.default_network = "none";
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct sbx_error err = {0};
                json_t *enf = json_object();
                sing.limits = true;
                char *line = argv_build(cases[i].spec, enf, &err);
                if (cases[i].want) {
                        ck_assert_msg(line && strstr(line, cases[i].want), "case %zu: %s", i,
                                      line ? line : err.message);
                } else {
                        ck_assert_msg(!line, "case %zu accepted: %s", i, line);
                        ck_assert_msg(strstr(err.message, cases[i].refuse), "case %zu: %s", i,
                                      err.message);
                        ck_assert_int_eq(err.code, SBX_E_PARAMS);
                }
                free(line);
                sbx_error_clear(&err);
                json_decref(enf);
        }
}
END_TEST

/* Limits the host cannot apply are not passed, and enforced says so. */
START_TEST(test_limits_enforced)
{
        struct sbx_error err = {0};
        const char *spec = "{\"resources\": {\"memory_mb\": 64, \"pids\": 50}}";
        json_t *enf = json_object();
        char *line;

        sing.agent = "/a/agent";
        sing.default_network = "none";
        sing.limits = false;
        line = argv_build(spec, enf, &err);
        ck_assert_ptr_null(strstr(line, "--memory"));
        ck_assert(json_is_null(json_object_get(enf, "memory_mb")));
        ck_assert(json_is_null(json_object_get(enf, "pids")));
        free(line);
        json_object_clear(enf);
        sing.limits = true;
        line = argv_build(spec, enf, &err);
        ck_assert_ptr_nonnull(strstr(line, "--memory 64M"));
        ck_assert_str_eq(json_string_value(json_object_get(enf, "memory_mb")), "cgroup");
        free(line);
        json_decref(enf);
}
END_TEST

static Suite *
singularity_suite(void)
{
        Suite *s = suite_create("singularity");
        TCase *tc = tcase_create("pure");

        tcase_add_test(tc, test_sif_header);
        tcase_add_test(tc, test_instance_names);
        tcase_add_test(tc, test_instance_argv);
        tcase_add_test(tc, test_limits_enforced);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(singularity_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
