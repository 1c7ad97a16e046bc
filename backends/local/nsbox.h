/* nsbox.h — namespace-isolated local sandboxes (isolation "namespaces"; docs/backends/local.md),
 * the daemon's side.
 *
 * One set of namespaces per sandbox — user, mount, pid, ipc, uts and (network "none") net —
 * whose PID 1 is the agent (sandboxd-agent's code, linked into sandboxd-nsbox), driven by the
 * daemon over a socketpair on the agent's stdin/stdout with the session of
 * backends/agent/session.h: an exec is a fork inside the sandbox's namespaces, not a new set
 * of them. The daemon computes what the sandbox sees (a
 * plan, nsbox_plan.c), clones into the namespaces, and the clone runs sandboxd-nsbox
 * (backends/local/init/), which builds the mount tree as the caller, drops every capability,
 * applies no_new_privs, Landlock and seccomp, and becomes the agent.
 *
 * Files: nsbox.c (start, the session, the end), nsbox_plan.c (the plan), nsbox_probe.c (what
 * this kernel allows), nsbox_enter.c (entering a sandbox's view, for file ops). Loop thread
 * only, except nsbox_enter (a forked helper).
 */
#ifndef SANDBOXD_LOCAL_NSBOX_H
#define SANDBOXD_LOCAL_NSBOX_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "backends/backend.h"
#include "backends/local/init/nsinit.h"
#include "backends/spawn.h"
#include "protocol/error.h"

/* What [backend.local] says about isolated sandboxes (docs/configuration.md). */
struct nsbox_config {
        char **hidden;    /* hidden in every sandbox ("~/" = the caller's home); NULL-ended */
        char **writable;  /* host paths writable in every sandbox, when they exist */
        char **home_ro;   /* files of the caller's real home shown read-only in its own */
        char *tmpfs_size; /* size= of /tmp, /var/tmp, /dev/shm and the home */
        char **cover;     /* directories hidden under an empty tmpfs: other users' homes, the
                             daemon's state and socket directories */
};

/* One sandbox to start. */
struct nsbox_request {
        const struct sandbox_spec *spec;
        const char *workdir; /* host path, absolute */
        const char *inside;  /* where it shows in the sandbox; NULL: at the same path */
        bool network_host;
        const struct spawn_limits *limits; /* may be NULL */
        const char *const *cgroup_procs;   /* cgroup.procs files its PID 1 joins; may be NULL */
};

/* ---- nsbox_plan.c ---- */
/* Fills p (zeroed here) for req under cfg; 0, or -1 with err set. */
int nsbox_plan_build(struct nsinit_plan *p, const struct nsbox_request *req,
                     const struct nsbox_config *cfg, struct sbx_error *err);
/* A report of sandboxd-nsbox as an error naming the step and the path it was at (-32602 for
 * the caller's workdir, -32005 otherwise). */
void nsbox_plan_error(const struct nsinit_plan *p, const struct nsinit_msg *r,
                      struct sbx_error *err);
/* The error for a workdir or writable path (param) that nsinit_place refused (its answer). */
void nsbox_place_error(const char *param, const char *path, int place, struct sbx_error *err);
/* The writable paths of a plan as the sandbox sees them (new array), for details. */
json_t *nsbox_plan_writable(const struct nsinit_plan *p);

/* ---- nsbox_probe.c ---- */
/* Whether this kernel and this daemon can make namespace sandboxes (a real test clone, once);
 * details is a new object (user namespaces, Landlock ABI, seccomp, …), reason and hint say
 * why not (borrowed, static). */
bool nsbox_probe(json_t **details, const char **reason, const char **hint);

/* ---- nsbox_enter.c ---- */
/* Enters a sandbox's namespaces (userns, mntns: fds) and becomes who inside it with no
 * capability, for helpers acting in the sandbox's view (file ops). 0 or errno.
 * Async-signal-safe. */
int nsbox_enter(int userns, int mntns, const struct backend_identity *who, bool set_groups);

/* ---- nsbox.c ---- */
struct nsbox;
typedef void (*nsbox_ready_cb)(void *ctx, struct nsbox *nb, const struct sbx_error *err);
/* Reads the configuration, finds sandboxd-nsbox (the "nsbox" key, else next to sandboxd, else
 * SANDBOXD_LIBEXECDIR). 0, or -1 with err for a bad configuration; a missing program only
 * makes the probe say so. */
int nsbox_init(uv_loop_t *loop, json_t *config, struct sbx_error *err);
/* Why namespace sandboxes cannot be made here (NULL: they can), and what to do. */
const char *nsbox_unavailable(const char **hint);
/* backend.list details about isolation (new object). */
json_t *nsbox_details(void);
/* Starts a sandbox; cb once its agent is READY (the create may go on), or with why not. The
 * sandbox starting (borrowed, for nsbox_cancel until cb), or NULL when cb came already. */
struct nsbox *nsbox_start(const struct nsbox_request *req, nsbox_ready_cb cb, void *ctx);
/* Abandons a start whose cb has not come: that cb never comes; every process started for it
 * is killed, cb once reaped. nb is freed. */
void nsbox_cancel(struct nsbox *nb, void (*cb)(void *ctx), void *ctx);
/* Ends it: every process in it dies with its PID 1; cb once that one is reaped. nb is freed. */
void nsbox_stop(struct nsbox *nb, void (*cb)(void *ctx), void *ctx);
/* The session of its agent (borrowed). */
struct agent_session *nsbox_session(struct nsbox *nb);
/* Where it is, for file ops (nsbox_enter; -1 once gone) and for details. */
int nsbox_userns(const struct nsbox *nb);
int nsbox_mntns(const struct nsbox *nb);
json_t *nsbox_info(const struct nsbox *nb); /* new: {pid, writable, network, …} */
/* A child reaped by the SIGCHLD handler: true when it was a sandbox's PID 1 (then handled). */
bool nsbox_reaped(pid_t pid, int status);
/* The owner's upcalls, from create on (link states of the agent's session). */
void nsbox_set_upcalls(struct nsbox *nb, const struct backend_upcalls *up, void *up_ctx);
/* Daemon shutdown: frees what is left (the sandboxes' processes died with the links). */
void nsbox_shutdown(void);

#endif
