/* modal_mode.h — which way a Modal sandbox is reached: direct (the operator's own Modal
 * credentials, Modal's gRPC API, billed to that account) or managed (a tool gateway's REST API,
 * billed to the gateway's quota). Pure: the inputs are handed in (environment values, a file
 * reader, the gateway's readiness), so every case is table-tested; the backend gathers them.
 *
 * Fail closed: half a credential pair, an unreadable or malformed config file, a missing
 * profile, several active profiles, or any doubt about the gateway all mean "not usable", with
 * a reason that names what was checked and what was found. Token values are never put into
 * any of the strings this module returns.
 */
#ifndef SANDBOXD_MODAL_MODE_H
#define SANDBOXD_MODAL_MODE_H

#include <stdbool.h>
#include <stddef.h>

enum modal_mode {
        MODAL_MODE_AUTO = 0,
        MODAL_MODE_DIRECT,
        MODAL_MODE_MANAGED,
        MODAL_MODE_NONE, /* nothing selectable */
};

/* "auto", "direct", "managed" (NULL for NONE). */
const char *modal_mode_name(enum modal_mode m);
/* Parses a mode name; 0, or -EINVAL (NONE is not a name). */
int modal_mode_parse(const char *s, enum modal_mode *out);

/* The daemon's environment as far as direct credentials go (each may be NULL or ""). home is
 * the daemon user's home directory ($HOME, else the password database, as Modal expands ~). */
struct modal_env {
        const char *token_id;     /* MODAL_TOKEN_ID */
        const char *token_secret; /* MODAL_TOKEN_SECRET */
        const char *config_path;  /* MODAL_CONFIG_PATH */
        const char *profile;      /* MODAL_PROFILE */
        const char *server_url;   /* MODAL_SERVER_URL */
        const char *environment;  /* MODAL_ENVIRONMENT */
        const char *home;
};

/* Reads a whole file (new *data, NUL-terminated, *len bytes): 0, -ENOENT, -EFBIG beyond the
 * limit, or another negative errno. */
typedef int (*modal_read_file_fn)(void *ctx, const char *path, char **data, size_t *len);

/* What was found. All strings new (NULL when absent); free with modal_creds_clear. */
struct modal_creds {
        bool found;            /* a complete token pair */
        char *source;          /* where it came from: "environment" or "FILE [profile]" */
        char *error;           /* set when something was there but is not usable (fail closed) */
        char *checked;         /* what was looked at and what it held, for reasons */
        char *token_id;        /* secret: never logged, never shown */
        char *token_secret;    /* secret */
        char *server_url;      /* env, else the profile's server_url, else NULL (the default) */
        char *environment;     /* env, else the profile's environment */
        char *builder_version; /* the profile's image_builder_version */
};

/* Looks for direct credentials: the environment pair first, else the config file
 * (MODAL_CONFIG_PATH, else HOME/.modal.toml) and its profile (MODAL_PROFILE, else the one with
 * active = true, else "default"). */
void modal_creds_find(const struct modal_env *env, modal_read_file_fn rd, void *rctx,
                      struct modal_creds *out);
void modal_creds_clear(struct modal_creds *c);

/* One TOML table (profile) of a parsed file. */
struct modal_toml_profile {
        char *name;
        char *token_id, *token_secret, *server_url, *environment, *builder_version;
        bool active;
};

/* Parses the subset of TOML that ~/.modal.toml uses (tables, string/bool/number values,
 * comments). Returns the number of profiles and sets *ret (new array, free with
 * modal_toml_free), or -EINVAL with *error (new) naming the line. */
int modal_toml_parse(const char *text, size_t len, struct modal_toml_profile **ret, char **error);
void modal_toml_free(struct modal_toml_profile *p, int n);

/* The inputs of a mode decision. */
struct modal_resolve_in {
        enum modal_mode configured; /* [backend.modal] mode */
        enum modal_mode requested;  /* the sandbox's modal.mode; AUTO when it names none */
        bool direct_ok;             /* modal_creds.found */
        const char *direct_why;     /* why not (error or checked), when !direct_ok */
        bool managed_ready;         /* configured and the readiness check passed */
        const char *managed_why;    /* why not, when !managed_ready */
};

/* The decision: selected != NONE, or code (SBX_E_PARAMS: the request asks for a mode the
 * operator did not enable; SBX_E_BACKEND_UNAVAILABLE: nothing selectable) with a reason and a
 * hint (new). */
struct modal_choice {
        enum modal_mode selected;
        int code;
        char *reason;
        char *hint;
};

void modal_resolve(const struct modal_resolve_in *in, struct modal_choice *out);
void modal_choice_clear(struct modal_choice *c);

#endif
