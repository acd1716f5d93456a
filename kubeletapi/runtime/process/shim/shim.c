/*
 * kubeletapi-shim: owns one container of kubeletapi's process runtime.
 *
 *   kubeletapi-shim run --state DIR [--lock-fd FD] [--log PATH] [--log-max-size BYTES]
 *       [--log-max-files N] [--cgroup DIR]... [--namespaces [--hostname NAME] [--bind SRC DST]...
 *       [--bind-ro SRC DST]... [--tmpfs DST]...] [--netns PATH] [--workdir DIR] [--stdin] [--tty]
 *       [--oom-score-adj N] -- ARGV...
 *   kubeletapi-shim exec [--netns PATH] [--pid PID] [--cgroup DIR]... [--workdir DIR] [--tty] -- ARGV...
 *   kubeletapi-shim netns add|del PATH
 *
 * `run` forks a daemon that outlives the agent (like conmon or containerd-shim): it starts the
 * program, copies its output into a CRI-format log (with size-based rotation) and records the
 * start and the exit in the state dir, so that a restarted agent finds the container running or
 * learns how it ended. The invoking process returns only once `started` or `exit` exists, which
 * makes starting synchronous for the agent without the agent ever being the daemon's parent.
 *
 * State files written into --state DIR:
 *   shim.lock  held (flock LOCK_EX) by the shim for as long as it runs: the invoker until it returns,
 *              the daemon until it exits, never the container's processes. The caller may take it
 *              first and hand it over with --lock-fd (an fd of that file it holds the lock on), so
 *              that the lock is held without a gap from before the shim exists: whoever then finds
 *              it free knows that no shim of this container runs, and none will unless it starts
 *              one. A state dir runs one container once: `run` refuses a state dir whose lock is
 *              held or that already holds shim.pid, started or exit.
 *   shim.pid   "<daemon pid>\n"
 *   started    "<app host pid> <init host pid or 0> <start unix ns>\n"
 *   exit       "<exit code> <signal> <finish unix ns> <Completed|Error|StartError>\n<message>"
 *   warnings   one line per non-fatal problem
 *   shim.log   the daemon's own diagnostics
 *   stdin      the container's stdin FIFO (--stdin)
 *   resize     FIFO of "<cols> <rows>\n" lines, each applied to the container's pty (--tty)
 *
 * With --namespaces the daemon's child is a minimal init, PID 1 of new pid/mount/uts/ipc
 * namespaces, which forks the app as PID 2, forwards signals to it and reports its wait status.
 *
 * `exec` runs a command inside a running container (cgroups, then its namespaces) and exits
 * with the command's status; failures before exec exit 126 (cannot execute) or 127 (not found).
 *
 * --netns PATH joins the network namespace bound at PATH (a pod's own network) before anything
 * else. `netns add PATH` creates a new network namespace and keeps it alive by bind-mounting it on
 * PATH (a new empty file), as `ip netns add` does; `netns del PATH` unmounts and removes PATH
 * (a PATH already gone is no error). Both exit 0 on success, else 1 with the reason on stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PROG "kubeletapi-shim"
#define LOG_LINE_MAX 16384    /* CRI: longer lines are split into P records of this size */
#define READ_CHUNK 65536
#define MSG_MAX 4096          /* one message on the start channel */
#define DRAIN_IDLE_MS 100     /* after the app exited: stop when output is idle this long... */
#define DRAIN_MAX_MS 2000     /* ...or after this long, if a leftover process keeps writing */
#define EXIT_START_ERROR 128  /* exit code recorded when the program could not be started */
#define RESIZE_LINE_MAX 64    /* one "<cols> <rows>" request on the resize FIFO */

extern char **environ;

/* Signals the init (and `exec`) pass on to the app, so `kill -TERM <app>` and friends work. */
static const int forwarded_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

/* ------------------------------------------------------------------------------------------ */
/* small helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
    char buf[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dprintf(STDERR_FILENO, PROG "[%d]: %s\n", (int)getpid(), buf);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* writev until everything is written (regular files rarely write short, but may on ENOSPC). */
static int writev_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        ssize_t n = writev(fd, iov, cnt);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* Replace dir/name atomically (tmp, fsync, rename, fsync dir): readers never see a torn file,
 * and after a crash the file is either absent or complete. */
static int write_file_atomic(int dirfd, const char *name, const char *data, size_t len)
{
    char tmp[NAME_MAX + 1];
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    if (renameat(dirfd, tmp, dirfd, name) < 0)
        return -1;
    fsync(dirfd);
    return 0;
}

/* A program started by an agent may inherit closed stdio; make sure 0-2 are open so that no
 * pipe or file we open later lands on them by accident. */
static void ensure_std_fds(void)
{
    int fd;
    while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= STDERR_FILENO)
        ;
    if (fd > STDERR_FILENO)
        close(fd);
}

static void forwarded_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
        sigaddset(set, forwarded_signals[i]);
    sigaddset(set, SIGCHLD);
}

/* The program must start with default dispositions and an empty mask: both survive exec, and the
 * shim blocks SIGCHLD and ignores SIGPIPE (the agent, like any Python program, may ignore more). */
static void reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The exit code a shell would report for a wait status. */
static int exit_code(int status)
{
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* Go's exec error wording (runc prints the same), which users already know from kubectl. */
static void format_exec_error(char *buf, size_t size, const char *file, int err)
{
    if (err == ENOENT && !strchr(file, '/'))
        snprintf(buf, size, "exec: \"%s\": executable file not found in $PATH", file);
    else
        snprintf(buf, size, "exec: \"%s\": %s", file, strerror(err));
}

/* Exec argv[0], searching $PATH of our environment (the container's) when it has no slash.
 * Unlike execvpe, a file without #! is not run through /bin/sh: like runc, report the error.
 * Returns the errno to report: EACCES if some candidate was not executable, else the last. */
static int exec_search(char *const argv[])
{
    const char *file = argv[0], *path = getenv("PATH");
    char candidate[PATH_MAX];
    int err = ENOENT;
    if (strchr(file, '/')) {
        execve(file, argv, environ);
        return errno;
    }
    if (!path)
        path = "/bin:/usr/bin"; /* glibc's default, as execvp would use */
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        int len = (int)(end - p);
        /* An empty entry means the current directory, as in any shell. */
        snprintf(candidate, sizeof candidate, "%.*s%s%s", len, p, len ? "/" : "", file);
        execve(candidate, argv, environ);
        if (errno == EACCES)
            err = EACCES;
        else if (errno != ENOENT && errno != ENOTDIR)
            return errno;
        if (*end == '\0')
            return err;
        p = end;
    }
}

/* Join each cgroup by writing our pid to its cgroup.procs (same file in cgroup v1 and v2).
 * Returns the failing directory, or NULL. The pid is resolved in the writer's pid namespace. */
static const char *join_cgroups(const char *const *dirs, int count)
{
    char path[PATH_MAX], pid[32];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/cgroup.procs", dirs[i]);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return dirs[i];
        int rc = write_all(fd, pid, (size_t)len);
        int e = errno;
        close(fd);
        if (rc < 0) {
            errno = e;
            return dirs[i];
        }
    }
    return NULL;
}

