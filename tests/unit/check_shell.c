/* check_shell.c — the shell-state wrapper and its parser: blobs written by hand (every quoting
 * form, every way to be malformed, the limits) and by the real bash, dash and busybox sh. */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/shell.h"
#include "protocol/util.h"

#define HDR "sandboxd-state 2\0"

static char tmpdir[] = "/tmp/check-shell-XXXXXX";

/* A blob from its fields (each given with its length; NULs between them added). */
static struct buf
blob(const char *kind, const char *cwd, const char *pwd, const char *exports, const char *funcs)
{
        struct buf b = {0};
        const char *f[] = {"sandboxd-state 2", kind, cwd, pwd, exports, funcs, "end"};

        for (size_t i = 0; i < ARRAY_SIZE(f); i++)
                buf_append(&b, f[i], strlen(f[i]) + 1);
        return b;
}

static const char *
env_get(const struct shell_state *st, const char *k)
{
        return json_string_value(json_object_get(st->env, k));
}

static int
parse_buf(struct buf *b, struct shell_state *st, char **why)
{
        int r = shell_state_parse(b->data, b->len, st, why);

        buf_free(b);
        return r;
}

START_TEST(test_bash_quoting)
{
        struct buf b = blob("bash", "/tmp\n", "/tmp",
                            "declare -x A=\"1\"\n"
                            "declare -rx B=\"x=y\\\"z\\$\\`\\\\\"\n"
                            "declare -x C=$'l1\\nl2\\t\\377\\001\\\\\\'q\\x41\\u00e9'\n"
                            "declare -ax ARR=([0]=\"a\" [1]=$'b\\nc')\n"
                            "declare -Ax AS=([k]=\"v\" )\n"
                            "declare -x OLDPWD\n"
                            "declare -x PWD=\"/tmp\"\n"
                            "declare -x SHLVL=\"1\"\n"
                            "declare -x E=\"\"\n"
                            "declare -ix I=\"5\"\n"
                            "export P=\"posix mode\"\n"
                            "export -a PA=([0]=\"x\")\n",
                            "");
        struct shell_state st;
        char *why;

        ck_assert_int_eq(parse_buf(&b, &st, &why), 0);
        ck_assert_int_eq(st.kind, SHELL_BASH);
        ck_assert_str_eq(st.cwd, "/tmp");
        ck_assert_str_eq(env_get(&st, "A"), "1");
        ck_assert_str_eq(env_get(&st, "B"), "x=y\"z$`\\");
        ck_assert_str_eq(env_get(&st, "C"), "l1\nl2\t\377\001\\'qA\xc3\xa9");
        ck_assert_str_eq(env_get(&st, "E"), "");
        ck_assert_str_eq(env_get(&st, "I"), "5");
        ck_assert_str_eq(env_get(&st, "P"), "posix mode");
        /* arrays are never in the environment; the shell's own variables are not kept */
        const char *gone[] = {"ARR", "AS", "PA", "OLDPWD", "PWD", "SHLVL"};
        for (size_t i = 0; i < ARRAY_SIZE(gone); i++)
                ck_assert_ptr_null(json_object_get(st.env, gone[i]));
        ck_assert_int_eq(json_object_size(st.env), 6);
        shell_state_clear(&st);
}
END_TEST

START_TEST(test_posix_quoting)
{
        struct buf b = blob("sh", "/a b\n", "/a b",
                            "export HOME='/root'\n"
                            "export Q='it'\"'\"'s'\n"
                            "export NL='a\nb=c\n'\n"
                            "export BIN='\377\376'\n"
                            "export U\n"
                            "export Z=''\"''\"\\x'tail'\n",
                            "");
        struct shell_state st;
        char *why;

        ck_assert_int_eq(parse_buf(&b, &st, &why), 0);
        ck_assert_int_eq(st.kind, SHELL_SH);
        ck_assert_str_eq(st.cwd, "/a b");
        ck_assert_str_eq(env_get(&st, "Q"), "it's");
        ck_assert_str_eq(env_get(&st, "NL"), "a\nb=c\n");
        ck_assert_str_eq(env_get(&st, "BIN"), "\377\376");
        ck_assert_str_eq(env_get(&st, "Z"), "''xtail");
        ck_assert_ptr_null(json_object_get(st.env, "U"));
        shell_state_clear(&st);
}
END_TEST

