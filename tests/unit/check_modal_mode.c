/* check_modal_mode.c — the Modal backend's pure parts: the protobuf wire codec, the TOML
 * subset of ~/.modal.toml, credential discovery and the mode decision, each as a table; the
 * in-band shell-state filter under every split of its stream; shell quoting. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/modal/modal_int.h"
#include "backends/modal/modal_mode.h"
#include "backends/modal/modal_pb.h"
#include "protocol/error.h"
#include "protocol/util.h"

/* ---- protobuf ---- */

static void
hex(const struct buf *b, char *out)
{
        for (size_t i = 0; i < b->len; i++)
                sprintf(out + 2 * i, "%02x", (unsigned char) b->data[i]);
        out[2 * b->len] = '\0';
}

/* Encodings from the protobuf encoding guide (150 -> 08 96 01, "testing" -> 12 07 74 65 …). */
START_TEST(test_pb_known_encodings)
{
        static const struct {
                const char *want;
                int kind;
                uint64_t v;
        } cases[] = {
                {"089601", 0, 150},
                {"0800", 0, 0},
                {"08ffffffffffffffffff01", 0, UINT64_MAX},
                {"120774657374696e67", 1, 0},
                {"1d0000803f", 2, 0},
                {"21000000000000f03f", 3, 0},
                {"a80601", 4, 1},
        };
        char out[128];

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct buf b = {0};
                if (cases[i].kind == 0)
                        pb_put_varint(&b, 1, cases[i].v);
                else if (cases[i].kind == 1)
                        pb_put_str(&b, 2, "testing");
                else if (cases[i].kind == 2)
                        pb_put_float(&b, 3, 1.0f);
                else if (cases[i].kind == 3)
                        pb_put_double(&b, 4, 1.0);
                else
                        pb_put_bool(&b, 101, true);
                hex(&b, out);
                ck_assert_msg(strcmp(out, cases[i].want) == 0, "case %zu: %s", i, out);
                buf_free(&b);
        }
}
END_TEST

START_TEST(test_pb_round_trip_nested)
{
        struct buf inner = {0}, outer = {0};
        struct pb_reader r, sub;
        struct pb_field f;
        int seen = 0;

        pb_put_str(&inner, 1, "k");
        pb_put_map_entry(&inner, 12, "PATH", "/bin");
        pb_put_msg(&outer, 5, &inner);
        pb_put_varint(&outer, 7, 3600);
        pb_put_float(&outer, 2, 55.0f);
        pb_put_double(&outer, 3, 2.5);
        pb_put_varint(&outer, 1000, 9); /* unknown to a reader: skipped by number */
        pb_reader_init(&r, outer.data, outer.len);
        while (pb_next(&r, &f)) {
                if (f.num == 5) {
                        struct pb_field g;
                        pb_sub(&f, &sub);
                        ck_assert(pb_next(&sub, &g) && g.num == 1 && g.len == 1);
                        ck_assert(pb_next(&sub, &g) && g.num == 12 && g.wire == PB_LEN);
                        ck_assert(!pb_next(&sub, &g) && !sub.error);
                        seen |= 1;
                } else if (f.num == 7) {
                        ck_assert_uint_eq(f.varint, 3600);
                        seen |= 2;
                } else if (f.num == 2) {
                        ck_assert(fabsf(pb_float(&f) - 55.0f) < 1e-6f);
                        seen |= 4;
                } else if (f.num == 3) {
                        ck_assert(fabs(pb_double(&f) - 2.5) < 1e-12);
                        seen |= 8;
                } else {
                        ck_assert_uint_eq(f.num, 1000);
                        seen |= 16;
                }
        }
        ck_assert(!r.error);
        ck_assert_int_eq(seen, 31);
        buf_free(&inner);
        buf_free(&outer);
}
END_TEST

