/* docker_file.c — file.read / file.write for docker sandboxes.
 *
 * The archive API (GET/PUT /containers/{id}/archive, tar) is the main path. Docker's archive
 * code works on the container's root filesystem and does not see tmpfs mounts (a write to /tmp
 * lands in the layer underneath and is invisible inside), so paths on a tmpfs, and appends, go
 * through a helper exec (cat with stdin / tail | head) instead, and so does every file of an
 * owner that is not root: the archive API reads and writes as host root, the helper as the
 * container's user (docker_user.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backends/docker/docker.h"
#include "backends/docker/docker_int.h"
#include "backends/remote_sh.h"

#define DOCKER_LINK_HOPS 8

static bool
docker_file_on_tmpfs(struct backend_sandbox *sb, const char *path)
{
        json_t *t;
        size_t i;

        json_array_foreach(sb->tmpfs, i, t)
        {
                const char *m = json_string_value(t);
                size_t n = m ? strlen(m) : 0;
                if (n && strncmp(path, m, n) == 0 && (path[n] == '\0' || path[n] == '/'))
                        return true;
        }
        return false;
}

struct docker_fread {
        struct backend_sandbox *sb;
        char *path;
        uint64_t offset;
        size_t max;
        void *ctx;
        backend_read_cb cb;
        struct docker_tar_reader tar;
        struct http_req *req;
        uint64_t size, seen;
        struct buf out;
        char *link;
        int hops;
        bool bad_type, done;
};

static void
docker_fread_free(struct docker_fread *r)
{
        docker_sandbox_unref(r->sb);
        free(r->path);
        free(r->link);
        buf_free(&r->out);
        free(r);
}

static void
docker_fread_deliver(struct docker_fread *r, const struct sbx_error *err)
{
        bool eof = r->offset + r->out.len >= r->size;

        if (err)
                r->cb(r->ctx, NULL, 0, 0, false, err);
        else
                r->cb(r->ctx, r->out.data ? r->out.data : "", r->out.len, r->size, eof, NULL);
        docker_fread_free(r);
}

static void
docker_fread_entry_cb(void *ctx, const struct docker_tar_entry *e)
{
        struct docker_fread *r = ctx;

        if (r->tar.entries > 1)
                return;
        r->size = e->size;
        if (e->type == '2') {
                r->link = xstrdup(e->link);
        } else if (e->type != '0' && e->type != '7') {
                r->bad_type = true;
        }
}

static void
docker_fread_data_cb(void *ctx, const char *data, size_t len)
{
        struct docker_fread *r = ctx;
        uint64_t start = r->seen;

        r->seen += len;
        if (r->tar.entries > 1 || r->seen <= r->offset || r->out.len >= r->max)
                return;
        if (start < r->offset) {
                data += r->offset - start;
                len -= (size_t) (r->offset - start);
        }
        buf_append(&r->out, data, MIN(len, r->max - r->out.len));
}

static int
docker_fread_http_data_cb(void *ctx, struct http_req *req, const char *data, size_t len)
{
        struct docker_fread *r = ctx;

        if (http_req_status(req) != 200) {
                buf_append(&r->out, data, MIN(len, 4096u));
                return 0;
        }
        if (docker_tar_feed(&r->tar, data, len) < 0)
                return -1;
        /* Everything wanted has arrived: stop the transfer early. */
        if (r->tar.entries == 1 && !r->link && r->out.len >= r->max)
                return -1;
        return 0;
}

static void docker_fread_start(struct docker_fread *r);

static void
docker_fread_done_cb(void *ctx, struct http_req *req, const struct http_result *res)
{
        struct docker_fread *r = ctx;
        struct sbx_error err = {0};

        if (res->status == 404) {
                sbx_error_param(&err, "path", "'%s': no such file in the sandbox", r->path);
        } else if (res->status != 200) {
                json_t *b = json_loadb(r->out.data ? r->out.data : "", r->out.len, 0, NULL);
                docker_error(&err, "read file", res->error ? 0 : res->status, b, res->error);
                json_decref(b);
        } else if (r->bad_type) {
                sbx_error_param(&err, "path", "'%s' is not a regular file", r->path);
        } else if (r->link && r->hops < DOCKER_LINK_HOPS) {
                /* Follow a symlink as open(2) would. */
                char *dir = xstrdup(r->path), *slash = strrchr(dir, '/');
                char *next = r->link[0] == '/'
                                     ? xstrdup(r->link)
                                     : xasprintf("%.*s/%s", (int) (slash - dir), dir, r->link);
                free(dir);
                free(r->path);
                r->path = next;
                free(r->link);
                r->link = NULL;
                r->hops++;
                docker_fread_start(r);
                return;
        } else if (r->link) {
                sbx_error_param(&err, "path", "'%s': too many levels of symbolic links", r->path);
        } else if (res->error && r->out.len < r->max && r->seen < r->size) {
                docker_error(&err, "read file", 0, NULL, res->error);
        }
        docker_fread_deliver(r, err.code ? &err : NULL);
        sbx_error_clear(&err);
}

