/* docker_tar.c — the minimal ustar writer and streaming reader the archive API needs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backends/docker/docker_int.h"

/* A numeric field: octal digits and a NUL (width includes it), or GNU base-256 (0x80, then
 * big-endian bytes) for a value they cannot hold, such as a uid of 2^21 or more (LDAP and SSSD
 * hand those out): dropping its high digits would give the entry to another uid. */
static void
docker_tar_octal(char *field, size_t width, uint64_t v)
{
        if (v >> (3 * (width - 1))) {
                for (size_t i = width; i-- > 1; v >>= 8)
                        field[i] = (char) (v & 0xff);
                field[0] = (char) 0x80;
                return;
        }
        for (size_t i = width - 1; i-- > 0; v >>= 3)
                field[i] = (char) ('0' + (v & 7));
        field[width - 1] = '\0';
}

static void
docker_tar_header(struct buf *out, const char *name, char type, unsigned mode, uint64_t size,
                  unsigned uid, unsigned gid)
{
        unsigned char h[512];
        unsigned sum = 0;

        memset(h, 0, sizeof(h));
        memcpy(h, name, MIN(strlen(name), 100));
        docker_tar_octal((char *) h + 100, 8, mode & 07777);
        docker_tar_octal((char *) h + 108, 8, uid);
        docker_tar_octal((char *) h + 116, 8, gid);
        docker_tar_octal((char *) h + 124, 12, size);
        docker_tar_octal((char *) h + 136, 12, util_wall_ms() / 1000);
        memset(h + 148, ' ', 8);
        h[156] = (unsigned char) type;
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        for (size_t i = 0; i < sizeof(h); i++)
                sum += h[i];
        snprintf((char *) h + 148, 8, "%06o", sum);
        h[155] = ' ';
        buf_append(out, h, sizeof(h));
}

static void
docker_tar_data(struct buf *out, const void *data, size_t len)
{
        static const char zero[512];

        buf_append(out, data, len);
        if (len % 512)
                buf_append(out, zero, 512 - len % 512);
}

/* One entry (GNU long name when > 100 bytes), then its padded data. */
static void
docker_tar_entry(struct buf *out, const char *name, char type, unsigned mode, unsigned uid,
                 unsigned gid, const void *data, size_t len)
{
        size_t nlen = strlen(name);

        if (nlen > 100) {
                docker_tar_header(out, "././@LongLink", 'L', 0644, nlen + 1, 0, 0);
                docker_tar_data(out, name, nlen + 1);
        }
        docker_tar_header(out, name, type, mode, len, uid, gid);
        docker_tar_data(out, data, len);
}

/* Appends one regular file entry. */
void
docker_tar_file(struct buf *out, const char *name, unsigned mode, const void *data, size_t len)
{
        docker_tar_entry(out, name, '0', mode, 0, 0, data, len);
}

/* Appends one directory entry owned by uid:gid. */
void
docker_tar_dir(struct buf *out, const char *name, unsigned mode, unsigned uid, unsigned gid)
{
        docker_tar_entry(out, name, '5', mode, uid, gid, "", 0);
}

/* Appends the end-of-archive marker. */
void
docker_tar_end(struct buf *out)
{
        static const char zero[1024];

        buf_append(out, zero, sizeof(zero));
}

static uint64_t
docker_tar_num(const unsigned char *f, size_t width)
{
        uint64_t v = 0;

        if (f[0] & 0x80) { /* base-256 */
                for (size_t i = 1; i < width; i++)
                        v = (v << 8) | f[i];
                return v;
        }
        for (size_t i = 0; i < width && f[i]; i++) {
                if (f[i] == ' ')
                        continue;
                if (f[i] < '0' || f[i] > '7')
                        break;
                v = (v << 3) | (uint64_t) (f[i] - '0');
        }
        return v;
}

static bool
docker_tar_zero(const unsigned char *h)
{
        for (size_t i = 0; i < 512; i++)
                if (h[i])
                        return false;
        return true;
}

/* A complete header is in r->hdr: set up the entry. */
static int
docker_tar_begin(struct docker_tar_reader *r)
{
        struct docker_tar_entry e;
        char type = (char) r->hdr[156];

        if (docker_tar_zero(r->hdr))
                return 0;
        memset(&e, 0, sizeof(e));
        e.size = docker_tar_num(r->hdr + 124, 12);
        e.mode = (unsigned) docker_tar_num(r->hdr + 100, 8);
        e.type = type ? type : '0';
        r->left = e.size;
        r->pad = (512 - e.size % 512) % 512;
        r->skipping = (type == 'L' || type == 'x' || type == 'g' || type == 'K');
        r->collecting_long = (type == 'L');
        r->long_len = 0;
        if (r->skipping)
                return 0;
        if (r->have_longname) {
                snprintf(e.name, sizeof(e.name), "%s", r->longname);
                r->have_longname = false;
        } else if (r->hdr[345]) {
                snprintf(e.name, sizeof(e.name), "%.155s/%.100s", (char *) r->hdr + 345,
                         (char *) r->hdr + 0);
        } else {
                snprintf(e.name, sizeof(e.name), "%.100s", (char *) r->hdr);
        }
        snprintf(e.link, sizeof(e.link), "%.100s", (char *) r->hdr + 157);
        r->entries++;
        if (r->on_entry)
                r->on_entry(r->ctx, &e);
        return 0;
}

static void
docker_tar_payload(struct docker_tar_reader *r, const char *data, size_t n)
{
        if (r->collecting_long) {
                size_t room = sizeof(r->longname) - 1 - r->long_len;
                size_t k = MIN(n, room);
                memcpy(r->longname + r->long_len, data, k);
                r->long_len += k;
                r->longname[r->long_len] = '\0';
                r->have_longname = true;
        } else if (!r->skipping && r->on_data) {
                r->on_data(r->ctx, data, n);
        }
}

/* Feeds archive bytes. */
int
docker_tar_feed(struct docker_tar_reader *r, const char *data, size_t len)
{
        while (len) {
                if (r->left) {
                        size_t n = (size_t) MIN((uint64_t) len, r->left);
                        docker_tar_payload(r, data, n);
                        r->left -= n;
                        data += n;
                        len -= n;
                } else if (r->pad) {
                        size_t n = (size_t) MIN((uint64_t) len, r->pad);
                        r->pad -= n;
                        data += n;
                        len -= n;
                } else {
                        size_t n = MIN(len, sizeof(r->hdr) - r->hdr_len);
                        memcpy(r->hdr + r->hdr_len, data, n);
                        r->hdr_len += n;
                        data += n;
                        len -= n;
                        if (r->hdr_len < sizeof(r->hdr))
                                continue;
                        r->hdr_len = 0;
                        if (memcmp(r->hdr + 257, "ustar", 5) != 0 && !docker_tar_zero(r->hdr))
                                return -EINVAL;
                        docker_tar_begin(r);
                }
        }
        return 0;
}
