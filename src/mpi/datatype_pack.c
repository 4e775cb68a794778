/* Packing (MPI-3.1 4.2 and 4.3): MPI_Pack/MPI_Unpack/MPI_Pack_size, whose
 * format is this machine's packed stream (the same bytes a send of the data
 * carries), and the canonical "external32" representation of
 * MPI_Pack_external/MPI_Unpack_external/MPI_Pack_external_size: every basic
 * element big-endian at the standard's sizes (MPI-3.1 table 13.2), whatever
 * the native ones. Where the sizes differ the value is converted: integers
 * are truncated to (or sign- or zero-extended from) their external size
 * (MPI_LONG is 4 bytes, MPI_WCHAR 2), long double is written as IEEE
 * binary128 (from x87 extended precision on x86), bool as one byte. A value
 * that does not fit is truncated, as MPICH does (the standard leaves it
 * open). */
#include "mpi/mpi_internal.h"
#include "util/dtype.h"

#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* ---- MPI_Pack / MPI_Unpack --------------------------------------------------- */

static int check_pack_args(MPI_Comm comm, int count, MPI_Datatype dt, const void *buf,
                           const void *pos, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_count(comm, count, fn)) || (rc = bm_mpi_check_datatype(comm, dt, fn)) ||
        (rc = bm_mpi_check_buffer(comm, buf, count, dt, fn)))
        return rc;
    if (!pos)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL position pointer");
    return MPI_SUCCESS;
}

int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
              int *position, MPI_Comm comm)
{
    static const char fn[] = "MPI_Pack";
    int rc;
    if ((rc = check_pack_args(comm, incount, datatype, inbuf, position, fn)))
        return rc;
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)incount);
    if (*position < 0 || outsize < 0 || (size_t)*position > (size_t)outsize ||
        bytes > (size_t)(outsize - *position))
        return bm_mpi_error(
            comm, MPI_ERR_TRUNCATE, fn,
            "%zu bytes do not fit at position %d of a %d-byte buffer (MPI_Pack_size "
            "tells how much room to give)",
            bytes, *position, outsize);
    if (bytes && !outbuf)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL output buffer");
    bm_util_dtype_pack(datatype->dt, inbuf, (size_t)incount, 0, (char *)outbuf + *position, bytes);
    *position += (int)bytes;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Pack);

int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                MPI_Datatype datatype, MPI_Comm comm)
{
    static const char fn[] = "MPI_Unpack";
    int rc;
    if ((rc = check_pack_args(comm, outcount, datatype, outbuf, position, fn)))
        return rc;
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)outcount);
    if (*position < 0 || insize < 0 || (size_t)*position > (size_t)insize ||
        bytes > (size_t)(insize - *position))
        return bm_mpi_error(comm, MPI_ERR_TRUNCATE, fn,
                            "%d elements of %s need %zu bytes; the packed buffer has %d bytes from "
                            "position %d",
                            outcount, datatype->name[0] ? datatype->name : "the datatype", bytes,
                            insize - (*position > 0 ? *position : 0), *position);
    if (bytes && !inbuf)
        return bm_mpi_error(comm, MPI_ERR_BUFFER, fn, "NULL input buffer");
    bm_util_dtype_unpack(datatype->dt, outbuf, (size_t)outcount, 0, (const char *)inbuf + *position,
                         bytes);
    *position += (int)bytes;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Unpack);

int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    static const char fn[] = "MPI_Pack_size";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = bm_mpi_check_comm(comm, fn)) ||
        (rc = bm_mpi_check_count(comm, incount, fn)) ||
        (rc = bm_mpi_check_datatype(comm, datatype, fn)))
        return rc;
    if (!size)
        return bm_mpi_error(comm, MPI_ERR_ARG, fn, "NULL size pointer");
    size_t bytes = bm_mpi_type_packed_bytes(datatype, (size_t)incount);
    if (bytes > INT_MAX)
        return bm_mpi_error(comm, MPI_ERR_COUNT, fn,
                            "%d elements pack into %zu bytes, more than an int can say", incount,
                            bytes);
    *size = (int)bytes;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Pack_size);

