/* SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit hash that an
 * attacker who does not know the key can neither predict nor forge. The
 * tcp transport proves job membership in its handshake with it (the MAC of
 * the handshake under the peer's secret nonce); it lives here, with the
 * reference vectors in tests/unit/util/test_siphash.c, so that any layer can
 * use the same checked implementation. Not a checksum for data integrity
 * (crc32c.h is faster for that) and not a general-purpose hash table hash
 * (hash.h). */
#ifndef BM_UTIL_SIPHASH_H
#define BM_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* The SipHash-2-4 of len bytes at msg under the 16-byte key, as the
 * reference implementation defines it (key and message read little-endian;
 * the 64-bit result is the reference's 8 output bytes read little-endian).
 * Same value on every host. */
uint64_t bm_util_siphash24(const uint8_t key[16], const void *msg, size_t len);

#endif
