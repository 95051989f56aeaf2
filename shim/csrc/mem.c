/* memcpy, memset and bcmp for this library alone (hidden: nothing outside it
 * binds to them, and the process's own libc functions are untouched).
 *
 * Why not libc's: Rust code calls them for slice copies, fills and compares. As
 * imports they cost a symbol lookup each at every process start, and in a fork
 * child that execs, the first call of each faults in a page of libc's text (the
 * kernel does not copy the page tables of file mappings at fork): two or three
 * page faults at every fork and exec of a shell (docs/adr/0007-process-start.md).
 * The copies the hooks make are short; `rep movsq`/`rep stosq` and a byte tail
 * are fast enough for them, and correct on every x86_64 CPU.
 *
 * Built with -ffreestanding -fno-builtin so that the compiler does not turn these
 * bodies back into calls to themselves. */
#include <stddef.h>

#define HIDDEN __attribute__((visibility("hidden")))

#if defined(__x86_64__)
/* Eight bytes per step, then the rest byte by byte. */
HIDDEN void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    void *d = dst;
    size_t words = n >> 3, bytes = n & 7;
    __asm__ volatile("rep movsq\n\tmov %[bytes], %%rcx\n\trep movsb"
                     : "+D"(d), "+S"(src), "+c"(words)
                     : [bytes] "r"(bytes)
                     : "memory");
    return dst;
}

HIDDEN void *memset(void *dst, int c, size_t n) {
    void *d = dst;
    size_t words = n >> 3, bytes = n & 7;
    unsigned long long v = (unsigned char)c * 0x0101010101010101ULL;
    __asm__ volatile("rep stosq\n\tmov %[bytes], %%rcx\n\trep stosb"
                     : "+D"(d), "+c"(words)
                     : "a"(v), [bytes] "r"(bytes)
                     : "memory");
    return dst;
}
#else
HIDDEN void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) *d++ = *s++;
    return dst;
}

HIDDEN void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}
#endif

/* Zero when the n bytes are equal (bcmp says nothing about order). Eight bytes at
 * a time, then the rest. */
HIDDEN int bcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    while (n >= 8) {
        unsigned long long u, v;
        __builtin_memcpy(&u, x, 8);
        __builtin_memcpy(&v, y, 8);
        if (u != v) return 1;
        x += 8;
        y += 8;
        n -= 8;
    }
    while (n--) {
        if (*x++ != *y++) return 1;
    }
    return 0;
}