/* ---- external32 --------------------------------------------------------------- */

enum ext_class {
    EXT_NONE,  /* markers: no data */
    EXT_SINT,  /* signed integer */
    EXT_UINT,  /* unsigned integer (and MPI_BYTE, chars, MPI_PACKED...) */
    EXT_BOOL,  /* one byte, 0 or 1 */
    EXT_FLOAT, /* IEEE float or double: byte order only */
    EXT_LDBL,  /* long double as IEEE binary128 */
    EXT_CPLX,  /* two floats or doubles */
    EXT_LCPLX, /* two long doubles */
    EXT_PAIR,  /* value then index, each by its own type */
    EXT_INT16, /* a 16-byte two's complement integer: byte order only */
};

struct ext_info {
    uint8_t cls;
    uint8_t size; /* external32 bytes of one element */
};

#define EXT(obj, c, s) [BM_MPI_TYPE_ID_##obj] = {c, s}
static const struct ext_info ext_table[BM_MPI_TYPE_ID_COUNT] = {
    EXT(char, EXT_SINT, 1),
    EXT(signed_char, EXT_SINT, 1),
    EXT(unsigned_char, EXT_UINT, 1),
    EXT(byte, EXT_UINT, 1),
    EXT(packed, EXT_UINT, 1),
    EXT(wchar, EXT_UINT, 2),
    EXT(short, EXT_SINT, 2),
    EXT(unsigned_short, EXT_UINT, 2),
    EXT(int, EXT_SINT, 4),
    EXT(unsigned, EXT_UINT, 4),
    EXT(long, EXT_SINT, 4),
    EXT(unsigned_long, EXT_UINT, 4),
    EXT(long_long_int, EXT_SINT, 8),
    EXT(unsigned_long_long, EXT_UINT, 8),
    EXT(float, EXT_FLOAT, 4),
    EXT(double, EXT_FLOAT, 8),
    EXT(long_double, EXT_LDBL, 16),
    EXT(c_bool, EXT_BOOL, 1),
    EXT(int8_t, EXT_SINT, 1),
    EXT(int16_t, EXT_SINT, 2),
    EXT(int32_t, EXT_SINT, 4),
    EXT(int64_t, EXT_SINT, 8),
    EXT(uint8_t, EXT_UINT, 1),
    EXT(uint16_t, EXT_UINT, 2),
    EXT(uint32_t, EXT_UINT, 4),
    EXT(uint64_t, EXT_UINT, 8),
    EXT(aint, EXT_SINT, 8),
    EXT(offset, EXT_SINT, 8),
    EXT(count, EXT_SINT, 8),
    EXT(c_float_complex, EXT_CPLX, 8),
    EXT(c_double_complex, EXT_CPLX, 16),
    EXT(c_long_double_complex, EXT_LCPLX, 32),
    EXT(float_int, EXT_PAIR, 8),
    EXT(double_int, EXT_PAIR, 12),
    EXT(long_int, EXT_PAIR, 8),
    EXT(2int, EXT_PAIR, 8),
    EXT(short_int, EXT_PAIR, 6),
    EXT(long_double_int, EXT_PAIR, 20),
    EXT(character, EXT_UINT, 1),
    EXT(logical, EXT_SINT, 4),
    EXT(integer, EXT_SINT, 4),
    EXT(real, EXT_FLOAT, 4),
    EXT(double_precision, EXT_FLOAT, 8),
    EXT(complex, EXT_CPLX, 8),
    EXT(double_complex, EXT_CPLX, 16),
    EXT(2integer, EXT_PAIR, 8),
    EXT(2real, EXT_PAIR, 8),
    EXT(2double_precision, EXT_PAIR, 16),
    EXT(integer1, EXT_SINT, 1),
    EXT(integer2, EXT_SINT, 2),
    EXT(integer4, EXT_SINT, 4),
    EXT(integer8, EXT_SINT, 8),
    EXT(real4, EXT_FLOAT, 4),
    EXT(real8, EXT_FLOAT, 8),
    EXT(complex8, EXT_CPLX, 8),
    EXT(complex16, EXT_CPLX, 16),
    EXT(cxx_bool, EXT_BOOL, 1),
    EXT(cxx_float_complex, EXT_CPLX, 8),
    EXT(cxx_double_complex, EXT_CPLX, 16),
    EXT(cxx_long_double_complex, EXT_LCPLX, 32),
    EXT(lb, EXT_NONE, 0),
    EXT(ub, EXT_NONE, 0),
#ifdef __SIZEOF_INT128__
    EXT(integer16, EXT_INT16, 16),
#endif
};

