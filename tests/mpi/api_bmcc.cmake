# The api_bmcc test (cmake -P): bmcc compiles and links a plain MPI program
# with warnings as errors, "bmcc -show" prints a command without running it,
# and bmrun runs the program on 3 ranks. Inputs: BMCC, BMRUN, SRC, OUT.
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
