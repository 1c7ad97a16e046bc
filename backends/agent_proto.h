/* agent_proto.h — the wire format between the daemon and sandboxd-agent.
 *
 * sandboxd-agent (backends/agent/agent.c) is a small static program that runs as a docker
 * sandbox's main process (under Docker's --init). The daemon attaches once to the container's
 * stdin/stdout (POST /containers/{id}/attach, hijacked) and drives every exec of the sandbox
 * through that one stream, so an exec costs no `runc exec`. Shared by both sides; no
 * dependencies beyond <stdint.h>.
 *
 * Every message, both ways, is a 12-byte header followed by len payload bytes:
 *
 *     u32 len | u32 id | u8 type | u8 0 | u8 0 | u8 0          (little-endian)
 *
 * id names an exec (chosen by the daemon, never 0) or 0 for the channel itself. Strings in a
 * payload are NUL-terminated. The agent's messages reach the daemon inside Docker's own 8-byte
 * stdout frames; the agent never writes to stderr after start-up.
 *
 * Flow control: the agent sends at most the window given in START plus every CREDIT of output
 * bytes for an exec (payload bytes of OUT messages); the daemon sends at most AGENT_STDIN_WINDOW
 * unacknowledged STDIN bytes per exec. Neither side can make the other buffer without bound.
 */
#ifndef SANDBOXD_AGENT_PROTO_H
#define SANDBOXD_AGENT_PROTO_H

#include <stdint.h>

#define AGENT_PROTO_VERSION 1u
#define AGENT_HDR_LEN       12u
#define AGENT_MAX_PAYLOAD   (1u << 20)   /* larger is a protocol error */
#define AGENT_OUT_CHUNK     (64u << 10)  /* the agent's largest OUT payload */
#define AGENT_OUT_WINDOW    (256u << 10) /* initial output credit per exec */
#define AGENT_STDIN_WINDOW  (256u << 10)
#define AGENT_MAX_STATE     (AGENT_MAX_PAYLOAD - 8) /* largest shell state sent back in EXIT */
#define AGENT_NONCE_LEN     16u
#define AGENT_PATH          "/.sandboxd/agent" /* where the daemon mounts the binary */

enum agent_msg {
        /* daemon -> agent */
        AGENT_HELLO = 1,  /* id 0; u32 version, nonce[AGENT_NONCE_LEN]. Kills every exec of an
                             earlier session. */
        AGENT_START = 2,  /* see below */
        AGENT_STDIN = 3,  /* bytes for the exec's stdin */
        AGENT_EOF = 4,    /* close stdin once the queued bytes are written */
        AGENT_KILL = 5,   /* u32 sid, u32 sig, u32 grace_ms, u32 mode (AGENT_KILL_*) */
        AGENT_CREDIT = 6, /* u32 more output bytes the agent may send */
        AGENT_RESIZE = 7, /* u16 rows, u16 cols */

        /* agent -> daemon */
        AGENT_READY = 64,   /* id 0; u32 version, u32 agent pid (in the container), the HELLO's
                               nonce. After a reattach the stream may begin with the rest of an
                               earlier session's output, even mid-message: the daemon skips to
                               the READY that echoes its nonce, which nothing in the container
                               can know (the agent's stdin is unreadable there). */
        AGENT_STARTED = 65, /* u32 pid (= session id of the exec's tree) */
        AGENT_FAILED = 66,  /* u32 errno, string step ("chdir", "exec", "fork", "pty", …)
                               — the exec never ran; nothing else follows for this id */
        AGENT_STDOUT = 67,  /* output bytes */
        AGENT_STDERR = 68,
        AGENT_ACK = 69,    /* u32 stdin bytes written to the child since the last ACK */
        AGENT_EXIT = 70,   /* i32 wait status, u32 flags (AGENT_EXIT_*), then the state file's
                              bytes; the last message of an exec, after all its output */
        AGENT_KILLED = 71, /* u32 processes of the tree still alive (AGENT_KILL_WAIT only) */
        AGENT_ERROR = 72,  /* id 0; string. A protocol error; the agent exits after it. */
};

/* START payload: u32 flags, u16 rows, u16 cols, u32 argc, u32 envc, then NUL-terminated:
 * cwd ("" = the agent's), state path ("" = none), argv[argc], env[envc] ("K=V", laid over the
 * agent's own environment, as `docker exec -e` does). */
enum agent_start_flags {
        AGENT_START_TTY = 1u,   /* run on a new pty (stdout only; stdin via the pty) */
        AGENT_START_STDIN = 2u, /* give the child a stdin pipe (else /dev/null) */
        AGENT_START_MERGE = 4u, /* stderr into the stdout stream */
};

enum agent_kill_mode {
        AGENT_KILL_SIGNAL = 0, /* send sig to the tree once, no answer */
        AGENT_KILL_WAIT = 1,   /* sig, up to grace_ms for the tree to go, then SIGKILL; KILLED */
};

enum agent_exit_flags {
        AGENT_EXIT_OOM = 1u, /* the container's oom_kill count rose while the exec ran */
};

/* Header access, independent of host byte order. */
static inline void
agent_put32(unsigned char *p, uint32_t v)
{
        p[0] = (unsigned char) v;
        p[1] = (unsigned char) (v >> 8);
        p[2] = (unsigned char) (v >> 16);
        p[3] = (unsigned char) (v >> 24);
}

static inline uint32_t
agent_get32(const unsigned char *p)
{
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
               (uint32_t) p[3] << 24;
}

static inline void
agent_put16(unsigned char *p, uint16_t v)
{
        p[0] = (unsigned char) v;
        p[1] = (unsigned char) (v >> 8);
}

static inline uint16_t
agent_get16(const unsigned char *p)
{
        return (uint16_t) (p[0] | p[1] << 8);
}

/* Writes a header for a message of len payload bytes. */
static inline void
agent_hdr(unsigned char h[AGENT_HDR_LEN], uint32_t len, uint32_t id, enum agent_msg type)
{
        agent_put32(h, len);
        agent_put32(h + 4, id);
        h[8] = (unsigned char) type;
        h[9] = h[10] = h[11] = 0;
}

#endif
