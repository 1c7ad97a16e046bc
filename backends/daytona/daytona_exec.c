/* daytona_exec.c — an exec as an asynchronous command of a toolbox session.
 *
 *   prepare  the sandbox runs (started again if Daytona stopped it), stdin is uploaded, a
 *            session is taken from the pool
 *   post     POST /process/session/{s}/exec {command, runAsync, suppressInputEcho} -> 202 cmdId;
 *            after an unclear answer the session's command list is searched for the nonce
 *            (the session's guard file makes a second start in it harmless)
 *   follow   GET …/command/{c}/logs?follow=true, a WebSocket that replays the log from its
 *            first byte: the bytes received are counted, and after a dropped link or an error
 *            the replay skips what was read before, so no output is lost or repeated
 *   end      the wrapper's markers carry the status and the shell state; a log that ends
 *            without them is settled by GET …/command/{c} (its exitCode)
 *   adopt    after a daemon restart an exec is found again by its nonce in the sandbox's
 *            sessions (GET /process/session) and followed from the start, the output the
 *            daemon kept already skipped per stream
 *
 * The kill, signal and stdin relay of a running exec are in daytona_ctl.c.
 */
#include "backends/daytona/daytona_exec.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define EX_WS_TRIES       12  /* reconnects without progress before the exec is given up */
#define EX_WS_BACKOFF     100 /* ms, doubled per try up to EX_WS_BACKOFF_MAX */
#define EX_WS_BACKOFF_MAX 5000

/* Live execs, for shutdown. */
static struct list ex_all = {&ex_all, &ex_all};

static void ex_prepare(struct daytona_proc *p);
static void ex_follow(struct daytona_proc *p);
static void ex_post(struct daytona_proc *p);
static void ex_adopt_find(struct daytona_proc *p);
static void ex_adopt_settled(struct daytona_proc *p);

/* ---- the end ---- */

static void
ex_timer_close_cb(uv_handle_t *h)
{
        struct daytona_proc *p = h->data;

        daytona_sandbox_unref(p->sb);
        free(p->exec_id);
        free(p->command);
        free(p->pidfile);
        free(p->argv0);
        free(p->cwd);
        free(p->cmd_id);
        free(p->dup_id);
        free(p->lost);
        for (char **id = p->posted_in; *id; id++)
                free(*id);
        buf_free(&p->stdin_file);
        daytona_log_free(&p->log);
        sbx_error_clear(&p->fail);
        daytona_ctl_free(p);
        free(p);
}

/* Stops everything in flight of the main flow (the session is handled by the caller). */
static void
ex_quiesce(struct daytona_proc *p)
{
        if (p->call)
                daytona_call_cancel(p->call);
        p->call = NULL;
        daytona_ws_close(p->ws);
        p->ws = NULL;
        uv_timer_stop(&p->timer);
        if (p->waiting)
                list_del(&p->wait.link);
        p->waiting = false;
        daytona_session_cancel(p->session_req);
        p->session_req = NULL;
}

/* Delivers how the exec ended; the last thing done with p in this call stack (the daemon may
 * release it from inside on_exit). */
static void
ex_deliver(struct daytona_proc *p)
{
        ex_quiesce(p);
        p->phase = EX_DONE;
        list_del(&p->link);
        ex_adopt_settled(p);
        if (p->posts || p->stdin_sent)
                daytona_sandbox_spent(p->sb, p->exec_id);
        if (p->session) {
                daytona_session_put(p->session, p->cmd_id, !p->session_bad);
                p->session = NULL;
        }
        daytona_ctl_ended(p);
        if (p->fail.code)
                p->ex.error = &p->fail;
        if (p->log.state.len && !p->log.state_too_big) {
                p->ex.state = p->log.state.data;
                p->ex.state_len = p->log.state.len;
        }
        p->cbs.on_exit(p->ctx, &p->ex);
}

static void ex_lost(struct daytona_proc *p, const char *why);

/* The exec could not start: on_exit with exec_exit.error (err moved from). An adopted exec
 * did run, and one whose POST had no clear answer may have: it is lost. */
