/* Named POSIX shared-memory segments among the processes of one host
 * (shmseg.h): create, attach, early unlink, detach, and the table of names
 * still to remove when the process exits or aborts. */
#define BM_LOG_SUBSYS "util/shmseg"
#include "util/shmseg.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Names created here and not removed yet. Static storage, so that the exit
 * handler never reads freed memory; a slot is free when its name is empty. */
#define SHMSEG_TRACKED 64
static char shmseg_names[SHMSEG_TRACKED][BM_UTIL_SHMSEG_NAME_MAX];
static pthread_mutex_t shmseg_lock = PTHREAD_MUTEX_INITIALIZER;

static void track(const char *name, bool add)
{
    pthread_mutex_lock(&shmseg_lock);
    for (int i = 0; i < SHMSEG_TRACKED; i++) {
        if (add && shmseg_names[i][0] == '\0') {
            snprintf(shmseg_names[i], sizeof(shmseg_names[i]), "%s", name);
            break;
        }
        if (!add && strcmp(shmseg_names[i], name) == 0) {
            shmseg_names[i][0] = '\0';
            break;
        }
    }
    pthread_mutex_unlock(&shmseg_lock);
}

void *bm_util_shm_map_guarded(int fd, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *res =
        mmap(NULL, len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED)
        return MAP_FAILED;
    void *addr = mmap(res + page, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (addr == MAP_FAILED) {
        int e = errno;
        munmap(res, len + 2 * page);
        errno = e;
    }
    return addr;
}

void bm_util_shm_unmap_guarded(void *addr, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap((unsigned char *)addr - page, len + 2 * page);
}

/* bm_util_shm_private's ranges: written under shmseg_lock, read without;
 * an empty slot has hi == 0. */
#define SHM_PRIVATE_MAX 256
static struct {
    _Atomic uintptr_t lo, hi;
} shm_private[SHM_PRIVATE_MAX];
static _Atomic int shm_private_n; /* slots ever used */

void bm_util_shm_private(const void *addr, size_t len, bool add)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)addr - page, hi = (uintptr_t)addr + len + page;
    pthread_mutex_lock(&shmseg_lock);
    int n = atomic_load_explicit(&shm_private_n, memory_order_relaxed);
    for (int i = 0; i < SHM_PRIVATE_MAX; i++) {
        uintptr_t h = atomic_load_explicit(&shm_private[i].hi, memory_order_relaxed);
        if (add && h == 0) {
            atomic_store_explicit(&shm_private[i].lo, lo, memory_order_relaxed);
            atomic_store_explicit(&shm_private[i].hi, hi, memory_order_release);
            if (i >= n)
                atomic_store_explicit(&shm_private_n, i + 1, memory_order_release);
            break;
        }
        if (!add && h == hi &&
            atomic_load_explicit(&shm_private[i].lo, memory_order_relaxed) == lo) {
            atomic_store_explicit(&shm_private[i].hi, 0, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&shmseg_lock);
}

bool bm_util_shm_private_overlaps(const void *addr, size_t len)
{
    uintptr_t lo = (uintptr_t)addr, hi = lo + len;
    int n = atomic_load_explicit(&shm_private_n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        uintptr_t h = atomic_load_explicit(&shm_private[i].hi, memory_order_acquire);
        if (h > lo && atomic_load_explicit(&shm_private[i].lo, memory_order_relaxed) < hi)
            return true;
    }
    return false;
}

void bm_util_shmseg_cleanup(void)
{
    for (int i = 0; i < SHMSEG_TRACKED; i++)
        if (shmseg_names[i][0]) {
            shm_unlink(shmseg_names[i]);
            shmseg_names[i][0] = '\0';
        }
}

static bool name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || n >= BM_UTIL_SHMSEG_NAME_MAX || name[0] != '/' || strchr(name + 1, '/')) {
        bm_log_error("invalid shared-memory segment name '%s' (must be '/' and up to %d "
                     "characters without another '/')",
                     name ? name : "(null)", BM_UTIL_SHMSEG_NAME_MAX - 2);
        return false;
    }
    return true;
}

