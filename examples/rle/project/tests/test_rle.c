/* Functional tests of rle_decode and rle_header. */
#include "rle.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                 \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static void test_decodes_runs(void)
{
    const uint8_t in[] = {3, 'a', 1, 'b', 2, 'c'};
    uint8_t out[6];

    CHECK(rle_decode(in, sizeof in, out, sizeof out) == 6);
    CHECK(memcmp(out, "aaabcc", 6) == 0);
}

static void test_empty_stream(void)
{
    uint8_t out[1];

    CHECK(rle_decode((const uint8_t *)"", 0, out, sizeof out) == 0);
}

static void test_half_pair_is_malformed(void)
{
    const uint8_t in[] = {2, 'a', 4};
    uint8_t out[8];

    CHECK(rle_decode(in, sizeof in, out, sizeof out) == RLE_EMALFORMED);
}

static void test_header(void)
{
    const uint8_t file[] = {'R', 'L', 'E', '1', 0x01, 0x02, 9, 'z'};
    const uint8_t *stream = NULL;

    CHECK(rle_header(file, sizeof file, &stream) == 0x102);
    CHECK(stream == file + 6);
    CHECK(rle_header((const uint8_t *)"GIF89a", 6, &stream) == -1);
}

int main(void)
{
    test_decodes_runs();
    test_empty_stream();
    test_half_pair_is_malformed();
    test_header();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("test_rle: all checks passed\n");
    return 0;
}
