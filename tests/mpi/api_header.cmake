# The api_header test (cmake -P): include/mpi.h compiles cleanly as C99 and
# C11 with -pedantic, and as C++ (C++11 and C++17, with the C++ compiler and
# with clang++), all with -Wall -Wextra -pedantic and warnings as errors, and
# a C++ program calling MPI links against libbitmover and runs. Inputs: CC,
# CXX (empty when none is installed: the C++ half is then not run, and says
# so), CLANGXX (empty when not installed), INCDIR, LIBDIR, SRC_C, SRC_CXX,
# OUT, SANITIZE.
foreach(std c99 c11)
    execute_process(COMMAND ${CC} -std=${std} -pedantic -Wall -Wextra -Werror
        -Wstrict-prototypes -Wmissing-prototypes -I${INCDIR} -c ${SRC_C} -o ${OUT}_${std}.o
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "mpi.h as ${std} failed:\n${out}${err}")
    endif()
endforeach()

if(NOT CXX)
    message("no C++ compiler was found at configure time: only the C half ran")
    return()
endif()
foreach(std c++11 c++17)
    execute_process(COMMAND ${CXX} -std=${std} -pedantic -Wall -Wextra -Werror -I${INCDIR}
        ${SRC_CXX} -o ${OUT}_${std} -L${LIBDIR} -Wl,-rpath,${LIBDIR} -lbitmover ${SANITIZE}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "mpi.h as ${std} failed:\n${out}${err}")
    endif()
endforeach()
if(CLANGXX)
    foreach(std c++11 c++17)
        execute_process(COMMAND ${CLANGXX} -std=${std} -pedantic -Wall -Wextra -Werror
            -I${INCDIR} -c ${SRC_CXX} -o ${OUT}_clang_${std}.o
            RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0)
            message(FATAL_ERROR "mpi.h under clang++ -std=${std} failed:\n${out}${err}")
        endif()
    endforeach()
else()
    message("clang++ is not installed: mpi.h was checked with ${CXX} only")
endif()
execute_process(COMMAND ${OUT}_c++17 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "c\\+\\+ ok")
    message(FATAL_ERROR "the C++ program failed (${rc}):\n${out}${err}")
endif()
