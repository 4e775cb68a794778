/* Unit test of the bmrun service wire protocol (rte_proto.h): header and
 * entry encoding round trips, rejection of malformed input, secret hex
 * encoding, and the blocking send/recv helpers over a socket pair with a
 * payload larger than the socket buffer. */
#include "bm_test.h"
#include "runtime/rte_proto.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_header(void)
{
    uint8_t raw[16];
    bm_rte_proto_hdr_encode(raw, BM_RTE_MSG_FENCE, 1234, 77);
    /* Big-endian on the wire: magic "BMRT" reads as text. */
    BM_CHECK(memcmp(raw, "BMRT", 4) == 0);
    BM_CHECK_EQ_INT(raw[11], 1234 & 255);
    struct bm_rte_msg_hdr h;
    BM_CHECK_EQ_INT(bm_rte_proto_hdr_decode(raw, &h), BM_OK);
    BM_CHECK_EQ_INT(h.type, BM_RTE_MSG_FENCE);
    BM_CHECK_EQ_INT(h.len, 1234);
    BM_CHECK_EQ_INT(h.arg, 77);
    BM_CHECK_EQ_INT(h.version, BM_RTE_PROTO_VERSION);

    uint8_t bad[16];
    memcpy(bad, raw, 16);
    bad[0] ^= 1;
    BM_CHECK_EQ_INT(bm_rte_proto_hdr_decode(bad, &h), BM_ERR_PROTOCOL);
    memcpy(bad, raw, 16);
    bad[5] = 99; /* version */
    BM_CHECK_EQ_INT(bm_rte_proto_hdr_decode(bad, &h), BM_ERR_PROTOCOL);
    bm_rte_proto_hdr_encode(bad, BM_RTE_MSG_FENCE, BM_RTE_MSG_MAX + 1, 0);
    BM_CHECK_EQ_INT(bm_rte_proto_hdr_decode(bad, &h), BM_ERR_PROTOCOL);
}

static void test_kv(void)
{
    uint8_t buf[256];
    size_t n = 0;
    n += bm_rte_proto_kv_encode(buf + n, 3, "btl.tcp", 7, "addr", 4);
    n += bm_rte_proto_kv_encode(buf + n, 3, "btl.sm", 6, NULL, 0);
    n += bm_rte_proto_kv_encode(buf + n, 70000, "k", 1, "\0\1\2", 3);
    BM_CHECK_EQ_INT(n, bm_rte_proto_kv_size(7, 4) + bm_rte_proto_kv_size(6, 0) +
                           bm_rte_proto_kv_size(1, 3));
    size_t off = 0;
    struct bm_rte_kv_view kv;
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, n, &off, &kv), BM_OK);
    BM_CHECK(kv.rank == 3 && kv.keylen == 7 && memcmp(kv.key, "btl.tcp", 7) == 0);
    BM_CHECK(kv.vallen == 4 && memcmp(kv.val, "addr", 4) == 0);
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, n, &off, &kv), BM_OK);
    BM_CHECK(kv.keylen == 6 && kv.vallen == 0);
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, n, &off, &kv), BM_OK);
    BM_CHECK(kv.rank == 70000 && kv.vallen == 3 && kv.val[2] == 2);
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, n, &off, &kv), BM_ERR_NOT_FOUND);

    /* Every truncation of a valid entry is rejected, never read past. */
    size_t one = bm_rte_proto_kv_encode(buf, 1, "key", 3, "value", 5);
    for (size_t cut = 1; cut < one; cut++) {
        uint8_t *copy = malloc(cut);
        memcpy(copy, buf, cut);
        off = 0;
        BM_CHECK_EQ_INT(bm_rte_proto_kv_next(copy, cut, &off, &kv), BM_ERR_PROTOCOL);
        free(copy);
    }
    /* Empty key and a value length that runs past the buffer. */
    bm_rte_proto_put_u16(buf + 4, 0);
    off = 0;
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, one, &off, &kv), BM_ERR_PROTOCOL);
    bm_rte_proto_put_u16(buf + 4, 3);
    bm_rte_proto_put_u32(buf + 8, 0xffffffffu);
    off = 0;
    BM_CHECK_EQ_INT(bm_rte_proto_kv_next(buf, one, &off, &kv), BM_ERR_PROTOCOL);
}

