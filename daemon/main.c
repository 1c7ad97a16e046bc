/* main.c — sandboxd: arguments, configuration, state directory, listener, signals, shutdown. */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/caller_file.h"
#include "backends/credenv.h"
#include "backends/spawn.h"
#include "daemon/approval.h"
#include "daemon/audit.h"
#include "daemon/conn.h"
#include "daemon/daemon.h"
#include "daemon/hostpaths.h"
#include "daemon/log.h"
#include "daemon/notify.h"
#include "daemon/proc.h"
#include "daemon/records.h"
#include "daemon/sandbox.h"
#include "daemon/secrets.h"
#include "daemon/server.h"
#include "protocol/sockpath.h"
#include "protocol/util.h"

/* The configuration of the system daemon (root). A daemon of another uid reads its user's own,
 * $XDG_CONFIG_HOME/sandboxd/sandboxd.conf; $SANDBOXD_CONFIG names another default. A missing
 * default file is fine; a missing --config file is not. */
#define DEFAULT_CONFIG SANDBOXD_SYSCONFDIR "/sandboxd/sandboxd.conf"

struct daemon_state g;

static uv_signal_t sig_term, sig_int, sig_hup;
static uv_timer_t status_timer;
static int exit_code;
static bool check_config_only;
static char *reload_error; /* why the last configuration reload failed, NULL when it did not */
static uv_timer_t ready_timer;
static unsigned probes_pending;
static bool ready_sent;
static int secrets_moved; /* credential variables taken out of the environment at start */

/* READY=1 waits at most this long for the backend probes (a remote docker host that does
 * not answer must not keep the service "activating" until systemd gives up). */
#define MAIN_PROBE_TIMEOUT_MS 10000

static const struct option main_options[] = {
        {"config", required_argument, NULL, 'c'},
        {"socket", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'S'},
        {"verbose", no_argument, NULL, 'v'},
        {"check-config", no_argument, NULL, 'C'},
        {"foreground", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
};

static void
main_usage(FILE *f)
{
        fprintf(f,
                "usage: sandboxd [options]\n"
                "  -c, --config FILE     configuration (default %s as root, else\n"
                "                        $XDG_CONFIG_HOME/sandboxd/sandboxd.conf, or\n"
                "                        $SANDBOXD_CONFIG; missing is fine unless given)\n"
                "  -s, --socket PATH     listen here (else $SANDBOXD_SOCKET, systemd's socket,\n"
                "                        /run/sandboxd/sandboxd.sock as root,\n"
                "                        $XDG_RUNTIME_DIR/sandboxd/sandboxd.sock otherwise,\n"
                "                        /tmp/sandboxd-UID/sandboxd.sock without it)\n"
                "  -S, --state-dir DIR   state directory (spools, sandboxes, approvals)\n"
                "  -v, --verbose         debug logging\n"
                "      --check-config    validate configuration and policy, then exit\n"
                "  -f, --foreground      accepted for compatibility (sandboxd never forks)\n"
                "  -V, --version\n",
                DEFAULT_CONFIG);
}

/* Whether uid is root or the daemon's owner. */
bool
daemon_is_admin(uid_t uid)
{
        return uid == 0 || uid == g.uid;
}

/* The first path of a directory list systemd passes ($STATE_DIRECTORY, $RUNTIME_DIRECTORY:
 * colon-separated, absolute), new; NULL when unset or not absolute. */
static char *
main_env_dir(const char *name)
{
        const char *v = getenv(name);

        if (!v || v[0] != '/')
                return NULL;
        return xstrndup(v, strcspn(v, ":"));
}

/* systemd's RuntimeDirectory=, else the lookup sandboxctl uses too (protocol/sockpath.c). */
static char *
main_default_socket(bool *private_dir)
{
        char *dir = main_env_dir("RUNTIME_DIRECTORY"), *r;

        *private_dir = false;
        if (dir) {
                r = xasprintf("%s/sandboxd.sock", dir);
                free(dir);
                return r;
        }
        return sockpath_default(geteuid(), getenv("XDG_RUNTIME_DIR"), private_dir);
}

/* The /tmp/sandboxd-UID fallback: ours and private, or we do not listen there. */
static int
main_private_socket_dir(const char *path, struct sbx_error *err)
{
        char *dir = xstrndup(path, (size_t) (strrchr(path, '/') - path)), *why = NULL;
        int r;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                r = -errno;
        else
                r = sockpath_check_dir(path, geteuid(), &why);
        if (r < 0)
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "refusing to listen on %s: %s", path,
                              why ? why : strerror(-r));
        free(why);
        free(dir);
        return r;
}

