# Onyx switch output parsers (src/drivers/onyx/parse.c).
if(TARGET gc_drv_onyx_core)
  gc_fuzz_target(onyx_runcfg SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_onyx_runcfg.c LIBS gc_drv_onyx_core)
  gc_fuzz_target(onyx_version SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_onyx_version.c LIBS gc_drv_onyx_core)
endif()
