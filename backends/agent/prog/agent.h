/* agent.h — internal to sandboxd-agent (backends/agent/prog/): a static, libc-only program
 * that runs the execs of one sandbox for the daemon over one byte stream (wire format:
 * backends/agent/proto.h). Single-threaded poll() loop; SIGCHLD arrives on a signalfd.
 *
 * Modules: main.c (options, modes, the loop), chan.c (the daemon's connection: stuffing,
 * framing, authentication, HELLO, the message table), exec.c (spawning, child I/O, resume, exit,
 * kill), spool.c (per-stream output retention: memory, then an unlinked file), tree.c (process
 * trees from /proc, cgroup OOM counters). */
#ifndef SANDBOXD_AGENT_PROG_H
#define SANDBOXD_AGENT_PROG_H

#include <sys/types.h>
#include <sys/uio.h>

#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/agent/proto.h"

#define AGENT_MAX_EXECS    4096 /* running, or ended and not yet forgotten */
#define AGENT_MAX_KILLS    4096
#define AGENT_MAX_ENV      8192
#define AGENT_OUTQ_HIGH    (1u << 20) /* stop producing messages above this */
#define AGENT_DRAIN_MS     250
#define AGENT_KILL_STEP_MS 50
#define AGENT_KILL_HARD_MS 2000
#define AGENT_AUTH_MS      10000 /* a detached agent's connection must authenticate by then */
#define AGENT_READ_CHUNK   (256u << 10) /* largest read from a child; its pipe's first size */
#define AGENT_PIPE_BULK    (1u << 20)   /* a child's pipe after AGENT_READ_CHUNK of output */
#define AGENT_SETTLE_US    200          /* after a read emptied a child's pipe, wait this long */

struct agent_buf {
        unsigned char *data;
        size_t off, len, cap;
};

/* Command-line options (main.c). */
struct agent_opts {
        const char *runtime_dir; /* spool files, the socket's lock; NULL: memory only */
        const char *socket;      /* --detach / --connect: the Unix socket */
        uint64_t spool_mem;      /* bytes of output kept in memory, all execs */
        uint64_t exec_quota;     /* unacknowledged output per exec before reading stops */
        uint64_t agent_quota;    /* the same for all execs together */
        int64_t linger_ms;       /* detached: exit after this long with no session and no exec */
        int bridge;              /* --detach --bridge: the starting process stays as a bridge */
        unsigned char secret[64];
        size_t secret_len; /* 0: no authentication (stdio) */
};

extern struct agent_opts agent_opts;

/* ---- the program (main.c) ---- */
/* Parses argv and runs the agent: never returns. Called once per process, by main (entry.c) or
 * by sandboxd-nsbox's PID 1 instead of an exec (environ is the agent's then). */
int agent_main(int argc, char **argv);

/* ---- util (main.c) ---- */
void *agent_realloc(void *p, size_t n);
int64_t agent_now_ms(void);
int64_t agent_now_us(void);
size_t agent_buf_used(const struct agent_buf *b);
void agent_buf_reserve(struct agent_buf *b, size_t more);
void agent_buf_free(struct agent_buf *b);
void agent_close(int *fd);
void agent_set_nonblock(int fd);
void agent_mkdir_p(const char *path, size_t len);
void agent_random(void *p, size_t n);

/* ---- the daemon's connection (chan.c) ---- */
/* Queues a message (payload a then b) on the current session; dropped when there is none. */
void agent_send(uint32_t id, enum agent_msg type, const void *a, size_t alen, const void *b,
                size_t blen);
void agent_send32(uint32_t id, enum agent_msg type, uint32_t v);
/* Reserves room for a message of len payload bytes and returns where the payload goes (NULL
 * without a session); agent_send_commit(len) then queues it. */
unsigned char *agent_send_begin(uint32_t id, enum agent_msg type, size_t len);
void agent_send_commit(size_t len);
/* Sends a message whose payload is pre then the iovecs (n bytes in all), which point into
 * memory left unchanged until the daemon acknowledges it (the spool's): written at once when
 * nothing is queued, the rest queued; on a pipe the iovecs' pages are vmspliced (no copy).
 * 0; -1 without a session; 1 when the pipe is full (nothing queued: try after POLLOUT). */
int agent_send_iov(uint32_t id, enum agent_msg type, const void *pre, size_t prelen,
                   const struct iovec *iov, int niov, size_t n);
