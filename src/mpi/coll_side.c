/* The two sides of a collective call as the builders see them (coll.h,
 * struct bm_coll_side): the user's blocks where they lie when their types
 * are contiguous, or packed one after the other into an engine buffer when
 * a type has gaps, padding or a lower bound (the datatype engine's rule:
 * on the wire a message is its packed data, so that ranks may use
 * different layouts of one type signature). Packing happens in the
 * schedule's first round and unpacking in its last, so nonblocking and
 * persistent runs do it at the right time too. */
#include "mpi/coll.h"

#include <stdlib.h>

static MPI_Datatype type_of(const struct bm_coll_side *sd, int i)
{
    return sd->types ? sd->types[i] : sd->dt;
}

static int count_of(const struct bm_coll_side *sd, int i)
{
    return sd->counts ? sd->counts[i] : sd->count;
}

/* Byte offset of block i in the user's buffer (raw, without the type's
 * own offset). */
static ptrdiff_t user_off(const struct bm_coll_side *sd, int i)
{
    if (sd->adispls)
        return (ptrdiff_t)sd->adispls[i];
    if (sd->bdispls)
        return (ptrdiff_t)sd->bdispls[i];
    if (sd->displs)
        return (ptrdiff_t)sd->displs[i] * (ptrdiff_t)type_of(sd, i)->extent;
    return (ptrdiff_t)i * (ptrdiff_t)sd->count * (ptrdiff_t)(sd->dt ? sd->dt->extent : 0);
}

bool bm_coll_side_layout(struct bm_mpi_sched *s, struct bm_coll_side *sd, int pbuf)
{
    bool per_block = sd->types || sd->bdispls || sd->adispls;
    size_t total = 0;

    sd->packed = false;
    sd->bytes = NULL;
    sd->offs = NULL;
    for (int i = 0; i < sd->n && !sd->packed; i++)
        if (count_of(sd, i) > 0 && !type_of(sd, i)->contiguous)
            sd->packed = true;
    if (!per_block && !sd->packed) {
        /* contiguous: extent == size, blocks where the user put them */
        sd->l = (struct bm_coll_layout){.buf = sd->ubuf,
                                        .esize = sd->dt ? sd->dt->size : 0,
                                        .count = sd->count,
                                        .counts = sd->counts,
                                        .displs = sd->displs};
        return true;
    }
    if (!per_block && !sd->counts) {
        /* uniform and packed: blocks back to back in the packed buffer */
        sd->l = (struct bm_coll_layout){.buf = pbuf, .esize = sd->dt->size, .count = sd->count};
        total = (size_t)sd->n * (size_t)sd->count * sd->dt->size;
    } else {
        sd->bytes = malloc(sizeof(*sd->bytes) * (size_t)(sd->n ? sd->n : 1));
        sd->offs = malloc(sizeof(*sd->offs) * (size_t)(sd->n ? sd->n : 1));
        if (sd->bytes == NULL || sd->offs == NULL) {
            bm_coll_side_free(sd);
            return false;
        }
        for (int i = 0; i < sd->n; i++) {
            int count = count_of(sd, i);
            MPI_Datatype dt = type_of(sd, i);
            sd->bytes[i] = count > 0 ? (size_t)count * dt->size : 0;
            if (sd->packed) {
                sd->offs[i] = (ptrdiff_t)total;
                total += sd->bytes[i];
            } else {
                sd->offs[i] = user_off(sd, i) + (count > 0 ? bm_mpi_type_offset(dt) : 0);
            }
        }
        sd->l = (struct bm_coll_layout){.buf = sd->packed ? pbuf : sd->ubuf,
                                        .esize = sd->dt ? sd->dt->size : 1,
                                        .bytes = sd->bytes,
                                        .offs = sd->offs};
    }
    if (sd->packed && total > s->pbytes[pbuf - BM_SCHED_PSBUF])
        s->pbytes[pbuf - BM_SCHED_PSBUF] = total;
    return true;
}

static void move_block(struct bm_mpi_sched *s, const struct bm_coll_side *sd, int i, bool pack)
{
    int count = count_of(sd, i);

    if (count <= 0)
        return;
    if (pack)
        bm_mpi_sched_pack(s, type_of(sd, i), sd->ubuf, user_off(sd, i), (size_t)count, sd->l.buf,
                          bm_coll_block_off(&sd->l, i));
    else
        bm_mpi_sched_unpack(s, type_of(sd, i), sd->l.buf, bm_coll_block_off(&sd->l, i),
                            (size_t)count, sd->ubuf, user_off(sd, i));
}

void bm_coll_side_pack(struct bm_mpi_sched *s, const struct bm_coll_side *sd, int i)
{
    if (!sd->packed)
        return;
    for (int k = i < 0 ? 0 : i; k < (i < 0 ? sd->n : i + 1); k++)
        move_block(s, sd, k, true);
}

void bm_coll_side_unpack(struct bm_mpi_sched *s, const struct bm_coll_side *sd, int i)
{
    if (!sd->packed)
        return;
    for (int k = i < 0 ? 0 : i; k < (i < 0 ? sd->n : i + 1); k++)
        move_block(s, sd, k, false);
}

void bm_coll_side_free(struct bm_coll_side *sd)
{
    free(sd->bytes);
    free(sd->offs);
    sd->bytes = NULL;
    sd->offs = NULL;
}