static void
ex_fail(struct daytona_proc *p, struct sbx_error *err)
{
        if (p->adopted || p->unclear) {
                ex_lost(p, err->message ? err->message : "the sandbox cannot be used");
                sbx_error_clear(err);
                return;
        }
        sbx_error_move(&p->fail, err);
        p->ex.exit_code = 125;
        ex_deliver(p);
}

static void
ex_failmsg(struct daytona_proc *p, const char *msg)
{
        struct sbx_error err = {0};

        sbx_error_backend(&err, DAYTONA_NAME, "%s", msg);
        ex_fail(p, &err);
}

/* The command ran but its end cannot be learnt any more: its output so far, and
 * exec_exit.lost says why. */
static void
ex_lost(struct daytona_proc *p, const char *why)
{
        daytona_log_flush(&p->log);
        free(p->lost);
        p->lost = xasprintf("lost the Daytona command: %s", why);
        p->ex.lost = p->lost;
        p->session_bad = true;
        ex_deliver(p);
}

/* $? of the command; 128+N after a signal sandboxd sent is that signal. */
static void
ex_status(struct daytona_proc *p, int status)
{
        int sig = status - 128;

        if (status > 128 && p->signalled && (sig == p->signalled || sig == SIGKILL)) {
                p->ex.signal = sig;
                return;
        }
        p->ex.exit_code = status;
}

/* The markers are in: the exec is over (or was started twice, or could not start). */
static void
ex_ended(struct daytona_proc *p)
{
        struct sbx_error err = {0};

        switch (p->log.end) {
        case DAYTONA_LOG_EXITED:
                ex_status(p, p->log.status);
                if (daytona_ctl_killing(p)) {
                        /* Killed: the end is told once the tree is gone (daytona_exec_killed),
                         * not while its other processes wait out the grace. */
                        ex_quiesce(p);
                        p->end_wait = true;
                        return;
                }
                ex_deliver(p);
                return;
        case DAYTONA_LOG_DUP:
                /* This command is the harmless second start: follow the first one (an
                 * earlier POST reached the session, if libcurl sent it again on a fresh
                 * connection after its reused one died, without a word to us). */
                p->unclear = true;
                daytona_ws_close(p->ws);
                p->ws = NULL;
                free(p->dup_id);
                p->dup_id = p->cmd_id;
                p->cmd_id = NULL;
                daytona_log_free(&p->log);
                daytona_log_init(&p->log, p->nonce, daytona_exec_output, p);
                p->consumed = p->skip = 0;
                daytona_exec_find(p);
                return;
        case DAYTONA_LOG_EARLIER:
                ex_lost(p, "a request to start it had no clear answer, and the guard file of "
                           "the session it went to (gone since: the sandbox was started again) "
                           "names it: it may have run there, and is not started twice");
                return;
        case DAYTONA_LOG_NOSTART:
                p->unclear = false; /* no guard names it: it never started anywhere */
                break;
        case DAYTONA_LOG_RUNNING:
                break;
        }
        if (!strcmp(p->log.fail, "cwd"))
                sbx_error_param(&err, "cwd",
                                "cwd '%s' does not exist in the sandbox (or is "
                                "not a directory)",
                                p->cwd);
        else if (!strcmp(p->log.fail, "argv"))
                sbx_error_param(&err, "argv", "cannot execute '%s' in the sandbox: not found",
                                p->argv0);
        else
                sbx_error_backend(&err, DAYTONA_NAME,
                                  "the sandbox cannot give the exec its "
                                  "stdin (mkfifo failed in %s)",
                                  daytona.remote_dir);
        ex_fail(p, &err);
}

/* ---- following the log ---- */

/* Output from the log reader. */
void
daytona_exec_output(void *ctx, int stream, const char *data, size_t len)
{
        struct daytona_proc *p = ctx;
        uint64_t *skip = &p->skip_out[stream ? 1 : 0];
        size_t n = (size_t) MIN((uint64_t) len, *skip);

        /* Adopted: the log is read from its start, the daemon has this much already. */
        *skip -= n;
        if (len > n)
                p->cbs.on_output(p->ctx, stream ? BACKEND_STDERR : BACKEND_STDOUT, data + n,
                                 len - n);
}

