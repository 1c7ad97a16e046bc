/* helper_daemon.h — a real sandboxd for the benchmarks: started on a private socket and state
 * directory (READY=1 on a notify socket, no sleeps), one blocking JSON-RPC call at a time.
 * Linked into every bench binary. */
#ifndef SANDBOXD_BENCH_HELPER_DAEMON_H
#define SANDBOXD_BENCH_HELPER_DAEMON_H

#include <sys/types.h>

#include <jansson.h>

#include "protocol/util.h"

struct bd {
        pid_t pid;
        int fd;
        char dir[64];
        char sock[96];
        struct buf in;
        int id;
};

/* Starts $SANDBOXD_BIN (default build/std/sandboxd) with this configuration text and extra
 * environment ("K=V", NULL-terminated, may be NULL); 0 once connected, or -1. */
int bd_start(struct bd *d, const char *config, char *const *env);
/* One request; its result (new) or NULL on an error answer (printed). Notifications skipped. */
json_t *bd_call(struct bd *d, const char *method, json_t *params /* steals */);
/* SIGTERM, wait, remove the directory. */
void bd_stop(struct bd *d);
/* The median of n values (sorts v). */
double bd_median(double *v, int n);

#endif
