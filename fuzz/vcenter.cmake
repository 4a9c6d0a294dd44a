# vCenter SOAP replies: an observation's RetrievePropertiesEx result read into
# an inventory (src/drivers/vcenter/inventory.c through soap.c's reply parser).
if(TARGET gc_drv_vcenter)
  gc_fuzz_target(vcenter_observe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_vcenter_observe.c LIBS gc_drv_vcenter)
endif()
