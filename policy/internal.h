/* internal.h — private types shared by the files of the policy engine. Not for other modules.
 *
 * One evaluation (struct eval) owns an arena; the parser (parse.c, word.c) turns shell text into
 * units (one per simple command that would execute); the analyser (analyze.c) peels wrappers
 * and dispatches each effective argv to the command tables of the rule modules:
 *
 *   opts.c     options as getopt_long reads them (bundles, values, GNU abbreviations)
 *   paths.c    path normalisation, targets (root, system, home, self), devices, secrets,
 *              the write rules and symlinks created earlier in the command
 *   env.c      variables that inject code (assignment prefixes, env NAME=…, the request env)
 *   arith.c    arithmetic, variable names and prompts: subscripts run their substitutions
 *   wrap.c     wrappers that run another command (sudo, env, nice, timeout, xargs, …)
 *   carrier.c  everything that runs a string or a stream: shells, interpreters, the file
 *              descriptors and pipes that feed them
 *   shbuiltin.c  builtins that run strings (eval, source, trap, at, mapfile -C, bind -x,
 *              complete -C, fc) or change what names mean (alias, export, cd)
 *   inline.c   allowlists for inline interpreter code (python -c, node -e, perl -e)
 *   embed.c    tools whose options or scripts run programs (awk, sed, sqlite3, vim, gdb, …)
 *   git.c      git: global options, config injection, transports, subcommand rules
 *   fsops.c    deletes, copies, permission changes, in-place edits, downloads
 *   infra.c    infrastructure and data deleted through a service (docker prune, kubectl
 *              delete, terraform destroy, cloud CLIs, redis FLUSHALL)
 *   rewrite.c  tools that replace or delete the files they are given: compressors, output
 *              operands (uniq IN OUT), converters, srm/wipe/trash, setfacl, zip -m, 7z -sdel
 *   system.c   signals, power, disks and devices, system administration
 *   net.c      network tools, remote execution, containers, secrets leaving
 *   mux.c      tmux, screen, entr, expect: command strings and keys typed into a shell
 *   rescan.c   after a limit: the whole input again, flat, for what the floor rules look for
 *
 * Single-threaded per eval; the tables are immutable.
 */
#ifndef SANDBOXD_POLICY_INTERNAL_H
#define SANDBOXD_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"
#include "protocol/sha256.h" /* sha256_hex: the rules file's digest */

#define POLICY_MAX_INPUT    (256 * 1024) /* bytes of one command string that are parsed */
#define POLICY_MAX_UNITS    4096         /* simple commands per evaluation */
#define POLICY_MAX_NEST     64           /* nesting of (), {}, $(), `` */
#define POLICY_MAX_CARRIER  8            /* bash -c / eval / … recursion */
#define POLICY_MAX_WORDS    16384        /* words (after brace expansion) per evaluation */
#define POLICY_MAX_FINDINGS 64
#define POLICY_MAX_BRACE    256 /* words from one brace expansion */
#define POLICY_MAX_HEREDOCS 16  /* pending on one line */
#define POLICY_MAX_LINKS    64  /* symlinks remembered per evaluation */
#define POLICY_MAX_FDS      64  /* file descriptors remembered per evaluation */
#define DIRSTACK_MAX        16  /* pushd entries followed */
#define ATTR_MAX            32  /* declare -i / -n names remembered */

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
#define W_DYN      0x001 /* contains an expansion that was not resolved */
#define W_GLOB     0x002 /* unquoted glob character */
#define W_QUOTED   0x004 /* some part quoted or escaped */
#define W_NONASCII 0x008
#define W_SPLIT    0x010  /* unquoted dynamic part: field count unknown */
#define W_SUB      0x020  /* contains $(…), `…` or <(…) */
#define W_OBF      0x040  /* backslash or ANSI-C escapes inside */
#define W_ASSIGN   0x080  /* NAME=value */
#define W_PSUB_OUT 0x100  /* contains >(…): the units inside read what the command writes */
#define W_OVERFLOW 0x200  /* brace expansion beyond the limit: the words are not all known */
#define W_STDIN    0x400  /* stands for data read from the unit's stdin (xargs) */
#define W_CTRL     0x800  /* control characters inside */
#define W_TREE     0x1000 /* find -exec's {}: each file at or below this path (also W_DYN) */
#define W_SOME     0x2000 /* with W_TREE: only the files find's tests select */

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
        int fd;             /* -1: the default (0 or 1), -2: {var} */
        struct word target; /* file, fd number of a dup, or the delimiter of a heredoc */
        const char *body;   /* heredoc body (decoded when unquoted) */
        bool body_dyn;      /* unquoted body with unresolved expansions */
        bool append;        /* >> or &>> */
};

