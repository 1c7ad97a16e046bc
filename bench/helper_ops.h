/* helper_ops.h — a backend's ops driven from a benchmark: one loop, and blocking create,
 * destroy and exec. Linked into every bench binary. */
#ifndef SANDBOXD_BENCH_HELPER_OPS_H
#define SANDBOXD_BENCH_HELPER_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "backends/backend.h"

extern uv_loop_t bo_loop;

/* Runs bo_loop until *flag. */
void bo_run_until(const bool *flag);
/* ops->create of s, waited for; the sandbox, or NULL (the error printed). */
struct backend_sandbox *bo_create(const struct backend_ops *ops, const struct sandbox_spec *s);
/* ops->destroy, waited for. */
void bo_destroy(const struct backend_ops *ops, struct backend_sandbox *sb);
/* One exec of argv (envp may be NULL) in sb, waited for; its round trip in ns. Exits on an
 * error. i makes its exec id. */
uint64_t bo_exec(const struct backend_ops *ops, struct backend_sandbox *sb, char *const *argv,
                 char *const *envp, int i);

#endif
