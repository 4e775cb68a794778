/* A named POSIX shared-memory segment shared by the processes of one host:
 * one process creates it (shm_open + posix_fallocate + mmap), the others
 * attach to it by name, and the name is removed as soon as every process
 * has attached, so that a crash after that point leaves nothing in
 * /dev/shm (the mappings live on until each process unmaps them). Used by
 * the library's shared-memory windows (MPI_Win_allocate_shared),
 * shared-memory collectives, and the sm transport to create its segment
 * (sm maps its peers' segments itself, with checks of its own).
 *
 * Names follow the runtime's job-scoped convention: the caller builds
 * "/bm-<jobid>-<what>" with bm_rte_job_name, so that bmrun removes what a
 * killed rank left behind. Until then a segment's creator is responsible
 * for its name: bm_util_shmseg_cleanup removes every name this process
 * created and has not removed yet, and callers register it once with
 * bm_rte_at_exit (normal exit and abort), as the sm transport does for its
 * own segments. This module cannot do that itself: util sits below the
 * runtime.
 *
 * Threads: create, attach, unlink and detach of one segment from one
 * thread at a time; the table of names to clean up is protected. */
#ifndef BM_UTIL_SHMSEG_H
#define BM_UTIL_SHMSEG_H

#include "bm_status.h"

#include <stdbool.h>
#include <stddef.h>

#define BM_UTIL_SHMSEG_NAME_MAX 128

struct bm_util_shmseg {
    void *addr;                         /* where it is mapped in this process; NULL when not */
    size_t size;                        /* bytes mapped (a multiple of the page size) */
    char name[BM_UTIL_SHMSEG_NAME_MAX]; /* "/bm-<jobid>-<what>" */
    bool owner;                         /* this process created it */
    bool linked;                        /* the name is still in /dev/shm, as far as we know */
};

/* Create segment name ("/..." of fewer than BM_UTIL_SHMSEG_NAME_MAX bytes)
 * of at least size bytes (rounded up to whole pages), zero-filled, mode
 * 0600, and map it. A file of that name left by a crashed earlier job is
 * replaced (with a warning). The pages are reserved now (posix_fallocate),
 * so a full /dev/shm is an error here rather than a SIGBUS later.
 * BM_OK, BM_ERR_BAD_PARAM (name), BM_ERR_SYSTEM (errors are logged with the
 * name, the host's /dev/shm and what to do). *seg is filled on success. */
bm_status_t bm_util_shmseg_create(struct bm_util_shmseg *seg, const char *name, size_t size);

/* The same, except that the range [hole_off, hole_off + hole_len) is not
 * reserved: it reads as zeros and takes memory only as its pages are
 * written, so a caller that reserves parts of it later (posix_fallocate on
 * the file, before writing there) pays only for what it uses. */
bm_status_t bm_util_shmseg_create_holed(struct bm_util_shmseg *seg, const char *name, size_t size,
                                        size_t hole_off, size_t hole_len);

/* Map segment name, created by another process, which must hold at least
 * size bytes. BM_OK, BM_ERR_NOT_FOUND (no such name: not created yet, or
 * already removed), BM_ERR_SYSTEM. */
bm_status_t bm_util_shmseg_attach(struct bm_util_shmseg *seg, const char *name, size_t size);

/* Remove the segment's name from /dev/shm (mappings stay valid). Call once
 * every process that needs it has attached. Harmless when already done. */
void bm_util_shmseg_unlink(struct bm_util_shmseg *seg);

/* Unmap the segment; the creator also removes its name when still there. */
void bm_util_shmseg_detach(struct bm_util_shmseg *seg);

/* Map len bytes (a multiple of the page size) of shared-memory file fd,
 * read-write, between two inaccessible pages. Later mappings (large
 * mallocs among them) go below earlier ones, so a program that writes past
 * the end of a buffer placed just below a segment faults on the guard page
 * (a SIGSEGV, or EFAULT from a kernel copy such as process_vm_readv)
 * instead of overwriting the segment, which would hang or mislead every
 * process sharing it. MAP_FAILED with errno set on failure. Every segment
 * of this module is mapped so; sm maps its peers' segments with it too. */
void *bm_util_shm_map_guarded(int fd, size_t len);
/* Unmap what bm_util_shm_map_guarded mapped at addr, guards included. */
void bm_util_shm_unmap_guarded(void *addr, size_t len);

/* The library's own segments (the sm transport's, its peers' included),
 * guards included: a user buffer must never overlap one. add records
 * [addr, addr + len) (mapped by bm_util_shm_map_guarded), !add forgets it.
 * overlaps is cheap (no lock, one pass over at most 256 ranges), for
 * checks on a rendezvous path: a receive whose count runs past its buffer
 * into a segment fails instead of overwriting it, even where a transfer
 * starts past the guard page (the sender's share of a single copy). */
void bm_util_shm_private(const void *addr, size_t len, bool add);
bool bm_util_shm_private_overlaps(const void *addr, size_t len);

/* Remove every name this process created and did not remove yet. For exit
 * and abort handlers: it calls only shm_unlink and touches no heap. */
void bm_util_shmseg_cleanup(void);

#endif
