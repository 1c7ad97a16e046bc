/* inline.c — is this inline interpreter program harmless? An allowlist, not a denylist.
 *
 * `python3 -c 'print(1)'` or `node -p "require('./package.json').version"` should not ask;
 * `python3 -c 'import os; os.system(…)'` must. The program is tokenised (strings, comments,
 * numbers, identifiers, punctuation) and is harmless only when every identifier is a keyword,
 * an allowed builtin or module, a name the program itself assigns, or (after '.') an allowed
 * attribute; imports and require() name allowed modules; nothing reaches the shell, the file
 * system for writing, the network, reflection or dynamic evaluation. String contents are data,
 * except the code inside f-strings and template literals. Anything the scanner does not
 * understand makes the program not harmless (ASK, never ALLOW).
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

#define INLINE_MAX    (64 * 1024)
#define INLINE_LOCALS 128

struct lang {
        const char *const *never;   /* names a program may not even assign (shadowing) */
        const char *const *words;   /* keywords, builtins, allowed modules */
        const char *const *attrs;   /* names allowed after '.' */
        const char *const *modules; /* import / require / use */
        const char *const *decl;    /* keywords after which names are local */
        bool hash_comment, slash_comment, backtick_exec, templates, sigils, fstrings;
};

static const char *const py_words[] = {"False",
                                       "None",
                                       "True",
                                       "and",
                                       "as",
                                       "assert",
                                       "break",
                                       "class",
                                       "continue",
                                       "def",
                                       "del",
                                       "elif",
                                       "else",
                                       "for",
                                       "from",
                                       "if",
                                       "import",
                                       "in",
                                       "is",
                                       "lambda",
                                       "not",
                                       "or",
                                       "pass",
                                       "return",
                                       "while",
                                       "with",
                                       "yield",
                                       "print",
                                       "len",
                                       "str",
                                       "int",
                                       "float",
                                       "bool",
                                       "list",
                                       "dict",
                                       "set",
                                       "tuple",
                                       "range",
                                       "enumerate",
                                       "zip",
                                       "sorted",
                                       "reversed",
                                       "sum",
                                       "min",
                                       "max",
                                       "abs",
                                       "round",
                                       "map",
                                       "filter",
                                       "any",
                                       "all",
                                       "repr",
                                       "chr",
                                       "ord",
                                       "hex",
                                       "oct",
                                       "bin",
                                       "divmod",
                                       "pow",
                                       "isinstance",
                                       "type",
                                       "hash",
                                       "format",
                                       "iter",
                                       "next",
                                       "bytes",
                                       "bytearray",
                                       "frozenset",
                                       "slice",
                                       "input",
                                       "Exception",
                                       "ValueError",
                                       "KeyError",
                                       "TypeError",
                                       "IndexError",
                                       "StopIteration",
                                       "SystemExit",
                                       "try",
                                       "except",
                                       "finally",
                                       "raise",
                                       "exit",
                                       "quit",
                                       "callable",
                                       "complex",
                                       "object",
                                       "super",
                                       "property",
                                       "staticmethod",
                                       "classmethod",
                                       "NotImplemented",
                                       "Ellipsis",
                                       "self",
                                       NULL};
static const char *const py_modules[] = {
        "sys",         "json",      "math",        "re",          "datetime",  "time",
        "string",      "itertools", "collections", "functools",   "textwrap",  "pprint",
        "decimal",     "fractions", "statistics",  "random",      "hashlib",   "base64",
        "binascii",    "struct",    "platform",    "uuid",        "calendar",  "operator",
        "copy",        "enum",      "typing",      "unicodedata", "shlex",     "html",
        "csv",         "zlib",      "os",          "os.path",     "locale",    "secrets",
        "heapq",       "bisect",    "array",       "keyword",     "ast",       "tomllib",
        "difflib",     "fnmatch",   "glob",        "codecs",      "io",        "contextlib",
        "dataclasses", "numbers",   "cmath",       "colorsys",    "ipaddress", "getpass",
        "sysconfig",   NULL};
