/* Intrusive containers for every layer: a circular doubly linked list (O(1)
 * insert and remove anywhere, used for pending requests and endpoints) and a
 * singly linked FIFO queue (O(1) push at the tail and pop at the head, used
 * for send queues). "Intrusive" means the caller embeds the link in its own
 * struct and gets back to the struct with bm_util_container_of, so neither
 * container ever allocates memory. Nothing here is thread-safe; callers lock. */
#ifndef BM_UTIL_LIST_H
#define BM_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* The struct of type `type` whose member `member` is at address ptr. */
#define bm_util_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ---- doubly linked list ---------------------------------------------- */

/* A link, embedded in the element. Unlinked nodes point to themselves so that
 * removing a node twice is harmless and bm_util_list_node_linked works. */
struct bm_util_list_node {
    struct bm_util_list_node *prev, *next;
};

/* A list: one sentinel node. An empty list's sentinel points to itself; the
 * struct must therefore not be copied or moved while the list is in use. */
struct bm_util_list {
    struct bm_util_list_node head;
};

static inline void bm_util_list_init(struct bm_util_list *l)
{
    l->head.prev = l->head.next = &l->head;
}

/* Mark a node as on no list (also done by remove). */
static inline void bm_util_list_node_init(struct bm_util_list_node *n)
{
    n->prev = n->next = n;
}

static inline bool bm_util_list_node_linked(const struct bm_util_list_node *n)
{
    return n->next != n;
}

static inline bool bm_util_list_empty(const struct bm_util_list *l)
{
    return l->head.next == &l->head;
}

/* Insert n between a and b (neighbours). */
static inline void bm_util_list_link_(struct bm_util_list_node *a, struct bm_util_list_node *n,
                                      struct bm_util_list_node *b)
{
    n->prev = a;
    n->next = b;
    a->next = n;
    b->prev = n;
}

static inline void bm_util_list_push_front(struct bm_util_list *l, struct bm_util_list_node *n)
{
    bm_util_list_link_(&l->head, n, l->head.next);
}

static inline void bm_util_list_push_back(struct bm_util_list *l, struct bm_util_list_node *n)
{
    bm_util_list_link_(l->head.prev, n, &l->head);
}

/* Insert n right after pos (pos may be the sentinel). */
static inline void bm_util_list_insert_after(struct bm_util_list_node *pos,
                                             struct bm_util_list_node *n)
{
    bm_util_list_link_(pos, n, pos->next);
}

/* Unlink n from whatever list holds it. */
static inline void bm_util_list_remove(struct bm_util_list_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    bm_util_list_node_init(n);
}

/* First or last node, or NULL when the list is empty. */
static inline struct bm_util_list_node *bm_util_list_first(const struct bm_util_list *l)
{
    return bm_util_list_empty(l) ? NULL : l->head.next;
}

static inline struct bm_util_list_node *bm_util_list_last(const struct bm_util_list *l)
{
    return bm_util_list_empty(l) ? NULL : l->head.prev;
}

/* The node after n, or NULL when n is the last one. */
static inline struct bm_util_list_node *bm_util_list_next(const struct bm_util_list *l,
                                                          const struct bm_util_list_node *n)
{
    return n->next == &l->head ? NULL : n->next;
}

static inline struct bm_util_list_node *bm_util_list_pop_front(struct bm_util_list *l)
{
    struct bm_util_list_node *n = bm_util_list_first(l);
    if (n)
        bm_util_list_remove(n);
    return n;
}

static inline struct bm_util_list_node *bm_util_list_pop_back(struct bm_util_list *l)
{
    struct bm_util_list_node *n = bm_util_list_last(l);
    if (n)
        bm_util_list_remove(n);
    return n;
}

/* Move every node of src to the end of dst, leaving src empty. O(1). */
static inline void bm_util_list_splice_back(struct bm_util_list *dst, struct bm_util_list *src)
{
    if (bm_util_list_empty(src))
        return;
    struct bm_util_list_node *first = src->head.next, *last = src->head.prev;
    first->prev = dst->head.prev;
    dst->head.prev->next = first;
    last->next = &dst->head;
    dst->head.prev = last;
    bm_util_list_init(src);
}

/* Number of nodes: O(n), for tests and diagnostics only. */
static inline size_t bm_util_list_length(const struct bm_util_list *l)
{
    size_t n = 0;
    for (const struct bm_util_list_node *p = l->head.next; p != &l->head; p = p->next)
        n++;
    return n;
}

/* Visit every node; the body must not remove `it` (use the _safe form). */
#define bm_util_list_foreach(it, l)                                                                \
    for ((it) = (l)->head.next; (it) != &(l)->head; (it) = (it)->next)

/* Visit every node; the body may remove `it` (but not `tmp`). */
#define bm_util_list_foreach_safe(it, tmp, l)                                                      \
    for ((it) = (l)->head.next, (tmp) = (it)->next; (it) != &(l)->head;                            \
         (it) = (tmp), (tmp) = (it)->next)

/* ---- FIFO queue ------------------------------------------------------ */

struct bm_util_queue_node {
    struct bm_util_queue_node *next;
};

/* Head and tail pointers (both NULL when empty), so a queue may be copied
 * or moved by value, unlike a list. */
struct bm_util_queue {
    struct bm_util_queue_node *head, *tail;
};

static inline void bm_util_queue_init(struct bm_util_queue *q)
{
    q->head = q->tail = NULL;
}

static inline bool bm_util_queue_empty(const struct bm_util_queue *q)
{
    return q->head == NULL;
}

static inline void bm_util_queue_push(struct bm_util_queue *q, struct bm_util_queue_node *n)
{
    n->next = NULL;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
}

/* Put n back at the head (a send that could not start keeps its place). */
static inline void bm_util_queue_push_front(struct bm_util_queue *q, struct bm_util_queue_node *n)
{
    n->next = q->head;
    q->head = n;
    if (!q->tail)
        q->tail = n;
}

/* The head without removing it, or NULL. */
static inline struct bm_util_queue_node *bm_util_queue_peek(const struct bm_util_queue *q)
{
    return q->head;
}

/* Remove and return the head, or NULL when empty. */
static inline struct bm_util_queue_node *bm_util_queue_pop(struct bm_util_queue *q)
{
    struct bm_util_queue_node *n = q->head;
    if (n) {
        q->head = n->next;
        if (!q->head)
            q->tail = NULL;
        n->next = NULL;
    }
    return n;
}

/* Append every node of src to dst, leaving src empty. O(1). */
static inline void bm_util_queue_concat(struct bm_util_queue *dst, struct bm_util_queue *src)
{
    if (!src->head)
        return;
    if (dst->tail)
        dst->tail->next = src->head;
    else
        dst->head = src->head;
    dst->tail = src->tail;
    bm_util_queue_init(src);
}

#endif
