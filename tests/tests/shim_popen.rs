//! `popen` under the shim is glibc's `popen` in every way a program can see
//! (shim/src/hooks/popen.rs, docs/adr/0013-popen-streams.md): the same C program, run
//! without the shim and under it, prints the same lines, property by property.
//!
//! Each property is one mode of `POPEN_C`; the test runs the mode both ways and
//! compares stdout, and also checks the lines glibc prints, so that a property
//! both would get wrong the same way is not missed.

use envshim_e2e::*;

const POPEN_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void no_zombie(const char *what) {
    int st;
    pid_t r = waitpid(-1, &st, WNOHANG);
    printf("%s: waitpid(-1)=%s\n", what, r == -1 && errno == ECHILD ? "ECHILD" : "a child");
}

static int cloexec(FILE *f) { return (fcntl(fileno(f), F_GETFD) & FD_CLOEXEC) != 0; }

/* fclose on a popen stream waits for the child and returns its status. */
static void m_fclose(void) {
    FILE *f = popen("exit 3", "r");
    printf("fclose=%d\n", fclose(f));
    no_zombie("after fclose");
    f = popen("echo hi", "r");
    char line[16] = "";
    if (!fgets(line, sizeof line, f)) strcpy(line, "(none)\n");
    printf("read %s", line);
    printf("fclose=%d\n", fclose(f));
    no_zombie("after fclose");
}

static void m_pclose(void) {
    FILE *f = popen("exit 5", "r");
    printf("pclose=%d\n", pclose(f));
    f = popen("kill -TERM $$", "r");
    int st = pclose(f);
    printf("signalled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    no_zombie("after pclose");
}

/* fileno, fflush and a write stream. */
static void m_fileno_fflush(void) {
    unlink("out.txt");
    FILE *f = popen("cat > out.txt", "w");
    printf("fileno>2=%d\n", fileno(f) > 2);
    fputs("data\n", f);
    printf("fflush=%d\n", fflush(f));
    printf("pclose=%d\n", pclose(f));
    FILE *in = fopen("out.txt", "r");
    char line[16] = "";
    if (!in || !fgets(line, sizeof line, in)) strcpy(line, "(none)\n");
    printf("child wrote %s", line);
    if (in) fclose(in);
}

/* The e flag: the parent's end is close-on-exec only with it. */
static void m_e_flag(void) {
    const char *modes[] = {"r", "re", "w", "we"};
    for (int i = 0; i < 4; i++) {
        FILE *f = popen(modes[i][0] == 'r' ? "true" : "cat >/dev/null", modes[i]);
        printf("%s: cloexec=%d\n", modes[i], cloexec(f));
        pclose(f);
    }
    errno = 0;
    FILE *bad = popen("true", "rw");
    int e = errno;
    printf("bad mode: %s errno=%s\n", bad ? "stream" : "NULL", e == EINVAL ? "EINVAL" : "other");
}

/* freopen on a popen stream reaps the child. */
static void m_freopen(void) {
    FILE *f = popen("exit 7", "r");
    FILE *g = freopen("/dev/null", "r", f);
    printf("freopen=%s\n", g ? "stream" : "NULL");
    no_zombie("after freopen");
    if (g) printf("fclose=%d\n", fclose(g));
}

/* POSIX: a popen child has none of the parent's other popen streams open. */
static void m_others_closed(void) {
    FILE *w = popen("cat >/dev/null", "w");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "[ -e /proc/$$/fd/%d ] && echo open || echo closed", fileno(w));
    FILE *r = popen(cmd, "r");
    char line[16] = "";
    if (!fgets(line, sizeof line, r)) strcpy(line, "(none)\n");
    printf("other stream's fd in the child: %s", line);
    pclose(r);
    pclose(w);
}

/* A closed stream's fd number, opened again by the program, reaches a later child. */
static void m_stale_fd(void) {
    FILE *f = popen("true", "r");
    int old = fileno(f);
    fclose(f);
    int fd = open("/dev/null", O_RDONLY);
    printf("same number=%d\n", fd == old);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "[ -e /proc/$$/fd/%d ] && echo passed || echo closed", fd);
    FILE *r = popen(cmd, "r");
    char line[16] = "";
    if (!fgets(line, sizeof line, r)) strcpy(line, "(none)\n");
    printf("the program's fd in the child: %s", line);
    pclose(r);
    close(fd);
}

/* Several threads at once: each stream reads its own child, each status is its
 * own, and no child is left behind. */
#define THREADS 4
#define ROUNDS 25
static int wrong[THREADS];
static void *worker(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        char cmd[64], want[32], got[32] = "";
        snprintf(cmd, sizeof cmd, "echo %d-%d; exit %d", t, i, i % 3);
        snprintf(want, sizeof want, "%d-%d\n", t, i);
        FILE *f = popen(cmd, "r");
        if (!f) { wrong[t]++; continue; }
        if (!fgets(got, sizeof got, f) || strcmp(got, want)) wrong[t]++;
        int st = i % 2 ? pclose(f) : fclose(f);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != i % 3) wrong[t]++;
    }
    return NULL;
}
static void m_threads(void) {
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    int total = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        total += wrong[t];
    }
    printf("streams: %d, wrong: %d\n", THREADS * ROUNDS, total);
    no_zombie("after the threads");
}

