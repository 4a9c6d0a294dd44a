gc_fuzz_target(guest_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_guest_observe.c LIBS gc_drv_guest)
