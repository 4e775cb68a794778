/* Identity helpers shared by the launcher backends: turning every rank's
 * node label into this process's node, local rank and node count, and
 * turning a launcher's job name into a job id fit for shared-memory names. */
#include "runtime/rte_backend.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bm_rte_proc_set_nodes(struct bm_rte_proc *proc, int *node_of)
{
    /* Labels may be sparse (PMI mappings may start blocks anywhere, the
     * host-name fallback uses rank numbers): renumber by first appearance
     * through a label -> number table, O(N + largest label). */
    int max = 0;
    for (int r = 0; r < proc->size; r++)
        max = node_of[r] > max ? node_of[r] : max;
    int *num = malloc(((size_t)max + 1) * sizeof(int));
    int nodes = 0;
    if (num) {
        memset(num, 0xff, ((size_t)max + 1) * sizeof(int)); /* -1: not seen */
        for (int r = 0; r < proc->size; r++) {
            int label = node_of[r] < 0 ? 0 : node_of[r];
            if (num[label] < 0)
                num[label] = nodes++;
            node_of[r] = num[label];
        }
        free(num);
    } else {
        /* No memory for the table: labels stay as they are (still equal
         * exactly when the nodes are); the count is then an upper bound. */
        nodes = max + 1;
    }
    proc->node = node_of[proc->rank];
    proc->num_nodes = nodes;
    proc->local_rank = 0;
    proc->local_size = 0;
    for (int r = 0; r < proc->size; r++) {
        if (node_of[r] != proc->node)
            continue;
        if (r < proc->rank)
            proc->local_rank++;
        proc->local_size++;
    }
}

void bm_rte_jobid_from(const char *prefix, const char *name, char *out, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    char keep[13];
    size_t k = 0;
    for (const char *p = name; *p && k < sizeof(keep) - 1; p++) {
        char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z'))
            keep[k++] = ch;
    }
    keep[k] = '\0';
    snprintf(out, len, "%s%sx%08x", prefix, keep, h);
}
