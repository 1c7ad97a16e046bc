/* params.c — typed JSON-RPC parameter access. */
#include "protocol/params.h"

#include <math.h>
#include <string.h>

#include "protocol/util.h"

static const char *
params_type_name(json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
                return "null";
        }
        return "unknown";
}

static json_t *
params_get(json_t *params, const char *name)
{
        json_t *v = json_object_get(params, name);

        return json_is_null(v) ? NULL : v;
}

static int
params_wrong(struct sbx_error *err, const char *name, const char *want, json_t *v)
{
        sbx_error_param(err, name, "invalid params: '%s' must be %s, not %s", name, want,
                        params_type_name(v));
        return -1;
}

/* Rejects unknown keys. */
int
params_known(json_t *params, const char *const *known, struct sbx_error *err)
{
        const char *key;
        json_t *v;

        json_object_foreach(params, key, v)
        {
                const char *const *k;
                for (k = known; *k && strcmp(*k, key); k++)
                        ;
                if (!*k) {
                        sbx_error_param(err, key, "invalid params: unknown parameter '%s'", key);
                        return -1;
                }
        }
        return 0;
}

/* String getter. */
int
params_str(json_t *params, const char *name, size_t max_len, const char **out,
           struct sbx_error *err)
{
        json_t *v = params_get(params, name);

        if (!v)
                return 0;
        if (!json_is_string(v))
                return params_wrong(err, name, "a string", v);
        if (max_len && json_string_length(v) > max_len) {
                sbx_error_param(err, name, "invalid params: '%s' is longer than %zu bytes", name,
                                max_len);
                return -1;
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
                sbx_error_param(err, name, "invalid params: '%s' contains a NUL character", name);
                return -1;
        }
        *out = json_string_value(v);
        return 1;
}

/* Boolean getter. */
int
params_bool(json_t *params, const char *name, bool *out, struct sbx_error *err)
{
        json_t *v = params_get(params, name);

        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return params_wrong(err, name, "a boolean", v);
        *out = json_is_true(v);
        return 1;
}

/* Integer getter with range. */
int
params_int(json_t *params, const char *name, int64_t min, int64_t max, int64_t *out,
           struct sbx_error *err)
{
        json_t *v = params_get(params, name);
        json_int_t n;

        if (!v)
                return 0;
        if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
            fabs(json_real_value(v)) < 9e15)
                n = (json_int_t) json_real_value(v);
        else if (json_is_integer(v))
                n = json_integer_value(v);
        else
                return params_wrong(err, name, "an integer", v);
        if (n < min || n > max) {
                sbx_error_param(err, name,
                                "invalid params: '%s' must be between %lld and %lld, not %lld",
                                name, (long long) min, (long long) max, (long long) n);
                return -1;
        }
        *out = n;
        return 1;
}

/* Number getter with range. */
int
params_num(json_t *params, const char *name, double min, double max, double *out,
           struct sbx_error *err)
{
        json_t *v = params_get(params, name);
        double d;

        if (!v)
                return 0;
        if (!json_is_number(v))
                return params_wrong(err, name, "a number", v);
        d = json_number_value(v);
        if (!(d >= min && d <= max)) {
                sbx_error_param(err, name, "invalid params: '%s' must be between %g and %g", name,
                                min, max);
                return -1;
        }
        *out = d;
        return 1;
}

/* Object of strings. */
int
params_str_map(json_t *params, const char *name, size_t max_keys, json_t **out,
               struct sbx_error *err)
{
        json_t *v = params_get(params, name), *x;
        const char *k;

        if (!v)
                return 0;
        if (!json_is_object(v))
                return params_wrong(err, name, "an object of strings", v);
        if (json_object_size(v) > max_keys) {
                sbx_error_param(err, name, "invalid params: '%s' has more than %zu entries", name,
                                max_keys);
                return -1;
        }
        json_object_foreach(v, k, x)
        {
                if (!json_is_string(x)) {
                        sbx_error_param(err, name,
                                        "invalid params: '%s.%s' must be a string, not %s", name, k,
                                        params_type_name(x));
                        return -1;
                }
                if (!*k || strchr(k, '=') ||
                    strlen(json_string_value(x)) != json_string_length(x)) {
                        sbx_error_param(err, name,
                                        "invalid params: '%s' has an invalid entry '%s' (names "
                                        "must be non-empty without '=', values without NUL)",
                                        name, k);
                        return -1;
                }
        }
        *out = v;
        return 1;
}

/* Array of strings. */
int
params_str_array(json_t *params, const char *name, size_t max_items, json_t **out,
                 struct sbx_error *err)
{
        json_t *v = params_get(params, name), *x;
        size_t i;

        if (!v)
                return 0;
        if (!json_is_array(v))
                return params_wrong(err, name, "an array of strings", v);
        if (json_array_size(v) == 0 || json_array_size(v) > max_items) {
                sbx_error_param(err, name, "invalid params: '%s' must have between 1 and %zu items",
                                name, max_items);
                return -1;
        }
        json_array_foreach(v, i, x)
        {
                if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x)) {
                        sbx_error_param(err, name,
                                        "invalid params: '%s[%zu]' must be a string without NUL",
                                        name, i);
                        return -1;
                }
        }
        *out = v;
        return 1;
}

/* Object getter. */
int
params_obj(json_t *params, const char *name, json_t **out, struct sbx_error *err)
{
        json_t *v = params_get(params, name);

        if (!v)
                return 0;
        if (!json_is_object(v))
                return params_wrong(err, name, "an object", v);
        *out = v;
        return 1;
}

/* Array getter. */
int
params_arr(json_t *params, const char *name, json_t **out, struct sbx_error *err)
{
        json_t *v = params_get(params, name);

        if (!v)
                return 0;
        if (!json_is_array(v))
                return params_wrong(err, name, "an array", v);
        *out = v;
        return 1;
}

/* Enumerated string. */
int
params_enum(json_t *params, const char *name, const char *const *choices, int *out,
            struct sbx_error *err)
{
        const char *s;
        int r = params_str(params, name, 256, &s, err);
        struct buf b = {0};

        if (r <= 0)
                return r;
        for (int i = 0; choices[i]; i++) {
                if (!strcmp(choices[i], s)) {
                        *out = i;
                        return 1;
                }
        }
        for (int i = 0; choices[i]; i++)
                buf_appendf(&b, "%s\"%s\"", i ? ", " : "", choices[i]);
        sbx_error_param(err, name, "invalid params: '%s' must be one of %s, not \"%s\"", name,
                        b.data, s);
        buf_free(&b);
        return -1;
}
