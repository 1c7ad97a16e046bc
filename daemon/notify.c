/* notify.c — sd_notify over a plain AF_UNIX datagram socket, and the watchdog timer. */
#include "daemon/notify.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "protocol/util.h"

static struct {
        bool initialised;
        int fd;
        struct sockaddr_un addr;
        socklen_t addrlen;
        uint64_t watchdog_usec;
        uv_timer_t *timer; /* owned; freed in notify_timer_close_cb */
} notify = {.fd = -1};

/* Fills notify.addr from a NOTIFY_SOCKET value: an absolute path or '@' + abstract name. */
static int
notify_parse_address(const char *value)
{
        size_t len = strlen(value);

        if (len < 2 || len >= sizeof(notify.addr.sun_path) || (value[0] != '/' && value[0] != '@'))
                return -EINVAL;
        memset(&notify.addr, 0, sizeof(notify.addr));
        notify.addr.sun_family = AF_UNIX;
        memcpy(notify.addr.sun_path, value, len);
        /* Abstract names start with NUL and are not NUL-terminated; paths include the NUL. */
        if (value[0] == '@') {
                notify.addr.sun_path[0] = '\0';
                notify.addrlen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len);
        } else {
                notify.addrlen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + 1);
        }
        return 0;
}

/* Parses a positive decimal integer without sign, spaces or trailing garbage. */
static int
notify_parse_u64(const char *s, uint64_t *ret)
{
        unsigned long long v;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || v == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Returns the watchdog period meant for this process: 0 when off, -EINVAL when malformed. */
static int
notify_watchdog_from_env(uint64_t *ret)
{
        const char *usec = getenv("WATCHDOG_USEC");
        const char *pid = getenv("WATCHDOG_PID");
        uint64_t v, p;

        *ret = 0;
        if (!usec)
                return 0;
        if (notify_parse_u64(usec, &v) < 0)
                return -EINVAL;
        if (pid) {
                if (notify_parse_u64(pid, &p) < 0)
                        return -EINVAL;
                if (p != (uint64_t) getpid())
                        return 0; /* meant for another process (e.g. our parent) */
        }
        *ret = v;
        return 0;
}

static void
notify_timer_close_cb(uv_handle_t *handle)
{
        free(handle);
}

static void
notify_watchdog_cb(uv_timer_t *timer)
{
        /* Reaching this callback proves the loop turns; that is all systemd wants to know. */
        notify_send("WATCHDOG=1");
}

/* Starts the WATCHDOG=1 timer at half the period; the timer never keeps the loop alive. */
static int
notify_watchdog_start(uv_loop_t *loop, uint64_t usec)
{
        uint64_t ms = usec / 2000;
        int r;

        if (ms == 0)
                ms = 1;
        /* Heap-allocated so a re-init may run before the old timer's close callback. */
        notify.timer = xcalloc(1, sizeof(*notify.timer));
        r = uv_timer_init(loop, notify.timer);
        if (r < 0) {
                free(notify.timer);
                notify.timer = NULL;
                return r;
        }
        uv_unref((uv_handle_t *) notify.timer);
        uv_timer_start(notify.timer, notify_watchdog_cb, ms, ms);
        notify.watchdog_usec = usec;
        return 0;
}

/* Opens the non-blocking datagram socket used for every message. */
static int
notify_open(const char *address)
{
        int r = notify_parse_address(address);

        if (r < 0)
                return r;
        /* Non-blocking: a manager that stopped reading must not stall the event loop. */
        notify.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (notify.fd < 0)
                return -errno;
        return 0;
}

/* Reads the environment, opens the notify socket and starts the watchdog. */
int
notify_init(uv_loop_t *loop)
{
        const char *address = getenv("NOTIFY_SOCKET");
        uint64_t usec = 0;
        int r, wr;

        if (notify.initialised)
                return -EALREADY;
        wr = notify_watchdog_from_env(&usec);
        r = address ? notify_open(address) : 0;
        /* Children (and anything the backends spawn) must never talk to our manager. */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        if (r < 0)
                return r;
        notify.initialised = true;
        if (notify.fd >= 0 && usec > 0)
                r = notify_watchdog_start(loop, usec);
        return r < 0 ? r : wr;
}

/* True when messages go somewhere. */
bool
notify_enabled(void)
{
        return notify.fd >= 0;
}

/* Watchdog period in microseconds, 0 when off. */
uint64_t
notify_watchdog_usec(void)
{
        return notify.watchdog_usec;
}

/* Sends one datagram; the address is given each time so a re-executed manager still gets it. */
int
notify_send(const char *state)
{
        ssize_t n;

        if (notify.fd < 0)
                return 0;
        do {
                n = sendto(notify.fd, state, strlen(state), MSG_NOSIGNAL,
                           (const struct sockaddr *) &notify.addr, notify.addrlen);
        } while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : 0;
}

/* READY=1. */
void
notify_ready(void)
{
        notify_send("READY=1");
}

/* RELOADING=1 plus the monotonic time systemd's Type=notify-reload requires. */
void
notify_reloading(void)
{
        char msg[64];
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                 (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u);
        notify_send(msg);
}

/* STOPPING=1. */
void
notify_stopping(void)
{
        notify_send("STOPPING=1");
}

/* Cuts s to at most max bytes without splitting a UTF-8 sequence. */
static void
notify_cut_utf8(char *s, size_t max)
{
        size_t len = strlen(s);

        if (len <= max)
                return;
        while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
                max--;
        s[max] = '\0';
}

/* STATUS=<text>, one line, bounded. */
void
notify_status(const char *fmt, ...)
{
        char msg[sizeof("STATUS=") + NOTIFY_STATUS_MAX + 4];
        const size_t off = sizeof("STATUS=") - 1;
        va_list ap;

        if (notify.fd < 0)
                return;
        memcpy(msg, "STATUS=", off);
        va_start(ap, fmt);
        vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
        va_end(ap);
        notify_cut_utf8(msg + off, NOTIFY_STATUS_MAX);
        /* A newline would start a new assignment that the text could forge. */
        for (char *p = msg + off; *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';
        notify_send(msg);
}

/* Stops the watchdog and closes the socket. */
void
notify_close(void)
{
        if (notify.timer) {
                uv_timer_stop(notify.timer);
                uv_close((uv_handle_t *) notify.timer, notify_timer_close_cb);
                notify.timer = NULL;
        }
        if (notify.fd >= 0)
                close(notify.fd);
        notify.fd = -1;
        notify.watchdog_usec = 0;
        notify.initialised = false;
}