static int open_pty(int *master, int *slave)
{
    char name[64];
    *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*master < 0)
        return -1;
    if (grantpt(*master) < 0 || unlockpt(*master) < 0 || ptsname_r(*master, name, sizeof name) != 0) {
        close_fd(master);
        return -1;
    }
    /* O_NOCTTY: the daemon is a session leader and must not adopt the container's terminal. */
    *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave < 0) {
        close_fd(master);
        return -1;
    }
    return 0;
}

/* Wait for `child`, forwarding signals to it and reaping every other child (the init's orphans).
 * The caller blocked forwarded_set() before forking, so no signal is lost in between. */
static int forward_and_wait(pid_t child)
{
    sigset_t set;
    forwarded_set(&set);
    for (;;) {
        int sig = sigwaitinfo(&set, NULL);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            kill(child, sig);
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
            if (pid == child)
                return status;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* command line                                                                                */
/* ------------------------------------------------------------------------------------------ */

enum mount_kind { MOUNT_BIND, MOUNT_BIND_RO, MOUNT_TMPFS };

struct mount_spec {
    enum mount_kind kind;
    const char *src; /* NULL for tmpfs */
    const char *dst;
};

struct run_opts {
    const char *state;
    int lock_fd; /* --lock-fd, or -1 */
    const char *log;
    long long log_max_size;
    int log_max_files;
    const char **cgroups;
    int ncgroups;
    bool namespaces;
    const char *hostname;
    const char *netns;
    struct mount_spec *mounts;
    int nmounts;
    const char *workdir;
    bool stdin_fifo;
    bool tty;
    bool has_oom_score_adj;
    int oom_score_adj;
    char **argv;
};

struct exec_opts {
    const char *netns;
    pid_t pid;
    const char **cgroups;
    int ncgroups;
    const char *workdir;
    bool tty;
    char **argv;
};

static const char *usage_text =
    "usage: " PROG " run --state DIR [--lock-fd FD] [--log PATH] [--log-max-size BYTES]\n"
    "           [--log-max-files N] [--cgroup DIR]... [--namespaces [--hostname NAME] [--bind SRC DST]...\n"
    "           [--bind-ro SRC DST]... [--tmpfs DST]...] [--netns PATH] [--workdir DIR] [--stdin] [--tty]\n"
    "           [--oom-score-adj N] -- ARGV...\n"
    "       " PROG " exec [--netns PATH] [--pid PID] [--cgroup DIR]... [--workdir DIR] [--tty] -- ARGV...\n"
    "       " PROG " netns add|del PATH\n";

/* Usage errors exit 1 from `run`; `exec` uses 125 so they cannot be mistaken for the status of
 * the command (the convention of docker and podman: 125 is the tool's own failure). */
static int usage_status = 1;

static _Noreturn void usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG "%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", usage_text);
    exit(usage_status);
}

static const char *need_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        usage_error(cmd, "%s needs a value", argv[*i]);
    return argv[++*i];
}

static long long parse_number(const char *cmd, const char *opt, const char *s, long long min, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        usage_error(cmd, "%s: invalid value %s (want an integer in [%lld, %lld])", opt, s, min, max);
    return v;
}

/* Parse one option of `run` at argv[*i]; returns false at "--". */
static bool parse_run_option(struct run_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--"))
        return false;
    if (!strcmp(a, "--state"))
        o->state = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--lock-fd"))
        o->lock_fd = (int)parse_number("run", a, need_value("run", argc, argv, i), 3, INT_MAX);
    else if (!strcmp(a, "--log"))
        o->log = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--log-max-size"))
        o->log_max_size = parse_number("run", a, need_value("run", argc, argv, i), 1, LLONG_MAX);
    else if (!strcmp(a, "--log-max-files"))
        o->log_max_files = (int)parse_number("run", a, need_value("run", argc, argv, i), 2, 100000);
    else if (!strcmp(a, "--cgroup"))
        o->cgroups[o->ncgroups++] = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--namespaces"))
        o->namespaces = true;
    else if (!strcmp(a, "--hostname"))
        o->hostname = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--netns"))
        o->netns = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--bind") || !strcmp(a, "--bind-ro")) {
        struct mount_spec *m = &o->mounts[o->nmounts++];
        m->kind = strcmp(a, "--bind") ? MOUNT_BIND_RO : MOUNT_BIND;
        m->src = need_value("run", argc, argv, i);
        m->dst = need_value("run", argc, argv, i);
    } else if (!strcmp(a, "--tmpfs")) {
        struct mount_spec *m = &o->mounts[o->nmounts++];
        m->kind = MOUNT_TMPFS;
        m->dst = need_value("run", argc, argv, i);
    } else if (!strcmp(a, "--workdir"))
        o->workdir = need_value("run", argc, argv, i);
    else if (!strcmp(a, "--stdin"))
        o->stdin_fifo = true;
    else if (!strcmp(a, "--tty"))
        o->tty = true;
    else if (!strcmp(a, "--oom-score-adj")) {
        o->has_oom_score_adj = true;
        o->oom_score_adj = (int)parse_number("run", a, need_value("run", argc, argv, i), -1000, 1000);
    } else
        usage_error("run", "unknown option %s (the command goes after --)", a);
    return true;
}

static void parse_run(int argc, char **argv, struct run_opts *o)
{
    struct stat st;
    *o = (struct run_opts){.lock_fd = -1, .log_max_size = 10485760, .log_max_files = 5};
    /* Each repeatable option uses at least one word, so argc bounds their counts. */
    o->cgroups = calloc((size_t)argc, sizeof *o->cgroups);
    o->mounts = calloc((size_t)argc, sizeof *o->mounts);
    if (!o->cgroups || !o->mounts)
        usage_error("run", "out of memory");
    int i = 2;
    while (i < argc && parse_run_option(o, argc, argv, &i))
        i++;
    if (i + 1 >= argc)
        usage_error("run", "missing -- ARGV...");
    o->argv = &argv[i + 1];
    if (!o->state)
        usage_error("run", "--state is required");
    if (stat(o->state, &st) < 0 || !S_ISDIR(st.st_mode))
        usage_error("run", "--state %s: not an existing directory", o->state);
    if (!o->namespaces && (o->hostname || o->nmounts))
        usage_error("run", "--hostname, --bind, --bind-ro and --tmpfs need --namespaces");
}

static void parse_exec(int argc, char **argv, struct exec_opts *o)
{
    *o = (struct exec_opts){0};
    o->cgroups = calloc((size_t)argc, sizeof *o->cgroups);
    if (!o->cgroups)
        usage_error("exec", "out of memory");
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--netns"))
            o->netns = need_value("exec", argc, argv, &i);
        else if (!strcmp(a, "--pid"))
            o->pid = (pid_t)parse_number("exec", a, need_value("exec", argc, argv, &i), 1, INT_MAX);
        else if (!strcmp(a, "--cgroup"))
            o->cgroups[o->ncgroups++] = need_value("exec", argc, argv, &i);
        else if (!strcmp(a, "--workdir"))
            o->workdir = need_value("exec", argc, argv, &i);
        else if (!strcmp(a, "--tty"))
            o->tty = true;
        else
            usage_error("exec", "unknown option %s (the command goes after --)", a);
    }
    if (i + 1 >= argc)
        usage_error("exec", "missing -- ARGV...");
    o->argv = &argv[i + 1];
}

/* ------------------------------------------------------------------------------------------ */
/* CRI log writer                                                                              */
/* ------------------------------------------------------------------------------------------ */

