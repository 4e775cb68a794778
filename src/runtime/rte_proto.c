/* Encoding, decoding and blocking socket helpers for the bmrun service
 * protocol described in rte_proto.h. Shared by the rank-side client
 * (rte_bmrun.c), the bmrun controller and its daemons, and the unit tests, so
 * that there is exactly one reading of the wire format. */
#define BM_LOG_SUBSYS "runtime"
#include "runtime/rte_proto.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void bm_rte_proto_hdr_encode(uint8_t out[16], uint16_t type, uint32_t len, uint32_t arg)
{
    bm_rte_proto_put_u32(out, BM_RTE_PROTO_MAGIC);
    bm_rte_proto_put_u16(out + 4, BM_RTE_PROTO_VERSION);
    bm_rte_proto_put_u16(out + 6, type);
    bm_rte_proto_put_u32(out + 8, len);
    bm_rte_proto_put_u32(out + 12, arg);
}

bm_status_t bm_rte_proto_hdr_decode(const uint8_t in[16], struct bm_rte_msg_hdr *hdr_out)
{
    struct bm_rte_msg_hdr h = {
        .magic = bm_rte_proto_get_u32(in),
        .version = bm_rte_proto_get_u16(in + 4),
        .type = bm_rte_proto_get_u16(in + 6),
        .len = bm_rte_proto_get_u32(in + 8),
        .arg = bm_rte_proto_get_u32(in + 12),
    };
    if (h.magic != BM_RTE_PROTO_MAGIC || h.version != BM_RTE_PROTO_VERSION ||
        h.len > BM_RTE_MSG_MAX)
        return BM_ERR_PROTOCOL;
    *hdr_out = h;
    return BM_OK;
}

size_t bm_rte_proto_kv_encode(uint8_t *out, uint32_t rank, const char *key, size_t keylen,
                              const void *val, size_t vallen)
{
    bm_rte_proto_put_u32(out, rank);
    bm_rte_proto_put_u16(out + 4, (uint16_t)keylen);
    bm_rte_proto_put_u16(out + 6, 0);
    bm_rte_proto_put_u32(out + 8, (uint32_t)vallen);
    memcpy(out + sizeof(struct bm_rte_msg_kv), key, keylen);
    if (vallen)
        memcpy(out + sizeof(struct bm_rte_msg_kv) + keylen, val, vallen);
    return bm_rte_proto_kv_size(keylen, vallen);
}

bm_status_t bm_rte_proto_kv_next(const uint8_t *buf, size_t len, size_t *off,
                                 struct bm_rte_kv_view *kv_out)
{
    size_t o = *off;
    if (o == len)
        return BM_ERR_NOT_FOUND;
    if (o > len || len - o < sizeof(struct bm_rte_msg_kv))
        return BM_ERR_PROTOCOL;
    const uint8_t *p = buf + o;
    size_t keylen = bm_rte_proto_get_u16(p + 4);
    size_t vallen = bm_rte_proto_get_u32(p + 8);
    if (keylen == 0 || keylen > BM_RTE_KEY_MAX)
        return BM_ERR_PROTOCOL;
    size_t room = len - o - sizeof(struct bm_rte_msg_kv);
    if (keylen > room || vallen > room - keylen)
        return BM_ERR_PROTOCOL;
    kv_out->rank = bm_rte_proto_get_u32(p);
    kv_out->key = (const char *)p + sizeof(struct bm_rte_msg_kv);
    kv_out->keylen = keylen;
    kv_out->val = p + sizeof(struct bm_rte_msg_kv) + keylen;
    kv_out->vallen = vallen;
    *off = o + bm_rte_proto_kv_size(keylen, vallen);
    return BM_OK;
}

void bm_rte_proto_secret_to_hex(const uint8_t secret[BM_RTE_SECRET_LEN],
                                char hex[2 * BM_RTE_SECRET_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < BM_RTE_SECRET_LEN; i++) {
        hex[2 * i] = digits[secret[i] >> 4];
        hex[2 * i + 1] = digits[secret[i] & 15];
    }
    hex[2 * BM_RTE_SECRET_LEN] = '\0';
}

