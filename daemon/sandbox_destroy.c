/* sandbox_destroy.c — destroying a sandbox (after its execs), sandbox.destroy, and everything at
 * shutdown. */

#include <stdlib.h>

#include "daemon/log.h"
#include "daemon/methods.h"
#include "daemon/proc.h"
#include "daemon/records.h"
#include "daemon/sandbox.h"
#include "daemon/sandbox_int.h"
#include "protocol/util.h"

struct sandbox_destroy {
        struct sandbox *sb;
        struct rpc_req *req;
        void (*done)(void *ctx);
        void *ctx;
        bool given_up; /* the daemon stopped first: the sandbox is kept, not destroyed */
};

static void
sandbox_destroyed_cb(void *ctx, const struct sbx_error *err)
{
        struct sandbox_destroy *d = ctx;
        struct sandbox *sb = d->sb;

        if (err) {
                log_warn("sandbox %s: destroy: %s", sb->id, err->message);
        } else {
                log_info("sandbox %s ('%s') destroyed", sb->id, sb->name);
                sandbox_remove_state_dir(sb); /* its backend is done with it: before the answer */
        }
        sb->state = SANDBOX_GONE;
        sb->bsb = NULL;
        if (d->req) {
                if (err) {
                        struct sbx_error e = {0};
                        sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                        rpc_error(d->req, &e);
                } else {
                        rpc_result(d->req, json_pack("{s:s,s:b}", "id", sb->id, "destroyed", 1));
                }
        }
        if (d->done)
                d->done(d->ctx);
        sandbox_unref(sb); /* the registry's */
        sandbox_unref(sb); /* ours */
        free(d);
        records_save();
}

static void
sandbox_procs_gone_cb(void *ctx)
{
        struct sandbox_destroy *d = ctx;

        d->sb->destroying = NULL;
        if (d->given_up) { /* after the backends' shutdown: its side is released, not ours */
                sandbox_unref(d->sb);
                free(d);
                return;
        }
        d->sb->ops->destroy(d->sb->bsb, d, sandbox_destroyed_cb);
}

/* Kills the execs of sb, then destroys it in its backend; req (may be NULL) gets the answer,
 * done (may be NULL) is called at the end. */
void
sandbox_destroy(struct sandbox *sb, struct rpc_req *req, void (*done)(void *), void *ctx)
{
        struct sandbox_destroy *d = xcalloc(1, sizeof(*d));

        d->sb = sb;
        d->req = req;
        d->done = done;
        d->ctx = ctx;
        sandbox_ref(sb);
        sb->state = SANDBOX_DESTROYING;
        sb->destroying = d;
        proc_kill_all(sb, sandbox_procs_gone_cb, d);
}

/* sandbox.destroy */
void
method_sandbox_destroy(struct rpc_req *req)
{
        static const char *const keys[] = {"id", NULL};
        struct sandbox *sb = sandbox_from_params(req, keys);

        if (!sb)
                return;
        if (sb->state == SANDBOX_CREATING) {
                rpc_error_msg(req, SBX_E_UNUSABLE,
                              "sandbox '%s' is still being created; destroy it once it is ready",
                              sb->id);
                return;
        }
        sandbox_destroy(sb, req, NULL, NULL);
}

struct sandbox_all_destroy {
        unsigned pending;
        void (*cb)(void *ctx);
        void *ctx;
};

static void
sandbox_one_gone_cb(void *ctx)
{
        struct sandbox_all_destroy *a = ctx;

        if (--a->pending == 0) {
                a->cb(a->ctx);
                free(a);
        }
}

/* Destroys that clients asked for and that still wait for their execs when the daemon stops
 * (a link that is down holds them): a sandbox that outlives the daemon is kept for re-adoption
 * as a ready one is, and the client told to destroy it again (its backend is shut down before
 * the execs end: calling it then would use what it freed); another one is waited for. */
static void
sandbox_destroys_at_stop(struct sandbox_all_destroy *a)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                struct sandbox_destroy *d = sb->destroying;
                if (!d || d->done)
                        continue;
                if (!sandbox_persistent(sb)) {
                        a->pending++;
                        d->done = sandbox_one_gone_cb;
                        d->ctx = a;
                        continue;
                }
                if (d->req)
                        rpc_error_msg(d->req, SBX_E_UNUSABLE,
                                      "the daemon is stopping before sandbox '%s' was destroyed "
                                      "(its execs had not ended): it is kept for the next daemon; "
                                      "destroy it again there",
                                      sb->id);
                d->req = NULL;
                d->given_up = true;
                sb->state = SANDBOX_READY; /* recorded and kept below */
        }
}

/* Destroys everything (shutdown), except sandboxes that outlive the daemon: those are
 * recorded for re-adoption after the restart and only forgotten here. */
void
sandbox_destroy_all(void (*cb)(void *ctx), void *ctx)
{
        struct sandbox_all_destroy *a = xcalloc(1, sizeof(*a));
        struct list *pos, *tmp;

        a->cb = cb;
        a->ctx = ctx;
        a->pending = 1;
        sandbox_expiry_stop();
        sandbox_destroys_at_stop(a);
        records_save_final();
        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (sb->state != SANDBOX_READY)
                        continue;
                if (sandbox_persistent(sb)) {
                        /* The backend's shutdown releases its side (the container stays);
                         * until then it may still call up: freed by sandbox_shutdown. */
                        log_info("sandbox %s ('%s', %s) kept for re-adoption", sb->id, sb->name,
                                 sb->ops->name);
                        sb->state = SANDBOX_GONE;
                        sb->kept = true;
                        continue;
                }
                a->pending++;
                sandbox_destroy(sb, NULL, sandbox_one_gone_cb, a);
        }
        /* Creates in progress leave nothing behind (a pull, a slow remote start). */
        LIST_FOREACH_SAFE(pos, tmp, &sandbox_in_backend)
        {
                struct sandbox_create *sc = LIST_ENTRY(pos, struct sandbox_create, link);
                if (!sc->sb->ops->cancel || sc->ended)
                        continue;
                a->pending++;
                sc->ended = sandbox_one_gone_cb;
                sc->ended_ctx = a;
                log_info("sandbox %s: cancelling its creation (shutting down)", sc->sb->id);
                sc->sb->ops->cancel(sc);
        }
        sandbox_one_gone_cb(a);
}

/* Frees the sandboxes kept for re-adoption (after the backends' shutdown). */
void
sandbox_shutdown(void)
{
        struct list *pos, *tmp;

        LIST_FOREACH_SAFE(pos, tmp, &sandbox_all)
        {
                struct sandbox *sb = LIST_ENTRY(pos, struct sandbox, node);
                if (!sb->kept)
                        continue;
                sb->kept = false;
                sb->bsb = NULL;
                sandbox_unref(sb); /* the registry's */
        }
}
