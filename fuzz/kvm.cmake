gc_fuzz_target(kvm_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_kvm_observe.c LIBS gc_drv_kvm)
