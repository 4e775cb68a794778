/* The memory monitor of the ofi transport's registration cache: it learns
 * from the kernel when memory that a cached registration covers is unmapped
 * (munmap, free of a large block, heap trimming), discarded
 * (madvise(MADV_DONTNEED), what allocators do to freed pages) or moved
 * (mremap), so that a later buffer at the same address never reuses a
 * registration of pages that are gone (NIC providers pin pages: a stale
 * registration would move the old pages' data).
 *
 * Mechanism: userfaultfd. Each cached range is registered in write-protect
 * mode without ever write-protecting a page, so the program's own faults
 * never come to us; what we ask for are the non-cooperative events UNMAP,
 * REMOVE and REMAP. The kernel makes the thread that unmaps wait until the
 * event has been read, so a helper thread reads them at all times and
 * applies them to every module's cache. The helper marks itself busy from
 * the moment the descriptor is readable until the events it read are
 * applied; a lookup first waits for that (bm_btl_ofi_monitor_sync), which
 * closes the window in which munmap has returned but the cache still holds
 * the entry. The helper never holds a cache lock while reading, so a thread
 * that unmaps while holding one cannot deadlock with it.
 *
 * Unprivileged processes may use userfaultfd only for user-mode faults
 * (UFFD_USER_MODE_ONLY, Linux 5.11+) unless vm.unprivileged_userfaultfd is
 * 1; events need nothing more. Where the kernel refuses, the cache keeps
 * only registrations of providers that do not pin memory (see ofi_mr.c). */
#define BM_LOG_SUBSYS "btl/ofi"
#include "btl/ofi/ofi.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

struct bm_btl_ofi_monitor {
    struct bm_btl_ofi_component *comp;
    int fd;     /* the userfaultfd */
    int wakefd; /* eventfd: stop the helper */
    pthread_t thread;
    atomic_int busy; /* events read but not yet applied */
    atomic_ullong events;
};

static void monitor_apply(struct bm_btl_ofi_monitor *mon, uintptr_t start, uintptr_t end)
{
    struct bm_btl_ofi_component *comp = mon->comp;
    for (int i = 0; i < comp->nmodules; i++)
        bm_btl_ofi_mr_invalidate(comp->modules[i], start, end);
    atomic_fetch_add(&mon->events, 1);
}

static void *monitor_main(void *arg)
{
    struct bm_btl_ofi_monitor *mon = arg;
    struct pollfd pfd[2] = {{mon->fd, POLLIN, 0}, {mon->wakefd, POLLIN, 0}};
    for (;;) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            bm_log_error("memory monitor: poll failed: %s; cached registrations are no longer "
                         "checked against unmapped memory",
                         strerror(errno));
            break;
        }
        if (pfd[1].revents)
            break;
        if (!(pfd[0].revents & POLLIN))
            continue;
        atomic_store(&mon->busy, 1);
        struct uffd_msg msg[16];
        for (;;) {
            ssize_t r = read(mon->fd, msg, sizeof(msg));
            if (r <= 0)
                break;
            for (size_t k = 0; k < (size_t)r / sizeof(msg[0]); k++) {
                switch (msg[k].event) {
                case UFFD_EVENT_UNMAP:
                case UFFD_EVENT_REMOVE:
                    monitor_apply(mon, (uintptr_t)msg[k].arg.remove.start,
                                  (uintptr_t)msg[k].arg.remove.end);
                    break;
                case UFFD_EVENT_REMAP:
                    monitor_apply(mon, (uintptr_t)msg[k].arg.remap.from,
                                  (uintptr_t)(msg[k].arg.remap.from + msg[k].arg.remap.len));
                    break;
                default:
                    break; /* no page faults are asked for */
                }
            }
        }
        atomic_store(&mon->busy, 0);
    }
    atomic_store(&mon->busy, 0);
    return NULL;
}

struct bm_btl_ofi_monitor *bm_btl_ofi_monitor_start(struct bm_btl_ofi_component *comp, char *why,
                                                    size_t whylen)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL) /* kernels before 5.11 know no UFFD_USER_MODE_ONLY */
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, whylen, "userfaultfd: %s", strerror(errno));
        return NULL;
    }
    struct uffdio_api api = {
        .api = UFFD_API,
        .features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_REMAP,
    };
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        snprintf(why, whylen, "userfaultfd events UNMAP/REMOVE/REMAP: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    struct bm_btl_ofi_monitor *mon = calloc(1, sizeof(*mon));
    if (!mon) {
        close(fd);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    mon->comp = comp;
    mon->fd = fd;
    mon->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (mon->wakefd < 0 || pthread_create(&mon->thread, NULL, monitor_main, mon) != 0) {
        snprintf(why, whylen, "cannot start the monitor thread: %s", strerror(errno));
        if (mon->wakefd >= 0)
            close(mon->wakefd);
        close(fd);
        free(mon);
        return NULL;
    }
    return mon;
}

void bm_btl_ofi_monitor_stop(struct bm_btl_ofi_monitor *mon)
{
    if (!mon)
        return;
    uint64_t one = 1;
    if (write(mon->wakefd, &one, sizeof(one)) != sizeof(one))
        bm_log_debug("memory monitor: wake-up write failed: %s", strerror(errno));
    pthread_join(mon->thread, NULL);
    /* Closing the descriptor drops every watch and wakes any thread that
     * waits for an event to be read. */
    close(mon->fd);
    close(mon->wakefd);
    bm_log_debug("memory monitor: %llu unmap events applied",
                 (unsigned long long)atomic_load(&mon->events));
    free(mon);
}

bool bm_btl_ofi_monitor_watch(struct bm_btl_ofi_monitor *mon, uintptr_t start, uintptr_t end)
{
    if (!mon || end <= start)
        return false;
    struct uffdio_register reg = {
        .range = {.start = start, .len = end - start},
        .mode = UFFDIO_REGISTER_MODE_WP,
    };
    if (ioctl(mon->fd, UFFDIO_REGISTER, &reg) != 0) {
        /* Memory userfaultfd cannot watch (file mappings, device memory) or
         * that another watcher owns: the registration is simply not cached. */
        bm_log_trace("memory monitor: cannot watch %#lx-%#lx: %s", (unsigned long)start,
                     (unsigned long)end, strerror(errno));
        return false;
    }
    return true;
}

void bm_btl_ofi_monitor_unwatch(struct bm_btl_ofi_monitor *mon, uintptr_t start, uintptr_t end)
{
    if (!mon || end <= start)
        return;
    struct uffdio_range range = {.start = start, .len = end - start};
    /* Fails harmlessly when the range is already gone (the kernel dropped
     * its watch along with the mapping). */
    (void)ioctl(mon->fd, UFFDIO_UNREGISTER, &range);
}

void bm_btl_ofi_monitor_sync(struct bm_btl_ofi_monitor *mon)
{
    if (!mon)
        return;
    while (atomic_load(&mon->busy))
        sched_yield();
}