static void put_be(unsigned char *out, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const unsigned char *in, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | in[i];
    return v;
}

/* A native integer of n bytes as a 64-bit value (sign-extended if signed). */
static uint64_t native_int_get(const void *p, size_t n, bool sgn)
{
    switch (n) {
    case 1:
        return sgn ? (uint64_t)(int64_t) * (const int8_t *)p : *(const uint8_t *)p;
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return sgn ? (uint64_t)(int64_t)(int16_t)v : v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return sgn ? (uint64_t)(int64_t)(int32_t)v : v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static void native_int_put(void *p, size_t n, uint64_t v)
{
    uint8_t b1 = (uint8_t)v;
    uint16_t b2 = (uint16_t)v;
    uint32_t b4 = (uint32_t)v;
    switch (n) {
    case 1:
        memcpy(p, &b1, 1);
        break;
    case 2:
        memcpy(p, &b2, 2);
        break;
    case 4:
        memcpy(p, &b4, 4);
        break;
    default:
        memcpy(p, &v, 8);
    }
}

/* long double <-> IEEE binary128, big-endian (16 bytes). */
static void ldbl_to_ext(unsigned char *out, const void *in)
{
#if LDBL_MANT_DIG == 64
    /* x87 extended: 64-bit significand with an explicit integer bit, then
     * sign and a 15-bit exponent (same bias as binary128). */
    uint64_t m;
    uint16_t se;
    memcpy(&m, in, 8);
    memcpy(&se, (const char *)in + 8, 2);
    uint64_t frac = m & 0x7fffffffffffffffULL; /* binary128 keeps 63 of its 112 bits */
    put_be(out, se, 2);
    put_be(out + 2, frac >> 15, 6);
    put_be(out + 8, frac << 49, 8);
#elif LDBL_MANT_DIG == 113
    unsigned char b[16];
    memcpy(b, in, 16);
    for (int i = 0; i < 16; i++)
        out[i] = b[15 - i];
#elif LDBL_MANT_DIG == 53
    uint64_t d;
    memcpy(&d, in, 8);
    uint64_t sign = d >> 63, e = (d >> 52) & 0x7ff, f = d & 0xfffffffffffffULL;
    uint64_t qe = e == 0x7ff ? 0x7fff : (e == 0 && f == 0 ? 0 : e - 1023 + 16383);
    /* (double denormals become tiny normals' neighbours: rare, truncated) */
    put_be(out, sign << 15 | qe, 2);
    put_be(out + 2, f >> 4, 6);
    put_be(out + 8, f << 60, 8);
#else
#error "external32: unsupported long double format"
#endif
}

static void ldbl_from_ext(void *outp, const unsigned char *in)
{
#if LDBL_MANT_DIG == 64
    uint16_t se = (uint16_t)get_be(in, 2);
    uint64_t hi = get_be(in + 2, 6), lo = get_be(in + 8, 8);
    uint64_t frac = (hi << 15 | lo >> 49) & 0x7fffffffffffffffULL;
    uint64_t m = frac | ((se & 0x7fff) != 0 ? 0x8000000000000000ULL : 0);
    unsigned char b[sizeof(long double)];
    memset(b, 0, sizeof(b));
    memcpy(b, &m, 8);
    memcpy(b + 8, &se, 2);
    memcpy(outp, b, sizeof(b));
#elif LDBL_MANT_DIG == 113
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = in[15 - i];
    memcpy(outp, b, 16);
#elif LDBL_MANT_DIG == 53
    uint64_t se = get_be(in, 2), hi = get_be(in + 2, 6), lo = get_be(in + 8, 8);
    uint64_t sign = se >> 15, qe = se & 0x7fff;
    uint64_t e = qe == 0x7fff ? 0x7ff : (qe == 0 ? 0 : qe - 16383 + 1023);
    uint64_t d = sign << 63 | e << 52 | ((hi << 4 | lo >> 60) & 0xfffffffffffffULL);
    memcpy(outp, &d, 8);
#endif
}

/* One element of predefined type t between native memory and external32. */
static void ext_one(MPI_Datatype t, void *native, unsigned char *ext, bool pack)
{
    const struct ext_info *x = &ext_table[t->id];
    switch (x->cls) {
    case EXT_NONE:
        return;
    case EXT_SINT:
    case EXT_UINT:
        if (pack)
            put_be(ext, native_int_get(native, t->size, x->cls == EXT_SINT), x->size);
        else {
            uint64_t v = get_be(ext, x->size);
            if (x->cls == EXT_SINT && x->size < 8 && (v >> (8 * x->size - 1)) & 1)
                v |= ~0ULL << (8 * x->size); /* sign-extend */
            native_int_put(native, t->size, v);
        }
        return;
    case EXT_BOOL:
        if (pack)
            ext[0] = *(const unsigned char *)native != 0;
        else
            *(unsigned char *)native = ext[0] != 0;
        return;
    case EXT_FLOAT:
        if (pack)
            put_be(ext, native_int_get(native, t->size, false), t->size);
        else
            native_int_put(native, t->size, get_be(ext, t->size));
        return;
    case EXT_LDBL:
        if (pack)
            ldbl_to_ext(ext, native);
        else
            ldbl_from_ext(native, ext);
        return;
    case EXT_CPLX: {
        size_t h = t->size / 2;
        for (int k = 0; k < 2; k++) {
            if (pack)
                put_be(ext + k * h, native_int_get((char *)native + k * h, h, false), h);
            else
                native_int_put((char *)native + k * h, h, get_be(ext + k * h, h));
        }
        return;
    }
    case EXT_LCPLX:
        for (int k = 0; k < 2; k++) {
            char *n = (char *)native + k * sizeof(long double);
            if (pack)
                ldbl_to_ext(ext + 16 * k, n);
            else
                ldbl_from_ext(n, ext + 16 * k);
        }
        return;
    case EXT_PAIR: {
        MPI_Datatype v, i;
        size_t ioff;
        bm_mpi_type_pair_parts(t, &v, &i, &ioff);
        ext_one(v, native, ext, pack);
        ext_one(i, (char *)native + ioff, ext + ext_table[v->id].size, pack);
        return;
    }
    case EXT_INT16: {
#ifdef __SIZEOF_INT128__
        bm_mpi_uint128 v;
        if (pack) {
            memcpy(&v, native, 16);
            put_be(ext, (uint64_t)(v >> 64), 8);
            put_be(ext + 8, (uint64_t)v, 8);
        } else {
            v = (bm_mpi_uint128)get_be(ext, 8) << 64 | get_be(ext + 8, 8);
            memcpy(native, &v, 16);
        }
#endif
        return;
    }
    }
}

struct ext_walk {
    unsigned char *p;
    bool pack;
    size_t bytes; /* size only: nothing moves */
    bool size_only;
};

static int ext_cb(int basic, char *addr, size_t n, ptrdiff_t stride, void *arg)
{
    struct ext_walk *w = arg;
    MPI_Datatype t = bm_mpi_type_predefined(basic);
    size_t es = ext_table[basic].size;
    if (w->size_only) {
        w->bytes += n * es;
        return 0;
    }
    for (size_t i = 0; i < n; i++, addr += stride, w->p += es)
        ext_one(t, addr, w->p, w->pack);
    return 0;
}

/* external32 bytes of count elements of dt. */
static size_t ext_size(MPI_Datatype dt, size_t count)
{
    struct ext_walk w = {.size_only = true};
    if (count == 0)
        return 0;
    bm_util_dtype_walk(dt->dt, NULL, 1, ext_cb, &w);
    return w.bytes * count;
}

static int check_datarep(const char *datarep, const char *fn)
{
    if (!datarep)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL datarep");
    if (strcmp(datarep, "external32") != 0)
        return bm_mpi_error(NULL, MPI_ERR_UNSUPPORTED_DATAREP, fn,
                            "data representation \"%s\" is not supported (only \"external32\")",
                            datarep);
    return MPI_SUCCESS;
}

static int check_ext_args(const char *datarep, int count, MPI_Datatype dt, const void *buf,
                          const void *pos, const char *fn)
{
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = check_datarep(datarep, fn)) ||
        (rc = bm_mpi_check_count(NULL, count, fn)) || (rc = bm_mpi_check_datatype(NULL, dt, fn)) ||
        (rc = bm_mpi_check_buffer(NULL, buf, count, dt, fn)))
        return rc;
    if (!pos)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL position pointer");
    return MPI_SUCCESS;
}

