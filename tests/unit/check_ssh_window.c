/* check_ssh_window — what a server can make the ssh backend hold for a channel it does not
 * read: the accounting (ssh_window.c) and a real libssh connection (ssh_conn.c, ssh_chan.c) to a
 * paramiko server (tests/data/ssh_flood_server.py) that floods past the window, or keeps to it
 * while the channel pauses after every delivery. */
#include <sys/resource.h>
#include <sys/wait.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "backends/ssh/ssh_conn.h"
#include "backends/ssh/ssh_window.h"
#include "protocol/util.h"

START_TEST(test_window_accounting)
{
        struct ssh_window w = {0};

        ck_assert_uint_eq(ssh_window_hold(&w, 0, SSH_WINDOW_MAX), 0);
        /* one packet past the window is what a server may have in flight */
        ck_assert_uint_eq(ssh_window_hold(&w, 1, SSH_PACKET_MAX), 0);
        ck_assert_uint_eq(ssh_window_held(&w), SSH_WINDOW_MAX + SSH_PACKET_MAX);
        /* a stream's count is what libssh holds now, not a sum of offers */
        ck_assert_uint_eq(ssh_window_hold(&w, 1, SSH_PACKET_MAX + 1), SSH_PACKET_MAX + 1);
        ssh_window_take(&w, 0, SSH_WINDOW_MAX / 2);
        ck_assert_uint_eq(ssh_window_hold(&w, 1, SSH_PACKET_MAX + 1), 0);
        ssh_window_take(&w, 1, SIZE_MAX); /* more than held: none left */
        ck_assert_uint_eq(ssh_window_held(&w), SSH_WINDOW_MAX / 2);
}
END_TEST

struct peer {
        char dir[64];
        FILE *out; /* the server's stdout: its port */
        pid_t pid;
        unsigned port;
        ssh_key key;
};

/* A key pair (ssh-keygen) serving as host key and user key, and the server listening. */
static void
peer_start(struct peer *p)
{
        const char *why = NULL;
        char cmd[256], b64[4096] = {0};
        FILE *f;
        int fds[2];

        ck_assert_int_eq(ssh_dl_load(&why), 0);
        snprintf(p->dir, sizeof(p->dir), "/tmp/check_ssh_window.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(p->dir));
        snprintf(cmd, sizeof(cmd), "ssh-keygen -q -t ed25519 -N '' -f %s/key", p->dir);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cmd, sizeof(cmd), "%s/key", p->dir);
        ck_assert_ptr_nonnull(f = fopen(cmd, "r"));
        ck_assert_uint_gt(fread(b64, 1, sizeof(b64) - 1, f), 0);
        fclose(f);
        ck_assert_int_eq(ssh_pki_import_privkey_base64(b64, NULL, NULL, NULL, &p->key), SSH_OK);
        ck_assert_int_eq(pipe(fds), 0);
        p->pid = fork();
        ck_assert_int_ge(p->pid, 0);
        if (p->pid == 0) {
                dup2(fds[1], 1);
                execl("/usr/bin/python3", "python3", "tests/data/ssh_flood_server.py", cmd,
                      (char *) NULL);
                _exit(127);
        }
        close(fds[1]);
        p->out = fdopen(fds[0], "r");
        ck_assert_int_eq(fscanf(p->out, "%u", &p->port), 1);
}

/* The server has exited on its own: 0. */
static void
peer_stop(struct peer *p)
{
        char cmd[128];
        int st;

        ck_assert_int_eq(waitpid(p->pid, &st, 0), p->pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the server failed: %d", st);
        fclose(p->out);
        ssh_key_free(p->key);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", p->dir);
        ck_assert_int_eq(system(cmd), 0);
}

struct run {
        uv_loop_t loop;
        uv_timer_t resumer;
        struct ssh_conn *conn;
        struct ssh_chan *ch;
        const char *command;
        bool pty;
        bool resume; /* honest: pause after every delivery, resume soon */
        size_t got, deliveries;
        char *closed_error, *down_why;
        bool closed, cut_off, up_after; /* up_after: the connection outlived the channel */
        int exit_status;
};

static void
run_resume_cb(uv_timer_t *h)
{
        struct run *r = h->data;

        if (r->ch)
                ssh_chan_resume(r->ch);
}

static void
run_data_cb(void *ctx, int stream, const char *data, size_t len)
{
        struct run *r = ctx;

        r->got += len;
        ssh_chan_pause(r->ch);
        /* Now and then a pause long enough for the server to fill the window: libssh holds
         * a window's worth when the channel resumes, and the reader takes little of it. */
        if (r->resume)
                uv_timer_start(&r->resumer, run_resume_cb, ++r->deliveries % 8 ? 0 : 5, 0);
}

static void
run_close_cb(void *ctx, const struct ssh_chan_end *end)
{
        struct run *r = ctx;

        r->ch = NULL;
        r->closed = true;
        r->exit_status = end->exit_status;
        r->closed_error = end->error ? xstrdup(end->error) : NULL;
        r->cut_off = ssh_conn_cut_off(r->conn);
        r->up_after = ssh_conn_up(r->conn);
        if (r->up_after) { /* else it is going: its owner hears next */
                ssh_conn_close(r->conn);
                r->conn = NULL;
        }
}

static const struct ssh_chan_cbs run_chan_cbs = {
        .on_data = run_data_cb,
        .on_close = run_close_cb,
};

static char *
run_hostkey_cb(void *ctx, ssh_key key)
{
        return NULL; /* the server is the test's own */
}

static void
run_ready_cb(void *ctx, struct ssh_conn *c, const char *error)
{
        struct run *r = ctx;
        struct ssh_chan_spec spec = {.kind = SSH_CHAN_EXEC,
                                     .command = r->command,
                                     .pty = r->pty,
                                     .rows = 24,
                                     .cols = 80};

        ck_assert_msg(!error, "cannot connect: %s", error);
        r->ch = ssh_chan_open(c, &spec, &run_chan_cbs, r);
        ck_assert_ptr_nonnull(r->ch);
}

static void
run_down_cb(void *ctx, struct ssh_conn *c, const char *why)
{
        struct run *r = ctx;

        r->down_why = xstrdup(why);
        ck_assert(r->cut_off == ssh_conn_cut_off(c));
        ssh_conn_close(c);
        r->conn = NULL;
}

static const struct ssh_conn_cbs run_conn_cbs = {
        .check_hostkey = run_hostkey_cb,
        .on_ready = run_ready_cb,
        .on_down = run_down_cb,
};

/* Runs command on the server until the channel is over. */
static void
run_command(struct run *r, struct peer *p)
{
        struct ssh_conn_config cfg = {.host = "127.0.0.1",
                                      .port = p->port,
                                      .user = "test",
                                      .key = p->key,
                                      .key_label = "identity_file (test)",
                                      .connect_timeout_ms = 30000,
                                      .fd = -1};

        ck_assert_int_eq(uv_loop_init(&r->loop), 0);
        uv_timer_init(&r->loop, &r->resumer);
        r->resumer.data = r;
        r->conn = ssh_conn_open(&r->loop, &cfg, &run_conn_cbs, r);
        while (r->conn)
                uv_run(&r->loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *) &r->resumer, NULL);
        uv_run(&r->loop, UV_RUN_DEFAULT);
        ck_assert_int_eq(uv_loop_close(&r->loop), 0);
}

