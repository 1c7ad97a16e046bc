/* fuzz_policy.c — libFuzzer target: the shell parser and analyser on arbitrary bytes, the
 * same bytes as the stdin of `bash`, the argv path (input split at NULs) and file operations
 * (the input as the requested path). Crashes, leaks and sanitizer reports are failures; the
 * verdict for any input that hit a limit must not be ALLOW, and a write that resolves into the
 * daemon's state must be DENY whatever path was asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* file.write / file.read of the input as a path, resolved below a protected directory. */
static void
fuzz_file(const struct policy *p, const struct policy_ctx *ctx, const char *s)
{
        struct policy_file_op op = {.path = s, .write = true, .mode = -1, .nlink = 1};
        struct policy_result r;
        size_t n = strlen(s);
        char *res = malloc(n + 32);

        memcpy(res, "/var/lib/sandboxd/", 18);
        for (size_t i = 0; i <= n; i++) /* no "..": it must stay below the state directory */
                res[18 + i] = s[i] == '.' || s[i] == '/' ? '_' : s[i];
        op.resolved = res;
        policy_eval_file(p, ctx, &op, &r);
        if (r.verdict != POLICY_DENY)
                abort();
        policy_result_clear(&r);
        op.write = false;
        op.mode = (int) (n & 07777);
        policy_eval_file(p, ctx, &op, &r);
        policy_result_clear(&r);
        free(res);
}

/* One input. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static struct policy *p;
        static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};
        struct policy_ctx ctx = {.backend = "local",
                                 .host_access = true,
                                 .cwd = "/home/u/w",
                                 .home = "/home/u",
                                 .protected_paths = prot};
        struct policy_result r;
        char *s = malloc(size + 1);
        char *argv[65];
        size_t argc = 0;

        if (!p)
                p = policy_new_default();
        memcpy(s, data, size);
        s[size] = '\0';
        policy_eval_command(p, &ctx, s, &r);
        for (size_t k = 0; k < r.nfindings; k++)
                if (!strncmp(r.findings[k].rule, "parse.", 6) && r.verdict == POLICY_ALLOW)
                        abort();
        json_decref(policy_findings_json(&r));
        policy_result_clear(&r);
        /* the same bytes as what a shell reads on stdin, the environment complete */
        struct policy_ctx in = ctx;
        in.env_complete = true;
        in.stdin_data = (const char *) data;
        in.stdin_len = size;
        policy_eval_command(p, &in, "bash", &r);
        for (size_t k = 0; k < r.nfindings; k++)
                if (!strncmp(r.findings[k].rule, "parse.", 6) && r.verdict == POLICY_ALLOW)
                        abort();
        policy_result_clear(&r);
        for (size_t off = 0; off <= size && argc < 64; off += strlen(s + off) + 1)
                argv[argc++] = s + off;
        argv[argc] = NULL;
        policy_eval_argv(p, &ctx, argv, &r);
        policy_result_clear(&r);
        fuzz_file(p, &ctx, s);
        free(s);
        return 0;
}