START_TEST(test_cwd_fallbacks)
{
        static const struct {
                const char *phys, *logical, *want;
        } cases[] = {
                {"/p\n", "/l", "/p"}, /* pwd -P */
                {"/with\nnl\n", "/l", "/with\nnl"},
                {"", "/removed", "/removed"},   /* bash: pwd -P failed */
                {"\n", "/removed", "/removed"}, /* dash: an empty line */
                {"", "relative", NULL},         /* nothing usable: keep the old one */
                {"rel\n", "", NULL},
        };

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct buf b = blob("sh", cases[i].phys, cases[i].logical, "", "");
                struct shell_state st;
                char *why;
                ck_assert_int_eq(parse_buf(&b, &st, &why), 0);
                if (cases[i].want)
                        ck_assert_str_eq(st.cwd, cases[i].want);
                else
                        ck_assert_ptr_null(st.cwd);
                shell_state_clear(&st);
        }
}
END_TEST

START_TEST(test_functions)
{
        /* f's body holds a here-document with the lines that end a definition */
        struct buf b = blob("bash", "/\n", "/", "",
                            "f () \n{ \n    cat <<EOF\n}\ndeclare -fx f\nEOF\n\n}\ndeclare -fx f\n"
                            "g-h () \n{ \n    :\n}\ndeclare -ftx g-h\n");
        struct shell_state st;
        char *why;

        ck_assert_int_eq(parse_buf(&b, &st, &why), 0);
        ck_assert_str_eq(env_get(&st, "BASH_FUNC_f%%"),
                         "() { \n    cat <<EOF\n}\ndeclare -fx f\nEOF\n\n}");
        ck_assert_str_eq(env_get(&st, "BASH_FUNC_g-h%%"), "() { \n    :\n}");
        ck_assert_int_eq(json_object_size(st.env), 2);
        shell_state_clear(&st);
}
END_TEST

START_TEST(test_malformed)
{
        static const char *const exports[] = {
                "declare -x A=\"unterminated\n",
                "declare -x A='x\n",
                "declare -x A=$'\\q'\n",
                "declare -x A=$'x\n",
                "declare -x 1A=\"x\"\n",
                "declare -x =\"x\"\n",
                "declare -x A-B=\"x\"\n",
                "set A=1\n",
                "declare -x\n",
                "declare\n",
        };
        static const char *const funcs[] = {
                "f () \n{ \n}\n",
                "f () \n{ \n}\ndeclare -fx g\n",
                "no header\n",
                "f () \n{ \n}\ndeclare -fx f\ntrailing\n",
        };
        struct shell_state st;
        char *why;

        for (size_t i = 0; i < ARRAY_SIZE(exports); i++) {
                struct buf b = blob("sh", "/\n", "/", exports[i], "");
                ck_assert_msg(parse_buf(&b, &st, &why) == -EINVAL, "accepted %s", exports[i]);
                ck_assert_ptr_nonnull(strstr(why, "export -p"));
                free(why);
        }
        for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
                struct buf b = blob("bash", "/\n", "/", "", funcs[i]);
                ck_assert_msg(parse_buf(&b, &st, &why) == -EINVAL, "accepted %s", funcs[i]);
                free(why);
        }
        struct buf b = blob("zsh", "/\n", "/", "", "");
        ck_assert_int_eq(parse_buf(&b, &st, &why), -EINVAL);
        ck_assert_str_eq(why, "the shell did not finish writing it");
        free(why);
}
END_TEST

/* Every prefix of a good blob (a shell killed while writing it) and every one-byte change is
 * refused or parsed without reading past the end (ASan watches). */
