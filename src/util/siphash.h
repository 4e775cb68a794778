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

/* The same hash over a message given in pieces (a datagram's header and
 * payload, a header with its MAC field read as zeros): init, update with
 * each piece in order, final. The result equals bm_util_siphash24 of the
 * concatenation. */
struct bm_util_siphash {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;  /* bytes of the unfinished word, little-endian */
    size_t ntail;   /* how many (0..7) */
    uint64_t total; /* bytes hashed so far */
};
void bm_util_siphash24_init(struct bm_util_siphash *s, const uint8_t key[16]);
void bm_util_siphash24_update(struct bm_util_siphash *s, const void *msg, size_t len);
uint64_t bm_util_siphash24_final(struct bm_util_siphash *s);

/* Derive a 16-byte key for one purpose from a secret: output word i (of 2)
 * is the SipHash-2-4, under the secret's first 16 bytes, of the label, a
 * zero byte, the rest of the secret and the byte i. SipHash is a PRF, so
 * keys of different labels are independent and reveal nothing of the
 * secret. secret_len >= 16. */
void bm_util_siphash_derive(const uint8_t *secret, size_t secret_len, const char *label,
                            uint8_t key_out[16]);

#endif