static long
max_rss_kib(void)
{
        struct rusage ru;

        ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
        return ru.ru_maxrss;
}

/* 128 MiB sent at a paused channel (one stream: a pty) ignoring its window: the connection is
 * cut off once libssh holds the window and a packet, naming the server, and memory never
 * holds the flood (less than half of it: under ASan its quarantine keeps what libssh freed
 * until the cut, about 40 MiB; without the bound libssh would hold all 128). */
START_TEST(test_flood_past_window_is_cut_off)
{
        const size_t flood = (size_t) 128 << 20;
        struct run r = {.command = "flood 134217728", .pty = true};
        struct peer p;
        char want[64];
        long rss0;

        peer_start(&p);
        rss0 = max_rss_kib();
        run_command(&r, &p);
        snprintf(want, sizeof(want), "127.0.0.1:%u sent ", p.port);
        ck_assert_ptr_nonnull(r.closed_error);
        ck_assert_msg(strstr(r.closed_error, want) &&
                              strstr(r.closed_error, "bytes past the window"),
                      "%s", r.closed_error);
        ck_assert_ptr_nonnull(r.down_why);
        ck_assert_str_eq(r.down_why, r.closed_error);
        ck_assert(r.cut_off);
        ck_assert_uint_lt(r.got, flood);
        ck_assert(!r.up_after);
        ck_assert_msg(max_rss_kib() - rss0 < (long) (flood >> 11), "RSS grew by %ld KiB",
                      max_rss_kib() - rss0);
        free(r.closed_error);
        free(r.down_why);
        peer_stop(&p);
}
END_TEST

/* 16 MiB from a server that keeps to the window, to a channel that pauses after every
 * delivery (16 KiB at most) and resumes soon: everything arrives, nothing is cut off. libssh
 * 0.10's reads grow the window whatever it still holds, so a backend that read only what the
 * owner takes would let this pile up past its limit (4.4 MB measured) and cut off an honest
 * server. */
START_TEST(test_honest_server_paused_often_gets_through)
{
        struct run r = {.command = "honest 16777216", .resume = true};
        struct peer p;

        peer_start(&p);
        run_command(&r, &p);
        ck_assert_msg(!r.closed_error, "%s", r.closed_error);
        ck_assert_ptr_null(r.down_why);
        ck_assert_uint_eq(r.got, (size_t) 16 << 20);
        ck_assert_int_eq(r.exit_status, 0);
        peer_stop(&p);
}
END_TEST

/* 16 MiB through stdout and stderr from a server that keeps to the window, at a channel
 * paused at its first delivery: libssh 0.10 widens the window for one stream while the
 * other's data waits, so the server was not held back and is not to blame. Past the bound
 * only that channel ends, saying why; the connection stays up. */
START_TEST(test_two_streams_unread_end_the_channel_only)
{
        struct run r = {.command = "mixed 16777216"};
        struct peer p;

        peer_start(&p);
        run_command(&r, &p);
        ck_assert_ptr_nonnull(r.closed_error);
        ck_assert_msg(strstr(r.closed_error, "output waited unread on 127.0.0.1:"), "%s",
                      r.closed_error);
        ck_assert(r.up_after);
        ck_assert(!r.cut_off);
        ck_assert_ptr_null(r.down_why);
        free(r.closed_error);
        peer_stop(&p);
}
END_TEST

static Suite *
ssh_window_suite(void)
{
        Suite *s = suite_create("ssh_window");
        TCase *tc = tcase_create("ssh_window");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_window_accounting);
        tcase_add_test(tc, test_flood_past_window_is_cut_off);
        tcase_add_test(tc, test_honest_server_paused_often_gets_through);
        tcase_add_test(tc, test_two_streams_unread_end_the_channel_only);
        suite_add_tcase(s, tc);
        return s;
}

int
main(void)
{
        SRunner *sr = srunner_create(ssh_window_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
