/* container_image.c — the images an unprivileged caller may run in a docker sandbox: Docker
 * image references parsed with the grammar of distribution/reference (normalised the way
 * dockerd normalises them: "docker.io/library/busybox" is "busybox"), and matched against the
 * operator's [backend.docker] images allowlist ("name:tag", "name:*", "name@sha256:HEX").
 *
 * A reference without a tag or digest is refused, and so is an image ID or a repository that
 * reads as one: dockerd falls back to searching image IDs by prefix for a name it does not
 * know, so "abc" may run an image of root's that no tag names.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/container_int.h"
#include "protocol/util.h"

#define IMAGE_MAX 255 /* Docker's limit on a reference */

struct image_ref {
        char repo[IMAGE_MAX + 1]; /* normalised: no docker.io/, no library/ */
        char tag[IMAGE_MAX + 1];  /* "" when none; "*" in an allowlist entry */
        char digest[IMAGE_MAX + 1];
};

static bool
all_of(const char *s, size_t n, const char *set)
{
        for (size_t i = 0; i < n; i++)
                if (!strchr(set, s[i]))
                        return false;
        return n > 0;
}

#define LOWER_ALNUM "abcdefghijklmnopqrstuvwxyz0123456789"
#define HEX         "0123456789abcdef"

/* One path component: [a-z0-9]+ joined by '.', '_', "__" or dashes. */
static bool
component_ok(const char *s, size_t n)
{
        if (!n || !strchr(LOWER_ALNUM, s[0]) || !strchr(LOWER_ALNUM, s[n - 1]))
                return false;
        for (size_t i = 1; i < n; i++) {
                bool after_alnum = strchr(LOWER_ALNUM, s[i - 1]) != NULL;
                if (strchr(LOWER_ALNUM, s[i]) || (s[i] == '.' && after_alnum) ||
                    (s[i] == '-' && (after_alnum || s[i - 1] == '-')) ||
                    (s[i] == '_' &&
                     (after_alnum || (s[i - 1] == '_' && i >= 2 && strchr(LOWER_ALNUM, s[i - 2])))))
                        continue;
                return false;
        }
        return true;
}

/* A registry host: a name with a dot or a port, or localhost. */
static bool
is_domain(const char *s, size_t n)
{
        return memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && !strncmp(s, "localhost", 9));
}

