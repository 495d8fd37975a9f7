#include "rle.h"

#include <string.h>

long rle_header(const uint8_t *file, size_t n, const uint8_t **stream)
{
    if (n < 6 || memcmp(file, "RLE1", 4) != 0)
        return -1;
    *stream = file + 6;
    return ((long)file[4] << 8) | file[5];
}

long rle_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t o = 0;

    (void)cap;
    if (n % 2 != 0)
        return RLE_EMALFORMED;
    for (size_t i = 0; i < n; i += 2) {
        size_t count = in[i];
        memset(out + o, in[i + 1], count);
        o += count;
    }
    return (long)o;
}
