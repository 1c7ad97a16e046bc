/* methods_policy.c — approval.list and approval.revoke: the persisted ("always") approvals. */
#include <stdlib.h>

#include "daemon/approval.h"
#include "daemon/methods.h"
#include "protocol/params.h"

#define APPROVAL_KEY_MAX 8192

/* approval.list {} -> {approvals: [{key, rule, subject, uid, created_at}]} */
void
method_approval_list(struct rpc_req *req)
{
        static const char *const keys[] = {NULL};
        struct sbx_error err = {0};

        if (params_known(req->params, keys, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, json_pack("{s:o}", "approvals", approval_list(conn_uid(req->conn))));
}

/* approval.revoke {key, uid? (root only)} -> {revoked: true, key, count} */
void
method_approval_revoke(struct rpc_req *req)
{
        static const char *const keys[] = {"key", "uid", NULL};
        struct sbx_error err = {0};
        const char *key = NULL;
        int64_t target = -1;
        uid_t t;
        int n;

        if (params_known(req->params, keys, &err) < 0 ||
            params_str(req->params, "key", APPROVAL_KEY_MAX, &key, &err) < 0 ||
            params_int(req->params, "uid", 0, 4294967294LL, &target, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (!key) {
                sbx_error_param(&err, "key",
                                "invalid params: 'key' is required (see "
                                "approval.list)");
                rpc_error(req, &err);
                return;
        }
        if (target >= 0 && conn_uid(req->conn) != 0 && (uid_t) target != conn_uid(req->conn)) {
                rpc_error_msg(req, SBX_E_PERMISSION,
                              "permission denied: only root may revoke another uid's approvals");
                return;
        }
        t = (uid_t) target;
        n = approval_revoke(conn_uid(req->conn), key, target >= 0 ? &t : NULL, &err);
        if (n < 0) {
                rpc_error(req, &err);
                return;
        }
        rpc_result(req, json_pack("{s:b,s:s,s:i}", "revoked", 1, "key", key, "count", n));
}
