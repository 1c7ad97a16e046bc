/* list.h — intrusive circular doubly linked list. Pure, header-only. */
#ifndef SANDBOXD_LIST_H
#define SANDBOXD_LIST_H

#include <sys/types.h>

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

/* Entries of head whose uid_t at offset off from their node is uid (see LIST_COUNT_UID). */
static inline unsigned
list_count_uid(const struct list *head, ptrdiff_t off, uid_t uid)
{
        unsigned n = 0;

        for (const struct list *p = head->next; p != head; p = p->next)
                n += *(const uid_t *) (const void *) ((const char *) p + off) == uid;
        return n;
}

/* Entries of head (each a type linked by its member) whose uid_t field is uid: the one count
 * behind every per-uid limit. (The comparison with a uid_t pointer checks the field's type.) */
#define LIST_COUNT_UID(head, type, member, field, uid)                                             \
        ((void) sizeof(&((type *) 0)->field == (uid_t *) 0),                                       \
         list_count_uid((head),                                                                    \
                        (ptrdiff_t) offsetof(type, field) - (ptrdiff_t) offsetof(type, member),    \
                        (uid)))

/* Unlinks n and leaves it self-linked, so unlinking twice is harmless. */
static inline void
list_del(struct list *n)
{
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n->next = n;
}

#endif
