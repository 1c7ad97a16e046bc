/* policy.c — placeholder engine: allows everything. Replaced by the real engine (issue 3). */
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"

struct policy {
        size_t nrules;
        char sha256[65];
};

/* The built-in policy. */
struct policy *
policy_new_default(void)
{
        struct policy *p = xcalloc(1, sizeof(*p));

        strcpy(p->sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        return p;
}

/* Loads a rules file (placeholder: accepts any path). */
int
policy_load(const char *path, bool required, struct policy **ret, struct sbx_error *err)
{
        (void) path;
        (void) required;
        (void) err;
        *ret = policy_new_default();
        return 0;
}

/* Frees p. */
struct policy *
policy_free(struct policy *p)
{
        free(p);
        return NULL;
}

/* Rule count. */
size_t
policy_rule_count(const struct policy *p)
{
        return p->nrules;
}

/* Rules hash. */
const char *
policy_sha256(const struct policy *p)
{
        return p->sha256;
}

/* Judges a command. */
void
policy_eval_command(const struct policy *p, const struct policy_ctx *ctx, const char *command,
                    struct policy_result *out)
{
        memset(out, 0, sizeof(*out));
}

/* Judges an argv. */
void
policy_eval_argv(const struct policy *p, const struct policy_ctx *ctx, char *const *argv,
                 struct policy_result *out)
{
        memset(out, 0, sizeof(*out));
}

/* Judges a sandbox spec. */
void
policy_eval_sandbox(const struct policy *p, const struct policy_ctx *ctx, json_t *spec,
                    json_t *volumes, struct policy_result *out)
{
        memset(out, 0, sizeof(*out));
        out->host_access = ctx && ctx->host_access;
}

/* Frees findings. */
void
policy_result_clear(struct policy_result *r)
{
        for (size_t i = 0; i < r->nfindings; i++) {
                free(r->findings[i].rule);
                free(r->findings[i].message);
                free(r->findings[i].match);
                free(r->findings[i].subject);
        }
        free(r->findings);
        r->findings = NULL;
        r->nfindings = 0;
}

/* Verdict name. */
const char *
policy_verdict_name(enum policy_verdict v)
{
        static const char *const names[] = {"allow", "ask", "deny"};

        return v <= POLICY_DENY ? names[v] : "deny";
}

/* Findings as JSON. */
json_t *
policy_findings_json(const struct policy_result *r)
{
        json_t *a = json_array();

        for (size_t i = 0; i < r->nfindings; i++) {
                const struct policy_finding *f = &r->findings[i];
                json_t *o = json_pack("{s:s,s:s,s:s}", "rule", f->rule, "verdict",
                                      policy_verdict_name(f->verdict), "message", f->message);
                if (f->match)
                        json_object_set_new(o, "match", json_string(f->match));
                json_array_append_new(a, o);
        }
        return a;
}
