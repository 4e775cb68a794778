# The api_bmcc test (cmake -P): bmcc compiles and links a plain MPI program
# with warnings as errors, "bmcc -show" prints a command without running it,
# and bmrun runs the program on 3 ranks; with BUILD_DIR, the same through an
# install into a scratch prefix, and a CMake project that finds the installed
# mpicc with find_package(MPI). Inputs: BMCC, BMRUN, SRC, OUT, BUILD_DIR,
# SANITIZE (the build's -fsanitize= flag, or empty).
execute_process(COMMAND ${BMCC} -show -c x.c OUTPUT_VARIABLE show RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT show MATCHES "-I" OR show MATCHES "-lbitmover")
    message(FATAL_ERROR "bmcc -show -c: status ${rc}, printed '${show}' (want -I..., no -lbitmover)")
endif()
execute_process(COMMAND ${BMCC} -show -o x x.c OUTPUT_VARIABLE show RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT show MATCHES "-lbitmover" OR NOT show MATCHES "rpath")
    message(FATAL_ERROR "bmcc -show: status ${rc}, printed '${show}' (want -lbitmover and an rpath)")
endif()

file(REMOVE ${OUT})
execute_process(COMMAND ${BMCC} -O1 -Wall -Wextra -Werror -o ${OUT} ${SRC}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bmcc failed (${rc}):\n${out}${err}")
endif()

execute_process(COMMAND ${BMRUN} -n 3 --timeout 60 ${OUT}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "ring: 3 ranks, token 3 ok")
    message(FATAL_ERROR "bmrun -n 3 ${OUT}: status ${rc}, output above")
endif()

# The install tree: mpicc (a symlink to the installed bmcc) finds headers and
# library relative to itself, and the installed bmrun runs the result.
if(BUILD_DIR)
    set(prefix ${OUT}_install)
    file(REMOVE_RECURSE ${prefix})
    execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}${err}")
    endif()
    execute_process(COMMAND ${prefix}/bin/mpicc -Wall -Werror -o ${OUT}_installed ${SRC}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "installed mpicc failed (${rc}):\n${out}${err}")
    endif()
    execute_process(COMMAND ${prefix}/bin/mpicc -show x.c OUTPUT_VARIABLE show)
    if(NOT show MATCHES "${prefix}/include/bitmover")
        message(FATAL_ERROR "installed mpicc does not use the installed headers: ${show}")
    endif()
    set(runner ${prefix}/bin/bmrun)
    if(NOT EXISTS ${runner})
        set(runner ${BMRUN})
    endif()
    execute_process(COMMAND ${runner} -n 2 --timeout 60 ${OUT}_installed
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${out}${err}")
    if(NOT rc EQUAL 0 OR NOT out MATCHES "ring: 2 ranks, token 2 ok")
        message(FATAL_ERROR "${runner} -n 2 ${OUT}_installed: status ${rc}, output above")
    endif()

    # pkg-config: the installed bitmover.pc points into this prefix (it is
    # relocatable), and its flags build a program that runs.
    find_program(PKG_CONFIG_EXE pkg-config)
    if(PKG_CONFIG_EXE)
        execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig
            ${PKG_CONFIG_EXE} --cflags --libs bitmover
            RESULT_VARIABLE rc OUTPUT_VARIABLE pcflags ERROR_VARIABLE err
            OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT rc EQUAL 0 OR NOT pcflags MATCHES "${prefix}/lib/pkgconfig")
            message(FATAL_ERROR "pkg-config bitmover (${rc}) does not point into ${prefix}: ${pcflags}${err}")
        endif()
        separate_arguments(pcflags UNIX_COMMAND "${pcflags}")
        separate_arguments(sanflags UNIX_COMMAND "${SANITIZE}")
        execute_process(COMMAND cc ${sanflags} -o ${OUT}_pkgconfig ${SRC} ${pcflags}
            RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0)
            message(FATAL_ERROR "cc with pkg-config flags failed (${rc}):\n${out}${err}")
        endif()
        execute_process(COMMAND ${runner} -n 2 --timeout 60 ${OUT}_pkgconfig
            RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0 OR NOT out MATCHES "ring: 2 ranks, token 2 ok")
            message(FATAL_ERROR "program built with pkg-config flags: status ${rc}:\n${out}${err}")
        endif()
    endif()

    # A CMake project finds the installed mpicc with find_package(MPI).
    set(proj ${OUT}_findmpi)
    file(REMOVE_RECURSE ${proj})
    file(WRITE ${proj}/CMakeLists.txt "cmake_minimum_required(VERSION 3.20)
project(findmpi C)
find_package(MPI REQUIRED COMPONENTS C)
message(STATUS \"bm-found MPI \${MPI_C_VERSION}: \${MPI_C_LIBRARIES}\")
add_executable(ring ${SRC})
target_link_libraries(ring MPI::MPI_C)
")
    execute_process(COMMAND ${CMAKE_COMMAND} -S ${proj} -B ${proj}/build
        -DMPI_C_COMPILER=${prefix}/bin/mpicc
        # FindMPI keeps only -I/-L/-l from "mpicc -show": a sanitized
        # library needs the sanitizer flags given to the project itself.
        "-DCMAKE_C_FLAGS=${SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "bm-found MPI 3.1: ${prefix}/lib")
        message(FATAL_ERROR "find_package(MPI) with the installed mpicc (${rc}):\n${out}${err}")
    endif()
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${proj}/build
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "building with MPI::MPI_C failed (${rc}):\n${out}${err}")
    endif()
    execute_process(COMMAND ${runner} -n 2 --timeout 60 ${proj}/build/ring
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "ring: 2 ranks, token 2 ok")
        message(FATAL_ERROR "the find_package(MPI) build did not run (${rc}):\n${out}${err}")
    endif()
    file(REMOVE_RECURSE ${prefix} ${proj})
endif()
