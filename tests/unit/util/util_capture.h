/* Capture of what a test's code under test writes to stderr: redirect fd 2
 * into a pipe, run the code, restore fd 2 and read back what was written.
 * Shared by the util tests that check user-facing messages. Output must fit
 * in the pipe (64 KiB on Linux), which short messages always do. */
#ifndef BM_TEST_UTIL_CAPTURE_H
#define BM_TEST_UTIL_CAPTURE_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

struct capture {
    int saved_fd;
    int pipe_fd[2];
    char text[16384];
};

static inline void capture_begin(struct capture *c)
{
    fflush(stderr);
    if (pipe(c->pipe_fd) != 0) {
        perror("pipe");
        _exit(2);
    }
    c->saved_fd = dup(STDERR_FILENO);
    dup2(c->pipe_fd[1], STDERR_FILENO);
}

/* Restore stderr; returns the captured text (NUL-terminated). */
static inline const char *capture_end(struct capture *c)
{
    fflush(stderr);
    dup2(c->saved_fd, STDERR_FILENO);
    close(c->saved_fd);
    close(c->pipe_fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof(c->text) &&
           (r = read(c->pipe_fd[0], c->text + n, sizeof(c->text) - 1 - n)) > 0)
        n += (size_t)r;
    c->text[n] = '\0';
    close(c->pipe_fd[0]);
    return c->text;
}

#endif