struct logfile {
    const char *path; /* NULL: output is drained and dropped */
    char dir[PATH_MAX];
    const char *base; /* file name part of path */
    int fd;
    long long size;
    long long max_size;
    int max_files;
    bool failing; /* report a run of write errors once, not once per line */
};

struct stream {
    const char *name; /* "stdout" or "stderr" */
    int fd;           /* read end (pipe or pty master); -1 at EOF */
    size_t len;       /* bytes of the current, unfinished line */
    char line[LOG_LINE_MAX];
};

/* UTC RFC3339 with nanoseconds and the fraction's trailing zeros trimmed, as Go's RFC3339Nano. */
static void format_timestamp(char *buf, size_t size, const struct timespec *ts)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    if (ts->tv_nsec != 0) {
        char frac[16];
        int len = snprintf(frac, sizeof frac, ".%09ld", (long)ts->tv_nsec);
        while (len > 1 && frac[len - 1] == '0')
            frac[--len] = '\0';
        n += (size_t)snprintf(buf + n, size - n, "%s", frac);
    }
    snprintf(buf + n, size - n, "Z");
}

static int log_open(struct logfile *lf, const char *path, long long max_size, int max_files)
{
    struct stat st;
    *lf = (struct logfile){.path = path, .fd = -1, .max_size = max_size, .max_files = max_files};
    if (!path)
        return 0;
    const char *slash = strrchr(path, '/');
    lf->base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(lf->dir, sizeof lf->dir, ".");
    else if (slash == path)
        snprintf(lf->dir, sizeof lf->dir, "/");
    else
        snprintf(lf->dir, sizeof lf->dir, "%.*s", (int)(slash - path), path);
    lf->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (lf->fd < 0)
        return -1;
    if (fstat(lf->fd, &st) == 0)
        lf->size = st.st_size;
    return 0;
}

/* Rotated names are "<base>.YYYYMMDD-HHMMSS" plus ".N" when a second rotation happens within the
 * same second: the grammar of kubeletapi/runtime/logfiles.py, which the agent's readers and its
 * rotation of containerd's logs use (keep the two in step; ".gz" names are in neither).
 * Returns N (0 without suffix) or -1 when `name` is not a rotated file of `base`. */
static long rotated_seq(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) || name[bl] != '.')
        return -1;
    const char *s = name + bl + 1;
    for (int i = 0; i < 15; i++)
        if (i == 8 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
            return -1;
    if (s[15] == '\0')
        return 0;
    if (s[15] != '.' || s[16] == '\0')
        return -1;
    char *end;
    long seq = strtol(s + 16, &end, 10);
    return *end || s[16] < '0' || s[16] > '9' ? -1 : seq;
}

struct rotated {
    char *name;
    long seq;
};

static const char *rotated_base; /* for qsort's comparator, which takes no context */

/* Oldest first: by timestamp (fixed width, so it compares as a string), then by suffix. */
static int rotated_cmp(const void *a, const void *b)
{
    const struct rotated *x = a, *y = b;
    size_t off = strlen(rotated_base) + 1;
    int c = strncmp(x->name + off, y->name + off, 15);
    if (c)
        return c;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void free_rotated(struct rotated *files, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(files[i].name);
    free(files);
}

/* The rotated files beside the log, oldest first. */
static size_t list_rotated(struct logfile *lf, struct rotated **out)
{
    struct rotated *files = NULL;
    size_t count = 0, cap = 0;
    DIR *dir = opendir(lf->dir);
    if (!dir) {
        diag("list rotated logs in %s: %s", lf->dir, strerror(errno));
        *out = NULL;
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(dir))) {
        long seq = rotated_seq(de->d_name, lf->base);
        if (seq < 0)
            continue;
        if (count == cap) {
            struct rotated *grown = realloc(files, (cap = cap ? cap * 2 : 8) * sizeof *files);
            if (!grown)
                break;
            files = grown;
        }
        files[count].seq = seq;
        if ((files[count].name = strdup(de->d_name)))
            count++;
    }
    closedir(dir);
    rotated_base = lf->base;
    if (count > 1)
        qsort(files, count, sizeof *files, rotated_cmp);
    *out = files;
    return count;
}

/* Name the file being rotated out: "<path>.<stamp>", with a suffix above every existing one of
 * the same second. Names must grow monotonically: reusing a pruned name would make the newest
 * file sort as the oldest. */
static void rotated_name(struct logfile *lf, const struct rotated *files, size_t count, char *dst, size_t size)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    long seq = -1;
    size_t off = strlen(lf->base) + 1;
    for (size_t i = 0; i < count; i++)
        if (!strncmp(files[i].name + off, stamp, 15) && files[i].seq > seq)
            seq = files[i].seq;
    if (seq < 0)
        snprintf(dst, size, "%s.%s", lf->path, stamp);
    else
        snprintf(dst, size, "%s.%s.%ld", lf->path, stamp, seq + 1);
}

/* Rename the log aside, start a fresh one, and delete the oldest rotated files so that at most
 * max_files-1 remain beside the current one. */
static void log_rotate(struct logfile *lf)
{
    char dst[PATH_MAX];
    struct rotated *files;
    size_t count = list_rotated(lf, &files);
    rotated_name(lf, files, count, dst, sizeof dst);
    /* Whatever happens, count from zero again: a failing rename must not retry on every line. */
    lf->size = 0;
    if (rename(lf->path, dst) < 0) {
        diag("rotate %s: %s", lf->path, strerror(errno));
        free_rotated(files, count);
        return;
    }
    int fd = open(lf->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        diag("reopen %s after rotation: %s (still writing to %s)", lf->path, strerror(errno), dst);
    else {
        close(lf->fd);
        lf->fd = fd;
    }
    /* `files` lacks the one just renamed, the newest: keep max_files-2 of them. */
    size_t keep = (size_t)lf->max_files - 2;
    int dir = open(lf->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; dir >= 0 && i + keep < count; i++)
        if (unlinkat(dir, files[i].name, 0) < 0 && errno != ENOENT)
            diag("remove rotated log %s/%s: %s", lf->dir, files[i].name, strerror(errno));
    if (dir >= 0)
        close(dir);
    free_rotated(files, count);
}

static void log_record(struct logfile *lf, const char *ts, const char *stream, char tag, const char *data, size_t len)
{
    if (lf->fd < 0)
        return;
    char prefix[96];
    int n = snprintf(prefix, sizeof prefix, "%s %s %c ", ts, stream, tag);
    struct iovec iov[3] = {{prefix, (size_t)n}, {(void *)data, len}, {"\n", 1}};
    if (writev_all(lf->fd, iov, 3) < 0) {
        if (!lf->failing)
            diag("write %s: %s (dropping output until writes succeed)", lf->path, strerror(errno));
        lf->failing = true;
        return;
    }
    lf->failing = false;
    lf->size += n + (long long)len + 1;
    if (lf->size >= lf->max_size)
        log_rotate(lf);
}

/* Split a chunk of output into records: F per complete line, P per LOG_LINE_MAX bytes of a line
 * that is longer (held back until the line ends, so a line of exactly LOG_LINE_MAX is one F). */
static void stream_feed(struct stream *s, struct logfile *lf, const char *data, size_t len, const char *ts)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t seg = nl ? (size_t)(nl - data) : len;
        while (seg > 0) {
            if (s->len == LOG_LINE_MAX) {
                log_record(lf, ts, s->name, 'P', s->line, s->len);
                s->len = 0;
            }
            size_t take = LOG_LINE_MAX - s->len < seg ? LOG_LINE_MAX - s->len : seg;
            memcpy(s->line + s->len, data, take);
            s->len += take;
            data += take;
            len -= take;
            seg -= take;
        }
        if (!nl)
            break;
        log_record(lf, ts, s->name, 'F', s->line, s->len);
        s->len = 0;
        data++;
        len--;
    }
}

