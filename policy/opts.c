/* opts.c — a command's options read the way getopt_long(3) reads them.
 *
 * Short options bundle (-rfv), a letter that takes a value takes the rest of its word or the
 * next word (-ofile, -o file), an optional value is only attached (-i.bak); long options take
 * --name=value or, when the value is required, the next word; an unambiguous prefix of a long
 * option is that option (rm --recu --forc = rm --recursive --force), also when several
 * candidates mean the same option. GNU permutes: options after operands are still options,
 * unless the spec stops at the first operand (OS_STOP: wrappers, POSIX utilities); "--" ends
 * the options. A word only known at run time may be any option (r->dyn).
 */
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

/* The argument kind of short letter c in a getopt string, or -1 if c is not there. */
static int
short_arg(const char *shorts, char c)
{
        const char *p = c && c != ':' ? strchr(shorts, c) : NULL;

        if (!p)
                return -1;
        if (p[1] != ':')
                return OPT_NONE;
        return p[2] == ':' ? OPT_OPT : OPT_REQ;
}

static void
add_occ(struct eval *ev, struct optres *r, int id, const struct word *val, size_t at, size_t *cap)
{
        arena_grow(&ev->ar, (void **) &r->o, cap, r->no, sizeof(*r->o));
        r->o[r->no].id = id;
        r->o[r->no].val = val;
        r->o[r->no].at = at;
        r->no++;
}

static struct word *
attached(struct eval *ev, const struct word *w, const char *s)
{
        struct word *v = arena_alloc(&ev->ar, sizeof(*v));

        *v = analyze_word(w, s);
        return v;
}

/* One bundle of short options in av[i]; returns how many words it used. */
static size_t
read_shorts(struct eval *ev, const struct optspec *sp, const struct word *av, size_t ac, size_t i,
            struct optres *r, size_t *cap)
{
        const char *s = av[i].s;

        for (const char *c = s + 1; *c; c++) {
                int kind = short_arg(sp->shorts ? sp->shorts : "", *c);
                if (kind < 0) {
                        r->unknown = true;
                        add_occ(ev, r, (unsigned char) *c, NULL, i, cap);
                        continue;
                }
                if (kind == OPT_NONE) {
                        add_occ(ev, r, (unsigned char) *c, NULL, i, cap);
                        continue;
                }
                if (c[1]) {
                        add_occ(ev, r, (unsigned char) *c, attached(ev, &av[i], c + 1), i, cap);
                        return 1;
                }
                if (kind == OPT_REQ && i + 1 < ac) {
                        add_occ(ev, r, (unsigned char) *c, &av[i + 1], i, cap);
                        return 2;
                }
                add_occ(ev, r, (unsigned char) *c, NULL, i, cap);
        }
        return 1;
}

/* The long options that name (n bytes) selects: the exact one, else every prefix match. */
static size_t
long_matches(const struct lopt *longs, const char *name, size_t n, const struct lopt **out,
             size_t max)
{
        size_t m = 0;

        for (const struct lopt *l = longs; l && l->name; l++) {
                if (strlen(l->name) == n && !memcmp(l->name, name, n)) {
                        out[0] = l;
                        return 1;
                }
        }
        for (const struct lopt *l = longs; l && l->name && m < max; l++)
                if (!strncmp(l->name, name, n))
                        out[m++] = l;
        return m;
}

/* One long option in av[i]; returns how many words it used. */
static size_t
read_long(struct eval *ev, const struct optspec *sp, const struct word *av, size_t ac, size_t i,
          struct optres *r, size_t *cap)
{
        const char *s = av[i].s + 2;
        const char *eq = strchr(s, '=');
        size_t n = eq ? (size_t) (eq - s) : strlen(s);
        const struct lopt *m[16];
        size_t nm = long_matches(sp->longs, s, n, m, ARRAY_SIZE(m));
        bool same = nm > 0;

        for (size_t j = 1; j < nm; j++)
                same = same && m[j]->id == m[0]->id && m[j]->arg == m[0]->arg;
        if (nm == 0 || !same) {
                /* unknown or ambiguous: getopt refuses it; count every candidate anyway */
                r->unknown = true;
                for (size_t j = 0; j < nm; j++)
                        add_occ(ev, r, m[j]->id, NULL, i, cap);
                return 1;
        }
        if (eq) {
                add_occ(ev, r, m[0]->id, attached(ev, &av[i], eq + 1), i, cap);
                return 1;
        }
        if (m[0]->arg == OPT_REQ && i + 1 < ac) {
                add_occ(ev, r, m[0]->id, &av[i + 1], i, cap);
                return 2;
        }
        add_occ(ev, r, m[0]->id, NULL, i, cap);
        return 1;
}

static void
add_operand(struct eval *ev, struct optres *r, const struct word *w, size_t *cap)
{
        arena_grow(&ev->ar, (void **) &r->ops, cap, r->nops, sizeof(*r->ops));
        r->ops[r->nops++] = w;
}

/* Reads av[from..ac) into *r. */
void
opts_parse(struct eval *ev, const struct optspec *sp, const struct word *av, size_t ac, size_t from,
           struct optres *r)
{
        size_t ocap = 0, pcap = 0, i = from;
        bool done = false;

        memset(r, 0, sizeof(*r));
        r->stop = ac;
        while (i < ac) {
                const struct word *w = &av[i];
                const char *s = w->s;
                if (!done && !analyze_lit(w) && !(w->flags & W_TREE))
                        r->dyn = true; /* find's {} is a path below its start, not an option */
                if (!done && !(sp->flags & OS_NODD) && !strcmp(s, "--") && analyze_lit(w)) {
                        done = true;
                        i++;
                        if (sp->flags & OS_STOP) {
                                r->stop = i;
                                break;
                        }
                        continue;
                }
                if (done || s[0] != '-' || s[1] == '\0' || !analyze_lit(w)) {
                        if ((sp->flags & OS_STOP) && !done) {
                                r->stop = i;
                                break;
                        }
                        add_operand(ev, r, w, &pcap);
                        i++;
                        continue;
                }
                i += s[1] == '-' ? read_long(ev, sp, av, ac, i, r, &ocap)
                                 : read_shorts(ev, sp, av, ac, i, r, &ocap);
        }
        if (sp->flags & OS_STOP)
                for (size_t j = r->stop; j < ac && (j == r->stop || (sp->flags & OS_TAIL)); j++)
                        add_operand(ev, r, &av[j], &pcap);
}

/* Whether option id occurs. */
bool
opts_has(const struct optres *r, int id)
{
        for (size_t j = 0; j < r->no; j++)
                if (r->o[j].id == id)
                        return true;
        return false;
}

/* The value of the last occurrence of id. */
const struct word *
opts_val(const struct optres *r, int id)
{
        for (size_t j = r->no; j-- > 0;)
                if (r->o[j].id == id && r->o[j].val)
                        return r->o[j].val;
        return NULL;
}
