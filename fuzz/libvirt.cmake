# The libvirt driver's readers of domain and network XML (first byte: 0 a
# domain, 1 a network).  Seeds: the lab's libvirtd after test_kvm's apply.
gc_fuzz_target(libvirt_domain SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_libvirt_domain.c
  LIBS gc_drv_libvirt gc_graph)
