# Validate: what the MPI workload prints (src/validate/mpi_parse.c).  Seeds
# in fuzz/corpus/mpi_nccl/ are tests/data/mpi/ (captures, synthetic runs,
# the probe's line) and broken variants.
gc_fuzz_target(mpi_nccl SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_mpi_nccl.c LIBS gc_validate
  INCLUDES ${CMAKE_SOURCE_DIR}/src/validate)
# The node probe's JSON report as validate reads it (src/validate/probe_report.c).
# Seeds in fuzz/corpus/validate_probe/: reports of the real probe (the lab's
# soft-RoCE guest, a real H100 guest's CUDA part), and broken variants.
gc_fuzz_target(validate_probe SOURCES ${CMAKE_SOURCE_DIR}/fuzz/fuzz_validate_probe.c LIBS gc_validate)
