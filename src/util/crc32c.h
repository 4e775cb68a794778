/* CRC-32C (Castagnoli), the checksum of iSCSI, SCTP and ext4: one function,
 * computed with the SSE4.2 crc32 instruction where the CPU has it and with
 * tables otherwise. Both give the same value, so two hosts with different
 * CPUs agree. Chain calls to checksum scattered data: pass the previous
 * result as crc (start with 0). */
#ifndef BM_UTIL_CRC32C_H
#define BM_UTIL_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t bm_util_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table version whatever the CPU (for tests comparing the two). */
uint32_t bm_util_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Whether bm_util_crc32c uses the CPU's crc32 instruction. */
bool bm_util_crc32c_hw(void);

#endif
