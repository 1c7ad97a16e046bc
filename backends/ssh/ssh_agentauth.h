/* ssh_agentauth.h — the part of ssh-agent authentication that talks to the agent, blocking,
 * on a worker thread (ssh_conn.c runs it with uv_queue_work while the loop leaves the session
 * alone).
 *
 * libssh's agent code (0.10, src/agent.c) does blocking reads on the agent socket and, on
 * EAGAIN, polls it without a timeout: a stalled agent would hold the thread for ever. The
 * loop therefore ends a stalled attempt itself when the connect timeout fires, with
 * shutdown() on the socket (a blocked recv returns at once); SO_RCVTIMEO and SO_SNDTIMEO bound
 * this module's own reads and writes. Nothing the agent says (keys, comments, signatures) is
 * logged or kept.
 */
#ifndef SANDBOXD_SSH_AGENTAUTH_H
#define SANDBOXD_SSH_AGENTAUTH_H

/* Gives fd receive and send timeouts of timeout_ms. */
void ssh_agentauth_timeouts(int fd, unsigned timeout_ms);

/* Worker thread: how many keys the agent at fd holds (>= 0), or -errno: -ETIMEDOUT when it
 * did not answer in time, -EPIPE when it closed the connection, -EPROTO when the answer is
 * not an agent's. */
int ssh_agentauth_count(int fd);

#endif
