/* mpi.h: the MPI interface of bitmover, for programs written against the MPI
 * standard (version 3.1 names and semantics) so that they compile with bmcc
 * unchanged and run with bmrun. It declares the handle types, the predefined
 * handles (communicators, datatypes, operations, error handlers), the
 * constants, and every MPI_ function bitmover implements, each with its PMPI_
 * twin for profiling tools (MPI_X is a weak alias of PMPI_X inside
 * libbitmover.so, so a tool may define MPI_X and call PMPI_X). Handles are
 * pointers to opaque internal structs and the predefined handles are the
 * addresses of objects exported by the library, so comparing handles with ==
 * works as the standard requires. MPI_Status has the three public fields plus
 * two of bitmover's own: the received byte count and the cancelled flag. This
 * is a plain C header, usable from C99, C11 and C++; only functions that are
 * declared here exist in the library (no silent stubs). */
#ifndef BITMOVER_MPI_H
#define BITMOVER_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BITMOVER_MPI   1
#define MPI_VERSION    3
#define MPI_SUBVERSION 1

#if defined(__GNUC__)
#define BM_MPI_API __attribute__((visibility("default")))
#else
#define BM_MPI_API
#endif

/* ---- Handle and scalar types ------------------------------------------- */

typedef struct bm_mpi_comm *MPI_Comm;
typedef struct bm_mpi_datatype *MPI_Datatype;
typedef struct bm_mpi_op *MPI_Op;
typedef struct bm_mpi_request *MPI_Request;
typedef struct bm_mpi_errhandler *MPI_Errhandler;
typedef struct bm_mpi_group *MPI_Group;
typedef struct bm_mpi_info *MPI_Info;
typedef struct bm_mpi_message *MPI_Message;
/* Files: MPI-IO is not provided, MPI_FILE_NULL is the only file (its error
 * handler is the default one of file operations). */
typedef struct bm_mpi_file *MPI_File;

typedef intptr_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Fint;

/* MPI_SOURCE, MPI_TAG and MPI_ERROR are the standard's fields; bm_count is
 * the received size in bytes of data (MPI_Get_count divides it by the
 * datatype's size) and bm_cancelled is set when a cancel succeeded.
 * Programs must not rely on the bm_ fields. */
typedef struct MPI_Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int bm_cancelled;
    size_t bm_count;
} MPI_Status;

