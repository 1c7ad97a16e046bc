/* modal_rpc.h — calls to Modal's control plane and to a task's command router, with the
 * credentials, short-lived tokens and retries Modal's clients use.
 *
 * Control plane (modal.client.ModalClient at the server URL): every call carries
 * x-modal-client-type/-version and x-modal-token-id/-secret, and every call but AuthTokenGet
 * the short-lived x-modal-auth-token. That token (a JWT) is fetched on first use, refreshed in
 * the background half-way through its life, and fetched again when a call comes back
 * UNAUTHENTICATED (once per call). Command router (modal.task_command_router.TaskCommandRouter
 * at the URL TaskGetCommandRouterAccess returns): "authorization: Bearer <jwt>", the same
 * refresh rules, and plain http only when the server URL itself is on localhost.
 *
 * Unary calls are retried on transient failures (the link, UNAVAILABLE) with exponential
 * backoff and one x-idempotency-key per logical call; streams are retried only before their
 * first message (afterwards the caller resumes by offset). Status messages from the server
 * have every secret of the channel replaced by "[redacted]" before anyone sees them.
 *
 * Loop thread only. Callbacks never run inside the call that starts an rpc.
 */
#ifndef SANDBOXD_MODAL_RPC_H
#define SANDBOXD_MODAL_RPC_H

#include <stddef.h>
#include <uv.h>

#include "backends/http.h"
#include "backends/modal/modal_grpc.h"
#include "protocol/util.h"

struct modal_api;
struct modal_router;
struct modal_rpc;

/* A stream's message (borrowed). */
typedef void (*modal_msg_cb)(void *ctx, const unsigned char *msg, size_t len);
/* The end of an rpc: st (borrowed); for unary calls msg is the reply (borrowed, NULL unless
 * st->code is OK). The rpc is gone after it returns. */
typedef void (*modal_end_cb)(void *ctx, const struct grpc_status *st, const unsigned char *msg,
                             size_t len);

/* A control-plane client (new, refcount 1). The strings are copied; secrets stay inside. */
struct modal_api *modal_api_new(uv_loop_t *loop, struct http_multi *m, const char *server_url,
                                const char *token_id, const char *token_secret,
                                const char *client_version);
void modal_api_ref(struct modal_api *a);
/* Drops a reference; the last one needs no rpc left on it (owners cancel theirs first). */
void modal_api_unref(struct modal_api *a);
const char *modal_api_url(const struct modal_api *a);
/* Whether this client uses these credentials and URL. */
bool modal_api_same(const struct modal_api *a, const char *url, const char *token_id,
                    const char *token_secret);

/* One task's command router (new); access is fetched on first use. Free cancels nothing:
 * its rpcs must be finished or cancelled. */
struct modal_router *modal_router_new(struct modal_api *a, const char *task_id);
void modal_router_free(struct modal_router *r);

/* Starts an rpc; method is the bare name ("SandboxCreate"). req is copied. */
struct modal_rpc *modal_api_unary(struct modal_api *a, const char *method, const struct buf *req,
                                  long timeout_ms, modal_end_cb cb, void *ctx);
struct modal_rpc *modal_api_stream(struct modal_api *a, const char *method, const struct buf *req,
                                   long timeout_ms, modal_msg_cb on_msg, modal_end_cb on_end,
                                   void *ctx);
struct modal_rpc *modal_router_unary(struct modal_router *r, const char *method,
                                     const struct buf *req, long timeout_ms, modal_end_cb cb,
                                     void *ctx);
struct modal_rpc *modal_router_stream(struct modal_router *r, const char *method,
                                      const struct buf *req, modal_msg_cb on_msg,
                                      modal_end_cb on_end, void *ctx);
/* Cancels: no callback follows. Safe from inside on_msg. NULL is fine. */
void modal_rpc_cancel(struct modal_rpc *r);
void modal_rpc_pause(struct modal_rpc *r);
void modal_rpc_resume(struct modal_rpc *r);

/* Daemon shutdown: every rpc in flight ends now with UNAVAILABLE "the daemon is shutting
 * down" (callbacks run), and later ones end so at once. */
void modal_rpc_shutdown(void);
/* Whether shutdown began (nothing may be retried any more). */
bool modal_rpc_stopping(void);

/* Seconds since the epoch of a JWT's exp claim, or 0 when it has none (no verification). */
double modal_jwt_exp(const char *jwt);

#endif
