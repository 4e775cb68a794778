# Build options and optional dependencies. Each optional dependency is an
# AUTO/ON/OFF option: AUTO uses it when pkg-config finds it, ON fails the
# configure step when it is missing, OFF never uses it. What was left out and
# why is written into bm_config.h so that bm_info can tell the user.
find_package(Threads REQUIRED)
find_package(PkgConfig)

option(BM_WERROR "Treat warnings as errors" OFF)
set(BM_LOG_MAX_LEVEL "" CACHE STRING "Highest log level compiled in (1=error .. 5=trace); empty = by build type")

set(BM_WARN_FLAGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wformat=2 -Wvla -Wimplicit-fallthrough)
add_compile_options(${BM_WARN_FLAGS})
# POSIX and Linux interfaces (process_vm_readv, sendmmsg, memfd_create) are used throughout.
add_compile_definitions(_GNU_SOURCE)
if(BM_WERROR)
    add_compile_options(-Werror)
endif()
if(NOT CMAKE_BUILD_TYPE)
    set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "" FORCE)
endif()
if(BM_LOG_MAX_LEVEL STREQUAL "")
    if(CMAKE_BUILD_TYPE STREQUAL "Release")
        set(BM_LOG_MAX_LEVEL 3)
    else()
        set(BM_LOG_MAX_LEVEL 5)
    endif()
endif()

set(BM_SANITIZE "" CACHE STRING "Sanitizers: empty, address,undefined or thread")
if(BM_SANITIZE)
    add_compile_options(-fsanitize=${BM_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=${BM_SANITIZE})
endif()

set(BM_DEP_LIBS "")
set(BM_DEP_INCLUDES "")
set(BM_DEP_PC_REQUIRES "")

# bm_optional_dep(<VAR> <pkg-config name> <what it enables>)
# Sets BM_HAVE_<VAR> (0/1) and BM_<VAR>_WHY (reason when 0).
function(bm_optional_dep var pcname what)
    set(BM_WITH_${var} AUTO CACHE STRING "Use ${pcname} (${what}): AUTO, ON or OFF")
    set_property(CACHE BM_WITH_${var} PROPERTY STRINGS AUTO ON OFF)
    set(mode ${BM_WITH_${var}})
    set(have 0)
    set(why "")
    if(mode STREQUAL "OFF")
        set(why "disabled with -DBM_WITH_${var}=OFF")
    elseif(NOT PKG_CONFIG_FOUND)
        set(why "pkg-config not found")
    else()
        pkg_check_modules(PC_${var} QUIET ${pcname})
        if(PC_${var}_FOUND)
            set(have 1)
            if(NOT var IN_LIST BM_DEPS_LOADED_AT_RUN_TIME)
                set(BM_DEP_LIBS ${BM_DEP_LIBS} ${PC_${var}_LINK_LIBRARIES} PARENT_SCOPE)
            endif()
            set(BM_DEP_INCLUDES ${BM_DEP_INCLUDES} ${PC_${var}_INCLUDE_DIRS} PARENT_SCOPE)
            set(BM_DEP_PC_REQUIRES "${BM_DEP_PC_REQUIRES} ${pcname}" PARENT_SCOPE)
            set(why "found ${pcname} ${PC_${var}_VERSION}")
            set(PC_${var}_LIBDIR ${PC_${var}_LIBDIR} PARENT_SCOPE)
        else()
            set(why "${pcname} not found by pkg-config (Debian: see tools/install-deps.sh)")
        endif()
    endif()
    if(mode STREQUAL "ON" AND NOT have)
        message(FATAL_ERROR "BM_WITH_${var}=ON but ${pcname} is unavailable: ${why}")
    endif()
    message(STATUS "bitmover: ${what}: ${why}")
    set(BM_HAVE_${var} ${have} PARENT_SCOPE)
    set(BM_${var}_WHY "${why}" PARENT_SCOPE)
endfunction()

# libfabric is opened with dlopen when a transport first uses it
# (src/btl/btl_ofi_load.c): linked, its PSM dependencies cost every process
# 100-250 ms at start-up. libpmix likewise (src/runtime/rte_pmix.c), only
# when a PMIx launcher started the process: linked, it cost every process
# ~2 ms. Only their headers are used at build time.
set(BM_DEPS_LOADED_AT_RUN_TIME OFI PMIX)
bm_optional_dep(OFI libfabric "libfabric transports (ofi, dgram over libfabric)")
bm_optional_dep(HWLOC hwloc "topology-aware interface ranking")
bm_optional_dep(PMIX pmix "PMIx launch (Slurm, other PMIx launchers)")