static void
ex_ws_data(void *ctx, const char *data, size_t len)
{
        struct daytona_proc *p = ctx;
        size_t skip = (size_t) MIN((uint64_t) len, p->skip);

        /* A replay starts at the log's first byte: skip what was read before. */
        p->skip -= skip;
        data += skip;
        len -= skip;
        if (!len)
                return;
        p->consumed += len;
        p->ws_tries = 0;
        daytona_log_feed(&p->log, data, len);
        if (daytona_log_done(&p->log))
                ex_ended(p);
}

static void
ex_timer_cb(uv_timer_t *t)
{
        struct daytona_proc *p = t->data;

        if (p->phase == EX_STREAM)
                ex_follow(p);
}

/* Reconnects the log after backoff, or gives up after EX_WS_TRIES tries without progress. */
static void
ex_reconnect(struct daytona_proc *p, const char *why)
{
        uint64_t d = EX_WS_BACKOFF << MIN(p->ws_tries, 6u);

        p->ws = NULL;
        if (++p->ws_tries > EX_WS_TRIES) {
                ex_lost(p, why);
                return;
        }
        p->skip = p->consumed;
        uv_timer_start(&p->timer, ex_timer_cb, MIN(d, EX_WS_BACKOFF_MAX), 0);
}

static void
ex_confirmed_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;
        json_t *code = json_object_get(res->body, "exitCode");

        p->call = NULL;
        if (res->status == 200 && json_is_integer(code)) {
                /* Ended without the markers (the wrapper itself was killed). */
                daytona_log_flush(&p->log);
                ex_status(p, (int) json_integer_value(code));
                ex_deliver(p);
        } else if (res->status == 200) {
                ex_reconnect(p, "the log ended before the command"); /* still running */
        } else {
                ex_lost(p, daytona_res_message(res));
        }
}

/* The log stream ended normally but without the markers: ask for the exit code. */
static void
ex_confirm(struct daytona_proc *p)
{
        struct daytona_req r = {.idempotent = true};

        p->ws = NULL;
        daytona_send(
                &r,
                daytona_tb_url(p->sb, "/process/session/%s/command/%s", p->session->id, p->cmd_id),
                ex_confirmed_cb, p, &p->call);
}

static void
ex_ws_end(void *ctx, long status, const char *body, size_t blen, const char *error)
{
        struct daytona_proc *p = ctx;
        struct daytona_res res = {.status = status, .raw = body, .len = blen};
        struct sbx_error err = {0};
        char *why;

        if (!status && !error) {
                ex_confirm(p);
                return;
        }
        if (!status) {
                ex_reconnect(p, error);
                return;
        }
        p->ws = NULL;
        res.body = body && blen ? json_loadb(body, blen, JSON_DECODE_ANY, NULL) : NULL;
        if (status == 401 || status == 403) {
                daytona_error(&err, "follow the command's log", &res, false);
                ex_lost(p, err.message);
        } else if (status == 404) {
                ex_lost(p, "the command is gone from its session (the sandbox restarted?)");
        } else {
                why = xasprintf("HTTP %ld: %s", status, daytona_res_message(&res));
                ex_reconnect(p, why);
                free(why);
        }
        sbx_error_clear(&err);
        json_decref(res.body);
}

/* Opens (or reopens) the log's follow stream: on the connection opened while the command was
 * posted (ex_post), else on a new one. */
static void
ex_follow(struct daytona_proc *p)
{
        static const struct daytona_ws_cbs cbs = {.on_data = ex_ws_data, .on_end = ex_ws_end};
        const char *hdrs[] = {daytona.auth, "X-Daytona-Split-Output: true",
                              "X-Daytona-Source: sandboxd", NULL};
        char *url = daytona_tb_url(p->sb, "/process/session/%s/command/%s/logs?follow=true",
                                   p->session->id, p->cmd_id);
        int rc = p->ws ? daytona_ws_upgrade(p->ws, url, hdrs, &cbs, p) : -1;

        if (rc < 0) {
                daytona_ws_close(p->ws);
                rc = daytona_ws_open(daytona.http, daytona.loop, url, hdrs, &cbs, p, &p->ws);
        }
        free(url);
        if (rc < 0) {
                p->ws = NULL;
                ex_lost(p, "cannot open the log stream");
                return;
        }
        if (p->paused)
                daytona_ws_pause(p->ws);
}

/* ---- starting the command ---- */

