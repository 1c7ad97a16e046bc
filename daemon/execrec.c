/* execrec.c — the exec journal (execrec.h). */
#include "daemon/execrec.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/util.h"

#define EXECREC_FILE "execs.jsonl"
/* A journal larger than this is not replayed (execrec_set_max_bytes: a smaller one for tests). */
static uint64_t execrec_max_bytes = EXECREC_MAX_BYTES;
/* The live records' lines at most: the journal is compacted before an append would take it past
 * execrec_max_bytes, so it stays replayable however large the records a client makes. */
#define EXECREC_LIVE_MAX (execrec_max_bytes / 2)

static struct {
        char *dir;
        int fd;
        json_t *live;        /* exec_id -> its last record */
        json_t *sizes;       /* exec_id -> the length of its line */
        uint64_t live_bytes; /* of their lines */
        uint64_t bytes;      /* of the journal file */
        size_t lines;        /* appended since the last rewrite */
} jr = {.fd = -1};

void
execrec_set_max_bytes(uint64_t bytes)
{
        execrec_max_bytes = bytes;
}

/* Whether id is a safe record name. */
bool
execrec_id_ok(const char *id)
{
        size_t n = id ? strlen(id) : 0;

        return n > 0 && n <= 64 &&
               strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

/* rec as one journal line, its newline included (new); *len its length. */
static char *
jr_line(json_t *rec, size_t *len)
{
        char *text = json_dumps(rec, JSON_COMPACT);

        *len = strlen(text);
        text = xrealloc(text, *len + 2);
        text[(*len)++] = '\n';
        text[*len] = '\0';
        return text;
}

static int
jr_write(int fd, const char *text, size_t len)
{
        ssize_t w = write(fd, text, len); /* O_APPEND, one write: a line is never interleaved */

        if (w > 0)
                jr.bytes += (uint64_t) w;
        return w == (ssize_t) len ? 0 : w < 0 ? -errno : -EIO;
}

/* Rewrites the journal from the live records (temporary file, rename) and reopens it. */
static int
jr_rewrite(void)
{
        char *path = xasprintf("%s/" EXECREC_FILE, jr.dir), *tmp = xasprintf("%s.tmp", path);
        const char *id;
        json_t *rec;
        struct stat st;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600), r = 0;

        if (fd < 0)
                r = -errno;
        json_object_clear(jr.sizes);
        jr.live_bytes = 0;
        json_object_foreach(jr.live, id, rec)
        {
                size_t len;
                char *text = jr_line(rec, &len);
                json_object_set_new(jr.sizes, id, json_integer((json_int_t) len));
                jr.live_bytes += len;
                if (r == 0)
                        r = jr_write(fd, text, len);
                free(text);
        }
        if (fd >= 0)
                close(fd);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        if (jr.fd >= 0)
                close(jr.fd);
        jr.fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        jr.bytes = jr.fd >= 0 && fstat(jr.fd, &st) == 0 ? (uint64_t) st.st_size : 0;
        jr.lines = 0;
        free(tmp);
        free(path);
        return r < 0 ? r : jr.fd < 0 ? -errno : 0;
}

/* Applies one journal line; false when it is not a record of this version. */
static bool
jr_apply(json_t *line)
{
        const char *id = json_string_value(json_object_get(line, "key"));

        if (!json_is_object(line) || !execrec_id_ok(id) ||
            json_integer_value(json_object_get(line, "version")) != EXECREC_VERSION)
                return false;
        if (json_is_true(json_object_get(line, "forget")))
                json_object_del(jr.live, id);
        else
                json_object_set(jr.live, id, line);
        return true;
}