typedef int MPI_Comm_copy_attr_function(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Comm_delete_attr_function(MPI_Comm comm, int comm_keyval, void *attribute_val,
                                          void *extra_state);
/* MPI-1 names of the same callback types. */
typedef MPI_Comm_copy_attr_function MPI_Copy_function;
typedef MPI_Comm_delete_attr_function MPI_Delete_function;
typedef void MPI_User_function(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef int MPI_Type_copy_attr_function(MPI_Datatype oldtype, int type_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Type_delete_attr_function(MPI_Datatype datatype, int type_keyval,
                                          void *attribute_val, void *extra_state);
typedef void MPI_Comm_errhandler_function(MPI_Comm *comm, int *errcode, ...);
/* MPI-2 and MPI-1 names of the same type, still used by older programs. */
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_Comm_errhandler_function MPI_Handler_function;
typedef void MPI_File_errhandler_function(MPI_File *file, int *errcode, ...);
typedef MPI_File_errhandler_function MPI_File_errhandler_fn;
/* Generalized requests (MPI_Grequest_start). */
typedef int MPI_Grequest_query_function(void *extra_state, MPI_Status *status);
typedef int MPI_Grequest_free_function(void *extra_state);
typedef int MPI_Grequest_cancel_function(void *extra_state, int complete);

/* ---- Predefined objects (the handles below are their addresses) -------- */

extern BM_MPI_API struct bm_mpi_comm bm_mpi_comm_world_obj;
extern BM_MPI_API struct bm_mpi_comm bm_mpi_comm_self_obj;
extern BM_MPI_API struct bm_mpi_errhandler bm_mpi_errors_are_fatal_obj;
extern BM_MPI_API struct bm_mpi_errhandler bm_mpi_errors_return_obj;
extern BM_MPI_API struct bm_mpi_group bm_mpi_group_empty_obj;
extern BM_MPI_API struct bm_mpi_message bm_mpi_message_no_proc_obj;
extern BM_MPI_API struct bm_mpi_info bm_mpi_info_env_obj;

#define MPI_COMM_WORLD       (&bm_mpi_comm_world_obj)
#define MPI_COMM_SELF        (&bm_mpi_comm_self_obj)
#define MPI_ERRORS_ARE_FATAL (&bm_mpi_errors_are_fatal_obj)
#define MPI_ERRORS_RETURN    (&bm_mpi_errors_return_obj)

#define MPI_GROUP_EMPTY     (&bm_mpi_group_empty_obj)
#define MPI_COMM_NULL       ((MPI_Comm)0)
#define MPI_DATATYPE_NULL   ((MPI_Datatype)0)
#define MPI_OP_NULL         ((MPI_Op)0)
#define MPI_REQUEST_NULL    ((MPI_Request)0)
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0)
#define MPI_GROUP_NULL      ((MPI_Group)0)
#define MPI_INFO_NULL       ((MPI_Info)0)
#define MPI_INFO_ENV        (&bm_mpi_info_env_obj)
#define MPI_FILE_NULL       ((MPI_File)0)
#define MPI_MESSAGE_NULL    ((MPI_Message)0)
#define MPI_MESSAGE_NO_PROC (&bm_mpi_message_no_proc_obj)

/* Datatypes. Each predefined datatype is an exported object
 * bm_mpi_type_<name>_obj; the list is the same X-macro the library uses. */
#define BM_MPI_PREDEFINED_TYPES(X)                                                                 \
    X(MPI_CHAR, char)                                                                              \
    X(MPI_SIGNED_CHAR, signed_char)                                                                \
    X(MPI_UNSIGNED_CHAR, unsigned_char)                                                            \
    X(MPI_BYTE, byte)                                                                              \
    X(MPI_PACKED, packed)                                                                          \
    X(MPI_WCHAR, wchar)                                                                            \
    X(MPI_SHORT, short)                                                                            \
    X(MPI_UNSIGNED_SHORT, unsigned_short)                                                          \
    X(MPI_INT, int)                                                                                \
    X(MPI_UNSIGNED, unsigned)                                                                      \
    X(MPI_LONG, long)                                                                              \
    X(MPI_UNSIGNED_LONG, unsigned_long)                                                            \
    X(MPI_LONG_LONG_INT, long_long_int)                                                            \
    X(MPI_UNSIGNED_LONG_LONG, unsigned_long_long)                                                  \
    X(MPI_FLOAT, float)                                                                            \
    X(MPI_DOUBLE, double)                                                                          \
    X(MPI_LONG_DOUBLE, long_double)                                                                \
    X(MPI_C_BOOL, c_bool)                                                                          \
    X(MPI_INT8_T, int8_t)                                                                          \
    X(MPI_INT16_T, int16_t)                                                                        \
    X(MPI_INT32_T, int32_t)                                                                        \
    X(MPI_INT64_T, int64_t)                                                                        \
    X(MPI_UINT8_T, uint8_t)                                                                        \
    X(MPI_UINT16_T, uint16_t)                                                                      \
    X(MPI_UINT32_T, uint32_t)                                                                      \
    X(MPI_UINT64_T, uint64_t)                                                                      \
    X(MPI_AINT, aint)                                                                              \
    X(MPI_OFFSET, offset)                                                                          \
    X(MPI_COUNT, count)                                                                            \
    X(MPI_C_FLOAT_COMPLEX, c_float_complex)                                                        \
    X(MPI_C_DOUBLE_COMPLEX, c_double_complex)                                                      \
    X(MPI_C_LONG_DOUBLE_COMPLEX, c_long_double_complex)                                            \
    X(MPI_FLOAT_INT, float_int)                                                                    \
    X(MPI_DOUBLE_INT, double_int)                                                                  \
    X(MPI_LONG_INT, long_int)                                                                      \
    X(MPI_2INT, 2int)                                                                              \
    X(MPI_SHORT_INT, short_int)                                                                    \
    X(MPI_LONG_DOUBLE_INT, long_double_int)                                                        \
    X(MPI_CHARACTER, character)                                                                    \
    X(MPI_LOGICAL, logical)                                                                        \
    X(MPI_INTEGER, integer)                                                                        \
    X(MPI_REAL, real)                                                                              \
    X(MPI_DOUBLE_PRECISION, double_precision)                                                      \
    X(MPI_COMPLEX, complex)                                                                        \
    X(MPI_DOUBLE_COMPLEX, double_complex)                                                          \
    X(MPI_2INTEGER, 2integer)                                                                      \
    X(MPI_2REAL, 2real)                                                                            \
    X(MPI_2DOUBLE_PRECISION, 2double_precision)                                                    \
    X(MPI_INTEGER1, integer1)                                                                      \
    X(MPI_INTEGER2, integer2)                                                                      \
    X(MPI_INTEGER4, integer4)                                                                      \
    X(MPI_INTEGER8, integer8)                                                                      \
    X(MPI_REAL4, real4)                                                                            \
    X(MPI_REAL8, real8)                                                                            \
    X(MPI_COMPLEX8, complex8)                                                                      \
    X(MPI_COMPLEX16, complex16)                                                                    \
    X(MPI_CXX_BOOL, cxx_bool)                                                                      \
    X(MPI_CXX_FLOAT_COMPLEX, cxx_float_complex)                                                    \
    X(MPI_CXX_DOUBLE_COMPLEX, cxx_double_complex)                                                  \
    X(MPI_CXX_LONG_DOUBLE_COMPLEX, cxx_long_double_complex)                                        \
    X(MPI_LB, lb)                                                                                  \
    X(MPI_UB, ub)                                                                                  \
    BM_MPI_TYPES_INT128(X)
/* MPI_INTEGER16 (an optional Fortran type) where the compiler has a 16-byte
 * integer, as MPICH provides it (__int128 on 64-bit gcc and clang). */
#ifdef __SIZEOF_INT128__
#define BM_MPI_TYPES_INT128(X) X(MPI_INTEGER16, integer16)
#else
#define BM_MPI_TYPES_INT128(X)
#endif

#define BM_MPI_TYPE_EXTERN(mpiname, objname)                                                       \
    extern BM_MPI_API struct bm_mpi_datatype bm_mpi_type_##objname##_obj;
BM_MPI_PREDEFINED_TYPES(BM_MPI_TYPE_EXTERN)
#undef BM_MPI_TYPE_EXTERN

#define MPI_CHAR                  (&bm_mpi_type_char_obj)
#define MPI_SIGNED_CHAR           (&bm_mpi_type_signed_char_obj)
#define MPI_UNSIGNED_CHAR         (&bm_mpi_type_unsigned_char_obj)
#define MPI_BYTE                  (&bm_mpi_type_byte_obj)
#define MPI_PACKED                (&bm_mpi_type_packed_obj)
#define MPI_WCHAR                 (&bm_mpi_type_wchar_obj)
#define MPI_SHORT                 (&bm_mpi_type_short_obj)
#define MPI_UNSIGNED_SHORT        (&bm_mpi_type_unsigned_short_obj)
#define MPI_INT                   (&bm_mpi_type_int_obj)
#define MPI_UNSIGNED              (&bm_mpi_type_unsigned_obj)
#define MPI_LONG                  (&bm_mpi_type_long_obj)
#define MPI_UNSIGNED_LONG         (&bm_mpi_type_unsigned_long_obj)
#define MPI_LONG_LONG_INT         (&bm_mpi_type_long_long_int_obj)
#define MPI_LONG_LONG             MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG    (&bm_mpi_type_unsigned_long_long_obj)
#define MPI_FLOAT                 (&bm_mpi_type_float_obj)
#define MPI_DOUBLE                (&bm_mpi_type_double_obj)
#define MPI_LONG_DOUBLE           (&bm_mpi_type_long_double_obj)
#define MPI_C_BOOL                (&bm_mpi_type_c_bool_obj)
#define MPI_INT8_T                (&bm_mpi_type_int8_t_obj)
#define MPI_INT16_T               (&bm_mpi_type_int16_t_obj)
#define MPI_INT32_T               (&bm_mpi_type_int32_t_obj)
#define MPI_INT64_T               (&bm_mpi_type_int64_t_obj)
#define MPI_UINT8_T               (&bm_mpi_type_uint8_t_obj)
#define MPI_UINT16_T              (&bm_mpi_type_uint16_t_obj)
#define MPI_UINT32_T              (&bm_mpi_type_uint32_t_obj)
#define MPI_UINT64_T              (&bm_mpi_type_uint64_t_obj)
#define MPI_AINT                  (&bm_mpi_type_aint_obj)
#define MPI_OFFSET                (&bm_mpi_type_offset_obj)
#define MPI_COUNT                 (&bm_mpi_type_count_obj)
#define MPI_C_FLOAT_COMPLEX       (&bm_mpi_type_c_float_complex_obj)
#define MPI_C_COMPLEX             MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX      (&bm_mpi_type_c_double_complex_obj)
#define MPI_C_LONG_DOUBLE_COMPLEX (&bm_mpi_type_c_long_double_complex_obj)
#define MPI_FLOAT_INT             (&bm_mpi_type_float_int_obj)
#define MPI_DOUBLE_INT            (&bm_mpi_type_double_int_obj)
#define MPI_LONG_INT              (&bm_mpi_type_long_int_obj)
#define MPI_2INT                  (&bm_mpi_type_2int_obj)
#define MPI_SHORT_INT             (&bm_mpi_type_short_int_obj)
#define MPI_LONG_DOUBLE_INT       (&bm_mpi_type_long_double_int_obj)
/* Fortran types a C program may name (mixed-language headers): INTEGER and
 * LOGICAL are C ints, REAL a float, DOUBLE PRECISION a double, CHARACTER a
 * char; COMPLEX and DOUBLE COMPLEX are pairs of REAL and DOUBLE PRECISION. */
#define MPI_CHARACTER         (&bm_mpi_type_character_obj)
#define MPI_LOGICAL           (&bm_mpi_type_logical_obj)
#define MPI_INTEGER           (&bm_mpi_type_integer_obj)
#define MPI_REAL              (&bm_mpi_type_real_obj)
#define MPI_DOUBLE_PRECISION  (&bm_mpi_type_double_precision_obj)
#define MPI_COMPLEX           (&bm_mpi_type_complex_obj)
#define MPI_DOUBLE_COMPLEX    (&bm_mpi_type_double_complex_obj)
#define MPI_2INTEGER          (&bm_mpi_type_2integer_obj)
#define MPI_2REAL             (&bm_mpi_type_2real_obj)
#define MPI_2DOUBLE_PRECISION (&bm_mpi_type_2double_precision_obj)
#define MPI_INTEGER1          (&bm_mpi_type_integer1_obj)
#define MPI_INTEGER2          (&bm_mpi_type_integer2_obj)
#define MPI_INTEGER4          (&bm_mpi_type_integer4_obj)
#define MPI_INTEGER8          (&bm_mpi_type_integer8_obj)
#define MPI_REAL4             (&bm_mpi_type_real4_obj)
#define MPI_REAL8             (&bm_mpi_type_real8_obj)
#define MPI_COMPLEX8          (&bm_mpi_type_complex8_obj)
#define MPI_COMPLEX16         (&bm_mpi_type_complex16_obj)
#define MPI_CXX_BOOL          (&bm_mpi_type_cxx_bool_obj)
/* std::complex<T> has the layout of T _Complex. */
#define MPI_CXX_FLOAT_COMPLEX       (&bm_mpi_type_cxx_float_complex_obj)
#define MPI_CXX_DOUBLE_COMPLEX      (&bm_mpi_type_cxx_double_complex_obj)
#define MPI_CXX_LONG_DOUBLE_COMPLEX (&bm_mpi_type_cxx_long_double_complex_obj)
/* MPI-1 bound markers (removed from MPI-3, still used; as in MPICH's mpi.h):
 * in MPI_Type_struct they set an explicit lower or upper bound. */
#define MPI_LB (&bm_mpi_type_lb_obj)
#define MPI_UB (&bm_mpi_type_ub_obj)
#ifdef __SIZEOF_INT128__
#define MPI_INTEGER16 (&bm_mpi_type_integer16_obj) /* a 16-byte INTEGER (__int128) */
#endif

/* Type constructors' constants (values as in MPICH's mpi.h). */
#define MPI_COMBINER_NAMED            1
#define MPI_COMBINER_DUP              2
#define MPI_COMBINER_CONTIGUOUS       3
#define MPI_COMBINER_VECTOR           4
#define MPI_COMBINER_HVECTOR_INTEGER  5
#define MPI_COMBINER_HVECTOR          6
#define MPI_COMBINER_INDEXED          7
#define MPI_COMBINER_HINDEXED_INTEGER 8
#define MPI_COMBINER_HINDEXED         9
#define MPI_COMBINER_INDEXED_BLOCK    10
#define MPI_COMBINER_STRUCT_INTEGER   11
#define MPI_COMBINER_STRUCT           12
#define MPI_COMBINER_SUBARRAY         13
#define MPI_COMBINER_DARRAY           14
#define MPI_COMBINER_F90_REAL         15
#define MPI_COMBINER_F90_COMPLEX      16
#define MPI_COMBINER_F90_INTEGER      17
#define MPI_COMBINER_RESIZED          18
#define MPI_COMBINER_HINDEXED_BLOCK   19

#define MPI_ORDER_C              56
#define MPI_ORDER_FORTRAN        57
#define MPI_DISTRIBUTE_BLOCK     121
#define MPI_DISTRIBUTE_CYCLIC    122
#define MPI_DISTRIBUTE_NONE      123
#define MPI_DISTRIBUTE_DFLT_DARG (-49767)

#define MPI_TYPECLASS_REAL    1
#define MPI_TYPECLASS_INTEGER 2
#define MPI_TYPECLASS_COMPLEX 3

/* Reduction operations. */
#define BM_MPI_PREDEFINED_OPS(X)                                                                   \
    X(MPI_MAX, max)                                                                                \
    X(MPI_MIN, min)                                                                                \
    X(MPI_SUM, sum)                                                                                \
    X(MPI_PROD, prod)                                                                              \
    X(MPI_LAND, land)                                                                              \
    X(MPI_BAND, band)                                                                              \
    X(MPI_LOR, lor)                                                                                \
    X(MPI_BOR, bor)                                                                                \
    X(MPI_LXOR, lxor)                                                                              \
    X(MPI_BXOR, bxor)                                                                              \
    X(MPI_MAXLOC, maxloc)                                                                          \
    X(MPI_MINLOC, minloc)                                                                          \
    X(MPI_REPLACE, replace)                                                                        \
    X(MPI_NO_OP, no_op)

#define BM_MPI_OP_EXTERN(mpiname, objname)                                                         \
    extern BM_MPI_API struct bm_mpi_op bm_mpi_op_##objname##_obj;
BM_MPI_PREDEFINED_OPS(BM_MPI_OP_EXTERN)
#undef BM_MPI_OP_EXTERN

#define MPI_MAX     (&bm_mpi_op_max_obj)
#define MPI_MIN     (&bm_mpi_op_min_obj)
#define MPI_SUM     (&bm_mpi_op_sum_obj)
#define MPI_PROD    (&bm_mpi_op_prod_obj)
#define MPI_LAND    (&bm_mpi_op_land_obj)
#define MPI_BAND    (&bm_mpi_op_band_obj)
#define MPI_LOR     (&bm_mpi_op_lor_obj)
#define MPI_BOR     (&bm_mpi_op_bor_obj)
#define MPI_LXOR    (&bm_mpi_op_lxor_obj)
#define MPI_BXOR    (&bm_mpi_op_bxor_obj)
#define MPI_MAXLOC  (&bm_mpi_op_maxloc_obj)
#define MPI_MINLOC  (&bm_mpi_op_minloc_obj)
#define MPI_REPLACE (&bm_mpi_op_replace_obj)
#define MPI_NO_OP   (&bm_mpi_op_no_op_obj)

/* Attribute callbacks: copy nothing, delete nothing, or copy the value. */
BM_MPI_API int bm_mpi_comm_dup_fn(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                  void *attribute_val_in, void *attribute_val_out, int *flag);
#define MPI_COMM_NULL_COPY_FN   ((MPI_Comm_copy_attr_function *)0)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0)
#define MPI_COMM_DUP_FN         bm_mpi_comm_dup_fn
BM_MPI_API int bm_mpi_type_dup_fn(MPI_Datatype oldtype, int type_keyval, void *extra_state,
                                  void *attribute_val_in, void *attribute_val_out, int *flag);
#define MPI_TYPE_NULL_COPY_FN   ((MPI_Type_copy_attr_function *)0)
#define MPI_TYPE_NULL_DELETE_FN ((MPI_Type_delete_attr_function *)0)
#define MPI_TYPE_DUP_FN         bm_mpi_type_dup_fn
#define MPI_NULL_COPY_FN        MPI_COMM_NULL_COPY_FN
#define MPI_NULL_DELETE_FN      MPI_COMM_NULL_DELETE_FN
#define MPI_DUP_FN              MPI_COMM_DUP_FN

/* ---- Constants --------------------------------------------------------- */

#define MPI_ANY_SOURCE     (-1)
#define MPI_PROC_NULL      (-2)
#define MPI_ROOT           (-4)
#define MPI_ANY_TAG        (-1)
#define MPI_UNDEFINED      (-32766)
#define MPI_KEYVAL_INVALID (-1)

#define MPI_STATUS_IGNORE   ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_ERRCODES_IGNORE ((int *)0)
#define MPI_BOTTOM          ((void *)0)
/* Distinct from every valid buffer and from MPI_BOTTOM. */
#define MPI_IN_PLACE ((void *)1)

#define MPI_MAX_PROCESSOR_NAME         256
#define MPI_MAX_ERROR_STRING           256
#define MPI_MAX_INFO_KEY               255
#define MPI_MAX_INFO_VAL               1024
#define MPI_MAX_OBJECT_NAME            64
#define MPI_MAX_LIBRARY_VERSION_STRING 256
/* Bytes MPI_Bsend needs per message on top of the data, for MPI_Buffer_attach sizing. */
#define MPI_BSEND_OVERHEAD 128

/* Thread support levels, ordered. */
#define MPI_THREAD_SINGLE     0
#define MPI_THREAD_FUNNELED   1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE   3

/* MPI_Comm_compare results. */
#define MPI_IDENT     0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR   2
#define MPI_UNEQUAL   3

/* MPI_Topo_test results. */
#define MPI_GRAPH      1
#define MPI_CART       2
#define MPI_DIST_GRAPH 3

/* Weights of MPI_Dist_graph_create_adjacent: none, or an empty list. */
extern BM_MPI_API int bm_mpi_unweighted_obj;
extern BM_MPI_API int bm_mpi_weights_empty_obj;
#define MPI_UNWEIGHTED    (&bm_mpi_unweighted_obj)
#define MPI_WEIGHTS_EMPTY (&bm_mpi_weights_empty_obj)

/* MPI_Comm_split_type split types. */
#define MPI_COMM_TYPE_SHARED 1

/* Predefined attribute keys for MPI_Comm_get_attr (the value is an int *). */
#define MPI_TAG_UB          1
#define MPI_HOST            2
#define MPI_IO              3
#define MPI_WTIME_IS_GLOBAL 4
#define MPI_UNIVERSE_SIZE   5
#define MPI_APPNUM          6
#define MPI_LASTUSEDCODE    7

/* Error classes. Error codes returned by bitmover are error classes. */
#define MPI_SUCCESS                   0
#define MPI_ERR_BUFFER                1
#define MPI_ERR_COUNT                 2
#define MPI_ERR_TYPE                  3
#define MPI_ERR_TAG                   4
#define MPI_ERR_COMM                  5
#define MPI_ERR_RANK                  6
#define MPI_ERR_REQUEST               7
#define MPI_ERR_ROOT                  8
#define MPI_ERR_GROUP                 9
#define MPI_ERR_OP                    10
#define MPI_ERR_TOPOLOGY              11
#define MPI_ERR_DIMS                  12
#define MPI_ERR_ARG                   13
#define MPI_ERR_UNKNOWN               14
#define MPI_ERR_TRUNCATE              15
#define MPI_ERR_OTHER                 16
#define MPI_ERR_INTERN                17
#define MPI_ERR_IN_STATUS             18
#define MPI_ERR_PENDING               19
#define MPI_ERR_ACCESS                20
#define MPI_ERR_AMODE                 21
#define MPI_ERR_ASSERT                22
#define MPI_ERR_BAD_FILE              23
#define MPI_ERR_BASE                  24
#define MPI_ERR_CONVERSION            25
#define MPI_ERR_DISP                  26
#define MPI_ERR_DUP_DATAREP           27
#define MPI_ERR_FILE_EXISTS           28
#define MPI_ERR_FILE_IN_USE           29
#define MPI_ERR_FILE                  30
#define MPI_ERR_INFO_KEY              31
#define MPI_ERR_INFO_NOKEY            32
#define MPI_ERR_INFO_VALUE            33
#define MPI_ERR_INFO                  34
#define MPI_ERR_IO                    35
#define MPI_ERR_KEYVAL                36
#define MPI_ERR_LOCKTYPE              37
#define MPI_ERR_NAME                  38
#define MPI_ERR_NO_MEM                39
#define MPI_ERR_NOT_SAME              40
#define MPI_ERR_NO_SPACE              41
#define MPI_ERR_NO_SUCH_FILE          42
#define MPI_ERR_PORT                  43
#define MPI_ERR_QUOTA                 44
#define MPI_ERR_READ_ONLY             45
#define MPI_ERR_RMA_CONFLICT          46
#define MPI_ERR_RMA_SYNC              47
#define MPI_ERR_SERVICE               48
#define MPI_ERR_SIZE                  49
#define MPI_ERR_SPAWN                 50
#define MPI_ERR_UNSUPPORTED_DATAREP   51
#define MPI_ERR_UNSUPPORTED_OPERATION 52
#define MPI_ERR_WIN                   53
#define MPI_ERR_RMA_RANGE             54
#define MPI_ERR_RMA_ATTACH            55
#define MPI_ERR_RMA_SHARED            56
#define MPI_ERR_RMA_FLAVOR            57
/* The tool information interface's classes (MPI_T_* functions return them). */
#define MPI_T_ERR_MEMORY            58
#define MPI_T_ERR_NOT_INITIALIZED   59
#define MPI_T_ERR_CANNOT_INIT       60
#define MPI_T_ERR_INVALID_INDEX     61
#define MPI_T_ERR_INVALID_ITEM      62
#define MPI_T_ERR_INVALID_HANDLE    63
#define MPI_T_ERR_OUT_OF_HANDLES    64
#define MPI_T_ERR_OUT_OF_SESSIONS   65
#define MPI_T_ERR_INVALID_SESSION   66
#define MPI_T_ERR_CVAR_SET_NOT_NOW  67
#define MPI_T_ERR_CVAR_SET_NEVER    68
#define MPI_T_ERR_PVAR_NO_STARTSTOP 69
#define MPI_T_ERR_PVAR_NO_WRITE     70
#define MPI_T_ERR_PVAR_NO_ATOMIC    71
#define MPI_T_ERR_INVALID_NAME      72
#define MPI_T_ERR_INVALID           73
#define MPI_ERR_LASTCODE            73

/* ---- Functions --------------------------------------------------------- */

BM_MPI_API double MPI_Wtime(void);
BM_MPI_API double PMPI_Wtime(void);
BM_MPI_API double MPI_Wtick(void);
BM_MPI_API double PMPI_Wtick(void);

/* init.c */
BM_MPI_API int MPI_Init(int *argc, char ***argv);
BM_MPI_API int PMPI_Init(int *argc, char ***argv);
BM_MPI_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
BM_MPI_API int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided);
BM_MPI_API int MPI_Finalize(void);
BM_MPI_API int PMPI_Finalize(void);
BM_MPI_API int MPI_Initialized(int *flag);
BM_MPI_API int PMPI_Initialized(int *flag);
BM_MPI_API int MPI_Finalized(int *flag);
BM_MPI_API int PMPI_Finalized(int *flag);
BM_MPI_API int MPI_Abort(MPI_Comm comm, int errorcode);
BM_MPI_API int PMPI_Abort(MPI_Comm comm, int errorcode);
BM_MPI_API int MPI_Query_thread(int *provided);
BM_MPI_API int PMPI_Query_thread(int *provided);
BM_MPI_API int MPI_Is_thread_main(int *flag);
BM_MPI_API int PMPI_Is_thread_main(int *flag);
BM_MPI_API int MPI_Get_processor_name(char *name, int *resultlen);
BM_MPI_API int PMPI_Get_processor_name(char *name, int *resultlen);
BM_MPI_API int MPI_Get_version(int *version, int *subversion);
BM_MPI_API int PMPI_Get_version(int *version, int *subversion);
BM_MPI_API int MPI_Get_library_version(char *version, int *resultlen);
BM_MPI_API int PMPI_Get_library_version(char *version, int *resultlen);
BM_MPI_API int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
BM_MPI_API int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
BM_MPI_API int MPI_Free_mem(void *base);
BM_MPI_API int PMPI_Free_mem(void *base);
BM_MPI_API int MPI_Pcontrol(const int level, ...);
BM_MPI_API int PMPI_Pcontrol(const int level, ...);

/* errhandler.c */
BM_MPI_API int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function,
                                          MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function,
                                           MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
BM_MPI_API int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
BM_MPI_API int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
BM_MPI_API int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
BM_MPI_API int MPI_Errhandler_free(MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Errhandler_free(MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Error_string(int errorcode, char *string, int *resultlen);
BM_MPI_API int PMPI_Error_string(int errorcode, char *string, int *resultlen);
BM_MPI_API int MPI_Error_class(int errorcode, int *errorclass);
BM_MPI_API int PMPI_Error_class(int errorcode, int *errorclass);
BM_MPI_API int MPI_Add_error_class(int *errorclass);
BM_MPI_API int PMPI_Add_error_class(int *errorclass);
BM_MPI_API int MPI_Add_error_code(int errorclass, int *errorcode);
BM_MPI_API int PMPI_Add_error_code(int errorclass, int *errorcode);
BM_MPI_API int MPI_Add_error_string(int errorcode, const char *string);
BM_MPI_API int PMPI_Add_error_string(int errorcode, const char *string);
BM_MPI_API int MPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
BM_MPI_API int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
BM_MPI_API int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler);
BM_MPI_API int MPI_File_create_errhandler(MPI_File_errhandler_function *function,
                                          MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_File_create_errhandler(MPI_File_errhandler_function *function,
                                           MPI_Errhandler *errhandler);
BM_MPI_API int MPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler);
BM_MPI_API int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler);
BM_MPI_API int MPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler);
BM_MPI_API int MPI_File_call_errhandler(MPI_File fh, int errorcode);
BM_MPI_API int PMPI_File_call_errhandler(MPI_File fh, int errorcode);

