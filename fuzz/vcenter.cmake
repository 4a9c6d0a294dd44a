# vCenter SOAP replies: an observation's RetrievePropertiesEx result read into
# an inventory (src/drivers/vcenter/inventory.c through soap.c's reply parser).
if(TARGET gc_drv_vcenter)
  gc_fuzz_target(vcenter_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_vcenter_observe.c LIBS gc_drv_vcenter)
endif()
# Any other SOAP reply (soap.c's envelope and fault reading) and a
# QueryConfigTarget reply read into PCI targets (vmops.c).  Seeds in
# fuzz/corpus/vcenter_reply/: replies captured from the lab's vcsim with
# curl, and test_vmops.c's QueryConfigTarget reply with SR-IOV entries; the
# first line of each is "METHOD HTTP-STATUS".
if(TARGET gc_drv_vcenter)
  gc_fuzz_target(vcenter_reply SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_vcenter_reply.c LIBS gc_drv_vcenter)
endif()
