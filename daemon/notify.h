/* notify.h — the systemd notify protocol (sd_notify) without libsystemd, plus the watchdog.
 *
 * One datagram per state change to the AF_UNIX socket named by $NOTIFY_SOCKET (a leading '@'
 * means an abstract address), as in systemd's man/notify-selfcontained-example.c. The
 * watchdog is a uv_timer on the daemon's loop that sends WATCHDOG=1 every WATCHDOG_USEC/2:
 * the timer firing is the proof that the loop is alive, so a wedged loop stops the pings and
 * systemd restarts the service.
 *
 * Module state is process-global (there is one service manager). Loop thread only. Every
 * function is a harmless no-op when the daemon was not started by systemd.
 */
#ifndef SANDBOXD_NOTIFY_H
#define SANDBOXD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* Longest STATUS= text sent; longer text is cut (at a UTF-8 character boundary). */
#define NOTIFY_STATUS_MAX 1024

/* Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID (watchdog ignored when WATCHDOG_PID names
 * another process), opens the notify socket and starts the watchdog timer on loop (borrowed;
 * the timer is unreferenced, it never keeps the loop alive). Removes the three variables from
 * the environment so children never see them. Returns 0 (also when NOTIFY_SOCKET is unset),
 * -EINVAL for a malformed variable, -EALREADY when already initialised, or a socket error. */
int notify_init(uv_loop_t *loop);

/* True between a successful notify_init() with NOTIFY_SOCKET set and notify_close(). */
bool notify_enabled(void);

/* The watchdog period systemd asked for in microseconds, 0 when the watchdog is off. Pings go
 * out every half of it. */
uint64_t notify_watchdog_usec(void);

/* Sends state (borrowed), newline-separated VAR=value assignments, as one datagram.
 * Returns 0, 0 when disabled, or negative errno (-EAGAIN when the manager's queue is full:
 * the socket is non-blocking so a stuck manager never wedges the loop). */
int notify_send(const char *state);

/* READY=1: the socket accepts and the backends are probed (also after a reload). */
void notify_ready(void);

/* RELOADING=1 with MONOTONIC_USEC=now, at the start of a SIGHUP reload; end with notify_ready(). */
void notify_reloading(void);

/* STOPPING=1, as soon as shutdown begins. */
void notify_stopping(void);

/* STATUS=<formatted text>; newlines become spaces, text is cut at NOTIFY_STATUS_MAX bytes. */
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Stops the watchdog (uv_close of its timer; freed in the close callback) and closes the
 * socket. Later calls are no-ops; notify_init() may be called again afterwards. */
void notify_close(void);

#endif