START_TEST(test_every_prefix_and_byte)
{
        struct buf good =
                blob("bash", "/tmp\n", "/tmp",
                     "declare -x A=$'a\\nb'\ndeclare -x B=\"q\\\"\"\nexport C='x'\"'\"'y'\n",
                     "f () \n{ \n    :\n}\ndeclare -fx f\n");
        struct shell_state st;
        char *why;

        for (size_t n = 0; n < good.len; n++) {
                char *copy = xmalloc(n + 1);
                memcpy(copy, good.data, n);
                ck_assert_int_eq(shell_state_parse(copy, n, &st, &why), -EINVAL);
                free(why);
                free(copy);
        }
        for (size_t i = 0; i < good.len; i++) {
                for (int c = 0; c < 256; c += 37) {
                        char *copy = xmalloc(good.len);
                        memcpy(copy, good.data, good.len);
                        copy[i] = (char) c;
                        if (shell_state_parse(copy, good.len, &st, &why) == 0)
                                shell_state_clear(&st);
                        else
                                free(why);
                        free(copy);
                }
        }
        ck_assert_int_eq(shell_state_parse(good.data, good.len, &st, &why), 0);
        shell_state_clear(&st);
        buf_free(&good);
}
END_TEST

START_TEST(test_limits)
{
        struct buf e = {0}, b;
        struct shell_state st;
        char *why, *big = xmalloc(SHELL_VAR_MAX + 2);

        /* one variable as long as a program can take, and one byte more */
        memset(big, 'a', SHELL_VAR_MAX + 1);
        big[SHELL_VAR_MAX - 5] = '\0'; /* "LONG=" + value = SHELL_VAR_MAX */
        buf_appendf(&e, "export LONG='%s'\n", big);
        buf_append(&e, "", 1);
        b = blob("sh", "/\n", "/", e.data, "");
        ck_assert_int_eq(parse_buf(&b, &st, &why), 0);
        shell_state_clear(&st);
        buf_consume(&e, e.len);
        big[SHELL_VAR_MAX - 5] = 'a';
        big[SHELL_VAR_MAX - 4] = '\0';
        buf_appendf(&e, "export LONG='%s'\n", big);
        buf_append(&e, "", 1);
        b = blob("sh", "/\n", "/", e.data, "");
        ck_assert_int_eq(parse_buf(&b, &st, &why), -E2BIG);
        ck_assert_str_eq(why, "variable LONG is 131072 bytes, more than the 131071 a program can "
                              "be given (Linux MAX_ARG_STRLEN)");
        free(why);
        /* too many variables */
        buf_consume(&e, e.len);
        for (unsigned i = 0; i <= SHELL_VARS_MAX; i++)
                buf_appendf(&e, "export V%u=''\n", i);
        buf_append(&e, "", 1);
        b = blob("sh", "/\n", "/", e.data, "");
        ck_assert_int_eq(parse_buf(&b, &st, &why), -E2BIG);
        ck_assert_str_eq(why, "more than 4096 exported variables and functions");
        free(why);
        /* too big in all */
        char *huge = xcalloc(SHELL_STATE_MAX + 1, 1);
        ck_assert_int_eq(shell_state_parse(huge, SHELL_STATE_MAX + 1, &st, &why), -E2BIG);
        ck_assert_str_eq(why, "it is more than the 983040 bytes a sandbox keeps");
        free(why);
        free(huge);
        free(big);
        buf_free(&e);
}
END_TEST