/* Data without a final newline at EOF is a partial record, as in containerd. */
static void stream_finish(struct stream *s, struct logfile *lf)
{
    if (s->len > 0) {
        char ts[64];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        format_timestamp(ts, sizeof ts, &now);
        log_record(lf, ts, s->name, 'P', s->line, s->len);
        s->len = 0;
    }
    close_fd(&s->fd);
}

/* Read what is available; false at EOF (a pty master reports EIO once the slave is closed). */
static bool stream_read(struct stream *s, struct logfile *lf)
{
    static char buf[READ_CHUNK];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0)
        return false;
    char ts[64];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    format_timestamp(ts, sizeof ts, &now);
    stream_feed(s, lf, buf, (size_t)n, ts);
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* container side (runs in the forked init or app, reports back over the start channel)       */
/* ------------------------------------------------------------------------------------------ */

/* Start channel messages (SOCK_SEQPACKET, one per send): 'P' sent right before exec (its
 * SCM_CREDENTIALS give the daemon the app's host pid even inside a pid namespace), 'W'+text a
 * warning, 'E'+text a start error. The app's end is close-on-exec, so EOF after 'P' means the
 * exec succeeded. */
static void send_msg(int chan, char kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void send_msg(int chan, char kind, const char *fmt, ...)
{
    char msg[MSG_MAX];
    va_list ap;
    msg[0] = kind;
    va_start(ap, fmt);
    int n = vsnprintf(msg + 1, sizeof msg - 1, fmt, ap);
    va_end(ap);
    size_t len = 1 + (n < 0 ? 0 : (size_t)n >= sizeof msg - 1 ? sizeof msg - 2 : (size_t)n);
    send(chan, msg, len, MSG_NOSIGNAL);
}

#define child_fail(chan, ...)                   \
    do {                                        \
        send_msg((chan), 'E', __VA_ARGS__);     \
        _exit(127);                             \
    } while (0)

/* The fds the container's stdio is made of; all close-on-exec in the daemon. */
struct child_io {
    int in, out, err;
};

static void close_child_io(struct child_io *io)
{
    if (io->out == io->in)
        io->out = -1;
    if (io->err == io->in || io->err == io->out)
        io->err = -1;
    close_fd(&io->in);
    close_fd(&io->out);
    close_fd(&io->err);
}

static int write_oom_score_adj(int value)
{
    char buf[16];
    int len = snprintf(buf, sizeof buf, "%d\n", value);
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, buf, (size_t)len);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Lowering oom_score_adj needs CAP_SYS_RESOURCE, which nodes often lack (this one forbids any
 * negative value): a pod must still start, with a warning the runtime surfaces. */
static void apply_oom_score_adj(const struct run_opts *o, int chan)
{
    if (!o->has_oom_score_adj || write_oom_score_adj(o->oom_score_adj) == 0)
        return;
    int e = errno;
    if (o->oom_score_adj < 0 && (e == EACCES || e == EPERM)) {
        if (write_oom_score_adj(0) == 0)
            send_msg(chan, 'W', "oom_score_adj %d not permitted, used 0", o->oom_score_adj);
        else
            send_msg(chan, 'W', "oom_score_adj %d not permitted, left unchanged", o->oom_score_adj);
        return;
    }
    child_fail(chan, "set oom_score_adj %d: %s", o->oom_score_adj, strerror(e));
}

/* Cgroups and OOM score, done by the first process of the container; forks inherit both. */
static void setup_process(const struct run_opts *o, int chan)
{
    const char *bad = join_cgroups(o->cgroups, o->ncgroups);
    if (bad)
        child_fail(chan, "join cgroup %s: %s", bad, strerror(errno));
    apply_oom_score_adj(o, chan);
}

static _Noreturn void app_main(const struct run_opts *o, struct child_io *io, int chan, bool first)
{
    char msg[MSG_MAX];
    reset_signals();
    /* Own session (and process group): the runtime can signal the group; a tty needs it. */
    setsid();
    if (first)
        setup_process(o, chan);
    if (o->tty && ioctl(io->in, TIOCSCTTY, 0) < 0)
        child_fail(chan, "set controlling terminal: %s", strerror(errno));
    if (dup2(io->in, STDIN_FILENO) < 0 || dup2(io->out, STDOUT_FILENO) < 0 || dup2(io->err, STDERR_FILENO) < 0)
        child_fail(chan, "set up stdio: %s", strerror(errno));
    if (o->workdir && chdir(o->workdir) < 0)
        child_fail(chan, "chdir %s: %s", o->workdir, strerror(errno));
    send_msg(chan, 'P', "exec");
    format_exec_error(msg, sizeof msg, o->argv[0], exec_search(o->argv));
    child_fail(chan, "%s", msg);
}

/* mkdir -p; on failure errno is set and `failed` names the component. */
static int mkdir_p(const char *path, char *failed, size_t size)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
            snprintf(failed, size, "%s", buf);
            return -1;
        }
        if (saved == '\0')
            return 0;
        *p = saved;
    }
}

/* A bind mount needs a target of the same type: a directory, or an (empty) file. */
static int make_target(const char *dst, bool dir, char *failed, size_t size)
{
    if (dir)
        return mkdir_p(dst, failed, size);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dst);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (mkdir_p(parent, failed, size) < 0)
            return -1;
    }
    int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(failed, size, "%s", dst);
        return -1;
    }
    close(fd);
    return 0;
}

/* A bind mount ignores MS_RDONLY: it takes a remount. Keep the flags the source mount has
 * (nosuid, nodev, noexec...) since the kernel refuses to clear locked ones. Only the top mount
 * becomes read-only, not submounts of a recursive bind (that needs mount_setattr). */
