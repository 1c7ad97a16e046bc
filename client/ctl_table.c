/* ctl_table.c — aligned tables and key/value listings. */
#include "client/ctl_table.h"

#include <stdlib.h>
#include <string.h>

#include "client/ctl_util.h"

#define CTL_TABLE_MAX_CELL 200 /* bytes of one cell shown */

struct ctl_table {
        size_t ncols, nrows;
        char **cells; /* (nrows + 1) * ncols, row 0 = headers */
        size_t *width;
};

/* New table with a header row. */
struct ctl_table *
ctl_table_new(const char *const *headers, size_t ncols)
{
        struct ctl_table *t = xcalloc(1, sizeof(*t));

        t->ncols = ncols;
        t->width = xcalloc(ncols, sizeof(*t->width));
        ctl_table_add(t, headers);
        return t;
}

/* Appends a row. */
void
ctl_table_add(struct ctl_table *t, const char *const *cells)
{
        t->cells = xrealloc(t->cells, (t->nrows + 1) * t->ncols * sizeof(*t->cells));
        for (size_t i = 0; i < t->ncols; i++) {
                char *c = ctl_util_escape(cells[i] ? cells[i] : "-", CTL_TABLE_MAX_CELL);
                t->cells[t->nrows * t->ncols + i] = c;
                t->width[i] = MAX(t->width[i], ctl_util_width(c));
        }
        t->nrows++;
}

/* Prints all rows. */
void
ctl_table_print(const struct ctl_table *t, FILE *f)
{
        for (size_t r = 0; r < t->nrows; r++) {
                for (size_t i = 0; i < t->ncols; i++) {
                        const char *c = t->cells[r * t->ncols + i];
                        if (i + 1 == t->ncols)
                                fprintf(f, "%s\n", c);
                        else
                                fprintf(f, "%s%*s", c, (int) (t->width[i] - ctl_util_width(c) + 2),
                                        "");
                }
        }
}

/* Frees the table. */
void
ctl_table_free(struct ctl_table *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->nrows * t->ncols; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->width);
        free(t);
}

/* Scalar text or compact JSON. */
char *
ctl_table_cell(const json_t *v)
{
        char *s;

        if (!v || json_is_null(v))
                return xstrdup("-");
        if (json_is_string(v))
                return xstrdup(json_string_value(v));
        if (json_is_true(v) || json_is_false(v))
                return xstrdup(json_is_true(v) ? "yes" : "no");
        s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        return s ? s : xstrdup("?");
}

/* "key: value" lines. */
void
ctl_table_print_fields(FILE *f, const json_t *obj)
{
        const char *key;
        json_t *v;
        int w = 0;

        json_object_foreach((json_t *) obj, key, v) w = MAX(w, (int) strlen(key));
        json_object_foreach((json_t *) obj, key, v)
        {
                char *cell = ctl_table_cell(v);
                char *e = ctl_util_escape(cell, 0);
                char *k = ctl_util_escape(key, 0);
                fprintf(f, "%s:%*s %s\n", k, (int) (w - strlen(key)), "", e);
                free(k);
                free(e);
                free(cell);
        }
}
