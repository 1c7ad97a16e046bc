/* policy.c — the policy engine's public entry points (protocol §6): load, evaluate, report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

/* The built-in policy. */
struct policy *
policy_new_default(void)
{
        struct policy *p = xcalloc(1, sizeof(*p));

        sha256_hex("", 0, p->sha256);
        return p;
}

/* Loads built-ins plus the rules file at path. */
int
policy_load(const char *path, bool required, struct policy **ret, struct sbx_error *err)
{
        char *text = NULL;
        size_t len = 0;
        int rc = rulesfile_read(path, &text, &len);

        if (rc == -ENOENT && !required) {
                *ret = policy_new_default();
                return 0;
        }
        if (rc < 0) {
                sbx_error_set(err, SBX_E_PARAMS, NULL, "%s:0: %s", path,
                              rc == -EFBIG ? "rules file larger than 1 MiB" : strerror(-rc));
                return rc;
        }
        struct policy *p = policy_new_default();
        sha256_hex(text, len, p->sha256);
        rc = rulesfile_parse(p, path, text, len, err);
        free(text);
        if (rc < 0) {
                policy_free(p);
                return rc;
        }
        *ret = p;
        return 0;
}

/* Frees p. */
struct policy *
policy_free(struct policy *p)
{
        if (!p)
                return NULL;
        rulesfile_free(p->rules, p->nrules);
        for (size_t k = 0; k < p->ndisabled; k++)
                free(p->disabled[k]);
        free(p->disabled);
        free(p);
        return NULL;
}

/* Built-in plus file rules. */
size_t
policy_rule_count(const struct policy *p)
{
        return builtin_count() + (p ? p->nrules : 0);
}

/* Hex SHA-256 of the rules file. */
const char *
policy_sha256(const struct policy *p)
{
        return p->sha256;
}

/* Bytes a shell command must not contain: controls, bidi overrides, zero-width characters. */
static const char *
bad_bytes(const char *s, size_t n)
{
        for (size_t k = 0; k < n; k++) {
                unsigned char c = (unsigned char) s[k];
                if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
                        return "control character";
                if (c == 0xe2 && k + 2 < n) {
                        unsigned char c1 = (unsigned char) s[k + 1], c2 = (unsigned char) s[k + 2];
                        if (c1 == 0x80 &&
                            ((c2 >= 0x8b && c2 <= 0x8f) || (c2 >= 0xaa && c2 <= 0xae)))
                                return "invisible or bidi control character";
                        if (c1 == 0x81 && c2 >= 0xa6 && c2 <= 0xa9)
                                return "bidi isolate character";
                }
                if (c == 0xef && k + 2 < n && (unsigned char) s[k + 1] == 0xbb &&
                    (unsigned char) s[k + 2] == 0xbf)
                        return "zero-width no-break space";
        }
        return NULL;
}

/* Judges a shell command string. */
void
policy_eval_command(const struct policy *p, const struct policy_ctx *ctx, const char *command,
                    struct policy_result *out)
{
        struct eval ev;
        size_t n = command ? strlen(command) : 0;
        const char *bad;

        analyze_init(&ev, p, ctx, MIN(n, (size_t) POLICY_MAX_INPUT));
        ev.input = command;
        /* A limit or a strange byte never hides what bash would still run: the finding is
         * added, and the (first 256 KiB of the) command is judged all the same. */
        if (n > POLICY_MAX_INPUT) {
                analyze_add(&ev, -1, "parse.limit", "command longer than 256 KiB", NULL);
                n = POLICY_MAX_INPUT;
        }
        if ((bad = bad_bytes(command, n)))
                analyze_add(&ev, -1, "parse.error", bad, NULL);
        if (n > 0) {
                parse_script(&ev, command, n, 0, 0);
                analyze_units(&ev, 0);
        }
        if (ctx) /* after the units: some variables matter only to what runs (HOME to git) */
                env_check_request(&ev, ctx->request_env);
        if (ev.limited)
                rescan_input(&ev, command, strlen(command));
        analyze_finish(&ev, out);
        analyze_free(&ev);
}

static size_t
argc_all(char *const *argv)
{
        size_t n = 0;

        while (argv[n])
                n++;
        return n;
}

/* Judges an argv exec (no shell). */
void
policy_eval_argv(const struct policy *p, const struct policy_ctx *ctx, char *const *argv,
                 struct policy_result *out)
{
        struct eval ev;
        size_t total = 0, argc = 0;

        while (argv && argv[argc]) {
                total += strlen(argv[argc]) + 1;
                argc++;
        }
        analyze_init(&ev, p, ctx, total);
        if (total > POLICY_MAX_INPUT || argc > 65536) {
                analyze_add(&ev, -1, "parse.limit", "argv larger than 256 KiB", NULL);
                argc = MIN(argc, (size_t) 65536); /* what is judged is judged all the same */
        }
        if (argc > 0) {
                int k = parse_new_unit(&ev, 0, 0);
                for (size_t i = 0; i < argc && k >= 0; i++) {
                        unsigned flags = 0;
                        for (const char *c = argv[i]; *c; c++)
                                if ((unsigned char) *c >= 0x80)
                                        flags |= W_NONASCII;
                        parse_unit_push(&ev, k, argv[i], flags);
                }
                analyze_units(&ev, 0);
        }
        if (ctx)
                env_check_request(&ev, ctx->request_env);
        if (ev.limited)
                rescan_argv(&ev, argv, total > 0 ? argc_all(argv) : 0);
        analyze_finish(&ev, out);
        analyze_free(&ev);
}

/* Judges a sandbox.create spec. */
void
policy_eval_sandbox(const struct policy *p, const struct policy_ctx *ctx, json_t *spec,
                    json_t *facts, struct policy_result *out)
{
        struct eval ev;

        analyze_init(&ev, p, ctx, 0);
        ev.host_access = ctx && ctx->host_access;
        const char *backend = json_string_value(json_object_get(spec, "backend"));
        if (!backend && ctx && ctx->backend)
                backend = ctx->backend;
        /* Local sandboxes: the caller's ctx says (their caps depend on their isolation). */
        if (backend && !strcmp(backend, "singularity"))
                ev.host_access = true;
        if (json_is_object(spec)) {
                /* the sandbox's env is the start of every exec's environment */
                env_check_request(&ev, json_object_get(spec, "env"));
                container_check(&ev, -1, spec, facts);
        } else {
                sbx_error_param(&ev.invalid, "sandbox",
                                "invalid params: the spec must be an object");
                analyze_add(&ev, -1, "container.invalid", "sandbox", NULL);
        }
        if (ctx && ctx->request_env != json_object_get(spec, "env"))
                env_check_request(&ev, ctx->request_env);
        analyze_finish(&ev, out);
        analyze_free(&ev);
}

/* Frees the findings. */
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
        r->verdict = POLICY_ALLOW;
        sbx_error_clear(&r->invalid);
}

/* Verdict name. */
const char *
policy_verdict_name(enum policy_verdict v)
{
        static const char *const names[] = {"allow", "ask", "deny"};

        return v <= POLICY_DENY ? names[v] : "deny";
}

/* Findings as protocol JSON. */
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
