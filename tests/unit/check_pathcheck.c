/* check_pathcheck.c — policy_eval_file: file.write / file.read judged by the path rules of shell
 * writes and reads. A table of (operation, path, mode, links) and the rules expected; each row
 * is also checked against the shell command that writes the same path, so the two can never
 * drift apart. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"

static const char *const prot[] = {"/etc/sandboxd/sandboxd.conf", "/var/lib/sandboxd",
                                   "/run/sandboxd/sandboxd.sock", NULL};
static struct policy *pol;

enum { RD, WR };

struct fcase {
        int op;
        const char *path;
        int mode;
        unsigned nlink;
        const char *verdict; /* allow | ask | deny */
        const char *rule;    /* a rule that must be among the findings, NULL: none at all */
};

static const struct fcase cases[] = {
        /* ordinary work: nothing */
        {WR, "/home/user/project/src/main.c", -1, 1, "allow", NULL},
        {WR, "/home/user/project/new.txt", 0644, 0, "allow", NULL},
        {WR, "/tmp/out.log", 0600, 1, "allow", NULL},
        {WR, "/home/user/project/run.sh", 0755, 1, "allow", NULL},
        {RD, "/home/user/project/README.md", -1, 1, "allow", NULL},
        {RD, "/etc/hostname", -1, 1, "allow", NULL},
        {RD, "/home/user/.ssh/known_hosts.pub.txt", -1, 1, "ask", "read.credential"},
        /* startup files, wherever they are */
        {WR, "/home/user/.bashrc", -1, 1, "ask", "write.startup"},
        {WR, "/home/user/.profile", -1, 0, "ask", "write.startup"},
        {WR, "/root/.zshrc", -1, 1, "ask", "write.startup"},
        {WR, "/home/user/.config/autostart/x.desktop", -1, 0, "ask", "write.startup"},
        {WR, "/home/user/.config/systemd/user/evil.service", -1, 0, "ask", "write.startup"},
        {WR, "/home/user/project/.git/hooks/pre-commit", 0755, 0, "ask", "write.startup"},
        {WR, "/etc/cron.d/job", -1, 0, "ask", "write.startup"},
        {WR, "/etc/profile.d/x.sh", -1, 0, "ask", "write.startup"},
        /* credentials */
        {WR, "/home/user/.ssh/authorized_keys", -1, 1, "ask", "write.credential"},
        {WR, "/home/user/.ssh/config", -1, 1, "ask", "write.credential"},
        {WR, "/home/user/.aws/credentials", -1, 1, "ask", "write.credential"},
        {WR, "/home/user/.netrc", 0600, 0, "ask", "write.credential"},
        {RD, "/home/user/.ssh/id_ed25519", -1, 1, "ask", "read.credential"},
        {RD, "/home/user/.aws/credentials", -1, 1, "ask", "read.credential"},
        {RD, "/home/user/.netrc", -1, 1, "ask", "read.credential"},
        {RD, "/srv/backup/id_rsa", -1, 1, "ask", "read.credential"},
        {RD, "/etc/shadow", -1, 1, "ask", "read.credential"},
        {RD, "/etc/ssh/ssh_host_ed25519_key", -1, 1, "ask", "read.credential"},
        {RD, "/proc/4242/environ", -1, 1, "ask", "read.credential"},
        {RD, "/proc/1/mem", -1, 1, "ask", "read.credential"},
        /* system files */
        {WR, "/etc/passwd", -1, 1, "ask", "write.system"},
        {WR, "/usr/local/bin/tool", 0755, 0, "ask", "write.system"},
        {WR, "/proc/sys/kernel/core_pattern", -1, 1, "ask", "write.system"},
        {WR, "/dev/sda", -1, 1, "deny", "floor.write-dev"},
        {WR, "/dev/nvme0n1p1", -1, 1, "deny", "floor.write-dev"},
        /* the daemon's own configuration, state, audit log, approvals and socket */
        {WR, "/etc/sandboxd/sandboxd.conf", -1, 1, "deny", "floor.self-protect"},
        {WR, "/var/lib/sandboxd/approvals.json", -1, 1, "deny", "floor.self-protect"},
        {WR, "/var/lib/sandboxd/audit/audit.log", -1, 1, "deny", "floor.self-protect"},
        {WR, "/var/lib/sandboxd/sandboxes/x", 0644, 0, "deny", "floor.self-protect"},
        {WR, "/run/sandboxd/sandboxd.sock", -1, 1, "deny", "floor.self-protect"},
        /* modes as chmod sees them */
        {WR, "/home/user/project/tool", 04755, 0, "ask", "perm.chmod"},
        {WR, "/home/user/project/tool", 02755, 0, "ask", "perm.chmod"},
        {WR, "/home/user/project/shared", 0666, 0, "ask", "perm.chmod"},
        {WR, "/home/user/project/shared", 0777, 0, "ask", "perm.chmod"},
        /* other names of the same file are not judged: ask */
        {WR, "/home/user/project/innocent", -1, 2, "ask", "write.hardlink"},
        {RD, "/home/user/project/innocent", -1, 2, "allow", NULL},
        /* malformed */
        {WR, "relative/path", -1, 0, "ask", "parse.error"},
        {RD, "", -1, 0, "ask", "parse.error"},
};

