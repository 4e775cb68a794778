/* Strings for the one status table (include/bm_status.h). Kept in util so
 * that every layer and every tool share one source of error text. */
#include "bitmover.h"
#include "bm_config.h"

#include <stddef.h>

BM_EXPORT const char *bm_status_str(int status)
{
    switch (status) {
#define BM_STATUS_STR_CASE(name, value, str)                                                       \
    case value:                                                                                    \
        return str;
        BM_STATUS_MAP(BM_STATUS_STR_CASE)
#undef BM_STATUS_STR_CASE
    }
    return "unknown status";
}

BM_EXPORT const char *bm_status_name(int status)
{
    switch (status) {
#define BM_STATUS_NAME_CASE(name, value, str)                                                      \
    case value:                                                                                    \
        return "BM_" #name;
        BM_STATUS_MAP(BM_STATUS_NAME_CASE)
#undef BM_STATUS_NAME_CASE
    }
    return "BM_UNKNOWN";
}

BM_EXPORT const char *bm_version(void)
{
    return BM_VERSION;
}
