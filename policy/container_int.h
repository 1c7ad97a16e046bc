/* container_int.h — private to the container checks (container*.c): the state of one judgement
 * and the helpers shared by the HostConfig field table (container_hc.c), the mount checks
 * (container_mounts.c) and the docker/podman CLI translation (container_cli.c).
 *
 * A judgement is an allowlist walk: every field, mount form and option is either known and
 * checked, or refused. Shape errors (a wrong type, an unknown field) are "invalid": -32602 for a
 * sandbox.create spec, never ALLOW; security findings are built-in rules (builtin.c).
 * Single-threaded per judgement; everything allocated lives in the evaluation's arena.
 */
#ifndef SANDBOXD_POLICY_CONTAINER_INT_H
#define SANDBOXD_POLICY_CONTAINER_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "policy/internal.h"

#define CONTAINER_MAX_MOUNTS 256 /* entries of one mount list (mounts, Binds, Mounts, Tmpfs) */
#define CONTAINER_MAX_FROM   16  /* VolumesFrom entries */
#define CONTAINER_MAX_LIST   256 /* entries of any other list or map a client controls */

/* One container-spec judgement. */
struct cjudge {
        struct eval *ev;
        int unit;
        json_t *volumes;    /* name -> GET /volumes/{name} body; borrowed, may be NULL */
        json_t *containers; /* name -> GET /containers/{name}/json body; borrowed, may be NULL */
        json_t *hc;         /* the HostConfig being judged; borrowed, may be NULL */
        /* Translated from docker/podman argv: a field is present only when a flag set it
         * (absent = Docker's own default, not sandboxd's), and what cannot be judged is asked
         * (container.cli-unknown) instead of being an invalid spec. */
        bool cli;
        /* The caller is neither root nor the daemon's owner, and Docker (root) makes the
         * mounts: host paths are refused, volumes must carry the caller's owner label. */
        bool unprivileged;
        unsigned uid; /* the caller, when unprivileged */
};

/* Judges a sandbox.create-shaped spec: backend, network, mounts, docker, singularity. */
void container_judge(struct cjudge *j, json_t *spec);
/* Adds the built-in finding rule with match (copied). */
void cj_add(struct cjudge *j, const char *rule, const char *match);
/* A value the checks cannot judge. For a spec: the first one becomes the -32602 error naming
 * param, and a container.invalid DENY finding keeps the verdict from being ALLOW. From the CLI:
 * a container.cli-unknown finding (ASK). */
void cj_invalid(struct cjudge *j, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* printf into the evaluation's arena. */
const char *cj_fmt(struct cjudge *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether a JSON value is null, false, 0, "", [] or {}. */
bool cj_empty(json_t *v);
/* Whether name is in the operator's comma/space separated list (NULL: empty). */
bool cj_listed(const char *list, const char *name);
/* JSON types a field takes (null is always taken: it is the Go zero value). */
#define J_BOOL 0x1
#define J_INT  0x2
#define J_STR  0x4
#define J_ARR  0x8
#define J_OBJ  0x10
/* Whether v is null or one of the types (lists and maps at most CONTAINER_MAX_LIST long). */
bool cj_type_ok(unsigned types, json_t *v);
/* obj is an object whose keys are among names (NULL-terminated) and, when types is not NULL,
 * whose values have the type at the same index; else invalid. */
bool cj_object_ok(struct cjudge *j, const char *param, json_t *obj, const char *const *names,
                  const unsigned *types);

/* ---- container_hc.c: the HostConfig field table ---- */

/* Judges every field of hc (an object) against the table; param is its name in the spec. */
void hc_check(struct cjudge *j, const char *param, json_t *hc);
/* Whether name is a field of the table (exact spelling). */
bool hc_field_known(const char *name);
/* The field of the table name matches without regard to case, the way Docker's JSON decoder
 * matches it (ASCII case, and U+017F / U+212A for s / k), or NULL. */
const char *hc_field_folded(const char *name);

/* ---- container_mounts.c: what mounts resolve to ---- */

/* A host path that will show inside the container (a bind source, a local volume's device). */
void mount_host_path(struct cjudge *j, const char *param, const char *src);
/* HostConfig.Binds ("src:dst[:mode]"); driver is HostConfig.VolumeDriver (may be NULL). */
void mount_binds(struct cjudge *j, const char *param, json_t *binds, const char *driver);
/* HostConfig.Mounts (mount.Mount objects). */
void mount_api(struct cjudge *j, const char *param, json_t *mounts, const char *driver);
/* The protocol's mounts [{type, source, target, readonly}]. */
void mount_protocol(struct cjudge *j, const char *param, json_t *mounts);
/* A volume with its driver and options (as requested, or as inspected). */
void mount_volume(struct cjudge *j, const char *param, const char *name, const char *driver,
                  json_t *opts);
/* HostConfig.VolumesFrom, judged as the other containers' mounts. */
void mount_volumes_from(struct cjudge *j, const char *param, json_t *from);
/* HostConfig.Tmpfs {path: "opt,opt"}. */
void mount_tmpfs_map(struct cjudge *j, const char *param, json_t *tmpfs);
/* One tmpfs option ("size=64m", "nosuid"); false when it is not known. */
bool mount_tmpfs_option_ok(const char *opt);
/* Docker's local volume name rule: [A-Za-z0-9][A-Za-z0-9_.-]+ */
bool mount_volume_name_ok(const char *name);
/* An absolute container path. */
bool mount_target_ok(const char *target);

/* ---- container_limits.c, container_image.c: the operator's maxima and images ---- */

/* Judges a docker spec against l: resources.* and docker.host_config limits, and the image
 * of an unprivileged caller (image_check). */
void limits_check(struct cjudge *j, json_t *spec, const struct policy_docker_limits *l);
/* "64m", "2G", "1048576" (k, m, g, t, p, e: powers of 1024): bytes. 0 or -EINVAL. */
int limits_size_parse(const char *s, int64_t *out);
/* The image spec runs (its own, else l->image) is one of l->images, for an unprivileged
 * caller; else invalid naming "image". */
void image_check(struct cjudge *j, json_t *spec, const struct policy_docker_limits *l);
/* Every entry of the operator's images list (NULL: empty) is NAME:TAG, NAME:* or
 * NAME@sha256:HEX; else -EINVAL and err names the entry. */
int image_list_check(const char *list, struct sbx_error *err);
/* Parses max_ulimits ("NAME=MAX, …", NULL: empty) into max[POLICY_ULIMITS]; 0, or -EINVAL
 * with err naming the key. */
int ulimit_list_parse(const char *list, int64_t *max, struct sbx_error *err);
/* Every entry of hc's Ulimits is an allowed rlimit within its maximum; else invalid. */
void ulimit_check(struct cjudge *j, json_t *hc, const struct policy_docker_limits *l);

#endif
