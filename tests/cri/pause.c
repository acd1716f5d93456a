/*
 * The test images' pause program: the process that holds a CRI pod sandbox open.
 *
 * It does nothing but wait. SIGINT and SIGTERM end it at once (exit 0); SIGCHLD reaps whatever
 * children were reparented to it, which matters when it is PID 1 of a pod's own PID namespace.
 * Built with `gcc -static` so the image needs no libc.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static void handle(int sig, void (*fn)(int), int flags) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = fn;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, NULL);
}

int main(void) {
    handle(SIGINT, stop, 0);
    handle(SIGTERM, stop, 0);
    handle(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART);
    for (;;) {
        pause();
    }
}
