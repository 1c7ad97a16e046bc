/* daytona_exec.h — private to daytona_exec.c (the exec's main flow) and daytona_ctl.c (kill,
 * signal and stdin of a running exec). Loop thread only.
 */
#ifndef SANDBOXD_DAYTONA_EXEC_H
#define SANDBOXD_DAYTONA_EXEC_H

#include "backends/daytona/daytona_cmd.h"
#include "backends/daytona/daytona_int.h"
#include "backends/daytona/daytona_log.h"
#include "backends/daytona/daytona_ws.h"

#define EX_POSTS 3 /* POSTs of one exec (after unclear answers) */

enum ex_phase {
        EX_PREP,    /* sandbox awake, stdin uploaded, a session: before the POST */
        EX_POSTING, /* POST …/exec, or looking for the command after an unclear answer */
        EX_STREAM,  /* the command runs: following its log */
        EX_DONE,    /* on_exit delivered */
};

struct daytona_proc {
        struct backend_proc base;   /* what the daemon holds: ops = daytona_proc_ops */
        struct list link;           /* in the list of live execs */
        struct backend_sandbox *sb; /* referenced */
        struct backend_exec_cbs cbs;
        void *ctx;
        char *exec_id;
        char nonce[DAYTONA_NONCE_LEN + 1];
        char *command; /* the session command text */
        char *pidfile;
        char *argv0, *cwd; /* for error messages */
        enum daytona_stdin in;
        struct buf stdin_file; /* DAYTONA_STDIN_FILE: uploaded to <pidfile>.in */
        bool stdin_sent;
        enum ex_phase phase;
        struct daytona_session *session;
        struct daytona_session_req *session_req; /* a session being made for it */
        bool session_bad;                        /* give it back as unusable */
        char *cmd_id;
        char *dup_id; /* a second start of it (ignored) */
        unsigned posts;
        char *posted_in[EX_POSTS + 1]; /* the sessions it was posted to, NULL-terminated */
        bool unclear;                  /* a POST had no clear answer: it may have started */
        struct daytona_call *call;     /* the main flow's call in flight */
        struct daytona_ws *ws;
        struct daytona_log log;
        uint64_t consumed; /* log bytes read */
        uint64_t skip;     /* bytes of a replay still to skip */
        unsigned ws_tries;
        uv_timer_t timer; /* kick-off and reconnect delays; its close frees p */
        bool woke;        /* the sandbox was checked (and started) once for this exec */
        struct daytona_wait wait;
        bool waiting;
        bool paused;
        struct exec_exit ex;
        struct sbx_error fail;
        char *lost; /* ex.lost */
        /* exec_adopt: an exec of a previous daemon, found in the sandbox by its nonce */
        bool adopted;
        bool adopting;        /* still looking for it (counted in sb->adopting) */
        uint64_t skip_out[2]; /* output the daemon has already, per stream */
        /* daytona_ctl.c */
        int signalled;       /* the last signal sent to the tree */
        int pending_sig;     /* asked for before the command was posted */
        struct list kills;   /* kill requests waiting for the command to be posted */
        struct list killing; /* tree kills sent and not answered yet */
        bool end_wait;       /* the command ended: its end waits for those answers */
        struct list inq;     /* stdin relay lines not yet sent */
        size_t in_bytes;
        uint64_t in_seq; /* the last relay line's number */
        bool eof_queued;
        struct daytona_call *in_call;
};

/* daytona_exec.c */
void daytona_exec_output(void *ctx, int stream, const char *data, size_t len);
void daytona_exec_find(struct daytona_proc *p);
void daytona_exec_toolbox_failed(struct daytona_proc *p, const char *what,
                                 const struct daytona_res *res);
bool daytona_exec_done(const struct daytona_proc *p);
void daytona_exec_cancel(struct daytona_proc *p);
/* The last tree kill of an exec whose command had ended (end_wait) was answered. */
void daytona_exec_killed(struct daytona_proc *p);

/* daytona_ctl.c */
void daytona_ctl_init(struct daytona_proc *p, const struct exec_spec *spec);
/* The command is posted: pending signals, kills and stdin go out. */
void daytona_ctl_started(struct daytona_proc *p);
/* The exec ended: kills that never went out are answered, stdin is dropped. */
void daytona_ctl_ended(struct daytona_proc *p);
/* Whether a tree kill (TERM, grace, KILL) of the exec is under way in the sandbox. */
bool daytona_ctl_killing(const struct daytona_proc *p);
void daytona_ctl_free(struct daytona_proc *p);

#endif