static size_t page_round(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size == 0)
        size = 1;
    return (size + page - 1) / page * page;
}

bm_status_t bm_util_shmseg_create(struct bm_util_shmseg *seg, const char *name, size_t size)
{
    return bm_util_shmseg_create_holed(seg, name, size, 0, 0);
}

bm_status_t bm_util_shmseg_create_holed(struct bm_util_shmseg *seg, const char *name, size_t size,
                                        size_t hole_off, size_t hole_len)
{
    if (!name_ok(name))
        return BM_ERR_BAD_PARAM;
    size_t len = page_round(size);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {
        /* Left by an earlier job that had the same id and crashed beyond
         * the launcher's reach: it cannot be in use by this job yet. */
        bm_log_warn("removing stale shared-memory file /dev/shm%s left by an earlier job", name);
        shm_unlink(name);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        bm_log_error("cannot create shared-memory file /dev/shm%s: %s. Check that /dev/shm is "
                     "mounted and writable",
                     name, strerror(errno));
        return BM_ERR_SYSTEM;
    }
    track(name, true);
    if (hole_off > len)
        hole_off = len;
    if (hole_len > len - hole_off)
        hole_len = len - hole_off;
    /* The hole is only sized (ftruncate): its pages come when first written. */
    int err = ftruncate(fd, (off_t)len) != 0 ? errno : 0;
    if (err == 0 && hole_off > 0)
        err = posix_fallocate(fd, 0, (off_t)hole_off);
    if (err == 0 && hole_off + hole_len < len)
        err = posix_fallocate(fd, (off_t)(hole_off + hole_len), (off_t)(len - hole_off - hole_len));
    if (err != 0) {
        bm_log_error("cannot size shared-memory file /dev/shm%s to %zu bytes: %s. /dev/shm may "
                     "be full or too small (df /dev/shm)",
                     name, len, strerror(err));
        close(fd);
        goto err_unlink;
    }
    void *addr = bm_util_shm_map_guarded(fd, len);
    close(fd);
    if (addr == MAP_FAILED) {
        bm_log_error("cannot map shared-memory file /dev/shm%s (%zu bytes): %s", name, len,
                     strerror(errno));
        goto err_unlink;
    }
    seg->addr = addr;
    seg->size = len;
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->owner = true;
    seg->linked = true;
    return BM_OK;

err_unlink:
    shm_unlink(name);
    track(name, false);
    return BM_ERR_SYSTEM;
}

bm_status_t bm_util_shmseg_attach(struct bm_util_shmseg *seg, const char *name, size_t size)
{
    if (!name_ok(name))
        return BM_ERR_BAD_PARAM;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return BM_ERR_NOT_FOUND;
        bm_log_error("cannot open shared-memory file /dev/shm%s: %s", name, strerror(e));
        return BM_ERR_SYSTEM;
    }
    struct stat st;
    size_t len = page_round(size);
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < len) {
        bm_log_error("shared-memory file /dev/shm%s holds %lld bytes, fewer than the %zu "
                     "expected: it is not the segment this job created",
                     name, (long long)st.st_size, len);
        close(fd);
        return BM_ERR_SYSTEM;
    }
    void *addr = bm_util_shm_map_guarded(fd, len);
    close(fd);
    if (addr == MAP_FAILED) {
        bm_log_error("cannot map shared-memory file /dev/shm%s (%zu bytes): %s", name, len,
                     strerror(errno));
        return BM_ERR_SYSTEM;
    }
    seg->addr = addr;
    seg->size = len;
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->owner = false;
    seg->linked = true;
    return BM_OK;
}

void bm_util_shmseg_unlink(struct bm_util_shmseg *seg)
{
    if (!seg->linked)
        return;
    seg->linked = false;
    if (seg->owner) {
        shm_unlink(seg->name);
        track(seg->name, false);
    }
}

void bm_util_shmseg_detach(struct bm_util_shmseg *seg)
{
    if (seg->owner)
        bm_util_shmseg_unlink(seg);
    if (seg->addr)
        bm_util_shm_unmap_guarded(seg->addr, seg->size);
    seg->addr = NULL;
    seg->size = 0;
}