static void test_secret(void)
{
    uint8_t s[BM_RTE_SECRET_LEN], back[BM_RTE_SECRET_LEN];
    for (int i = 0; i < BM_RTE_SECRET_LEN; i++)
        s[i] = (uint8_t)(i * 37 + 5);
    char hex[2 * BM_RTE_SECRET_LEN + 1];
    bm_rte_proto_secret_to_hex(s, hex);
    BM_CHECK_EQ_INT(strlen(hex), 64);
    BM_CHECK_EQ_INT(bm_rte_proto_secret_from_hex(hex, back), BM_OK);
    BM_CHECK(memcmp(s, back, sizeof(s)) == 0);
    BM_CHECK(bm_rte_proto_secret_equal(s, back));
    back[31] ^= 1;
    BM_CHECK(!bm_rte_proto_secret_equal(s, back));
    hex[10] = 'g';
    BM_CHECK_EQ_INT(bm_rte_proto_secret_from_hex(hex, back), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_rte_proto_secret_from_hex("abcd", back), BM_ERR_BAD_PARAM);
    BM_CHECK_EQ_INT(bm_rte_proto_secret_from_hex(NULL, back), BM_ERR_BAD_PARAM);
}

struct writer {
    int fd;
    uint8_t *data;
    size_t len;
    bm_status_t rc;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    w->rc = bm_rte_proto_send(w->fd, BM_RTE_MSG_FENCE_DONE, 9, w->data, w->len);
    if (w->rc == BM_OK)
        w->rc = bm_rte_proto_send(w->fd, BM_RTE_MSG_BYE, 0, NULL, 0);
    return NULL;
}

static void test_send_recv(void)
{
    int sv[2];
    BM_CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct writer w = {.fd = sv[0], .len = 3u << 20};
    w.data = malloc(w.len);
    for (size_t i = 0; i < w.len; i++)
        w.data[i] = (uint8_t)(i * 7);
    pthread_t t;
    pthread_create(&t, NULL, writer_main, &w);
    struct bm_rte_msg_hdr h;
    uint8_t *payload = NULL;
    BM_CHECK_EQ_INT(bm_rte_proto_recv(sv[1], &h, &payload), BM_OK);
    BM_CHECK_EQ_INT(h.type, BM_RTE_MSG_FENCE_DONE);
    BM_CHECK_EQ_INT(h.arg, 9);
    BM_CHECK_EQ_INT(h.len, w.len);
    BM_CHECK(payload && memcmp(payload, w.data, w.len) == 0);
    free(payload);
    BM_CHECK_EQ_INT(bm_rte_proto_recv(sv[1], &h, &payload), BM_OK);
    BM_CHECK_EQ_INT(h.type, BM_RTE_MSG_BYE);
    BM_CHECK_EQ_INT(h.len, 0);
    free(payload);
    pthread_join(t, NULL);
    BM_CHECK_EQ_INT(w.rc, BM_OK);
    close(sv[0]);
    BM_CHECK_EQ_INT(bm_rte_proto_recv(sv[1], &h, &payload), BM_ERR_CONN_RESET);
    close(sv[1]);
    free(w.data);
}

static void test_connect_list(void)
{
    int fd = -1;
    /* Unparsable entries are skipped; nothing reachable means UNREACHABLE. */
    BM_CHECK_EQ_INT(bm_rte_net_connect_list("junk,1.2.3:0", 100, &fd), BM_ERR_UNREACHABLE);
    BM_CHECK_EQ_INT(bm_rte_net_connect_list("", 100, &fd), BM_ERR_BAD_PARAM);
}

int main(void)
{
    BM_RUN(test_header);
    BM_RUN(test_kv);
    BM_RUN(test_secret);
    BM_RUN(test_send_recv);
    BM_RUN(test_connect_list);
    return bm_test_summary("test_rte_proto");
}
