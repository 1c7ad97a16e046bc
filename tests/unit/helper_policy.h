/* helper_policy.h — helpers of the policy tests (tests/unit/helper_policy.c). */
#ifndef SANDBOXD_TESTS_HELPER_POLICY_H
#define SANDBOXD_TESTS_HELPER_POLICY_H

#include <stdbool.h>

#include "policy/policy.h"

static const char *const policy_test_prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};

/* A local sandbox working in ~/project, the daemon at pid 4242 (header-only: bench/ uses it
 * without linking helper_policy.c). */
static inline struct policy_ctx
policy_test_ctx(void)
{
        struct policy_ctx c = {.backend = "local",
                               .host_access = true,
                               .cwd = "/home/user/project",
                               .home = "/home/user",
                               .workspace = "/home/user/project",
                               .protected_paths = policy_test_prot,
                               .daemon_pid = 4242};
        return c;
}

/* Whether r has a finding of rule. */
bool policy_test_has_rule(const struct policy_result *r, const char *rule);
/* "rule(match), …" and the invalid error, for failure messages (new string). */
char *policy_test_describe(const struct policy_result *r);

#endif
