/* sandbox_budget.c — the per-uid resource budget of docker sandboxes. */

#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "daemon/sandbox_policy.h"

/* A new docker sandbox may not take its owner's docker sandboxes (it among them, and those
 * being created) together above [backend.docker] max_pids_per_user or max_memory_per_user
 * (-32004); after the judgement, so that a request above a per-sandbox maximum says so. */
int
sandbox_docker_budget(const struct sandbox *self, struct sbx_error *err)
{
        const struct policy_docker_limits *l = sandbox_policy_docker_limits();
        int64_t pids = 0, mem = 0, p, m;
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->owner != self->owner || sb->ops != self->ops || sb->state == SANDBOX_GONE)
                        continue;
                policy_docker_usage(l, sb->spec, &p, &m);
                pids += p;
                mem += m;
        }
        if (pids > l->max_pids_user)
                sbx_error_limit(err, "max_pids_per_user", (long long) l->max_pids_user,
                                "limit reached: uid %u's docker sandboxes would have %lld pids "
                                "together, above [backend.docker] max_pids_per_user (%lld); "
                                "destroy one, or ask for fewer (resources.pids)",
                                (unsigned) self->owner, (long long) pids,
                                (long long) l->max_pids_user);
        else if (mem > l->max_memory_user)
                sbx_error_limit(err, "max_memory_per_user", (long long) l->max_memory_user,
                                "limit reached: uid %u's docker sandboxes would have %lld MiB "
                                "of memory together, above [backend.docker] "
                                "max_memory_per_user (%lld MiB); destroy one, or ask for less "
                                "(resources.memory_mb)",
                                (unsigned) self->owner, (long long) (mem >> 20),
                                (long long) (l->max_memory_user >> 20));
        return err->code ? -1 : 0;
}
