//! C programs that more than one end-to-end test compiles.

/// `forker N PRINTENV REPORT`: N fork+execve, N vfork+execve and N posix_spawn of
/// /bin/true, then one vfork+execve of printenv writing its report to REPORT;
/// prints a summary.
pub const FORKER_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static atomic_int stop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_counter;
static atomic_ulong total_ops;

static void *worker(void *arg) {
    /* SCHED_IDLE: the workers take every cycle the main thread and its children
       leave, on every core, without starving them (on 2 cores, 8 spinning threads at
       normal priority make each fork+exec+wait take ~20 times longer). */
    struct sched_param sp = { .sched_priority = 0 };
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    unsigned seed = (unsigned)(uintptr_t)arg;
    unsigned long ops = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t n = 16 + (size_t)(rand_r(&seed) % 8192);
        char *p = malloc(n);
        if (!p) abort();
        memset(p, (int)(ops & 0xff), n);
        pthread_mutex_lock(&mu);
        shared_counter += p[n - 1] != 0 ? 1 : 2;
        pthread_mutex_unlock(&mu);
        free(p);
        ops++;
    }
    atomic_fetch_add(&total_ops, ops);
    return NULL;
}

static int wait_ok(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return 0;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv) {
    if (argc != 4) return 64;
    int n = atoi(argv[1]);
    char *true_argv[] = { "true", NULL };
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) return 65;

    int fork_fail = 0, vfork_fail = 0, spawn_fail = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) { fork_fail++; continue; }
        if (pid == 0) {
            execve("/bin/true", true_argv, environ);
            _exit(127);
        }
        if (!wait_ok(pid)) fork_fail++;
    }
    for (int i = 0; i < n; i++) {
        pid_t pid = vfork();
        if (pid < 0) { vfork_fail++; continue; }
        if (pid == 0) {
            execve("/bin/true", true_argv, environ);
            _exit(127);
        }
        if (!wait_ok(pid)) vfork_fail++;
    }
    for (int i = 0; i < n; i++) {
        pid_t pid;
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, true_argv, environ) != 0) { spawn_fail++; continue; }
        if (!wait_ok(pid)) spawn_fail++;
    }
    /* One more, to see what such a child received. */
    char report[4200];
    snprintf(report, sizeof report, "--report=%s", argv[3]);
    char *pe_argv[] = { argv[2], report, NULL };
    pid_t pid = vfork();
    if (pid == 0) {
        execve(argv[2], pe_argv, environ);
        _exit(127);
    }
    int report_ok = pid > 0 && wait_ok(pid);

    atomic_store(&stop, 1);
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    printf("fork=%d fork_failures=%d vfork=%d vfork_failures=%d spawn=%d spawn_failures=%d report=%d worker_ops=%lu\n",
           n, fork_fail, n, vfork_fail, n, spawn_fail, report_ok, (unsigned long)atomic_load(&total_ops));
    return fork_fail || vfork_fail || spawn_fail || !report_ok ? 1 : 0;
}
"#;
