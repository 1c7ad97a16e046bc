/* docker_binds.c — the read-back of a created container's bind sources: each must be what was
 * approved (the place the policy saw it lead, resolved as the owner before the judgement), and
 * must lead there still when resolved again as the owner, in a helper, off the loop, bounded
 * (a directory swapped for a symlink between the judgement and Docker's mount). The daemon
 * never resolves a client's path with its own rights, and a mount that stops answering fails
 * the create instead of stalling the daemon. */
#include <stdlib.h>
#include <string.h>

#include "backends/caller_file.h"
#include "backends/docker/docker_int.h"
#include "protocol/util.h"

/* One source resolved again. */
struct docker_recheck {
        struct docker_create *c;
        struct caller_job *job; /* NULL once answered */
        char *dst, *want;
};

/* Fails the create with "mount DST: WHAT GOT, but WANT was approved" (-32001). */
static void
docker_binds_deny(struct docker_create *c, const char *dst, const char *what, const char *got,
                  const char *want)
{
        if (c->err.code)
                return; /* the first problem is told */
        sbx_error_set(
                &c->err, SBX_E_DENIED,
                json_pack("{s:s,s:s,s:[]}", "verdict", "deny", "resolution", "policy", "findings"),
                "mount %s: %s %s, but %s was approved", dst, what, got, want);
}

static void
docker_rechecks_free(struct docker_create *c)
{
        for (size_t i = 0; i < c->nrechecks; i++) {
                free(c->rechecks[i].dst);
                free(c->rechecks[i].want);
        }
        free(c->rechecks);
        c->rechecks = NULL;
        c->nrechecks = c->rechecks_pending = 0;
}

static void
docker_rechecked_cb(void *ctx, const char *real, bool is_dir, const char *error)
{
        struct docker_recheck *r = ctx;
        struct docker_create *c = r->c;

        r->job = NULL;
        if (error && !c->err.code)
                sbx_error_backend(&c->err, "docker",
                                  "mount %s: its source '%s' did not answer within %u s: a hung "
                                  "mount? name another path (%s)",
                                  r->dst, r->want, docker.check_ms / 1000, error);
        else if (!error && (!real || strcmp(real, r->want) != 0))
                docker_binds_deny(c, r->dst, "its source now resolves to",
                                  real ? real : "nothing the owner can reach", r->want);
        if (--c->rechecks_pending)
                return;
        docker_rechecks_free(c);
        c->binds_checked(c);
}

/* Checks the bind sources Docker reports in insp (borrowed) against the approved ones. */
static int
docker_binds_collect(struct docker_create *c, json_t *insp)
{
        size_t i, n = json_array_size(json_object_get(insp, "Mounts"));
        json_t *m;

        c->rechecks = xcalloc(n ? n : 1, sizeof(*c->rechecks));
        json_array_foreach(json_object_get(insp, "Mounts"), i, m)
        {
                const char *dst = json_string_value(json_object_get(m, "Destination"));
                const char *src = json_string_value(json_object_get(m, "Source"));
                const char *want = json_string_value(json_object_get(c->approved, dst ? dst : ""));
                bool agent = docker.agent && dst && strcmp(dst, AGENT_PATH) == 0;
                if (agent)
                        want = docker.agent; /* the daemon's own: not resolved again */
                if (!want || !src)
                        continue;
                if (strcmp(src, want) != 0) {
                        docker_binds_deny(c, dst, "Docker mounted", src, want);
                        return -1;
                }
                if (!agent)
                        c->rechecks[c->nrechecks++] = (struct docker_recheck){
                                .c = c, .dst = xstrdup(dst), .want = xstrdup(want)};
        }
        return 0;
}

/* Checks the binds of the created container insp (borrowed); done(c) follows, from the loop
 * when anything is resolved again, with c->err set on a problem. */
void
docker_check_binds(struct docker_create *c, json_t *insp, void (*done)(struct docker_create *))
{
        const struct backend_identity *as = c->owner_id && c->owner_id->uid ? c->owner_id : NULL;

        c->binds_checked = done;
        if (docker_binds_collect(c, insp) < 0 || !c->nrechecks) {
                docker_rechecks_free(c);
                done(c);
                return;
        }
        c->rechecks_pending = c->nrechecks;
        for (size_t i = 0; i < c->nrechecks; i++) {
                struct docker_recheck *r = &c->rechecks[i];
                r->job = caller_path_resolve(docker.loop, as, r->want, docker.check_ms, r,
                                             docker_rechecked_cb);
        }
}

/* Whether a re-check is in flight; if so it is abandoned (no done follows). */
bool
docker_check_binds_cancel(struct docker_create *c)
{
        if (!c->rechecks_pending)
                return false;
        for (size_t i = 0; i < c->nrechecks; i++)
                if (c->rechecks[i].job)
                        caller_job_cancel(c->rechecks[i].job);
        docker_rechecks_free(c);
        return true;
}
