# Node probe parsers (src/probe/parse.c, qpx.c, expect.c): one target each.
# Seeds in fuzz/corpus/probe_<parser>/ are the captured outputs of
# tests/data/probe/ (REAL-FORMATS C.*), good and broken.
foreach(p ibv_devinfo show_gids mlnx_qos traffic_class nvsmi qp_line expect)
  gc_fuzz_target(probe_${p} SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_probe_${p}.c LIBS gc_probe)
endforeach()
