# Fuzz targets for what the executor reads from outside: observed-state
# snapshots and ESXi observation output.
gc_fuzz_target(observed SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_observed.c LIBS gc_plan)
gc_fuzz_target(esxi_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_esxi_observe.c LIBS gc_drv_esxi)
