/* bench_ssh.c — exec through the ssh backend against the ssh CLI, measured in the same run.
 *
 *   exec `true` on an open sandbox through a real sandboxd ($SANDBOXD_BIN, default
 *   build/std/sandboxd; the remote sandboxd-agent over direct-streamlocal) vs `ssh HOST true`
 *   per command, and vs `ssh` through a ControlMaster connection opened once (target ratio
 *   <= 0.05 against ControlMaster);
 *   the same exec with agent = off (one exec channel per command, the fallback).
 *
 * The host is a private sshd on 127.0.0.1 (tests/integration/ssh_server.py: its own config,
 * keys and port). Needs root (it logs in as root) and openssh-server; prints "skipped"
 * without them. Run from the top directory: build/std/bench/bench_ssh [N]
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/helper_daemon.h"
#include "protocol/util.h"

struct sshd {
        pid_t pid;
        FILE *in; /* closing it stops the server */
        unsigned port;
        char key[512], kh[512], dir[512];
};

/* Starts ssh_server.py's serve(); 0, or -1 when it could not. */
static int
sshd_start(struct sshd *s)
{
        int to[2], from[2];
        FILE *out;

        if (pipe(to) < 0 || pipe(from) < 0)
                return -1;
        s->pid = fork();
        if (s->pid == 0) {
                dup2(to[0], 0);
                dup2(from[1], 1);
                close(to[1]);
                close(from[0]);
                execlp("python3", "python3", "tests/integration/ssh_server.py", (char *) NULL);
                _exit(127);
        }
        close(to[0]);
        close(from[1]);
        s->in = fdopen(to[1], "w");
        out = fdopen(from[0], "r");
        if (!out || fscanf(out, "%u %511s %511s %511s", &s->port, s->key, s->kh, s->dir) != 4) {
                if (out)
                        fclose(out);
                return -1;
        }
        fclose(out);
        return 0;
}

static void
sshd_stop(struct sshd *s)
{
        int st;

        fclose(s->in);
        waitpid(s->pid, &st, 0);
}

