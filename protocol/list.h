/* list.h — intrusive circular doubly linked list. Pure, header-only. */
#ifndef SANDBOXD_LIST_H
#define SANDBOXD_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
        struct list *prev, *next;
};

#define LIST_ENTRY(ptr, type, member) ((type *) (void *) ((char *) (ptr) -offsetof(type, member)))
#define LIST_FOREACH_SAFE(pos, tmp, head)                                                          \
        for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                           \
             (pos) = (tmp), (tmp) = (pos)->next)

static inline void
list_init(struct list *l)
{
        l->prev = l->next = l;
}

static inline bool
list_empty(const struct list *l)
{
        return l->next == l;
}

static inline void
list_add_tail(struct list *head, struct list *n)
{
        n->prev = head->prev;
        n->next = head;
        head->prev->next = n;
        head->prev = n;
}

/* Number of entries (walks the list). */
static inline unsigned
list_count(const struct list *l)
{
        unsigned n = 0;

        for (const struct list *p = l->next; p != l; p = p->next)
                n++;
        return n;
}

/* Unlinks n and leaves it self-linked, so unlinking twice is harmless. */
static inline void
list_del(struct list *n)
{
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n->next = n;
}

#endif
