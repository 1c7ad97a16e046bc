/* remote_file.c — file ops through a backend's helper exec and the remote_sh.h programs. */
#include "backends/remote_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/remote_sh.h"
#include "protocol/util.h"

struct remote_fop {
        const struct remote_file_ops *ops;
        void *sb;
        char *path;
        uint64_t offset;
        size_t max;
        struct buf data; /* write: copied at the call, written once judged */
        char mode[16];
        bool append, mkdir;
        void *ctx;
        backend_read_cb rcb;
        backend_done_cb wcb;
};

static void
remote_fop_free(struct remote_fop *f)
{
        f->ops->unref(f->sb);
        free(f->path);
        buf_free(&f->data);
        free(f);
}

static struct remote_fop *
remote_fop_new(const struct remote_file_ops *ops, void *sb, const char *path, void *ctx)
{
        struct remote_fop *f = xcalloc(1, sizeof(*f));

        f->ops = ops;
        f->sb = sb;
        ops->ref(sb);
        f->path = xstrdup(path);
        f->ctx = ctx;
        return f;
}

static void
remote_fread_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *herr)
{
        struct remote_fop *f = ctx;
        struct sbx_error err = {0};
        const char *data = NULL;
        size_t dlen = 0;
        uint64_t size = 0;

        if (!herr && (code != 0 || remote_sh_read_parse(out, len, &size, &data, &dlen) < 0))
                sbx_error_param(&err, "path", "'%s': no such file or not a regular file", f->path);
        if (herr || err.code)
                f->rcb(f->ctx, NULL, 0, 0, false, herr ? herr : &err);
        else
                f->rcb(f->ctx, data, MIN(dlen, f->max), size, f->offset + MIN(dlen, f->max) >= size,
                       NULL);
        sbx_error_clear(&err);
        remote_fop_free(f);
}

static void
remote_fread_judged_cb(void *op, const struct sbx_error *deny)
{
        struct remote_fop *f = op;
        char off[32], max[32];
        char *argv[] = {"sh", "-c", (char *) remote_sh_read, f->path, off, max, NULL};

        if (deny) {
                f->rcb(f->ctx, NULL, 0, 0, false, deny);
                remote_fop_free(f);
                return;
        }
        snprintf(off, sizeof(off), "%llu", (unsigned long long) f->offset + 1);
        snprintf(max, sizeof(max), "%zu", f->max);
        f->ops->helper(f->sb, argv, NULL, 0, f, remote_fread_cb);
}

/* Reads a file in the sandbox. */
void
remote_file_read(const struct remote_file_ops *ops, void *sb, const char *path, uint64_t offset,
                 size_t max, void *ctx, backend_judge_fn judge, backend_read_cb cb)
{
        struct remote_fop *f = remote_fop_new(ops, sb, path, ctx);
        struct backend_file_target t = {f->path, false, 0};

        f->rcb = cb;
        f->offset = offset;
        f->max = max;
        judge(ctx, &t, remote_fread_judged_cb, f);
}

static void
remote_fwrite_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *herr)
{
        struct remote_fop *f = ctx;
        struct sbx_error err = {0};

        if (!herr && !remote_sh_write_error(&err, f->path, code) && code != 0)
                sbx_error_param(&err, "path",
                                "cannot write '%s' in the sandbox (exit %d; mkdir: true creates "
                                "missing directories)",
                                f->path, code);
        f->wcb(f->ctx, herr ? herr : err.code ? &err : NULL);
        sbx_error_clear(&err);
        remote_fop_free(f);
}

static void
remote_fwrite_judged_cb(void *op, const struct sbx_error *deny)
{
        struct remote_fop *f = op;
        char *argv[] = {"sh",
                        "-c",
                        (char *) remote_sh_write,
                        f->path,
                        f->mode,
                        f->append ? "1" : "0",
                        f->mkdir ? "1" : "0",
                        NULL};

        if (deny) {
                f->wcb(f->ctx, deny);
                remote_fop_free(f);
                return;
        }
        f->ops->helper(f->sb, argv, f->data.data ? f->data.data : "", f->data.len, f,
                       remote_fwrite_cb);
}

/* Writes a file in the sandbox. */
void
remote_file_write(const struct remote_file_ops *ops, void *sb, const struct backend_file_write *w,
                  void *ctx, backend_judge_fn judge, backend_done_cb cb)
{
        struct remote_fop *f = remote_fop_new(ops, sb, w->path, ctx);
        struct backend_file_target t = {f->path, false, 0};

        f->wcb = cb;
        f->append = w->append;
        f->mkdir = w->mkdir;
        if (w->mode >= 0)
                snprintf(f->mode, sizeof(f->mode), "%o", (unsigned) w->mode & 07777);
        else
                snprintf(f->mode, sizeof(f->mode), "-");
        buf_append(&f->data, w->data ? w->data : "", w->len);
        judge(ctx, &t, remote_fwrite_judged_cb, f);
}