static struct policy_ctx
ctx_default(void)
{
        struct policy_ctx c = {.backend = "local",
                               .host_access = true,
                               .cwd = "/home/user/project",
                               .home = "/home/user",
                               .protected_paths = prot};
        return c;
}

static bool
has_rule(const struct policy_result *r, const char *rule)
{
        for (size_t k = 0; k < r->nfindings; k++)
                if (strcmp(r->findings[k].rule, rule) == 0)
                        return true;
        return false;
}

static void
setup(void)
{
        pol = policy_new_default();
}

static void
teardown(void)
{
        pol = policy_free(pol);
}

START_TEST(test_file_table)
{
        const struct fcase *c = &cases[_i];
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op op = {
                .path = c->path, .write = c->op == WR, .mode = c->mode, .nlink = c->nlink};
        struct policy_result r;

        policy_eval_file(pol, &ctx, &op, &r);
        ck_assert_msg(!strcmp(policy_verdict_name(r.verdict), c->verdict),
                      "%s %s mode %o: %s, expected %s", c->op == WR ? "write" : "read", c->path,
                      (unsigned) c->mode, policy_verdict_name(r.verdict), c->verdict);
        if (c->rule)
                ck_assert_msg(has_rule(&r, c->rule), "%s: %s missing", c->path, c->rule);
        else
                ck_assert_msg(r.nfindings == 0, "%s: %zu findings", c->path, r.nfindings);
        policy_result_clear(&r);
}
END_TEST

/* A write of a path and the shell redirection `: > path` meet the same write rules. */
START_TEST(test_write_matches_shell)
{
        const struct fcase *c = &cases[_i];
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op op = {.path = c->path, .write = true, .mode = -1};
        struct policy_result fr, sr;
        char *cmd;

        if (c->op != WR || c->path[0] != '/')
                return;
        cmd = xasprintf(": > '%s'", c->path);
        policy_eval_file(pol, &ctx, &op, &fr);
        policy_eval_command(pol, &ctx, cmd, &sr);
        ck_assert_msg(fr.verdict == sr.verdict, "%s: file %s, shell %s", c->path,
                      policy_verdict_name(fr.verdict), policy_verdict_name(sr.verdict));
        for (size_t k = 0; k < sr.nfindings; k++)
                ck_assert_msg(has_rule(&fr, sr.findings[k].rule), "%s: shell finds %s", c->path,
                              sr.findings[k].rule);
        policy_result_clear(&fr);
        policy_result_clear(&sr);
        free(cmd);
}
END_TEST

/* The approval key binds to the path: approving ~/.bashrc does not approve ~/.profile. */
START_TEST(test_subject_is_path)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op a = {.path = "/home/user/.bashrc", .write = true, .mode = -1};
        struct policy_file_op b = {.path = "/home/user/.profile", .write = true, .mode = -1};
        struct policy_result ra, rb;
        json_t *set = json_object();

        policy_eval_file(pol, &ctx, &a, &ra);
        policy_eval_file(pol, &ctx, &b, &rb);
        ck_assert_str_eq(ra.findings[0].subject, "/home/user/.bashrc");
        ck_assert_int_eq(policy_approval_remember(&ra, set, false), 0);
        ck_assert(policy_approval_covers(&ra, set));
        ck_assert(!policy_approval_covers(&rb, set));
        json_decref(set);
        policy_result_clear(&ra);
        policy_result_clear(&rb);
}
END_TEST

