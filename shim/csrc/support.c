/* Small pieces of libenvshim.so that need C:
 *  - the per-thread slot of the reusable scratch region (initial-exec TLS, so reading
 *    it is one %fs-relative load: no __tls_get_addr call, which could allocate);
 *    see src/platform/scratch.rs; and the thread's own claim of the env-file cache (see
 *    src/state/env_cache.rs);
 *  - a hidden rust_eh_personality: the precompiled `core` used by unoptimised (dev)
 *    builds references it from its unwind tables although nothing ever unwinds
 *    (panic = "abort"); without a definition a dev build of the library fails to load
 *    with "undefined symbol: rust_eh_personality". Release builds (LTO) never
 *    reference it. It is never called; if it were, trapping is the only sane answer. */
#include <stddef.h>
#include <sys/types.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* Must match `TlsSlot` in src/platform/scratch.rs. */
struct envshim_tls_slot {
    void *ptr;     /* cached anonymous mapping, or NULL */
    size_t len;    /* its length in bytes */
    int owner;     /* pid of the process using it right now, 0 when free */
};

static __thread struct envshim_tls_slot slot __attribute__((tls_model("initial-exec")));

HIDDEN struct envshim_tls_slot *envshim_tls_slot(void) { return &slot; }

/* Where this thread's errno is, once asked (src/platform/sys.rs: errno_ptr). Read and
 * written from Rust through its initial-exec TLS offset. */
HIDDEN __thread int *envshim_errno_slot __attribute__((tls_model("initial-exec")));

/* Whether this thread holds the env-file cache through its own claim, which a
 * single-threaded process uses instead of the shared one (src/state/env_cache.rs). Read
 * and written from Rust through its initial-exec TLS offset. */
HIDDEN __thread unsigned char envshim_cache_held __attribute__((tls_model("initial-exec")));

/* Weak: a test build of the crate links std, whose own definition wins. */
HIDDEN __attribute__((weak)) void rust_eh_personality(void) { __builtin_trap(); }