static char *
main_default_state_dir(void)
{
        const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char *dir = main_env_dir("STATE_DIRECTORY");

        if (dir)
                return dir;
        if (geteuid() == 0)
                return xstrdup("/var/lib/sandboxd");
        if (xdg && *xdg)
                return xasprintf("%s/sandboxd", xdg);
        return xasprintf("%s/.local/state/sandboxd", home ? home : "/tmp");
}

static int
main_mkdir_p(const char *path)
{
        char *p = xstrdup(path);
        int r = 0;

        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        r = -errno;
                *s = '/';
        }
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
                r = -errno;
        else
                r = chmod(p, 0700) < 0 ? -errno : 0;
        free(p);
        return r;
}

static void
main_status_cb(uv_timer_t *t)
{
        /* Give memory freed after a burst (large outputs, many connections) back to the
         * system, so an idle daemon stays small. */
        malloc_trim(0);
        /* A failed reload stays in the status line until a reload succeeds. */
        notify_status("%u connections, %u sandboxes, %u processes running%s%s%s%s", conn_count(),
                      sandbox_count(), proc_running_count(),
                      reload_error ? "; config reload failed, previous configuration kept: " : "",
                      reload_error ? reload_error : "",
                      g.policy_error ? "; policy reload failed, previous policy kept: " : "",
                      g.policy_error ? g.policy_error : "");
}

static void
main_stopped_cb(void *ctx)
{
        uv_stop(g.loop);
}

static void
main_procs_killed_cb(void *ctx)
{
        sandbox_destroy_all(main_stopped_cb, NULL);
}

static void
main_term_cb(uv_signal_t *s, int signum)
{
        if (g.stopping)
                return;
        g.stopping = true;
        log_info("%s received: stopping (killing %u running processes)", strsignal(signum),
                 proc_running_count());
        notify_stopping();
        server_close();
        conn_broadcast("daemon.stopping", json_pack("{s:s}", "reason", strsignal(signum)));
        proc_kill_all(NULL, main_procs_killed_cb, NULL);
}

/* The configuration file read when --config is not given (new). */
static char *
main_default_config(void)
{
        const char *env = getenv("SANDBOXD_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME");
        const char *home = getenv("HOME");

        if (env && *env)
                return xstrdup(env);
        if (geteuid() == 0)
                return xstrdup(DEFAULT_CONFIG);
        if (xdg && xdg[0] == '/')
                return xasprintf("%s/sandboxd/sandboxd.conf", xdg);
        return xasprintf("%s/.config/sandboxd/sandboxd.conf", home ? home : "/nonexistent");
}

/* The file the configuration comes from (borrowed). */
static const char *
main_config_file(void)
{
        static char *dflt;

        if (g.config_path)
                return g.config_path;
        if (!dflt)
                dflt = main_default_config();
        return dflt;
}

static int
main_load_config(struct config **ret, struct sbx_error *err)
{
        return config_load(main_config_file(), g.config_path != NULL, ret, err);
}

