/* proc_exec.c — the exec method: params parsed and checked, limits, client-chosen exec_ids
 * and the answer to a repeated one. */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/methods.h"
#include "daemon/proc_int.h"
#include "daemon/sandbox.h"
#include "daemon/spool.h"
#include "protocol/codec.h"
#include "protocol/params.h"
#include "protocol/util.h"

#define PROC_MAX_ARGV    4096
#define PROC_MAX_ENV     1024
#define PROC_MAX_COMMAND (1u << 20)

static const char *const exec_keys[] = {"sandbox",
                                        "command",
                                        "argv",
                                        "cwd",
                                        "env",
                                        "timeout_s",
                                        "stdin",
                                        "stdin_base64",
                                        "stdin_open",
                                        "background",
                                        "stream",
                                        "merge_stderr",
                                        "output_encoding",
                                        "max_output_bytes",
                                        "pty",
                                        "pty_size",
                                        "tag",
                                        "exec_id",
                                        NULL};

const char *const proc_encodings[] = {"text", "base64", NULL};

static int
proc_parse_stdin(struct proc *p, json_t *params, struct sbx_error *err)
{
        const char *s = NULL, *b64 = NULL;

        if (params_str(params, "stdin", g.config->max_stdin_bytes, &s, err) < 0 ||
            params_str(params, "stdin_base64", g.config->max_stdin_bytes / 3 * 4 + 4, &b64, err) <
                    0)
                return -1;
        if (s && b64) {
                sbx_error_param(err, "stdin_base64",
                                "invalid params: give either 'stdin' or 'stdin_base64', not both");
                return -1;
        }
        if (s)
                buf_append(&p->stdin_data, s, strlen(s));
        if (b64 && base64_decode(&p->stdin_data, b64, strlen(b64)) < 0) {
                sbx_error_param(err, "stdin_base64",
                                "invalid params: 'stdin_base64' is not valid "
                                "base64");
                return -1;
        }
        return 0;
}

static int
proc_parse_pty(struct proc *p, json_t *params, struct sbx_error *err)
{
        static const char *const keys[] = {"rows", "cols", NULL};
        json_t *size = NULL;
        int64_t rows = 24, cols = 80;

        p->rows = 24;
        p->cols = 80;
        if (params_obj(params, "pty_size", &size, err) < 0)
                return -1;
        if (!size)
                return 0;
        if (params_known(size, keys, err) < 0 ||
            params_int(size, "rows", 1, 1000, &rows, err) < 0 ||
            params_int(size, "cols", 1, 1000, &cols, err) < 0)
                return -1;
        p->rows = (unsigned short) rows;
        p->cols = (unsigned short) cols;
        return 0;
}

static int
proc_parse_mode(struct proc *p, json_t *params, struct sbx_error *err)
{
        int64_t timeout = (int64_t) g.config->default_timeout_s, maxout;
        int enc = 0;

        p->stream = true;
        maxout = (int64_t) g.config->default_max_output_bytes;
        if (params_bool(params, "background", &p->background, err) < 0 ||
            params_bool(params, "stream", &p->stream, err) < 0 ||
            params_bool(params, "merge_stderr", &p->merge, err) < 0 ||
            params_bool(params, "stdin_open", &p->stdin_open, err) < 0 ||
            params_bool(params, "pty", &p->pty, err) < 0 ||
            params_enum(params, "output_encoding", proc_encodings, &enc, err) < 0 ||
            params_int(params, "max_output_bytes", 0, (int64_t) g.config->max_output_bytes_limit,
                       &maxout, err) < 0 ||
            params_int(params, "timeout_s", 0, 31536000, &timeout, err) < 0 ||
            proc_parse_pty(p, params, err) < 0)
                return -1;
        if (timeout == 0 && !p->background) {
                sbx_error_param(err, "timeout_s",
                                "invalid params: 'timeout_s' 0 (no timeout) is allowed only with "
                                "'background': true");
                return -1;
        }
        if (!p->background && (uint64_t) timeout > g.config->max_foreground_timeout_s) {
                sbx_error_param(err, "timeout_s",
                                "invalid params: 'timeout_s' %lld is above the foreground maximum "
                                "of %llu s (max_foreground_timeout_s); run it with 'background': "
                                "true",
                                (long long) timeout,
                                (unsigned long long) g.config->max_foreground_timeout_s);
                return -1;
        }
        p->timeout_ms = (uint64_t) timeout * 1000;
        p->base64 = enc == 1;
        p->max_output = (uint64_t) maxout;
        return 0;
}

