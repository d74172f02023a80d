/* ordo's launcher: sets the libraries' environment, then loads and runs the CLI module. */
/*
 * Why a launcher: the CLI links ~120 MiB of shared libraries (oneDNN, OpenBLAS, ICU's data,
 * cairo, ...). Linked into the executable, under a small address-space limit (ulimit -v) the
 * dynamic loader fails to map them and the process dies with exit 127 and the loader's message,
 * before ordo runs. This program needs only libc, so it always starts; it loads the CLI
 * (libordo_cli.so, ORDO_CLI_MODULE relative to this executable) with dlopen, and a failure there
 * is ordo's own out-of-memory error. It also gives the libraries their settings before they load,
 * which the environment must carry because they read it once, in their initialisers:
 * - libgomp's default wait policy spins idle threads for a long time at every barrier. On a
 *   machine whose cores are busy with other work that turns each parallel region into a
 *   scheduler-quantum stall (decode ran ~3x slower under load; docs/performance.md): the CLI runs
 *   with OMP_WAIT_POLICY=PASSIVE unless the user chose a policy (OMP_WAIT_POLICY or
 *   GOMP_SPINCOUNT set: e.g. OMP_WAIT_POLICY=active on a dedicated machine).
 * - OpenBLAS starts a pool of worker threads at load, each taking a 128 MiB buffer; ordo never
 *   uses them (it runs OpenBLAS single-threaded inside its own threads, threads.cpp), and under
 *   `ulimit -v` a worker retries a failed buffer allocation forever (the process never exits) or
 *   failing to start one, OpenBLAS ends the process. OPENBLAS_NUM_THREADS=1 starts no workers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#if !defined(ORDO_CLI_MODULE) && !defined(ORDO_CLI_DIRECT)
#error "ORDO_CLI_MODULE: the CLI module's path relative to the launcher's directory"
#endif

typedef int (*ordo_main_fn)(int, char**);
int ordo_main(int argc, char** argv);

/* Sets the libraries' settings the user left unset; whether it set any. */
static int set_library_environment(void) {
  int set = 0;
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) set |= setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0;
  if (!getenv("OPENBLAS_NUM_THREADS")) set |= setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
  return set;
}

#ifdef ORDO_CLI_DIRECT
/* Sanitizer builds link the CLI into this executable: LeakSanitizer crashes at exit ("Tracer
 * caught signal 11") when the CLI is a dlopen()ed module. The libraries are loaded already, so
 * the settings take effect by running this program again with them. */
int main(int argc, char** argv) {
  if (set_library_environment()) execv("/proc/self/exe", argv); /* on failure: the defaults */
  return ordo_main(argc, argv);
}
#else

/* dlopen's message when mapping or relocating ran out of address space (glibc's wording). */
static int out_of_memory(const char* message, int saved_errno) {
  static const char* const signs[] = {"failed to map segment", "annot allocate memory", "out of memory",
                                      "cannot create shared object descriptor", "cannot map zero-fill pages"};
  for (size_t i = 0; i < sizeof signs / sizeof *signs; ++i)
    if (strstr(message, signs[i])) return 1;
  return saved_errno == ENOMEM;
}

int main(int argc, char** argv) {
  set_library_environment();

  static char path[PATH_MAX + sizeof ORDO_CLI_MODULE + 1];
  const ssize_t n = readlink("/proc/self/exe", path, PATH_MAX);
  if (n <= 0 || n >= PATH_MAX) {
    fprintf(stderr, "ordo: error: cannot find the launcher's own path (/proc/self/exe): %s\n", strerror(errno));
    return 1;
  }
  path[n] = '\0';
  char* slash = strrchr(path, '/');
  strcpy(slash ? slash + 1 : path, ORDO_CLI_MODULE);

  errno = 0;
  void* module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const int saved_errno = errno;
    const char* message = dlerror();
    if (!message) message = "unknown error";
    if (out_of_memory(message, saved_errno)) {
      struct rlimit limit;
      if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        fprintf(stderr,
                "ordo: error: out of memory loading ordo's libraries (%s; the address-space limit is %llu MiB: "
                "ulimit -v?)\n",
                message, (unsigned long long)(limit.rlim_cur >> 20));
      else
        fprintf(stderr, "ordo: error: out of memory loading ordo's libraries (%s)\n", message);
    } else {
      fprintf(stderr, "ordo: error: cannot load %s: %s\n", path, message);
    }
    return 1;
  }
  const ordo_main_fn ordo_main = (ordo_main_fn)dlsym(module, "ordo_main");
  if (!ordo_main) {
    const char* message = dlerror();
    fprintf(stderr, "ordo: error: cannot load %s: %s\n", path, message ? message : "no ordo_main");
    return 1;
  }
  return ordo_main(argc, argv);
}
#endif