static void
main_hup_cb(uv_signal_t *s, int signum)
{
        struct config *c = NULL;
        struct sbx_error err = {0};

        notify_reloading();
        if (main_load_config(&c, &err) < 0) {
                log_warn("configuration reload failed, keeping the previous one: %s", err.message);
                free(reload_error);
                reload_error = xstrdup(err.message ? err.message : "unknown error");
                main_status_cb(NULL);
                sbx_error_clear(&err);
                notify_ready();
                return;
        }
        /* Paths that were fixed at start (socket, state dir) keep their values. */
        config_free(g.config);
        g.config = c;
        audit_set_limits(c->audit_max_bytes, (unsigned) c->audit_keep);
        free(reload_error);
        reload_error = NULL;
        conn_set_limits(c->max_message_bytes, c->conn_write_buffer_max, c->max_pending_requests,
                        c->max_pending_requests_per_uid, c->max_input_bytes_per_uid);
        caller_file_set_limits((unsigned) c->max_helpers_per_uid);
        log_set_level(!strcmp(c->log_level, "debug") ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
        if (server_reload_policy(&err) < 0) {
                main_status_cb(NULL);
                sbx_error_clear(&err);
        } else {
                log_info("configuration reloaded");
                main_status_cb(NULL);
        }
        notify_ready();
}

static int
main_parse_args(int argc, char **argv, const char **socket, bool *verbose)
{
        int c;

        while ((c = getopt_long(argc, argv, "c:s:S:vfhV", main_options, NULL)) != -1) {
                switch (c) {
                case 'c':
                        g.config_path = xstrdup(optarg);
                        break;
                case 's':
                        *socket = optarg;
                        break;
                case 'S':
                        g.state_dir = xstrdup(optarg);
                        break;
                case 'v':
                        *verbose = true;
                        break;
                case 'C':
                        check_config_only = true;
                        break;
                case 'f':
                        break;
                case 'h':
                        main_usage(stdout);
                        exit(0);
                case 'V':
                        printf("sandboxd %s (protocol 1)\n", SANDBOXD_VERSION);
                        exit(0);
                default:
                        main_usage(stderr);
                        return -1;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sandboxd: unexpected argument '%s'\n", argv[optind]);
                return -1;
        }
        return 0;
}

static int
main_setup(const char *socket_arg, struct sbx_error *err)
{
        const char *env_sock = getenv("SANDBOXD_SOCKET");
        const char *sock = socket_arg ? socket_arg : (env_sock && *env_sock) ? env_sock : NULL;
        bool private_dir = false;
        char *abs;
        int r;

        if (!g.state_dir)
                g.state_dir = g.config->state_dir ? xstrdup(g.config->state_dir)
                                                  : main_default_state_dir();
        r = main_mkdir_p(g.state_dir);
        if (r < 0) {
                sbx_error_set(err, SBX_E_INTERNAL, NULL, "cannot create state directory '%s': %s",
                              g.state_dir, strerror(-r));
                return r;
        }
        abs = realpath(g.state_dir, NULL);
        if (abs) {
                free(g.state_dir);
                g.state_dir = abs;
        }
        /* --socket and $SANDBOXD_SOCKET win over systemd's socket; the config key and the
         * default only apply when systemd passed none. */
        g.socket_path = sock               ? xstrdup(sock)
                        : g.config->socket ? xstrdup(g.config->socket)
                                           : main_default_socket(&private_dir);
        if (private_dir && !getenv("LISTEN_FDS") &&
            (r = main_private_socket_dir(g.socket_path, err)) < 0)
                return r;
        /* With socket activation server_open() replaces g.socket_path by the real path. */
        r = server_open(g.loop, g.socket_path, sock != NULL, g.config->socket_group, err);
        g.protected_paths[0] = g.state_dir;
        g.protected_paths[1] = main_config_file();
        g.protected_paths[2] = g.socket_path;
        return r;
}

static int
main_init_backends(struct sbx_error *err)
{
        for (const struct backend_ops *const *b = backend_all(); *b; b++) {
                json_t *cfg = json_deep_copy(config_backend(g.config, (*b)->name));
                int r;
                if (!(*b)->init) {
                        json_decref(cfg);
                        continue;
                }
                /* Every backend gets these and reads what it knows (file_timeout_ms bounds the
                 * helpers a backend runs file ops in, when it does: local). */
                json_object_set_new(
                        cfg, "drain_grace_ms",
                        json_sprintf("%llu", (unsigned long long) g.config->drain_grace_ms));
                json_object_set_new(
                        cfg, "file_timeout_ms",
                        json_sprintf("%llu",
                                     (unsigned long long) MAX(g.config->file_timeout_s, 1) * 1000));
                /* What a backend creates is labelled with the daemon it belongs to, so that
                 * orphan removal at start-up never touches another daemon's sandboxes. */
                if (!json_object_get(cfg, "instance"))
                        json_object_set_new(cfg, "instance", json_string(g.state_dir));
                /* A backend that takes a secret from the file checks who can read it. */
                if (g.config->path)
                        json_object_set_new(cfg, "config_file", json_string(g.config->path));
                /* Where a backend may keep files of its own (singularity: its scratch
                 * fallback); set by the daemon, never by the section. */
                json_object_set_new(cfg, "state_dir", json_string(g.state_dir));
                /* The socket, for backends that hide it from their sandboxes. */
                json_object_set_new(cfg, "daemon_socket", json_string(g.socket_path));
                r = (*b)->init(g.loop, cfg, err);
                json_decref(cfg);
                if (r < 0) {
                        sbx_error_prefix(err, "backend %s", (*b)->name);
                        return r;
                }
        }
        return 0;
}

static void
main_signals(void)
{
        signal(SIGPIPE, SIG_IGN);
        uv_signal_init(g.loop, &sig_term);
        uv_signal_init(g.loop, &sig_int);
        uv_signal_init(g.loop, &sig_hup);
        uv_signal_start(&sig_term, main_term_cb, SIGTERM);
        uv_signal_start(&sig_int, main_term_cb, SIGINT);
        uv_signal_start(&sig_hup, main_hup_cb, SIGHUP);
}

static void
main_close_walk_cb(uv_handle_t *h, void *arg)
{
        if (!uv_is_closing(h))
                uv_close(h, NULL);
}

static void
main_shutdown(void)
{
        hostpaths_shutdown(); /* what waits on them fails while its client is still there */
        conn_close_all();
        proc_shutdown();
        for (const struct backend_ops *const *b = backend_all(); *b; b++)
                if ((*b)->shutdown)
                        (*b)->shutdown();
        sandbox_shutdown();
        notify_close();
        /* Closing the handles restores the default actions: a second TERM must not kill the
         * daemon in the middle of its orderly exit, so the signals are blocked across the
         * switch to SIG_IGN (which discards one that came meanwhile). */
        sigset_t term, old;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGHUP);
        sigprocmask(SIG_BLOCK, &term, &old);
        uv_close((uv_handle_t *) &sig_term, NULL);
        uv_close((uv_handle_t *) &sig_int, NULL);
        uv_close((uv_handle_t *) &sig_hup, NULL);
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        sigprocmask(SIG_SETMASK, &old, NULL);
        uv_close((uv_handle_t *) &status_timer, NULL);
        if (!uv_is_closing((uv_handle_t *) &ready_timer))
                uv_close((uv_handle_t *) &ready_timer, NULL);
        /* Let the close callbacks cascade (processes release their backend handles), then
         * close whatever is left. */
        uv_run(g.loop, UV_RUN_DEFAULT);
        uv_walk(g.loop, main_close_walk_cb, NULL);
        uv_run(g.loop, UV_RUN_DEFAULT);
        if (uv_loop_close(g.loop) != 0)
                log_warn("event loop not empty at exit");
        records_shutdown();
        caller_file_shutdown();
        approval_shutdown();
        audit_close();
        policy_free(g.policy);
        config_free(g.config);
        free(g.state_dir);
        free(g.socket_path);
        free(g.config_path);
        free(g.policy_error);
        free(reload_error);
        credenv_clear();
}

/* Audit log and persisted approvals in the state directory. Neither stops the daemon: the
 * policy is enforced without them (docs/policy.md says why). */
static void
main_policy_state(void)
{
        struct sbx_error err = {0};
        char *dir = xasprintf("%s/audit", g.state_dir);

        if (audit_open(dir, g.config->audit_max_bytes, (unsigned) g.config->audit_keep, &err) < 0) {
                log_warn("audit log unavailable, decisions are not recorded: %s", err.message);
                sbx_error_clear(&err);
        }
        free(dir);
        /* The audit directory is below the state directory already; named for clarity. */
        if (audit_dir())
                g.protected_paths[3] = audit_dir();
        approval_init(g.state_dir);
}

static int
main_check_config(void)
{
        struct sbx_error err = {0};
        struct config *c = NULL;
        struct policy *p = NULL;

        if (main_load_config(&c, &err) < 0) {
                /* Every problem of the file, one per line. */
                for (char *save = NULL, *l = strtok_r(err.message, "\n", &save); l;
                     l = strtok_r(NULL, "\n", &save))
                        fprintf(stderr, "sandboxd: %s\n", l);
                sbx_error_clear(&err);
                return 1;
        }
        if (c->policy_file && policy_load(c->policy_file, true, &p, &err) < 0) {
                fprintf(stderr, "sandboxd: %s\n", err.message);
                sbx_error_clear(&err);
                config_free(c);
                return 1;
        }
        printf("configuration OK (%s)%s%s\n", c->path ? c->path : "defaults",
               c->policy_file ? ", policy OK: " : "", c->policy_file ? c->policy_file : "");
        policy_free(p);
        config_free(c);
        return 0;
}

/* Raises the soft RLIMIT_NOFILE to the hard limit (every connection, pipe and spool file is
 * an fd); the commands we run get the original soft limit back (select() users expect it). */
static void
main_raise_nofile(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        spawn_set_child_nofile((uint64_t) rl.rlim_cur);
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warn("cannot raise the open files limit: %s", strerror(errno));
}

static void
main_ready(void)
{
        if (ready_sent || g.stopping)
                return;
        ready_sent = true;
        uv_timer_stop(&ready_timer);
        log_info("ready");
        notify_ready();
        main_status_cb(NULL);
}

static void
main_probe_cb(void *ctx, bool available, const char *reason, const char *hint, json_t *details)
{
        const struct backend_ops *b = ctx;

        if (available)
                log_info("backend %s: available", b->name);
        else
                log_info("backend %s: not available: %s%s%s%s", b->name, reason ? reason : "?",
                         hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
        json_decref(details);
        if (--probes_pending == 0)
                main_ready();
}

static void
main_probe_timeout_cb(uv_timer_t *t)
{
        log_warn("%u backend probe(s) did not answer within %d s; ready without them",
                 probes_pending, MAIN_PROBE_TIMEOUT_MS / 1000);
        main_ready();
}

static void
main_restored_cb(void *ctx)
{
        if (--probes_pending == 0)
                main_ready();
}

/* Probes every backend once and sends READY=1 when all have answered (or after a timeout). */
static void
main_probe_backends(void)
{
        uv_timer_init(g.loop, &ready_timer);
        uv_timer_start(&ready_timer, main_probe_timeout_cb, MAIN_PROBE_TIMEOUT_MS, 0);
        uv_unref((uv_handle_t *) &ready_timer);
        probes_pending = 1;
        for (const struct backend_ops *const *b = backend_all(); *b; b++) {
                if (!(*b)->probe)
                        continue;
                probes_pending++;
                (*b)->probe((void *) *b, main_probe_cb);
        }
        /* Recorded sandboxes are re-adopted (and orphans removed) before READY as well. */
        probes_pending++;
        records_restore(main_restored_cb, NULL);
        if (--probes_pending == 0)
                main_ready();
}

/* Entry point. */
int
main(int argc, char **argv)
{
        struct sbx_error err = {0};
        const char *socket_arg = NULL;
        bool verbose = false;

        util_json_alloc_init();
        /* Before anything secret is read (configuration, backend credentials): no process of
         * our uid may ptrace us or read our memory, environment or descriptors, and the
         * credentials in our environment move into memory (backends read them from there). */
        if (secrets_protect_process(&secrets_moved) < 0)
                fprintf(stderr, "sandboxd: cannot make the process non-dumpable: %s\n",
                        strerror(errno));
        /* libcurl is set up at the first HTTP request (backends/http.c), not here. */
        if (main_parse_args(argc, argv, &socket_arg, &verbose) < 0)
                return 64;
        if (check_config_only)
                return main_check_config();
        log_init(verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
        main_raise_nofile();
        g.loop = uv_default_loop();
        g.uid = geteuid();
        g.started_ms = util_now_ms();
        if (main_load_config(&g.config, &err) < 0)
                goto fatal;
        if (!verbose && !strcmp(g.config->log_level, "debug"))
                log_set_level(LOG_LEVEL_DEBUG);
        conn_set_limits(g.config->max_message_bytes, g.config->conn_write_buffer_max,
                        g.config->max_pending_requests, g.config->max_pending_requests_per_uid,
                        g.config->max_input_bytes_per_uid);
        caller_file_set_limits((unsigned) g.config->max_helpers_per_uid);
        if (server_reload_policy(&err) < 0)
                goto fatal;
        /* Orphaned grandchildren of our execs are re-parented to us and reaped at once, so a
         * process group empties when its members die. */
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        main_signals();
        notify_init(g.loop);
        if (main_setup(socket_arg, &err) < 0 || main_init_backends(&err) < 0)
                goto fatal;
        if (secrets_moved > 0)
                log_info("%d credential variable(s) moved out of the environment (docs/systemd.md)",
                         secrets_moved);
        main_policy_state();
        proc_init(g.loop);
        sandbox_init(g.loop);
        uv_timer_init(g.loop, &status_timer);
        uv_timer_start(&status_timer, main_status_cb, 0, 5000);
        uv_unref((uv_handle_t *) &status_timer);
        log_info("sandboxd %s listening on %s%s (state %s, libuv %s, jansson %s)", SANDBOXD_VERSION,
                 g.socket_path ? g.socket_path : "an unnamed socket",
                 server_activated() ? " (from systemd)" : "", g.state_dir, uv_version_string(),
                 JANSSON_VERSION);
        main_probe_backends();
        uv_run(g.loop, UV_RUN_DEFAULT);
        log_info("stopped");
        main_shutdown();
        return exit_code;
fatal:
        log_err("%s", err.message ? err.message : "start-up failed");
        sbx_error_clear(&err);
        return 1;
}
