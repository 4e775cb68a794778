/* Tests of the intrusive list and FIFO queue (src/util/list.h): order of
 * insertion and removal, removal during iteration, splicing, and the queue's
 * head/tail bookkeeping through empty and non-empty states. */
#include "util/list.h"

#include "bm_test.h"

struct item {
    int value;
    struct bm_util_list_node link;
    struct bm_util_queue_node qlink;
};

static int list_value(struct bm_util_list_node *n)
{
    return bm_util_container_of(n, struct item, link)->value;
}

/* Values of the list in order, as a string like "1,2,3". */
static const char *list_str(struct bm_util_list *l)
{
    static char buf[256];
    size_t off = 0;
    struct bm_util_list_node *it;
    buf[0] = '\0';
    bm_util_list_foreach(it, l)
    {
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, off ? ",%d" : "%d", list_value(it));
    }
    return buf;
}

static void test_list_basic(void)
{
    struct bm_util_list l;
    struct item it[5];
    bm_util_list_init(&l);
    BM_CHECK(bm_util_list_empty(&l));
    BM_CHECK(bm_util_list_first(&l) == NULL);
    BM_CHECK(bm_util_list_pop_front(&l) == NULL);
    for (int i = 0; i < 5; i++) {
        it[i].value = i;
        bm_util_list_node_init(&it[i].link);
        BM_CHECK(!bm_util_list_node_linked(&it[i].link));
    }
    bm_util_list_push_back(&l, &it[1].link);
    bm_util_list_push_back(&l, &it[2].link);
    bm_util_list_push_front(&l, &it[0].link);
    bm_util_list_insert_after(&it[2].link, &it[4].link);
    bm_util_list_insert_after(&it[2].link, &it[3].link);
    BM_CHECK_STR(list_str(&l), "0,1,2,3,4");
    BM_CHECK_EQ_INT(bm_util_list_length(&l), 5);
    BM_CHECK(bm_util_list_node_linked(&it[3].link));
    bm_util_list_remove(&it[2].link);
    bm_util_list_remove(&it[2].link); /* a second remove is harmless */
    BM_CHECK_STR(list_str(&l), "0,1,3,4");
    BM_CHECK_EQ_INT(list_value(bm_util_list_last(&l)), 4);
    BM_CHECK_EQ_INT(list_value(bm_util_list_pop_back(&l)), 4);
    BM_CHECK_EQ_INT(list_value(bm_util_list_pop_front(&l)), 0);
    BM_CHECK(bm_util_list_next(&l, &it[1].link) == &it[3].link);
    BM_CHECK(bm_util_list_next(&l, &it[3].link) == NULL);
    BM_CHECK_STR(list_str(&l), "1,3");
}

static void test_list_remove_while_iterating(void)
{
    struct bm_util_list l;
    struct item it[10];
    bm_util_list_init(&l);
    for (int i = 0; i < 10; i++) {
        it[i].value = i;
        bm_util_list_push_back(&l, &it[i].link);
    }
    struct bm_util_list_node *n, *tmp;
    bm_util_list_foreach_safe(n, tmp, &l)
    {
        if (list_value(n) % 2)
            bm_util_list_remove(n);
    }
    BM_CHECK_STR(list_str(&l), "0,2,4,6,8");
}

static void test_list_splice(void)
{
    struct bm_util_list a, b;
    struct item it[4];
    bm_util_list_init(&a);
    bm_util_list_init(&b);
    bm_util_list_splice_back(&a, &b); /* empty into empty */
    BM_CHECK(bm_util_list_empty(&a));
    for (int i = 0; i < 4; i++) {
        it[i].value = i;
        bm_util_list_push_back(i < 2 ? &a : &b, &it[i].link);
    }
    bm_util_list_splice_back(&a, &b);
    BM_CHECK_STR(list_str(&a), "0,1,2,3");
    BM_CHECK(bm_util_list_empty(&b));
    bm_util_list_splice_back(&b, &a); /* into an empty list */
    BM_CHECK_STR(list_str(&b), "0,1,2,3");
    BM_CHECK(bm_util_list_empty(&a));
    BM_CHECK(bm_util_list_last(&b) == &it[3].link);
}

static int queue_pop_value(struct bm_util_queue *q)
{
    struct bm_util_queue_node *n = bm_util_queue_pop(q);
    return n ? bm_util_container_of(n, struct item, qlink)->value : -1;
}

static void test_queue(void)
{
    struct bm_util_queue q, r;
    struct item it[6];
    bm_util_queue_init(&q);
    bm_util_queue_init(&r);
    BM_CHECK(bm_util_queue_empty(&q));
    BM_CHECK_EQ_INT(queue_pop_value(&q), -1);
    for (int i = 0; i < 6; i++)
        it[i].value = i;
    bm_util_queue_push(&q, &it[1].qlink);
    bm_util_queue_push(&q, &it[2].qlink);
    bm_util_queue_push_front(&q, &it[0].qlink);
    BM_CHECK(bm_util_queue_peek(&q) == &it[0].qlink);
    BM_CHECK_EQ_INT(queue_pop_value(&q), 0);
    BM_CHECK_EQ_INT(queue_pop_value(&q), 1);
    BM_CHECK_EQ_INT(queue_pop_value(&q), 2);
    BM_CHECK(bm_util_queue_empty(&q));
    BM_CHECK(q.tail == NULL);
    /* push after draining must not follow a stale tail */
    bm_util_queue_push(&q, &it[3].qlink);
    bm_util_queue_push_front(&r, &it[4].qlink); /* push_front into empty sets the tail */
    bm_util_queue_push(&r, &it[5].qlink);
    bm_util_queue_concat(&q, &r);
    BM_CHECK(bm_util_queue_empty(&r));
    bm_util_queue_concat(&q, &r); /* empty source: no change */
    BM_CHECK_EQ_INT(queue_pop_value(&q), 3);
    BM_CHECK_EQ_INT(queue_pop_value(&q), 4);
    BM_CHECK_EQ_INT(queue_pop_value(&q), 5);
    BM_CHECK_EQ_INT(queue_pop_value(&q), -1);
    bm_util_queue_concat(&r, &q); /* empty into empty */
    BM_CHECK(bm_util_queue_empty(&r) && r.tail == NULL);
}

int main(void)
{
    BM_RUN(test_list_basic);
    BM_RUN(test_list_remove_while_iterating);
    BM_RUN(test_list_splice);
    BM_RUN(test_queue);
    return bm_test_summary("test_util_list");
}