/* comm.c */
BM_MPI_API int MPI_Comm_rank(MPI_Comm comm, int *rank);
BM_MPI_API int PMPI_Comm_rank(MPI_Comm comm, int *rank);
BM_MPI_API int MPI_Comm_size(MPI_Comm comm, int *size);
BM_MPI_API int PMPI_Comm_size(MPI_Comm comm, int *size);
BM_MPI_API int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
BM_MPI_API int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result);
BM_MPI_API int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
BM_MPI_API int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
BM_MPI_API int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
BM_MPI_API int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag);
BM_MPI_API int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
BM_MPI_API int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen);
BM_MPI_API int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
BM_MPI_API int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
BM_MPI_API int MPI_Comm_test_inter(MPI_Comm comm, int *flag);
BM_MPI_API int PMPI_Comm_test_inter(MPI_Comm comm, int *flag);
BM_MPI_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
BM_MPI_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
BM_MPI_API int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                    MPI_Comm *newcomm);
BM_MPI_API int MPI_Comm_free(MPI_Comm *comm);
BM_MPI_API int PMPI_Comm_free(MPI_Comm *comm);
BM_MPI_API int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
BM_MPI_API int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info);
BM_MPI_API int MPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);
BM_MPI_API int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used);
BM_MPI_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
BM_MPI_API int MPI_Comm_disconnect(MPI_Comm *comm);
BM_MPI_API int PMPI_Comm_disconnect(MPI_Comm *comm);
BM_MPI_API int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);
BM_MPI_API int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request);

