/* Error handling: every bad argument to the non-point-to-point entry points
 * gives the right error class under MPI_ERRORS_RETURN (bad communicator,
 * datatype, root, operation, count, buffer, attribute key, a second
 * MPI_Init, whose code is of class MPI_ERR_OTHER and whose string says what
 * happened), MPI_Error_string and MPI_Error_class for every class, user
 * error handlers (called with the communicator and the code), that the
 * handler of one communicator does not leak to another, classes, codes and
 * strings added by the program (and MPI_LASTUSEDCODE), the MPI-1
 * Errhandler_create/set/get, and the error handler of MPI_FILE_NULL. */
#include "bm_test.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size;
static int handler_calls;
static int handler_last_code;
static MPI_Comm handler_last_comm;

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_last_code = *code;
    handler_last_comm = *comm;
}

static void test_error_strings(void)
{
    char s[MPI_MAX_ERROR_STRING], prev[MPI_MAX_ERROR_STRING] = "";
    int len, cls;

    for (int c = MPI_SUCCESS; c <= MPI_ERR_LASTCODE; c++) {
        len = -1;
        BM_CHECK_EQ_INT(MPI_Error_string(c, s, &len), MPI_SUCCESS);
        BM_CHECK_MSG(len > 0 && len == (int)strlen(s) && len < MPI_MAX_ERROR_STRING,
                     "bad length %d for class %d", len, c);
        BM_CHECK_MSG(strcmp(s, prev) != 0, "class %d has the same string as the one before", c);
        BM_CHECK_MSG(c == MPI_SUCCESS || strncmp(s, "MPI_ERR_", 8) == 0 ||
                         (c >= MPI_T_ERR_MEMORY && strncmp(s, "MPI_T_ERR_", 10) == 0),
                     "class %d string '%s' does not name the class", c, s);
        BM_CHECK_EQ_INT(MPI_Error_class(c, &cls), MPI_SUCCESS);
        BM_CHECK_EQ_INT(cls, c);
        snprintf(prev, sizeof(prev), "%s", s);
    }
    BM_CHECK_EQ_INT(MPI_Error_string(MPI_ERR_RANK, s, &len), MPI_SUCCESS);
    BM_CHECK(strstr(s, "MPI_ERR_RANK") != NULL && strstr(s, "rank") != NULL);
    BM_CHECK_EQ_INT(MPI_Error_string(12345, s, &len), MPI_SUCCESS);
    BM_CHECK(strstr(s, "12345") != NULL);
    BM_CHECK_EQ_INT(MPI_Error_class(12345, &cls), MPI_ERR_ARG);
}

