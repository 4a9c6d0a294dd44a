# Onyx switch output parsers (src/drivers/onyx/parse.c).
if(TARGET gc_drv_onyx_core)
  gc_fuzz_target(onyx_runcfg SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_onyx_runcfg.c LIBS gc_drv_onyx_core)
  gc_fuzz_target(onyx_version SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_onyx_version.c LIBS gc_drv_onyx_core)
endif()
# The CLI session on whatever a switch sends (src/drivers/onyx/session.c):
# login, enable, the observation and an apply over a fake channel.  Seeds
# in fuzz/corpus/onyx_session/: conversations around the captures of
# tests/data/onyx/ (replies separated by the byte 0x1e).
if(TARGET gc_drv_onyx_core)
  gc_fuzz_target(onyx_session SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_onyx_session.c LIBS gc_drv_onyx_core)
endif()