/* intercomm.c */
BM_MPI_API int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                    int remote_leader, int tag, MPI_Comm *newintercomm);
BM_MPI_API int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                     int remote_leader, int tag, MPI_Comm *newintercomm);
BM_MPI_API int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
BM_MPI_API int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm);
BM_MPI_API int MPI_Comm_remote_size(MPI_Comm comm, int *size);
BM_MPI_API int PMPI_Comm_remote_size(MPI_Comm comm, int *size);
BM_MPI_API int MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);
BM_MPI_API int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group);

/* attr.c */
BM_MPI_API int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                      MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                                      int *comm_keyval, void *extra_state);
BM_MPI_API int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                       MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                                       int *comm_keyval, void *extra_state);
BM_MPI_API int MPI_Comm_free_keyval(int *comm_keyval);
BM_MPI_API int PMPI_Comm_free_keyval(int *comm_keyval);
BM_MPI_API int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
BM_MPI_API int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val);
BM_MPI_API int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
BM_MPI_API int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval);
BM_MPI_API int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                 int *keyval, void *extra_state);
BM_MPI_API int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                  int *keyval, void *extra_state);
BM_MPI_API int MPI_Keyval_free(int *keyval);
BM_MPI_API int PMPI_Keyval_free(int *keyval);
BM_MPI_API int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
BM_MPI_API int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val);
BM_MPI_API int MPI_Attr_delete(MPI_Comm comm, int keyval);
BM_MPI_API int PMPI_Attr_delete(MPI_Comm comm, int keyval);

/* info.c */
BM_MPI_API int MPI_Info_create(MPI_Info *info);
BM_MPI_API int PMPI_Info_create(MPI_Info *info);
BM_MPI_API int MPI_Info_set(MPI_Info info, const char *key, const char *value);
BM_MPI_API int PMPI_Info_set(MPI_Info info, const char *key, const char *value);
BM_MPI_API int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
BM_MPI_API int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
BM_MPI_API int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
BM_MPI_API int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag);
BM_MPI_API int MPI_Info_delete(MPI_Info info, const char *key);
BM_MPI_API int PMPI_Info_delete(MPI_Info info, const char *key);
BM_MPI_API int MPI_Info_get_nkeys(MPI_Info info, int *nkeys);
BM_MPI_API int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys);
BM_MPI_API int MPI_Info_get_nthkey(MPI_Info info, int n, char *key);
BM_MPI_API int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key);
BM_MPI_API int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
BM_MPI_API int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo);
BM_MPI_API int MPI_Info_free(MPI_Info *info);
BM_MPI_API int PMPI_Info_free(MPI_Info *info);

/* topo.c */
BM_MPI_API int MPI_Dims_create(int nnodes, int ndims, int dims[]);
BM_MPI_API int PMPI_Dims_create(int nnodes, int ndims, int dims[]);
BM_MPI_API int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                            int *newrank);
BM_MPI_API int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[],
                             int *newrank);
BM_MPI_API int MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                             int *newrank);
BM_MPI_API int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[],
                              int *newrank);
BM_MPI_API int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                               int reorder, MPI_Comm *comm_cart);
BM_MPI_API int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                                int reorder, MPI_Comm *comm_cart);
BM_MPI_API int MPI_Topo_test(MPI_Comm comm, int *status);
BM_MPI_API int PMPI_Topo_test(MPI_Comm comm, int *status);
BM_MPI_API int MPI_Cartdim_get(MPI_Comm comm, int *ndims);
BM_MPI_API int PMPI_Cartdim_get(MPI_Comm comm, int *ndims);
BM_MPI_API int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
BM_MPI_API int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]);
BM_MPI_API int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
BM_MPI_API int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank);
BM_MPI_API int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
BM_MPI_API int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
BM_MPI_API int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
                              int *rank_dest);
BM_MPI_API int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source,
                               int *rank_dest);
BM_MPI_API int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);
BM_MPI_API int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm);

/* topo_graph.c */
BM_MPI_API int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[],
                                int reorder, MPI_Comm *comm_graph);
BM_MPI_API int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[],
                                 const int edges[], int reorder, MPI_Comm *comm_graph);
BM_MPI_API int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                              const int sourceweights[], int outdegree,
                                              const int destinations[], const int destweights[],
                                              MPI_Info info, int reorder,
                                              MPI_Comm *comm_dist_graph);
BM_MPI_API int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                               const int sourceweights[], int outdegree,
                                               const int destinations[], const int destweights[],
                                               MPI_Info info, int reorder,
                                               MPI_Comm *comm_dist_graph);
BM_MPI_API int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                                     const int degrees[], const int destinations[],
                                     const int weights[], MPI_Info info, int reorder,
                                     MPI_Comm *comm_dist_graph);
BM_MPI_API int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[],
                                      const int degrees[], const int destinations[],
                                      const int weights[], MPI_Info info, int reorder,
                                      MPI_Comm *comm_dist_graph);
BM_MPI_API int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges);
BM_MPI_API int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges);
BM_MPI_API int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]);
BM_MPI_API int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]);
BM_MPI_API int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors);
BM_MPI_API int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors);
BM_MPI_API int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]);
BM_MPI_API int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]);
BM_MPI_API int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
                                              int *weighted);
BM_MPI_API int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree,
                                               int *weighted);
BM_MPI_API int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
                                        int sourceweights[], int maxoutdegree, int destinations[],
                                        int destweights[]);
BM_MPI_API int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[],
                                         int sourceweights[], int maxoutdegree, int destinations[],
                                         int destweights[]);
BM_MPI_API int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm);
BM_MPI_API int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm);
BM_MPI_API int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm);
BM_MPI_API int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm);