/* fork after popen: the child's copy of the stream is not the child's child. */
static void m_fork(void) {
    FILE *f = popen("cat >/dev/null", "w");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        errno = 0;
        int r = pclose(f);
        printf("in the fork child: pclose=%d errno=%s\n", r, errno == ECHILD ? "ECHILD" : "other");
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("in the parent: pclose=%d\n", pclose(f));
    no_zombie("after pclose");
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *m = argv[1];
    if (!strcmp(m, "fclose")) m_fclose();
    else if (!strcmp(m, "pclose")) m_pclose();
    else if (!strcmp(m, "fileno_fflush")) m_fileno_fflush();
    else if (!strcmp(m, "e_flag")) m_e_flag();
    else if (!strcmp(m, "freopen")) m_freopen();
    else if (!strcmp(m, "others_closed")) m_others_closed();
    else if (!strcmp(m, "stale_fd")) m_stale_fd();
    else if (!strcmp(m, "threads")) m_threads();
    else if (!strcmp(m, "fork")) m_fork();
    else return 2;
    return 0;
}
"#;

fn lines(o: &Outcome) -> Vec<String> {
    o.stdout_str().lines().map(str::to_string).collect()
}

/// `mode` of the test program under the shim (built-in default).
fn shimmed(mode: &str) -> Outcome {
    let prog = compile_c_with("popen-props", POPEN_C, &["-pthread"]);
    let sb = Sandbox::new(&format!("popen_{mode}_shim"));
    let out = sb.cmd(&prog).arg(mode).with_shim().expect_success();
    assert!(shim_lines(&out.stderr).is_empty(), "{}", out.report());
    out
}

/// Runs `mode` without the shim and under it (built-in default); both must print
/// `expected`, line for line.
fn same_as_glibc(mode: &str, expected: &[&str]) {
    let prog = compile_c_with("popen-props", POPEN_C, &["-pthread"]);
    let sb = Sandbox::new(&format!("popen_{mode}"));
    let plain = sb.cmd(&prog).arg(mode).expect_success();
    let shimmed = shimmed(mode);
    assert_eq!(lines(&plain), expected, "glibc itself\n{}", plain.report());
    assert_eq!(
        lines(&shimmed),
        lines(&plain),
        "under the shim, as under glibc\n{}",
        shimmed.report()
    );
}

#[test]
fn fclose_waits_and_returns_the_status() {
    same_as_glibc(
        "fclose",
        &[
            "fclose=768",
            "after fclose: waitpid(-1)=ECHILD",
            "read hi",
            "fclose=0",
            "after fclose: waitpid(-1)=ECHILD",
        ],
    );
}

#[test]
fn pclose_returns_the_status() {
    same_as_glibc(
        "pclose",
        &[
            "pclose=1280",
            "signalled=1 sig=15",
            "after pclose: waitpid(-1)=ECHILD",
        ],
    );
}

#[test]
fn fileno_and_fflush_work_on_a_write_stream() {
    same_as_glibc(
        "fileno_fflush",
        &["fileno>2=1", "fflush=0", "pclose=0", "child wrote data"],
    );
}

#[test]
fn the_e_flag_sets_close_on_exec() {
    same_as_glibc(
        "e_flag",
        &[
            "r: cloexec=0",
            "re: cloexec=1",
            "w: cloexec=0",
            "we: cloexec=1",
            "bad mode: NULL errno=EINVAL",
        ],
    );
}

/// glibc 2.36 itself crashes here: its `freopen` writes through the `_wide_data`
/// pointer that a popen stream leaves at -1. Under the shim the stream is reopened,
/// and the child is reaped as glibc's own close of a popen stream reaps it. Where
/// glibc does not crash, both must agree.
#[test]
fn freopen_reaps_the_child() {
    let expected = [
        "freopen=stream",
        "after freopen: waitpid(-1)=ECHILD",
        "fclose=0",
    ];
    let out = shimmed("freopen");
    assert_eq!(lines(&out), expected, "{}", out.report());
    let prog = compile_c_with("popen-props", POPEN_C, &["-pthread"]);
    let plain = Sandbox::new("popen_freopen")
        .cmd(&prog)
        .arg("freopen")
        .run();
    if plain.status.success() {
        assert_eq!(lines(&plain), expected, "glibc itself\n{}", plain.report());
    }
}

#[test]
fn a_child_has_no_other_popen_stream_open() {
    same_as_glibc("others_closed", &["other stream's fd in the child: closed"]);
}

#[test]
fn a_stream_closed_with_fclose_leaves_no_stale_fd_behind() {
    same_as_glibc(
        "stale_fd",
        &["same number=1", "the program's fd in the child: passed"],
    );
}

#[test]
fn popen_from_several_threads() {
    same_as_glibc(
        "threads",
        &[
            "streams: 100, wrong: 0",
            "after the threads: waitpid(-1)=ECHILD",
        ],
    );
}

#[test]
fn fork_after_popen() {
    same_as_glibc(
        "fork",
        &[
            "in the fork child: pclose=-1 errno=ECHILD",
            "in the parent: pclose=0",
            "after pclose: waitpid(-1)=ECHILD",
        ],
    );
}