/* Attributes: module members and methods that only compute, read or print. */
static const char *const py_attrs[] = {"argv",
                                       "stdin",
                                       "stdout",
                                       "stderr",
                                       "version",
                                       "version_info",
                                       "platform",
                                       "executable",
                                       "maxsize",
                                       "byteorder",
                                       "exit",
                                       "path",
                                       "read",
                                       "readline",
                                       "readlines",
                                       "write",
                                       "flush",
                                       "buffer",
                                       "loads",
                                       "load",
                                       "dumps",
                                       "dump",
                                       "get",
                                       "keys",
                                       "values",
                                       "items",
                                       "append",
                                       "extend",
                                       "insert",
                                       "pop",
                                       "remove",
                                       "index",
                                       "count",
                                       "sort",
                                       "reverse",
                                       "copy",
                                       "clear",
                                       "update",
                                       "setdefault",
                                       "split",
                                       "rsplit",
                                       "splitlines",
                                       "strip",
                                       "lstrip",
                                       "rstrip",
                                       "join",
                                       "replace",
                                       "upper",
                                       "lower",
                                       "title",
                                       "capitalize",
                                       "startswith",
                                       "endswith",
                                       "find",
                                       "rfind",
                                       "format",
                                       "encode",
                                       "decode",
                                       "isdigit",
                                       "isalpha",
                                       "isspace",
                                       "zfill",
                                       "center",
                                       "ljust",
                                       "rjust",
                                       "partition",
                                       "sqrt",
                                       "pi",
                                       "e",
                                       "floor",
                                       "ceil",
                                       "log",
                                       "log2",
                                       "log10",
                                       "exp",
                                       "sin",
                                       "cos",
                                       "tan",
                                       "inf",
                                       "nan",
                                       "now",
                                       "today",
                                       "utcnow",
                                       "fromtimestamp",
                                       "isoformat",
                                       "strftime",
                                       "strptime",
                                       "timestamp",
                                       "time",
                                       "monotonic",
                                       "perf_counter",
                                       "sub",
                                       "match",
                                       "search",
                                       "findall",
                                       "finditer",
                                       "compile",
                                       "group",
                                       "groups",
                                       "fullmatch",
                                       "escape",
                                       "IGNORECASE",
                                       "MULTILINE",
                                       "DOTALL",
                                       "Counter",
                                       "defaultdict",
                                       "OrderedDict",
                                       "namedtuple",
                                       "deque",
                                       "chain",
                                       "product",
                                       "permutations",
                                       "combinations",
                                       "groupby",
                                       "islice",
                                       "reduce",
                                       "partial",
                                       "lru_cache",
                                       "dedent",
                                       "indent",
                                       "fill",
                                       "wrap",
                                       "pprint",
                                       "pformat",
                                       "Decimal",
                                       "Fraction",
                                       "mean",
                                       "median",
                                       "stdev",
                                       "randint",
                                       "choice",
                                       "shuffle",
                                       "random",
                                       "sample",
                                       "md5",
                                       "sha1",
                                       "sha256",
                                       "sha512",
                                       "hexdigest",
                                       "digest",
                                       "b64encode",
                                       "b64decode",
                                       "b16encode",
                                       "hexlify",
                                       "unhexlify",
                                       "pack",
                                       "unpack",
                                       "system_fn_disabled",
                                       "python_version",
                                       "machine",
                                       "node_",
                                       "uuid4",
                                       "hex",
                                       "getcwd",
                                       "environ",
                                       "getenv",
                                       "sep",
                                       "linesep",
                                       "name",
                                       "cpu_count",
                                       "getpid",
                                       "basename",
                                       "dirname",
                                       "abspath",
                                       "realpath",
                                       "exists",
                                       "isfile",
                                       "isdir",
                                       "splitext",
                                       "getsize",
                                       "expanduser",
                                       "relpath",
                                       "normpath",
                                       "Path",
                                       "parent",
                                       "parents",
                                       "stem",
                                       "suffix",
                                       "suffixes",
                                       "parts",
                                       "read_text",
                                       "read_bytes",
                                       "is_file",
                                       "is_dir",
                                       "resolve",
                                       "absolute",
                                       "cwd",
                                       "home",
                                       "quote",
                                       "reader",
                                       "DictReader",
                                       "writer",
                                       "writerow",
                                       "writerows",
                                       "DictWriter",
                                       "crc32",
                                       "month",
                                       "year",
                                       "day",
                                       "hour",
                                       "minute",
                                       "second",
                                       "weekday",
                                       "days",
                                       "seconds",
                                       "total_seconds",
                                       "timedelta",
                                       "date",
                                       "datetime",
                                       "utc",
                                       "timezone",
                                       "fromisoformat",
                                       "strip_",
                                       "casefold",
                                       "isupper",
                                       "islower",
                                       "isalnum",
                                       "ascii_letters",
                                       "digits",
                                       "punctuation",
                                       "whitespace",
                                       "ascii_lowercase",
                                       "ascii_uppercase",
                                       "maketrans",
                                       "translate",
                                       "expandtabs",
                                       "splitlines_",
                                       "real",
                                       "imag",
                                       "conjugate",
                                       "bit_length",
                                       "to_bytes",
                                       "from_bytes",
                                       "is_integer",
                                       "as_integer_ratio",
                                       "most_common",
                                       "elements",
                                       "popleft",
                                       "appendleft",
                                       "rotate",
                                       "literal_eval",
                                       "glob",
                                       "fnmatch",
                                       "unified_diff",
                                       "ndiff",
                                       "get_close_matches",
                                       "ip_address",
                                       "ip_network",
                                       "getuser",
                                       "get_paths",
                                       "get_platform",
                                       "StringIO",
                                       "getvalue",
                                       NULL};

