/* rewrite.c — programs that replace, convert or delete the very files they are given (no
 * destination operand for fsops.c's copy rules to judge): compressors that swap FILE for
 * FILE.gz (gzip bzip2 xz lzma compress pigz; zstd and lz4 with --rm; -r for whole trees),
 * 7z -sdel and zip -m, which delete what they archived, output operands and options (uniq IN
 * OUT, xxd IN OUT, shuf -o, iconv -o, sponge FILE), in-place converters (dos2unix …),
 * deleters by other names (srm and wipe as rm; trash-put, trash and gio trash as rm -r, since
 * they take directories whole) and setfacl (as chmod). */
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

enum {
        Z_RM = 256,
        Z_HELP,
        Z_OTHER,
};

/* The rm-like tools judged as rm (rec: they take directories whole, as rm -r). */
static int
as_rm(struct eval *ev, int k, const struct word *av, size_t ac, size_t skip, bool rec)
{
        struct word *v = arena_alloc(&ev->ar, (ac + 2) * sizeof(*v));
        size_t n = 0;

        v[n++] = analyze_word(&av[0], "rm");
        if (rec)
                v[n++] = analyze_word(&av[0], "-r");
        for (size_t j = 1 + skip; j < ac; j++)
                v[n++] = av[j];
        analyze_view(ev, k, v, n, 1);
        return 0;
}

static int
h_srm(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);

        return as_rm(ev, k, av, ac, 0, strncmp(n, "trash", 5) == 0);
}

/* gio trash|remove|rm FILE…: trash takes directories whole. */
static int
h_gio(struct eval *ev, int k, const struct word *av, size_t ac)
{
        if (ac < 2 || !analyze_lit(&av[1])) {
                if (ac >= 2)
                        analyze_add(ev, k, "exec.opaque-cmd", av[1].s, analyze_join(ev, av, ac));
                return 0;
        }
        if (!strcmp(av[1].s, "trash"))
                return as_rm(ev, k, av, ac, 1, true);
        if (!strcmp(av[1].s, "remove") || !strcmp(av[1].s, "rm"))
                return as_rm(ev, k, av, ac, 1, false);
        return 0;
}

/* ---- compressors: FILE becomes FILE.gz, FILE itself is gone ---- */

struct compressor {
        const char *name;
        bool removes; /* without --rm too */
};

static const struct compressor compressors[] = {
        {"gzip", true},   {"gunzip", true},  {"pigz", true},    {"unpigz", true},
        {"bzip2", true},  {"bunzip2", true}, {"pbzip2", true},  {"xz", true},
        {"unxz", true},   {"lzma", true},    {"unlzma", true},  {"compress", true},
        {"lzip", true},   {"zstd", false},   {"unzstd", false}, {"lz4", false},
        {"unlz4", false}, {"brotli", false}, {"lzop", false},
};

static int
h_compress(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {
                {"stdout", OPT_NONE, 'c'},     {"to-stdout", OPT_NONE, 'c'},
                {"keep", OPT_NONE, 'k'},       {"test", OPT_NONE, 't'},
                {"list", OPT_NONE, 'l'},       {"recursive", OPT_NONE, 'r'},
                {"rm", OPT_NONE, Z_RM},        {"output", OPT_REQ, 'o'},
                {"suffix", OPT_REQ, 'S'},      {"threads", OPT_REQ, 'T'},
                {"format", OPT_REQ, 'F'},      {"check", OPT_REQ, 'C'},
                {"memlimit", OPT_REQ, 'M'},    {"help", OPT_NONE, Z_HELP},
                {"version", OPT_NONE, Z_HELP}, {NULL, 0, 0}};
        static const struct optspec sp = {"0123456789abcdefhkLlnNqrstvVzS:T:F:C:M:o:D:", longs, 0};
        const char *n = analyze_base(av[0].s);
        bool removes = false;
        struct optres r;

        for (size_t j = 0; j < ARRAY_SIZE(compressors); j++)
                if (!strcmp(compressors[j].name, n))
                        removes = compressors[j].removes;
        opts_parse(ev, &sp, av, ac, 1, &r);
        if (opts_val(&r, 'o'))
                paths_check_write(ev, k, opts_val(&r, 'o'), false);
        if (opts_has(&r, 'c') || opts_has(&r, 'k') || opts_has(&r, 't') || opts_has(&r, 'l') ||
            opts_has(&r, Z_HELP) || opts_has(&r, 'o') || !(removes || opts_has(&r, Z_RM)))
                return 0;
        const char *all = analyze_join(ev, av, ac);
        for (size_t j = 0; j < r.nops; j++) {
                if (opts_has(&r, 'r'))
                        fsops_extract(ev, k, r.ops[j], false, all); /* every file below */
                else
                        paths_check_write(ev, k, r.ops[j], true);
        }
        return 0;
}