/* The command is registered in its session: start following it. */
static void
ex_running(struct daytona_proc *p)
{
        p->phase = EX_STREAM;
        ex_adopt_settled(p);
        daytona_ctl_started(p);
        ex_follow(p);
}

static void
ex_found_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;
        json_t *cmds = json_object_get(res->body, "commands"), *c;
        size_t i;

        p->call = NULL;
        if (res->status != 200) {
                daytona_exec_toolbox_failed(p, "find the command in its session", res);
                return;
        }
        json_array_foreach(cmds, i, c)
        {
                const char *id = json_string_value(json_object_get(c, "id"));
                const char *text = json_string_value(json_object_get(c, "command"));
                if (daytona_id_ok(id) && text && strstr(text, p->nonce) &&
                    (!p->dup_id || strcmp(id, p->dup_id))) {
                        p->cmd_id = xstrdup(id);
                        ex_running(p);
                        return;
                }
        }
        ex_post(p); /* it never arrived */
}

/* After an unclear answer to the POST: is the command in the session (by its nonce)? */
void
daytona_exec_find(struct daytona_proc *p)
{
        struct daytona_req r = {.idempotent = true};

        p->phase = EX_POSTING;
        daytona_send(&r, daytona_tb_url(p->sb, "/process/session/%s", p->session->id), ex_found_cb,
                     p, &p->call);
}

static void
ex_posted_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;
        const char *id = json_string_value(json_object_get(res->body, "cmdId"));

        p->call = NULL;
        if (res->ambiguous) {
                p->unclear = true;
                daytona_exec_find(p);
                return;
        }
        if (res->status / 100 != 2 || !daytona_id_ok(id)) {
                if (res->status == 404)
                        p->session_bad = true; /* the session is gone */
                daytona_exec_toolbox_failed(p, "run the command", res);
                return;
        }
        p->cmd_id = xstrdup(id);
        ex_running(p);
}

/* The sessions p was posted to but s (NULL-terminated, in earlier); s joins p->posted_in. */
static void
ex_earlier(struct daytona_proc *p, const struct daytona_session *s, const char **earlier)
{
        size_t n = 0, i;

        for (i = 0; p->posted_in[i]; i++)
                if (strcmp(p->posted_in[i], s->id))
                        earlier[n++] = p->posted_in[i];
        earlier[n] = NULL;
        if (n == i) /* a new one: i < EX_POSTS (ex_post) */
                p->posted_in[i] = xstrdup(s->id);
}

/* Posts the command; a re-post in another session also checks the earlier ones' guards. */
static void
ex_post(struct daytona_proc *p)
{
        struct daytona_req r = {.method = "POST"};
        const char *earlier[ARRAY_SIZE(p->posted_in)];
        char *text;
        json_t *body;

        if (p->posts >= EX_POSTS) {
                ex_failmsg(p, "the exec request got no clear answer, 3 times");
                return;
        }
        ex_earlier(p, p->session, earlier);
        text = daytona_cmd_in_session(p->command, daytona.remote_dir, p->session->id, p->exec_id,
                                      earlier);
        body = json_pack("{s:s,s:b,s:b}", "command", text, "runAsync", 1, "suppressInputEcho", 1);
        p->phase = EX_POSTING;
        p->posts++;
        r.json = body;
        daytona_send(&r, daytona_tb_url(p->sb, "/process/session/%s/exec", p->session->id),
                     ex_posted_cb, p, &p->call);
        json_decref(body);
        free(text);
        /* The log stream's connection is set up during the POST's round trip, not after it
         * (TCP, and TLS to a real proxy); a failure here only means a new one later. */
        if (!p->ws && daytona_ws_preconnect(daytona.http, daytona.loop, p->sb->toolbox, &p->ws) < 0)
                p->ws = NULL;
}

/* ---- preparing ---- */

static void
ex_woken_cb(void *ctx, const struct sbx_error *err)
{
        struct daytona_proc *p = ctx;
        struct sbx_error e = {0};

        p->waiting = false;
        if (err) {
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                ex_fail(p, &e);
                return;
        }
        ex_prepare(p);
}

/* A toolbox call failed: the sandbox may have been stopped (auto-stop). Check and start it
 * once, then try again; a second failure is the exec's. */
