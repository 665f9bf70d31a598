/* PMI_Allgather (rank order, odd sizes, larger than one KVS value) and
 * PMI_Bcast (from rank 0), several rounds. */
#include "pmitest.h"

static unsigned char pattern(int rank, int round, int i) { return (unsigned char)(rank * 131 + round * 17 + i * 7 + 1); }

int main(void)
{
    int rank, size, r, i;
    pmitest_init(&rank, &size);
    const int lens[] = {1, 3, 7, 13, 333, 1021, 4099, 0, 4};
    for (int round = 0; round < (int)(sizeof lens / sizeof lens[0]); round++) {
        int len = lens[round];
        unsigned char *in = malloc(len + 1), *out = malloc((size_t)len * size + 1);
        for (i = 0; i < len; i++) in[i] = pattern(rank, round, i);
        memset(out, 0xEE, (size_t)len * size + 1);
        PMI_OK(PMI_Allgather(in, out, len));
        for (r = 0; r < size; r++)
            for (i = 0; i < len; i++)
                if (out[(size_t)r * len + i] != pattern(r, round, i))
                    SN_FAIL("allgather len %d: byte %d of rank %d wrong", len, i, r);
        CHECK(out[(size_t)len * size] == 0xEE); /* nothing written past the end */

        unsigned char *b = malloc(len + 1);
        for (i = 0; i < len; i++) b[i] = rank == 0 ? pattern(99, round, i) : 0;
        b[len] = 0xEE;
        PMI_OK(PMI_Bcast(b, len));
        for (i = 0; i < len; i++)
            if (b[i] != pattern(99, round, i)) SN_FAIL("bcast len %d: byte %d wrong", len, i);
        CHECK(b[len] == 0xEE);
        free(in); free(out); free(b);
    }
    /* ranks as ints, the usual way programs use it */
    int *ranks = malloc(size * sizeof(int));
    PMI_OK(PMI_Allgather(&rank, ranks, sizeof(int)));
    for (r = 0; r < size; r++) CHECK_EQ(ranks[r], r);
    PMI_OK(PMI_Finalize());
    if (rank == 0) printf("pmi_coll: %d ranks ok\n", size);
    return 0;
}
