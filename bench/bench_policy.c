/* bench_policy.c — policy engine throughput and worst-case latency.
 *
 * 1. Evaluations per second over ~50 typical agent commands (target >= 100000/s).
 * 2. Worst-case wall time to judge a 128 KiB command, over several adversarial shapes
 *    (target < 10 ms).
 * The baseline of each ratio is the target itself, as the issue states it; ratio > 1 is better.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "protocol/util.h"

static const char *const corpus[] = {
        "ls -la",
        "git status",
        "git diff --stat HEAD~1",
        "git add -A && git commit -m 'fix: handle empty input'",
        "git log --oneline -n 20",
        "git checkout -b feature/x",
        "git push origin feature/x",
        "cat src/main.c | head -50",
        "grep -rn 'TODO' src/ | wc -l",
        "rg -n 'fn main' --type rust",
        "find . -name '*.py' -not -path './venv/*' | xargs wc -l",
        "python3 -m pytest -q tests/",
        "python3 manage.py migrate && python3 manage.py runserver 0.0.0.0:8000",
        "pip install -r requirements.txt",
        "npm install && npm run build",
        "npm test -- --watch=false",
        "npx tsc --noEmit",
        "node scripts/gen.js > out.json",
        "cargo build --release 2>&1 | tail -20",
        "cargo test -- --nocapture",
        "go build ./... && go test ./...",
        "make -j4 && ./build/app --help",
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release",
        "mkdir -p build && cd build && cmake .. && make",
        "sed -i 's/foo/bar/g' src/config.h",
        "awk -F, '{print $2}' data.csv | sort | uniq -c | sort -rn | head",
        "curl -sSf https://api.example.com/v1/items -o items.json",
        "jq '.items[] | .name' items.json",
        "docker ps -a --format '{{.Names}}'",
        "docker build -t app:dev .",
        "docker run --rm -it -v \"$PWD\":/app -w /app node:20 npm test",
        "tar czf backup.tgz src/ docs/",
        "cp -r templates/ out/ && ls out",
        "mv build/app.bin dist/",
        "rm -rf build dist",
        "chmod +x scripts/*.sh",
        "echo \"export PATH=$PATH:$HOME/.local/bin\" >> .envrc",
        "for f in src/*.c; do clang-format -i \"$f\"; done",
        "if [ -f .env ]; then source .env; fi; echo $DATABASE_URL",
        "cat <<'EOF' > config.yaml\nname: app\nport: 8080\nEOF",
        "psql -h localhost -U app -c 'SELECT count(*) FROM users'",
        "ssh -V",
        "ps aux | grep node | grep -v grep",
        "du -sh * | sort -h",
        "kill -TERM $(cat app.pid)",
        "timeout 30 ./run_tests.sh --fast",
        "export NODE_ENV=production && node dist/server.js &",
        "bash -c 'cd frontend && npm ci && npm run lint'",
        "python3 -c 'import sys; print(sys.version)'",
        "git stash && git pull --rebase && git stash pop",
};

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
throughput(struct policy *p, const struct policy_ctx *ctx)
{
        size_t n = ARRAY_SIZE(corpus), iters = 4000;
        uint64_t t0 = util_now_ns();
        struct policy_result r;

        for (size_t it = 0; it < iters; it++) {
                for (size_t k = 0; k < n; k++) {
                        policy_eval_command(p, ctx, corpus[k], &r);
                        policy_result_clear(&r);
                }
        }
        double secs = (double) (util_now_ns() - t0) / 1e9;
        return (double) (n * iters) / secs;
}

static double
worst_case(struct policy *p, const struct policy_ctx *ctx, const char **which)
{
        static const char *const shapes[][2] = {
                {"word", "abcdefgh"},           {"commands", "ls -la; "},
                {"pipes", "a | b && c || d; "}, {"quotes", "'x' \"y $z\" $'\\x41' "},
                {"subst", "$(echo `ls`) "},     {"braces", "{a,b,c}{1..3} "},
                {"rm-rf", "rm -rf build/x; "},  {"vars", "${HOME}/$X~/ "},
                {"bash-c", "bash -c 'ls'; "},   {"heredoc", "cat <<E\n$(ls)\nE\n"},
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
        static const char *const prot[] = {"/etc/sandboxd", "/var/lib/sandboxd", NULL};
        struct policy_ctx ctx = {.backend = "local",
                                 .host_access = true,
                                 .cwd = "/home/user/project",
                                 .home = "/home/user",
                                 .protected_paths = prot};
        struct policy *p = policy_new_default();
        const char *which = "";

        double eps = throughput(p, &ctx);
        printf("policy throughput: %.0f evaluations/s over %zu typical commands; target "
               "100000/s; ratio %.2f\n",
               eps, ARRAY_SIZE(corpus), eps / 100000.0);
        double ms = worst_case(p, &ctx, &which);
        printf("policy worst case: %.3f ms for a 128 KiB command (%s); target 10 ms; ratio %.2f\n",
               ms, which, 10.0 / ms);
        policy_free(p);
        return 0;
}