void
daytona_exec_toolbox_failed(struct daytona_proc *p, const char *what, const struct daytona_res *res)
{
        struct sbx_error err = {0};

        if (p->session && p->session_bad) {
                daytona_session_put(p->session, NULL, false);
                p->session = NULL;
                p->session_bad = false;
        }
        if (p->woke || res->status == 401 || res->status == 403) {
                daytona_error(&err, what, res, false);
                ex_fail(p, &err);
                return;
        }
        p->woke = true;
        p->phase = EX_PREP;
        /* A session that may hold its command stays its own (no other exec writes over the
         * line of its guard file): posted to again if the sandbox was not started meanwhile,
         * else dropped (ex_prepare). Any other may belong to the toolbox before a restart. */
        if (p->session && !p->unclear) {
                daytona_session_put(p->session, NULL, true);
                p->session = NULL;
        }
        p->waiting = true;
        p->wait.cb = ex_woken_cb;
        p->wait.ctx = p;
        daytona_sandbox_wake(p->sb, &p->wait);
}

static void
ex_session_cb(void *ctx, struct daytona_session *s, const struct sbx_error *err)
{
        struct daytona_proc *p = ctx;
        struct daytona_res res = {.status = 0};
        struct sbx_error e = {0};

        p->session_req = NULL;
        if (err && (p->woke || err->code == SBX_E_BACKEND_UNAVAILABLE)) {
                sbx_error_set(&e, err->code, json_incref(err->data), "%s", err->message);
                ex_fail(p, &e);
                return;
        }
        if (err) {
                daytona_exec_toolbox_failed(p, "create a toolbox session", &res);
                return;
        }
        p->session = s;
        ex_prepare(p);
}

static void
ex_uploaded_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;

        p->call = NULL;
        if (res->status / 100 != 2) {
                daytona_exec_toolbox_failed(p, "upload the exec's stdin", res);
                return;
        }
        p->stdin_sent = true;
        ex_prepare(p);
}

/* Next step before the POST: stdin file, session. */
static void
ex_prepare(struct daytona_proc *p)
{
        if (p->phase == EX_DONE)
                return;
        if (p->adopted) { /* after a start of the sandbox, too */
                ex_adopt_find(p);
                return;
        }
        if (p->in == DAYTONA_STDIN_FILE && !p->stdin_sent) {
                char *path = xasprintf("%s.in", p->pidfile);
                daytona_upload(p->sb, path, p->stdin_file.data, p->stdin_file.len, p,
                               ex_uploaded_cb, &p->call);
                free(path);
                return;
        }
        if (p->session && p->session->gen != p->sb->gen) { /* the sandbox was started again */
                daytona_session_put(p->session, NULL, false);
                p->session = NULL;
        }
        if (!p->session) {
                p->session_req = daytona_session_get(p->sb, p, ex_session_cb);
                return;
        }
        ex_post(p);
}

static void
ex_kickoff_cb(uv_timer_t *t)
{
        ex_prepare(t->data);
}

/* ---- exec_start ---- */

/* A copy of an argv or environment (the environment's host HOME/USER/LOGNAME are replaced by
 * the sandbox user's, see ex_env_swap). */
static char **
ex_vec(char *const *v)
{
        size_t n = 0;
        char **out;

        while (v && v[n])
                n++;
        out = xcalloc(n + 1, sizeof(*out));
        for (size_t i = 0; i < n; i++)
                out[i] = xstrdup(v[i]);
        return out;
}

static void
ex_env_swap(char **envp, const char *name, const char *host, const char *box)
{
        size_t n = strlen(name);

        if (!host || !box)
                return;
        for (; *envp; envp++) {
                if (!strncmp(*envp, name, n) && (*envp)[n] == '=' && !strcmp(*envp + n + 1, host)) {
                        free(*envp);
                        *envp = xasprintf("%s=%s", name, box);
                }
        }
}

static void
ex_vec_free(char **v)
{
        for (char **a = v; a && *a; a++)
                free(*a);
        free(v);
}