/* Unit flags. */
#define U_BG        0x1  /* run in the background */
#define U_FUNC      0x2  /* inside a function body */
#define U_CARRIED   0x4  /* from a carrier payload (bash -c, eval, …) */
#define U_DOWNGRADE 0x8  /* suffix of an unknown wrapper: floor findings become ASK */
#define U_COND      0x10 /* in a conditional context (if/while/case body, after && or ||) */
#define U_DONE      0x20 /* analysed already */
#define U_CD_OK     0x40 /* runs only if the cd just before it succeeded (cd DIR && …) */

/* pipe_prev values besides a unit index. */
#define PIPE_NONE    (-1) /* stdin is not a pipe */
#define PIPE_UNKNOWN (-2) /* a pipe from something that is not a simple command */

/* One simple command that would execute. */
struct unit {
        struct word *argv;
        size_t argc, argcap;
        struct word *assign;
        size_t nassign, assigncap;
        struct redir *redir;
        size_t nredir, redircap;
        int pipe_prev; /* unit feeding stdin through a pipe, or PIPE_* */
        int fed_by;    /* unit whose output this one reads through >(…), -1 */
        int inherit;   /* unit whose stdin this one inherits (carrier, group), -1 */
        int level;     /* substitution nesting */
        int depth;     /* carrier nesting */
        int scope;     /* the subshell it runs in (ev->scopes) */
        /* The script variables it sees: vars[var_lo..var_hi), then those its carrier saw. */
        size_t var_lo, var_hi;
        int carrier;     /* the unit whose payload it comes from, -1 */
        bool var_closed; /* in a loop or function body, or after eval: what it does not see
                          * in vars[var_lo..var_hi) is unknown */
        unsigned flags;
        /* set by the analysis, for the passes over the whole command */
        const char *secret; /* a key or credential file this unit reads, NULL */
        bool net;           /* sends data over the network */
};

struct func_def {
        const char *name;
        int lo, hi;            /* units of the body */
        size_t var_lo, var_hi; /* the assignments of its body (ev->vars): unknown after a call */
};

struct var {
        const char *name;
        const char *value; /* NULL: assigned a value we cannot know; var_unset: not assigned */
        struct word from;  /* the assignment word (NAME=…), .s NULL when none: taint source */
        int from_unit;     /* the unit that assigned it (read, mapfile …), -1 */
};
/* The value of a variable that a subshell's end takes back to "not set by the script". */
extern const char var_unset[];

/* A subshell (or the top level): a cd inside it holds for the rest of it only. */
struct scope {
        int parent;
        bool has_cwd;
        const char *cwd;     /* NULL with has_cwd: unknown */
        const char *cwd_alt; /* the cwd before a cd that may have failed, or NULL */
};

/* What a file descriptor was opened from (exec N< …, N<<<, N<<). */
struct fdsrc {
        int fd;
        int unit;                  /* the unit whose redirection opened it */
        const struct redir *redir; /* NULL: closed */
};

struct link {
        const char *path, *target; /* normalised */
};

