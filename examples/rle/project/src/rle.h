/* rle: decoding of a small run-length format.
 *
 * A stream is a sequence of (count, byte) pairs: `count` copies of `byte`.
 * A file (see rledump.c) is "RLE1", the decoded size as a big-endian u16,
 * then the stream.
 */
#ifndef RLE_H
#define RLE_H

#include <stddef.h>
#include <stdint.h>

#define RLE_EMALFORMED (-1) /* the stream ends in the middle of a pair */
#define RLE_ETOOLONG (-2)   /* the stream decodes to more than the output holds */

/* Decode the `n` bytes of `in` into `out`, which holds `cap` bytes.
 * Returns the number of bytes decoded, or a negative RLE_E* error. */
long rle_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* The decoded size a stream declares in its file header, or -1 when the
 * `n` bytes of `file` are not an RLE1 file. `*stream` is set to its start. */
long rle_header(const uint8_t *file, size_t n, const uint8_t **stream);

#endif
