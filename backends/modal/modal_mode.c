/* modal_mode.c — direct credentials (environment, ~/.modal.toml) and the mode decision. */
#include "backends/modal/modal_mode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/error.h"
#include "protocol/util.h"

#define TOML_MAX_PROFILES 256

static const char *const modal_mode_names[] = {
        [MODAL_MODE_AUTO] = "auto",
        [MODAL_MODE_DIRECT] = "direct",
        [MODAL_MODE_MANAGED] = "managed",
};

/* The name of a mode. */
const char *
modal_mode_name(enum modal_mode m)
{
        return (size_t) m < ARRAY_SIZE(modal_mode_names) ? modal_mode_names[m] : NULL;
}

/* Parses a mode name. */
int
modal_mode_parse(const char *s, enum modal_mode *out)
{
        for (size_t i = 0; s && i < ARRAY_SIZE(modal_mode_names); i++) {
                if (strcmp(s, modal_mode_names[i]) == 0) {
                        *out = (enum modal_mode) i;
                        return 0;
                }
        }
        return -EINVAL;
}

/* ---- the TOML subset ---- */

struct toml_line {
        const char *p, *end;
};

static void
toml_skip_ws(struct toml_line *l)
{
        while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
                l->p++;
}

static bool
toml_bare_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
}

/* A basic ("…", with escapes) or literal ('…') string; new, or NULL if malformed. */
static char *
toml_string(struct toml_line *l)
{
        static const char esc_in[] = "\"\\bfnrt", esc_out[] = "\"\\\b\f\n\r\t";
        char q = *l->p++;
        struct buf b = {0};

        while (l->p < l->end && *l->p != q) {
                char c = *l->p++;
                const char *e;
                if (q == '"' && c == '\\') {
                        if (l->p >= l->end || !(e = strchr(esc_in, *l->p)) || !*l->p)
                                break;
                        c = esc_out[e - esc_in];
                        l->p++;
                }
                buf_append(&b, &c, 1);
        }
        if (l->p >= l->end || *l->p != q) {
                buf_free(&b);
                return NULL;
        }
        l->p++;
        buf_reserve(&b, 0);
        b.data[b.len] = '\0';
        return b.data;
}

/* A key: bare or quoted; new, or NULL. */
static char *
toml_key(struct toml_line *l)
{
        const char *s;

        toml_skip_ws(l);
        if (l->p < l->end && (*l->p == '"' || *l->p == '\''))
                return toml_string(l);
        s = l->p;
        while (l->p < l->end && toml_bare_char(*l->p))
                l->p++;
        return l->p > s ? xstrndup(s, (size_t) (l->p - s)) : NULL;
}

/* The rest of a line must be blank or a comment. */
static bool
toml_line_end(struct toml_line *l)
{
        toml_skip_ws(l);
        return l->p >= l->end || *l->p == '#';
}

enum toml_vtype { TV_STRING, TV_BOOL, TV_OTHER };

/* A value: a string (new in *s), true/false, or a number/date (ignored). */
static int
toml_value(struct toml_line *l, enum toml_vtype *t, char **s, bool *bv)
{
        toml_skip_ws(l);
        *s = NULL;
        if (l->p < l->end && (*l->p == '"' || *l->p == '\'')) {
                /* Multi-line strings ("""…""") are not part of the subset. */
                if (l->end - l->p >= 3 && l->p[1] == l->p[0] && l->p[2] == l->p[0])
                        return -EINVAL;
                *t = TV_STRING;
                *s = toml_string(l);
                return *s ? 0 : -EINVAL;
        }
        for (int v = 0; v < 2; v++) {
                const char *w = v ? "true" : "false";
                size_t n = strlen(w);
                if ((size_t) (l->end - l->p) >= n && !memcmp(l->p, w, n)) {
                        l->p += n;
                        *t = TV_BOOL;
                        *bv = v;
                        return 0;
                }
        }
        *t = TV_OTHER;
        if (l->p >= l->end || !strchr("+-0123456789", *l->p))
                return -EINVAL; /* arrays, inline tables: not in the subset */
        while (l->p < l->end && strchr("+-0123456789._:eETZ", *l->p))
                l->p++;
        return 0;
}

