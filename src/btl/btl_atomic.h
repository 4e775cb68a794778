/* CPU atomics on this process's memory for the transports that carry out
 * the BTL's atomic operations themselves: self (the target is this process)
 * and sm (the target process runs the operation it received). One place
 * defines what each enum bm_btl_atomic_op does, on 32 or 64 bits, so every
 * such transport computes the same result. */
#ifndef BM_BTL_ATOMIC_H
#define BM_BTL_ATOMIC_H

#include "btl/btl.h"

#include <stdint.h>

/* Apply op with operand at addr as one atomic step (a compare-and-swap loop,
 * which also covers min/max and floating add); *old_out gets the previous
 * value. flags: BM_BTL_ATOMIC_OP_F_32BIT for 4 bytes, else 8. BM_OK, or
 * BM_ERR_BAD_PARAM for an unknown op, BM_ERR_NOT_AVAILABLE for an address
 * not aligned to the operand size. */
int bm_btl_atomic_apply(uint64_t addr, enum bm_btl_atomic_op op, uint64_t operand, uint32_t flags,
                        uint64_t *old_out);

/* Store value at addr if it holds compare; *old_out gets what it held.
 * Same flags and alignment rule as bm_btl_atomic_apply. */
int bm_btl_atomic_cswap_apply(uint64_t addr, uint64_t compare, uint64_t value, uint32_t flags,
                              uint64_t *old_out);

/* Write a fetched value to the caller's result buffer (4 or 8 bytes). */
void bm_btl_atomic_store_result(void *local_addr, uint64_t v, uint32_t flags);

#endif
