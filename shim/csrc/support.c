/* Small pieces of libenvshim.so that need C:
 *  - the per-thread slot of the reusable scratch region (initial-exec TLS, so reading
 *    it is one %fs-relative load: no __tls_get_addr call, which could allocate);
 *    see src/scratch.rs;
 *  - the bounds of this library's own image, used to detect a dlsym(RTLD_NEXT) that
 *    returns one of our own symbols; see src/real.rs;
 *  - a hidden rust_eh_personality: the precompiled `core` used by unoptimised (dev)
 *    builds references it from its unwind tables although nothing ever unwinds
 *    (panic = "abort"); without a definition a dev build of the library fails to load
 *    with "undefined symbol: rust_eh_personality". Release builds (LTO) never
 *    reference it. It is never called; if it were, trapping is the only sane answer. */
#include <stddef.h>
#include <sys/types.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* Must match `TlsSlot` in src/scratch.rs. */
struct envshim_tls_slot {
    void *ptr;     /* cached anonymous mapping, or NULL */
    size_t len;    /* its length in bytes */
    int owner;     /* pid of the process using it right now, 0 when free */
};

static __thread struct envshim_tls_slot slot __attribute__((tls_model("initial-exec")));

HIDDEN struct envshim_tls_slot *envshim_tls_slot(void) { return &slot; }

/* Linker-defined: the ELF header of this object and the end of its image. Declared
 * hidden so that they bind to this object's own definitions. */
extern const char __ehdr_start[] HIDDEN;
extern const char _end[] HIDDEN;

HIDDEN const void *envshim_self_lo(void) { return __ehdr_start; }
HIDDEN const void *envshim_self_hi(void) { return _end; }

HIDDEN void rust_eh_personality(void) { __builtin_trap(); }
