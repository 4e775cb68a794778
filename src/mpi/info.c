/* MPI_Info objects: ordered (key, value) string pairs that programs pass as
 * hints (MPI_Alloc_mem, MPI_Comm_split_type, MPI_Comm_set_info...), and
 * MPI_INFO_ENV, the predefined read-only object describing how the program
 * was started (MPI-3.1 section 9.1.2: command, argv, maxprocs, host, arch,
 * wdir, thread_level). bitmover recognizes few hints, but programs build,
 * query and free info objects, so they work as the standard describes:
 * keys up to MPI_MAX_INFO_KEY characters, values up to MPI_MAX_INFO_VAL,
 * setting an existing key replaces its value, and keys keep the order in
 * which they were first set. */
#include "mpi/mpi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

struct bm_mpi_info {
    uint32_t magic;
    int n;       /* pairs in use */
    int cap;     /* allocated pairs */
    char **keys; /* n keys, in the order first set */
    char **vals;
    bool predefined; /* MPI_INFO_ENV: read-only, never freed */
};

struct bm_mpi_info bm_mpi_info_env_obj = {.magic = BM_MPI_MAGIC_INFO, .predefined = true};

static int check_info(MPI_Info info, const char *fn)
{
    if (info == MPI_INFO_NULL || info->magic != BM_MPI_MAGIC_INFO)
        return bm_mpi_error(NULL, MPI_ERR_INFO, fn, "invalid info handle %p%s", (void *)info,
                            info == MPI_INFO_NULL ? " (MPI_INFO_NULL)" : "");
    return MPI_SUCCESS;
}

/* An info object the program may change (not MPI_INFO_ENV). */
static int check_info_writable(MPI_Info info, const char *fn)
{
    int rc = check_info(info, fn);
    if (rc)
        return rc;
    if (info->predefined)
        return bm_mpi_error(NULL, MPI_ERR_INFO, fn,
                            "MPI_INFO_ENV is predefined and read-only; MPI_Info_dup it to get "
                            "a copy to change");
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

/* Set key to value, both valid. */
static int info_set(MPI_Info info, const char *key, const char *value, const char *fn)
{
    char *v;
    int i;


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

int PMPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    static const char fn[] = "MPI_Info_set";
    int rc;

    if ((rc = check_info_writable(info, fn)) || (rc = check_key(key, fn)))
        return rc;
    return info_set(info, key, value, fn);
}
BM_MPI_ALIAS(Info_set);

static void info_clear(MPI_Info info)
{
    for (int i = 0; i < info->n; i++) {
        free(info->keys[i]);
        free(info->vals[i]);
    }
    free(info->keys);
    free(info->vals);
    info->keys = info->vals = NULL;
    info->n = info->cap = 0;
}

/* The program's command line: argv when MPI_Init got it, else /proc. */
static void env_command(int argc, char **argv, char *cmd, size_t cmdlen, char *args,
                        size_t argslen)
{
    cmd[0] = args[0] = 0;
    if (argc > 0 && argv && argv[0]) {
        snprintf(cmd, cmdlen, "%s", argv[0]);
        size_t used = 0;
        for (int i = 1; i < argc && argv[i] && used < argslen; i++)
            used += (size_t)snprintf(args + used, argslen - used, "%s%s", i > 1 ? " " : "",
                                     argv[i]);
        return;
    }
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f)
        return;
    char buf[MPI_MAX_INFO_VAL];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    snprintf(cmd, cmdlen, "%s", buf);
    size_t used = 0;
    for (size_t i = strlen(buf) + 1; i < n && used < argslen; i += strlen(buf + i) + 1)
        used += (size_t)snprintf(args + used, argslen - used, "%s%s", used ? " " : "", buf + i);
}

void bm_mpi_info_env_init(int argc, char **argv, int thread_level, int world_size)
{
    static const char *levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                   "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
    static const char fn[] = "MPI_Init";
    MPI_Info env = &bm_mpi_info_env_obj;
    char cmd[MPI_MAX_INFO_VAL + 1], args[MPI_MAX_INFO_VAL + 1], val[MPI_MAX_INFO_VAL + 1];
    struct utsname u;

    info_clear(env);
    env_command(argc, argv, cmd, sizeof(cmd), args, sizeof(args));
    if (cmd[0])
        info_set(env, "command", cmd, fn);
    if (args[0])
        info_set(env, "argv", args, fn);
    snprintf(val, sizeof(val), "%d", world_size);
    info_set(env, "maxprocs", val, fn);
    if (gethostname(val, sizeof(val) - 1) == 0) {
        val[sizeof(val) - 1] = 0;
        info_set(env, "host", val, fn);
    }
    if (uname(&u) == 0)
        info_set(env, "arch", u.machine, fn);
    if (getcwd(val, sizeof(val)))
        info_set(env, "wdir", val, fn);
    info_set(env, "thread_level", levels[thread_level], fn);
}

void bm_mpi_info_env_fini(void)
{
    info_clear(&bm_mpi_info_env_obj);
}

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

    if ((rc = check_info_writable(info, fn)) || (rc = check_key(key, fn)))
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
    if ((rc = check_info_writable(*info, fn)))
        return rc;
    info_clear(*info);
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