/* Builds the session command text. */
static void
ex_build(struct daytona_proc *p, const struct exec_spec *spec)
{
        /* The daemon put the state file in remote_dir (sandbox_info.runtime_dir). */
        const char *state = spec->state_path;
        char **argv = ex_vec(spec->argv);
        char **envp = ex_vec(spec->envp);
        const struct backend_identity *who = spec->who;
        struct daytona_cmd c = {.nonce = p->nonce,
                                .dir = daytona.remote_dir,
                                .exec_id = p->exec_id,
                                .state = state,
                                .cwd = p->cwd,
                                .in = p->in,
                                .merge_stderr = spec->merge_stderr,
                                .argv = argv,
                                .envp = envp};

        ex_env_swap(envp, "HOME", who ? who->home : NULL, p->sb->home);
        ex_env_swap(envp, "USER", who ? who->user : NULL, p->sb->user);
        ex_env_swap(envp, "LOGNAME", who ? who->user : NULL, p->sb->user);
        p->command = daytona_cmd_build(&c);
        ex_vec_free(argv);
        ex_vec_free(envp);
}

static int
ex_check(struct backend_sandbox *bsb, const struct exec_spec *spec, struct sbx_error *err)
{
        const char *why = daytona_cmd_check(spec->argv, spec->envp);

        if (spec->pty) {
                sbx_error_param(err, "pty",
                                "invalid params: the daytona backend has no pty "
                                "execs (Daytona's PTY WebSocket is not wired up); run without "
                                "'pty'");
                return -ENOTSUP;
        }
        if (why) {
                sbx_error_param(err, "argv", "invalid params: daytona: %s", why);
                return -E2BIG;
        }
        if (bsb->destroyed || !daytona.initialised) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "daytona sandbox %s is being destroyed", bsb->id);
                return -ESHUTDOWN;
        }
        return 0;
}

/* A new exec handle of bsb (one for exec_start or exec_adopt to complete). */
static struct daytona_proc *
ex_new(struct backend_sandbox *bsb, const char *exec_id, const struct backend_exec_cbs *cbs,
       void *ctx)
{
        struct daytona_proc *p = xcalloc(1, sizeof(*p));

        p->base.ops = &daytona_proc_ops;
        p->sb = bsb;
        daytona_sandbox_ref(bsb);
        p->cbs = *cbs;
        p->ctx = ctx;
        p->exec_id = xstrdup(exec_id);
        p->pidfile = daytona_cmd_pidfile(daytona.remote_dir, p->exec_id);
        return p;
}

/* The nonce, cwd and stdin are set: the exec goes. Not from inside the op, since the daemon
 * hears of the exec's end only afterwards. */
static void
ex_launch(struct daytona_proc *p, const struct exec_spec *spec)
{
        daytona_log_init(&p->log, p->nonce, daytona_exec_output, p);
        daytona_ctl_init(p, spec);
        list_add_tail(&ex_all, &p->link);
        uv_timer_init(daytona.loop, &p->timer);
        p->timer.data = p;
        uv_timer_start(&p->timer, ex_kickoff_cb, 0, 0);
}

/* What the daemon holds of p. */
struct backend_proc *
daytona_exec_base(struct daytona_proc *p)
{
        return &p->base;
}

/* Starts an exec. */
int
daytona_exec_start(struct backend_sandbox *bsb, const struct exec_spec *spec,
                   const struct backend_exec_cbs *cbs, void *ctx, struct daytona_proc **ret,
                   struct sbx_error *err)
{
        struct daytona_proc *p;
        int rc = ex_check(bsb, spec, err);

        if (rc < 0)
                return rc;
        p = ex_new(bsb, spec->exec_id, cbs, ctx);
        p->nonce[0] = '~';
        util_random_hex(p->nonce + 1, DAYTONA_NONCE_LEN - 1);
        p->argv0 = xstrdup(spec->argv[0]);
        p->cwd = xstrdup(spec->cwd ? spec->cwd : bsb->workdir ? bsb->workdir : "/");
        p->in = spec->stdin_open  ? DAYTONA_STDIN_RELAY
                : spec->stdin_len ? DAYTONA_STDIN_FILE
                                  : DAYTONA_STDIN_NONE;
        if (p->in == DAYTONA_STDIN_FILE)
                buf_append(&p->stdin_file, spec->stdin_data, spec->stdin_len);
        ex_build(p, spec);
        ex_launch(p, spec);
        *ret = p;
        return 0;
}

