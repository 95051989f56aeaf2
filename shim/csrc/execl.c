/* The variadic members of the exec family: execl, execlp, execle.
 *
 * Rust cannot define C-variadic functions on stable, so these live here. Each counts
 * its arguments on a va_copy of the list, copies EVERY argument into a stack array
 * (a VLA, as glibc does) and calls the shim's Rust entry points envshim_execv,
 * envshim_execvp and envshim_execve directly. Those are declared hidden, so the calls
 * bind inside libenvshim.so and never go through the PLT entries of the hooked names.
 *
 * No allocation, no lock: these run on the exec path (see src/hooks/exec.rs).
 *
 * execl(path, NULL) is legal (an empty argv): when the first argument is already the
 * terminating NULL we read nothing more (execle then reads envp right after it). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN int envshim_execv(const char *path, char *const argv[]);
HIDDEN int envshim_execvp(const char *file, char *const argv[]);
HIDDEN int envshim_execve(const char *path, char *const argv[], char *const envp[]);

/* Number of arguments from `arg0` up to (not including) the NULL; -1 if more than
 * INT_MAX - 1, which glibc reports as E2BIG. `ap` is consumed. */
static long count_args(const char *arg0, va_list ap)
{
    long n = 0;
    if (arg0 == NULL)
        return 0;
    n = 1;
    while (va_arg(ap, const char *) != NULL) {
        if (++n >= INT_MAX - 1)
            return -1;
    }
    return n;
}

/* Fills argv[0..n] from arg0 and `ap` (reading n - 1 more arguments) and NULL-terminates
 * it. Leaves `ap` just after the last argument read (before the NULL if n > 0). */
static void fill_args(const char **argv, long n, const char *arg0, va_list *ap)
{
    if (n > 0) {
        argv[0] = arg0;
        for (long i = 1; i < n; i++)
            argv[i] = va_arg(*ap, const char *);
    }
    argv[n] = NULL;
}

/* The start every variadic hook shares: count the arguments from `arg` on a copy of
 * `ap`, fail with E2BIG past glibc's limit, then copy every argument into the VLA
 * `argv` (of `n` + 1 entries) declared in the caller's frame, leaving `ap` just after
 * the last argument read. A macro, not a function: the VLA and the va_list must
 * belong to the hook's own frame. `ap` must have been started with va_start. */
#define GATHER_ARGS(argv, n, arg, ap)        \
    va_list gather_copy_;                    \
    va_copy(gather_copy_, ap);               \
    long n = count_args(arg, gather_copy_);  \
    va_end(gather_copy_);                    \
    if (n < 0) {                             \
        va_end(ap);                          \
        errno = E2BIG;                       \
        return -1;                           \
    }                                        \
    const char *argv[n + 1];                 \
    fill_args(argv, n, arg, &ap)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(argv, n, arg, ap);
    va_end(ap);
    return envshim_execv(path, (char *const *)argv);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(argv, n, arg, ap);
    va_end(ap);
    return envshim_execvp(file, (char *const *)argv);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    GATHER_ARGS(argv, n, arg, ap);
    if (n > 0)
        (void)va_arg(ap, const char *); /* the NULL that ends the arguments */
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return envshim_execve(path, (char *const *)argv, envp);
}
