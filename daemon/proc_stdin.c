/* proc_stdin.c — process.write: stdin written now, or parked until the exec starts. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/methods.h"
#include "daemon/proc_int.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define PROC_MAX_PARKED 64 /* process.write requests held for an exec not started yet */

/* Writes data to p's stdin and answers req (both stolen: data is freed). */
static void
proc_write_now(struct proc *p, struct rpc_req *req, struct buf *data, bool eof)
{
        int r;

        if (p->state != PROC_RUNNING || p->stdin_closed) {
                buf_free(data);
                rpc_error_msg(req, SBX_E_STDIN_CLOSED,
                              "stdin of '%s' is not open (start the exec with 'stdin_open': "
                              "true; it closes after eof or when the process exits%s)",
                              p->id, p->state == PROC_FAILED ? "; this exec never started" : "");
                return;
        }
        r = p->bp->ops->write(p->bp, data->data, data->len, eof);
        if (eof)
                p->stdin_closed = true;
        if (r < 0) {
                buf_free(data);
                rpc_error_msg(req, SBX_E_STDIN_CLOSED, "stdin of '%s' is closed: %s", p->id,
                              strerror(-r));
                return;
        }
        rpc_result(req, json_pack("{s:I}", "written", (json_int_t) data->len));
        buf_free(data);
}

/* Holds a write for an exec with stdin_open that has not started yet (waiting for the shell,
 * for approval, for its sandbox): it is done, in order, once the exec runs. The writer's
 * answer waits, so a client that waits for answers before sending more stays paced. */
static void
proc_park_write(struct proc *p, struct rpc_req *req, struct buf *data, bool eof)
{
        struct sbx_error err = {0};
        struct conn_acct *acct = NULL;
        struct proc_parked *w;

        if (list_count(&p->parked) >= PROC_MAX_PARKED)
                sbx_error_limit(&err, "parked_writes", PROC_MAX_PARKED,
                                "limit reached: %d process.write requests already wait for '%s' "
                                "to start; wait for their answers before sending more",
                                PROC_MAX_PARKED, p->id);
        else if (!(acct = conn_charge(req->conn, data->len)))
                sbx_error_limit(&err, "max_input_bytes_per_uid",
                                (long long) g.config->max_input_bytes_per_uid,
                                "limit reached: this uid's process.write data waiting for execs "
                                "to start (and unfinished messages) would pass "
                                "max_input_bytes_per_uid; wait for the answers of earlier "
                                "writes before sending more");
        if (!acct) {
                buf_free(data);
                rpc_error(req, &err);
                return;
        }
        /* the decoded copy is what waits; the request's own text goes now */
        json_object_del(req->params, "data");
        json_object_del(req->params, "data_base64");
        w = xcalloc(1, sizeof(*w));
        w->req = req;
        w->data = *data;
        w->acct = acct;
        w->eof = eof;
        list_add_tail(&p->parked, &w->node);
}

/* Does (running) or refuses (ended) the writes that waited for p to start. */
void
proc_flush_parked(struct proc *p)
{
        while (!list_empty(&p->parked)) {
                struct proc_parked *w = LIST_ENTRY(p->parked.next, struct proc_parked, node);
                list_del(&w->node);
                conn_uncharge(w->acct, w->data.len);
                proc_write_now(p, w->req, &w->data, w->eof);
                free(w);
        }
}

/* process.write */
void
method_process_write(struct rpc_req *req)
{
        static const char *const keys[] = {"exec_id", "data", "data_base64", "eof", NULL};
        struct sbx_error err = {0};
        struct proc *p = proc_from_params(req, keys, &err);
        const char *data = NULL, *b64 = NULL;
        bool eof = false;
        struct buf b = {0};

        if (!p || params_str(req->params, "data", g.config->max_stdin_bytes, &data, &err) < 0 ||
            params_str(req->params, "data_base64", g.config->max_stdin_bytes / 3 * 4 + 4, &b64,
                       &err) < 0 ||
            params_bool(req->params, "eof", &eof, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (data)
                buf_append(&b, data, strlen(data));
        if (b64 && base64_decode(&b, b64, strlen(b64)) < 0) {
                buf_free(&b);
                sbx_error_param(&err, "data_base64",
                                "invalid params: 'data_base64' is not "
                                "valid base64");
                rpc_error(req, &err);
                return;
        }
        if (proc_live(p) && p->state != PROC_RUNNING && p->stdin_open)
                proc_park_write(p, req, &b, eof);
        else
                proc_write_now(p, req, &b, eof);
}