START_TEST(test_stateless)
{
        static const struct {
                const char *cmd;
                bool stateless;
        } cases[] = {
                {"true", true},
                {"ls -la /tmp", true},
                {"git status --porcelain=v1", true},
                {"python3 -m pytest -x tests/a_test.py", true},
                {"./run.sh a,b c:d e@f 50%", true},
                {"  make  ", true},
                {"exec sleep 1", true},
                {"trap", true},
                {"cd /tmp", false},
                {"export A=1", false},
                {"unset A", false},
                {". ./env.sh", false},
                {"source env.sh", false},
                {"read A", false},
                {"printf -v A x", false},
                {"A=1", false},
                {"A=1 make", false},
                {"eval cd", false},
                {"command cd /", false},
                {"builtin cd /", false},
                {"echo $HOME", false},
                {"ls; cd /", false},
                {"ls && cd /", false},
                {"ls | cd", false},
                {"ls\ncd /", false},
                {"echo 'x'", false},
                {"f", false}, /* an exported function */
                {"ls ~", false},
                {"ls *", false},
                {"", false},
        };
        struct shell_exec x = {.kind = SHELL_BASH, .name = "bash", .state_path = "/s"};
        json_t *env = json_pack("{s:s}", "BASH_FUNC_f%%", "() { cd /; }");

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                x.command = cases[i].cmd;
                ck_assert_msg(shell_stateless(&x, env) == cases[i].stateless, "%s", cases[i].cmd);
        }
        x.command = "true";
        x.kind = SHELL_PICK; /* the container's shell must be learnt first */
        ck_assert(!shell_stateless(&x, env));
        x.kind = SHELL_SH;
        x.name = "zsh"; /* a shell whose builtins are not all listed */
        ck_assert(!shell_stateless(&x, env));
        x.name = "dash";
        ck_assert(shell_stateless(&x, env));
        json_object_set_new(env, "BASH_ENV", json_string("/mine")); /* read at every start */
        ck_assert(!shell_stateless(&x, env));
        json_decref(env);
}
END_TEST

static const char *
env_of(json_t *env, const char *k)
{
        return json_string_value(json_object_get(env, k));
}

/* What a wrapper in /bin/sh hands on through env: names a shell drops, never an option. */
START_TEST(test_env_carried)
{
        char *envp[] = {"PATH=/bin", "BASH_FUNC_f%%=() { :; }",
                        "_ok9=1",    "9lead=1",
                        "a-b=1",     "-x=1",
                        "noeq",      "=v",
                        "K=a=b",     NULL};
        char *out[ARRAY_SIZE(envp)] = {0};
        char *argv[] = {"bash", "-c", "f", NULL}, *eq_argv[] = {"A=b", NULL};

        ck_assert_uint_eq(shell_env_carried(argv, envp, out), 3);
        ck_assert_str_eq(out[0], "BASH_FUNC_f%%=() { :; }");
        ck_assert_str_eq(out[1], "9lead=1");
        ck_assert_str_eq(out[2], "a-b=1");
        ck_assert_uint_eq(shell_env_carried(eq_argv, envp, out), 0); /* env would run "A=b" */
        ck_assert_uint_eq(shell_env_carried(argv, NULL, out), 0);
}
END_TEST

START_TEST(test_wrap_layouts)
{
        struct shell_exec x = {.kind = SHELL_BASH,
                               .name = "bash",
                               .command = "echo hi",
                               .state_path = "/s/it's.state",
                               .bash_init = "/init.bash"};
        json_t *env = json_pack("{s:s}", "BASH_ENV", "/mine");
        char **argv = shell_wrap(&x, env);

        /* bash: the command exactly as given; the trap and the start-up file in env */
        ck_assert_str_eq(argv[0], "bash");
        ck_assert_str_eq(argv[1], "-c");
        ck_assert_str_eq(argv[2], "echo hi");
        ck_assert_ptr_null(argv[3]);
        ck_assert_str_eq(env_of(env, "BASH_ENV"), "/init.bash");
        ck_assert_str_eq(env_of(env, "SANDBOXD_BASH_ENV"), "/mine");
        ck_assert_ptr_nonnull(strstr(env_of(env, "SANDBOXD_TRAP"), ">|'/s/it'\\''s.state'"));
        shell_argv_free(argv);
        /* sh: the prefix on the command's own line */
        x.kind = SHELL_SH;
        x.name = "dash";
        json_object_clear(env);
        argv = shell_wrap(&x, env);
        ck_assert_str_eq(argv[0], "dash");
        ck_assert_str_eq(argv[2], "trap -- \"$SANDBOXD_TRAP\" EXIT;unset SANDBOXD_TRAP;echo hi");
        ck_assert_ptr_null(argv[3]);
        ck_assert_ptr_null(json_object_get(env, "BASH_ENV"));
        shell_argv_free(argv);
        /* bash in POSIX mode reads no BASH_ENV: the prefix */
        x.kind = SHELL_BASH;
        json_object_set_new(env, "POSIXLY_CORRECT", json_string("1"));
        argv = shell_wrap(&x, env);
        ck_assert_ptr_nonnull(strstr(argv[2], "trap -- \"$SANDBOXD_TRAP\" EXIT;"));
        ck_assert_ptr_null(json_object_get(env, "BASH_ENV"));
        shell_argv_free(argv);
        /* not known yet: a picker, with both forms */
        x.kind = SHELL_PICK;
        x.name = NULL;
        json_object_clear(env);
        argv = shell_wrap(&x, env);
        ck_assert_str_eq(argv[0], "/bin/sh");
        ck_assert_str_eq(argv[4], "echo hi");
        ck_assert_str_eq(argv[5], "trap -- \"$SANDBOXD_TRAP\" EXIT;unset SANDBOXD_TRAP;echo hi");
        ck_assert_str_eq(env_of(env, "BASH_ENV"), "/init.bash");
        shell_argv_free(argv);
        /* no state (background): the command alone */
        x.kind = SHELL_SH;
        x.name = "sh";
        x.state_path = NULL;
        json_object_clear(env);
        argv = shell_wrap(&x, env);
        ck_assert_str_eq(argv[2], "echo hi");
        ck_assert_int_eq(json_object_size(env), 0);
        shell_argv_free(argv);
        json_decref(env);
        ck_assert_int_eq(shell_kind_of("/usr/bin/bash"), SHELL_BASH);
        ck_assert_int_eq(shell_kind_of("/bin/sh"), SHELL_SH);
        ck_assert_str_eq(shell_basename("/a/b/dash"), "dash");
}
END_TEST

