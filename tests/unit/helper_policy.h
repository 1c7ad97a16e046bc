/* helper_policy.h — helpers of the policy tests (tests/unit/helper_policy.c). */
#ifndef SANDBOXD_TESTS_HELPER_POLICY_H
#define SANDBOXD_TESTS_HELPER_POLICY_H

#include <stdbool.h>

#include "policy/policy.h"

/* Whether r has a finding of rule. */
bool policy_test_has_rule(const struct policy_result *r, const char *rule);
/* "rule(match), …" and the invalid error, for failure messages (new string). */
char *policy_test_describe(const struct policy_result *r);

#endif
