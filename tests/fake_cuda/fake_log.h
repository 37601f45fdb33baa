/* The text log the fake CUDA libraries keep: say() appends a formatted line, fake_log() returns it all,
 * fake_clear() empties it. Included by fake_libcuda.c and fake_libcusparse.c (one copy per library). */
#ifndef FAKE_LOG_H
#define FAKE_LOG_H
#include <stdarg.h>
#include <stdio.h>

#ifndef FAKE_LOG_BYTES
#define FAKE_LOG_BYTES (1 << 16)
#endif
static char log_buf[FAKE_LOG_BYTES];
static size_t log_len;

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len, fmt, ap);
  va_end(ap);
  if (n > 0 && log_len + (size_t)n < sizeof log_buf)
    log_len += (size_t)n;
}

const char *fake_log(void) { return log_buf; }
void fake_clear(void) { log_len = 0; log_buf[0] = 0; }
#endif