static const char *const js_words[] = {"console",
                                       "JSON",
                                       "Math",
                                       "Date",
                                       "Number",
                                       "String",
                                       "Boolean",
                                       "Array",
                                       "Object",
                                       "Map",
                                       "Set",
                                       "RegExp",
                                       "Error",
                                       "parseInt",
                                       "parseFloat",
                                       "isNaN",
                                       "isFinite",
                                       "undefined",
                                       "null",
                                       "true",
                                       "false",
                                       "NaN",
                                       "Infinity",
                                       "const",
                                       "let",
                                       "var",
                                       "if",
                                       "else",
                                       "for",
                                       "of",
                                       "in",
                                       "while",
                                       "do",
                                       "return",
                                       "function",
                                       "typeof",
                                       "instanceof",
                                       "new",
                                       "break",
                                       "continue",
                                       "switch",
                                       "case",
                                       "default",
                                       "try",
                                       "catch",
                                       "finally",
                                       "throw",
                                       "process",
                                       "require",
                                       "BigInt",
                                       "Symbol",
                                       "Promise",
                                       "async",
                                       "await",
                                       "encodeURIComponent",
                                       "decodeURIComponent",
                                       "encodeURI",
                                       "decodeURI",
                                       "Buffer",
                                       "Intl",
                                       "structuredClone",
                                       "setTimeout",
                                       "clearTimeout",
                                       "TextEncoder",
                                       "TextDecoder",
                                       "URL",
                                       "URLSearchParams",
                                       NULL};
static const char *const js_modules[] = {
        "path",        "util",      "url",         "os",
        "assert",      "events",    "querystring", "string_decoder",
        "node:path",   "node:util", "node:url",    "node:os",
        "node:assert", NULL};
static const char *const js_attrs[] = {"log",
                                       "error",
                                       "warn",
                                       "info",
                                       "debug",
                                       "table",
                                       "dir",
                                       "stringify",
                                       "parse",
                                       "version",
                                       "versions",
                                       "platform",
                                       "arch",
                                       "argv",
                                       "env",
                                       "cwd",
                                       "exit",
                                       "exitCode",
                                       "stdout",
                                       "stderr",
                                       "write",
                                       "pid",
                                       "uptime",
                                       "hrtime",
                                       "memoryUsage",
                                       "floor",
                                       "ceil",
                                       "round",
                                       "max",
                                       "min",
                                       "abs",
                                       "sqrt",
                                       "pow",
                                       "random",
                                       "PI",
                                       "now",
                                       "toISOString",
                                       "getTime",
                                       "toString",
                                       "toFixed",
                                       "length",
                                       "map",
                                       "filter",
                                       "reduce",
                                       "forEach",
                                       "join",
                                       "split",
                                       "slice",
                                       "splice",
                                       "push",
                                       "pop",
                                       "shift",
                                       "unshift",
                                       "concat",
                                       "includes",
                                       "indexOf",
                                       "keys",
                                       "values",
                                       "entries",
                                       "assign",
                                       "fromEntries",
                                       "freeze",
                                       "sort",
                                       "reverse",
                                       "find",
                                       "findIndex",
                                       "some",
                                       "every",
                                       "flat",
                                       "flatMap",
                                       "trim",
                                       "trimStart",
                                       "trimEnd",
                                       "toUpperCase",
                                       "toLowerCase",
                                       "replace",
                                       "replaceAll",
                                       "startsWith",
                                       "endsWith",
                                       "padStart",
                                       "padEnd",
                                       "repeat",
                                       "match",
                                       "matchAll",
                                       "test",
                                       "exec_",
                                       "charAt",
                                       "charCodeAt",
                                       "fromCharCode",
                                       "codePointAt",
                                       "at",
                                       "isArray",
                                       "from",
                                       "of",
                                       "size",
                                       "has",
                                       "get",
                                       "set",
                                       "add",
                                       "delete",
                                       "then",
                                       "resolve",
                                       "all",
                                       "name",
                                       "description",
                                       "dependencies",
                                       "devDependencies",
                                       "peerDependencies",
                                       "scripts",
                                       "main",
                                       "module",
                                       "exports_",
                                       "types",
                                       "engines",
                                       "workspaces",
                                       "private",
                                       "license",
                                       "author",
                                       "repository",
                                       "homepage",
                                       "bin",
                                       "files",
                                       "type",
                                       "join_",
                                       "basename",
                                       "dirname",
                                       "extname",
                                       "resolve_",
                                       "relative",
                                       "normalize",
                                       "sep",
                                       "homedir",
                                       "hostname",
                                       "cpus",
                                       "totalmem",
                                       "freemem",
                                       "EOL",
                                       "inspect",
                                       "format",
                                       "isInteger",
                                       "MAX_SAFE_INTEGER",
                                       "parseInt",
                                       "parseFloat",
                                       "toLocaleString",
                                       "trunc",
                                       "sign",
                                       "log2",
                                       "log10",
                                       "exp",
                                       "Number",
                                       "message",
                                       "stack",
                                       "href",
                                       "pathname",
                                       "searchParams",
                                       "hostname_",
                                       "protocol",
                                       "search",
                                       "hash_",
                                       "byteLength",
                                       "from_",
                                       "alloc",
                                       "toJSON",
                                       "valueOf",
                                       "getFullYear",
                                       "getMonth",
                                       "getDate",
                                       "getDay",
                                       "getHours",
                                       "getMinutes",
                                       "getSeconds",
                                       "raw",
                                       "node",
                                       "v8",
                                       "modules",
                                       "openssl",
                                       "uv",
                                       NULL};