static int
proc_parse(struct proc *p, json_t *params, struct sbx_error *err)
{
        const char *command = NULL, *cwd = NULL, *tag = NULL;
        json_t *argv = NULL, *env = NULL;

        if (params_known(params, exec_keys, err) < 0 ||
            params_str(params, "command", PROC_MAX_COMMAND, &command, err) < 0 ||
            params_str_array(params, "argv", PROC_MAX_ARGV, &argv, err) < 0 ||
            params_str(params, "cwd", 4096, &cwd, err) < 0 ||
            params_str_map(params, "env", PROC_MAX_ENV, &env, err) < 0 ||
            params_str(params, "tag", 256, &tag, err) < 0 || proc_parse_mode(p, params, err) < 0 ||
            proc_parse_stdin(p, params, err) < 0)
                return -1;
        if (!command == !argv) {
                sbx_error_param(err, command ? "argv" : "command",
                                "invalid params: give exactly one of 'command' (a shell string) "
                                "or 'argv' (an array of strings)");
                return -1;
        }
        if (cwd && cwd[0] != '/') {
                sbx_error_param(err, "cwd", "invalid params: 'cwd' must be an absolute path");
                return -1;
        }
        p->command = command ? xstrdup(command) : NULL;
        p->argv = json_incref(argv);
        p->cwd = cwd ? xstrdup(cwd) : NULL;
        p->env = env ? json_deep_copy(env) : NULL;
        p->tag = tag ? xstrdup(tag) : NULL;
        return 0;
}

/* A new process of owner, named id (a client's choice, validated) or, when NULL, as its key. */
struct proc *
proc_new(uid_t owner, const char *id)
{
        struct proc *p = xcalloc(1, sizeof(*p));
        char rnd[13];

        util_random_hex(rnd, 12);
        snprintf(p->key, sizeof(p->key), "p_%s", rnd);
        snprintf(p->id, sizeof(p->id), "%s", id ? id : p->key);
        p->refs = 1; /* the registry's, dropped by the timer close */
        p->owner = owner;
        list_init(&p->subs);
        list_init(&p->waiters);
        list_init(&p->parked);
        list_init(&p->qnode);
        list_add_tail(&proc_live_list, &p->lnode);
        uv_timer_init(g.loop, &p->timer);
        p->timer.data = p;
        list_add_tail(&proc_all, &p->node);
        return p;
}

static void
proc_setup_streams(struct proc *p)
{
        for (int i = 0; i < 2; i++) {
                char *path = xasprintf("%s/%s.%s", proc_spool_dir, p->key, i ? "err" : "out");
                struct pstream *s = &p->out[i];
                s->spool = spool_new(path, g.config->spool_max_bytes);
                free(path);
                if (proc_spool_full(p->owner))
                        spool_stop(s->spool);
                if (!p->background) {
                        s->head_cap = (size_t) (p->max_output / 2);
                        s->tail_cap = (size_t) (p->max_output - s->head_cap);
                        s->tail = s->tail_cap ? xmalloc(s->tail_cap) : NULL;
                }
        }
}

static int
proc_check_limits(uid_t uid, struct sbx_error *err)
{
        if (g.stopping) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "stopping"),
                              "the daemon is shutting down and accepts no new execs");
                return -1;
        }
        if (proc_running_uid(uid) >= g.config->max_processes_per_uid) {
                sbx_error_limit(
                        err, "max_processes_per_uid", (long long) g.config->max_processes_per_uid,
                        "limit reached: uid %u has %llu processes running "
                        "(max_processes_per_uid); wait for or kill some first",
                        (unsigned) uid, (unsigned long long) g.config->max_processes_per_uid);
                return -1;
        }
        return 0;
}

/* What a foreground exec may keep in memory for its result: max_output_bytes per stream. */
static uint64_t
proc_result_reserve(const struct proc *p)
{
        return p->background ? 0 : p->max_output * (p->merge ? 1 : 2);
}

/* The results of one uid's running foreground execs and the bytes queued to its connections
 * may not pass max_output_bytes_per_uid: a client that starts execs and never reads could
 * otherwise make the daemon hold 2 x max_output_bytes for each of max_processes_per_uid. */
static int
proc_check_output(const struct proc *p, struct sbx_error *err)
{
        uint64_t max = g.config->max_output_bytes_per_uid, used = conn_queued_uid(p->owner);
        struct list *pos, *tmp;

        if (p->background)
                return 0;
        LIST_FOREACH_SAFE(pos, tmp, &proc_live_list)
        {
                struct proc *o = LIST_ENTRY(pos, struct proc, lnode);
                if (o != p && o->owner == p->owner)
                        used += proc_result_reserve(o);
        }
        if (used + proc_result_reserve(p) <= max)
                return 0;
        sbx_error_limit(err, "max_output_bytes_per_uid", (long long) max,
                        "limit reached: this foreground exec may keep %llu bytes of output for its "
                        "result, and uid %u's running foreground execs and unread responses "
                        "already hold %llu of max_output_bytes_per_uid %llu; read your "
                        "responses, lower 'max_output_bytes', or run it with 'background': true "
                        "and read its output with process.read",
                        (unsigned long long) proc_result_reserve(p), (unsigned) p->owner,
                        (unsigned long long) used, (unsigned long long) max);
        return -1;
}

