/* helper_policy.c — helpers of the policy tests. */
#include "tests/unit/helper_policy.h"

#include <string.h>

#include "protocol/util.h"

/* Whether r has a finding of rule. */
bool
policy_test_has_rule(const struct policy_result *r, const char *rule)
{
        for (size_t k = 0; k < r->nfindings; k++)
                if (strcmp(r->findings[k].rule, rule) == 0)
                        return true;
        return false;
}

/* The findings as one line. */
char *
policy_test_describe(const struct policy_result *r)
{
        struct buf b = {0};

        for (size_t k = 0; k < r->nfindings; k++)
                buf_appendf(&b, "%s%s(%s: %s)", k ? ", " : "", r->findings[k].rule,
                            policy_verdict_name(r->findings[k].verdict),
                            r->findings[k].match ? r->findings[k].match : "");
        if (r->invalid.code)
                buf_appendf(&b, " invalid: %s", r->invalid.message);
        buf_append(&b, "", 1);
        return b.data;
}
