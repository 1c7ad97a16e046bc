/* methods.h — JSON-RPC method handlers (protocol §3–§7), one group per file. Loop thread. */
#ifndef SANDBOXD_METHODS_H
#define SANDBOXD_METHODS_H

#include "daemon/rpc.h"

/* daemon.c */
void method_daemon_hello(struct rpc_req *req);
void method_daemon_info(struct rpc_req *req);
void method_backend_list(struct rpc_req *req);
void method_backend_cache(struct rpc_req *req);
void method_policy_check(struct rpc_req *req);
void method_policy_reload(struct rpc_req *req);
/* sandbox*.c */
void method_sandbox_create(struct rpc_req *req);
void method_sandbox_list(struct rpc_req *req);
void method_sandbox_get(struct rpc_req *req);
void method_sandbox_destroy(struct rpc_req *req);
/* proc_exec.c */
void method_exec(struct rpc_req *req);
/* proc_stdin.c */
void method_process_write(struct rpc_req *req);
/* proc_methods.c */
void method_process_list(struct rpc_req *req);
void method_process_read(struct rpc_req *req);
void method_process_signal(struct rpc_req *req);
void method_process_kill(struct rpc_req *req);
void method_process_wait(struct rpc_req *req);
void method_process_attach(struct rpc_req *req);
void method_process_resize(struct rpc_req *req);
/* methods_policy.c */
void method_approval_list(struct rpc_req *req);
void method_approval_revoke(struct rpc_req *req);
/* files.c */
void method_file_read(struct rpc_req *req);
void method_file_write(struct rpc_req *req);

#endif
