#include "parity_regen.h"

#include <signal.h>

#include "parity_dist.h"

/* Testing (GDN_TEST_MPI_DIE=R:regen-die): rank R killed as it hands its
 * first group over, while rank 0 holds the file's temporary open. */
static int deal_send(void *ctx, const void *buf, size_t n, int to, gdn_error *e) {
  (void)ctx;
  if (parity_dist_test_fault("regen-die")) raise(SIGKILL);
  return parity_dist_send(buf, n, to, e);
}

static int deal_recv(void *ctx, void *buf, size_t n, int from, gdn_error *e) {
  (void)ctx;
  return parity_dist_recv(buf, n, from, e);
}

static int deal_bcast(void *ctx, void *buf, size_t n, int root, gdn_error *e) {
  (void)ctx;
  return parity_dist_bcast(buf, n, root, e);
}

int parity_regen_run(const char *path, const fix_regen_opts *opts, fix_oracle *result, int *shared, gdn_error *e) {
  fix_regen_opts o = *opts;
  fix_regen_deal d = {parity_dist_rank(), parity_dist_size(), NULL, deal_send, deal_recv, deal_bcast, shared, 0};
  /* GDN_TEST_MPI_DIE=R:regen-deal, R:regen-fail, R:regen-open (fix_regen_deal.test_fault) */
  d.test_fault = parity_dist_test_fault("regen-deal")   ? 1
                 : parity_dist_test_fault("regen-fail") ? 2
                 : parity_dist_test_fault("regen-open") ? 3
                                                        : 0;
  if (d.size > 1) o.deal = &d;
  return fix_regen(path, &o, result, e);
}