static const char *const perl_words[] = {
        "print",    "printf",  "say",     "chomp",  "chop",   "chr",    "ord",       "lc",
        "uc",       "lcfirst", "ucfirst", "length", "substr", "index",  "rindex",    "sprintf",
        "join",     "split",   "reverse", "sort",   "keys",   "values", "each",      "defined",
        "exists",   "delete",  "scalar",  "push",   "pop",    "shift",  "unshift",   "splice",
        "grep",     "map",     "abs",     "int",    "sqrt",   "hex",    "oct",       "sin",
        "cos",      "exp",     "log",     "rand",   "srand",  "time",   "localtime", "gmtime",
        "if",       "unless",  "else",    "elsif",  "while",  "until",  "for",       "foreach",
        "my",       "our",     "local",   "return", "last",   "next",   "redo",      "and",
        "or",       "not",     "xor",     "eq",     "ne",     "lt",     "gt",        "le",
        "ge",       "cmp",     "x",       "BEGIN",  "END",    "STDIN",  "STDOUT",    "STDERR",
        "ARGV",     "ENV",     "_",       "F",      "a",      "b",      "use",       "strict",
        "warnings", "utf8",    "uniq",    "sum",    "max",    "min",    "first",     "wantarray",
        "tr",       "y",       "s",       "m",      "q",      "qq",     "qw",        "qr",
        NULL};
static const char *const perl_modules[] = {"strict",       "warnings", "utf8",       "List::Util",
                                           "Data::Dumper", "JSON::PP", "POSIX",      "Scalar::Util",
                                           "feature",      "open",     "Text::Wrap", NULL};

static const char *const rb_words[] = {
        "puts",   "print",   "p",      "pp",           "require", "JSON",    "STDIN",  "ARGV",
        "ENV",    "if",      "unless", "else",         "elsif",   "end",     "do",     "while",
        "until",  "for",     "in",     "then",         "nil",     "true",    "false",  "and",
        "or",     "not",     "return", "each",         "map",     "select",  "reject", "lambda",
        "proc",   "Integer", "Float",  "String",       "Array",   "Hash",    "Time",   "Math",
        "format", "sprintf", "gets",   "RUBY_VERSION", "$stdin",  "$stdout", NULL};
static const char *const rb_modules[] = {"json", "set", "time", "date", "pp", NULL};
static const char *const rb_attrs[] = {"parse",
                                       "generate",
                                       "pretty_generate",
                                       "read",
                                       "each_line",
                                       "lines",
                                       "split",
                                       "join",
                                       "strip",
                                       "chomp",
                                       "upcase",
                                       "downcase",
                                       "size",
                                       "length",
                                       "to_s",
                                       "to_i",
                                       "to_f",
                                       "to_a",
                                       "to_h",
                                       "sum",
                                       "max",
                                       "min",
                                       "sort",
                                       "sort_by",
                                       "uniq",
                                       "first",
                                       "last",
                                       "keys",
                                       "values",
                                       "each",
                                       "map",
                                       "select",
                                       "reject",
                                       "gsub",
                                       "sub",
                                       "include?",
                                       "start_with?",
                                       "end_with?",
                                       "empty?",
                                       "nil?",
                                       "now",
                                       "count",
                                       "reverse",
                                       "inspect",
                                       "fetch",
                                       "dig",
                                       "key?",
                                       "flatten",
                                       "compact",
                                       "tally",
                                       "group_by",
                                       "each_with_index",
                                       "with_index",
                                       "zip",
                                       "round",
                                       "floor",
                                       "ceil",
                                       "abs",
                                       "sqrt",
                                       "PI",
                                       "version",
                                       NULL};

static const char *const py_never[] = {
        "eval",         "exec",    "compile", "open",   "__import__", "getattr",    "setattr",
        "delattr",      "globals", "locals",  "vars",   "breakpoint", "memoryview", "help",
        "__builtins__", "system",  "popen",   "import", NULL};
static const char *const js_never[] = {"eval",           "Function",  "require",   "process",
                                       "globalThis",     "global",    "module",    "exports",
                                       "import",         "fetch",     "Reflect",   "Proxy",
                                       "constructor",    "__proto__", "prototype", "WebSocket",
                                       "XMLHttpRequest", "Worker",    NULL};
static const char *const perl_never[] = {"system", "exec",   "open", "eval", "require",
                                         "do",     "unlink", "qx",   NULL};
static const char *const rb_never[] = {"system",      "exec", "spawn",         "open",
                                       "eval",        "send", "instance_eval", "class_eval",
                                       "public_send", NULL};
