/* internal.h — private types shared by the files of the policy engine. Not for other modules.
 *
 * One evaluation (struct eval) owns an arena; the parser turns shell text into units (one per
 * simple command that would execute), the analyser peels wrappers, recurses into carriers and
 * applies the built-in and file rules, producing internal findings. Single-threaded per eval.
 */
#ifndef SANDBOXD_POLICY_INTERNAL_H
#define SANDBOXD_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"
#include "protocol/sha256.h" /* sha256_hex: the rules file's digest */

#define POLICY_MAX_INPUT    (256 * 1024) /* bytes of one command string */
#define POLICY_MAX_UNITS    4096         /* simple commands per evaluation */
#define POLICY_MAX_NEST     64           /* nesting of (), {}, $(), `` */
#define POLICY_MAX_CARRIER  8            /* bash -c / eval / … recursion */
#define POLICY_MAX_WORDS    16384        /* words (after brace expansion) per evaluation */
#define POLICY_MAX_FINDINGS 64
#define POLICY_MAX_BRACE    256 /* words from one brace expansion */
#define POLICY_MAX_HEREDOCS 16  /* pending on one line */

/* Bump allocator; everything of one evaluation is freed at once. */
struct arena_chunk;
struct arena {
        struct arena_chunk *head;
};

/* Returns n zeroed bytes (aborts on OOM); freed by arena_free. */
void *arena_alloc(struct arena *a, size_t n);
/* Copies s[0..n) plus NUL into the arena. */
char *arena_strndup(struct arena *a, const char *s, size_t n);
/* Copies a NUL-terminated string into the arena. */
char *arena_strdup(struct arena *a, const char *s);
/* Grows *arr (of elsize-byte items, *cap of them) so that one more fits. */
void arena_grow(struct arena *a, void **arr, size_t *cap, size_t n, size_t elsize);
/* Releases every chunk. */
void arena_free(struct arena *a);

/* Word flags. */
#define W_DYN      0x01 /* contains an expansion that was not resolved */
#define W_GLOB     0x02 /* unquoted glob character */
#define W_QUOTED   0x04 /* some part quoted or escaped */
#define W_NONASCII 0x08
#define W_SPLIT    0x10 /* unquoted dynamic part: field count unknown */
#define W_SUB      0x20 /* contains $(…), `…` or <(…) */
#define W_OBF      0x40 /* backslash or ANSI-C escapes inside */
#define W_ASSIGN   0x80 /* NAME=value */

struct word {
        const char *s; /* decoded text; unresolved parts keep their source text */
        unsigned flags;
        int sub_lo, sub_hi; /* units created by substitutions inside the word */
};

enum redir_kind {
        RD_IN,
        RD_OUT,
        RD_DUP,
        RD_HEREDOC,
        RD_HERESTR,
};

struct redir {
        enum redir_kind kind;
        int fd;
        struct word target; /* file, or the delimiter of a heredoc */
        const char *body;   /* heredoc body (decoded when unquoted) */
        bool body_dyn;      /* unquoted body with unresolved expansions */
};

/* Unit flags. */
#define U_BG        0x1 /* run in the background */
#define U_FUNC      0x2 /* inside a function body */
#define U_CARRIED   0x4 /* from a carrier payload (bash -c, eval, …) */
#define U_DOWNGRADE 0x8 /* suffix of an unknown wrapper: floor findings become ASK */

/* One simple command that would execute. */
struct unit {
        struct word *argv;
        size_t argc, argcap;
        struct word *assign;
        size_t nassign, assigncap;
        struct redir *redir;
        size_t nredir, redircap;
        int pipe_prev; /* unit feeding stdin through a pipe, -1 */
        int level;     /* substitution nesting */
        int depth;     /* carrier nesting */
        unsigned flags;
};

struct func_def {
        const char *name;
        int lo, hi; /* units of the body */
};

struct var {
        const char *name;
        const char *value; /* NULL: assigned a value we cannot know */
};

/* A finding while evaluating; turned into struct policy_finding at the end. */
struct ifinding {
        const char *rule;
        enum policy_verdict verdict;
        unsigned flags;
        const char *message;
        const char *match;
        const char *subject;
        int unit;
        bool builtin;
};

