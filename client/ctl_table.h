/* ctl_table.h — aligned text tables and "key: value" listings for sandboxctl's human output.
 * Cells are escaped for the terminal. Single-threaded. */
#ifndef SANDBOXCTL_CTL_TABLE_H
#define SANDBOXCTL_CTL_TABLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

struct ctl_table;

/* A table with ncols columns named by headers (copied). New. */
struct ctl_table *ctl_table_new(const char *const *headers, size_t ncols);
/* Adds a row of ncols cells (copied, escaped, each cut to max_cell bytes; NULL shows "-"). */
void ctl_table_add(struct ctl_table *t, const char *const *cells);
/* Prints the table with two spaces between columns; the last column is not padded. */
void ctl_table_print(const struct ctl_table *t, FILE *f);
/* Frees t; NULL is fine. */
void ctl_table_free(struct ctl_table *t);

/* Text of a JSON scalar ("-" for null/absent), or compact JSON for arrays/objects. New. */
char *ctl_table_cell(const json_t *v);
/* Prints every member of obj as "key: value", keys padded to one column. */
void ctl_table_print_fields(FILE *f, const json_t *obj);

#endif
