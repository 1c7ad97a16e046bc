/* params.h — typed access to JSON-RPC params with errors that name the parameter (-32602,
 * data {param}). Each getter returns 0 when the parameter is absent (output untouched), 1 when
 * present and valid, -1 when present and invalid (err set). null counts as absent. Pure. */
#ifndef SANDBOXD_PARAMS_H
#define SANDBOXD_PARAMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/error.h"

/* Fails on any key not in known (NULL-terminated). */
int params_known(json_t *params, const char *const *known, struct sbx_error *err);
/* String (borrowed); max_len bounds its byte length (0 = no bound). */
int params_str(json_t *params, const char *name, size_t max_len, const char **out,
               struct sbx_error *err);
int params_bool(json_t *params, const char *name, bool *out, struct sbx_error *err);
/* Integer within [min, max]. */
int params_int(json_t *params, const char *name, int64_t min, int64_t max, int64_t *out,
               struct sbx_error *err);
/* Number (integer or real) within [min, max]. */
int params_num(json_t *params, const char *name, double min, double max, double *out,
               struct sbx_error *err);
/* Object whose values are all strings, at most max_keys keys (borrowed). */
int params_str_map(json_t *params, const char *name, size_t max_keys, json_t **out,
                   struct sbx_error *err);
/* Non-empty array of strings, at most max_items (borrowed). */
int params_str_array(json_t *params, const char *name, size_t max_items, json_t **out,
                     struct sbx_error *err);
/* Any object (borrowed). */
int params_obj(json_t *params, const char *name, json_t **out, struct sbx_error *err);
/* Any array (borrowed). */
int params_arr(json_t *params, const char *name, json_t **out, struct sbx_error *err);
/* String that must be one of choices (NULL-terminated); *out is the index. */
int params_enum(json_t *params, const char *name, const char *const *choices, int *out,
                struct sbx_error *err);

#endif