/* ---- the real shells ---- */

struct real {
        const char *path, *name;
        enum shell_kind kind;
};

static const struct real reals[] = {
        {"/bin/bash", "bash", SHELL_BASH},
        {"/bin/dash", "dash", SHELL_SH},
        {"/bin/busybox", "sh", SHELL_SH},
        {"/bin/bash", "bash", SHELL_SH}, /* bash with the prefix (POSIX mode, bash as sh) */
};

/* Runs command through the wrapper of shell r; returns the parsed state. */
static void
run_real(const struct real *r, const char *command, struct shell_state *st)
{
        char state[256], init[256], *why = NULL;
        struct shell_exec x = {.kind = r->kind, .name = r->name, .command = command};
        json_t *env = json_pack("{s:s,s:s}", "PATH", "/usr/bin:/bin", "LANG", "C.UTF-8");
        char **argv, **envp;
        const char *k;
        json_t *v;
        size_t i = 0;
        pid_t pid;
        int fd, status;
        struct stat sb;

        snprintf(state, sizeof(state), "%s/s.state", tmpdir);
        snprintf(init, sizeof(init), "%s/init.bash", tmpdir);
        x.state_path = state;
        x.bash_init = init;
        argv = shell_wrap(&x, env);
        envp = xcalloc(json_object_size(env) + 1, sizeof(*envp));
        json_object_foreach(env, k, v) envp[i++] = xasprintf("%s=%s", k, json_string_value(v));
        ck_assert_int_eq(posix_spawn(&pid, r->path, NULL, NULL, argv, envp), 0);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        fd = open(state, O_RDONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fstat(fd, &sb), 0);
        char *data = xmalloc((size_t) sb.st_size + 1);
        ck_assert_int_eq(read(fd, data, (size_t) sb.st_size), sb.st_size);
        close(fd);
        unlink(state);
        ck_assert_msg(shell_state_parse(data, (size_t) sb.st_size, st, &why) == 0, "%s: %s",
                      r->name, why);
        free(data);
        shell_argv_free(argv);
        shell_argv_free(envp);
        json_decref(env);
}

