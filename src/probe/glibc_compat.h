/*
 * glibc_compat.h - pins the glibc symbol versions of
 * gpuclusterctl-probe-portable so that it runs on glibc 2.17+ (RHEL 7,
 * Ubuntu 14.04 and later) although it is built against a newer glibc.
 * Force-included (-include) into every C file of that target only; the
 * ordinary gpuclusterctl-probe does not see it.
 *
 * A symbol gets the newest version the build machine's glibc defines
 * (`dlopen@GLIBC_2.34` on glibc 2.34+), and the dynamic linker refuses to
 * start a binary that asks for a version the guest's glibc lacks.  `.symver`
 * binds the reference to an older version the build glibc still exports:
 *
 *   dl*        moved from libdl into libc in 2.34; libc keeps the old
 *              GLIBC_2.2.5 versions as compat symbols.  On older glibc they
 *              live in libdl.so.2, so the target links libdl.so.2 as
 *              DT_NEEDED (-l:libdl.so.2): the dynamic linker looks a
 *              versioned symbol up by version name in every loaded object,
 *              and finds dlopen@GLIBC_2.2.5 in libdl there, in libc here.
 *
 * __libc_start_main (GLIBC_2.34 in the toolchain's Scrt1.o) is pinned in
 * start_x86_64.S, which replaces Scrt1.o.  Everything else the probe calls
 * is at most GLIBC_2.17 (clock_gettime@2.17, aligned_alloc@2.16,
 * memcpy@2.14, ...); src/probe/portable_check.cmake (at build time) and the
 * test probe_portable_abi fail naming any symbol newer than 2.17, which is
 * then pinned here or avoided in the code.  The versions are x86_64's
 * (GLIBC_2.2.5 is its baseline); the target is built on x86_64 only.
 */
#ifndef GC_PROBE_GLIBC_COMPAT_H
#define GC_PROBE_GLIBC_COMPAT_H

#if !defined(__x86_64__)
#error "glibc_compat.h: symbol versions are pinned for x86_64 only"
#endif

__asm__(".symver dlopen, dlopen@GLIBC_2.2.5");
__asm__(".symver dlsym, dlsym@GLIBC_2.2.5");
__asm__(".symver dlerror, dlerror@GLIBC_2.2.5");
__asm__(".symver dlclose, dlclose@GLIBC_2.2.5");

#endif
