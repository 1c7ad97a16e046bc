/* remote_file.h — file.read / file.write for backends that reach a sandbox only through "run
 * this argv there and collect its stdout" (a helper exec: modal, singularity, ssh): the remote_sh.h
 * programs, run through the backend's own helper. Paths are the sandbox's, so judge gets the
 * requested path. Loop thread only.
 */
#ifndef SANDBOXD_REMOTE_FILE_H
#define SANDBOXD_REMOTE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "backends/backend.h"
#include "protocol/error.h"

/* A helper's end: its exit code and stdout (borrowed), or err when it could not run. */
typedef void (*remote_file_helper_cb)(void *ctx, int exit_code, const char *out, size_t len,
                                      const struct sbx_error *err);

/* What a backend lends: its helper exec, and a reference on its sandbox for the op's life. */
struct remote_file_ops {
        void (*helper)(void *sb, char *const *argv, const void *in, size_t inlen, void *ctx,
                       remote_file_helper_cb cb);
        void (*ref)(void *sb);
        void (*unref)(void *sb);
};

/* Reads up to max bytes from offset (backend_ops.file_read). */
void remote_file_read(const struct remote_file_ops *ops, void *sb, const char *path,
                      uint64_t offset, size_t max, void *ctx, backend_judge_fn judge,
                      backend_read_cb cb);
/* Writes a file (backend_ops.file_write); w's data is copied at the call. */
void remote_file_write(const struct remote_file_ops *ops, void *sb,
                       const struct backend_file_write *w, void *ctx, backend_judge_fn judge,
                       backend_done_cb cb);

/* Defines PREFIX_file_read and PREFIX_file_write, the backend_ops entries of a backend whose
 * file ops are these, over its struct remote_file_ops OPS. */
#define REMOTE_FILE_ENTRIES(prefix, ops)                                                           \
        static void prefix##_file_read(struct backend_sandbox *sb, const char *path,               \
                                       uint64_t offset, size_t max_bytes, void *ctx,               \
                                       backend_judge_fn judge, backend_read_cb cb)                 \
        {                                                                                          \
                remote_file_read(&(ops), sb, path, offset, max_bytes, ctx, judge, cb);             \
        }                                                                                          \
        static void prefix##_file_write(struct backend_sandbox *sb,                                \
                                        const struct backend_file_write *w, void *ctx,             \
                                        backend_judge_fn judge, backend_done_cb cb)                \
        {                                                                                          \
                remote_file_write(&(ops), sb, w, ctx, judge, cb);                                  \
        }

#endif