static const char *const decl_none[] = {NULL};
static const char *const py_decl[] = {"for",   "as",     "lambda", "def",
                                      "class", "import", "global", NULL};
static const char *const js_decl[] = {"const", "let", "var", "function", NULL};
static const char *const perl_decl[] = {"my", "our", "local", NULL};

static const struct lang langs[] = {
        [IL_PYTHON] = {py_never, py_words, py_attrs, py_modules, py_decl, true, false, false, false,
                       false, true},
        [IL_NODE] = {js_never, js_words, js_attrs, js_modules, js_decl, false, true, false, true,
                     false, false},
        [IL_PERL] = {perl_never, perl_words, decl_none, perl_modules, perl_decl, true, false, true,
                     false, true, false},
        [IL_RUBY] = {rb_never, rb_words, rb_attrs, rb_modules, decl_none, true, false, true, false,
                     false, false},
};

/* ---- tokens ---- */

enum tok {
        TK_END,
        TK_NAME,
        TK_STRING,
        TK_NUMBER,
        TK_PUNCT,
        TK_BAD,
};

struct name {
        const char *p;
        size_t n;
};

struct scan {
        const struct lang *L;
        enum inline_lang id;
        const char *s, *e;
        struct name locals[INLINE_LOCALS];
        size_t nlocals;
        int depth;
};

struct token {
        enum tok kind;
        const char *p;
        size_t n;
        char punct[3];
};

static bool scan_code(struct scan *sc, const char *s, const char *e);

static bool
is_ident(char c)
{
        return isalnum((unsigned char) c) || c == '_' || c == '$';
}

/* Skips a quoted string starting at p (its quote q); scans the code inside f-strings and
 * template literals. Returns the end, or NULL for an unterminated or unsafe string. */
static const char *
skip_string(struct scan *sc, const char *p, bool code_braces)
{
        char q = *p;
        bool triple = sc->id == IL_PYTHON && p + 2 < sc->e && p[1] == q && p[2] == q;
        const char *c = p + (triple ? 3 : 1);

        while (c < sc->e) {
                if (*c == '\\') {
                        c += 2;
                        continue;
                }
                if (triple ? (c + 2 < sc->e && c[0] == q && c[1] == q && c[2] == q) : *c == q)
                        return c + (triple ? 3 : 1);
                if (sc->L->sigils && q == '"' && (*c == '@' || *c == '$') && c + 1 < sc->e &&
                    (c[1] == '{' || c[1] == '('))
                        return NULL; /* "@{[ code ]}" interpolates code */
                bool open =
                        code_braces && ((q == '`' && *c == '$' && c + 1 < sc->e && c[1] == '{') ||
                                        (q != '`' && *c == '{' && !(c + 1 < sc->e && c[1] == '{')));
                if (open) {
                        const char *b = c + (q == '`' ? 2 : 1);
                        int d = 1;
                        const char *x = b;
                        while (x < sc->e && d > 0) {
                                d += *x == '{' ? 1 : *x == '}' ? -1 : 0;
                                x++;
                        }
                        if (d != 0 || !scan_code(sc, b, x - 1))
                                return NULL;
                        c = x;
                        continue;
                }
                if (code_braces && q != '`' && *c == '{')
                        c++; /* "{{" */
                c++;
        }
        return NULL;
}

/* Perl quote-like operators: s{…}{…}flags, tr/…/…/, m!…!, qw(…), q(…), qq(…); returns the end
 * or NULL when unsafe (qx, the e flag) or unterminated. */
static const char *
perl_quote(struct scan *sc, const char *name, size_t n, const char *p)
{
        int parts = (n == 1 && (*name == 's' || *name == 'y')) || (n == 2 && !memcmp(name, "tr", 2))
                            ? 2
                            : 1;
        if (n == 2 && !memcmp(name, "qx", 2))
                return NULL;
        while (p < sc->e && (*p == ' ' || *p == '\t'))
                p++;
        if (p >= sc->e || isalnum((unsigned char) *p) || *p == '_' || *p == ',' || *p == ';' ||
            *p == '=' || *p == ')')
                return p; /* not a quote: a plain name */
        for (int part = 0; part < parts; part++) {
                char open = *p, close = open == '{'   ? '}'
                                        : open == '(' ? ')'
                                        : open == '[' ? ']'
                                        : open == '<' ? '>'
                                                      : open;
                p++;
                int d = 1;
                while (p < sc->e && d > 0) {
                        if (*p == '\\') {
                                p += 2;
                                continue;
                        }
                        if (open != close && *p == open)
                                d++;
                        else if (*p == close)
                                d--;
                        p++;
                }
                if (d != 0)
                        return NULL;
                if (part + 1 < parts && open != close) {
                        while (p < sc->e && isspace((unsigned char) *p))
                                p++;
                        if (p >= sc->e)
                                return NULL;
                } else if (part + 1 < parts) {
                        p--; /* s/a/b/: the middle delimiter opens the second part */
                }
        }
        while (p < sc->e && isalpha((unsigned char) *p)) {
                if (*p == 'e')
                        return NULL; /* s///e evaluates the replacement */
                p++;
        }
        return p;
}