/* 7z a -sdel ARCHIVE PATHS… and zip -m ARCHIVE PATHS… delete what they archived (7z takes
 * directories whole, zip with -r): judged as rsync --remove-source-files is. */
static void
archive_move(struct eval *ev, int k, const struct word *av, size_t ac, size_t first, bool rec)
{
        const char *all = analyze_join(ev, av, ac);

        for (size_t j = first; j < ac; j++) {
                if (av[j].s[0] == '-' && analyze_lit(&av[j]))
                        continue;
                if (rec)
                        fsops_delete_tree(ev, k, &av[j], all);
                paths_check_write(ev, k, &av[j], true);
        }
}

static int
h_7z(struct eval *ev, int k, const struct word *av, size_t ac)
{
        size_t archive = 0;
        bool del = false;

        if (ac >= 2 && (!strcmp(av[1].s, "x") || !strcmp(av[1].s, "e"))) {
                /* extraction into -oDIR (or the cwd), as tar x -C DIR */
                const struct word *dir = NULL;
                struct word d;
                for (size_t j = 2; j < ac; j++)
                        if (!strncmp(av[j].s, "-o", 2)) {
                                d = analyze_word(&av[j], av[j].s + 2);
                                dir = &d;
                        }
                fsops_extract(ev, k, dir, false, analyze_join(ev, av, ac));
                return 0;
        }

        for (size_t j = 2; j < ac; j++) {
                del = del || !strcmp(av[j].s, "-sdel") || !analyze_lit(&av[j]);
                if (!archive && av[j].s[0] != '-')
                        archive = j;
        }
        if (del && archive)
                archive_move(ev, k, av, ac, archive + 1, true);
        return 0;
}

void
rewrite_zip_move(struct eval *ev, int k, const struct word *av, size_t ac)
{
        bool move = false, rec = false;
        size_t archive = 0;

        for (size_t j = 1; j < ac; j++) {
                const char *s = av[j].s;
                bool opt = s[0] == '-' && s[1] != '-' && analyze_lit(&av[j]);
                move = move || !strcmp(s, "--move") || (opt && strchr(s, 'm'));
                rec = rec || !strcmp(s, "--recurse-paths") || (opt && strchr(s, 'r'));
                if (!archive && s[0] != '-')
                        archive = j;
        }
        if (move && archive)
                archive_move(ev, k, av, ac, archive + 1, rec);
}

/* ---- files named as outputs ---- */

struct output_tool {
        const char *name;
        struct optspec sp;
        int opt;     /* the option naming the output (0: none) */
        int operand; /* the operand that is the output (-1: none, -2: every operand) */
};

static const struct lopt uniq_longs[] = {{"count", OPT_NONE, 'c'},
                                         {"repeated", OPT_NONE, 'd'},
                                         {"all-repeated", OPT_OPT, 'D'},
                                         {"skip-fields", OPT_REQ, 'f'},
                                         {"group", OPT_OPT, Z_OTHER},
                                         {"ignore-case", OPT_NONE, 'i'},
                                         {"skip-chars", OPT_REQ, 's'},
                                         {"unique", OPT_NONE, 'u'},
                                         {"zero-terminated", OPT_NONE, 'z'},
                                         {"check-chars", OPT_REQ, 'w'},
                                         {NULL, 0, 0}};
static const struct lopt out_longs[] = {{"output", OPT_REQ, 'o'},
                                        {"input-range", OPT_REQ, 'i'},
                                        {"head-count", OPT_REQ, 'n'},
                                        {"random-source", OPT_REQ, Z_OTHER},
                                        {"repeat", OPT_NONE, 'r'},
                                        {"zero-terminated", OPT_NONE, 'z'},
                                        {"echo", OPT_NONE, 'e'},
                                        {"from-code", OPT_REQ, 'f'},
                                        {"to-code", OPT_REQ, 't'},
                                        {"silent", OPT_NONE, 's'},
                                        {"list", OPT_NONE, 'l'},
                                        {"verbose", OPT_NONE, Z_OTHER},
                                        {NULL, 0, 0}};

static const struct output_tool outputs[] = {
        {"uniq", {"cdDf:isuw:z", uniq_longs, 0}, 0, 1},
        {"xxd", {"abCEeiprRuhvdc:g:l:o:s:n:", NULL, 0}, 0, 1},
        {"shuf", {"ei:n:o:rz", out_longs, 0}, 'o', -1},
        {"iconv", {"f:t:o:csl", out_longs, 0}, 'o', -1},
        {"sponge", {"a", NULL, 0}, 0, 0},
        {"dos2unix", {"abcDfhikLlmnoqrsuVvOFRS", NULL, 0}, 0, -2},
        {"unix2dos", {"abcDfhikLlmnoqrsuVvOFRS", NULL, 0}, 0, -2},
        {"mac2unix", {"abcDfhikLlmnoqrsuVvOFRS", NULL, 0}, 0, -2},
        {"unix2mac", {"abcDfhikLlmnoqrsuVvOFRS", NULL, 0}, 0, -2},
};