static void
docker_fread_start(struct docker_fread *r)
{
        static const struct http_cbs cbs = {.on_data = docker_fread_http_data_cb,
                                            .on_done = docker_fread_done_cb};
        char *q = http_escape(r->path);
        char *url = xasprintf("%s/" DOCKER_API "/containers/%s/archive?path=%s", docker.base_url,
                              r->sb->cid, q);
        struct http_req_spec s = {.method = "GET",
                                  .url = url,
                                  .unix_socket = docker.sock_path,
                                  .ca_file = docker.ca_file,
                                  .cert_file = docker.cert_file,
                                  .key_file = docker.key_file};
        struct sbx_error err = {0};

        memset(&r->tar, 0, sizeof(r->tar));
        r->tar.on_entry = docker_fread_entry_cb;
        r->tar.on_data = docker_fread_data_cb;
        r->tar.ctx = r;
        r->seen = r->size = 0;
        r->bad_type = false;
        buf_consume(&r->out, r->out.len);
        if (http_request(docker.http, &s, &cbs, r, &r->req) < 0) {
                sbx_error_backend(&err, "docker", "cannot start an API request");
                docker_fread_deliver(r, &err);
                sbx_error_clear(&err);
        }
        free(url);
        free(q);
}

static void
docker_fread_exec_cb(void *ctx, int code, const char *out, size_t len, const struct sbx_error *herr)
{
        struct docker_fread *r = ctx;
        struct sbx_error err = {0};
        const char *data;
        size_t dlen;

        if (herr) {
                docker_fread_deliver(r, (struct sbx_error *) herr);
                return;
        }
        if (code != 0 || remote_sh_read_parse(out, len, &r->size, &data, &dlen) < 0) {
                sbx_error_param(&err, "path", "'%s': no such file or not a regular file", r->path);
                docker_fread_deliver(r, &err);
                sbx_error_clear(&err);
                return;
        }
        buf_append(&r->out, data, MIN(dlen, r->max));
        docker_fread_deliver(r, NULL);
}

static void
docker_fread_judged_cb(void *op, const struct sbx_error *deny)
{
        struct docker_fread *r = op;
        char off[32], max[32];
        char *argv[] = {"sh", "-c", (char *) remote_sh_read, r->path, off, max, NULL};

        if (deny) {
                docker_fread_deliver(r, deny);
                return;
        }
        /* dockerd's archive API reads as host root: not for an owner that is not root. */
        if (!r->sb->unprivileged && !docker_file_on_tmpfs(r->sb, r->path)) {
                docker_fread_start(r);
                return;
        }
        snprintf(off, sizeof(off), "%llu", (unsigned long long) r->offset + 1);
        snprintf(max, sizeof(max), "%zu", r->max);
        docker_helper(r->sb, argv, NULL, 0, r, docker_fread_exec_cb);
}

/* Reads up to max_bytes of a file from offset. Paths are the container's and symlinks resolve
 * inside it: judge gets the requested path. */
void
docker_file_read(struct backend_sandbox *sb, const char *path, uint64_t offset, size_t max_bytes,
                 void *ctx, backend_judge_fn judge, backend_read_cb cb)
{
        struct docker_fread *r;
        struct backend_file_target t = {path, false, 0};

        if (!path || path[0] != '/') {
                struct sbx_error err = {0};
                sbx_error_param(&err, "path", "path must be absolute");
                cb(ctx, NULL, 0, 0, false, &err);
                sbx_error_clear(&err);
                return;
        }
        r = xcalloc(1, sizeof(*r));
        r->sb = sb;
        docker_sandbox_ref(sb);
        r->path = xstrdup(path);
        r->offset = offset;
        r->max = max_bytes;
        r->ctx = ctx;
        r->cb = cb;
        judge(ctx, &t, docker_fread_judged_cb, r);
}

struct docker_fwrite {
        struct backend_sandbox *sb;
        char *path;
        struct buf tar; /* the archive to PUT, or the data for the helper */
        bool helper;    /* appends and tmpfs paths: a `cat` helper exec */
        bool append, mkdir;
        char mode[16]; /* octal, "-" for none */
        void *ctx;
        backend_done_cb cb;
};

static void
docker_fwrite_finish(struct docker_fwrite *w, const struct sbx_error *err)
{
        w->cb(w->ctx, err);
        docker_sandbox_unref(w->sb);
        free(w->path);
        buf_free(&w->tar);
        free(w);
}

