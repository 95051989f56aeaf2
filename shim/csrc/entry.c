/* Running libenvshim.so as a program (`/usr/lib/envshim/libenvshim.so`), as one
   runs glibc's libc.so.6: the kernel starts the dynamic loader this section names,
   the loader maps the library and its dependencies and jumps to envshim_entry,
   which says what the shim is and which policy it would apply here
   (src/hooks/describe.rs), then exits. The section costs nothing when the library is
   preloaded: the loader reads a program's interpreter only for the program. */

#if defined(__x86_64__)
__attribute__((section(".interp"), used))
static const char envshim_interp[] = "/lib64/ld-linux-x86-64.so.2";
#elif defined(__aarch64__)
__attribute__((section(".interp"), used))
static const char envshim_interp[] = "/lib/ld-linux-aarch64.so.1";
#endif

extern void envshim_describe(void) __attribute__((noreturn));

/* Entered by a jump with the stack as the kernel left it (no return address), so
   the stack is realigned before the first call. */
#if defined(__x86_64__)
__attribute__((noreturn, used, force_align_arg_pointer))
#else
__attribute__((noreturn, used))
#endif
void envshim_entry(void) {
#if defined(__x86_64__) || defined(__aarch64__)
    /* A reference, so that the linker's garbage collection keeps the section. */
    __asm__ volatile("" : : "r"(envshim_interp));
#endif
    envshim_describe();
}
