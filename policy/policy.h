/* policy.h — the policy engine's public interface (protocol §6).
 *
 * Pure: no event loop, no logging; I/O only in policy_load(). Thread-compatible: a loaded
 * struct policy is immutable and may be shared; results belong to the caller.
 */
#ifndef SANDBOXD_POLICY_H
#define SANDBOXD_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/error.h"

enum policy_verdict {
        POLICY_ALLOW = 0,
        POLICY_ASK = 1,
        POLICY_DENY = 2,
};

/* Finding flags. */
#define POLICY_F_FLOOR     0x1 /* catastrophic floor rule: nothing lifts it */
#define POLICY_F_NO_ALWAYS 0x2 /* broad carrier: never offer "always" */

struct policy_finding {
        char *rule;    /* rule id, e.g. "floor.rm-root" */
        enum policy_verdict verdict;
        char *message; /* human sentence: what and why */
        char *match;   /* the text that matched, may be NULL */
        char *subject; /* what an approval key binds to (normalised argv / path), may be NULL */
        unsigned flags;
};

struct policy_result {
        enum policy_verdict verdict; /* strictest of the findings; ALLOW when none */
        struct policy_finding *findings;
        size_t nfindings;
        bool host_access; /* container checks: something from the host shows inside */
};

/* Facts about where a command would run. All fields optional (NULL / false). */
struct policy_ctx {
        const char *backend;       /* "local", "docker", … */
        bool host_access;          /* the sandbox exposes the host (local always does) */
        const char *cwd;
        const char *home;
        json_t *env;               /* object of strings known in the sandbox, borrowed */
        const char *const *protected_paths; /* daemon config/state paths, NULL-terminated */
};

struct policy;

/* The built-in policy with no rules file (new). */
struct policy *policy_new_default(void);
/* Loads built-ins plus the rules file at path (new in *ret). On error returns negative errno,
 * leaves *ret untouched and sets err with "path:line: what is wrong". A missing file is an
 * error only when required is true. */
int policy_load(const char *path, bool required, struct policy **ret, struct sbx_error *err);
/* Frees p; NULL is fine. Returns NULL. */
struct policy *policy_free(struct policy *p);
/* Number of rules (built-in + file) and the hex SHA-256 of the rules file (or of "" ). */
size_t policy_rule_count(const struct policy *p);
const char *policy_sha256(const struct policy *p);

/* Judges a shell command string. Fills *out (caller clears with policy_result_clear). */
void policy_eval_command(const struct policy *p, const struct policy_ctx *ctx, const char *command,
                         struct policy_result *out);
/* Judges an argv exec (no shell). */
void policy_eval_argv(const struct policy *p, const struct policy_ctx *ctx, char *const *argv,
                      struct policy_result *out);
/* Judges a sandbox.create spec (object, borrowed) merged with defaults; volumes is an object
 * name -> inspected volume (Docker GET /volumes/{name} body), borrowed, may be NULL. */
void policy_eval_sandbox(const struct policy *p, const struct policy_ctx *ctx, json_t *spec,
                         json_t *volumes, struct policy_result *out);

/* Releases the findings. */
void policy_result_clear(struct policy_result *r);
/* "allow" | "ask" | "deny". */
const char *policy_verdict_name(enum policy_verdict v);
/* The findings as protocol JSON: [{rule, verdict, message, match?}] (new). */
json_t *policy_findings_json(const struct policy_result *r);

#endif
