/* pgtier: an nbdkit plugin serving a file with a fixed delay (in microseconds) before every read
 * and write, for emulating the added latency of NVMe over TCP (tens to hundreds of microseconds),
 * which nbdkit's delay filter cannot do (it takes whole milliseconds only).
 *
 *   nbdkit cc usdelay.c file=IMAGE delay_us=N
 *
 * Debian ships no nbdkit-plugin.h with nbdkit, so this declares the leading part of struct
 * nbdkit_plugin (API version 2) itself; nbdkit reads only _struct_size bytes of it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern void nbdkit_error (const char *fs, ...);

struct nbdkit_plugin {
  uint64_t _struct_size; int _api_version; int _thread_model;
  const char *name, *longname, *version, *description;
  void (*load) (void); void (*unload) (void);
  int (*config) (const char *, const char *); int (*config_complete) (void);
  const char *config_help;
  void *(*open) (int); void (*close) (void *);
  int64_t (*get_size) (void *); int (*can_write) (void *); int (*can_flush) (void *);
  int (*is_rotational) (void *); int (*can_trim) (void *);
  void *_pread_v1, *_pwrite_v1, *_flush_v1, *_trim_v1, *_zero_v1;
  int errno_is_preserved;
  void (*dump_plugin) (void);
  int (*can_zero) (void *); int (*can_fua) (void *);
  int (*pread) (void *, void *, uint32_t, uint64_t, uint32_t);
  int (*pwrite) (void *, const void *, uint32_t, uint64_t, uint32_t);
  int (*flush) (void *, uint32_t);
};

static const char *path;
static long delay_ns = -1;
static int fd = -1;

static void
pause_io (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  t.tv_nsec += delay_ns;
  while (t.tv_nsec >= 1000000000) { t.tv_nsec -= 1000000000; t.tv_sec++; }
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
    ;
}

static int
config (const char *key, const char *value)
{
  if (strcmp (key, "file") == 0)
    path = value;
  else if (strcmp (key, "delay_us") == 0) {
    char *end;
    long us = strtol (value, &end, 10);
    if (*value == '\0' || *end != '\0' || us < 0 || us > 10000000) {
      nbdkit_error ("delay_us: not a number of microseconds: %s", value);
      return -1;
    }
    delay_ns = us * 1000;
  }
  else {
    nbdkit_error ("unknown parameter %s", key);
    return -1;
  }
  return 0;
}

static int
config_complete (void)
{
  if (path == NULL || delay_ns < 0) {
    nbdkit_error ("file=IMAGE and delay_us=N are required");
    return -1;
  }
  fd = open (path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    nbdkit_error ("open %s: %s", path, strerror (errno));
    return -1;
  }
  return 0;
}

static void *
open_handle (int readonly)
{
  /* The default timer slack (50 us) would add that much to every sleep. */
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  return (void *) 1;
}

static int64_t
get_size (void *h)
{
  struct stat st;
  if (fstat (fd, &st) == -1)
    return -1;
  return st.st_size;
}

static int can_write (void *h) { return 1; }
static int can_flush (void *h) { return 1; }

static int
read_at (void *h, void *buf, uint32_t n, uint64_t off, uint32_t flags)
{
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pause_io ();
  while (n > 0) {
    ssize_t r = pread (fd, buf, n, off);
    if (r == -1) return -1;
    if (r == 0) { errno = EIO; return -1; }
    buf = (char *) buf + r; n -= r; off += r;
  }
  return 0;
}

static int
write_at (void *h, const void *buf, uint32_t n, uint64_t off, uint32_t flags)
{
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pause_io ();
  while (n > 0) {
    ssize_t r = pwrite (fd, buf, n, off);
    if (r == -1) return -1;
    buf = (const char *) buf + r; n -= r; off += r;
  }
  return 0;
}

static int
flush (void *h, uint32_t flags)
{
  return fdatasync (fd);
}

static struct nbdkit_plugin plugin = {
  .name = "pgtier-usdelay",
  .config = config,
  .config_complete = config_complete,
  .config_help = "file=IMAGE delay_us=N",
  .open = open_handle,
  .get_size = get_size,
  .can_write = can_write,
  .can_flush = can_flush,
  .errno_is_preserved = 1,
  .pread = read_at,
  .pwrite = write_at,
  .flush = flush,
};

struct nbdkit_plugin *
plugin_init (void)
{
  plugin._struct_size = sizeof plugin;
  plugin._api_version = 2;
  plugin._thread_model = 3; /* NBDKIT_THREAD_MODEL_PARALLEL */
  return &plugin;
}
