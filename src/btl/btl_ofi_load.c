/* libfabric, loaded when first used instead of linked. Debian's libfabric
 * pulls in the PSM libraries, whose load-time constructors spend 100-250 ms
 * calibrating a timebase; linked, every MPI program and bmrun paid that at
 * start-up even when no libfabric wire was used (Open MPI avoids it by
 * loading its libfabric plugins only on demand). The transports call the
 * usual fi_* API: the handful of real libfabric exports they use are defined
 * here (hidden, so they never interpose on anyone else) and forward to the
 * library opened on the first call; everything else in the fi_* API is
 * inline code over the objects those calls return. When libfabric cannot be
 * loaded every call fails with -FI_ENOSYS and fi_strerror says why. Also
 * here, for both libfabric transports (ofi and dgram's libfabric wire): how
 * their provider include/exclude lists are read (btl_ofi_load.h). */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/btl_ofi_load.h"
#include "util/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFI_LIBRARY "libfabric.so.1"

static struct {
    pthread_once_t once;
    bool loaded;
    char why[256];
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                   struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
    uint32_t (*version)(void);
} ofi = {.once = PTHREAD_ONCE_INIT};

static void *ofi_sym(void *lib, const char *name, bool *ok)
{
    void *p = dlsym(lib, name);
    if (!p && *ok) {
        snprintf(ofi.why, sizeof(ofi.why), "%s has no symbol %s", OFI_LIBRARY, name);
        *ok = false;
    }
    return p;
}

static void ofi_load(void)
{
    /* The sockets provider's progress thread spins FI_SOCKETS_PE_WAITTIME
     * (10 ms by default) after every event before it sleeps: with a rank
     * per core it takes the core of the rank it serves. Measured (2 cores,
     * load ~25, bm_osc 8 B put + flush over ofi): 50-170 ms per operation,
     * and runs that did not finish in 60 s; with 0, 90-180 us. libfabric
     * reads the variable when its providers initialise (the first
     * fi_getinfo), so it is set here, before loading, unless the user
     * chose a value. */
    if (setenv("FI_SOCKETS_PE_WAITTIME", "0", 0) != 0)
        bm_log_debug("cannot set FI_SOCKETS_PE_WAITTIME: %s", strerror(errno));
    void *lib = dlopen(OFI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(ofi.why, sizeof(ofi.why), "%s could not be loaded: %s", OFI_LIBRARY,
                 err ? err : "unknown error");
        bm_log_debug("%s", ofi.why);
        return;
    }
    bool ok = true;
    *(void **)&ofi.getinfo = ofi_sym(lib, "fi_getinfo", &ok);
    *(void **)&ofi.freeinfo = ofi_sym(lib, "fi_freeinfo", &ok);
    *(void **)&ofi.dupinfo = ofi_sym(lib, "fi_dupinfo", &ok);
    *(void **)&ofi.fabric = ofi_sym(lib, "fi_fabric", &ok);
    *(void **)&ofi.strerror = ofi_sym(lib, "fi_strerror", &ok);
    *(void **)&ofi.version = ofi_sym(lib, "fi_version", &ok);
    if (!ok) {
        bm_log_debug("%s", ofi.why);
        dlclose(lib);
        return;
    }
    ofi.loaded = true; /* kept open for the life of the process */
}

static bool ofi_ready(void)
{
    pthread_once(&ofi.once, ofi_load);
    return ofi.loaded;
}

int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
               const struct fi_info *hints, struct fi_info **info)
{
    return ofi_ready() ? ofi.getinfo(version, node, service, flags, hints, info) : -FI_ENOSYS;
}

void fi_freeinfo(struct fi_info *info)
{
    if (info && ofi_ready())
        ofi.freeinfo(info);
}

struct fi_info *fi_dupinfo(const struct fi_info *info)
{
    return ofi_ready() ? ofi.dupinfo(info) : NULL;
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    return ofi_ready() ? ofi.fabric(attr, fabric, context) : -FI_ENOSYS;
}

const char *fi_strerror(int errnum)
{
    return ofi_ready() ? ofi.strerror(errnum) : ofi.why;
}

/* The library's API version, or 0 when it cannot be loaded. */
uint32_t fi_version(void)
{
    return ofi_ready() ? ofi.version() : 0;
}

/* ---- provider lists (BM_BTL_OFI_PROVIDER_*, BM_BTL_DGRAM_PROVIDER_*) ---- */

bool bm_btl_ofi_list_has(const char *list, const char *name, size_t len)
{
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && p[m - 1] == ' ')
            m--;
        if (m == len && strncmp(p, name, len) == 0)
            return true;
        p += n;
    }
    return false;
}

bool bm_btl_ofi_provider_match(const char *list, const char *name)
{
    if (!list || !*list || !name)
        return false;
    if (bm_btl_ofi_list_has(list, name, strlen(name)))
        return true;
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, ";");
        if (bm_btl_ofi_list_has(list, p, n))
            return true;
        p += n;
        if (*p == ';')
            p++;
    }
    return false;
}