/* Stops reading the log (the client is slow). */
void
daytona_exec_pause(struct daytona_proc *p)
{
        p->paused = true;
        if (p->ws)
                daytona_ws_pause(p->ws);
}

void
daytona_exec_resume(struct daytona_proc *p)
{
        p->paused = false;
        if (p->ws)
                daytona_ws_resume(p->ws);
}

/* No pty execs, so nothing to resize. */
int
daytona_exec_resize(struct daytona_proc *p, unsigned short rows, unsigned short cols)
{
        return -ENOTTY;
}

/* Frees the handle (on_exit was delivered). */
void
daytona_exec_release(struct daytona_proc *p)
{
        ex_quiesce(p);
        list_del(&p->link);
        if (p->adopting) { /* released before it was found (shutdown): no sweep */
                p->adopting = false;
                p->sb->adopting--;
        }
        if (p->session)
                daytona_session_put(p->session, NULL, false);
        p->session = NULL;
        uv_close((uv_handle_t *) &p->timer, ex_timer_close_cb);
}

/* Lets go of the execs still running (the daemon stops; the commands go on in the sandboxes,
 * and the next daemon takes them back). Each ends as lost for this daemon, which has recorded
 * and kept what it needs already: nothing else reaches it, not even output held back. */
void
daytona_exec_shutdown(void)
{
        while (!list_empty(&ex_all)) {
                struct daytona_proc *p = LIST_ENTRY(ex_all.next, struct daytona_proc, link);
                free(p->lost);
                p->lost = xstrdup("the daemon is shutting down");
                p->ex.lost = p->lost;
                p->session_bad = true; /* its command may run on: the session is not reused */
                p->posts = 0;          /* nor are its files removed (pid file, relay) */
                p->stdin_sent = false;
                ex_deliver(p);
        }
}

/* Whether the exec has ended (on_exit delivered). */
bool
daytona_exec_done(const struct daytona_proc *p)
{
        return p->phase == EX_DONE;
}

/* The tree kill the ended command waited for was answered. */
void
daytona_exec_killed(struct daytona_proc *p)
{
        ex_deliver(p);
}

/* Ends an exec that had not started when it was killed: as if killed by SIGKILL. */
void
daytona_exec_cancel(struct daytona_proc *p)
{
        p->ex.signal = SIGKILL;
        ex_deliver(p);
}

/* ---- after a daemon restart: save, exec_adopt, exec_adopt_done ---- */

static const char *const ex_stdin_names[] = {
        [DAYTONA_STDIN_NONE] = "none",
        [DAYTONA_STDIN_FILE] = "file",
        [DAYTONA_STDIN_RELAY] = "relay",
};

/* What exec_adopt needs: the nonce finds the command in the sandbox (the session and the
 * command id are not known yet when the daemon asks, right after exec_start). */
json_t *
daytona_exec_save(struct daytona_proc *p)
{
        return json_pack("{s:i,s:s,s:s,s:s,s:s}", "v", 1, "nonce", p->nonce, "stdin",
                         ex_stdin_names[p->in], "argv0", p->argv0, "cwd", p->cwd);
}

/* The adopted exec was found or given up: when the last one of its sandbox is, the sessions
 * nobody claims go (exec_adopt_done). */
static void
ex_adopt_settled(struct daytona_proc *p)
{
        struct backend_sandbox *sb = p->sb;

        if (!p->adopting)
                return;
        p->adopting = false;
        if (--sb->adopting == 0 && sb->sweep_wanted) {
                sb->sweep_wanted = false;
                daytona_exec_sweep(sb);
        }
}

static void
ex_adopt_found_cb(void *ctx, const struct daytona_res *res)
{
        struct daytona_proc *p = ctx;
        json_t *s, *c;
        size_t i, j;

        p->call = NULL;
        if (res->status != 200 || !json_is_array(res->body)) {
                daytona_exec_toolbox_failed(p, "list the toolbox sessions", res);
                return;
        }
        json_array_foreach(res->body, i, s)
        {
                const char *sid = json_string_value(json_object_get(s, "sessionId"));
                json_array_foreach(json_object_get(s, "commands"), j, c)
                {
                        const char *id = json_string_value(json_object_get(c, "id"));
                        const char *text = json_string_value(json_object_get(c, "command"));
                        if (!daytona_id_ok(sid) || !daytona_id_ok(id) || !text ||
                            !strstr(text, p->nonce))
                                continue;
                        p->session = daytona_session_adopt(p->sb, sid);
                        p->cmd_id = xstrdup(id);
                        ex_running(p);
                        return;
                }
        }
        ex_lost(p, "it is in none of the sandbox's toolbox sessions (it never started, or the "
                   "sandbox was restarted)");
}