static const struct {
        const char *key;
        size_t off;
} toml_fields[] = {
        {"token_id", offsetof(struct modal_toml_profile, token_id)},
        {"token_secret", offsetof(struct modal_toml_profile, token_secret)},
        {"server_url", offsetof(struct modal_toml_profile, server_url)},
        {"environment", offsetof(struct modal_toml_profile, environment)},
        {"image_builder_version", offsetof(struct modal_toml_profile, builder_version)},
};

static void
toml_assign(struct modal_toml_profile *p, const char *key, enum toml_vtype t, char *s, bool bv)
{
        if (t == TV_BOOL && strcmp(key, "active") == 0)
                p->active = bv;
        for (size_t i = 0; t == TV_STRING && i < ARRAY_SIZE(toml_fields); i++) {
                if (strcmp(key, toml_fields[i].key) == 0) {
                        char **f = (char **) ((char *) p + toml_fields[i].off);
                        free(*f);
                        *f = s;
                        return;
                }
        }
        free(s);
}

struct toml_doc {
        struct modal_toml_profile *v;
        int n;
};

/* "[name]": opens a profile (an existing one of that name again). */
static int
toml_table(struct toml_doc *d, struct toml_line *l, struct modal_toml_profile **cur)
{
        char *name;

        l->p++;
        if (l->p < l->end && *l->p == '[')
                return -EINVAL; /* arrays of tables */
        name = toml_key(l);
        toml_skip_ws(l);
        if (!name || l->p >= l->end || *l->p != ']') {
                free(name);
                return -EINVAL;
        }
        l->p++;
        for (int i = 0; i < d->n; i++) {
                if (strcmp(d->v[i].name, name) == 0) {
                        *cur = &d->v[i];
                        free(name);
                        return 0;
                }
        }
        if (d->n >= TOML_MAX_PROFILES) {
                free(name);
                return -E2BIG;
        }
        d->v = xrealloc(d->v, (size_t) (d->n + 1) * sizeof(*d->v));
        *cur = &d->v[d->n++];
        memset(*cur, 0, sizeof(**cur));
        (*cur)->name = name;
        return 0;
}

static int
toml_line(struct toml_doc *d, struct toml_line *l, struct modal_toml_profile **cur)
{
        enum toml_vtype t;
        char *key, *s = NULL;
        bool bv = false;

        toml_skip_ws(l);
        if (l->p >= l->end || *l->p == '#')
                return 0;
        if (*l->p == '[')
                return toml_table(d, l, cur) < 0 || !toml_line_end(l) ? -EINVAL : 0;
        key = toml_key(l);
        toml_skip_ws(l);
        if (!key || l->p >= l->end || *l->p != '=') {
                free(key);
                return -EINVAL;
        }
        l->p++;
        if (toml_value(l, &t, &s, &bv) < 0 || !toml_line_end(l)) {
                free(key);
                free(s);
                return -EINVAL;
        }
        if (*cur)
                toml_assign(*cur, key, t, s, bv); /* keys before any table are not a profile's */
        else
                free(s);
        free(key);
        return 0;
}

/* Parses the file's text. */
int
modal_toml_parse(const char *text, size_t len, struct modal_toml_profile **ret, char **error)
{
        struct toml_doc d = {NULL, 0};
        struct modal_toml_profile *cur = NULL;
        const char *p = text, *end = text + len;
        int lineno = 0;

        *ret = NULL;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                struct toml_line l;
                lineno++;
                if (n && p[n - 1] == '\r')
                        n--;
                l.p = p;
                l.end = p + n;
                if (memchr(p, '\0', n) || toml_line(&d, &l, &cur) < 0) {
                        *error = xasprintf("line %d is not TOML that sandboxd understands "
                                           "(tables with string, boolean and number values)",
                                           lineno);
                        modal_toml_free(d.v, d.n);
                        return -EINVAL;
                }
                p = nl ? nl + 1 : end;
        }
        *ret = d.v;
        return d.n;
}

/* Frees parsed profiles. */
void
modal_toml_free(struct modal_toml_profile *p, int n)
{
        for (int i = 0; p && i < n; i++) {
                free(p[i].name);
                free(p[i].token_id);
                free(p[i].token_secret);
                free(p[i].server_url);
                free(p[i].environment);
                free(p[i].builder_version);
        }
        free(p);
}