/* Bytes queued for the daemon (0 without a session). */
size_t agent_outq(void);
/* Whether a session is on (HELLO done) and may carry exec messages. */
int agent_session_on(void);
/* Ends the session with ERROR why (stdio: ignore input to the next SYNC; socket: close). */
void agent_chan_error(const char *why);
/* Adds the connection's fds to the poll set; handles their events; flushes output. */
void agent_chan_poll(struct pollfd *pfd, size_t *n);
void agent_chan_handle(const struct pollfd *pfd, size_t n);
int agent_chan_flush(void);
/* Sets up stdio (fd 0/1) or a listening socket (detached). */
void agent_chan_init_stdio(void);
void agent_chan_init_listen(int lfd);
/* Ms until the earliest connection deadline (or timeout); drops expired ones. */
int agent_chan_tick(int timeout, int64_t now);
/* Whether a session has been on within linger (detached mode). */
int64_t agent_chan_last_session(void);

/* ---- execs (exec.c) ---- */
const char *agent_on_start(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_stdin(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_eof(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_kill(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_ack(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_resize(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_resume(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_resume_end(uint32_t id, const unsigned char *p, uint32_t len);
const char *agent_on_forget(uint32_t id, const unsigned char *p, uint32_t len);
/* A new session began (or the last one ended): no exec is bound to an id any more. */
void agent_exec_unbind_all(void);
/* SIGKILLs every exec's tree and forgets every exec. */
void agent_exec_kill_all(void);
/* Reaps children (SIGCHLD). */
void agent_exec_reap(void);
/* Poll set of the children's fds; their events. */
void agent_exec_poll(struct pollfd *pfd, void **slots, size_t *n);
void agent_exec_handle(const struct pollfd *pfd, void *const *slots, size_t n);
/* Periodic work: drains, exits, output to send, kills; returns the poll timeout. */
int agent_exec_tick(int timeout, int64_t now);
/* Microseconds until a settling child's pipe is read again (-1: none settles). */
int64_t agent_exec_settle_us(int64_t now_us);
size_t agent_exec_count(void);
void agent_exec_init(void);
struct rlimit;
void agent_exec_set_nofile(const struct rlimit *rl);

/* ---- spool (spool.c): one stream's retained output, offsets [head, total) ---- */
struct agent_seg; /* a block of the memory tier */
struct agent_spool {
        uint64_t head, total;
        struct agent_seg *first, *last; /* bytes [head, head + mem) from first->data + skip */
        size_t skip;
        uint64_t mem;
        int fd;         /* unlinked file for the rest, -1 until needed */
        int in_file;    /* bytes [head + mem, total) are in the file */
        uint64_t fbase; /* stream offset of the file's byte 0 */
};
void agent_spool_init(struct agent_spool *s);
void agent_spool_free(struct agent_spool *s);
/* Appends len bytes; -1 with errno when the file tier fails (nothing is appended then). */
int agent_spool_append(struct agent_spool *s, const void *data, size_t len);
/* Reading straight into memory: room at the end of the memory tier (*room bytes, NULL when
 * the bytes would not go there: the budget is spent, or older bytes are in the file), then
 * agent_spool_commit of what was read into it. */
unsigned char *agent_spool_tail(struct agent_spool *s, size_t *room);
void agent_spool_commit(struct agent_spool *s, size_t n);
/* Copies n bytes from offset off (head <= off, off + n <= total) to dst; -1 on a read error. */
int agent_spool_copy(const struct agent_spool *s, uint64_t off, void *dst, size_t n);
/* Drops everything before off (head <= off <= total). */
void agent_spool_trim(struct agent_spool *s, uint64_t off);
/* The memory holding [off, off + n) as at most max iovecs; -1 when it is not all in memory. */
struct iovec;
int agent_spool_iov(const struct agent_spool *s, uint64_t off, size_t n, struct iovec *iov,
                    int max);
/* Bytes retained by every spool. */
uint64_t agent_spool_retained(void);

/* ---- process trees and cgroups (tree.c) ---- */
#define AGENT_MAX_SEEN 4096
struct agent_pids {
        pid_t *pids; /* AGENT_MAX_SEEN of them, sorted */
        size_t n;
};
int agent_sid_ok(pid_t sid);
/* Sends sig (0: none) to the trees of sessions sids (sorted); returns how many were alive. */
uint32_t agent_tree_signal(const pid_t *sids, size_t nsids, int sig);
uint32_t agent_sid_signal(pid_t sid, int sig);
uint32_t agent_tree_track(pid_t sid, struct agent_pids *seen, int sig);
int agent_pid_cmp(const void *a, const void *b);
/* oom.c. The oom_kill counter file of pid's memory cgroup (new string), or NULL. */
char *agent_cgroup_events(pid_t pid);
/* The same below root (a cgroup2 or v1 mount point) instead of /sys/fs/cgroup. */
char *agent_cgroup_events_at(const char *root, pid_t pid);
/* The memory cgroup in a /proc/PID/cgroup text (modified): into path, *v1 set for cgroup v1's
 * memory controller; 0, or -1 when there is none. */
int agent_cgroup_parse(char *text, char *path, size_t n, int *v1);
/* The oom_kill count in path (0 when unreadable). */
uint64_t agent_oom_count(const char *path);

#endif
