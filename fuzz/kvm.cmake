# The KVM host observation (src/drivers/kvm/observe.c), its recorder and
# every change script built on its facts.  Seeds: tests/data/kvm (one real
# capture, documented ones; its README says which) and a malformed one.
gc_fuzz_target(kvm_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_kvm_observe.c LIBS gc_drv_kvm)