static void
docker_fwrite_exec_cb(void *ctx, int code, const char *out, size_t len,
                      const struct sbx_error *herr)
{
        struct docker_fwrite *w = ctx;
        struct sbx_error err = {0};

        if (!herr && !remote_sh_write_error(&err, w->path, code) && code != 0)
                sbx_error_param(&err, "path", "cannot write '%s' in the sandbox (exit %d)", w->path,
                                code);
        docker_fwrite_finish(w, herr ? herr : err.code ? &err : NULL);
        sbx_error_clear(&err);
}

static void
docker_fwrite_put_cb(void *ctx, long status, json_t *body, const char *raw, size_t len,
                     const char *terr)
{
        struct docker_fwrite *w = ctx;
        struct sbx_error err = {0};

        if (status == 404)
                sbx_error_param(&err, "path",
                                "'%s': the directory does not exist (mkdir: true "
                                "creates it)",
                                w->path);
        else if (status != 200)
                docker_error(&err, "write file", status, body, terr);
        docker_fwrite_finish(w, err.code ? &err : NULL);
        sbx_error_clear(&err);
}

static void
docker_fwrite_put(struct docker_fwrite *w)
{
        char *slash = strrchr(w->path, '/');
        char *dir = slash == w->path ? xstrdup("/") : xstrndup(w->path, (size_t) (slash - w->path));
        char *q = http_escape(dir);
        char *path = xasprintf("/containers/%s/archive?path=%s&noOverwriteDirNonDir=true",
                               w->sb->cid, q);

        if (docker_call("PUT", path, NULL, w->tar.data, w->tar.len, "application/x-tar",
                        docker_fwrite_put_cb, w) < 0)
                docker_fwrite_put_cb(w, 0, NULL, NULL, 0, "docker backend not initialised");
        free(path);
        free(q);
        free(dir);
}

static void
docker_fwrite_mkdir_cb(void *ctx, int code, const char *out, size_t len,
                       const struct sbx_error *herr)
{
        struct docker_fwrite *w = ctx;

        if (herr || code != 0) {
                struct sbx_error err = {0};
                sbx_error_param(&err, "path", "cannot create the parent of '%s'", w->path);
                docker_fwrite_finish(w, herr ? herr : &err);
                sbx_error_clear(&err);
                return;
        }
        docker_fwrite_put(w);
}

static void
docker_fwrite_judged_cb(void *op, const struct sbx_error *deny)
{
        struct docker_fwrite *w = op;
        char *argv[] = {"sh",
                        "-c",
                        (char *) remote_sh_write,
                        w->path,
                        w->mode,
                        w->append ? "1" : "0",
                        w->mkdir ? "1" : "0",
                        NULL};
        char *mkdir_argv[] = {"sh", "-c", (char *) remote_sh_mkdir_parent, w->path, NULL};

        if (deny)
                docker_fwrite_finish(w, deny);
        else if (w->helper)
                docker_helper(w->sb, argv, w->tar.data ? w->tar.data : "", w->tar.len, w,
                              docker_fwrite_exec_cb);
        else if (w->mkdir)
                docker_helper(w->sb, mkdir_argv, NULL, 0, w, docker_fwrite_mkdir_cb);
        else
                docker_fwrite_put(w);
}

/* Writes a file (judge: as for docker_file_read). */
void
docker_file_write(struct backend_sandbox *sb, const struct backend_file_write *fw, void *ctx,
                  backend_judge_fn judge, backend_done_cb cb)
{
        struct docker_fwrite *w;
        const char *slash = fw->path ? strrchr(fw->path, '/') : NULL;
        struct backend_file_target t = {fw->path, false, 0};
        unsigned mode = fw->mode >= 0 ? (unsigned) fw->mode & 07777 : 0644u;

        if (!slash || fw->path[0] != '/' || !slash[1]) {
                struct sbx_error err = {0};
                sbx_error_param(&err, "path", "path must be absolute and name a file");
                cb(ctx, &err);
                sbx_error_clear(&err);
                return;
        }
        w = xcalloc(1, sizeof(*w));
        w->sb = sb;
        docker_sandbox_ref(sb);
        w->path = xstrdup(fw->path);
        w->ctx = ctx;
        w->cb = cb;
        w->append = fw->append;
        w->mkdir = fw->mkdir;
        /* The archive API writes as host root: an owner that is not root writes as itself. */
        w->helper = fw->append || sb->unprivileged || docker_file_on_tmpfs(sb, fw->path);
        if (fw->mode >= 0)
                snprintf(w->mode, sizeof(w->mode), "%o", mode);
        else
                strcpy(w->mode, "-");
        /* What is written is copied now: fw is the daemon's only for this call. */
        if (w->helper) {
                buf_append(&w->tar, fw->data ? fw->data : "", fw->len);
        } else {
                docker_tar_file(&w->tar, slash + 1, mode, fw->data, fw->len);
                docker_tar_end(&w->tar);
        }
        judge(ctx, &t, docker_fwrite_judged_cb, w);
}
