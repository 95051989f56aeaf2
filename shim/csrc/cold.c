/* Lazily bound libc calls: thin hidden wrappers around the libc functions that only
 * system(), popen(), pclose(), rare constructor paths and the fork hook's clock use.
 *
 * Why: rustc calls imported functions through GOT entries (R_X86_64_GLOB_DAT), which the
 * loader must resolve when the library is loaded, in every process, spawning or not:
 * about 700 instructions per symbol. C calls go through the PLT, and build.rs links
 * with -z lazy, so these are resolved on first use instead. A process that never calls
 * system/popen never pays for them. Functions used between fork/vfork and exec are NOT
 * here (they stay eagerly bound; see src/hooks/exec.rs): lazy binding takes no lock, but the
 * exec path should not even need the loader.
 *
 * Each wrapper has the libc function's exact signature; see src/platform/cold.rs. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sched.h>
#include <sys/time.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN int envshim_c_fcntl_int(int fd, int cmd, int arg) { return fcntl(fd, cmd, arg); }
HIDDEN FILE *envshim_c_fdopen(int fd, const char *mode) { return fdopen(fd, mode); }
HIDDEN int envshim_c_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
HIDDEN pid_t envshim_c_waitpid(pid_t pid, int *status, int options) { return waitpid(pid, status, options); }
HIDDEN int envshim_c_sched_yield(void) { return sched_yield(); }
HIDDEN char *envshim_c_realpath(const char *path, char *resolved) { return realpath(path, resolved); }
/* The time in microseconds, or -1. gettimeofday, not clock_gettime: its symbol
 * version (GLIBC_2.2.5) is one the library needs anyway, and each further version
 * the library needs is checked by the loader at every process start. */
HIDDEN long long envshim_c_now_us(void) {
    struct timeval tv;
    if (gettimeofday(&tv, NULL) != 0) return -1;
    return (long long)tv.tv_sec * 1000000 + tv.tv_usec;
}

HIDDEN int envshim_c_sigaction(int sig, const struct sigaction *act, struct sigaction *old) { return sigaction(sig, act, old); }
HIDDEN int envshim_c_sigemptyset(sigset_t *set) { return sigemptyset(set); }
HIDDEN int envshim_c_sigaddset(sigset_t *set, int sig) { return sigaddset(set, sig); }
/* sigprocmask, not pthread_sigmask: the same call in glibc (the calling thread's mask),
 * but pthread_sigmask moved into libc.so.6 in glibc 2.32 under a new version, which an
 * older C library lacks, and then the loader refuses to load the shim at all. */
HIDDEN int envshim_c_sigprocmask(int how, const sigset_t *set, sigset_t *old) { return sigprocmask(how, set, old); }
HIDDEN int envshim_c_pthread_setcancelstate(int state, int *old) { return pthread_setcancelstate(state, old); }

HIDDEN int envshim_c_posix_spawnattr_init(posix_spawnattr_t *a) { return posix_spawnattr_init(a); }
HIDDEN int envshim_c_posix_spawnattr_destroy(posix_spawnattr_t *a) { return posix_spawnattr_destroy(a); }
HIDDEN int envshim_c_posix_spawnattr_setflags(posix_spawnattr_t *a, short f) { return posix_spawnattr_setflags(a, f); }
HIDDEN int envshim_c_posix_spawnattr_setsigdefault(posix_spawnattr_t *a, const sigset_t *s) { return posix_spawnattr_setsigdefault(a, s); }
HIDDEN int envshim_c_posix_spawnattr_setsigmask(posix_spawnattr_t *a, const sigset_t *s) { return posix_spawnattr_setsigmask(a, s); }

HIDDEN int envshim_c_posix_spawn_file_actions_init(posix_spawn_file_actions_t *fa) { return posix_spawn_file_actions_init(fa); }
HIDDEN int envshim_c_posix_spawn_file_actions_destroy(posix_spawn_file_actions_t *fa) { return posix_spawn_file_actions_destroy(fa); }
HIDDEN int envshim_c_posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *fa, int fd, int newfd) { return posix_spawn_file_actions_adddup2(fa, fd, newfd); }
HIDDEN int envshim_c_posix_spawn_file_actions_addclose(posix_spawn_file_actions_t *fa, int fd) { return posix_spawn_file_actions_addclose(fa, fd); }
/* abort: only reached when an invariant is broken (the panic handler, a dlsym that
 * finds our own symbol), so it need not cost a lookup at every load. */
HIDDEN void envshim_c_abort(void) { abort(); }