/* Looks for the command in every session of the sandbox. */
static void
ex_adopt_find(struct daytona_proc *p)
{
        struct daytona_req r = {.idempotent = true};

        p->phase = EX_POSTING;
        daytona_send(&r, daytona_tb_url(p->sb, "/process/session"), ex_adopt_found_cb, p, &p->call);
}

static int
ex_adopt_stdin(const char *name)
{
        for (size_t i = 0; name && i < ARRAY_SIZE(ex_stdin_names); i++)
                if (!strcmp(name, ex_stdin_names[i]))
                        return (int) i;
        return -1;
}

/* Takes back an exec a previous daemon started (record: daytona_exec_save's). */
int
daytona_exec_adopt(struct backend_sandbox *bsb, const struct exec_spec *spec, json_t *record,
                   const uint64_t offsets[2], const struct backend_exec_cbs *cbs, void *ctx,
                   struct daytona_proc **ret, struct sbx_error *err)
{
        const char *nonce = json_string_value(json_object_get(record, "nonce"));
        const char *argv0 = json_string_value(json_object_get(record, "argv0"));
        const char *cwd = json_string_value(json_object_get(record, "cwd"));
        int in = ex_adopt_stdin(json_string_value(json_object_get(record, "stdin")));
        struct daytona_proc *p;

        if (!nonce || strlen(nonce) != DAYTONA_NONCE_LEN || nonce[0] != '~' ||
            strspn(nonce + 1, "0123456789abcdef") != DAYTONA_NONCE_LEN - 1 || in < 0 || !argv0 ||
            !cwd || !spec->exec_id) {
                sbx_error_backend(err, DAYTONA_NAME,
                                  "the exec's record is not one of this "
                                  "backend's");
                return -EINVAL;
        }
        if (bsb->destroyed || !daytona.initialised) {
                sbx_error_set(err, SBX_E_UNUSABLE, json_pack("{s:s}", "state", "destroyed"),
                              "daytona sandbox %s is being destroyed", bsb->id);
                return -ESHUTDOWN;
        }
        p = ex_new(bsb, spec->exec_id, cbs, ctx);
        memcpy(p->nonce, nonce, DAYTONA_NONCE_LEN + 1);
        p->argv0 = xstrdup(argv0);
        p->cwd = xstrdup(cwd);
        p->in = (enum daytona_stdin) in;
        p->adopted = p->adopting = true;
        bsb->adopting++;
        p->posts = 1; /* its files go with the next batch once it is over */
        p->skip_out[0] = offsets[0];
        p->skip_out[1] = offsets[1];
        /* Above every line the relay took before: the count restarts here. */
        p->in_seq = util_wall_ms() * 1000;
        ex_launch(p, spec);
        *ret = p;
        return 0;
}

/* Every recorded exec of sb was adopted: once they are found, the sessions of a previous
 * daemon that none of them uses go (its idle pool). */
void
daytona_exec_adopt_done(struct backend_sandbox *sb)
{
        if (sb->adopting)
                sb->sweep_wanted = true;
        else
                daytona_exec_sweep(sb);
}

/* Deletes the sandbox's sandboxd sessions that no exec of this daemon uses and whose
 * commands are all over (daytona_session_sweep). */
void
daytona_exec_sweep(struct backend_sandbox *sb)
{
        const char **keep = xcalloc(list_count(&ex_all) + 1, sizeof(*keep));
        struct list *l, *tmp;
        size_t n = 0;

        LIST_FOREACH_SAFE(l, tmp, &ex_all)
        {
                struct daytona_proc *p = LIST_ENTRY(l, struct daytona_proc, link);
                if (p->sb == sb && p->session)
                        keep[n++] = p->session->id;
        }
        daytona_session_sweep(sb, keep);
        free(keep);
}