/* ---- direct credentials ---- */

static bool
modal_set(const char *s)
{
        return s && *s;
}

static char *
modal_dup(const char *s)
{
        return modal_set(s) ? xstrdup(s) : NULL;
}

/* Picks the profile: MODAL_PROFILE, else the single active one, else "default". */
static struct modal_toml_profile *
modal_pick_profile(const struct modal_env *env, struct modal_toml_profile *v, int n,
                   const char *path, char **error)
{
        struct modal_toml_profile *pick = NULL;
        struct buf act = {0};
        int nactive = 0;

        for (int i = 0; i < n; i++) {
                if (modal_set(env->profile) ? strcmp(v[i].name, env->profile) == 0 : v[i].active) {
                        buf_appendf(&act, "%s'%s'", nactive ? ", " : "", v[i].name);
                        nactive++;
                        pick = pick ? pick : &v[i];
                }
        }
        if (modal_set(env->profile) && !pick)
                *error = xasprintf("%s has no profile '%s' (MODAL_PROFILE)", path, env->profile);
        else if (!modal_set(env->profile) && nactive > 1)
                *error = xasprintf("%s has several active profiles (%s): set MODAL_PROFILE", path,
                                   act.data);
        for (int i = 0; !pick && !*error && i < n; i++)
                if (strcmp(v[i].name, "default") == 0)
                        pick = &v[i];
        if (!pick && !*error)
                *error = xasprintf("%s has no active profile and no [default] one", path);
        buf_free(&act);
        return *error ? NULL : pick;
}

/* Takes the pair from the profile, or says which half is missing. */
static void
modal_creds_profile(struct modal_creds *c, struct modal_toml_profile *pr, const char *path)
{
        bool id = modal_set(pr->token_id), secret = modal_set(pr->token_secret);

        if (!id || !secret) {
                c->error = xasprintf("profile '%s' of %s has no %s", pr->name, path,
                                     !id && !secret ? "token_id and token_secret"
                                     : !id          ? "token_id"
                                                    : "token_secret");
                return;
        }
        c->found = true;
        c->source = xasprintf("%s [%s]", path, pr->name);
        c->token_id = xstrdup(pr->token_id);
        c->token_secret = xstrdup(pr->token_secret);
}

/* Reads the config file into c: the pair when the env has none, and the profile's other
 * settings (which the environment overrides). */
static void
modal_creds_file(const struct modal_env *env, modal_read_file_fn rd, void *rctx,
                 struct modal_creds *c, bool want_tokens)
{
        char *path = modal_set(env->config_path)
                             ? xstrdup(env->config_path)
                             : xasprintf("%s/.modal.toml", modal_set(env->home) ? env->home : "");
        struct modal_toml_profile *v = NULL, *pr;
        char *text = NULL, *error = NULL;
        size_t len = 0;
        int n = 0, r = rd(rctx, path, &text, &len);

        if (r == -ENOENT) {
                c->checked = xasprintf("MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set; %s "
                                       "does not exist",
                                       path);
        } else if (r < 0) {
                c->error = xasprintf("cannot read %s: %s", path,
                                     r == -EFBIG ? "too large" : strerror(-r));
        } else if ((n = modal_toml_parse(text, len, &v, &error)) < 0) {
                c->error = xasprintf("%s: %s", path, error);
        } else if ((pr = modal_pick_profile(env, v, n, path, &error))) {
                if (want_tokens)
                        modal_creds_profile(c, pr, path);
                c->server_url = modal_dup(pr->server_url);
                c->environment = modal_dup(pr->environment);
                c->builder_version = modal_dup(pr->builder_version);
        } else if (want_tokens) {
                c->error = error;
                error = NULL;
        }
        modal_toml_free(v, n > 0 ? n : 0);
        free(error);
        free(text);
        free(path);
}

/* Finds direct credentials. */
void
modal_creds_find(const struct modal_env *env, modal_read_file_fn rd, void *rctx,
                 struct modal_creds *out)
{
        bool id = modal_set(env->token_id), secret = modal_set(env->token_secret);

