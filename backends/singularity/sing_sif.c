/* sing_sif.c — SIF files: the global header check, and the slow file work (digests of images
 * of gigabytes, removal of overlay trees) on libuv's worker threads.
 *
 * A SIF file (github.com/apptainer/sif) starts with a 32-byte launch line ("#!/usr/bin/env
 * run-singularity\n" from `apptainer build`, zeros from `siftool new`), then the magic
 * "SIF_MAGIC\0", the version "01\0", the architecture, a UUID, times, and the descriptor and
 * data areas' offsets and lengths as little-endian int64 at 96, 104, 112 and 120: a file
 * shorter than its data area is truncated.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/singularity/sing_int.h"

#define SIF_HEADER_LEN 128
#define SIF_MAGIC      "SIF_MAGIC"

static uint64_t
le64(const unsigned char *p)
{
        uint64_t v = 0;

        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

/* Checks a SIF global header. */
int
sing_sif_header_check(const unsigned char *head, size_t len, uint64_t size, char *why)
{
        uint64_t descr_off, descr_len, data_off, data_len;

        if (len < SIF_HEADER_LEN) {
                snprintf(why, 160, "%zu bytes: too short for a SIF header", len);
                return -EINVAL;
        }
        if (memcmp(head + 32, SIF_MAGIC, sizeof(SIF_MAGIC)) != 0) {
                snprintf(why, 160, "no SIF_MAGIC at offset 32: not a SIF file");
                return -EINVAL;
        }
        if (memcmp(head + 42, "01", 3) != 0) {
                snprintf(why, 160, "SIF version '%.2s' is not 01", (const char *) head + 42);
                return -EINVAL;
        }
        descr_off = le64(head + 96);
        descr_len = le64(head + 104);
        data_off = le64(head + 112);
        data_len = le64(head + 120);
        if (descr_off > size || descr_len > size - descr_off || data_off > size ||
            data_len > size - data_off) {
                snprintf(why, 160, "truncated: its data area ends at byte %llu, the file has %llu",
                         (unsigned long long) (data_off + data_len), (unsigned long long) size);
                return -EINVAL;
        }
        return 0;
}

struct sif_work {
        uv_work_t req;
        char *path;
        bool hash;
        struct sing_sif_facts f;
        void *ctx;
        sing_sif_cb cb;
};

static void
sif_digest(int fd, struct sing_sif_facts *f)
{
        static const char hex[] = "0123456789abcdef";
        struct sha256_ctx c;
        unsigned char md[SHA256_LEN];
        char *buf = xmalloc(1u << 20);
        uint64_t off = 0;
        ssize_t n;

        sha256_init(&c);
        while ((n = pread(fd, buf, 1u << 20, (off_t) off)) > 0) {
                sha256_update(&c, buf, (size_t) n);
                off += (uint64_t) n;
        }
        free(buf);
        if (n < 0) {
                snprintf(f->error, sizeof(f->error), "cannot read it: %s", strerror(errno));
                return;
        }
        sha256_final(&c, md);
        for (int i = 0; i < SHA256_LEN; i++) {
                f->sha256[2 * i] = hex[md[i] >> 4];
                f->sha256[2 * i + 1] = hex[md[i] & 15];
        }
        f->sha256[64] = '\0';
}

static void
sif_work_cb(uv_work_t *req)
{
        struct sif_work *w = req->data;
        struct sing_sif_facts *f = &w->f;
        unsigned char head[SIF_HEADER_LEN];
        struct stat st;
        ssize_t n;
        int fd = open(w->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

        if (fd < 0 || fstat(fd, &st) < 0) {
                f->exists = errno != ENOENT;
                snprintf(f->error, sizeof(f->error), "%s", strerror(errno));
                if (fd >= 0)
                        close(fd);
                return;
        }
        f->exists = true;
        f->size = (uint64_t) st.st_size;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        f->ctime_ns = (int64_t) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
        if (!S_ISREG(st.st_mode)) {
                snprintf(f->error, sizeof(f->error), "not a regular file");
        } else if ((n = pread(fd, head, sizeof(head), 0)) < 0) {
                snprintf(f->error, sizeof(f->error), "cannot read it: %s", strerror(errno));
        } else if (sing_sif_header_check(head, (size_t) n, f->size, f->error) == 0 && w->hash) {
                sif_digest(fd, f);
        }
        close(fd);
}

static void
sif_after_cb(uv_work_t *req, int status)
{
        struct sif_work *w = req->data;

        (void) status;
        w->cb(w->ctx, &w->f);
        free(w->path);
        free(w);
}

/* Inspects a SIF file off the loop. */
void
sing_sif_inspect(const char *path, bool hash, void *ctx, sing_sif_cb cb)
{
        struct sif_work *w = xcalloc(1, sizeof(*w));

        w->req.data = w;
        w->path = xstrdup(path);
        w->hash = hash;
        w->ctx = ctx;
        w->cb = cb;
        uv_queue_work(sing.loop, &w->req, sif_work_cb, sif_after_cb);
}

struct rm_work {
        uv_work_t req;
        char *path;
        void (*cb)(void *ctx);
        void *ctx;
};

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void) st;
        (void) flag;
        (void) ftw;
        remove(path);
        return 0;
}

static void
rm_work_cb(uv_work_t *req)
{
        struct rm_work *w = req->data;

        /* FTW_PHYS: symlinks are removed, never followed. */
        nftw(w->path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static void
rm_after_cb(uv_work_t *req, int status)
{
        struct rm_work *w = req->data;

        (void) status;
        if (w->cb)
                w->cb(w->ctx);
        free(w->path);
        free(w);
}

/* Removes a tree off the loop. */
void
sing_sif_remove_tree(const char *path, void (*cb)(void *ctx), void *ctx)
{
        struct rm_work *w = xcalloc(1, sizeof(*w));

        w->req.data = w;
        w->path = xstrdup(path);
        w->cb = cb;
        w->ctx = ctx;
        uv_queue_work(sing.loop, &w->req, rm_work_cb, rm_after_cb);
}