static int
h_output(struct eval *ev, int k, const struct word *av, size_t ac)
{
        const char *n = analyze_base(av[0].s);
        const struct output_tool *t = NULL;
        struct optres r;

        for (size_t j = 0; j < ARRAY_SIZE(outputs) && !t; j++)
                if (!strcmp(outputs[j].name, n))
                        t = &outputs[j];
        if (!t)
                return 0;
        opts_parse(ev, &t->sp, av, ac, 1, &r);
        if (t->opt && opts_val(&r, t->opt))
                paths_check_write(ev, k, opts_val(&r, t->opt), false);
        for (size_t j = 0; j < r.nops; j++)
                if (t->operand == -2 || (size_t) t->operand == j)
                        paths_check_write(ev, k, r.ops[j], false);
        return 0;
}

/* setfacl: -R on /, a system directory or home is the chmod -R floor; any ACL it grants
 * (-m, -M, --set, --set-file, --restore) weakens permissions as a chmod would. */
static int
h_setfacl(struct eval *ev, int k, const struct word *av, size_t ac)
{
        static const struct lopt longs[] = {{"modify", OPT_REQ, 'm'},
                                            {"modify-file", OPT_REQ, 'M'},
                                            {"remove", OPT_REQ, 'x'},
                                            {"remove-file", OPT_REQ, 'X'},
                                            {"remove-all", OPT_NONE, 'b'},
                                            {"remove-default", OPT_NONE, 'k'},
                                            {"set", OPT_REQ, 's'},
                                            {"set-file", OPT_REQ, 'S'},
                                            {"restore", OPT_REQ, 'r'},
                                            {"recursive", OPT_NONE, 'R'},
                                            {"default", OPT_NONE, 'd'},
                                            {"mask", OPT_NONE, Z_OTHER},
                                            {"no-mask", OPT_NONE, 'n'},
                                            {"logical", OPT_NONE, 'L'},
                                            {"physical", OPT_NONE, 'P'},
                                            {"test", OPT_NONE, Z_OTHER},
                                            {NULL, 0, 0}};
        static const struct optspec sp = {"m:M:x:X:bks:S:r:RdnLP", longs, 0};
        const char *all = analyze_join(ev, av, ac);
        struct optres r;

        opts_parse(ev, &sp, av, ac, 1, &r);
        for (size_t j = 0; j < r.nops; j++) {
                enum target t = paths_classify(ev, r.ops[j], opts_has(&r, 'R'));
                if (t == T_SELF || (t != T_NONE && (opts_has(&r, 'R') || r.dyn))) {
                        analyze_add(ev, k, t == T_SELF ? "floor.self-protect" : "floor.perm-root",
                                    all, r.ops[j]->s);
                        return 0;
                }
        }
        if (opts_has(&r, 'm') || opts_has(&r, 'M') || opts_has(&r, 's') || opts_has(&r, 'S') ||
            opts_has(&r, 'r') || r.dyn)
                analyze_add(ev, k, "perm.chmod", all, analyze_join(ev, av + 1, ac - 1));
        return 0;
}

/* sorted by name (bsearch) */
static const struct cmd cmds[] = {
        {"7z", h_7z},
        {"7za", h_7z},
        {"7zr", h_7z},
        {"brotli", h_compress},
        {"bunzip2", h_compress},
        {"bzip2", h_compress},
        {"compress", h_compress},
        {"dos2unix", h_output},
        {"gio", h_gio},
        {"gunzip", h_compress},
        {"gzip", h_compress},
        {"iconv", h_output},
        {"lz4", h_compress},
        {"lzip", h_compress},
        {"lzma", h_compress},
        {"lzop", h_compress},
        {"mac2unix", h_output},
        {"pbzip2", h_compress},
        {"pigz", h_compress},
        {"setfacl", h_setfacl},
        {"shuf", h_output},
        {"sponge", h_output},
        {"srm", h_srm},
        {"trash", h_srm},
        {"trash-put", h_srm},
        {"uniq", h_output},
        {"unix2dos", h_output},
        {"unix2mac", h_output},
        {"unlz4", h_compress},
        {"unlzma", h_compress},
        {"unpigz", h_compress},
        {"unxz", h_compress},
        {"unzstd", h_compress},
        {"wipe", h_srm},
        {"xxd", h_output},
        {"xz", h_compress},
        {"zstd", h_compress},
};

const struct cmd_table rewrite_cmds = {cmds, ARRAY_SIZE(cmds)};