static const char *
skip_comment(struct scan *sc, const char *p)
{
        if (sc->L->hash_comment && *p == '#') {
                const char *nl = memchr(p, '\n', (size_t) (sc->e - p));
                return nl ? nl : sc->e;
        }
        if (sc->L->slash_comment && *p == '/' && p + 1 < sc->e && p[1] == '/') {
                const char *nl = memchr(p, '\n', (size_t) (sc->e - p));
                return nl ? nl : sc->e;
        }
        if (sc->L->slash_comment && *p == '/' && p + 1 < sc->e && p[1] == '*') {
                const char *end = memmem(p + 2, (size_t) (sc->e - p - 2), "*/", 2);
                return end ? end + 2 : NULL;
        }
        return p;
}

/* The next token at *pp. */
static struct token
next_token(struct scan *sc, const char **pp)
{
        struct token t = {.kind = TK_END};
        const char *p = *pp;

        for (;;) {
                while (p < sc->e && isspace((unsigned char) *p))
                        p++;
                if (p >= sc->e) {
                        *pp = p;
                        return t;
                }
                const char *q = skip_comment(sc, p);
                if (!q) {
                        t.kind = TK_BAD;
                        return t;
                }
                if (q == p)
                        break;
                p = q;
        }
        t.p = p;
        bool f = false;
        if (sc->L->fstrings) {
                /* string prefixes: r"…", b'…', f"…", rb'…', fr"…" */
                size_t l = strspn(p, "rbfuRBFU");
                if (l > 0 && l <= 2 && p + l < sc->e && (p[l] == '\'' || p[l] == '"')) {
                        f = memchr(p, 'f', l) || memchr(p, 'F', l);
                        p += l;
                }
        }
        if (*p == '\'' || *p == '"' || (*p == '`' && sc->L->templates)) {
                const char *e = skip_string(sc, p, f || *p == '`');
                t.kind = e ? TK_STRING : TK_BAD;
                *pp = e ? e : sc->e;
                t.n = e ? (size_t) (e - p) : 0;
                return t;
        }
        if (*p == '`' || (sc->L->sigils && *p == '&' && p + 1 < sc->e && is_ident(p[1]))) {
                t.kind = TK_BAD; /* backticks run commands; &name calls a sub */
                return t;
        }
        if (isdigit((unsigned char) *p)) {
                while (p < sc->e && (isalnum((unsigned char) *p) || *p == '.' || *p == '_'))
                        p++;
                t.kind = TK_NUMBER;
                *pp = p;
                return t;
        }
        if (sc->L->sigils && (*p == '$' || *p == '@' || *p == '%') && p + 1 < sc->e &&
            !is_ident(p[1]) && !isspace((unsigned char) p[1]) && p[1] != '{' && p[1] != '(') {
                *pp = p + 2; /* $_ $/ $, $. @_ … */
                t.kind = TK_NUMBER;
                return t;
        }
        if (is_ident(*p) || (sc->L->sigils && (*p == '$' || *p == '@' || *p == '%'))) {
                if (sc->L->sigils && (*p == '$' || *p == '@' || *p == '%'))
                        p++;
                const char *b = p;
                while (p < sc->e && (is_ident(*p) || (sc->id == IL_PERL && *p == ':' &&
                                                      p + 1 < sc->e && p[1] == ':')))
                        p += *p == ':' ? 2 : 1;
                if (sc->id == IL_RUBY && p < sc->e && (*p == '?' || *p == '!'))
                        p++;
                t.kind = TK_NAME;
                t.p = b;
                t.n = (size_t) (p - b);
                *pp = p;
                return t;
        }
        t.kind = TK_PUNCT;
        size_t n = (p + 1 < sc->e && strchr("=!<>-+*/&|.:?", p[1]) && strchr("=!<>-+*/&|.:?", *p))
                           ? 2
                           : 1;
        memcpy(t.punct, p, n);
        t.punct[n] = '\0';
        *pp = p + n;
        return t;
}

static bool
name_in(const char *p, size_t n, const char *const *list)
{
        for (; *list; list++)
                if (strlen(*list) == n && !memcmp(*list, p, n))
                        return true;
        return false;
}

static bool
is_local(const struct scan *sc, const char *p, size_t n)
{
        for (size_t j = 0; j < sc->nlocals; j++)
                if (sc->locals[j].n == n && !memcmp(sc->locals[j].p, p, n))
                        return true;
        return false;
}

static bool
punct_is(const struct token *t, const char *s)
{
        return t->kind == TK_PUNCT && !strcmp(t->punct, s);
}

/* Adds a local name; false when the name would shadow something dangerous. */
static bool
add_local(struct scan *sc, const struct token *t)
{
        if (name_in(t->p, t->n, sc->L->never))
                return false;
        if (sc->nlocals < INLINE_LOCALS && !is_local(sc, t->p, t->n)) {
                sc->locals[sc->nlocals].p = t->p;
                sc->locals[sc->nlocals].n = t->n;
                sc->nlocals++;
        }
        return true;
}

