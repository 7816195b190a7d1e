/* spawn_rusage REPORT PROGRAM [ARGS...]
 *
 * Runs PROGRAM as a child, waits for it with wait4() and writes to the file REPORT one line:
 *     <wall s> <user s> <sys s> <peak RSS KiB> <raw wait status>
 * then exits with the child's exit code (128 + signal if it was killed).
 *
 * Why not wait4() straight from the Python harness: Linux carries the high-water RSS of the
 * address space a process had *before* execve() into the new program's ru_maxrss. A program
 * spawned by the harness would report at least the harness's own RSS (a Python interpreter
 * with matplotlib loaded: ~50 MiB). This launcher is tiny, so the RSS its child inherits is
 * below that of any real program and ru_maxrss is the program's own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s REPORT PROGRAM [ARGS...]\n", argv[0]);
        return 125;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("spawn_rusage: fork");
        return 126;
    }
    if (pid == 0) {
        execv(argv[2], argv + 2);
        fprintf(stderr, "spawn_rusage: cannot execute %s: ", argv[2]);
        perror("");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("spawn_rusage: wait4");
            return 126;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *f = fopen(argv[1], "w");
    if (f == NULL) {
        perror("spawn_rusage: report file");
        return 126;
    }
    fprintf(f, "%.9f %ld.%06ld %ld.%06ld %ld %d\n",
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
            (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss, status);
    fclose(f);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 126;
}