/* Runs argv n times, quietly; the mean wall time in ms, or -1 when one failed. */
static double
time_cmd(char *const *argv, int n)
{
        uint64_t t0 = util_now_ns();
        int st;

        for (int i = 0; i < n; i++) {
                pid_t pid = fork();
                if (pid == 0) {
                        int devnull = open("/dev/null", O_RDWR);
                        dup2(devnull, 0);
                        dup2(devnull, 1);
                        execvp(argv[0], argv);
                        _exit(127);
                }
                if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        return -1;
        }
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

/* exec {argv:["true"]} n times on sandbox name; the mean in ms. */
static double
time_exec(struct bd *d, const char *name, int n)
{
        uint64_t t0 = util_now_ns();

        for (int i = 0; i < n; i++) {
                json_t *r = bd_call(d, "exec",
                                    json_pack("{s:s,s:[s]}", "sandbox", name, "argv", "true"));
                if (!r)
                        exit(1);
                json_decref(r);
        }
        return (double) (util_now_ns() - t0) / 1e6 / n;
}

/* The daemon's exec time with and without the agent; 0 or -1. */
static int
bench_daemon(const struct sshd *s, int n, double *agent, double *plain)
{
        struct bd d = {0};
        char *conf = xasprintf("[backend.ssh]\nknown_hosts = %s\nremote_dir = %s/remote\n"
                               "[backend.ssh.box]\nhost = 127.0.0.1\nport = %u\nuser = root\n"
                               "identity_file = %s\n"
                               "[backend.ssh.plain]\nhost = 127.0.0.1\nport = %u\nuser = root\n"
                               "identity_file = %s\nagent = off\n",
                               s->kh, s->dir, s->port, s->key, s->port, s->key);
        int rc = bd_start(&d, conf, NULL);
        const char *hosts[] = {"box", "plain"};
        double *out[] = {agent, plain};

        free(conf);
        if (rc < 0)
                return -1;
        for (int i = 0; i < 2; i++) {
                json_t *sb = bd_call(&d, "sandbox.create",
                                     json_pack("{s:s,s:s,s:{s:s}}", "backend", "ssh", "name",
                                               hosts[i], "ssh", "host", hosts[i]));
                if (!sb)
                        exit(1);
                json_decref(sb);
                time_exec(&d, hosts[i], 3); /* warm up */
                *out[i] = time_exec(&d, hosts[i], i ? n / 3 + 1 : n);
                json_decref(bd_call(&d, "sandbox.destroy", json_pack("{s:s}", "id", hosts[i])));
        }
        bd_stop(&d);
        return 0;
}

/* The ssh CLI baselines: a connection per command, and through one ControlMaster; 0 or -1. */
static int
bench_cli(const struct sshd *s, int n, double *cli, double *cm)
{
        char port[16], khopt[600], cpath[600];
        /* ssh -p PORT -i KEY -o BatchMode=yes -o KNOWN_HOSTS -o IdentitiesOnly=yes
         *     -o ControlMaster=[12] -o ControlPath=[14] -o ControlPersist=[16] root@127.0.0.1 true
         */
        char *argv[] = {"ssh",
                        "-p",
                        port,
                        "-i",
                        (char *) s->key,
                        "-o",
                        "BatchMode=yes",
                        "-o",
                        khopt,
                        "-o",
                        "IdentitiesOnly=yes",
                        "-o",
                        "ControlMaster=no",
                        "-o",
                        "ControlPath=none",
                        "-o",
                        "ControlPersist=no",
                        "root@127.0.0.1",
                        "true",
                        NULL};
        char *cm_exit[] = {"ssh", "-o", cpath, "-O", "exit", "root@127.0.0.1", NULL};

        snprintf(port, sizeof(port), "%u", s->port);
        snprintf(khopt, sizeof(khopt), "UserKnownHostsFile=%s", s->kh);
        snprintf(cpath, sizeof(cpath), "ControlPath=%s/cm.sock", s->dir);
        *cli = time_cmd(argv, n / 5 + 1);
        argv[12] = "ControlMaster=auto";
        argv[14] = cpath;
        argv[16] = "ControlPersist=120";
        time_cmd(argv, 2); /* the master (ControlPersist keeps it), and one through it */
        *cm = time_cmd(argv, n / 2 + 1);
        time_cmd(cm_exit, 1);
        return *cli < 0 || *cm < 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
        int n = argc > 1 ? atoi(argv[1]) : 100;
        struct sshd s = {0};
        double agent = 0, plain = 0, cli, cm;
        int rc;

        util_json_alloc_init();
        if (geteuid() != 0 || access("/usr/sbin/sshd", X_OK) < 0) {
                printf("bench_ssh: skipped (needs root and openssh-server)\n");
                return 0;
        }
        signal(SIGPIPE, SIG_IGN);
        if (sshd_start(&s) < 0) {
                printf("bench_ssh: skipped (tests/integration/ssh_server.py could not start sshd; "
                       "run from the top directory)\n");
                return 0;
        }
        if (bench_daemon(&s, n, &agent, &plain) < 0) {
                printf("bench_ssh: skipped (cannot start sandboxd; set SANDBOXD_BIN)\n");
                sshd_stop(&s);
                return 0;
        }
        rc = bench_cli(&s, n, &cli, &cm);
        sshd_stop(&s);
        if (rc < 0) {
                printf("bench_ssh: the ssh CLI failed against the test sshd\n");
                return 1;
        }
        printf("exec true [agent]:   daemon %.2f ms; ssh CLI %.1f ms, ratio %.3f; "
               "ssh ControlMaster %.1f ms, ratio %.3f (target <= 0.05)\n",
               agent, cli, agent / cli, cm, agent / cm);
        printf("exec true [agent = off, one exec channel each]: daemon %.1f ms, ratio to "
               "ControlMaster %.2f (the fallback: no target)\n",
               plain, plain / cm);
        return 0;
}