struct eval {
        const struct policy *pol;
        const struct policy_ctx *ctx;
        struct arena ar;
        struct unit *units;
        size_t nunits, unitcap;
        unsigned long steps, max_steps;
        size_t nwords;
        int nest;
        bool stop; /* a limit or syntax error ended parsing */
        struct var *vars;
        size_t nvars, varcap;
        bool ifs_changed;
        struct func_def *funcs;
        size_t nfuncs, funccap;
        const char *home; /* NULL when unknown */
        const char *cwd;  /* NULL when unknown */
        const char **written;
        size_t nwritten, writtencap;
        struct ifinding *f;
        size_t nf, fcap;
        bool *allowed; /* per unit: matched an allow rule of the rules file */
        size_t allowedcap;
        int downgrade; /* >0 while judging the suffix of an unknown wrapper */
        bool host_access;
        bool no_file_rules;       /* while running the inline tests of a file being loaded */
        struct sbx_error invalid; /* container checks: the first spec field that cannot be judged */
};

/* eval.c-less helpers live in analyze.c. */
void analyze_init(struct eval *ev, const struct policy *p, const struct policy_ctx *ctx,
                  size_t input_len);
void analyze_units(struct eval *ev, int from);
void analyze_finish(struct eval *ev, struct policy_result *out);
void analyze_free(struct eval *ev);
/* Adds a built-in finding by rule id (see builtin.c). */
void analyze_add(struct eval *ev, int unit, const char *rule, const char *match,
                 const char *subject);
/* Adds a finding of a rules-file rule. */
void analyze_add_file(struct eval *ev, int unit, const char *id, enum policy_verdict v,
                      const char *message, const char *match);
/* Lexically normalises a path word against the tracked cwd/home; NULL if unknowable. */
const char *analyze_path(struct eval *ev, const char *s);
/* Whether path names a credential file or directory (file.read). */
bool analyze_is_credential(const char *path);
/* Parses and analyses a carrier payload at depth+1 on behalf of unit. */
void analyze_payload(struct eval *ev, int unit, const char *script);

/* Parser: appends units for script to ev (level 0, depth as given). */
void parse_script(struct eval *ev, const char *s, size_t n, int depth);
/* Records a parse failure finding and stops parsing. */
void parse_fail(struct eval *ev, const char *rule, const char *what);
/* New empty unit; returns its index. */
int parse_new_unit(struct eval *ev, int level, int depth);
/* Appends a word to a unit's argv. */
void parse_unit_push(struct eval *ev, int k, const char *s, unsigned flags);

/* Built-in rule table. */
struct builtin_rule {
        const char *id;
        enum policy_verdict verdict;
        unsigned flags;
        const char *message;
};
const struct builtin_rule *builtin_find(const char *id);
size_t builtin_count(void);
const struct builtin_rule *builtin_at(size_t i);

/* Container checks on a sandbox.create-shaped spec; adds findings to ev for unit. facts is
 * {volumes: {name: inspected}, containers: {name: inspected}} (borrowed, may be NULL). */
void container_check(struct eval *ev, int unit, json_t *spec, json_t *facts);
/* Translates docker/podman CLI argv (after the program name) into a spec and checks it. */
void container_check_cli(struct eval *ev, int unit, const struct word *argv, size_t argc);

/* Rules-file rules applied to an effective argv. */
struct frule;
void rulesfile_match(struct eval *ev, int unit, const struct word *argv, size_t argc);
void rulesfile_free(struct frule *r, size_t n);
/* Parses a rules file's text (modified in place) into p and runs its inline tests. */
int rulesfile_parse(struct policy *p, const char *path, char *text, size_t len,
                    struct sbx_error *err);
/* Reads a whole file, at most 1 MiB (new *text, NUL-terminated). */
int rulesfile_read(const char *path, char **text, size_t *len);
/* Whether a built-in rule has been disabled by the rules file. */
bool rulesfile_disabled(const struct policy *p, const char *id);

/* The policy object. */
struct policy {
        struct frule *rules;
        size_t nrules;
        char **disabled;
        size_t ndisabled;
        char sha256[65];
};

/* Glob where a star also crosses slashes; a trailing "/ **" matches the directory and below. */
bool rulesfile_glob(const char *pat, const char *s);

#endif