START_TEST(test_real_shells)
{
        const struct real *r = &reals[_i];
        struct shell_state st;
        char cmd[512];
        /* every byte but NUL, in one value; quotes, newlines and = in another */
        snprintf(cmd, sizeof(cmd),
                 "cd %s && export A=\"$(printf 'it'\"'\"'s \"q\" $x `y` \\\\\\n=b\\t')\" && "
                 "export BYTES=\"$(i=1; while [ $i -lt 256 ]; do printf \"\\\\$(printf %%o $i)\"; "
                 "i=$((i+1)); done)\" && unset PATH; exit 3",
                 tmpdir);
        if (access(r->path, X_OK) != 0) {
                fprintf(stderr, "check_shell: %s is not installed: %s not run\n", r->path, r->name);
                ck_abort_msg("%s missing (scripts/install-deps.sh --test installs it)", r->path);
        }
        run_real(r, cmd, &st);
        ck_assert_str_eq(st.cwd, tmpdir);
        ck_assert_str_eq(env_get(&st, "A"), "it's \"q\" $x `y` \\\n=b\t");
        const char *bytes = env_get(&st, "BYTES");
        ck_assert_ptr_nonnull(bytes);
        ck_assert_uint_eq(strlen(bytes), 255);
        for (int c = 1; c < 256; c++)
                ck_assert_int_eq((unsigned char) bytes[c - 1], c);
        ck_assert_ptr_null(json_object_get(st.env, "PATH"));
        ck_assert_str_eq(env_get(&st, "LANG"), "C.UTF-8");
        shell_state_clear(&st);
}
END_TEST

START_TEST(test_real_bash_functions)
{
        struct shell_state st;

        run_real(&reals[0], "f() { echo \"f $1\"; }; g() { :; }; export -f f g; export -nf g", &st);
        ck_assert_ptr_null(json_object_get(st.env, "BASH_FUNC_g%%"));
        const char *def = env_get(&st, "BASH_FUNC_f%%");
        ck_assert_ptr_nonnull(def);
        /* and bash takes the definition back */
        char *env[] = {xasprintf("BASH_FUNC_f%%%%=%s", def), "PATH=/usr/bin:/bin", NULL};
        char *argv[] = {"bash", "-c", "f x >&3", NULL};
        int p[2];
        char out[32] = {0};
        pid_t pid;
        posix_spawn_file_actions_t fa;

        ck_assert_int_eq(pipe(p), 0);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 3);
        ck_assert_int_eq(posix_spawn(&pid, "/bin/bash", &fa, NULL, argv, env), 0);
        close(p[1]);
        ck_assert_int_eq(read(p[0], out, sizeof(out) - 1), 4);
        ck_assert_str_eq(out, "f x\n");
        close(p[0]);
        waitpid(pid, NULL, 0);
        posix_spawn_file_actions_destroy(&fa);
        free(env[0]);
        shell_state_clear(&st);
}
END_TEST

static void
setup(void)
{
        char init[256];
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        snprintf(init, sizeof(init), "%s/init.bash", tmpdir);
        fd = open(init, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, SHELL_BASH_INIT, strlen(SHELL_BASH_INIT)),
                         (ssize_t) strlen(SHELL_BASH_INIT));
        close(fd);
}

static void
teardown(void)
{
        char init[256];

        snprintf(init, sizeof(init), "%s/init.bash", tmpdir);
        unlink(init);
        rmdir(tmpdir);
        memcpy(tmpdir + strlen(tmpdir) - 6, "XXXXXX", 6);
}

static Suite *
shell_suite(void)
{
        Suite *s = suite_create("shell");
        TCase *parse = tcase_create("parse");
        TCase *real = tcase_create("real shells");

        tcase_add_test(parse, test_bash_quoting);
        tcase_add_test(parse, test_posix_quoting);
        tcase_add_test(parse, test_cwd_fallbacks);
        tcase_add_test(parse, test_functions);
        tcase_add_test(parse, test_malformed);
        tcase_add_test(parse, test_every_prefix_and_byte);
        tcase_add_test(parse, test_limits);
        tcase_add_test(parse, test_wrap_layouts);
        tcase_add_test(parse, test_env_carried);
        tcase_add_test(parse, test_stateless);
        suite_add_tcase(s, parse);
        tcase_add_checked_fixture(real, setup, teardown);
        tcase_add_loop_test(real, test_real_shells, 0, (int) ARRAY_SIZE(reals));
        tcase_add_test(real, test_real_bash_functions);
        suite_add_tcase(s, real);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(shell_suite());
        int failed;

        util_json_alloc_init();
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