static int remount_read_only(const char *dst)
{
    struct statvfs sv;
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;
    if (statvfs(dst, &sv) == 0) {
        flags |= (sv.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (sv.f_flag & ST_NODEV ? MS_NODEV : 0);
        flags |= (sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (sv.f_flag & ST_NOATIME ? MS_NOATIME : 0);
        flags |= (sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) | (sv.f_flag & ST_RELATIME ? MS_RELATIME : 0);
    }
    return mount(NULL, dst, NULL, flags, NULL);
}

static void mount_one(const struct mount_spec *m, int chan)
{
    char what[2 * PATH_MAX + 32], failed[PATH_MAX];
    struct stat st;
    if (m->kind == MOUNT_TMPFS) {
        snprintf(what, sizeof what, "tmpfs mount on %s", m->dst);
        if (mkdir_p(m->dst, failed, sizeof failed) < 0)
            child_fail(chan, "%s: mkdir %s: %s", what, failed, strerror(errno));
        /* 1777 like /tmp: an emptyDir must be writable by whatever user the app runs as. */
        if (mount("tmpfs", m->dst, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
            child_fail(chan, "%s: %s", what, strerror(errno));
        return;
    }
    snprintf(what, sizeof what, "%sbind mount %s on %s", m->kind == MOUNT_BIND_RO ? "read-only " : "", m->src,
             m->dst);
    if (stat(m->src, &st) < 0)
        child_fail(chan, "%s: stat %s: %s", what, m->src, strerror(errno));
    if (make_target(m->dst, S_ISDIR(st.st_mode), failed, sizeof failed) < 0)
        child_fail(chan, "%s: create %s: %s", what, failed, strerror(errno));
    if (mount(m->src, m->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
        child_fail(chan, "%s: %s", what, strerror(errno));
    if (m->kind == MOUNT_BIND_RO && remount_read_only(m->dst) < 0)
        child_fail(chan, "%s: remount read-only: %s", what, strerror(errno));
}

static void setup_namespaces(const struct run_opts *o, int chan)
{
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) < 0)
        child_fail(chan, "unshare mount, uts and ipc namespaces: %s", strerror(errno));
    /* Private first, so neither our mounts nor the fresh /proc propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        child_fail(chan, "make / a private mount: %s", strerror(errno));
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        child_fail(chan, "mount proc on /proc: %s", strerror(errno));
    for (int i = 0; i < o->nmounts; i++)
        mount_one(&o->mounts[i], chan);
    if (o->hostname && sethostname(o->hostname, strlen(o->hostname)) < 0)
        child_fail(chan, "set hostname %s: %s", o->hostname, strerror(errno));
}

/* PID 1 of the container: an app as PID 1 ignores SIGTERM unless it installs a handler, and
 * nobody would reap its orphans. The init forwards signals, reaps, and reports the app's status;
 * its exit then makes the kernel kill whatever is left in the namespace. */
static _Noreturn void init_main(const struct run_opts *o, struct child_io *io, int chan, int status_fd)
{
    sigset_t set;
    forwarded_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    setup_process(o, chan);
    setup_namespaces(o, chan);
    pid_t app = fork();
    if (app < 0)
        child_fail(chan, "fork the app: %s", strerror(errno));
    if (app == 0) {
        close(status_fd);
        app_main(o, io, chan, false);
    }
    /* Only the app may hold the start channel and the stdio: EOF must mean exec and exit. */
    close(chan);
    close_child_io(io);
    int status = forward_and_wait(app);
    write_all(status_fd, &status, sizeof status);
    _exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* the daemon                                                                                  */
/* ------------------------------------------------------------------------------------------ */

struct daemon {
    const struct run_opts *o;
    int state_fd;
    int ready_fd;  /* tells the invoking process that `started` or `exit` exists */
    int lock_fd;   /* holds the flock on shim.lock until the daemon exits */
    int sig_fd;    /* signalfd for SIGCHLD */
    int chan;      /* daemon end of the start channel */
    int status_fd; /* read end: the init reports the app's wait status (--namespaces) */
    pid_t child;   /* the app, or the init with --namespaces */
    pid_t app_pid; /* host pid of the app */
    int fifo_fd;   /* stdin FIFO relayed into the pty master (--tty --stdin) */
    char pending[4096]; /* stdin bytes read from the FIFO, not yet accepted by the master */
    size_t pending_len, pending_off;
    int resize_fd; /* resize FIFO (--tty): window sizes for the pty */
    char resize_buf[RESIZE_LINE_MAX]; /* an unfinished line read from it */
    size_t resize_len;
    struct logfile log;
    struct stream out, err;
};

/* The container must not inherit the daemon's fds: the init never execs, so close-on-exec
 * alone would leave it holding them (and e.g. keep the invoker waiting on the ready pipe). */
static void close_daemon_fds(struct daemon *d)
{
    close_fd(&d->state_fd);
    close_fd(&d->ready_fd);
    close_fd(&d->lock_fd);
    close_fd(&d->sig_fd);
    close_fd(&d->chan);
    close_fd(&d->status_fd);
    close_fd(&d->fifo_fd);
    close_fd(&d->resize_fd);
    close_fd(&d->log.fd);
    close_fd(&d->out.fd);
    close_fd(&d->err.fd);
}

static void signal_ready(struct daemon *d, char what)
{
    if (d->ready_fd >= 0)
        write_all(d->ready_fd, &what, 1); /* the invoker may be gone: SIGPIPE is ignored */
    close_fd(&d->ready_fd);
}

static void append_warning(struct daemon *d, const char *text)
{
    int fd = openat(d->state_fd, "warnings", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || dprintf(fd, "%s\n", text) < 0)
        diag("record warning \"%s\": %s", text, strerror(errno));
    if (fd >= 0)
        close(fd);
}

static _Noreturn void write_exit_and_quit(struct daemon *d, int code, int sig, const char *reason, const char *msg)
{
    char buf[MSG_MAX + 128];
    int len = snprintf(buf, sizeof buf, "%d %d %lld %s\n%s", code, sig, now_ns(), reason, msg);
    if (write_file_atomic(d->state_fd, "exit", buf, (size_t)len) < 0) {
        diag("write exit file: %s", strerror(errno));
        exit(1);
    }
    signal_ready(d, 'e');
    exit(0);
}

static _Noreturn void start_error(struct daemon *d, const char *msg)
{
    diag("start error: %s", msg);
    write_exit_and_quit(d, EXIT_START_ERROR, 0, "StartError", msg);
}

static _Noreturn void record_exit(struct daemon *d, int status)
{
    if (WIFSIGNALED(status))
        write_exit_and_quit(d, exit_code(status), WTERMSIG(status), "Error", "");
    write_exit_and_quit(d, exit_code(status), 0, WEXITSTATUS(status) ? "Error" : "Completed", "");
}

/* The control channel for the terminal size: whoever attaches writes "<cols> <rows>\n" lines
 * (one write each, so concurrent writers never interleave). Without it a tty container still runs,
 * only without resizing: report the problem, do not fail the start. */
static void open_resize_fifo(struct daemon *d)
{
    if (mkfifoat(d->state_fd, "resize", 0600) < 0 && errno != EEXIST) {
        diag("mkfifo resize: %s (the terminal cannot be resized)", strerror(errno));
        return;
    }
    /* O_RDWR: opening never blocks, and the FIFO never reports EOF between two writers. */
    d->resize_fd = openat(d->state_fd, "resize", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (d->resize_fd < 0)
        diag("open resize FIFO: %s (the terminal cannot be resized)", strerror(errno));
}

/* Apply one "<cols> <rows>" line to the pty; the kernel then sends SIGWINCH to the container's
 * foreground process group. */
static void apply_resize(const char *line, int master)
{
    unsigned cols, rows;
    char extra;
    if (sscanf(line, "%u %u %c", &cols, &rows, &extra) != 2 || cols > USHRT_MAX || rows > USHRT_MAX) {
        diag("resize: ignoring malformed request \"%.*s\"", RESIZE_LINE_MAX, line);
        return;
    }
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    if (master >= 0 && ioctl(master, TIOCSWINSZ, &ws) < 0)
        diag("resize the pty to %ux%u: %s", cols, rows, strerror(errno));
}

/* Read what the resize FIFO holds and apply every complete line; keep an unfinished one. */
static void read_resizes(struct daemon *d, int master)
{
    ssize_t n = read(d->resize_fd, d->resize_buf + d->resize_len, sizeof d->resize_buf - 1 - d->resize_len);
    if (n <= 0)
        return;
    d->resize_len += (size_t)n;
    d->resize_buf[d->resize_len] = '\0';
    char *line = d->resize_buf, *nl;
    while ((nl = memchr(line, '\n', d->resize_len - (size_t)(line - d->resize_buf)))) {
        *nl = '\0';
        apply_resize(line, master);
        line = nl + 1;
    }
    size_t rest = d->resize_len - (size_t)(line - d->resize_buf);
    if (rest == sizeof d->resize_buf - 1) {
        diag("resize: dropping a request longer than %d bytes", RESIZE_LINE_MAX - 1);
        rest = 0;
    }
    memmove(d->resize_buf, line, rest);
    d->resize_len = rest;
}

/* stdio of the container: pipes (or a pty) read by the daemon, stdin from the FIFO or /dev/null. */
static const char *prepare_io(struct daemon *d, struct child_io *io)
{
    const struct run_opts *o = d->o;
    int fifo = -1, p[2];
    if (o->stdin_fifo) {
        if (mkfifoat(d->state_fd, "stdin", 0600) < 0 && errno != EEXIST)
            return "mkfifo stdin";
        /* O_RDWR: opening never blocks, and the reader never sees EOF while the FIFO exists. */
        fifo = openat(d->state_fd, "stdin", O_RDWR | O_CLOEXEC | (o->tty ? O_NONBLOCK : 0));
        if (fifo < 0)
            return "open stdin FIFO";
    }
    if (o->tty) {
        open_resize_fifo(d);
        if (open_pty(&d->out.fd, &io->in) < 0)
            return "allocate a pty";
        io->out = io->err = io->in;
        d->fifo_fd = fifo;
        return fcntl(d->out.fd, F_SETFL, O_NONBLOCK) < 0 ? "set pty master non-blocking" : NULL;
    }
    io->in = fifo >= 0 ? fifo : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (io->in < 0)
        return "open /dev/null";
    if (pipe2(p, O_CLOEXEC) < 0)
        return "create stdout pipe";
    d->out.fd = p[0];
    io->out = p[1];
    if (pipe2(p, O_CLOEXEC) < 0)
        return "create stderr pipe";
    d->err.fd = p[0];
    io->err = p[1];
    fcntl(d->out.fd, F_SETFL, O_NONBLOCK);
    fcntl(d->err.fd, F_SETFL, O_NONBLOCK);
    return NULL;
}

/* Fork the container's first process (the app, or the init in a new pid namespace). */
static const char *spawn(struct daemon *d, struct child_io *io)
{
    int sp[2], st[2] = {-1, -1}, one = 1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return "create the start channel";
    if (setsockopt(sp[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
        return "enable SO_PASSCRED";
    if (d->o->namespaces) {
        if (pipe2(st, O_CLOEXEC) < 0)
            return "create the status pipe";
        /* Only our children enter the new pid namespace; the daemon forks nothing after the init. */
        if (unshare(CLONE_NEWPID) < 0)
            return "unshare pid namespace";
    }
    d->chan = sp[0];
    d->status_fd = st[0];
    d->child = fork();
    if (d->child < 0)
        return "fork";
    if (d->child == 0) {
        close_daemon_fds(d);
        if (d->o->namespaces)
            init_main(d->o, io, sp[1], st[1]);
        app_main(d->o, io, sp[1], true);
    }
    close(sp[1]);
    if (st[1] >= 0)
        close(st[1]);
    if (d->status_fd >= 0)
        fcntl(d->status_fd, F_SETFL, O_NONBLOCK);
    d->app_pid = d->child;
    return NULL;
}

/* Read the start channel until EOF. Returns NULL once the app exec'd, else the error text. */
static const char *await_exec(struct daemon *d, char *msg, size_t size)
{
    bool exec_attempted = false, failed = false;
    union {
        struct cmsghdr hdr;
        char buf[CMSG_SPACE(sizeof(struct ucred))];
    } control;
    char buf[MSG_MAX + 1];
    for (;;) {
        struct iovec iov = {buf, MSG_MAX};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                            .msg_controllen = sizeof control};
        ssize_t n = recvmsg(d->chan, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        buf[n] = '\0';
        if (buf[0] == 'W')
            append_warning(d, buf + 1);
        else if (buf[0] == 'E') {
            failed = true;
            snprintf(msg, size, "%s", buf + 1);
        } else if (buf[0] == 'P') {
            exec_attempted = true;
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                struct ucred cred;
                memcpy(&cred, CMSG_DATA(c), sizeof cred);
                d->app_pid = cred.pid;
            }
        }
    }
    close_fd(&d->chan);
    if (failed)
        return msg;
    if (!exec_attempted)
        return "the container's process exited before starting the program";
    return NULL;
}

static void write_started(struct daemon *d)
{
    char buf[128];
    pid_t init = d->o->namespaces ? d->child : 0;
    int len = snprintf(buf, sizeof buf, "%d %d %lld\n", (int)d->app_pid, (int)init, now_ns());
    if (write_file_atomic(d->state_fd, "started", buf, (size_t)len) < 0)
        diag("write started file: %s", strerror(errno));
}

/* Copy the stdin FIFO into the pty master without ever blocking the log loop on a slow app. */
static void relay_stdin(struct daemon *d, int master)
{
    if (d->pending_len == 0) {
        ssize_t n = read(d->fifo_fd, d->pending, sizeof d->pending);
        if (n <= 0)
            return;
        d->pending_len = (size_t)n;
        d->pending_off = 0;
    }
    ssize_t n = write(master, d->pending + d->pending_off, d->pending_len - d->pending_off);
    if (n > 0)
        d->pending_off += (size_t)n;
    if (d->pending_off == d->pending_len)
        d->pending_len = d->pending_off = 0;
}

/* The wait status to record: with an init, the app's as reported by the init; if the init
 * died without reporting (SIGKILLed by the runtime), the init's own, which took the app along. */
static int container_status(struct daemon *d, int child_status)
{
    int app_status;
    if (d->status_fd >= 0 && read(d->status_fd, &app_status, sizeof app_status) == sizeof app_status)
        return app_status;
    return child_status;
}

static bool reap_child(struct daemon *d, int *status)
{
    struct signalfd_siginfo si;
    while (read(d->sig_fd, &si, sizeof si) == sizeof si)
        ;
    return waitpid(d->child, status, WNOHANG) == d->child;
}

/* The log loop: copy output to the log until the app exited and its output is drained.
 * Returns the app's wait status. */
static int supervise(struct daemon *d)
{
    bool exited = false;
    int status = 0;
    long long deadline = 0;
    /* The pty stays open until the app is reaped, even after its output ended: closing the master
     * hangs the terminal up, and the SIGHUP would kill an app that closed its stdio and is about
     * to exit (recorded as 129 instead of its own status). */
    int hold = d->o->tty ? fcntl(d->out.fd, F_DUPFD_CLOEXEC, 0) : -1;
    for (;;) {
        /* The master is the stdout stream's fd, and -1 once that stream ended. */
        int master = d->o->tty ? d->out.fd : -1;
        bool relaying = !exited && d->fifo_fd >= 0 && master >= 0;
        struct pollfd p[6] = {
            {exited ? -1 : d->sig_fd, POLLIN, 0},
            {d->out.fd, POLLIN, 0},
            {d->err.fd, POLLIN, 0},
            {relaying && !d->pending_len ? d->fifo_fd : -1, POLLIN, 0},
            {relaying && d->pending_len ? master : -1, POLLOUT, 0},
            {exited || master < 0 ? -1 : d->resize_fd, POLLIN, 0},
        };
        if (exited && d->out.fd < 0 && d->err.fd < 0)
            break;
        int timeout = -1;
        if (exited) {
            long long left = deadline - mono_ms();
            if (left <= 0)
                break;
            timeout = left < DRAIN_IDLE_MS ? (int)left : DRAIN_IDLE_MS;
        }
        int n = poll(p, 6, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            diag("poll: %s", strerror(errno));
            break;
        }
        /* Output idle after the exit: whoever still holds the pipes is a leftover, not the app. */
        if (n == 0 && exited)
            break;
        if (p[0].revents && reap_child(d, &status)) {
            exited = true;
            deadline = mono_ms() + DRAIN_MAX_MS;
        }
        if (p[1].revents && !stream_read(&d->out, &d->log))
            stream_finish(&d->out, &d->log);
        if (p[2].revents && !stream_read(&d->err, &d->log))
            stream_finish(&d->err, &d->log);
        if (p[3].revents || p[4].revents)
            relay_stdin(d, d->out.fd);
        if (p[5].revents)
            read_resizes(d, d->out.fd);
    }
    stream_finish(&d->out, &d->log);
    stream_finish(&d->err, &d->log);
    if (!exited)
        while (waitpid(d->child, &status, 0) < 0 && errno == EINTR)
            ;
    close_fd(&hold);
    return container_status(d, status);
}

/* Keep only stdio, the ready pipe (moved to fd 3) and the lock (fd 4): fds the agent leaked into
 * the invoker (its own pipes, sockets) must not be held open for the container's lifetime. */
static int isolate_fds(struct daemon *d)
{
    /* Copies above 4 first: either fd may sit on 3 or 4, where the other one goes. */
    int ready = fcntl(d->ready_fd, F_DUPFD_CLOEXEC, 5), lock = fcntl(d->lock_fd, F_DUPFD_CLOEXEC, 5);
    if (ready < 0 || lock < 0 || dup3(ready, 3, O_CLOEXEC) < 0 || dup3(lock, 4, O_CLOEXEC) < 0)
        return -1;
    close_range(5, ~0U, 0);
    d->ready_fd = 3;
    d->lock_fd = 4;
    return 0;
}

static int redirect_stdio(const char *state)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/shim.log", state);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int log = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (null < 0 || log < 0)
        return -1;
    if (dup2(null, STDIN_FILENO) < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0)
        return -1;
    close(null);
    close(log);
    return 0;
}

static void write_pid_file(struct daemon *d)
{
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    if (write_file_atomic(d->state_fd, "shim.pid", buf, (size_t)len) < 0)
        diag("write shim.pid: %s", strerror(errno));
}

/* Daemon setup that has nothing to do with the container yet. Failing here leaves no `exit`
 * file, so the invoker reports the failure itself. */
static void daemon_setup(struct daemon *d)
{
    sigset_t set;
    setsid();
    if (isolate_fds(d) < 0 || redirect_stdio(d->o->state) < 0)
        exit(1);
    d->state_fd = open(d->o->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->state_fd < 0) {
        diag("open state dir %s: %s", d->o->state, strerror(errno));
        exit(1);
    }
    write_pid_file(d);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    d->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (d->sig_fd < 0) {
        diag("signalfd: %s", strerror(errno));
        exit(1);
    }
}

static _Noreturn void daemon_main(const struct run_opts *o, int ready_fd, int lock_fd)
{
    static struct daemon d; /* static: the stream buffers are too big for the stack */
    struct child_io io = {-1, -1, -1};
    char msg[MSG_MAX];
    d.o = o;
    d.ready_fd = ready_fd;
    d.lock_fd = lock_fd;
    d.state_fd = d.sig_fd = d.chan = d.status_fd = d.fifo_fd = d.resize_fd = -1;
    d.out.name = "stdout";
    d.err.name = "stderr";
    d.out.fd = d.err.fd = -1;
    daemon_setup(&d);
    if (log_open(&d.log, o->log, o->log_max_size, o->log_max_files) < 0) {
        snprintf(msg, sizeof msg, "open log %s: %s", o->log, strerror(errno));
        start_error(&d, msg);
    }
    const char *what = prepare_io(&d, &io);
    if (!what)
        what = spawn(&d, &io);
    if (what) {
        snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
        start_error(&d, msg);
    }
    const char *failure = await_exec(&d, msg, sizeof msg);
    /* Now the app holds its stdio; ours must go, or the log loop would never see EOF. */
    close_child_io(&io);
    if (failure) {
        int status;
        while (waitpid(d.child, &status, 0) < 0 && errno == EINTR)
            ;
        start_error(&d, failure);
    }
    write_started(&d);
    signal_ready(&d, 's');
    record_exit(&d, supervise(&d));
}

static _Noreturn void run_refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void run_refused(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, PROG " run: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* Take (or, with --lock-fd, confirm) the lock of the state dir and make sure the dir never ran a
 * container: see shim.lock above. Returns the locked fd, close-on-exec. */
static int lock_state(const struct run_opts *o)
{
    static const char *const used[] = {"shim.pid", "started", "exit"};
    char path[PATH_MAX];
    int fd = o->lock_fd;
    if (fd < 0) {
        snprintf(path, sizeof path, "%s/shim.lock", o->state);
        if ((fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0640)) < 0)
            run_refused("open %s: %s", path, strerror(errno));
    } else if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        run_refused("--lock-fd %d: %s", fd, strerror(errno));
    /* On the caller's fd this succeeds: its open file already holds the lock. */
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK)
            run_refused("--state %s: another shim holds its lock (its container runs)", o->state);
        run_refused("--state %s: lock shim.lock: %s", o->state, strerror(errno));
    }
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", o->state, used[i]);
        if (access(path, F_OK) == 0)
            run_refused("--state %s already ran a container (%s exists): a state dir is used once", o->state,
                        used[i]);
    }
    return fd;
}

/* Join the network namespace bound at `path`; returns 0, or -1 with errno set. */
static int join_netns(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = setns(fd, CLONE_NEWNET);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    int ready[2];
    char c;
    parse_run(argc, argv, &o);
    int lock = lock_state(&o);
    /* Before the daemon exists: the daemon, the init and the app all live in the pod's network. */
    if (o.netns && join_netns(o.netns) < 0) {
        fprintf(stderr, PROG " run: join network namespace %s: %s\n", o.netns, strerror(errno));
        return 1;
    }
    if (pipe2(ready, O_CLOEXEC) < 0) {
        perror(PROG " run: pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror(PROG " run: fork");
        return 1;
    }
    if (pid == 0) {
        close(ready[0]);
        daemon_main(&o, ready[1], lock);
    }
    close(ready[1]);
    ssize_t n;
    while ((n = read(ready[0], &c, 1)) < 0 && errno == EINTR)
        ;
    if (n == 1)
        return 0;
    fprintf(stderr, PROG " run: the shim daemon failed before recording a start or an exit; see %s/shim.log\n",
            o.state);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* exec                                                                                        */
/* ------------------------------------------------------------------------------------------ */

static _Noreturn void exec_die(int code, int err, const char *what)
{
    fprintf(stderr, PROG " exec: %s: %s\n", what, strerror(err));
    exit(code);
}

static bool same_namespace(int fd, const char *ns)
{
    char path[64];
    struct stat a, b;
    snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
    return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Enter the namespaces of `pid`. All are opened first: once in the container's mount namespace,
 * /proc is the container's and no longer shows `pid`. The mount namespace goes last since it
 * changes our root; the pid namespace only applies to children, so the caller forks afterwards. */
static void enter_namespaces(pid_t pid)
{
    static const char *const order[] = {"ipc", "uts", "pid", "mnt"};
    int fds[4];
    char what[96];
    for (int i = 0; i < 4; i++) {
        snprintf(what, sizeof what, "/proc/%d/ns/%s", (int)pid, order[i]);
        fds[i] = open(what, O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0)
            exec_die(126, errno, what);
    }
    for (int i = 0; i < 4; i++) {
        /* Entering our own namespace is a no-op at best (and EINVAL for some kinds). */
        if (!same_namespace(fds[i], order[i]) && setns(fds[i], 0) < 0) {
            int e = errno;
            snprintf(what, sizeof what, "enter %s namespace of pid %d", order[i], (int)pid);
            exec_die(126, e, what);
        }
        close(fds[i]);
    }
}

static _Noreturn void exec_child(const struct exec_opts *o)
{
    char msg[MSG_MAX];
    reset_signals();
    if (o->workdir && chdir(o->workdir) < 0) {
        int e = errno;
        snprintf(msg, sizeof msg, "chdir %s", o->workdir);
        exec_die(126, e, msg);
    }
    int e = exec_search(o->argv);
    format_exec_error(msg, sizeof msg, o->argv[0], e);
    fprintf(stderr, PROG " exec: %s\n", msg);
    _exit(e == ENOENT ? 127 : 126);
}

static void copy_winsize(int from, int to)
{
    struct winsize ws;
    if (ioctl(from, TIOCGWINSZ, &ws) == 0)
        ioctl(to, TIOCSWINSZ, &ws);
}

/* Relay between our stdio and the pty master until the child exited and its output is drained.
 * Writes block: an interactive session has one reader and one writer, both expected to keep up.
 * The master is closed only once the child is reaped: closing it hangs the terminal up, and the
 * SIGHUP would kill a child that closed its stdio and is about to exit. */
static int relay_tty(int master, pid_t child)
{
    static char buf[READ_CHUNK];
    sigset_t set;
    forwarded_set(&set);
    int sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sig_fd < 0)
        exec_die(126, errno, "signalfd");
    int in = STDIN_FILENO, out = master, status = 0;
    bool exited = false;
    while (out >= 0) {
        struct pollfd p[3] = {{exited ? -1 : sig_fd, POLLIN, 0}, {in, POLLIN, 0}, {out, POLLIN, 0}};
        int n = poll(p, 3, exited ? DRAIN_IDLE_MS : -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        struct signalfd_siginfo si;
        if (p[0].revents && read(sig_fd, &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGWINCH)
                copy_winsize(STDIN_FILENO, master);
            else if (si.ssi_signo != SIGCHLD)
                kill(child, (int)si.ssi_signo);
            exited = waitpid(child, &status, WNOHANG) == child;
        }
        ssize_t got;
        if (p[1].revents && ((got = read(in, buf, sizeof buf)) <= 0 || write_all(master, buf, (size_t)got) < 0))
            in = -1; /* caller's stdin ended: stop relaying it, keep the output flowing */
        if (p[2].revents && ((got = read(out, buf, sizeof buf)) <= 0 || write_all(STDOUT_FILENO, buf, (size_t)got) < 0))
            out = -1;
    }
    if (!exited)
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
    close(master);
    return status;
}

static int exec_with_tty(const struct exec_opts *o)
{
    int master, slave;
    struct termios saved, raw;
    if (open_pty(&master, &slave) < 0)
        exec_die(126, errno, "allocate a pty");
    bool is_tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (is_tty)
        copy_winsize(STDIN_FILENO, master);
    pid_t child = fork();
    if (child < 0)
        exec_die(126, errno, "fork");
    if (child == 0) {
        close(master);
        if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
            exec_die(126, errno, "set controlling terminal");
        if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
            exec_die(126, errno, "set up stdio");
        exec_child(o);
    }
    close(slave);
    if (is_tty) {
        /* The container's terminal does the line editing and echo; ours must pass keys through. */
        raw = saved;
        cfmakeraw(&raw);
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    int status = relay_tty(master, child);
    if (is_tty)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    return exit_code(status);
}

static int cmd_exec(int argc, char **argv)
{
    struct exec_opts o;
    sigset_t set;
    usage_status = 125;
    parse_exec(argc, argv, &o);
    /* First: once in the container's mount namespace, the path may resolve elsewhere. */
    if (o.netns && join_netns(o.netns) < 0)
        exec_die(126, errno, "join the pod's network namespace");
    const char *bad = join_cgroups(o.cgroups, o.ncgroups);
    if (bad) {
        int e = errno;
        char what[PATH_MAX + 16];
        snprintf(what, sizeof what, "join cgroup %s", bad);
        exec_die(126, e, what);
    }
    if (o.pid)
        enter_namespaces(o.pid);
    forwarded_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (o.tty)
        return exec_with_tty(&o);
    /* No setsid: the child stays in our process group, so the caller can kill both at once. */
    pid_t child = fork();
    if (child < 0)
        exec_die(126, errno, "fork");
    if (child == 0)
        exec_child(&o);
    return exit_code(forward_and_wait(child));
}

/* ------------------------------------------------------------------------------------------ */
/* netns                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static int netns_fail(const char *what, const char *path)
{
    fprintf(stderr, PROG " netns: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

/* A new network namespace, alive as long as it is mounted on `path` (a new file). The shim is
 * single-threaded, so unshare moves the whole process and /proc/self/ns/net is the new one. */
static int netns_add(const char *path)
{
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    if (fd < 0)
        return netns_fail("create", path);
    close(fd);
    if (unshare(CLONE_NEWNET) < 0 || mount("/proc/self/ns/net", path, "none", MS_BIND, NULL) < 0) {
        int e = errno;
        unlink(path);
        errno = e;
        return netns_fail("bind a new network namespace on", path);
    }
    return 0;
}

static int netns_del(const char *path)
{
    if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
        return netns_fail("unmount", path);
    if (unlink(path) < 0 && errno != ENOENT)
        return netns_fail("remove", path);
    return 0;
}

static int cmd_netns(int argc, char **argv)
{
    if (argc != 4)
        usage_error("netns", "expected add|del PATH");
    if (!strcmp(argv[2], "add"))
        return netns_add(argv[3]);
    if (!strcmp(argv[2], "del"))
        return netns_del(argv[3]);
    usage_error("netns", "unknown action %s (add or del)", argv[2]);
}

int main(int argc, char **argv)
{
    ensure_std_fds();
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "exec"))
        return cmd_exec(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "netns"))
        return cmd_netns(argc, argv);
    usage_error(NULL, "expected a command: run, exec or netns");
}
