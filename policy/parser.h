/* parser.h — the shell parser's private types, shared by parse.c (commands, lists,
 * redirections, heredocs) and word.c (words: quoting, expansions, brace lists, the text of a
 * literal echo). Not for the rest of the policy engine (internal.h is its interface).
 * Single-threaded per evaluation.
 */
#ifndef SANDBOXD_POLICY_PARSER_H
#define SANDBOXD_POLICY_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/internal.h"

enum {
        ST_EOF = 1,
        ST_PAREN = 2,
        ST_BRACE = 4,
        ST_CASE = 8,
};

struct pending_hd {
        int unit;
        size_t redir;
        const char *delim;
        bool quoted, strip;
};

struct parser {
        struct eval *ev;
        const char *s;
        size_t n, i;
        int level, depth;
        unsigned uflags;
        int cur_unit;     /* the unit whose words are being read, -1 */
        int scope;        /* the subshell the commands run in */
        int cond;         /* >0 in a conditional context: assignments and cd are not certain */
        struct seg *segs; /* open conditional segments (if, loops, case arms, functions) */
        int nsegs;
        struct pending_hd hd[POLICY_MAX_HEREDOCS];
        int nhd;
};

/* A field under construction: bytes plus a parallel "quoted" mask. */
struct field {
        char *s;
        unsigned char *q;
        size_t len, cap;
        unsigned flags;
        bool started;
};

struct wparse {
        struct field *f;
        size_t nf, fcap;
        bool assign;
        int sub_lo;
        bool any;
};

/* ---- parse.c ---- */

/* Counts one step of the evaluation's budget; false once parsing has stopped. */
bool parse_tick(struct parser *p);
/* A list of commands up to one of the stop conditions (ST_*); *why says which ended it. */
void parse_list(struct parser *p, int stop, int *why);

/* A part of the script that may run or not (a branch, a loop body, a case arm, the right side
 * of && or ||, a function body): what it assigns is not certain after it. */
struct seg {
        char kind;      /* 'i' if, 'l' loop, 'f' function, 'c' case arm, 'a' && or || */
        bool certain;   /* it certainly runs (if true; then …, true && …) */
        size_t start;   /* first assignment of the segment (ev->vars) */
        size_t barrier; /* the enclosing ev->var_barrier */
        size_t lo;      /* first unit */
        bool deferred;  /* && / || before a compound command: closes when the command does */
};
void parse_seg_open(struct parser *p, char kind);
void parse_seg_close(struct parser *p);

/* A subshell the parser enters: ( … ), $( … ), `…`, <( … ), a pipeline element, a
 * background list. Its variable assignments and cd do not outlive it. */
struct subshell {
        int scope;
        size_t nvars;
        size_t lo; /* first unit */
};
void parse_subshell_enter(struct parser *p, struct subshell *s);
void parse_subshell_leave(struct parser *p, const struct subshell *s);
/* It was not a subshell after all (a lone pipeline element, no &): its units and scopes
 * belong to the enclosing one again. */
void parse_subshell_dissolve(struct parser *p, const struct subshell *s);

/* ---- word.c ---- */

/* Reads a word at p->i and returns its fields after brace expansion in *out (arena); *assign
 * (may be NULL) says whether it was NAME=value. 0 when there is no word. */
size_t word_read(struct parser *p, struct word **out, bool *assign);
/* Walks an expansion body up to an unmatched close (not consumed), running the substitutions
 * inside it. */
void word_walk(struct parser *p, char close);
/* $… and `…` at p->i (dq: inside double quotes or an unquoted heredoc body). */
void word_dollar(struct parser *p, struct wparse *w, bool dq);
void word_backtick(struct parser *p, struct wparse *w, bool dq);
/* The field under construction; one byte of it; bytes of it (quoted); flags on it. */
struct field *word_cur(struct wparse *w, struct parser *p);
void word_put(struct parser *p, struct wparse *w, char c, bool quoted);
void word_puts(struct parser *p, struct wparse *w, const char *s, size_t n);
void word_mark(struct parser *p, struct wparse *w, unsigned flags);
/* Ends the current field (an unquoted field split). */
void word_split(struct parser *p, struct wparse *w);
/* Character classes and look-ahead. */
bool word_meta(char c);
bool word_name_start(char c);
bool word_name_char(char c);
char word_at(struct parser *p, size_t k);
/* The next word is exactly w (followed by a metacharacter or the end). */
bool word_is(struct parser *p, const char *w);
/* Remembers a script variable (value NULL: unknown from here on). */
void word_var_set(struct eval *ev, const char *name, size_t n, const char *value);
/* Enters one nesting level; false (parse.limit) beyond POLICY_MAX_NEST. The caller leaves it
 * (ev->nest--) in every case. */
bool word_nest_enter(struct parser *p);
/* Parses a separate script (a backtick body) with the same evaluation at level. */
void word_sub_script(struct parser *p, const char *s, size_t n, int level);
/* Up to max digits in base at p->i. */
uint32_t word_digits(struct parser *p, int base, int max);

/* ---- arith.c ---- */

/* Runs the expansions of s[0..n) as inside double quotes: its substitutions become units. */
void arith_expand(struct parser *p, const char *s, size_t n);
/* Judges shell source s[0..n) of an arithmetic expression ($((…)), ((…)), for ((…))) whose
 * substitutions were parsed into units [lo, nunits). */
void arith_source(struct parser *p, const char *s, size_t n, int lo);
/* Judges a word evaluated as an arithmetic expression. */
void arith_word(struct parser *p, const struct word *w);
/* Judges a word naming a variable: NAME[SUBSCRIPT] expands and evaluates the subscript. */
void arith_name_word(struct parser *p, const struct word *w);
/* Judges the operands of let, declare -i, printf -v, read, unset, … in unit k. */
void arith_unit(struct parser *p, int k);
/* Judges the operands of [[ … ]] (words ws[0..n)) that are expressions or names. */
void arith_dbracket(struct parser *p, const struct word *ws, size_t n);
/* Judges the body b[0..n) of a ${ … } that is not a plain name (units from lo). */
void arith_bparam(struct parser *p, const char *b, size_t n, int lo);
/* The value of a variable as the script sees it at this point; *known false if not known. */
const char *word_var_lookup(struct eval *ev, const char *name, size_t n, bool *known);
/* The variable's value here may come from a reader (read, mapfile, getopts, printf -v) or a
 * place the parser cannot see (a loop, a carrier): not from an assignment word. */
bool word_var_from_reader(struct eval *ev, const char *name, size_t n);
/* The script has not assigned the variable here: its value is the environment's. */
bool word_var_inherited(struct eval *ev, const char *name, size_t n);

#endif