/* A file the command writes, and what it writes when that is known. */
struct written {
        const char *path;
        const char *content; /* NULL: not known */
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
        bool stop;        /* a limit or syntax error ended parsing */
        bool limited;     /* a parse.limit finding was added: rescan.c judges the input again */
        unsigned nlimits; /* parse.limit findings so far (a payload rescans on a new one) */
        size_t rescanned; /* bytes of payloads rescanned (bounded, rescan.c) */
        size_t unit_base; /* the unit limit counts from here (rescan.c's payloads) */
        struct var *vars;
        size_t nvars, varcap;
        size_t var_floor; /* the payload being parsed sees vars[var_floor..), then its carrier's */
        int var_carrier;
        size_t var_barrier; /* in a loop or function body: nothing below it is certain */
        size_t var_havoc;   /* after eval/source (vars[0..var_havoc) are not trusted) */
        bool ifs_changed;
        bool cd_seen; /* a cd was parsed: $PWD is no longer the starting cwd */
        struct scope *scopes;
        size_t nscopes, scopecap;
        struct func_def *funcs;
        size_t nfuncs, funccap;
        const char *home;      /* $HOME as the shell sees it, NULL when unknown */
        const char *acct_home; /* the caller's home directory (ctx->home), may equal home */
        const char *cwd;       /* tracked working directory, NULL when unknown */
        const char *cwd_alt;   /* where a cd that may have failed left it instead, or NULL */
        const char *start_cwd; /* the cwd the command starts in */
        const char *ws;        /* the workspace (ctx->workspace or the first cwd), may be NULL */
        const char *attr[ATTR_MAX];     /* names declared -i (value 'i') or -n ('n') … */
        char attrkind[ATTR_MAX];        /* … so that assigning them is evaluated (arith.c) */
        size_t nattr;                   /* > ATTR_MAX: some were not remembered */
        const char *dirs[DIRSTACK_MAX]; /* pushd's stack (entries may be NULL: unknown) */
        size_t ndirs;
        struct written *written;
        size_t nwritten, writtencap;
        bool written_overflow;
        struct link links[POLICY_MAX_LINKS];
        size_t nlinks;
        struct fdsrc fds[POLICY_MAX_FDS];
        size_t nfds;
        struct ifinding *f;
        size_t nf, fcap;
        bool dropped;        /* findings beyond POLICY_MAX_FINDINGS were left out */
        const char *input;   /* the command judged (for the subject when findings were left out) */
        const char **vtaint; /* per variable: the secret it carries ("" none); net.c */
        const char **ftaint; /* files a secret was copied into (cp key /tmp/x), net.c */
        size_t nftaint, ftaintcap;
        bool *allowed; /* per unit: matched an allow rule of the rules file */
        size_t allowedcap;
        int downgrade; /* >0 while judging the suffix of an unknown wrapper */
        int nregex;    /* regular expressions compiled so far (bounded per evaluation) */
        bool posix;    /* parsing for a POSIX sh (dash): no $'…', brace lists or <(…) */
        bool host_access;
        bool no_file_rules;       /* while running the inline tests of a file being loaded */
        struct sbx_error invalid; /* container checks: the first spec field that cannot be judged */
};

/* ---- analyze.c: findings, dispatch, the whole-command passes ---- */

/* Prepares an evaluation. */
void analyze_init(struct eval *ev, const struct policy *p, const struct policy_ctx *ctx,
                  size_t input_len);
/* Analyses units from index from, including those carriers add on the way. */
void analyze_units(struct eval *ev, int from);
/* The same without the whole-command passes (fork bombs, secrets leaving): for units added
 * while others are analysed, the passes run once at the end. */
void analyze_range(struct eval *ev, int from);
/* Moves the findings into out (strictest verdict wins). */
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
/* Whether path names a credential file or directory (paths.c; file.read). */
bool analyze_is_credential(const char *path);
/* Judges argv av[0..ac) of unit k as a command (peel = wrappers already peeled). */
void analyze_view(struct eval *ev, int k, const struct word *av, size_t ac, int peel);
/* Parses and analyses a carrier payload at depth+1 on behalf of unit, with the variables
 * visible at that unit; same_shell (eval, source, trap): a cd in it holds after it. */
void analyze_payload(struct eval *ev, int unit, const char *script, bool same_shell);
/* The same for a payload of the shell named who (sh and dash are also read as POSIX sh). */
void analyze_shell_payload(struct eval *ev, int unit, const char *script, const char *who,
                           bool same_shell);
/* A new scope inside parent; returns its id. */
int analyze_scope_new(struct eval *ev, int parent);
/* The words joined by blanks (new, arena). */
const char *analyze_join(struct eval *ev, const struct word *av, size_t ac);
/* A subject for approvals that names this payload exactly: "who payload" (arena); a long one
 * becomes a prefix and its SHA-256 in the finding. */
const char *analyze_digest(struct eval *ev, const char *who, const char *payload);

/* A command handler: judges argv av[0..ac) of unit k (av[0] is the command) and returns the
 * index of the command it runs in turn (a wrapper), or 0. */
typedef int (*cmd_fn)(struct eval *ev, int k, const struct word *av, size_t ac);
struct cmd {
        const char *name;
        cmd_fn fn;
};
/* One module's commands, sorted by name. */
struct cmd_table {
        const struct cmd *cmds;
        size_t n;
};
extern const struct cmd_table wrap_cmds, carrier_cmds, shbuiltin_cmds, mux_cmds, embed_cmds,
        git_cmds, fsops_cmds, system_cmds, net_cmds, rewrite_cmds;
/* The handler for a command name (basename, version suffixes folded), or NULL. */
cmd_fn analyze_lookup(const char *name);

/* The program a unit runs after the usual wrappers ("" when none), for pipe producers. */
const char *analyze_unit_name(struct eval *ev, const struct unit *u);

/* Small helpers shared by the rule modules (analyze.c). */
const char *analyze_base(const char *s);
bool analyze_in(const char *s, const char *const *list);
bool analyze_lit(const struct word *w);
/* A word made of s with the flags of w (arena). */
struct word analyze_word(const struct word *w, const char *s);

