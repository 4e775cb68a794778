/* Tests of the help catalog (src/util/help.h): topics registered from this
 * file and from the library are found and listed in name order; formatting
 * substitutes the arguments, frames and wraps at 76 columns with list items
 * hanging under their text, reports an unknown topic, follows snprintf's
 * length contract when the buffer is small; bm_util_help_show writes the
 * same block to stderr with the [host:pid] context. (Every topic of the
 * library is linted by test_registry.c.) */
#include "util/help.h"
#include "util/log.h"

#include "bm_test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct bm_util_help_topic test_topics[] = {
    {"zz-test-wrap", "Wrapping test", "count (int), word (string)",
     "There are %d reasons why the word %s appears in this long sentence that must be wrapped "
     "at seventy-six columns without cutting any word in the middle.\n"
     "\n"
     "What to do:\n"
     "  - a list item that is also long enough to need a second line, which must hang under "
     "the text of the item\n"
     "    bm_info --params btl/tcp\n"},
    {"aa-test-first", "Sorting test", "", "Nothing to substitute. What to do: nothing."},
};
BM_HELP_TOPICS_REGISTER(test_topics);

static void test_find(void)
{
    BM_CHECK(bm_util_help_find("zz-test-wrap") == &test_topics[0]);
    BM_CHECK(bm_util_help_find("btl-unreachable") != NULL); /* from the library */
    BM_CHECK(bm_util_help_find("no-such-topic") == NULL);
    BM_CHECK(bm_util_help_find(NULL) == NULL);
}

struct foreach_ctx {
    int n;
    bool sorted, saw_test, saw_lib;
    const char *prev;
};

static void visit(const struct bm_util_help_topic *t, void *arg)
{
    struct foreach_ctx *c = arg;
    if (c->prev && strcmp(c->prev, t->name) >= 0)
        c->sorted = false;
    c->prev = t->name;
    c->saw_test |= strcmp(t->name, "aa-test-first") == 0;
    c->saw_lib |= strcmp(t->name, "mpi-abort") == 0;
    c->n++;
}

static void test_foreach(void)
{
    struct foreach_ctx c = {0, true, false, false, NULL};
    bm_util_help_foreach(visit, &c);
    BM_CHECK(c.n >= 7);
    BM_CHECK(c.sorted);
    BM_CHECK(c.saw_test && c.saw_lib);
}

/* Line i (0-based) of s into out. */
static const char *line_of(const char *s, int i, char *out, size_t len)
{
    for (; i > 0 && s; i--) {
        s = strchr(s, '\n');
        s = s ? s + 1 : NULL;
    }
    if (!s)
        return "";
    size_t n = strcspn(s, "\n");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), s);
    return out;
}

static void test_format_and_wrap(void)
{
    char buf[4096], l[256];
    size_t n = bm_util_help_format(buf, sizeof(buf), "zz-test-wrap", 3, "bitmover");
    BM_CHECK_EQ_INT(n, strlen(buf));
    BM_CHECK(strstr(buf, "There are 3 reasons why the word bitmover appears") != NULL);
    char prefix[96];
    bm_util_log_prefix(prefix, sizeof(prefix));
    BM_CHECK(strncmp(line_of(buf, 0, l, sizeof(l)), "-----", 5) == 0);
    BM_CHECK(strncmp(line_of(buf, 1, l, sizeof(l)), prefix, strlen(prefix)) == 0);
    BM_CHECK(strstr(line_of(buf, 1, l, sizeof(l)), "Wrapping test") != NULL);
    int longest = 0, lines = 0;
    for (const char *p = buf; *p; lines++) {
        int len = (int)strcspn(p, "\n");
        longest = len > longest ? len : longest;
        p += len + (p[len] == '\n');
    }
    BM_CHECK_EQ_INT(longest, 76); /* the rules; no text line is longer */
    BM_CHECK(buf[n - 1] == '\n');
    /* Find the list item and its continuation. */
    const char *item = strstr(buf, "  - a list item");
    BM_CHECK(item != NULL);
    if (item) {
        const char *cont = strchr(item, '\n') + 1;
        BM_CHECK(strncmp(cont, "    ", 4) == 0 && cont[4] != ' '); /* hangs under the text */
        BM_CHECK(strstr(cont, "\n    bm_info --params btl/tcp\n") != NULL);
    }
    BM_CHECK(strstr(buf, "midd-") == NULL); /* words are never cut */
    BM_CHECK(lines >= 10);
}

static void test_unknown_and_truncation(void)
{
    char buf[1024];
    bm_util_help_format(buf, sizeof(buf), "no-such-topic");
    BM_CHECK(strstr(buf, "no-such-topic") != NULL);
    BM_CHECK(strstr(buf, "Missing help topic") != NULL);
    char full[2048], small[40];
    size_t need = bm_util_help_format(full, sizeof(full), "aa-test-first");
    size_t got = bm_util_help_format(small, sizeof(small), "aa-test-first");
    BM_CHECK_EQ_INT(got, need);
    BM_CHECK_EQ_INT(strlen(small), sizeof(small) - 1);
    BM_CHECK(strncmp(small, full, sizeof(small) - 1) == 0);
}

static void test_show_to_stderr(void)
{
    int fds[2];
    BM_CHECK(pipe(fds) == 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    errno = EAGAIN;
    bm_util_help_show("btl-unreachable", 1, "hostB", 0, "hostA", "self,sm,tcp");
    BM_CHECK_EQ_INT(errno, EAGAIN);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    buf[n > 0 ? n : 0] = '\0';
    char prefix[96];
    bm_util_log_prefix(prefix, sizeof(prefix));
    BM_CHECK(strstr(buf, prefix) != NULL);
    BM_CHECK(strstr(buf, "Process 1 on host hostB cannot be reached from process 0 on host "
                         "hostA") != NULL);
    BM_CHECK(strstr(buf, "(self,sm,tcp)") != NULL);
    char expect[4096];
    bm_util_help_format(expect, sizeof(expect), "btl-unreachable", 1, "hostB", 0, "hostA",
                        "self,sm,tcp");
    BM_CHECK_STR(buf, expect);
}

int main(void)
{
    BM_RUN(test_find);
    BM_RUN(test_foreach);
    BM_RUN(test_format_and_wrap);
    BM_RUN(test_unknown_and_truncation);
    BM_RUN(test_show_to_stderr);
    return bm_test_summary("test_util_help");
}
