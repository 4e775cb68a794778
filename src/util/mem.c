/* Out-of-line memory helpers (see mem.h for why). */
#include "util/mem.h"

#include <string.h>

void bm_util_zero(void *p, size_t n)
{
    memset(p, 0, n);
}