        memset(out, 0, sizeof(*out));
        if (id != secret) {
                out->error = xasprintf("%s is set in the daemon's environment but %s is not",
                                       id ? "MODAL_TOKEN_ID" : "MODAL_TOKEN_SECRET",
                                       id ? "MODAL_TOKEN_SECRET" : "MODAL_TOKEN_ID");
                return;
        }
        modal_creds_file(env, rd, rctx, out, !id);
        if (id) {
                /* The pair in the environment wins; a broken file does not matter then. */
                free(out->error);
                free(out->checked);
                out->error = out->checked = NULL;
                out->found = true;
                out->source = xstrdup("environment (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)");
                out->token_id = xstrdup(env->token_id);
                out->token_secret = xstrdup(env->token_secret);
        }
        if (modal_set(env->server_url)) {
                free(out->server_url);
                out->server_url = xstrdup(env->server_url);
        }
        if (modal_set(env->environment)) {
                free(out->environment);
                out->environment = xstrdup(env->environment);
        }
}

/* Frees what modal_creds_find set. */
void
modal_creds_clear(struct modal_creds *c)
{
        free(c->source);
        free(c->error);
        free(c->checked);
        free(c->token_id);
        free(c->token_secret);
        free(c->server_url);
        free(c->environment);
        free(c->builder_version);
        memset(c, 0, sizeof(*c));
}

/* ---- the decision ---- */

#define MODAL_HINT_DIRECT                                                                          \
        "set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET in the daemon's environment, or run `modal "    \
        "token new` as the daemon's user (or point MODAL_CONFIG_PATH at a .modal.toml)"
#define MODAL_HINT_MANAGED                                                                         \
        "set gateway_url and gateway_token_file in [backend.modal] and check that the gateway "    \
        "answers its readiness check"

static void
modal_refuse(const struct modal_resolve_in *in, struct modal_choice *out)
{
        out->code = SBX_E_PARAMS;
        out->reason = xasprintf("modal.mode '%s' refused: the operator set [backend.modal] mode "
                                "= %s",
                                modal_mode_name(in->requested), modal_mode_name(in->configured));
        out->hint = xasprintf("ask for mode '%s' (or leave modal.mode out), or set mode = auto "
                              "or %s in [backend.modal]",
                              modal_mode_name(in->configured), modal_mode_name(in->requested));
}

/* Decides the mode. */
void
modal_resolve(const struct modal_resolve_in *in, struct modal_choice *out)
{
        enum modal_mode want = in->requested == MODAL_MODE_AUTO ? in->configured : in->requested;
        const char *dwhy = in->direct_why ? in->direct_why : "no credentials";
        const char *mwhy = in->managed_why ? in->managed_why : "not ready";

        memset(out, 0, sizeof(*out));
        out->selected = MODAL_MODE_NONE;
        if (in->configured != MODAL_MODE_AUTO && want != in->configured) {
                modal_refuse(in, out);
                return;
        }
        if (want != MODAL_MODE_DIRECT && in->managed_ready)
                out->selected = MODAL_MODE_MANAGED;
        else if (want != MODAL_MODE_MANAGED && in->direct_ok)
                out->selected = MODAL_MODE_DIRECT;
        if (out->selected != MODAL_MODE_NONE)
                return;
        out->code = SBX_E_BACKEND_UNAVAILABLE;
        if (want == MODAL_MODE_DIRECT) {
                out->reason = xasprintf("mode direct: no usable Modal credentials: %s", dwhy);
                out->hint = xstrdup(MODAL_HINT_DIRECT);
        } else if (want == MODAL_MODE_MANAGED) {
                out->reason = xasprintf("mode managed: the gateway is not ready: %s", mwhy);
                out->hint = xstrdup(MODAL_HINT_MANAGED);
        } else {
                out->reason = xasprintf("mode auto: managed: %s; direct: %s", mwhy, dwhy);
                out->hint = xstrdup("for direct mode, " MODAL_HINT_DIRECT
                                    "; for managed mode, " MODAL_HINT_MANAGED);
        }
}

/* Frees a decision's strings. */
void
modal_choice_clear(struct modal_choice *c)
{
        free(c->reason);
        free(c->hint);
        memset(c, 0, sizeof(*c));
}