BM_MPI_API int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, const int recvcounts[], const int displs[],
                                        MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                                      const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                      void *recvbuf, const int recvcounts[],
                                      const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                      MPI_Comm comm);
BM_MPI_API int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                       void *recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                       MPI_Comm comm);
/* group.c */
BM_MPI_API int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
BM_MPI_API int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group);
BM_MPI_API int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm);
BM_MPI_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
BM_MPI_API int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm);
BM_MPI_API int MPI_Group_size(MPI_Group group, int *size);
BM_MPI_API int PMPI_Group_size(MPI_Group group, int *size);
BM_MPI_API int MPI_Group_rank(MPI_Group group, int *rank);
BM_MPI_API int PMPI_Group_rank(MPI_Group group, int *rank);
BM_MPI_API int MPI_Group_free(MPI_Group *group);
BM_MPI_API int PMPI_Group_free(MPI_Group *group);
BM_MPI_API int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                                         MPI_Group group2, int ranks2[]);
BM_MPI_API int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                                          MPI_Group group2, int ranks2[]);
BM_MPI_API int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
BM_MPI_API int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result);
BM_MPI_API int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
BM_MPI_API int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup);
BM_MPI_API int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
BM_MPI_API int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
BM_MPI_API int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
BM_MPI_API int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
BM_MPI_API int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);
BM_MPI_API int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup);

/* datatype.c */
BM_MPI_API int MPI_Type_size(MPI_Datatype datatype, int *size);
BM_MPI_API int PMPI_Type_size(MPI_Datatype datatype, int *size);
BM_MPI_API int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);
BM_MPI_API int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);
BM_MPI_API int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
BM_MPI_API int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
BM_MPI_API int MPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);
BM_MPI_API int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent);
BM_MPI_API int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                                        MPI_Aint *true_extent);
BM_MPI_API int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                                         MPI_Aint *true_extent);
BM_MPI_API int MPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
BM_MPI_API int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen);
BM_MPI_API int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
BM_MPI_API int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
BM_MPI_API int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype,
                                  MPI_Count *count);
BM_MPI_API int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype,
                                   MPI_Count *count);
BM_MPI_API int MPI_Get_address(const void *location, MPI_Aint *address);
BM_MPI_API int PMPI_Get_address(const void *location, MPI_Aint *address);

BM_MPI_API int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_commit(MPI_Datatype *datatype);
BM_MPI_API int PMPI_Type_commit(MPI_Datatype *datatype);
BM_MPI_API int MPI_Type_free(MPI_Datatype *datatype);
BM_MPI_API int PMPI_Type_free(MPI_Datatype *datatype);
BM_MPI_API int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
BM_MPI_API int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name);
BM_MPI_API int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                               MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                                MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                                       MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                                        MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_indexed(int count, const int array_of_blocklengths[],
                                const int array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                                 const int array_of_displacements[], MPI_Datatype oldtype,
                                 MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                        const MPI_Aint array_of_displacements[],
                                        MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                         const MPI_Aint array_of_displacements[],
                                         MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_hindexed(int count, const int array_of_blocklengths[],
                                 const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                 MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_hindexed(int count, const int array_of_blocklengths[],
                                  const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_indexed_block(int count, int blocklength,
                                             const int array_of_displacements[],
                                             MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_indexed_block(int count, int blocklength,
                                              const int array_of_displacements[],
                                              MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_hindexed_block(int count, int blocklength,
                                              const MPI_Aint array_of_displacements[],
                                              MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                               const MPI_Aint array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_struct(int count, const int array_of_blocklengths[],
                                      const MPI_Aint array_of_displacements[],
                                      const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                                       const MPI_Aint array_of_displacements[],
                                       const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_struct(int count, const int array_of_blocklengths[],
                               const MPI_Aint array_of_displacements[],
                               const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_struct(int count, const int array_of_blocklengths[],
                                const MPI_Aint array_of_displacements[],
                                const MPI_Datatype array_of_types[], MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_subarray(int ndims, const int array_of_sizes[],
                                        const int array_of_subsizes[], const int array_of_starts[],
                                        int order, MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[],
                                         const int array_of_subsizes[], const int array_of_starts[],
                                         int order, MPI_Datatype oldtype, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                                      const int array_of_distribs[], const int array_of_dargs[],
                                      const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                      MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                                       const int array_of_distribs[], const int array_of_dargs[],
                                       const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                       MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                       MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                        MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                                          MPI_Count *true_extent);
BM_MPI_API int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                                           MPI_Count *true_extent);
BM_MPI_API int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
BM_MPI_API int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
BM_MPI_API int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement);
BM_MPI_API int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement);
BM_MPI_API int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement);
BM_MPI_API int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement);
BM_MPI_API int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                     int *num_datatypes, int *combiner);
BM_MPI_API int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                      int *num_datatypes, int *combiner);
BM_MPI_API int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                                     int max_datatypes, int array_of_integers[],
                                     MPI_Aint array_of_addresses[],
                                     MPI_Datatype array_of_datatypes[]);
BM_MPI_API int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                                      int max_datatypes, int array_of_integers[],
                                      MPI_Aint array_of_addresses[],
                                      MPI_Datatype array_of_datatypes[]);
BM_MPI_API int MPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype);
BM_MPI_API int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype);
BM_MPI_API int MPI_Type_create_f90_integer(int r, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype);
BM_MPI_API int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype);
BM_MPI_API int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                                      MPI_Type_delete_attr_function *type_delete_attr_fn,
                                      int *type_keyval, void *extra_state);
BM_MPI_API int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                                       MPI_Type_delete_attr_function *type_delete_attr_fn,
                                       int *type_keyval, void *extra_state);
BM_MPI_API int MPI_Type_free_keyval(int *type_keyval);
BM_MPI_API int PMPI_Type_free_keyval(int *type_keyval);
BM_MPI_API int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
BM_MPI_API int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val);
BM_MPI_API int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val,
                                 int *flag);
BM_MPI_API int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val,
                                  int *flag);
BM_MPI_API int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
BM_MPI_API int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval);
BM_MPI_API int MPI_Address(void *location, MPI_Aint *address);
BM_MPI_API int PMPI_Address(void *location, MPI_Aint *address);
BM_MPI_API MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
BM_MPI_API MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp);
BM_MPI_API MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);
BM_MPI_API MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);
BM_MPI_API int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                        int outsize, int *position, MPI_Comm comm);
BM_MPI_API int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                         int outsize, int *position, MPI_Comm comm);
BM_MPI_API int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                          MPI_Datatype datatype, MPI_Comm comm);
BM_MPI_API int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                           MPI_Datatype datatype, MPI_Comm comm);
BM_MPI_API int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);
BM_MPI_API int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size);
BM_MPI_API int MPI_Pack_external(const char datarep[], const void *inbuf, int incount,
                                 MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                                 MPI_Aint *position);
BM_MPI_API int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount,
                                  MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                                  MPI_Aint *position);
BM_MPI_API int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                                   MPI_Aint *position, void *outbuf, int outcount,
                                   MPI_Datatype datatype);
BM_MPI_API int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                                    MPI_Aint *position, void *outbuf, int outcount,
                                    MPI_Datatype datatype);
BM_MPI_API int MPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                                      MPI_Aint *size);
BM_MPI_API int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                                       MPI_Aint *size);
/* op.c */
BM_MPI_API int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
BM_MPI_API int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
BM_MPI_API int MPI_Op_free(MPI_Op *op);
BM_MPI_API int PMPI_Op_free(MPI_Op *op);
BM_MPI_API int MPI_Op_commutative(MPI_Op op, int *commute);
BM_MPI_API int PMPI_Op_commutative(MPI_Op op, int *commute);
BM_MPI_API int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                                MPI_Op op);
BM_MPI_API int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op);

/* coll.c */
BM_MPI_API int MPI_Barrier(MPI_Comm comm);
BM_MPI_API int PMPI_Barrier(MPI_Comm comm);
BM_MPI_API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
BM_MPI_API int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
BM_MPI_API int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm);
BM_MPI_API int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, int root, MPI_Comm comm);
BM_MPI_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm);
BM_MPI_API int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm);

BM_MPI_API int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm);
BM_MPI_API int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm);
BM_MPI_API int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm);
BM_MPI_API int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm);
BM_MPI_API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BM_MPI_API int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BM_MPI_API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BM_MPI_API int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BM_MPI_API int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm);
BM_MPI_API int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm);
BM_MPI_API int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm);
BM_MPI_API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const int recvcounts[], const int displs[],
                               MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
BM_MPI_API int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                             const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
BM_MPI_API int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);

/* coll_api.c, coll_neighbor.c: nonblocking collectives (MPI-3.1) and persistent
 * collectives (MPI-4.0, started with MPI_Start/MPI_Startall) */
BM_MPI_API int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          MPI_Request *request);
BM_MPI_API int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                           MPI_Request *request);
BM_MPI_API int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Request *request);
BM_MPI_API int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                             MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                              MPI_Datatype sendtype, void *recvbuf, int recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request);
BM_MPI_API int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request);
BM_MPI_API int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const int recvcounts[], const int displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int displs[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request);
BM_MPI_API int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request);
BM_MPI_API int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request);
BM_MPI_API int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                               MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                               const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request);
BM_MPI_API int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                              const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                              MPI_Request *request);
BM_MPI_API int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                               const MPI_Datatype sendtypes[], void *recvbuf,
                               const int recvcounts[], const int rdispls[],
                               const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request *request);
