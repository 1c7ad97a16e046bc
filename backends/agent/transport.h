/* transport.h — a byte stream to a sandboxd-agent, whatever carries it.
 *
 * The session (session.h) needs only this: send bytes, be told of bytes and of the end, stop
 * and restart reading, close. A provider is a few dozen lines over its stream; this file's
 * providers are a pair of fds (pipes, a socketpair, a connected socket), a spawned command's
 * stdin/stdout (`apptainer exec … sandboxd-agent`, `kubectl exec -i`, `ssh host
 * sandboxd-agent --connect SOCK`) and a Unix socket; the docker backend adds a container's
 * attach stream (backends/docker/docker_attach.c), a libssh channel or a WebSocket would be
 * the same.
 *
 * Contract, loop thread only:
 * - A provider hands out an open transport through an agent_connect_cb (or returns it).
 * - Nothing is delivered before start(). on_data gets the bytes in order (borrowed for the
 *   call); on_end is called at most once, when the stream ended by itself (error NULL: a clean
 *   EOF), and nothing follows it.
 * - send() copies; it never blocks and never fails visibly: a broken stream ends with on_end.
 *   queued() is what has not reached the kernel yet (the session's backpressure).
 * - close() is called exactly once by the user, also after on_end; no callback follows it and
 *   the provider frees the transport when its handles are closed.
 */
#ifndef SANDBOXD_AGENT_TRANSPORT_H
#define SANDBOXD_AGENT_TRANSPORT_H

#include <stddef.h>
#include <uv.h>

struct agent_transport;

/* The largest read of the fd transports (one shared buffer; also the bench's baseline). */
#define AGENT_TRANSPORT_READ (256u << 10)

struct agent_transport_cbs {
        void (*on_data)(void *ctx, const char *data, size_t len);
        void (*on_end)(void *ctx, const char *error);
};

struct agent_transport_ops {
        const char *kind; /* "pipe", "unix", "docker attach", … for messages */
        void (*start)(struct agent_transport *t, const struct agent_transport_cbs *cbs, void *ctx);
        void (*send)(struct agent_transport *t, const void *data, size_t len);
        size_t (*queued)(const struct agent_transport *t);
        void (*pause)(struct agent_transport *t);
        void (*resume)(struct agent_transport *t);
        void (*close)(struct agent_transport *t);
};

/* The head of every provider's transport. */
struct agent_transport {
        const struct agent_transport_ops *ops;
};

/* A provider's answer: an open transport (the user owns it), or why there is none. */
typedef void (*agent_connect_cb)(void *ctx, struct agent_transport *t, const char *error);

/* Over two fds (rfd == wfd for a socket); steals them. Open at once. */
struct agent_transport *agent_transport_fds(uv_loop_t *loop, int rfd, int wfd);
/* Spawns argv (envp complete: nothing is inherited) with its stdin and stdout as the stream;
 * its stderr (first 4 KiB) goes into the end's error message. close() SIGKILLs it. cb is
 * called before this returns when the spawn fails, else at once as well. */
void agent_transport_spawn(uv_loop_t *loop, char *const *argv, char *const *envp, void *ctx,
                           agent_connect_cb cb);
/* The same with first (copied: a secret's line for `sandboxd-agent --detach --bridge`) sent
 * before the session's bytes. */
void agent_transport_spawn_first(uv_loop_t *loop, char *const *argv, char *const *envp,
                                 const void *first, size_t len, void *ctx, agent_connect_cb cb);
/* Connects to the Unix socket at path; cb when connected or failed. */
void agent_transport_unix(uv_loop_t *loop, const char *path, void *ctx, agent_connect_cb cb);

/* The sandboxd-agent binary (new realpath, or NULL): next to the daemon's binary, in
 * PREFIX/libexec/sandboxd of the daemon's PREFIX, in SANDBOXD_LIBEXECDIR; *looked (new, may be
 * NULL) says where, for messages. */
char *agent_locate(char **looked);
/* The same for another of the daemon's helper programs (local: sandboxd-nsbox). */
char *agent_locate_named(const char *name, char **looked);
/* path as an executable regular file (new realpath), or NULL. */
char *agent_locate_file(const char *path);

#endif