static void test_bad_arguments(void)
{
    int buf[4] = {0}, out[4], dummy;
    int *val;

    /* Communicator. */
    BM_CHECK_EQ_INT(MPI_Comm_size(MPI_COMM_NULL, &dummy), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(MPI_Bcast(buf, 1, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM);
    /* A handle of another kind is caught, not used. */
    BM_CHECK_EQ_INT(MPI_Comm_rank((MPI_Comm)(void *)MPI_INT, &dummy), MPI_ERR_COMM);
    BM_CHECK_EQ_INT(MPI_Comm_free(&(MPI_Comm){MPI_COMM_WORLD}), MPI_ERR_COMM);

    /* Datatype. */
    BM_CHECK_EQ_INT(MPI_Bcast(buf, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(MPI_Reduce(buf, out, 1, MPI_DATATYPE_NULL, MPI_SUM, 0, MPI_COMM_WORLD),
                    MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(MPI_Type_size(MPI_DATATYPE_NULL, &dummy), MPI_ERR_TYPE);
    BM_CHECK_EQ_INT(MPI_Type_size((MPI_Datatype)(void *)MPI_SUM, &dummy), MPI_ERR_TYPE);

    /* Root. */
    BM_CHECK_EQ_INT(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    BM_CHECK_EQ_INT(MPI_Bcast(buf, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    BM_CHECK_EQ_INT(MPI_Reduce(buf, out, 1, MPI_INT, MPI_SUM, size + 3, MPI_COMM_WORLD),
                    MPI_ERR_ROOT);

    /* Operation. */
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_2INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, 1, MPI_WCHAR, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Reduce(buf, out, 1, MPI_INT, MPI_REPLACE, 0, MPI_COMM_WORLD), MPI_ERR_OP);
    BM_CHECK_EQ_INT(MPI_Op_free(&(MPI_Op){MPI_SUM}), MPI_ERR_OP);

    /* Count and buffer. */
    BM_CHECK_EQ_INT(MPI_Bcast(buf, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, out, -5, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    BM_CHECK_EQ_INT(MPI_Bcast(NULL, 3, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    BM_CHECK_EQ_INT(MPI_Allreduce(buf, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    MPI_ERR_BUFFER);
    if (size > 1)
        BM_CHECK_EQ_INT(
            MPI_Reduce(MPI_IN_PLACE, out, 1, MPI_INT, MPI_SUM, rank == 0 ? 1 : 0, MPI_COMM_WORLD),
            MPI_ERR_BUFFER);

    /* Attributes and start-up. */
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, 9999, &val, &dummy), MPI_ERR_KEYVAL);
    {
        char str[MPI_MAX_ERROR_STRING];
        int code = MPI_Init(NULL, NULL), cls = -1, len;
        BM_CHECK_EQ_INT(MPI_Error_class(code, &cls), MPI_SUCCESS);
        BM_CHECK_EQ_INT(cls, MPI_ERR_OTHER);
        BM_CHECK_EQ_INT(MPI_Error_string(code, str, &len), MPI_SUCCESS);
        BM_CHECK_MSG(strstr(str, "already initialized") != NULL, "string: %s", str);
        BM_CHECK_MSG(strstr(str, "not in this list") == NULL, "string: %s", str);
        int provided;
        code = MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
        BM_CHECK_EQ_INT(MPI_Error_class(code, &cls), MPI_SUCCESS);
        BM_CHECK_EQ_INT(cls, MPI_ERR_OTHER);
    }
    BM_CHECK_EQ_INT(MPI_Comm_split(MPI_COMM_WORLD, -7, 0, &(MPI_Comm){MPI_COMM_NULL}), MPI_ERR_ARG);

    /* Nothing above was collective: every rank still agrees. */
    BM_CHECK_EQ_INT(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
}

static void test_user_handler(void)
{
    MPI_Errhandler eh, got;
    MPI_Comm dup;
    int buf = 0;

    BM_CHECK_EQ_INT(MPI_Comm_create_errhandler(count_errors, &eh), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_set_errhandler(dup, eh), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Errhandler_free(&eh), MPI_SUCCESS);
    BM_CHECK(eh == MPI_ERRHANDLER_NULL);

    handler_calls = 0;
    BM_CHECK_EQ_INT(MPI_Bcast(&buf, 1, MPI_INT, -3, dup), MPI_ERR_ROOT);
    BM_CHECK_EQ_INT(handler_calls, 1);
    BM_CHECK_EQ_INT(handler_last_code, MPI_ERR_ROOT);
    BM_CHECK(handler_last_comm == dup);
    BM_CHECK_EQ_INT(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER), MPI_SUCCESS);
    BM_CHECK_EQ_INT(handler_calls, 2);
    BM_CHECK_EQ_INT(handler_last_code, MPI_ERR_OTHER);

    /* MPI_COMM_WORLD keeps its own handler. */
    BM_CHECK_EQ_INT(MPI_Bcast(&buf, 1, MPI_INT, -3, MPI_COMM_WORLD), MPI_ERR_ROOT);
    BM_CHECK_EQ_INT(handler_calls, 2);

    BM_CHECK_EQ_INT(MPI_Comm_get_errhandler(dup, &got), MPI_SUCCESS);
    BM_CHECK(got != MPI_ERRORS_RETURN && got != MPI_ERRORS_ARE_FATAL);
    BM_CHECK_EQ_INT(MPI_Errhandler_free(&got), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got), MPI_SUCCESS);
    BM_CHECK(got == MPI_ERRORS_RETURN);
    BM_CHECK_EQ_INT(MPI_Comm_free(&dup), MPI_SUCCESS);
    BM_CHECK(dup == MPI_COMM_NULL);
    BM_CHECK_EQ_INT(MPI_Comm_size(dup, &buf), MPI_ERR_COMM);
}

static void test_added_codes(void)
{
    int c1, c2, code1, code2, code3, cls, len, flag, *last;
    char str[MPI_MAX_ERROR_STRING], big[MPI_MAX_ERROR_STRING + 10];

    BM_CHECK_EQ_INT(MPI_Add_error_class(&c1), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Add_error_class(&c2), MPI_SUCCESS);
    BM_CHECK(c1 > MPI_ERR_LASTCODE && c2 > c1);
    BM_CHECK_EQ_INT(MPI_Add_error_code(c1, &code1), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Add_error_code(c1, &code2), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Add_error_code(MPI_ERR_TAG, &code3), MPI_SUCCESS);
    BM_CHECK(code1 != code2 && code1 != c1 && code1 != c2);
    BM_CHECK_EQ_INT(MPI_Error_class(c1, &cls), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cls, c1);
    BM_CHECK_EQ_INT(MPI_Error_class(code2, &cls), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cls, c1);
    BM_CHECK_EQ_INT(MPI_Error_class(code3, &cls), MPI_SUCCESS);
    BM_CHECK_EQ_INT(cls, MPI_ERR_TAG);
    /* no string yet: the empty string */
    BM_CHECK_EQ_INT(MPI_Error_string(code1, str, &len), MPI_SUCCESS);
    BM_CHECK_EQ_INT(len, 0);
    BM_CHECK_EQ_INT(MPI_Add_error_string(code1, "first string"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Add_error_string(code1, "disk on fire"), MPI_SUCCESS); /* replaces */
    BM_CHECK_EQ_INT(MPI_Add_error_string(c2, "class two"), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_Error_string(code1, str, &len), MPI_SUCCESS);
    BM_CHECK_STR(str, "disk on fire");
    BM_CHECK_EQ_INT(len, 12);
    BM_CHECK_EQ_INT(MPI_Error_string(c2, str, &len), MPI_SUCCESS);
    BM_CHECK_STR(str, "class two");
    /* errors: predefined strings cannot change, too long, not a class */
    BM_CHECK_EQ_INT(MPI_Add_error_string(MPI_ERR_TAG, "x"), MPI_ERR_ARG);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    BM_CHECK_EQ_INT(MPI_Add_error_string(code2, big), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_Add_error_code(code1, &code2), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_Add_error_code(-4, &code2), MPI_ERR_ARG);
    /* MPI_LASTUSEDCODE follows */
    BM_CHECK_EQ_INT(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag), MPI_SUCCESS);
    BM_CHECK(flag && *last >= code3);
    /* an added code through a user handler and MPI_Comm_call_errhandler */
    MPI_Errhandler eh;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    BM_CHECK_EQ_INT(MPI_Errhandler_create(count_errors, &eh), MPI_SUCCESS); /* MPI-1 name */
    BM_CHECK_EQ_INT(MPI_Errhandler_set(dup, eh), MPI_SUCCESS);
    handler_calls = 0;
    BM_CHECK_EQ_INT(MPI_Comm_call_errhandler(dup, code1), MPI_SUCCESS);
    BM_CHECK_EQ_INT(handler_calls, 1);
    BM_CHECK_EQ_INT(handler_last_code, code1);
    MPI_Errhandler got;
    BM_CHECK_EQ_INT(MPI_Errhandler_get(dup, &got), MPI_SUCCESS);
    BM_CHECK(got == eh);
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);
}

static int file_calls, file_last_code;
static MPI_File file_last;

static void file_handler(MPI_File *f, int *code, ...)
{
    file_calls++;
    file_last_code = *code;
    file_last = *f;
}

static void test_file_errhandler(void)
{
    MPI_Errhandler eh, got, comm_eh;
    BM_CHECK_EQ_INT(MPI_File_get_errhandler(MPI_FILE_NULL, &got), MPI_SUCCESS);
    BM_CHECK(got == MPI_ERRORS_RETURN); /* the standard's default for files */
    MPI_Errhandler_free(&got);
    BM_CHECK_EQ_INT(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_File_create_errhandler(file_handler, &eh), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_File_set_errhandler(MPI_FILE_NULL, eh), MPI_SUCCESS);
    BM_CHECK_EQ_INT(MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO), MPI_SUCCESS);
    BM_CHECK_EQ_INT(file_calls, 1);
    BM_CHECK_EQ_INT(file_last_code, MPI_ERR_IO);
    BM_CHECK(file_last == MPI_FILE_NULL);
    /* a file handler on a communicator, and the reverse, are refused */
    BM_CHECK_EQ_INT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh), MPI_ERR_ARG);
    MPI_Comm_create_errhandler(count_errors, &comm_eh);
    BM_CHECK_EQ_INT(MPI_File_set_errhandler(MPI_FILE_NULL, comm_eh), MPI_ERR_ARG);
    BM_CHECK_EQ_INT(MPI_File_set_errhandler((MPI_File)(void *)&file_calls, eh), MPI_ERR_FILE);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    MPI_Errhandler_free(&comm_eh);
}

int main(int argc, char **argv)
{
    BM_CHECK_EQ_INT(MPI_Init(&argc, &argv), MPI_SUCCESS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    BM_CHECK_EQ_INT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), MPI_SUCCESS);
    BM_RUN(test_error_strings);
    BM_RUN(test_bad_arguments);
    BM_RUN(test_user_handler);
    BM_RUN(test_added_codes);
    BM_RUN(test_file_errhandler);
    BM_CHECK_EQ_INT(MPI_Finalize(), MPI_SUCCESS);
    /* After MPI_Finalize the default handler is back: only query functions here. */
    return bm_test_summary("api_errors");
}