/* The repository path; *why says what is wrong. */
static bool
repo_ok(const char *repo, const char **why)
{
        size_t first = strcspn(repo, "/");
        const char *p = repo;

        if (repo[first] && is_domain(repo, first)) {
                size_t host = strcspn(repo, ":");
                if (!all_of(repo, MIN(host, first), LOWER_ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-") ||
                    (host < first && !all_of(repo + host + 1, first - host - 1, "0123456789"))) {
                        *why = "its registry is not HOST[:PORT]";
                        return false;
                }
                p = repo + first + 1;
        }
        for (; *p; p += *p == '/') {
                size_t n = strcspn(p, "/");
                if (!component_ok(p, n)) {
                        *why = "its name is not lower-case letters, digits and . _ - between /";
                        return false;
                }
                p += n;
        }
        return true;
}

/* "docker.io/library/busybox" and "index.docker.io/busybox" are "busybox", as for dockerd. */
static void
repo_normalise(char *repo)
{
        static const char *const hub[] = {"docker.io/", "index.docker.io/"};

        for (size_t i = 0; i < ARRAY_SIZE(hub); i++) {
                size_t n = strlen(hub[i]);
                if (!strncmp(repo, hub[i], n))
                        memmove(repo, repo + n, strlen(repo + n) + 1);
        }
        if (!strncmp(repo, "library/", 8) && !strchr(repo + 8, '/'))
                memmove(repo, repo + 8, strlen(repo + 8) + 1);
}

/* Splits s into r; entry: an allowlist entry (the tag may be "*"). */
static bool
image_parse(const char *s, bool entry, struct image_ref *r, const char **why)
{
        const char *at = strchr(s, '@'), *slash, *colon;
        size_t n = at ? (size_t) (at - s) : strlen(s);

        memset(r, 0, sizeof(*r));
        *why = "it is longer than 255 characters";
        if (strlen(s) > IMAGE_MAX)
                return false;
        if (at &&
            (strncmp(at + 1, "sha256:", 7) || strlen(at + 8) != 64 || !all_of(at + 8, 64, HEX))) {
                *why = "its digest is not @sha256: and 64 lower-case hex digits";
                return false;
        }
        if (at)
                snprintf(r->digest, sizeof(r->digest), "%s", at + 1);
        snprintf(r->repo, sizeof(r->repo), "%.*s", (int) n, s);
        slash = strrchr(r->repo, '/');
        colon = strrchr(slash ? slash : r->repo, ':');
        if (colon) {
                snprintf(r->tag, sizeof(r->tag), "%s", colon + 1);
                r->repo[colon - r->repo] = '\0';
        }
        if (colon && !(entry && !at && !strcmp(r->tag, "*")) &&
            (!*r->tag || strlen(r->tag) > 128 || r->tag[0] == '.' || r->tag[0] == '-' ||
             !all_of(r->tag, strlen(r->tag), LOWER_ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZ_.-"))) {
                *why = "its tag is not [A-Za-z0-9_][A-Za-z0-9_.-]* (at most 128)";
                return false;
        }
        if (!repo_ok(r->repo, why))
                return false;
        repo_normalise(r->repo);
        /* dockerd reads a hex name as an image ID (or an ID prefix) */
        if (all_of(r->repo, strlen(r->repo), HEX) || !strcmp(r->repo, "sha256")) {
                *why = "it reads as an image ID; name a repository";
                return false;
        }
        *why = "it has neither a tag nor a digest (write NAME:TAG, e.g. busybox:latest)";
        return *r->tag || *r->digest;
}

/* Whether one allowlist entry admits r. */
static bool
image_entry_admits(const struct image_ref *e, const struct image_ref *r)
{
        if (strcmp(e->repo, r->repo) != 0)
                return false;
        if (!strcmp(e->tag, "*"))
                return true;
        if (*e->digest)
                return !strcmp(e->digest, r->digest);
        /* a digest selects the image whatever the tag says: only a digest entry admits it */
        return !*r->digest && !strcmp(e->tag, r->tag);
}

/* Calls fn for every entry of list; stops at the first nonzero return and returns it. */
static int
image_list_each(const char *list, int (*fn)(const char *entry, void *ctx), void *ctx)
{
        char entry[IMAGE_MAX + 2];
        int r;

        for (const char *p = list; p && *p;) {
                p += strspn(p, ", \t");
                size_t l = strcspn(p, ", \t");
                snprintf(entry, sizeof(entry), "%.*s", (int) MIN(l, IMAGE_MAX + 1), p);
                if (l && (r = fn(entry, ctx)) != 0)
                        return r;
                p += l;
        }
        return 0;
}

static int
image_admits_cb(const char *entry, void *ctx)
{
        struct image_ref e;
        const char *why;

        return image_parse(entry, true, &e, &why) && image_entry_admits(&e, ctx);
}

/* Judges the image an unprivileged caller's docker sandbox would run. */
void
image_check(struct cjudge *j, json_t *spec, const struct policy_docker_limits *l)
{
        json_t *v = json_object_get(spec, "image");
        const char *img = json_is_string(v) ? json_string_value(v) : l->image;
        struct image_ref r;
        const char *why = "no image";

        if (!j->unprivileged)
                return;
        if (v && !json_is_string(v)) {
                cj_invalid(j, "image", "must be a string NAME:TAG");
        } else if (!img || !image_parse(img, false, &r, &why)) {
                cj_invalid(j, "image", "'%s' is refused: %s", img ? img : "", why);
        } else if (!l->images || !*l->images) {
                cj_invalid(j, "image",
                           "'%s' is refused: [backend.docker] images is empty, so a caller "
                           "that is neither root nor the daemon's user may run no docker "
                           "image; an operator allows this one with images = %s (or %s:*)",
                           img, img, r.repo);
        } else if (!image_list_each(l->images, image_admits_cb, &r)) {
                cj_invalid(j, "image",
                           "'%s' is not in [backend.docker] images (%s); an operator allows it "
                           "by adding %s (or %s:*) there",
                           img, l->images, img, r.repo);
        }
}

/* ref as dockerd shows it in RepoTags ("name:tag") or RepoDigests ("name@sha256:…"). */
int
policy_image_familiar(const char *ref, char *out, size_t n)
{
        struct image_ref r;
        const char *why;

        if (!image_parse(ref, false, &r, &why))
                return -EINVAL;
        if (*r.digest)
                snprintf(out, n, "%s@%s", r.repo, r.digest);
        else
                snprintf(out, n, "%s:%s", r.repo, r.tag);
        return 0;
}

static int
image_entry_cb(const char *entry, void *ctx)
{
        struct sbx_error *err = ctx;
        struct image_ref e;
        const char *why;

        if (image_parse(entry, true, &e, &why))
                return 0;
        sbx_error_param(err, "images",
                        "[backend.docker] images: '%s' is not NAME:TAG, NAME:* or "
                        "NAME@sha256:DIGEST: %s",
                        entry, why);
        return -EINVAL;
}

/* Checks every entry of the operator's images list. */
int
image_list_check(const char *list, struct sbx_error *err)
{
        return image_list_each(list, image_entry_cb, err);
}