/* Names the program assigns, declares or takes as parameters: NAME =, NAME =>, for NAME,
 * as NAME, lambda NAME, const NAME, my $NAME, (a, b) =>. */
static bool
collect_locals(struct scan *sc)
{
        const char *p = sc->s;
        struct token prev = {.kind = TK_END}, t;
        struct token group[16];
        size_t ngroup = 0;
        bool decl = false;

        while ((t = next_token(sc, &p)).kind != TK_END) {
                if (t.kind == TK_BAD)
                        return false;
                if (t.kind == TK_NAME && name_in(t.p, t.n, sc->L->decl)) {
                        decl = true;
                } else if (t.kind == TK_NAME) {
                        const char *q = p;
                        struct token nx = next_token(sc, &q);
                        bool assign = punct_is(&nx, "=") || punct_is(&nx, "=>");
                        bool attr = punct_is(&prev, ".");
                        bool word = name_in(t.p, t.n, sc->L->words);
                        if (!attr && ((decl && !word) || assign) && !add_local(sc, &t))
                                return false;
                        if (word)
                                decl = false;
                        if (ngroup < ARRAY_SIZE(group))
                                group[ngroup++] = t;
                } else if (punct_is(&t, "(")) {
                        ngroup = 0;
                } else if (punct_is(&t, "=>")) {
                        for (size_t j = 0; j < ngroup && punct_is(&prev, ")"); j++)
                                if (!add_local(sc, &group[j]))
                                        return false;
                        decl = false;
                } else if (!punct_is(&t, ",")) {
                        decl = false;
                }
                prev = t;
        }
        return true;
}

/* import a, b as c / from a import b: every module is allowed. */
static bool
python_import(struct scan *sc, const char **pp, bool from)
{
        struct token t;
        const char *p = *pp;

        for (;;) {
                t = next_token(sc, &p);
                if (t.kind != TK_NAME)
                        return false;
                /* dotted module names: os.path */
                const char *b = t.p;
                const char *q = p;
                struct token d = next_token(sc, &q);
                while (punct_is(&d, ".")) {
                        struct token n2 = next_token(sc, &q);
                        if (n2.kind != TK_NAME)
                                return false;
                        p = q;
                        d = next_token(sc, &q);
                        t.n = (size_t) (n2.p + n2.n - b);
                }
                if (!name_in(b, t.n, sc->L->modules))
                        return false;
                if (from) {
                        *pp = p; /* the imported names are checked as identifiers */
                        t = next_token(sc, &p);
                        if (t.kind != TK_NAME || t.n != 6 || memcmp(t.p, "import", 6))
                                return false;
                        *pp = p;
                        return true;
                }
                q = p;
                d = next_token(sc, &q);
                if (d.kind == TK_NAME && d.n == 2 && !memcmp(d.p, "as", 2) && t.n >= 2 &&
                    !memcmp(b, "os", 2))
                        return false; /* an alias of os would escape its member list */
                if (d.kind == TK_NAME && d.n == 2 && !memcmp(d.p, "as", 2)) {
                        next_token(sc, &q);
                        p = q;
                        d = next_token(sc, &q);
                }
                if (!punct_is(&d, ",")) {
                        *pp = p;
                        return true;
                }
                p = q;
        }
}

/* require("mod") / require('./x.json'): an allowed module or a JSON file. */
static bool
js_require(struct scan *sc, const char **pp)
{
        const char *p = *pp;
        struct token a = next_token(sc, &p), str = next_token(sc, &p), b = next_token(sc, &p);

        if (!punct_is(&a, "(") || str.kind != TK_STRING || !punct_is(&b, ")") || str.n < 2)
                return false;
        const char *v = str.p + 1;
        size_t n = str.n - 2;
        bool json = n > 5 && !memcmp(v + n - 5, ".json", 5) && memchr(v, '$', n) == NULL;
        if (!json && !name_in(v, n, sc->L->modules))
                return false;
        *pp = p;
        return true;
}

/* open("file") or open("file", "r"/"rb"): reading a file is fine, any other mode is not. */
static bool
python_open(struct scan *sc, const char **pp)
{
        const char *p = *pp;
        struct token a = next_token(sc, &p), f = next_token(sc, &p), c = next_token(sc, &p);

        if (!punct_is(&a, "(") || f.kind != TK_STRING)
                return false;
        if (punct_is(&c, ",")) {
                struct token m = next_token(sc, &p);
                if (m.kind != TK_STRING || m.n < 3 || m.n > 4 || m.p[1] != 'r' ||
                    (m.n == 4 && m.p[2] != 'b'))
                        return false;
                c = next_token(sc, &p);
        }
        if (!punct_is(&c, ")"))
                return false;
        *pp = p;
        return true;
}