BM_MPI_API int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request);
BM_MPI_API int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         MPI_Request *request);
BM_MPI_API int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                          MPI_Request *request);
BM_MPI_API int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, const int recvcounts[], const int displs[],
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, const int recvcounts[], const int displs[],
                                         MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Request *request);
BM_MPI_API int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[],
                                        const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int rdispls[],
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                                       const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                       void *recvbuf, const int recvcounts[],
                                       const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                       MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[],
                                        const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                        void *recvbuf, const int recvcounts[],
                                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                        MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                              MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                               MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int displs[],
                                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request);
BM_MPI_API int PMPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request);
BM_MPI_API int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                                 MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request);
BM_MPI_API int PMPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                                  MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request);
BM_MPI_API int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const int recvcounts[], const int displs[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request);
BM_MPI_API int PMPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, const int recvcounts[], const int displs[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request);
BM_MPI_API int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  const MPI_Datatype sendtypes[], void *recvbuf,
                                  const int recvcounts[], const int rdispls[],
                                  const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request);
BM_MPI_API int PMPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                   const MPI_Datatype sendtypes[], void *recvbuf,
                                   const int recvcounts[], const int rdispls[],
                                   const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request);
BM_MPI_API int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, int root, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request);
BM_MPI_API int PMPI_Reduce_init(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request);
BM_MPI_API int PMPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request);
BM_MPI_API int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                        MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                             MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                              MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Exscan_init(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request);
BM_MPI_API int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           MPI_Request *request);
BM_MPI_API int PMPI_Neighbor_allgather_init(const void *sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                            MPI_Request *request);
BM_MPI_API int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void *recvbuf,
                                            const int recvcounts[], const int displs[],
                                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                            MPI_Request *request);
BM_MPI_API int PMPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount,
                                             MPI_Datatype sendtype, void *recvbuf,
                                             const int recvcounts[], const int displs[],
                                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                             MPI_Request *request);
BM_MPI_API int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                          MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           MPI_Request *request);
BM_MPI_API int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                           const int sdispls[], MPI_Datatype sendtype,
                                           void *recvbuf, const int recvcounts[],
                                           const int rdispls[], MPI_Datatype recvtype,
                                           MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[],
                                            const int sdispls[], MPI_Datatype sendtype,
                                            void *recvbuf, const int recvcounts[],
                                            const int rdispls[], MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                           const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                           void *recvbuf, const int recvcounts[],
                                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                           MPI_Comm comm, MPI_Info info, MPI_Request *request);
BM_MPI_API int PMPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                            const MPI_Aint sdispls[],
                                            const MPI_Datatype sendtypes[], void *recvbuf,
                                            const int recvcounts[], const MPI_Aint rdispls[],
                                            const MPI_Datatype recvtypes[], MPI_Comm comm,
                                            MPI_Info info, MPI_Request *request);

/* p2p.c (engineer pml) */
BM_MPI_API int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm);
BM_MPI_API int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm);
BM_MPI_API int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm);
BM_MPI_API int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm);
BM_MPI_API int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm);
BM_MPI_API int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm);
BM_MPI_API int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm);
BM_MPI_API int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm);
BM_MPI_API int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status);
BM_MPI_API int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Status *status);
BM_MPI_API int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Buffer_attach(void *buffer, int size);
BM_MPI_API int PMPI_Buffer_attach(void *buffer, int size);
BM_MPI_API int MPI_Buffer_detach(void *buffer_addr, int *size);
BM_MPI_API int PMPI_Buffer_detach(void *buffer_addr, int *size);
BM_MPI_API int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status *status);
BM_MPI_API int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                             int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                             int source, int recvtag, MPI_Comm comm, MPI_Status *status);
BM_MPI_API int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                    int sendtag, int source, int recvtag, MPI_Comm comm,
                                    MPI_Status *status);
BM_MPI_API int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                     int sendtag, int source, int recvtag, MPI_Comm comm,
                                     MPI_Status *status);
BM_MPI_API int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
BM_MPI_API int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
BM_MPI_API int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
BM_MPI_API int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
BM_MPI_API int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
BM_MPI_API int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
BM_MPI_API int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                             MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                              MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                             MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                              MPI_Comm comm, MPI_Request *request);

/* request.c (engineer pml) */
BM_MPI_API int MPI_Start(MPI_Request *request);
BM_MPI_API int PMPI_Start(MPI_Request *request);
BM_MPI_API int MPI_Startall(int count, MPI_Request array_of_requests[]);
BM_MPI_API int PMPI_Startall(int count, MPI_Request array_of_requests[]);
BM_MPI_API int MPI_Wait(MPI_Request *request, MPI_Status *status);
BM_MPI_API int PMPI_Wait(MPI_Request *request, MPI_Status *status);
BM_MPI_API int MPI_Waitall(int count, MPI_Request array_of_requests[],
                           MPI_Status array_of_statuses[]);
BM_MPI_API int PMPI_Waitall(int count, MPI_Request array_of_requests[],
                            MPI_Status array_of_statuses[]);
BM_MPI_API int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                           MPI_Status *status);
BM_MPI_API int PMPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                            MPI_Status *status);
BM_MPI_API int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[]);
BM_MPI_API int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                             int array_of_indices[], MPI_Status array_of_statuses[]);
BM_MPI_API int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
BM_MPI_API int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
BM_MPI_API int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                           MPI_Status array_of_statuses[]);
BM_MPI_API int PMPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                            MPI_Status array_of_statuses[]);
BM_MPI_API int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                           MPI_Status *status);
BM_MPI_API int PMPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                            MPI_Status *status);
BM_MPI_API int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                            int array_of_indices[], MPI_Status array_of_statuses[]);
BM_MPI_API int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                             int array_of_indices[], MPI_Status array_of_statuses[]);
BM_MPI_API int MPI_Request_free(MPI_Request *request);
BM_MPI_API int PMPI_Request_free(MPI_Request *request);
BM_MPI_API int MPI_Cancel(MPI_Request *request);
BM_MPI_API int PMPI_Cancel(MPI_Request *request);
BM_MPI_API int MPI_Test_cancelled(const MPI_Status *status, int *flag);
BM_MPI_API int PMPI_Test_cancelled(const MPI_Status *status, int *flag);
BM_MPI_API int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
BM_MPI_API int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);

/* mprobe.c: matched probes and receives */
BM_MPI_API int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                          MPI_Status *status);
BM_MPI_API int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message,
                           MPI_Status *status);
BM_MPI_API int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                           MPI_Status *status);
BM_MPI_API int PMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                            MPI_Status *status);
BM_MPI_API int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                         MPI_Status *status);
BM_MPI_API int PMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                          MPI_Status *status);
BM_MPI_API int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                          MPI_Request *request);
BM_MPI_API int PMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                           MPI_Request *request);

/* isendrecv.c: nonblocking combined send and receive (MPI-4.0 names, provided early) */
BM_MPI_API int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                             int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                             int source, int recvtag, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int PMPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                              int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                              int source, int recvtag, MPI_Comm comm, MPI_Request *request);
BM_MPI_API int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                     int sendtag, int source, int recvtag, MPI_Comm comm,
                                     MPI_Request *request);
BM_MPI_API int PMPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                      int sendtag, int source, int recvtag, MPI_Comm comm,
                                      MPI_Request *request);

/* handles.c: handles as integers (language interoperability, MPI-3.1 17.2.4) */
#define MPI_STATUS_SIZE       6 /* MPI_Fint in an MPI_Status */
#define MPI_F_STATUS_IGNORE   ((MPI_Fint *)0)
#define MPI_F_STATUSES_IGNORE ((MPI_Fint *)0)
BM_MPI_API MPI_Fint MPI_Comm_c2f(MPI_Comm handle);
BM_MPI_API MPI_Fint PMPI_Comm_c2f(MPI_Comm handle);
BM_MPI_API MPI_Comm MPI_Comm_f2c(MPI_Fint handle);
BM_MPI_API MPI_Comm PMPI_Comm_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Type_c2f(MPI_Datatype handle);
BM_MPI_API MPI_Fint PMPI_Type_c2f(MPI_Datatype handle);
BM_MPI_API MPI_Datatype MPI_Type_f2c(MPI_Fint handle);
BM_MPI_API MPI_Datatype PMPI_Type_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Group_c2f(MPI_Group handle);
BM_MPI_API MPI_Fint PMPI_Group_c2f(MPI_Group handle);
BM_MPI_API MPI_Group MPI_Group_f2c(MPI_Fint handle);
BM_MPI_API MPI_Group PMPI_Group_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Request_c2f(MPI_Request handle);
BM_MPI_API MPI_Fint PMPI_Request_c2f(MPI_Request handle);
BM_MPI_API MPI_Request MPI_Request_f2c(MPI_Fint handle);
BM_MPI_API MPI_Request PMPI_Request_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Op_c2f(MPI_Op handle);
BM_MPI_API MPI_Fint PMPI_Op_c2f(MPI_Op handle);
BM_MPI_API MPI_Op MPI_Op_f2c(MPI_Fint handle);
BM_MPI_API MPI_Op PMPI_Op_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Info_c2f(MPI_Info handle);
BM_MPI_API MPI_Fint PMPI_Info_c2f(MPI_Info handle);
BM_MPI_API MPI_Info MPI_Info_f2c(MPI_Fint handle);
BM_MPI_API MPI_Info PMPI_Info_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Errhandler_c2f(MPI_Errhandler handle);
BM_MPI_API MPI_Fint PMPI_Errhandler_c2f(MPI_Errhandler handle);
BM_MPI_API MPI_Errhandler MPI_Errhandler_f2c(MPI_Fint handle);
BM_MPI_API MPI_Errhandler PMPI_Errhandler_f2c(MPI_Fint handle);
BM_MPI_API MPI_Fint MPI_Message_c2f(MPI_Message handle);
BM_MPI_API MPI_Fint PMPI_Message_c2f(MPI_Message handle);
BM_MPI_API MPI_Message MPI_Message_f2c(MPI_Fint handle);
BM_MPI_API MPI_Message PMPI_Message_f2c(MPI_Fint handle);
BM_MPI_API int MPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status);
BM_MPI_API int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status);
BM_MPI_API int MPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status);
BM_MPI_API int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status);