/* Malformed input is an error, never a partial message taken for a whole one. */
START_TEST(test_pb_malformed)
{
        static const struct {
                const char *bytes;
                size_t len;
        } cases[] = {
                {"\x0a\x05"
                 "abc",
                 5},                                                      /* length past end */
                {"\x08\x96", 2},                                          /* cut varint */
                {"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12}, /* 11-byte varint */
                {"\x00\x01", 2},                                          /* field 0 */
                {"\x0b\x00", 2},                                          /* group start */
                {"\x0d\x00\x00", 3},                                      /* cut fixed32 */
                {"\x09\x00\x00\x00\x00", 5},                              /* cut fixed64 */
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct pb_reader r;
                struct pb_field f;
                pb_reader_init(&r, cases[i].bytes, cases[i].len);
                while (pb_next(&r, &f))
                        ;
                ck_assert_msg(r.error, "case %zu accepted", i);
        }
}
END_TEST

/* ---- credentials ---- */

struct file {
        const char *path;
        const char *text; /* NULL: EACCES */
};

struct files {
        const struct file *v;
};

static int
fake_read(void *ctx, const char *path, char **data, size_t *len)
{
        const struct files *fs = ctx;

        for (const struct file *f = fs->v; f && f->path; f++) {
                if (strcmp(f->path, path) != 0)
                        continue;
                if (!f->text)
                        return -EACCES;
                *data = xstrdup(f->text);
                *len = strlen(f->text);
                return 0;
        }
        return -ENOENT;
}

#define HOME_TOML "/home/d/.modal.toml"

static const char toml_two[] = "# two profiles\n"
                               "[work]\n"
                               "token_id = \"ak-work\"\n"
                               "token_secret = 'as-work'\n"
                               "active = false\n"
                               "\n"
                               "[\"play\"]\n"
                               "token_id = \"ak-play\"  # trailing comment\n"
                               "token_secret = \"as-\\\"play\\\"\"\n"
                               "active = true\n"
                               "server_url = \"http://127.0.0.1:1\"\n"
                               "loglevel = \"DEBUG\"\n"
                               "timeout = 30\n";

static const struct file f_two[] = {{HOME_TOML, toml_two}, {NULL, NULL}};
static const struct file f_alt[] = {{"/etc/m.toml", "[default]\ntoken_id = \"ak-alt\"\n"
                                                    "token_secret = \"as-alt\"\n"},
                                    {NULL, NULL}};
static const struct file f_none_active[] = {
        {HOME_TOML, "[a]\ntoken_id = \"x\"\ntoken_secret = \"y\"\n"}, {NULL, NULL}};
static const struct file f_two_active[] = {{HOME_TOML, "[a]\nactive = true\n[b]\nactive = true\n"},
                                           {NULL, NULL}};
static const struct file f_half[] = {{HOME_TOML, "[default]\ntoken_id = \"ak\"\n"}, {NULL, NULL}};
static const struct file f_bad[] = {{HOME_TOML, "[default]\ntoken_id = [1, 2]\n"}, {NULL, NULL}};
static const struct file f_unreadable[] = {{HOME_TOML, NULL}, {NULL, NULL}};

struct creds_case {
        const char *name;
        struct modal_env env;
        const struct file *files;
        bool found;
        const char *token_id;   /* when found */
        const char *source;     /* substring */
        const char *server_url; /* NULL: none */
        const char *why;        /* substring of error or checked when !found */
};

static const struct creds_case creds_cases[] = {
        {"env pair",
         {.token_id = "ak-e", .token_secret = "as-e", .home = "/home/d"},
         NULL,
         true,
         "ak-e",
         "environment",
         NULL,
         NULL},
        {"env pair wins over the file",
         {"ak-e", "as-e", NULL, NULL, NULL, NULL, "/home/d"},
         f_two,
         true,
         "ak-e",
         "environment",
         "http://127.0.0.1:1",
         NULL},
        {"env pair with a broken file",
         {"ak-e", "as-e", NULL, NULL, NULL, NULL, "/home/d"},
         f_bad,
         true,
         "ak-e",
         "environment",
         NULL,
         NULL},
        {"only MODAL_TOKEN_ID",
         {.token_id = "ak-e", .home = "/home/d"},
         f_two,
         false,
         NULL,
         NULL,
         NULL,
         "MODAL_TOKEN_SECRET is not"},
        {"only MODAL_TOKEN_SECRET",
         {.token_secret = "as-e", .home = "/home/d"},
         f_two,
         false,
         NULL,
         NULL,
         NULL,
         "MODAL_TOKEN_ID is not"},
        {"file, active profile",
         {.home = "/home/d"},
         f_two,
         true,
         "ak-play",
         HOME_TOML " [play]",
         "http://127.0.0.1:1",
         NULL},
        {"file, MODAL_PROFILE picks an inactive one",
         {.profile = "work", .home = "/home/d"},
         f_two,
         true,
         "ak-work",
         "[work]",
         NULL,
         NULL},
        {"file, MODAL_PROFILE names none",
         {.profile = "nope", .home = "/home/d"},
         f_two,
         false,
         NULL,
         NULL,
         NULL,
         "no profile 'nope'"},
        {"MODAL_CONFIG_PATH",
         {.config_path = "/etc/m.toml", .home = "/home/d"},
         f_alt,
         true,
         "ak-alt",
         "/etc/m.toml [default]",
         NULL,
         NULL},
        {"MODAL_CONFIG_PATH missing",
         {.config_path = "/etc/m.toml", .home = "/home/d"},
         f_two,
         false,
         NULL,
         NULL,
         NULL,
         "/etc/m.toml does not exist"},
        {"MODAL_SERVER_URL overrides",
         {NULL, NULL, NULL, NULL, "http://x:2", NULL, "/home/d"},
         f_two,
         true,
         "ak-play",
         NULL,
         "http://x:2",
         NULL},
        {"no file",
         {.home = "/home/d"},
         NULL,
         false,
         NULL,
         NULL,
         NULL,
         HOME_TOML " does not exist"},
        {"no active profile and no default",
         {.home = "/home/d"},
         f_none_active,
         false,
         NULL,
         NULL,
         NULL,
         "no active profile"},
        {"two active profiles",
         {.home = "/home/d"},
         f_two_active,
         false,
         NULL,
         NULL,
         NULL,
         "several active profiles ('a', 'b')"},
        {"half a pair in the file",
         {.home = "/home/d"},
         f_half,
         false,
         NULL,
         NULL,
         NULL,
         "has no token_secret"},
        {"malformed file", {.home = "/home/d"}, f_bad, false, NULL, NULL, NULL, "line 2"},
        {"unreadable file",
         {.home = "/home/d"},
         f_unreadable,
         false,
         NULL,
         NULL,
         NULL,
         "Permission denied"},
};

START_TEST(test_creds_table)
{
        const struct creds_case *c = &creds_cases[_i];
        struct files fs = {c->files};
        struct modal_creds cr;

        modal_creds_find(&c->env, fake_read, &fs, &cr);
        ck_assert_msg(cr.found == c->found, "%s: found %d", c->name, cr.found);
        if (c->found) {
                ck_assert_str_eq(cr.token_id, c->token_id);
                ck_assert(cr.token_secret && *cr.token_secret);
                ck_assert_msg(!c->source || strstr(cr.source, c->source), "%s: source %s", c->name,
                              cr.source);
        } else {
                const char *why = cr.error ? cr.error : cr.checked;
                ck_assert_msg(why && strstr(why, c->why), "%s: %s", c->name, why ? why : "-");
                ck_assert(!cr.token_id && !cr.token_secret);
        }
        if (c->server_url)
                ck_assert_str_eq(cr.server_url, c->server_url);
        /* No secret in any string meant for people. */
        for (const char *s = cr.source ? cr.source : ""; *s; s++)
                ck_assert(strncmp(s, "as-", 3) != 0);
        ck_assert(!cr.error || !strstr(cr.error, "as-"));
        modal_creds_clear(&cr);
}
END_TEST

/* ---- the decision ---- */

enum { A = MODAL_MODE_AUTO, D = MODAL_MODE_DIRECT, M = MODAL_MODE_MANAGED, N = MODAL_MODE_NONE };

struct resolve_case {
        int configured, requested;
        bool direct_ok, managed_ready;
        int selected;
        int code;
        const char *reason; /* substring */
};

static const struct resolve_case resolve_cases[] = {
        /* auto prefers managed when ready, else direct */
        {A, A, true, true, M, 0, NULL},
        {A, A, true, false, D, 0, NULL},
        {A, A, false, true, M, 0, NULL},
        {A, A, false, false, N, SBX_E_BACKEND_UNAVAILABLE,
         "mode auto: managed: gw-why; direct: "
         "cred-why"},
        /* a sandbox asks for one under auto */
        {A, D, true, true, D, 0, NULL},
        {A, D, false, true, N, SBX_E_BACKEND_UNAVAILABLE,
         "mode direct: no usable Modal "
         "credentials: cred-why"},
        {A, M, true, true, M, 0, NULL},
        {A, M, true, false, N, SBX_E_BACKEND_UNAVAILABLE,
         "mode managed: the gateway is not "
         "ready: gw-why"},
        /* direct and managed are exclusive: never the other one */
        {D, A, true, true, D, 0, NULL},
        {D, A, false, true, N, SBX_E_BACKEND_UNAVAILABLE, "mode direct"},
        {D, D, true, false, D, 0, NULL},
        {D, M, true, true, N, SBX_E_PARAMS,
         "modal.mode 'managed' refused: the operator set "
         "[backend.modal] mode = direct"},
        {M, A, true, true, M, 0, NULL},
        {M, A, true, false, N, SBX_E_BACKEND_UNAVAILABLE,
         "mode managed: the gateway is not "
         "ready"},
        {M, M, false, true, M, 0, NULL},
        {M, D, true, true, N, SBX_E_PARAMS, "modal.mode 'direct' refused"},
};

START_TEST(test_resolve_table)
{
        const struct resolve_case *c = &resolve_cases[_i];
        struct modal_resolve_in in = {(enum modal_mode) c->configured,
                                      (enum modal_mode) c->requested,
                                      c->direct_ok,
                                      "cred-why",
                                      c->managed_ready,
                                      "gw-why"};
        struct modal_choice out;

        modal_resolve(&in, &out);
        ck_assert_msg((int) out.selected == c->selected, "case %d: selected %d", _i, out.selected);
        ck_assert_int_eq(out.code, c->code);
        if (c->reason)
                ck_assert_msg(out.reason && strstr(out.reason, c->reason), "case %d: %s", _i,
                              out.reason ? out.reason : "-");
        if (c->code)
                ck_assert(out.hint && *out.hint);
        else
                ck_assert(!out.reason && !out.hint);
        modal_choice_clear(&out);
}
END_TEST

START_TEST(test_mode_names)
{
        enum modal_mode m;

        for (int i = A; i <= M; i++) {
                ck_assert_int_eq(modal_mode_parse(modal_mode_name((enum modal_mode) i), &m), 0);
                ck_assert_int_eq((int) m, i);
        }
        ck_assert_int_eq(modal_mode_parse("Direct", &m), -EINVAL);
        ck_assert_int_eq(modal_mode_parse(NULL, &m), -EINVAL);
        ck_assert(modal_mode_name(MODAL_MODE_NONE) == NULL);
}
END_TEST

START_TEST(test_toml_subset)
{
        static const struct {
                const char *text;
                int profiles; /* -1: rejected */
        } cases[] = {
                {"", 0},
                {"key = 1\n[a]\n", 1},
                {"[a]\n[b]\n[a]\nactive = true\n", 2},
                {"[a]\r\ntoken_id = \"x\"\r\n", 1},
                {"[a] # c\n  # only a comment\n", 1},
                {"[[a]]\n", -1},
                {"[a]\nx = \"\"\"multi\nline\"\"\"\n", -1},
                {"[a]\nx = {y = 1}\n", -1},
                {"[a]\nx = \"unterminated\n", -1},
                {"[a]\nx = \"bad escape \\q\"\n", -1},
                {"[a]\nx \"no equals\"\n", -1},
                {"[a\n", -1},
                {"[a]\nx = 1 junk\n", -1},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct modal_toml_profile *p = NULL;
                char *err = NULL;
                int n = modal_toml_parse(cases[i].text, strlen(cases[i].text), &p, &err);
                ck_assert_msg(n == (cases[i].profiles < 0 ? -EINVAL : cases[i].profiles),
                              "case %zu: %d", i, n);
                ck_assert(n >= 0 || (err && strstr(err, "line ")));
                modal_toml_free(p, n > 0 ? n : 0);
                free(err);
        }
}
END_TEST

/* ---- the in-band state filter ---- */

static void
collect(void *ctx, const char *data, size_t len)
{
        buf_append(ctx, data, len);
}

/* Every way of cutting the stream into three chunks gives the same output and state. */
START_TEST(test_sfilter_every_split)
{
        struct modal_sfilter f;
        struct buf want = {0}, stream = {0};
        static const char blob[] = "/tmp\n\0A=1\0B=\036x\0";
        const char *before = "out\036put \036SBX not it\n", *after = "late output\n";

        modal_sfilter_init(&f);
        buf_appendf(&want, "%s%s", before, after);
        buf_append(&stream, before, strlen(before));
        buf_append(&stream, f.marker, f.mlen);
        buf_appendf(&stream, "%zu\n", sizeof(blob) - 1);
        buf_append(&stream, blob, sizeof(blob) - 1);
        buf_append(&stream, after, strlen(after));
        modal_sfilter_free(&f);
        for (size_t i = 0; i <= stream.len; i++) {
                for (size_t j = i; j <= stream.len; j += 7) {
                        struct modal_sfilter g;
                        struct buf out = {0};
                        const char *st;
                        size_t slen = 0;
                        modal_sfilter_init(&g);
                        memcpy(g.marker, stream.data + strlen(before), g.mlen);
                        modal_sfilter_feed(&g, stream.data, i, collect, &out);
                        modal_sfilter_feed(&g, stream.data + i, j - i, collect, &out);
                        modal_sfilter_feed(&g, stream.data + j, stream.len - j, collect, &out);
                        modal_sfilter_end(&g, collect, &out);
                        st = modal_sfilter_state(&g, &slen);
                        ck_assert_msg(out.len == want.len && !memcmp(out.data, want.data, out.len),
                                      "split %zu/%zu: output differs", i, j);
                        ck_assert_msg(st && slen == sizeof(blob) - 1 && !memcmp(st, blob, slen),
                                      "split %zu/%zu: state differs", i, j);
                        modal_sfilter_free(&g);
                        buf_free(&out);
                }
        }
        buf_free(&want);
        buf_free(&stream);
}
END_TEST

/* No marker: everything is output, a held partial marker included; a marker without a proper
 * length line is not ours and takes nothing more. */
START_TEST(test_sfilter_no_or_bad_marker)
{
        struct modal_sfilter f;
        struct buf out = {0};
        size_t slen;

        modal_sfilter_init(&f);
        modal_sfilter_feed(&f, "abc", 3, collect, &out);
        modal_sfilter_feed(&f, f.marker, 10, collect, &out); /* a cut-off marker */
        modal_sfilter_end(&f, collect, &out);
        ck_assert_uint_eq(out.len, 13);
        ck_assert(memcmp(out.data + 3, f.marker, 10) == 0);
        ck_assert(modal_sfilter_state(&f, &slen) == NULL);
        modal_sfilter_free(&f);
        buf_free(&out);
        modal_sfilter_init(&f);
        modal_sfilter_feed(&f, f.marker, f.mlen, collect, &out);
        modal_sfilter_feed(&f, "x12\nrest", 8, collect, &out);
        ck_assert(modal_sfilter_state(&f, &slen) == NULL);
        ck_assert_uint_eq(out.len, 7); /* "12\nrest": passed on after the bad length */
        modal_sfilter_free(&f);
        buf_free(&out);
}
END_TEST

/* exp of a JWT (base64url, padding optional), 0 when absent or not a JWT. */
START_TEST(test_jwt_exp)
{
        /* {"alg":"none"} . {"exp":1790000000,"sub":"x"} . sig */
        ck_assert(
                modal_jwt_exp("eyJhbGciOiJub25lIn0.eyJleHAiOjE3OTAwMDAwMDAsInN1YiI6IngifQ.c2ln") ==
                1790000000.0);
        ck_assert(modal_jwt_exp("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln") == 0); /* no exp */
        ck_assert(modal_jwt_exp("not-a-jwt") == 0);
        ck_assert(modal_jwt_exp("a.!!!.b") == 0);
        ck_assert(modal_jwt_exp(NULL) == 0);
}
END_TEST

START_TEST(test_sh_quote)
{
        char *argv[] = {"echo", "it's", "$HOME", "", "a b", NULL};
        char *q = modal_sh_quote_argv(argv);

        ck_assert_str_eq(q, "'echo' 'it'\\''s' '$HOME' '' 'a b'");
        free(q);
}
END_TEST

static Suite *
modal_suite(void)
{
        Suite *s = suite_create("modal_mode");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_pb_known_encodings);
        tcase_add_test(tc, test_pb_round_trip_nested);
        tcase_add_test(tc, test_pb_malformed);
        tcase_add_loop_test(tc, test_creds_table, 0, (int) ARRAY_SIZE(creds_cases));
        tcase_add_loop_test(tc, test_resolve_table, 0, (int) ARRAY_SIZE(resolve_cases));
        tcase_add_test(tc, test_mode_names);
        tcase_add_test(tc, test_toml_subset);
        tcase_add_test(tc, test_sfilter_every_split);
        tcase_add_test(tc, test_sfilter_no_or_bad_marker);
        tcase_add_test(tc, test_sh_quote);
        tcase_add_test(tc, test_jwt_exp);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(modal_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