/* ---- opts.c ---- */

enum { OPT_NONE = 0, OPT_REQ = 1, OPT_OPT = 2 };

struct lopt {
        const char *name;
        unsigned char arg; /* OPT_* */
        int id;            /* the equivalent short letter, or a code >= 256 */
};

#define OS_STOP 0x1 /* options end at the first operand (getopt "+", wrappers) */
#define OS_NODD 0x2 /* "--" is an ordinary operand */
#define OS_TAIL                                                                                    \
        0x4 /* with OS_STOP: every word after the stop is an operand (else only the                \
             * first: a wrapper needs no more, and peeling stays linear) */

/* A command's options: shorts in getopt syntax ("rf" plus ':' after a letter that takes a
 * value, "::" for an optional attached value), longs NULL-terminated (may be NULL). */
struct optspec {
        const char *shorts;
        const struct lopt *longs;
        unsigned flags;
};

struct optocc {
        int id;
        const struct word *val; /* NULL: none */
        size_t at;              /* index of the word */
};

struct optres {
        struct optocc *o;
        size_t no;
        const struct word **ops; /* operands, in order */
        size_t nops;
        size_t stop;  /* index of the first word not consumed as an option (OS_STOP) */
        bool dyn;     /* a word before "--" is only known at run time: it may be any option */
        bool unknown; /* an option the table does not know, or an ambiguous abbreviation */
};

/* Reads av[from..ac) as getopt_long would with spec sp into *r (arena memory). */
void opts_parse(struct eval *ev, const struct optspec *sp, const struct word *av, size_t ac,
                size_t from, struct optres *r);
bool opts_has(const struct optres *r, int id);
/* The value of the last occurrence of id, or NULL. */
const struct word *opts_val(const struct optres *r, int id);

/* ---- paths.c ---- */

enum target {
        T_NONE,
        T_ROOT,
        T_SYSTEM,
        T_HOME,
        T_SELF,
};

enum devkind {
        DEV_NONE,     /* not a device */
        DEV_HARMLESS, /* /dev/null, /dev/tty, … */
        DEV_BLOCK,    /* a disk, a partition, a volume, memory */
        DEV_OTHER,    /* any other device node */
        DEV_NET,      /* /dev/tcp, /dev/udp */
};

/* Normalised absolute path for a word's text (cwd, ~, /proc/…/root, symlinks made earlier in
 * the command), "~/.." for above an unknown home, or NULL if it cannot be known. */
const char *paths_resolve(struct eval *ev, const char *s);
/* The resolved directory a glob's matches are in, or NULL. */
const char *paths_glob_dir(struct eval *ev, const char *s);
/* What a destructive operand would hit, looking through globs; ancestor: an operand that
 * contains a protected path counts too. W_OVERFLOW words count as the root. */
enum target paths_classify(struct eval *ev, const struct word *w, bool ancestor);
enum target paths_classify_path(struct eval *ev, const char *path, bool ancestor);
/* Whether the relative path s may be relative to where a failed cd left the shell. */
bool paths_cwd_uncertain(struct eval *ev, const char *s);
enum devkind paths_device(const char *path);
bool paths_below(const char *path, const char *dir);
/* The workspace contains path (strictly below it). */
bool paths_in_workspace(struct eval *ev, const char *path);
/* Judges one path the command writes (del: deletes). */
void paths_check_write(struct eval *ev, int k, const struct word *w, bool del);
/* Remembers a symlink LINK -> TARGET made by unit k. */
void paths_add_link(struct eval *ev, const struct word *target, const struct word *link);
/* Whether this path was written earlier in the command (write-then-run); *content (may be
 * NULL) receives what was written when it is known. */
bool paths_was_written(struct eval *ev, const struct word *w, const char **content);
/* Records what the last write of path w holds (a literal heredoc or echo). */
void paths_note_content(struct eval *ev, const struct word *w, const char *content);
/* A key or credential file (or, with ancestor, a directory holding them); NULL if not. */
const char *paths_secret(struct eval *ev, const char *s, bool ancestor);

/* ---- env.c ---- */

/* Judges one NAME=VALUE (assignment prefix, env argument, export) for unit k; value may be a
 * word of the command (NULL when given as plain text in s). */
void env_check_assign(struct eval *ev, int k, const struct word *w);
/* Judges the variables the request itself sets (ctx->request_env). */
void env_check_request(struct eval *ev, json_t *env);
/* A git config key (section.key, any case) whose value runs a program or loads config. */
bool env_git_key_runs(const char *key);
/* The value of a pager or editor variable is a harmless program. */
bool env_harmless_program(const char *value);

