/* rledump FILE: decode an RLE1 file and print its bytes in hex.
 * Exit 0: decoded; 2: the file is not a valid RLE1 file; 1: it cannot be read. */
#include "rle.h"

#include <stdio.h>
#include <stdlib.h>

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    size_t used = 0, cap = 0, got;

    if (f == NULL)
        return NULL;
    do {
        if (used == cap) {
            uint8_t *more = realloc(data, cap = cap ? 2 * cap : 4096);
            if (more == NULL) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = more;
        }
        got = fread(data + used, 1, cap - used, f);
        used += got;
    } while (got > 0);
    fclose(f);
    *size = used;
    return data;
}

int main(int argc, char **argv)
{
    const uint8_t *stream;
    size_t size;
    uint8_t *file, *out;
    long declared, decoded;

    if (argc != 2) {
        fprintf(stderr, "usage: rledump FILE\n");
        return 2;
    }
    file = read_all(argv[1], &size);
    if (file == NULL) {
        perror(argv[1]);
        return 1;
    }
    declared = rle_header(file, size, &stream);
    if (declared < 0) {
        fprintf(stderr, "%s: not an RLE1 file\n", argv[1]);
        free(file);
        return 2;
    }
    out = malloc(declared ? (size_t)declared : 1);
    if (out == NULL) {
        free(file);
        return 1;
    }
    decoded = rle_decode(stream, size - (size_t)(stream - file), out, (size_t)declared);
    if (decoded < 0) {
        fprintf(stderr, "%s: invalid stream (error %ld)\n", argv[1], decoded);
        free(out);
        free(file);
        return 2;
    }
    for (long i = 0; i < decoded && i < declared; i++)
        printf("%02x", out[i]);
    printf("\n");
    free(out);
    free(file);
    return 0;
}
