/* parity_worst: the worst failed check of a results document, as the
 * verdict line of `gdn-parity` closes with it.
 *
 * Over every case's tolerance checks that failed, the one with the largest
 * value / limit (a NaN value ranks worst); its subject's worst element in
 * the tensor it judged (impls.<subject>.<tensor>.worst), and for a
 * context-parallel subject the device holding that token and its place in
 * the device's shard (token sharding: T / D tokens each; an output's own
 * declared device count, else the case's).  The document is only read. */
#ifndef PARITY_WORST_H
#define PARITY_WORST_H

#include <jansson.h>
#include <stddef.h>

/* "SUBJECT TENSOR METRIC V (limit L) at b=0 t=48 h=1 d=5 (device 3, token 0
 * of its shard), case ID" into buf (size n, truncated there); 0 and buf ""
 * when no check failed. */
int parity_worst_failure(const json_t *root, char *buf, size_t n);

#endif