static int proto_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bm_status_t bm_rte_proto_secret_from_hex(const char *hex, uint8_t secret_out[BM_RTE_SECRET_LEN])
{
    if (!hex || strlen(hex) != 2 * BM_RTE_SECRET_LEN)
        return BM_ERR_BAD_PARAM;
    uint8_t tmp[BM_RTE_SECRET_LEN];
    for (int i = 0; i < BM_RTE_SECRET_LEN; i++) {
        int hi = proto_hexval(hex[2 * i]), lo = proto_hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return BM_ERR_BAD_PARAM;
        tmp[i] = (uint8_t)(hi << 4 | lo);
    }
    memcpy(secret_out, tmp, sizeof(tmp));
    return BM_OK;
}

int bm_rte_proto_secret_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t diff = 0;
    for (int i = 0; i < BM_RTE_SECRET_LEN; i++)
        diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

bm_status_t bm_rte_proto_write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return (errno == EPIPE || errno == ECONNRESET) ? BM_ERR_CONN_RESET : BM_ERR_SYSTEM;
        }
        p += n;
        len -= (size_t)n;
    }
    return BM_OK;
}

bm_status_t bm_rte_proto_read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n == 0)
            return BM_ERR_CONN_RESET;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECONNRESET ? BM_ERR_CONN_RESET : BM_ERR_SYSTEM;
        }
        p += n;
        len -= (size_t)n;
    }
    return BM_OK;
}

bm_status_t bm_rte_proto_send(int fd, uint16_t type, uint32_t arg, const void *payload, size_t len)
{
    if (len > BM_RTE_MSG_MAX)
        return BM_ERR_BAD_PARAM;
    uint8_t hdr[16];
    bm_rte_proto_hdr_encode(hdr, type, (uint32_t)len, arg);
    if (len && len <= 4096) {
        /* One write for small messages keeps them in one segment. */
        uint8_t buf[16 + 4096];
        memcpy(buf, hdr, 16);
        memcpy(buf + 16, payload, len);
        return bm_rte_proto_write_full(fd, buf, 16 + len);
    }
    bm_status_t rc = bm_rte_proto_write_full(fd, hdr, sizeof(hdr));
    if (rc == BM_OK && len)
        rc = bm_rte_proto_write_full(fd, payload, len);
    return rc;
}

bm_status_t bm_rte_proto_recv(int fd, struct bm_rte_msg_hdr *hdr_out, uint8_t **payload_out)
{
    uint8_t raw[16];
    bm_status_t rc = bm_rte_proto_read_full(fd, raw, sizeof(raw));
    if (rc != BM_OK)
        return rc;
    struct bm_rte_msg_hdr h;
    rc = bm_rte_proto_hdr_decode(raw, &h);
    if (rc != BM_OK)
        return rc;
    uint8_t *payload = malloc((size_t)h.len + 1);
    if (!payload)
        return BM_ERR_NO_MEMORY;
    rc = bm_rte_proto_read_full(fd, payload, h.len);
    if (rc != BM_OK) {
        free(payload);
        return rc;
    }
    payload[h.len] = 0;
    *hdr_out = h;
    *payload_out = payload;
    return BM_OK;
}

static int net_connect_one(const struct sockaddr_in *sa, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
        if (errno != EINPROGRESS)
            goto err_close;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int n;
        do {
            n = poll(&pfd, 1, timeout_ms);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) {
            errno = n == 0 ? ETIMEDOUT : errno;
            goto err_close;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            errno = soerr ? soerr : errno;
            goto err_close;
        }
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
err_close:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

bm_status_t bm_rte_net_connect_list(const char *addrs, int timeout_ms, int *fd_out)
{
    if (!addrs || !*addrs)
        return BM_ERR_BAD_PARAM;
    char *copy = strdup(addrs);
    if (!copy)
        return BM_ERR_NO_MEMORY;
    bm_status_t rc = BM_ERR_UNREACHABLE;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        if (!colon)
            continue;
        *colon = '\0';
        struct sockaddr_in sa = {.sin_family = AF_INET};
        long port = strtol(colon + 1, NULL, 10);
        if (port <= 0 || port > 65535 || inet_pton(AF_INET, tok, &sa.sin_addr) != 1)
            continue;
        sa.sin_port = htons((uint16_t)port);
        int fd = net_connect_one(&sa, timeout_ms);
        if (fd >= 0) {
            *fd_out = fd;
            rc = BM_OK;
            break;
        }
        bm_log_debug("connect to %s:%ld failed: %s", tok, port, strerror(errno));
    }
    free(copy);
    return rc;
}