/* A client-chosen exec_id: "p_" and 1 to 40 letters, digits, '_' or '-' (no path, no
 * space: it names files nowhere, but it is shown and logged). */
static int
proc_check_id(const char *id, struct sbx_error *err)
{
        static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        size_t n = strlen(id);

        if (n > 2 && n <= PROC_ID_MAX && !strncmp(id, "p_", 2) && strspn(id + 2, ok) == n - 2)
                return 0;
        sbx_error_param(err, "exec_id",
                        "invalid params: 'exec_id' must be \"p_\" followed by 1 to %d letters, "
                        "digits, '_' or '-'",
                        PROC_ID_MAX - 2);
        return -1;
}

/* The process of uid named id, its own only (client-chosen ids are unique per owner). */
static struct proc *
proc_find_own(uid_t uid, const char *id)
{
        struct proc *p = proc_find(uid, id);

        return p && p->owner == uid ? p : NULL;
}

/* Whether params ask for what p was started with (a retry, not a reuse of the id). */
static bool
proc_same_request(const struct proc *p, json_t *params)
{
        const char *cmd = json_string_value(json_object_get(params, "command"));
        json_t *argv = json_object_get(params, "argv");

        if (json_is_true(json_object_get(params, "background")) != p->background)
                return false;
        if (p->command)
                return cmd && !strcmp(cmd, p->command);
        return argv && json_equal(argv, p->argv);
}

/* The answer to a repeated exec: a foreground exec's result (its output read back from the
 * spool), or a background exec's state. */
void
proc_repeat_answer(struct proc *p, struct rpc_req *req)
{
        json_t *r;

        if (!p->background) {
                r = proc_result_json(p);
        } else {
                r = proc_wait_json(p);
                json_object_set_new(r, "state", json_string(proc_state_name(p)));
                json_object_set_new(r, "background", json_true());
                json_object_set_new(r, "sandbox", p->sb ? json_string(p->sb->id) : json_null());
        }
        json_object_set_new(r, "repeated", json_true());
        rpc_result(req, r);
}

/* exec with the exec_id of a known process: the same command again is a retry and gets that
 * process's result (once it has ended) instead of a second run. */
static void
proc_repeat(struct proc *p, struct rpc_req *req)
{
        struct sbx_error err = {0};

        if (!proc_same_request(p, req->params)) {
                sbx_error_param(&err, "exec_id",
                                "invalid params: exec_id '%s' was already used for another "
                                "command (a repeat must send the same command; choose a new id)",
                                p->id);
                rpc_error(req, &err);
                return;
        }
        if (!p->background && proc_live(p)) {
                proc_wait_on(p, req, 0, NULL, PROC_WAIT_REPEAT);
                return;
        }
        proc_repeat_answer(p, req);
}

/* exec */
void
method_exec(struct rpc_req *req)
{
        struct sbx_error err = {0};
        uid_t uid = conn_uid(req->conn);
        const char *sbname = NULL, *want = NULL;
        struct sandbox *sb = NULL;
        struct proc *p;

        if (params_str(req->params, "exec_id", 64, &want, &err) < 0 ||
            (want && proc_check_id(want, &err) < 0)) {
                rpc_error(req, &err);
                return;
        }
        if (want && (p = proc_find_own(uid, want))) {
                proc_repeat(p, req);
                return;
        }
        if (proc_check_limits(uid, &err) < 0 ||
            params_str(req->params, "sandbox", 256, &sbname, &err) < 0) {
                rpc_error(req, &err);
                return;
        }
        if (sbname && !(sb = sandbox_find(uid, sbname))) {
                rpc_error_msg(req, SBX_E_NO_SANDBOX,
                              "sandbox '%s' not found (sandbox.list shows yours)", sbname);
                return;
        }
        if (sb && sb->state != SANDBOX_READY && !sb->recreating) {
                sbx_error_set(&err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "creating"),
                              "sandbox '%s' is not ready yet", sbname);
                rpc_error(req, &err);
                return;
        }
        p = proc_new(uid, want);
        if (proc_parse(p, req->params, &err) < 0 || proc_check_output(p, &err) < 0) {
                proc_set_ended(p, PROC_FAILED);
                list_del(&p->node);
                list_init(&p->node);
                uv_close((uv_handle_t *) &p->timer, proc_timer_close_cb);
                rpc_error(req, &err);
                return;
        }
        p->req = req;
        proc_setup_streams(p);
        if (p->stream || !p->background)
                proc_subscribe(p, req->conn, !p->background);
        if (sb)
                proc_sandbox_cb(p, sb, NULL);
        else
                sandbox_default(req->conn, proc_sandbox_cb, p);
}