/* A floor finding on a file op is never offered "always" and nothing covers it. */
START_TEST(test_floor_not_lifted)
{
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op op = {
                .path = "/var/lib/sandboxd/approvals.json", .write = true, .mode = -1};
        struct policy_result r;
        json_t *set = json_object();

        policy_eval_file(pol, &ctx, &op, &r);
        ck_assert_int_eq(r.verdict, POLICY_DENY);
        ck_assert(!policy_result_allows_always(&r));
        ck_assert_int_lt(policy_approval_remember(&r, set, false), 0);
        ck_assert(!policy_approval_covers(&r, set));
        json_decref(set);
        policy_result_clear(&r);
}
END_TEST

/* A rules file that disables a rule for commands disables it for file ops too. */
START_TEST(test_rules_file_applies)
{
        char path[] = "/tmp/check-pathcheck-XXXXXX";
        int fd = mkstemp(path);
        const char text[] = "disable write.startup\n";
        struct policy *p = NULL;
        struct sbx_error err = {0};
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op op = {.path = "/home/user/.bashrc", .write = true, .mode = -1};
        struct policy_result r;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t) sizeof(text) - 1);
        close(fd);
        ck_assert_msg(policy_load(path, true, &p, &err) == 0, "%s", err.message);
        unlink(path);
        policy_eval_file(p, &ctx, &op, &r);
        ck_assert_int_eq(r.verdict, POLICY_ALLOW);
        policy_result_clear(&r);
        policy_free(p);
}
END_TEST

/* Both the path asked for and the one it leads to are judged; the mode goes to the real file. */
struct rcase {
        int op;
        const char *path, *resolved;
        int mode;
        const char *verdict, *rule;
};

static const struct rcase rcases[] = {
        /* a harmless name leading somewhere that matters */
        {WR, "/tmp/notes.txt", "/home/user/.bashrc", -1, "ask", "write.startup"},
        {WR, "/home/user/project/link", "/home/user/.ssh/authorized_keys", -1, "ask",
         "write.credential"},
        {WR, "/tmp/x", "/var/lib/sandboxd/audit/audit.log", -1, "deny", "floor.self-protect"},
        {WR, "/tmp/x", "/var/lib/sandboxd/approvals.json", -1, "deny", "floor.self-protect"},
        {WR, "/tmp/x", "/etc/cron.d/job", -1, "ask", "write.startup"},
        {RD, "/tmp/paper.txt", "/home/user/.ssh/id_rsa", -1, "ask", "read.credential"},
        {RD, "/home/user/project/k", "/etc/shadow", -1, "ask", "read.credential"},
        /* a name that matters leading somewhere harmless: still what bash would run */
        {WR, "/home/user/.bashrc", "/home/user/dotfiles/bashrc", -1, "ask", "write.startup"},
        /* the mode is judged on the file that gets it */
        {WR, "/tmp/x", "/home/user/project/tool", 04755, "ask", "perm.chmod"},
        /* same path twice: one set of findings */
        {WR, "/home/user/project/a.c", "/home/user/project/a.c", 0644, "allow", NULL},
        {RD, "/home/user/project/a.c", "/home/user/project/b.c", -1, "allow", NULL},
};

START_TEST(test_resolved_table)
{
        const struct rcase *c = &rcases[_i];
        struct policy_ctx ctx = ctx_default();
        struct policy_file_op op = {.path = c->path,
                                    .resolved = c->resolved,
                                    .write = c->op == WR,
                                    .mode = c->mode,
                                    .nlink = 1};
        struct policy_result r;

        policy_eval_file(pol, &ctx, &op, &r);
        ck_assert_msg(!strcmp(policy_verdict_name(r.verdict), c->verdict), "%s -> %s: %s", c->path,
                      c->resolved, policy_verdict_name(r.verdict));
        if (c->rule)
                ck_assert_msg(has_rule(&r, c->rule), "%s -> %s: %s missing", c->path, c->resolved,
                              c->rule);
        else
                ck_assert_int_eq(r.nfindings, 0);
        policy_result_clear(&r);
}
END_TEST

static Suite *
pathcheck_suite(void)
{
        Suite *s = suite_create("pathcheck");
        TCase *tc = tcase_create("core");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, test_file_table, 0, (int) ARRAY_SIZE(cases));
        tcase_add_loop_test(tc, test_write_matches_shell, 0, (int) ARRAY_SIZE(cases));
        tcase_add_loop_test(tc, test_resolved_table, 0, (int) ARRAY_SIZE(rcases));
        tcase_add_test(tc, test_subject_is_path);
        tcase_add_test(tc, test_floor_not_lifted);
        tcase_add_test(tc, test_rules_file_applies);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(pathcheck_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
