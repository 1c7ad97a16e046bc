/* daytona_wake.c — starting a sandbox again at exec time: Daytona stops an idle one after its
 * auto-stop interval (and archives it later); an exec whose toolbox call fails asks here. */
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define WAKE_POLL_FIRST_MS 100
#define WAKE_POLL_MAX_MS   1000

static void wake_poll(struct backend_sandbox *sb);

static void
wake_timer_close_cb(uv_handle_t *h)
{
        daytona_sandbox_unref(h->data);
}

/* Everyone waiting hears how it went; the wake's reference goes. */
static void
wake_done(struct backend_sandbox *sb, const struct sbx_error *err)
{
        sb->polling = false;
        while (!list_empty(&sb->waiters)) {
                struct daytona_wait *w = LIST_ENTRY(sb->waiters.next, struct daytona_wait, link);
                list_del(&w->link);
                w->cb(w->ctx, err);
        }
        daytona_sandbox_unref(sb);
}

static void
wake_fail(struct backend_sandbox *sb, const char *what, const struct daytona_res *res)
{
        struct sbx_error err = {0};

        daytona_error(&err, what, res, true);
        wake_done(sb, &err);
        sbx_error_clear(&err);
}

static void
wake_timer_cb(uv_timer_t *t)
{
        wake_poll(t->data);
}

static void
wake_later(struct backend_sandbox *sb)
{
        uint64_t d = WAKE_POLL_FIRST_MS << MIN(sb->polls, 3u);

        if (!sb->poll_timer_init) {
                uv_timer_init(daytona.loop, &sb->poll_timer);
                sb->poll_timer.data = sb;
                sb->poll_timer_init = true;
                daytona_sandbox_ref(sb); /* the timer's, dropped in its close callback */
        }
        sb->polls++;
        uv_timer_start(&sb->poll_timer, wake_timer_cb, MIN(d, WAKE_POLL_MAX_MS), 0);
}

static void
wake_started_cb(void *ctx, const struct daytona_res *res)
{
        struct backend_sandbox *sb = ctx;

        sb->start_call = NULL;
        /* 409: a state change was under way; the polling sees where it ends. */
        if (res->status != 200 && res->status != 409) {
                wake_fail(sb, "start sandbox", res);
                return;
        }
        daytona_sandbox_forget_sessions(sb); /* the restarted toolbox has none of them */
        wake_later(sb);
}

/* The sandbox cannot run again (error, gone, or still not started at the deadline). */
static void
wake_unusable(struct backend_sandbox *sb, json_t *o)
{
        const char *why = json_string_value(json_object_get(o, "errorReason"));
        struct sbx_error err = {0};

        sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", sb->state),
                      "daytona sandbox %s is '%s'%s%s", sb->dt_id, sb->state, why ? ": " : "",
                      why ? why : "");
        wake_done(sb, &err);
        sbx_error_clear(&err);
}

static void
wake_state_cb(void *ctx, const struct daytona_res *res)
{
        struct backend_sandbox *sb = ctx;
        struct daytona_req r = {.method = "POST", .idempotent = true};
        const char *phase;

        sb->start_call = NULL;
        if (res->status != 200) {
                wake_fail(sb, "get sandbox", res);
                return;
        }
        daytona_sandbox_set(&sb->state, json_string_value(json_object_get(res->body, "state")));
        switch (daytona_state_class(sb->state, &phase)) {
        case DAYTONA_RUNNING:
                wake_done(sb, NULL);
                break;
        case DAYTONA_BUSY:
                if (util_now_ms() < sb->poll_deadline) {
                        wake_later(sb);
                        break;
                }
                /* fall through */
        case DAYTONA_FAILED:
        case DAYTONA_GONE:
                wake_unusable(sb, res->body);
                break;
        case DAYTONA_STOPPED:
                daytona_send(&r, daytona_api_url("/sandbox/%s/start", sb->dt_id), wake_started_cb,
                             sb, &sb->start_call);
                break;
        }
}

static void
wake_poll(struct backend_sandbox *sb)
{
        struct daytona_req r = {.idempotent = true};

        daytona_send(&r, daytona_api_url("/sandbox/%s", sb->dt_id), wake_state_cb, sb,
                     &sb->start_call);
}

/* Starts the sandbox if Daytona stopped or archived it; w->cb when it runs (or cannot). */
void
daytona_sandbox_wake(struct backend_sandbox *sb, struct daytona_wait *w)
{
        list_add_tail(&sb->waiters, &w->link);
        if (sb->polling)
                return;
        sb->polling = true;
        sb->polls = 0;
        sb->poll_deadline = util_now_ms() + (uint64_t) daytona.create_timeout_s * 1000;
        daytona_sandbox_ref(sb); /* the wake's */
        wake_poll(sb);
}

/* A sandbox goes: its resume, its file cleanup and its sessions stop. */
void
daytona_sandbox_quiesce(struct backend_sandbox *sb)
{
        daytona_sandbox_forget_sessions(sb);
        if (sb->cleanup_call) {
                daytona_call_cancel(sb->cleanup_call);
                sb->cleanup_call = NULL;
                daytona_sandbox_unref(sb); /* the cleanup's */
        }
        if (sb->start_call)
                daytona_call_cancel(sb->start_call);
        sb->start_call = NULL;
        if (sb->poll_timer_init && !uv_is_closing((uv_handle_t *) &sb->poll_timer)) {
                uv_timer_stop(&sb->poll_timer);
                uv_close((uv_handle_t *) &sb->poll_timer, wake_timer_close_cb);
        }
        if (sb->polling) {
                sb->polling = false;
                daytona_sandbox_unref(sb); /* the wake's */
        }
}