/* grequest.c: generalized requests and the status setters they use */
BM_MPI_API int MPI_Grequest_start(MPI_Grequest_query_function *query_fn,
                                  MPI_Grequest_free_function *free_fn,
                                  MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                  MPI_Request *request);
BM_MPI_API int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn,
                                   MPI_Grequest_free_function *free_fn,
                                   MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                   MPI_Request *request);
BM_MPI_API int MPI_Grequest_complete(MPI_Request request);
BM_MPI_API int PMPI_Grequest_complete(MPI_Request request);
BM_MPI_API int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
BM_MPI_API int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count);
BM_MPI_API int MPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype,
                                         MPI_Count count);
BM_MPI_API int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype,
                                          MPI_Count count);
BM_MPI_API int MPI_Status_set_cancelled(MPI_Status *status, int flag);
BM_MPI_API int PMPI_Status_set_cancelled(MPI_Status *status, int flag);

/* ---- Tool information interface (MPI-3.1 section 14.3: mpi_t.c) -------- */

/* Control variables are bitmover's parameters (the BM_* environment
 * variables, one category per component), read-only; there are no
 * performance variables. */
typedef struct bm_mpi_t_enum *MPI_T_enum;
typedef struct bm_mpi_t_cvar_handle *MPI_T_cvar_handle;
typedef struct bm_mpi_t_pvar_handle *MPI_T_pvar_handle;
typedef struct bm_mpi_t_pvar_session *MPI_T_pvar_session;
#define MPI_T_ENUM_NULL         ((MPI_T_enum)0)
#define MPI_T_CVAR_HANDLE_NULL  ((MPI_T_cvar_handle)0)
#define MPI_T_PVAR_HANDLE_NULL  ((MPI_T_pvar_handle)0)
#define MPI_T_PVAR_SESSION_NULL ((MPI_T_pvar_session)0)
#define MPI_T_PVAR_ALL_HANDLES  ((MPI_T_pvar_handle)&bm_mpi_t_pvar_all_handles_obj)
extern BM_MPI_API struct bm_mpi_t_pvar_handle bm_mpi_t_pvar_all_handles_obj;

enum {
    MPI_T_VERBOSITY_USER_BASIC,
    MPI_T_VERBOSITY_USER_DETAIL,
    MPI_T_VERBOSITY_USER_ALL,
    MPI_T_VERBOSITY_TUNER_BASIC,
    MPI_T_VERBOSITY_TUNER_DETAIL,
    MPI_T_VERBOSITY_TUNER_ALL,
    MPI_T_VERBOSITY_MPIDEV_BASIC,
    MPI_T_VERBOSITY_MPIDEV_DETAIL,
    MPI_T_VERBOSITY_MPIDEV_ALL
};
enum {
    MPI_T_BIND_NO_OBJECT,
    MPI_T_BIND_MPI_COMM,
    MPI_T_BIND_MPI_DATATYPE,
    MPI_T_BIND_MPI_ERRHANDLER,
    MPI_T_BIND_MPI_FILE,
    MPI_T_BIND_MPI_GROUP,
    MPI_T_BIND_MPI_OP,
    MPI_T_BIND_MPI_REQUEST,
    MPI_T_BIND_MPI_WIN,
    MPI_T_BIND_MPI_MESSAGE,
    MPI_T_BIND_MPI_INFO
};
enum {
    MPI_T_SCOPE_CONSTANT,
    MPI_T_SCOPE_READONLY,
    MPI_T_SCOPE_LOCAL,
    MPI_T_SCOPE_GROUP,
    MPI_T_SCOPE_GROUP_EQ,
    MPI_T_SCOPE_ALL,
    MPI_T_SCOPE_ALL_EQ
};
enum {
    MPI_T_PVAR_CLASS_STATE,
    MPI_T_PVAR_CLASS_LEVEL,
    MPI_T_PVAR_CLASS_SIZE,
    MPI_T_PVAR_CLASS_PERCENTAGE,
    MPI_T_PVAR_CLASS_HIGHWATERMARK,
    MPI_T_PVAR_CLASS_LOWWATERMARK,
    MPI_T_PVAR_CLASS_COUNTER,
    MPI_T_PVAR_CLASS_AGGREGATE,
    MPI_T_PVAR_CLASS_TIMER,
    MPI_T_PVAR_CLASS_GENERIC
};

BM_MPI_API int MPI_T_init_thread(int required, int *provided);
BM_MPI_API int PMPI_T_init_thread(int required, int *provided);
BM_MPI_API int MPI_T_finalize(void);
BM_MPI_API int PMPI_T_finalize(void);
BM_MPI_API int MPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len);
BM_MPI_API int PMPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len);
BM_MPI_API int MPI_T_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name,
                                   int *name_len);
BM_MPI_API int PMPI_T_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name,
                                    int *name_len);
BM_MPI_API int MPI_T_cvar_get_num(int *num_cvar);
BM_MPI_API int PMPI_T_cvar_get_num(int *num_cvar);
BM_MPI_API int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                                   MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                                   int *desc_len, int *bind, int *scope);
BM_MPI_API int PMPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                                    MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                                    int *desc_len, int *bind, int *scope);
BM_MPI_API int MPI_T_cvar_get_index(const char *name, int *cvar_index);
BM_MPI_API int PMPI_T_cvar_get_index(const char *name, int *cvar_index);
BM_MPI_API int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                                       int *count);
BM_MPI_API int PMPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                                        int *count);
BM_MPI_API int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle);
BM_MPI_API int PMPI_T_cvar_handle_free(MPI_T_cvar_handle *handle);
BM_MPI_API int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf);
BM_MPI_API int PMPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf);
BM_MPI_API int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf);
BM_MPI_API int PMPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf);
BM_MPI_API int MPI_T_pvar_get_num(int *num_pvar);
BM_MPI_API int PMPI_T_pvar_get_num(int *num_pvar);
BM_MPI_API int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                                   int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype,
                                   char *desc, int *desc_len, int *bind, int *readonly,
                                   int *continuous, int *atomic);
BM_MPI_API int PMPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                                    int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype,
                                    char *desc, int *desc_len, int *bind, int *readonly,
                                    int *continuous, int *atomic);
BM_MPI_API int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index);
BM_MPI_API int PMPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index);
BM_MPI_API int MPI_T_pvar_session_create(MPI_T_pvar_session *session);
BM_MPI_API int PMPI_T_pvar_session_create(MPI_T_pvar_session *session);
BM_MPI_API int MPI_T_pvar_session_free(MPI_T_pvar_session *session);
BM_MPI_API int PMPI_T_pvar_session_free(MPI_T_pvar_session *session);
BM_MPI_API int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                       MPI_T_pvar_handle *handle, int *count);
BM_MPI_API int PMPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index,
                                        void *obj_handle, MPI_T_pvar_handle *handle, int *count);
BM_MPI_API int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle);
BM_MPI_API int PMPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle);
BM_MPI_API int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int PMPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int PMPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
BM_MPI_API int PMPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
BM_MPI_API int MPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                const void *buf);
BM_MPI_API int PMPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                 const void *buf);
BM_MPI_API int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int PMPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
BM_MPI_API int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                    void *buf);
BM_MPI_API int PMPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                     void *buf);
BM_MPI_API int MPI_T_category_get_num(int *num_cat);
BM_MPI_API int PMPI_T_category_get_num(int *num_cat);
BM_MPI_API int MPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc,
                                       int *desc_len, int *num_cvars, int *num_pvars,
                                       int *num_categories);
BM_MPI_API int PMPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc,
                                        int *desc_len, int *num_cvars, int *num_pvars,
                                        int *num_categories);
BM_MPI_API int MPI_T_category_get_index(const char *name, int *cat_index);
BM_MPI_API int PMPI_T_category_get_index(const char *name, int *cat_index);
BM_MPI_API int MPI_T_category_get_cvars(int cat_index, int len, int indices[]);
BM_MPI_API int PMPI_T_category_get_cvars(int cat_index, int len, int indices[]);
BM_MPI_API int MPI_T_category_get_pvars(int cat_index, int len, int indices[]);
BM_MPI_API int PMPI_T_category_get_pvars(int cat_index, int len, int indices[]);
BM_MPI_API int MPI_T_category_get_categories(int cat_index, int len, int indices[]);
BM_MPI_API int PMPI_T_category_get_categories(int cat_index, int len, int indices[]);
BM_MPI_API int MPI_T_category_changed(int *stamp);
BM_MPI_API int PMPI_T_category_changed(int *stamp);

/* ---- One-sided communication (MPI-3.1 chapter 11: win*.c) -------------- */

typedef struct bm_mpi_win *MPI_Win;
#define MPI_WIN_NULL ((MPI_Win)0)
/* handles.c: window handles as integers (as the other kinds' above). */
BM_MPI_API MPI_Fint MPI_Win_c2f(MPI_Win handle);
BM_MPI_API MPI_Fint PMPI_Win_c2f(MPI_Win handle);
BM_MPI_API MPI_Win MPI_Win_f2c(MPI_Fint handle);
BM_MPI_API MPI_Win PMPI_Win_f2c(MPI_Fint handle);

