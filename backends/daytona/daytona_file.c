/* daytona_file.c — file.read and file.write through the toolbox's file endpoints, binary-safe:
 * GET /files/download (streamed; only the requested window is kept), POST /files/upload
 * (multipart field "file"), /files/folder, /files/info and /files/permissions. Paths are the
 * sandbox's (a remote machine): the daemon's judge gets the requested path, before anything
 * is touched. Only regular files are read or written, as /files/info tells beforehand: the
 * toolbox would open a FIFO and wait on it until the call's timeout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/daytona/daytona_int.h"

#define FILE_APPEND_MAX (64u << 20) /* an append downloads the file first */

/* ---- statuses of the file endpoints ---- */

/* A file endpoint's failure: 404, 403 and 400 are about the path (the toolbox's os.Stat
 * errors), a 401 is the key; the rest is the backend's. */
static void
file_error(struct sbx_error *err, const char *what, const char *path, const struct daytona_res *res)
{
        if (res->status == 404)
                sbx_error_param(err, "path", "'%s': no such file or directory in the sandbox",
                                path);
        else if (res->status == 403)
                sbx_error_param(err, "path", "'%s': permission denied in the sandbox", path);
        else if (res->status == 400)
                sbx_error_param(err, "path", "'%s': %s", path, daytona_res_message(res));
        else
                daytona_error(err, what, res, false);
}

/* Whether a /files/info answer (os.Stat, links followed) is a regular file. Its "mode" is Go's
 * FileMode.String(): type and flag letters ('-' when there are none) before the nine
 * permission characters; of the letters, d L D p S c ? are other kinds of file (u g t a l T
 * are flags a regular file may have). */
static bool
file_info_regular(json_t *info)
{
        const char *m = json_string_value(json_object_get(info, "mode"));
        size_t n = m ? strlen(m) : 0;

        if (n < 10 || json_is_true(json_object_get(info, "isDir")))
                return false;
        return strcspn(m, "dLDpSc?") >= n - 9;
}

static void
file_not_regular(struct sbx_error *err, const char *path)
{
        sbx_error_param(err, "path", "'%s' is not a regular file in the sandbox", path);
}

/* ---- read ---- */

struct file_read {
        struct backend_sandbox *sb;
        char *path;
        uint64_t offset, total;
        size_t max;
        struct buf window;
        void *ctx;
        backend_read_cb cb;
};

static int
file_read_data(void *ctx, const char *data, size_t len)
{
        struct file_read *r = ctx;
        uint64_t start = r->total, end = r->total + len;

        if (!data) { /* the download starts over */
                r->total = 0;
                r->window.len = 0;
                return 0;
        }
        r->total = end;
        if (end <= r->offset || start >= r->offset + r->max)
                return 0;
        uint64_t from = MAX(start, r->offset), to = MIN(end, r->offset + r->max);
        buf_append(&r->window, data + (from - start), (size_t) (to - from));
        return 0;
}

static void
file_read_cb(void *ctx, const struct daytona_res *res)
{
        struct file_read *r = ctx;
        struct sbx_error err = {0};

        if (res->status == 200) {
                r->cb(r->ctx, r->window.data ? r->window.data : "", r->window.len, r->total,
                      r->offset + r->window.len >= r->total, NULL);
        } else {
                file_error(&err, "download a file", r->path, res);
                r->cb(r->ctx, NULL, 0, 0, false, &err);
                sbx_error_clear(&err);
        }
        daytona_sandbox_unref(r->sb);
        buf_free(&r->window);
        free(r->path);
        free(r);
}

static void
file_read_fail(struct file_read *r, const struct sbx_error *err)
{
        r->cb(r->ctx, NULL, 0, 0, false, err);
        daytona_sandbox_unref(r->sb);
        free(r->path);
        free(r);
}

/* The file's kind is known: a regular file streams by, the window is kept. */
static void
file_read_info_cb(void *ctx, const struct daytona_res *res)
{
        struct file_read *r = ctx;
        struct daytona_req req = {
                .idempotent = true, .on_data = file_read_data, .timeout_ms = 600000};
        struct sbx_error err = {0};
        char *q;

        if (res->status != 200 || !file_info_regular(res->body)) {
                if (res->status == 200)
                        file_not_regular(&err, r->path);
                else
                        file_error(&err, "look at a file", r->path, res);
                file_read_fail(r, &err);
                sbx_error_clear(&err);
                return;
        }
        q = http_escape(r->path);
        daytona_send(&req, daytona_tb_url(r->sb, "/files/download?path=%s", q), file_read_cb, r,
                     NULL);
        free(q);
}

