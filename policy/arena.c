/* arena.c — bump allocator for one policy evaluation (freed at once). */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "protocol/util.h"

struct arena_chunk {
        struct arena_chunk *next;
        size_t used, size;
        max_align_t data[];
};

#define ARENA_CHUNK 16384
#define ARENA_KEEP  (16u << 20) /* bytes of freed chunks kept for the next evaluation */

/* Chunks of finished evaluations, per thread: big commands then cost no fresh pages. */
static __thread struct arena_chunk *arena_cache;
static __thread size_t arena_cached;

static struct arena_chunk *
chunk_get(size_t size)
{
        for (struct arena_chunk **pp = &arena_cache; *pp; pp = &(*pp)->next) {
                if ((*pp)->size >= size) {
                        struct arena_chunk *c = *pp;
                        *pp = c->next;
                        arena_cached -= c->size;
                        return c;
                }
        }
        struct arena_chunk *c = xmalloc(sizeof(*c) + size);
        c->size = size;
        return c;
}

/* Returns n zeroed bytes from the arena. */
void *
arena_alloc(struct arena *a, size_t n)
{
        struct arena_chunk *c = a->head;

        n = (n + 15) & ~(size_t) 15;
        if (!c || c->size - c->used < n) {
                /* chunks double (16 KiB .. 1 MiB) so big inputs take few mallocs */
                size_t size = c ? MIN(c->size * 2, (size_t) 1 << 20) : ARENA_CHUNK;
                size = MAX(size, n);

                c = chunk_get(size);
                c->used = 0;
                c->next = a->head;
                a->head = c;
        }
        void *p = (char *) c->data + c->used;
        c->used += n;
        memset(p, 0, n);
        return p;
}

/* Copies s[0..n) plus a NUL. */
char *
arena_strndup(struct arena *a, const char *s, size_t n)
{
        char *d = arena_alloc(a, n + 1);

        memcpy(d, s, n);
        d[n] = '\0';
        return d;
}

/* Copies a string. */
char *
arena_strdup(struct arena *a, const char *s)
{
        return arena_strndup(a, s, strlen(s));
}

/* Makes room for one more item in an arena-backed array. */
void
arena_grow(struct arena *a, void **arr, size_t *cap, size_t n, size_t elsize)
{
        if (n < *cap)
                return;
        size_t ncap = *cap ? *cap * 2 : 4;
        void *na = arena_alloc(a, ncap * elsize);

        if (*arr)
                memcpy(na, *arr, n * elsize);
        *arr = na;
        *cap = ncap;
}

/* Frees every chunk. */
void
arena_free(struct arena *a)
{
        struct arena_chunk *c = a->head;

        while (c) {
                struct arena_chunk *next = c->next;
                if (arena_cached + c->size <= ARENA_KEEP) {
                        c->next = arena_cache;
                        arena_cache = c;
                        arena_cached += c->size;
                } else {
                        free(c);
                }
                c = next;
        }
        a->head = NULL;
}
