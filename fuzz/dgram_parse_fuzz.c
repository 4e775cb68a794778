/* libFuzzer target for the dgram transport's receive path. Each input is
 * one datagram. It goes through bm_btl_dgram_parse (framing, lengths,
 * checksum, chunk bounds) and then, with the job key, sender, module
 * indices and checksum patched in when the first input byte asks for it,
 * through bm_btl_dgram_recv_packet on a real module that has an endpoint for
 * the claimed sender, so that the window, ACK, reassembly and RDMA code
 * see hostile input too. Nothing may crash, leak or read out of bounds.
 * Build: cmake -DBM_FUZZ=ON -DCMAKE_C_COMPILER=clang, then run
 * ./dgram_parse_fuzz -max_total_time=60 (see src/btl/dgram/README.md). */
#include "btl/dgram/dgram.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define JOB 0x0123456789abcdefull

static struct bm_btl_dgram_module *mod;
static struct bm_btl_dgram_endpoint *ep;
static volatile uint8_t sink_byte;

static void sink(struct bm_btl_module *m, const struct bm_btl_recv_desc *d, void *cbdata)
{
    (void)m;
    (void)cbdata;
    uint8_t x = 0;
    for (size_t i = 0; i < d->seg[0].len; i++)
        x ^= ((const uint8_t *)d->seg[0].addr)[i];
    sink_byte = x;
}

static void setup(void)
{
    struct bm_btl_dgram_config cfg;
    if (bm_btl_dgram_config_load(&cfg) != BM_OK)
        abort();
    cfg.window = 64;
    cfg.max_send_size = 65536;
    /* Without the MAC check (BM_BTL_DGRAM_AUTH) so that hostile input
     * reaches the window, ACK, reassembly and RDMA code; the MAC check
     * itself is the first thing recv_packet does after parsing. */
    cfg.auth = false;
    if (bm_btl_dgram_module_create(&cfg, "lo", htonl(INADDR_LOOPBACK), htonl(0xff000000u), 65536,
                                   1000, 0, 0, JOB, &mod) != BM_OK)
        abort();
    struct bm_btl_dgram_addr peer = mod->addr; /* the peer "is" ourselves: replies loop back */
    peer.index = 0;
    if (bm_btl_dgram_endpoint_create(mod, 1, &peer, &ep) != BM_OK)
        abort();
    for (int t = 0; t < BM_BTL_TAG_MAX; t++)
        mod->super.recv_cb[t].cb = sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mod)
        setup();
    struct bm_btl_dgram_pkt pkt;
    size_t bad;
    (void)bm_btl_dgram_parse(data, size, &pkt, &bad);
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if ((mode & 1) && size >= sizeof(struct bm_dgram_hdr)) {
        /* make it pass the identity checks so the deeper code runs */
        struct bm_dgram_hdr h;
        memcpy(&h, buf, sizeof(h));
        h.magic = BM_DGRAM_MAGIC;
        h.version = BM_DGRAM_VERSION;
        h.job_key = JOB;
        h.sender = 1;
        h.src_module = 0;
        h.dst_module = 0;
        size_t hl = bm_dgram_hdr_len(h.type);
        if (hl && hl <= size)
            h.payload_len = (uint16_t)(size - hl);
        h.checksum = 0;
        memcpy(buf, &h, sizeof(h));
        if (mode & 2) {
            uint32_t sum = bm_btl_dgram_checksum(buf, size);
            h.checksum = sum ? sum : 1;
            memcpy(buf, &h, sizeof(h));
        }
    }
    int ch = (mode >> 2) & 1;
    mod->now_ns = bm_btl_dgram_now();
    bm_btl_dgram_recv_packet(mod, ch, buf, size, &ep->to[ch]);
    free(buf);
    /* answer what it asked for (ACKs, PONGs, GET data) and drop what comes back */
    bm_btl_dgram_module_progress(mod);
    return 0;
}
