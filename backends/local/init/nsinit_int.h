/* nsinit_int.h — internal to sandboxd-nsbox (backends/local/init/): main.c (the plan, the
 * exec of the agent), setup.c (identity, mount tree, capabilities), filter.c (no_new_privs,
 * Landlock, seccomp). Single-threaded; exits on any failure with a report (nsinit.h). */
#ifndef SANDBOXD_LOCAL_INIT_NSINIT_INT_H
#define SANDBOXD_LOCAL_INIT_NSINIT_INT_H

#include "backends/local/init/nsinit.h"

/* The string at pool offset off ("" for 0; the plan was checked by main.c). */
static inline const char *
nsinit_str(const struct nsinit_plan *p, uint32_t off)
{
        return off ? p->pool + off : "";
}

/* Writes a report to NSINIT_FD_REPORT and exits 127. */
_Noreturn void nsinit_fail(int step, int err, int index);
/* setup.c: everything up to the filters. */
void nsinit_setup(const struct nsinit_plan *p);
/* filter.c: no_new_privs, Landlock on the plan's writable directories, seccomp. */
void nsinit_filters(const struct nsinit_plan *p);

#endif
