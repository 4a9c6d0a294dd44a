# portable_check.cmake - run after linking gpuclusterctl-probe-portable
# (cmake -DBIN=... -DREADELF=... -DOBJDUMP=... -DCRTBEGIN=... -P this file);
# fails the build when the binary would not start, or would start wrong, on
# glibc 2.17-2.33:
#   - a dynamic symbol or a version requirement newer than GLIBC_2.17 (or a
#     non-numeric one such as GLIBC_ABI_DT_RELR); each offender is named;
#   - more .init_array than crtbeginS.o brings: with our _start
#     (start_x86_64.S) glibc < 2.34 does not run the executable's
#     constructors, so one added later would silently not run on old guests.
# The test probe_portable_abi checks the same and more, and runs the binary.
cmake_minimum_required(VERSION 3.18)
foreach(v BIN READELF OBJDUMP CRTBEGIN)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "portable_check.cmake: -D${v}= is required")
  endif()
endforeach()

set(_max_major 2)
set(_max_minor 17)
set(_bad "")

# true when GLIBC_<ver> is newer than 2.17 or not a plain version number
function(too_new ver out)
  if(ver MATCHES "^([0-9]+)\\.([0-9]+)(\\.[0-9]+)?$")
    set(_maj ${CMAKE_MATCH_1})
    set(_min ${CMAKE_MATCH_2})
    if(_maj GREATER _max_major OR (_maj EQUAL _max_major AND _min GREATER _max_minor))
      set(${out} TRUE PARENT_SCOPE)
    else()
      set(${out} FALSE PARENT_SCOPE)
    endif()
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

execute_process(COMMAND ${OBJDUMP} -T ${BIN} OUTPUT_VARIABLE _dyn RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -T ${BIN} failed")
endif()
string(REPLACE "\n" ";" _lines "${_dyn}")
foreach(l IN LISTS _lines)
  # "... DF *UND*  0000000000000000 (GLIBC_2.34) dlopen"
  if(l MATCHES "[ (]GLIBC_([^ )]+)\\)? +([^ ]+)$")
    set(_sym ${CMAKE_MATCH_2})
    too_new("${CMAKE_MATCH_1}" _new)
    if(_new)
      list(APPEND _bad "${_sym}@GLIBC_${CMAKE_MATCH_1}")
    endif()
  endif()
endforeach()

execute_process(COMMAND ${READELF} -V -W ${BIN} OUTPUT_VARIABLE _ver RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -V ${BIN} failed")
endif()
string(REGEX MATCHALL "Name: GLIBC_[^ \n]+" _needs "${_ver}")
foreach(n IN LISTS _needs)
  string(REGEX REPLACE "^Name: GLIBC_" "" n "${n}")
  too_new("${n}" _new)
  if(_new)
    list(APPEND _bad "version requirement GLIBC_${n}")
  endif()
endforeach()
if(_bad)
  list(REMOVE_DUPLICATES _bad)
  list(JOIN _bad ", " _bad)
  message(FATAL_ERROR "${BIN}: newer than glibc 2.17: ${_bad} "
    "(pin it in src/probe/glibc_compat.h or avoid it; docs/probe.md)")
endif()

# size of a section in hex from `readelf -S -W`, "" when absent
function(section_size file name out)
  execute_process(COMMAND ${READELF} -S -W ${file} OUTPUT_VARIABLE _s RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -S ${file} failed")
  endif()
  string(REPLACE "[" "<" _s "${_s}")
  string(REPLACE "]" ">" _s "${_s}")
  string(REPLACE "\n" ";" _s "${_s}")
  set(${out} "" PARENT_SCOPE)
  foreach(l IN LISTS _s)
    # "  <21> .init_array  INIT_ARRAY  0000000000003d98 002d98 000008 08  WA  0   0  8"
    # (a relocatable object has no address column's meaning but the same layout)
    if(l MATCHES " \\${name} +[A-Z_]+ +[0-9a-f]+ +[0-9a-f]+ +([0-9a-f]+) ")
      set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

section_size(${BIN} .init_array _have)
section_size(${CRTBEGIN} .init_array _want)
if(_want STREQUAL "")
  set(_want 0)
endif()
if(_have STREQUAL "")
  set(_have 0)
endif()
math(EXPR _have "0x${_have}")
math(EXPR _want "0x${_want}")
if(NOT _have EQUAL _want)
  message(FATAL_ERROR "${BIN}: .init_array is ${_have} bytes, crtbeginS.o brings ${_want}: "
    "a constructor was added; glibc < 2.34 would not run it with our _start "
    "(src/probe/start_x86_64.S explains; remove it or run it from main)")
endif()