/* os and os.path: only these members, and never the module as a value (x = os). */
static const char *const py_os_attrs[] = {
        "path",   "getcwd", "environ",  "getenv", "sep",    "linesep", "name",    "cpu_count",
        "getpid", "getuid", "getlogin", "curdir", "pardir", "extsep",  "pathsep", NULL};
static const char *const py_ospath_attrs[] = {
        "join",     "exists",     "isfile",   "isdir",   "basename",   "dirname",  "abspath",
        "realpath", "expanduser", "splitext", "getsize", "relpath",    "normpath", "split",
        "isabs",    "getmtime",   "sep",      "islink",  "commonpath", NULL};

static bool
python_os(struct scan *sc, const char **pp)
{
        const char *p = *pp;
        struct token dot = next_token(sc, &p), m = next_token(sc, &p);

        if (!punct_is(&dot, ".") || m.kind != TK_NAME || !name_in(m.p, m.n, py_os_attrs))
                return false;
        if (m.n == 4 && !memcmp(m.p, "path", 4)) {
                const char *q = p;
                struct token d2 = next_token(sc, &q), f = next_token(sc, &q);
                if (!punct_is(&d2, "."))
                        return false;
                if (f.kind != TK_NAME || !name_in(f.p, f.n, py_ospath_attrs))
                        return false;
                p = q;
        }
        *pp = p;
        return true;
}

/* One identifier in context; false when it is not allowed. */
static bool
check_name(struct scan *sc, const struct token *t, const struct token *prev, const char **pp)
{
        bool attr = punct_is(prev, ".") || punct_is(prev, "?.");

        if (attr)
                return name_in(t->p, t->n, sc->L->attrs);
        if (sc->id == IL_NODE && (punct_is(prev, "{") || punct_is(prev, ","))) {
                /* {key: value}: a key is data */
                const char *q = *pp;
                struct token nx = next_token(sc, &q);
                if (punct_is(&nx, ":"))
                        return true;
        }
        if (sc->id == IL_PYTHON && t->n == 6 && !memcmp(t->p, "import", 6))
                return python_import(sc, pp, false);
        if (sc->id == IL_PYTHON && t->n == 4 && !memcmp(t->p, "from", 4))
                return python_import(sc, pp, true);
        if (sc->id == IL_PYTHON && t->n == 4 && !memcmp(t->p, "open", 4))
                return python_open(sc, pp);
        if (sc->id == IL_PYTHON && t->n == 2 && !memcmp(t->p, "os", 2))
                return python_os(sc, pp);
        if (sc->id == IL_NODE && t->n == 7 && !memcmp(t->p, "require", 7))
                return js_require(sc, pp);
        if ((sc->id == IL_PERL && t->n == 3 && !memcmp(t->p, "use", 3)) ||
            (sc->id == IL_RUBY && t->n == 7 && !memcmp(t->p, "require", 7))) {
                const char *p = *pp;
                struct token m = next_token(sc, &p);
                const char *mp = m.kind == TK_STRING ? m.p + 1 : m.p;
                size_t mn = m.kind == TK_STRING ? m.n - 2 : m.n;
                if ((m.kind != TK_NAME && m.kind != TK_STRING) || !name_in(mp, mn, sc->L->modules))
                        return false;
                *pp = p;
                return true;
        }
        if (sc->id == IL_PERL && sc->L->sigils && (t->n == 1 || t->n == 2)) {
                const char *q = perl_quote(sc, t->p, t->n, *pp);
                if (!q)
                        return false;
                if (q != *pp) {
                        *pp = q;
                        return true;
                }
        }
        return name_in(t->p, t->n, sc->L->words) || is_local(sc, t->p, t->n);
}

/* Scans code in [s, e) with the locals collected so far. */
static bool
scan_code(struct scan *sc, const char *s, const char *e)
{
        struct token prev = {.kind = TK_END}, t;
        const char *p = s;

        if (sc->depth + 1 > 8)
                return false; /* f-strings in f-strings in …: not worth reading */
        struct scan sub = *sc;
        sub.depth++;
        sub.s = s;
        sub.e = e;
        while ((t = next_token(&sub, &p)).kind != TK_END) {
                if (t.kind == TK_BAD)
                        return false;
                if (t.kind == TK_NAME && !check_name(&sub, &t, &prev, &p))
                        return false;
                /* JS: obj["name"] reaches any property, constructor included */
                if (sc->id == IL_NODE && t.kind == TK_STRING && punct_is(&prev, "[") &&
                    sub.L->templates)
                        return false;
                prev = t;
        }
        return true;
}

/* The inline program is in the allowlist of harmless programs for its language. */
bool
inline_harmless(enum inline_lang lang, const char *code)
{
        struct scan sc = {0};
        size_t n = strlen(code);

        if (lang >= IL_OTHER || n > INLINE_MAX)
                return false;
        sc.L = &langs[lang];
        sc.id = lang;
        sc.s = code;
        sc.e = code + n;
        if (!collect_locals(&sc))
                return false;
        return scan_code(&sc, code, code + n);
}