/* ---- carrier.c ---- */

/* A shell or interpreter with no script operand reads code from its stdin (is_shell: the
 * code is shell and is parsed when known). */
void carrier_stdin(struct eval *ev, int k, const char *who, bool is_shell);
/* A script operand: a file, a process substitution, /dev/stdin, /dev/fd/N. */
void carrier_script(struct eval *ev, int k, const struct word *w, const char *who, bool is_shell);
/* A payload word (bash -c, eval, su -c, …): parsed when literal, ASK when not. */
void carrier_payload(struct eval *ev, int k, const struct word *w, const char *who);
/* Judges the literal text a tool reads as commands, in the tool's own language. */
typedef void (*carrier_text_fn)(struct eval *ev, int k, const char *text, const char *who);
/* A tool that reads its commands from stdin: a literal stream is judged by fn (NULL: ASK
 * unless harmless), a stream only known at run time is exec.stdin-code (exec.remote-code from a
 * fetcher). */
void carrier_stdin_tool(struct eval *ev, int k, const char *who, carrier_text_fn fn);
/* A tool's script file operand (awk -f, sed -f, make -f): "-", /dev/stdin, /dev/fd/N, a
 * process substitution or a file written earlier. */
void carrier_script_tool(struct eval *ev, int k, const struct word *w, const char *who,
                         carrier_text_fn fn);
/* Remembers the file descriptors an `exec` without a command opens for the shell. */
void carrier_note_fds(struct eval *ev, int k);
/* Whether a fetcher (curl, wget, nc, …) produces what unit k reads on stdin. */
bool carrier_stdin_remote(struct eval *ev, int k);

/* ---- rescan.c ---- */

/* After a limit: scans the whole command s[0..n) with a flat lexer and judges each command's
 * name, options and floor operands, so that no limit weakens a verdict. */
void rescan_input(struct eval *ev, const char *s, size_t n);
/* The same for the payload of unit carrier when parsing it hit a limit. */
void rescan_payload(struct eval *ev, int carrier, const char *s);
/* The same for an argv exec. */
void rescan_argv(struct eval *ev, char *const *argv, size_t argc);

/* ---- fsops.c ---- */

/* The floor of a recursive delete of the tree w (rsync --delete) for unit k; all is the
 * command shown. */
void fsops_delete_tree(struct eval *ev, int k, const struct word *w, const char *all);
/* An archive extracted into dir (NULL: the cwd; absolute: its names may be anywhere). */
void fsops_extract(struct eval *ev, int k, const struct word *dir, bool absolute, const char *all);
/* Whether av has pat's words in order after its name pat[0] (at most n; "x*" a prefix,
 * "*x*" a substring, any case). */
bool analyze_has_words(const struct word *av, size_t ac, const char *const *pat, size_t n);
/* infra.destroy for commands that delete infrastructure or data through a service. */
void infra_check(struct eval *ev, int k, const struct word *av, size_t ac);
/* zip -m/--move ARCHIVE PATHS: the paths are deleted once archived. */
void rewrite_zip_move(struct eval *ev, int k, const struct word *av, size_t ac);
/* A copy of src into the directory dest (merge: src's whole tree, names unknown). */
void fsops_copy_into(struct eval *ev, int k, const struct word *dest, const struct word *src,
                     bool merge, const char *all);
/* The path a find -exec {} word (W_TREE) stands below, as a literal word. */
struct word fsops_tree_start(struct eval *ev, const struct word *w);

/* ---- inline.c ---- */

enum inline_lang {
        IL_PYTHON,
        IL_NODE,
        IL_PERL,
        IL_RUBY,
        IL_OTHER,
};
/* The inline program code is in the allowlist of harmless programs for its language. */
bool inline_harmless(enum inline_lang lang, const char *code);

/* ---- net.c ---- */

/* Whole-command pass: a key or credential file read by a unit whose data reaches a network
 * tool (the same unit, a pipe downstream, a substitution in its arguments). */
void net_exfil_pass(struct eval *ev);
/* Programs that fetch from or send to the network. */
extern const char *const net_fetchers[];

/* ---- parse.c, word.c ---- */

/* What a literal echo/printf unit prints (trailing newlines kept), or NULL when it is not
 * one or its output depends on run time. */
const char *word_echo_output(struct eval *ev, const struct unit *u);

/* Parser: appends units for script to ev (level 0, depth and scope as given). */
void parse_script(struct eval *ev, const char *s, size_t n, int depth, int scope);
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