static void
file_read_judged_cb(void *op, const struct sbx_error *deny)
{
        struct file_read *r = op;
        struct daytona_req req = {.idempotent = true};
        char *q;

        if (deny) {
                file_read_fail(r, deny);
                return;
        }
        q = http_escape(r->path);
        daytona_send(&req, daytona_tb_url(r->sb, "/files/info?path=%s", q), file_read_info_cb, r,
                     NULL);
        free(q);
}

/* file.read: judged, GET /files/info, then the whole file streams by and the window
 * [offset, offset+max) is kept. */
void
daytona_file_read(struct backend_sandbox *sb, const char *path, uint64_t offset, size_t max_bytes,
                  void *ctx, backend_judge_fn judge, backend_read_cb cb)
{
        struct file_read *r = xcalloc(1, sizeof(*r));
        struct backend_file_target t = {NULL, false, 0};

        r->sb = sb;
        daytona_sandbox_ref(sb);
        r->path = xstrdup(path);
        r->offset = offset;
        r->max = max_bytes;
        r->ctx = ctx;
        r->cb = cb;
        t.path = r->path;
        judge(ctx, &t, file_read_judged_cb, r);
}

/* ---- upload ---- */

/* POST /files/upload?path= with the data as multipart field "file". */
void
daytona_upload(struct backend_sandbox *sb, const char *path, const void *data, size_t len,
               void *ctx, daytona_cb cb, struct daytona_call **call)
{
        char bnd[25], *q = http_escape(path);
        char *ctype;
        struct buf b = {0};

        util_random_hex(bnd, 24);
        buf_appendf(&b,
                    "--sandboxd%s\r\nContent-Disposition: form-data; name=\"file\"; "
                    "filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                    bnd);
        buf_append(&b, data, len);
        buf_appendf(&b, "\r\n--sandboxd%s--\r\n", bnd);
        ctype = xasprintf("multipart/form-data; boundary=sandboxd%s", bnd);
        struct daytona_req r = {.method = "POST",
                                .raw = b.data,
                                .raw_len = b.len,
                                .ctype = ctype,
                                .idempotent = true, /* the same bytes to the same path */
                                .timeout_ms = 600000};
        daytona_send(&r, daytona_tb_url(sb, "/files/upload?path=%s", q), cb, ctx, call);
        buf_free(&b);
        free(ctype);
        free(q);
}

/* ---- write ---- */

enum fw_step {
        FW_DIR,    /* mkdir: POST /files/folder; else GET /files/info of the parent */
        FW_TARGET, /* GET /files/info of the file: none, or a regular file */
        FW_OLD,    /* append: GET /files/download of what is there */
        FW_UPLOAD,
        FW_MODE, /* POST /files/permissions */
        FW_DONE,
};

struct file_write {
        struct backend_sandbox *sb;
        char *path, *dir;
        struct buf data;
        int mode;
        bool append, mkdir;
        bool fresh; /* no such file yet */
        enum fw_step step;
        void *ctx;
        backend_done_cb cb;
};

static void fw_next(struct file_write *w);

static void
fw_finish(struct file_write *w, const struct sbx_error *err)
{
        w->cb(w->ctx, err);
        daytona_sandbox_unref(w->sb);
        buf_free(&w->data);
        free(w->path);
        free(w->dir);
        free(w);
}

static void
fw_step_cb(void *ctx, const struct daytona_res *res)
{
        static const char *const what[] = {"check the directory", "look at the file",
                                           "read the file to append to", "upload a file",
                                           "set the file's mode"};
        struct file_write *w = ctx;
        struct sbx_error err = {0};
        bool ok = res->status / 100 == 2;

        if (w->step == FW_DIR && !w->mkdir && ok &&
            !json_is_true(json_object_get(res->body, "isDir")))
                ok = false;
        if (w->step == FW_TARGET && res->status == 404)
                ok = true; /* a new file */
        if (w->step == FW_TARGET && res->status == 200 && !file_info_regular(res->body)) {
                file_not_regular(&err, w->path);
                fw_finish(w, &err);
                sbx_error_clear(&err);
                return;
        }
        if (w->step == FW_TARGET && res->status == 404)
                w->fresh = true;
        if (w->step == FW_OLD && res->status == 404)
                ok = true; /* removed meanwhile: nothing to append to */
        if (w->step == FW_OLD && ok && res->status == 200) {
                struct buf both = {0};
                buf_append(&both, res->raw, res->len);
                buf_append(&both, w->data.data, w->data.len);
                buf_free(&w->data);
                w->data = both;
        }
        if (!ok) {
                file_error(&err, what[w->step], w->step == FW_DIR ? w->dir : w->path, res);
                if (w->step == FW_DIR && res->status == 200)
                        sbx_error_param(&err, "path", "'%s' is not a directory in the sandbox",
                                        w->dir);
                fw_finish(w, &err);
                sbx_error_clear(&err);
                return;
        }
        w->step++;
        fw_next(w);
}

static void
fw_judged_cb(void *op, const struct sbx_error *deny)
{
        struct file_write *w = op;

        if (deny)
                fw_finish(w, deny);
        else
                fw_next(w);
}

static void
fw_call(struct file_write *w, const char *method, char *url)
{
        struct daytona_req r = {.method = method, .idempotent = true};

        daytona_send(&r, url, fw_step_cb, w, NULL);
}

/* The next request of a write. */
static void
fw_next(struct file_write *w)
{
        char *qd = http_escape(w->dir), *qp = http_escape(w->path);

        if (w->step == FW_OLD && (!w->append || w->fresh))
                w->step = FW_UPLOAD;
        if (w->step == FW_MODE && w->mode < 0)
                w->step = FW_DONE;
        switch (w->step) {
        case FW_DIR:
                if (w->mkdir)
                        fw_call(w, "POST",
                                daytona_tb_url(w->sb, "/files/folder?path=%s&mode=0755", qd));
                else
                        fw_call(w, "GET", daytona_tb_url(w->sb, "/files/info?path=%s", qd));
                break;
        case FW_TARGET:
                fw_call(w, "GET", daytona_tb_url(w->sb, "/files/info?path=%s", qp));
                break;
        case FW_OLD:
                fw_call(w, "GET", daytona_tb_url(w->sb, "/files/download?path=%s", qp));
                break;
        case FW_UPLOAD:
                daytona_upload(w->sb, w->path, w->data.data ? w->data.data : "", w->data.len, w,
                               fw_step_cb, NULL);
                break;
        case FW_MODE:
                fw_call(w, "POST",
                        daytona_tb_url(w->sb, "/files/permissions?path=%s&mode=%04o", qp,
                                       (unsigned) w->mode));
                break;
        case FW_DONE:
                fw_finish(w, NULL);
                break;
        }
        free(qd);
        free(qp);
}

/* file.write: judged, parent checked (or made), the file checked (none or regular), old
 * content fetched for an append, upload, mode. What is written is copied now: fw is the
 * daemon's only for this call. */
void
daytona_file_write(struct backend_sandbox *sb, const struct backend_file_write *fw, void *ctx,
                   backend_judge_fn judge, backend_done_cb cb)
{
        struct file_write *w = xcalloc(1, sizeof(*w));
        struct backend_file_target t = {NULL, false, 0};
        const char *slash = strrchr(fw->path, '/');

        w->sb = sb;
        daytona_sandbox_ref(sb);
        w->path = xstrdup(fw->path);
        w->dir = slash && slash != fw->path ? xstrndup(fw->path, (size_t) (slash - fw->path))
                                            : xstrdup("/");
        buf_append(&w->data, fw->data, fw->len);
        w->mode = fw->mode;
        w->append = fw->append;
        w->mkdir = fw->mkdir;
        w->ctx = ctx;
        w->cb = cb;
        if (w->append && fw->len > FILE_APPEND_MAX) {
                struct sbx_error err = {0};
                sbx_error_param(&err, "data", "an append on daytona is at most 64 MiB");
                fw_finish(w, &err);
                sbx_error_clear(&err);
                return;
        }
        t.path = w->path;
        judge(ctx, &t, fw_judged_cb, w);
}
