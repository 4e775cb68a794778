/* MPI_Alloc_mem and MPI_Free_mem: memory for message passing and RMA,
 * registered at allocation with every transport that needs registration
 * (src/btl/btl_mem.c, Open MPI's mpool + rcache), so that one-sided
 * operations and the transports' own caches use it without registering per
 * operation. Transports that need none (self, sm's single copy) use any
 * memory as it is.
 *
 * Info keys, as Open MPI honours them: "mpool_hints", a comma list of
 * key=value, of which "page_size=<bytes>[k|m|g]" asks for pages of that size
 * (huge pages when the kernel has them, else ordinary pages aligned to that
 * size with transparent huge pages requested) and "mpool=hugepage" for huge
 * pages of the default size (2 MiB); every other key, value or hint is
 * ignored, as both Open MPI and MPICH ignore hints they do not know (MPICH
 * honours none). Choices where the standard leaves one: size 0 returns a
 * valid pointer (MPICH's malloc(0) habit; Open MPI returns NULL), which
 * MPI_Free_mem takes back; MPI_Free_mem(NULL) succeeds (both do); an
 * address that MPI_Alloc_mem did not return, or that was freed already, is
 * refused with MPI_ERR_ARG (Open MPI and MPICH would pass it to free()). A
 * failed allocation raises MPI_ERR_NO_MEM on MPI_COMM_WORLD's error handler,
 * as in Open MPI. */
#include "btl/btl.h"
#include "mpi/mpi_internal.h"
#include "util/params.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Default size of mpool=hugepage (Open MPI's mpool_hugepage_page_size). */
#define ALLOC_MEM_HUGE_DEFAULT (2u << 20)

/* The page size that info's mpool_hints ask for; 0 for the system's. */
static size_t alloc_mem_page_size(MPI_Info info)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    if (info == MPI_INFO_NULL ||
        PMPI_Info_get(info, "mpool_hints", MPI_MAX_INFO_VAL, v, &flag) != MPI_SUCCESS || !flag)
        return 0;
    size_t page = 0;
    bool huge = false;
    char *save = NULL;
    for (char *tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *val = eq + 1;
        if (strcasecmp(tok, "mpool") == 0) {
            huge = strcasecmp(val, "hugepage") == 0;
        } else if (strcasecmp(tok, "page_size") == 0) {
            /* Open MPI's suffixes k, m, g: the parameters' size syntax. */
            static const struct bm_param size = {
                .name = "mpool_hints page_size", .type = BM_PARAM_SIZE, .def = "0"};
            char err[160];
            size_t n = 0;
            if (bm_util_param_parse(&size, val, &n, err, sizeof(err)) != BM_OK)
                n = 0;
            page = n > 0 && (n & (n - 1)) == 0 ? n : 0;
        }
    }
    return page ? page : huge ? ALLOC_MEM_HUGE_DEFAULT : 0;
}

int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    static const char fn[] = "MPI_Alloc_mem";
    void *p = NULL;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (size < 0)
        return bm_mpi_error(NULL, MPI_ERR_SIZE, fn, "negative size %ld", (long)size);
    if (baseptr == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL baseptr");
    size_t page = alloc_mem_page_size(info);
    if (bm_btl_base_mem_alloc((size_t)size, page, &p) != BM_OK)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn,
                            "cannot allocate %lld bytes%s: the process is out of memory (or "
                            "of address space); free memory or ask for less",
                            (long long)size, page ? " of the page size asked for" : "");
    memcpy(baseptr, &p, sizeof(p));
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Alloc_mem);

int PMPI_Free_mem(void *base)
{
    static const char fn[] = "MPI_Free_mem";
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (base == NULL)
        return MPI_SUCCESS;
    if (bm_btl_base_mem_free(base) != BM_OK)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn,
                            "address %p was not returned by MPI_Alloc_mem, or was freed "
                            "already (pass the pointer MPI_Alloc_mem returned, once)",
                            base);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Free_mem);
