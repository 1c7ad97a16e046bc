/* helper_ops.c — a backend's ops driven from a benchmark (helper_ops.h). */
#include "bench/helper_ops.h"

#include <stdio.h>
#include <stdlib.h>

#include "protocol/util.h"

uv_loop_t bo_loop;

static void
bo_tick(uv_timer_t *t)
{
}

/* A referenced timer keeps the loop blocking while what is waited for comes through an
 * unreferenced handle (the local backend's SIGCHLD). */
void
bo_run_until(const bool *flag)
{
        uv_timer_t keep;

        uv_timer_init(&bo_loop, &keep);
        uv_timer_start(&keep, bo_tick, 1000, 1000);
        while (!*flag)
                uv_run(&bo_loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *) &keep, NULL);
        uv_run(&bo_loop, UV_RUN_NOWAIT);
}

struct created {
        bool done;
        struct backend_sandbox *sb;
};

static void
create_cb(void *ctx, struct backend_sandbox *bsb, const struct sandbox_info *info,
          const struct sbx_error *err)
{
        struct created *c = ctx;

        if (err)
                fprintf(stderr, "create: %s\n", err->message);
        c->sb = bsb;
        c->done = true;
}

struct backend_sandbox *
bo_create(const struct backend_ops *ops, const struct sandbox_spec *s)
{
        struct created c = {0};

        ops->create(s, &c, NULL, create_cb);
        bo_run_until(&c.done);
        return c.sb;
}

static void
done_cb(void *ctx, const struct sbx_error *err)
{
        *(bool *) ctx = true;
}

void
bo_destroy(const struct backend_ops *ops, struct backend_sandbox *sb)
{
        bool done = false;

        ops->destroy(sb, &done, done_cb);
        bo_run_until(&done);
}

static void
out_cb(void *ctx, enum backend_stream s, const char *d, size_t n)
{
}

static void
exit_cb(void *ctx, const struct exec_exit *ex)
{
        *(bool *) ctx = true;
}

uint64_t
bo_exec(const struct backend_ops *ops, struct backend_sandbox *sb, char *const *argv,
        char *const *envp, int i)
{
        static const struct backend_exec_cbs cbs = {out_cb, exit_cb};
        char id[32];
        struct exec_spec spec = {.argv = argv, .envp = envp, .exec_id = id};
        struct backend_proc *p = NULL;
        struct sbx_error err = {0};
        bool done = false;
        uint64_t t0 = util_now_ns();

        snprintf(id, sizeof(id), "p_bench%d", i);
        if (ops->exec_start(sb, &spec, &cbs, &done, &p, &err) < 0) {
                fprintf(stderr, "exec: %s\n", err.message);
                exit(1);
        }
        bo_run_until(&done);
        p->ops->release(p);
        return util_now_ns() - t0;
}
