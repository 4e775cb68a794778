# The api_exports test (cmake -P): every MPI_ and PMPI_ function that
# include/mpi.h declares is exported by libbitmover.so (MPI_ as a weak
# alias, so that profiling tools can interpose), and the library exports no
# MPI_ or PMPI_ function that the header does not declare. Inputs: HEADER,
# LIB, NM. With REF (Open MPI 4.1's libmpi.so.40, which implements MPI-3.1):
# every MPI_ function it exports is exported here too, except exactly those
# that src/mpi/README.md lists under "Not provided yet" (MPI I/O but the
# MPI_FILE_NULL error handler calls, MPI_Register_datarep, dynamic
# processes); a function in that list that bitmover does export is an error
# too, so the README's list stays exact.
cmake_minimum_required(VERSION 3.25)
file(READ ${HEADER} text)
string(REGEX MATCHALL "BM_MPI_API [A-Za-z_]+ P?MPI_[A-Za-z0-9_]+\\(" decls "${text}")
set(declared "")
foreach(d ${decls})
    string(REGEX REPLACE ".* " "" name "${d}")
    string(REPLACE "(" "" name "${name}")
    list(APPEND declared ${name})
endforeach()
list(LENGTH declared ndecl)
if(ndecl LESS 100)
    message(FATAL_ERROR "found only ${ndecl} declarations in ${HEADER}: the pattern is stale")
endif()

execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${LIB}")
endif()
string(REGEX MATCHALL "[0-9a-f]+ [A-Za-z] P?MPI_[A-Za-z0-9_]+" syms "${out}")
set(exported "")
set(problems "")
foreach(s ${syms})
    string(REGEX MATCH "[A-Za-z] (P?MPI_[A-Za-z0-9_]+)$" m "${s}")
    set(name ${CMAKE_MATCH_1})
    string(SUBSTRING "${m}" 0 1 kind)
    list(APPEND exported ${name})
    if(name MATCHES "^MPI_" AND NOT kind STREQUAL "W")
        string(APPEND problems "${name} is exported as '${kind}', not as a weak alias\n")
    endif()
endforeach()
foreach(name ${declared})
    if(NOT name IN_LIST exported)
        string(APPEND problems "${name} is declared in mpi.h but not exported\n")
    endif()
endforeach()
foreach(name ${exported})
    if(NOT name IN_LIST declared)
        string(APPEND problems "${name} is exported but not declared in mpi.h\n")
    endif()
endforeach()
set(compared "")
if(REF)
    set(not_provided MPI_Register_datarep MPI_Comm_spawn MPI_Comm_spawn_multiple MPI_Open_port
        MPI_Close_port MPI_Comm_accept MPI_Comm_connect MPI_Publish_name MPI_Unpublish_name
        MPI_Lookup_name MPI_Comm_join MPI_Comm_get_parent)
    set(file_provided MPI_File_call_errhandler MPI_File_create_errhandler
        MPI_File_get_errhandler MPI_File_set_errhandler)
    execute_process(COMMAND ${NM} -D --defined-only ${REF} OUTPUT_VARIABLE rout
        RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${NM} failed on ${REF}")
    endif()
    string(REGEX MATCHALL " [TW] MPI_[A-Za-z0-9_]*[a-z][A-Za-z0-9_]*" rsyms "${rout}")
    list(LENGTH rsyms nref)
    if(nref LESS 300)
        message(FATAL_ERROR "found only ${nref} MPI_ functions in ${REF}: the pattern is stale")
    endif()
    foreach(s ${rsyms})
        string(REGEX REPLACE ".* " "" name "${s}")
        set(absent_ok FALSE)
        if((name MATCHES "^MPI_File_" AND NOT name IN_LIST file_provided) OR
           name IN_LIST not_provided)
            set(absent_ok TRUE)
        endif()
        if(absent_ok AND name IN_LIST exported)
            string(APPEND problems "${name} is exported, but src/mpi/README.md lists it as not "
                "provided: update the list and this test\n")
        elseif(NOT absent_ok AND NOT name IN_LIST exported)
            string(APPEND problems "${name} (MPI-3.1, in ${REF}) is missing and not in "
                "src/mpi/README.md's not-provided list\n")
        endif()
    endforeach()
    set(compared " and compared with the ${nref} MPI_ functions of ${REF}")
endif()
if(problems)
    message(FATAL_ERROR "${problems}")
endif()
message("${ndecl} MPI_/PMPI_ functions declared and exported${compared}")
