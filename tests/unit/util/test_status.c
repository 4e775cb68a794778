/* Tests of the status table (include/bm_status.h, src/util/status.c): every
 * code has its own name and a real sentence, codes sit in the range of
 * their group so that bm_status_is_link/peer/fatal classify them right, and
 * unknown codes still give printable text. */
#include "bitmover.h"
#include "bm_config.h"

#include "bm_test.h"

#include <string.h>

struct code {
    int value;
    const char *name;
};

#define CODE_ENTRY(name, value, str) {value, "BM_" #name},
static const struct code codes[] = {BM_STATUS_MAP(CODE_ENTRY)};
#undef CODE_ENTRY
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static void test_every_code(void)
{
    for (size_t i = 0; i < NCODES; i++) {
        const char *s = bm_status_str(codes[i].value);
        BM_CHECK_STR(bm_status_name(codes[i].value), codes[i].name);
        BM_CHECK_MSG(s && strcmp(s, "unknown status") != 0 && strlen(s) >= 6,
                     "%s has no real string", codes[i].name);
        for (size_t j = 0; j < i; j++) {
            BM_CHECK_MSG(codes[i].value != codes[j].value, "%s and %s share a value", codes[i].name,
                         codes[j].name);
            BM_CHECK_MSG(strcmp(s, bm_status_str(codes[j].value)) != 0, "%s and %s share a string",
                         codes[i].name, codes[j].name);
        }
    }
}

static void test_groups(void)
{
    BM_CHECK_EQ_INT(BM_OK, 0);
    for (size_t i = 0; i < NCODES; i++) {
        int v = codes[i].value;
        BM_CHECK_MSG(v <= 0, "%s is positive", codes[i].name);
        int groups = !!bm_status_is_link(v) + !!bm_status_is_peer(v) + !!bm_status_is_fatal(v);
        BM_CHECK_MSG(groups == (v <= -100 ? 1 : 0), "%s is in %d groups", codes[i].name, groups);
    }
    BM_CHECK(bm_status_is_link(BM_ERR_LINK_DOWN) && bm_status_is_link(BM_ERR_UNREACHABLE));
    BM_CHECK(bm_status_is_peer(BM_ERR_PEER_GONE));
    BM_CHECK(bm_status_is_fatal(BM_ERR_FATAL) && bm_status_is_fatal(BM_ERR_ABORTED));
    BM_CHECK(!bm_status_is_link(BM_ERR_TIMEOUT) && !bm_status_is_fatal(BM_ERROR));
}

static void test_unknown(void)
{
    BM_CHECK_STR(bm_status_str(-9999), "unknown status");
    BM_CHECK_STR(bm_status_name(12345), "BM_UNKNOWN");
    BM_CHECK_STR(bm_status_str(BM_ERR_TIMEOUT), "timed out");
    BM_CHECK_STR(bm_version(), BM_VERSION);
}

int main(void)
{
    BM_RUN(test_every_code);
    BM_RUN(test_groups);
    BM_RUN(test_unknown);
    return bm_test_summary("test_util_status");
}
