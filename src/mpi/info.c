/* MPI_Info objects: ordered (key, value) string pairs that programs pass as
 * hints (MPI_Alloc_mem, MPI_Comm_split_type...). bitmover recognizes no hint
 * yet, but programs build, query and free info objects, so they must work
 * as the standard describes: keys up to MPI_MAX_INFO_KEY characters, values
 * up to MPI_MAX_INFO_VAL, setting an existing key replaces its value, and
 * keys keep the order in which they were first set. */
#include "mpi/mpi_internal.h"

#include <stdlib.h>
#include <string.h>

struct bm_mpi_info {
    uint32_t magic;
    int n;       /* pairs in use */
    int cap;     /* allocated pairs */
    char **keys; /* n keys, in the order first set */
    char **vals;
};

static int check_info(MPI_Info info, const char *fn)
{
    if (info == MPI_INFO_NULL || info->magic != BM_MPI_MAGIC_INFO)
        return bm_mpi_error(NULL, MPI_ERR_INFO, fn, "invalid info handle %p%s", (void *)info,
                            info == MPI_INFO_NULL ? " (MPI_INFO_NULL)" : "");
    return MPI_SUCCESS;
}

static int check_key(const char *key, const char *fn)
{
    size_t len;

    if (key == NULL)
        return bm_mpi_error(NULL, MPI_ERR_INFO_KEY, fn, "NULL key");
    len = strlen(key);
    if (len == 0 || len > MPI_MAX_INFO_KEY)
        return bm_mpi_error(NULL, MPI_ERR_INFO_KEY, fn,
                            "key of %zu characters (1 to MPI_MAX_INFO_KEY = %d allowed)", len,
                            MPI_MAX_INFO_KEY);
    return MPI_SUCCESS;
}

static int info_find(MPI_Info info, const char *key)
{
    for (int i = 0; i < info->n; i++)
        if (strcmp(info->keys[i], key) == 0)
            return i;
    return -1;
}

int PMPI_Info_create(MPI_Info *info)
{
    static const char fn[] = "MPI_Info_create";
    struct bm_mpi_info *p;
    int rc;

    if ((rc = bm_mpi_check_initialized(fn)))
        return rc;
    if (info == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL info pointer");
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    p->magic = BM_MPI_MAGIC_INFO;
    *info = p;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_create);

int PMPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    static const char fn[] = "MPI_Info_set";
    char *v;
    int i, rc;

    if ((rc = check_info(info, fn)) || (rc = check_key(key, fn)))
        return rc;
    if (value == NULL || strlen(value) > MPI_MAX_INFO_VAL)
        return bm_mpi_error(NULL, MPI_ERR_INFO_VALUE, fn,
                            "value %s (up to MPI_MAX_INFO_VAL = %d characters allowed)",
                            value ? "too long" : "is NULL", MPI_MAX_INFO_VAL);
    v = strdup(value);
    if (v == NULL)
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    i = info_find(info, key);
    if (i >= 0) {
        free(info->vals[i]);
        info->vals[i] = v;
        return MPI_SUCCESS;
    }
    if (info->n == info->cap) {
        int cap = info->cap ? info->cap * 2 : 8;
        char **k = realloc(info->keys, sizeof(char *) * (size_t)cap);
        char **vv = k ? realloc(info->vals, sizeof(char *) * (size_t)cap) : NULL;
        if (k)
            info->keys = k;
        if (vv == NULL) {
            free(v);
            return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
        }
        info->vals = vv;
        info->cap = cap;
    }
    info->keys[info->n] = strdup(key);
    if (info->keys[info->n] == NULL) {
        free(v);
        return bm_mpi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    info->vals[info->n++] = v;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_set);

int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    static const char fn[] = "MPI_Info_get";
    int i, rc;

    if ((rc = check_info(info, fn)) || (rc = check_key(key, fn)))
        return rc;
    if (valuelen < 0 || value == NULL || flag == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "invalid value buffer (valuelen %d)", valuelen);
    i = info_find(info, key);
    *flag = i >= 0;
    if (i >= 0) {
        /* valuelen excludes the terminating NUL, as the standard says. */
        size_t n = strlen(info->vals[i]);
        n = n < (size_t)valuelen ? n : (size_t)valuelen;
        memcpy(value, info->vals[i], n);
        value[n] = '\0';
    }
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_get);

int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    static const char fn[] = "MPI_Info_get_valuelen";
    int i, rc;

    if ((rc = check_info(info, fn)) || (rc = check_key(key, fn)))
        return rc;
    if (valuelen == NULL || flag == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL output argument");
    i = info_find(info, key);
    *flag = i >= 0;
    if (i >= 0)
        *valuelen = (int)strlen(info->vals[i]);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_get_valuelen);

int PMPI_Info_delete(MPI_Info info, const char *key)
{
    static const char fn[] = "MPI_Info_delete";
    int i, rc;

    if ((rc = check_info(info, fn)) || (rc = check_key(key, fn)))
        return rc;
    i = info_find(info, key);
    if (i < 0)
        return bm_mpi_error(NULL, MPI_ERR_INFO_NOKEY, fn, "key \"%s\" is not set", key);
    free(info->keys[i]);
    free(info->vals[i]);
    memmove(info->keys + i, info->keys + i + 1, sizeof(char *) * (size_t)(info->n - i - 1));
    memmove(info->vals + i, info->vals + i + 1, sizeof(char *) * (size_t)(info->n - i - 1));
    info->n--;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_delete);

int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    static const char fn[] = "MPI_Info_get_nkeys";
    int rc;

    if ((rc = check_info(info, fn)))
        return rc;
    if (nkeys == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL nkeys pointer");
    *nkeys = info->n;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_get_nkeys);

int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    static const char fn[] = "MPI_Info_get_nthkey";
    int rc;

    if ((rc = check_info(info, fn)))
        return rc;
    if (n < 0 || n >= info->n || key == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "key index %d out of range (%d keys)", n,
                            info->n);
    strcpy(key, info->keys[n]);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_get_nthkey);

int PMPI_Info_free(MPI_Info *info)
{
    static const char fn[] = "MPI_Info_free";
    int rc;

    if (info == NULL)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL info pointer");
    if ((rc = check_info(*info, fn)))
        return rc;
    for (int i = 0; i < (*info)->n; i++) {
        free((*info)->keys[i]);
        free((*info)->vals[i]);
    }
    free((*info)->keys);
    free((*info)->vals);
    (*info)->magic = 0;
    free(*info);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_free);

int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    static const char fn[] = "MPI_Info_dup";
    MPI_Info copy;
    int rc;

    if ((rc = check_info(info, fn)) || (rc = PMPI_Info_create(&copy)))
        return rc;
    for (int i = 0; i < info->n; i++) {
        if ((rc = PMPI_Info_set(copy, info->keys[i], info->vals[i]))) {
            PMPI_Info_free(&copy);
            return rc;
        }
    }
    *newinfo = copy;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Info_dup);