typedef void MPI_Win_errhandler_function(MPI_Win *win, int *errcode, ...);
/* MPI-2 name of the same type. */
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef int MPI_Win_copy_attr_function(MPI_Win oldwin, int win_keyval, void *extra_state,
                                       void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int MPI_Win_delete_attr_function(MPI_Win win, int win_keyval, void *attribute_val,
                                         void *extra_state);
BM_MPI_API int bm_mpi_win_dup_fn(MPI_Win oldwin, int win_keyval, void *extra_state,
                                 void *attribute_val_in, void *attribute_val_out, int *flag);
#define MPI_WIN_NULL_COPY_FN   ((MPI_Win_copy_attr_function *)0)
#define MPI_WIN_NULL_DELETE_FN ((MPI_Win_delete_attr_function *)0)
#define MPI_WIN_DUP_FN         bm_mpi_win_dup_fn

/* Lock types. */
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED    235
/* Assertions (bits; MPI_Win_fence, start, post, lock, lock_all). */
#define MPI_MODE_NOCHECK   1024
#define MPI_MODE_NOSTORE   2048
#define MPI_MODE_NOPUT     4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384
/* Predefined window attributes (MPI_Win_get_attr). MPI_WIN_BASE gives the
 * base address, MPI_WIN_SIZE an MPI_Aint *, the others an int *. */
#define MPI_WIN_BASE          11
#define MPI_WIN_SIZE          12
#define MPI_WIN_DISP_UNIT     13
#define MPI_WIN_CREATE_FLAVOR 14
#define MPI_WIN_MODEL         15
/* Values of MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL. */
#define MPI_WIN_FLAVOR_CREATE   1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC  3
#define MPI_WIN_FLAVOR_SHARED   4
#define MPI_WIN_SEPARATE        1
#define MPI_WIN_UNIFIED         2

BM_MPI_API int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                              MPI_Comm comm, MPI_Win *win);
BM_MPI_API int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                               MPI_Comm comm, MPI_Win *win);
BM_MPI_API int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                void *baseptr, MPI_Win *win);
BM_MPI_API int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                 void *baseptr, MPI_Win *win);
BM_MPI_API int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                       void *baseptr, MPI_Win *win);
BM_MPI_API int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                        void *baseptr, MPI_Win *win);
BM_MPI_API int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                    void *baseptr);
BM_MPI_API int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                     void *baseptr);
BM_MPI_API int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
BM_MPI_API int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
BM_MPI_API int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
BM_MPI_API int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
BM_MPI_API int MPI_Win_detach(MPI_Win win, const void *base);
BM_MPI_API int PMPI_Win_detach(MPI_Win win, const void *base);
BM_MPI_API int MPI_Win_free(MPI_Win *win);
BM_MPI_API int PMPI_Win_free(MPI_Win *win);
BM_MPI_API int MPI_Win_get_group(MPI_Win win, MPI_Group *group);
BM_MPI_API int PMPI_Win_get_group(MPI_Win win, MPI_Group *group);
BM_MPI_API int MPI_Win_set_info(MPI_Win win, MPI_Info info);
BM_MPI_API int PMPI_Win_set_info(MPI_Win win, MPI_Info info);
BM_MPI_API int MPI_Win_get_info(MPI_Win win, MPI_Info *info_used);
BM_MPI_API int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used);
BM_MPI_API int MPI_Win_set_name(MPI_Win win, const char *win_name);
BM_MPI_API int PMPI_Win_set_name(MPI_Win win, const char *win_name);
BM_MPI_API int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen);
BM_MPI_API int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen);
BM_MPI_API int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
                                         MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
                                          MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler);
BM_MPI_API int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler);
BM_MPI_API int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler);
BM_MPI_API int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler);
BM_MPI_API int MPI_Win_call_errhandler(MPI_Win win, int errorcode);
BM_MPI_API int PMPI_Win_call_errhandler(MPI_Win win, int errorcode);
BM_MPI_API int MPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                                     MPI_Win_delete_attr_function *win_delete_attr_fn,
                                     int *win_keyval, void *extra_state);
BM_MPI_API int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                                      MPI_Win_delete_attr_function *win_delete_attr_fn,
                                      int *win_keyval, void *extra_state);
BM_MPI_API int MPI_Win_free_keyval(int *win_keyval);
BM_MPI_API int PMPI_Win_free_keyval(int *win_keyval);
BM_MPI_API int MPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val);
BM_MPI_API int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val);
BM_MPI_API int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag);
BM_MPI_API int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag);
BM_MPI_API int MPI_Win_delete_attr(MPI_Win win, int win_keyval);
BM_MPI_API int PMPI_Win_delete_attr(MPI_Win win, int win_keyval);
BM_MPI_API int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Win win);
BM_MPI_API int PMPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Win win);
BM_MPI_API int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Win win);
BM_MPI_API int PMPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Win win);
BM_MPI_API int MPI_Accumulate(const void *origin_addr, int origin_count,
                              MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                              int target_count, MPI_Datatype target_datatype, MPI_Op op,
                              MPI_Win win);
BM_MPI_API int PMPI_Accumulate(const void *origin_addr, int origin_count,
                               MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                               int target_count, MPI_Datatype target_datatype, MPI_Op op,
                               MPI_Win win);
BM_MPI_API int MPI_Get_accumulate(const void *origin_addr, int origin_count,
                                  MPI_Datatype origin_datatype, void *result_addr, int result_count,
                                  MPI_Datatype result_datatype, int target_rank,
                                  MPI_Aint target_disp, int target_count,
                                  MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
BM_MPI_API int PMPI_Get_accumulate(const void *origin_addr, int origin_count,
                                   MPI_Datatype origin_datatype, void *result_addr,
                                   int result_count, MPI_Datatype result_datatype, int target_rank,
                                   MPI_Aint target_disp, int target_count,
                                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
BM_MPI_API int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                                int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win);
BM_MPI_API int PMPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                                 int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win);
BM_MPI_API int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                                    void *result_addr, MPI_Datatype datatype, int target_rank,
                                    MPI_Aint target_disp, MPI_Win win);
BM_MPI_API int PMPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                                     void *result_addr, MPI_Datatype datatype, int target_rank,
                                     MPI_Aint target_disp, MPI_Win win);
BM_MPI_API int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
BM_MPI_API int PMPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
BM_MPI_API int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
BM_MPI_API int PMPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
BM_MPI_API int MPI_Raccumulate(const void *origin_addr, int origin_count,
                               MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                               int target_count, MPI_Datatype target_datatype, MPI_Op op,
                               MPI_Win win, MPI_Request *request);
BM_MPI_API int PMPI_Raccumulate(const void *origin_addr, int origin_count,
                                MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                                int target_count, MPI_Datatype target_datatype, MPI_Op op,
                                MPI_Win win, MPI_Request *request);
BM_MPI_API int MPI_Rget_accumulate(const void *origin_addr, int origin_count,
                                   MPI_Datatype origin_datatype, void *result_addr,
                                   int result_count, MPI_Datatype result_datatype, int target_rank,
                                   MPI_Aint target_disp, int target_count,
                                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                   MPI_Request *request);
BM_MPI_API int PMPI_Rget_accumulate(const void *origin_addr, int origin_count,
                                    MPI_Datatype origin_datatype, void *result_addr,
                                    int result_count, MPI_Datatype result_datatype, int target_rank,
                                    MPI_Aint target_disp, int target_count,
                                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                    MPI_Request *request);
BM_MPI_API int MPI_Win_fence(int assert, MPI_Win win);
BM_MPI_API int PMPI_Win_fence(int assert, MPI_Win win);
BM_MPI_API int MPI_Win_start(MPI_Group group, int assert, MPI_Win win);
BM_MPI_API int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win);
BM_MPI_API int MPI_Win_complete(MPI_Win win);
BM_MPI_API int PMPI_Win_complete(MPI_Win win);
BM_MPI_API int MPI_Win_post(MPI_Group group, int assert, MPI_Win win);
BM_MPI_API int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win);
BM_MPI_API int MPI_Win_wait(MPI_Win win);
BM_MPI_API int PMPI_Win_wait(MPI_Win win);
BM_MPI_API int MPI_Win_test(MPI_Win win, int *flag);
BM_MPI_API int PMPI_Win_test(MPI_Win win, int *flag);
BM_MPI_API int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
BM_MPI_API int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
BM_MPI_API int MPI_Win_unlock(int rank, MPI_Win win);
BM_MPI_API int PMPI_Win_unlock(int rank, MPI_Win win);
BM_MPI_API int MPI_Win_lock_all(int assert, MPI_Win win);
BM_MPI_API int PMPI_Win_lock_all(int assert, MPI_Win win);
BM_MPI_API int MPI_Win_unlock_all(MPI_Win win);
BM_MPI_API int PMPI_Win_unlock_all(MPI_Win win);
BM_MPI_API int MPI_Win_flush(int rank, MPI_Win win);
BM_MPI_API int PMPI_Win_flush(int rank, MPI_Win win);
BM_MPI_API int MPI_Win_flush_all(MPI_Win win);
BM_MPI_API int PMPI_Win_flush_all(MPI_Win win);
BM_MPI_API int MPI_Win_flush_local(int rank, MPI_Win win);
BM_MPI_API int PMPI_Win_flush_local(int rank, MPI_Win win);
BM_MPI_API int MPI_Win_flush_local_all(MPI_Win win);
BM_MPI_API int PMPI_Win_flush_local_all(MPI_Win win);
BM_MPI_API int MPI_Win_sync(MPI_Win win);
BM_MPI_API int PMPI_Win_sync(MPI_Win win);

#ifdef __cplusplus
}
#endif
#endif
