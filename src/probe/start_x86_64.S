/*
 * start_x86_64.S - the process entry point (_start) of
 * gpuclusterctl-probe-portable, the probe build that runs on glibc 2.17+.
 *
 * Why our own: the toolchain's Scrt1.o on glibc >= 2.34 calls
 * __libc_start_main@GLIBC_2.34, a version older glibc does not have, so the
 * binary would not even start on RHEL 8 (2.28) or Ubuntu 20.04 (2.31).  This
 * file does the same job and calls __libc_start_main@GLIBC_2.2.5, which every
 * x86_64 glibc has (2.34+ keep it as a compat symbol, the same function).
 * The portable target links with -nostartfiles and puts crti.o/crtbeginS.o
 * before, crtendS.o/crtn.o after the objects itself (src/probe/CMakeLists.txt).
 *
 * Process entry per the SysV x86-64 psABI (3.4 "Process Initialization"):
 *   (%rsp)     argc, then argv[0..argc-1], NULL, envp..., NULL, auxv
 *   %rsp       16-byte aligned
 *   %rdx       a function to register with atexit (the dynamic linker's
 *              _dl_fini, which runs every object's DT_FINI/fini_array, ours
 *              included), or 0
 *   %rbp       unspecified; the ABI asks the deepest frame to clear it
 *
 * The call, per the glibc ABI (__libc_start_main never returns):
 *   int __libc_start_main(int (*main)(int, char **, char **),  %rdi
 *                         int argc, char **argv,               %rsi, %rdx
 *                         void (*init)(void),                  %rcx = NULL
 *                         void (*fini)(void),                  %r8  = NULL
 *                         void (*rtld_fini)(void),             %r9
 *                         void *stack_end);                    (%rsp) at the call
 *
 * init and fini are NULL.  What that means for ELF constructors:
 *   - glibc >= 2.34: NULL init is the new convention; libc itself runs the
 *     executable's DT_INIT and init_array (call_init in csu/libc-start.c).
 *   - glibc <  2.34: libc calls init only when it is not NULL, and nobody
 *     else runs the executable's own constructors (ld.so runs those of the
 *     shared libraries only).  So on RHEL 8 / Ubuntu 20.04 the probe's
 *     _init and init_array do NOT run.
 * _init (crti.o) only calls __gmon_start__, which exists in gprof builds.
 * The probe has no constructors of its own; the one init_array entry is
 * crtbeginS.o's frame_dummy (registers transactional-memory clones when
 * libitm is loaded: nothing for us).  Destructors run on every version:
 * rtld_fini (_dl_fini) runs the executable's fini_array, and exit() runs
 * atexit handlers.  A constructor added later (__attribute__((constructor)),
 * a library with one) would silently not run on old guests, so the build
 * (src/probe/portable_check.cmake) and the test probe_portable_abi fail when
 * init_array holds anything besides crtbeginS.o's frame_dummy.  (A
 * preinit_array would still run: ld.so runs the executable's, on every
 * version.)
 */

	.symver	__libc_start_main, __libc_start_main@GLIBC_2.2.5

	.text
	.globl	_start
	.type	_start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip		/* outermost frame: unwinders stop here */
	xorl	%ebp, %ebp		/* no caller frame */
	movq	%rdx, %r9		/* rtld_fini, from the dynamic linker */
	popq	%rsi			/* argc; %rsp now points at argv[0] */
	movq	%rsp, %rdx		/* argv */
	andq	$-16, %rsp		/* realign (the pop moved it by 8) */
	pushq	%rax			/* padding, so that after the next push */
	pushq	%rsp			/* stack_end (7th arg) %rsp is 16-aligned at the call */
	xorl	%ecx, %ecx		/* init = NULL (see above) */
	xorl	%r8d, %r8d		/* fini = NULL: rtld_fini covers our fini_array */
	leaq	main(%rip), %rdi	/* main is in this PIE: PC-relative */
	call	*__libc_start_main@GOTPCREL(%rip)
	hlt				/* not reached: __libc_start_main calls exit */
	.cfi_endproc
	.size	_start, . - _start

	/* the stack is not executable */
	.section .note.GNU-stack, "", @progbits