int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount, MPI_Datatype datatype,
                       void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    static const char fn[] = "MPI_Pack_external";
    int rc;
    if ((rc = check_ext_args(datarep, incount, datatype, inbuf, position, fn)))
        return rc;
    size_t bytes = ext_size(datatype, (size_t)incount);
    if (*position < 0 || outsize < *position || bytes > (size_t)(outsize - *position))
        return bm_mpi_error(NULL, MPI_ERR_TRUNCATE, fn,
                            "%zu bytes do not fit at position %ld of a %ld-byte buffer", bytes,
                            (long)*position, (long)outsize);
    if (bytes && !outbuf)
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn, "NULL output buffer");
    struct ext_walk w = {.p = (unsigned char *)outbuf + *position, .pack = true};
    bm_util_dtype_walk(datatype->dt, inbuf, (size_t)incount, ext_cb, &w);
    *position += (MPI_Aint)bytes;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Pack_external);

int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                         MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)
{
    static const char fn[] = "MPI_Unpack_external";
    int rc;
    if ((rc = check_ext_args(datarep, outcount, datatype, outbuf, position, fn)))
        return rc;
    size_t bytes = ext_size(datatype, (size_t)outcount);
    if (*position < 0 || insize < *position || bytes > (size_t)(insize - *position))
        return bm_mpi_error(NULL, MPI_ERR_TRUNCATE, fn,
                            "%d elements need %zu bytes of external32 data; the buffer has %ld "
                            "from position %ld",
                            outcount, bytes, (long)(insize - *position), (long)*position);
    if (bytes && !inbuf)
        return bm_mpi_error(NULL, MPI_ERR_BUFFER, fn, "NULL input buffer");
    struct ext_walk w = {.p = (unsigned char *)(uintptr_t)inbuf + *position, .pack = false};
    bm_util_dtype_walk(datatype->dt, outbuf, (size_t)outcount, ext_cb, &w);
    *position += (MPI_Aint)bytes;
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Unpack_external);

int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                            MPI_Aint *size)
{
    static const char fn[] = "MPI_Pack_external_size";
    int rc;
    if ((rc = bm_mpi_check_initialized(fn)) || (rc = check_datarep(datarep, fn)) ||
        (rc = bm_mpi_check_count(NULL, incount, fn)) ||
        (rc = bm_mpi_check_datatype(NULL, datatype, fn)))
        return rc;
    if (!size)
        return bm_mpi_error(NULL, MPI_ERR_ARG, fn, "NULL size pointer");
    *size = (MPI_Aint)ext_size(datatype, (size_t)incount);
    return MPI_SUCCESS;
}
BM_MPI_ALIAS(Pack_external_size);
