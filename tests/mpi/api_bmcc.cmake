# The api_bmcc test (cmake -P): bmcc compiles and links a plain MPI program
# with warnings as errors, "bmcc -show" prints a command without running it,
# the queries build systems use (-showme, -showme:compile/link/...,
# -compile_info, -link_info, --version) answer as Open MPI's and MPICH's
# wrappers do, bmcxx compiles and links a C++ MPI program, and bmrun runs the
# programs; with BUILD_DIR, the same through an install into a scratch
# prefix (mpicc, mpicxx, mpic++), and a CMake project that finds the
# installed mpicc with find_package(MPI). Inputs: BMCC, BMRUN, SRC, SRC_CXX,
# OUT, BUILD_DIR, SANITIZE (the build's -fsanitize= flag, or empty).
get_filename_component(bmdir ${BMCC} DIRECTORY)
set(BMCXX ${bmdir}/bmcxx)

function(expect_query wrapper query want notwant)
    execute_process(COMMAND ${wrapper} ${query} OUTPUT_VARIABLE out RESULT_VARIABLE rc
        OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0 OR NOT out MATCHES "${want}" OR (notwant AND out MATCHES "${notwant}"))
        message(FATAL_ERROR "${wrapper} ${query}: status ${rc}, printed '${out}' (want '${want}'"
            " and not '${notwant}')")
    endif()
endfunction()
foreach(w ${BMCC} ${BMCXX})
    expect_query(${w} -showme:compile "-I[^ ]*include$" "bitmover")
    expect_query(${w} -showme:link "-lbitmover" "-I")
    expect_query(${w} -showme:incdirs "include$" "")
    expect_query(${w} -showme:libs "^bitmover$" "")
    expect_query(${w} -showme:version "bitmover.*MPI 3.1" "")
    expect_query(${w} "-compile_info;x.c" "-I.* x.c$" "-lbitmover")
    expect_query(${w} "-link_info;x.c" "-I.*x.c.*-lbitmover" "")
    expect_query(${w} "-showme;x.c" "x.c .*-lbitmover" "")
    expect_query(${w} --version "[0-9]+\\.[0-9]+" "")
endforeach()
expect_query(${BMCXX} -showme:command "(c\\+\\+|g\\+\\+|clang\\+\\+)$" "")
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

# C++: bmcxx compiles and links, the program runs under bmrun.
execute_process(COMMAND ${BMCXX} -O1 -Wall -Wextra -Werror -pedantic -o ${OUT}_cxx ${SRC_CXX}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bmcxx failed (${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${BMRUN} -n 1 --timeout 60 ${OUT}_cxx
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "c\\+\\+ ok")
    message(FATAL_ERROR "bmrun -n 1 ${OUT}_cxx: status ${rc}:\n${out}${err}")
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
    foreach(cxx mpicxx mpic++ bmcxx)
        execute_process(COMMAND ${prefix}/bin/${cxx} -Wall -Werror -o ${OUT}_installed_cxx
            ${SRC_CXX} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
        if(NOT rc EQUAL 0)
            message(FATAL_ERROR "installed ${cxx} failed (${rc}):\n${out}${err}")
        endif()
        execute_process(COMMAND ${prefix}/bin/${cxx} -showme:incdirs OUTPUT_VARIABLE show)
        if(NOT show MATCHES "${prefix}/include/bitmover")
            message(FATAL_ERROR "installed ${cxx} does not use the installed headers: ${show}")
        endif()
    endforeach()
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