static unsigned
jr_replay(const char *path, bool *too_big)
{
        struct stat st;
        char *line = NULL;
        size_t cap = 0;
        unsigned bad = 0;
        FILE *f = fopen(path, "re");

        *too_big = false;
        if (!f)
                return 0;
        if (fstat(fileno(f), &st) == 0 && (uint64_t) st.st_size > execrec_max_bytes) {
                *too_big = true;
                fclose(f);
                return 0;
        }
        while (getline(&line, &cap, f) > 0) {
                json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
                if (!jr_apply(j))
                        bad++; /* a line cut by a crash, or not ours */
                json_decref(j);
        }
        free(line);
        fclose(f);
        return bad;
}

/* Replays and compacts the journal. */
json_t *
execrec_open(const char *dir, char **warning)
{
        char *path = xasprintf("%s/" EXECREC_FILE, dir);
        json_t *all = json_array(), *rec;
        const char *id;
        bool too_big;
        unsigned bad;
        int r;

        *warning = NULL;
        free(jr.dir);
        jr.dir = xstrdup(dir);
        json_decref(jr.live);
        jr.live = json_object();
        json_decref(jr.sizes);
        jr.sizes = json_object();
        bad = jr_replay(path, &too_big);
        r = jr_rewrite();
        if (bad || too_big || r < 0)
                *warning =
                        xasprintf("exec journal %s: %s%u unusable lines dropped%s%s", path,
                                  too_big ? "too large, not replayed; " : "", bad,
                                  r < 0 ? "; cannot rewrite it: " : "", r < 0 ? strerror(-r) : "");
        json_object_foreach(jr.live, id, rec)
        {
                json_array_append(all, rec);
        }
        free(path);
        return all;
}

/* Appends line of len bytes, or compacts the journal instead when it holds far more lines than
 * live records or the line would take it past execrec_max_bytes. */
static int
jr_append(const char *text, size_t len)
{
        if (++jr.lines > 4 * json_object_size(jr.live) + 1024 || jr.bytes + len > execrec_max_bytes)
                return jr_rewrite();
        return jr_write(jr.fd, text, len);
}

static uint64_t
jr_size(const char *id)
{
        return (uint64_t) json_integer_value(json_object_get(jr.sizes, id));
}

/* Appends rec. A record that would take the live ones past EXECREC_LIVE_MAX is not kept (an
 * earlier one of its exec is forgotten): its exec does not outlive the daemon. */
int
execrec_put(json_t *rec)
{
        const char *id = json_string_value(json_object_get(rec, "key"));
        size_t len;
        char *text;
        int r;

        if (jr.fd < 0 || !execrec_id_ok(id))
                return -EBADF;
        if (!json_object_get(jr.live, id) && json_object_size(jr.live) >= EXECREC_MAX)
                return -ENOSPC;
        json_object_set_new(rec, "version", json_integer(EXECREC_VERSION));
        text = jr_line(rec, &len);
        if (jr.live_bytes - jr_size(id) + len > EXECREC_LIVE_MAX) {
                free(text);
                execrec_drop(id);
                return -ENOSPC;
        }
        jr.live_bytes += len - jr_size(id);
        json_object_set_new(jr.sizes, id, json_integer((json_int_t) len));
        json_object_set(jr.live, id, rec);
        r = jr_append(text, len);
        free(text);
        return r;
}

/* Appends a forget line. */
void
execrec_drop(const char *id)
{
        json_t *line;
        size_t len;
        char *text;

        if (jr.fd < 0 || !json_object_get(jr.live, id))
                return;
        jr.live_bytes -= jr_size(id);
        json_object_del(jr.sizes, id);
        json_object_del(jr.live, id);
        line = json_pack("{s:i,s:s,s:b}", "version", EXECREC_VERSION, "key", id, "forget", 1);
        text = jr_line(line, &len);
        jr_append(text, len);
        free(text);
        json_decref(line);
}

/* Closes the journal. */
void
execrec_close(void)
{
        if (jr.fd >= 0)
                close(jr.fd);
        jr.fd = -1;
        json_decref(jr.live);
        jr.live = NULL;
        json_decref(jr.sizes);
        jr.sizes = NULL;
        free(jr.dir);
        jr.dir = NULL;
}
