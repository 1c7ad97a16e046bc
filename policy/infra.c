/* infra.c — commands that destroy infrastructure or data through a service rather than a
 * file: the container engine (system/container/volume prune, volume rm: on a shared engine,
 * anyone's; a named container or dangling images are ordinary work and pass), cluster
 * objects (kubectl delete, helm uninstall), whole stacks (terraform/tofu/pulumi destroy),
 * cloud resources (aws … delete-X or terminate-X, s3 rm/rb, gcloud/az … delete, gsutil rm/rb),
 * repositories (gh repo delete) and databases (redis FLUSHALL, mongo dropDatabase). Each
 * is infra.destroy (ASK). One table: a program, then words that must follow it in order
 * (other words between them allowed; "x*" a prefix, "*x*" a substring, "^x" only as the first
 * word that is not an option — kubectl delete, not kubectl get -l app=delete —, any case).
 */
#include <string.h>
#include <strings.h>

#include "policy/internal.h"
#include "protocol/util.h"

static const char *const destroyers[][4] = {
        {"docker", "^system", "prune"},
        {"docker", "^volume", "prune"},
        {"docker", "^volume", "rm"},
        {"docker", "^container", "prune"},
        {"podman", "system", "prune"},
        {"podman", "system", "reset"},
        {"podman", "volume", "prune"},
        {"podman", "volume", "rm"},
        {"nerdctl", "system", "prune"},
        {"kubectl", "^delete"},
        {"kubectl", "^drain"},
        {"helm", "^uninstall"},
        {"helm", "^delete"},
        {"terraform", "destroy"},
        {"terraform", "apply", "-destroy"},
        {"tofu", "destroy"},
        {"pulumi", "destroy"},
        {"pulumi", "stack", "rm"},
        {"aws", "delete-*"},
        {"aws", "terminate-*"},
        {"aws", "s3", "rm"},
        {"aws", "s3", "rb"},
        {"gcloud", "delete"},
        {"gsutil", "rm"},
        {"gsutil", "rb"},
        {"az", "delete"},
        {"gh", "repo", "delete"},
        {"gh", "release", "delete"},
        {"redis-cli", "flushall"},
        {"redis-cli", "flushdb"},
        {"mongo", "*dropDatabase*"},
        {"mongosh", "*dropDatabase*"},
};

static bool
word_is(const char *w, const char *pat)
{
        size_t l = strlen(pat);

        if (l > 2 && pat[0] == '*' && pat[l - 1] == '*') {
                char mid[64];
                if (l - 2 >= sizeof(mid))
                        return false;
                memcpy(mid, pat + 1, l - 2);
                mid[l - 2] = '\0';
                return strcasestr(w, mid) != NULL;
        }
        if (l > 1 && pat[l - 1] == '*')
                return !strncasecmp(w, pat, l - 1);
        return !strcasecmp(w, pat);
}

/* Whether av has pat's words in order after its name (pat[0]); at most n of them. */
bool
analyze_has_words(const struct word *av, size_t ac, const char *const *pat, size_t n)
{
        size_t w = 1;
        bool first = true;

        if (ac == 0 || strcmp(analyze_base(av[0].s), pat[0]))
                return false;
        for (size_t a = 1; a < ac && w < n && pat[w]; a++) {
                bool opt = av[a].s[0] == '-';
                if (pat[w][0] == '^' ? first && !opt && word_is(av[a].s, pat[w] + 1)
                                     : word_is(av[a].s, pat[w]))
                        w++;
                else if (pat[w][0] == '^' && !opt)
                        return false; /* another subcommand */
                first = first && opt;
        }
        return w == n || !pat[w];
}

void
infra_check(struct eval *ev, int k, const struct word *av, size_t ac)
{
        for (size_t d = 0; d < ARRAY_SIZE(destroyers); d++) {
                if (analyze_has_words(av, ac, destroyers[d], ARRAY_SIZE(destroyers[d]))) {
                        const char *all = analyze_join(ev, av, ac);
                        analyze_add(ev, k, "infra.destroy", all, all);
                        return;
                }
        }
}
